"""Inactive-user expiry (docs/OPERATIONS.md, "Users and expiry") with the
debug clock: each family in expire-families is forgotten and reads as new,
kept families are kept, an active user is kept; expire-families and
inactive-days settings; the activity table survives restarts (snapshot and
journal) and expiries replay exactly after kill -9; a sweep of 100,000
users does not stall a client (bench/expiry_sweep.py runs it with 1M).

load_users and sweep_latency are shared with bench/expiry_sweep.py.
"""

import os
import signal
import socket
import threading
import time

from harness import Server, assert_err, info_dict

DAY = 86400
SPEC_DEFAULT = "grp bc dot feed"


def mem(c):
    return info_dict(c.cmd("INFO", "memory"))["memory"]


def expiry(c):
    return info_dict(c.cmd("INFO", "expiry"))["expiry"]


def wait_expired(srv, c, users, timeout=20.0):
    """Waits until `users` users were expired in all and no sweep runs."""
    def done():
        e = expiry(c)
        return int(e["expired_users"]) >= users and \
            e["sweep_in_progress"] == "0"
    srv.wait_for(done, timeout, "%d users expired" % users)
    return expiry(c)


def wait_sweep(srv, c, before, timeout=20.0):
    """Waits until a sweep after the `before`th one completed: what a
    check that a sweep expired nothing (more) awaits, rather than a fixed
    sleep that a loaded machine can outrun."""
    def done():
        e = expiry(c)
        return int(e["sweeps"]) > before and e["sweep_in_progress"] == "0"
    srv.wait_for(done, timeout, "sweep %d to complete" % (before + 1))
    return expiry(c)


def sweeps(c):
    return int(expiry(c)["sweeps"])


def seed(c, uid):
    """State in every family for uid, without reading anything back."""
    assert c.cmd("BC.UNREAD", uid, 1) == 0     # registered at head 0
    assert c.cmd("GRP.JOIN", uid, 5) == 0
    assert c.cmd("DOT.CLICK", uid, 3) == 0
    assert c.cmd("FEED.FOLLOW", uid, 9) == 1
    assert c.cmd("CNT.INCR", uid, "mention", 3) == [3, 3]
    assert c.cmd("CONV.SEQ", uid, 77, 4)[0] == 4
    assert c.cmd("RCPT.JOIN", 500, uid) >= 0


def publish_all(c):
    """Something new in every global object the seeded users follow."""
    c.cmd("BC.PUBLISH", 1)
    c.cmd("BC.PUBLISH", 1)
    c.cmd("GRP.POST", 5)
    c.cmd("FEED.POST", 9, 2)
    c.cmd("DOT.PUSH", 3)


def state(c, uid):
    """What each family answers for uid (reading marks it active)."""
    return {
        "bc": c.cmd("BC.UNREAD", uid, 1),
        "grp": c.cmd("GRP.UNREAD", uid, 5),
        "dot": c.cmd("DOT.CHECK", uid, 3)[0],
        "feed": c.cmd("FEED.UNREAD", uid),
        "cnt": c.cmd("CNT.TOTAL", uid),
        "conv": c.cmd("CONV.TOTAL", uid),
    }


KEPT = {"bc": 2, "grp": 1, "dot": 1, "feed": 2, "cnt": 3, "conv": 4}


def test_expiry_forgets_expire_families_and_keeps_the_rest():
    with Server(enable_debug_command="yes") as srv, srv.resp() as c:
        seed(c, 1)
        seed(c, 2)
        c.cmd("DEBUG", "ADVANCE-CLOCK", 20 * DAY)
        assert c.cmd("CNT.TOTAL", 2) == 3          # user 2 active on day 20
        publish_all(c)
        c.cmd("DEBUG", "ADVANCE-CLOCK", 11 * DAY)  # user 1: 31 days
        e = wait_expired(srv, c, 1)
        assert e["expired_bc_entries"] == "1"
        assert e["expired_grp_entries"] == "1"
        assert e["expired_dot_entries"] == "1"
        assert e["expired_feed_entries"] == "1"
        assert e["expired_cnt_entries"] == "0"
        assert e["expired_conv_entries"] == "0"
        assert e["expire_families"] == SPEC_DEFAULT
        # Expired families read as new, except that a dot pushed before
        # the expiry reads as clicked (as BC reads as seen); CNT and CONV
        # (and RCPT) are kept.
        assert state(c, 1) == {"bc": 0, "grp": 0, "dot": 0, "feed": 0,
                               "cnt": 3, "conv": 4}
        assert c.cmd("GRP.LIST", 1) == []
        assert c.cmd("RCPT.SEND", 500, 1000, 99) == 2
        assert state(c, 2) == KEPT
        # Registered again at the head: only later publishes count.
        c.cmd("BC.PUBLISH", 1)
        assert c.cmd("BC.UNREAD", 1, 1) == 1
        assert c.cmd("DEBUG", "AUDIT") == 0
        assert c.cmd("INFO", "commandstats").count(b"cmdstat_user.expire:") == 1


