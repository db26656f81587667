"""DOT: red dots over RESP multibulk, inline and binary (test names end in
_resp, _inline, _binary), the typed calls of libunread, unread-cli, and a
randomized run against a Python model across the protocols.
"""

import ctypes
import os
import random
import time

from harness import (E, ID_MAX, U64_MAX, Server, assert_err, info_flat, is_err,
                     run_cli)
from ways import Via, each_way, lib_connect, libunread

TS_MAX = (1 << 47) - 1
MAX_DOTS = 1 << 16


@each_way
def test_push_then_click_then_push_again(dot):
    assert dot("DOT.CHECK", 1, 5) == [0]  # never pushed
    assert dot("DOT.PUSH", 5, 1000) == 1000
    assert dot("DOT.CHECK", 1, 5) == [1]  # pushed, never clicked
    assert dot("DOT.CLICK", 1, 5, 1500) == 0
    assert dot("DOT.CHECK", 1, 5) == [0]  # clicked after the push
    assert dot("DOT.CHECK", 2, 5) == [1]  # another user did not click
    assert dot("DOT.PUSH", 5, 2000) == 2000
    assert dot("DOT.CHECK", 1, 5) == [1]  # pushed again
    assert dot("DOT.CLICK", 1, 5, 2000) == 0
    assert dot("DOT.CHECK", 1, 5) == [0]  # a click at the push time hides


@each_way
def test_several_dots_in_one_call(dot):
    dot("DOT.PUSH", 10, 100)
    dot("DOT.PUSH", 11, 100)
    dot("DOT.PUSH", ID_MAX, 100)
    dot("DOT.CLICK", 7, 11, 200)
    dot("DOT.CLICK", 7, 12, 200)  # 12 never pushed
    assert dot("DOT.CHECK", 7, 10, 11, 12, ID_MAX, 0, 10) == [1, 0, 0, 1, 0, 1]


@each_way
def test_explicit_ts_in_the_past_and_future(dot):
    dot("DOT.PUSH", 3, 5000)
    # A click before the push does not hide it; one in the future hides it
    # until a push later than the click.
    assert dot("DOT.CLICK", 1, 3, 4999) == 0
    assert dot("DOT.CHECK", 1, 3) == [1]
    assert dot("DOT.CLICK", 1, 3, 9000) == 0
    assert dot("DOT.CHECK", 1, 3) == [0]
    assert dot("DOT.PUSH", 3, 8000) == 8000
    assert dot("DOT.CHECK", 1, 3) == [0]
    assert dot("DOT.PUSH", 3, 9001) == 9001
    assert dot("DOT.CHECK", 1, 3) == [1]
    # A click before any push still counts when the push comes later
    # with an older ts.
    assert dot("DOT.CLICK", 2, 4, 700) == 0
    assert dot("DOT.PUSH", 4, 600) == 600
    assert dot("DOT.CHECK", 2, 4) == [0]


@each_way
def test_times_never_move_back(dot):
    assert dot("DOT.PUSH", 1, 3000) == 3000
    assert dot("DOT.PUSH", 1, 1000) == 3000  # a stale push: no change
    dot("DOT.CLICK", 9, 1, 4000)
    dot("DOT.CLICK", 9, 1, 2000)  # a stale click: no change
    assert dot("DOT.PUSH", 1, 3500) == 3500
    assert dot("DOT.CHECK", 9, 1) == [0]  # 4000 >= 3500


@each_way
def test_omitted_ts_is_the_server_clock(dot):
    before = int(time.time() * 1000)
    push = dot("DOT.PUSH", 8)
    after = int(time.time() * 1000)
    assert before - 5000 <= push <= after + 5000, (before, push, after)
    assert dot("DOT.CHECK", 1, 8) == [1]
    assert dot("DOT.CLICK", 1, 8) == 0  # now, at or after the push
    assert dot("DOT.CHECK", 1, 8) == [0]
    assert dot("DOT.PUSH", 8, push + 3600 * 1000) == push + 3600 * 1000
    assert dot("DOT.CHECK", 1, 8) == [1]


@each_way
def test_ts_range(dot):
    assert dot("DOT.PUSH", 1, TS_MAX) == TS_MAX
    assert dot("DOT.CLICK", 1, 1, TS_MAX) == 0
    assert dot("DOT.CHECK", 1, 1) == [0]
    dot.bad(dot("DOT.PUSH", 2, TS_MAX + 1), "ERR ts must be at most")
    dot.bad(dot("DOT.CLICK", 1, 2, ID_MAX), "ERR ts must be at most")
    assert dot("DOT.CHECK", 1, 2) == [0]  # nothing pushed


