"""GRP: group unread over RESP multibulk, inline and binary (test names end
in _resp, _inline, _binary), the typed calls of libunread, unread-cli, and
a randomized run against a Python model across the protocols.

Most tests run with unread-cap 5 so that the cap is easy to pass: groups
then keep the timestamps of their last 6 messages.
"""

import ctypes
import os
import random
import signal
import tempfile
import time

from harness import E, ID_MAX, U64_MAX, Server, assert_err, info_flat, is_err, run_cli
from ways import Via, each_way, lib_connect, libunread

CAP = 5


def post_n(grp, gid, n, t0=1000, step=10):
    """n messages at t0, t0 + step, ...; returns the last seq."""
    seq = None
    for i in range(n):
        seq = grp("GRP.POST", gid, t0 + i * step)
    return seq


@each_way(unread_cap=CAP)
def test_seqs_are_dense_from_one_per_group(grp):
    assert grp("GRP.POST", 10, 1000) == 1
    assert grp("GRP.POST", 10, 1001) == 2
    assert grp("GRP.POST", 20, 1002) == 1
    assert grp("GRP.POST", 10) == 3  # ts omitted: the server's clock
    assert grp("GRP.POST", ID_MAX, 5) == 1
    assert grp("GRP.POST", 0, 5) == 1
    assert grp("GRP.POST", 20, 0) == 2


@each_way(unread_cap=CAP)
def test_join_at_the_head(grp):
    post_n(grp, 7, 3)
    assert grp("GRP.JOIN", 1, 7) == 0  # past messages are not unread
    post_n(grp, 7, 2, t0=2000)
    assert grp("GRP.UNREAD", 1, 7) == 2
    assert grp("GRP.JOIN", 1, 7) == 2  # a member stays where it is
    assert grp("GRP.JOIN", 1, 8) == 0  # a group nobody posted to
    assert grp("GRP.POST", 8, 1) == 1
    assert grp("GRP.UNREAD", 1, 8) == 1


@each_way(unread_cap=CAP)
def test_seen_inside_before_and_after_the_window(grp):
    for uid in (1, 2, 3, 4):
        grp("GRP.JOIN", uid, 5)
    post_n(grp, 5, 20)  # seqs 1..20 at 1000..1190; kept: 15..20
    assert grp("GRP.UNREAD", 1, 5) == CAP + 1
    # Inside the window: exact.
    assert grp("GRP.SEEN", 1, 5, 1165) == 3  # 1..17 seen
    assert grp("GRP.SEEN", 2, 5, 1140) == 5  # the oldest kept, at its ts
    # Before it: more than the cap.
    assert grp("GRP.SEEN", 3, 5, 1139) == CAP + 1
    assert grp("GRP.SEEN", 3, 5, 0) == CAP + 1
    # After the head, or no ts: everything seen.
    assert grp("GRP.SEEN", 3, 5, 99999) == 0
    assert grp("GRP.SEEN", 4, 5) == 0
    assert grp("GRP.POST", 5, 2000) == 21
    assert [grp("GRP.UNREAD", u, 5) for u in (1, 2, 3, 4)] == [4, 6, 1, 1]


@each_way(unread_cap=CAP)
def test_seen_never_moves_back(grp):
    grp("GRP.JOIN", 1, 5)
    post_n(grp, 5, 4)  # 1000..1030
    assert grp("GRP.SEEN", 1, 5, 1020) == 1
    assert grp("GRP.SEEN", 1, 5, 1000) == 1
    assert grp("GRP.SEEN", 1, 5, 0) == 1
    assert grp("GRP.SEEN", 1, 5) == 0
    assert grp("GRP.SEEN", 1, 5, 1010) == 0


@each_way(unread_cap=CAP)
def test_seen_joins_a_non_member_at_ts(grp):
    post_n(grp, 5, 4)  # 1000..1030
    assert grp("GRP.UNREAD", 9, 5) == 0  # not a member
    assert grp("GRP.SEEN", 9, 5, 1015) == 2
    assert grp("GRP.LIST", 9) == [5, 2]
    assert grp("GRP.SEEN", 10, 5) == 0
    assert grp("GRP.TOTAL", 10) == 0
    assert grp("GRP.LEAVE", 10, 5) == 1


@each_way(unread_cap=CAP)
def test_posts_older_than_the_newest_count_at_its_time(grp):
    grp("GRP.JOIN", 1, 5)
    grp("GRP.POST", 5, 1000)
    grp("GRP.POST", 5, 2000)
    grp("GRP.POST", 5, 1500)  # recorded at 2000
    assert grp("GRP.SEEN", 1, 5, 1999) == 2
    assert grp("GRP.SEEN", 1, 5, 2000) == 0


