"""Hostile and slow clients against a real server (docs/OPERATIONS.md,
Security): junk, huge length fields, byte-at-a-time input, 100,000-command
pipelines, a client that never reads, 10,000 connections, maxclients, the
idle timeout, requirepass on both protocols, unread-cli -a and libunread.
Every test ends with DEBUG AUDIT clean."""

import random
import re
import resource
import socket
import struct
import subprocess
import sys
import time

from harness import (E, HDR, LIBUNREAD, MAGIC, MEMORY_SLACK, Sender, Server,
                     assert_err, check_state, encode_arg, encode_frame,
                     encode_multibulk, info_flat, is_err, libunread_env,
                     opcode, pairs, run_cli, run_redis_cli, seed_state)

PW = "correct horse battery staple"
OUT_PAUSE = 256 << 10  # server/net.c: unsent reply bytes that pause input


def info(c):
    return info_flat(c.cmd("INFO"))


def audit(srv, password=None):
    """The server is alive and DEBUG AUDIT finds nothing wrong."""
    assert srv.alive(), "unreadd died:\n" + srv.stderr_tail()
    with srv.resp() as c:
        if password:
            assert c.cmd("AUTH", password) == "OK"
        assert c.cmd("DEBUG", "AUDIT") == 0


def expect_close_after_error(c, prefix):
    assert_err(c.read_reply(), prefix)
    assert c.wait_closed(5), "connection not closed after the error"


# --------------------------------------------------------------------------
# Bad bytes.


def test_junk_bytes_on_both_protocols_leave_the_server_whole():
    rnd = random.Random(8)
    with Server() as srv:
        seed_state(srv)
        for i in range(80):
            junk = bytes(rnd.randrange(256) for _ in range(rnd.randrange(
                1, 3000)))
            if i % 2:
                junk = bytes([MAGIC, 1]) + junk  # a binary client
            elif junk[0] == MAGIC:
                junk = b"x" + junk
            with srv.raw() as r:
                r.send(junk)
                r.sock.shutdown(socket.SHUT_WR)
                assert r.wait_closed(5), "junk %d: not closed" % i
        check_state(srv)
        audit(srv)


def test_length_fields_of_2_to_31_and_2_to_64_are_refused_at_once():
    with Server() as srv:
        seed_state(srv)
        with srv.resp() as mon:
            rss = int(info(mon)["used_memory_rss"])
        for data in (b"*1\r\n$2147483648\r\n", b"*2147483648\r\n",
                     b"*1\r\n$18446744073709551615\r\n",
                     b"*18446744073709551615\r\n",
                     b"*2\r\n$4\r\nPING\r\n$4294967295\r\n",
                     # each bulk fits max-frame, the request does not
                     b"*2\r\n$4\r\nPING\r\n$1048573\r\n"):
            with srv.resp() as c:
                c.send(data)
                expect_close_after_error(
                    c, "ERR protocol error: request over a limit")
        for length in (0x80000000, 0xFFFFFFFF):
            with srv.bin() as b:
                b.send(encode_frame("PING", 41, length=length))
                f = b.read_frame()
                assert f.status == E["TOOBIG"] and f.id == 41, f
                assert b.wait_closed(5)
        with srv.resp() as mon:
            # nothing was allocated for the announced sizes
            assert int(info(mon)["used_memory_rss"]) < rss + (8 << 20)
            assert int(info(mon)["protocol_errors"]) == 8
            # the largest request that fits still runs
            big = b"x" * ((1 << 20) - 4)
            assert mon.cmd("PING", big) == big
        check_state(srv)
        audit(srv)


def _stream_resp(uid):
    cmds = [("CNT.INCR", uid, "mention", 3), ("CONV.SEQ", uid, 5, 10),
            ("CONV.READ", uid, 5, 4), ("GRP.JOIN", uid, 9), ("GRP.POST", 9),
            ("CNT.GETALL", uid), ("CONV.TOTAL", uid), ("GRP.TOTAL", uid),
            ("PING", "one\r\nbyte")]
    return b"".join(encode_multibulk(*c) for c in cmds), len(cmds)


