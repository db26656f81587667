"""Issue 17: one badge across families (USER.BADGE), many users per call
(USER.MBADGE, CNT.MTOTAL, CONV.MTOTAL), notices read once (CNT.INCR ... ID,
CNT.ACK), expiry that says so (USER.STATUS, WITHEXPIRY, DOT keeping
dismissed dots dismissed, bulk GRP.JOIN / FEED.FOLLOW), BC.READ ... upto.

Scenarios with numbers in and out over RESP multibulk, inline and binary
(ways.each_way), the rule checked against a Python model with random
numbers, libunread through ctypes and unread-cli --cluster (the split by
shard), and the new state through journal replay and snapshots.
"""

import contextlib
import ctypes
import random
import signal
import subprocess

from harness import (E, UNREAD_CLI, Server, assert_err, info_dict, is_err)
from ways import Via, each_way, lib_connect, libunread

DAY = 86400
FAMS = ["cnt", "conv", "grp", "bc", "dot", "feed"]


def capped(v, cap):
    return cap + 1 if v > cap else v


def badge_of(true_parts, cap):
    """The documented rule: every part exact up to cap, cap + 1 above;
    the badge is the sum of the parts under the same rule."""
    parts = [capped(v, cap) for v in true_parts]
    return [capped(sum(parts), cap)] + parts


def flat(names, values):
    out = [values[0]]
    for n, v in zip(names, values[1:]):
        out += [n.encode(), v]
    return out


def issue_example(via, cap):
    """The issue's user: CNT 3, CONV 4 plus a muted conversation with 5,
    GRP 150 over three groups."""
    assert via("CNT.INCR", 1, "mention", 3) == [3, 3]
    assert via("CONV.INCR", 1, 10, 4) == [4, 4]
    assert via("CONV.INCR", 1, 11, 5) == [5, 9]
    assert via("CONV.MUTE", 1, 11, 1) == [5, 4]
    assert via("GRP.JOIN", 1, 100, 101, 102) == 0
    for i in range(150):
        via("GRP.POST", 100 + i % 3)
    return via("USER.BADGE", 1)


@each_way(unread_cap=99)
def test_issue_example_under_cap_99(via):
    assert issue_example(via, 99) == flat(FAMS, [100, 3, 4, 100, 0, 0, 0])
    assert via("USER.BADGE", 1, "cnt", "conv") == flat(["cnt", "conv"],
                                                       [7, 3, 4])
    assert via("GRP.TOTAL", 1) == 100  # the part is GRP.TOTAL's own
    assert via("DEBUG", "AUDIT") == 0


@each_way(unread_cap=999)
def test_issue_example_under_cap_999(via):
    assert issue_example(via, 999) == flat(FAMS, [157, 3, 4, 150, 0, 0, 0])
    assert via("USER.BADGE", 1, "grp", "cnt") == flat(["grp", "cnt"],
                                                      [153, 150, 3])


def seed_random(c, rng, uid, cap):
    """Random state for uid in every family; returns the true parts."""
    parts = dict.fromkeys(FAMS, 0)
    for t in rng.sample(range(8), rng.randint(0, 4)):
        v = rng.choice([0, 1, 5, rng.randint(0, 3 * cap)])
        c.cmd("CNT.SET", uid, t, v)
        parts["cnt"] += v
    for k in range(rng.randint(0, 4)):
        cid = uid * 100 + k
        n = rng.randint(1, 2 * cap)
        c.cmd("CONV.INCR", uid, cid, n)
        if rng.random() < 0.3:
            c.cmd("CONV.MUTE", uid, cid, 1)
        else:
            parts["conv"] += n
    for k in range(rng.randint(0, 3)):
        gid = uid * 100 + k
        c.cmd("GRP.JOIN", uid, gid)
        n = rng.randint(0, cap + 5)
        for _ in range(n):
            c.cmd("GRP.POST", gid)
        parts["grp"] += n
    parts["channels"] = rng.sample(range(3), rng.randint(0, 3))
    for ch in parts["channels"]:
        c.cmd("BC.UNREAD", uid, ch)  # registered at the head
    for k in range(rng.randint(0, 3)):
        dot = uid * 100 + k
        c.cmd("DOT.CLICK", uid, dot, 1000)
        if rng.random() < 0.6:
            c.cmd("DOT.PUSH", dot, 2000)
            parts["dot"] += 1
    for k in range(rng.randint(0, 3)):
        author = uid * 100 + k
        c.cmd("FEED.FOLLOW", uid, author)
        n = rng.randint(0, cap)
        if n:
            c.cmd("FEED.POST", author, n)
        parts["feed"] += n
    return parts


