"""Cluster mode (docs/OPERATIONS.md "Cluster", docs/PROTOCOL.md "Cluster"):
a cluster of unreadd nodes built by stock `redis-cli --cluster create`,
Redis Cluster's redirections on both protocols, the slot map every node
agrees on, global objects copied by their owner to every shard, a
failover the way sentinel makes one (REPLICAOF NO ONE), and bad input.
Real redis-sentinel failovers and Redis Cluster clients:
test_cluster_clients.py and tests/faults/cluster_failover.py.
"""

import os
import random
import re
import socket
import struct
import time

from harness import (Bin, Resp, Server, assert_err, info_flat, is_err,
                     opcode)
from test_batch import batch
from cluster_rig import Cluster, CNode, key_slot, low_port, signature
from sentinel_rig import wait_until


def cmd(node, *args):
    with Resp(node.port) as c:
        return c.cmd(*args)


def moved_to(reply):
    """(slot, port) of a -MOVED error."""
    assert is_err(reply, "MOVED"), reply
    m = re.match(r"MOVED (\d+) 127\.0\.0\.1:(\d+)$", reply.text)
    assert m, reply
    return int(m.group(1)), int(m.group(2))


def err_text(reply):
    return reply.text if hasattr(reply, "text") else str(reply)


def test_create_route_and_redirect():
    with Cluster(masters=3, replicas=1) as cl:
        masters = cl.masters()
        assert len(masters) == 3
        for n in cl.nodes:
            ci = n.cinfo()
            assert ci["cluster_state"] == "ok"
            assert ci["cluster_slots_assigned"] == "16384"
            assert ci["cluster_known_nodes"] == "6"
            assert ci["cluster_size"] == "3"
            assert info_flat(n.cmd("INFO", "cluster"))["cluster_enabled"] == "1"
            assert len(n.myid()) == 40
        # redis-cli's own check agrees, from any node.
        out = cl.cli("--cluster", "check", cl.nodes[4].addr())
        assert "[OK] All nodes agree about slots configuration." in out, out
        assert "[OK] All 16384 slots covered." in out, out
        # KEYSLOT as Redis computes it (the expected from a Redis node).
        for key, slot in (("42", 8000), ("foo", 12182),
                          ("{user1000}.following", 3443), ("", 0)):
            assert cmd(cl.nodes[0], "CLUSTER", "KEYSLOT", key) == slot

        # Every user command of a user not on this node: MOVED to the
        # node that CLUSTER SLOTS names, on every node; served there.
        users = random.Random(7).sample(range(1, 10**9), 60)
        for uid in users:
            owner = cl.owner(uid)
            for n in cl.nodes:
                r = cmd(n, "CNT.INCR", uid, "dm")
                if n is owner:
                    assert r == [1, 1], r
                else:
                    assert moved_to(r) == (key_slot(uid), owner.port)
        # A replica without READONLY redirects reads and writes to its
        # master; with READONLY it serves reads of its master's slots.
        for uid in users[:20]:
            owner = cl.owner(uid)
            rep = [n for n in cl.nodes
                   if owner.myid() in [x["master"] for x in n.nodes()
                                       if "myself" in x["flags"]]][0]
            assert moved_to(cmd(rep, "CNT.GET", uid, "dm"))[1] == owner.port
            with Resp(rep.port) as c:
                assert c.cmd("READONLY") == "OK"
                assert wait_until(lambda: c.cmd("CNT.GET", uid, "dm") == 1,
                                  10, "the replica to serve the read")
                assert moved_to(c.cmd("CNT.INCR", uid, "dm"))[1] == \
                    owner.port
                assert c.cmd("READWRITE") == "OK"
                assert is_err(c.cmd("CNT.GET", uid, "dm"), "MOVED")

        # redis-cli -c follows the redirection.
        out = cl.cli("-c", "-p", str(cl.nodes[0].port), "CNT.INCR", "777",
                     "like", "5")
        assert out.split() == ["5", "5"], out

        # Keys that span slots: CROSSSLOT, in one request, a batch frame
        # and a MULTI. Same slot: served.
        a, b = 1, 2
        assert key_slot(a) != key_slot(b)
        owner = cl.owner(a)
        assert_err(cmd(owner, "USER.MBADGE", a, b), "CROSSSLOT")
        assert err_text(cmd(owner, "USER.MBADGE", a, b)) == \
            "CROSSSLOT Keys in request don't hash to the same slot"
        with Resp(owner.port) as c:
            assert c.cmd("MULTI") == "OK"
            c.cmd("CNT.INCR", a, 1)
            c.cmd("CNT.INCR", b, 1) if cl.owner(b) is owner else None
            if cl.owner(b) is owner:
                assert_err(c.cmd("EXEC"), "CROSSSLOT")
            else:
                # queued on a node that does not serve b: MOVED when queued
                r = c.cmd("CNT.INCR", b, 1)
                assert is_err(r, "MOVED"), r
                assert_err(c.cmd("EXEC"), "EXECABORT")
        with Bin(owner.port) as bc:
            r = batch(bc, [("CNT.INCR", a, 1), ("CNT.INCR", b, 1)])
            # binary errors: the code (CROSSSLOT 19, MOVED 17), Redis's
            # text after the word
            assert is_err(r, code=19) or is_err(r, code=17), r
            # The binary protocol's own code for MOVED (PROTOCOL.md).
            other = [n for n in cl.masters() if n is not cl.owner(a)][0]
        with Bin(other.port) as bc:
            r = bc.call(opcode("CNT.GET"), a, 1)
            assert is_err(r, code=17) and err_text(r) == "%d 127.0.0.1:%d" % (
                key_slot(a), cl.owner(a).port), r

        # Non-canonical ids are refused in cluster mode: clients hash the
        # bytes they send.
        for bad in ("042", "+42", "00"):
            r = cmd(owner, "CNT.GET", bad, 1)
            assert_err(r, "ERR")
            assert "canonical" in err_text(r), r
