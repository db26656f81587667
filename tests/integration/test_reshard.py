"""Online resharding (issue 32; docs/OPERATIONS.md "Add a shard",
"Remove a shard"): stock `redis-cli --cluster add-node`, `rebalance
--cluster-use-empty-masters`, `reshard` and `del-node` move users' whole
state between shards while writers run, nothing acknowledged lost or
doubled (reshard_rig.py has the data, writers and model).

  - the reduced run: 3 primaries, RESHARD_USERS (50k) users with state
    in every family, a 4th primary added and the cluster rebalanced
    under writers (libunread sync, async, pipelines, batches; redis-py
    RedisCluster; a global GRP.POST writer); every writer user equals
    its model, every other user's whole state (USER.INFO, RCPT counts)
    equals what it was, the writers' reads were exact, no client error,
    `redis-cli --cluster check` clean; then the 4th node emptied with
    `reshard` and removed with `del-node`, every user intact;
  - clients against a slot held open by hand (MIGRATING / IMPORTING):
    redis-py, libunread (sync and async, pipelines and batches too) and
    ioredis follow ASK (with ASKING) to the target and retry TRYAGAIN
    until the move ends; node-redis follows ASK and hands TRYAGAIN to
    the application (its cluster code has no case for it);
  - bad input: SETSLOT of a slot the node does not own, MIGRATE to a
    node that is not importing, a truncated or corrupt user record,
    RESTORE of a user that exists without REPLACE, wrong arity.

Every user of the reduced run has its counters compared before and after,
every RESHARD_SAMPLE-th (3) its whole USER.INFO.

The full runs (1M users, replicas and sentinels, the source or the
target killed mid-move): tests/faults/_reshard_full.py, make
test-reshard-full.
"""

import json
import os
import subprocess
import threading
import time

import reshard_rig as rr
from cluster_rig import Cluster, slots_of
from harness import Resp, is_err
from sentinel_rig import wait_until
import test_clients

USERS = int(os.environ.get("RESHARD_USERS") or 50000)
SAMPLE = int(os.environ.get("RESHARD_SAMPLE") or 3)  # whole-state checks


def node_id(node):
    return node.myid()


