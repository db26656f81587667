#!/usr/bin/env python3
"""Issue 19's goals, in one run: `make bench-pubsub`.

    python3 bench/pubsub.py [--build DIR] [--seconds S] [--warmup S]
                            [--reps N] [--cost-order balanced|fixed]
                            [--subscribers N] [--keys N]
                            [--only cost,badge,fanout] [--no-pin]
                            [--json FILE]

1. cost: what notify-badges costs a write nobody listens to. Four
   unreadd (persistence off): notify-badges no; no again (an A/A control:
   two identical servers, whose ratio is the run's noise floor); yes with
   no subscriber at all; yes with one subscriber on a badge channel no
   write touches (so every write pays the one map lookup). unread-bench
   cnt-incr and conv-seq at pipeline 16, 50 connections, run on each in
   --reps rounds whose order is balanced (a Williams square: over every 4
   rounds each server runs once in each position and follows each other
   server once), so that drift during a round (warm-up, the other
   processes on a shared machine, CPU frequency) does not favour the
   server that always runs first; the median of the per-round ratios to
   "no". Goal: "yes, no subscriber" within 3% of "no". Before 2026-11-26
   the order was fixed (no, yes, yes+sub in every round) and there was no
   control: see docs/PERFORMANCE.md, "Pub/sub: the order of the cost
   runs".
2. badge: unreadd with notify-badges yes, --subscribers connections each
   on its own badge:<uid> (bench/pubsub-bench.c), 4 writers keeping 16
   CNT.INCR in flight to random users of those. Push messages/s delivered
   and the latency from a write's reply to the arrival of the badge
   message that reports it. Goal: >= 100,000 messages/s, p99 <= 5 ms.
   Each row also gives, over the same window, the messages the server
   sent (INFO pubsub_delivered: a run whose subscribers parsed a different
   number fails), the rate by 0.5 s slice (a window still ramping up shows
   as uneven slices), the server's CPU per message and the CPU of
   everything else on the machine (others > 0.1 cores: the rate is a
   lower bound). Before it, bench/loopback-bound.c measures the machine's
   own bound at that hour: the kernel's CPU per message for one small
   send to each of as many loopback connections, no server (with write(),
   and in io_uring batches of 64).
3. fanout: --subscribers connections on one channel, one publisher
   keeping 16 PUBLISH in flight; unreadd and Redis 7 alternately. Messages
   delivered per second (every subscriber's), beside Redis's.
4. gateway: push as deployed (issue 34). G = 1, 4, 16 gateway
   connections hold 10,000 and 100,000 badge:<uid> subscriptions between
   them (--gateway-subs), 4 writers keep --gateway-pipeline CNT.INCR in
   flight to random users of those (notify-badges yes), and the gateways
   count what arrives; beside it Redis 7 with the same subscriptions and
   one plain PUBLISH badge:<uid> per write (no counter kept: less work
   than unreadd's write), alternately. Messages/s delivered, p99 from the
   write's reply to the arrival, the server's write syscalls per message
   (/proc/<pid>/io). Goal at G = 4, 100,000 subscriptions: >= 1,000,000
   messages/s, p99 <= 5 ms, >= 2x Redis in the same run. Then the same
   shape with the subscriptions held through libunread by
   client-lib/examples/push_gateway.c (pubsub-bench --external: writers
   only; the server's own count is the rate, the example's count must
   match it).

Servers run on CPU 0 and the clients on the others when there are two
cores (as `make bench`); each row gives the client's CPU, so a row the
client bounded is visible, and the machine's load average before and
after. Python 3 standard library only; reuses bench/compare.py.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
import results  # noqa: E402
from compare import Failed, Pinning, Server, loadavg, say  # noqa: E402
from harness import Resp, encode_multibulk  # noqa: E402

COST_WORKLOADS = ["cnt-incr", "conv-seq"]
COST_GOAL = 0.97       # yes / no, no subscriber
BADGE_GOAL = 100000    # messages per second
BADGE_P99_GOAL = 5000  # us
BASE_ARGS = ["--journal", "no", "--save-seconds", "0", "--maxclients",
             "30000"]
GATEWAYS = [1, 4, 16]
GATEWAY_GOAL = (4, 100000)      # the shape the goals are judged at
GATEWAY_RATE_GOAL = 1000000     # messages per second
GATEWAY_P99_GOAL = 5000         # us
GATEWAY_RATIO_GOAL = 2.0        # unreadd / Redis
# A gateway takes a loop turn's messages of thousands of users at once:
# no output limit closes it (a deployment sizes them; here they would
# only cut the run short).
GATEWAY_UNREADD = ["--notify-badges", "yes", "--pubsub-output-limit", "0",
                   "--pubsub-output-soft-limit", "0"]
GATEWAY_REDIS = ["--client-output-buffer-limit", "pubsub 0 0 0"]


def start(kind, build, pin, extra):
    """A server with extra arguments (compare.Server reads its globals)."""
    saved = (compare.UNREADD_ARGS, compare.REDIS_ARGS)
    compare.UNREADD_ARGS = BASE_ARGS + extra
    compare.REDIS_ARGS = ["--save", "", "--appendonly", "no",
                          "--maxclients", "30000"] + extra
    try:
        return Server(kind, build, pin)
    finally:
        compare.UNREADD_ARGS, compare.REDIS_ARGS = saved


def pubsub_bench(opts, pin, srv, mode, extra=(), subscribers=None,
                 pipeline=16):
    argv = pin.client + [
        os.path.join(opts.build, "pubsub-bench"), "--json", "-m", mode,
        "-p", str(srv.port), "-s", str(subscribers or opts.subscribers),
        "-c", "4", "-P", str(pipeline), "-d", str(opts.seconds), "--warmup",
        str(opts.warmup)] + list(extra)
    cpu0 = compare.proc_cpu_seconds(srv.pid)
    t0 = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        raise Failed("pubsub-bench %s on %s failed (exit %d):\n%s%s\n%s" % (
            mode, srv.kind, p.returncode, p.stdout, p.stderr,
            srv.log_tail()))
    r = json.loads(p.stdout)
    # The server's CPU over the whole run (subscribing and warmup too).
    r["server_cpu_cores"] = (compare.proc_cpu_seconds(srv.pid) - cpu0) / wall
    r["server"] = srv.kind
    return r


def balanced_orders(n, rounds):
    """The order of n variants in each round: a Williams square (n even:
    0, 1, n-1, 2, n-2, ... shifted by the round), so that over every n
    rounds each variant runs once in each position and, for n even, right
    after each other variant once."""
    first, lo, hi = [0], 1, n - 1
    while len(first) < n:
        first.append(lo)
        lo += 1
        if len(first) < n:
            first.append(hi)
            hi -= 1
    return [[(v + r) % n for v in first] for r in range(rounds)]


def cost(opts, pin):
    variants = [("no", ["--notify-badges", "no"]),
                ("no'", ["--notify-badges", "no"]),
                ("yes", ["--notify-badges", "yes"]),
                ("yes+sub", ["--notify-badges", "yes"])]
    servers = [(name, start("unreadd", opts.build, pin, extra))
               for name, extra in variants]
    listener = None
    rows = []
    try:
        # One subscriber on a user no write touches: each write then pays
        # the lookup "is anyone on badge:<uid>?".
        listener = Resp(servers[3][1].port, 30)
        listener.send(encode_multibulk("SUBSCRIBE", "badge:%d" % (10 ** 15)))
        listener.read_reply()
        for w in COST_WORKLOADS:
            compare.preload(opts.build, pin, [s for _, s in servers], w,
                            opts.keys)
            runs = {name: [] for name, _ in variants}
            orders = balanced_orders(len(servers), opts.reps)
            if opts.cost_order == "fixed":
                orders = [list(range(len(servers)))] * opts.reps
            for rep, order in enumerate(orders):
                for pos, k in enumerate(order):
                    name, srv = servers[k]
                    r = compare.bench(opts.build, pin, srv, w, [
                        "-c", 50, "-P", 16, "-r", opts.keys, "-d",
                        opts.seconds, "--warmup", opts.warmup])
                    r["position"] = pos
                    runs[name].append(r)
                    say("  %-8s notify-badges %-7s #%d (%d.) %9.0f ops/s  "
                        "p99 %7.1f us  cores: client %.2f server %.2f "
                        "others %.2f" % (
                            w, name, rep + 1, pos + 1, r["ops_per_sec"],
                            r["latency_us"]["p99"], r["client_cpu_cores"],
                            r["server_cpu_cores"], r["others_cpu_cores"]))
            no = [r["ops_per_sec"] for r in runs["no"]]
            row = {"workload": w, "no": statistics.median(no),
                   "rounds": opts.reps}
            for name in ("no'", "yes", "yes+sub"):
                ratios = [a["ops_per_sec"] / b["ops_per_sec"]
                          for a, b in zip(runs[name], runs["no"])]
                row[name] = statistics.median(r["ops_per_sec"]
                                              for r in runs[name])
                row[name + "_ratio"] = statistics.median(ratios)
                row[name + "_ratio_range"] = (min(ratios), max(ratios))
            # Whatever the variant, by position in the round: the drift
            # the balanced order cancels.
            row["by_position"] = [statistics.median(
                r["ops_per_sec"] for v in runs.values() for r in v
                if r["position"] == p) for p in range(len(servers))]
            rows.append(row)
        for _, srv in servers:
            if srv.info("stats").get("notify_probes", "0") != "0":
                raise Failed("a write was probed with nobody listening to "
                             "its user")
    finally:
        if listener is not None:
            listener.close()
        for _, srv in servers:
            srv.stop()
    return rows


def badge(opts, pin):
    srv = start("unreadd", opts.build, pin, ["--notify-badges", "yes"])
    try:
        runs = []
        for rep in range(opts.reps):
            r = pubsub_bench(opts, pin, srv, "badge")
            runs.append(r)
            sl = r["slices_messages_per_sec"] or [0]
            say("  badge   %d subscribers #%d %9.0f writes/s %9.0f messages/s"
                " (server sent %.0f, by 0.5 s %.0f-%.0f)  p99 %7.1f us  "
                "cores: client %.2f server %.2f (%.2f us/message) others "
                "%.2f" % (
                    r["subscribers"], rep + 1, r["writes_per_sec"],
                    r["messages_per_sec"], r["server_messages_per_sec"],
                    min(sl), max(sl), r["latency_us"]["p99"],
                    r["client_cpu_cores"], r["server_window_cores"],
                    us_per_message(r), r["others_window_cores"]))
            check_counts(r)
        info = srv.info("stats")
        if info.get("pubsub_dropped", "0") != "0":
            raise Failed("messages dropped: %s" % info["pubsub_dropped"])
    finally:
        srv.stop()
    return runs


def machine_bound(opts, pin):
    """bench/loopback-bound.c at the hour of the run: the sender's CPU per
    message for one write() per message to --subscribers loopback
    connections, and for io_uring batches of 64 (None where the kernel
    refuses io_uring). The least a server pays per badge message here."""
    out = {}
    for name, extra in (("write", []), ("io_uring", ["-u", "64"])):
        p = subprocess.run([os.path.join(opts.build, "loopback-bound"), "-j",
                            "-n", str(opts.subscribers), "-d", "3"] + extra,
                           capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            if name == "write":
                raise Failed("loopback-bound failed:\n%s" % p.stderr)
            out[name] = None
            continue
        out[name] = json.loads(p.stdout)
        say("  machine: %-8s %d loopback connections, %.2f us per message "
            "(%.0f per core-second), sender %.2f cores" % (
                name, out[name]["conns"], out[name]["us_per_message"],
                out[name]["messages_per_core_second"],
                out[name]["sender_cores"]))
    return out


def us_per_message(r):
    """The server's CPU per message delivered in the run's window."""
    if r["messages_per_sec"] <= 0 or r["server_window_cores"] < 0:
        return 0.0
    return r["server_window_cores"] / r["messages_per_sec"] * 1e6


def check_counts(r):
    """The subscribers' count (messages parsed) against the server's
    (messages handed to them) over the same window: they differ by what is
    in flight at the window's edges, a few thousand at most; more is a
    harness that miscounts."""
    c, s = r["messages_per_sec"], r["server_messages_per_sec"]
    if s > 0 and abs(c - s) > max(0.01 * s, 2000 / r["seconds"]):
        raise Failed("the subscribers parsed %.0f messages/s, the server "
                     "sent %.0f/s" % (c, s))


def fanout(opts, pin):
    servers = [start("unreadd", opts.build, pin, []),
               start("redis", opts.build, pin, [])]
    runs = []
    try:
        for rep in range(opts.reps):
            for srv in servers:
                r = pubsub_bench(opts, pin, srv, "fanout")
                r["rep"] = rep
                runs.append(r)
                say("  fanout  %-7s %d subscribers #%d %8.0f publishes/s "
                    "%10.0f messages/s  p99 %8.1f us  cores: client %.2f "
                    "server %.2f" % (
                        srv.kind, r["subscribers"], rep + 1,
                        r["publishes_per_sec"], r["messages_per_sec"],
                        r["latency_us"]["p99"], r["client_cpu_cores"],
                        r["server_window_cores"]))
    finally:
        for srv in servers:
            srv.stop()
    return runs


def gateway(opts, pin):
    """Push as deployed: every shape (G gateways, S subscriptions) on
    unreadd and on Redis, alternately, --reps pairs each."""
    servers = [start("unreadd", opts.build, pin, GATEWAY_UNREADD),
               start("redis", opts.build, pin, GATEWAY_REDIS)]
    runs = []
    try:
        for subs in opts.gateway_subs:
            for g in GATEWAYS:
                for rep in range(opts.reps):
                    for srv in servers:
                        extra = ["-g", str(g)]
                        if srv.kind == "redis":
                            extra.append("--publish")
                        r = pubsub_bench(opts, pin, srv, "gateway", extra,
                                         subs, opts.gateway_pipeline)
                        r["server"], r["rep"] = srv.kind, rep
                        if srv.kind == "unreadd":
                            check_counts(r)
                        runs.append(r)
                        say("  gateway %-7s G=%-2d %6d subs #%d %9.0f "
                            "writes/s %9.0f messages/s  p99 %8.1f us  "
                            "server %.2f cores, %.3f writes/message; client "
                            "%.2f, others %.2f" % (
                                srv.kind, g, subs, rep + 1,
                                r["writes_per_sec"], r["messages_per_sec"],
                                r["latency_us"]["p99"],
                                r["server_window_cores"],
                                r["server_writes_per_message"],
                                r["client_cpu_cores"],
                                r["others_window_cores"]))
        info = servers[0].info("stats")
        if info.get("pubsub_dropped", "0") != "0":
            raise Failed("messages dropped: %s" % info["pubsub_dropped"])
    finally:
        for srv in servers:
            srv.stop()
    return runs


def gateway_lib(opts, pin):
    """G = 4 gateways, the most subscriptions, held by the libunread
    example (build/push_gateway), writers from pubsub-bench --external:
    --reps runs on one unreadd."""
    g, subs = GATEWAY_GOAL[0], max(opts.gateway_subs)
    srv = start("unreadd", opts.build, pin, GATEWAY_UNREADD)
    runs = []
    try:
        for rep in range(opts.reps):
            before = int(srv.info("stats")["pubsub_delivered"])
            gw = subprocess.Popen(
                pin.client + [os.path.join(opts.build, "push_gateway"),
                              "127.0.0.1:%d" % srv.port, str(g), str(subs)],
                stdout=subprocess.PIPE, text=True)
            try:
                line = gw.stdout.readline().split()
                if line[:1] != ["subscribed"]:
                    raise Failed("push_gateway: %s" % " ".join(line))
                r = pubsub_bench(opts, pin, srv, "gateway",
                                 ["-g", str(g), "--external"], subs,
                                 opts.gateway_pipeline)
            finally:
                gw.terminate()
                out, _ = gw.communicate(60)
            final = dict(kv.split("=") for kv in
                         out.strip().splitlines()[-1].split()[1:])
            sent = int(srv.info("stats")["pubsub_delivered"]) - before
            if gw.returncode != 0 or int(final["messages"]) != sent or \
                    final["stray"] != "0":
                raise Failed("push_gateway counted %s of the %d messages "
                             "sent (exit %s)" % (final.get("messages"), sent,
                                                 gw.returncode))
            r["server"], r["rep"] = "unreadd", rep
            runs.append(r)
            say("  gateway libunread G=%d %6d subs #%d %9.0f writes/s %9.0f "
                "messages/s (the server's count)  server %.2f cores, %.3f "
                "writes/message; others %.2f" % (
                    g, subs, rep + 1, r["writes_per_sec"],
                    r["server_messages_per_sec"], r["server_window_cores"],
                    r["server_writes_per_message"],
                    r["others_window_cores"]))
    finally:
        srv.stop()
    return runs


def gateway_rows(runs):
    """(G, S) -> the shape's figures over its pairs."""
    rows = []
    for subs in sorted({r["subscribers"] for r in runs}):
        for g in GATEWAYS:
            sel = [r for r in runs if r["subscribers"] == subs and
                   r["gateways"] == g]
            if not sel:
                continue
            u = [r for r in sel if r["server"] == "unreadd"]
            d = [r for r in sel if r["server"] == "redis"]
            rows.append({
                "gateways": g, "subscriptions": subs,
                "unreadd_messages": results.stat(r["messages_per_sec"]
                                                 for r in u),
                "redis_messages": results.stat(r["messages_per_sec"]
                                               for r in d),
                "ratio": results.stat(a["messages_per_sec"] /
                                      b["messages_per_sec"]
                                      for a, b in zip(u, d)
                                      if b["messages_per_sec"] > 0),
                "unreadd_p99_us": results.stat(r["latency_us"]["p99"]
                                               for r in u),
                "redis_p99_us": results.stat(r["latency_us"]["p99"]
                                             for r in d),
                "unreadd_writes_per_message": results.stat(
                    r["server_writes_per_message"] for r in u),
                "redis_writes_per_message": results.stat(
                    r["server_writes_per_message"] for r in d),
                "unreadd_server_cores": results.stat(
                    r["server_window_cores"] for r in u),
                "client_cores": results.stat(r["client_cpu_cores"]
                                             for r in sel),
                "others_cores": results.stat(r["others_window_cores"]
                                             for r in sel),
            })
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--warmup", type=float, default=1)
    ap.add_argument("--reps", type=int, default=4,
                    help="rounds (cost: a multiple of 4 balances the order)")
    ap.add_argument("--cost-order", choices=("balanced", "fixed"),
                    default="balanced",
                    help="fixed: every round in the same order (the old "
                    "harness, to see its bias)")
    ap.add_argument("--subscribers", type=int, default=10000)
    ap.add_argument("--keys", type=int, default=100000)
    ap.add_argument("--gateway-subs", default="10000,100000",
                    help="gateway: the subscription counts (10000,100000)")
    ap.add_argument("--gateway-pipeline", type=int, default=64,
                    help="gateway: CNT.INCR (PUBLISH) in flight per writer "
                    "(64)")
    ap.add_argument("--only", default="cost,badge,fanout,gateway")
    ap.add_argument("--no-pin", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--results", help="the results file (bench/results.py): "
                    "auto for bench/results/pubsub-STAMP.json, or a path")
    defaults = vars(ap.parse_args([]))
    opts = ap.parse_args()
    opts.gateway_subs = [int(x) for x in opts.gateway_subs.split(",") if x]
    res = results.Run("pubsub", opts, {
        k: defaults[k] for k in ("seconds", "reps", "subscribers", "keys")})
    if max(opts.gateway_subs) < 100000:
        res.doc["shortened"] = True
    parts = opts.only.split(",")
    pin = Pinning(not opts.no_pin)
    out = {"machine": compare.machine(), "load_before": loadavg(),
           "pinning": pin.describe()}
    say("pubsub bench: %s; load average %s" % (pin.describe(),
                                                out["load_before"]))
    try:
        if "cost" in parts:
            say("notify-badges' cost to writes nobody listens to (P16):")
            out["cost"] = cost(opts, pin)
        if "badge" in parts:
            say("badge messages, %d subscribers:" % opts.subscribers)
            out["bound"] = machine_bound(opts, pin)
            out["badge"] = badge(opts, pin)
        if "fanout" in parts:
            say("PUBLISH fan-out, %d subscribers on one channel:" %
                opts.subscribers)
            out["fanout"] = fanout(opts, pin)
        if "gateway" in parts:
            say("push as deployed: gateways holding the subscriptions:")
            out["gateway"] = gateway(opts, pin)
            out["gateway_lib"] = gateway_lib(opts, pin)
    except Failed as e:
        say("FAILED: %s" % e)
        return 1
    out["load_after"] = loadavg()
    say()
    say("load average before %s, after %s" % (out["load_before"],
                                              out["load_after"]))
    for row in out.get("cost", []):
        ok = row["yes_ratio"] >= COST_GOAL
        say("%-8s no %9.0f  no' (A/A) %.3f (%.3f-%.3f)  yes %9.0f (%.3f, "
            "%.3f-%.3f)  yes+1 sub %.3f  goal >= %.2f: %s" % (
                row["workload"], row["no"], row["no'_ratio"],
                row["no'_ratio_range"][0], row["no'_ratio_range"][1],
                row["yes"], row["yes_ratio"], row["yes_ratio_range"][0],
                row["yes_ratio_range"][1], row["yes+sub_ratio"], COST_GOAL,
                "met" if ok else "MISSED"))
        say("         median ops/s by position in the round: %s" % "  ".join(
            "%d. %.0f" % (i + 1, v) for i, v in enumerate(row["by_position"])))
    if out.get("badge"):
        b = out["badge"]
        mps = statistics.median(r["messages_per_sec"] for r in b)
        p99 = statistics.median(r["latency_us"]["p99"] for r in b)
        us = statistics.median(us_per_message(r) for r in b)
        others = statistics.median(r["others_window_cores"] for r in b)
        say("badge    %d subscribers: %.0f messages/s (goal >= %d: %s), "
            "p99 %.0f us (goal <= %d: %s), client %.2f cores" % (
                b[0]["subscribers"], mps, BADGE_GOAL,
                "met" if mps >= BADGE_GOAL else "MISSED", p99,
                BADGE_P99_GOAL, "met" if p99 <= BADGE_P99_GOAL else "MISSED",
                statistics.median(r["client_cpu_cores"] for r in b)))
        say("         server %.2f us per message (%.0f messages per server "
            "core-second), others %.2f cores%s" % (
                us, 1e6 / us if us else 0, others,
                ": a loaded machine, the rate is a lower bound"
                if others > 0.1 else ""))
        bw, bu = out["bound"]["write"], out["bound"].get("io_uring")
        say("         the kernel alone (bench/loopback-bound): %.2f us per "
            "message with write() (%.0f per core-second)%s" % (
                bw["us_per_message"], bw["messages_per_core_second"],
                ", %.2f in io_uring batches of 64" % bu["us_per_message"]
                if bu else ""))
    if out.get("fanout"):
        f = out["fanout"]
        by = {k: [r for r in f if r["server"] == k] for k in
              ("unreadd", "redis")}
        u = statistics.median(r["messages_per_sec"] for r in by["unreadd"])
        r = statistics.median(r["messages_per_sec"] for r in by["redis"])
        say("fanout   %d subscribers: unreadd %.0f messages/s, Redis %.0f "
            "(ratio %.2f); p99 unreadd %.0f us, Redis %.0f us" % (
                f[0]["subscribers"], u, r, u / r if r else 0,
                statistics.median(x["latency_us"]["p99"]
                                  for x in by["unreadd"]),
                statistics.median(x["latency_us"]["p99"]
                                  for x in by["redis"])))
    if out.get("gateway"):
        say("gateway  messages/s delivered (median of %d pairs), p99 from "
            "the write's reply, server write syscalls per message:" %
            opts.reps)
        for row in gateway_rows(out["gateway"]):
            say("  G=%-2d %6d subscriptions: unreadd %9.0f (p99 %6.0f us, "
                "%.3f writes/msg), Redis %9.0f (p99 %6.0f us, %.3f "
                "writes/msg), ratio %.2f (%.2f-%.2f)" % (
                    row["gateways"], row["subscriptions"],
                    row["unreadd_messages"]["median"],
                    row["unreadd_p99_us"]["median"],
                    row["unreadd_writes_per_message"]["median"],
                    row["redis_messages"]["median"],
                    row["redis_p99_us"]["median"],
                    row["redis_writes_per_message"]["median"],
                    row["ratio"]["median"], row["ratio"]["min"],
                    row["ratio"]["max"]))
    pubsub_results(res, out)
    for g in res.doc["goals"]:
        say("goal %s: %s (%s)" % (g["goal"], "met" if g["met"] else "MISSED",
                                  "%.4g" % g["value"]
                                  if g["value"] is not None else "not run"))
    if opts.json:
        with open(opts.json, "w") as fh:
            json.dump(out, fh, indent=2)
    if opts.results:
        res.save(raw=out, path=None if opts.results == "auto"
                 else opts.results)
    return 0