test_create_route_and_redirect.timeout = 120


def test_global_writes_reach_every_shard():
    with Cluster(masters=3, replicas=1) as cl:
        # Each global object, written once on its owner, read by users of
        # every shard.
        rng = random.Random(3)
        users = rng.sample(range(1, 10**9), 40)
        by_shard = {}
        for u in users:
            by_shard.setdefault(cl.owner(u).port, []).append(u)
        assert len(by_shard) == 3
        readers = [v[0] for v in by_shard.values()]
        ch, gid, dot, author = 11, 12, 13, 14

        def on_owner(key, *args):
            return cmd(cl.owner(key), *args)

        for u in readers:
            assert cmd(cl.owner(u), "BC.UNREAD", u, ch) == 0
            assert cmd(cl.owner(u), "GRP.JOIN", u, gid) == 0
            assert cmd(cl.owner(u), "FEED.FOLLOW", u, author) == 1
            assert cmd(cl.owner(u), "DOT.CLICK", u, dot, 1000) == 0
        for _ in range(5):
            on_owner(ch, "BC.PUBLISH", ch)
            on_owner(gid, "GRP.POST", gid)
            on_owner(author, "FEED.POST", author)
        on_owner(author, "FEED.UNPOST", author, 2)
        assert on_owner(dot, "DOT.PUSH", dot, 5000) == 5000
        assert on_owner(gid, "GRP.RECALL", gid, 5) == 1
        # A global write sent to a node that does not own the object is
        # redirected like any keyed command: sent once, applied once.
        not_owner = [n for n in cl.masters() if n is not cl.owner(ch)][0]
        assert is_err(cmd(not_owner, "BC.PUBLISH", ch), "MOVED")

        def seen_everywhere():
            for u in readers:
                o = cl.owner(u)
                if (cmd(o, "BC.UNREAD", u, ch) != 5 or
                        cmd(o, "GRP.UNREAD", u, gid) != 4 or
                        cmd(o, "FEED.UNREAD", u) != 3 or
                        cmd(o, "DOT.CHECK", u, dot) != [1]):
                    return False
            return True
        wait_until(seen_everywhere, 10, "every shard to see the global writes")
        # ... and their replicas, through replication.
        for n in cl.live():
            i = info_flat(n.cmd("INFO", "cluster"))
            assert int(i["cluster_copies_stale"]) == 0, i
        # The copies carry their owner's id: a copy from a node that does
        # not own the slot is refused as stale, and changes nothing.
        o = cl.owner(ch)
        other = [n for n in cl.masters() if n is not o][0]
        r = cmd(other, "GLOBALCOPY", other.myid(), 99, 10**9, key_slot(ch),
                "BC", ch, 1000)
        assert_err(r)
        assert "STALE" in err_text(r), r
        assert cmd(other, "BC.UNREAD", by_shard[other.port][0], ch) == 5
        # A malformed one is an error too.
        assert_err(cmd(other, "GLOBALCOPY", o.myid(), 1, 1, 5, "BC", ch, 1))
        assert_err(cmd(other, "GLOBALCOPY", o.myid(), 1, 1, key_slot(ch),
                       "NOPE", ch, 1))
