#!/usr/bin/env python3
"""Journal write failures under congested pipelining clients (issue 15,
finding 4; docs/PERSISTENCE.md "Faults").

Each trial starts a server with the fault shim, which gives every
accepted socket a small send buffer (as across a real network, where
loopback would autotune megabytes), and runs four clients that pipeline
CNT.INCR without waiting (RESP, binary, MULTI/EXEC, binary batches) and
read their replies slowly through a small receive buffer, so replies queue
in the server and go out as the socket drains (the write event's path, not
the end-of-turn flush). At a random moment every write to the journal
starts failing (ENOSPC or EIO, sometimes after a partial write). Then:

  - writes are refused with -MISCONF and reads are answered, on a fresh
    connection;
  - the clients read at full speed until nothing more arrives: whatever
    the server lets out now, it lets out through congested sockets;
  - either the server is killed while the journal is still failing, or the
    fault is lifted and the server must take writes again by itself;
  - after a restart every write acknowledged with success is there (and no
    more than was sent): a reply held for durability never leaked out.

Both journal-fsync always and everysec. Full: 24 trials; FAULTS_QUICK=1: 4.
"""

import random
import sys
import time

from _rig import (KINDS, Rig, Stream, check_acked, is_misconf, merge,
                  run_suite, trials)

ERRORS = ("ENOSPC", "EIO")


def wait(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.01)


def acked_total(streams):
    return sum(sum(s.acked.values()) for s in streams)


def quiet(streams, still=0.3, timeout=30):
    """Reads at full speed until no acknowledgement arrives for `still`
    seconds."""
    for s in streams:
        s.c.delay = 0
    last = -1
    deadline = time.monotonic() + timeout
    while True:
        n = acked_total(streams)
        if n == last:
            return n
        assert time.monotonic() < deadline, "replies still arriving"
        last = n
        time.sleep(still)


def trial(seed, fsync, lift):
    rnd = random.Random(seed)
    err = ERRORS[seed % len(ERRORS)]
    partial = " partial" if rnd.random() < 0.5 else ""
    with Rig(sndbuf=rnd.choice([4096, 16384])) as rig:
        srv = rig.start(journal_fsync=fsync)
        streams = [Stream(srv.port, kind, 100000 * (i + 1), seed * 10 + i,
                          rcvbuf=rnd.choice([2048, 4096]), delay=0.002,
                          window=5000).start()
                   for i, kind in enumerate(KINDS)]
        wait(lambda: acked_total(streams) > 2000, 20, "acknowledgements")
        time.sleep(rnd.uniform(0, 0.2))
        rig.faults.set("write journal. %s%s" % (err, partial))
        wait(lambda: srv.info("persistence")["journal_status"] == "broken",
             10, "the journal to be broken")
        # Writes refused, reads answered, while it lasts.
        with srv.resp() as c:
            r = c.cmd("CNT.INCR", 1, 1)
            assert is_misconf(r), r
            assert c.cmd("CNT.GET", 1, 1) == 0
            assert c.cmd("PING") == "PONG"
        time.sleep(rnd.uniform(0, 0.3))
        acked_during = quiet(streams)
        if not lift:
            srv.kill9()
            for s in streams:
                s.join_dead()
            rig.faults.clear()
        else:
            rig.faults.clear()
            wait(lambda: srv.info("persistence")["journal_status"] == "ok",
                 10, "the journal to be written again")
            with srv.resp() as c:
                assert c.cmd("CNT.INCR", 2, 2) == [1, 1]
            time.sleep(0.2)
            for s in streams:
                s.halt()
            sent, acked = merge(streams)
            check_acked(srv, sent, acked)
            srv.kill9()
        for s in streams:
            assert not s.unexpected, s.unexpected[:3]
        refused = sum(s.refused for s in streams)
        assert rig.faults.injected() > 0
        sent, acked = merge(streams)
        srv = rig.start(journal_fsync=fsync)
        n = check_acked(srv, sent, acked)
        srv.kill9()
        return "%d acknowledged checked, %d refused, %d acked when quiet" % (
            n, refused, acked_during)


def main():
    n = trials(24, 4)
    fns = []
    for i in range(n):
        fsync = "always" if i % 2 == 0 else "everysec"
        lift = (i // 2) % 2 == 1
        fns.append(("#%d %s %s" % (i, fsync, "lifted" if lift else "killed"),
                    lambda i=i, f=fsync, lift=lift: trial(1000 + i, f, lift)))
    return run_suite("journal_fail", fns)


if __name__ == "__main__":
    sys.exit(main())
