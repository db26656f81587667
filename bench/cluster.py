#!/usr/bin/env python3
"""Cluster mode's figures: `make bench-cluster`.

    python3 bench/cluster.py [--build DIR] [--seconds S] [--reps N]
                             [--keys N] [--samples N] [--only routing|global]
                             [--no-pin] [--json FILE]

routing   What asking the cluster question costs: unread-bench against one
          unreadd with cluster mode off and one with cluster-enabled yes
          owning every slot (so every request is served, and every one is
          routed: its key's CRC16, the slot table), alternating runs of
          cnt-incr and conv-seq at pipeline 1 and 16, --reps rounds.
          Goal: cluster mode within 5% of off (the median ratio).
global    How soon a global write is visible on every other shard, under
          load: a 3-master cluster (redis-cli --cluster create) under
          unread-bench --slots load (cnt-incr, and bc-publish whose copies
          load the links), and --samples times: BC.PUBLISH on a channel's
          owner, then poll BC.UNREAD of a registered reader on each other
          master until it shows the publish. Reports p50/p99/max of the
          time from the publish's reply to the last shard's (polling
          included). Goal: p99 <= 10 ms.

Python 3 standard library only; reuses bench/compare.py's machinery and
tests/integration/cluster_rig.py.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests",
                                "integration"))
import compare  # noqa: E402
from compare import Failed, Pinning, Resp, say  # noqa: E402

WORKLOADS = ["cnt-incr", "conv-seq"]
PIPELINES = [1, 16]
CONNECTIONS = 50


def routing(opts, pin):
    servers = {}
    saved = list(compare.UNREADD_ARGS)
    try:
        servers["off"] = compare.Server("unreadd", opts.build, pin)
        compare.UNREADD_ARGS[:] = saved + ["--cluster-enabled", "yes"]
        servers["cluster"] = compare.Server("unreadd", opts.build, pin)
    finally:
        compare.UNREADD_ARGS[:] = saved
    with Resp(servers["cluster"].port, 5) as c:
        if c.cmd("CLUSTER", "ADDSLOTSRANGE", 0, 16383) != "OK":
            raise Failed("ADDSLOTSRANGE refused")
    deadline = time.monotonic() + 10
    while True:
        with Resp(servers["cluster"].port, 5) as c:
            info = c.cmd("CLUSTER", "INFO").decode()
        if "cluster_state:ok" in info:
            break
        if time.monotonic() > deadline:
            raise Failed("the one-node cluster is not ok:\n" + info)
        time.sleep(0.05)
    runs = []
    try:
        for name, srv in servers.items():
            for wl in WORKLOADS:
                compare.measure(pin.client + [
                    os.path.join(opts.build, "unread-bench"), "--json",
                    "-w", wl, "-p", str(srv.port), "--load", "-r",
                    str(opts.keys), "-c", "8", "-P", "64"], [srv.pid],
                    "preload %s %s" % (wl, name))
        for wl in WORKLOADS:
            for depth in PIPELINES:
                for rep in range(opts.reps):
                    order = ["off", "cluster"] if rep % 2 == 0 else \
                        ["cluster", "off"]
                    for name in order:
                        srv = servers[name]
                        r = compare.measure(pin.client + [
                            os.path.join(opts.build, "unread-bench"),
                            "--json", "-w", wl, "-p", str(srv.port),
                            "-T", str(pin.client_threads), "-c",
                            str(CONNECTIONS), "-P", str(depth), "-d",
                            str(opts.seconds), "--warmup", str(opts.warmup),
                            "-r", str(opts.keys), "--seed", str(rep + 1)],
                            [srv.pid], "%s P%d %s" % (wl, depth, name))
                        r["mode"] = name
                        runs.append(r)
                        say("  %-8s P%-2d %-7s #%d %9.0f ops/s  p99 %7.1f us"
                            "  server CPU %.2f" % (
                                wl, depth, name, rep + 1, r["ops_per_sec"],
                                r["latency_us"]["p99"],
                                r["server_cpu_cores"]))
    finally:
        for s in servers.values():
            s.stop()
    rows = []
    say("")
    say("| workload | pipeline | off ops/s | cluster ops/s | cluster / off "
        "| server CPU per op off / cluster (ns) |")
    say("|---|---:|---:|---:|---:|---:|")
    for wl in WORKLOADS:
        for depth in PIPELINES:
            sel = lambda m: [r for r in runs if r["workload"] == wl and  # noqa
                             r["pipeline"] == depth and r["mode"] == m]
            off = statistics.median(r["ops_per_sec"] for r in sel("off"))
            on = statistics.median(r["ops_per_sec"] for r in sel("cluster"))
            ns = lambda m: statistics.median(  # noqa: E731
                1e9 * r["server_cpu_cores"] / r["ops_per_sec"]
                for r in sel(m))
            rows.append({"workload": wl, "pipeline": depth, "off": off,
                         "cluster": on, "ratio": on / off,
                         "cpu_ns_off": ns("off"), "cpu_ns_cluster": ns(
                             "cluster")})
            say("| %s | %d | %.0f | %.0f | %.3f | %.0f / %.0f |" % (
                wl, depth, off, on, on / off, ns("off"), ns("cluster")))
    worst = min(r["ratio"] for r in rows)
    say("")
    say("routing goal (cluster mode within 5%% of off, every row): %s "
        "(lowest ratio %.3f)" % ("met" if worst >= 0.95 else "missed",
                                 worst))
    return {"runs": runs, "rows": rows, "met": worst >= 0.95}


def visibility(opts, pin):
    import cluster_rig
    from harness import Resp as HResp

    os.environ.setdefault("UNREADD_BUILD", os.path.basename(opts.build))
    out = {}
    with cluster_rig.Cluster(masters=3, replicas=0, save_seconds=0,
                             journal="no") as cl:
        masters = cl.masters()
        ch = 777
        owner = cl.owner(ch)
        others = [m for m in masters if m is not owner]
        readers = {}
        for m in others:
            uid = next(u for u in range(1, 10 ** 6)
                       if cl.owner(u) is m)
            readers[m.port] = uid
            m.cmd("BC.UNREAD", uid, ch)
        # Load: unread-bench over every master, each request to its key's
        # node (--slots): cnt-incr writes and bc-publish global writes (whose
        # copies load the links under measure).
        lst = ",".join(m.addr() for m in masters)
        loads = []
        for wl in ("cnt-incr", "bc-publish"):
            loads.append(subprocess.Popen(pin.client + [
                os.path.join(opts.build, "unread-bench"), "--cluster", lst,
                "--slots", "-w", wl, "-c", "4", "-P", "8", "-r", "100000",
                "-d", str(opts.samples * 0.02 + 60)],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        time.sleep(1)
        lat = []
        try:
            with HResp(owner.port) as pc:
                conns = {m.port: HResp(m.port) for m in others}
                for i in range(opts.samples):
                    head = pc.cmd("BC.PUBLISH", ch)
                    t0 = time.perf_counter()
                    pending = dict(readers)
                    while pending:
                        for port in list(pending):
                            unread = conns[port].cmd("BC.UNREAD",
                                                     pending[port], ch)
                            if unread >= 1:
                                conns[port].cmd("BC.READ", pending[port], ch)
                                del pending[port]
                        if time.perf_counter() - t0 > 5:
                            raise Failed("publish %d not seen in 5 s" % head)
                    lat.append((time.perf_counter() - t0) * 1000)
                for c in conns.values():
                    c.close()
        finally:
            for p in loads:
                p.kill()
                p.wait()
    lat.sort()
    q = lambda f: lat[min(len(lat) - 1, int(f * len(lat)))]  # noqa: E731
    out = {"samples": len(lat), "p50_ms": q(0.5), "p99_ms": q(0.99),
           "max_ms": lat[-1]}
    say("global write visible on every other shard (%d samples, 3 masters "
        "under cnt-incr + bc-publish load): p50 %.2f ms, p99 %.2f ms, max %.2f ms" % (
            len(lat), out["p50_ms"], out["p99_ms"], out["max_ms"]))
    say("global visibility goal (p99 <= 10 ms): %s" % (
        "met" if out["p99_ms"] <= 10 else "missed"))
    out["met"] = out["p99_ms"] <= 10
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--warmup", type=float, default=0.5)
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--keys", type=int, default=1000000)
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--only", choices=["routing", "global"])
    ap.add_argument("--no-pin", action="store_true")
    ap.add_argument("--json", help="write the figures here")
    opts = ap.parse_args()
    opts.build = os.path.join(compare.REPO, opts.build)
    pin = Pinning(not opts.no_pin)
    t0 = time.monotonic()
    say("machine: %d cores, %s; load average %s; %s" % (
        os.cpu_count(), compare.cpu_model(), compare.loadavg(),
        pin.describe()))
    res = {}
    try:
        if opts.only in (None, "routing"):
            say("routing: %d connections, %.1f s runs, %d users, %d rounds "
                "alternating" % (CONNECTIONS, opts.seconds, opts.keys,
                                 opts.reps))
            res["routing"] = routing(opts, pin)
        if opts.only in (None, "global"):
            res["global"] = visibility(opts, pin)
    except Failed as e:
        say("cluster bench: FAILED: %s" % e)
        return 1
    say("%.0f s; load average at the end %s" % (time.monotonic() - t0,
                                                compare.loadavg()))
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
