"""libunread's cluster mode (unread.h unread_opts_set_cluster; docs/
CLIENT.md "Cluster") against a real cluster made by `redis-cli --cluster
create`, driven by build/cluster_client (sync and async handles) and
`unread-cli -c`:

  - the same random workload through the cluster and against one
    cluster-mode-off server gives the same answers (typed calls, any
    command, many-users calls split by node, global writes copied to
    every shard);
  - a failover: the handle follows MOVED to the promoted replica (its
    redirection is reported), and after a kill -9 it finds the new owner;
    every increment is counted once;
  - a batch is one slot's (CROSSSLOT otherwise, nothing sent), a
    pipeline any slots;
  - bad seeds: a server not in cluster mode, an unreachable one, a node
    answering a malformed CLUSTER SLOTS: a clear error, no crash.
"""

import os
import random
import socket
import struct
import subprocess
import threading

from harness import (BUILD, HDR, MAGIC, UNREAD_CLI, VERSION, Resp, Server,
                     free_port, opcode)
from cluster_rig import Cluster, bc_head, key_slot, slots_of
from sentinel_rig import wait_until
from test_client_pubsub import Lines

DRIVER = os.path.join(BUILD, "cluster_client")


class Drv:
    """One cluster_client process: a line in, its result lines out."""

    def __init__(self, mode, seeds, *extra):
        self.mode = mode
        self.l = Lines([DRIVER, mode, seeds] + list(extra))

    def do(self, line, n=1):
        self.l.p.stdin.write(line + "\n")
        self.l.p.stdin.flush()
        return [self.l.next() for _ in range(n)]

    def cmd(self, *args):
        """(rc, flat reply or error text, redirection or None)."""
        out, redir = self.do("cmd " + " ".join(str(a) for a in args), 2)
        _, rc, rest = (out + " ").split(" ", 2)
        r = redir.split(" ", 1)[1]
        return int(rc), rest.rstrip(" "), None if r == "-" else r

    def incr(self, uid, typ, n):
        f = self.do("incr %d %d %d" % (uid, typ, n))[0].split()
        return int(f[1]), int(f[2]), int(f[3])

    def mtotal(self, uids):
        f = self.do("mtotal " + " ".join(map(str, uids)))[0].split()
        return int(f[1]), [int(x) for x in f[2:]]

    def close(self):
        try:
            self.l.p.stdin.write("quit\n")
            self.l.p.stdin.close()
        except OSError:
            pass
        rc = self.l.p.wait(20)
        assert rc == 0, "cluster_client exited %d: %s" % (
            rc, self.l.p.stderr.read())


def flat(v):
    """A RESP reply as cluster_client prints one."""
    if isinstance(v, list):
        return "[" + ",".join(flat(x) for x in v) + "]"
    if v is None:
        return "nil"
    if hasattr(v, "text"):
        return v.text
    if isinstance(v, bytes):
        return v.decode()
    return str(v)


def test_differential_against_one_server():
    rnd = random.Random(31)
    uids = rnd.sample(range(10 ** 9, 10 ** 12), 150)
    chans = [rnd.randrange(1, 10 ** 6) for _ in range(4)]
    with Cluster(masters=3, replicas=0) as cl, Server() as one:
        seeds = ",".join(n.addr() for n in cl.masters()[1:])
        drvs = [Drv("sync", seeds), Drv("async", seeds)]
        ref = Resp(one.port)
        try:
            for step in range(400):
                d = drvs[step % 2]
                what = rnd.random()
                uid = rnd.choice(uids)
                if what < 0.3:
                    t, n = rnd.randrange(0, 8), rnd.randrange(1, 50)
                    rc, value, total = d.incr(uid, t, n)
                    assert rc == 0, (d.mode, rc)
                    assert [value, total] == ref.cmd("CNT.INCR", uid, t, n)
                elif what < 0.5:
                    cid, seq = rnd.randrange(1, 20), rnd.randrange(1, 10 ** 6)
                    args = ("CONV.SEQ", uid, cid, seq)
                    if rnd.random() < 0.4:
                        args = ("CONV.READ", uid, cid, seq)
                    rc, out, _ = d.cmd(*args)
                    assert rc == 0, (d.mode, args, out)
                    assert out == flat(ref.cmd(*args)), (d.mode, args)
                elif what < 0.6:
                    some = rnd.sample(uids, rnd.randrange(1, 80))
                    rc, totals = d.mtotal(some)
                    assert rc == 0, (d.mode, rc)
                    assert totals == ref.cmd("CNT.MTOTAL", *some), d.mode
                elif what < 0.7:
                    # a global write: the owner copies it to every shard
                    ch = rnd.choice(chans)
                    rc, out, _ = d.cmd("BC.PUBLISH", ch)
                    head = ref.cmd("BC.PUBLISH", ch)
                    assert rc == 0 and out == flat(head), (out, head)
                    # copies arrive in the background: on every shard soon
                    wait_until(lambda: all(bc_head(m, ch) == head
                                           for m in cl.masters()), 10,
                               "the channel's head on every shard")
                elif what < 0.85:
                    ch = rnd.choice(chans)
                    args = ("BC.UNREAD", uid, ch)
                    rc, out, _ = d.cmd(*args)
                    assert rc == 0 and out == flat(ref.cmd(*args)), (d.mode,
                                                                     out)
                else:
                    args = rnd.choice([("CNT.GETALL", uid), ("CNT.TOTAL", uid),
                                       ("CONV.TOTAL", uid),
                                       ("CNT.GET", uid, 3)])
                    rc, out, _ = d.cmd(*args)
                    assert rc == 0 and out == flat(ref.cmd(*args)), (d.mode,
                                                                     args)
            # Every user is on the node its slot says, nothing elsewhere.
            for uid in uids[:40]:
                want = ref.cmd("CNT.TOTAL", uid)
                owner = cl.owner(uid)
                assert owner.cmd("CNT.TOTAL", uid) == want
            # Commands the handle sends to one node answer as that node's.
            rc, out, _ = drvs[0].cmd("PING")
            assert rc == 0 and out == "PONG"
            rc, out, _ = drvs[1].cmd("CNT.INCR", uids[0])
            assert rc > 0 and "wrong number of arguments" in out, out
            # Subscriptions are not routed in cluster mode: refused, said.
            for d in drvs:
                f = d.do("sub badge:%d" % uids[0])[0]
                assert f.startswith("sub -") and "cluster mode" in f, f
        finally:
            for d in drvs:
                d.close()
            ref.close()
