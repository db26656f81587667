#!/usr/bin/env python3
"""docs/PERFORMANCE.md's tables and docs/img/'s charts from the results
files (bench/results.py): `make perf-report`, `make check-perf`.

    python3 bench/report.py [--check] [--page FILE] [--results DIR]
                            [--img DIR] [--no-charts]

The page holds one generated block per kind of results file, between

    <!-- BEGIN results:KIND -->
    ...
    <!-- END results:KIND -->

Without --check: each block is rewritten from the newest results file of
its kind (bench/results/KIND-STAMP.json) and its charts drawn as
docs/img/perf-*.png (matplotlib, Debian's python3-matplotlib: run with
/usr/bin/python3). Every block names the file it came from, on its first
line. With --check: each block must be exactly what its cited file gives
(the table is regenerated from that file and compared), and its charts
must exist; exits 1 naming the blocks that differ. The tables need the
standard library only; matplotlib is imported to draw, never to check.
"""

import argparse
import os
import re
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import results  # noqa: E402

PAGE = os.path.join(REPO, "docs", "PERFORMANCE.md")
IMG = os.path.join(REPO, "docs", "img")
BLOCK = re.compile(r"<!-- BEGIN results:(\w+) -->\n(.*?)<!-- END results:\1 -->",
                   re.S)
CITE = re.compile(r"^From \[`(bench/results/[^`]+)`\]")
MAKE = {"throughput": "make bench", "memory": "make bench-memory",
        "pubsub": "make bench-pubsub", "repl": "make bench-repl",
        "tls": "make bench-tls"}
CHARTS = {"throughput": ["perf-throughput.png", "perf-latency.png"],
          "memory": ["perf-memory.png"], "pubsub": ["perf-push.png"],
          "repl": ["perf-repl.png"], "tls": ["perf-tls.png"]}
UNREADD_COLOR, REDIS_COLOR = "#1f77b4", "#d62728"


# --------------------------------------------------------------------------
# Numbers as the page writes them.

def n0(x):
    return "{:,.0f}".format(x)


def n1(x):
    return "{:,.1f}".format(x)


def r2(x):
    return "%.2f" % x


def mm(s, f=r2):
    """median (min-max) of a results.stat, or the value when n = 1."""
    if s is None:
        return "-"
    if s["n"] == 1 or s["min"] == s["max"]:
        return f(s["median"])
    return "%s (%s-%s)" % (f(s["median"]), f(s["min"]), f(s["max"]))


def med(s, f=n0):
    return "-" if s is None else f(s["median"])


def load3(xs):
    return " ".join("%.2f" % x for x in xs)


def met(g):
    return "met" if g["met"] else "**missed**"


def header(doc, path):
    rel = os.path.relpath(path, REPO)
    m = doc["machine"]
    lines = [
        "From [`%s`](../%s): commit `%s`, %s, %d cores (%s), kernel %s, "
        "Redis %s; load average %s before, %s after; %s s%s." % (
            rel, rel, doc["commit"], doc["date"], m["nproc"], m["cpu"],
            m["kernel"], m["redis"], load3(doc["load_before"]),
            load3(doc["load_after"]), n0(doc["seconds"]),
            "; **shortened run** (`%s`): figures less exact" %
            " ".join(doc["command"]) if doc["shortened"] else
            " (`%s`)" % " ".join(doc["command"])),
        ""]
    if max(doc["load_before"][0], doc["load_after"][0]) > 1.5:
        lines += ["A loaded machine (load average above 1.5): other work "
                  "shared the cores, the figures are noisy; the ratios, "
                  "each from runs seconds apart, hold better than the "
                  "rates.", ""]
    return lines


def goals(doc):
    if not doc["goals"]:
        return []
    out = ["Goals:", ""]
    for g in doc["goals"]:
        v = g["value"]
        shown = "not run" if v is None else \
            ("%s" % v if isinstance(v, bool) else "%.4g" % v)
        extra = ""
        if g.get("client_bound"):
            extra = " (client-bound: a lower bound)"
        if g.get("cores_bound"):
            extra = " (bound by this machine's cores: not a judgement)"
        out.append("- %s: %s (%s)%s" % (g["goal"], met(g), shown, extra))
    out.append("")
    return out


def charts(kind):
    return ["![%s](img/%s)" % (name[5:-4], name) for name in CHARTS[kind]] \
        + [""]


# --------------------------------------------------------------------------
# The blocks.

