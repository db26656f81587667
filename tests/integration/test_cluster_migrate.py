"""Cluster mode: the migration states (CLUSTER SETSLOT IMPORTING /
MIGRATING / STABLE / NODE), the ASK / TRYAGAIN / ASKING routing of a slot
in motion over RESP and the binary protocol, the states kept across a
restart and carried to a replica that sentinel (here: REPLICAOF NO ONE)
promotes, the per-slot key index behind COUNTKEYSINSLOT / GETKEYSINSLOT,
and the errors of each, with Redis's texts (docs/OPERATIONS.md "Cluster",
docs/PROTOCOL.md "Cluster")."""

import os
import re

from harness import Bin, Resp, assert_err, info_flat, is_err, opcode
from test_batch import batch
from cluster_rig import Cluster, key_slot, slots_of
from sentinel_rig import wait_until


def err_text(reply):
    return reply.text if hasattr(reply, "text") else str(reply)


def me_line(node):
    return [x for x in node.nodes() if "myself" in x["flags"]][0]


def _table():
    t = []
    for i in range(256):
        crc = i << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
        t.append(crc & 0xFFFF)
    return t


_T = _table()


def fast_slot(u):
    crc = 0
    for b in str(u).encode():
        crc = ((crc << 8) & 0xFFFF) ^ _T[(crc >> 8) ^ b]
    return crc % 16384


def users_in_slot(slot, n, start=1):
    out, u = [], start
    while len(out) < n:
        if fast_slot(u) == slot:
            out.append(u)
        u += 1
    assert all(key_slot(x) == slot for x in out)
    return out