def test_only_expiring_families_start_tracking_a_user():
    """A user enters the activity table through a command of a family in
    expire-families; after that every user command keeps it active. A
    CNT/CONV-only user (nothing that could expire) costs no entry."""
    with Server(enable_debug_command="yes") as srv, srv.resp() as c:
        assert c.cmd("CNT.INCR", 1, "mention", 3) == [3, 3]
        assert c.cmd("CONV.SEQ", 1, 77, 4)[0] == 4
        assert c.cmd("CNT.TOTAL", 1) == 3
        assert expiry(c)["active_users"] == "0"
        assert c.cmd("USER.INFO", 1)[-1].startswith(b"active: not tracked")
        assert c.cmd("BC.UNREAD", 1, 1) == 0       # BC expires: tracked
        assert expiry(c)["active_users"] == "1"
        c.cmd("DEBUG", "ADVANCE-CLOCK", 20 * DAY)
        assert c.cmd("CNT.TOTAL", 1) == 3          # kept active by CNT
        c.cmd("BC.PUBLISH", 1)
        n = sweeps(c)
        c.cmd("DEBUG", "ADVANCE-CLOCK", 20 * DAY)  # 20 days since CNT.TOTAL
        assert wait_sweep(srv, c, n)["expired_users"] == "0"
        assert c.cmd("BC.UNREAD", 1, 1) == 1
    with Server(expire_families="cnt") as srv, srv.resp() as c:
        assert c.cmd("CNT.INCR", 1, "mention", 3) == [3, 3]
        assert c.cmd("BC.UNREAD", 2, 1) == 0
        assert expiry(c)["active_users"] == "1"     # user 1 only


def test_configured_families_and_thresholds():
    with Server(enable_debug_command="yes", expire_families="cnt,CONV",
                inactive_days=3) as srv, srv.resp() as c:
        assert c.cmd("CONFIG", "GET", "expire-families") == \
            [b"expire-families", b"cnt conv"]
        seed(c, 1)
        n = sweeps(c)
        c.cmd("DEBUG", "ADVANCE-CLOCK", 3 * DAY)
        # exactly 3 days: not more than inactive-days
        assert wait_sweep(srv, c, n)["expired_users"] == "0"
        c.cmd("DEBUG", "ADVANCE-CLOCK", DAY)
        wait_expired(srv, c, 1)
        publish_all(c)
        assert state(c, 1) == {"bc": 2, "grp": 1, "dot": 1, "feed": 2,
                               "cnt": 0, "conv": 0}
    for families, days in (("none", 30), (SPEC_DEFAULT, 0)):
        with Server(enable_debug_command="yes", expire_families=families,
                    inactive_days=days) as srv, srv.resp() as c:
            seed(c, 1)
            c.cmd("DEBUG", "ADVANCE-CLOCK", 400 * DAY)
            # expiry off: no sweep ever starts (nothing to await), and
            # none has
            e = expiry(c)
            assert e["expired_users"] == e["sweeps"] == "0", e
            publish_all(c)
            assert state(c, 1) == KEPT


def test_bad_settings_are_refused():
    from test_persistence import Dir
    with Dir() as d:
        for key, value in (("expire-families", "rcpt"),
                           ("expire-families", "bc nope"),
                           ("inactive-days", "-1"),
                           ("inactive-days", "x"),
                           ("maxmemory", "12qb"),
                           ("metrics-port", "70000")):
            err = d.start_fails(**{key.replace("-", "_"): value})
            assert key in err, err


