"""Bad input on both protocols. Every test seeds some counters first and
ends with check_state(): a fresh client of each protocol gets answers and
finds the seeded state exactly as it was."""

import random
import struct

from harness import (E, HDR, Err, Server, assert_err, check_state,
                     encode_frame, encode_multibulk, is_err, seed_state)


def bad_input_test(fn):
    """Runs fn(srv) on a seeded server, then checks the server and state."""
    def test():
        with Server(**getattr(test, "config", {})) as srv:
            seed_state(srv)
            fn(srv)
            check_state(srv)
    test.__name__ = fn.__name__
    test.__qualname__ = fn.__name__
    test.__module__ = fn.__module__
    test.order_line = fn.__code__.co_firstlineno
    if hasattr(fn, "timeout"):
        test.timeout = fn.timeout
    return test


def with_config(**config):
    def deco(fn):
        fn.config = config
        return fn
    return deco


def expect_proto_error_then_close(c, prefix="ERR protocol error"):
    """RESP: the next reply is an error starting with prefix, then EOF."""
    r = c.read_reply()
    assert_err(r, prefix)
    assert c.wait_closed(5), "connection not closed after a protocol error"
    return r


def expect_frame_error_then_close(b, code, rid=None):
    f = b.read_frame()
    assert f.status == code, f
    if rid is not None:
        assert f.id == rid, f
    assert b.wait_closed(5), "connection not closed after status %d" % code
    return f


# --------------------------------------------------------------------------
# RESP framing errors: error reply, then the connection is closed.

@bad_input_test
def test_resp_non_numeric_multibulk_count(srv):
    with srv.resp() as c:
        c.send(b"*abc\r\n")
        expect_proto_error_then_close(c)


@bad_input_test
def test_resp_negative_bulk_length(srv):
    with srv.resp() as c:
        c.send(b"*2\r\n$-5\r\nhello\r\n")
        expect_proto_error_then_close(c)


@bad_input_test
def test_resp_bulk_without_dollar(srv):
    with srv.resp() as c:
        c.send(b"*1\r\n:4\r\nPING\r\n")
        expect_proto_error_then_close(c)


@bad_input_test
def test_resp_bulk_not_ended_by_crlf(srv):
    with srv.resp() as c:
        c.send(b"*1\r\n$4\r\nPINGxx")
        expect_proto_error_then_close(c)


@bad_input_test
def test_resp_multibulk_count_zero_or_negative(srv):
    for head in (b"*0\r\n", b"*-1\r\n", b"*-100\r\n"):
        with srv.resp() as c:
            c.send(head + b"*1\r\n$4\r\nPING\r\n")
            # Either a protocol error and close, or (Redis-like) the empty
            # request is ignored and PING answered: never a crash or hang.
            r = c.read_reply()
            if is_err(r):
                assert r.startswith("ERR protocol error"), r
                assert c.wait_closed(5)
            else:
                assert r == "PONG", (head, r)


@bad_input_test
def test_resp_huge_bulk_length_2147483648(srv):
    with srv.resp() as c:
        c.send(b"*2\r\n$4\r\nPING\r\n$2147483648\r\n")
        expect_proto_error_then_close(c)


@bad_input_test
def test_resp_huge_multibulk_count_100000000(srv):
    with srv.resp() as c:
        c.send(b"*100000000\r\n")
        expect_proto_error_then_close(c)


@bad_input_test
def test_resp_bulk_length_overflowing_u64(srv):
    with srv.resp() as c:
        c.send(b"*1\r\n$99999999999999999999999\r\n")
        expect_proto_error_then_close(c)


@with_config(max_frame=1024)
@bad_input_test
def test_resp_bulk_over_max_frame(srv):
    with srv.resp() as c:
        # max-frame bounds a request's bulks together, "PING" included
        assert c.cmd("PING", b"a" * 1020) == b"a" * 1020
        c.send(b"*2\r\n$4\r\nPING\r\n$1021\r\n")
        expect_proto_error_then_close(c)


