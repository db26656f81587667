#!/usr/bin/env python3
"""unreadd behind libunread's sharding: `make bench-shards`.

    python3 bench/shards.py [--build DIR] [--shards 1,2,3] [--seconds S]
                            [--warmup S] [--reps N] [--keys N]
                            [--workloads a,b] [--no-pin] [--json FILE]

Starts one unreadd for a direct run and N more for each deployment of N
shards (persistence off, free ports, temp dirs), preloads the same users
into each deployment through `unread-bench --cluster` (each user lands on
the shard libunread's ring gives it), then runs every workload at pipeline
1 and 16 against the direct server and each deployment in turn, --reps
rounds, so drift on a shared machine hits all of them. Every run is
audited on every shard. Prints where the users landed, then one table:
median ops/s, the ratio to the direct server, p99, the client's CPU, the
servers' CPU (all shards together) and everyone else's.

The servers share CPU 0 and the client gets the others (as in `make
bench`), so on a 2-core machine more shards add no server CPU: the table
shows that routing works and what the sharded client costs, not scaling.
Python 3 standard library only; reuses bench/compare.py's machinery.
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
from compare import Failed, Pinning, Server, say  # noqa: E402

WORKLOADS = ["cnt-incr", "cnt-get"]
PIPELINES = [1, 16]
CONNECTIONS = 50


class Deployment:
    """The direct server (n = 0: one unreadd, no --cluster), or n shards
    driven with --cluster."""

    def __init__(self, n, build, pin):
        self.n = n
        self.servers = []
        for _ in range(max(n, 1)):
            self.servers.append(Server("unreadd", build, pin))

    @property
    def name(self):
        return "direct" if self.n == 0 else "%d shard%s" % (
            self.n, "s" if self.n > 1 else "")

    def target_args(self):
        if self.n == 0:
            return ["-p", self.servers[0].port]
        return ["--cluster", ",".join("127.0.0.1:%d" % s.port
                                      for s in self.servers)]

    def stop(self):
        for srv in self.servers:
            srv.stop()


def run(opts, pin, dep, workload, args):
    argv = pin.client + [
        os.path.join(opts.build, "unread-bench"), "--json", "-w", workload,
        "-T", str(pin.client_threads), "--audit"] + [
            str(a) for a in dep.target_args() + args]
    r = compare.measure(argv, [s.pid for s in dep.servers],
                        "%s on %s" % (workload, dep.name))
    if r["audit_mismatches"] != 0:
        raise Failed("%s on %s: DEBUG AUDIT found %d mismatches" % (
            workload, dep.name, r["audit_mismatches"]))
    return r


def placement(dep, keys):
    """Share of the users each shard holds."""
    counts = [int(s.info("memory")["cnt_users"]) for s in dep.servers]
    if sum(counts) != keys:
        raise Failed("%s holds %d users in all, expected %d" % (
            dep.name, sum(counts), keys))
    return ["%.1f%%" % (100.0 * c / keys) for c in counts]


def measure_all(opts, pin, deps):
    for dep in deps:
        t0 = time.monotonic()
        run(opts, pin, dep, opts.workloads[0],
            ["--load", "-r", opts.keys, "-c", 8, "-P", 64])
        say("  preload %-8s %d users in %.1f s; shares %s" % (
            dep.name, opts.keys, time.monotonic() - t0,
            " ".join(placement(dep, opts.keys))))
    runs = []
    for wl in opts.workloads:
        for depth in PIPELINES:
            for rep in range(opts.reps):
                for dep in deps:
                    r = run(opts, pin, dep, wl, [
                        "-c", CONNECTIONS, "-P", depth, "-d", opts.seconds,
                        "--warmup", opts.warmup, "-r", opts.keys,
                        "--seed", rep + 1])
                    r["deployment"] = dep.name
                    runs.append(r)
                    say("  %-8s P%-2d %-8s #%d %9.0f ops/s  p99 %7.1f us  "
                        "cores: client %.2f servers %.2f others %.2f" % (
                            wl, depth, dep.name, rep + 1, r["ops_per_sec"],
                            r["latency_us"]["p99"], r["client_cpu_cores"],
                            r["server_cpu_cores"], r["others_cpu_cores"]))
    return runs


def print_table(runs, deps, workloads):
    med = statistics.median
    say("")
    say("| workload | pipeline | deployment | ops/s | vs direct | p99 us "
        "| client CPU | servers' CPU | others' CPU |")
    say("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    rows = []
    for wl in workloads:
        for depth in PIPELINES:
            base = None
            for dep in deps:
                sel = [r for r in runs if r["workload"] == wl and
                       r["pipeline"] == depth and
                       r["deployment"] == dep.name]
                row = {
                    "workload": wl, "pipeline": depth,
                    "deployment": dep.name,
                    "ops": med([r["ops_per_sec"] for r in sel]),
                    "p99": med([r["latency_us"]["p99"] for r in sel]),
                    "client": med([r["client_cpu_cores"] for r in sel]),
                    "servers": med([r["server_cpu_cores"] for r in sel]),
                    "others": med([r["others_cpu_cores"] for r in sel]),
                }
                base = base or row["ops"]
                row["vs_direct"] = row["ops"] / base
                rows.append(row)
                say("| %s | %d | %s | %.0f | %.2f | %.0f | %.2f | %.2f | "
                    "%.2f |" % (wl, depth, dep.name, row["ops"],
                                row["vs_direct"], row["p99"], row["client"],
                                row["servers"], row["others"]))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--shards", default="1,2,3",
                    help="deployments to compare with the direct server")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--warmup", type=float, default=0.5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--keys", type=int, default=1000000)
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--no-pin", action="store_true")
    ap.add_argument("--json", help="write every run's figures here")
    opts = ap.parse_args()
    opts.build = os.path.join(compare.REPO, opts.build)
    opts.workloads = [w for w in opts.workloads.split(",") if w]
    shard_counts = [int(n) for n in opts.shards.split(",") if n]
    if any(n < 1 for n in shard_counts) or not opts.workloads:
        ap.error("--shards takes counts >= 1, --workloads at least one")

    m = {"nproc": os.cpu_count(), "cpu": compare.cpu_model()}
    pin = Pinning(not opts.no_pin)
    t0 = time.monotonic()
    say("machine: %d cores, %s; load average %s; %s" % (
        m["nproc"], m["cpu"], compare.loadavg(), pin.describe()))
    say("%d connections, pipelines %s, %.1f s runs (+%.1f s warm-up), %d "
        "users uniform, %d rounds" % (CONNECTIONS, PIPELINES, opts.seconds,
                                      opts.warmup, opts.keys, opts.reps))
    deps = []
    try:
        for n in [0] + shard_counts:
            deps.append(Deployment(n, opts.build, pin))
        runs = measure_all(opts, pin, deps)
        rows = print_table(runs, deps, opts.workloads)
    except Failed as e:
        say("shards: FAILED: %s" % e)
        return 1
    finally:
        for dep in deps:
            dep.stop()
    say("")
    say("vs direct: ops/s over the direct server's (one unreadd, no "
        "--cluster) in the same round.")
    if pin.on:
        say("All servers share CPU 0: more shards add no server CPU here.")
    say("%.0f s; load average at the end %s" % (time.monotonic() - t0,
                                                compare.loadavg()))
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"machine": m, "runs": runs, "rows": rows}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
