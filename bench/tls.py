#!/usr/bin/env python3
"""unreadd and Redis 7 over TLS, beside plaintext: `make bench-tls`.

    python3 bench/tls.py [--build DIR] [--seconds S] [--warmup S] [--reps N]
                         [--keys N] [--workloads a,b] [--pipelines 1,16]
                         [--handshake-seconds S] [--idle N]
                         [--retry-budget S] [--no-pin] [--results auto|FILE]

Issue 33's TLS goals, in one run on one machine:

Throughput: one unreadd and one redis-server, each listening on a
plaintext port and a TLS port (tls-auth-clients no on both: the server's
certificate only, checked by the client against the run's CA), are
preloaded as `make bench` preloads them (bench/compare.py, over
plaintext), then for every workload and pipeline depth the same
unread-bench command line runs against each server in plaintext and over
TLS (`--tls`: OpenSSL in the load generator, bench/bench_tls.c), the four
runs of a repetition back to back, their order turned around every other
repetition (unreadd plain, Redis plain, unreadd TLS, Redis TLS; then TLS
first), so that drift hits all four. Per repetition: unreadd / Redis over
TLS and in plaintext, and TLS / plaintext of each server; the goals: the
TLS ratio at P16 >= 2 (as in plaintext), and unreadd's TLS / plaintext at
least Redis's (TLS costs unreadd no larger share of its rate than it
costs Redis), and, the same measure read in CPU, unreadd's server CPU per
operation over TLS / in plaintext at most Redis's: on a machine whose
other work takes the cores, the rates follow the scheduler, the CPU per
operation much less. Each server's CPU per operation in the measured window
(unread-bench --server-pid) is printed beside, so what TLS adds is also
read in microseconds.

Handshakes: `unread-bench --handshakes`, 4 client threads, each a loop of
connect + full TLS handshake (no session resumption) + PING + close for
--handshake-seconds, alternately against each server, --reps times;
plaintext connect + PING + close beside.

Memory per idle connection: on a fresh server of each kind (no data),
--idle connections opened, each answering one PING (so the server has
finished its side of the handshake), then (VmRSS after - VmRSS before) /
N from /proc/PID/status; over TLS and in plaintext, each on its own fresh
server.

Certificates are made at run time with the openssl command
(tests/integration/tlsgen.py) in a temporary directory: nothing secret
is kept. Python 3 standard library only.
"""

import argparse
import os
import resource
import shutil
import socket
import ssl
import statistics
import sys
import tempfile
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import compare  # noqa: E402
from compare import Failed, say  # noqa: E402
import results  # noqa: E402
import tlsgen  # noqa: E402  (tests/integration, on compare's path)

WORKLOADS = ["cnt-incr", "conv-seq"]
PIPELINES = [1, 16]
CONNECTIONS = compare.CONNECTIONS
# unreadd / Redis over TLS, by pipeline depth (issue 33: the same 2x at
# P16 as in plaintext).
RATIO_GOAL = {16: 2.0}
HANDSHAKE_THREADS = 4
MODES = ("plain", "tls")
KINDS = ("unreadd", "redis")


def tls_args(certs, port):
    """The server's TLS listener: the same keys on both servers."""
    return ["--tls-port", str(port), "--tls-cert-file", certs.server,
            "--tls-key-file", certs.server_key, "--tls-ca-cert-file",
            certs.ca, "--tls-auth-clients", "no"]


class Pair:
    """One unreadd and one Redis, each on a plaintext and a TLS port."""

    def __init__(self, opts, pin, certs):
        self.servers = []
        try:
            for kind in KINDS:
                port = compare.free_port()
                srv = compare.Server(kind, opts.build, pin,
                                     tls_args(certs, port))
                srv.tls_port = port
                self.servers.append(srv)
        except BaseException:
            self.stop()
            raise

    def stop(self):
        for srv in self.servers:
            srv.stop()


def client_extra(certs, mode):
    return ["--tls", "--cacert", certs.ca] if mode == "tls" else []


