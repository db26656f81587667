#!/usr/bin/env python3
"""The journal corruption corpus, end to end: python3 tests/faults/corpus.py
[--build DIR] [--quick N] [--seed S]

A real server writes a small journal through RESP, the binary protocol,
MULTI/EXEC and the binary batch frame, over two segments, and is killed
(kill -9). Each case damages a copy of those files - a byte flipped, the
file cut at a byte, records swapped, repeated, deleted, moved across the
segment boundary, a zero-filled tail - and starts the real binary on it:

- it starts and holds exactly the acknowledged data, or for a cut the
  records whole before the cut (what a crash at that byte leaves): read
  back over the network against a model of every write; or
- it refuses to start, naming the damaged file and an offset.

Anything else is a silent short load, and fails. Then `unreadd --check
FILE --fix` runs on the same damaged bytes: where the server refused, it
must change nothing; where the server cut a torn tail, it must leave
exactly the whole records. Whole records cut off the end of the last
segment at a record boundary cannot be told from a crash before they were
written (docs/PERSISTENCE.md 3.1): those cases are counted apart.

The full run (make test-faults) flips every byte and cuts at every byte of
the last segment, samples the first, and tries every swap, repeat and
deletion; --quick N runs N cases drawn from all kinds (make test runs 40
of them: FAULTS_QUICK=1, set by tests/run.py). The C unit test
tests/unit/test_journal_corpus.c runs a larger corpus in-process (and
under ASan). Ends with "N passed, N failed" (one per case); exit status
1 on any failure.
"""

import argparse
import os
import random
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
INTEGRATION = os.path.join(REPO, "tests", "integration")
sys.dont_write_bytecode = True


class Journal:
    """The original files and, for each k, the state after the first k
    records (a model of every write the server acknowledged)."""

    def __init__(self, seg1, seg2, models, uids):
        import journalfile as jf
        self.seg = {1: seg1, 2: seg2}
        self.recs = {1: jf.records(seg1), 2: jf.records(seg2)}
        self.uids = uids
        self.total = len(self.recs[1]) + len(self.recs[2])
        # models[k]: the state after the first k records. A history
        # record (a restart as primary forks the replication history,
        # docs/PERSISTENCE.md) changes no data: the state stays.
        self.models = [models[0]]
        n = 0
        for r in self.recs[1] + self.recs[2]:
            if not r.history:
                n += 1
            self.models.append(models[n])
        assert n + 1 == len(models)


def write_journal(tmp):
    """Runs a server on tmp/data twice (kill -9 after each), one record
    effect at a time; returns a Journal."""
    from harness import is_err
    from test_batch import batch
    from test_persistence import DataServer

    path = os.path.join(tmp, "data")
    effects = []  # per record: [(uid, type, op, value)]

    def record(cmds, replies):
        for r in replies:
            assert not is_err(r), r
        effects.append(cmds)

    for part in range(2):
        srv = DataServer(path, journal_fsync="always").start()
        base = 1 + 10 * part
        with srv.resp() as c, srv.bin() as b:
            for i in range(4):
                u = base + i
                record([(u, 0, "SET", 10 + u)], [c.cmd("CNT.SET", u, 0, 10 + u)])
                record([(u, 1, "INCR", 2)], [b.call("CNT.INCR", u, 1, 2)])
            c.cmd("MULTI")
            c.cmd("CNT.INCR", base, 0, 5)
            c.cmd("CNT.SET", base + 1, 1, 7)
            record([(base, 0, "INCR", 5), (base + 1, 1, "SET", 7)],
                   c.cmd("EXEC"))
            record([(base + 2, 0, "INCR", 1), (base + 3, 1, "INCR", 3)],
                   batch(b, [("CNT.INCR", base + 2, 0, 1),
                             ("CNT.INCR", base + 3, 1, 3)]))
            for i in range(3):
                u = base + i
                record([(u, 1, "INCR", 1)], [c.cmd("CNT.INCR", u, 1, 1)])
        srv.kill9()
        srv.done()
    uids = sorted({e[0] for rec in effects for e in rec})
    models, state = [], {}
    models.append({})
    for rec in effects:
        for uid, t, op, v in rec:
            cur = state.setdefault(uid, {})
            cur[t] = v if op == "SET" else cur.get(t, 0) + v
        models.append({u: dict(tv) for u, tv in state.items()})
    segs = sorted(n for n in os.listdir(path) if n.startswith("journal."))
    assert segs == ["journal.1", "journal.2"], segs
    with open(os.path.join(path, "journal.1"), "rb") as f:
        seg1 = f.read()
    with open(os.path.join(path, "journal.2"), "rb") as f:
        seg2 = f.read()
    return Journal(seg1, seg2, models, uids)


