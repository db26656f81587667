"""Binary protocol (version 1): framing, request ids, values, status codes,
pipelining. Frames are built by harness.py from docs/PROTOCOL.md, not by the
C codec, so the two implementations check each other."""

import socket
import struct

from harness import (E, HDR, OPS, Err, Sender, Server, Status, assert_err,
                     encode_frame, pairs)


def test_ping_replies_status_pong():
    with Server() as srv, srv.bin() as b:
        r = b.call("PING")
        assert isinstance(r, Status) and r == "PONG"


def test_ping_with_message_replies_a_string():
    with Server() as srv, srv.bin() as b:
        assert b.call("PING", b"hi\x00there") == b"hi\x00there"


def test_reply_header_echoes_request_id():
    with Server() as srv, srv.bin() as b:
        for rid in (0, 1, 7, 0x7FFFFFFF, 0xFFFFFFFF):
            b.send(encode_frame("PING", rid))
            f = b.read_frame()
            assert f.id == rid and f.status == 0 and f.value == "PONG"


def test_worked_example_bytes_of_docs_protocol_md():
    """docs/PROTOCOL.md: CNT.INCR uid=42 type=0 delta=1, request id 7."""
    req = bytes.fromhex(
        "b7 01 01 01 07 00 00 00 1b 00 00 00 03 00 00 00"
        "01 2a 00 00 00 00 00 00 00"
        "01 00 00 00 00 00 00 00 00"
        "01 01 00 00 00 00 00 00 00")
    assert req == encode_frame("CNT.INCR", 7, 42, 0, 1)
    reply = bytes.fromhex(
        "b7 01 00 00 07 00 00 00 17 00 00 00 00 00 00 00"
        "03 02 00 00 00"
        "01 01 00 00 00 00 00 00 00"
        "01 01 00 00 00 00 00 00 00")
    with Server() as srv, srv.raw() as c:
        c.send(req)
        assert c.read_exact(len(reply)) == reply


def test_worked_error_example_bytes_of_docs_protocol_md():
    """docs/PROTOCOL.md: CNT.GET with one argument, request id 9: status 2
    (ARITY) and one error value with the same code."""
    req = bytes.fromhex("b7 01 04 01 09 00 00 00 09 00 00 00 01 00 00 00"
                        "01 2a 00 00 00 00 00 00 00")
    with Server() as srv, srv.raw() as c:
        c.send(req)
        hdr = c.read_exact(16)
        magic, ver, status, rid, length, argc, flags = HDR.unpack(hdr)
        assert (magic, ver, status, rid, argc, flags) == (0xB7, 1, 2, 9, 0, 0)
        body = c.read_exact(length)
        kind, code, n = struct.unpack_from("<BHI", body)
        assert (kind, code, n + 7) == (0x06, 2, length)
        assert body[7:].startswith(b"wrong number of arguments") or \
            b"wrong number of arguments" in body[7:], body


def test_cnt_commands_with_integer_arguments():
    with Server() as srv, srv.bin() as b:
        assert b.call("CNT.INCR", 42, 0) == [1, 1]
        assert b.call("CNT.INCR", 42, 3, 5) == [5, 6]
        assert b.call("CNT.DECR", 42, 3, 2) == [3, 4]
        assert b.call("CNT.SET", 42, 63, 10) == [10, 14]
        assert b.call("CNT.GET", 42, 63) == 10
        assert b.call("CNT.GETALL", 42) == [0, 1, 3, 3, 63, 10]
        assert b.call("CNT.TOTAL", 42) == 14
        assert b.call("CNT.CLEAR", 42, 0, 3) == 10
        assert b.call("CNT.CLEAR", 42) == 0


def test_decimal_string_arguments_are_accepted_for_integers():
    with Server() as srv, srv.bin() as b:
        assert b.call("CNT.INCR", b"42", b"3", b"2") == [2, 2]
        assert b.call("CNT.GET", 42, b"3") == 2
        assert b.call("CNT.INCR", b"9223372036854775807", 0) == [1, 1]


def test_non_canonical_string_arguments_are_badarg():
    with Server() as srv, srv.bin() as b:
        for bad in (b"", b"x", b"-1", b"1.5", b" 1", b"18446744073709551616"):
            assert_err(b.call("CNT.INCR", bad, 0), None, E["BADARG"])
        assert b.call("CNT.TOTAL", 0) == 0
        assert b.call("PING") == "PONG"


def test_unknown_opcode_is_error_3_and_connection_stays_open():
    with Server() as srv, srv.bin() as b:
        known = {code for code, _lo, _hi in OPS.values()}
        for op in (0x0000, 0x00FE, 0x01FF, 0x0F0F, 0xFFFF, 0x7777):
            if op in known:
                continue
            assert_err(b.call(op, 1, 2), None, E["UNKNOWN"])
        assert b.call("PING") == "PONG"


def test_wrong_arity_is_error_2_and_connection_stays_open():
    with Server() as srv, srv.bin() as b:
        assert_err(b.call("CNT.INCR", 1), None, E["ARITY"])
        assert_err(b.call("CNT.INCR", 1, 0, 1, "ID", 1, 1), None, E["ARITY"])
        assert_err(b.call("CNT.GETALL"), None, E["ARITY"])
        assert_err(b.call("QUIT", 1), None, E["ARITY"])
        assert b.call("CNT.TOTAL", 1) == 0