def block_throughput(doc, path):
    out = header(doc, path)
    out += ["| workload | pipeline | unreadd ops/s | Redis ops/s | ratio "
            "median (min-max) | p50 us unreadd / Redis | p99 us unreadd / "
            "Redis |", "|---|---:|---:|---:|---|---:|---:|"]
    for r in doc["rows"]:
        out.append("| %s | %d | %s | %s | %s%s | %s / %s | %s / %s |" % (
            r["workload"], r["pipeline"], med(r["unreadd_ops"]),
            med(r["redis_ops"]), ">= " if r["client_bound"] else "",
            mm(r["ratio"]), med(r["unreadd_p50_us"]), med(r["redis_p50_us"]),
            med(r["unreadd_p99_us"]), med(r["redis_p99_us"])))
    out.append("")
    notes = []
    if any(r["client_bound"] for r in doc["rows"]):
        notes.append("`>=`: the load generator's cores were busy during "
                     "the unreadd runs: it set the pace, the ratio is a "
                     "lower bound.")
    many = [r["workload"] for r in doc["rows"] if r.get("users_per_reply")]
    if many:
        notes.append("%s: users per second on both sides." %
                     ", ".join(sorted(set(many))))
    if notes:
        out += [" ".join(notes), ""]
    return out + goals(doc) + charts("throughput")


def block_memory(doc, path):
    out = header(doc, path)
    fam = [r for r in doc["rows"] if r["section"] == "family"]
    shp = [r for r in doc["rows"] if r["section"] == "shape"]
    if fam:
        out += ["| data (load step) | entries | RSS B/entry unreadd | "
                "RSS B/entry Redis | unreadd / Redis | own accounting "
                "unreadd / Redis |", "|---|---:|---:|---:|---:|---:|"]
        for r in fam:
            u, d = r["rss_unreadd"]["median"], r["rss_redis"]["median"]
            out.append("| %s %ss (%s) | %s | %s | %s | %s | %s / %s |" % (
                r["family"], r["unit"], r["workload"], n0(r["entries"]),
                n1(u), n1(d), "%.3f" % (u / d) if d else "-",
                n1(r["own_unreadd"]["median"]),
                n1(r["own_redis"]["median"])))
        out.append("")
    if shp:
        out += ["Users with a single entry (bytes per user):", "",
                "| shape | users | RSS unreadd | RSS Redis | unreadd / "
                "Redis |", "|---|---:|---:|---:|---:|"]
        for r in shp:
            u, d = r["rss_unreadd"]["median"], r["rss_redis"]["median"]
            out.append("| %s (%s) | %s | %s | %s | %s |" % (
                r["what"], r["shape"], n0(r["users"]), n1(u), n1(d),
                "%.3f" % (u / d) if d else "-"))
        out.append("")
    return out + goals(doc) + charts("memory")


