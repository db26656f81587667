"""RESP2 text protocol: multibulk, inline lines, pipelining, replies."""

from harness import (Err, Sender, Server, Status, assert_err,
                     encode_inline, encode_multibulk, is_err, seed_state,
                     check_state)


def test_ping_replies_pong_status():
    with Server() as srv, srv.resp() as c:
        r = c.cmd("PING")
        assert isinstance(r, Status) and r == "PONG"


def test_ping_with_message_echoes_a_bulk_string():
    with Server() as srv, srv.resp() as c:
        r = c.cmd("PING", "hello world")
        assert r == b"hello world"
        assert c.cmd("PING", "") == b""


def test_bulk_arguments_are_binary_safe():
    with Server() as srv, srv.resp() as c:
        data = bytes(range(256)) + b"\r\n\x00*$-+:"
        assert c.cmd("PING", data) == data


def test_inline_with_crlf_and_bare_lf():
    with Server() as srv, srv.resp() as c:
        assert c.inline("PING", eol="\r\n") == "PONG"
        assert c.inline("PING", eol="\n") == "PONG"
        assert c.inline("CNT.INCR 42 mention", eol="\n") == [1, 1]
        assert c.inline("CNT.INCR 42 mention", eol="\r\n") == [2, 2]


def test_inline_splits_on_runs_of_spaces_and_tabs():
    with Server() as srv, srv.resp() as c:
        assert c.inline("  CNT.INCR \t 42\t\tmention   3  ") == [3, 3]
        assert c.inline("\tPING\t") == "PONG"


def test_inline_quotes_group_words_without_escapes():
    """A word starting with a double or single quote runs to the same quote,
    which must end the word; there are no escapes."""
    with Server() as srv, srv.resp() as c:
        assert c.inline('PING "a b"') == b"a b"
        assert c.inline("PING 'say \"hi\"'") == b'say "hi"'
        assert c.inline('PING ""') == b""
        assert c.inline('CNT.INCR "42" \'mention\'') == [1, 1]
        assert c.inline('PING a"b') == b'a"b'  # a quote inside a word


def test_inline_unterminated_quote_is_a_protocol_error():
    with Server() as srv:
        for line in (b'PING "abc\r\n', b'PING "a"b\r\n', b"PING 'x\n"):
            with srv.resp() as c:
                c.send(line)
                assert_err(c.read_reply(), "ERR protocol error")
                assert c.wait_closed(5)
        with srv.resp() as c:
            assert c.cmd("PING") == "PONG"


def test_empty_inline_lines_are_skipped():
    with Server() as srv, srv.resp() as c:
        c.send(b"\r\n\n   \r\n\t\nPING\r\n")
        assert c.read_reply() == "PONG"
        c.send(b"\n\n")
        assert c.read_available(0.2) == b""  # no reply to blank lines
        assert c.cmd("PING") == "PONG"


def test_first_byte_blank_line_still_selects_text():
    with Server() as srv, srv.resp() as c:
        c.send(b"\r\nPING\r\n")
        assert c.read_reply() == "PONG"


def test_inline_and_multibulk_mix_on_one_connection():
    with Server() as srv, srv.resp() as c:
        c.send(encode_inline("CNT.INCR", 1, "dm") +
               encode_multibulk("CNT.INCR", 1, "dm") +
               encode_inline("CNT.TOTAL", 1, eol=b"\n") +
               encode_multibulk("CNT.GET", 1, 3))
        assert [c.read_reply() for _ in range(4)] == [[1, 1], [2, 2], 2, 2]


def test_pipelined_replies_come_in_request_order():
    with Server() as srv, srv.resp() as c:
        cmds = []
        for i in range(50):
            cmds.append(("CNT.INCR", 5, i % 8))
            cmds.append(("PING", "m%d" % i))
            cmds.append(("NOSUCH",))
        replies = c.pipeline(cmds)
        seen = {}
        for i in range(50):
            t = i % 8
            seen[t] = seen.get(t, 0) + 1
            assert replies[3 * i] == [seen[t], i + 1]
            assert replies[3 * i + 1] == ("m%d" % i).encode()
            assert_err(replies[3 * i + 2], "ERR unknown command")