@each_way(unread_cap=CAP)
def test_total_is_capped_and_exact_below_the_cap(grp):
    for g in (1, 2, 3):
        grp("GRP.JOIN", 7, g)
    grp("GRP.POST", 1, 1)
    grp("GRP.POST", 2, 1)
    grp("GRP.POST", 2, 1)
    assert grp("GRP.TOTAL", 7) == 3
    post_n(grp, 3, 2)
    assert grp("GRP.TOTAL", 7) == CAP  # exactly the cap: exact
    grp("GRP.POST", 3, 2000)
    assert grp("GRP.TOTAL", 7) == CAP + 1
    post_n(grp, 3, 50, t0=3000)
    assert grp("GRP.TOTAL", 7) == CAP + 1
    assert grp("GRP.UNREAD", 7, 3) == CAP + 1
    assert grp("GRP.LIST", 7) == [1, 1, 2, 2, 3, CAP + 1]
    assert grp("GRP.TOTAL", 8) == 0  # nobody


@each_way(unread_cap=CAP)
def test_leave_and_non_members_read_zero(grp):
    grp("GRP.JOIN", 1, 5)
    grp("GRP.JOIN", 1, 6)
    grp("GRP.POST", 5, 1)
    grp("GRP.POST", 6, 1)
    assert grp("GRP.LEAVE", 1, 5) == 1
    assert grp("GRP.LEAVE", 1, 5) == 0
    assert grp("GRP.LEAVE", 2, 6) == 0  # never a member
    assert grp("GRP.LEAVE", 1, 99) == 0  # no such group
    assert grp("GRP.UNREAD", 1, 5) == 0
    assert grp("GRP.UNREAD", 1, 99) == 0
    assert grp("GRP.TOTAL", 1) == 1
    assert grp("GRP.LIST", 1) == [6, 1]
    assert grp("GRP.JOIN", 1, 5) == 0  # back at the head


@each_way(unread_cap=CAP)
def test_list_shows_unread_groups_by_gid(grp):
    gids = [900, 3, ID_MAX, 0, 42]
    for i, g in enumerate(gids):
        grp("GRP.JOIN", 1, g)
        for _ in range(i + 1):
            grp("GRP.POST", g, 10)
    grp("GRP.SEEN", 1, 42)
    assert grp("GRP.LIST", 1) == [0, 4, 3, 2, 900, 1, ID_MAX, 3]
    assert grp("GRP.LIST", 2) == []


@each_way(unread_cap=CAP, grp_max_groups=3)
def test_max_groups_per_user(grp):
    for g in (1, 2, 3):
        assert grp("GRP.JOIN", 1, g) == 0
    r = grp("GRP.JOIN", 1, 4)
    grp.bad(r, "ERR user 1 is already in 3 groups", E["LIMIT"])
    grp.bad(grp("GRP.SEEN", 1, 4, 5), "ERR user 1", E["LIMIT"])
    assert grp("GRP.JOIN", 1, 3) == 0  # a member is never refused
    assert grp("GRP.LEAVE", 1, 2) == 1
    assert grp("GRP.JOIN", 1, 4) == 0
    assert grp("GRP.LIST", 1) == []


@each_way(unread_cap=CAP)
def test_omitted_post_ts_is_the_server_clock(grp):
    grp("GRP.JOIN", 1, 5)
    grp("GRP.POST", 5)
    now = int(time.time() * 1000)
    assert grp("GRP.SEEN", 1, 5, now - 3600 * 1000) == 1
    assert grp("GRP.SEEN", 1, 5, now + 3600 * 1000) == 0


@each_way(unread_cap=CAP)
def test_bad_numbers_are_refused(grp):
    grp("GRP.JOIN", 1, 5)
    grp("GRP.POST", 5, 100)
    for bad in ("x", "-1", "1.5", "0x10", "+1", str(ID_MAX + 1)):
        grp.bad(grp("GRP.POST", bad), "ERR gid must be")
        grp.bad(grp("GRP.POST", 5, bad), "ERR ts must be")
        grp.bad(grp("GRP.JOIN", bad, 5), "ERR uid must be")
        grp.bad(grp("GRP.JOIN", 1, bad), "ERR gid must be")
        grp.bad(grp("GRP.LEAVE", 1, bad), "ERR gid must be")
        grp.bad(grp("GRP.SEEN", 1, 5, bad), "ERR ts must be")
        grp.bad(grp("GRP.UNREAD", bad, 5), "ERR uid must be")
        grp.bad(grp("GRP.TOTAL", bad), "ERR uid must be")
        grp.bad(grp("GRP.LIST", bad), "ERR uid must be")
    assert grp("GRP.UNREAD", 1, 5) == 1  # nothing changed
    assert grp("GRP.POST", 5, 101) == 2