@with_config(max_args=10)
@bad_input_test
def test_resp_multibulk_count_over_max_args(srv):
    with srv.resp() as c:
        # name + 10 arguments is the most allowed
        assert c.cmd("CNT.CLEAR", 5, *range(9)) == 0
        c.send(b"*12\r\n")
        expect_proto_error_then_close(c)


@with_config(max_args=10)
@bad_input_test
def test_inline_word_count_over_max_args(srv):
    with srv.resp() as c:
        assert c.inline("CNT.CLEAR 5 " + " ".join(map(str, range(9)))) == 0
        c.send(b"CNT.CLEAR 5 " + b" ".join(b"%d" % i for i in range(20)) +
               b"\r\n")
        r = c.read_reply()
        assert_err(r, "ERR")
        if "protocol error" in r.text:
            assert c.wait_closed(5)


@bad_input_test
def test_inline_line_longer_than_max_inline(srv):
    with srv.resp() as c:
        c.send(b"PING " + b"x" * 70000 + b"\r\n")
        expect_proto_error_then_close(c)


@bad_input_test
def test_inline_line_without_newline_is_cut_at_max_inline(srv):
    with srv.resp() as c:
        c.send(b"a" * 70000)  # never ends: decided before the bytes end
        expect_proto_error_then_close(c)


@with_config(max_inline=100)
@bad_input_test
def test_inline_limit_is_configurable(srv):
    with srv.resp() as c:
        assert c.inline("PING " + "y" * 80) == b"y" * 80
        c.send(b"PING " + b"y" * 200 + b"\r\n")
        expect_proto_error_then_close(c)


# --------------------------------------------------------------------------
# Binary framing errors.

@bad_input_test
def test_binary_len_2_to_31_is_toobig_then_close(srv):
    with srv.bin() as b:
        b.send(encode_frame("PING", 77, length=1 << 31))
        expect_frame_error_then_close(b, E["TOOBIG"], 77)


@bad_input_test
def test_binary_len_ffffffff_is_toobig_then_close(srv):
    with srv.bin() as b:
        b.send(encode_frame("PING", 78, length=0xFFFFFFFF))
        expect_frame_error_then_close(b, E["TOOBIG"], 78)


@with_config(max_frame=1024)
@bad_input_test
def test_binary_len_over_max_frame_is_toobig_then_close(srv):
    with srv.bin() as b:
        assert b.call("PING", b"a" * (1024 - 5)) == b"a" * (1024 - 5)
        b.send(encode_frame("PING", 3, b"a" * (1024 - 4)))
        expect_frame_error_then_close(b, E["TOOBIG"], 3)


@with_config(max_args=10)
@bad_input_test
def test_binary_argc_over_max_args_is_toobig_then_close(srv):
    with srv.bin() as b:
        assert b.call("CNT.CLEAR", 5, *range(9)) == 0
        b.send(encode_frame("CNT.CLEAR", 4, 5, *range(10)))
        expect_frame_error_then_close(b, E["TOOBIG"], 4)


@bad_input_test
def test_binary_argc_65535_with_empty_body(srv):
    with srv.bin() as b:
        b.send(encode_frame("PING", 5, argc=0xFFFF))
        f = b.read_frame()
        assert f.status in (E["TOOBIG"], E["PROTO"]), f
        assert b.wait_closed(5)


@bad_input_test
def test_binary_bad_version_is_proto_error_then_close(srv):
    with srv.bin() as b:
        b.send(encode_frame("PING", 6, version=2))
        expect_frame_error_then_close(b, E["PROTO"])


@bad_input_test
def test_binary_bad_magic_in_the_middle_of_a_stream(srv):
    with srv.bin() as b:
        assert b.call("PING") == "PONG"
        b.send(encode_frame("PING", 8, magic=0xB8))
        expect_frame_error_then_close(b, E["PROTO"])


