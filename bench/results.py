"""The results files of the benches (issue 34): bench/results/KIND-STAMP.json,
one per run of `make bench` (KIND throughput), `make bench-memory`
(memory), `make bench-pubsub` (pubsub), `make bench-repl` (repl) and
`make bench-tls` (tls) and `make bench-acl` (acl).
bench/report.py turns the newest of each kind into docs/PERFORMANCE.md's
tables and docs/img/'s charts; tests/integration/test_perf_page.py checks
that the page's tables are those of the files they cite.

A file holds:
  kind, date (UTC, ISO 8601), commit (git HEAD, "+dirty" when the tree had
  changes), command (the argv), options (the bench's parsed options),
  machine (cores, CPU model, kernel, Redis version), load_before,
  load_after (the load averages, 1, 5, 15 min), seconds (the run's wall
  time), shortened (true when run with shorter options than the defaults:
  figures less exact), rows (the bench's rows: every measured figure of a
  row as {"min", "median", "max", "n"} over its repetitions), goals
  (each {"goal", "value", "met"}), and raw (the bench's own output, as
  before this file existed).
Python 3 standard library only.
"""

import datetime
import json
import os
import platform
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIR = os.path.join(REPO, "bench", "results")
KINDS = ("throughput", "memory", "pubsub", "repl", "tls", "acl")


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def stat(xs):
    """min / median / max of the repetitions of one figure."""
    xs = [float(x) for x in xs]
    if not xs:
        return None
    return {"min": min(xs), "median": statistics.median(xs), "max": max(xs),
            "n": len(xs)}


def commit():
    def git(*a):
        p = subprocess.run(["git", "-C", REPO] + list(a),
                           capture_output=True, text=True)
        return p.stdout.strip() if p.returncode == 0 else ""
    head = git("rev-parse", "--short=12", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return head + ("+dirty" if dirty else "")


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
    try:
        out = subprocess.run(["redis-server", "--version"],
                             capture_output=True, text=True).stdout
    except OSError:
        return "none"
    for word in out.split():
        if word.startswith("v="):
            return word[2:]
    return out.strip()


class Run:
    """One bench run's results file: made at the start (load before, the
    clock), saved at the end."""

    def __init__(self, kind, opts, defaults=None):
        assert kind in KINDS, kind
        self.t0 = datetime.datetime.now(datetime.timezone.utc)
        self.doc = {
            "kind": kind,
            "date": self.t0.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "commit": commit(),
            "command": [os.path.relpath(sys.argv[0], REPO)] + sys.argv[1:],
            "options": {k: v for k, v in sorted(vars(opts).items())
                        if k != "build" and k != "json"},
            "machine": {"nproc": os.cpu_count(), "cpu": cpu_model(),
                        "kernel": platform.release(),
                        "redis": redis_version()},
            "load_before": loadavg(),
            "shortened": False,
            "rows": [], "goals": [],
        }
        if defaults is not None:
            # shorter than the defaults in any duration, repetition or size
            self.doc["shortened"] = any(
                isinstance(v, (int, float)) and not isinstance(v, bool) and
                getattr(opts, k, v) < v for k, v in defaults.items())

    def row(self, **fields):
        self.doc["rows"].append(fields)
        return fields

    def goal(self, what, value, met, **more):
        g = {"goal": what, "value": value, "met": bool(met)}
        g.update(more)
        self.doc["goals"].append(g)

    def save(self, raw=None, path=None):
        t1 = datetime.datetime.now(datetime.timezone.utc)
        self.doc["load_after"] = loadavg()
        self.doc["seconds"] = round((t1 - self.t0).total_seconds(), 1)
        if raw is not None:
            self.doc["raw"] = raw
        if path is None:
            os.makedirs(DIR, exist_ok=True)
            path = os.path.join(DIR, "%s-%s.json" % (
                self.doc["kind"], self.t0.strftime("%Y%m%d-%H%M%S")))
        with open(path, "w") as f:
            json.dump(self.doc, f, indent=1, sort_keys=True)
            f.write("\n")
        print("results: %s" % os.path.relpath(path, REPO), flush=True)
        return path


def latest(kind, directory=DIR):
    """The newest results file of kind (by its name's stamp), or None."""
    try:
        names = sorted(n for n in os.listdir(directory)
                       if n.startswith(kind + "-") and n.endswith(".json"))
    except OSError:
        return None
    return os.path.join(directory, names[-1]) if names else None


def load(path):
    with open(path) as f:
        return json.load(f)
