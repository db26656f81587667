#!/usr/bin/env python3
"""unreadd and Redis side by side: `make bench` and `make bench-memory`.

    python3 bench/compare.py [--build DIR] [--memory] [--memory-keys N]
                             [--seconds S]
                             [--family-seconds S] [--warmup S] [--reps N]
                             [--keys N]
                             [--workloads a,b] [--retry-budget S] [--no-pin]
                             [--json FILE]

Throughput (default): starts build/unreadd and redis-server (persistence
off, free ports, temp dirs), preloads the same keyspace into both, then for
every workload and pipeline depth runs build/unread-bench against unreadd
(binary protocol) and Redis alternately, A B A B A B, so drift on a shared
machine hits both; a pair during which other processes were busy is run
again while a time budget lasts. Prints one table: median ops/s of each,
the ratio (median of the per-pair ratios, with min-max), p99 of each, and
the CPU of the client, of each server and of everything else, then the
goals of issues 3 and 4 as met/missed. CNT's runs last --seconds
after --warmup, the other families' --family-seconds after
--family-warmup (shorter, so that every family fits in five minutes on
two cores). A row whose unreadd runs kept the client's cores busy
(CLIENT_BOUND) is marked: the load generator, not unreadd, set its pace,
so its ratio is a lower bound.

Memory (--memory): for every row of MEMORY, fresh servers, the row's load
step for its keyspace into both (deep-pipelined), then bytes per entry from
the RSS growth (/proc/<pid>/status VmRSS) and from each server's own
accounting (unreadd INFO memory <family>_bytes, Redis used_memory growth);
then the goals as met/missed: issue 21's, of RSS growth per entry
(MEMORY_RSS_GOAL), and the earlier ones of own accounting. Then the
single-entry shapes (SHAPES, issue 21 part 4): users with one entry of a
family, or one in each of five, loaded by several load steps into the
same pair of servers; bytes per user, both servers, and the ratio.

On a machine with 2+ cores the servers run on CPU 0 and the client on the
others (taskset), so the client never steals the server's core; the client
CPU column says whether it kept up. Any error reply, a DEBUG AUDIT mismatch
or a Redis hash whose total is not the sum of its parts fails the run.

Adding a family: its workloads to WORKLOADS (and goals to GOALS if it has
any), a row to MEMORY, its one-entry step to ONE_ENTRY and SHAPES.
Python 3 standard library only.
"""

import argparse
import json
import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
from harness import Resp, free_port, info_flat  # noqa: E402
import results  # noqa: E402

# Workloads run by `make bench`, in order. A workload's keyspace is
# preloaded with its load step once per family (the part before '-').
WORKLOADS = ["cnt-incr", "cnt-get", "cnt-mix",
             "conv-seq", "conv-read", "conv-mix", "conv-mention",
             # GRP's reads first: grp-post leaves every member 99+ behind
             "grp-unread", "grp-total", "grp-mix", "grp-post",
             "bc-publish", "bc-unread", "bc-read",
             "dot-click", "dot-check", "dot-push",
             # FEED's read first: after the preload every snapshot is 0, so
             # feed-unread walks all 200 followees (feed-post ends that)
             "feed-unread", "feed-post", "feed-follow",
             "rcpt-read", "rcpt-count", "rcpt-mix",
             # USER (issue 17), last: the badge reads what every family's
             # runs left, as the Redis functions read the families' models
             "badge-one", "badge-many"]
PIPELINES = [1, 16]
CONNECTIONS = 50
# Families whose runs last --seconds after --warmup (issue 3's, the CNT
# goals); the others' last --family-seconds after --family-warmup, so that
# all of `make bench` fits in five minutes.
FULL_LENGTH = {"cnt"}

# Goals: (workload, pipeline) -> minimum unreadd/Redis ratio. Issue 3 set
# CNT's; issue 4 asks 2x at pipeline 16 of every other family's workload
# (RCPT, issue 5, is held to the same).
GOALS = {
    ("cnt-incr", 1): 1.3, ("cnt-incr", 16): 3.0,
    ("cnt-get", 1): 1.3, ("cnt-get", 16): 2.0,
    ("conv-seq", 16): 2.0, ("conv-read", 16): 2.0, ("conv-mix", 16): 2.0,
    ("conv-mention", 16): 2.0,
    ("grp-unread", 16): 2.0, ("grp-total", 16): 2.0, ("grp-mix", 16): 2.0,
    ("grp-post", 16): 2.0,
    ("bc-publish", 16): 2.0, ("bc-unread", 16): 2.0, ("bc-read", 16): 2.0,
    ("dot-click", 16): 2.0, ("dot-check", 16): 2.0, ("dot-push", 16): 2.0,
    ("feed-unread", 16): 2.0, ("feed-post", 16): 2.0,
    ("feed-follow", 16): 2.0,
    ("rcpt-read", 16): 2.0, ("rcpt-count", 16): 2.0, ("rcpt-mix", 16): 2.0,
    # issue 17: USER.BADGE 3x Redis's one function over the user's keys
    ("badge-one", 16): 3.0,
}
# Goals in units per second of unreadd (issue 17: USER.MBADGE of 100 users
# at 1M users/s on this machine).
RATE_GOALS = {("badge-many", 16): 1e6}
# Workloads whose replies carry several users: (users per unreadd reply,
# users per Redis reply). Their figures are users per second on both sides
# (badge-many: one USER.MBADGE of 100 users against 100 pipelined FCALLs).
USERS_PER_REPLY = {"badge-many": (100, 1)}
# Memory goals: unreadd bytes / Redis bytes (issue 3), and unreadd bytes
# per entry by its own accounting (issue 4), by the MEMORY row's workload.
MEMORY_RATIO_GOAL = {"cnt": 0.25}
MEMORY_BYTES_GOAL = {"conv-seq": 32, "grp-unread": 16, "bc-unread": 16,
                     "dot-check": 16, "feed-unread": 12, "rcpt-count": 40}