@bad_input_test
def test_binary_argument_overrunning_the_body(srv):
    with srv.bin() as b:
        # One string argument claiming 100 bytes in a 9-byte body.
        body = struct.pack("<BI", 2, 100) + b"abcd"
        b.send(HDR.pack(0xB7, 1, 0x0001, 9, len(body), 1, 0) + body)
        expect_frame_error_then_close(b, E["PROTO"])


@bad_input_test
def test_binary_integer_argument_cut_short(srv):
    with srv.bin() as b:
        body = b"\x01\x2a\x00\x00"  # an int needs 8 bytes
        b.send(HDR.pack(0xB7, 1, 0x0104, 10, len(body), 1, 0) + body)
        expect_frame_error_then_close(b, E["PROTO"])


@bad_input_test
def test_binary_unknown_argument_kind(srv):
    with srv.bin() as b:
        body = b"\x07" + b"\x00" * 8
        b.send(HDR.pack(0xB7, 1, 0x0001, 11, len(body), 1, 0) + body)
        expect_frame_error_then_close(b, E["PROTO"])


@bad_input_test
def test_binary_bytes_left_over_in_the_body(srv):
    with srv.bin() as b:
        body = struct.pack("<BQ", 1, 42) + b"junk"
        b.send(HDR.pack(0xB7, 1, 0x0106, 12, len(body), 1, 0) + body)
        expect_frame_error_then_close(b, E["PROTO"])


@bad_input_test
def test_binary_argc_larger_than_the_body_holds(srv):
    with srv.bin() as b:
        body = struct.pack("<BQ", 1, 42)
        b.send(HDR.pack(0xB7, 1, 0x0106, 13, len(body), 3, 0) + body)
        expect_frame_error_then_close(b, E["PROTO"])


@bad_input_test
def test_binary_replies_before_a_bad_frame_are_delivered(srv):
    with srv.bin() as b:
        b.send(encode_frame("CNT.TOTAL", 1, 1001) +
               encode_frame("CNT.GET", 2, 1001, 3) +
               encode_frame("PING", 3, version=9))
        assert b.reply(1) == 10
        assert b.reply(2) == 7
        expect_frame_error_then_close(b, E["PROTO"])


@bad_input_test
def test_binary_unknown_opcodes_and_arity_keep_the_connection(srv):
    with srv.bin() as b:
        for op in (0x0000, 0x0199, 0x0EEE, 0xFF00, 0xFFFF):
            assert_err(b.call(op), None, E["UNKNOWN"])
        assert_err(b.call("CNT.SET", 1001, 0), None, E["ARITY"])
        assert_err(b.call("CNT.SET", 1001, 0, 1, 2), None, E["ARITY"])
        assert_err(b.call("CNT.SET", 1001, 64, 1), None, E["BADARG"])
        assert_err(b.call("CNT.SET", 1001, 0, 1 << 32), None, E["BADARG"])
        assert b.call("PING") == "PONG"


@bad_input_test
def test_binary_batch_frame_opcode_is_not_yet_served(srv):
    """0xFF01 (atomic batch) is reserved: until it is implemented it must
    answer an error, not run anything."""
    with srv.bin() as b:
        inner = encode_frame("CNT.INCR", 1, 1001, 0)
        b.send(encode_frame(0xFF01, 20, inner))
        f = b.read_frame()
        assert f.id == 20 and f.status != 0, f


# --------------------------------------------------------------------------
# Truncation: a client that sends part of a request and goes away.

@bad_input_test
def test_truncated_frames_then_close(srv):
    frame = encode_frame("CNT.INCR", 1, 1001, 0, 5)
    for cut in (1, 2, 8, 15, 16, 17, 20, len(frame) - 1):
        with srv.raw() as c:
            c.send(frame[:cut])
            assert c.read_available(0.05) == b""  # waits for the rest
    check_state(srv)