test_global_writes_reach_every_shard.timeout = 120


def test_failover_and_old_primary_returns():
    with Cluster(masters=3, replicas=1) as cl:
        uid = 4242
        owner = cl.owner(uid)
        assert cmd(owner, "CNT.INCR", uid, 1, 7) == [7, 7]
        me = owner.myid()
        rep = [n for n in cl.nodes if any(
            "myself" in x["flags"] and x["master"] == me for x in n.nodes())][0]
        # WAIT: the replica has it before the primary goes.
        assert cmd(owner, "WAIT", 1, 5000) == 1
        owner.kill9()
        # What sentinel sends the replica it promotes.
        assert cmd(rep, "REPLICAOF", "NO", "ONE") == "OK"
        live = cl.live()
        # Every node moves the slots to the promoted one, at a new epoch.
        wait_until(lambda: all(cl.owner(uid, via=n) is rep for n in live),
                   10, "every node to map the slot to the promoted replica")
        cl.wait_agree(nodes=live)
        ep = [x for x in rep.nodes() if "myself" in x["flags"]][0]["epoch"]
        assert ep > 6, ep
        for n in live:
            if n is not rep:
                assert moved_to(cmd(n, "CNT.GET", uid, 1))[1] == rep.port
        assert cmd(rep, "CNT.GET", uid, 1) == 7
        # The old primary comes back with its old table: it learns it lost
        # its slots and becomes the promoted node's replica.
        owner.start()
        wait_until(lambda: [x for x in owner.nodes()
                            if "myself" in x["flags"]][0]["master"] ==
                   rep.myid(), 10, "the old primary to follow the new one")
        wait_until(lambda: info_flat(owner.cmd("INFO", "replication"))
                   .get("master_link_status") == "up", 15,
                   "the old primary to replicate the new one")
        cl.wait_agree()
        assert moved_to(cmd(owner, "CNT.GET", uid, 1))[1] == rep.port
        # A restart keeps the table (nodes.conf, written atomically).
        rep.stop()
        rep.start()
        cl.wait_agree()
        assert cmd(rep, "CNT.GET", uid, 1) == 7
        assert os.path.exists(os.path.join(rep.root, "data", "nodes.conf"))
test_failover_and_old_primary_returns.timeout = 120


