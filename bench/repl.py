#!/usr/bin/env python3
"""Replication's goals (issue 20), on loopback: `make bench-repl`
(REPL_ARGS: e.g. "--users 1000000 --seconds 5", "--only lag").

  throughput  a primary's cnt-incr P16 rate with 2 replicas attached vs
              none (goal >= 85%), and Redis 7's ratio measured the same
              way in the same run (--no-redis skips it)
  lag         a replica under cnt-incr P16: how far behind the primary its
              applied offset is, in time (the primary's offset is sampled
              every 20 ms; a replica at offset X at time t is behind by t
              minus the moment the primary had reached X): max and p99
              (goal <= 1 s)
  fullsync    a primary with --users users (10M) of 2 counters each; time
              from REPLICAOF on an empty replica to its link up at the
              primary's offset (goal <= 15 s)
  partial     a replica's link cut for 5 s (through a proxy that drops and
              refuses connections) while writes go on: the resync must be
              partial and send the missed stream only (bytes sent vs
              offset gained)

Measure only on a quiet machine (load average < 2); the load is printed
with every figure. Python 3 standard library only.
"""

import argparse
import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests",
                                "integration"))
from harness import Resp, free_port, info_flat  # noqa: E402


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def say(*a):
    print(*a, flush=True)


class Node:
    """An unreadd (kind "unreadd") or, as the reference, a redis-server
    (kind "redis": persistence off, the same backlog) on a free port."""

    def __init__(self, build, *extra, kind="unreadd"):
        self.kind = kind
        self.tmp = tempfile.TemporaryDirectory(prefix="unread-repl-bench-")
        self.port = free_port()
        self.log = open(os.path.join(self.tmp.name, "log"), "ab")
        if kind == "unreadd":
            argv = [os.path.join(build, "unreadd"), "--save-seconds", "0",
                    "--loglevel", "warning"]
        else:
            argv = ["redis-server", "--save", "", "--appendonly", "no",
                    "--daemonize", "no", "--loglevel", "warning"]
        self.proc = subprocess.Popen(
            argv + ["--port", str(self.port), "--bind", "127.0.0.1", "--dir",
                    self.tmp.name, "--repl-backlog-size", "268435456"]
            + [str(x) for x in extra],
            stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), 1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("%s did not start" % kind)
                time.sleep(0.02)

    def info(self):
        with Resp(self.port, 30) as c:
            return info_flat(c.cmd("INFO", "replication"))

    def cmd(self, *a):
        with Resp(self.port, 120) as c:
            return c.cmd(*a)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.tmp.cleanup()


def bench(opts, port, workload="cnt-incr", seconds=None, extra=(),
          target="binary"):
    argv = [os.path.join(opts.build, "unread-bench"), "-j", "-t", target,
            "-p", str(port),
            "-w", workload, "-c", "50", "-P", "16", "-r", str(opts.keys),
            "-d", str(seconds or opts.seconds)] + list(extra)
    p = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
    if p.returncode != 0:
        raise RuntimeError("unread-bench failed: %s %s" % (p.stdout, p.stderr))
    return json.loads(p.stdout)


def synced(primary, replicas, timeout=600):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        off = int(primary.info()["master_repl_offset"])
        ok = True
        for r in replicas:
            i = r.info()
            if i.get("master_link_status") != "up" or \
                    int(i["slave_repl_offset"]) != off:
                ok = False
        if ok:
            return
        time.sleep(0.01)
    raise RuntimeError("replicas did not catch up")