# Issue 21: unreadd's RSS growth per entry, by the MEMORY row's workload:
# what the row stands for, and its goal.
MEMORY_RSS_GOAL = {
    "cnt-get": ("cnt B/user (2 types)", 20),
    "conv-seq": ("conv B/(user, conv)", 20),
    "grp-unread": ("grp B/membership", 10),
    "bc-unread": ("bc B/subscription, expiry tracking included", 14),
    "dot-check": ("dot B/click", 12),
    "feed-unread": ("feed B/follow at 200 follows", 4),
    "rcpt-count": ("rcpt B/message, 200 members, everyone reads", 32),
    "rcpt-lag": ("rcpt B/message, 200 members, 10 never read, others "
                 "READUPTO", 40),
    "rcpt-half": ("rcpt B/message, 200 members, each message read by a "
                  "random half (RCPT.READ)", 64),
}
NOISE_CORES = 0.25  # others' CPU above this marks a run as noisy
# Client CPU per client thread above this during the unreadd runs: the
# client was the bottleneck, and unreadd's figure a lower bound.
CLIENT_BOUND = 0.88
RETRY_NOISY = 2     # reruns of a noisy pair, while the budget lasts

# `make bench-memory`: (family, workload whose load step fills it, keys,
# unit[, types]). With types, the load runs with --types and each key
# holds that many entries (a user's conversations, groups, channels); the
# figures are per entry. unreadd's own accounting is INFO memory
# `<family>_bytes`, its entry count `<family>_<unit>s`.
MEMORY = [
    ("cnt", "cnt-get", 1000000, "user"),
    ("conv", "conv-seq", 250000, "conversation", 4),
    ("grp", "grp-unread", 125000, "membership", 8),
    ("bc", "bc-unread", 1000000, "subscription", 1),
    # A key is one entry: 250,000 users x 4 clicks; 5,000 users x 200
    # follows; 1,000 groups of 200 members x 1,000 messages (bench_rcpt.c),
    # read by everyone lagging the sends (rcpt-count), by 190 of 200
    # every 20 messages (rcpt-lag), by a random half each (rcpt-half).
    ("dot", "dot-check", 1000000, "click"),
    ("feed", "feed-unread", 1000000, "follow"),
    ("rcpt", "rcpt-count", 1000000, "message"),
    ("rcpt", "rcpt-lag", 1000000, "message"),
    ("rcpt", "rcpt-half", 1000000, "message"),
]

# Issue 21 part 4, single-entry shapes: users with exactly ONE entry of a
# family, and users with one in each of five families (the same uids). A
# row: its name (what --workloads selects), what it stands for, and its
# load steps, run one after the other into the same pair of servers. A
# step: (family, the workload whose load step it runs, unit, the
# unread-bench options that give every user one entry), each key one user
# in every step, so the row's figures are bytes per user. SHAPE_USERS
# users, or --memory-keys.
SHAPE_USERS = 1000000
ONE_ENTRY = {
    "cnt": ("cnt", "cnt-get", "user", ["--types", 1]),
    "conv": ("conv", "conv-seq", "conversation", ["--types", 1]),
    "grp": ("grp", "grp-unread", "membership", ["--types", 1]),
    "dot": ("dot", "dot-check", "click", ["--per-user", 1]),
    "feed": ("feed", "feed-unread", "follow", ["--per-user", 1]),
}
SHAPES = [
    ("shape-grp", "one group", [ONE_ENTRY["grp"]]),
    ("shape-dot", "one dot", [ONE_ENTRY["dot"]]),
    ("shape-feed", "one follow", [ONE_ENTRY["feed"]]),
    ("shape-conv", "one conversation", [ONE_ENTRY["conv"]]),
    ("shape-cnt", "CNT, one type", [ONE_ENTRY["cnt"]]),
    ("shape-mix", "one each of cnt, conv, grp, dot, feed",
     [ONE_ENTRY[f] for f in ("cnt", "conv", "grp", "dot", "feed")]),
]
# Redis, after a shape's load: the family's per-user hash (bench_<f>.c)
# and its field count when the user has one entry (CNT: the type and
# `total`; CONV: the unread, m<cid>, r<cid> and `total`). Sampled.
REDIS_ONE_ENTRY = {"cnt": ("u:", 2), "conv": ("c:", 4), "grp": ("gs:", 1),
                   "dot": ("dot:click:", 1), "feed": ("feed:snap:", 1)}

# Families whose Redis hashes keep a total beside their parts (the fields
# named by a number): their key prefix. Sampled after the runs and loads.
REDIS_TOTALS = {"cnt": "u:", "conv": "c:"}

# Persistence off on both sides: the comparison is of in-memory work.
REDIS_ARGS = ["--save", "", "--appendonly", "no"]
# DEBUG AUDIT after each run, from this (loopback) client.
UNREADD_ARGS = ["--journal", "no", "--save-seconds", "0",
                "--enable-debug-command", "local"]

HZ = os.sysconf("SC_CLK_TCK")


class Failed(Exception):
    pass


def say(msg=""):
    print(msg, flush=True)


# --------------------------------------------------------------------------
# The machine.

