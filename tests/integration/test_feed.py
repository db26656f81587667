"""FEED: followee snapshots over RESP multibulk, inline and binary (test
names end in _resp, _inline, _binary), the feed-max-follows limit and the
unread cap from the server's command line, the typed calls of libunread,
unread-cli, and a randomized run against a Python model.
"""

import ctypes
import os
import random
import subprocess

from harness import (E, U32_MAX, ID_MAX, U64_MAX, UNREADD, Server, assert_err,
                     free_port, info_flat, is_err, run_cli)
from ways import Via, each_way, lib_connect, libunread


@each_way
def test_follow_takes_the_current_count(feed):
    assert feed("FEED.POST", 100) == 1
    assert feed("FEED.POST", 100, 4) == 5
    assert feed("FEED.FOLLOW", 1, 100) == 1
    assert feed("FEED.UNREAD", 1) == 0  # no retroactive unread
    assert feed("FEED.POST", 100, 2) == 7
    assert feed("FEED.UNREAD", 1) == 2
    assert feed("FEED.FOLLOW", 1, 100) == 0  # again: snapshot unchanged
    assert feed("FEED.UNREAD", 1) == 2
    assert feed("FEED.FOLLOW", 1, 200) == 1  # an author never seen
    assert feed("FEED.POST", 200, 3) == 3
    assert feed("FEED.POST", 300, 9) == 9  # not followed
    assert feed("FEED.UNREAD", 1) == 5
    assert feed("FEED.UNREAD", 2) == 0  # follows nobody


@each_way
def test_reset_and_unfollow(feed):
    for a in (1, 2, 3):
        feed("FEED.FOLLOW", 9, a)
        feed("FEED.POST", a, a)
    assert feed("FEED.UNREAD", 9) == 6
    assert feed("FEED.RESET", 9) == 0
    assert feed("FEED.UNREAD", 9) == 0
    feed("FEED.POST", 2, 5)
    feed("FEED.POST", 3, 1)
    assert feed("FEED.UNREAD", 9) == 6
    assert feed("FEED.UNFOLLOW", 9, 2) == 1
    assert feed("FEED.UNFOLLOW", 9, 2) == 0
    assert feed("FEED.UNFOLLOW", 9, 77) == 0  # never followed
    assert feed("FEED.UNFOLLOW", 10, 3) == 0  # user with no follows
    assert feed("FEED.UNREAD", 9) == 1
    assert feed("FEED.RESET", 12345) == 0  # unknown user: nothing to do


@each_way
def test_unpost_floors_and_never_makes_unread_negative(feed):
    feed("FEED.POST", 1, 10)
    feed("FEED.POST", 2, 10)
    feed("FEED.FOLLOW", 5, 1)
    feed("FEED.FOLLOW", 5, 2)
    feed("FEED.POST", 2, 4)
    assert feed("FEED.UNREAD", 5) == 4
    # Author 1 deletes posts the user had seen: its term is 0, not -3.
    assert feed("FEED.UNPOST", 1, 3) == 7
    assert feed("FEED.UNREAD", 5) == 4
    assert feed("FEED.POST", 1, 4) == 11  # fills the gap, then counts
    assert feed("FEED.UNREAD", 5) == 5
    assert feed("FEED.UNPOST", 2, 1000) == 0  # floors at 0
    assert feed("FEED.UNPOST", 2) == 0
    assert feed("FEED.UNPOST", 999) == 0  # unknown author
    assert feed("FEED.UNREAD", 5) == 1


@each_way
def test_unread_is_capped(feed):
    for a in range(1, 151):
        feed("FEED.FOLLOW", 3, a)
    for a in range(1, 100):
        feed("FEED.POST", a)
    assert feed("FEED.UNREAD", 3) == 99  # exact up to the cap
    feed("FEED.POST", 150)
    assert feed("FEED.UNREAD", 3) == 100  # unread-cap + 1: "99+"
    feed("FEED.POST", 120, U32_MAX)
    assert feed("FEED.UNREAD", 3) == 100


@each_way(unread_cap=5)
def test_unread_cap_comes_from_the_config(feed):
    for a in range(1, 4):
        feed("FEED.FOLLOW", 3, a)
        feed("FEED.POST", a, 2)
    assert feed("FEED.UNREAD", 3) == 6
    feed("FEED.UNPOST", 1)
    assert feed("FEED.UNREAD", 3) == 5