def test_setslot_states_routing_and_errors():
    with Cluster(masters=3, replicas=1) as cl:
        a, b, c3 = cl.masters()
        aid, bid = a.myid(), b.myid()
        # a slot of a with two users held there, one free id of it
        slot = sorted(slots_of(a))[7]
        held1, held2, free, free2 = users_in_slot(slot, 4)
        for u in (held1, held2):
            assert a.cmd("CNT.INCR", u, "dm") == [1, 1]
        assert a.cmd("CLUSTER", "COUNTKEYSINSLOT", slot) == 2
        assert a.cmd("CLUSTER", "GETKEYSINSLOT", slot, 10) == \
            [str(held1).encode(), str(held2).encode()]
        assert a.cmd("CLUSTER", "GETKEYSINSLOT", slot, 1) == \
            [str(held1).encode()]
        assert b.cmd("CLUSTER", "COUNTKEYSINSLOT", slot) == 0
        rep_a = [n for n in cl.nodes
                 if me_line(n)["master"] == aid][0]

        # Bad input, with Redis's texts.
        def e(node, *args):
            r = node.cmd("CLUSTER", "SETSLOT", *args)
            assert is_err(r, "ERR"), (args, r)
            return err_text(r)
        assert e(b, slot, "MIGRATING", aid) == \
            "ERR I'm not the owner of hash slot %d" % slot
        assert e(a, slot, "IMPORTING", bid) == \
            "ERR I'm already the owner of hash slot %d" % slot
        assert e(a, slot, "MIGRATING", "f" * 40) == \
            "ERR I don't know about node %s" % ("f" * 40)
        assert e(b, slot, "IMPORTING", "nope") == \
            "ERR I don't know about node nope"
        assert e(a, slot, "NODE", "f" * 40) == "ERR Unknown node %s" % ("f" * 40)
        assert e(a, slot, "MIGRATING", rep_a.myid()) == \
            "ERR Target node is not a master"
        assert e(rep_a, slot, "STABLE") == \
            "ERR Please use SETSLOT only with masters."
        assert e(a, 16384, "STABLE") == "ERR Invalid or out of range slot"
        assert e(a, "x", "STABLE") == "ERR Invalid or out of range slot"
        assert e(a, slot, "SIDEWAYS", bid).startswith(
            "ERR Invalid CLUSTER SETSLOT action")
        assert e(a, slot, "STABLE", bid).startswith(
            "ERR Invalid CLUSTER SETSLOT action")
        assert e(a, slot, "MIGRATING").startswith(
            "ERR Invalid CLUSTER SETSLOT action")
        assert e(a, slot).startswith("ERR Invalid CLUSTER SETSLOT action")
        # the slot still holds users here: it cannot be given away
        assert e(a, slot, "NODE", bid) == (
            "ERR Can't assign hashslot %d to a different node while I still "
            "hold keys for this hash slot." % slot)
        assert a.cmd("CLUSTER", "COUNTKEYSINSLOT", slot) == 2

        # MIGRATE to a node that does not import the slot: the target
        # refuses (MOVED back), the source says so and keeps the user.
        r = a.cmd("MIGRATE", "127.0.0.1", b.port, "", 0, 5000, "KEYS", held1)
        assert is_err(r, "ERR") and \
            "Target instance replied with error: MOVED %d" % slot in \
            err_text(r), r
        assert a.cmd("CNT.GET", held1, "dm") == 1
        assert a.cmd("CLUSTER", "COUNTKEYSINSLOT", slot) == 2
        assert b.cmd("CLUSTER", "COUNTKEYSINSLOT", slot) == 0

        # redis-cli's order: the target imports, then the source migrates.
        assert b.cmd("CLUSTER", "SETSLOT", slot, "IMPORTING", aid) == "OK"
        assert a.cmd("CLUSTER", "SETSLOT", slot, "MIGRATING", bid) == "OK"
        assert "[%d->-%s]" % (slot, bid) in me_line(a)["slots"]
        assert "[%d-<-%s]" % (slot, aid) in me_line(b)["slots"]
        assert info_flat(a.cmd("INFO", "cluster"))["cluster_slots_open"] == "1"
        # the other nodes show no marks for them (only myself's line has)
        assert not any(s.startswith("[") for x in c3.nodes()
                       for s in x["slots"])
        bport, aport = b.port, a.port

        # Source: a user it holds is served; one it does not: ASK the
        # target; a request over both: TRYAGAIN.
        assert a.cmd("CNT.INCR", held1, "dm") == [2, 2]
        r = a.cmd("CNT.INCR", free, "dm")
        assert is_err(r, "ASK") and err_text(r) == \
            "ASK %d 127.0.0.1:%d" % (slot, bport), r
        r = a.cmd("USER.MBADGE", held1, free)
        assert is_err(r, "TRYAGAIN") and err_text(r) == \
            "TRYAGAIN Multiple keys request during rehashing of slot", r
        assert a.cmd("USER.MBADGE", held1, held2)[0] is not None
        # Target: MOVED to the owner without ASKING, served after it (for
        # one command only).
        r = b.cmd("CNT.INCR", free, "dm")
        assert is_err(r, "MOVED") and err_text(r) == \
            "MOVED %d 127.0.0.1:%d" % (slot, aport), r
        with Resp(b.port) as cb:
            assert cb.cmd("ASKING") == "OK"
            assert cb.cmd("CNT.INCR", free, "dm") == [1, 1]
            assert is_err(cb.cmd("CNT.GET", free, "dm"), "MOVED")
            assert cb.cmd("ASKING") == "OK"
            assert cb.cmd("CNT.GET", free, "dm") == 1
            # a multi-key request missing some ids: TRYAGAIN even after
            # ASKING
            assert cb.cmd("ASKING") == "OK"
            assert is_err(cb.cmd("USER.MBADGE", free, free2), "TRYAGAIN")
        assert b.cmd("CLUSTER", "COUNTKEYSINSLOT", slot) == 1
        # the source now asks for `free` too (it holds it not)
        assert is_err(a.cmd("CNT.GET", free, "dm"), "ASK")

        # The binary protocol: the codes (ASK 18, TRYAGAIN 21), Redis's
        # text after the word; ASKING as an op; a batch decides whole.
        with Bin(a.port) as ba:
            r = ba.call(opcode("CNT.GET"), free, "dm")
            assert is_err(r, code=18) and err_text(r) == \
                "%d 127.0.0.1:%d" % (slot, bport), r
            assert ba.call(opcode("CNT.GET"), held1, "dm") == 2
            r = batch(ba, [("CNT.GET", held1, "dm"), ("CNT.GET", free, "dm")])
            assert is_err(r, code=21), r
            r = batch(ba, [("CNT.GET", free, "dm"), ("CNT.GET", free, "dm")])
            assert is_err(r, code=18), r
            r = batch(ba, [("CNT.GET", held1, "dm"), ("CNT.GET", held2, "dm")])
            assert r == [2, 1], r
        with Bin(b.port) as bb:
            r = bb.call(opcode("CNT.GET"), free, "dm")
            assert is_err(r, code=17), r
            assert bb.call(opcode("ASKING")) == "OK"
            assert bb.call(opcode("CNT.GET"), free, "dm") == 1
            assert is_err(bb.call(opcode("CNT.GET"), free, "dm"), code=17)

        # The states are in nodes.conf and survive a restart.
        a.stop()
        conf = open(os.path.join(a.root, "data", "nodes.conf")).read()
        assert "[%d->-%s]" % (slot, bid) in conf, conf
        # a crash between an unsynced save's two renames leaves only the
        # previous file: it is the one read
        d = os.path.join(a.root, "data")
        os.replace(os.path.join(d, "nodes.conf"),
                   os.path.join(d, "nodes.conf.prev"))
        a.start()
        wait_until(lambda: a.cinfo().get("cluster_state") == "ok", 20,
                   "a back")
        assert "[%d->-%s]" % (slot, bid) in me_line(a)["slots"]
        assert is_err(a.cmd("CNT.GET", free, "dm"), "ASK")
        assert a.cmd("CNT.GET", held1, "dm") == 2

        # The replica keeps its master's states (not shown in its CLUSTER
        # NODES, as it is not the one moving), and acts on them once
        # promoted.
        wait_until(lambda: info_flat(rep_a.cmd("INFO", "cluster"))
                   .get("cluster_slots_open") == "1", 10,
                   "the replica to learn its master's states")
        assert not any(s.startswith("[") for s in me_line(rep_a)["slots"])

        # STABLE clears; MIGRATING again; then the end of a move by hand:
        # the users leave a (USER.DEL here, MIGRATE in a real move), the
        # target takes the slot first (a new epoch), then the source,
        # then the others, as redis-cli sends it.
        assert a.cmd("CLUSTER", "SETSLOT", slot, "STABLE") == "OK"
        assert not any(s.startswith("[") for s in me_line(a)["slots"])
        assert a.cmd("CNT.GET", free, "dm") == 0  # served: no state here
        assert a.cmd("CLUSTER", "SETSLOT", slot, "MIGRATING", bid) == "OK"
        for u in (held1, held2):
            with Resp(b.port) as cb:
                cb.cmd("ASKING")
                assert cb.cmd("CNT.INCR", u, "dm", 2)[0] == 2
            assert a.cmd("USER.DEL", u) is not None
        assert a.cmd("CLUSTER", "COUNTKEYSINSLOT", slot) == 0
        assert a.cmd("CLUSTER", "GETKEYSINSLOT", slot, 10) == []
        epoch_before = me_line(b)["epoch"]
        assert b.cmd("CLUSTER", "SETSLOT", slot, "NODE", bid) == "OK"
        assert me_line(b)["epoch"] > epoch_before
        assert not any(s.startswith("[") for s in me_line(b)["slots"])
        assert a.cmd("CLUSTER", "SETSLOT", slot, "NODE", bid) == "OK"
        for n in cl.masters():
            assert n.cmd("CLUSTER", "SETSLOT", slot, "NODE", bid) == "OK"
        cl.wait_agree()
        assert cl.owner(held1) is b
        for n in cl.live():
            assert cl.owner(held1, via=n) is b
        assert b.cmd("CNT.GET", held1, "dm") == 2
        assert is_err(a.cmd("CNT.GET", held1, "dm"), "MOVED")
        # a stays a master (it still owns other slots, and a finished move
        # never makes it follow b)
        assert "master" in me_line(a)["flags"]
        out = cl.cli("--cluster", "check", a.addr())
        assert "[OK] All nodes agree about slots configuration." in out, out
        assert "[OK] All 16384 slots covered." in out, out
        assert "[WARNING]" not in out, out

        # A move in progress when the source's replica is promoted: the
        # new primary keeps the MIGRATING state and asks as before.
        slot2 = sorted(slots_of(a) - {slot})[3]
        h, f = users_in_slot(slot2, 2)
        assert a.cmd("CNT.INCR", h, "dm") == [1, 1]
        assert b.cmd("CLUSTER", "SETSLOT", slot2, "IMPORTING", aid) == "OK"
        assert a.cmd("CLUSTER", "SETSLOT", slot2, "MIGRATING", bid) == "OK"
        wait_until(lambda: info_flat(rep_a.cmd("INFO", "cluster"))
                   .get("cluster_slots_open") == "1", 10,
                   "the replica to learn the new state")
        wait_until(lambda: info_flat(rep_a.cmd("INFO", "replication"))
                   .get("master_link_status") == "up", 10, "replica link")
        a.kill9()
        assert rep_a.cmd("REPLICAOF", "NO", "ONE") == "OK"
        wait_until(lambda: "master" in me_line(rep_a)["flags"], 10,
                   "promotion")
        assert "[%d->-%s]" % (slot2, bid) in me_line(rep_a)["slots"]
        wait_until(lambda: rep_a.cmd("CNT.GET", h, "dm") == 1, 10,
                   "the promoted replica to serve h")
        r = rep_a.cmd("CNT.GET", f, "dm")
        assert is_err(r, "ASK") and err_text(r) == \
            "ASK %d 127.0.0.1:%d" % (slot2, bport), r
        conf = open(os.path.join(rep_a.root, "data", "nodes.conf")).read()
        assert re.search(r"\[%d->-%s\]" % (slot2, bid), conf), conf
        # the target's import goes on with the promoted node: its mark now
        # names it (so redis-cli --cluster fix sees one move, not two)
        rid = rep_a.myid()
        wait_until(lambda: "[%d-<-%s]" % (slot2, rid) in me_line(b)["slots"],
                   10, "the target to import from the promoted node")
        # and the move ends as any other: the user goes with MIGRATE
        assert rep_a.cmd("MIGRATE", "127.0.0.1", bport, "", 0, 5000,
                         "KEYS", h) == "OK"
        assert rep_a.cmd("CLUSTER", "COUNTKEYSINSLOT", slot2) == 0
        for n in (b, rep_a, c3):
            assert n.cmd("CLUSTER", "SETSLOT", slot2, "NODE", bid) == "OK"
        wait_until(lambda: cl.owner(h, via=c3) is b, 10, "b owns slot2")
        assert b.cmd("CNT.GET", h, "dm") == 1