def run_one(opts, pin, certs, srv, mode, workload, args):
    r = compare.bench(opts.build, pin, srv, workload, args,
                      port=srv.tls_port if mode == "tls" else srv.port,
                      extra=client_extra(certs, mode) +
                      ["--server-pid", srv.pid])
    r["server"], r["mode"] = srv.kind, mode
    if (mode == "tls") != bool(r.get("tls")):
        raise Failed("%s %s: unread-bench says TLS %r" % (srv.kind, mode,
                                                           r.get("tls")))
    # the server's CPU in the measured window alone (unread-bench samples
    # it): not the connects, handshakes, warm-up and audit around it
    if r["server_cpu_s"] < 0:
        raise Failed("unread-bench could not read the CPU of pid %d" %
                     srv.pid)
    r["server_us_per_op"] = (1e6 * r["server_cpu_s"] / r["ops"]
                             if r["ops"] else 0.0)
    return r


def quad(opts, pin, certs, pair, workload, depth, rep, budget):
    """One repetition: the four runs back to back (plaintext first on even
    repetitions, TLS first on odd ones), run again while others took more
    than compare.NOISE_CORES and the rerun budget lasts; the quietest
    attempt kept."""
    order = [(srv, mode) for mode in (MODES if rep % 2 == 0 else
                                      MODES[::-1])
             for srv in pair.servers]
    args = ["-c", CONNECTIONS, "-P", depth, "-d", opts.seconds,
            "--warmup", opts.warmup, "-r", opts.keys, "--seed", rep + 1]
    def attempt():
        runs = []
        for srv, mode in order:
            r = run_one(opts, pin, certs, srv, mode, workload, args)
            r["rep"] = rep
            runs.append(r)
            say("  %-8s P%-2d %-7s %-5s #%d %9.0f ops/s  p99 %7.1f us  "
                "server %.2f us/op  cores: client %.2f server %.2f others "
                "%.2f" % (workload, depth, srv.kind, mode, rep + 1,
                          r["ops_per_sec"], r["latency_us"]["p99"],
                          r["server_us_per_op"], r["client_cpu_cores"],
                          r["server_cpu_cores"], r["others_cpu_cores"]))
        return runs
    return compare.quietest(attempt, budget, "the four")


def throughput(opts, pin, certs):
    pair = Pair(opts, pin, certs)
    runs = []
    try:
        unr, red = pair.servers
        say("unreadd pid %d ports %d / TLS %d, redis pid %d ports %d / TLS "
            "%d; %s" % (unr.pid, unr.port, unr.tls_port, red.pid, red.port,
                        red.tls_port, pin.describe()))
        budget = [opts.retry_budget]
        loaded = set()
        for wl in opts.workloads:
            family = wl.split("-")[0]
            if family not in loaded:
                compare.preload(opts.build, pin, pair.servers, wl, opts.keys)
                loaded.add(family)
            for depth in opts.pipelines:
                for rep in range(opts.reps):
                    runs += quad(opts, pin, certs, pair, wl, depth, rep,
                                 budget)
        for family in sorted(loaded & set(compare.REDIS_TOTALS)):
            n = compare.check_redis_totals(red, family, opts.keys)
            say("  redis %s: total == sum of parts in %d sampled users" % (
                family, n))
    finally:
        pair.stop()
    return runs


def pick(runs, wl, depth, kind, mode):
    return sorted((r for r in runs if r["workload"] == wl and
                   r["pipeline"] == depth and r["server"] == kind and
                   r["mode"] == mode), key=lambda r: r["rep"])