@each_way(unread_cap=CAP)
def test_wrong_arity(grp):
    for name, args in (("GRP.POST", []),
                       ("GRP.JOIN", [1]),
                       ("GRP.LEAVE", [1]), ("GRP.LEAVE", [1, 2, 3]),
                       ("GRP.SEEN", [1]), ("GRP.SEEN", [1, 2, 3, 4]),
                       ("GRP.UNREAD", [1]),
                       ("GRP.UNREAD", [1, 2, "WITHEXPIRY", 4]),
                       ("GRP.TOTAL", []),
                       ("GRP.TOTAL", [1, "CHATS", "WITHEXPIRY", 4]),
                       ("GRP.LIST", []), ("GRP.LIST", [1] * 7),
                       ("GRP.STATE", [1]), ("GRP.STATE", [1, 2, 3]),
                       ("GRP.MUTE", [1, 2]), ("GRP.MUTE", [1, 2, 1, 4]),
                       ("GRP.MARKUNREAD", [1, 2]),
                       ("GRP.MARKUNREAD", [1, 2, 3, 4]),
                       ("GRP.RECALL", [1]), ("GRP.RECALL", [1, 2, 3]),
                       ("GRP.SEENALL", []), ("GRP.SEENALL", [1, 2]),
                       ("GRP.MENTIONS", []), ("GRP.MENTIONS", [1, 2])):
        grp.bad(grp(name, *args),
                "ERR wrong number of arguments for '%s'" % name, E["ARITY"])
    assert grp("GRP.LIST", 1) == []


# --------------------------------------------------------------------------
# GRP on par with CONV: state, mute, mark-unread, recall, mentions,
# mark-all-read, listing pages.


@each_way(unread_cap=CAP)
def test_mute_leaves_the_total_not_the_group(grp):
    for u in (1, 2):
        grp("GRP.JOIN", u, 10)
        grp("GRP.JOIN", u, 20)
    post_n(grp, 10, 3)
    post_n(grp, 20, 2)
    assert grp("GRP.TOTAL", 1, "CHATS") == [5, 2]
    assert grp("GRP.MUTE", 1, 10, 1) == [3, 2]
    assert grp("GRP.UNREAD", 1, 10) == 3  # still readable
    assert grp("GRP.TOTAL", 1, "CHATS") == [2, 1]
    assert grp("GRP.LIST", 1) == [10, 3, 20, 2]  # muted ones listed
    assert grp("GRP.STATE", 1, 10) == [3, 0, 3, 1, 0, 1]
    assert grp("GRP.TOTAL", 2) == 5  # another member
    assert grp("GRP.MUTE", 1, 10, 1) == [3, 2]
    assert grp("GRP.MUTE", 1, 99, 1) == [0, 2]  # not a member: nothing
    assert grp("GRP.STATE", 1, 99) == [0, 0, 0, 0, 0, 0]
    post_n(grp, 10, 10, t0=5000)
    assert grp("GRP.MUTE", 1, 10, 0) == [CAP + 1, CAP + 1]
    assert grp("GRP.TOTAL", 1) == CAP + 1
    grp.bad(grp("GRP.MUTE", 1, 10, 2), "ERR flag must be 0 (unmute) or 1")
    assert grp("DEBUG", "AUDIT") == 0


@each_way(unread_cap=CAP)
def test_markunread_moves_seen_back_or_forward(grp):
    grp("GRP.JOIN", 1, 10)
    post_n(grp, 10, 4)
    grp("GRP.SEEN", 1, 10)
    assert grp("GRP.MARKUNREAD", 1, 10, 3) == 2
    assert grp("GRP.STATE", 1, 10) == [4, 2, 2, 0, 0, 3]
    assert grp("GRP.MARKUNREAD", 1, 10, 4) == 1
    assert grp("GRP.MARKUNREAD", 1, 10, 1) == 4
    assert grp("GRP.MARKUNREAD", 2, 10, 2) == 3  # a non-member joins there
    grp.bad(grp("GRP.MARKUNREAD", 1, 10, 0), "ERR no post 0 in group 10")
    grp.bad(grp("GRP.MARKUNREAD", 1, 10, 5), "ERR no post 5 in group 10")
    grp.bad(grp("GRP.MARKUNREAD", 1, 77, 1), "ERR no post 1 in group 77")
    assert grp("GRP.UNREAD", 1, 10) == 4
    assert grp("DEBUG", "AUDIT") == 0


