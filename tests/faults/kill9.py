#!/usr/bin/env python3
"""kill -9 at random moments under pipelined writes (issue 15, goal 1;
docs/PERSISTENCE.md "Guarantees").

Trials run in series of ten on one data dir. Each trial starts the server
on the dir (recovering what the last left), runs three clients that
pipeline CNT.INCR (RESP, binary, and MULTI/EXEC or binary batches),
sometimes starts a BGSAVE, and kills the server with SIGKILL after a
random 50..600 ms. Every other trial then also simulates a power cut: each
journal segment is cut back to the size it had at its last successful
fdatasync (the fault shim records it; _rig.power_loss). After the restart
every key must hold at least its acknowledged increments and at most those
sent:

  journal-fsync always    nothing acknowledged is lost, kill or power cut;
  journal-fsync everysec  a kill loses nothing (the page cache survives the
                          process); a power cut may lose only writes
                          acknowledged in the last BOUND seconds before it
                          (the 1 s window plus the fdatasync's own time and
                          the cron's 100 ms; the suite prints the largest
                          window it saw).

Full: 100 trials with always, 20 with everysec; FAULTS_QUICK=1: 4 and 2.
"""

import random
import sys
import time

from _rig import Rig, Stream, merge, power_loss, run_suite, trials

BOUND = 1.5  # seconds of acknowledged writes an everysec power cut may take
SERIES = 10

widest = [0.0]  # the largest everysec loss window seen, in seconds


def floor_before(streams, cutoff):
    """Acknowledgements received before cutoff (monotonic time), per key."""
    floor = {}
    for s in streams:
        for t, k in s.acks:
            if t < cutoff:
                floor[k] = floor.get(k, 0) + 1
    return floor


def loss_window(streams, got, kill_at):
    """How long before the cut the earliest lost acknowledgement came."""
    times = {}
    for s in streams:
        for t, k in s.acks:
            times.setdefault(k, []).append(t)
    worst = 0.0
    for k, ts in times.items():
        ts.sort()
        lost = len(ts) - got.get(k, 0)
        if lost > 0:
            worst = max(worst, kill_at - ts[len(ts) - lost])
    return worst


class Series:
    """One data dir and the model of what it must hold."""

    def __init__(self, fsync):
        self.fsync = fsync
        self.rig = Rig().__enter__()
        self.model = {}  # key -> value known after the last trial
        self.n = 0

    def close(self):
        self.rig.__exit__(None, None, None)

    def trial(self, seed):
        rnd = random.Random(seed)
        rig = self.rig
        base = 10000 * (self.n % 7 + 1)
        self.n += 1
        srv = rig.start(journal_fsync=self.fsync)
        streams = [Stream(srv.port, kind, base + 1000 * i, seed * 10 + i,
                          keys=200, times=True, window=2000).start()
                   for i, kind in enumerate(("resp", "bin",
                                             rnd.choice(("multi", "batch"))))]
        time.sleep(rnd.uniform(0.05, 0.6))
        if rnd.random() < 0.3:
            with srv.resp() as c:
                c.cmd("BGSAVE")
            time.sleep(rnd.uniform(0, 0.05))
        kill_at = time.monotonic()
        srv.kill9()
        for s in streams:
            s.join_dead()
        for s in streams:
            assert not s.unexpected, s.unexpected[:3]
        cut = power_loss(rig) if self.n % 2 == 0 else 0
        sent, acked = merge(streams)
        for k, v in self.model.items():  # earlier trials' values
            sent[k] = sent.get(k, 0) + v
            acked[k] = acked.get(k, 0) + v
        srv = rig.start(journal_fsync=self.fsync)
        keys = sorted(sent)
        with srv.resp() as c:
            got = dict(zip(keys, c.pipeline([("CNT.GET", u, t)
                                             for u, t in keys])))
        srv.kill9()
        old, self.model = self.model, got  # the next trial starts from here
        floor = acked
        if cut and self.fsync != "always":
            floor = floor_before(streams, kill_at - BOUND)
            for k, v in old.items():
                floor[k] = floor.get(k, 0) + v
        bad = [(k, got[k], floor.get(k, 0), sent[k]) for k in keys
               if not floor.get(k, 0) <= got[k] <= sent[k]]
        assert not bad, "acknowledged writes lost (key, value, floor, " \
            "sent): %r" % (bad[:5],)
        window = 0.0
        if cut:
            window = loss_window(streams, {k: got[k] - old.get(k, 0)
                                           for k in keys}, kill_at)
            if self.fsync != "always":
                widest[0] = max(widest[0], window)
        return "%d acknowledged, %s" % (
            sum(floor.values()),
            "power cut %d bytes, lost a window of %.3fs" % (cut, window)
            if cut else "kill -9")


def main():
    fns = []
    series = []
    for fsync, count in (("always", trials(100, 4)),
                         ("everysec", trials(20, 2))):
        for i in range(count):
            if i % SERIES == 0:
                series.append(Series(fsync))
            s = series[-1]
            fns.append(("%s #%d" % (fsync, i),
                        lambda s=s, i=i: s.trial(5000 + i)))
    try:
        return run_suite("kill9", fns, lambda: (
            "kill9: widest everysec loss window after a power cut: %.3fs "
            "(bound %.1fs)" % (widest[0], BOUND)))
    finally:
        for s in series:
            s.close()


if __name__ == "__main__":
    sys.exit(main())