def test_advance_clock_is_a_test_hook():
    with Server(enable_debug_command="no") as srv, srv.resp() as c:
        assert_err(c.cmd("DEBUG", "ADVANCE-CLOCK", 10), "ERR")
        assert "enable-debug-command" in c.cmd("DEBUG", "ADVANCE-CLOCK", 10)
    with Server(enable_debug_command="yes") as srv, srv.resp() as c:
        assert c.cmd("DEBUG", "ADVANCE-CLOCK", DAY) == DAY
        assert c.cmd("DEBUG", "ADVANCE-CLOCK", 10) == DAY + 10
        assert_err(c.cmd("DEBUG", "ADVANCE-CLOCK", "-5"), "ERR")
        assert_err(c.cmd("DEBUG", "ADVANCE-CLOCK"), "ERR")
        assert_err(c.cmd("DEBUG", "ADVANCE-CLOCK", 10 ** 12), "ERR")
        # Default timestamps follow the moved clock.
        now_ms = int(time.time() * 1000)
        ts = c.cmd("DOT.PUSH", 1)
        assert ts - now_ms >= (DAY + 10) * 1000 - 5000


def test_user_expire_is_a_command_like_any_other():
    with Server() as srv, srv.resp() as c:
        seed(c, 1)
        assert c.cmd("USER.EXPIRE", 1, "bc", "feed") == 2
        assert c.cmd("USER.EXPIRE", 1, "bc") == 0
        for bad in (("USER.EXPIRE", 1), ("USER.EXPIRE", 1, "rcpt"),
                    ("USER.EXPIRE", 1, "nope"), ("USER.EXPIRE", "x", "bc"),
                    ("USER.EXPIRE", -1, "bc")):
            assert_err(c.cmd(*bad), "ERR")
        with srv.bin() as b:
            assert b.call("USER.EXPIRE", 1, "grp", "dot") == 2
            assert b.call("USER.EXPIRE", 2 ** 63 - 1, "cnt") == 0
        e = expiry(c)
        assert e["expired_users"] == "4"
        assert e["expired_bc_entries"] == "1"


def test_activity_and_expiries_survive_restarts():
    """The activity table is in the snapshot and rebuilt by the journal;
    expiries, USER.DEL and FLUSHALL replay exactly after kill -9."""
    from test_persistence import Dir
    with Dir() as d:
        srv = d.start(enable_debug_command="yes", journal_fsync="always")
        with srv.resp() as c:
            for uid in range(1, 6):
                seed(c, uid)
            c.cmd("SAVE")                       # the table in the snapshot
            c.cmd("DEBUG", "ADVANCE-CLOCK", 20 * DAY)
            for uid in (2, 3):
                c.cmd("CNT.GET", uid, 0)         # a read: journaled once a day
                c.cmd("CNT.GET", uid, 0)
            c.cmd("DEBUG", "ADVANCE-CLOCK", 11 * DAY)
            wait_expired(srv, c, 3)              # users 1, 4 and 5
            assert c.cmd("USER.DEL", 3) > 0
            before = {uid: c.cmd("USER.INFO", uid) for uid in range(1, 6)}
            active = expiry(c)["active_users"]
            assert active == "1"                 # user 2
        srv.kill9()
        srv = d.start()
        with srv.resp() as c:
            after = {uid: c.cmd("USER.INFO", uid) for uid in range(1, 6)}
            e = expiry(c)
            assert e["active_users"] == active
            assert c.cmd("DEBUG", "AUDIT") == 0
            c.cmd("FLUSHALL")
        srv.kill9()
        srv = d.start()
        with srv.resp() as c:
            info = info_dict(c.cmd("INFO", "memory"))["memory"]
            assert info["activity_users"] == "0"
            assert info["cnt_users"] == "0"
            assert info["rcpt_messages"] == "0"
        srv.stop()
        # "active:" lines say "N days ago" by the clock, which moved back.
        for uid in before:
            strip = [l for l in before[uid] if not l.startswith(b"active:")]
            assert strip == [l for l in after[uid]
                             if not l.startswith(b"active:")], uid


# --------------------------------------------------------------------------
# A sweep's cost to clients (shared with bench/expiry_sweep.py).


def load_users(port, n, batch=20000):
    """Registers uids 1..n in BC channel 1 and in DOT 1 (two entries in
    expire-families each, and an activity entry), pipelined over raw RESP:
    one write per batch, replies counted as lines."""
    s = socket.create_connection(("127.0.0.1", port))
    bc = b"*3\r\n$9\r\nBC.UNREAD\r\n$%d\r\n%d\r\n$1\r\n1\r\n"
    dot = b"*4\r\n$9\r\nDOT.CLICK\r\n$%d\r\n%d\r\n$1\r\n1\r\n$1\r\n5\r\n"
    for lo in range(1, n + 1, batch):
        hi = min(n + 1, lo + batch)
        parts = []
        for uid in range(lo, hi):
            k = len(str(uid))
            parts.append(bc % (k, uid))
            parts.append(dot % (k, uid))
        s.sendall(b"".join(parts))
        want, got = 2 * (hi - lo), 0
        while got < want:
            data = s.recv(1 << 20)
            assert data, "server closed"
            assert b"-" not in data, data[:200]
            got += data.count(b"\n")
    s.close()


