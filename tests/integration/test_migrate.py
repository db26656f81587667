"""DUMP, RESTORE and MIGRATE: a user's whole state moves between two
servers as one user record (docs/PERSISTENCE.md "User record"), and bad
input gets clear errors with nothing changed.
"""

from harness import Server, Status, is_err
from test_persistence import Dir


def seed(c, uid):
    """State of uid in every family, and RCPT group uid."""
    assert c.cmd("CNT.INCR", uid, 1, 3) == [3, 3]
    assert c.cmd("CNT.INCR", uid, 2, 4) == [4, 7]
    assert c.cmd("CNT.INCR", uid, 3, 2, "ID", 77) == [2, 9]
    c.cmd("CONV.SEQ", uid, 70, 10)
    c.cmd("CONV.SEQ", uid, 71, 5)
    c.cmd("CONV.READ", uid, 71, 2)
    c.cmd("GRP.JOIN", uid, 900)
    c.cmd("GRP.JOIN", uid, 901)
    c.cmd("BC.READ", uid, 33)
    c.cmd("DOT.CLICK", uid, 44)
    c.cmd("FEED.FOLLOW", uid, 55)
    c.cmd("RCPT.JOIN", uid, uid)
    c.cmd("RCPT.JOIN", uid, uid + 1)
    c.cmd("RCPT.SEND", uid, 1000, uid)


def info(c, uid):
    # sorted: RCPT's groups come in the order of the server's map
    return sorted(c.cmd("USER.INFO", uid))


def test_dump_restore_every_family():
    with Server() as a, Server() as b:
        ca, cb = a.resp(), b.resp()
        seed(ca, 5)
        for c in (ca, cb):  # global objects: every primary holds them
            c.cmd("GRP.POST", 900)
            c.cmd("GRP.POST", 900)
        d = ca.cmd("DUMP", 5)
        assert isinstance(d, bytes) and d[:4] == b"URUR"
        assert cb.cmd("RESTORE", 5, 0, d) == Status("OK")
        assert info(ca, 5) == info(cb, 5)
        assert cb.cmd("CNT.GETALL", 5) == ca.cmd("CNT.GETALL", 5)
        assert cb.cmd("USER.STATUS", 5) == ca.cmd("USER.STATUS", 5)
        assert cb.cmd("USER.BADGE", 5) == ca.cmd("USER.BADGE", 5)
        assert cb.cmd("RCPT.COUNT", 5, 1000) == ca.cmd("RCPT.COUNT", 5, 1000)
        # the notice id moved: counting it again adds nothing
        assert cb.cmd("CNT.INCR", 5, 3, 2, "ID", 77) == [2, 9]
        # a dump of the restored user is the same record
        assert cb.cmd("DUMP", 5) == ca.cmd("DUMP", 5)
        assert cb.cmd("DEBUG", "AUDIT") == 0
        # nothing held: null
        assert ca.cmd("DUMP", 123456) is None


def test_restore_busykey_and_replace():
    with Server() as a:
        c = a.resp()
        seed(c, 8)
        d = c.cmd("DUMP", 8)
        r = c.cmd("RESTORE", 8, 0, d)
        assert is_err(r) and r.startswith("BUSYKEY Target key name already")
        c.cmd("CNT.INCR", 8, 1, 100)
        assert c.cmd("RESTORE", 8, 0, d, "REPLACE") == Status("OK")
        assert c.cmd("CNT.GET", 8, 1) == 3
        assert c.cmd("DEBUG", "AUDIT") == 0