def _stream_bin(uid):
    cmds = [("CNT.INCR", uid, 1, 2), ("DOT.PUSH", 3), ("DOT.CHECK", uid, 3),
            ("FEED.FOLLOW", uid, 7), ("FEED.POST", 7, 2), ("FEED.UNREAD", uid),
            ("CNT.TOTAL", uid), ("PING", b"\xb7\x01")]
    return b"".join(encode_frame(c[0], i + 1, *c[1:])
                    for i, c in enumerate(cmds)), len(cmds)


def test_one_byte_at_a_time_on_both_protocols():
    with Server() as srv:
        # the same commands on two users: at once, then byte by byte
        with srv.resp() as a, srv.resp() as b:
            data, n = _stream_resp(1)
            a.send(data)
            fast = [a.read_reply() for _ in range(n)]
            data, n = _stream_resp(2)
            b.send_slowly(data, pause=0)
            slow = [b.read_reply() for _ in range(n)]
            fast[4] = slow[4] = None  # GRP.POST: the group's seq grows
            assert fast == slow, (fast, slow)
        with srv.bin() as a, srv.bin() as b:
            data, n = _stream_bin(1)
            a.send(data)
            fast = [a.reply(i + 1) for i in range(n)]
            data, n = _stream_bin(2)
            b.send_slowly(data, pause=0)
            slow = [b.reply(i + 1) for i in range(n)]
            fast[1] = slow[1] = fast[4] = slow[4] = None  # global writes
            assert fast == slow, (fast, slow)
        audit(srv)


def test_pipeline_of_100000_commands_on_both_protocols():
    n = 100000
    with Server() as srv:
        with srv.resp() as c:
            sender = Sender(c.sock, b"".join(
                encode_multibulk("CNT.INCR", i % 1000, 0) for i in range(n)))
            sender.start()
            for i in range(n):
                v = i // 1000 + 1
                r = c.read_reply()
                assert r == [v, v], (i, r)
            sender.join(10)
            assert sender.error is None
        with srv.bin() as b:
            sender = Sender(b.sock, b"".join(
                encode_frame("CNT.INCR", i + 1, i % 1000, 1) for i in range(n)))
            sender.start()
            for i in range(n):
                v = i // 1000 + 1
                r = b.reply(i + 1)  # replies in request order, ids echoed
                assert r == [v, 100 + v], (i, r)
            sender.join(10)
            assert sender.error is None
        audit(srv)


test_pipeline_of_100000_commands_on_both_protocols.timeout = 90


# --------------------------------------------------------------------------
# Slow readers and output limits.


def test_a_client_that_never_reads_is_paused_then_dropped():
    with Server(client_output_timeout=2) as srv, srv.resp() as mon:
        rss = int(info(mon)["used_memory_rss"])
        hog = srv.raw()
        # ~10 KB of reply per HELP: 500 MB if the server ran them all
        sender = Sender(hog.sock, b"HELP\r\n" * 50000)
        sender.start()
        srv.wait_for(lambda: info(mon)["paused_clients"] == "1",
                     what="the client that does not read to be paused")
        for _ in range(5):
            d = info(mon)
            # its replies wait in the kernel and below OUT_PAUSE + one
            assert int(d["client_output_bytes"]) < OUT_PAUSE + (64 << 10), d
            assert mon.cmd("PING") == "PONG"  # others are served
            time.sleep(0.1)
        srv.wait_for(lambda: info(mon)["client_output_timeouts"] == "1",
                     timeout=10, what="the client to be dropped")
        d = info(mon)
        assert d["connected_clients"] == "1" and d["paused_clients"] == "0"
        assert d["client_output_bytes"] == "0"
        assert int(d["used_memory_rss"]) < rss + (32 << 20), (rss, d)
        hog.close()
        audit(srv)