def sweep_latency(srv, c, n):
    """Moves the clock past inactive-days and pings, one request at a
    time, until the sweep expired n users. Returns (ping latencies in
    seconds, INFO expiry after)."""
    lat, errors = [], []
    stop = threading.Event()

    def pinger():
        p = socket.create_connection(("127.0.0.1", srv.port))
        p.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while not stop.is_set():
            t0 = time.perf_counter()
            p.sendall(b"PING\r\n")
            got = p.recv(64)
            if got != b"+PONG\r\n":
                errors.append(got)
                break
            lat.append(time.perf_counter() - t0)
        p.close()

    t = threading.Thread(target=pinger)
    t.start()
    try:
        time.sleep(0.2)
        c.cmd("DEBUG", "ADVANCE-CLOCK", 31 * DAY)
        e = wait_expired(srv, c, n, timeout=600)
    finally:
        stop.set()
        t.join()
    assert not errors, errors
    return lat, e


def test_sweep_of_100k_users_does_not_stall_clients():
    n = 100000
    with Server(enable_debug_command="yes", save_seconds=0) as srv, \
            srv.resp() as c:
        load_users(srv.port, n)
        assert expiry(c)["active_users"] == str(n)
        lat, e = sweep_latency(srv, c, n)
        assert e["expired_users"] == str(n)
        assert e["active_users"] == "0"
        assert e["expired_bc_entries"] == str(n)
        assert e["expired_dot_entries"] == str(n)
        # The sweep is sliced: many timer runs, with clients served in
        # between (the pinger's round trips went on during it). How long a
        # slice takes is a figure of the benchmark (bench/expiry_sweep.py),
        # not of a test on a shared machine.
        assert int(e["sweep_cycles"]) >= 10, e
        assert len(lat) > 100
        assert c.cmd("DEBUG", "AUDIT") == 0


test_sweep_of_100k_users_does_not_stall_clients.timeout = 120
test_activity_and_expiries_survive_restarts.timeout = 60


def test_bc_keeps_the_days_of_its_users():
    """A user registered in BC keeps its day in BC's entries, not in the
    activity table (bc.h, "Activity days"): it is tracked, refreshed by any
    command, expired, saved and replayed the same, whichever holds it."""
    from test_persistence import Dir

    with Dir() as d:
        srv = d.start(enable_debug_command="yes", journal_fsync="always")
        with srv.resp() as c:
            empty = int(mem(c)["activity_bytes"])
            for uid in (1, 2, 3):                 # BC users, two channels
                assert c.cmd("BC.UNREAD", uid, 1) == 0
                assert c.cmd("BC.READ", uid, 2) == 0
            assert c.cmd("GRP.JOIN", 4, 5) == 0   # in the table, then BC
            assert c.cmd("BC.READ", 4, 1) == 0
            assert expiry(c)["active_users"] == "4"
            m = mem(c)
            assert m["activity_users"] == "4"
            assert int(m["activity_bytes"]) < empty + 200  # one user's entry
            assert c.cmd("USER.STATUS", 1)[0] == b"active"
            c.cmd("SAVE")
            c.cmd("DEBUG", "ADVANCE-CLOCK", 20 * DAY)
            c.cmd("CNT.GET", 2, 0)                # another family keeps 2
            assert c.cmd("BC.UNREAD", 3, 2) == 0  # a BC read keeps 3
            assert c.cmd("GRP.UNREAD", 4, 5) == 0
            c.cmd("DEBUG", "ADVANCE-CLOCK", 11 * DAY)
            e = wait_expired(srv, c, 1)           # user 1, from both channels
            assert e["expired_bc_entries"] == "2"
            assert e["active_users"] == "3"
            assert c.cmd("USER.STATUS", 1)[0] == b"expired"
            assert c.cmd("USER.STATUS", 2)[0] == b"active"
            status = {uid: c.cmd("USER.STATUS", uid) for uid in (2, 3, 4)}
            assert c.cmd("DEBUG", "AUDIT") == 0
        srv.kill9()                                # snapshot + journal
        srv = d.start(enable_debug_command="yes")
        with srv.resp() as c:
            assert expiry(c)["active_users"] == "3"
            assert {uid: c.cmd("USER.STATUS", uid)
                    for uid in (2, 3, 4)} == status
            assert c.cmd("DEBUG", "AUDIT") == 0
            c.cmd("SAVE")
        srv.stop()
        srv = d.start(enable_debug_command="yes")  # the snapshot alone
        with srv.resp() as c:
            assert expiry(c)["active_users"] == "3"
            assert {uid: c.cmd("USER.STATUS", uid)
                    for uid in (2, 3, 4)} == status
            assert c.cmd("DEBUG", "AUDIT") == 0
            # This server's clock starts from the system's again: the days
            # kept are 31 ahead of it.
            c.cmd("DEBUG", "ADVANCE-CLOCK", 80 * DAY)
            e = wait_expired(srv, c, 3)
            assert e["active_users"] == "0"
            assert mem(c)["bc_subscriptions"] == "0"
            assert c.cmd("DEBUG", "AUDIT") == 0
        srv.stop()