@bad_input_test
def test_truncated_resp_then_close(srv):
    req = encode_multibulk("CNT.INCR", 1001, 0, 5)
    for cut in (1, 2, 4, 5, 10, len(req) - 1):
        with srv.raw() as c:
            c.send(req[:cut])
            assert c.read_available(0.05) == b""
    with srv.raw() as c:
        c.send(b"CNT.INCR 1001 0 5")  # inline without its newline
        assert c.read_available(0.05) == b""


@bad_input_test
def test_client_closing_with_replies_unread(srv):
    for _ in range(5):
        with srv.resp() as c:
            c.send(encode_multibulk("PING", b"x" * 100000) * 20)
        with srv.bin() as b:
            b.send(encode_frame("PING", 1, b"x" * 100000) * 20)


@bad_input_test
def test_client_reset_mid_request(srv):
    import socket as _s
    for data in (encode_frame("PING", 1, b"x" * 1000)[:500],
                 b"*2\r\n$4\r\nPING\r\n$1000\r\nabc"):
        c = srv.raw()
        c.send(data)
        c.sock.setsockopt(_s.SOL_SOCKET, _s.SO_LINGER,
                          struct.pack("ii", 1, 0))  # close sends RST
        c.close()


# --------------------------------------------------------------------------
# Unknown commands, arity, bad ids over text.

@bad_input_test
def test_resp_unknown_commands(srv):
    with srv.resp() as c:
        for name in ("FOO", "CNT", "CNT.", "CNT.INCRX", "GET", "\x01\x02",
                     "x" * 1000):
            r = c.cmd(name, 1001, 0)
            assert_err(r, "ERR unknown command")
        assert_err(c.cmd("FOO"), "ERR unknown command 'FOO'")
        assert c.cmd("PING") == "PONG"


@bad_input_test
def test_resp_wrong_arity_too_few_and_too_many(srv):
    with srv.resp() as c:
        assert_err(c.cmd("CNT.SET", 1001, 0),
                   "ERR wrong number of arguments for 'CNT.SET'")
        assert_err(c.cmd("CNT.SET", 1001, 0, 1, 1),
                   "ERR wrong number of arguments for 'CNT.SET'")
        assert_err(c.inline("CNT.GET 1001"),
                   "ERR wrong number of arguments for 'CNT.GET'")
        assert_err(c.cmd("PING", 1, 2, 3))
        assert_err(c.cmd("QUIT", 1))
        assert c.cmd("PING") == "PONG"  # QUIT with arguments did not close


@bad_input_test
def test_resp_bad_and_out_of_range_ids(srv):
    with srv.resp() as c:
        for uid in ("18446744073709551616", "9223372036854775808", "-1",
                    "abc", "1.5", "", " 1", "1 ", "+1", "1\x00", "\x00"):
            assert_err(c.cmd("CNT.INCR", uid, 0), "ERR uid must be")
            assert_err(c.cmd("CNT.SET", uid, 0, 5), "ERR uid must be")
            assert_err(c.cmd("CNT.CLEAR", uid), "ERR uid must be")
        for t in ("64", "-1", "", "1x", "18446744073709551616", "MENTION2"):
            assert_err(c.cmd("CNT.INCR", 1001, t))
        for d in ("-1", "x", "18446744073709551616", "1.0"):
            assert_err(c.cmd("CNT.INCR", 1001, 0, d))
            assert_err(c.cmd("CNT.DECR", 1001, 0, d))
        # Leading zeros are the same number (redis-benchmark pads them).
        assert c.cmd("CNT.GET", "0001001", "00") == 3


# --------------------------------------------------------------------------
# Junk.

def _drain_frames(b, wait=0.05):
    """Parses whatever the server sent within `wait`: it must be whole,
    well-formed reply frames (read_frame asserts the format)."""
    b.buf = bytearray(b.read_available(wait))
    frames = []
    while b.buf:
        assert len(b.buf) >= 16, "partial reply header %r" % bytes(b.buf)
        frames.append(b.read_frame())
    return frames


