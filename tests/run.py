#!/usr/bin/env python3
"""The one test runner:
python3 tests/run.py --build DIR [--unit-only | --faults-only] [-k PATTERN]

1. every DIR/tests/test_* unit binary (each ends its stdout with
   "N passed, N failed" counting its test functions, after a line of
   assertion totals; a binary that exits non-zero without that line, or
   crashes, counts as 1 failed);
2. DIR/gencmds --check docs/COMMANDS.md, when DIR/gencmds exists (1 test);
3. every test_* function of tests/integration/test_*.py, against
   DIR/unreadd (UNREADD_BUILD=DIR is passed to the harness), each with a
   timeout (default 30 s, or the function's `timeout` attribute);
4. every fault suite tests/faults/<name>.py (not those starting with "_"),
   a script that ends its output with "N passed, N failed" (one per
   trial) and exits non-zero on failure; here with FAULTS_QUICK=1, a few
   trials each. --faults-only runs only them, in full (make test-faults).

Prints one line per test, the failures' details, the unit assertions'
totals, and ends with exactly one line "N passed, N failed" counting
tests: unit test functions, the docs check and integration tests. Exit
status 1 if anything failed.
Python 3 standard library only.
"""

import argparse
import glob
import importlib
import inspect
import os
import re
import signal
import subprocess
import sys
import time
import traceback

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DEFAULT_TIMEOUT = 30.0
UNIT_TIMEOUT = 300
SUMMARY = re.compile(r"^(\d+) passed, (\d+) failed\s*$")
ASSERTIONS = re.compile(r"^(\d+) assertions passed, (\d+) failed\s*$")


class Totals:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.failures = []
        self.asserts_passed = 0  # unit binaries' assertions, for the record
        self.asserts_failed = 0

    def ok(self, n=1):
        self.passed += n

    def fail(self, name, n=1):
        self.failed += n
        self.failures.append(name)


def say(msg=""):
    print(msg, flush=True)


def indent(text, n=4):
    pad = " " * n
    return "\n".join(pad + line for line in text.rstrip().splitlines())


def matches(name, pattern):
    return not pattern or pattern in name


# --------------------------------------------------------------------------
# Unit binaries.


def run_unit(build, pattern, totals):
    bins = sorted(glob.glob(os.path.join(build, "tests", "test_*")))
    bins = [b for b in bins if os.access(b, os.X_OK) and not b.endswith(".d")]
    if not bins:
        say("unit: no test binaries in %s/tests" % build)
    for path in bins:
        name = "unit/" + os.path.basename(path)
        if not matches(name, pattern):
            continue
        t0 = time.monotonic()
        try:
            p = subprocess.run([path], cwd=REPO, capture_output=True,
                               text=True, errors="replace",
                               timeout=UNIT_TIMEOUT)
            out, err, rc = p.stdout, p.stderr, p.returncode
        except subprocess.TimeoutExpired as e:
            out = e.stdout or ""
            err = (e.stderr or "") if isinstance(e.stderr, str) else ""
            if isinstance(out, bytes):
                out = out.decode("utf-8", "replace")
            rc = "timeout after %ds" % UNIT_TIMEOUT
        dt = time.monotonic() - t0
        last = None
        asserts = ""
        for line in out.splitlines():
            m = SUMMARY.match(line.strip())
            if m:
                last = (int(m.group(1)), int(m.group(2)))
            m = ASSERTIONS.match(line.strip())
            if m:
                totals.asserts_passed += int(m.group(1))
                totals.asserts_failed += int(m.group(2))
                asserts = ", %s assertions" % m.group(1)
        if last is not None:
            passed, failed = last
            if rc != 0 and failed == 0:
                failed = 1  # crashed or leaked after printing its summary
            totals.ok(passed)
            if failed:
                totals.fail(name, failed)
            say("%s %s: %d passed, %d failed%s (%.2fs)" % (
                "ok  " if not failed else "FAIL", name, passed, failed,
                asserts, dt))
        else:
            totals.fail(name)
            failed = 1
            say("FAIL %s: exit %s with no summary line (%.2fs)" % (name, rc, dt))
        if failed:
            tail = "\n".join(err.splitlines()[-60:])
            if tail:
                say(indent(tail))


def run_gencmds(build, pattern, totals):
    gencmds = os.path.join(build, "gencmds")
    name = "docs/gencmds --check docs/COMMANDS.md"
    if not os.path.exists(gencmds) or not matches(name, pattern):
        return
    p = subprocess.run([gencmds, "--check", "docs/COMMANDS.md"], cwd=REPO,
                       capture_output=True, text=True, errors="replace",
                       timeout=60)
    if p.returncode == 0:
        totals.ok()
        say("ok   " + name)
    else:
        totals.fail(name)
        say("FAIL %s: exit %d (run `make docs`)" % (name, p.returncode))
        say(indent(p.stdout + p.stderr))


# --------------------------------------------------------------------------
# Integration tests.


class TestTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise TestTimeout("test timed out")


def collect(pattern):
    tests = []
    for path in sorted(glob.glob(os.path.join(HERE, "integration", "test_*.py"))):
        modname = os.path.splitext(os.path.basename(path))[0]
        try:
            mod = importlib.import_module(modname)
        except Exception:
            tests.append((modname + ".py::<import>", None,
                          traceback.format_exc()))
            continue
        fns = [(name, fn) for name, fn in vars(mod).items()
               if name.startswith("test_") and inspect.isfunction(fn)
               and fn.__module__ == modname]
        fns.sort(key=lambda nf: getattr(nf[1], "order_line",
                                         nf[1].__code__.co_firstlineno))
        for name, fn in fns:
            full = "%s.py::%s" % (modname, name)
            if matches(full, pattern):
                tests.append((full, fn, None))
    return tests


