"""Failover inside a cluster under real redis-sentinel (issue 31; docs/
OPERATIONS.md "Cluster"): a 3-primary, 3-replica unreadd cluster made by
`redis-cli --cluster create`, three sentinels each monitoring every
shard's primary (one `sentinel monitor shardN` per shard, quorum 2,
down-after-milliseconds 1000). Each trial:

  1. writers start: redis-py RedisCluster writers (Debian's python3),
     each write a CNT.INCR or CONV.SEQ of a user of any shard followed by
     WAIT 1 100 on the connection to that user's node, "acknowledged" when
     WAIT answers >= 1; a global writer publishing on BC channels of every
     shard the same way; with build/failover-writer built, libunread writers
     in cluster mode too (sync and async handles);
  2. at a random moment one shard's primary is killed with SIGKILL;
  3. sentinel promotes its replica (REPLICAOF NO ONE), which takes the
     slots at a new epoch; the writers must write to that shard again
     through the cluster (kill to first write on the shard reported);
  4. the old primary starts again on its port and dir: it learns it lost
     its slots and becomes a replica; every node's map agrees;
  5. checks: no acknowledged write lost, none applied twice (each user's
     counter between its acknowledged and attempted increments; its
     conversation's max between its highest acknowledged and attempted
     seq), every BC channel's head the same on every primary and between
     the acknowledged and attempted publishes, DEBUG AUDIT 0 everywhere.

The cluster lives across trials. CLUSTER_FAILOVER_TRIALS trials (make
test-cluster-failover: 10); with FAULTS_QUICK=1 (make test) 1, else 3.
Prints one line per trial and "N passed, N failed".
"""

import os
import random
import signal
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
sys.dont_write_bytecode = True

import harness  # noqa: E402
from cluster_rig import Cluster, bc_head, key_slot, slots_of  # noqa: E402
from harness import info_flat  # noqa: E402
from sentinel_rig import wait_until  # noqa: E402

QUICK = os.environ.get("FAULTS_QUICK") == "1"
TRIALS = int(os.environ.get("CLUSTER_FAILOVER_TRIALS") or
             (1 if QUICK else 3))
DEBIAN_PY = "/usr/bin/python3"
WRITER = os.path.join(harness.BUILD, "failover-writer")
NUIDS = 60
CHANNELS = [101, 102, 103, 104, 105, 106]

# One redis-py writer: per write, the owner's connection from RedisCluster's
# map, the write and WAIT 1 100 in one round trip; on MOVED or a dead node
# the map is reloaded. Lines: A|W|F kind uid seq start_ms end_ms.
PY_WRITER = r"""
import signal, sys, time
import redis
from redis.cluster import RedisCluster, ClusterNode
port, base, nuids, mode = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
chans = [int(x) for x in sys.argv[5].split(",")]
stop = []
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
rc = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", port)],
                  socket_timeout=1.0, socket_connect_timeout=0.5)
sys.stdout.reconfigure(line_buffering=True)  # the rig reads it live
out = sys.stdout
seq = 0
while not stop:
    seq += 1
    start = int(time.monotonic() * 1000)
    if mode == "global":
        key = chans[seq % len(chans)]
        kind = "B"
        uid = key
    else:
        uid = base + seq % nuids
        key = uid
        kind = "V" if seq & 1 else "C"
    try:
        node = rc.get_node_from_key(str(key))
        r = rc.get_redis_connection(node)
        p = r.pipeline(transaction=False)
        if kind == "C":
            p.execute_command("CNT.INCR", uid, 0, 1)
        elif kind == "V":
            p.execute_command("CONV.SEQ", uid, 1, seq)
        else:
            p.execute_command("BC.PUBLISH", key)
        p.execute_command("WAIT", 1, 100)
        res = p.execute(raise_on_error=False)
        ok = not isinstance(res[0], Exception)
        acked = ok and isinstance(res[1], int) and res[1] >= 1
        if not ok:
            # MOVED / CLUSTERDOWN: not applied; reload the map
            time.sleep(0.05)
            rc.nodes_manager.initialize()
        out.write("%s %s %d %d %d %d\n" % (
            "A" if acked else "W" if ok else "N", kind, uid, seq, start,
            int(time.monotonic() * 1000)))
    except Exception as e:
        out.write("F %s %d %d %d %d\n" % (kind, uid, seq, start,
                                          int(time.monotonic() * 1000)))
        time.sleep(0.05)
        try:
            rc.nodes_manager.initialize()
        except Exception:
            pass
out.flush()
"""


