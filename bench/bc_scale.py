#!/usr/bin/env python3
"""BC.PUBLISH costs the same whatever the audience: bc-publish with 1M and
then 10M users registered in the channel, unreadd beside Redis, and what
publishing by fan-out would cost instead.

    python3 bench/bc_scale.py [--build DIR] [--users N,N,...] [--seconds S]
                              [--reps N] [--no-pin] [--json FILE]

Starts unreadd and redis-server as compare.py does (its helpers: free
ports, persistence off, pinning, noisy pairs run again). For each audience
size N, smallest first, registers users 0..N-1 in channel 0 with the
bc-unread load step (--types 1: BC.READ on unreadd, FCALL bc_read on Redis;
the users of the smaller size are registered again, which changes
nothing), checks that both servers hold N (INFO bc_subscriptions, HLEN
bo:0), then runs bc-publish to that channel (BC.PUBLISH 0 against INCR
bh:0, O(1) on both) A B A B A B at pipelines 1 and 16. Prints each size's
figures and, per server, the largest size's throughput over the smallest's.

Then the alternative BC replaces: a counter per user, so that a publish is
one HINCRBY per registered user. Redis's pipelined HINCRBY rate
(redis-benchmark, HINCRBY bf:<random uid> 0 1) gives the seconds of
Redis's one core a fan-out publish would take at each size.
Python 3 standard library only.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
from compare import Failed, Pinning, Resp, Server, say  # noqa: E402

WORKLOAD = "bc-publish"
FANOUT_REQUESTS = 2000000


def register(opts, pin, servers, users):
    """Users 0..users-1 registered in channel 0 on each server."""
    for srv in servers:
        t0 = time.monotonic()
        compare.bench(opts.build, pin, srv, "bc-unread",
                      ["--load", "-r", users, "--types", 1, "-c", 8,
                       "-P", 256])
        say("  registered %d users on %-7s in %.1f s" % (
            users, srv.kind, time.monotonic() - t0))
    unr, red = servers
    held = int(unr.info("memory")["bc_subscriptions"])
    with Resp(red.port, 30) as c:
        hlen = c.cmd("HLEN", "bo:0")
    if held != users or hlen != users:
        raise Failed("%d users registered, unreadd holds %d, redis %d" % (
            users, held, hlen))


def publish_runs(opts, pin, servers, users, budget):
    runs = []
    for depth in compare.PIPELINES:
        for rep in range(opts.reps):
            args = ["-c", compare.CONNECTIONS, "-P", depth,
                    "-d", opts.seconds, "--warmup", opts.warmup,
                    "-r", users, "--types", 1, "--seed", rep + 1]
            for r in compare.pair(opts, pin, servers, WORKLOAD, args, rep,
                                  budget):
                r["users"] = users
                runs.append(r)
    return runs


def hincrby_rate(pin, srv, users):
    """Redis's pipelined HINCRBY rate over `users` per-user hashes, by
    redis-benchmark (50 connections, 16 deep, like compare.py's runs)."""
    argv = pin.client + [
        "redis-benchmark", "-h", "127.0.0.1", "-p", str(srv.port),
        "-c", str(compare.CONNECTIONS), "-P", "16",
        "-n", str(FANOUT_REQUESTS), "-r", str(users), "--csv",
        "HINCRBY", "bf:__rand_int__", "0", "1"]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    rows = [line.split('","') for line in p.stdout.splitlines()
            if line.startswith('"HINCRBY')]
    if p.returncode != 0 or not rows:
        raise Failed("redis-benchmark failed:\n%s%s" % (p.stdout, p.stderr))
    return float(rows[-1][1])


def cpu_us(r, side):
    """Server CPU per request in us: the cost, less sensitive to other
    processes than throughput (which they take the core from)."""
    return 1e6 * r["server_cpu_" + side[0]] / r[side + "_ops"]


def print_scale(rows, sizes):
    say("")
    say("| users registered | pipeline | unreadd BC.PUBLISH ops/s "
        "| Redis INCR ops/s | ratio median (min-max) | server CPU us per "
        "request u / R | p99 us unreadd | p99 us Redis | others' CPU |")
    say("|---:|---:|---:|---:|---|---|---:|---:|---:|")
    for users in sizes:
        for r in rows[users]:
            say("| %d | %d | %.0f | %.0f | %.2f (%.2f-%.2f) | %.2f / %.2f | "
                "%.0f | %.0f | %.2f |" % (
                    users, r["pipeline"], r["unreadd_ops"], r["redis_ops"],
                    r["ratio"], r["ratio_min"], r["ratio_max"],
                    cpu_us(r, "unreadd"), cpu_us(r, "redis"),
                    r["unreadd_p99"], r["redis_p99"], r["others_cpu"]))
    lo, hi = sizes[0], sizes[-1]
    say("")
    say("With %d users against %d (1.00: the cost does not grow with the "
        "audience):" % (hi, lo))
    for i, depth in enumerate(compare.PIPELINES):
        a, b = rows[lo][i], rows[hi][i]
        say("  P%-2d throughput unreadd %.2f, Redis %.2f; server CPU per "
            "request unreadd %.2f, Redis %.2f" % (
                depth, b["unreadd_ops"] / a["unreadd_ops"],
                b["redis_ops"] / a["redis_ops"],
                cpu_us(b, "unreadd") / cpu_us(a, "unreadd"),
                cpu_us(b, "redis") / cpu_us(a, "redis")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--users", default="1000000,10000000",
                    help="audience sizes, ascending (1000000,10000000)")
    ap.add_argument("--seconds", type=float, default=2.0,
                    help="measured seconds per run (2)")
    ap.add_argument("--warmup", type=float, default=0.5)
    ap.add_argument("--reps", type=int, default=3,
                    help="A B pairs per size and depth (3)")
    ap.add_argument("--retry-budget", type=float, default=30)
    ap.add_argument("--no-pin", action="store_true")
    ap.add_argument("--json", help="write every run's figures here")
    opts = ap.parse_args()
    opts.build = os.path.join(compare.REPO, opts.build)
    sizes = sorted(int(n) for n in opts.users.split(","))
    if shutil.which("redis-server") is None:
        say("bc_scale: redis-server not found (sh tools/deps.sh bench)")
        return 1
    pin = Pinning(not opts.no_pin)
    say("bc-publish with growing audiences %s; %s; load average %s" % (
        sizes, pin.describe(), compare.loadavg()))
    servers = [Server("unreadd", opts.build, pin),
               Server("redis", opts.build, pin)]
    runs, rows, budget = [], {}, [opts.retry_budget]
    try:
        for users in sizes:
            register(opts, pin, servers, users)
            got = publish_runs(opts, pin, servers, users, budget)
            rows[users] = compare.summarize(got, [WORKLOAD])
            runs += got
        rate = (hincrby_rate(pin, servers[1], sizes[0])
                if shutil.which("redis-benchmark") else None)
    except Failed as e:
        say("bc_scale: FAILED: %s" % e)
        return 1
    finally:
        for srv in servers:
            srv.stop()
    print_scale(rows, sizes)
    if rate is not None:
        say("")
        say("Publishing by fan-out instead (HINCRBY per user): Redis does "
            "%.0f HINCRBY/s pipelined, so one publish takes %s of its core." %
            (rate, ", ".join("%.3g s for %d users" % (n / rate, n)
                             for n in sizes)))
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"runs": runs, "rows": rows, "hincrby_per_s": rate},
                      f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