@each_way(unread_cap=CAP)
def test_recall_stops_counting_for_those_behind(grp):
    for u in (1, 2, 3):
        grp("GRP.JOIN", u, 10)
    post_n(grp, 10, 4)
    grp("GRP.SEEN", 2, 10)  # user 2 has seen everything
    grp("GRP.MARKUNREAD", 3, 10, 4)  # user 3 has seen 1..3
    assert grp("GRP.RECALL", 10, 2) == 1
    assert grp("GRP.RECALL", 10, 2) == 0  # once
    assert grp("GRP.UNREAD", 1, 10) == 3
    assert grp("GRP.UNREAD", 2, 10) == 0
    assert grp("GRP.UNREAD", 3, 10) == 1
    assert grp("GRP.STATE", 1, 10) == [4, 0, 3, 0, 0, 1]
    assert grp("GRP.RECALL", 10, 1) == 1
    assert grp("GRP.STATE", 1, 10) == [4, 0, 2, 0, 0, 3]  # skips 1 and 2
    assert grp("GRP.MARKUNREAD", 2, 10, 1) == 2  # back: still recalled
    grp.bad(grp("GRP.RECALL", 10, 5), "ERR no post 5 in group 10")
    grp.bad(grp("GRP.RECALL", 10, 0), "ERR no post 0 in group 10")
    grp.bad(grp("GRP.RECALL", 99, 1), "ERR no post 1 in group 99")
    assert grp("GRP.TOTAL", 1, "CHATS") == [2, 1]
    assert grp("DEBUG", "AUDIT") == 0


@each_way(unread_cap=CAP)
def test_posts_mention_members(grp):
    for u in (1, 2):
        grp("GRP.JOIN", u, 10)
    assert grp("GRP.POST", 10, 1000) == 1
    assert grp("GRP.POST", 10, 1001, "MENTION", 1, 3) == 2  # 3: no member
    assert grp("GRP.POST", 10, 1002, "MENTION", 1, 2) == 3
    assert grp("GRP.MENTIONS", 1) == 2
    assert grp("GRP.MENTIONS", 2) == 1
    assert grp("GRP.MENTIONS", 3) == 0
    grp("GRP.MUTE", 1, 10, 1)
    assert grp("GRP.MENTIONS", 1) == 2  # muted: still counted
    assert grp("GRP.STATE", 1, 10) == [3, 0, 3, 1, 2, 1]
    assert grp("GRP.SEEN", 1, 10, 1001) == 1
    assert grp("GRP.MENTIONS", 1) == 1
    assert grp("GRP.RECALL", 10, 3) == 1
    assert grp("GRP.MENTIONS", 1) == 0
    assert grp("GRP.MENTIONS", 2) == 0
    assert grp("GRP.MARKUNREAD", 1, 10, 1) == 2  # seen ones stay seen
    assert grp("GRP.MENTIONS", 1) == 0
    grp("GRP.JOIN", 1, 11)  # MENTION without ts: the server's clock
    assert grp("GRP.POST", 11, "MENTION", 1) == 1
    assert grp("GRP.STATE", 1, 11) == [1, 0, 1, 0, 1, 1]
    grp.bad(grp("GRP.POST", 10, 1002, "MENTION"),
            "ERR GRP.POST takes gid [ts] [MENTION uid [uid ...]]")
    grp.bad(grp("GRP.POST", 10, 1002, 5), "ERR GRP.POST takes")
    grp.bad(grp("GRP.POST", 10, "MENTION", "x"), "ERR uid must be")
    assert grp("GRP.POST", 10, 1003) == 4  # the refused ones posted nothing
    assert grp("DEBUG", "AUDIT") == 0


@each_way(unread_cap=CAP)
def test_seenall_marks_every_group(grp):
    for g in (10, 20, 30):
        grp("GRP.JOIN", 1, g)
        grp("GRP.JOIN", 2, g)
        post_n(grp, g, 2)
    grp("GRP.MUTE", 1, 20, 1)
    grp("GRP.POST", 30, 2000, "MENTION", 1)
    assert grp("GRP.SEENALL", 1) == 0
    assert grp("GRP.LIST", 1) == []
    assert grp("GRP.UNREAD", 1, 20) == 0  # muted ones too
    assert grp("GRP.MENTIONS", 1) == 0
    assert grp("GRP.TOTAL", 2) == CAP + 1  # 7, capped
    assert grp("GRP.UNREAD", 2, 30) == 3
    assert grp("GRP.SEENALL", 9) == 0
    grp("GRP.POST", 10, 3000)
    assert grp("GRP.TOTAL", 1) == 1
    assert grp("DEBUG", "AUDIT") == 0