test_setslot_states_routing_and_errors.timeout = 180


def test_key_index_follows_the_data():
    """COUNTKEYSINSLOT / GETKEYSINSLOT count every id with state here (a
    user of any family, an RCPT group), not global objects, and forget the
    ids whose state went (USER.DEL, FLUSHALL); the index is rebuilt from
    the data at a restart."""
    with Cluster(masters=3, replicas=0) as cl:
        a = cl.masters()[0]
        slot = sorted(slots_of(a))[0]
        u_cnt, u_conv, u_grp, u_bc, u_dot, u_feed, g_rcpt, u_del = \
            users_in_slot(slot, 8)
        assert a.cmd("CNT.INCR", u_cnt, "dm")[0] == 1
        assert not is_err(a.cmd("CONV.INCR", u_conv, 5))
        assert not is_err(a.cmd("GRP.JOIN", u_grp, 7))
        assert not is_err(a.cmd("BC.UNREAD", u_bc, 3))
        assert not is_err(a.cmd("DOT.CLICK", u_dot, 4))
        assert not is_err(a.cmd("FEED.FOLLOW", u_feed, 9))
        assert not is_err(a.cmd("RCPT.JOIN", g_rcpt, 11))
        assert a.cmd("CNT.INCR", u_del, "dm")[0] == 1
        want = sorted([u_cnt, u_conv, u_grp, u_bc, u_dot, u_feed, g_rcpt,
                       u_del])

        def keys():
            return sorted(int(k) for k in
                          a.cmd("CLUSTER", "GETKEYSINSLOT", slot, 100))
        assert keys() == want, (keys(), want)
        assert a.cmd("CLUSTER", "COUNTKEYSINSLOT", slot) == len(want)
        assert not is_err(a.cmd("USER.DEL", u_del))
        want.remove(u_del)
        assert keys() == want
        # a read of a user without state adds nothing
        _, _, _, _, _, _, _, _, nobody = users_in_slot(slot, 9)
        assert a.cmd("CNT.GET", nobody, "dm") == 0
        assert a.cmd("CLUSTER", "COUNTKEYSINSLOT", slot) == len(want)
        ii = info_flat(a.cmd("INFO", "cluster"))
        assert int(ii["cluster_key_index_ids"]) >= len(want)
        assert int(ii["cluster_key_index_bytes"]) > 0
        # rebuilt from the data at a restart (BC and RCPT included)
        a.cmd("SAVE")
        a.stop()
        a.start()
        wait_until(lambda: a.cinfo().get("cluster_state") == "ok", 20,
                   "a back")
        assert keys() == want
        assert a.cmd("CLUSTER", "COUNTKEYSINSLOT", slot) == len(want)
        # bad input
        assert_err(a.cmd("CLUSTER", "COUNTKEYSINSLOT", 16384), "ERR")
        assert_err(a.cmd("CLUSTER", "COUNTKEYSINSLOT", "x"), "ERR")
        assert_err(a.cmd("CLUSTER", "GETKEYSINSLOT", slot, -1), "ERR")
        assert_err(a.cmd("CLUSTER", "GETKEYSINSLOT", slot), "ERR")
        assert a.cmd("FLUSHALL") == "OK"
        assert keys() == []
