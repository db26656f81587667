#!/usr/bin/env python3
"""A rebalance's move rate: users moved per second by stock
`redis-cli --cluster rebalance --cluster-use-empty-masters` onto a 4th
primary added to a 3-primary cluster (no replicas, journal off, no
writers: the cluster side's own cost, per slot and per user).

  python3 bench/rebalance_rate.py [--users N] [--pipeline P] [--build build]

Each user holds 2 counters (CNT.INCR twice), loaded with redis-cli --pipe
on its owner; the rebalance moves a quarter of the slots (4096) and their
users. Prints the time, the users moved and users/s, then checks that
redis-cli --cluster check is clean and no user was lost.
"""
import argparse
import collections
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests",
                                "integration"))
import harness  # noqa: E402
from cluster_rig import Cluster, key_slot  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=200000)
    ap.add_argument("--pipeline", type=int, default=1000)
    ap.add_argument("--build", default="build")
    args = ap.parse_args()
    harness.UNREADD = os.path.abspath(os.path.join(args.build, "unreadd"))
    with Cluster(masters=3, replicas=0, journal="no") as cl:
        owners = {}
        for r in cl.nodes[0].cmd("CLUSTER", "SLOTS"):
            for s in range(r[0], r[1] + 1):
                owners[s] = r[2][1]
        buf = collections.defaultdict(list)
        for u in range(1, args.users + 1):
            k = str(u).encode()
            for t in (b"dm", b"like"):
                buf[owners[key_slot(u)]].append(
                    b"*4\r\n$8\r\nCNT.INCR\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n"
                    b"$1\r\n1\r\n" % (len(k), k, len(t), t))
        for port, cmds in buf.items():
            p = subprocess.run(["redis-cli", "-p", str(port), "--pipe"],
                               input=b"".join(cmds), capture_output=True)
            assert b"errors: 0" in p.stdout, p.stdout
        total = sum(n.cmd("DBSIZE") for n in cl.nodes)
        new = cl.new_node()
        cl.cli("--cluster", "add-node", new.addr(), cl.nodes[0].addr())
        cl.wait_agree()
        t0 = time.time()
        cl.cli("--cluster", "rebalance", cl.nodes[0].addr(),
               "--cluster-use-empty-masters", "--cluster-pipeline",
               str(args.pipeline), timeout=3600)
        dt = time.time() - t0
        moved = new.cmd("DBSIZE")
        print("users %d, rebalance %.2f s, moved %d users: %.0f users/s, "
              "%.2f ms a slot" % (total, dt, moved, moved / dt,
                                  dt * 1000 / 4096))
        cl.wait_agree()
        out = cl.cli("--cluster", "check", cl.nodes[0].addr())
        assert "[OK] All nodes agree" in out and "[WARNING]" not in out, out
        after = sum(n.cmd("DBSIZE") for n in cl.live())
        assert after == total, (after, total)


if __name__ == "__main__":
    main()