@each_way(feed_max_follows=3)
def test_follow_limit(feed):
    for a in (1, 2, 3):
        assert feed("FEED.FOLLOW", 7, a) == 1
    r = feed("FEED.FOLLOW", 7, 4)
    feed.bad(r, "ERR user 7 already follows 3 authors (feed-max-follows)",
             E["LIMIT"])
    assert feed("FEED.FOLLOW", 7, 2) == 0  # following again is no error
    assert feed("FEED.FOLLOW", 8, 4) == 1  # the limit is per user
    assert feed("FEED.UNFOLLOW", 7, 1) == 1
    assert feed("FEED.FOLLOW", 7, 4) == 1
    feed("FEED.POST", 4)
    assert feed("FEED.UNREAD", 7) == 1


@each_way
def test_saturation(feed):
    assert feed("FEED.POST", 1, U32_MAX - 1) == U32_MAX - 1
    assert feed("FEED.POST", 1, 5) == U32_MAX
    assert feed("FEED.POST", 1, ID_MAX) == U32_MAX
    assert feed("FEED.UNPOST", 1, ID_MAX) == 0


@each_way
def test_bad_numbers_are_refused(feed):
    feed("FEED.FOLLOW", 1, 2)
    feed("FEED.POST", 2)
    for bad in ("x", "-1", "1.5", "0x10", "+1", str(ID_MAX + 1)):
        feed.bad(feed("FEED.POST", bad), "ERR author must be")
        feed.bad(feed("FEED.POST", 2, bad), "ERR n must be")
        feed.bad(feed("FEED.UNPOST", bad, 1), "ERR author must be")
        feed.bad(feed("FEED.UNPOST", 2, bad), "ERR n must be")
        feed.bad(feed("FEED.FOLLOW", bad, 2), "ERR uid must be")
        feed.bad(feed("FEED.FOLLOW", 1, bad), "ERR author must be")
        feed.bad(feed("FEED.UNFOLLOW", 1, bad), "ERR author must be")
        feed.bad(feed("FEED.UNREAD", bad), "ERR uid must be")
        feed.bad(feed("FEED.RESET", bad), "ERR uid must be")
    assert feed("FEED.UNREAD", 1) == 1  # nothing changed


@each_way
def test_wrong_arity(feed):
    for name, args in (("FEED.POST", []), ("FEED.POST", [1, 2, 3]),
                       ("FEED.UNPOST", []), ("FEED.UNPOST", [1, 2, 3]),
                       ("FEED.FOLLOW", [1]),
                       ("FEED.UNFOLLOW", [1]), ("FEED.UNFOLLOW", [1, 2, 3]),
                       ("FEED.UNREAD", []),
                       ("FEED.UNREAD", [1, "WITHEXPIRY", 3]),
                       ("FEED.RESET", []), ("FEED.RESET", [1, 2])):
        feed.bad(feed(name, *args),
                 "ERR wrong number of arguments for '%s'" % name, E["ARITY"])
    assert feed("FEED.UNREAD", 1) == 0


def test_max_follows_config():
    with Server() as srv, srv.resp() as c:
        assert c.cmd("CONFIG", "GET", "feed-max-follows") == \
            [b"feed-max-follows", b"5000"]
    for bad in ("0", "100001", "x"):
        p = subprocess.run([UNREADD, "--port", str(free_port()),
                            "--feed-max-follows", bad],
                           capture_output=True, text=True, timeout=20)
        assert p.returncode == 1, (bad, p.returncode, p.stderr)
        assert "feed-max-follows" in p.stderr, p.stderr


def test_two_thousand_followees():
    with Server() as srv, srv.bin() as b:
        authors = [ID_MAX - i * 7919 for i in range(2000)]
        assert b.pipeline([("FEED.FOLLOW", 42, a) for a in authors]) == \
            [1] * 2000
        assert b.pipeline([("FEED.POST", a) for a in authors[::40]]) == \
            [1] * 50
        assert b.call("FEED.UNREAD", 42) == 50
        b.pipeline([("FEED.POST", a) for a in authors])
        assert b.call("FEED.UNREAD", 42) == 100
        assert b.call("FEED.RESET", 42) == 0
        assert b.call("FEED.UNREAD", 42) == 0
        info = info_flat(b.call("INFO", "memory"))
        assert info["feed_follows"] == "2000"
        assert b.call("DEBUG", "AUDIT") == 0


