"""Admin commands and process behaviour: HELLO, HELP, INFO, CONFIG GET,
config files and options, signals."""

import os
import re
import signal
import subprocess
import tempfile
import time

from harness import (UNREADD, Err, Server, Status, assert_err, encode_frame,
                     info_dict, info_flat, pairs, OPS, free_port)


# -- HELLO

def test_hello_describes_the_server():
    with Server() as srv, srv.resp() as c:
        d = pairs(c.cmd("HELLO"))
        assert d["server"] == b"unreadd"
        assert d["proto"] == 2
        assert d["mode"] == b"standalone"
        assert isinstance(d["id"], int)
        assert d["version"]


def test_hello_2_and_3_are_accepted_and_4_is_noproto():
    with Server() as srv, srv.resp() as c:
        assert pairs(c.cmd("HELLO", 2))["proto"] == 2
        assert_err(c.cmd("HELLO", 4), "NOPROTO")
        assert_err(c.cmd("HELLO", 1), "NOPROTO")
        assert_err(c.cmd("HELLO", "x"))
        assert c.cmd("PING") == "PONG"  # still usable after NOPROTO
        assert c.cmd("HELLO", 3)[b"proto"] == 3  # a RESP3 map


def test_hello_ids_differ_per_connection():
    with Server() as srv, srv.resp() as a, srv.resp() as b, srv.bin() as c:
        ids = {pairs(a.cmd("HELLO"))["id"], pairs(b.cmd("HELLO"))["id"],
               pairs(c.call("HELLO"))["id"]}
        assert len(ids) == 3


# -- HELP

def test_help_lists_every_command():
    with Server() as srv, srv.resp() as c:
        lines = c.cmd("HELP")
        assert isinstance(lines, list) and all(isinstance(x, bytes)
                                               for x in lines)
        text = b"\n".join(lines)
        for name in OPS:
            assert name.encode() in text, name


def test_help_of_one_command_shows_syntax():
    with Server() as srv, srv.resp() as c:
        text = b"\n".join(c.cmd("HELP", "CNT.INCR"))
        assert b"CNT.INCR" in text and b"uid type [delta]" in text
        text2 = b"\n".join(c.cmd("HELP", "cnt.incr"))
        assert text2 == text


def test_help_of_unknown_command_is_an_error():
    with Server() as srv, srv.resp() as c:
        assert_err(c.cmd("HELP", "NOSUCH"), "ERR unknown command")


# -- INFO

def test_info_has_every_section():
    with Server() as srv, srv.resp() as c:
        info = c.cmd("INFO")
        assert isinstance(info, bytes)
        d = info_dict(info)
        for sec, keys in {
            "server": ["unreadd_version", "process_id", "tcp_port",
                       "uptime_in_seconds"],
            "clients": ["connected_clients"],
            "memory": ["used_memory", "cnt_users", "cnt_bytes",
                       "cnt_bytes_per_user"],
            "stats": ["total_connections_received",
                      "total_commands_processed", "total_errors",
                      "protocol_errors"],
        }.items():
            assert sec in d, (sec, sorted(d))
            for k in keys:
                assert k in d[sec], (sec, k)
        assert d["server"]["tcp_port"] == str(srv.port)
        assert d["server"]["process_id"] == str(srv.proc.pid)


def test_info_section_argument_selects_one_section():
    with Server() as srv, srv.resp() as c:
        d = info_dict(c.cmd("INFO", "memory"))
        assert list(d) == ["memory"]
        d = info_dict(c.cmd("INFO", "SERVER"))
        assert list(d) == ["server"]
        d = info_dict(c.cmd("INFO", "all"))
        assert {"server", "clients", "memory", "stats"} <= set(d)


def test_info_counts_commands_and_errors():
    with Server() as srv, srv.resp() as c:
        before = info_flat(c.cmd("INFO", "stats"))
        for _ in range(5):
            c.cmd("CNT.INCR", 1, 0)
        c.cmd("NOSUCH")
        c.cmd("CNT.INCR", "x", 0)
        after = info_flat(c.cmd("INFO", "stats"))
        done = int(after["total_commands_processed"]) - \
            int(before["total_commands_processed"])
        assert 6 <= done <= 8, done  # the 5 INCRs, the bad INCR, INFO itself
        errors = int(after["total_errors"]) - int(before["total_errors"])
        assert errors == 2, errors