def summarize(runs, opts, client_threads):
    """A row per workload and depth: every figure's stat over the
    repetitions, each ratio taken within a repetition."""
    rows = []
    for wl in opts.workloads:
        for depth in opts.pipelines:
            g = {(k, m): pick(runs, wl, depth, k, m)
                 for k in KINDS for m in MODES}
            ops = {km: [r["ops_per_sec"] for r in g[km]] for km in g}

            def ratios(a, b):
                return results.stat(x / y for x, y in zip(ops[a], ops[b]))

            for km in g:
                if not g[km] or min(ops[km]) <= 0:
                    raise Failed("%s P%d: %s %s measured no operation" % (
                        wl, depth, km[0], km[1]))

            row = {"section": "throughput", "workload": wl, "pipeline": depth}
            for k, m in g:
                row["%s_%s_ops" % (k, m)] = results.stat(ops[(k, m)])
                row["%s_%s_us_per_op" % (k, m)] = results.stat(
                    r["server_us_per_op"] for r in g[(k, m)])
                row["%s_%s_p99_us" % (k, m)] = results.stat(
                    r["latency_us"]["p99"] for r in g[(k, m)])
                row["client_cpu_%s_%s" % (k, m)] = results.stat(
                    r["client_cpu_cores"] for r in g[(k, m)])
            row["ratio_tls"] = ratios(("unreadd", "tls"), ("redis", "tls"))
            row["ratio_plain"] = ratios(("unreadd", "plain"),
                                        ("redis", "plain"))
            row["tls_of_plain_unreadd"] = ratios(("unreadd", "tls"),
                                                 ("unreadd", "plain"))
            row["tls_of_plain_redis"] = ratios(("redis", "tls"),
                                               ("redis", "plain"))
            # server CPU per operation, TLS / plaintext, per repetition:
            # the rate ratio a CPU-bound server would show, which a loaded
            # machine's scheduling does not move as it moves the rates
            for k in KINDS:
                row["cpu_tls_of_plain_%s" % k] = results.stat(
                    a["server_us_per_op"] / b["server_us_per_op"]
                    for a, b in zip(g[(k, "tls")], g[(k, "plain")])
                    if b["server_us_per_op"] > 0)
            # unreadd's share kept over Redis's, per repetition
            row["cost_ratio"] = results.stat(
                (a / b) / (c / d) for a, b, c, d in zip(
                    ops[("unreadd", "tls")], ops[("unreadd", "plain")],
                    ops[("redis", "tls")], ops[("redis", "plain")]))
            row["others_cpu"] = results.stat(
                r["others_cpu_cores"] for km in g for r in g[km])
            row["client_bound"] = any(
                row["client_cpu_unreadd_%s" % m]["median"] >=
                compare.CLIENT_BOUND * client_threads for m in MODES)
            rows.append(row)
    return rows


# --------------------------------------------------------------------------
# Handshakes per second.

def handshakes(opts, pin, certs):
    pair = Pair(opts, pin, certs)
    got = []
    try:
        for rep in range(opts.reps):
            for mode in (MODES[::-1] if rep % 2 == 0 else MODES):
                for srv in pair.servers:
                    argv = pin.client + [
                        os.path.join(opts.build, "unread-bench"), "--json",
                        "--handshakes", "-T", HANDSHAKE_THREADS,
                        "-c", HANDSHAKE_THREADS,
                        "-d", opts.handshake_seconds,
                        "-p", srv.tls_port if mode == "tls" else srv.port] \
                        + client_extra(certs, mode)
                    r = compare.measure([str(a) for a in argv], [srv.pid],
                                        "handshakes on %s" % srv.kind)
                    r.update(server=srv.kind, mode=mode, rep=rep)
                    r["server_us_per_handshake"] = (
                        1e6 * r["server_cpu_cores"] / r["per_sec"]
                        if r["per_sec"] else 0.0)
                    got.append(r)
                    say("  %-7s %-5s #%d %8.0f connects/s  server %.0f us "
                        "each  cores: client %.2f server %.2f others %.2f" % (
                            srv.kind, mode, rep + 1, r["per_sec"],
                            r["server_us_per_handshake"],
                            r["client_cpu_cores"], r["server_cpu_cores"],
                            r["others_cpu_cores"]))
    finally:
        pair.stop()
    rows = []
    for mode in MODES:
        sel = {k: sorted((r for r in got if r["server"] == k and
                          r["mode"] == mode), key=lambda r: r["rep"])
               for k in KINDS}
        row = {"section": "handshakes", "mode": mode,
               "threads": HANDSHAKE_THREADS}
        for k in KINDS:
            row["%s_per_sec" % k] = results.stat(r["per_sec"]
                                                 for r in sel[k])
            row["%s_us_each" % k] = results.stat(
                r["server_us_per_handshake"] for r in sel[k])
        if min(r["per_sec"] for r in sel["redis"]) <= 0 or \
                min(r["per_sec"] for r in sel["unreadd"]) <= 0:
            raise Failed("%s: a handshake loop completed none" % mode)
        row["ratio"] = results.stat(
            a["per_sec"] / b["per_sec"]
            for a, b in zip(sel["unreadd"], sel["redis"]))
        rows.append(row)
    return rows, got


# --------------------------------------------------------------------------
# Memory per idle connection.

PING = b"*1\r\n$4\r\nPING\r\n"


def open_idle(port, n, context):
    """n connections to port (TLS with context), each having answered one
    PING; returns them, open."""
    conns = []
    try:
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            if context is not None:
                s = context.wrap_socket(s, server_hostname="localhost")
            s.sendall(PING)
            got = b""
            while not got.endswith(b"\r\n"):
                chunk = s.recv(64)
                if not chunk:
                    raise Failed("port %d closed a connection before PONG" %
                                 port)
                got += chunk
            if got != b"+PONG\r\n":
                raise Failed("port %d answered PING with %r" % (port, got))
            conns.append(s)
    except BaseException:
        for s in conns:
            s.close()
        raise
    return conns


