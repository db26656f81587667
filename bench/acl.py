#!/usr/bin/env python3
"""The cost of the ACL check (issue 33): cnt-incr at pipeline 16 against
one unreadd, in alternating runs without ACL users (the default user
alone, allowed everything: the executor skips the check) and with 100
users defined and the default user itself restricted (+@all -@dangerous
-@admin ~* &*: every request takes the check, a bit test of its user's
command bitmap). Goal: the ACL runs' throughput within 2% of the runs
without. Also the server's CPU per request, less noisy on a shared
machine than the throughput.

`make bench-acl` (or bench/acl-bench.sh) writes
bench/results/acl-STAMP.json (bench/results.py).
Python 3 standard library only.
"""

import argparse
import glob
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "integration"))

import results  # noqa: E402
from compare import CONNECTIONS, Failed, Pinning, Server, bench  # noqa: E402
from harness import Resp  # noqa: E402

GOAL = 0.98  # ACL throughput / no-ACL throughput
USERS = 100
# +debug: unread-bench --audit ends each run with DEBUG AUDIT
DEFAULT_RULES = ["+@all", "-@dangerous", "-@admin", "+debug"]


def say(*a):
    print(*a, flush=True)


def users_on(port, n):
    """Defines n users (each its own password and key pattern, as
    services would have) and restricts the default user."""
    with Resp(port, 30) as c:
        for i in range(n):
            r = c.cmd("ACL", "SETUSER", "svc%03d" % i, "on", ">pw%d" % i,
                      "~%d*" % i, "&badge:*", "-@all", "+@cnt", "+ping")
            assert r == "OK", r
        # the one that undoes it (the default user may not, then)
        r = c.cmd("ACL", "SETUSER", "benchadmin", "on", "nopass", "+@all",
                  "~*", "&*")
        assert r == "OK", r
        assert len(c.cmd("ACL", "USERS")) == n + 2
        r = c.cmd("ACL", "SETUSER", "default", *DEFAULT_RULES)
        assert r == "OK", r


def users_off(port, n):
    with Resp(port, 30) as c:
        assert c.cmd("AUTH", "benchadmin", "x") == "OK"
        r = c.cmd("ACL", "SETUSER", "default", "+@all")
        assert r == "OK", r
        names = ["svc%03d" % i for i in range(n)] + ["benchadmin"]
        assert c.cmd("ACL", "DELUSER", *names) == n + 1
    with Resp(port, 30) as c:  # benchadmin's connection closed with it
        assert c.cmd("ACL", "USERS") == [b"default"]