def test_every_op_checks_arity_from_the_table():
    """Too few and too many arguments for every op in ops.def answer ARITY
    (checked before the handler runs, so nothing changes)."""
    with Server() as srv, srv.bin() as b:
        for name, (code, lo, hi) in sorted(OPS.items()):
            if lo > 0:
                assert_err(b.call(code, *([1] * (lo - 1))), None, E["ARITY"])
            if hi is not None:
                r = b.call(code, *([1] * (hi + 1)))
                assert_err(r, None, E["ARITY"])
        assert b.call("CNT.GETALL", 1) == []
        assert b.call("PING") == "PONG"


def test_hello_over_binary():
    with Server() as srv, srv.bin() as b:
        h = b.call("HELLO")
        assert isinstance(h, list)
        d = pairs(h)
        assert d["server"] == b"unreadd"
        assert d["proto"] == 1  # on binary connections: the frame version
        assert d["mode"] == b"standalone"
        assert isinstance(d["id"], int)
        assert b.call("HELLO", 1)[1] == b"unreadd"
        assert_err(b.call("HELLO", 2), None, E["NOPROTO"])
        assert_err(b.call("HELLO", 3), None, E["NOPROTO"])
        assert_err(b.call("HELLO", 0), None, E["NOPROTO"])
        assert b.call("PING") == "PONG"


def test_info_and_config_over_binary():
    with Server() as srv, srv.bin() as b:
        info = b.call("INFO")
        assert isinstance(info, bytes) and b"# Server" in info
        assert b.call("CONFIG", b"GET", b"port") == [b"port",
                                                     str(srv.port).encode()]


def test_help_over_binary_is_an_array_of_strings():
    with Server() as srv, srv.bin() as b:
        lines = b.call("HELP")
        assert isinstance(lines, list) and lines
        assert any(b"CNT.INCR" in x for x in lines)


def test_quit_replies_ok_then_closes():
    with Server() as srv, srv.bin() as b:
        assert b.call("QUIT") == "OK"
        assert b.wait_closed(5)


def test_pipelined_frames_reply_in_order_with_their_ids():
    with Server() as srv, srv.bin() as b:
        frames = []
        ids = [1000 + 13 * i for i in range(100)]
        for i, rid in enumerate(ids):
            if i % 3 == 0:
                frames.append(encode_frame("CNT.INCR", rid, 3, i % 64))
            elif i % 3 == 1:
                frames.append(encode_frame(0x0EEE, rid))  # unknown
            else:
                frames.append(encode_frame("CNT.TOTAL", rid, 3))
        b.send(b"".join(frames))
        total = 0
        for i, rid in enumerate(ids):
            f = b.read_frame()
            assert f.id == rid, (i, f)
            if i % 3 == 0:
                total += 1
                assert f.status == 0 and f.value[1] == total
            elif i % 3 == 1:
                assert f.status == E["UNKNOWN"]
            else:
                assert f.value == total


def test_pipeline_of_10000_frames():
    with Server() as srv, srv.bin() as b:
        n = 10000
        data = b"".join(
            encode_frame("CNT.INCR", i, i % 50, i % 64, 2) if i % 2 == 0
            else encode_frame("CNT.TOTAL", i, i % 50)
            for i in range(n))
        sender = Sender(b.sock, data)
        sender.start()
        totals = {}
        for i in range(n):
            f = b.read_frame()
            assert f.id == i and f.status == 0, f
            uid = i % 50
            if i % 2 == 0:
                totals[uid] = totals.get(uid, 0) + 2
                assert f.value[1] == totals[uid], (i, f)
            else:
                assert f.value == totals.get(uid, 0), (i, f)
        sender.join(10)
        assert sender.error is None
        assert b.call("PING") == "PONG"


test_pipeline_of_10000_frames.timeout = 90


def test_one_byte_at_a_time_gets_the_same_replies():
    with Server() as srv, srv.bin() as b:
        cmds = [("CNT.INCR", 9, 2, 4), ("CNT.INCR", 9, 2), ("PING", b"abc"),
                ("CNT.DECR", 9, 2, 2), (0x0EEE, 1), ("CNT.GETALL", 9),
                ("CNT.SET", 9, 63, 7), ("CNT.INCR", 9), ("CNT.TOTAL", 9)]
        data = b"".join(encode_frame(c[0], 50 + i, *c[1:])
                        for i, c in enumerate(cmds))
        b.send_slowly(data)
        got = [b.reply(50 + i) for i in range(len(cmds))]
        assert got[:4] == [[4, 4], [5, 5], b"abc", [3, 3]]
        assert_err(got[4], None, E["UNKNOWN"])
        assert got[5:7] == [[2, 3], [7, 10]]
        assert_err(got[7], None, E["ARITY"])
        assert got[8] == 10


test_one_byte_at_a_time_gets_the_same_replies.timeout = 60


def test_large_string_argument_up_to_max_frame():
    with Server() as srv, srv.bin() as b:
        big = b"z" * ((1 << 20) - 5)  # body: kind + u32 len + bytes = 1 MiB
        assert b.call("PING", big) == big


def test_error_replies_carry_one_error_value_with_the_status_code():
    with Server() as srv, srv.bin() as b:
        b.send(encode_frame("CNT.INCR", 5, b"abc", 0))
        f = b.read_frame()
        assert f.status == E["BADARG"]
        assert isinstance(f.value, Err) and f.value.code == E["BADARG"]
        assert "uid" in f.value.text


def test_half_close_still_gets_every_reply():
    """A client that shuts its write side after its last frame gets every
    reply, then the server closes."""
    with Server() as srv, srv.bin() as b:
        b.send(b"".join(encode_frame("CNT.INCR", i, 5, 1) for i in range(200)))
        b.sock.shutdown(socket.SHUT_WR)
        for i in range(200):
            assert b.reply(i) == [i + 1, i + 1]
        assert b.wait_closed(5)