def cpu_seconds(pid):
    """user + system CPU seconds of process pid so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def throughput_of(opts, kind):
    """cnt-incr P16 on a primary of `kind` with 0, then 2 replicas of the
    same kind. Returns (rate with 2 / rate without, primary CPU per op
    without / with 2): the second is what the rate would be on a machine
    where the primary has a core of its own."""
    rate, cost = {}, {}
    for n in (0, 2):
        p = Node(opts.build, kind=kind)
        reps = [Node(opts.build, "--replicaof", "127.0.0.1 %d" % p.port,
                     kind=kind) if kind == "unreadd" else
                Node(opts.build, "--replicaof", "127.0.0.1", p.port,
                     kind=kind) for _ in range(n)]
        try:
            if reps:
                synced(p, reps)
            procs = [p] + reps
            cpu0 = [cpu_seconds(x.proc.pid) for x in procs]
            t0 = time.monotonic()
            r = bench(opts, p.port,
                      target="binary" if kind == "unreadd" else "redis")
            wall = time.monotonic() - t0
            cores = [(cpu_seconds(x.proc.pid) - c) / wall
                     for x, c in zip(procs, cpu0)]
            rate[n] = r["ops_per_sec"] if "ops_per_sec" in r else r["ops"]
            cost[n] = cores[0] / rate[n]
            say("  %s, %d replicas: %.0f ops/s; cores: primary %.2f%s; "
                "primary %.2f us CPU per op (load %s)" %
                (kind, n, rate[n], cores[0],
                 "".join(", replica %.2f" % c for c in cores[1:]),
                 cost[n] * 1e6, loadavg()))
        finally:
            for x in reps + [p]:
                x.stop()
    return rate[2] / rate[0], cost[0] / cost[2]


def throughput(opts):
    """unreadd's ratio, and Redis 7's measured the same way in the same
    run. On a machine with fewer cores than the primary, the two replicas
    and the client need, the replicas' CPU is taken from the primary's:
    Redis's ratio shows how much of the drop is the machine's, and the
    primary's CPU per op (with replicas vs without) what the ratio would be
    with a core per process."""
    ratio, own = throughput_of(opts, "unreadd")
    ref = None
    if not opts.no_redis:
        ref, ref_own = throughput_of(opts, "redis")
    say("throughput with 2 replicas: %.1f%% of without (goal >= 85%%)%s" %
        (100 * ratio, "" if ref is None else
         "; Redis 7 in the same run: %.1f%%" % (100 * ref)))
    say("primary CPU per op without / with 2 replicas (the ratio with a "
        "core per process): unreadd %.1f%%%s" %
        (100 * own, "" if ref is None else
         ", Redis 7 %.1f%%" % (100 * ref_own)))
    return ratio


def lag(opts):
    p = Node(opts.build)
    r = Node(opts.build, "--replicaof", "127.0.0.1 %d" % p.port)
    samples, stop = [], []
    try:
        synced(p, [r])

        def sampler():
            pc, rc = Resp(p.port, 30), Resp(r.port, 30)
            while not stop:
                t = time.monotonic()
                po = int(info_flat(pc.cmd("INFO", "replication"))
                         ["master_repl_offset"])
                ro = int(info_flat(rc.cmd("INFO", "replication"))
                         ["slave_repl_offset"])
                samples.append((t, po, ro))
                time.sleep(0.02)
        th = threading.Thread(target=sampler)
        th.start()
        bench(opts, p.port)
        stop.append(1)
        th.join()
    finally:
        r.stop()
        p.stop()
    lags = []
    j = 0
    for t, _, ro in samples:
        # the first sample where the primary had reached ro
        while j < len(samples) and samples[j][1] < ro:
            j += 1
        k = min(j, len(samples) - 1)
        while k > 0 and samples[k - 1][1] >= ro:
            k -= 1
        lags.append(max(0.0, t - samples[k][0]))
    lags.sort()
    p99 = lags[int(len(lags) * 0.99)] if lags else 0
    say("replica lag under cnt-incr P16: max %.3f s, p99 %.3f s over %d "
        "samples (goal <= 1 s; sampling resolution 20 ms; load %s)" %
        (lags[-1] if lags else 0, p99, len(lags), loadavg()))
    return lags[-1] if lags else 0


def fullsync(opts):
    p = Node(opts.build, "--journal", "no")
    r = None
    try:
        t0 = time.monotonic()
        argv = [os.path.join(opts.build, "unread-bench"), "-p", str(p.port),
                "-w", "cnt-incr", "--load", "-r", str(opts.users), "--types",
                "2", "-c", "50", "-P", "64"]
        subprocess.run(argv, check=True, capture_output=True, timeout=3600)
        say("  loaded %d users x 2 counters in %.1f s" %
            (opts.users, time.monotonic() - t0))
        r = Node(opts.build)
        t0 = time.monotonic()
        r.cmd("REPLICAOF", "127.0.0.1", p.port)
        synced(p, [r])
        dt = time.monotonic() - t0
        users = r.cmd("DBSIZE")
        say("full sync of %d users (2 counters each): %.1f s, replica holds "
            "%s users (goal <= 15 s; load %s)" % (opts.users, dt, users,
                                                  loadavg()))
        return dt
    finally:
        if r is not None:
            r.stop()
        p.stop()


class Proxy:
    """Forwards 127.0.0.1:port to the primary; cut() drops every
    connection and refuses new ones until heal()."""

    def __init__(self, target):
        self.target = target
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(8)
        self.port = self.ls.getsockname()[1]
        self.open = True
        self.pairs = []
        self.done = False
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        while not self.done:
            socks = [self.ls] + [s for pr in self.pairs for s in pr]
            rd, _, _ = select.select(socks, [], [], 0.05)
            for s in rd:
                if s is self.ls:
                    c, _ = self.ls.accept()
                    if not self.open:
                        c.close()
                        continue
                    u = socket.create_connection(("127.0.0.1", self.target))
                    self.pairs.append((c, u))
                    continue
                for a, b in list(self.pairs):
                    if s in (a, b):
                        other = b if s is a else a
                        try:
                            data = s.recv(1 << 16)
                        except OSError:
                            data = b""
                        if not data:
                            self.drop(a, b)
                        else:
                            other.sendall(data)

    def drop(self, a, b):
        for s in (a, b):
            try:
                s.close()
            except OSError:
                pass
        if (a, b) in self.pairs:
            self.pairs.remove((a, b))

    def cut(self):
        self.open = False
        for a, b in list(self.pairs):
            self.drop(a, b)

    def heal(self):
        self.open = True


def partial(opts):
    p = Node(opts.build)
    px = Proxy(p.port)
    r = Node(opts.build, "--replicaof", "127.0.0.1 %d" % px.port)
    try:
        synced(p, [r])
        before = info_flat(p.cmd("INFO", "everything"))
        off0 = int(r.info()["slave_repl_offset"])
        out0 = int(before["total_net_repl_output_bytes"])
        px.cut()
        bench(opts, p.port, seconds=5, extra=["-c", "4", "-P", "4"])
        px.heal()
        synced(p, [r])
        after = info_flat(p.cmd("INFO", "everything"))
        gained = int(r.info()["slave_repl_offset"]) - off0
        sent = int(after["total_net_repl_output_bytes"]) - out0
        ok_p = int(after["repl_sync_partial_ok"]) - \
            int(before["repl_sync_partial_ok"])
        full = int(after["repl_sync_full"]) - int(before["repl_sync_full"])
        say("partial resync after a 5 s cut: %d partial, %d full; %d stream "
            "bytes missed, %d bytes sent (%.3f x; load %s)" % (
                ok_p, full, gained, sent, sent / max(gained, 1), loadavg()))
        return ok_p == 1 and full == 0
    finally:
        px.done = True
        r.stop()
        p.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--keys", type=int, default=100000)
    ap.add_argument("--users", type=int, default=10000000)
    ap.add_argument("--no-redis", action="store_true",
                    help="throughput: skip Redis's reference ratio")
    ap.add_argument("--only", choices=["throughput", "lag", "fullsync",
                                       "partial"])
    opts = ap.parse_args()
    say("load average at start: %s" % loadavg())
    for name, fn in (("throughput", throughput), ("lag", lag),
                     ("fullsync", fullsync), ("partial", partial)):
        if opts.only in (None, name):
            fn(opts)


if __name__ == "__main__":
    main()
