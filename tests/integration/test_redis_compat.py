"""What Redis clients and operators' tools expect of a Redis-like server,
over our own sockets (the real clients and tools: test_clients.py):
RESP3, the shared integer range, COMMAND, CLIENT, CLIENT PAUSE, MONITOR,
SLOWLOG, LATENCY, SELECT, DBSIZE, USER.SCAN, CONFIG SET/REWRITE/RESETSTAT,
INFO's Redis fields, signals and the logfile."""

import os
import random
import re
import signal
import socket
import struct
import tempfile
import time

from harness import (E, ID_MAX, OPS, U32_MAX, BigNum, Err, Push, RSet,
                     Server, Status, assert_err, encode_frame,
                     encode_multibulk, info_dict, info_flat, is_err, pairs,
                     HDR, decode_value)


def test_hello_3_switches_to_resp3_and_hello_2_back():
    with Server() as srv, srv.resp() as c:
        h = c.cmd("HELLO", 3)
        assert isinstance(h, dict), h
        assert h[b"proto"] == 3 and h[b"server"] == b"unreadd"
        assert h[b"role"] == b"master" and h[b"modules"] == []
        assert h[b"id"] == c.cmd("CLIENT", "ID")
        # Maps are maps, nulls are "_", pairs stay arrays.
        assert c.cmd("CNT.INCR", 7, 0, 5) == [5, 5]
        conf = c.cmd("CONFIG", "GET", "port", "maxmemory")
        assert conf == {b"port": str(srv.port).encode(), b"maxmemory": b"0"}
        c.send(encode_multibulk("CLIENT", "GETNAME"))
        assert c.read_line() == b"_"
        # The same commands back on RESP2.
        h2 = c.cmd("HELLO", 2)
        assert isinstance(h2, list) and pairs(h2)["proto"] == 2
        assert isinstance(c.cmd("CONFIG", "GET", "port"), list)
        c.send(encode_multibulk("CLIENT", "GETNAME"))
        assert c.read_line() == b"$-1"
        # HELLO without a version answers in the current one.
        assert pairs(c.cmd("HELLO"))["proto"] == 2


def test_hello_options_auth_and_setname():
    with Server(requirepass="pw") as srv, srv.resp() as c:
        assert_err(c.cmd("HELLO", 3, "AUTH", "default", "bad"), "WRONGPASS")
        assert_err(c.cmd("CNT.GET", 1, 0), "NOAUTH")
        h = c.cmd("HELLO", 3, "AUTH", "default", "pw", "SETNAME", "app-1")
        assert h[b"proto"] == 3
        assert c.cmd("CLIENT", "GETNAME") == b"app-1"
        assert_err(c.cmd("HELLO", 3, "SETNAME", "a b"))
        assert c.cmd("CLIENT", "GETNAME") == b"app-1"  # unchanged
        assert_err(c.cmd("HELLO", 3, "BOGUS"))
    with Server() as srv, srv.resp() as c:
        # Nothing changes when the command fails (the default user has no
        # password, so any password is its, as Redis: an unknown user).
        assert_err(c.cmd("HELLO", 3, "AUTH", "nobody", "x"), "WRONGPASS")
        assert isinstance(c.cmd("HELLO"), list)


def test_rcpt_list_shows_an_erased_member_as_null_in_every_protocol():
    with Server() as srv, srv.resp() as c, srv.bin() as b:
        for uid in (41, 42, ID_MAX):
            c.cmd("RCPT.JOIN", 9, uid)
        assert c.cmd("RCPT.SEND", 9, 100, 41) == 2
        assert c.cmd("RCPT.READ", 9, 42, 100) == 1
        assert c.cmd("RCPT.READ", 9, ID_MAX, 100) == 1
        assert c.cmd("USER.DEL", 42) >= 1
        assert c.cmd("RCPT.LIST", 9, 100, "READ") == [None, ID_MAX]
        c.send(encode_multibulk("RCPT.LIST", 9, 100, "READ"))
        assert c.read_line() == b"*2" and c.read_line() == b"$-1"
        c.read_reply()
        assert b.call("RCPT.LIST", 9, 100, "READ") == [None, ID_MAX]
        c.cmd("HELLO", 3)
        c.send(encode_multibulk("RCPT.LIST", 9, 100, "READ"))
        assert c.read_line() == b"*2" and c.read_line() == b"_"
        assert c.read_reply() == ID_MAX


def test_integers_share_redis_range_on_both_protocols():
    with Server() as srv, srv.resp() as c, srv.bin() as b:
        assert c.cmd("CNT.SET", ID_MAX, 1, U32_MAX) == [U32_MAX, U32_MAX]
        assert b.call("CNT.GET", ID_MAX, 1) == U32_MAX
        for bad in (ID_MAX + 1, 2 ** 64 - 1):
            r = c.cmd("CNT.INCR", bad, 0)
            assert_err(r, "ERR uid must be at most 9223372036854775807")
            assert str(bad) in r.text
            r = b.call("CNT.INCR", bad, 0)  # a u64 on the wire
            assert is_err(r, None, E["BADARG"]) and "at most" in r.text
        for bad in ("-1", "1e3", "", "12a", " 1"):
            r = c.cmd("CNT.INCR", bad, 0)
            assert_err(r, "ERR uid must be an integer")
        # Leading zeros: redis-benchmark's __rand_int__ is zero-padded.
        assert c.cmd("CNT.INCR", "000000123456", 0, "0003") == [3, 3]
        assert c.cmd("CNT.GET", 123456, 0) == 3
        assert b.call("CNT.GET", "0000123456", "00") == 3
        assert c.cmd("CNT.INCR", "0" * 40 + "5", 0) == [1, 1]
        assert c.cmd("CNT.GET", 5, 0) == 1
        # Every integer a reply carries fits: the largest id echoes back.
        assert c.cmd("CONV.SEQ", ID_MAX, ID_MAX, ID_MAX) == [U32_MAX, U32_MAX]
        assert c.cmd("CONV.LIST", ID_MAX) == [ID_MAX, U32_MAX]
        assert c.cmd("GRP.JOIN", 1, ID_MAX) == 0
        assert c.cmd("GRP.LIST", 1) == []