def test_restore_bad_input():
    with Server() as a:
        c = a.resp()
        seed(c, 9)
        d = c.cmd("DUMP", 9)
        before = c.cmd("DUMP", 9)
        for cut in (0, 1, 19, 20, len(d) // 2, len(d) - 1):
            r = c.cmd("RESTORE", 10, 0, d[:cut])
            assert is_err(r) and "DUMP payload version or checksum" in r, r
        for i in range(0, len(d), max(1, len(d) // 40)):
            bad = bytearray(d)
            bad[i] ^= 0x10
            r = c.cmd("RESTORE", 10, 0, bytes(bad))
            assert is_err(r) and "DUMP payload version or checksum" in r, r
        r = c.cmd("RESTORE", 10, 0, d)  # another id's record
        assert is_err(r) and "of id 9, not 10" in r
        r = c.cmd("RESTORE", 10, 5000, d)
        assert is_err(r) and "ttl must be 0" in r
        r = c.cmd("RESTORE", 10, 0, d, "BOGUS")
        assert is_err(r) and "unknown RESTORE option" in r
        r = c.cmd("RESTORE", 10, 0)
        assert is_err(r) and "wrong number of arguments" in r
        r = c.cmd("RESTORE", "x", 0, d)
        assert is_err(r) and "key must be an integer" in r
        r = c.cmd("DUMP")
        assert is_err(r) and "wrong number of arguments" in r
        assert c.cmd("DUMP", 10) is None  # nothing was applied
        assert c.cmd("DUMP", 9) == before
        assert c.cmd("DEBUG", "AUDIT") == 0


def test_restore_group_behind_is_tryagain():
    with Server() as a, Server() as b:
        ca, cb = a.resp(), b.resp()
        ca.cmd("GRP.JOIN", 3, 900)
        ca.cmd("GRP.POST", 900)
        ca.cmd("GRP.POST", 900)
        ca.cmd("GRP.SEEN", 3, 900)
        d = ca.cmd("DUMP", 3)
        r = cb.cmd("RESTORE", 3, 0, d)  # b never got group 900's posts
        assert is_err(r) and r.startswith("TRYAGAIN") and "group 900" in r
        assert cb.cmd("DUMP", 3) is None


def test_migrate_moves_and_deletes():
    with Dir() as da, Dir() as db:
        a = da.start(appendfsync="always")
        b = db.start(appendfsync="always")
        ca, cb = a.resp(), b.resp()
        for uid in (21, 22, 23):
            seed(ca, uid)
        want = {u: info(ca, u) for u in (21, 22, 23)}
        r = ca.cmd("MIGRATE", "127.0.0.1", b.port, "", 0, 2000, "KEYS", 21,
                   22, 23, 24)
        assert r == Status("OK"), r
        for u in (21, 22, 23):
            assert ca.cmd("DUMP", u) is None
            assert info(cb, u) == want[u]
        assert ca.cmd("MIGRATE", "127.0.0.1", b.port, "", 0, 2000, "KEYS",
                      21) == Status("NOKEY")
        # one key form, COPY keeps it here
        seed(ca, 30)
        assert ca.cmd("MIGRATE", "127.0.0.1", b.port, 30, 0, 2000,
                      "COPY") == Status("OK")
        assert ca.cmd("DUMP", 30) == cb.cmd("DUMP", 30)
        # without REPLACE the target refuses: passed through, kept here
        r = ca.cmd("MIGRATE", "127.0.0.1", b.port, 30, 0, 2000)
        assert is_err(r) and "Target instance replied with error: BUSYKEY" in r
        assert ca.cmd("DUMP", 30) is not None
        # what redis-cli --cluster compares after a BUSYKEY: the same state
        # on both sides has the same digest, another state another one
        da_ = ca.cmd("DEBUG", "DIGEST-VALUE", 30, 21, 999)
        db_ = cb.cmd("DEBUG", "DIGEST-VALUE", 30, 21, 999)
        assert da_[0] == db_[0] and len(da_[0]) == 40 and da_[0] != b"0" * 40
        assert da_[1] == da_[2] == db_[2] == b"0" * 40  # moved away, none
        assert db_[1] != b"0" * 40
        cb.cmd("CNT.INCR", 30, 9)
        assert ca.cmd("DEBUG", "DIGEST-VALUE", 30) != \
            cb.cmd("DEBUG", "DIGEST-VALUE", 30)
        r = ca.cmd("DEBUG", "DIGEST-VALUE", "x")
        assert is_err(r) and "key must be an integer" in r
        assert ca.cmd("MIGRATE", "127.0.0.1", b.port, 30, 0, 2000,
                      "REPLACE") == Status("OK")
        assert ca.cmd("DUMP", 30) is None
        # killed and restarted: the target replays its RESTOREs, the source
        # its deletes (MIGRATED), MIGRATE itself is not replayed
        a.kill9()
        b.kill9()
        a = da.start(appendfsync="always")
        b = db.start(appendfsync="always")
        ca, cb = a.resp(), b.resp()
        for u in (21, 22, 23):
            assert ca.cmd("DUMP", u) is None
            assert info(cb, u) == want[u]
        assert ca.cmd("DEBUG", "AUDIT") == 0 and cb.cmd("DEBUG", "AUDIT") == 0


def test_migrate_replica_loses_it():
    with Server() as a, Server() as b, Server() as ra:
        ca = a.resp()
        cr = ra.resp()
        assert cr.cmd("REPLICAOF", "127.0.0.1", a.port) == Status("OK")
        seed(ca, 40)
        ra.wait_for(lambda: cr.cmd("DUMP", 40) is not None, what="replica")
        assert ca.cmd("MIGRATE", "127.0.0.1", b.port, 40, 0, 2000) == "OK"
        ra.wait_for(lambda: cr.cmd("DUMP", 40) is None, what="delete")
        r = cr.cmd("MIGRATE", "127.0.0.1", b.port, 40, 0, 2000)
        assert is_err(r) and r.startswith("READONLY")


def test_migrate_bad_input():
    with Server() as a, Server(requirepass="pw") as b:
        c = a.resp()
        seed(c, 50)
        dead = Server()
        dead.start()
        port = dead.port
        dead.stop()
        r = c.cmd("MIGRATE", "127.0.0.1", port, 50, 0, 500)
        assert is_err(r) and r.startswith("IOERR"), r
        # a target that refuses (no AUTH): its error passed through
        r = c.cmd("MIGRATE", "127.0.0.1", b.port, 50, 0, 1000)
        assert is_err(r) and "Target instance replied with error: NOAUTH" in r
        assert c.cmd("DUMP", 50) is not None
        r = c.cmd("MIGRATE", "127.0.0.1", b.port, 50, 0, 1000, "AUTH", "bad")
        assert is_err(r) and "Target instance replied with error" in r
        assert c.cmd("DUMP", 50) is not None
        assert c.cmd("MIGRATE", "127.0.0.1", b.port, 50, 0, 1000, "AUTH",
                     "pw") == Status("OK")
        assert c.cmd("DUMP", 50) is None
        for args, text in (
                (("127.0.0.1", b.port, 50, 1, 1000), "destination-db"),
                (("127.0.0.1", 0, 50, 0, 1000), "port"),
                (("127.0.0.1", b.port, 50, 0, 1000, "JUNK"), "syntax error"),
                (("127.0.0.1", b.port, 50, 0, 1000, "KEYS", 1),
                 "empty string"),
                (("127.0.0.1", b.port, "", 0, 1000), "no key"),
                (("127.0.0.1", b.port, "", 0, 1000, "KEYS", "zz"), "key"),
                (("127.0.0.1", b.port, 50), "wrong number of arguments")):
            r = c.cmd("MIGRATE", *args)
            assert is_err(r) and text in r, (args, r)


def test_cluster_move_to_importing_slot():
    """Between two cluster nodes with the slot MIGRATING on the source and
    IMPORTING on the target: a plain RESTORE is redirected, MIGRATE's
    RESTORE-ASKING lands; every family moves, group heads being held by
    every primary; the source answers ASK for the user afterwards and its
    replica loses it too."""
    from cluster_rig import Cluster, scratch_uid, slots_of
    from sentinel_rig import wait_until
    from test_cluster_migrate import users_in_slot

    with Cluster(masters=3, replicas=1) as cl:
        a, b, _ = cl.masters()
        aid, bid = a.myid(), b.myid()
        slot = sorted(slots_of(a))[3]
        u, other = users_in_slot(slot, 2)
        ca = a.resp()
        seed(ca, u)
        # a global write, by the group's owner: copied to every primary
        assert cl.owner(900).cmd("GRP.POST", 900) == 1
        probe = scratch_uid(b)
        b.cmd("GRP.JOIN", probe, 900)
        wait_until(lambda: any(x.startswith(b"grp 900: head=1") for x in
                               b.cmd("USER.INFO", probe)), 10,
                   "the group's copy on b")
        want = info(ca, u)
        rep = [n for n in cl.nodes if n not in (a, b) and
               [x for x in n.nodes() if "myself" in x["flags"]][0]["master"]
               == aid][0]
        d = ca.cmd("DUMP", u)
        wait_until(lambda: rep.cmd("CLUSTER", "COUNTKEYSINSLOT", slot) == 1,
                   10, "the replica to have the user")
        assert b.cmd("CLUSTER", "SETSLOT", slot, "IMPORTING", aid) == "OK"
        assert a.cmd("CLUSTER", "SETSLOT", slot, "MIGRATING", bid) == "OK"
        r = b.cmd("RESTORE", u, 0, d)
        assert is_err(r) and r.startswith("MOVED"), r
        assert ca.cmd("MIGRATE", "127.0.0.1", b.port, "", 0, 5000, "KEYS",
                      u, other) == "OK"
        r = ca.cmd("CNT.GET", u, 1)
        assert is_err(r) and r.startswith("ASK %d" % slot), r
        cb = b.resp()
        cb.cmd("ASKING")
        assert info(cb, u) == want
        # the replica applies the MIGRATED record: nothing left in the slot
        wait_until(lambda: rep.cmd("CLUSTER", "COUNTKEYSINSLOT", slot) == 0,
                   10, "the source's replica to delete the users")
        for n in cl.masters():
            assert n.cmd("CLUSTER", "SETSLOT", slot, "NODE", bid) == "OK"
        wait_until(lambda: cl.owner(u, via=a) is b, 10, "b owns the slot")
        assert sorted(b.cmd("USER.INFO", u)) == want
test_cluster_move_to_importing_slot.timeout = 120


def test_migrate_over_tls_cluster():
    """tls-cluster yes: MIGRATE reaches the target's announced TLS port
    over TLS (what redis-cli --cluster passes it); the plaintext port,
    spoken to in TLS, fails as IOERR with nothing moved."""
    from cluster_rig import Cluster, slots_of
    from test_cluster_migrate import users_in_slot
    from test_tls import certs

    with Cluster(masters=3, replicas=0, tls=certs()) as cl:
        a, b, _ = cl.masters()
        slot = sorted(slots_of(a))[5]
        (u,) = users_in_slot(slot, 1)
        assert a.cmd("CNT.INCR", u, 1, 6) == [6, 6]
        assert b.cmd("CLUSTER", "SETSLOT", slot, "IMPORTING",
                     a.myid()) == "OK"
        assert a.cmd("CLUSTER", "SETSLOT", slot, "MIGRATING",
                     b.myid()) == "OK"
        r = a.cmd("MIGRATE", "127.0.0.1", b.port, u, 0, 2000)
        assert is_err(r) and r.startswith("IOERR"), r
        assert a.cmd("CLUSTER", "COUNTKEYSINSLOT", slot) == 1
        assert a.cmd("MIGRATE", "127.0.0.1", b.config["tls_port"], u, 0,
                     2000) == "OK"
        assert a.cmd("CLUSTER", "COUNTKEYSINSLOT", slot) == 0
        assert b.cmd("CLUSTER", "COUNTKEYSINSLOT", slot) == 1
test_migrate_over_tls_cluster.timeout = 120


def test_migrate_delete_refused_leaves_both_sides():
    """The target took the user but the source may not write (here
    min-replicas-to-write with no replica): MIGRATE says so, the user
    stays on both sides, the source still serving it; once writes are
    allowed again MIGRATE ... REPLACE finishes the move."""
    with Server(min_replicas_to_write=1) as a, Server() as b:
        ca, cb = a.resp(), b.resp()
        # seeding needs writes: allowed until the limit is set
        assert ca.cmd("CONFIG", "SET", "min-replicas-to-write", 0) == "OK"
        seed(ca, 60)
        want = info(ca, 60)
        assert ca.cmd("CONFIG", "SET", "min-replicas-to-write", 1) == "OK"
        r = ca.cmd("MIGRATE", "127.0.0.1", b.port, 60, 0, 2000)
        assert is_err(r) and r.startswith("NOREPLICAS") and \
            "on both sides" in r, r
        assert info(ca, 60) == want and info(cb, 60) == want
        assert ca.cmd("CONFIG", "SET", "min-replicas-to-write", 0) == "OK"
        assert ca.cmd("MIGRATE", "127.0.0.1", b.port, 60, 0, 2000,
                      "REPLACE") == "OK"
        assert ca.cmd("DUMP", 60) is None and info(cb, 60) == want


def test_redis_cli_fix_settles_an_interrupted_move():
    """A move cut short: one user on both sides (the target has a copy,
    the source still serves it), one moved, one not yet. Stock
    redis-cli --cluster fix finishes it: the BUSYKEY of the user on both
    sides is settled by DEBUG DIGEST-VALUE (the same on both: REPLACE),
    and every user ends on exactly one node with its state whole."""
    from cluster_rig import Cluster, slots_of
    from test_cluster_migrate import users_in_slot

    with Cluster(masters=3, replicas=0) as cl:
        a, b, _ = cl.masters()
        slot = sorted(slots_of(a))[2]
        users = users_in_slot(slot, 3)
        ca = a.resp()
        for u in users:
            seed(ca, u)
        want = {u: info(ca, u) for u in users}
        assert b.cmd("CLUSTER", "SETSLOT", slot, "IMPORTING",
                     a.myid()) == "OK"
        assert a.cmd("CLUSTER", "SETSLOT", slot, "MIGRATING",
                     b.myid()) == "OK"
        assert ca.cmd("MIGRATE", "127.0.0.1", b.port, users[0], 0, 2000,
                      "COPY") == "OK"
        assert ca.cmd("MIGRATE", "127.0.0.1", b.port, users[1], 0,
                      2000) == "OK"
        out = cl.cli("--cluster", "fix", a.addr(), "--cluster-yes")
        assert "Checking key values on both nodes" in out, out[-2000:]
        assert "Replacing target keys" in out, out[-2000:]
        cl.wait_agree()
        owner = cl.owner(users[0])
        other = b if owner is a else a
        assert owner.cmd("CLUSTER", "COUNTKEYSINSLOT", slot) == len(users)
        assert other.cmd("CLUSTER", "COUNTKEYSINSLOT", slot) == 0
        for u in users:
            assert sorted(owner.cmd("USER.INFO", u)) == want[u], u
        for n in (a, b):
            me = [x for x in n.nodes() if "myself" in x["flags"]][0]
            assert not any(s.startswith("[") for s in me["slots"]), me
test_redis_cli_fix_settles_an_interrupted_move.timeout = 120