def test_badge_matches_the_rule_with_random_numbers():
    rng = random.Random(17)
    for cap in (1, 7, 99, 250):
        with Server(unread_cap=cap) as srv, srv.resp() as c, srv.bin() as b:
            truth = {}
            for uid in range(1, 31):
                truth[uid] = seed_random(c, rng, uid, cap)
            # every registered user reads the publishes made after
            published = [rng.randint(0, cap) for _ in range(3)]
            for ch, n in enumerate(published):
                for _ in range(n):
                    c.cmd("BC.PUBLISH", ch)
            for uid, parts in truth.items():
                parts["bc"] = sum(published[ch] for ch in parts["channels"])
                want = flat(FAMS, badge_of([parts[f] for f in FAMS], cap))
                assert c.cmd("USER.BADGE", uid) == want, (cap, uid, parts)
                assert b.call("USER.BADGE", uid) == want
            uids = list(truth) + [10**9]
            badges = c.cmd("USER.MBADGE", *uids)
            assert badges == [c.cmd("USER.BADGE", u)[0] for u in uids]
            assert b.call("USER.MBADGE", *uids) == badges
            assert c.cmd("CNT.MTOTAL", *uids) == \
                [c.cmd("CNT.TOTAL", u) for u in uids]
            assert b.call("CONV.MTOTAL", *uids) == \
                [c.cmd("CONV.TOTAL", u) for u in uids]
            assert c.cmd("DEBUG", "AUDIT") == 0


@each_way
def test_badge_families_options_and_errors(via):
    via("CNT.INCR", 5, 0, 2)
    via("FEED.FOLLOW", 5, 9)
    via("FEED.POST", 9, 3)
    assert via("USER.BADGE", 5, "feed", "cnt") == \
        [5, b"feed", 3, b"cnt", 2]
    assert via("USER.BADGE", 5, "FEED", "WITHEXPIRY") == \
        [3, b"feed", 3, b"expired", 0]
    assert via("USER.BADGE", 5, "WITHEXPIRY", "cnt") == \
        [2, b"cnt", 2, b"expired", 0]
    assert via("USER.BADGE", 6) == flat(FAMS, [0] * 7)  # unknown user
    via.bad(via("USER.BADGE", 5, "rcpt"), "ERR rcpt has no part")
    via.bad(via("USER.BADGE", 5, "cnt", "cnt"), "ERR cnt named twice")
    via.bad(via("USER.BADGE", 5, "nope"), "ERR 'nope' is not a family")
    via.bad(via("USER.BADGE", 5, "WITHEXPIRY", "WITHEXPIRY"),
            "ERR 'WITHEXPIRY' is not a family")
    via.bad(via("USER.BADGE", 5, 3), "ERR '3' is not a family")
    via.bad(via("USER.BADGE", "x"), "ERR uid must be")
    via.bad(via("USER.BADGE"), "ERR wrong number of arguments",
            E["ARITY"])


@each_way
def test_many_users_per_call(via):
    for uid in range(1, 6):
        via("CNT.INCR", uid, 0, uid)
        via("CONV.INCR", uid, 1, 10 * uid)
    uids = [3, 1, 99, 5, 3]
    assert via("CNT.MTOTAL", *uids) == [3, 1, 0, 5, 3]
    assert via("CONV.MTOTAL", *uids) == [30, 10, 0, 50, 30]
    assert via("USER.MBADGE", *uids) == [33, 11, 0, 55, 33]
    assert via("USER.MBADGE", *range(1000)) == \
        [0] + [11 * u for u in range(1, 6)] + [0] * 994
    for name in ("USER.MBADGE", "CNT.MTOTAL", "CONV.MTOTAL"):
        via.bad(via(name, *range(1001)),
                "ERR wrong number of arguments for '%s'" % name, E["ARITY"])
        via.bad(via(name), "ERR wrong number of arguments", E["ARITY"])
        via.bad(via(name, 1, "x", 2), "ERR uid must be")