def test_command_describes_the_op_table():
    with Server() as srv, srv.resp() as c, srv.bin() as b:
        assert c.cmd("COMMAND", "COUNT") == len(OPS)
        names = c.cmd("COMMAND", "LIST")
        assert sorted(n.decode().upper() for n in names) == sorted(OPS)
        assert c.cmd("COMMAND", "LIST", "FILTERBY", "PATTERN",
                     "cnt.*") == [n for n in names if n.startswith(b"cnt.")]
        every = c.cmd("COMMAND")
        assert len(every) == len(OPS)
        by = {e[0]: e for e in every}
        incr = by[b"cnt.incr"]
        assert incr[1] == -3  # name + 2 or more
        assert {"write", "fast", "denyoom"} <= {f for f in incr[2]}
        assert incr[3:6] == [1, 1, 1]
        assert by[b"cnt.get"][1] == 3 and "readonly" in by[b"cnt.get"][2]
        assert by[b"ping"][3:6] == [0, 0, 0]
        assert by[b"grp.post"][3:6] == [1, 1, 1]  # global: the group
        assert by[b"flushall"][3:6] == [0, 0, 0]
        assert by[b"rcpt.count"][3:6] == [1, 1, 1]  # gid
        spec = incr[8][0]
        spec = dict(zip(spec[::2], spec[1::2]))
        assert b"begin_search" in spec
        assert c.cmd("COMMAND", "INFO", "CNT.GET", "nope")[1] is None
        assert c.cmd("COMMAND", "GETKEYS", "CNT.INCR", 42, "mention") == \
            [b"42"]
        assert c.cmd("COMMAND", "GETKEYS", "rcpt.send", 7, 1, 2) == [b"7"]
        assert c.cmd("COMMAND", "GETKEYS", "BC.PUBLISH", 9) == [b"9"]
        assert_err(c.cmd("COMMAND", "GETKEYS", "FLUSHALL"))
        assert_err(c.cmd("COMMAND", "GETKEYS", "CNT.INCR"))
        assert_err(c.cmd("COMMAND", "GETKEYS", "NOPE", 1))
        assert_err(c.cmd("COMMAND", "BOGUS"))
        # Binary: the same table; arity is a signed integer there.
        info = b.call("COMMAND", "INFO", "CNT.INCR")
        assert info[0][0] == b"cnt.incr" and info[0][1] == -3


def _docs_args(args, path=""):
    """Checks COMMAND DOCS arguments the way redis-cli reads them: every
    one a map with a name and a known type; flags are status replies."""
    for a in args:
        d = pairs(a)
        assert "name" in d and "type" in d, (path, d)
        assert d["type"] in (b"string", b"integer", b"key", b"pure-token",
                             b"oneof", b"block", b"double", b"pattern",
                             b"unix-time"), (path, d)
        if d["type"] == b"pure-token":
            assert "token" in d
        for f in d.get("flags", []):
            assert isinstance(f, Status) and f in ("optional", "multiple")
        if d["type"] in (b"oneof", b"block"):
            assert d["arguments"], (path, d)
            _docs_args(d["arguments"], path + "/" + d["name"].decode())


def _render(args):
    """redis-cli's cliAddArgument, to compare with ops.def's syntax."""
    out = []
    for a in args:
        d = pairs(a)
        flags = d.get("flags", [])
        t = d["type"]
        if t == b"oneof":
            body = "|".join(_render([x]) for x in d["arguments"])
        elif t == b"block":
            body = _render(d["arguments"])
        elif t == b"pure-token":
            body = d["token"].decode()
        else:
            body = d["name"].decode()
        if "multiple" in flags:
            body += " [%s ...]" % body if t != b"pure-token" else " ..."
        if "optional" in flags:
            body = "[" + body + "]"
        out.append(body)
    return " ".join(out)


def _syntaxes():
    """name -> syntax column, from protocol/ops.def."""
    text = open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             "..", "..", "protocol", "ops.def")).read()
    out = {}
    for m in re.finditer(r'^OP\(\s*\w+\s*,\s*"([^"]+)"\s*,\s*0x[0-9A-Fa-f]+\s*,'
                         r'\s*\w+\s*,\s*\w+\s*,(.*?),\s*"((?:[^"\\]|\\.)*)"',
                         text, re.M | re.S):
        out[m.group(1)] = m.group(3)
    return out