def run_integration(pattern, totals):
    sys.path.insert(0, os.path.join(HERE, "integration"))
    import harness  # noqa: E402

    signal.signal(signal.SIGALRM, _alarm)
    for full, fn, import_error in collect(pattern):
        if fn is None:
            totals.fail(full)
            say("FAIL " + full)
            say(indent(import_error))
            continue
        harness.reset_started()
        limit = float(getattr(fn, "timeout", DEFAULT_TIMEOUT))
        t0 = time.monotonic()
        error = None
        signal.setitimer(signal.ITIMER_REAL, limit)
        try:
            fn()
        except BaseException as e:  # noqa: B902 (report everything but ^C)
            signal.setitimer(signal.ITIMER_REAL, 0)
            if isinstance(e, KeyboardInterrupt):
                raise
            error = traceback.format_exc()
            if isinstance(e, TestTimeout):
                error = "timed out after %.0fs\n%s" % (limit, error)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        dt = time.monotonic() - t0
        # A server left running by a failed test must not outlive it.
        for srv in harness.started_servers():
            if srv.alive():
                try:
                    srv.stop()
                except Exception:
                    srv.proc and srv.proc.kill()
        if error is None:
            totals.ok()
            say("ok   %s (%.2fs)" % (full, dt))
            continue
        totals.fail(full)
        say("FAIL %s (%.2fs)" % (full, dt))
        say(indent(error))
        for srv in harness.started_servers():
            tail = srv.stderr_tail(30)
            say("    --- unreadd stderr (port %s, exit %s), last lines:" % (
                srv.port, srv.returncode))
            if tail:
                say(indent(tail, 6))


# --------------------------------------------------------------------------
# Fault suites.

FAULTS_TIMEOUT = 1800


def run_faults(pattern, quick, totals):
    for path in sorted(glob.glob(os.path.join(HERE, "faults", "*.py"))):
        base = os.path.basename(path)
        name = "faults/" + base
        if base.startswith("_") or not matches(name, pattern):
            continue
        env = dict(os.environ)
        if quick:
            env["FAULTS_QUICK"] = "1"
        else:
            env.pop("FAULTS_QUICK", None)
        t0 = time.monotonic()
        try:
            p = subprocess.run([sys.executable, path], cwd=REPO, env=env,
                               capture_output=True, text=True,
                               errors="replace", timeout=FAULTS_TIMEOUT)
            out, rc = p.stdout + p.stderr, p.returncode
        except subprocess.TimeoutExpired as e:
            out = e.stdout or ""
            if isinstance(out, bytes):
                out = out.decode("utf-8", "replace")
            rc = "timeout after %ds" % FAULTS_TIMEOUT
        dt = time.monotonic() - t0
        last = None
        for line in out.splitlines():
            m = SUMMARY.match(line.strip())
            if m:
                last = (int(m.group(1)), int(m.group(2)))
        if last is None:
            totals.fail(name)
            say("FAIL %s: exit %s with no summary line (%.2fs)" % (name, rc, dt))
            say(indent("\n".join(out.splitlines()[-60:])))
            continue
        passed, failed = last
        if rc != 0 and failed == 0:
            failed = 1
        totals.ok(passed)
        if failed:
            totals.fail(name, failed)
        say("%s %s: %d passed, %d failed (%.2fs)" % (
            "ok  " if not failed else "FAIL", name, passed, failed, dt))
        if failed or not quick:
            lines = out.splitlines()
            shown = [ln for ln in lines if not ln.startswith("ok ")] \
                if failed else lines
            say(indent("\n".join(shown[-120:])))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build", help="build directory")
    ap.add_argument("--unit-only", action="store_true")
    ap.add_argument("--faults-only", action="store_true",
                    help="run only the fault suites, in full")
    ap.add_argument("-k", dest="pattern", default="",
                    help="run only tests whose name contains PATTERN")
    opts = ap.parse_args()

    # A suite started as an asynchronous command of a non-interactive
    # shell (`make test &`, a script that runs it beside a CPU hog, a CI
    # wrapper) inherits SIGINT and SIGQUIT ignored, and every program a
    # test starts inherits that in turn: redis-cli --stat then never exits
    # on the SIGINT that test_clients.py sends it (issue 34). Every test
    # sees the default dispositions, however the suite was started.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)

    build = os.path.abspath(os.path.join(REPO, opts.build)) \
        if not os.path.isabs(opts.build) else opts.build
    os.environ["UNREADD_BUILD"] = build
    os.chdir(REPO)

    totals = Totals()
    t0 = time.monotonic()
    if opts.faults_only:
        run_faults(opts.pattern, False, totals)
    else:
        run_unit(build, opts.pattern, totals)
        run_gencmds(build, opts.pattern, totals)
        if not opts.unit_only:
            run_integration(opts.pattern, totals)
            run_faults(opts.pattern, True, totals)
    if totals.failures:
        say("")
        say("failed (%.1fs):" % (time.monotonic() - t0))
        for name in totals.failures:
            say("  " + name)
    if totals.asserts_passed or totals.asserts_failed:
        say("(unit assertions: %d passed, %d failed)" % (
            totals.asserts_passed, totals.asserts_failed))
    say("%d passed, %d failed" % (totals.passed, totals.failed))
    return 1 if totals.failed else 0


if __name__ == "__main__":
    sys.exit(main())