@each_way
def test_many_users_every_shape_and_call_length(via):
    """USER.MBADGE runs its users through a pipeline of hints several users
    deep: calls shorter and longer than it, unknown and repeated users,
    users whose state is inline and out of line in every family (3+ CNT
    types, 2+ dots and follows, more groups than the hints look at) and
    channels created in no particular order, each badge as the model and
    as USER.BADGE says."""
    rng = random.Random(1717)
    channels = [7000 + 13 * i for i in range(20)]
    rng.shuffle(channels)
    users = range(1, 41)
    want = {}
    for u in users:
        for t in range(u % 5 + 1):
            via("CNT.INCR", u, t, 1)
        if u % 7:
            via("CONV.INCR", u, 1, u % 7)
        if u % 12:
            assert via("GRP.JOIN", u, *range(1000, 1000 + u % 12)) == 0
        mine = [ch for i, ch in enumerate(channels) if (u + i) % 3 == 0]
        for ch in mine:
            via("BC.UNREAD", u, ch)
        for dot in range(1, u % 4 + 1):
            via("DOT.CLICK", u, dot, 1000)
        if u % 3:
            via("FEED.FOLLOW", u, *range(500, 500 + u % 3))
        want[u] = ((u % 5 + 1) + u % 7 + u % 12 + len(mine) + u % 4 +
                   2 * (u % 3))
    for gid in range(1000, 1012):
        via("GRP.POST", gid)
    for ch in channels:
        via("BC.PUBLISH", ch)
    for dot in range(1, 4):
        via("DOT.PUSH", dot, 2000)
    for author in range(500, 503):
        via("FEED.POST", author, 2)
    want[10**9] = 0
    uids = list(users) + [10**9, 3, 40, 3]
    rng.shuffle(uids)
    for u in set(uids):
        assert via("USER.BADGE", u)[0] == want[u], u
    for n in list(range(1, 13)) + [len(uids)]:
        assert via("USER.MBADGE", *uids[:n]) == [want[u] for u in uids[:n]]
    assert via("DEBUG", "AUDIT") == 0


def test_many_users_stop_at_the_cap():
    """USER.MBADGE stops reading a user's families once the sum is past
    unread-cap, and asks each family only for the room left: users whose
    sum reaches the cap exactly, passes it by one, passes it in the first
    family or only in the last, parts far above the cap (CNT at 2^32 - 1
    in two types) and parts of 0 between, against the model and
    USER.BADGE, over RESP and binary, under several caps."""
    rng = random.Random(1718)
    big = 4294967295
    for cap in (1, 10, 37):
        with Server(unread_cap=cap) as srv, srv.resp() as c, srv.bin() as b:
            def give(uid, parts):
                cnt, conv, grp, bc, dot, feed = parts
                for t, v in enumerate([cnt] if cnt <= big else [big, big]):
                    if v:
                        c.cmd("CNT.SET", uid, t, v)
                if conv:
                    c.cmd("CONV.INCR", uid, uid, conv)
                if grp:
                    c.cmd("GRP.JOIN", uid, uid)
                    for _ in range(grp):
                        c.cmd("GRP.POST", uid)
                if bc:
                    c.cmd("BC.UNREAD", uid, uid)  # registered at the head
                    for _ in range(bc):
                        c.cmd("BC.PUBLISH", uid)
                for d in range(dot):
                    c.cmd("DOT.CLICK", uid, uid * 100 + d, 1000)
                    c.cmd("DOT.PUSH", uid * 100 + d, 2000)
                if feed:
                    c.cmd("FEED.FOLLOW", uid, uid)
                    c.cmd("FEED.POST", uid, feed)

            shapes = [
                [cap - 1, 0, 0, 0, 0, 1],   # exactly the cap, last family
                [cap, 0, 0, 0, 0, 1],       # cap + 1 in the last family
                [0, 0, 0, 0, 0, cap + 1],   # only the last family over
                [cap + 1, 2, 3, 1, 2, 5],   # over in the first family
                [2 * big, 1, 1, 1, 1, 1],   # far over, then more parts
                [0, cap, 0, 1, 0, 0],       # over in the middle
                [1, 0, cap - 1, 0, 0, 0],   # the cap with zeros after
                [0, 0, 0, 0, 0, 0],
            ]
            for _ in range(24):
                shapes.append([rng.choice([0, 0, 1, cap // 2, cap, cap + 1,
                                           2 * cap]) for _ in FAMS])
            shapes[-1][0] = big
            want = {}
            for uid, parts in enumerate(shapes, 1):
                give(uid, parts)
                want[uid] = badge_of(parts, cap)[0]
            uids = list(want) + [10**9, 2, 1]
            want[10**9] = 0
            rng.shuffle(uids)
            badges = [want[u] for u in uids]
            assert c.cmd("USER.MBADGE", *uids) == badges, cap
            assert b.call("USER.MBADGE", *uids) == badges
            assert badges == [c.cmd("USER.BADGE", u)[0] for u in uids]
            for n in range(1, 11):  # shorter than the pipeline, every length
                assert b.call("USER.MBADGE", *uids[:n]) == badges[:n]
            assert c.cmd("DEBUG", "AUDIT") == 0