def test_command_docs_parse_as_redis_cli_reads_them():
    with Server() as srv, srv.resp() as c:
        docs = pairs(c.cmd("COMMAND", "DOCS"))
        assert len(docs) == len(OPS)
        for name, doc in docs.items():
            d = pairs(doc)
            for field in ("summary", "since", "group", "complexity"):
                assert isinstance(d[field], bytes) and d[field], (name, field)
            _docs_args(d["arguments"], name)
        # What redis-cli shows is the syntax column of ops.def, for every
        # command (those with "..." render it redis-cli's way).
        syntax = _syntaxes()
        checked = 0
        for name, doc in docs.items():
            want = syntax[name.upper()]
            if "..." in want:
                continue
            got = _render(pairs(doc)["arguments"])
            norm = lambda t: re.sub(r"\s*\|\s*", "|", " ".join(t.split()))
            assert norm(got) == norm(want), (name, got, want)
            checked += 1
        assert checked > len(OPS) // 2
        d = pairs(docs["cnt.get"])
        assert d["group"] == b"cnt"
        uid = pairs(d["arguments"][0])
        assert uid["type"] == b"key"
        assert _render(pairs(docs["cnt.clear"])["arguments"]) == \
            "uid [type [type ...]]"
        one = c.cmd("COMMAND", "DOCS", "CNT.GET", "no-such")
        assert [one[0]] == [b"cnt.get"] and len(one) == 2
        c.cmd("HELLO", 3)
        assert set(c.cmd("COMMAND", "DOCS", "ping")) == {b"ping"}


def _client_line(text, cid):
    for line in text.decode().splitlines():
        f = dict(kv.split("=", 1) for kv in line.split(" "))
        if f["id"] == str(cid):
            return f
    return None


def test_client_id_name_list_info_kill():
    with Server() as srv, srv.resp() as a, srv.resp() as b, srv.bin() as c:
        ida, idb = a.cmd("CLIENT", "ID"), b.cmd("CLIENT", "ID")
        idc = c.call("CLIENT", "ID")
        assert len({ida, idb, idc}) == 3
        assert a.cmd("CLIENT", "GETNAME") is None
        assert a.cmd("CLIENT", "SETNAME", "worker-1") == "OK"
        assert a.cmd("CLIENT", "GETNAME") == b"worker-1"
        assert_err(a.cmd("CLIENT", "SETNAME", "two words"))
        assert_err(a.cmd("CLIENT", "SETNAME", "new\nline"))
        assert a.cmd("CLIENT", "SETINFO", "LIB-NAME", "mylib") == "OK"
        assert a.cmd("CLIENT", "SETINFO", "lib-ver", "1.2.3") == "OK"
        assert_err(a.cmd("CLIENT", "SETINFO", "LIB-COLOR", "red"))
        text = a.cmd("CLIENT", "LIST")
        fa = _client_line(text, ida)
        assert fa["name"] == "worker-1" and fa["lib-name"] == "mylib"
        assert fa["lib-ver"] == "1.2.3" and fa["cmd"] == "client"
        assert fa["db"] == "0" and fa["resp"] == "2" and fa["flags"] == "N"
        assert fa["laddr"].endswith(":%d" % srv.port)
        fb = _client_line(text, idb)
        fc = _client_line(text, idc)
        assert fb["name"] == "" and fc["proto"] == "binary"
        assert _client_line(a.cmd("CLIENT", "LIST", "ID", idb), ida) is None
        info = a.cmd("CLIENT", "INFO")
        assert info.count(b"\n") == 1 and b"id=%d " % ida in info
        # KILL by id: b is closed, a answers 1.
        assert a.cmd("CLIENT", "KILL", "ID", idb) == 1
        assert b.wait_closed()
        assert a.cmd("CLIENT", "KILL", "ID", idb) == 0
        # The old form by address, and errors.
        assert a.cmd("CLIENT", "KILL", fc["addr"]) == "OK"
        assert c.wait_closed()
        assert_err(a.cmd("CLIENT", "KILL", "127.0.0.1:1"))
        assert_err(a.cmd("CLIENT", "KILL", "TYPE", "nope"))
        assert_err(a.cmd("CLIENT", "KILL", "ID"))
        assert a.cmd("CLIENT", "KILL", "TYPE", "pubsub") == 0
        # SKIPME yes (the default) spares the caller; no closes it after
        # its reply.
        assert a.cmd("CLIENT", "KILL", "TYPE", "normal") == 0
        assert a.cmd("CLIENT", "KILL", "TYPE", "normal", "SKIPME",
                     "no") == 1
        assert a.wait_closed()
        assert_err(srv.resp().cmd("CLIENT", "NOPE"))


def test_client_pause_holds_writes_then_all():
    with Server() as srv, srv.resp() as ctl, srv.resp() as w, \
            srv.bin() as bw:
        assert ctl.cmd("CLIENT", "PAUSE", 100000, "WRITE") == "OK"
        assert w.cmd("CNT.GET", 1, 0) == 0  # reads run
        w.send(encode_multibulk("CNT.INCR", 1, 0))
        rid = bw.alloc_id()
        bw.send(encode_frame("CNT.INCR", rid, 2, 0))
        assert w.read_available(0.3) == b""  # held
        assert bw.read_available(0.1) == b""
        assert info_flat(ctl.cmd("INFO", "clients"))["clients_paused"] == "1"
        assert ctl.cmd("CLIENT", "UNPAUSE") == "OK"
        assert w.read_reply() == [1, 1]
        assert bw.reply(rid) == [1, 1]
        # ALL holds reads too, but not CLIENT.
        assert ctl.cmd("CLIENT", "PAUSE", 100000) == "OK"
        w.send(encode_multibulk("PING"))
        assert w.read_available(0.3) == b""
        assert ctl.cmd("CLIENT", "UNPAUSE") == "OK"
        assert w.read_reply() == "PONG"
        # A pause ends by itself.
        assert ctl.cmd("CLIENT", "PAUSE", 50, "WRITE") == "OK"
        assert w.cmd("CNT.INCR", 1, 0) == [2, 2]
        assert_err(ctl.cmd("CLIENT", "PAUSE", "x"))
        assert_err(ctl.cmd("CLIENT", "PAUSE", 10, "SOME"))


