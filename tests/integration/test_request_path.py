"""The request path's shortcuts (docs/PERFORMANCE.md, "Pub/sub", the
writers' side): each one next to the general path it bypasses, with the
same observable result.

- The executor parses a user command's uid once and runs the command on
  a copy whose uid is a number (exec.c uid_once), up to 8 arguments;
  longer commands, and uids that do not parse, go as before. What is
  shown or kept of the request (MONITOR, SLOWLOG, the journal and its
  replay, error messages) keeps the uid as the client sent it.
- The RESP parser reads one- and two-digit headers without its general
  loop: requests whose headers have 1, 2 and 3 digits, split at every
  byte, parse alike; malformed and oversized headers of each width are
  refused as before.
- reply_pair writes a CNT write's [value, total] in one reservation on
  RESP: the values past INT64_MAX (CNT totals never get there) are
  covered by the unit test (test_reply.c test_pair).
"""

import glob
import os

from harness import (Server, Status, assert_err, encode_multibulk)
from test_persistence import Dir

UID_ERR = ("ERR uid must be an integer (0..9223372036854775807, decimal "
           "digits); got '%s'")
UID_RANGE = ("ERR uid must be at most 9223372036854775807 (Redis's integer "
             "range); got %s")


def _journal_bytes(datadir):
    data = b""
    for path in sorted(glob.glob(os.path.join(datadir, "journal.*"))):
        with open(path, "rb") as f:
            data += f.read()
    return data


def test_uid_text_is_kept_where_the_request_is_shown():
    with Server() as srv, srv.resp() as m, srv.resp() as c:
        assert c.cmd("CONFIG", "SET", "slowlog-log-slower-than", 0) == "OK"
        assert m.cmd("MONITOR") == "OK"
        assert c.cmd("CNT.INCR", "000042", "0", "3") == [3, 3]
        line = m.read_reply()
        assert isinstance(line, Status), line
        assert line.endswith('"cnt.incr" "000042" "0" "3"'), line
        entries = c.cmd("SLOWLOG", "GET", 10)
        incr = [e for e in entries if e[3][0] == b"CNT.INCR"]
        assert incr and incr[0][3] == [b"CNT.INCR", b"000042", b"0", b"3"]
        # The same user, however the uid is spelled.
        assert c.cmd("CNT.GET", 42, 0) == 3
        assert c.cmd("CNT.INCR", "42", "0") == [4, 4]
        assert c.cmd("CNT.GET", "0042", 0) == 4
        # The journal holds the argument as received (text), not the
        # number the command ran with.
        assert b"000042" in _journal_bytes(os.path.join(srv.tmp.name, "data"))


def test_journal_replay_of_text_uids():
    with Dir() as d:
        srv = d.start()
        with srv.resp() as c:
            assert c.cmd("CNT.INCR", "0007", "0", "5") == [5, 5]
            assert c.cmd("CNT.INCR", "7", "1") == [1, 6]
            # Within the parsed copy's 8 arguments, and past them.
            assert c.cmd("FEED.FOLLOW", "0009", 1, 2, 3) == 3
            assert c.cmd("FEED.FOLLOW", "0009", *range(4, 16)) == 12
        srv.kill9()
        srv = d.start()
        with srv.resp() as c:
            assert c.cmd("CNT.GETALL", 7) == [0, 5, 1, 1]
            assert c.cmd("CNT.TOTAL", "00007") == 6
            assert c.cmd("FEED.FOLLOW", 9, *range(1, 16)) == 0
            assert c.cmd("FEED.FOLLOW", "09", 16) == 1