def test_pipeline_of_10000_commands():
    with Server() as srv, srv.resp() as c:
        n = 10000
        data = b"".join(
            encode_multibulk("CNT.INCR", i % 100, i % 64) if i % 2 == 0
            else encode_inline("CNT.TOTAL", i % 100)
            for i in range(n))
        sender = Sender(c.sock, data)
        sender.start()
        counts, totals = {}, {}
        for i in range(n):
            r = c.read_reply()
            uid = i % 100
            if i % 2 == 0:
                key = (uid, i % 64)
                counts[key] = counts.get(key, 0) + 1
                totals[uid] = totals.get(uid, 0) + 1
                assert r == [counts[key], totals[uid]], (i, r)
            else:
                assert r == totals.get(uid, 0), (i, r)
        sender.join(10)
        assert sender.error is None
        assert c.cmd("PING") == "PONG"


test_pipeline_of_10000_commands.timeout = 90


def test_one_byte_at_a_time_gets_the_same_replies():
    with Server() as srv, srv.resp() as c:
        data = (encode_multibulk("CNT.INCR", 9, "like", 4) +
                encode_inline("CNT.INCR", 9, "like") +
                encode_inline("CNT.DECR", 9, 2, eol=b"\n") +
                encode_multibulk("PING", "a\r\nb") +
                encode_multibulk("CNT.GETALL", 9) +
                encode_inline("NOPE") +
                encode_multibulk("CNT.SET", 9, 63, 7) +
                encode_inline("CNT.TOTAL", 9))
        c.send_slowly(data)
        got = [c.read_reply() for _ in range(8)]
        assert got[:5] == [[4, 4], [5, 5], [4, 4], b"a\r\nb", [2, 4]]
        assert_err(got[5], "ERR unknown command")
        assert got[6:] == [[7, 11], 11]


test_one_byte_at_a_time_gets_the_same_replies.timeout = 60


def test_large_bulk_argument_up_to_max_frame():
    with Server() as srv, srv.resp() as c:
        # max-frame (default 1 MiB) bounds the bulks together, "PING" too
        big = b"x" * ((1 << 20) - 4)
        assert c.cmd("PING", big) == big


def test_long_inline_line_below_max_inline():
    with Server() as srv, srv.resp() as c:
        msg = "y" * 60000
        assert c.inline("PING " + msg) == msg.encode()


def test_errors_are_error_replies_and_connection_stays_open():
    with Server() as srv, srv.resp() as c:
        assert_err(c.cmd("FOO"), "ERR unknown command 'FOO'")
        assert_err(c.inline("foo bar"), "ERR unknown command 'foo'")
        assert_err(c.cmd("PING", "a", "b"),
                   "ERR wrong number of arguments for 'PING'")
        assert c.cmd("PING") == "PONG"


def test_quit_replies_ok_then_closes():
    with Server() as srv, srv.resp() as c:
        assert c.cmd("QUIT") == "OK"
        assert c.wait_closed(5)


def test_quit_in_a_pipeline_drops_what_follows():
    with Server() as srv:
        seed_state(srv)
        with srv.resp() as c:
            c.send(encode_multibulk("PING") + encode_multibulk("QUIT") +
                   encode_multibulk("CNT.INCR", 1001, 0))
            assert c.read_reply() == "PONG"
            assert c.read_reply() == "OK"
            assert c.wait_closed(5)
            assert c.buf == b""
        check_state(srv)  # the INCR after QUIT was not executed


def test_inline_quit():
    with Server() as srv, srv.resp() as c:
        assert c.inline("quit") == "OK"
        assert c.wait_closed(5)


def test_many_clients_at_once():
    with Server() as srv:
        clients = [srv.resp() for _ in range(50)]
        for i, c in enumerate(clients):
            c.send(encode_multibulk("CNT.INCR", 77, 1))
        for c in clients:
            r = c.read_reply()
            assert isinstance(r, list) and len(r) == 2 and r[0] == r[1]
        assert clients[0].cmd("CNT.GET", 77, 1) == 50
        for c in clients:
            c.close()
        with srv.resp() as c:
            assert not is_err(c.cmd("PING"))
            assert not isinstance(c.cmd("CNT.TOTAL", 77), Err)