def test_bad_input():
    with Server(cluster_enabled="yes") as srv:
        c = Resp(srv.port)
        me = c.cmd("CLUSTER", "MYID").decode()
        # A node with no slots: its commands' slots are not served.
        ci = info_flat(c.cmd("CLUSTER", "INFO"))
        assert ci["cluster_state"] == "fail"
        assert err_text(c.cmd("CNT.INCR", 1, 1)) == \
            "CLUSTERDOWN Hash slot not served"
        # Admin commands (no key) still run.
        assert c.cmd("PING") == "PONG"
        assert err_text(c.cmd("CLUSTER", "BOGUS")) == \
            "ERR unknown subcommand 'BOGUS'. Try CLUSTER HELP."
        assert_err(c.cmd("CLUSTER"), "ERR")
        assert_err(c.cmd("CLUSTER", "KEYSLOT"), "ERR")
        for bad in ("16384", "-1", "abc", "99999999999999999999"):
            assert err_text(c.cmd("CLUSTER", "ADDSLOTS", bad)) == \
                "ERR Invalid or out of range slot", bad
        assert err_text(c.cmd("CLUSTER", "COUNTKEYSINSLOT", 16384)) == \
            "ERR Invalid slot"
        assert err_text(c.cmd("CLUSTER", "GETKEYSINSLOT", 5, -1)) == \
            "ERR Invalid slot or number of keys"
        assert c.cmd("CLUSTER", "ADDSLOTSRANGE", 0, 8191) == "OK"
        assert err_text(c.cmd("CLUSTER", "ADDSLOTS", 5)) == \
            "ERR Slot 5 is already busy"
        assert err_text(c.cmd("CLUSTER", "ADDSLOTSRANGE", 9, 3)).startswith(
            "ERR start slot number 9 is greater than end slot number 3")
        # Part of the slots: the cluster is down for the rest too, with
        # require-full-coverage (the default).
        uid_in = [u for u in range(100) if key_slot(u) < 8192][0]
        uid_out = [u for u in range(100) if key_slot(u) >= 8192][0]
        assert err_text(c.cmd("CNT.INCR", uid_out, 1)) == \
            "CLUSTERDOWN Hash slot not served"
        assert err_text(c.cmd("CNT.INCR", uid_in, 1)) == \
            "CLUSTERDOWN The cluster is down"
        assert c.cmd("CONFIG", "SET", "cluster-require-full-coverage",
                     "no") == "OK"
        assert c.cmd("CNT.INCR", uid_in, 1) == [1, 1]
        assert c.cmd("CLUSTER", "ADDSLOTSRANGE", 8192, 16383) == "OK"
        assert info_flat(c.cmd("CLUSTER", "INFO"))["cluster_state"] == "ok"
        assert c.cmd("CLUSTER", "COUNTKEYSINSLOT", key_slot(uid_in)) == 1
        assert c.cmd("CLUSTER", "GETKEYSINSLOT", key_slot(uid_in), 10) == \
            [str(uid_in).encode()]
        # Unknown node ids.
        for sub in ("FORGET", "REPLICATE", "COUNT-FAILURE-REPORTS"):
            r = c.cmd("CLUSTER", sub, "0" * 40)
            assert err_text(r) == "ERR Unknown node " + "0" * 40, r
        assert_err(c.cmd("CLUSTER", "FORGET", me))
        assert_err(c.cmd("CLUSTER", "REPLICATE", me))
        # MEET: a bad address, a bad port, a port that does not answer.
        assert err_text(c.cmd("CLUSTER", "MEET", "nothost", 9)).startswith(
            "ERR Invalid node address specified")
        assert err_text(c.cmd("CLUSTER", "MEET", "127.0.0.1", "abc")) == \
            "ERR Invalid TCP base port specified: abc"
        dead = low_port()
        r = c.cmd("CLUSTER", "MEET", "127.0.0.1", dead)
        assert_err(r)
        assert "cannot meet 127.0.0.1:%d" % dead in err_text(r), r
        # ... and a port that accepts but never answers: bounded by
        # cluster-node-timeout.
        assert c.cmd("CONFIG", "SET", "cluster-node-timeout", 500) == "OK"
        mute = socket.socket()
        mute.bind(("127.0.0.1", 0))
        mute.listen(8)
        t0 = time.monotonic()
        r = c.cmd("CLUSTER", "MEET", "127.0.0.1", mute.getsockname()[1])
        assert_err(r)
        assert time.monotonic() - t0 < 5, "MEET waited too long"
        mute.close()
        # The failed MEETs left no node behind.
        wait_until(lambda: info_flat(c.cmd("CLUSTER", "INFO"))
                   ["cluster_known_nodes"] == "1", 5, "no handshake left")
        # SET-CONFIG-EPOCH once, BUMPEPOCH.
        assert c.cmd("CLUSTER", "SET-CONFIG-EPOCH", 5) == "OK"
        assert err_text(c.cmd("CLUSTER", "SET-CONFIG-EPOCH", 6)) == \
            "ERR Node config epoch is already non-zero"
        assert c.cmd("CLUSTER", "BUMPEPOCH") == "STILL 5"
        assert c.cmd("CLUSTER", "SAVECONFIG") == "OK"
        # RESET refuses a master holding users.
        assert_err(c.cmd("CLUSTER", "RESET"), "ERR")
        assert_err(c.cmd("CLUSTER", "RESET", "bogus"), "ERR")
        # A malformed peer record is refused, and the table is intact.
        assert_err(c.cmd("CLUSTER", "PEER", "x"))
        assert_err(c.cmd("CLUSTER", "PEER", "z" * 40, "127.0.0.1", 1, 2,
                         "master", "", 1, 1, 1, "", "0-99999", ""))
        assert info_flat(c.cmd("CLUSTER", "INFO"))["cluster_known_nodes"] \
            == "1"
        c.close()
    # Cluster mode off: nothing changes, CLUSTER says so.
    with Server() as srv:
        with Resp(srv.port) as c:
            assert info_flat(c.cmd("INFO", "cluster"))["cluster_enabled"] == "0"
            assert err_text(c.cmd("CLUSTER", "INFO")) == \
                "ERR This instance has cluster support disabled"
            assert c.cmd("CNT.INCR", "007", 1) == [1, 1]