def test_info_commandstats_counts_calls_per_command():
    with Server() as srv, srv.resp() as c, srv.bin() as b:
        for _ in range(3):
            c.cmd("CNT.INCR", 1, 0)
        b.call("CNT.INCR", 1, 0)
        text = c.cmd("INFO", "commandstats").decode()
        line = [x for x in text.splitlines()
                if x.startswith("cmdstat_cnt.incr:")]
        assert line, text
        assert "calls=4" in line[0], line[0]


def test_info_counts_connections_and_clients():
    with Server() as srv, srv.resp() as c:
        def stat(key):
            return int(info_flat(c.cmd("INFO"))[key])
        conns = stat("total_connections_received")
        extra = [srv.resp() for _ in range(3)]
        for e in extra:
            e.cmd("PING")
        assert stat("total_connections_received") == conns + 3
        assert stat("connected_clients") >= 4
        n = stat("connected_clients")
        for e in extra:
            e.close()
        srv.wait_for(lambda: stat("connected_clients") == n - 3,
                     what="connected_clients to drop by 3")


def test_info_memory_counts_cnt_users():
    with Server() as srv, srv.resp() as c:
        def mem():
            return info_flat(c.cmd("INFO", "memory"))
        assert int(mem()["cnt_users"]) == 0
        for uid in range(100):
            c.cmd("CNT.INCR", uid, 0)
            c.cmd("CNT.INCR", uid, 3)
        m = mem()
        assert int(m["cnt_users"]) == 100
        assert int(m["cnt_bytes"]) > 0
        c.cmd("CNT.CLEAR", 5)
        assert int(mem()["cnt_users"]) == 99  # an all-zero user holds nothing


def test_info_counts_protocol_errors():
    with Server() as srv, srv.resp() as c:
        before = int(info_flat(c.cmd("INFO"))["protocol_errors"])
        with srv.raw() as bad:
            bad.send(b"*abc\r\n")
            assert bad.wait_closed(5)
        with srv.raw() as bad:
            bad.send(b"\xb7\x09" + b"\x00" * 14)  # binary, bad version
            assert bad.wait_closed(5)
        after = int(info_flat(c.cmd("INFO"))["protocol_errors"])
        assert after - before == 2


def test_info_uptime_and_version_are_sane():
    with Server() as srv, srv.resp() as c:
        s = info_dict(c.cmd("INFO", "server"))["server"]
        assert int(s["uptime_in_seconds"]) >= 0
        assert s["unreadd_version"]
        assert pairs(c.cmd("HELLO"))["version"].decode() == s["unreadd_version"]


# -- CONFIG

def test_config_get_one_key():
    with Server() as srv, srv.resp() as c:
        assert c.cmd("CONFIG", "GET", "port") == [b"port",
                                                  str(srv.port).encode()]
        assert c.cmd("CONFIG", "GET", "max-frame") == [b"max-frame",
                                                       b"1048576"]
        assert c.cmd("CONFIG", "GET", "counter-types") == [
            b"counter-types", b"mention comment like dm system"]
        assert c.cmd("config", "get", "BIND") == [b"bind", b"127.0.0.1"]


def test_config_get_pattern():
    with Server() as srv, srv.resp() as c:
        d = pairs(c.cmd("CONFIG", "GET", "max-*"))
        assert d == {"max-frame": b"1048576", "max-args": b"4096",
                     "max-inline": b"65536"}
        every = pairs(c.cmd("CONFIG", "GET", "*"))
        for key in ("port", "bind", "dir", "loglevel", "max-frame",
                    "max-args", "max-inline", "counter-types"):
            assert key in every, key
        assert pairs(c.cmd("CONFIG", "GET", "po?t")) == {
            "port": str(srv.port).encode()}


def test_config_get_unknown_key_is_empty():
    with Server() as srv, srv.resp() as c:
        assert c.cmd("CONFIG", "GET", "nosuch") == []


def test_config_set_and_other_subcommands_are_errors():
    with Server() as srv, srv.resp() as c:
        assert_err(c.cmd("CONFIG", "SET", "port"), "ERR")
        assert_err(c.cmd("CONFIG", "SET", "port", "1"), "ERR")
        assert_err(c.cmd("CONFIG", "RESETSTAT", "x"), "ERR")
        assert_err(c.cmd("CONFIG", "GET"), "ERR wrong number of arguments")
        assert c.cmd("CONFIG", "GET", "port")[1] == str(srv.port).encode()


