"""Real tools against a real server: unread-cli (binary protocol, one-shot
and interactive), redis-cli (RESP, one-shot, stdin and --pipe), nc
(inline lines)."""

import os
import re
import shutil

from harness import (OPS, UNREAD_CLI, Server, encode_multibulk, run_cli, run_nc,
                     run_redis_cli)


def numbers(text):
    return [int(x) for x in re.findall(r"-?\d+", text)]


# -- unread-cli (piped output is raw: one value per line)

def test_unread_cli_one_shot_incr_and_getall():
    assert os.path.exists(UNREAD_CLI), "unread-cli not built"
    with Server() as srv:
        p = run_cli(srv, "CNT.INCR", 42, "mention")
        assert p.returncode == 0, p.stderr
        assert p.stdout == "1\n1\n"
        p = run_cli(srv, "CNT.INCR", 42, "dm", 5)
        assert p.stdout == "5\n6\n"
        p = run_cli(srv, "CNT.GETALL", 42)
        assert p.returncode == 0, p.stderr
        assert p.stdout == "0\n1\n3\n5\n"
        with srv.resp() as c:
            assert c.cmd("CNT.TOTAL", 42) == 6


def test_unread_cli_human_form():
    with Server() as srv:
        run_cli(srv, "CNT.SET", 42, 63, 9)
        p = run_cli(srv, "--no-raw", "CNT.GETALL", 42)
        assert p.stdout.split("\n")[:2] == ["1) (integer) 63",
                                            "2) (integer) 9"], p.stdout


def test_unread_cli_one_shot_ping():
    with Server() as srv:
        p = run_cli(srv, "PING")
        assert p.returncode == 0, p.stderr
        assert p.stdout == "PONG\n"
        p = run_cli(srv, "PING", "a b")
        assert p.stdout == "a b\n"


def test_unread_cli_error_reply_exits_non_zero():
    with Server() as srv:
        p = run_cli(srv, "CNT.INCR", 1)
        assert p.returncode != 0
        assert "wrong number of arguments" in p.stdout + p.stderr
        p = run_cli(srv, "CNT.INCR", "notanumber", 0)
        assert p.returncode != 0
        assert "uid" in p.stdout + p.stderr


def test_unread_cli_unreachable_server_fails_fast():
    from harness import free_port
    import subprocess
    p = subprocess.run([UNREAD_CLI, "-p", str(free_port()), "PING"],
                       capture_output=True, text=True, timeout=20)
    assert p.returncode != 0
    assert p.stderr.strip()


def test_unread_cli_interactive_from_stdin():
    with Server() as srv:
        script = ("CNT.INCR 7 like 3\n"
                  "cnt.incr 7 like\n"
                  "\n"
                  "CNT.TOTAL 7\n"
                  "NOSUCH 1\n"
                  "CNT.GET 7 2\n")
        p = run_cli(srv, input=script)
        assert p.returncode == 0, (p.returncode, p.stderr)
        assert p.stdout == ("3\n3\n4\n4\n4\n"
                            "ERR unknown command 'NOSUCH'\n4\n"), p.stdout
        with srv.resp() as c:
            assert c.cmd("CNT.GET", 7, 2) == 4


# -- redis-cli (RESP2)

def test_redis_cli_one_shot():
    with Server() as srv:
        p = run_redis_cli(srv, "CNT.INCR", 42, "mention")
        assert p.returncode == 0, p.stderr
        assert p.stdout.split() == ["1", "1"], p.stdout
        p = run_redis_cli(srv, "CNT.GETALL", 42)
        assert p.stdout.split() == ["0", "1"], p.stdout
        p = run_redis_cli(srv, "PING")
        assert p.stdout.strip() == "PONG"
        p = run_redis_cli(srv, "PING", "hello world")
        assert p.stdout.strip() == "hello world"


def test_redis_cli_shows_errors():
    with Server() as srv:
        p = run_redis_cli(srv, "FOO")
        assert "ERR unknown command 'FOO'" in p.stdout + p.stderr


def test_redis_cli_info_and_config():
    with Server() as srv:
        p = run_redis_cli(srv, "INFO", "server")
        assert "# Server" in p.stdout and "tcp_port:%d" % srv.port in p.stdout
        p = run_redis_cli(srv, "CONFIG", "GET", "port")
        assert p.stdout.split() == ["port", str(srv.port)]


def test_redis_cli_commands_from_stdin():
    with Server() as srv:
        p = run_redis_cli(srv, input="CNT.INCR 5 dm 2\nCNT.INCR 5 like\n"
                          "CNT.TOTAL 5\n")
        assert p.returncode == 0, p.stderr
        assert p.stdout.split() == ["2", "2", "1", "3", "3"], p.stdout


def test_redis_cli_pipe_mode():
    """Mass insertion as Redis users do it (redis-cli --pipe). redis-cli
    ends the stream with ECHO <20 random bytes> and waits for the echo: until
    unreadd has ECHO, redis-cli reports that one error and times out, but
    every command before it must have been answered and applied."""
    with Server() as srv:
        data = b"".join(encode_multibulk("CNT.INCR", i % 10, i % 5)
                        for i in range(1000))
        p = run_redis_cli(srv, "--pipe", "--pipe-timeout", "1", input=data)
        out = p.stdout.decode() if isinstance(p.stdout, bytes) else p.stdout
        err = p.stderr.decode() if isinstance(p.stderr, bytes) else p.stderr
        if "ECHO" in OPS:
            assert p.returncode == 0, (out, err)
            assert "errors: 0, replies: 1000" in out, out
        else:
            assert re.search(r"errors: \d+, replies: 100[01]", out), out
            assert "unknown command 'ECHO'" in err, err
        with srv.resp() as c:
            assert sum(c.cmd("CNT.TOTAL", u) for u in range(10)) == 1000
            assert c.cmd("CNT.GETALL", 3) == [3, 100]


# -- nc (inline lines)

def test_nc_inline_commands():
    assert shutil.which("nc"), "nc (netcat-openbsd) not installed"
    with Server() as srv:
        p = run_nc(srv, b"CNT.INCR 42 mention\r\nCNT.GET 42 mention\n"
                        b"PING\r\nQUIT\r\n")
        assert p.stdout == b"*2\r\n:1\r\n:1\r\n:1\r\n+PONG\r\n+OK\r\n", p.stdout


def test_nc_half_close_still_gets_every_reply():
    """`printf 'CNT.INCR 1 dm\\n' | nc -N host port`: the client shuts its
    write side after the last line; the server must answer everything it
    received before closing."""
    with Server() as srv:
        lines = b"".join(b"CNT.INCR 1 dm\n" for _ in range(100))
        p = run_nc(srv, lines)
        expected = b"".join(b"*2\r\n:%d\r\n:%d\r\n" % (i, i)
                            for i in range(1, 101))
        assert p.stdout == expected, p.stdout[-200:]