def block_pubsub(doc, path):
    out = header(doc, path)
    rows = doc["rows"]
    gw = [r for r in rows if r["section"] == "gateway"]
    if gw:
        out += ["Push as deployed: G gateway connections hold the "
                "subscriptions, a write to a random user, a message to "
                "its gateway (Redis: one `PUBLISH badge:<uid>` per write).",
                "",
                "| gateways | subscriptions | unreadd messages/s | Redis "
                "messages/s | ratio median (min-max) | p99 ms unreadd / "
                "Redis | write syscalls per message unreadd / Redis |",
                "|---:|---:|---:|---:|---|---:|---:|"]
        for r in gw:
            out.append("| %d | %s | %s | %s | %s | %s / %s | %s / %s |" % (
                r["gateways"], n0(r["subscriptions"]),
                mm(r["unreadd_messages"], n0), mm(r["redis_messages"], n0),
                mm(r["ratio"]), med(r["unreadd_p99_us"], ms),
                med(r["redis_p99_us"], ms),
                med(r["unreadd_writes_per_message"], r3),
                med(r["redis_writes_per_message"], r3)))
        out.append("")
    for r in rows:
        if r["section"] == "gateway_lib":
            out += ["The same through libunread, "
                    "`client-lib/examples/push_gateway.c` holding the "
                    "subscriptions (G = %d, %s subscriptions; writers only "
                    "from the bench): %s messages/s (the server's count, "
                    "the example's own matching it), %s write syscalls per "
                    "message." % (
                        r["gateways"], n0(r["subscriptions"]),
                        mm(r["unreadd_messages"], n0),
                        med(r["unreadd_writes_per_message"], r3)), ""]
        if r["section"] == "badge":
            out += ["One connection per subscriber (%s connections, each on "
                    "its own `badge:<uid>`): %s messages/s, p99 %s ms, "
                    "%s us of server CPU per message (the kernel alone: "
                    "%.2f us per small send here), %s write syscalls per "
                    "message." % (
                        n0(r["connections"]), mm(r["unreadd_messages"], n0),
                        med(r["unreadd_p99_us"], ms),
                        med(r["unreadd_us_per_message"], r2),
                        r["kernel_us_per_message"],
                        med(r["unreadd_writes_per_message"], r3)), ""]
        if r["section"] == "fanout":
            out += ["`PUBLISH` fan-out to %s subscribers of one channel: "
                    "unreadd %s messages/s, Redis %s, ratio %s; p99 %s ms "
                    "and %s ms." % (
                        n0(r["subscribers"]), med(r["unreadd_messages"]),
                        med(r["redis_messages"]), mm(r["ratio"]),
                        med(r["unreadd_p99_us"], ms),
                        med(r["redis_p99_us"], ms)), ""]
    cost = [r for r in rows if r["section"] == "cost"]
    if cost:
        out += ["What `notify-badges yes` costs writes nobody listens to "
                "(P16, ops/s against `no`; `no'` is a second `no` server, "
                "the run's noise floor):", "",
                "| workload | no, ops/s | no' / no | yes / no | yes + one "
                "subscriber / no |", "|---|---:|---|---|---|"]
        for r in cost:
            out.append("| %s | %s | %s | %s | %s |" % (
                r["workload"], n0(r["no_ops"]), mm(r["aa_ratio"], r3),
                mm(r["yes_ratio"], r3), mm(r["yes_sub_ratio"], r3)))
        out.append("")
    return out + goals(doc) + charts("pubsub")


def ms(x):
    return "%.2f" % (x / 1000.0)


def r3(x):
    return "%.3f" % x


def block_repl(doc, path):
    out = header(doc, path)
    cost = [r for r in doc["rows"] if r["section"] == "cost"]
    if cost:
        out += ["The primary's CPU per write (cnt-incr P16, 50 "
                "connections), replicas attached and in sync:", "",
                "| server | replicas | CPU us per write, median (min-max) "
                "| x of none | writes/s |", "|---|---:|---|---|---:|"]
        for r in cost:
            out.append("| %s | %d | %s | %s | %s |" % (
                "Redis 7" if r["kind"] == "redis" else "unreadd",
                r["replicas"], mm(r["us_per_write"], r3),
                mm(r["ratio_to_none"], r3), med(r["writes_per_sec"])))
        out.append("")
    for r in doc["rows"]:
        if r["section"] == "throughput":
            out += ["Throughput with 2 replicas, of without: unreadd "
                    "%.1f%%%s%s." % (
                        100 * r["unreadd_ratio"],
                        "" if r["redis_ratio"] is None else
                        ", Redis 7 %.1f%%" % (100 * r["redis_ratio"]),
                        "; **bound by this machine's %d cores** (the "
                        "primary, 2 replicas and the client need 4): it "
                        "measures the machine, not replication" % r["nproc"]
                        if r["cores_bound"] else ""), ""]
        if r["section"] == "lag":
            out += ["A replica's lag under cnt-incr P16: at most %.3f s." %
                    r["max_seconds"], ""]
        if r["section"] == "fullsync":
            out += ["Full sync of %s users (2 counters each): %.1f s." % (
                n0(r["users"]), r["seconds"]), ""]
        if r["section"] == "partial":
            out += ["Resync after a 5 s cut: %s." % (
                "partial, the missed stream only" if r["partial_only"]
                else "**not partial**"), ""]
    return out + goals(doc) + charts("repl")