# -- cases: (name, {n: bytes}, kind, records expected)

WHOLE, PREFIX, UNDETECTABLE = "whole", "prefix", "cut at a record boundary"


def cases(j, quick, rnd):
    import journalfile as jf

    s1, s2 = j.seg[1], j.seg[2]
    r1, r2 = j.recs[1], j.recs[2]
    n1, n2 = len(r1), len(r2)
    out = []

    def on2(data):
        return {1: s1, 2: data}

    def on1(data):
        return {1: data, 2: s2}

    # flips: every byte of the last segment; the first sampled
    for at in range(len(s2)):
        out.append(("byte %d of journal.2 flipped" % at,
                    on2(jf.flip(s2, at)), WHOLE, j.total))
    for at in rnd.sample(range(len(s1)), min(len(s1), 120)):
        out.append(("byte %d of journal.1 flipped" % at,
                    on1(jf.flip(s1, at)), WHOLE, j.total))
    # each bit of a record's length (issue 15 point 2)
    for r in (r2[n2 // 2], r2[-1]):
        for bit in range(32):
            at = jf.length_at(r) + bit // 8
            out.append(("length bit %d of the record at %d" % (bit, r.off),
                        on2(jf.flip(s2, at, 1 << (bit % 8))), WHOLE,
                        j.total))
    # cuts: every byte of the last segment; the first sampled
    for cut in range(len(s2)):
        whole = sum(1 for r in r2 if r.end <= cut)
        boundary = cut >= jf.HDR and cut in [jf.HDR] + [r.end for r in r2]
        out.append(("journal.2 cut at %d" % cut, on2(s2[:cut]),
                    UNDETECTABLE if boundary else PREFIX, n1 + whole))
    for cut in rnd.sample(range(len(s1)), min(len(s1), 60)):
        out.append(("journal.1 cut at %d" % cut, on1(s1[:cut]), WHOLE,
                    j.total))
    out.append(("zero tail on journal.2", on2(s2 + bytes(300)), PREFIX,
                j.total))
    # swaps, repeats, deletions in both segments
    for seg, recs, wrap in ((1, r1, on1), (2, r2, on2)):
        data, n = j.seg[seg], len(recs)
        for a in range(n):
            for b in range(a + 1, n):
                order = list(range(n))
                order[a], order[b] = b, a
                out.append(("journal.%d records %d and %d swapped" %
                            (seg, a + 1, b + 1),
                            wrap(jf.reorder(data, recs, order)), WHOLE,
                            j.total))
            order = list(range(n))
            out.append(("journal.%d record %d repeated" % (seg, a + 1),
                        wrap(jf.reorder(data, recs, order[:a + 1] + [a] +
                                        order[a + 1:])), WHOLE, j.total))
            order = [x for x in range(n) if x != a]
            last = seg == 2 and a == n - 1
            out.append(("journal.%d record %d deleted" % (seg, a + 1),
                        wrap(jf.reorder(data, recs, order)),
                        UNDETECTABLE if last else WHOLE,
                        j.total - 1 if last else j.total))
    # across the boundary
    last1 = s1[r1[-1].off:]
    out.append(("journal.1's last record moved to journal.2",
                {1: s1[:r1[-1].off], 2: s2[:jf.HDR] + last1 + s2[jf.HDR:]},
                WHOLE, j.total))
    out.append(("journal.2's first record repeated in journal.1",
                {1: s1 + s2[r2[0].off:r2[0].end], 2: s2}, WHOLE, j.total))
    if quick:
        # a few of each kind, always the issue's own findings
        must = [c for c in out if c[0].startswith("length bit")][:4] + \
               [c for c in out if "swapped" in c[0]][:2] + \
               [c for c in out if "repeated" in c[0]][:2] + \
               [c for c in out if "deleted" in c[0]][:2] + \
               [c for c in out if "moved" in c[0]]
        rest = [c for c in out if c not in must]
        out = must + rnd.sample(rest, max(0, min(len(rest),
                                                 quick - len(must))))
    return out


# -- running a case


class Tally:
    def __init__(self):
        self.n = {"loaded all": 0, "loaded before a torn tail": 0,
                  "refused with file and offset": 0, UNDETECTABLE: 0}
        self.failures = []

    def fail(self, name, why):
        self.failures.append("%s: %s" % (name, why))


def state_of(srv, uids):
    with srv.resp() as c:
        got = c.pipeline([("CNT.GETALL", u) for u in uids])
    out = {}
    for u, flat in zip(uids, got):
        if flat:
            out[u] = {flat[i]: flat[i + 1] for i in range(0, len(flat), 2)}
    return out


def run_case(j, tmp, name, files, kind, k, tally):
    import journalfile as jf
    from harness import ServerExited
    from test_persistence import DataServer, check_tool

    path = os.path.join(tmp, "case")
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)

    def lay_out():
        for n, data in files.items():
            with open(os.path.join(path, "journal.%d" % n), "wb") as f:
                f.write(data)

    lay_out()
    srv = DataServer(path)
    refused = False
    try:
        srv.start()
    except ServerExited:
        refused = True
        err = srv.stderr_text()
        named = [n for n in files
                 if os.path.join(path, "journal.%d" % n) in err]
        if not named or "offset " not in err:
            tally.fail(name, "refused without naming file and offset: " +
                       err[-300:])
        else:
            tally.n["refused with file and offset"] += 1
    if not refused:
        want = {u: {t: v for t, v in tv.items() if v}
                for u, tv in j.models[k].items()}
        want = {u: tv for u, tv in want.items() if tv}
        got = state_of(srv, j.uids)
        if got != want:
            tally.fail(name, "SILENT SHORT LOAD: state is not the %d "
                       "records acknowledged" % k)
        elif kind == UNDETECTABLE:
            tally.n[UNDETECTABLE] += 1
        elif k == j.total:
            tally.n["loaded all"] += 1
        else:
            tally.n["loaded before a torn tail"] += 1
        srv.kill9()
    srv.done()

    # --fix on the same bytes
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    lay_out()
    for n in sorted(files):
        f = os.path.join(path, "journal.%d" % n)
        check_tool(f, "--fix")
    for n, data in files.items():
        f = os.path.join(path, "journal.%d" % n)
        after = open(f, "rb").read() if os.path.exists(f) else None
        if refused or kind == WHOLE:
            if after != data:
                tally.fail(name, "--fix changed journal.%d, which the "
                           "server refused" % n)
            continue
        # a torn tail: --fix leaves exactly the whole records
        if n != max(files):
            expect = data
        elif len(data) < jf.HDR:
            expect = None  # a header cut short: the file goes
        else:
            ends = [jf.HDR] + [r.end for r in j.recs[2]]
            keep = max(e for e in ends if e <= len(data))
            expect = data[:keep]
        if after != expect:
            tally.fail(name, "--fix left %s bytes of journal.%d, want %s" %
                       (None if after is None else len(after), n,
                        None if expect is None else len(expect)))


def run(quick=0, seed=1, say=print):
    """Runs the corpus; returns the Tally."""
    if INTEGRATION not in sys.path:
        sys.path.insert(0, INTEGRATION)
    rnd = random.Random(seed)
    tally = Tally()
    with tempfile.TemporaryDirectory(prefix="unreadd-corpus-") as tmp:
        j = write_journal(tmp)
        todo = cases(j, quick, rnd)
        for i, (name, files, kind, k) in enumerate(todo):
            run_case(j, tmp, name, files, kind, k, tally)
            if not quick and (i + 1) % 500 == 0:
                say("  %d/%d cases" % (i + 1, len(todo)))
    total = sum(tally.n.values()) + len(tally.failures)
    say("corpus: %d cases over %d records (%d + %d bytes): %s; %d failed" % (
        total, j.total, len(j.seg[1]), len(j.seg[2]),
        ", ".join("%d %s" % (v, k) for k, v in tally.n.items()),
        len(tally.failures)))
    for f in tally.failures[:20]:
        say("FAIL " + f)
    return tally


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=None,
                    help="build dir (default: $UNREADD_BUILD, or build)")
    ap.add_argument("--quick", type=int, default=0, metavar="N",
                    help="run N cases drawn from every kind "
                         "(FAULTS_QUICK=1: 40)")
    ap.add_argument("--seed", type=int, default=1)
    opts = ap.parse_args()
    build = opts.build or os.environ.get("UNREADD_BUILD") or "build"
    if not os.path.isabs(build):
        build = os.path.join(REPO, build)
    os.environ["UNREADD_BUILD"] = build
    quick = opts.quick or (40 if os.environ.get("FAULTS_QUICK") == "1" else 0)
    tally = run(quick, opts.seed)
    # the line tests/run.py adds up: one per case
    print("%d passed, %d failed" % (sum(tally.n.values()),
                                    len(tally.failures)), flush=True)
    sys.exit(1 if tally.failures else 0)


if __name__ == "__main__":
    main()