MONITOR_LINE = re.compile(r'^\d+\.\d{6} \[0 127\.0\.0\.1:\d+\]'
                          r'( "(?:[^"\\]|\\.)*")+$')


def test_monitor_streams_other_clients_commands():
    with Server() as srv, srv.resp() as m, srv.resp() as c, \
            srv.bin() as b, srv.raw() as bm:
        assert m.cmd("MONITOR") == "OK"
        rid = 1
        bm.send(encode_frame("MONITOR", rid))
        hdr = bm.read_exact(16)
        body = bm.read_exact(HDR.unpack(hdr)[4])
        c.cmd("CNT.INCR", 5, "mention", 2)
        b.call("CNT.GET", 5, 0)
        c.cmd("CONFIG", "SET", "requirepass", "sekrit")
        c.cmd("AUTH", "sekrit")
        c.cmd("ECHO", 'a"b\n')
        c.cmd("HELLO", 2, "AUTH", "default", "sekrit", "SETNAME", "app")
        assert m.read_reply().endswith('"monitor"')  # bm's
        lines = [m.read_reply() for _ in range(6)]
        for line in lines:
            assert isinstance(line, Status) and MONITOR_LINE.match(line), line
        assert lines[0].endswith('"cnt.incr" "5" "mention" "2"')
        assert lines[1].endswith('"cnt.get" "5" "0"')
        assert lines[2].endswith('"config" "SET" "requirepass" "(redacted)"')
        assert "sekrit" not in "".join(lines)
        assert lines[3].endswith('"auth" "(redacted)"')
        assert lines[4].endswith('"echo" "a\\"b\\n"')
        assert lines[5].endswith('"hello" "2" "AUTH" "(redacted)" '
                                 '"(redacted)" "SETNAME" "app"'), lines[5]
        # The binary monitor gets push frames: id 0, flag 1, a string.
        for want in ('"cnt.incr"', '"cnt.get"'):
            magic, ver, status, fid, length, argc, flags = HDR.unpack(
                bm.read_exact(16))
            assert (fid, flags, status) == (0, 1, 0)
            v, _ = decode_value(bm.read_exact(length))
            assert want in v.decode()
        # A monitor does not see its own commands; MONITOR in MULTI is
        # refused.
        assert c.cmd("MULTI") == "OK"
        assert_err(c.cmd("MONITOR"))


def test_secrets_are_redacted_in_monitor_and_slowlog():
    """Every secret-bearing argument: CONFIG SET of masterauth and the TLS
    key passphrases (several pairs in one SET too), AUTH with a user,
    HELLO AUTH; shown as (redacted) to MONITOR and kept so by SLOWLOG."""
    secrets = ["ma-%d-secret" % i for i in range(5)]
    with Server() as srv, srv.resp() as m, srv.resp() as c:
        assert c.cmd("CONFIG", "SET", "slowlog-log-slower-than", 0) == "OK"
        assert m.cmd("MONITOR") == "OK"
        c.cmd("CONFIG", "SET", "masterauth", secrets[0])
        c.cmd("CONFIG", "SET", "maxclients", 900,
              "tls-key-file-pass", secrets[1])
        c.cmd("CONFIG", "SET", "tls-client-key-file-pass", secrets[2])
        c.cmd("AUTH", "default", secrets[3])
        c.cmd("HELLO", 3, "AUTH", "default", secrets[4])
        c.cmd("CONFIG", "SET", "MASTERAUTH", secrets[0])
        lines = [m.read_reply() for _ in range(6)]
        text = "".join(lines)
        for sec in secrets:
            assert sec not in text, (sec, lines)
        assert lines[0].endswith('"config" "SET" "masterauth" "(redacted)"')
        assert lines[1].endswith('"maxclients" "900" "tls-key-file-pass" '
                                 '"(redacted)"'), lines[1]
        assert lines[3].endswith('"auth" "(redacted)" "(redacted)"')
        assert lines[5].endswith('"MASTERAUTH" "(redacted)"'), lines[5]
        log = c.cmd("SLOWLOG", "GET", 100)
        flat = repr(log)
        for sec in secrets:
            assert sec not in flat, (sec, log)
        args = [[a.decode() for a in e[3]] for e in log]
        assert ["CONFIG", "SET", "masterauth", "(redacted)"] in args, args
        assert ["AUTH", "(redacted)", "(redacted)"] in args, args