def idle_memory(opts, pin, certs):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = opts.idle + 64
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    context = ssl.create_default_context(cafile=certs.ca)
    rows = []
    for kind in KINDS:
        row = {"section": "idle", "kind": kind, "connections": opts.idle}
        for mode in MODES:
            port = compare.free_port()
            srv = compare.Server(kind, opts.build, pin,
                                 tls_args(certs, port))
            try:
                time.sleep(0.2)  # the server settled after its start
                before = compare.proc_rss(srv.pid)
                t0 = time.monotonic()
                conns = open_idle(port if mode == "tls" else srv.port,
                                  opts.idle,
                                  context if mode == "tls" else None)
                took = time.monotonic() - t0
                time.sleep(0.2)
                after = compare.proc_rss(srv.pid)
                for s in conns:
                    s.close()
            finally:
                srv.stop()
            row["%s_bytes" % mode] = (after - before) / opts.idle
            say("  %-7s %-5s %d idle connections: %.0f B each (RSS %.1f -> "
                "%.1f MiB; opened in %.1f s)" % (
                    kind, mode, opts.idle, row["%s_bytes" % mode],
                    before / 2**20, after / 2**20, took))
        rows.append(row)
    return rows


# --------------------------------------------------------------------------
# Output.

def f2(s):
    return "%.2f (%.2f-%.2f)" % (s["median"], s["min"], s["max"])


def print_table(rows):
    say("")
    say("| workload | P | unreadd plain | unreadd TLS | Redis plain | Redis "
        "TLS | unreadd/Redis plain | unreadd/Redis TLS | TLS/plain unreadd "
        "| TLS/plain Redis | server us/op plain->TLS unreadd | Redis |")
    say("|---|---:|---:|---:|---:|---:|---|---|---|---|---|---|")
    for r in rows:
        say("| %s | %d | %.0f | %.0f | %.0f | %.0f | %s | %s%s | %s | %s "
            "| %.2f -> %.2f | %.2f -> %.2f |" % (
                r["workload"], r["pipeline"],
                r["unreadd_plain_ops"]["median"],
                r["unreadd_tls_ops"]["median"],
                r["redis_plain_ops"]["median"], r["redis_tls_ops"]["median"],
                f2(r["ratio_plain"]), ">= " if r["client_bound"] else "",
                f2(r["ratio_tls"]), f2(r["tls_of_plain_unreadd"]),
                f2(r["tls_of_plain_redis"]),
                r["unreadd_plain_us_per_op"]["median"],
                r["unreadd_tls_us_per_op"]["median"],
                r["redis_plain_us_per_op"]["median"],
                r["redis_tls_us_per_op"]["median"]))


def add_goals(res, rows, hs, idle):
    for r in rows:
        goal = RATIO_GOAL.get(r["pipeline"])
        if goal is not None:
            v = r["ratio_tls"]["median"]
            res.goal("%s P%d over TLS: unreadd / Redis >= %.1f" % (
                r["workload"], r["pipeline"], goal), v, v >= goal,
                client_bound=r["client_bound"])
        u = r["tls_of_plain_unreadd"]["median"]
        d = r["tls_of_plain_redis"]["median"]
        res.goal("%s P%d: TLS / plaintext of unreadd >= Redis's (%.3f)" % (
            r["workload"], r["pipeline"], d), u, u >= d,
            client_bound=r["client_bound"])
        u = r["cpu_tls_of_plain_unreadd"]["median"]
        d = r["cpu_tls_of_plain_redis"]["median"]
        res.goal("%s P%d: server CPU per operation, TLS / plaintext, of "
                 "unreadd <= Redis's (%.3f)" % (r["workload"], r["pipeline"],
                                                d), u, u <= d)


def print_goals(res):
    say("")
    say("Goals (issue 33, TLS):")
    for g in res.doc["goals"]:
        say("  %s: %.3f %s%s" % (
            g["goal"], g["value"], "met" if g["met"] else "MISSED",
            " (client-bound: a lower bound)" if g.get("client_bound")
            else ""))


