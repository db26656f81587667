"""Failover under real redis-sentinel (issue 20; docs/OPERATIONS.md,
"Replicas and failover"): three sentinels (down-after-milliseconds 1000,
quorum 2), one primary and two replicas on loopback. Each trial:

  1. three writers start: build/failover-writer (libunread given the
     sentinels and the master name: the synchronous handle, and the
     asynchronous one) and a redis-py Sentinel writer (in Debian's
     python3). Each write (CNT.INCR uid 0 1, or CONV.SEQ uid 1
     seq with seq rising) is followed by WAIT 1 100 on the same
     connection, and is "acknowledged" when WAIT answers >= 1;
  2. at a random moment the primary is killed with SIGKILL;
  3. the sentinels promote a replica; both writers must write again
     through it (the time from the kill to each one's first write is
     reported, down-after-milliseconds included);
  4. the old primary is started again on its port and dir, as a
     supervisor would: the sentinels turn it into a replica of the new
     primary, and it must converge (link up, same offset);
  5. checks on every node: no acknowledged write is missing (each user's
     counter >= its acknowledged increments and <= its attempts; its
     conversation's max >= its highest acknowledged seq), DEBUG AUDIT 0,
     and the same USER.INFO for sampled users (preloaded ones and the
     writers').

The group lives across trials, so each trial fails over from the previous
one's winner. FAILOVER_TRIALS trials (make test-failover: 20); with
FAULTS_QUICK=1 (make test) 2, else (make test-faults) 5.
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
from sentinel_rig import MASTER, Group, wait_until  # noqa: E402

QUICK = os.environ.get("FAULTS_QUICK") == "1"
TRIALS = int(os.environ.get("FAILOVER_TRIALS") or (2 if QUICK else 5))
WRITER = os.path.join(harness.BUILD, "failover-writer")
DEBIAN_PY = "/usr/bin/python3"  # python3-redis lives there
PRELOAD = 2000
NUIDS = 40  # users each writer spreads its writes over

# The redis-py writer: the same writes, lines and WAIT as failover_writer.c.
PY_WRITER = r"""
import signal, sys, time
import redis
from redis.sentinel import Sentinel
sents = [(h, int(p)) for h, p in (x.split(":") for x in sys.argv[1].split(","))]
name, base, nuids = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
stop = []
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
s = Sentinel(sents, socket_timeout=0.5)
m = s.master_for(name, socket_timeout=1.0, socket_connect_timeout=0.5)
out = sys.stdout
seq = 0
while not stop:
    seq += 1
    start = int(time.monotonic() * 1000)
    uid = base + seq % nuids
    kind = "V" if seq & 1 else "C"
    try:
        p = m.pipeline(transaction=False)
        if kind == "C":
            p.execute_command("CNT.INCR", uid, 0, 1)
        else:
            p.execute_command("CONV.SEQ", uid, 1, seq)
        p.execute_command("WAIT", 1, 100)
        res = p.execute(raise_on_error=False)
        ok = not isinstance(res[0], Exception)
        acked = ok and isinstance(res[1], int) and res[1] >= 1
        out.write("%s %s %d %d %d %d\n" % (
            "A" if acked else "W" if ok else "F", kind, uid, seq, start,
            int(time.monotonic() * 1000)))
    except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError,
            redis.sentinel.MasterNotFoundError) as e:
        out.write("F %s %d %d %d %d\n" % (kind, uid, seq, start,
                                          int(time.monotonic() * 1000)))
        time.sleep(0.02)
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
                if len(w) == 6 and w[0] in "AWF":
                    out.append((w[0], w[1], int(w[2]), int(w[3]), int(w[4]),
                                int(w[5])))
        return out

    def first_write_after(self, ms):
        """When the first write sent after ms was answered."""
        for st, _, _, _, start, end in self.lines():
            if st in "AW" and start > ms:
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


def expectations(lines):
    """Per uid: (acked CNT.INCRs, attempted CNT.INCRs, highest acked seq,
    highest attempted seq)."""
    exp = {}
    for st, kind, uid, seq, _, _ in lines:
        e = exp.setdefault(uid, [0, 0, 0, 0])
        if kind == "C":
            e[1] += 1
            e[0] += st == "A"
        else:
            e[3] = max(e[3], seq)
            if st == "A":
                e[2] = max(e[2], seq)
    return exp


def preload(node):
    with node.resp() as c:
        cmds = []
        for uid in range(1, PRELOAD + 1):
            cmds.append(("CNT.INCR", uid, uid % 5, uid % 7 + 1))
            cmds.append(("CONV.SEQ", uid, 2, uid % 50 + 1))
            if uid % 3 == 0:
                cmds.append(("GRP.JOIN", uid, uid % 11))
        for i in range(0, len(cmds), 500):
            for r in c.pipeline(cmds[i:i + 500]):
                assert not harness.is_err(r), r


def settle(g, timeout=120):
    """The master the sentinels agree on once the group is healthy under
    it. With down-after-milliseconds 1000 on a loaded machine a sentinel
    may find the new primary silent for a second while its links are
    killed and remade, and fail over once more: the checks then hold
    against whichever primary the sentinels settle on."""
    deadline = time.monotonic() + timeout
    while True:
        m = g.master()
        try:
            g.wait_healthy(m, timeout=30)
            return m
        except AssertionError:
            if time.monotonic() > deadline or g.master() is m:
                raise