class Writer:
    def __init__(self, name, argv, path):
        self.name = name
        self.path = path
        self.proc = subprocess.Popen(argv, stdout=open(path, "w"),
                                     stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)

    def lines(self):
        out = []
        with open(self.path) as f:
            for line in f:
                w = line.split()
                if len(w) == 6 and w[0] in "AWFN":
                    out.append((w[0], w[1], int(w[2]), int(w[3]), int(w[4]),
                                int(w[5])))
        return out

    def first_write_after(self, ms, keys):
        """When the first write sent after ms to one of keys was applied
        (acknowledged or not by a replica: the promoted one has none
        until its old primary is back)."""
        for st, _, key, _, start, end in self.lines():
            if st in "AW" and start > ms and key in keys:
                return end
        return None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("writer %s ignored SIGTERM" % self.name)
        if self.proc.returncode != 0:
            tail = open(self.path, errors="replace").read()[-3000:]
            raise AssertionError("writer %s exited with %s:\n%s" % (
                self.name, self.proc.returncode, tail))


class Sentinels:
    """Three redis-sentinel processes, each monitoring every shard."""

    def __init__(self, root, masters, down_after_ms=1000,
                 failover_timeout_ms=6000):
        self.procs = []
        self.ports = []
        for i in range(3):
            d = os.path.join(root, "sentinel%d" % i)
            os.makedirs(d, exist_ok=True)
            port = harness.free_port()
            conf = os.path.join(d, "sentinel.conf")
            with open(conf, "w") as f:
                f.write("port %d\nbind 127.0.0.1\ndir %s\n" % (port, d))
                for k, m in enumerate(masters):
                    name = "shard%d" % k
                    f.write("sentinel monitor %s 127.0.0.1 %d 2\n" %
                            (name, m.port))
                    f.write("sentinel down-after-milliseconds %s %d\n" %
                            (name, down_after_ms))
                    f.write("sentinel failover-timeout %s %d\n" %
                            (name, failover_timeout_ms))
            self.ports.append(port)
            self.procs.append(subprocess.Popen(
                ["redis-sentinel", conf], stdin=subprocess.DEVNULL,
                stdout=open(os.path.join(d, "sentinel.log"), "ab"),
                stderr=subprocess.STDOUT, cwd=d))
        self.names = ["shard%d" % k for k in range(len(masters))]

    def cmd(self, i, *args):
        with harness.Resp(self.ports[i], timeout=5.0) as c:
            return c.cmd(*args)

    def master_port(self, name):
        r = self.cmd(0, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", name)
        return int(r[1]) if isinstance(r, list) else None

    def ready(self):
        for i in range(3):
            for name in self.names:
                m = self.cmd(i, "SENTINEL", "MASTER", name)
                d = {m[k].decode(): m[k + 1].decode()
                     for k in range(0, len(m), 2)}
                if d["flags"] != "master" or int(d["num-slaves"]) < 1 or \
                        int(d["num-other-sentinels"]) < 2:
                    return False
        return True

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


def expectations(lines):
    exp = {}
    for st, kind, key, seq, _, _ in lines:
        e = exp.setdefault((kind, key), [0, 0, 0, 0])
        if kind in "CB":
            e[1] += 1
            e[0] += st == "A"
        else:
            e[3] = max(e[3], seq)
            if st == "A":
                e[2] = max(e[2], seq)
    return exp


def quiet(cl):
    def delivered():
        for n in cl.masters():
            for k, v in info_flat(n.cmd("INFO", "cluster")).items():
                if k.startswith("cluster_peer") and v.find("role=master") >= 0 \
                        and v.find("link=up") >= 0 and "pending=0," not in v:
                    return False
        return True
    wait_until(delivered, 30, "the global copies to be delivered")


def trial(cl, sen, t, rnd):
    base = 10 ** 7 * (t + 1)
    port0 = cl.masters()[0].port
    writers = [
        Writer("redis-py", [DEBIAN_PY, "-c", PY_WRITER, str(port0),
                            str(base), str(NUIDS), "user", "0"],
               os.path.join(cl.tmp, "w-p-%d.log" % t)),
        Writer("redis-py-global", [DEBIAN_PY, "-c", PY_WRITER, str(port0),
                                   "0", "0", "global",
                                   ",".join(str(c + 1000 * t)
                                            for c in CHANNELS)],
               os.path.join(cl.tmp, "w-g-%d.log" % t)),
    ]
    if os.path.exists(WRITER):
        for mode in ("sync", "async"):
            writers.append(Writer(
                "libunread-" + mode,
                [WRITER, "--cluster", "127.0.0.1:%d" % port0,
                 str(base + (5 if mode == "sync" else 6) * 10 ** 5),
                 str(NUIDS), mode],
                os.path.join(cl.tmp, "w-%s-%d.log" % (mode, t))))
    victim = rnd.choice(cl.masters())
    vslots = slots_of(victim)
    try:
        wait_until(lambda: all(any(x[0] == "A" for x in w.lines())
                               for w in writers), 30, "acknowledged writes")
        time.sleep(rnd.uniform(0.2, 1.5))
        victim.kill9()
        kill_ms = time.monotonic() * 1000
        name = None
        for k in sen.names:
            if sen.master_port(k) == victim.port:
                name = k
        assert name, "no sentinel name for %d" % victim.port
        new = wait_until(lambda: sen.master_port(name) not in
                         (None, victim.port) and sen.master_port(name),
                         30, "a promotion")
        keys = {w.name: {x[2] for x in w.lines() if key_slot(x[2]) in vslots}
                for w in writers}
        firsts = {}
        for w in writers:
            if not keys[w.name]:
                continue
            firsts[w.name] = wait_until(
                lambda w=w: w.first_write_after(kill_ms, keys[w.name]), 30,
                "%s to write to the shard again" % w.name) - kill_ms
        time.sleep(0.3)
        victim.start()
    finally:
        for w in writers:
            w.stop()
    # The old primary follows the new one; every node agrees.
    wait_until(lambda: [x for x in victim.nodes() if "myself" in x["flags"]]
               [0]["master"] == cl.by_port(new).myid(), 20,
               "the old primary to become a replica")
    wait_until(lambda: info_flat(victim.cmd("INFO", "replication"))
               .get("master_link_status") == "up", 30,
               "the old primary's link")
    cl.wait_agree(timeout=30)
    quiet(cl)
    masters = cl.masters()
    for w in writers:
        for (kind, key), (ack, tries, ackseq, maxseq) in \
                expectations(w.lines()).items():
            if kind == "B":
                hs = {bc_head(m, key) for m in masters}
                assert len(hs) == 1, "channel %d heads differ: %r" % (key, hs)
                h = hs.pop()
                assert ack <= h <= tries, \
                    "channel %d head %d, acked %d, tried %d" % (
                        key, h, ack, tries)
                continue
            owner = cl.owner(key)
            if kind == "C":
                v = owner.cmd("CNT.GET", key, 0)
                assert ack <= v <= tries, "%s uid %d: CNT %d, acked %d, " \
                    "tried %d" % (w.name, key, v, ack, tries)
            else:
                st = owner.cmd("CONV.STATE", key, 1)
                assert ackseq <= st[0] <= maxseq, \
                    "%s uid %d: CONV max %d, acked %d, tried %d" % (
                        w.name, key, st[0], ackseq, maxseq)
    for n in cl.live():
        assert n.cmd("DEBUG", "AUDIT") == 0, "DEBUG AUDIT on %d" % n.port
    return {"old": victim.port, "new": new, "firsts": firsts,
            "acked": sum(sum(1 for x in w.lines() if x[0] == "A")
                         for w in writers)}


def main():
    seed = int(os.environ.get("FAILOVER_SEED") or time.time())
    rnd = random.Random(seed)
    print("cluster failover: %d trials, seed %d" % (TRIALS, seed))
    passed = failed = 0
    times = []
    total = 0
    cl = Cluster(masters=3, replicas=1)
    sen = None
    try:
        cl.__enter__()
        sen = Sentinels(cl.tmp, cl.masters())
        wait_until(sen.ready, 30, "the sentinels to see every shard")
    except Exception:
        traceback.print_exc(file=sys.stdout)
        if sen:
            sen.stop()
        cl.__exit__(None, None, None)
        print("0 passed, 1 failed")
        return 1
    try:
        for t in range(TRIALS):
            t0 = time.monotonic()
            try:
                r = trial(cl, sen, t, rnd)
                wait_until(sen.ready, 60, "the sentinels to settle")
            except Exception:
                failed += 1
                cl.dump()
                traceback.print_exc(file=sys.stdout)
                print("trial %d: FAILED after %.1fs" % (
                    t, time.monotonic() - t0))
                break
            passed += 1
            times += list(r["firsts"].values())
            total += r["acked"]
            print("trial %d: ok: %d -> %d, kill to first write "
                  "on the shard: %s, %d writes acknowledged (%.1fs)" % (
                      t, r["old"], r["new"],
                      ", ".join("%s %.2fs" % (k, v / 1000)
                                for k, v in sorted(r["firsts"].items())),
                      r["acked"], time.monotonic() - t0), flush=True)
    finally:
        sen.stop()
        cl.__exit__(None, None, None)
    if times and failed == 0:
        times.sort()
        print("kill -> first write on the shard, %d writers x "
              "trials: min %.2fs, median %.2fs, max %.2fs (goal <= 5s); %d "
              "acknowledged writes, 0 lost, 0 doubled" % (
                  len(times), times[0] / 1000, times[len(times) // 2] / 1000,
                  times[-1] / 1000, total))
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