def test_slowlog_records_commands_over_the_threshold():
    with Server() as srv, srv.resp() as c:
        n = c.cmd("SLOWLOG", "LEN")
        assert n == 0, (n, c.cmd("SLOWLOG", "GET"))
        assert c.cmd("CONFIG", "SET", "slowlog-log-slower-than", 0) == "OK"
        c.cmd("CLIENT", "SETNAME", "slowpoke")
        c.cmd("CNT.INCR", 77, "dm", 3)
        c.cmd("DOT.CHECK", 1, *range(40))
        c.cmd("ECHO", "x" * 300)
        entries = c.cmd("SLOWLOG", "GET", 3)
        assert len(entries) == 3
        echo, check, incr = entries
        assert echo[0] > check[0] > incr[0]  # ids, newest first
        assert incr[3] == [b"CNT.INCR", b"77", b"dm", b"3"]
        assert incr[5] == b"slowpoke" and incr[4].startswith(b"127.0.0.1:")
        assert abs(incr[1] - time.time()) < 60 and incr[2] >= 0
        assert len(check[3]) == 32 and check[3][-1] == b"... (11 more arguments)"
        assert echo[3][1] == b"x" * 128 + b"... (172 more bytes)"
        assert c.cmd("SLOWLOG", "LEN") >= 4
        assert c.cmd("CONFIG", "SET", "slowlog-max-len", 2) == "OK"
        assert c.cmd("SLOWLOG", "LEN") <= 3
        assert len(c.cmd("SLOWLOG", "GET", -1)) <= 3
        assert c.cmd("CONFIG", "SET", "slowlog-log-slower-than", -1) == "OK"
        assert c.cmd("SLOWLOG", "RESET") == "OK"
        c.cmd("CNT.INCR", 1, 0)
        assert c.cmd("SLOWLOG", "LEN") == 0
        assert_err(c.cmd("SLOWLOG", "GET", "x"))
        assert_err(c.cmd("SLOWLOG", "NOPE"))


def test_latency_monitor_records_slow_commands():
    with Server() as srv, srv.resp() as c, srv.bin() as b:
        assert c.cmd("LATENCY", "LATEST") == []  # off by default
        assert c.cmd("CONFIG", "SET", "latency-monitor-threshold", 1) == "OK"
        # A foreground snapshot of many users takes well over 1 ms.
        for start in range(0, 200000, 5000):
            b.pipeline([("CNT.INCR", u, 0) for u in range(start, start + 5000)])
        assert c.cmd("SAVE") == "OK"
        latest = c.cmd("LATENCY", "LATEST")
        ev = {e[0]: e for e in latest}
        assert b"command" in ev, latest
        name, when, last, worst = ev[b"command"]
        assert abs(when - time.time()) < 60 and worst >= last >= 1
        hist = c.cmd("LATENCY", "HISTORY", "command")
        assert hist and all(len(h) == 2 and h[1] >= 1 for h in hist)
        assert c.cmd("LATENCY", "HISTORY", "nope") == []
        assert b"latency-monitor-threshold" not in c.cmd("LATENCY", "DOCTOR")
        assert c.cmd("LATENCY", "RESET", "command") == 1
        assert c.cmd("LATENCY", "HISTORY", "command") == []


def test_select_and_dbsize():
    with Server() as srv, srv.resp() as c:
        assert c.cmd("SELECT", 0) == "OK"
        assert c.cmd("SELECT", "000") == "OK"
        r = c.cmd("SELECT", 1)
        assert_err(r, "ERR DB index is out of range")
        assert_err(c.cmd("SELECT", "x"))
        assert c.cmd("DBSIZE") == 0
        c.cmd("CNT.INCR", 1, 0)
        c.cmd("CNT.INCR", 2, 0)
        c.cmd("CONV.INCR", 2, 9)  # user 2 in a second family
        c.cmd("GRP.JOIN", 3, 1)
        c.cmd("DOT.CLICK", 4, 1, 5)
        c.cmd("FEED.FOLLOW", 5, 6)
        c.cmd("BC.READ", 6, 1)  # BC and RCPT keep users per channel/group
        c.cmd("RCPT.JOIN", 1, 7)
        assert c.cmd("DBSIZE") == 6
        assert "db0:keys=6,expires=0,avg_ttl=0" in \
            c.cmd("INFO", "keyspace").decode()
        c.cmd("USER.DEL", 2)
        assert c.cmd("DBSIZE") == 4


def _walk(c, *opts, during=None):
    seen, cursor, calls = [], b"0", 0
    while True:
        r = c.cmd("USER.SCAN", cursor, *opts)
        assert isinstance(r, list) and len(r) == 2, r
        cursor, uids = r
        assert isinstance(cursor, bytes) and int(cursor) <= 2 ** 63 - 1
        seen += uids
        calls += 1
        if during:
            during(calls)
        if cursor == b"0":
            return seen, calls
        assert calls < 100000, "walk does not end"