def block_tls(doc, path):
    out = header(doc, path)
    rows = doc["rows"]
    neg = doc.get("negotiated")
    if neg:
        out += ["Negotiated by the load generator's handshakes: %s." % "; ".join(
            "%s %s" % ("Redis 7" if k == "redis" else "unreadd",
                       " / ".join("`%s`" % x for x in v))
            for k, v in sorted(neg.items(), key=lambda kv: kv[0] != "unreadd")),
                ""]
    tput = [r for r in rows if r["section"] == "throughput"]
    if tput:
        out += ["Operations per second (median of the repetitions), each "
                "ratio the median of the per-repetition ratios (min-max):",
                "",
                "| workload | pipeline | unreadd plaintext | unreadd TLS | "
                "Redis plaintext | Redis TLS | unreadd / Redis, plaintext | "
                "unreadd / Redis, TLS | TLS / plaintext, unreadd | "
                "TLS / plaintext, Redis |",
                "|---|---:|---:|---:|---:|---:|---|---|---|---|"]
        for r in tput:
            out.append("| %s | %d | %s | %s | %s | %s | %s | %s%s | %s | %s |"
                       % (r["workload"], r["pipeline"],
                          med(r["unreadd_plain_ops"]),
                          med(r["unreadd_tls_ops"]),
                          med(r["redis_plain_ops"]), med(r["redis_tls_ops"]),
                          mm(r["ratio_plain"]),
                          ">= " if r["client_bound"] else "",
                          mm(r["ratio_tls"]),
                          mm(r["tls_of_plain_unreadd"]),
                          mm(r["tls_of_plain_redis"])))
        out.append("")
        if any(r["client_bound"] for r in tput):
            out += ["`>=`: the load generator's core was busy during the "
                    "unreadd runs: the ratio is a lower bound.", ""]
        out += ["Server CPU per operation (microseconds, median; the "
                "server's CPU time in the measured window divided by its "
                "operations), "
                "what TLS adds (TLS - plaintext, of the medians), and TLS / "
                "plaintext (the median of the per-repetition ratios):",
                "", "| workload | pipeline | unreadd plaintext | unreadd TLS "
                "| unreadd, TLS adds | unreadd, TLS / plaintext | Redis "
                "plaintext | Redis TLS | Redis, TLS adds | Redis, TLS / "
                "plaintext |",
                "|---|---:|---:|---:|---:|---|---:|---:|---:|---|"]
        for r in tput:
            up, ut = (r["unreadd_%s_us_per_op" % m]["median"]
                      for m in ("plain", "tls"))
            dp, dt = (r["redis_%s_us_per_op" % m]["median"]
                      for m in ("plain", "tls"))
            out.append("| %s | %d | %s | %s | %+.2f | %s | %s | %s | %+.2f "
                       "| %s |" % (
                           r["workload"], r["pipeline"], r2(up), r2(ut),
                           ut - up, mm(r.get("cpu_tls_of_plain_unreadd")),
                           r2(dp), r2(dt), dt - dp,
                           mm(r.get("cpu_tls_of_plain_redis"))))
        out.append("")
    hs = [r for r in rows if r["section"] == "handshakes"]
    if hs:
        out += ["Connections per second, %d client threads each looping "
                "connect + PING + close (TLS: a full handshake, no session "
                "resumed, before the PING):" % hs[0]["threads"], "",
                "| | unreadd /s | Redis /s | unreadd / Redis | server CPU "
                "us per connection, unreadd / Redis |",
                "|---|---:|---:|---|---:|"]
        for r in hs:
            out.append("| %s | %s | %s | %s | %s / %s |" % (
                "TLS handshakes" if r["mode"] == "tls" else "plaintext",
                mm(r["unreadd_per_sec"], n0), mm(r["redis_per_sec"], n0),
                mm(r["ratio"]), med(r["unreadd_us_each"]),
                med(r["redis_us_each"])))
        out.append("")
    idle = [r for r in rows if r["section"] == "idle"]
    if idle:
        out += ["Memory per idle connection (RSS growth over %s connections "
                "that each answered one PING, on a fresh server):" %
                n0(idle[0]["connections"]), "",
                "| server | plaintext B/connection | TLS B/connection |",
                "|---|---:|---:|"]
        for r in idle:
            out.append("| %s | %s | %s |" % (
                "Redis 7" if r["kind"] == "redis" else "unreadd",
                med(r["plain_bytes"]), med(r["tls_bytes"])))
        out.append("")
    return out + goals(doc) + charts("tls")


BLOCKS = {"throughput": block_throughput, "memory": block_memory,
          "pubsub": block_pubsub, "repl": block_repl, "tls": block_tls}


def render(kind, path):
    """The block's text (without its markers) from one results file."""
    if path is None:
        return "No results file yet: run `%s`, then `make perf-report`.\n" % \
            MAKE[kind]
    doc = results.load(path)
    if doc["kind"] != kind:
        raise ValueError("%s is a %s results file, not %s" % (
            path, doc["kind"], kind))
    return "\n".join(BLOCKS[kind](doc, path)).rstrip("\n") + "\n"