def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def redis_version():
    out = subprocess.run(["redis-server", "--version"], capture_output=True,
                         text=True).stdout
    for word in out.split():
        if word.startswith("v="):
            return word[2:]
    return out.strip()


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def machine():
    return {"nproc": os.cpu_count(), "cpu": cpu_model(),
            "kernel": platform.release(), "redis": redis_version()}


# --------------------------------------------------------------------------
# Processes.

def proc_cpu_seconds(pid):
    """utime + stime of a process, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ


def machine_cpu():
    """(busy, steal) seconds of the whole machine so far, from /proc/stat:
    busy is user + nice + system + irq + softirq over every CPU."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / HZ, v[7] / HZ


def children_cpu():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def proc_rss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise Failed("no VmRSS for pid %d" % pid)


class Pinning:
    """Servers on CPU 0, the client on the rest, when there are 2+ CPUs and
    taskset exists; else nothing pinned and the client uses every core."""

    def __init__(self, enabled):
        n = os.cpu_count() or 1
        self.on = enabled and n >= 2 and shutil.which("taskset") is not None
        if self.on:
            self.server = ["taskset", "-c", "0"]
            self.client = ["taskset", "-c",
                           "1" if n == 2 else "1-%d" % (n - 1)]
            self.client_threads = min(n - 1, 4)
        else:
            self.server, self.client = [], []
            self.client_threads = min(n, 4)

    def describe(self):
        if not self.on:
            return "not pinned: servers and client share every core"
        return ("servers pinned to CPU 0, client to CPU %s (%d thread%s)" %
                (self.client[2], self.client_threads,
                 "s" if self.client_threads > 1 else ""))


class Server:
    """A server process on a free port in a temp dir; extra: more
    command-line arguments (bench/tls.py: a TLS port beside)."""

    def __init__(self, kind, build, pin, extra=()):
        self.kind = kind  # "unreadd" or "redis"
        self.tmp = tempfile.TemporaryDirectory(prefix="unread-bench-")
        self.port = free_port()
        self.log = os.path.join(self.tmp.name, "server.log")
        if kind == "unreadd":
            argv = [os.path.join(build, "unreadd"), "--port", str(self.port),
                    "--bind", "127.0.0.1", "--dir", self.tmp.name,
                    "--loglevel", "warning"]
            extra = UNREADD_ARGS + list(extra)
        else:
            argv = ["redis-server", "--port", str(self.port), "--bind",
                    "127.0.0.1", "--dir", self.tmp.name, "--logfile",
                    self.log, "--daemonize", "no"]
            extra = REDIS_ARGS + list(extra)
        try:
            self.start(pin.server + argv + extra)
        except Failed:
            # A build from before persistence has no such keys: it keeps
            # nothing on disk anyway.
            if kind != "unreadd" or ("unknown config key" not in
                                     self.log_tail() and
                                     "is not yes or no" not in
                                     self.log_tail()):
                raise
            self.start(pin.server + argv)

    def start(self, argv):
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=log)
        self.wait_ready()

    def wait_ready(self):
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise Failed("%s exited at start:\n%s" % (self.kind,
                                                          self.log_tail()))
            try:
                with Resp(self.port, 1.0) as c:
                    if c.cmd("PING") == "PONG":
                        return
            except OSError:
                time.sleep(0.02)
        raise Failed("%s did not answer on port %d" % (self.kind, self.port))

    def log_tail(self):
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-20:])
        except OSError:
            return ""

    @property
    def pid(self):
        return self.proc.pid

    def info(self, section):
        with Resp(self.port, 30) as c:
            return info_flat(c.cmd("INFO", section))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.tmp.cleanup()


# --------------------------------------------------------------------------
# unread-bench runs.

def bench(build, pin, srv, workload, args, port=None, extra=()):
    """Runs unread-bench against srv (on port, else its port; extra: more
    options, bench/tls.py's --tls); returns its JSON plus, over the whole
    run, the server's CPU and the CPU of everything else on the machine
    (other users: noise) and the hypervisor's steal, in cores. Bad replies
    or a failure raise Failed."""
    target = "binary" if srv.kind == "unreadd" else "redis"
    argv = pin.client + [
        os.path.join(build, "unread-bench"), "--json", "-t", target,
        "-p", str(port or srv.port), "-w", workload] + [str(a) for a in extra] + [
        "-T", str(pin.client_threads)] + [str(a) for a in args]
    if srv.kind == "unreadd":
        argv.append("--audit")
    r = measure(argv, [srv.pid], "%s on %s" % (workload, srv.kind))
    if workload in USERS_PER_REPLY and "--load" not in argv:
        per = USERS_PER_REPLY[workload][0 if srv.kind == "unreadd" else 1]
        r["ops_per_sec"] *= per
        r["ops"] *= per
        r["unit"] = "users"
    return r


def measure(argv, pids, what):
    """Runs an unread-bench --json command line; returns its JSON plus,
    over the whole run, the CPU of the server processes `pids` (summed),
    of everything else on the machine (noise) and the hypervisor's steal,
    in cores. Bad replies or a failure raise Failed."""
    def servers_cpu():
        return sum(proc_cpu_seconds(pid) for pid in pids)

    srv0, cli0, (busy0, steal0) = servers_cpu(), children_cpu(), machine_cpu()
    t0 = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    wall = time.monotonic() - t0
    srv1, cli1, (busy1, steal1) = servers_cpu(), children_cpu(), machine_cpu()
    if p.returncode != 0 or not p.stdout.strip():
        raise Failed("unread-bench %s failed (exit %d):\n%s%s" % (
            what, p.returncode, p.stdout, p.stderr))
    r = json.loads(p.stdout)
    r["server_cpu_cores"] = (srv1 - srv0) / wall
    r["others_cpu_cores"] = max(0.0, (busy1 - busy0) - (srv1 - srv0) -
                                (cli1 - cli0)) / wall
    r["steal_cores"] = (steal1 - steal0) / wall
    return r