def test_user_scan_returns_every_user_held_for_the_whole_walk():
    rng = random.Random(18)
    with Server() as srv, srv.resp() as c, srv.bin() as b:
        assert c.cmd("USER.SCAN", 0) == [b"0", []]
        fams = {"cnt": ("CNT.INCR", "{u}", 0), "conv": ("CONV.INCR", "{u}", 3),
                "grp": ("GRP.JOIN", "{u}", 8), "dot": ("DOT.CLICK", "{u}", 1),
                "feed": ("FEED.FOLLOW", "{u}", 2)}
        held = {}
        for f, (name, _u, arg) in fams.items():
            uids = rng.sample(range(ID_MAX), 300) + [0, ID_MAX]
            b.pipeline([(name, u, arg) for u in uids])
            held[f] = set(uids)
        stable = set().union(*held.values())
        extra = iter(range(10 ** 6, 10 ** 6 + 100000))
        doomed = sorted(held["cnt"])[:50]

        def churn(call):
            # Users come and go during the walk; the others must all show.
            for _ in range(5):
                c.cmd("CNT.INCR", next(extra), 0)
            if call <= len(doomed):
                c.cmd("CNT.CLEAR", doomed[call - 1])

        seen, calls = _walk(c, "COUNT", 7, during=churn)
        must = stable - set(doomed)
        assert must <= set(seen), len(must - set(seen))
        assert calls > 50  # it really was walked in steps
        total = sum(len(v) for v in held.values())
        assert len(seen) < 2 * (total + 100000)
        for f, uids in held.items():
            got, _ = _walk(c, "FAMILY", f, "COUNT", 1000)
            want = uids - set(doomed) if f == "cnt" else uids
            assert want <= set(got)
            if f != "cnt":
                assert set(got) == uids
        assert_err(c.cmd("USER.SCAN", 0, "FAMILY", "bc"))
        assert_err(c.cmd("USER.SCAN", 0, "COUNT", 0))
        assert_err(c.cmd("USER.SCAN", 0, "COUNT"))
        assert_err(c.cmd("USER.SCAN", 0, "BOGUS", 1))
        assert_err(c.cmd("USER.SCAN", "x"))
        assert_err(c.cmd("USER.SCAN", str(7 << 60)))  # no such family
        big = c.cmd("USER.SCAN", 0, "COUNT", 10 ** 9)
        assert big[0] == b"0" and len(big[1]) >= len(stable)


def test_config_set_runtime_keys_all_or_nothing():
    with Server() as srv, srv.resp() as c:
        assert c.cmd("CONFIG", "SET", "maxmemory", "64mb",
                     "slowlog-max-len", 7) == "OK"
        got = pairs(c.cmd("CONFIG", "GET", "maxmemory", "slowlog-*"))
        assert got["maxmemory"] == str(64 << 20).encode()
        assert got["slowlog-max-len"] == b"7"
        r = c.cmd("CONFIG", "SET", "maxmemory", 1, "port", 1234)
        assert_err(r, "ERR CONFIG SET failed")
        assert "port" in r.text and "restart" in r.text
        assert pairs(c.cmd("CONFIG", "GET", "maxmemory"))["maxmemory"] == \
            str(64 << 20).encode()  # nothing changed
        assert_err(c.cmd("CONFIG", "SET", "maxmemory", "lots"))
        assert_err(c.cmd("CONFIG", "SET", "nope", 1))
        assert_err(c.cmd("CONFIG", "SET", "maxmemory"))
        assert_err(c.cmd("CONFIG", "SET", "timeout", 1, "timeout", 2))
        # Redis's names: save, appendonly, appendfsync, databases.
        got = pairs(c.cmd("CONFIG", "GET", "save"))
        assert got == {"save": b"300 1"}
        assert pairs(c.cmd("CONFIG", "GET", "appendonly")) == \
            {"appendonly": b"yes"}
        assert pairs(c.cmd("CONFIG", "GET", "appendfsync")) == \
            {"appendfsync": b"everysec"}
        assert pairs(c.cmd("CONFIG", "GET", "databases")) == \
            {"databases": b"1"}
        assert c.cmd("CONFIG", "SET", "save", "900 1 60 1000") == "OK"
        assert pairs(c.cmd("CONFIG", "GET", "save-seconds")) == \
            {"save-seconds": b"60"}
        assert c.cmd("CONFIG", "SET", "save", "") == "OK"
        assert pairs(c.cmd("CONFIG", "GET", "save")) == {"save": b""}
        assert_err(c.cmd("CONFIG", "SET", "appendonly", "no"))  # restart
        assert_err(c.cmd("CONFIG", "SET", "save", "60"))
        # loglevel and timeout take effect.
        assert c.cmd("CONFIG", "SET", "timeout", 1) == "OK"
        idle = srv.resp()
        assert idle.wait_closed(5)
        assert c.cmd("CONFIG", "SET", "timeout", 0) == "OK"


def test_config_set_requirepass_and_maxclients_take_effect():
    with Server() as srv, srv.resp() as c:
        assert c.cmd("CONFIG", "SET", "requirepass", "pw") == "OK"
        assert c.cmd("CNT.GET", 1, 0) == 0  # already connected: in
        with srv.resp() as d:
            assert_err(d.cmd("CNT.GET", 1, 0), "NOAUTH")
            assert d.cmd("AUTH", "pw") == "OK"
        assert c.cmd("CONFIG", "SET", "requirepass", "") == "OK"
        with srv.resp() as d:
            assert d.cmd("CNT.GET", 1, 0) == 0