def test_bc_user_untracked_when_bc_is_kept():
    """With BC outside expire-families, a user's expiry erases its day
    from BC's entries too: it is no longer tracked and expires once."""
    with Server(enable_debug_command="yes", expire_families="grp") as srv, \
            srv.resp() as c:
        assert c.cmd("BC.READ", 1, 1) == 0         # BC alone: not tracked
        assert expiry(c)["active_users"] == "0"
        assert c.cmd("GRP.JOIN", 1, 5) == 0        # tracked, day in BC's
        assert expiry(c)["active_users"] == "1"
        assert c.cmd("BC.UNREAD", 1, 2) == 0       # a new channel: same day
        c.cmd("DEBUG", "ADVANCE-CLOCK", 31 * DAY)
        e = wait_expired(srv, c, 1)
        assert e["expired_grp_entries"] == "1"
        assert e["expired_bc_entries"] == "0"
        assert e["active_users"] == "0"
        c.cmd("BC.PUBLISH", 1)
        assert c.cmd("BC.UNREAD", 1, 1) == 1       # BC kept
        assert expiry(c)["active_users"] == "0"
        n = sweeps(c)
        c.cmd("DEBUG", "ADVANCE-CLOCK", 31 * DAY)
        assert wait_sweep(srv, c, n)["expired_users"] == "1"   # not again
        assert c.cmd("DEBUG", "AUDIT") == 0


def test_bc_user_day_moves_to_the_table_on_other_families():
    """A user of BC alone keeps its day in BC's entries, refreshed there by
    BC commands and USER.BADGE; its first command of another family moves
    the day to the activity table (one lookup a command from then on)."""
    with Server(enable_debug_command="yes") as srv, srv.resp() as c:
        def table_bytes():
            return int(info_dict(c.cmd("INFO", "memory"))["memory"]
                       ["activity_bytes"])

        assert c.cmd("BC.READ", 7, 1) == 0
        empty = table_bytes()
        c.cmd("DEBUG", "ADVANCE-CLOCK", 20 * DAY)
        c.cmd("USER.BADGE", 7)
        assert c.cmd("BC.READ", 8, 2) == 0            # a user new today
        assert table_bytes() == empty                  # both in BC's entries
        today = c.cmd("USER.STATUS", 8)[1]
        assert c.cmd("USER.STATUS", 7)[:2] == [b"active", today]
        assert expiry(c)["active_users"] == "2"
        assert c.cmd("CNT.GET", 7, 0) == 0             # another family
        assert table_bytes() > empty                   # moved to the table
        assert c.cmd("USER.STATUS", 7)[:2] == [b"active", today]
        assert expiry(c)["active_users"] == "2"
        assert c.cmd("DEBUG", "AUDIT") == 0
        c.cmd("DEBUG", "ADVANCE-CLOCK", 31 * DAY)
        e = wait_expired(srv, c, 2)
        assert e["active_users"] == "0"
        assert e["expired_bc_entries"] == "2"