def test_rebalance_under_load_then_remove_a_shard():
    with Cluster(masters=3, replicas=0, unread_cap=1000000) as cl:
        rr.populate(cl, USERS)
        writers_n, per = 6, 500
        wusers = set(range(1, writers_n * per + 1))
        # Every user's counters; every SAMPLE-th one's whole state.
        others = [u for u in range(1, USERS + 1, SAMPLE) if u not in wusers]
        before = rr.snapshot(cl, others)
        totals = rr.totals(cl, USERS, skip=wusers)
        wbefore = rr.snapshot(cl, sorted(wusers), skip=rr.WRITER_LINES)
        map0 = rr.slot_map(cl.nodes[0])

        # A 4th primary joins, and the cluster is rebalanced under load.
        new = cl.new_node()
        cl.cli("--cluster", "add-node", new.addr(), cl.nodes[0].addr())
        rr.known_everywhere(cl, node_id(new))
        cl.wait_agree()
        writers = rr.start_writers(cl, cl.tmp, per=per, nice=10)
        try:
            time.sleep(2)  # the rate before the move
            t0 = rr.now_ms()
            out = cl.cli("--cluster", "rebalance", cl.nodes[0].addr(),
                         "--cluster-use-empty-masters", timeout=240)
            t1 = rr.now_ms()
            assert "Moving" in out, out
            time.sleep(1)
        finally:
            rr.stop_writers(writers)
        cl.wait_agree()
        map1 = rr.slot_map(cl.nodes[0])
        moved = rr.moved_users(map0, map1, USERS)
        assert new.port in set(map1), "the new node got no slots"
        before_rate, during = rr.rates(writers, t0, t1)
        print("moved %d users in %.2f s (%.0f users/s); writes/s before "
              "%.0f, during %.0f (%.0f%%)" % (
                  moved, (t1 - t0) / 1000.0,
                  moved * 1000.0 / max(1, t1 - t0), before_rate, during,
                  100.0 * during / max(1.0, before_rate)))
        rr.check_clean(cl, cl.nodes[0])
        problems = rr.check_model(cl, writers)
        assert not problems, "\n".join(problems)
        n, bad = rr.diff(before, rr.snapshot(cl, others))
        assert n == 0, "%d users changed by the move: %r" % (n, bad)
        n, bad = rr.diff(totals, rr.totals(cl, USERS, skip=wusers))
        assert n == 0, "%d users' counters changed by the move: %r" % (n, bad)
        n, bad = rr.diff(wbefore, rr.snapshot(cl, sorted(wusers),
                                              skip=rr.WRITER_LINES))
        assert n == 0, "%d writer users changed beyond the model: %r" % (
            n, bad)
        # COUNTKEYSINSLOT counts each user once, on its owner (the global
        # objects' ids are users' ids too here).
        for node in cl.masters():
            want = sum(1 for u in range(1, USERS + 1)
                       if map1[rr.slot(u)] == node.port)
            assert rr.count_keys(node) == want, node.port

        # Remove a shard: its slots resharded away, then del-node.
        victim = new
        vid = node_id(victim)
        to = [m for m in cl.masters() if m is not victim][0]
        nslots = len(slots_of(victim))
        cl.cli("--cluster", "reshard", cl.nodes[0].addr(),
               "--cluster-from", vid, "--cluster-to", node_id(to),
               "--cluster-slots", str(nslots), "--cluster-yes",
               timeout=240)
        wait_until(lambda: not slots_of(victim), 30,
                   "the emptied node to serve no slot")
        # no user left behind (its DBSIZE still counts the global
        # objects every node holds a copy of)
        assert rr.count_keys(victim, range(16384)) == 0
        out = cl.cli("--cluster", "del-node", cl.nodes[0].addr(), vid)
        assert "CLUSTER FORGET" in out, out
        # redis-cli 7 resets the deleted node (CLUSTER RESET SOFT; older
        # ones shut it down): it is stopped here.
        victim.stop()
        victim.proc = None
        wait_until(lambda: all(vid not in [x["id"] for x in n.nodes()]
                               for n in cl.live()), 20,
                   "every node to forget the deleted one")
        cl.wait_agree()
        rr.check_clean(cl, cl.nodes[0])
        n, bad = rr.diff(before, rr.snapshot(cl, others))
        assert n == 0, "%d users changed by the removal: %r" % (n, bad)
        n, bad = rr.diff(totals, rr.totals(cl, USERS, skip=wusers))
        assert n == 0, "%d users' counters changed by the removal: %r" % (
            n, bad)
test_rebalance_under_load_then_remove_a_shard.timeout = 240


def two_uids_of_one_slot(lo=5000000):
    seen = {}
    for u in range(lo, lo + 200000):
        s = rr.slot(u)
        if s in seen:
            return seen[s], u, s
        seen[s] = u
    raise AssertionError("no two uids of one slot")


def open_slot(cl, s):
    """Slot s MIGRATING on its owner and IMPORTING on another master:
    (source, target)."""
    m = rr.slot_map(cl.nodes[0])
    src = [n for n in cl.masters() if n.port == m[s]][0]
    dst = [n for n in cl.masters() if n is not src][0]
    assert dst.cmd("CLUSTER", "SETSLOT", s, "IMPORTING",
                   node_id(src)) == "OK"
    assert src.cmd("CLUSTER", "SETSLOT", s, "MIGRATING",
                   node_id(dst)) == "OK"
    return src, dst


def close_slot(cl, s, dst, src):
    """SETSLOT NODE as redis-cli sends it: the target, the source, the
    others."""
    for n in [dst, src] + [x for x in cl.masters() if x not in (src, dst)]:
        assert n.cmd("CLUSTER", "SETSLOT", s, "NODE", node_id(dst)) == "OK"


def migrate(src, dst, *uids):
    return src.cmd("MIGRATE", "127.0.0.1", dst.port, "", 0, 5000, "KEYS",
                   *uids)


