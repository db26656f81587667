"""The full resharding runs (issue 32; make test-reshard-full; not in make
test, the leading "_" keeps tests/run.py from running it): a 3-primary
cluster, each primary with a replica, three redis-sentinels watching
every shard, RESHARD_USERS (1,000,000) users with state in every family
(tests/integration/reshard_rig.py). A 4th primary (with a replica of its
own) is added by `redis-cli --cluster add-node` and the cluster is
rebalanced with `--cluster-use-empty-masters` while writers run through
libunread (sync, async, pipelines, batches) and redis-py RedisCluster.
Variants (RESHARD_VARIANTS, default all three):

  plain   the move alone: prints the time to move a quarter of the
          users, users moved per second, writes per second before and
          during the move (goal: during >= 50% of before);
  source  the primary a slot is being moved from is killed (-9) mid-move;
          sentinel promotes its replica, which must keep the slot's
          MIGRATING state; the old primary restarts as a replica; the
          move is finished by `redis-cli --cluster fix` + `rebalance`;
  target  the new primary (the importing side) is killed mid-move and
          restarted on its port and dir; `fix` + `rebalance` finish it.

In the kill variants every write is acknowledged only once a replica has
it (WAIT 1 100), so a failover may not lose it. After each: `redis-cli
--cluster check` clean, every writer user equal to its model (0 lost, 0
doubled), every other user (RESHARD_SAMPLE of them, default every 10th)
with the same whole state as before, DEBUG AUDIT 0 on every node.
Prints one line per variant and "N passed, N failed".
"""

import os
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
sys.dont_write_bytecode = True

import reshard_rig as rr  # noqa: E402
from cluster_failover import Sentinels  # noqa: E402
from cluster_rig import Cluster, slots_of  # noqa: E402
from sentinel_rig import wait_until  # noqa: E402

USERS = int(os.environ.get("RESHARD_USERS") or 1000000)
SAMPLE = int(os.environ.get("RESHARD_SAMPLE") or 10)
VARIANTS = (os.environ.get("RESHARD_VARIANTS") or
            "plain,source,target").split(",")
WRITERS, PER = 6, 2000


def migrating(cl):
    """(source node, slot) of a slot some live master shows as MIGRATING
    ("[slot->-id]" in its CLUSTER NODES), or None."""
    for n in cl.masters():
        for x in n.nodes():
            if "myself" in x["flags"]:
                for s in x["slots"]:
                    if "->-" in s:
                        return n, int(s[1:].split("-")[0])
    return None


def add_shard(cl):
    """A 4th primary and its replica, joined by redis-cli add-node."""
    new = cl.new_node()
    cl.cli("--cluster", "add-node", new.addr(), cl.nodes[0].addr())
    rr.known_everywhere(cl, new.myid())
    rep = cl.new_node()
    cl.cli("--cluster", "add-node", rep.addr(), cl.nodes[0].addr(),
           "--cluster-slave", "--cluster-master-id", new.myid())
    rr.known_everywhere(cl, rep.myid())
    cl.wait_agree(timeout=60)
    cl.wait_replicas(timeout=60)
    return new, rep