def test_dot_keeps_the_days_of_its_users():
    """A user with clicks keeps its day in DOT's map entry (dot.h,
    "Activity days"), not in the activity table: tracked, refreshed by DOT
    commands, expired (a dot it dismissed stays dismissed), saved and
    replayed the same; a command of another family moves it to the table."""
    from test_persistence import Dir

    with Dir() as d:
        srv = d.start(enable_debug_command="yes", journal_fsync="always")
        with srv.resp() as c:
            empty = int(mem(c)["activity_bytes"])
            c.cmd("DOT.PUSH", 3)
            assert c.cmd("DOT.CLICK", 1, 3) == 0      # dismissed
            for dot in (3, 4, 5):
                assert c.cmd("DOT.CLICK", 2, dot) == 0
            assert c.cmd("DOT.CLICK", 4, 4) == 0
            assert expiry(c)["active_users"] == "3"
            assert int(mem(c)["activity_bytes"]) == empty  # all in DOT's
            assert c.cmd("USER.STATUS", 1)[0] == b"active"
            assert c.cmd("GRP.JOIN", 3, 5) == 0       # in the table
            assert c.cmd("DOT.CLICK", 3, 4) == 0      # stays there
            assert int(mem(c)["activity_bytes"]) > empty
            assert expiry(c)["active_users"] == "4"
            assert c.cmd("DEBUG", "AUDIT") == 0
            c.cmd("SAVE")
            c.cmd("DEBUG", "ADVANCE-CLOCK", 20 * DAY)
            assert c.cmd("DOT.CHECK", 2, 4) == [0]     # refreshed in DOT
            assert c.cmd("GRP.UNREAD", 3, 5) == 0
            today = c.cmd("USER.STATUS", 2)[1]
            c.cmd("DEBUG", "ADVANCE-CLOCK", 11 * DAY)
            e = wait_expired(srv, c, 2)               # users 1 and 4
            assert e["expired_users"] == "2"
            assert e["expired_dot_entries"] == "2"
            assert e["active_users"] == "2"
            assert c.cmd("USER.STATUS", 1)[0] == b"expired"
            assert c.cmd("USER.STATUS", 2)[:2] == [b"active", today]
            assert c.cmd("DOT.CHECK", 1, 3) == [0]     # still dismissed
            status = {uid: c.cmd("USER.STATUS", uid) for uid in (1, 2, 3, 4)}
            assert c.cmd("DEBUG", "AUDIT") == 0
        srv.kill9()                                # snapshot + journal
        srv = d.start(enable_debug_command="yes")
        with srv.resp() as c:
            assert {uid: c.cmd("USER.STATUS", uid)
                    for uid in (1, 2, 3, 4)} == status
            assert c.cmd("DEBUG", "AUDIT") == 0
            c.cmd("SAVE")
        srv.stop()
        srv = d.start(enable_debug_command="yes")  # the snapshot alone
        with srv.resp() as c:
            assert {uid: c.cmd("USER.STATUS", uid)
                    for uid in (1, 2, 3, 4)} == status
            assert c.cmd("DEBUG", "AUDIT") == 0
            c.cmd("DEBUG", "ADVANCE-CLOCK", 80 * DAY)
            e = wait_expired(srv, c, 3)               # 1 (read), 2 and 3
            assert e["active_users"] == "0"
            assert mem(c)["dot_clicks"] == "0"
            assert c.cmd("DEBUG", "AUDIT") == 0
        srv.stop()


def sweep_two_holders(srv, c, uids, fam_a, enter_a, fam_b, enter_b):
    """Two families that keep their users' days (days.h): uids[0] enters
    a then b (its day in a's entry, then in the table), uids[1] b then a,
    uids[2] a alone, uids[3] b alone. 31 days on, each of the four expires
    once, three entries from each family. enter_x(uid) is the command's
    reply checked."""
    u1, u2, u3, u4 = uids
    for enter, uid in ((enter_a, u1), (enter_b, u1), (enter_b, u2),
                       (enter_a, u2), (enter_a, u3), (enter_b, u4)):
        assert enter(uid), uid
    assert expiry(c)["active_users"] == "4"
    assert c.cmd("DEBUG", "AUDIT") == 0
    c.cmd("DEBUG", "ADVANCE-CLOCK", 31 * DAY)
    e = wait_expired(srv, c, 4)
    assert e["expired_users"] == "4"
    assert e["expired_%s_entries" % fam_a] == "3"
    assert e["expired_%s_entries" % fam_b] == "3"
    assert e["active_users"] == "0"