def test_replies_over_client_output_limit_close_the_connection():
    with Server(client_output_limit=100000) as srv, srv.resp() as mon:
        assert len(mon.cmd("HELP")) > 20  # one reply well below the limit
        with srv.raw() as hog:
            hog.send(b"HELP\r\n" * 2000)
            assert hog.wait_closed(5)
        d = info(mon)
        assert d["client_output_limit_disconnections"] == "1", d
        assert d["client_output_bytes"] == "0"
        assert d["client_output_limit"] == "100000"
        assert (d["client_output_timeout"], d["timeout"], d["maxclients"],
                d["max_frame"], d["requirepass"]) == (
                    "60", "0", "10000", "1048576", "no"), d
        assert pairs(mon.cmd("CONFIG", "GET", "client-output-*")) == {
            "client-output-limit": b"100000", "client-output-timeout": b"60",
            "client-output-buffer-limit": b"normal 100000 0 0 replica 0 0 0 "
                                          b"pubsub 33554432 8388608 60"}
        audit(srv)


# --------------------------------------------------------------------------
# Connections: many, too many, idle.


def test_10000_idle_connections_and_50_active_clients():
    n, active = 10000, 50
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = n + active + 100
    assert hard == resource.RLIM_INFINITY or hard >= need, \
        "the test needs %d open files (ulimit -Hn is %d)" % (need, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, need), hard))
    idle = []
    try:
        with Server(maxclients=n + active + 10) as srv, srv.resp() as mon:
            rss = int(info(mon)["used_memory_rss"])
            for _ in range(n):
                idle.append(socket.create_connection(("127.0.0.1", srv.port)))
            srv.wait_for(
                lambda: info(mon)["connected_clients"] == str(n + 1),
                timeout=30, what="every connection to be accepted")
            per = (int(info(mon)["used_memory_rss"]) - rss) / n
            print("    memory per idle connection: %.0f bytes (RSS delta "
                  "over %d connections)" % (per, n))
            assert per < 4096 * MEMORY_SLACK, per
            clients = [srv.resp() if i % 2 else srv.bin()
                       for i in range(active)]
            for rnd in range(1, 21):
                for i, c in enumerate(clients):
                    if i % 2:
                        assert c.cmd("CNT.INCR", i, 5) == [rnd, rnd]
                    else:
                        assert c.call("CONV.INCR", i, 1) == [rnd, rnd]
            assert info(mon)["connected_clients"] == str(n + active + 1)
            for s in idle:
                s.close()
            idle = []
            for c in clients:
                c.close()
            srv.wait_for(lambda: info(mon)["connected_clients"] == "1",
                         timeout=20, what="every close to be seen")
            audit(srv)
    finally:
        for s in idle:
            s.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


test_10000_idle_connections_and_50_active_clients.timeout = 90


def test_maxclients_refuses_the_next_connection_with_an_error():
    with Server(maxclients=3) as srv:
        a = srv.resp()
        # the harness's readiness probe is gone
        srv.wait_for(lambda: info(a)["connected_clients"] == "1")
        b, c = srv.bin(), srv.resp()
        assert a.cmd("PING") == "PONG" and b.call("PING") == "PONG"
        assert c.cmd("PING") == "PONG"
        with srv.raw() as d:
            assert d.read_line() == b"-ERR max number of clients reached"
            assert d.wait_closed(5)
        # a binary client (unread-cli) gets the line as a malformed reply
        p = run_cli(srv, "PING")
        assert p.returncode == 1, p
        d = info(a)
        # (the library may see the refusal at connect and try once more)
        assert int(d["rejected_connections"]) >= 2, d
        assert d["maxclients"] == "3"
        c.close()
        srv.wait_for(lambda: info(a)["connected_clients"] == "2")
        with srv.resp() as e:
            assert e.cmd("PING") == "PONG"
        # audit on a connection we hold: a new one could race e's close
        # and be the one refused
        assert srv.alive() and a.cmd("DEBUG", "AUDIT") == 0
        a.close()
        b.close()