def pubsub_results(res, out):
    """The results file's rows and goals (bench/results.py)."""
    for row in out.get("cost", []):
        res.row(section="cost", workload=row["workload"],
                no_ops=row["no"], rounds=row["rounds"],
                aa_ratio={"min": row["no'_ratio_range"][0],
                          "median": row["no'_ratio"],
                          "max": row["no'_ratio_range"][1],
                          "n": row["rounds"]},
                yes_ratio={"min": row["yes_ratio_range"][0],
                           "median": row["yes_ratio"],
                           "max": row["yes_ratio_range"][1],
                           "n": row["rounds"]},
                yes_sub_ratio={"min": row["yes+sub_ratio_range"][0],
                               "median": row["yes+sub_ratio"],
                               "max": row["yes+sub_ratio_range"][1],
                               "n": row["rounds"]})
        res.goal("%s notify-badges yes >= %.2f of no" % (
            row["workload"], COST_GOAL), row["yes_ratio"],
            row["yes_ratio"] >= COST_GOAL)
    if out.get("badge"):
        b = out["badge"]
        row = res.row(
            section="badge", subscribers=b[0]["subscribers"],
            connections=b[0]["subscribers"],
            unreadd_messages=results.stat(r["messages_per_sec"] for r in b),
            unreadd_p99_us=results.stat(r["latency_us"]["p99"] for r in b),
            unreadd_us_per_message=results.stat(us_per_message(r)
                                                for r in b),
            unreadd_writes_per_message=results.stat(
                r["server_writes_per_message"] for r in b),
            kernel_us_per_message=out["bound"]["write"]["us_per_message"],
            others_cores=results.stat(r["others_window_cores"] for r in b))
        res.goal("badge, %d subscriber connections: >= %d messages/s" % (
            row["subscribers"], BADGE_GOAL),
            row["unreadd_messages"]["median"],
            row["unreadd_messages"]["median"] >= BADGE_GOAL)
        res.goal("badge, %d subscriber connections: p99 <= %d us" % (
            row["subscribers"], BADGE_P99_GOAL),
            row["unreadd_p99_us"]["median"],
            row["unreadd_p99_us"]["median"] <= BADGE_P99_GOAL)
    if out.get("fanout"):
        f = out["fanout"]
        u = [r for r in f if r["server"] == "unreadd"]
        d = [r for r in f if r["server"] == "redis"]
        res.row(section="fanout", subscribers=f[0]["subscribers"],
                unreadd_messages=results.stat(r["messages_per_sec"]
                                              for r in u),
                redis_messages=results.stat(r["messages_per_sec"] for r in d),
                ratio=results.stat(a["messages_per_sec"] /
                                   b["messages_per_sec"]
                                   for a, b in zip(u, d)),
                unreadd_p99_us=results.stat(r["latency_us"]["p99"]
                                            for r in u),
                redis_p99_us=results.stat(r["latency_us"]["p99"] for r in d))
    if out.get("gateway"):
        rows = gateway_rows(out["gateway"])
        for row in rows:
            res.row(section="gateway", **row)
        lib = out.get("gateway_lib") or []
        if lib:
            res.row(section="gateway_lib", gateways=lib[0]["gateways"] or
                    GATEWAY_GOAL[0], subscriptions=lib[0]["subscribers"],
                    unreadd_messages=results.stat(
                        r["server_messages_per_sec"] for r in lib),
                    unreadd_writes_per_message=results.stat(
                        r["server_writes_per_message"] for r in lib),
                    unreadd_server_cores=results.stat(
                        r["server_window_cores"] for r in lib),
                    others_cores=results.stat(r["others_window_cores"]
                                              for r in lib))
        goal = [r for r in rows if (r["gateways"], r["subscriptions"]) ==
                GATEWAY_GOAL]
        g, subs = GATEWAY_GOAL
        what = "gateway G=%d, %d subscriptions: " % (g, subs)
        r = goal[0] if goal else None
        res.goal(what + ">= %d messages/s" % GATEWAY_RATE_GOAL,
                 r and r["unreadd_messages"]["median"],
                 r is not None and
                 r["unreadd_messages"]["median"] >= GATEWAY_RATE_GOAL)
        res.goal(what + "p99 <= %d us" % GATEWAY_P99_GOAL,
                 r and r["unreadd_p99_us"]["median"],
                 r is not None and
                 r["unreadd_p99_us"]["median"] <= GATEWAY_P99_GOAL)
        res.goal(what + ">= %.0fx Redis" % GATEWAY_RATIO_GOAL,
                 r and r["ratio"]["median"],
                 r is not None and r["ratio"]["median"] >= GATEWAY_RATIO_GOAL)


if __name__ == "__main__":
    sys.exit(main())