def test_user_in_bc_and_dot_is_swept_once():
    """A user of BC and DOT has its day in one place (DOT's entry, BC's
    entries or the table, days.h): the sweep walks each place once, so it
    expires once, from both families when both expire."""
    with Server(enable_debug_command="yes", expire_families="dot") as srv, \
            srv.resp() as c:
        assert c.cmd("BC.READ", 1, 1) == 0         # BC kept: not tracked
        assert c.cmd("DOT.CLICK", 1, 3) == 0       # the day in DOT's entry
        assert expiry(c)["active_users"] == "1"
        assert c.cmd("BC.UNREAD", 1, 2) == 0       # a kept family
        assert c.cmd("DEBUG", "AUDIT") == 0
        c.cmd("DEBUG", "ADVANCE-CLOCK", 31 * DAY)
        e = wait_expired(srv, c, 1)
        assert e["expired_users"] == "1"
        assert e["expired_dot_entries"] == "1"
        assert e["expired_bc_entries"] == "0"
        assert e["active_users"] == "0"
        c.cmd("BC.PUBLISH", 1)
        assert c.cmd("BC.UNREAD", 1, 1) == 1       # BC kept
        n = sweeps(c)
        c.cmd("DEBUG", "ADVANCE-CLOCK", 31 * DAY)
        assert wait_sweep(srv, c, n)["expired_users"] == "1"   # not again
        assert c.cmd("DEBUG", "AUDIT") == 0

    with Server(enable_debug_command="yes") as srv, srv.resp() as c:
        sweep_two_holders(
            srv, c, (5, 6, 8, 7),
            "bc", lambda uid: c.cmd("BC.READ", uid, 1 + (uid == 8)) == 0,
            "dot", lambda uid: c.cmd("DOT.CLICK", uid, 3) == 0)
        n = sweeps(c)
        c.cmd("DEBUG", "ADVANCE-CLOCK", 31 * DAY)
        assert wait_sweep(srv, c, n)["expired_users"] == "4"
        assert c.cmd("DEBUG", "AUDIT") == 0


# GRP and FEED keep a user's day in the tag of their map's slot: how a
# user gets into each family, how it leaves it, and the entry's name.
LISTS = {
    "grp": (lambda c, uid, x: c.cmd("GRP.JOIN", uid, x),
            lambda c, uid, x: c.cmd("GRP.LEAVE", uid, x),
            lambda c, uid, x: c.cmd("GRP.UNREAD", uid, x), "grp_memberships"),
    "feed": (lambda c, uid, x: c.cmd("FEED.FOLLOW", uid, x),
             lambda c, uid, x: c.cmd("FEED.UNFOLLOW", uid, x),
             lambda c, uid, x: c.cmd("FEED.UNREAD", uid), "feed_follows"),
}


def test_grp_and_feed_keep_the_days_of_their_users():
    """A user of GRP or FEED alone keeps its day beside its list in the
    family's map (days.h), not in the activity table: tracked, refreshed
    by the family's commands, expired, saved and replayed the same. A
    command of another family moves it to the table; a user who leaves its
    last group (unfollows its last author) keeps its day, in the table."""
    from test_persistence import Dir

    for fam, (enter, leave, read, entries) in sorted(LISTS.items()):
        with Dir() as d:
            srv = d.start(enable_debug_command="yes", journal_fsync="always")
            with srv.resp() as c:
                empty = int(mem(c)["activity_bytes"])
                for uid in (1, 2, 3):
                    enter(c, uid, 10 + uid)
                enter(c, 2, 20)                        # a list of two
                assert expiry(c)["active_users"] == "3"
                assert int(mem(c)["activity_bytes"]) == empty, fam
                assert c.cmd("USER.STATUS", 1)[0] == b"active"
                enter(c, 4, 11)
                assert c.cmd("CNT.GET", 4, 0) == 0     # to the table
                assert int(mem(c)["activity_bytes"]) > empty
                enter(c, 5, 11)
                enter(c, 5, 12)
                leave(c, 5, 11)
                day5 = c.cmd("USER.STATUS", 5)
                leave(c, 5, 12)                        # its list is gone:
                assert expiry(c)["active_users"] == "5"  # still tracked
                assert c.cmd("USER.STATUS", 5) == day5
                assert c.cmd("USER.STATUS", 5)[0] == b"active"
                assert c.cmd("DEBUG", "AUDIT") == 0
                c.cmd("SAVE")
                c.cmd("DEBUG", "ADVANCE-CLOCK", 20 * DAY)
                read(c, 2, 12)                         # refreshed in place
                today = c.cmd("USER.STATUS", 2)[1]
                c.cmd("DEBUG", "ADVANCE-CLOCK", 11 * DAY)
                e = wait_expired(srv, c, 4)            # 1, 3, 4 and 5
                assert e["active_users"] == "1", fam
                assert e["expired_%s_entries" % fam] == "3"
                assert c.cmd("USER.STATUS", 2)[:2] == [b"active", today]
                assert mem(c)[entries] == "2"
                status = {uid: c.cmd("USER.STATUS", uid)
                          for uid in (1, 2, 3, 4, 5)}
                assert c.cmd("DEBUG", "AUDIT") == 0
            srv.kill9()                                # snapshot + journal
            srv = d.start(enable_debug_command="yes")
            with srv.resp() as c:
                assert {uid: c.cmd("USER.STATUS", uid)
                        for uid in (1, 2, 3, 4, 5)} == status
                assert int(mem(c)["activity_bytes"]) == empty, fam
                assert c.cmd("DEBUG", "AUDIT") == 0
                c.cmd("SAVE")
            srv.stop()
            srv = d.start(enable_debug_command="yes")  # the snapshot alone
            with srv.resp() as c:
                assert {uid: c.cmd("USER.STATUS", uid)
                        for uid in (1, 2, 3, 4, 5)} == status
                assert c.cmd("DEBUG", "AUDIT") == 0
                c.cmd("DEBUG", "ADVANCE-CLOCK", 80 * DAY)
                e = wait_expired(srv, c, 1)
                assert e["active_users"] == "0"
                assert mem(c)[entries] == "0"
                assert c.cmd("DEBUG", "AUDIT") == 0
            srv.stop()