def test_state_is_shared_between_protocols_and_cli():
    with Server() as srv, srv.resp() as r, srv.bin() as b:
        assert r.cmd("FEED.FOLLOW", 1, 100) == 1
        assert b.call("FEED.POST", 100, 3) == 3
        assert r.inline("FEED.UNREAD 1") == 3
        out = run_cli(srv, "FEED.UNREAD", 1)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == ["3"], out.stdout
        out = run_cli(srv, "FEED.RESET", 1)
        assert out.returncode == 0, out.stderr
        assert b.call("FEED.UNREAD", 1) == 0


def test_client_library_calls():
    c_u32p = ctypes.POINTER(ctypes.c_uint32)
    c_intp = ctypes.POINTER(ctypes.c_int)
    u64 = ctypes.c_uint64
    lib = libunread({
        "unread_feed_post": (ctypes.c_int, [ctypes.c_void_p, u64,
                                            ctypes.c_uint32, c_u32p]),
        "unread_feed_unpost": (ctypes.c_int, [ctypes.c_void_p, u64,
                                              ctypes.c_uint32, c_u32p]),
        "unread_feed_follow": (ctypes.c_int, [ctypes.c_void_p, u64, u64,
                                              c_intp]),
        "unread_feed_unfollow": (ctypes.c_int, [ctypes.c_void_p, u64, u64,
                                                c_intp]),
        "unread_feed_unread": (ctypes.c_int, [ctypes.c_void_p, u64,
                                              ctypes.POINTER(u64)]),
        "unread_feed_reset": (ctypes.c_int, [ctypes.c_void_p, u64]),
    })
    if lib is None:
        print("libunread.so cannot be loaded here (sanitizer build): "
              "covered by the plain build")
        return
    with Server(feed_max_follows=2) as srv:
        h = lib_connect(lib, srv)
        try:
            count, flag, unread = ctypes.c_uint32(), ctypes.c_int(), u64()
            assert lib.unread_feed_post(h, 5, 3, ctypes.byref(count)) == 0
            assert count.value == 3
            assert lib.unread_feed_follow(h, 1, 5, ctypes.byref(flag)) == 0
            assert flag.value == 1
            assert lib.unread_feed_follow(h, 1, 5, ctypes.byref(flag)) == 0
            assert flag.value == 0
            assert lib.unread_feed_follow(h, 1, 6, None) == 0
            assert lib.unread_feed_follow(h, 1, 7, None) == E["LIMIT"]
            assert b"feed-max-follows" in lib.unread_errstr(h)
            assert lib.unread_feed_post(h, 5, 2, None) == 0
            assert lib.unread_feed_unread(h, 1, ctypes.byref(unread)) == 0
            assert unread.value == 2
            assert lib.unread_feed_unpost(h, 5, 1, ctypes.byref(count)) == 0
            assert count.value == 4
            assert lib.unread_feed_reset(h, 1) == 0
            assert lib.unread_feed_unread(h, 1, ctypes.byref(unread)) == 0
            assert unread.value == 0
            assert lib.unread_feed_unfollow(h, 1, 6, ctypes.byref(flag)) == 0
            assert flag.value == 1
            assert lib.unread_feed_unfollow(h, 1, 6, ctypes.byref(flag)) == 0
            assert flag.value == 0
        finally:
            lib.unread_close(h)


# --------------------------------------------------------------------------
# The randomized model test.


class Model:
    def __init__(self, cap, max_follows):
        self.cap, self.max_follows = cap, max_follows
        self.count = {}
        self.snap = {}  # uid -> {author: snapshot}

    def unread(self, uid):
        s = sum(max(0, self.count.get(a, 0) - v)
                for a, v in self.snap.get(uid, {}).items())
        return min(s, self.cap + 1)