# --------------------------------------------------------------------------
# Charts (matplotlib only here).

def draw(kind, doc, img):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(img, exist_ok=True)
    src = "source: %s (%s, load %s)" % (
        os.path.basename(doc["_path"]), doc["date"][:10],
        load3(doc["load_before"]))

    def save(fig, name):
        fig.text(0.99, 0.005, src, ha="right", va="bottom", fontsize=7,
                 color="#555555")
        fig.tight_layout(rect=(0, 0.02, 1, 1))
        fig.savefig(os.path.join(img, name), dpi=100)
        plt.close(fig)

    def err(stats):
        return [[s["median"] - s["min"] for s in stats],
                [s["max"] - s["median"] for s in stats]]

    if kind == "throughput":
        rows = doc["rows"]
        wls = list(dict.fromkeys(r["workload"] for r in rows))
        fig, ax = plt.subplots(figsize=(9, 0.32 * len(wls) + 1.6))
        h = 0.38
        for k, (depth, color) in enumerate(((1, "#9ecae1"),
                                            (16, UNREADD_COLOR))):
            st = [next((r["ratio"] for r in rows if r["workload"] == w and
                        r["pipeline"] == depth), None) for w in wls]
            ys = [i + (k - 0.5) * h for i in range(len(wls))]
            ok = [(y, s) for y, s in zip(ys, st) if s]
            ax.barh([y for y, _ in ok], [s["median"] for _, s in ok], h,
                    xerr=err([s for _, s in ok]), color=color,
                    ecolor="#333333", capsize=2,
                    label="unreadd, pipeline %d" % depth)
        ax.axvline(1.0, color=REDIS_COLOR, linewidth=2,
                   label="Redis 7 (= 1)")
        ax.set_yticks(range(len(wls)))
        ax.set_yticklabels(wls)
        ax.invert_yaxis()
        ax.set_xlabel("throughput, unreadd / Redis 7 (median of A/B pairs, "
                      "bars: min-max)")
        ax.set_title("Throughput ratio to Redis 7 by workload")
        ax.legend(loc="lower right", fontsize=8)
        ax.grid(axis="x", alpha=0.3)
        save(fig, "perf-throughput.png")

        p1 = [r for r in rows if r["pipeline"] == 1]
        fig, ax = plt.subplots(figsize=(9, 0.32 * len(p1) + 1.6))
        h = 0.2
        series = (("unreadd_p50_us", "unreadd p50", "#9ecae1"),
                  ("redis_p50_us", "Redis 7 p50", "#fcae91"),
                  ("unreadd_p99_us", "unreadd p99", UNREADD_COLOR),
                  ("redis_p99_us", "Redis 7 p99", REDIS_COLOR))
        for k, (key, label, color) in enumerate(series):
            ax.barh([i + (k - 1.5) * h for i in range(len(p1))],
                    [r[key]["median"] for r in p1], h, color=color,
                    label=label)
        ax.set_xscale("log")
        ax.set_yticks(range(len(p1)))
        ax.set_yticklabels([r["workload"] for r in p1])
        ax.invert_yaxis()
        ax.set_xlabel("latency, microseconds (log scale; pipeline 1, 50 "
                      "connections)")
        ax.set_title("Latency p50 and p99, unreadd beside Redis 7")
        ax.legend(loc="lower right", fontsize=8)
        ax.grid(axis="x", alpha=0.3)
        save(fig, "perf-latency.png")

    if kind == "memory":
        rows = [r for r in doc["rows"] if r["section"] == "family"] + \
            [r for r in doc["rows"] if r["section"] == "shape"]
        labels = ["%s %s (%s)" % (r["family"], r["unit"], r["workload"])
                  if r["section"] == "family" else "user, %s" % r["what"]
                  for r in rows]
        fig, ax = plt.subplots(figsize=(9, 0.4 * len(rows) + 1.6))
        h = 0.38
        for k, (key, label, color) in enumerate((
                ("rss_unreadd", "unreadd", UNREADD_COLOR),
                ("rss_redis", "Redis 7", REDIS_COLOR))):
            ax.barh([i + (k - 0.5) * h for i in range(len(rows))],
                    [r[key]["median"] for r in rows], h, color=color,
                    label=label)
        ax.set_xscale("log")
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels(labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("bytes per entry (RSS growth; log scale)")
        ax.set_title("Memory per entry, unreadd beside Redis 7")
        ax.legend(loc="lower right", fontsize=8)
        ax.grid(axis="x", alpha=0.3)
        save(fig, "perf-memory.png")

    if kind == "pubsub":
        labels, u, d = [], [], []
        for r in doc["rows"]:
            if r["section"] == "gateway":
                labels.append("G=%d, %s subs" % (
                    r["gateways"], n0(r["subscriptions"])))
                u.append(r["unreadd_messages"]["median"])
                d.append(r["redis_messages"]["median"])
            elif r["section"] == "gateway_lib":
                labels.append("G=%d, %s subs,\nlibunread example" % (
                    r["gateways"], n0(r["subscriptions"])))
                u.append(r["unreadd_messages"]["median"])
                d.append(0)
            elif r["section"] == "badge":
                labels.append("%s connections,\none sub each" %
                              n0(r["connections"]))
                u.append(r["unreadd_messages"]["median"])
                d.append(0)
            elif r["section"] == "fanout":
                labels.append("fan-out, 1 channel,\n%s subs" %
                              n0(r["subscribers"]))
                u.append(r["unreadd_messages"]["median"])
                d.append(r["redis_messages"]["median"])
        fig, ax = plt.subplots(figsize=(9, 0.45 * len(labels) + 1.6))
        h = 0.38
        ax.barh([i - h / 2 for i in range(len(labels))], u, h,
                color=UNREADD_COLOR, label="unreadd")
        ax.barh([i + h / 2 for i in range(len(labels))], d, h,
                color=REDIS_COLOR, label="Redis 7 (no bar: no Redis run of that shape)")
        ax.set_yticks(range(len(labels)))
        ax.set_yticklabels(labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("messages delivered per second")
        ax.set_title("Push: badge messages per second by shape")
        ax.legend(loc="lower right", fontsize=8)
        ax.grid(axis="x", alpha=0.3)
        ax.ticklabel_format(axis="x", style="plain")
        save(fig, "perf-push.png")

    if kind == "repl":
        cost = [r for r in doc["rows"] if r["section"] == "cost"]
        fig, ax = plt.subplots(figsize=(7, 4))
        w = 0.38
        for k, (kind2, label, color) in enumerate((
                ("unreadd", "unreadd", UNREADD_COLOR),
                ("redis", "Redis 7", REDIS_COLOR))):
            sel = [r for r in cost if r["kind"] == kind2]
            if not sel:
                continue
            ax.bar([r["replicas"] + (k - 0.5) * w for r in sel],
                   [r["us_per_write"]["median"] for r in sel], w,
                   yerr=err([r["us_per_write"] for r in sel]), color=color,
                   ecolor="#333333", capsize=3, label=label)
        ax.set_xticks([0, 1, 2])
        ax.set_xticklabels(["no replica", "1 replica", "2 replicas"])
        ax.set_ylabel("primary CPU per write, microseconds")
        ax.set_title("What replication costs the primary (cnt-incr P16)")
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        save(fig, "perf-repl.png")

    if kind == "tls":
        tput = [r for r in doc["rows"] if r["section"] == "throughput"]
        hs = {r["mode"]: r for r in doc["rows"]
              if r["section"] == "handshakes"}
        idle = [r for r in doc["rows"] if r["section"] == "idle"]
        fig, axes = plt.subplots(1, 3, figsize=(13, 4.6),
                                 gridspec_kw={"width_ratios": [2.2, 1, 1]})
        ax = axes[0]
        labels = ["%s P%d" % (r["workload"], r["pipeline"]) for r in tput]
        w = 0.2
        series = (("unreadd_plain_ops", "unreadd plaintext", "#9ecae1"),
                  ("unreadd_tls_ops", "unreadd TLS", UNREADD_COLOR),
                  ("redis_plain_ops", "Redis 7 plaintext", "#fcae91"),
                  ("redis_tls_ops", "Redis 7 TLS", REDIS_COLOR))
        for k, (key, label, color) in enumerate(series):
            st = [r[key] for r in tput]
            ax.bar([i + (k - 1.5) * w for i in range(len(tput))],
                   [s["median"] for s in st], w, yerr=err(st), color=color,
                   ecolor="#333333", capsize=2, label=label)
        ax.set_yscale("log")
        ax.set_xticks(range(len(tput)))
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_ylabel("operations per second (log scale; bars: min-max)")
        ax.set_title("Throughput, plaintext and TLS")
        ax.legend(fontsize=7, loc="upper left")
        ax.grid(axis="y", alpha=0.3)
        ax = axes[1]
        w = 0.38
        modes = [m for m in ("plain", "tls") if m in hs]
        for k, (key, label, color) in enumerate((
                ("unreadd_per_sec", "unreadd", UNREADD_COLOR),
                ("redis_per_sec", "Redis 7", REDIS_COLOR))):
            st = [hs[m][key] for m in modes]
            ax.bar([i + (k - 0.5) * w for i in range(len(modes))],
                   [s["median"] for s in st], w, yerr=err(st), color=color,
                   ecolor="#333333", capsize=3, label=label)
        ax.set_yscale("log")
        ax.set_xticks(range(len(modes)))
        ax.set_xticklabels(["plaintext\nconnect+PING" if m == "plain" else
                            "TLS: full\nhandshake+PING" for m in modes],
                           fontsize=8)
        ax.set_ylabel("connections per second (log scale)")
        ax.set_title("Connects per second")
        ax.legend(fontsize=7)
        ax.grid(axis="y", alpha=0.3)
        ax = axes[2]
        for k, (mode, label, alpha) in enumerate((
                ("plain", "plaintext", 0.45), ("tls", "TLS", 1.0))):
            ax.bar([i + (k - 0.5) * w for i in range(len(idle))],
                   [r["%s_bytes" % mode]["median"] / 1024.0 for r in idle],
                   w, color=[UNREADD_COLOR if r["kind"] == "unreadd" else
                             REDIS_COLOR for r in idle], alpha=alpha,
                   edgecolor="#333333", label=label)
        ax.set_xticks(range(len(idle)))
        ax.set_xticklabels(["unreadd" if r["kind"] == "unreadd" else
                            "Redis 7" for r in idle])
        ax.set_ylabel("KiB per idle connection (RSS growth)")
        ax.set_title("Memory per idle connection")
        ax.legend(fontsize=7, title="pale: plaintext", title_fontsize=7)
        ax.grid(axis="y", alpha=0.3)
        save(fig, "perf-tls.png")


# --------------------------------------------------------------------------

def blocks(text):
    return [(m.group(1), m.group(2), m.start(2), m.end(2))
            for m in BLOCK.finditer(text)]


def cited(body):
    first = body.split("\n", 1)[0]
    m = CITE.match(first)
    return os.path.join(REPO, m.group(1)) if m else None


def check(page, img):
    """The blocks that differ from their cited files (empty: all good)."""
    text = open(page).read()
    bad = []
    found = {k for k, _, _, _ in blocks(text)}
    for kind in BLOCKS:
        if kind not in found:
            bad.append("%s: no block on the page" % kind)
    for kind, body, _, _ in blocks(text):
        path = cited(body)
        if path is None:
            if body != render(kind, None):
                bad.append("%s: cites no results file" % kind)
            continue
        if not os.path.exists(path):
            bad.append("%s: cites %s, which does not exist" % (kind, path))
            continue
        if body != render(kind, path):
            bad.append("%s: the table differs from %s (make perf-report)" % (
                kind, os.path.relpath(path, REPO)))
        for name in CHARTS[kind]:
            if not os.path.exists(os.path.join(img, name)):
                bad.append("%s: chart docs/img/%s is missing" % (kind, name))
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--page", default=PAGE)
    ap.add_argument("--results", default=results.DIR)
    ap.add_argument("--img", default=IMG)
    ap.add_argument("--no-charts", action="store_true")
    opts = ap.parse_args()
    if opts.check:
        bad = check(opts.page, opts.img)
        for b in bad:
            print("check-perf: " + b)
        if not bad:
            print("check-perf: every table matches the results file it "
                  "cites")
        return 1 if bad else 0
    text = open(opts.page).read()
    out, pos = [], 0
    for kind, _, start, end in blocks(text):
        path = results.latest(kind, opts.results)
        out += [text[pos:start], render(kind, path)]
        pos = end
        if path is not None:
            print("%s: %s" % (kind, os.path.relpath(path, REPO)))
            if not opts.no_charts:
                doc = results.load(path)
                doc["_path"] = path
                draw(kind, doc, opts.img)
        else:
            print("%s: no results file (%s)" % (kind, MAKE[kind]))
    out.append(text[pos:])
    with open(opts.page, "w") as f:
        f.write("".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