ERROR_CODES = set(E.values())


@bad_input_test
def test_random_bytes_starting_with_the_binary_magic(srv):
    rng = random.Random(7)
    for i in range(40):
        junk = bytes([0xB7]) + bytes(rng.randrange(256)
                                     for _ in range(rng.randrange(1, 400)))
        with srv.bin() as b:
            b.send(junk)
            # Error frames, or nothing while the server waits for a body
            # that never comes.
            for f in _drain_frames(b):
                assert f.status in ERROR_CODES and f.status != 0, f
        assert srv.alive(), srv.stderr_tail()


@bad_input_test
def test_random_headers_with_valid_magic_and_version(srv):
    rng = random.Random(11)
    for i in range(40):
        body = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 64)))
        op = rng.choice([rng.randrange(65536), 0x0101, 0x0107, 0x0001])
        argc = rng.choice([0, 1, 2, 3, rng.randrange(65536)])
        with srv.bin() as b:
            b.send(HDR.pack(0xB7, 1, op, i + 1, len(body), argc, 0) + body)
            frames = _drain_frames(b)
            assert len(frames) <= 1, frames
            for f in frames:
                assert f.id == i + 1, f
        assert srv.alive(), srv.stderr_tail()


@bad_input_test
def test_random_printable_junk_over_text(srv):
    rng = random.Random(3)
    # Quotes left out: an unbalanced quote is a protocol error (tested in
    # test_resp.py), which would end the connection early.
    alphabet = bytes(c for c in range(0x21, 0x7F) if c not in b"\"'") + \
        b" \t\r\n"
    for i in range(40):
        junk = b"J" + bytes(rng.choice(alphabet)
                            for _ in range(rng.randrange(1, 500)))
        with srv.resp() as c:
            c.send(junk.replace(b"\n", b"\nJ") + b"\r\n")
            # Every line starts with J: unknown commands, one error each.
            lines = junk.count(b"\n") + 1
            for _ in range(lines):
                assert_err(c.read_reply(), "ERR unknown command")
            assert c.cmd("PING") == "PONG"


@bad_input_test
def test_nul_bytes(srv):
    with srv.resp() as c:
        c.send(b"\x00\x00\x00\r\n")
        assert_err(c.read_reply(), "ERR unknown command")
        assert c.cmd("PING", b"a\x00b") == b"a\x00b"
        assert_err(c.cmd("CNT.INCR", b"10\x0001", 0), "ERR uid must be")
        assert_err(c.cmd(b"PING\x00", 1))
    with srv.resp() as c:
        c.send(b"\x00" * 1000 + b"\n")
        assert_err(c.read_reply(), "ERR unknown command")
    with srv.bin() as b:
        b.send(b"\xb7" + b"\x00" * 15)  # version 0
        expect_frame_error_then_close(b, E["PROTO"])


@bad_input_test
def test_binary_magic_inside_a_text_connection_is_just_text(srv):
    with srv.resp() as c:
        c.send(b"PING\r\n" + encode_frame("PING", 1) + b"\r\n")
        assert c.read_reply() == "PONG"
        r = c.read_reply()
        assert isinstance(r, Err), r


@bad_input_test
def test_text_after_binary_start_is_a_proto_error(srv):
    with srv.bin() as b:
        assert b.call("PING") == "PONG"
        b.send(b"PING\r\n" + b"\x00" * 16)
        expect_frame_error_then_close(b, E["PROTO"])


@bad_input_test
def test_many_errors_on_one_connection(srv):
    with srv.resp() as c:
        replies = c.pipeline([("NOPE", i) for i in range(2000)] +
                             [("CNT.GET", 1001, 3)])
        assert all(isinstance(r, Err) for r in replies[:-1])
        assert replies[-1] == 7