def test_bad_uids_are_refused_with_the_text_sent():
    with Server() as srv, srv.resp() as c:
        for bad in ("abc", "-1", "+1", "1x", "", " 1", "4.2"):
            assert_err(c.cmd("CNT.INCR", bad, 0), UID_ERR % bad)
        for big in ("9223372036854775808", "0009223372036854775808",
                    "99999999999999999999999"):
            assert_err(c.cmd("CNT.INCR", big, 0), UID_RANGE % big)
        assert c.cmd("CNT.INCR", "9223372036854775807", 0) == [1, 1]
        assert c.cmd("CNT.GET", 9223372036854775807, 0) == 1
        # Nothing was written for the refused ones.
        assert c.cmd("CNT.GET", 1, 0) == 0
        # A refused command's later arguments are still checked as before.
        assert_err(c.cmd("CNT.INCR", "12", 0, "x"), "ERR delta")


def test_short_and_long_user_commands_agree():
    """Up to 8 arguments run on the parsed copy, more as received: the
    replies of both are the same, on RESP, inline and binary (whose uid
    may be text too)."""
    with Server() as srv, srv.resp() as c, srv.bin() as b:
        assert c.cmd("DOT.PUSH", 3, 100) == 100
        assert c.cmd("DOT.CHECK", "0005", 3, 4, 5) == [1, 0, 0]
        assert c.cmd("DOT.CHECK", "0005", 3, *range(4, 16)) == [1] + [0] * 12
        assert c.cmd("DOT.CLICK", "05", 3) is not None
        assert c.cmd("DOT.CHECK", "5", 3, *range(4, 16)) == [0] * 13
        assert c.inline("CNT.INCR 0011 0 2") == [2, 2]
        assert b.call("CNT.INCR", "0011", 0, 3) == [5, 5]
        assert b.call("CNT.INCR", 11, 0) == [6, 6]
        assert c.cmd("CNT.GET", "11", 0) == 6
        # An admin command's first argument is not a uid: left as text.
        assert c.cmd("USER.INFO", "0011") is not None


def test_headers_of_each_width_split_at_every_byte():
    """Requests whose count and lengths have one, two and three digits,
    sent a byte at a time and all at once: the same replies."""
    cmds = [("CNT.INCR", "5", "0"),
            ("CNT.INCR", "1234567890", "0", "12"),
            ("PING", "p" * 9),
            ("PING", "p" * 10),
            ("PING", "p" * 99),
            ("PING", "p" * 100),
            ("PING", "p" * 1000),
            ("DOT.CHECK", "5") + tuple(str(i) for i in range(12))]
    wire = b"".join(encode_multibulk(*cmd) for cmd in cmds)
    with Server() as srv:
        replies = []
        for slowly in (False, True):
            with srv.resp() as c:
                if slowly:
                    c.send_slowly(wire)
                else:
                    c.send(wire)
                replies.append([c.read_reply() for _ in cmds])
        a, b = replies
        assert a[0] == [1, 1] and b[0] == [2, 2]
        assert a[1] == [12, 12] and b[1] == [24, 24]
        assert a[2:] == b[2:]
        assert a[6] == b"p" * 1000 and len(a[7]) == 12


def test_malformed_headers_close_the_connection():
    bad = [b"*1\r\n$1\rX", b"*1\r\n$12\rXX", b"*1\r\n$00\r\n\r\n",
           b"*1\r\n$1X\r\n", b"*12\rX", b"*1/\r\n", b"*1\r\n$4\r\nPINGX\r\n",
           b"*1\r\n$123\rX"]
    with Server() as srv:
        for wire in bad:
            with srv.resp() as c:
                c.send(wire)
                assert_err(c.read_reply(), "ERR protocol error")
                assert c.wait_closed(5), wire
        # Over max-args and over max-frame: refused as soon as the header
        # line is whole.
        for wire in (b"*99999\r\n", b"*2\r\n$4\r\nPING\r\n$99999999\r\n"):
            with srv.resp() as c:
                c.send(wire)
                assert_err(c.read_reply(), "ERR protocol error: request over")
                assert c.wait_closed(5), wire
        with srv.resp() as c:
            assert c.cmd("PING") == "PONG"