@each_way
def test_a_notice_read_twice_counts_once(via):
    assert via("CNT.INCR", 7, "mention", 1, "ID", 555) == [1, 1]
    assert via("CNT.INCR", 7, "mention", 1, "ID", 555) == [1, 1]  # retry
    assert via("CNT.INCR", 7, "mention", "ID", 556) == [2, 2]
    assert via("CNT.INCR", 7, "like", 4, "ID", 555) == [4, 6]  # own type
    assert via("CNT.ACK", 7, "mention", 555) == [1, 5]
    assert via("CNT.ACK", 7, "mention", 555) == [1, 5]  # second device
    assert via("CNT.ACK", 7, "like", 555) == [0, 1]
    assert via("CNT.ACK", 7, "mention", 900) == [1, 1]  # before its incr
    assert via("CNT.INCR", 7, "mention", 1, "ID", 900) == [1, 1]  # late
    assert via("CNT.INCR", 7, "mention", 3) == [4, 4]  # plain INCR as ever
    assert via("CNT.DECR", 7, "mention") == [3, 3]
    assert via("CNT.CLEAR", 7, "mention") == 0  # 556 becomes read
    assert via("CNT.INCR", 7, "mention", 1, "ID", 556) == [0, 0]
    assert via("CNT.ACK", 7, "mention", 556) == [0, 0]
    assert via("DEBUG", "AUDIT") == 0
    via.bad(via("CNT.INCR", 7, 0, 1, "XX", 5), "ERR expected ID")
    via.bad(via("CNT.INCR", 7, 0, "ID", "x"), "ERR nid must be")
    via.bad(via("CNT.INCR", 7, 0, 4294967296, "ID", 5), "ERR a notice's")
    via.bad(via("CNT.ACK", 7, 0), "ERR wrong number of arguments",
            E["ARITY"])
    via.bad(via("CNT.ACK", 7, 99, 5), "ERR unknown counter type")
    assert via("CNT.TOTAL", 7) == 0


@each_way
def test_notices_are_bounded_per_user_and_type(via):
    for nid in range(64):
        via("CNT.INCR", 8, 0, 1, "ID", nid)
    assert via("CNT.ACK", 8, 0, 10) == [63, 63]
    assert via("CNT.INCR", 8, 0, 1, "ID", 100) == [64, 64]  # forgets 10
    assert via("CNT.INCR", 8, 0, 1, "ID", 10) == [65, 65]  # 10 is new again
    # every one unread: the oldest is forgotten and stays counted
    assert via("CNT.INCR", 8, 0, 1, "ID", 101) == [66, 66]  # forgets 1
    assert via("CNT.ACK", 8, 0, 1) == [66, 66]
    # an early ack is not remembered when only unread ones could go
    assert via("CNT.ACK", 8, 0, 5000) == [66, 66]
    assert via("CNT.ACK", 8, 0, 2) == [65, 65]
    assert via("CNT.INCR", 8, 1, 1, "ID", 2) == [1, 66]  # another type
    lines = via("USER.INFO", 8)
    assert b"cnt: mention=65 comment=1 total=66 notices=65 (unread 64)" in \
        lines, lines
    assert len([ln for ln in lines if ln.startswith(b"cnt notice ")]) == 65