@each_way
def test_bad_numbers_are_refused(dot):
    dot("DOT.PUSH", 5, 100)
    for bad in ("x", "-1", "1.5", "0x10", "+1", str(ID_MAX + 1)):
        dot.bad(dot("DOT.PUSH", bad, 100), "ERR dot must be")
        dot.bad(dot("DOT.PUSH", 6, bad), "ERR ts must be")
        dot.bad(dot("DOT.CLICK", bad, 5, 200), "ERR uid must be")
        dot.bad(dot("DOT.CLICK", 1, bad, 200), "ERR dot must be")
        dot.bad(dot("DOT.CLICK", 1, 5, bad), "ERR ts must be")
        dot.bad(dot("DOT.CHECK", bad, 5), "ERR uid must be")
        # One bad dot among good ones: an error, not a partial array.
        dot.bad(dot("DOT.CHECK", 1, 5, bad, 5), "ERR dot must be")
    assert dot("DOT.CHECK", 1, 5, 6) == [1, 0]  # nothing changed


@each_way
def test_wrong_arity(dot):
    for name, args in (("DOT.PUSH", []), ("DOT.PUSH", [1, 2, 3]),
                       ("DOT.CLICK", [1]), ("DOT.CLICK", [1, 2, 3, 4]),
                       ("DOT.CHECK", []), ("DOT.CHECK", [1])):
        dot.bad(dot(name, *args),
                "ERR wrong number of arguments for '%s'" % name, E["ARITY"])
    assert dot("DOT.CHECK", 1, 1) == [0]


def test_check_many_dots_at_once():
    with Server() as srv, srv.resp() as c, srv.bin() as b:
        dots = list(range(1000, 5000))
        for d in dots[::2]:
            c.cmd("DOT.PUSH", d, 10)
        want = [1 - (d % 2) for d in dots]
        assert c.cmd("DOT.CHECK", 3, *dots) == want
        assert b.call("DOT.CHECK", 3, *dots) == want
        # max-args (4096) bounds the call: uid + 4096 dots is one too many.
        assert_err(c.cmd("DOT.CHECK", 3, *range(4096)), "ERR")


def test_dot_index_limit():
    """At most 65536 distinct dots: the next new one is a LIMIT error,
    known dots keep working."""
    with Server() as srv, srv.bin() as b:
        for base in range(0, MAX_DOTS, 4096):
            r = b.pipeline([("DOT.PUSH", d, 1) for d in
                            range(base, base + 4096)])
            assert r == [1] * 4096
        r = b.call("DOT.PUSH", MAX_DOTS, 1)
        assert_err(r, None, E["LIMIT"])
        assert "too many distinct dots" in r.text
        assert_err(b.call("DOT.CLICK", 1, MAX_DOTS + 5, 1), None, E["LIMIT"])
        assert b.call("DOT.CLICK", 1, 77, 2) == 0
        assert b.call("DOT.CHECK", 1, 77, 78, MAX_DOTS) == [0, 1, 0]
        assert b.call("DEBUG", "AUDIT") == 0


test_dot_index_limit.timeout = 120


def test_state_is_shared_between_protocols_and_cli():
    with Server() as srv, srv.resp() as r, srv.bin() as b:
        assert r.cmd("DOT.PUSH", 100, 50) == 50
        assert b.call("DOT.CHECK", 1, 100) == [1]
        assert r.inline("DOT.CLICK 1 100 60") == 0
        assert b.call("DOT.CHECK", 1, 100) == [0]
        out = run_cli(srv, "DOT.CHECK", 2, 100, 101)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == ["1", "0"], out.stdout
        info = info_flat(r.cmd("INFO", "memory"))
        assert info["dot_clicks"] == "1"
        assert int(info["dot_bytes"]) > 0


def test_client_library_calls():
    c_u64p = ctypes.POINTER(ctypes.c_uint64)
    lib = libunread({
        "unread_dot_push": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint64,
                                           ctypes.c_uint64, c_u64p]),
        "unread_dot_click": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint64,
                                            ctypes.c_uint64, ctypes.c_uint64]),
        "unread_dot_check": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint64,
                                            c_u64p, ctypes.c_uint,
                                            ctypes.POINTER(ctypes.c_uint8)]),
    })
    if lib is None:
        print("libunread.so cannot be loaded here (sanitizer build): "
              "covered by the plain build")
        return
    now = U64_MAX  # UNREAD_DOT_NOW
    with Server() as srv:
        h = lib_connect(lib, srv)
        try:
            push = ctypes.c_uint64(0)
            assert lib.unread_dot_push(h, 5, 1000, ctypes.byref(push)) == 0
            assert push.value == 1000
            assert lib.unread_dot_push(h, 6, now, ctypes.byref(push)) == 0
            assert abs(push.value - time.time() * 1000) < 60000
            assert lib.unread_dot_click(h, 1, 5, 2000) == 0
            dots = (ctypes.c_uint64 * 3)(5, 6, 7)
            shown = (ctypes.c_uint8 * 3)(9, 9, 9)
            assert lib.unread_dot_check(h, 1, dots, 3, shown) == 0
            assert list(shown) == [0, 1, 0]
            assert lib.unread_dot_click(h, 1, 6, now) == 0
            assert lib.unread_dot_check(h, 1, dots, 3, shown) == 0
            assert list(shown) == [0, 0, 0]
            # Server errors come back as their codes, with the message.
            assert lib.unread_dot_push(h, 5, TS_MAX + 1, None) == E["BADARG"]
            assert b"ts must be at most" in lib.unread_errstr(h)
            assert lib.unread_dot_check(h, 1, dots, 0, shown) == E["ARITY"]
            assert lib.unread_ping(h) == 0
        finally:
            lib.unread_close(h)