# redis-py RedisCluster against one open slot: a write to a user the
# source still holds (served there), to a new user (ASK to the target),
# and a two-user read whose users are split (TRYAGAIN, retried until the
# rig ends the move: the rig waits for "go" on stdout).
REDIS_PY_ASK = r'''
import json, sys, time
from redis.cluster import RedisCluster, ClusterNode
port, held, new = [int(x) for x in sys.argv[1:4]]
rc = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", port)])
out = [rc.execute_command("CNT.INCR", held, 0, 1),
       rc.execute_command("CNT.INCR", new, 0, 1)]
print("go", flush=True)
out.append(rc.execute_command("CNT.MTOTAL", held, new))
print(json.dumps(out))
'''


def test_clients_follow_ask_and_tryagain():
    with Cluster(masters=3, replicas=0, unread_cap=1000000) as cl:
        held, moved, s = two_uids_of_one_slot()
        # held stays on the source; moved is migrated to the target.
        for u in (held, moved):
            rr.routed(cl, [["CNT.INCR", u, 0, 5]])
        src, dst = open_slot(cl, s)
        assert migrate(src, dst, moved) == "OK"
        # The source serves what it holds, ASKs for the rest.
        assert src.cmd("CNT.GET", held, 0) == 5
        r = src.cmd("CNT.GET", moved, 0)
        assert is_err(r, "ASK") and r.text == "ASK %d 127.0.0.1:%d" % (
            s, dst.port), r
        r = src.cmd("CNT.MTOTAL", held, moved)
        assert is_err(r, "TRYAGAIN"), r
        # The target serves a migrating user only after ASKING.
        assert is_err(dst.cmd("CNT.GET", moved, 0), "MOVED")
        with Resp(dst.port) as c:
            assert c.cmd("ASKING") == "OK"
            assert c.cmd("CNT.GET", moved, 0) == 5
            assert is_err(c.cmd("CNT.GET", moved, 0), "MOVED")  # once

        # redis-py: ASK followed, TRYAGAIN retried until the move ends.
        script = os.path.join(cl.tmp, "ask.py")
        with open(script, "w") as f:
            f.write(REDIS_PY_ASK)
        p = subprocess.Popen([rr.DEBIAN_PY, script, str(src.port),
                              str(held), str(moved)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        # The two-user read after "go" is TRYAGAIN (held and moved are
        # split) until the rig has finished the move.
        line = p.stdout.readline()
        assert line.strip() == "go", (line, p.stderr.read())
        time.sleep(0.1)
        assert migrate(src, dst, held) == "OK"
        close_slot(cl, s, dst, src)
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err[-2000:]
        got = json.loads(out.strip().splitlines()[-1])
        assert got[0] == [6, 6] and got[1] == [6, 6], got
        assert got[2] == [6, 6], got

        # libunread, sync and async: the same on a fresh open slot.
        from test_client_cluster import Drv
        for mode in ("sync", "async"):
            a, b, s2 = two_uids_of_one_slot(7000000 + (mode == "async") *
                                            300000)
            rr.routed(cl, [["CNT.INCR", a, 0, 2], ["CNT.INCR", b, 0, 3]])
            src, dst = open_slot(cl, s2)
            assert migrate(src, dst, b) == "OK"
            d = Drv(mode, src.addr())
            try:
                assert d.incr(a, 0, 1) == (0, 3, 3)   # still on the source
                assert d.incr(b, 0, 1) == (0, 4, 4)   # ASK to the target
                # a batch of b's (one slot): ASK, retried once, applied once
                if mode == "sync":
                    r = d.do("batch %d %d" % (b, b))[0]
                    assert r == "batch 0 [[5,5],[6,6]]", r
                    r = d.do("pipe %d %d %d" % (a, b, a))[0]
                    assert r == "pipe 0:[4,4] 0:[7,7] 0:[5,5]", r
                timer = threading.Timer(0.03, lambda: (
                    migrate(src, dst, a), close_slot(cl, s2, dst, src)))
                timer.start()
                rc, totals = d.mtotal([a, b])  # TRYAGAIN until moved
                timer.join()
                want = [5, 7] if mode == "sync" else [3, 4]
                assert rc == 0 and totals == want, (mode, rc, totals)
                for u, v in zip((a, b), want):
                    assert dst.cmd("CNT.GET", u, 0) == v
                    assert is_err(src.cmd("CNT.GET", u, 0), "MOVED")
            finally:
                d.close()

        # ioredis and node-redis.
        d = test_clients._node_clients()
        if d is None:
            return
        script = os.path.join(d, "unreadd_reshard_test.mjs")
        with open(script, "w") as f:
            f.write(NODE_ASK_JS)
        for which, lo in (("ioredis", 8000000), ("node-redis", 8500000)):
            a, b, s3 = two_uids_of_one_slot(lo)
            rr.routed(cl, [["CNT.INCR", a, 0, 1]])
            src, dst = open_slot(cl, s3)
            p = subprocess.Popen(["node", script, str(src.port), str(a),
                                  str(b), which], cwd=d,
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            assert p.stdout.readline().strip() == "go", p.stderr.read()
            time.sleep(0.1)
            assert migrate(src, dst, a) == "OK"
            close_slot(cl, s3, dst, src)
            out, err = p.communicate(timeout=60)
            assert p.returncode == 0, err[-2000:]
            got = json.loads(out.strip().splitlines()[-1])
            if which == "node-redis":
                # (the rig's 0.1 s before the move ends: TRYAGAIN seen)
                assert got == [[2, 2], [1, 1], [2, 1],
                               "tryagain-surfaced"], (which, got)
            else:
                assert got == [[2, 2], [1, 1], [2, 1]], (which, got)
test_clients_follow_ask_and_tryagain.timeout = 300


NODE_ASK_JS = r'''
import { createCluster } from 'redis';
import Redis from 'ioredis';
const [port, a, b, which] = [Number(process.argv[2]), process.argv[3], process.argv[4], process.argv[5]];
const out = [];
if (which === 'ioredis') {
  const c = new Redis.Cluster([{ host: '127.0.0.1', port }]);
  out.push(await c.call('CNT.INCR', a, '0', '1'));
  out.push(await c.call('CNT.INCR', b, '0', '1'));
  console.log('go');
  out.push(await c.call('CNT.MTOTAL', a, b));
  c.disconnect();
} else {
  const c = createCluster({ rootNodes: [{ url: `redis://127.0.0.1:${port}` }] });
  c.on('error', e => { console.error('node-redis', e); });
  await c.connect();
  out.push(await c.sendCommand(a, false, ['CNT.INCR', a, '0', '1']));
  out.push(await c.sendCommand(b, false, ['CNT.INCR', b, '0', '1']));
  console.log('go');
  // node-redis 5/6 follow MOVED and ASK but hand TRYAGAIN to the caller
  // (its cluster code has no case for it): the application retries.
  let tries = 0;
  for (;;) {
    try { out.push(await c.sendCommand(a, true, ['CNT.MTOTAL', a, b])); break; }
    catch (e) {
      if (!String(e.message).startsWith('TRYAGAIN') || ++tries > 50) throw e;
      await new Promise(r => setTimeout(r, 20));
    }
  }
  out.push(tries > 0 ? 'tryagain-surfaced' : 'no-tryagain');
  await c.close();
}
console.log(JSON.stringify(out));
'''


def test_bad_setslot_and_migrate():
    with Cluster(masters=3, replicas=0, unread_cap=1000000) as cl:
        u, v, s = two_uids_of_one_slot(9000000)
        rr.routed(cl, [["CNT.INCR", u, 0, 4], ["CONV.SEQ", u, 1, 9],
                       ["CNT.INCR", v, 1, 2]])
        m = rr.slot_map(cl.nodes[0])
        src = [n for n in cl.masters() if n.port == m[s]][0]
        dst, third = [n for n in cl.masters() if n is not src]
        info0 = src.cmd("USER.INFO", u)

        # SETSLOT MIGRATING of a slot the node does not own.
        r = dst.cmd("CLUSTER", "SETSLOT", s, "MIGRATING", node_id(third))
        assert is_err(r) and "owner" in r.text.lower(), r
        # IMPORTING from itself, an unknown node, a bad slot, arity.
        r = src.cmd("CLUSTER", "SETSLOT", s, "IMPORTING", node_id(src))
        assert is_err(r), r
        r = dst.cmd("CLUSTER", "SETSLOT", s, "IMPORTING", "f" * 40)
        assert is_err(r) and "node" in r.text.lower(), r
        for bad in ((16384, "STABLE"), ("x", "STABLE"), (s, "SIDEWAYS"),
                    (s,)):
            r = src.cmd("CLUSTER", "SETSLOT", *bad)
            assert is_err(r), (bad, r)

        # MIGRATE to a node that is not importing the slot: an error,
        # the user still served by the source, unchanged.
        r = migrate(src, dst, u)
        assert is_err(r), r
        assert src.cmd("USER.INFO", u) == info0
        assert is_err(dst.cmd("CNT.GET", u, 0), "MOVED")
        # MIGRATE arity and junk.
        for bad in (("127.0.0.1",), ("127.0.0.1", dst.port, "", 0),
                    ("127.0.0.1", "port", "", 0, 100, "KEYS", u),
                    ("127.0.0.1", dst.port, "", 0, -5, "KEYS", u),
                    ("127.0.0.1", dst.port, "", 0, 100, "KEYS")):
            r = src.cmd("MIGRATE", *bad)
            assert is_err(r), (bad, r)
        # to a closed port: an IOERR-like error, nothing deleted
        r = src.cmd("MIGRATE", "127.0.0.1", 1, "", 0, 300, "KEYS", u)
        assert is_err(r), r
        assert src.cmd("USER.INFO", u) == info0


def test_bad_records():
    with Cluster(masters=3, replicas=0, unread_cap=1000000) as cl:
        u, v, s = two_uids_of_one_slot(9000000)
        rr.routed(cl, [["CNT.INCR", u, 0, 4], ["CONV.SEQ", u, 1, 9],
                       ["CNT.INCR", v, 1, 2]])
        m = rr.slot_map(cl.nodes[0])
        src = [n for n in cl.masters() if n.port == m[s]][0]
        dst, third = [n for n in cl.masters() if n is not src]
        info0 = src.cmd("USER.INFO", u)

        # DUMP / RESTORE: a truncated or corrupt record refused, nothing
        # applied; a user that exists needs REPLACE (BUSYKEY).
        w = [x for x in range(9000000, 9400000)
             if rr.slot(x) == s and x not in (u, v)][0]  # no such user
        rec = src.cmd("DUMP", u)
        assert isinstance(rec, bytes) and len(rec) > 10, rec
        assert src.cmd("DUMP", w) is None
        for bad in (rec[:-1], rec[:len(rec) // 2], b"",
                    rec[:8] + bytes([rec[8] ^ 0xFF]) + rec[9:],
                    rec[:-1] + bytes([rec[-1] ^ 0x01]), b"junk" * 10):
            r = src.cmd("RESTORE", w, 0, bad)
            assert is_err(r), (bad, r)
            r = src.cmd("RESTORE", u, 0, bad, "REPLACE")
            assert is_err(r), (bad, r)
        assert src.cmd("DUMP", w) is None
        assert src.cmd("USER.INFO", u) == info0
        r = src.cmd("RESTORE", u, 0, rec)
        assert is_err(r, "BUSYKEY"), r
        assert src.cmd("USER.INFO", u) == info0
        for bad in ((), (u,), (u, 0), (u, "x", rec), (u, 0, rec, "JUNK")):
            assert is_err(src.cmd("RESTORE", *bad)), bad
        assert is_err(src.cmd("DUMP"))
        # RESTORE of a user whose slot is another node's: MOVED.
        r = dst.cmd("RESTORE", u, 0, rec, "REPLACE")
        assert is_err(r, "MOVED"), r
        # A good REPLACE: u's state as it was dumped, whole.
        src.cmd("CNT.INCR", u, 0, 10)
        src.cmd("CONV.SEQ", u, 2, 3)
        assert src.cmd("RESTORE", u, 0, rec, "REPLACE") == "OK"
        assert src.cmd("USER.INFO", u) == info0
        assert src.cmd("CNT.GET", u, 0) == 4
        assert src.cmd("CNT.GET", v, 1) == 2