def test_idle_connections_are_closed_after_timeout():
    # timeout 2 and a request every 0.2 s: a loaded machine's stall of a
    # second between two requests must not read as idle
    with Server(timeout=2) as srv:
        idle = srv.resp()
        assert idle.cmd("PING") == "PONG"
        silent = srv.raw()  # never sent a byte: no protocol yet
        with srv.bin() as busy:
            t0 = time.monotonic()
            while time.monotonic() - t0 < 4.2:  # busy for 2 timeouts: kept
                assert busy.call("PING") == "PONG"
                time.sleep(0.2)
            assert idle.wait_closed(10) and silent.wait_closed(10)
            assert pairs(busy.call("CONFIG", "GET", "timeout")) == {
                "timeout": b"2"}
            d = info_flat(busy.call("INFO", "clients"))
            assert d["idle_timeouts"] == "2" and d["connected_clients"] == "1"
        audit(srv)


def test_open_files_limit_is_raised_or_maxclients_lowered():
    class LowLimitServer(Server):
        def argv(self):
            return ["prlimit", "--nofile=256:256", "--"] + super().argv()

    with LowLimitServer() as srv, srv.resp() as c:
        with open("/proc/%d/limits" % srv.proc.pid) as f:
            soft = int([ln.split()[3] for ln in f
                        if ln.startswith("Max open files")][0])
        maxclients = int(pairs(c.cmd("CONFIG", "GET", "maxclients"))[
            "maxclients"])
        if maxclients == 10000:  # privileged: the limit was raised
            assert soft >= 10000 + 32, soft
        else:  # the hard limit stays: maxclients fits what there is
            # (the limit the server sees: valgrind keeps a few for itself)
            m = re.search(r"but the limit is (\d+) \(ulimit -n\): "
                          r"maxclients lowered to (\d+)", srv.stderr_text())
            assert m and int(m.group(1)) <= soft, srv.stderr_text()
            assert maxclients == int(m.group(2)) == int(m.group(1)) - 32


def test_listening_beyond_loopback_without_requirepass_warns():
    warning = "WARN listening on 0.0.0.0"
    with Server(bind="0.0.0.0") as srv:
        assert warning in srv.stderr_text()
        assert "WARN WARNING" not in srv.stderr_text()
    with Server(bind="0.0.0.0", requirepass=PW) as srv:
        assert warning not in srv.stderr_text()
    with Server() as srv:
        assert "WARN" not in srv.stderr_text()


# --------------------------------------------------------------------------
# requirepass.


def test_auth_over_resp():
    with Server(requirepass=PW) as srv, srv.resp() as c:
        assert c.cmd("PING") == "PONG"
        assert c.cmd("HELLO")[0] == b"server"
        for cmd in (("CNT.INCR", 1, 0), ("CNT.INCR",), ("HELP",), ("INFO",),
                    ("CONFIG", "GET", "*"), ("MULTI",)):
            assert_err(c.cmd(*cmd), "NOAUTH Authentication required.")
        # as in Redis: the (public) command table is no secret
        assert_err(c.cmd("NOSUCH"), "ERR unknown command")
        assert_err(c.cmd("AUTH", "nope"), "WRONGPASS")
        assert_err(c.cmd("AUTH", "alice", PW), "WRONGPASS")
        assert c.cmd("AUTH", PW) == "OK"
        assert c.cmd("CNT.INCR", 1, 0) == [1, 1]
        assert c.cmd("CONFIG", "GET", "requirepass") == [b"requirepass",
                                                          b"(set)"]
        with srv.resp() as d:
            assert_err(d.cmd("HELLO", 2, "AUTH", "default", "nope"),
                       "WRONGPASS")
            assert d.cmd("HELLO", 2, "AUTH", "default", PW)[0] == b"server"
            assert d.cmd("CNT.GET", 1, 0) == 1
        p = run_redis_cli(srv, "--no-auth-warning", "-a", PW, "CNT.GET", 1, 0)
        assert p.stdout.strip() == "1", p
        p = run_redis_cli(srv, "CNT.GET", 1, 0)
        assert "NOAUTH" in p.stdout, p
        assert info(c)["auth_failures"] == "3"
        assert c.cmd("DEBUG", "AUDIT") == 0