def trial(g, t, rnd):
    old = g.master()
    base_c = 10 ** 7 * (t + 1)
    base_p = base_c + 10 ** 6
    sl = g.sentinel_list()
    writers = [
        Writer("libunread", [WRITER, sl, MASTER, str(base_c), str(NUIDS)],
               os.path.join(g.tmp, "w-c-%d.log" % t)),
        Writer("libunread-async", [WRITER, sl, MASTER,
                                   str(base_c + 5 * 10 ** 5), str(NUIDS),
                                   "async"],
               os.path.join(g.tmp, "w-a-%d.log" % t)),
        Writer("redis-py", [DEBIAN_PY, "-c", PY_WRITER, sl, MASTER,
                            str(base_p), str(NUIDS)],
               os.path.join(g.tmp, "w-p-%d.log" % t)),
    ]
    try:
        # Both writing before the kill.
        wait_until(lambda: all(any(x[0] == "A" for x in w.lines())
                               for w in writers), 20, "acknowledged writes")
        time.sleep(rnd.uniform(0.2, 1.5))
        old.kill9()  # reaped: nothing it answers after this
        kill_ms = time.monotonic() * 1000
        new = wait_until(lambda: g.sentinels[0].master_port() not in
                         (None, old.port) and g.sentinels[0].master_port(),
                         30, "a promotion")
        firsts = {}
        for w in writers:
            firsts[w.name] = wait_until(
                lambda w=w: w.first_write_after(kill_ms), 30,
                "%s to write after the kill" % w.name) - kill_ms
        time.sleep(0.3)
        old.start()  # as a supervisor restarts it
    finally:
        for w in writers:
            w.stop()
    primary = settle(g)
    # Checks, every node (all at the primary's offset now).
    sample = rnd.sample(range(1, PRELOAD + 1), 25)
    sample += [base_c + i for i in range(NUIDS)][:10]
    sample += [base_p + i for i in range(NUIDS)][:10]
    sample += [base_c + 5 * 10 ** 5 + i for i in range(NUIDS)][:5]
    infos = {n.port: [n.cmd("USER.INFO", u) for u in sample]
             for n in g.nodes}
    ref = infos[primary.port]
    for port, got in infos.items():
        for u, a, b in zip(sample, ref, got):
            assert a == b, "USER.INFO %d differs on %d:\n%r\n%r" % (
                u, port, a, b)
    for w in writers:
        exp = expectations(w.lines())
        for n in g.nodes:
            with n.resp() as c:
                for uid, (ack, tries, ackseq, maxseq) in exp.items():
                    v = c.cmd("CNT.GET", uid, 0)
                    assert ack <= v <= tries, \
                        "%s uid %d on %d: CNT %d, acked %d, tried %d" % (
                            w.name, uid, n.port, v, ack, tries)
                    st = c.cmd("CONV.STATE", uid, 1)
                    assert ackseq <= st[0] <= maxseq, \
                        "%s uid %d on %d: CONV max %d, acked %d, tried " \
                        "%d" % (w.name, uid, n.port, st[0], ackseq, maxseq)
    for n in g.nodes:
        assert n.cmd("DEBUG", "AUDIT") == 0, "DEBUG AUDIT on %d" % n.port
    return {"old": old.port, "new": new, "final": primary.port,
            "firsts": firsts,
            "acked": sum(sum(1 for x in w.lines() if x[0] == "A")
                         for w in writers)}


def main():
    if not os.path.exists(WRITER):
        print("%s not built (make)" % WRITER)
        print("0 passed, 1 failed")
        return 1
    seed = int(os.environ.get("FAILOVER_SEED") or time.time())
    rnd = random.Random(seed)
    print("failover: %d trials, seed %d" % (TRIALS, seed))
    passed = failed = 0
    times = []
    total_acked = 0
    try:
        g = Group(replicas=2, sentinels=3, down_after_ms=1000,
                  failover_timeout_ms=6000)
        g.__enter__()
    except Exception:
        traceback.print_exc()
        print("0 passed, 1 failed")
        return 1
    try:
        preload(g.master())
        for t in range(TRIALS):
            t0 = time.monotonic()
            try:
                r = trial(g, t, rnd)
            except Exception:
                failed += 1
                # the logs first: the runner shows the output's tail
                g.dump()
                traceback.print_exc(file=sys.stdout)
                print("trial %d: FAILED after %.1fs" % (t, time.monotonic() -
                                                         t0))
                break  # the group's state is unknown now
            passed += 1
            times += list(r["firsts"].values())
            total_acked += r["acked"]
            print("trial %d: ok: %d -> %d%s, kill to first write: %s, "
                  "%d writes acknowledged (%.1fs)" % (
                      t, r["old"], r["new"], "" if r["final"] == r["new"]
                      else " (then %d: a second failover)" % r["final"],
                      ", ".join("%s %.2fs" % (k, v / 1000)
                                for k, v in sorted(r["firsts"].items())),
                      r["acked"], time.monotonic() - t0), flush=True)
    finally:
        g.__exit__(None, None, None)
    if times and failed == 0:
        times.sort()
        print("kill -> first write over %d writers x trials: min %.2fs, "
              "median %.2fs, max %.2fs (goal <= 5s); %d acknowledged "
              "writes, 0 lost" % (len(times), times[0] / 1000,
                                  times[len(times) // 2] / 1000,
                                  times[-1] / 1000, total_acked))
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