# --------------------------------------------------------------------------
# The randomized model test.


def test_random_ops_match_model_across_protocols():
    seed = int(os.environ.get("UNREADD_TEST_SEED", "20240611"))
    rng = random.Random(seed)
    push, click = {}, {}
    with Server() as srv:
        ways = [Via(srv, k) for k in ("resp", "inline", "binary")]
        uids = [0, 1, ID_MAX] + [rng.randrange(1 << 63) for _ in range(6)]
        dots = [0, 2, ID_MAX] + [rng.randrange(1 << 63) for _ in range(6)]

        def shown(u, d):
            return int(d in push and click.get((u, d), -1) < push[d])

        for i in range(1500):
            via = rng.choice(ways)
            u, d = rng.choice(uids), rng.choice(dots)
            ts = rng.randrange(1000)
            op = rng.random()
            where = "op %d (seed %d, %s)" % (i, seed, via.kind)
            if op < 0.25:
                push[d] = max(push.get(d, -1), ts)
                assert via("DOT.PUSH", d, ts) == push[d], where
            elif op < 0.55:
                click[(u, d)] = max(click.get((u, d), -1), ts)
                assert via("DOT.CLICK", u, d, ts) == 0, where
            else:
                ask = [rng.choice(dots) for _ in range(rng.randint(1, 5))]
                assert via("DOT.CHECK", u, *ask) == \
                    [shown(u, x) for x in ask], where
        for via in ways:
            for u in uids:
                assert via("DOT.CHECK", u, *dots) == [shown(u, d) for d in dots]
        assert ways[0]("DEBUG", "AUDIT") == 0
        info = info_flat(ways[0]("INFO", "memory"))
        assert int(info["dot_clicks"]) == len(click)
        for via in ways:
            via.close()


test_random_ops_match_model_across_protocols.timeout = 120


def test_errors_do_not_change_state():
    with Server() as srv, srv.resp() as c:
        c.cmd("DOT.PUSH", 50, 100)
        for args in (("DOT.PUSH", 50, "x"), ("DOT.PUSH", 50, TS_MAX + 1),
                     ("DOT.CLICK", 1, 50, TS_MAX + 1), ("DOT.CLICK", 1),
                     ("DOT.CLICK", 1, 50, 200, 300), ("DOT.CHECK", 1, 50, "x")):
            r = c.cmd(*args)
            assert is_err(r), args
        assert c.cmd("DOT.PUSH", 50, 1) == 100
        assert c.cmd("DOT.CHECK", 1, 50) == [1]


def test_survives_restart_from_snapshot_and_journal():
    """Pushes and clicks before a SAVE come back from the snapshot, those
    after it from the journal (the omitted ts replayed as resolved)."""
    from test_persistence import Dir

    with Dir() as d:
        srv = d.start(journal_fsync="always")
        with srv.resp() as c:
            c.cmd("DOT.PUSH", 1, 100)
            c.cmd("DOT.PUSH", 2, 100)
            c.cmd("DOT.CLICK", 7, 1, 150)
            c.cmd("DOT.CLICK", 7, 3, 50)  # dot 3 never pushed
            assert c.cmd("SAVE") == "OK"
            c.cmd("DOT.PUSH", 3, 40)  # older than the click: hidden
            c.cmd("DOT.CLICK", 8, 2)  # now: after the push
            before = [c.cmd("DOT.CHECK", u, 1, 2, 3, 4) for u in (7, 8, 9)]
        assert before == [[0, 1, 0, 0], [1, 0, 1, 0], [1, 1, 1, 0]]
        srv.kill9()  # no final snapshot: the journal has the rest
        srv = d.start()
        with srv.resp() as c:
            assert [c.cmd("DOT.CHECK", u, 1, 2, 3, 4)
                    for u in (7, 8, 9)] == before
            assert c.cmd("DOT.PUSH", 1, 0) == 100
            assert c.cmd("DEBUG", "AUDIT") == 0
