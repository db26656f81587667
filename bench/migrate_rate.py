#!/usr/bin/env python3
"""Users moved per second by MIGRATE between two local unreadd servers.

  python3 bench/migrate_rate.py [--users N] [--build build]

Each user holds 2 counters (CNT.INCR twice); the users are moved with
MIGRATE ... KEYS of 10, 100 and 1000 ids per call, one call after the
other from one client, as redis-cli --cluster reshard does with
--cluster-pipeline. Prints users/s for each batch size.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests",
                                "integration"))
import harness  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=100000)
    ap.add_argument("--build", default="build")
    args = ap.parse_args()
    harness.UNREADD = os.path.abspath(os.path.join(args.build, "unreadd"))
    for batch in (10, 100, 1000):
        with harness.Server() as a, harness.Server() as b:
            c = a.resp(timeout=60)
            n = args.users
            for lo in range(0, n, 1000):
                c.pipeline([("CNT.INCR", u, t, 1) for u in range(lo, lo + 1000)
                            for t in (1, 2)])
            t0 = time.monotonic()
            for lo in range(0, n, batch):
                r = c.cmd("MIGRATE", "127.0.0.1", b.port, "", 0, 5000, "KEYS",
                          *range(lo, min(n, lo + batch)))
                assert r == "OK", r
            dt = time.monotonic() - t0
            cb = b.resp()
            assert cb.cmd("DBSIZE") == n and c.cmd("DBSIZE") == 0
            print("KEYS %4d per MIGRATE: %d users in %.2f s = %d users/s" %
                  (batch, n, dt, n / dt))


if __name__ == "__main__":
    main()