test_differential_against_one_server.timeout = 180


def owners_replica(cl, owner):
    me = owner.myid()
    return [n for n in cl.nodes if any(
        "myself" in x["flags"] and x["master"] == me for x in n.nodes())][0]


def test_follows_moved_and_a_dead_node():
    rnd = random.Random(32)
    with Cluster(masters=3, replicas=1) as cl:
        cl.wait_replicas()
        masters = cl.masters()
        uids = rnd.sample(range(1, 10 ** 9), 60)
        seeds = masters[0].addr()
        drvs = [Drv("sync", seeds), Drv("async", seeds)]
        count = {}
        try:
            def round_of_incrs(until_ok):
                for i, uid in enumerate(uids):
                    d = drvs[i % 2]
                    for _ in range(200 if until_ok else 1):
                        rc, value, _ = d.incr(uid, 1, 1)
                        if rc == 0:
                            count[uid] = count.get(uid, 0) + 1
                            assert value == count[uid], (d.mode, uid, value)
                            break
                        # a dead node's refusal: never sent, never applied
                        assert rc < 0, (d.mode, rc)
                    else:
                        raise AssertionError("%s: uid %d never written" %
                                             (d.mode, uid))

            round_of_incrs(False)
            assert len(count) == len(uids)
            # 1. A promotion with the old primary alive: it answers MOVED.
            old = masters[1]
            rep = owners_replica(cl, old)
            assert old.cmd("WAIT", 1, 5000) == 1
            assert rep.cmd("REPLICAOF", "NO", "ONE") == "OK"
            wait_until(lambda: all(
                x["master"] == rep.myid() for x in old.nodes()
                if "myself" in x["flags"]), 15, "the old primary to follow")
            cl.wait_agree()
            moved = [u for u in uids if cl.owner(u) is rep]
            assert moved
            rc, out, redir = drvs[0].cmd("CNT.GET", moved[0], 1)
            assert rc == 0 and int(out) == count[moved[0]]
            assert redir == "slot [%d] located at 127.0.0.1:%d" % (
                key_slot(moved[0]), rep.port), redir
            round_of_incrs(False)  # no refusal: MOVED is followed
            # unread-cli -c says the redirection as redis-cli -c does.
            out = subprocess.run(
                [UNREAD_CLI, "-c", "-p", str(old.port), "CNT.GET",
                 str(moved[1]), "1"], capture_output=True, text=True,
                timeout=20)
            assert out.returncode == 0, out.stderr
            # 2. A kill -9, the replica promoted the way sentinel does it.
            victim = [m for m in cl.masters() if m is not rep][0]
            vrep = owners_replica(cl, victim)
            assert victim.cmd("WAIT", 1, 5000) == 1
            victim.kill9()
            assert vrep.cmd("REPLICAOF", "NO", "ONE") == "OK"
            live = cl.live()
            wait_until(lambda: all(
                cl.owner(u, via=n) is vrep for n in live for u in uids
                if key_slot(u) in slots_of(vrep)), 15,
                "every node to map the victim's slots to its replica")
            round_of_incrs(True)
            for uid in uids:
                assert cl.owner(uid).cmd("CNT.GET", uid, 1) == count[uid]
        finally:
            for d in drvs:
                d.close()
test_follows_moved_and_a_dead_node.timeout = 240