def variant(kind):
    t_start = time.monotonic()
    with Cluster(masters=3, replicas=1, unread_cap=1000000) as cl:
        # down-after 3 s: a primary busy with the rig's pipelines on a
        # loaded machine is not down
        sen = Sentinels(cl.tmp, cl.masters(), down_after_ms=3000)
        try:
            wait_until(sen.ready, 60, "the sentinels to see every shard")
            t = time.monotonic()
            rr.populate(cl, USERS, writers=WRITERS, per=PER)
            print("  %s: %d users populated in %.0f s" % (
                kind, USERS, time.monotonic() - t), flush=True)
            wusers = set(range(1, WRITERS * PER + 1))
            others = [u for u in range(1, USERS + 1, SAMPLE)
                      if u not in wusers]
            before = rr.snapshot(cl, others)
            map0 = rr.slot_map(cl.nodes[0])
            new, _ = add_shard(cl)
            writers = rr.start_writers(
                cl, cl.tmp, per=PER, wait=kind != "plain",
                modes=("sync", "async", "pipe", "batch") if kind == "plain"
                else ("sync", "async", "batch"))
            killed = None
            try:
                time.sleep(3)
                t0 = rr.now_ms()
                reb = subprocess.Popen(
                    ["redis-cli", "--cluster", "rebalance",
                     cl.nodes[0].addr(), "--cluster-use-empty-masters",
                     "--cluster-pipeline", "100"],
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    text=True)
                if kind != "plain":
                    # mid-move: once the new node holds ~1/3 of its share
                    wait_until(lambda: len(slots_of(new)) >= 1400 and
                               migrating(cl), 600, "the move to be under way",
                               step=0.01)
                    src, s = migrating(cl)
                    killed = src if kind == "source" else new
                    killed.kill9()
                    print("  %s: killed %d mid-move (slot %d moving from "
                          "%d)" % (kind, killed.port, s, src.port),
                          flush=True)
                out = reb.communicate(timeout=3600)[0]
                t1 = rr.now_ms()
                if kind == "plain":
                    assert reb.returncode == 0, out[-3000:]
                else:
                    finish_after_kill(cl, sen, kind, killed)
                t2 = rr.now_ms()
                time.sleep(1)
            finally:
                rr.stop_writers(writers)
            cl.wait_agree(timeout=60)
            map1 = rr.slot_map(cl.nodes[0])
            moved = rr.moved_users(map0, map1, USERS, to=new.port)
            b, d = rr.rates(writers, t0, t1)
            line = ("moved %d users (%.1f%%) in %.1f s: %.0f users/s; "
                    "writes/s before %.0f, during %.0f (%.0f%%)" % (
                        moved, 100.0 * moved / USERS, (t1 - t0) / 1000.0,
                        moved * 1000.0 / max(1, t1 - t0), b, d,
                        100.0 * d / max(1.0, b)))
            if kind != "plain":
                line += "; fix + rebalance %.1f s" % ((t2 - t1) / 1000.0)
            print("  %s: %s" % (kind, line), flush=True)
            rr.check_clean(cl, cl.nodes[0])
            problems = rr.check_model(cl, writers,
                                      allow_refused=kind != "plain", per=PER)
            assert not problems, "\n".join(problems)
            n, bad = rr.diff(before, rr.snapshot(cl, others))
            assert n == 0, "%d users changed by the move: %r" % (n, bad)
            for node in cl.live():
                assert node.cmd("DEBUG", "AUDIT") == 0, node.port
            if kind == "plain":
                assert d >= 0.5 * b, "throughput during the move %.0f < " \
                    "50%% of %.0f" % (d, b)
            return line + " (%.0f s)" % (time.monotonic() - t_start)
        except BaseException:
            cl.dump()
            raise
        finally:
            sen.stop()


def signatures(cl):
    """Each live node's view: its port, state and open-slot marks."""
    out = []
    for n in cl.live():
        try:
            marks = [s for x in n.nodes() for s in x["slots"]
                     if s.startswith("[")]
            out.append("%d:%s%s" % (n.port, n.cinfo().get("cluster_state"),
                                    ":" + ",".join(marks) if marks else ""))
        except Exception as e:
            out.append("%d:%r" % (n.port, e))
    return " ".join(out)


def finish_after_kill(cl, sen, kind, killed):
    """The operator's runbook (docs/OPERATIONS.md "A move was
    interrupted"): the source's replica promoted by sentinel, or the
    target restarted; then `--cluster fix` and `rebalance`."""
    if kind == "source":
        name = [k for k in sen.names if sen.master_port(k) == killed.port][0]
        wait_until(lambda: sen.master_port(name) not in
                   (None, killed.port), 60, "sentinel to promote a replica")
        new_port = sen.master_port(name)
        killed.start()  # comes back as a replica of the promoted one
        promoted = cl.by_port(new_port)
        try:
            wait_until(lambda: [x for x in killed.nodes()
                                if "myself" in x["flags"]][0]["master"] ==
                       promoted.myid(), 30,
                       "the old primary to become a replica of %d" %
                       new_port)
        except AssertionError:
            print("  %s: %s" % (kind, signatures(cl)), flush=True)
            raise
    else:
        time.sleep(0.5)
        killed.start()  # the importing side back from its journal
    # The nodes may disagree on the slot being moved until fix closes it
    # (redis-cli died between its SETSLOT NODEs): wait only for every
    # node to serve.
    try:
        wait_until(lambda: all(n.cinfo().get("cluster_state") == "ok"
                               for n in cl.live()), 60, "cluster_state:ok")
    except AssertionError:
        print("  %s: %s" % (kind, signatures(cl)), flush=True)
        raise
    print("  %s: before fix: %s" % (kind, signatures(cl)), flush=True)
    out = cl.cli("--cluster", "fix", cl.nodes[0].addr(), "--cluster-yes",
                 timeout=600, check=False)
    print("  %s: fix:\n    %s" % (kind, "\n    ".join(
        x.strip() for x in out.splitlines()
        if ">>>" in x or "***" in x or "ERR" in x or "Set as" in x or
        "Moving" in x)), flush=True)
    try:
        cl.wait_agree(timeout=60)
    except AssertionError:
        print("  %s: after fix: %s" % (kind, signatures(cl)), flush=True)
        raise
    cl.cli("--cluster", "rebalance", cl.nodes[0].addr(),
           "--cluster-use-empty-masters", timeout=3600)


def main():
    passed = failed = 0
    print("reshard full: %d users, variants %s" % (USERS,
                                                   ",".join(VARIANTS)))
    for kind in VARIANTS:
        try:
            line = variant(kind)
            passed += 1
            print("%s: ok: %s" % (kind, line), flush=True)
        except Exception:
            failed += 1
            traceback.print_exc(file=sys.stdout)
            print("%s: FAILED" % kind, flush=True)
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