def test_notices_and_expiry_survive_journal_and_snapshot():
    with Server(enable_debug_command="yes", journal_fsync="always",
                save_seconds=0, check_exit=False) as srv:
        c = srv.resp()
        c.cmd("CNT.INCR", 1, 0, 2, "ID", 41)
        c.cmd("CNT.ACK", 1, 0, 42)
        c.cmd("DOT.PUSH", 3, 1000)
        c.cmd("DOT.CLICK", 1, 3, 2000)
        c.cmd("GRP.JOIN", 1, 5)
        c.cmd("DEBUG", "ADVANCE-CLOCK", 31 * DAY)
        srv.wait_for(lambda: c.cmd("USER.STATUS", 1)[0] == b"expired", 20,
                     "user 1 expired")
        status = c.cmd("USER.STATUS", 1)
        assert status[0] == b"expired"
        before = [status, c.cmd("CNT.GETALL", 1), c.cmd("USER.INFO", 1)]
        assert b"cnt notice 41: type=mention delta=2 unread" in before[2]
        assert any(b"every dot pushed up to" in ln for ln in before[2])
        c.close()
        for sig in (signal.SIGKILL, signal.SIGTERM):  # journal, snapshot
            srv.stop(sig)
            restart(srv)
            c = srv.resp()
            assert [c.cmd("USER.STATUS", 1), c.cmd("CNT.GETALL", 1),
                    c.cmd("USER.INFO", 1)] == before, sig
            # CNT is no expiring family: these do not make user 1 active
            assert c.cmd("CNT.INCR", 1, 0, 2, "ID", 41) == [2, 2]
            assert c.cmd("CNT.INCR", 1, 0, 2, "ID", 42) == [2, 2]
            assert c.cmd("DEBUG", "AUDIT") == 0
            c.close()
        c = srv.resp()
        assert c.cmd("DOT.CHECK", 1, 3) == [0]  # still dismissed
        info = info_dict(srv.resp().cmd("INFO", "memory"))["memory"]
        assert info["expired_users"] == "1"


def restart(srv):
    """Starts a stopped server again on its port and data directory."""
    import subprocess as sp
    err = open(srv._stderr_path, "ab")
    srv.proc = sp.Popen(srv.argv(), stdin=sp.DEVNULL, stdout=err, stderr=err,
                        cwd=srv.tmp.name)
    err.close()
    assert srv._wait_ready(), "restart failed:\n" + srv.stderr_tail()


def expiry_scenario(c):
    """A user expired from GRP, FEED, DOT and BC (the default
    expire-families) says so, keeps its dismissed dot dismissed, and a
    bulk rebuild counts from the head. c: a function running a command."""
    c("CNT.INCR", 1, "mention", 2)
    c("BC.UNREAD", 1, 7)
    assert c("GRP.JOIN", 1, 10, 11) == 0
    assert c("FEED.FOLLOW", 1, 20, 21) == 2
    c("DOT.PUSH", 30, 1000)
    c("DOT.CLICK", 1, 30, 1500)  # dismissed
    c("GRP.POST", 10)
    c("FEED.POST", 20, 2)
    assert c("USER.BADGE", 1) == flat(FAMS, [5, 2, 0, 1, 0, 0, 2])
    assert c("USER.STATUS", 1)[0] == b"active"
    day0 = c("USER.STATUS", 1)[1]
    assert day0 % (DAY * 1000) == 0 and day0 > 0
    c("DOT.PUSH", 30, 1400)  # an older push: the dot stays dismissed
    c("DEBUG", "ADVANCE-CLOCK", 31 * DAY)
    return day0