def test_random_ops_match_model_across_protocols():
    seed = int(os.environ.get("UNREADD_TEST_SEED", "20240612"))
    rng = random.Random(seed)
    m = Model(cap=20, max_follows=6)
    with Server(unread_cap=m.cap, feed_max_follows=m.max_follows) as srv:
        ways = [Via(srv, k) for k in ("resp", "inline", "binary")]
        uids = [0, 1, ID_MAX] + [rng.randrange(1 << 63) for _ in range(5)]
        authors = [0, 3, ID_MAX] + [rng.randrange(1 << 63) for _ in range(7)]
        for i in range(2000):
            via = rng.choice(ways)
            u, a = rng.choice(uids), rng.choice(authors)
            n = rng.choice([0, 1, 1, 2, 5])
            op = rng.random()
            where = "op %d (seed %d, %s)" % (i, seed, via.kind)
            follows = m.snap.setdefault(u, {})
            if op < 0.25:
                m.count[a] = min(U32_MAX, m.count.get(a, 0) + n)
                assert via("FEED.POST", a, n) == m.count[a], where
            elif op < 0.35:
                m.count[a] = max(0, m.count.get(a, 0) - n)
                assert via("FEED.UNPOST", a, n) == m.count[a], where
            elif op < 0.55:
                r = via("FEED.FOLLOW", u, a)
                if a in follows:
                    assert r == 0, where
                elif len(follows) >= m.max_follows:
                    assert is_err(r), (where, r)
                else:
                    follows[a] = m.count.get(a, 0)
                    assert r == 1, where
            elif op < 0.65:
                assert via("FEED.UNFOLLOW", u, a) == \
                    int(follows.pop(a, None) is not None), where
            elif op < 0.7:
                assert via("FEED.RESET", u) == 0, where
                for x in follows:
                    follows[x] = m.count.get(x, 0)
            else:
                assert via("FEED.UNREAD", u) == m.unread(u), where
        for via in ways:
            for u in uids:
                assert via("FEED.UNREAD", u) == m.unread(u)
        assert ways[0]("DEBUG", "AUDIT") == 0
        info = info_flat(ways[0]("INFO", "memory"))
        assert int(info["feed_follows"]) == sum(len(f)
                                                for f in m.snap.values())
        for via in ways:
            via.close()


test_random_ops_match_model_across_protocols.timeout = 120


def test_errors_do_not_change_state():
    with Server(feed_max_follows=1) as srv, srv.resp() as c:
        c.cmd("FEED.FOLLOW", 1, 10)
        c.cmd("FEED.POST", 10, 2)
        for args in (("FEED.POST", 10, "x"), ("FEED.FOLLOW", 1, 11),
                     ("FEED.UNPOST", "x"), ("FEED.FOLLOW", 1, "y")):
            assert is_err(c.cmd(*args)), args
        assert c.cmd("FEED.UNREAD", 1) == 2
        assert c.cmd("FEED.UNPOST", 10, 0) == 2
        assert c.cmd("FEED.UNFOLLOW", 1, 11) == 0  # the refused follow
        assert_err(c.cmd("FEED.FOLLOW", 1, 11), "ERR user 1 already follows")


def test_survives_restart_from_snapshot_and_journal():
    """Counts and snapshots before a SAVE come back from the snapshot,
    changes after it from the journal."""
    from test_persistence import Dir

    with Dir() as d:
        srv = d.start(journal_fsync="always")
        with srv.resp() as c:
            c.cmd("FEED.POST", 1, 10)
            for a in (1, 2, 3):
                c.cmd("FEED.FOLLOW", 7, a)
            c.cmd("FEED.FOLLOW", 8, 1)
            c.cmd("FEED.POST", 1, 2)
            c.cmd("FEED.POST", 2, 1)
            assert c.cmd("SAVE") == "OK"
            c.cmd("FEED.UNFOLLOW", 7, 3)
            c.cmd("FEED.POST", 3, 5)
            c.cmd("FEED.RESET", 8)
            c.cmd("FEED.UNPOST", 1, 1)
            before = [c.cmd("FEED.UNREAD", u) for u in (7, 8)]
        assert before == [2, 0]
        srv.kill9()  # no final snapshot: the journal has the rest
        srv = d.start()
        with srv.resp() as c:
            assert [c.cmd("FEED.UNREAD", u) for u in (7, 8)] == before
            assert c.cmd("FEED.FOLLOW", 7, 2) == 0
            assert c.cmd("FEED.FOLLOW", 7, 3) == 1
            assert c.cmd("FEED.POST", 1, 0) == 11
            assert c.cmd("DEBUG", "AUDIT") == 0