def preload(build, pin, servers, workload, keys):
    """The workload's load step for every key, on each server."""
    for srv in servers:
        t0 = time.monotonic()
        r = bench(build, pin, srv, workload,
                  ["--load", "-r", keys, "-c", 8, "-P", 64])
        say("  preload %-8s %s: %d requests in %.1f s" % (
            srv.kind, workload, r["ops"], time.monotonic() - t0))


def check_redis_totals(srv, family, keys, samples=1000):
    """Every sampled hash of the family (REDIS_TOTALS) has total == the sum
    of its numbered fields (CNT's types, CONV's conversations' unread): the
    scripts kept Redis's parts and total as consistent as unreadd's."""
    prefix = REDIS_TOTALS[family]
    step = max(1, keys // samples)
    with Resp(srv.port, 30) as c:
        replies = c.pipeline([("HGETALL", "%s%d" % (prefix, k))
                              for k in range(0, keys, step)])
    for k, flat in zip(range(0, keys, step), replies):
        fields = {flat[i].decode(): int(flat[i + 1])
                  for i in range(0, len(flat), 2)}
        parts = {f: v for f, v in fields.items() if f.isdigit()}
        if fields.get("total", 0) != sum(parts.values()):
            raise Failed("redis %s%d: total %d != sum of parts %r" % (
                prefix, k, fields.get("total", 0), parts))
    return len(replies)


def median(xs):
    return statistics.median(xs)


def quietest(attempt, budget, what):
    """attempt() runs once what is compared (a list of runs); an attempt
    during which other processes took more than NOISE_CORES is run again
    (up to RETRY_NOISY times, while budget[0], the seconds left for reruns,
    lasts) and the quietest attempt kept: noise on the client's core hurts
    the faster server most, since it needs the most client CPU."""
    best, best_noise = None, None
    for n in range(1 + RETRY_NOISY):
        t0 = time.monotonic()
        runs = attempt()
        noise = max(r["others_cpu_cores"] for r in runs)
        if best is None or noise < best_noise:
            best, best_noise = runs, noise
        cost = time.monotonic() - t0
        if n > 0:
            budget[0] -= cost
        if noise <= NOISE_CORES or budget[0] < cost:
            break
        say("  (noisy: others used %.2f cores; running %s again)" %
            (noise, what))
    return best


def pair(opts, pin, servers, workload, args, rep, budget):
    """One A B pair, run again while noisy (quietest)."""
    def attempt():
        runs = []
        for srv in servers:
            r = bench(opts.build, pin, srv, workload, args)
            r["server"] = srv.kind
            r["rep"] = rep
            runs.append(r)
            say("  %-8s P%-2d %-7s #%d %9.0f ops/s  p99 %7.1f us  cores: "
                "client %.2f server %.2f others %.2f steal %.2f" % (
                    workload, r["pipeline"], srv.kind, rep + 1,
                    r["ops_per_sec"], r["latency_us"]["p99"],
                    r["client_cpu_cores"], r["server_cpu_cores"],
                    r["others_cpu_cores"], r["steal_cores"]))
        return runs
    return quietest(attempt, budget, "the pair")


def throughput(opts, pin):
    servers = [Server("unreadd", opts.build, pin),
               Server("redis", opts.build, pin)]
    unr, red = servers
    runs = []
    try:
        say("unreadd pid %d port %d, redis pid %d port %d; %s" % (
            unr.pid, unr.port, red.pid, red.port, pin.describe()))
        with Resp(unr.port) as c:
            persist = c.cmd("CONFIG", "GET", "*journal*") + \
                c.cmd("CONFIG", "GET", "save-seconds")
        say("unreadd persistence config: %s" % (
            " ".join(x.decode() for x in persist) or "none in this build"))
        loaded = set()
        budget = [opts.retry_budget]
        for wl in opts.workloads:
            family = wl.split("-")[0]
            if family not in loaded:
                preload(opts.build, pin, servers, wl, opts.keys)
                loaded.add(family)
            full = family in FULL_LENGTH
            seconds = opts.seconds if full else opts.family_seconds
            warmup = opts.warmup if full else opts.family_warmup
            for depth in PIPELINES:
                for rep in range(opts.reps):
                    args = ["-c", CONNECTIONS, "-P", depth, "-d", seconds,
                            "--warmup", warmup, "-r", opts.keys,
                            "--seed", rep + 1]
                    runs += pair(opts, pin, servers, wl, args, rep, budget)
        for family in sorted(loaded & set(REDIS_TOTALS)):
            n = check_redis_totals(red, family, opts.keys)
            say("  redis %s: total == sum of parts in %d sampled users" % (
                family, n))
    finally:
        for srv in servers:
            srv.stop()
    return runs


def summarize(runs, workloads, client_threads):
    rows = []
    for wl in workloads:
        for depth in PIPELINES:
            sel = [r for r in runs
                   if r["workload"] == wl and r["pipeline"] == depth]
            u = [r for r in sel if r["server"] == "unreadd"]
            d = [r for r in sel if r["server"] == "redis"]
            ratios = [a["ops_per_sec"] / b["ops_per_sec"]
                      for a, b in zip(u, d)]
            rows.append({
                "workload": wl, "pipeline": depth,
                "unreadd_ops": median([r["ops_per_sec"] for r in u]),
                "redis_ops": median([r["ops_per_sec"] for r in d]),
                "ratio": median(ratios), "ratio_min": min(ratios),
                "ratio_max": max(ratios),
                "unreadd_p99": median([r["latency_us"]["p99"] for r in u]),
                "redis_p99": median([r["latency_us"]["p99"] for r in d]),
                "client_cpu_u": median([r["client_cpu_cores"] for r in u]),
                "client_cpu_r": median([r["client_cpu_cores"] for r in d]),
                "server_cpu_u": median([r["server_cpu_cores"] for r in u]),
                "server_cpu_r": median([r["server_cpu_cores"] for r in d]),
                "others_cpu": median([r["others_cpu_cores"] for r in sel]),
            })
            rows[-1]["client_bound"] = (rows[-1]["client_cpu_u"] >=
                                        CLIENT_BOUND * client_threads)
    return rows


def print_table(rows):
    say("")
    say("| workload | pipeline | unreadd ops/s | Redis ops/s | ratio median "
        "(min-max) | p99 us unreadd | p99 us Redis | client CPU u / R "
        "| server CPU u / R | others' CPU |")
    say("|---|---:|---:|---:|---|---:|---:|---|---|---:|")
    for r in rows:
        say("| %s | %d | %.0f | %.0f | %s%.2f (%.2f-%.2f) | %.0f | %.0f | "
            "%.2f / %.2f | %.2f / %.2f | %.2f |" % (
                r["workload"], r["pipeline"], r["unreadd_ops"],
                r["redis_ops"], ">= " if r["client_bound"] else "",
                r["ratio"], r["ratio_min"], r["ratio_max"],
                r["unreadd_p99"], r["redis_p99"], r["client_cpu_u"],
                r["client_cpu_r"], r["server_cpu_u"], r["server_cpu_r"],
                r["others_cpu"]))
    say("")
    for wl, (u, d) in sorted(USERS_PER_REPLY.items()):
        if any(r["workload"] == wl for r in rows):
            say("%s: users/s on both sides (%d per unreadd reply, %d per Redis "
                "reply)" % (wl, u, d))
    say("CPU columns: cores busy (1.00 = one core), medians, during the "
        "unreadd run / the Redis run;")
    say("others' CPU: every other process on the machine meanwhile (noise).")
    if any(r["client_bound"] for r in rows):
        say(">= : the client's core was busy (>= %.2f) during the unreadd runs:"
            " the load generator set the pace, and the ratio is a lower "
            "bound." % CLIENT_BOUND)
    noisy = [r for r in rows if r["others_cpu"] > NOISE_CORES]
    if noisy:
        say("WARNING: other processes used more than %.2f cores during %d of "
            "%d rows:" % (NOISE_CORES, len(noisy), len(rows)))
        say("these figures are noisy; rerun on a quiet machine.")


def print_goals(rows):
    say("")
    say("Goals (issue 3: CNT; issues 4 and 5: the other families):")
    for r in rows:
        goal = GOALS.get((r["workload"], r["pipeline"]))
        if goal is not None:
            say("  %-8s P%-2d ratio >= %.1f: %-6s (%.2f, min %.2f)%s" % (
                r["workload"], r["pipeline"], goal,
                "met" if r["ratio"] >= goal else "MISSED", r["ratio"],
                r["ratio_min"],
                "" if r["ratio"] >= goal or not r["client_bound"] else
                " client-bound: a lower bound"))
    for r in rows:
        goal = RATE_GOALS.get((r["workload"], r["pipeline"]))
        if goal is not None:
            say("  %-8s P%-2d >= %.0f/s: %-6s (%.0f)%s" % (
                r["workload"], r["pipeline"], goal,
                "met" if r["unreadd_ops"] >= goal else "MISSED",
                r["unreadd_ops"],
                " client-bound: a lower bound" if r["client_bound"] else ""))
    for r in rows:
        if r["pipeline"] == 1:
            ok = r["unreadd_p99"] <= r["redis_p99"]
            say("  %-8s P1  p99 <= Redis's: %-6s (%.0f vs %.0f us)" % (
                r["workload"], "met" if ok else "MISSED", r["unreadd_p99"],
                r["redis_p99"]))


# --------------------------------------------------------------------------
# Memory.

def memory_rows(opts):
    """The MEMORY rows to run: those whose load step is among
    --workloads, with --memory-keys keys each when given (a multiple of
    8,000 keeps each RCPT group on one of the 8 load connections)."""
    rows = []
    for row in MEMORY:
        if row[1] not in opts.workloads:
            continue
        if opts.memory_keys:
            row = row[:2] + (opts.memory_keys,) + row[3:]
        rows.append(row)
    return rows


def shape_rows(opts):
    """The SHAPES rows named in --workloads, with their user count."""
    users = opts.memory_keys or SHAPE_USERS
    return [row + (users,) for row in SHAPES if row[0] in opts.workloads]


def memory_shape(opts, pin, name, what, steps, users):
    """One SHAPES row: fresh servers, every step's load of `users` keys
    into both, then bytes per user: RSS growth (the activity table
    included) and own accounting (unreadd: the steps' families' _bytes,
    and activity_bytes beside; Redis: used_memory growth). unreadd must
    hold exactly one entry per user in each family (INFO memory
    <family>_<unit>s) and each user once in its activity table, if there;
    Redis one entry in each sampled user's hash."""
    servers = [Server("unreadd", opts.build, pin),
               Server("redis", opts.build, pin)]
    unr, red = servers
    load = ["--load", "-r", users, "-c", 8, "-P", 256]
    try:
        rss0 = {s.kind: proc_rss(s.pid) for s in servers}
        used0 = int(red.info("memory")["used_memory"])
        for family, workload, unit, extra in steps:
            for srv in servers:
                t0 = time.monotonic()
                bench(opts.build, pin, srv, workload, load + extra)
                say("  %s: loaded %-8s %d users, one %s entry each (%s load "
                    "step, %s) in %.1f s" % (
                        name, srv.kind, users, family, workload,
                        " ".join(str(a) for a in extra),
                        time.monotonic() - t0))
        rss1 = {s.kind: proc_rss(s.pid) for s in servers}
        uinfo = unr.info("memory")
        own_u = 0
        for family, workload, unit, extra in steps:
            held = int(uinfo["%s_%ss" % (family, unit)])
            if held != users:
                raise Failed("%s: unreadd holds %d %s %ss, expected %d (one "
                             "per user)" % (name, held, family, unit, users))
            own_u += int(uinfo["%s_bytes" % family])
        # The activity table holds each user once, or no one when the
        # families keep the day in their own entries (GRP, FEED, DOT) or
        # track no day (CNT, CONV: not in expire-families by default).
        if int(uinfo.get("activity_users", 0)) not in (0, users):
            raise Failed("%s: unreadd's activity table holds %s users, "
                         "expected %d or none" % (
                             name, uinfo["activity_users"], users))
        activity = int(uinfo.get("activity_bytes", 0))
        own_r = int(red.info("memory")["used_memory"]) - used0
        for family, workload, unit, extra in steps:
            check_redis_one_entry(red, name, family, users)
            if family in REDIS_TOTALS:
                check_redis_totals(red, family, users)
        say("  %s: unreadd own %.1f B per user (%s), activity table %.1f" % (
            name, own_u / users, " + ".join(
                "%s_bytes %.1f" % (f, int(uinfo["%s_bytes" % f]) / users)
                for f, _, _, _ in steps), activity / users))
    finally:
        for srv in servers:
            srv.stop()
    return {
        "shape": name, "what": what, "users": users,
        "families": [step[0] for step in steps],
        "rss_unreadd": (rss1["unreadd"] - rss0["unreadd"]) / users,
        "rss_redis": (rss1["redis"] - rss0["redis"]) / users,
        "own_unreadd": own_u / users, "activity_unreadd": activity / users,
        "own_redis": own_r / users,
    }


def check_redis_one_entry(srv, name, family, users, samples=1000):
    """Each sampled user's hash of the family (REDIS_ONE_ENTRY) holds one
    entry's fields: Redis was loaded with the shape unreadd was."""
    prefix, fields = REDIS_ONE_ENTRY[family]
    uids = range(0, users, max(1, users // samples))
    with Resp(srv.port, 30) as c:
        lens = c.pipeline([("HLEN", "%s%d" % (prefix, u)) for u in uids])
    for uid, n in zip(uids, lens):
        if n != fields:
            raise Failed("%s: redis %s%d has %d fields, expected %d" % (
                name, prefix, uid, n, fields))


def print_shapes(rows):
    """The single-entry shapes' table: bytes per user on both servers."""
    if not rows:
        return
    say("")
    say("Single-entry shapes (issue 21 part 4): bytes per user")
    say("| shape | users | unreadd RSS | Redis RSS | RSS unreadd / Redis "
        "| unreadd own (families + activity table) | Redis used_memory "
        "| own unreadd / Redis |")
    say("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        own = r["own_unreadd"] + r["activity_unreadd"]
        say("| %s (%s) | %d | %.1f | %.1f | %.3f | %.1f (%.1f + %.1f) | %.1f "
            "| %.3f |" % (
                r["what"], r["shape"], r["users"], r["rss_unreadd"],
                r["rss_redis"], r["rss_unreadd"] / r["rss_redis"], own,
                r["own_unreadd"], r["activity_unreadd"], r["own_redis"],
                own / r["own_redis"]))
    say("RSS growth includes the activity table (every user's last active "
        "day, for expiry).")


def memory_row(opts, pin, family, workload, keys, unit, types=None):
    servers = [Server("unreadd", opts.build, pin),
               Server("redis", opts.build, pin)]
    unr, red = servers
    n = keys * (types or 1)  # entries
    load = ["--load", "-r", keys, "-c", 8, "-P", 256]
    if types:
        load += ["--types", types]
    try:
        rss0 = {s.kind: proc_rss(s.pid) for s in servers}
        used0 = int(red.info("memory")["used_memory"])
        for srv in servers:
            t0 = time.monotonic()
            bench(opts.build, pin, srv, workload, load)
            say("  loaded %-8s %d %ss in %.1f s" % (
                srv.kind, n, unit, time.monotonic() - t0))
        rss1 = {s.kind: proc_rss(s.pid) for s in servers}
        uinfo = unr.info("memory")
        own_u = int(uinfo["%s_bytes" % family])
        entries = int(uinfo.get("%s_%ss" % (family, unit), n))
        if entries != n:
            raise Failed("unreadd holds %d %ss, expected %d" % (
                entries, unit, n))
        own_r = int(red.info("memory")["used_memory"]) - used0
        # Not the family's, but in its RSS growth: every user's last active
        # day, kept for expiry (INFO memory activity_bytes).
        activity = int(uinfo.get("activity_bytes", 0))
        say("  unreadd: %s_bytes %.1f, activity table %.1f B per %s" % (
            family, own_u / n, activity / n, unit))
        if family in REDIS_TOTALS:
            check_redis_totals(red, family, keys)
    finally:
        for srv in servers:
            srv.stop()
    return {
        "family": family, "workload": workload, "keys": keys, "unit": unit,
        "types": types, "entries": n,
        "rss_unreadd": (rss1["unreadd"] - rss0["unreadd"]) / n,
        "rss_redis": (rss1["redis"] - rss0["redis"]) / n,
        "own_unreadd": own_u / n, "own_redis": own_r / n,
    }


def print_memory(rows):
    say("")
    say("| data | measure | unreadd B/entry | Redis B/entry "
        "| unreadd / Redis |")
    say("|---|---|---:|---:|---:|")
    for r in rows:
        what = "%s: %d %ss" % (r["family"], r["entries"], r["unit"])
        if r["types"]:
            what += " (%d keys x %d)" % (r["keys"], r["types"])
        what += " (%s load step)" % r["workload"]
        for name, u, d in (("RSS growth", r["rss_unreadd"], r["rss_redis"]),
                           ("own accounting (%s_bytes / used_memory)" %
                            r["family"], r["own_unreadd"], r["own_redis"])):
            say("| %s | %s | %.1f | %.1f | %.3f (1/%.1f) |" % (
                what, name, u, d, u / d, d / u))
    say("")
    say("Goals (issue 3: memory <= 1/4 of Redis's; issues 4, 5: bytes per "
        "entry, own accounting):")
    for r in rows:
        goal = MEMORY_RATIO_GOAL.get(r["family"])
        if goal is not None:
            ratio = r["rss_unreadd"] / r["rss_redis"]
            say("  %-5s RSS ratio %.3f <= %.2f: %s" % (
                r["family"], ratio, goal,
                "met" if ratio <= goal else "MISSED"))
        goal = MEMORY_BYTES_GOAL.get(r["workload"])
        if goal is not None:
            say("  %-5s %.1f B per %s <= %d: %s (RSS growth %.1f)" % (
                r["family"], r["own_unreadd"], r["unit"], goal,
                "met" if r["own_unreadd"] <= goal else "MISSED",
                r["rss_unreadd"]))
    print_rss_goals(rows)


def print_rss_goals(rows):
    """Issue 21's table: each row's RSS growth per entry against its
    goal, met or missed, with its own accounting beside."""
    rows = [r for r in rows if r["workload"] in MEMORY_RSS_GOAL]
    if not rows:
        return
    say("")
    say("Goals (issue 21: RSS growth per entry):")
    say("| row | load step | RSS growth | goal | | own accounting |")
    say("|---|---|---:|---:|---|---:|")
    for r in rows:
        what, goal = MEMORY_RSS_GOAL[r["workload"]]
        say("| %s | %s | %.1f | <= %d | %s | %.1f |" % (
            what, r["workload"], r["rss_unreadd"], goal,
            "met" if r["rss_unreadd"] <= goal else "MISSED",
            r["own_unreadd"]))


# --------------------------------------------------------------------------
# Results files (bench/results.py): every row with its figures' min /
# median / max over the repetitions, the goals met or missed.

def throughput_results(res, runs, rows):
    for row in rows:
        wl, depth = row["workload"], row["pipeline"]
        sel = [r for r in runs
               if r["workload"] == wl and r["pipeline"] == depth]
        u = [r for r in sel if r["server"] == "unreadd"]
        d = [r for r in sel if r["server"] == "redis"]
        res.row(workload=wl, pipeline=depth,
                unreadd_ops=results.stat(r["ops_per_sec"] for r in u),
                redis_ops=results.stat(r["ops_per_sec"] for r in d),
                ratio=results.stat(a["ops_per_sec"] / b["ops_per_sec"]
                                   for a, b in zip(u, d)),
                unreadd_p50_us=results.stat(r["latency_us"]["p50"] for r in u),
                redis_p50_us=results.stat(r["latency_us"]["p50"] for r in d),
                unreadd_p99_us=results.stat(r["latency_us"]["p99"] for r in u),
                redis_p99_us=results.stat(r["latency_us"]["p99"] for r in d),
                client_cpu_unreadd=results.stat(r["client_cpu_cores"]
                                                for r in u),
                others_cpu=results.stat(r["others_cpu_cores"] for r in sel),
                client_bound=row["client_bound"],
                users_per_reply=list(USERS_PER_REPLY[wl])
                if wl in USERS_PER_REPLY else None)
        goal = GOALS.get((wl, depth))
        if goal is not None:
            res.goal("%s P%d ratio >= %.1f" % (wl, depth, goal), row["ratio"],
                     row["ratio"] >= goal, client_bound=row["client_bound"])
        goal = RATE_GOALS.get((wl, depth))
        if goal is not None:
            res.goal("%s P%d >= %.0f/s" % (wl, depth, goal),
                     row["unreadd_ops"], row["unreadd_ops"] >= goal,
                     client_bound=row["client_bound"])


def memory_results(res, rows, shapes):
    one = lambda x: results.stat([x])  # one load per row: n = 1
    for r in rows:
        res.row(section="family", family=r["family"], workload=r["workload"],
                unit=r["unit"], entries=r["entries"], keys=r["keys"],
                types=r["types"], rss_unreadd=one(r["rss_unreadd"]),
                rss_redis=one(r["rss_redis"]),
                own_unreadd=one(r["own_unreadd"]),
                own_redis=one(r["own_redis"]))
        if r["workload"] in MEMORY_RSS_GOAL:
            what, goal = MEMORY_RSS_GOAL[r["workload"]]
            res.goal("%s RSS growth <= %d" % (what, goal), r["rss_unreadd"],
                     r["rss_unreadd"] <= goal)
    for r in shapes:
        res.row(section="shape", shape=r["shape"], what=r["what"],
                users=r["users"], rss_unreadd=one(r["rss_unreadd"]),
                rss_redis=one(r["rss_redis"]),
                own_unreadd=one(r["own_unreadd"]),
                own_redis=one(r["own_redis"]))


def results_path(arg):
    """--results: "auto" for bench/results/KIND-STAMP.json, a path, or
    None (no file)."""
    return None if arg in (None, "auto") else arg


# --------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--memory", action="store_true",
                    help="compare memory instead of throughput")
    # The budget of `make bench`, under five minutes on two cores: 22
    # workloads x 2 depths x 3 A/B pairs = 264 runs, ~0.13 s each to start,
    # connect and audit, plus ~60 s of preloads (Redis's Lua loads
    # mostly): CNT 36 x (1.5 + 0.25) s, the others 228 x (0.4 + 0.1) s.
    ap.add_argument("--seconds", type=float, default=1.5,
                    help="measured seconds per run of CNT (1.5)")
    ap.add_argument("--family-seconds", type=float, default=0.4,
                    help="measured seconds per run of the other families "
                    "(0.4)")
    ap.add_argument("--warmup", type=float, default=0.25,
                    help="unmeasured seconds before each run of CNT (0.25)")
    ap.add_argument("--family-warmup", type=float, default=0.1,
                    help="unmeasured seconds before each run of the other "
                    "families (0.1)")
    ap.add_argument("--reps", type=int, default=3,
                    help="A B pairs per workload and depth (3)")
    ap.add_argument("--keys", type=int, default=1000000,
                    help="preloaded keyspace (1000000)")
    ap.add_argument("--memory-keys", type=int, default=0,
                    help="with --memory, keys of every row instead of its "
                    "own (1000000), users of every shape row: smaller runs "
                    "for tests, figures less exact")
    ap.add_argument("--workloads", default=None,
                    help="the workloads to run; with --memory, the MEMORY "
                    "rows whose load step is one of them and the SHAPES rows "
                    "named (shape-grp, ..., shape-mix) (all)")
    ap.add_argument("--retry-budget", type=float, default=20,
                    help="seconds that reruns of noisy pairs may take in "
                    "all (20)")
    ap.add_argument("--no-pin", action="store_true")
    ap.add_argument("--json", help="write every run's figures here")
    ap.add_argument("--results", help="the results file (bench/results.py): "
                    "auto for bench/results/KIND-STAMP.json (make bench "
                    "does that), or a path")
    defaults = vars(ap.parse_args([]))
    opts = ap.parse_args()
    opts.build = os.path.join(REPO, opts.build)
    if opts.workloads is None:  # every row (the memory-only load steps too)
        opts.workloads = ",".join(
            [row[1] for row in MEMORY] + [row[0] for row in SHAPES]
            if opts.memory else WORKLOADS)
    opts.workloads = [w for w in opts.workloads.split(",") if w]
    if shutil.which("redis-server") is None:
        say("compare: redis-server not found (sh tools/deps.sh bench)")
        return 1

    m = machine()
    pin = Pinning(not opts.no_pin)
    t0 = time.monotonic()
    say("machine: %d cores, %s, kernel %s, Redis %s; load average %s" % (
        m["nproc"], m["cpu"], m["kernel"], m["redis"], loadavg()))
    out = {"machine": m, "pinning": pin.describe()}
    res = results.Run("memory" if opts.memory else "throughput", opts,
                      {k: v for k, v in defaults.items()
                       if k in ("seconds", "family_seconds", "reps", "keys")
                       or (k == "memory_keys" and opts.memory_keys)})
    if opts.memory_keys:
        res.doc["shortened"] = True
    res.doc["pinning"] = pin.describe()
    try:
        if opts.memory:
            rows = [memory_row(opts, pin, *row) for row in memory_rows(opts)]
            shapes = [memory_shape(opts, pin, *row)
                      for row in shape_rows(opts)]
            if not rows and not shapes:
                raise Failed("no memory row among --workloads %s" %
                             ",".join(opts.workloads))
            if rows:
                print_memory(rows)
            print_shapes(shapes)
            out["memory"], out["shapes"] = rows, shapes
            memory_results(res, rows, shapes)
        else:
            say("%d connections, pipelines %s, runs of %.2f s after %.2f s "
                "of warm-up (%s; others %.2f + %.2f s), %d keys uniform, %d "
                "A/B pairs each" % (
                    CONNECTIONS, PIPELINES, opts.seconds, opts.warmup,
                    ", ".join(sorted(FULL_LENGTH)), opts.family_seconds,
                    opts.family_warmup, opts.keys, opts.reps))
            runs = throughput(opts, pin)
            rows = summarize(runs, opts.workloads, pin.client_threads)
            print_table(rows)
            print_goals(rows)
            out["runs"], out["rows"] = runs, rows
            throughput_results(res, runs, rows)
    except Failed as e:
        say("compare: FAILED: %s" % e)
        return 1
    say("")
    say("%.0f s; load average at the end %s" % (time.monotonic() - t0,
                                                loadavg()))
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(out, f, indent=1)
    if opts.results:
        res.save(raw=out, path=results_path(opts.results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