def expiry_after(c, srv_wait):
    srv_wait(lambda: c("USER.STATUS", 1)[0] == b"expired")
    st = c("USER.STATUS", 1)
    expired_at = st[2]
    assert st[1] == 0 and expired_at > 0
    assert sorted(st[3:]) == [b"bc", b"dot", b"feed", b"grp"]
    # reads say so, and read as new (CNT is kept)
    assert c("GRP.TOTAL", 1, "WITHEXPIRY") == [0, expired_at]
    assert c("GRP.UNREAD", 1, 10, "withexpiry") == [0, expired_at]
    assert c("FEED.UNREAD", 1, "WITHEXPIRY") == [0, expired_at]
    assert c("CNT.TOTAL", 1, "WITHEXPIRY") == [2, 0]
    assert c("CONV.TOTAL", 1, "WITHEXPIRY") == [0, 0]
    assert c("USER.BADGE", 1, "grp", "feed", "WITHEXPIRY") == \
        [0, b"grp", 0, b"feed", 0, b"expired", expired_at]
    # the dismissed dot stays dismissed; a dot pushed before the expiry
    # reads as clicked; one pushed after it shows
    c("DOT.PUSH", 31, 1600)
    assert c("DOT.CHECK", 1, 30, 31) == [0, 0]
    # now: after the expiry. The sweep and the commands since may share
    # its millisecond on a fast server, so the clock moves on first.
    c("DEBUG", "ADVANCE-CLOCK", 1)
    c("DOT.PUSH", 32)
    assert c("DOT.CHECK", 1, 30, 31, 32) == [0, 0, 1]
    # bulk rebuild at the heads: messages posted while expired are not
    # unread, later ones are
    c("GRP.POST", 11)
    assert c("GRP.JOIN", 1, 10, 11) == 0
    assert c("FEED.FOLLOW", 1, 20, 21) == 2
    c("GRP.POST", 10)
    c("GRP.POST", 11)
    c("FEED.POST", 21, 3)
    assert c("GRP.TOTAL", 1, "WITHEXPIRY") == [2, 0]
    assert c("FEED.UNREAD", 1, "WITHEXPIRY") == [3, 0]
    st = c("USER.STATUS", 1)
    assert st[0] == b"active" and st[1] > 0 and st[2] == expired_at
    assert sorted(st[3:]) == [b"bc", b"dot"]
    # the first BC read registers at the head: it says so once
    assert c("BC.UNREAD", 1, 7, "WITHEXPIRY") == [0, expired_at]
    assert c("BC.UNREAD", 1, 7, "WITHEXPIRY") == [0, 0]
    c("DOT.CLICK", 1, 32)
    assert c("USER.STATUS", 1)[3:] == []
    assert c("DOT.CHECK", 1, 30, 31, 32) == [0, 0, 0]
    assert c("USER.BADGE", 1) == flat(FAMS, [7, 2, 0, 2, 0, 0, 3])
    assert c("DEBUG", "AUDIT") == 0
    assert c("USER.DEL", 1) > 0
    assert c("USER.STATUS", 1) == [b"unknown", 0, 0]
    assert c("DOT.CHECK", 1, 30) == [1]  # erased: reads as new


def test_expiry_says_so_resp():
    with Server(enable_debug_command="yes") as srv, srv.resp() as r:
        expiry_scenario(r.cmd)
        expiry_after(r.cmd, lambda p: srv.wait_for(p, 20, "expiry"))


def test_expiry_says_so_binary():
    with Server(enable_debug_command="yes") as srv, srv.bin() as b:
        via = Via(srv, "binary")
        expiry_scenario(via)
        expiry_after(via, lambda p: srv.wait_for(p, 20, "expiry"))
        via.close()