def callgrind(build, users, requests):
    """Instructions per cnt-incr request in the server, counted by
    callgrind (exact whatever else runs on the machine): the same server
    under valgrind, instrumentation on only while unread-bench sends
    `requests` requests, once without ACL users and once with them, then
    once more without. Returns {mode: [instructions per request]}."""
    if shutil.which("valgrind") is None or \
            shutil.which("callgrind_control") is None:
        return None
    tmp = tempfile.mkdtemp(prefix="acl-cg-")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = os.path.join(tmp, "cg")
    vg = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--instr-atstart=no",
         "--callgrind-out-file=" + out, os.path.join(build, "unreadd"),
         "--port", str(port), "--journal", "no", "--save-seconds", "0",
         "--enable-debug-command", "local", "--dir", os.path.join(tmp, "d")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    got = {"none": [], "acl": []}
    try:
        for _ in range(300):
            try:
                with Resp(port, 1.0) as c:
                    if c.cmd("PING") == "PONG":
                        break
            except OSError:
                time.sleep(0.1)
        load = [os.path.join(build, "unread-bench"), "-t", "binary", "-p",
                str(port), "-w", "cnt-incr", "-c", "8", "-P", "16", "-T", "1",
                "-r", "10000"]
        subprocess.run(load + ["-n", "20000"], check=True,
                       capture_output=True, timeout=600)
        for i, mode in enumerate(("none", "acl", "none", "acl")):
            if mode == "acl":
                users_on(port, users)
            subprocess.run(["callgrind_control", "-i", "on", str(vg.pid)],
                           capture_output=True, timeout=60)
            subprocess.run(load + ["-n", str(requests)], check=True,
                           capture_output=True, timeout=600)
            subprocess.run(["callgrind_control", "-i", "off", str(vg.pid)],
                           capture_output=True, timeout=60)
            subprocess.run(["callgrind_control", "-d", str(vg.pid)],
                           capture_output=True, timeout=60)
            if mode == "acl":
                users_off(port, users)
            files = sorted(glob.glob(out + ".*"),
                           key=lambda f: int(f.rsplit(".", 1)[1]))
            ann = subprocess.run(["callgrind_annotate", files[-1]],
                                 capture_output=True, text=True).stdout
            total = None
            for line in ann.splitlines():
                if "PROGRAM TOTALS" in line:
                    total = int(line.split()[0].replace(",", ""))
            if total is None:
                raise Failed("no totals in %s" % files[-1])
            got[mode].append(total / requests)
            say("callgrind %-4s %.0f instructions per request" %
                (mode, total / requests))
    finally:
        vg.terminate()
        try:
            vg.wait(30)
        except subprocess.TimeoutExpired:
            vg.kill()
            vg.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return got


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--pipeline", type=int, default=16)
    ap.add_argument("--keys", type=int, default=100000)
    ap.add_argument("--users", type=int, default=USERS)
    ap.add_argument("--callgrind-requests", type=int, default=200000,
                    help="requests counted under callgrind per run "
                    "(0: skip)")
    ap.add_argument("--results", help="the results file (bench/results.py): "
                    "'auto' (bench/results/acl-STAMP.json), a path, or none")
    opts = ap.parse_args()
    defaults = {"seconds": 5, "reps": 5}
    res = results.Run("acl", opts, defaults)
    pin = Pinning(True)
    say("pinning: %s" % pin.describe())
    srv = Server("unreadd", opts.build, pin)
    runs = {"none": [], "acl": []}
    try:
        args = ["-c", CONNECTIONS, "-P", opts.pipeline, "-d", opts.seconds,
                "-r", opts.keys]
        # warm-up: the keys exist before the first measured run
        bench(opts.build, pin, srv, "cnt-incr",
              ["-c", CONNECTIONS, "-P", opts.pipeline, "-d", 1,
               "-r", opts.keys])
        for rep in range(opts.reps):
            # alternate which goes first, so that a drift of the machine
            # is shared by both
            order = ("none", "acl") if rep % 2 == 0 else ("acl", "none")
            for mode in order:
                if mode == "acl":
                    users_on(srv.port, opts.users)
                r = bench(opts.build, pin, srv, "cnt-incr", args)
                if mode == "acl":
                    users_off(srv.port, opts.users)
                ops = r["ops_per_sec"]
                us = r["server_cpu_cores"] * 1e6 / ops if ops else 0.0
                runs[mode].append({"ops_per_sec": ops, "server_us_per_op": us,
                                   "p99_us": r.get("p99_us")})
                say("rep %d %-4s %10.0f ops/s  %.3f server us/op" %
                    (rep + 1, mode, ops, us))
    except Failed as e:
        say("failed: %s" % e)
        srv.stop()
        return 1
    srv.stop()
    ratios = [a["ops_per_sec"] / n["ops_per_sec"]
              for a, n in zip(runs["acl"], runs["none"])]
    cpu_ratios = [a["server_us_per_op"] / n["server_us_per_op"]
                  for a, n in zip(runs["acl"], runs["none"])
                  if n["server_us_per_op"] > 0]
    for mode in ("none", "acl"):
        res.row(mode=mode, users=1 if mode == "none" else opts.users + 2,
                workload="cnt-incr", pipeline=opts.pipeline,
                ops_per_sec=results.stat(r["ops_per_sec"]
                                         for r in runs[mode]),
                server_us_per_op=results.stat(r["server_us_per_op"]
                                              for r in runs[mode]))
    cg = None
    if opts.callgrind_requests > 0:
        try:
            cg = callgrind(opts.build, opts.users, opts.callgrind_requests)
        except (Failed, subprocess.SubprocessError, OSError) as e:
            say("callgrind: skipped (%s)" % e)
    if cg is not None:
        for mode in ("none", "acl"):
            res.row(mode=mode, section="callgrind", workload="cnt-incr",
                    pipeline=16, requests=opts.callgrind_requests,
                    instructions_per_request=results.stat(cg[mode]))
        ni = statistics.median(cg["none"])
        ai = statistics.median(cg["acl"])
        res.goal("server instructions per cnt-incr with %d ACL users <= "
                 "%.0f%% of no ACL (callgrind)" % (opts.users,
                                                   100 / GOAL),
                 ai / ni, ai / ni <= 1 / GOAL, none=ni, acl=ai)
        say("callgrind: %.1f -> %.1f instructions per request (%+.2f%%)" %
            (ni, ai, (ai / ni - 1) * 100))
    ratio = statistics.median(ratios)
    cpu = statistics.median(cpu_ratios) if cpu_ratios else None
    res.goal("cnt-incr P%d with %d ACL users >= %.0f%% of no ACL "
             "(median of %d alternating pairs)" %
             (opts.pipeline, opts.users, GOAL * 100, len(ratios)),
             ratio, ratio >= GOAL, pairs=ratios, server_cpu_ratio=cpu)
    say("throughput ratio acl/none: median %.4f (pairs %s)" %
        (ratio, " ".join("%.4f" % x for x in ratios)))
    if cpu is not None:
        say("server CPU per op ratio acl/none: median %.4f" % cpu)
    say("goal >= %.2f: %s" % (GOAL, "met" if ratio >= GOAL else "NOT met"))
    if opts.results and opts.results != "none":
        res.save(path=None if opts.results == "auto" else opts.results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