def test_auth_over_binary():
    with Server(requirepass=PW) as srv:
        with srv.bin() as b:
            assert b.call("PING") == "PONG"
            assert is_err(b.call("CNT.INCR", 1, 0), code=E["NOAUTH"])
            assert is_err(b.call("HELLO", 1, "AUTH", "bad"),
                          code=E["WRONGPASS"])
            assert b.call("HELLO", 1, "AUTH", PW)[0] == b"server"
            assert b.call("CNT.INCR", 1, 0) == [1, 1]
        with srv.bin() as b:
            assert b.call("AUTH", "default", PW) == "OK"
            assert b.call("CNT.GET", 1, 0) == 1
        audit(srv, PW)


def test_auth_limits_before_auth_are_tight_and_close():
    prefix = "ERR protocol error: request over the limits before AUTH"
    with Server(requirepass=PW) as srv:
        for data in (encode_multibulk("PING", *["x"] * 9),  # 10 args
                     encode_multibulk("PING", "y" * 1021),   # 1025 bytes
                     b"PING " + b"z" * 2000 + b"\r\n"):       # inline line
            with srv.resp() as c:
                c.send(data)
                expect_close_after_error(c, prefix)
        with srv.bin() as b:
            b.send(encode_frame("PING", 3, "w" * 2000))
            f = b.read_frame()
            assert f.status == E["TOOBIG"] and f.id == 3, f
            assert b.wait_closed(5)
        # once authenticated, the configured limits
        with srv.resp() as c:
            assert c.cmd("AUTH", PW) == "OK"
            assert c.cmd("PING", "y" * 5000) == b"y" * 5000
            assert c.cmd("CNT.CLEAR", 1, *range(20)) == 0
            # a partial request before AUTH is read ahead 1 KiB at most
            # (64 KiB after: ~4.7 KB of RSS per connection)
            rss = int(info(c)["used_memory_rss"])
            partial = [srv.raw() for _ in range(2000)]
            for p in partial:
                p.send(b"*2\r\n$4\r\nPING\r\n$900\r\nabc")
            for p in partial:
                p.send(b"d")
            srv.wait_for(lambda: info(c)["connected_clients"] == "2001")
            time.sleep(0.2)
            per = (int(info(c)["used_memory_rss"]) - rss) / len(partial)
            assert per < 3500 * MEMORY_SLACK, per
            for p in partial:
                p.close()
        with srv.bin() as b:
            assert b.call("HELLO", 1, "AUTH", PW)[0] == b"server"
            assert b.call("PING", "w" * 5000) == b"w" * 5000
        audit(srv, PW)


def test_auth_gates_batch_frames():
    with Server(requirepass=PW) as srv, srv.bin() as b:
        sub = struct.pack("<HH", opcode("CNT.INCR"), 2) + encode_arg(1) + \
            encode_arg(0)
        b.send(HDR.pack(MAGIC, 1, 0xFF01, 9, len(sub), 1, 0) + sub)
        r = b.reply(9)
        assert is_err(r, code=E["NOAUTH"]), r
        assert b.call("AUTH", PW) == "OK"
        assert b.call("CNT.GET", 1, 0) == 0  # nothing ran
        audit(srv, PW)


def test_auth_with_unread_cli():
    with Server(requirepass=PW) as srv:
        p = run_cli(srv, "CNT.GET", 1, 0)
        assert p.returncode == 1 and "NOAUTH" in p.stdout + p.stderr, p
        p = run_cli(srv, "-a", "bad", "CNT.GET", 1, 0)
        assert p.returncode == 1 and "WRONGPASS" in p.stderr, p
        p = run_cli(srv, "-a", PW, "CNT.INCR", 1, 0)
        assert p.returncode == 0, p
        p = run_cli(srv, "-a", PW, "CNT.GET", 1, 0)
        assert p.returncode == 0 and p.stdout.strip() == "1", p
        audit(srv, PW)


