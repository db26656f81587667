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