def test_config_rewrite_keeps_comments_and_round_trips():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "unreadd.conf")
        with open(path, "w") as f:
            f.write("# my settings\nmaxmemory 1mb   \n\n"
                    "# keep me\nunread-cap 50\nmaxmemory 2mb\n"
                    "appendonly yes\n")
        with Server(config_file=path) as srv, srv.resp() as c:
            assert pairs(c.cmd("CONFIG", "GET", "maxmemory"))["maxmemory"] \
                == str(2 << 20).encode()
            assert c.cmd("CONFIG", "SET", "maxmemory", "3mb",
                         "slowlog-max-len", 9) == "OK"
            assert c.cmd("CONFIG", "REWRITE") == "OK"
            text = open(path).read()
            assert text.startswith("# my settings\nmaxmemory %d\n" %
                                   (3 << 20)), text
            assert "# keep me\nunread-cap 50\n" in text
            assert text.count("maxmemory") == 1
            assert "appendonly yes" in text
            assert "# Generated by CONFIG REWRITE" in text
            assert "slowlog-max-len 9" in text
            # Options given on the command line are written too (port).
            assert re.search(r"^port %d$" % srv.port, text, re.M)
            assert c.cmd("CONFIG", "REWRITE") == "OK"
            assert open(path).read() == text  # stable
        with Server(config_file=path) as srv, srv.resp() as c:
            got = pairs(c.cmd("CONFIG", "GET", "maxmemory", "slowlog-max-len",
                              "unread-cap"))
            assert got == {"maxmemory": str(3 << 20).encode(),
                           "slowlog-max-len": b"9", "unread-cap": b"50"}
    with Server() as srv, srv.resp() as c:
        assert_err(c.cmd("CONFIG", "REWRITE"), "ERR The server is running "
                   "without a config file")


def test_config_resetstat():
    with Server() as srv, srv.resp() as c:
        for _ in range(3):
            c.cmd("CNT.INCR", 1, 0)
        c.cmd("NOPE")
        s = info_flat(c.cmd("INFO", "commandstats", "errorstats"))
        assert s["cmdstat_cnt.incr"].startswith("calls=3,usec=")
        assert s["errorstat_ERR"] == "count=1"
        assert c.cmd("CONFIG", "RESETSTAT") == "OK"
        s = info_flat(c.cmd("INFO", "commandstats", "errorstats", "stats"))
        assert "cmdstat_cnt.incr" not in s and "errorstat_ERR" not in s
        assert int(s["total_commands_processed"]) <= 2


REDIS_FIELDS = {
    "server": ["redis_version", "redis_mode", "os", "arch_bits",
               "multiplexing_api", "process_id", "run_id", "tcp_port",
               "uptime_in_seconds", "uptime_in_days", "executable",
               "config_file", "unreadd_version"],
    "clients": ["connected_clients", "maxclients", "blocked_clients",
                "client_recent_max_input_buffer",
                "client_recent_max_output_buffer"],
    "memory": ["used_memory", "used_memory_human", "used_memory_rss",
               "used_memory_peak", "used_memory_peak_human",
               "used_memory_dataset", "total_system_memory", "maxmemory",
               "maxmemory_policy", "mem_fragmentation_ratio"],
    "persistence": ["loading", "rdb_changes_since_last_save",
                    "rdb_bgsave_in_progress", "rdb_last_save_time",
                    "rdb_last_bgsave_status", "rdb_saves", "aof_enabled",
                    "aof_last_write_status", "aof_current_size"],
    "stats": ["total_connections_received", "total_commands_processed",
              "instantaneous_ops_per_sec", "total_net_input_bytes",
              "total_net_output_bytes", "instantaneous_input_kbps",
              "rejected_connections", "expired_keys", "evicted_keys",
              "keyspace_hits", "keyspace_misses", "latest_fork_usec",
              "total_forks", "total_error_replies"],
    "replication": ["role", "connected_slaves", "master_replid",
                    "master_repl_offset"],
    "cpu": ["used_cpu_sys", "used_cpu_user", "used_cpu_sys_children"],
}


def test_info_speaks_redis():
    with Server() as srv, srv.resp() as c, srv.resp() as d:
        c.cmd("CNT.INCR", 1, 0)
        assert c.cmd("BGSAVE") == "Background saving started"
        srv.wait_for(lambda: info_flat(c.cmd("INFO", "persistence"))
                     ["rdb_bgsave_in_progress"] == "0", what="bgsave")
        info = info_dict(c.cmd("INFO"))
        for sec, fields in REDIS_FIELDS.items():
            for f in fields:
                assert f in info[sec], (sec, f)
        s = info["server"]
        assert s["redis_version"] == "7.0.0" and s["redis_mode"] == \
            "standalone"
        assert re.fullmatch(r"[0-9a-f]{40}", s["run_id"])
        assert info["replication"]["role"] == "master"
        assert info["clients"]["connected_clients"] == "2"
        assert info["clients"]["blocked_clients"] == "0"
        assert info["persistence"]["rdb_saves"] == "1"
        assert int(info["persistence"]["rdb_last_save_time"]) > 0
        assert info["stats"]["total_forks"] == "1"
        assert re.fullmatch(r"\d+(\.\d\d)?[BKMG]",
                            info["memory"]["used_memory_human"])
        assert info["keyspace"]["db0"] == "keys=1,expires=0,avg_ttl=0"
        assert info["keyspace"]["cnt"].startswith("users=1,bytes=")
        assert info["cluster"]["cluster_enabled"] == "0"
        cs = info["commandstats"]["cmdstat_cnt.incr"]
        assert re.fullmatch(r"calls=1,usec=\d+,usec_per_call=\d+\.\d\d,"
                            r"rejected_calls=0,failed_calls=0,errors=0", cs)
        # Several sections, and one: exactly those.
        two = info_dict(c.cmd("INFO", "server", "CLIENTS"))
        assert set(two) == {"server", "clients"}
        assert set(info_dict(c.cmd("INFO", "stats"))) == {"stats"}
        assert set(info_dict(c.cmd("INFO", "everything"))) == set(info)
        assert c.cmd("INFO", "nosuchsection") == b""
        # instantaneous_ops_per_sec moves under load (awaited: how soon
        # its sampling sees the load is the machine's business).
        def moved():
            c.pipeline([("PING",)] * 200)
            return int(info_flat(c.cmd("INFO", "stats"))
                       ["instantaneous_ops_per_sec"]) > 0
        srv.wait_for(moved, 20, "instantaneous_ops_per_sec to move")