def test_days_in_grp_and_feed_are_swept_once_and_survive_flushall():
    """A user of GRP and FEED has its day in one place (days.h), so it
    expires once from both; after FLUSHALL a dropped day goes to the new
    activity table (the maps' drop goes to the table, not to the old db)."""
    with Server(enable_debug_command="yes") as srv, srv.resp() as c:
        sweep_two_holders(
            srv, c, (1, 2, 3, 4),
            "grp", lambda uid: c.cmd("GRP.JOIN", uid, 5) == 0,
            "feed", lambda uid: c.cmd("FEED.FOLLOW", uid, 9) == 1)
        assert c.cmd("FLUSHALL") == "OK"
        assert c.cmd("GRP.JOIN", 6, 5) == 0
        assert c.cmd("FEED.FOLLOW", 7, 9) == 1
        assert c.cmd("GRP.LEAVE", 6, 5) == 1
        assert c.cmd("FEED.UNFOLLOW", 7, 9) == 1
        assert expiry(c)["active_users"] == "2"    # both in the table
        assert c.cmd("USER.STATUS", 6)[0] == b"active"
        assert c.cmd("DEBUG", "AUDIT") == 0
        assert c.cmd("USER.DEL", 6) >= 0
        assert expiry(c)["active_users"] == "1"
        assert c.cmd("DEBUG", "AUDIT") == 0


def test_a_day_dropped_with_a_list_stays_tracked():
    """A day GRP keeps goes with the user's last membership to the activity
    table: a snapshot puts a user's day in the first family keeping days
    that has the user (sec_activity.c), here GRP's map for a user whose
    FEED follows are what expires; leaving the group (GRP kept, so its
    command tracks nobody) must not leave those follows untracked."""
    from test_persistence import Dir

    with Dir() as d:
        srv = d.start(enable_debug_command="yes", expire_families="feed")
        with srv.resp() as c:
            assert c.cmd("FEED.FOLLOW", 1, 9) == 1
            assert c.cmd("GRP.JOIN", 1, 5) == 0
            assert expiry(c)["active_users"] == "1"
            c.cmd("SAVE")
        srv.stop()
        srv = d.start(enable_debug_command="yes", expire_families="feed")
        with srv.resp() as c:
            empty = int(mem(c)["activity_bytes"])
            assert c.cmd("GRP.LEAVE", 1, 5) == 1
            assert int(mem(c)["activity_bytes"]) > empty  # to the table
            assert expiry(c)["active_users"] == "1"
            assert c.cmd("DEBUG", "AUDIT") == 0
            c.cmd("DEBUG", "ADVANCE-CLOCK", 31 * DAY)
            e = wait_expired(srv, c, 1)
            assert e["expired_feed_entries"] == "1"
            assert e["active_users"] == "0"
        srv.stop()