def test_command_line_options_reach_config_get():
    with Server(max_args=100, max_inline=1000, max_frame=5000,
                loglevel="warning") as srv, srv.resp() as c:
        d = pairs(c.cmd("CONFIG", "GET", "*"))
        assert d["max-args"] == b"100"
        assert d["max-inline"] == b"1000"
        assert d["max-frame"] == b"5000"
        assert d["loglevel"] == b"warning"


def _conf(text):
    f = tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False)
    f.write(text)
    f.close()
    return f.name


def test_config_file_with_comments_and_command_line_override():
    path = _conf("# a comment\n\nmax-args 77\nmax-inline 999\n"
                 "counter-types a b c\n   # indented comment\n"
                 "max-frame 4096\n")
    try:
        with Server(config_file=path, max_frame=8192) as srv, \
                srv.resp() as c:
            d = pairs(c.cmd("CONFIG", "GET", "*"))
            assert d["max-args"] == b"77"
            assert d["max-inline"] == b"999"
            assert d["max-frame"] == b"8192"  # the command line wins
            assert d["counter-types"] == b"a b c"
            assert c.cmd("CNT.INCR", 1, "c") == [1, 1]
            assert c.cmd("CNT.GETALL", 1) == [2, 1]
    finally:
        os.unlink(path)


def _start_fails(*args):
    p = subprocess.run([UNREADD, "--port", str(free_port())] + list(args),
                       capture_output=True, text=True, timeout=20)
    return p


def test_unknown_option_exits_1_with_a_message():
    p = _start_fails("--no-such-key", "1")
    assert p.returncode == 1, p
    assert "no-such-key" in p.stderr


def test_bad_values_exit_1_with_a_message():
    for key, value in (("port", "abc"), ("port", "70000"),
                       ("max-frame", "-1"), ("loglevel", "loud"),
                       ("max-args", "")):
        p = _start_fails("--" + key, value)
        assert p.returncode == 1, (key, value, p.returncode, p.stderr)
        assert key in p.stderr, (key, p.stderr)


def test_bad_config_file_exits_1_naming_the_file():
    path = _conf("port 7000\nbogus-key 3\n")
    try:
        p = _start_fails("--config", path)
        assert p.returncode == 1
        assert "bogus-key" in p.stderr and os.path.basename(path) in p.stderr
    finally:
        os.unlink(path)
    p = _start_fails("--config", "/nonexistent/unreadd.conf")
    assert p.returncode == 1 and "unreadd.conf" in p.stderr


def test_port_in_use_exits_non_zero():
    with Server() as srv:
        p = subprocess.run([UNREADD, "--port", str(srv.port), "--bind",
                            "127.0.0.1"], capture_output=True, text=True,
                           timeout=20)
        assert p.returncode != 0
        assert p.stderr.strip()
        assert srv.alive()


def test_sigint_exits_cleanly():
    srv = Server().start()
    try:
        with srv.resp() as c:
            c.cmd("CNT.INCR", 1, 0)
        assert srv.stop(signal.SIGINT) == 0
        srv.check_clean_exit()
    finally:
        srv.__exit__(None, None, None)


def test_sigterm_with_clients_connected_exits_cleanly():
    with Server() as srv:
        r, b = srv.resp(), srv.bin()
        r.cmd("CNT.INCR", 1, 0)
        b.send(encode_frame("PING", 1)[:7])  # half a header pending
        r.send(b"*2\r\n$4\r\nPI")  # half a request pending
        time.sleep(0.05)
        # Server.__exit__ sends SIGTERM and asserts exit status 0.


def test_logs_are_timestamped_lines_with_a_level():
    with Server(loglevel="debug") as srv, srv.resp() as c:
        c.cmd("PING")
        c.send(b"*x\r\n")  # a protocol error is logged at debug level
        c.wait_closed(5)
    lines = [x for x in srv.stderr_text().splitlines() if x.strip()]
    assert len(lines) >= 3, lines  # ready, ..., shutting down
    # ISO 8601 in UTC, marked Z.
    line_re = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z "
                         r"\[\d+\] (DEBUG|INFO|WARN|ERROR) \S")
    for line in lines:
        assert line_re.match(line), line
    assert any(" DEBUG " in x for x in lines), lines


def test_loglevel_warning_hides_info_lines():
    with Server(loglevel="warning") as srv, srv.resp() as c:
        c.cmd("PING")
    assert " INFO " not in srv.stderr_text(), srv.stderr_text()


def test_status_replies_are_status_type():
    with Server() as srv, srv.resp() as c:
        assert isinstance(c.cmd("PING"), Status)
        r = c.cmd("QUIT")
        assert isinstance(r, Status) and not isinstance(r, Err)