# --------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--seconds", type=float, default=1.5,
                    help="measured seconds per run (1.5)")
    ap.add_argument("--warmup", type=float, default=0.25,
                    help="unmeasured seconds before each run (0.25)")
    ap.add_argument("--reps", type=int, default=3,
                    help="repetitions of the four runs, and of the "
                    "handshake loops (3)")
    ap.add_argument("--keys", type=int, default=1000000,
                    help="preloaded keyspace (1000000)")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--pipelines", default=",".join(map(str, PIPELINES)))
    ap.add_argument("--handshake-seconds", type=float, default=1.5,
                    help="seconds of each handshake loop (1.5)")
    ap.add_argument("--idle", type=int, default=2000,
                    help="idle connections per server (2000)")
    ap.add_argument("--retry-budget", type=float, default=20,
                    help="seconds that reruns of noisy repetitions may "
                    "take in all (20)")
    ap.add_argument("--no-pin", action="store_true")
    ap.add_argument("--results", help="auto for bench/results/tls-STAMP.json "
                    "(make bench-tls does that), or a path")
    defaults = vars(ap.parse_args([]))
    opts = ap.parse_args()
    opts.build = os.path.join(REPO, opts.build)
    opts.workloads = [w for w in opts.workloads.split(",") if w]
    opts.pipelines = [int(p) for p in opts.pipelines.split(",") if p]
    for tool in ("redis-server", "openssl"):
        if shutil.which(tool) is None:
            say("tls: %s not found (sh tools/deps.sh bench)" % tool)
            return 1
    m = compare.machine()
    pin = compare.Pinning(not opts.no_pin)
    t0 = time.monotonic()
    say("machine: %d cores, %s, kernel %s, Redis %s; load average %s" % (
        m["nproc"], m["cpu"], m["kernel"], m["redis"], compare.loadavg()))
    res = results.Run("tls", opts, {
        k: v for k, v in defaults.items()
        if k in ("seconds", "warmup", "reps", "keys", "handshake_seconds",
                 "idle")})
    res.doc["pinning"] = pin.describe()
    out = {"machine": m, "pinning": pin.describe()}
    with tempfile.TemporaryDirectory(prefix="unread-tls-bench-") as d:
        try:
            certs = tlsgen.certs(os.path.join(d, "certs"))
            say("%d connections, pipelines %s, runs of %.2f s after %.2f s "
                "of warm-up, %d keys uniform, %d repetitions of four runs "
                "(unreadd and Redis, plaintext and TLS)" % (
                    CONNECTIONS, opts.pipelines, opts.seconds, opts.warmup,
                    opts.keys, opts.reps))
            runs = throughput(opts, pin, certs)
            rows = summarize(runs, opts, pin.client_threads)
            print_table(rows)
            say("")
            say("Handshakes: %d threads, connect + full handshake + PING + "
                "close, %.1f s loops" % (HANDSHAKE_THREADS,
                                         opts.handshake_seconds))
            hs, hs_runs = handshakes(opts, pin, certs)
            for r in hs:
                say("  %-5s unreadd %.0f/s, Redis %.0f/s: ratio %s" % (
                    r["mode"], r["unreadd_per_sec"]["median"],
                    r["redis_per_sec"]["median"], f2(r["ratio"])))
            say("")
            say("Memory per idle connection (%d each, fresh servers):" %
                opts.idle)
            idle = idle_memory(opts, pin, certs)
        except Failed as e:
            say("tls: FAILED: %s" % e)
            return 1
    # what each server's TLS runs agreed on (one version and suite each)
    res.doc["negotiated"] = {
        k: sorted({r["tls"] for r in runs if r["server"] == k and
                   r["mode"] == "tls"}) for k in KINDS}
    say("negotiated: %s" % ", ".join(
        "%s %s" % (k, " / ".join(v)) for k, v in
        res.doc["negotiated"].items()))
    for r in rows + hs:
        res.row(**r)
    for r in idle:
        res.row(section="idle", kind=r["kind"], connections=r["connections"],
                plain_bytes=results.stat([r["plain_bytes"]]),
                tls_bytes=results.stat([r["tls_bytes"]]))
    add_goals(res, rows, hs, idle)
    print_goals(res)
    out.update(runs=runs, handshake_runs=hs_runs, idle=idle)
    say("")
    say("%.0f s; load average at the end %s" % (time.monotonic() - t0,
                                                compare.loadavg()))
    if opts.results:
        res.save(raw=out, path=compare.results_path(opts.results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
