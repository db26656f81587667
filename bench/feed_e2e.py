#!/usr/bin/env python3
"""End-to-end FEED.UNREAD time through libunread (ctypes on libunread.so):

    python3 bench/feed_e2e.py [--build build] [--follows 2000] [--calls 10000]

Starts BUILD/unreadd on a free port, makes one user follow FOLLOWS authors
(out of 1,000,000 that have posted, a few of them again so that unread stays
under the cap and every edge is read), then times CALLS synchronous
FEED.UNREAD calls and CALLS PINGs on one connection. The difference of the
mean round trips is the server time FEED.UNREAD adds over a no-op command
(argument parsing, the store walk, the reply); the Python and ctypes
overhead is the same for both and cancels out.
"""

import argparse
import ctypes
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
sys.dont_write_bytecode = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--follows", type=int, default=2000)
    ap.add_argument("--calls", type=int, default=10000)
    opt = ap.parse_args()
    os.environ["UNREADD_BUILD"] = opt.build

    from harness import Server  # noqa: E402 (reads UNREADD_BUILD)
    from ways import lib_connect, libunread  # noqa: E402

    u64 = ctypes.c_uint64
    lib = libunread({
        "unread_feed_unread": (ctypes.c_int, [ctypes.c_void_p, u64,
                                              ctypes.POINTER(u64)]),
    })
    if lib is None:
        sys.exit("libunread.so cannot be loaded (sanitizer build?)")
    authors = 1000000
    with Server() as srv, srv.bin() as b:
        for base in range(0, authors, 10000):
            b.pipeline([("FEED.POST", a) for a in range(base, base + 10000)])
        step = authors // opt.follows
        b.pipeline([("FEED.FOLLOW", 1, a * step) for a in range(opt.follows)])
        b.pipeline([("FEED.POST", a * step) for a in range(0, opt.follows, 40)])
        want = b.call("FEED.UNREAD", 1)
        h = lib_connect(lib, srv)
        out = u64()

        def timed(fn):
            t0 = time.perf_counter()
            for _ in range(opt.calls):
                fn()
            return (time.perf_counter() - t0) / opt.calls * 1e6

        def unread():
            assert lib.unread_feed_unread(h, 1, ctypes.byref(out)) == 0
            assert out.value == want

        def ping():
            assert lib.unread_ping(h) == 0

        timed(ping)  # warm up
        rounds = [(timed(unread), timed(ping)) for _ in range(3)]
        lib.unread_close(h)
    for i, (u, p) in enumerate(rounds):
        print("round %d: FEED.UNREAD %.2f us, PING %.2f us, difference %.2f us"
              % (i + 1, u, p, u - p))
    best = min(u - p for u, p in rounds)
    print("feed_e2e follows=%d unread=%d calls=%d unread_minus_ping_us=%.2f"
          % (opt.follows, want, opt.calls, best))


if __name__ == "__main__":
    main()