def test_reads_for_many_users_do_not_mark_them_active():
    with Server(enable_debug_command="yes") as srv, srv.resp() as c:
        c.cmd("BC.UNREAD", 1, 1)
        day0 = c.cmd("USER.STATUS", 1)[1]
        c.cmd("DEBUG", "ADVANCE-CLOCK", 3 * DAY)
        c.cmd("USER.MBADGE", 1, 2)
        c.cmd("CNT.MTOTAL", 1)
        c.cmd("CONV.MTOTAL", 1)
        c.cmd("USER.STATUS", 1)
        assert c.cmd("USER.STATUS", 1)[1] == day0
        c.cmd("USER.BADGE", 1)  # the user's own badge is its activity
        assert c.cmd("USER.STATUS", 1)[1] == day0 + 3 * DAY * 1000
        assert c.cmd("USER.STATUS", 2) == [b"unknown", 0, 0]


@each_way(grp_max_groups=3, feed_max_follows=3)
def test_bulk_join_and_follow_are_all_or_nothing(via):
    assert via("GRP.JOIN", 1, 5) == 0
    via("GRP.POST", 5)
    via.bad(via("GRP.JOIN", 1, 6, 7, 8), "ERR user 1 is already in 3",
            E["LIMIT"])
    assert via("GRP.LIST", 1) == [5, 1]
    via.bad(via("GRP.JOIN", 1, 6, "x"), "ERR gid must be")
    assert via("GRP.TOTAL", 1) == 1
    assert via("GRP.JOIN", 1, 6, 5, 6, 7) == 1  # repeats, a member
    assert via("GRP.JOIN", 1, 5, 6, 7) == 1
    via.bad(via("FEED.FOLLOW", 2, 1, 2, 3, 4), "ERR user 2 already follows",
            E["LIMIT"])
    via.bad(via("FEED.FOLLOW", 2, 1, "y"), "ERR author must be")
    assert via("FEED.UNREAD", 2) == 0
    assert via("FEED.FOLLOW", 2, 1, 2, 1) == 2
    assert via("FEED.FOLLOW", 2, 1, 3, 2) == 1
    assert via("FEED.FOLLOW", 2, 3) == 0
    assert via("DEBUG", "AUDIT") == 0


@each_way
def test_bc_read_upto(via):
    assert via("BC.UNREAD", 1, 9) == 0
    for _ in range(5):
        via("BC.PUBLISH", 9)
    assert via("BC.READ", 1, 9, 3) == 2
    assert via("BC.READ", 1, 9, 2) == 2  # never back
    assert via("BC.UNREAD", 1, 9) == 2
    assert via("BC.READ", 1, 9, 100) == 0  # not past the head
    via("BC.PUBLISH", 9)
    assert via("BC.READ", 1, 9) == 0
    assert via("BC.READ", 2, 9, 1) == 0  # new: registered at the head
    via.bad(via("BC.READ", 1, 9, "z"), "ERR upto must be")