@each_way(unread_cap=CAP)
def test_list_with_state_pages_and_recency(grp):
    for g, t in [(30, 5000), (10, 9000), (20, 7000), (40, 8000)]:
        grp("GRP.JOIN", 1, g)
        grp("GRP.POST", g, t)
    grp("GRP.SEEN", 1, 40)
    grp("GRP.POST", 20, 7100, "MENTION", 1)
    assert grp("GRP.LIST", 1) == [10, 1, 20, 2, 30, 1]
    assert grp("GRP.LIST", 1, "STATE") == [10, 1, 0, 1, 0, 0, 1,
                                           20, 2, 0, 2, 0, 1, 1,
                                           30, 1, 0, 1, 0, 0, 1]
    assert grp("GRP.LIST", 1, "RECENT") == [10, 1, 20, 2, 30, 1]
    grp("GRP.POST", 30, 9500)
    assert grp("GRP.LIST", 1, "RECENT") == [30, 2, 10, 1, 20, 2]
    assert grp("GRP.LIST", 1, 2, "CURSOR", 0) == [21, [10, 1, 20, 2]]
    assert grp("GRP.LIST", 1, 2, "CURSOR", 21) == [0, [30, 2]]
    assert grp("GRP.LIST", 1, 1, "RECENT", "CURSOR", 1) == [2, [10, 1]]
    assert grp("GRP.LIST", 1, 1) == [10, 1]
    grp.bad(grp("GRP.LIST", 1, "RECENT", "RECENT"), "ERR unknown or repeated")
    grp.bad(grp("GRP.TOTAL", 1, "GROUPS"), "ERR unknown or repeated option")
    assert grp("GRP.TOTAL", 1, "WITHEXPIRY", "CHATS") == [5, 3, 0]


def test_the_cap_is_the_configured_one():
    with Server(unread_cap=2) as srv, srv.resp() as c:
        c.cmd("GRP.JOIN", 1, 5)
        for i in range(4):
            c.cmd("GRP.POST", 5, 1000 + i)
        assert c.cmd("GRP.UNREAD", 1, 5) == 3
        assert c.cmd("GRP.SEEN", 1, 5, 1001) == 2
        assert c.cmd("GRP.SEEN", 1, 5, 1000) == 2
    with Server() as srv, srv.resp() as c:  # default 99
        c.cmd("GRP.JOIN", 1, 5)
        for i in range(150):
            c.cmd("GRP.POST", 5, 1000 + i)
        assert c.cmd("GRP.UNREAD", 1, 5) == 100
        assert c.cmd("GRP.SEEN", 1, 5, 1051) == 98
        assert c.cmd("GRP.SEEN", 1, 5, 1050) == 98
        # A non-member placed before the window: more than the cap.
        assert c.cmd("GRP.SEEN", 2, 5, 1000) == 100


def test_state_is_shared_between_protocols_and_cli():
    with Server() as srv, srv.resp() as r, srv.bin() as b:
        assert r.cmd("GRP.JOIN", 1, 100) == 0
        assert b.call("GRP.POST", 100, 50) == 1
        assert r.inline("GRP.POST 100 60") == 2
        assert b.call("GRP.UNREAD", 1, 100) == 2
        out = run_cli(srv, "GRP.LIST", 1)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == ["100", "2"], out.stdout
        out = run_cli(srv, "GRP.SEEN", 1, 100, 55)
        assert out.returncode == 0 and out.stdout.split() == ["1"], out
        info = info_flat(r.cmd("INFO", "memory"))
        assert info["grp_memberships"] == "1"
        assert int(info["grp_bytes"]) > 0
        assert b.call("DEBUG", "AUDIT") == 0


