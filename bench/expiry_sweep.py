#!/usr/bin/env python3
"""What expiring many users at once costs the clients (docs/OPERATIONS.md,
"Expiry"):

    python3 bench/expiry_sweep.py [--build build] [--users 1000000]
                                  [--journal yes|no] [--seconds 3]
                                  [--fsync everysec|always|no]

Starts BUILD/unreadd on a free port (debug clock on, journal and
journal-fsync as given), registers USERS users in a BC channel and a DOT (two
expire-families entries and an activity entry each, pipelined), then:

  1. baseline: a client process sends PING one at a time for SECONDS and
     records every round trip;
  2. sweep: the same client pings while DEBUG ADVANCE-CLOCK makes every
     user 31 days inactive and the server expires them all.

Prints the latency percentiles of both phases, the sweep's wall time and
CPU time (INFO expiry), its longest slice, and used_memory / RSS before
and after. The pinger is a separate process so that Python's own thread
switching (5 ms) does not show up as server latency.
"""

import argparse
import multiprocessing
import os
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
sys.dont_write_bytecode = True


def pinger(port, stop, out):
    """PINGs one at a time until stop is set; sends the sorted round trips
    (seconds) through out."""
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    lat = []
    while not stop.is_set():
        t0 = time.perf_counter()
        s.sendall(b"PING\r\n")
        if s.recv(64) != b"+PONG\r\n":
            break
        lat.append(time.perf_counter() - t0)
    s.close()
    out.send(sorted(lat))


def pctl(lat, p):
    return lat[min(len(lat) - 1, int(len(lat) * p))] * 1e3


def show(name, lat):
    print("%-9s %8d pings  p50 %.3f ms  p99 %.3f ms  p99.9 %.3f ms  "
          "max %.2f ms" % (name, len(lat), pctl(lat, 0.5), pctl(lat, 0.99),
                           pctl(lat, 0.999), lat[-1] * 1e3))


def measure(port, body):
    """Runs body() while a pinger process pings; returns its latencies."""
    stop = multiprocessing.Event()
    rx, tx = multiprocessing.Pipe(duplex=False)
    p = multiprocessing.Process(target=pinger, args=(port, stop, tx))
    p.start()
    time.sleep(0.2)
    try:
        body()
    finally:
        stop.set()
    lat = rx.recv()
    p.join()
    return lat


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--users", type=int, default=1000000)
    ap.add_argument("--journal", default="yes")
    ap.add_argument("--fsync", default="everysec")
    ap.add_argument("--seconds", type=float, default=3.0)
    opt = ap.parse_args()
    os.environ["UNREADD_BUILD"] = opt.build

    from harness import Server, info_dict  # noqa: E402
    from test_expiry import load_users, wait_expired, DAY  # noqa: E402

    def memory(c):
        m = info_dict(c.cmd("INFO", "memory"))["memory"]
        return "used_memory %.1f MB, rss %.1f MB" % (
            int(m["used_memory"]) / 1e6, int(m["used_memory_rss"]) / 1e6)

    with Server(enable_debug_command="yes", save_seconds=0,
                journal=opt.journal, journal_fsync=opt.fsync) as srv, \
            srv.resp() as c:
        t0 = time.time()
        load_users(srv.port, opt.users)
        print("loaded %d users in %.1f s; %s" % (opt.users, time.time() - t0,
                                                  memory(c)))
        show("baseline", measure(srv.port,
                                 lambda: time.sleep(opt.seconds)))

        def sweep():
            c.cmd("DEBUG", "ADVANCE-CLOCK", 31 * DAY)
            deadline = time.time() + 3600
            while time.time() < deadline:
                time.sleep(0.2)
                e = info_dict(c.cmd("INFO", "expiry"))["expiry"]
                if int(e["expired_users"]) >= opt.users and \
                        e["sweep_in_progress"] == "0":
                    return

        show("sweep", measure(srv.port, sweep))
        e = wait_expired(srv, c, opt.users)
        print("sweep of %s users: %s ms wall, %.0f ms in %s slices "
              "(%.2f us a user), longest slice %s us" % (
                  e["last_sweep_expired"], e["last_sweep_duration_ms"],
                  int(e["sweep_cycle_time_us"]) / 1e3, e["sweep_cycles"],
                  int(e["sweep_cycle_time_us"]) / max(1, opt.users),
                  e["sweep_cycle_max_us"]))
        print("after: %s; journal %.1f MB" % (memory(c), int(info_dict(
            c.cmd("INFO", "persistence"))["persistence"].get(
                "journal_bytes", 0)) / 1e6))


if __name__ == "__main__":
    main()