def test_libunread_typed_calls():
    vp, u64, u32 = ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32
    P = ctypes.POINTER

    class Part(ctypes.Structure):
        _fields_ = [("family", ctypes.c_char * 8), ("value", u64)]

    class Badge(ctypes.Structure):
        _fields_ = [("badge", u64), ("nparts", ctypes.c_uint),
                    ("part", Part * 8), ("expired", u64)]

    class Status(ctypes.Structure):
        _fields_ = [("state", ctypes.c_int), ("last_active_ms", u64),
                    ("expired_ms", u64), ("npending", ctypes.c_uint),
                    ("pending", (ctypes.c_char * 8) * 8)]

    lib = libunread({
        "unread_user_badge": (ctypes.c_int, [vp, u64, P(ctypes.c_char_p),
                                             ctypes.c_uint, ctypes.c_int,
                                             P(Badge)]),
        "unread_user_mbadge": (ctypes.c_int, [vp, P(u64), ctypes.c_size_t,
                                              P(u64)]),
        "unread_cnt_mtotal": (ctypes.c_int, [vp, P(u64), ctypes.c_size_t,
                                             P(u64)]),
        "unread_user_status": (ctypes.c_int, [vp, u64, P(Status)]),
        "unread_cnt_incr_id": (ctypes.c_int, [vp, u64, ctypes.c_uint, u32,
                                              u64, P(u32), P(u64)]),
        "unread_cnt_ack": (ctypes.c_int, [vp, u64, ctypes.c_uint, u64,
                                          P(u32), P(u64)]),
        "unread_grp_join_many": (ctypes.c_int, [vp, u64, P(u64),
                                                ctypes.c_size_t, P(u64)]),
        "unread_grp_total_ex": (ctypes.c_int, [vp, u64, P(u64), P(u64)]),
        "unread_bc_read_upto": (ctypes.c_int, [vp, u64, u64, u64, P(u64)]),
    })
    if lib is None:
        print("libunread.so cannot be loaded here (sanitizer build): "
              "covered by the plain build")
        return
    with Server() as srv:
        h = lib_connect(lib, srv)
        try:
            v, t = u32(), u64()
            for _ in range(2):
                assert lib.unread_cnt_incr_id(h, 4, 0, 3, 77, v, t) == 0
                assert (v.value, t.value) == (3, 3)
            for _ in range(2):
                assert lib.unread_cnt_ack(h, 4, 0, 77, v, t) == 0
                assert (v.value, t.value) == (0, 0)
            lib.unread_cnt_incr_id(h, 4, 1, 2, 78, v, t)
            gids = (u64 * 3)(1, 2, 3)
            assert lib.unread_grp_join_many(h, 4, gids, 3, t) == 0
            b = Badge()
            fams = (ctypes.c_char_p * 2)(b"grp", b"cnt")
            assert lib.unread_user_badge(h, 4, fams, 2, 1, b) == 0
            assert (b.badge, b.nparts, b.part[0].family, b.part[1].value,
                    b.expired) == (2, 2, b"grp", 2, 0)
            assert lib.unread_user_badge(h, 4, None, 0, 0, b) == 0
            assert b.nparts == 6 and b.part[5].family == b"feed"
            e = u64(9)
            assert lib.unread_grp_total_ex(h, 4, t, e) == 0
            assert (t.value, e.value) == (0, 0)
            uids = (u64 * 2500)(*[i % 7 for i in range(2500)])
            out = (u64 * 2500)()
            assert lib.unread_user_mbadge(h, uids, 2500, out) == 0
            assert [out[i] for i in range(8)] == [0, 0, 0, 0, 2, 0, 0, 0]
            assert lib.unread_cnt_mtotal(h, uids, 2500, out) == 0
            assert out[2499] == (2 if 2499 % 7 == 4 else 0)
            st = Status()
            assert lib.unread_user_status(h, 4, st) == 0
            assert st.state == 1 and st.last_active_ms > 0  # GRP: tracked
            assert lib.unread_bc_read_upto(h, 4, 1, 5, t) == 0
            assert t.value == 0
        finally:
            lib.unread_close(h)


def test_cluster_splits_many_users_by_shard():
    """unread-cli --cluster routes as libunread does: a USER.MBADGE or
    CNT.MTOTAL of users on three shards comes back in the caller's order,
    each shard having seen only its own users."""
    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(Server()) for _ in range(3)]
        lst = ",".join("127.0.0.1:%d" % s.port for s in servers)

        def cli(*args, input=None):
            p = subprocess.run([UNREAD_CLI, "--cluster", lst] +
                               [str(a) for a in args], input=input,
                               capture_output=True, text=True, timeout=30)
            assert p.returncode == 0, p.stderr
            return p.stdout.split()

        uids = list(range(1, 61))
        script = "".join("CNT.INCR %d 0 %d\nCONV.INCR %d 1 %d\n" %
                         (u, u, u, 2 * u) for u in uids)
        cli(input=script)
        order = [37, 2, 59, 11, 1, 60, 25, 999]
        want = [3 * u if u <= 60 else 0 for u in order]
        assert cli("USER.MBADGE", *order) == [str(min(w, 100)) for w in want]
        assert cli("CNT.MTOTAL", *order) == \
            [str(u if u <= 60 else 0) for u in order]
        held = [s.resp().cmd("CNT.MTOTAL", *uids) for s in servers]
        assert all(sum(1 for h in held if h[i]) == 1
                   for i in range(len(uids)))  # each user on one shard
        assert sorted(cli("CONV.MTOTAL", *uids), key=int) == \
            [str(2 * u) for u in uids]