def test_client_library_calls():
    u64, u64p = ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64)
    vp = ctypes.c_void_p

    class Item(ctypes.Structure):
        _fields_ = [("gid", u64), ("unread", u64)]

    lib = libunread({
        "unread_grp_post": (ctypes.c_int, [vp, u64, u64, u64p]),
        "unread_grp_join": (ctypes.c_int, [vp, u64, u64, u64p]),
        "unread_grp_leave": (ctypes.c_int, [vp, u64, u64,
                                            ctypes.POINTER(ctypes.c_int)]),
        "unread_grp_seen": (ctypes.c_int, [vp, u64, u64, u64, u64p]),
        "unread_grp_unread": (ctypes.c_int, [vp, u64, u64, u64p]),
        "unread_grp_total": (ctypes.c_int, [vp, u64, u64p]),
        "unread_grp_list": (ctypes.c_int, [vp, u64, ctypes.POINTER(Item),
                                           ctypes.c_size_t,
                                           ctypes.POINTER(ctypes.c_size_t)]),
    })
    if lib is None:
        print("libunread.so cannot be loaded here (sanitizer build): "
              "covered by the plain build")
        return
    now = U64_MAX  # UNREAD_GRP_NOW
    with Server(unread_cap=CAP) as srv:
        h = lib_connect(lib, srv)
        try:
            v = u64(0)
            assert lib.unread_grp_join(h, 1, 5, ctypes.byref(v)) == 0
            assert v.value == 0
            assert lib.unread_grp_join(h, 1, 6, None) == 0
            for i in range(3):
                assert lib.unread_grp_post(h, 5, 1000 + i, ctypes.byref(v)) == 0
                assert v.value == i + 1
            assert lib.unread_grp_post(h, 6, now, ctypes.byref(v)) == 0
            assert lib.unread_grp_unread(h, 1, 5, ctypes.byref(v)) == 0
            assert v.value == 3
            assert lib.unread_grp_seen(h, 1, 5, 1000, ctypes.byref(v)) == 0
            assert v.value == 2
            assert lib.unread_grp_total(h, 1, ctypes.byref(v)) == 0
            assert v.value == 3
            items, n = (Item * 4)(), ctypes.c_size_t(0)
            assert lib.unread_grp_list(h, 1, items, 4, ctypes.byref(n)) == 0
            assert n.value == 2
            assert [(x.gid, x.unread) for x in items[:2]] == [(5, 2), (6, 1)]
            # A short buffer: the count says how many there are.
            one = (Item * 1)()
            assert lib.unread_grp_list(h, 1, one, 1, ctypes.byref(n)) == 0
            assert n.value == 2 and one[0].gid == 5
            assert lib.unread_grp_seen(h, 1, 6, now, ctypes.byref(v)) == 0
            assert v.value == 0
            member = ctypes.c_int(-1)
            assert lib.unread_grp_leave(h, 1, 6, ctypes.byref(member)) == 0
            assert member.value == 1
            assert lib.unread_grp_leave(h, 1, 6, ctypes.byref(member)) == 0
            assert member.value == 0
            assert lib.unread_ping(h) == 0
        finally:
            lib.unread_close(h)


def test_chat_client_library_calls():
    u64, vp = ctypes.c_uint64, ctypes.c_void_p
    p_u64, p_int = ctypes.POINTER(u64), ctypes.POINTER(ctypes.c_int)

    class State(ctypes.Structure):
        _fields_ = [("max", u64), ("read", u64), ("unread", u64),
                    ("muted", ctypes.c_int), ("mentions", u64),
                    ("first_unread", u64)]

    class Entry(ctypes.Structure):
        _fields_ = [("id", u64), ("st", State)]

    lib = libunread({
        "unread_grp_join": (ctypes.c_int, [vp, u64, u64, p_u64]),
        "unread_grp_post_mention": (ctypes.c_int, [vp, u64, u64, p_u64,
                                                   ctypes.c_uint, p_u64]),
        "unread_grp_state": (ctypes.c_int, [vp, u64, u64,
                                            ctypes.POINTER(State)]),
        "unread_grp_mute": (ctypes.c_int, [vp, u64, u64, ctypes.c_int, p_u64,
                                           p_u64]),
        "unread_grp_markunread": (ctypes.c_int, [vp, u64, u64, u64, p_u64]),
        "unread_grp_recall": (ctypes.c_int, [vp, u64, u64, p_int]),
        "unread_grp_seenall": (ctypes.c_int, [vp, u64, p_u64]),
        "unread_grp_mentions": (ctypes.c_int, [vp, u64, p_u64]),
        "unread_grp_total_chats": (ctypes.c_int, [vp, u64, p_u64, p_u64]),
        "unread_grp_list_page": (ctypes.c_int, [vp, u64, ctypes.c_int, u64,
                                                ctypes.c_uint,
                                                ctypes.POINTER(Entry),
                                                ctypes.POINTER(ctypes.c_uint),
                                                p_u64]),
    })
    if lib is None:
        print("libunread.so cannot be loaded here (sanitizer build): "
              "covered by the plain build")
        return
    with Server(unread_cap=CAP) as srv:
        h = lib_connect(lib, srv)
        try:
            v, w = u64(), u64()
            for g in (5, 6):
                assert lib.unread_grp_join(h, 1, g, None) == 0
            who = (u64 * 2)(1, 2)
            for i in range(3):
                assert lib.unread_grp_post_mention(
                    h, 5, 1000 + i, who, 2 if i == 1 else 0,
                    ctypes.byref(v)) == 0
                assert v.value == i + 1
            assert lib.unread_grp_post_mention(h, 6, U64_MAX, None, 0,
                                               ctypes.byref(v)) == 0
            st = State()
            assert lib.unread_grp_state(h, 1, 5, ctypes.byref(st)) == 0
            assert (st.max, st.read, st.unread, st.muted, st.mentions,
                    st.first_unread) == (3, 0, 3, 0, 1, 1)
            assert lib.unread_grp_mute(h, 1, 6, 1, ctypes.byref(v),
                                       ctypes.byref(w)) == 0
            assert (v.value, w.value) == (1, 3)
            newly = ctypes.c_int(-1)
            assert lib.unread_grp_recall(h, 5, 1, ctypes.byref(newly)) == 0
            assert newly.value == 1
            assert lib.unread_grp_recall(h, 5, 9, ctypes.byref(newly)) == \
                E["BADARG"]
            assert lib.unread_grp_markunread(h, 1, 5, 3, ctypes.byref(v)) == 0
            assert v.value == 1
            assert lib.unread_grp_mentions(h, 1, ctypes.byref(v)) == 0
            assert v.value == 0  # seen past post 2
            assert lib.unread_grp_total_chats(h, 1, ctypes.byref(v),
                                              ctypes.byref(w)) == 0
            assert (v.value, w.value) == (1, 1)
            page, n, nxt = (Entry * 4)(), ctypes.c_uint(), u64()
            assert lib.unread_grp_list_page(h, 1, 0, 0, 4, page,
                                            ctypes.byref(n),
                                            ctypes.byref(nxt)) == 0
            assert n.value == 2 and nxt.value == 0
            assert [(e.id, e.st.unread, e.st.muted) for e in page[:2]] == \
                [(5, 1, 0), (6, 1, 1)]
            assert lib.unread_grp_seenall(h, 1, ctypes.byref(v)) == 0
            assert v.value == 0
            assert lib.unread_ping(h) == 0
        finally:
            lib.unread_close(h)