def test_batch_is_one_slot_pipeline_any():
    with Cluster(masters=3, replicas=0) as cl:
        d = Drv("sync", cl.masters()[2].addr())
        try:
            by_slot = {}
            u = 1
            while len(by_slot) < 2 or max(len(v) for v in
                                          by_slot.values()) < 3:
                by_slot.setdefault(key_slot(u), []).append(u)
                u += 1
            same = [v for v in by_slot.values() if len(v) >= 3][0][:3]
            other = [k for k in by_slot if k != key_slot(same[0])][0]
            f = d.do("batch %d %d %d" % tuple(same))[0]
            assert f == "batch 0 [[1,1],[1,1],[1,1]]", f
            f = d.do("batch %d %d" % (same[0], by_slot[other][0]))[0]
            assert f.startswith("batch ") and int(f.split()[1]) > 0, f
            assert "CROSSSLOT" in f, f
            assert cl.owner(same[0]).cmd("CNT.GET", same[0], 0) == 1
            assert cl.owner(by_slot[other][0]).cmd(
                "CNT.GET", by_slot[other][0], 0) == 0
            spread = list(range(5000, 5040))
            f = d.do("pipe " + " ".join(map(str, spread)))[0].split()
            assert f[0] == "pipe" and len(f) == 41, f
            assert all(x == "0:[1,1]" for x in f[1:]), f
            for uid in spread:
                assert cl.owner(uid).cmd("CNT.GET", uid, 0) == 1
        finally:
            d.close()
test_batch_is_one_slot_pipeline_any.timeout = 120


def fake_node(reply_value):
    """A binary-protocol listener answering CLUSTER with reply_value (the
    encoded body) and anything else with an error: (port, stop)."""
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(8)
    ls.settimeout(0.2)
    done = threading.Event()
    cluster_op = opcode("CLUSTER")

    def serve(c):
        buf = b""
        with c:
            while not done.is_set():
                try:
                    chunk = c.recv(65536)
                except OSError:
                    return
                if not chunk:
                    return
                buf += chunk
                while len(buf) >= HDR.size:
                    _, _, op, rid, n, _, _ = HDR.unpack_from(buf)
                    if len(buf) < HDR.size + n:
                        break
                    buf = buf[HDR.size + n:]
                    if op == cluster_op:
                        body, status = reply_value, 0
                    else:
                        text = b"ERR not here"
                        body = struct.pack("<BHI", 6, 1, len(text)) + text
                        status = 1
                    c.sendall(HDR.pack(MAGIC, VERSION, status, rid,
                                       len(body), 0, 0) + body)

    def accept():
        while not done.is_set():
            try:
                c, _ = ls.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            threading.Thread(target=serve, args=(c,), daemon=True).start()
        ls.close()

    threading.Thread(target=accept, daemon=True).start()
    return ls.getsockname()[1], done.set


def test_bad_seeds():
    with Server() as plain:
        # not in cluster mode: said at once (sync), on every call (async)
        d = Drv("sync", "127.0.0.1:%d" % plain.port)
        line = d.l.next()
        assert line.startswith("connect ") and "cluster-enabled yes" in line
        assert d.l.p.wait(10) == 1
        d = Drv("async", "127.0.0.1:%d" % plain.port)
        for _ in range(2):
            rc, out, _ = d.cmd("CNT.INCR", 7, 0, 1)
            if rc < 0 and "cluster" in out:
                break
        assert rc < 0 and "cluster-enabled yes" in out, (rc, out)
        d.close()
        assert plain.resp().cmd("CNT.GET", 7, 0) in (0, 1)
        out = subprocess.run([UNREAD_CLI, "-c", "-p", str(plain.port),
                              "PING"], capture_output=True, text=True,
                             timeout=20)
        assert out.returncode == 1 and "cluster" in out.stderr, out
    # nobody listening
    dead = free_port()
    d = Drv("sync", "127.0.0.1:%d" % dead)
    line = d.l.next()
    assert line.startswith("connect ") and str(dead) in line, line
    d = Drv("async", "127.0.0.1:%d" % dead)
    rc, out, _ = d.cmd("CNT.GET", 1, 0)
    assert rc < 0 and str(dead) in out, (rc, out)
    d.close()
    # a node answering a map of the wrong shape: the map is not taken
    for body in (struct.pack("<BIBQ", 3, 1, 1, 5),         # [5]
                 struct.pack("<BIBQBQ", 3, 1, 3, 2, 1, 0),  # [[0, .. cut
                 struct.pack("<BQ", 1, 9)):                 # 9
        port, stop = fake_node(body)
        try:
            d = Drv("sync", "127.0.0.1:%d" % port)
            line = d.l.next()
            assert line.startswith("connect "), line
            d = Drv("async", "127.0.0.1:%d" % port)
            rc, out, _ = d.cmd("CNT.GET", 1, 0)
            assert rc != 0, out
            d.close()
        finally:
            stop()
test_bad_seeds.timeout = 120