test_key_index_follows_the_data.timeout = 120


def user_state(node, u):
    """What a reader sees of user u in several families (RESP)."""
    with Resp(node.port) as c:
        c.cmd("ASKING")
        return (c.cmd("CNT.GET", u, "dm"), c.cmd("CONV.TOTAL", u),
                c.cmd("FEED.UNREAD", u))


def test_redis_cli_reshard_and_del_node():
    """Stock redis-cli --cluster reshard moves slots holding users of every
    family (MIGRATE of the userrec side), check is clean after; then every
    slot of one master goes away, it stays a master (no failover-style
    takeover), and del-node removes it."""
    with Cluster(masters=3, replicas=0) as cl:
        a, b, c3 = cl.masters()
        aid, bid, cid = a.myid(), b.myid(), c3.myid()
        # users in a's first slots and in c's, with state in several families
        users = {}
        for node in (a, c3):
            for slot in sorted(slots_of(node))[:40:4]:
                for u in users_in_slot(slot, 2, start=1000):
                    assert node.cmd("CNT.INCR", u, "dm", 3)[0] == 3
                    assert not is_err(node.cmd("CONV.INCR", u, 77))
                    assert not is_err(node.cmd("FEED.FOLLOW", u, 5))
                    users[u] = user_state(node, u)
        out = cl.cli("--cluster", "reshard", a.addr(), "--cluster-from", aid,
                     "--cluster-to", bid, "--cluster-slots", "40",
                     "--cluster-yes", timeout=120)
        assert "Moving slot" in out, out
        cl.wait_agree()
        out = cl.cli("--cluster", "check", a.addr())
        assert "[OK] All nodes agree about slots configuration." in out, out
        assert "[WARNING]" not in out, out
        moved = [u for u in users if cl.owner(u) is b]
        assert moved, "no user moved"
        for u in users:
            owner = cl.owner(u)
            assert user_state(owner, u) == users[u], (u, owner.port)
        for u in moved:
            assert is_err(a.cmd("CNT.GET", u, "dm"), "MOVED")
        # every slot of c goes to a, then c leaves the cluster
        out = cl.cli("--cluster", "reshard", a.addr(), "--cluster-from", cid,
                     "--cluster-to", aid, "--cluster-slots", "16384",
                     "--cluster-yes", timeout=300)
        cl.wait_agree(nodes=[a, b])
        assert "master" in me_line(c3)["flags"], me_line(c3)
        assert c3.cmd("DBSIZE") == 0
        for u in users:
            owner = cl.owner(u, via=a)
            assert owner is not c3
            assert user_state(owner, u) == users[u], (u, owner.port)
        out = cl.cli("--cluster", "del-node", a.addr(), cid, timeout=60)
        assert "SHUTDOWN" in out or "Sending CLUSTER RESET SOFT" in out, out
        wait_until(lambda: all(cid not in [x["id"] for x in n.nodes()]
                               for n in (a, b)), 10, "c forgotten")
        out = cl.cli("--cluster", "check", a.addr())
        assert "[OK] All 16384 slots covered." in out, out
        assert "[WARNING]" not in out, out
test_redis_cli_reshard_and_del_node.timeout = 400