def test_chat_state_survives_restarts():
    """Mute flags, recalls and mentions come back from the journal alone
    and from the snapshot."""
    with tempfile.TemporaryDirectory(prefix="unreadd-grp-") as tmp:
        data = os.path.join(tmp, "data")
        os.makedirs(data)
        with on_dir(data) as srv, srv.resp() as c:
            for u in (1, 2, 3):
                c.cmd("GRP.JOIN", u, 5)
            for i in range(8):
                c.cmd("GRP.POST", 5, 1000 + 10 * i,
                      *(["MENTION", 1, 2] if i % 3 == 0 else []))
            c.cmd("GRP.POST", 5, "MENTION", 3)  # the clock, as resolved
            c.cmd("GRP.MUTE", 2, 5, 1)
            c.cmd("GRP.RECALL", 5, 4)
            c.cmd("GRP.MARKUNREAD", 3, 5, 2)
            c.cmd("GRP.SEEN", 1, 5, 1035)
            want = [(c.cmd("GRP.STATE", u, 5), c.cmd("GRP.MENTIONS", u),
                     c.cmd("GRP.TOTAL", u, "CHATS")) for u in (1, 2, 3)]
            assert want[1][0][3] == 1 and want[0][1] == 1 and want[2][1] == 1
            srv.stop(signal.SIGKILL)  # the journal alone
        for _ in range(2):  # then from the snapshot written at SIGTERM
            with on_dir(data) as srv, srv.resp() as c:
                assert [(c.cmd("GRP.STATE", u, 5), c.cmd("GRP.MENTIONS", u),
                         c.cmd("GRP.TOTAL", u, "CHATS"))
                        for u in (1, 2, 3)] == want
                assert c.cmd("DEBUG", "AUDIT") == 0


def on_dir(data, **config):
    """A server on a data dir the test keeps across restarts (the last
    --dir wins); the exit status is the test's business."""
    return Server(args=["--dir", data], check_exit=False, save_seconds=0,
                  unread_cap=CAP, **config)


def test_state_survives_restarts_by_journal_and_snapshot():
    with tempfile.TemporaryDirectory(prefix="unreadd-grp-") as tmp:
        data = os.path.join(tmp, "data")
        os.makedirs(data)
        with on_dir(data) as srv, srv.resp() as c:
            for u in (1, 2, 3):
                c.cmd("GRP.JOIN", u, 5)
            for i in range(20):  # kept: the last 6
                c.cmd("GRP.POST", 5, 1000 + 10 * i)
            c.cmd("GRP.POST", 6)  # the clock's ts, recorded as resolved
            c.cmd("GRP.SEEN", 1, 5, 1165)
            c.cmd("GRP.SEEN", 4, 6, int(time.time() * 1000) - 3600 * 1000)
            c.cmd("GRP.LEAVE", 3, 5)
            want = [c.cmd("GRP.LIST", u) for u in (1, 2, 3, 4)]
            assert want == [[5, 3], [5, CAP + 1], [], [6, 1]]
            srv.stop(signal.SIGKILL)  # the journal alone
        for _ in range(2):  # then from the snapshot written at SIGTERM
            with on_dir(data) as srv, srv.resp() as c:
                assert [c.cmd("GRP.LIST", u) for u in (1, 2, 3, 4)] == want
                assert c.cmd("DEBUG", "AUDIT") == 0
        with on_dir(data) as srv, srv.resp() as c:
            # The window came back: SEEN with a ts inside it is exact.
            assert c.cmd("GRP.SEEN", 2, 5, 1145) == 5
            assert c.cmd("GRP.POST", 5, 2000) == 21
            assert c.cmd("GRP.SEEN", 2, 5, 1175) == 3