test_bad_input.timeout = 60


def test_redis_cli_cluster_tools():
    """add-node (a master, a replica), info, call, fix of uncovered
    slots, del-node: stock redis-cli against unreadd nodes."""
    with Cluster(masters=3, replicas=0) as cl:
        first = cl.nodes[0]
        for uid in range(50):
            cmd(cl.owner(uid), "CNT.INCR", uid, 1)
        out = cl.cli("--cluster", "info", first.addr())
        assert "[OK] 50 keys in 3 masters." in out, out
        out = cl.cli("--cluster", "call", first.addr(), "CLUSTER", "MYID")
        for n in cl.nodes:
            assert n.myid() in out, out
        # A new empty master, then a replica of it.
        new = cl.new_node()
        out = cl.cli("--cluster", "add-node", new.addr(), first.addr())
        assert "[OK] New node added correctly." in out, out
        cl.wait_agree()
        rep = cl.new_node()
        out = cl.cli("--cluster", "add-node", rep.addr(), first.addr(),
                     "--cluster-slave", "--cluster-master-id", new.myid(),
                     timeout=60)
        assert "[OK] New node added correctly." in out, out
        wait_until(lambda: all(new.myid() in [x["master"] for x in n.nodes()
                                              if x["addr"] == rep.addr()[0:]
                                              or x["id"] == rep.myid()]
                               for n in cl.nodes), 10,
                   "every node to see the replica")
        wait_until(lambda: info_flat(rep.cmd("INFO", "replication"))
                   .get("master_link_status") == "up", 10, "the replica link")
        for n in cl.nodes:
            assert n.cinfo()["cluster_known_nodes"] == "5"
        # Slots no node serves (a DELSLOTS on every node): fix assigns them.
        owner = cl.owner(0)
        s = key_slot(0)
        for n in cl.nodes:
            if n is owner:
                assert cmd(n, "CLUSTER", "DELSLOTS", s) == "OK"
        wait_until(lambda: all(n.cinfo()["cluster_slots_assigned"] == "16383"
                               for n in cl.nodes), 10, "the slot to go")
        assert err_text(cmd(owner, "CNT.GET", 0, 1)) == \
            "CLUSTERDOWN Hash slot not served"
        # (fix asks before covering a slot that holds keys, even with
        # --cluster-yes: answered as an operator would)
        out = cl.cli("--cluster", "fix", first.addr(), "--cluster-yes",
                     timeout=120, input="yes\n" * 4)
        assert "Fixing slots coverage" in out, out
        cl.wait_agree()
        # covered by the node that holds the slot's users: nothing lost
        assert cl.owner(0) is owner
        assert cmd(owner, "CNT.GET", 0, 1) == 1
        # del-node: the replica, then the empty master.
        out = cl.cli("--cluster", "del-node", first.addr(), rep.myid())
        assert "SHUTDOWN" in out or "Removing node" in out, out
        out = cl.cli("--cluster", "del-node", first.addr(), new.myid())
        assert "Removing node" in out, out
        live = [n for n in cl.nodes if n not in (new, rep)]
        wait_until(lambda: all(n.cinfo()["cluster_known_nodes"] == "3"
                               for n in live), 10, "the nodes to forget them")
        cl.wait_agree(nodes=live)
test_redis_cli_cluster_tools.timeout = 180