def test_sighup_reopens_the_logfile_and_usr1_usr2_are_not_fatal():
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "unreadd.log")
        with Server(logfile=log) as srv, srv.resp() as c:
            srv.wait_for(lambda: os.path.exists(log) and
                         "ready on" in open(log).read(), what="log")
            first = open(log).read()
            assert re.search(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z "
                             r"\[\d+\] INFO ", first, re.M), first
            os.rename(log, log + ".1")  # logrotate
            srv.proc.send_signal(signal.SIGHUP)
            srv.wait_for(lambda: os.path.exists(log), what="new log")
            srv.wait_for(lambda: "reopened" in open(log).read(),
                         what="reopen line")
            for sig in (signal.SIGUSR1, signal.SIGUSR2):
                srv.proc.send_signal(sig)
            srv.wait_for(lambda: "SIGUSR2, ignored" in open(log).read(),
                         what="usr2 line")
            assert "SIGUSR1, ignored" in open(log).read()
            assert c.cmd("PING") == "PONG" and srv.alive()
            # a protected config (enable-protected-configs no)
            r = c.cmd("CONFIG", "SET", "logfile", log + ".2")
            assert_err(r, "ERR CONFIG SET failed (possibly related to "
                       "argument 'logfile') - can't set protected config")
        assert "bye" in open(log).read()
    with Server() as srv, srv.resp() as c:
        srv.proc.send_signal(signal.SIGHUP)
        srv.wait_for(lambda: "SIGHUP, ignored" in srv.stderr_text(),
                     what="hup line")
        assert c.cmd("PING") == "PONG"
        assert not re.search(r"^\d{4}-\d\d-\d\d \d", srv.stderr_text(), re.M)


def test_unusable_data_dir_says_what_is_wrong():
    with tempfile.TemporaryDirectory() as tmp:
        notdir = os.path.join(tmp, "file")
        open(notdir, "w").close()
        srv = Server(check_exit=False, args=["--dir", notdir])
        try:
            srv.start()
            raise AssertionError("started on a file as data dir")
        except Exception as e:
            assert "is not a directory" in str(e) or \
                "is not a directory" in srv.stderr_text(), srv.stderr_text()
        finally:
            if srv.proc is not None:
                srv.stop()
        if os.geteuid() != 0:  # root may write anywhere
            ro = os.path.join(tmp, "ro")
            os.mkdir(ro, 0o500)
            srv = Server(check_exit=False, args=["--dir", ro])
            try:
                srv.start()
            except Exception:
                pass
            assert "not writable" in srv.stderr_text()
            assert "another unreadd" not in srv.stderr_text()


def _pty_session(argv, keys, want, timeout=10):
    """Runs argv on a pseudo-terminal, types keys (a list of byte strings,
    each sent once the output so far holds the matching entry of want)."""
    import pty
    import select
    import subprocess as sp
    master, slave = pty.openpty()
    hist = tempfile.NamedTemporaryFile(prefix="unreadcli-hist-")
    p = sp.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                 env=dict(os.environ, TERM="xterm",
                          UNREADCLI_HISTFILE=hist.name))
    os.close(slave)
    out = b""

    def n_of(w, want, k):
        return want[:keys.index(k) + 1].count(w)

    try:
        for k, w in zip(keys, want):
            deadline = time.monotonic() + timeout
            while out.count(w.encode()) < n_of(w, want, k):
                r, _, _ = select.select([master], [], [],
                                        max(0, deadline - time.monotonic()))
                assert r, "waiting for %r, got %r" % (w, out[-300:])
                out += os.read(master, 4096)
            if k is not None:
                os.write(master, k)
    finally:
        os.close(master)
        p.wait(5)
        hist.close()
    return out.decode("utf-8", "replace")


def test_unread_cli_line_editing_history_and_version():
    cli = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                       os.environ.get("UNREADD_BUILD", "build"), "unread-cli")
    import subprocess as sp
    v = sp.run([cli, "--version"], capture_output=True, text=True)
    assert v.returncode == 0 and re.fullmatch(r"unread-cli \d+\.\d+\.\d+\n",
                                              v.stdout), v
    with Server() as srv, srv.resp() as c:
        prompt = "127.0.0.1:%d> " % srv.port
        # Up arrow recalls the last line: the second Enter runs it again.
        out = _pty_session([cli, "-p", str(srv.port)],
                           [b"CNT.INCR 5 0\r", b"\x1b[A\r", b"CNT.IN\t7 0\r",
                            b"\x04"],
                           [prompt, prompt, prompt, prompt])
        # (The terminal may still echo keys typed before libedit takes it
        # over, so the screen is not compared: what ran is.)
        assert c.cmd("CNT.GET", 5, 0) == 2, out  # the recalled line ran
        assert c.cmd("CNT.GET", 7, 0) == 1  # Tab completed CNT.INCR