LIB_CLIENT = r'''
import ctypes, sys, time
lib = ctypes.CDLL(sys.argv[1])
port, pw = int(sys.argv[2]), sys.argv[3].encode()

P, U32, U64 = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64
lib.unread_connect.restype = P
lib.unread_connect.argtypes = [ctypes.c_char_p, ctypes.c_uint16,
                               ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
lib.unread_connect_cluster.restype = P
lib.unread_connect_cluster.argtypes = [ctypes.c_char_p, P,
                                       ctypes.c_char_p, ctypes.c_size_t]
lib.unread_opts_new.restype = P
lib.unread_opts_free.argtypes = [P]
lib.unread_opts_set_password.argtypes = [P, ctypes.c_char_p]
lib.unread_auth.argtypes = [P, ctypes.c_char_p]
lib.unread_errstr.restype = ctypes.c_char_p
lib.unread_errstr.argtypes = [P]
lib.unread_cnt_get.argtypes = [P, U64, ctypes.c_uint, ctypes.POINTER(U32)]
lib.unread_close.argtypes = [P]
NOAUTH, WRONGPASS, ECONNECT = 5, 12, -5
err = ctypes.create_string_buffer(512)
v = U32()

# unread_auth on a handle that connected without a password
c = lib.unread_connect(b"127.0.0.1", port, 2000, err, 512)
assert c, err.value
assert lib.unread_cnt_get(c, 1, 0, ctypes.byref(v)) == NOAUTH
assert lib.unread_auth(c, b"bad") == WRONGPASS
assert b"WRONGPASS" in lib.unread_errstr(c)
assert lib.unread_auth(c, pw) == 0
assert lib.unread_cnt_get(c, 1, 0, ctypes.byref(v)) == 0 and v.value == 0
# the server drops idle connections after 1 s (awaited in its INFO's
# idle_timeouts, on connections of their own): the next call reconnects
# and authenticates again by itself
def idle_timeouts():
    import socket
    with socket.create_connection(("127.0.0.1", port), 5) as s:
        s.sendall(b"*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\nINFO clients\r\n"
                  % (len(pw), pw))
        data = b""
        while b"idle_timeouts:" not in data or not data.endswith(b"\r\n"):
            chunk = s.recv(65536)
            assert chunk, data
            data += chunk
    return int(data.split(b"idle_timeouts:")[1].split(b"\r\n")[0])
deadline = time.monotonic() + 20
while idle_timeouts() < 1:
    assert time.monotonic() < deadline, "the idle connection was not closed"
    time.sleep(0.05)
assert lib.unread_cnt_get(c, 1, 0, ctypes.byref(v)) == 0, \
    lib.unread_errstr(c)
lib.unread_close(c)

# opts.password: AUTH on every connect; a wrong one fails the connect
o = lib.unread_opts_new()
assert lib.unread_opts_set_password(o, pw) == 0
srv = b"127.0.0.1:%d" % port
c = lib.unread_connect_cluster(srv, o, err, 512)
assert c, err.value
assert lib.unread_cnt_get(c, 1, 0, ctypes.byref(v)) == 0
lib.unread_close(c)
assert lib.unread_opts_set_password(o, b"bad") == 0
assert not lib.unread_connect_cluster(srv, o, err, 512)
lib.unread_opts_free(o)
assert b"AUTH refused: WRONGPASS" in err.value, err.value
print("ok")
'''


def test_auth_with_libunread():
    with Server(requirepass=PW, timeout=1) as srv:
        p = subprocess.run([sys.executable, "-c", LIB_CLIENT, LIBUNREAD,
                            str(srv.port), PW], capture_output=True,
                           text=True, env=libunread_env(), timeout=60)
        assert p.returncode == 0 and p.stdout.strip() == "ok", \
            p.stdout + p.stderr
        audit(srv, PW)


test_auth_with_libunread.timeout = 60