# --------------------------------------------------------------------------
# The randomized model test: every message kept, counts compared capped.


class Model:
    def __init__(self):
        self.ts = {}    # gid -> [ts of seq 1, 2, ...]
        self.seen = {}  # (uid, gid) -> seq

    def post(self, g, ts):
        msgs = self.ts.setdefault(g, [])
        msgs.append(max(ts, msgs[-1]) if msgs else ts)
        return len(msgs)

    def head(self, g):
        return len(self.ts.get(g, []))

    def pos(self, g, ts):
        return sum(1 for t in self.ts.get(g, []) if t <= ts)

    def unread(self, u, g):
        if (u, g) not in self.seen:
            return 0
        return self.head(g) - self.seen[(u, g)]

    def groups(self, u):
        return sorted(g for (x, g) in self.seen if x == u)


def capped(v):
    return CAP + 1 if v > CAP else v


def test_random_ops_match_model_across_protocols():
    seed = int(os.environ.get("UNREADD_TEST_SEED", "20240612"))
    rng = random.Random(seed)
    m = Model()
    with Server(unread_cap=CAP, grp_max_groups=4) as srv:
        ways = [Via(srv, k) for k in ("resp", "inline", "binary")]
        uids = [0, 1, ID_MAX] + [rng.randrange(1 << 63) for _ in range(4)]
        gids = [0, 7, ID_MAX] + [rng.randrange(1 << 63) for _ in range(3)]
        now = 10000
        for i in range(2500):
            via = rng.choice(ways)
            u, g = rng.choice(uids), rng.choice(gids)
            op = rng.random()
            where = "op %d (seed %d, %s)" % (i, seed, via.kind)
            if op < 0.3:
                if rng.random() < 0.1:
                    ts = now - rng.randrange(30)
                else:
                    now += rng.randrange(3)
                    ts = now
                assert via("GRP.POST", g, ts) == m.post(g, ts), where
            elif op < 0.55:
                joined = (u, g) in m.seen
                if rng.random() < 0.4:
                    name, args, p = "GRP.JOIN", (u, g), m.head(g)
                elif rng.random() < 0.3:
                    name, args, p = "GRP.SEEN", (u, g), m.head(g)
                else:
                    ts = now - rng.randrange(40)
                    name, args, p = "GRP.SEEN", (u, g, ts), m.pos(g, ts)
                r = via(name, *args)
                if not joined and len(m.groups(u)) >= 4:
                    assert is_err(r) and "grp-max-groups" in r.text, where
                    continue
                if not joined:
                    m.seen[(u, g)] = p
                elif name == "GRP.SEEN":
                    m.seen[(u, g)] = max(m.seen[(u, g)], p)
                assert r == capped(m.unread(u, g)), (where, r)
            elif op < 0.62:
                was = (u, g) in m.seen
                m.seen.pop((u, g), None)
                assert via("GRP.LEAVE", u, g) == int(was), where
            elif op < 0.8:
                assert via("GRP.UNREAD", u, g) == capped(m.unread(u, g)), where
            elif op < 0.9:
                total = sum(m.unread(u, x) for x in m.groups(u))
                assert via("GRP.TOTAL", u) == capped(total), where
            else:
                want = [v for x in m.groups(u) if m.unread(u, x)
                        for v in (x, capped(m.unread(u, x)))]
                assert via("GRP.LIST", u) == want, where
        assert ways[0]("DEBUG", "AUDIT") == 0
        info = info_flat(ways[0]("INFO", "memory"))
        assert int(info["grp_memberships"]) == len(m.seen)
        for via in ways:
            via.close()


test_random_ops_match_model_across_protocols.timeout = 120


def test_errors_do_not_change_state():
    with Server(unread_cap=CAP) as srv, srv.resp() as c:
        c.cmd("GRP.JOIN", 1, 50)
        c.cmd("GRP.POST", 50, 100)
        for args in (("GRP.POST", 50, "x"), ("GRP.POST", "x", 5),
                     ("GRP.JOIN", 2), ("GRP.SEEN", 1, 50, "-5"),
                     ("GRP.SEEN", 1, 50, 1, 2), ("GRP.LEAVE", 1, "y")):
            assert is_err(c.cmd(*args)), args
        assert c.cmd("GRP.LIST", 1) == [50, 1]
        assert c.cmd("GRP.POST", 50, 101) == 2
        assert_err(c.cmd("GRP.NOPE", 1), "ERR unknown command")
