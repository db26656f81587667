"""The journal's records know their place, and the repair tool never removes
a sound one (issue 15, docs/PERSISTENCE.md 3.1 and 5, docs/OPERATIONS.md
"A damaged journal"), with a real server and real files:

- every kind of record the server writes, through every path (RESP, inline,
  binary, pipelines of both, MULTI/EXEC, the binary batch frame, the expiry
  sweep's USER.EXPIRE), for every write command of the op table: `--check`
  calls the journal clean and counts each command, `--fix` changes no byte,
  and a restart replays it all;
- regressions of the findings: a MULTI or batch record was "unknown" to
  --check and --fix cut there; a damaged last record made --fix cut at an
  earlier MULTI; a flipped bit in a record's length was taken for a torn
  tail (the file cut, later records lost); swapped, repeated and deleted
  records loaded silently;
- the remedies: --drop-damaged and --truncate-at keep what they remove in a
  side file, and the server loads on after the gap they leave;
- a version 1 journal (written before sequence numbers) still loads.
"""

import os
import re
import signal

import journalfile as jf
from harness import OPS, REPO, Server, info_dict, is_err
from test_batch import batch
from test_persistence import Dir, check_tool

DAY = 86400


def write_ops():
    """Names of the commands the op table flags OPF_WRITE, but GLOBALCOPY:
    a cluster node applies it only from the owner of the object's slot,
    so test_cluster.py journals, checks and replays it in a cluster."""
    text = open(os.path.join(REPO, "protocol", "ops.def")).read()
    rows = re.findall(r'^OP\(\s*\w+\s*,\s*"([^"]+)"\s*,[^,]+,[^,]+,[^,]+,'
                      r'([^,]+),', text, re.M)
    ops = {name for name, flags in rows if "OPF_WRITE" in flags} - \
        {"GLOBALCOPY"}
    assert len(ops) >= 20 and ops <= set(OPS), ops
    return ops


def commands_of(stdout):
    """{command: count} from --check's "commands:" line."""
    m = re.search(r"^  commands:(.*)$", stdout, re.M)
    assert m, stdout
    words = m.group(1).split()
    return {words[i]: int(words[i + 1]) for i in range(0, len(words) - 1, 2)}


def segment_files(d):
    return [d.file("journal.%d" % n) for n in d.segments()]


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def check_clean_and_fix_changes_nothing(d):
    """--check calls every segment clean; --fix leaves every byte. Returns
    the commands counted over all segments."""
    counts = {}
    for path in segment_files(d):
        before = read(path)
        p = check_tool(path)
        assert p.returncode == 0 and p.stdout.rstrip().endswith("OK"), \
            p.stdout
        for k, v in commands_of(p.stdout).items():
            counts[k] = counts.get(k, 0) + v
        p = check_tool(path, "--fix")
        assert p.returncode == 0 and "nothing changed" in p.stdout, p.stdout
        assert read(path) == before, path
    return counts


# -- every record, every path

class I(int):
    """An id in the scenario: moved to fresh ids on each path."""


# One successful call of every write command, in an order in which each
# one succeeds (a member before a post, a message before its receipt).
SCENARIO = [
    ("CNT.INCR", I(1), "mention", 2), ("CNT.DECR", I(1), "mention", 1),
    ("CNT.SET", I(1), 2, 5), ("CNT.CLEAR", I(1), 2),
    ("CNT.INCR", I(1), "like", 1, "ID", I(77)), ("CNT.ACK", I(1), "like", I(77)),
    ("CONV.INCR", I(1), I(10), 3), ("CONV.SEQ", I(1), I(11), 5),
    ("CONV.READ", I(1), I(11)), ("CONV.MARKUNREAD", I(1), I(11), 5),
    ("CONV.RECALL", I(1), I(11), 5), ("CONV.MUTE", I(1), I(10), 1),
    ("CONV.DEL", I(1), I(10)),
    ("CONV.SEQ", I(1), I(12), 3, "MENTION", "THREAD", I(7)),
    ("CONV.SEQ", I(1), I(13), 1000001, "SPARSE", "SOURCE", 2),
    ("CONV.ROLLUP", I(1), I(12), 0), ("CONV.READALL", I(1)),
    ("GRP.JOIN", I(2), I(5)), ("GRP.POST", I(5)), ("GRP.SEEN", I(2), I(5)),
    ("GRP.POST", I(5), "MENTION", I(2)), ("GRP.MUTE", I(2), I(5), 1),
    ("GRP.MARKUNREAD", I(2), I(5), 1), ("GRP.RECALL", I(5), 1),
    ("GRP.SEENALL", I(2)),
    ("GRP.LEAVE", I(2), I(5)),
    ("BC.PUBLISH", I(3)), ("BC.READ", I(2), I(3)),
    ("DOT.PUSH", I(4)), ("DOT.CLICK", I(2), I(4)),
    ("FEED.FOLLOW", I(2), I(9)), ("FEED.POST", I(9), 2),
    ("FEED.UNPOST", I(9), 1), ("FEED.RESET", I(2)),
    ("FEED.UNFOLLOW", I(2), I(9)),
    ("RCPT.JOIN", I(50), I(1)), ("RCPT.JOIN", I(50), I(2)),
    ("RCPT.SEND", I(50), I(100), I(1)), ("RCPT.READ", I(50), I(2), I(100)),
    ("RCPT.READUPTO", I(50), I(2), I(100)), ("RCPT.QUIT", I(50), I(2)),
    ("USER.EXPIRE", I(2), "grp"), ("USER.DEL", I(3)),
]


def shifted(cmd, k):
    """cmd on other ids (k > 0), so that each path writes fresh state."""
    return (cmd[0],) + tuple(I(a + 1000 * k) if isinstance(a, I) else a
                             for a in cmd[1:])


def state(c):
    """What the scenario's users and objects read back."""
    out = []
    for k in range(7):
        u = lambda x: x + 1000 * k  # noqa: E731
        out += [c.cmd("CNT.GETALL", u(1)), c.cmd("CONV.LIST", u(1)),
                c.cmd("GRP.TOTAL", u(2)), c.cmd("FEED.UNREAD", u(2)),
                c.cmd("RCPT.COUNT", u(50), u(100)),
                c.cmd("USER.INFO", u(2)), c.cmd("USER.INFO", u(3))]
    return [repr(x) if is_err(x) else x for x in out]


def test_every_record_kind_checks_clean_and_fix_changes_nothing():
    ran = {}

    def ok(cmd, reply):
        assert not is_err(reply), (cmd, reply)
        ran[cmd[0]] = ran.get(cmd[0], 0) + 1

    with Dir() as d:
        srv = d.start(enable_debug_command="yes", rcpt_max_age_days=365)
        with srv.resp() as c, srv.bin() as b:
            ok(("FLUSHALL",), c.cmd("FLUSHALL"))
            # RESP, inline and binary, one call at a time
            for cmd in SCENARIO:
                ok(cmd, c.cmd(*cmd))
            for cmd in (shifted(x, 1) for x in SCENARIO):
                ok(cmd, c.inline(" ".join(str(a) for a in cmd)))
            for cmd in (shifted(x, 2) for x in SCENARIO):
                ok(cmd, b.call(*cmd))
            # pipelines of both protocols
            cmds = [shifted(x, 3) for x in SCENARIO]
            for cmd, r in zip(cmds, c.pipeline(cmds)):
                ok(cmd, r)
            cmds = [shifted(x, 4) for x in SCENARIO]
            for cmd, r in zip(cmds, b.pipeline(cmds)):
                ok(cmd, r)
            # MULTI/EXEC and the binary batch: one record each
            assert c.cmd("MULTI") == "OK"
            cmds = [shifted(x, 5) for x in SCENARIO]
            for cmd in cmds:
                assert c.cmd(*cmd) == "QUEUED"
            for cmd, r in zip(cmds, c.cmd("EXEC")):
                ok(cmd, r)
            cmds = [shifted(x, 6) for x in SCENARIO]
            for cmd, r in zip(cmds, batch(b, cmds)):
                ok(cmd, r)
            # a move's records: the user goes (MIGRATED, as MIGRATE
            # journals its deletes) and comes back (RESTORE, RESTORE-ASKING)
            rec = c.cmd("DUMP", 1)
            assert isinstance(rec, bytes), rec
            ok(("MIGRATED",), c.cmd("MIGRATED", 1))
            ok(("RESTORE",), c.cmd("RESTORE", 1, 0, rec))
            ok(("RESTORE-ASKING",),
               c.cmd("RESTORE-ASKING", 1, 0, rec, "REPLACE"))
            assert c.cmd("DUMP", 1) == rec
            # the expiry sweep: users idle for more than inactive-days
            # (USER.EXPIRE calls count in expired_users too)
            def expired():
                e = info_dict(c.cmd("INFO", "expiry"))["expiry"]
                return int(e["expired_users"]), e["sweep_in_progress"]
            base = expired()[0]
            ok(("GRP.JOIN",), c.cmd("GRP.JOIN", 77, 5))
            c.cmd("DEBUG", "ADVANCE-CLOCK", 31 * DAY)
            srv.wait_for(lambda: expired()[0] > base and
                         expired()[1] == "0", what="an expiry sweep")
            swept = expired()[0] - base
            want = state(c)
        assert set(ran) == write_ops(), write_ops() ^ set(ran)
        srv.kill9()

        counts = check_clean_and_fix_changes_nothing(d)
        for op in write_ops() - {"USER.EXPIRE"}:
            assert counts.get(op) == ran[op], (op, counts.get(op), ran[op])
        assert counts["USER.EXPIRE"] == ran["USER.EXPIRE"] + swept, counts
        srv = d.start(enable_debug_command="yes", rcpt_max_age_days=365)
        with srv.resp() as c:
            # the reads answer relative to today (days since last active,
            # receipts' age): the same day as before the restart
            c.cmd("DEBUG", "ADVANCE-CLOCK", 31 * DAY)
            assert state(c) == want
            assert c.cmd("DEBUG", "AUDIT") == 0
        srv.kill9()


# -- finding 1: --check knew no batch record, and --fix cut there

def incr_writes(srv, uids, proto="resp"):
    with srv.resp() as c, srv.bin() as b:
        for u in uids:
            r = (c.cmd if proto == "resp" else b.call)("CNT.INCR", u, 0, 1)
            assert r == [1, 1], r


def loaded(srv, uids):
    """The uids whose write is there."""
    with srv.resp() as c:
        return [u for u, v in zip(uids, c.pipeline(
            [("CNT.TOTAL", u) for u in uids])) if v == 1]


def ten_multi_twenty(d):
    """10 writes, one MULTI of two, 20 writes, kill -9: 31 records, 32
    users written."""
    srv = d.start()
    incr_writes(srv, range(1, 11))
    with srv.resp() as c:
        assert c.cmd("MULTI") == "OK"
        c.cmd("CNT.INCR", 11, 0, 1)
        c.cmd("CNT.INCR", 12, 0, 1)
        assert c.cmd("EXEC") == [[1, 1], [1, 1]]
    incr_writes(srv, range(13, 33))
    srv.kill9()
    return list(range(1, 33))


def test_multi_and_batch_records_check_clean():
    with Dir() as d:
        uids = ten_multi_twenty(d)
        srv = d.start()
        with srv.bin() as b:
            assert batch(b, [("CNT.INCR", 33, 0, 1),
                             ("CNT.INCR", 34, 0, 1)]) == [[1, 1], [1, 1]]
        srv.kill9()
        uids += [33, 34]
        counts = check_clean_and_fix_changes_nothing(d)
        assert counts == {"CNT.INCR": 34}, counts
        p = check_tool(segment_files(d)[0])
        assert "30 single commands, 1 batch record" in p.stdout, p.stdout
        srv = d.start()
        assert loaded(srv, uids) == uids
        srv.kill9()


def test_damaged_last_record_is_refused_and_only_it_is_dropped():
    with Dir() as d:
        uids = ten_multi_twenty(d)
        seg = d.last_segment()
        data = read(seg)
        recs = jf.records(data)
        assert len(recs) == 31
        last = recs[-1]
        damaged = jf.flip(data, last.end - 3)  # in its last argument
        write(seg, damaged)
        err = d.start_fails()
        assert "offset %d, record 31 (seq 31)" % last.off in err, err
        assert "--fix` refuses here" in err and "--drop-damaged" in err, err
        p = check_tool(seg, "--fix")
        assert p.returncode == 1 and "REFUSED" in p.stdout, p.stdout
        assert read(seg) == damaged
        p = check_tool(seg, "--drop-damaged")
        assert p.returncode == 0 and "FIXED" in p.stdout, p.stdout
        assert os.path.getsize(seg) == last.off  # the MULTI and after stay
        srv = d.start()
        assert loaded(srv, uids) == uids[:-1]
        srv.kill9()


def test_torn_last_record_is_cut_alone_after_a_multi():
    with Dir() as d:
        uids = ten_multi_twenty(d)
        seg = d.last_segment()
        data = read(seg)
        last = jf.records(data)[-1]
        for cut in (last.off + 5, last.off + 24, last.end - 1):
            write(seg, data[:cut])
            p = check_tool(seg)
            assert p.returncode == 1 and "TORN TAIL at offset %d" % \
                last.off in p.stdout, p.stdout
            p = check_tool(seg, "--fix")
            assert p.returncode == 0 and "no sound record removed" in \
                p.stdout, p.stdout
            assert read(seg) == data[:last.off]
            write(seg, data[:cut])
            srv = d.start()  # the server cuts it the same way
            assert loaded(srv, uids) == uids[:-1]
            assert "torn last record at offset %d" % last.off in \
                srv.stderr_text()
            srv.kill9()
            for n in d.segments()[1:]:
                os.unlink(d.file("journal.%d" % n))


# -- finding 2: a flipped bit in a length was taken for a torn tail

def test_flipped_length_bit_is_refused_never_cut():
    with Dir() as d:
        srv = d.start()
        uids = list(range(1, 101))
        incr_writes(srv, uids[:50], "binary")
        incr_writes(srv, uids[50:])
        srv.kill9()
        seg = d.last_segment()
        data = read(seg)
        rec = jf.records(data)[49]  # record 50
        for bit in range(32):
            at = jf.length_at(rec) + bit // 8
            damaged = jf.flip(data, at, 1 << (bit % 8))
            write(seg, damaged)
            err = d.start_fails()
            assert "offset %d, record 50 (seq 50)" % rec.off in err, \
                (bit, err)
            assert "50 sound records after it" in err, (bit, err)
            assert read(seg) == damaged, bit  # nothing cut
            p = check_tool(seg, "--fix")
            assert p.returncode == 1 and read(seg) == damaged, p.stdout
        write(seg, data)
        srv = d.start()
        assert loaded(srv, uids) == uids
        srv.kill9()


# -- finding 3: records had no order of their own

def test_swapped_repeated_and_deleted_records_are_refused():
    with Dir() as d:
        srv = d.start()
        with srv.resp() as c:
            for v in (5, 4):  # acknowledged: 4
                assert c.cmd("CNT.SET", 1, 0, v)[0] == v
            for _ in range(10):
                c.cmd("CNT.INCR", 2, 0, 1)
            c.cmd("CNT.INCR", 3, 0, 1)
        srv.kill9()
        seg = d.last_segment()
        data = read(seg)
        recs = jf.records(data)
        n = len(recs)
        cases = {
            "swapped": jf.reorder(data, recs, [1, 0] + list(range(2, n))),
            "repeated": jf.reorder(data, recs, [0, 1, 2, 2] +
                                   list(range(3, n))),
            "deleted": jf.reorder(data, recs, [0] + list(range(2, n))),
            "last two swapped": jf.reorder(data, recs, list(range(n - 2)) +
                                           [n - 1, n - 2]),
            "last repeated": data + data[recs[-1].off:],
        }
        for what, damaged in cases.items():
            write(seg, damaged)
            err = d.start_fails()
            assert seg in err and "out of sequence" in err, (what, err)
            p = check_tool(seg)
            assert p.returncode == 1 and "DAMAGED" in p.stdout, \
                (what, p.stdout)
            p = check_tool(seg, "--fix")
            assert p.returncode == 1 and read(seg) == damaged, \
                (what, p.stdout)
        write(seg, data)
        srv = d.start()
        with srv.resp() as c:
            assert c.cmd("CNT.GET", 1, 0) == 4
            assert c.cmd("CNT.GET", 2, 0) == 10
        srv.kill9()


def two_segments(d):
    """Writes on uids 1..10, restart, 11..20: journal.1 and journal.2."""
    srv = d.start()
    incr_writes(srv, range(1, 11))
    srv.kill9()
    srv = d.start()
    incr_writes(srv, range(11, 21))
    srv.kill9()
    assert d.segments() == [1, 2]
    return list(range(1, 21))


def test_records_cut_off_a_segment_that_is_not_the_last_are_found():
    with Dir() as d:
        uids = two_segments(d)
        one = d.file("journal.1")
        data = read(one)
        last = jf.records(data)[-1]
        write(one, data[:last.off])  # a whole record gone, at a boundary
        err = d.start_fails()
        assert d.file("journal.2") in err and "missing" in err, err
        assert "Records 10 to 10 are missing" in err, err
        # the operator accepts the gap: journal.1 marked as ending early
        p = check_tool(one)
        assert p.returncode == 1 and "records 10 to 10 are missing" in \
            p.stdout, p.stdout
        p = check_tool(one, "--fix")
        assert p.returncode == 1 and read(one) == data[:last.off], p.stdout
        p = check_tool(one, "--drop-damaged")
        assert p.returncode == 0 and "no record removed" in p.stdout, p.stdout
        assert jf.header(read(one))["flags"] == 1
        srv = d.start()
        assert loaded(srv, uids) == uids[:9] + uids[10:]
        assert "not replayed" in srv.stderr_text()
        srv.kill9()


def test_drop_damaged_keeps_what_it_removes_and_later_segments_load():
    with Dir() as d:
        uids = two_segments(d)
        one = d.file("journal.1")
        data = read(one)
        rec = jf.records(data)[4]  # record 5 of 10
        damaged = jf.flip(data, rec.off + 30)
        write(one, damaged)
        err = d.start_fails()
        assert "offset %d, record 5" % rec.off in err, err
        assert "the later segments then load after the gap" in err, err
        p = check_tool(one, "--drop-damaged")
        assert p.returncode == 0 and "FIXED" in p.stdout, p.stdout
        side = [n for n in os.listdir(d.path)
                if n.startswith("journal.1.removed-")]
        assert len(side) == 1 and read(d.file(side[0])) == damaged[rec.off:]
        srv = d.start()
        assert loaded(srv, uids) == uids[:4] + uids[10:]
        srv.kill9()


def test_truncate_at_drops_a_record_the_server_cannot_run():
    """A sound record whose command fails on replay (a setting changed):
    the server names it; --truncate-at removes it when the operator so
    chooses, keeping it in a side file."""
    with Dir() as d:
        srv = d.start(counter_types="mention like")
        with srv.resp() as c:
            c.cmd("CNT.INCR", 1, "mention", 1)
            c.cmd("CNT.INCR", 1, "like", 1)
            c.cmd("CNT.INCR", 2, "mention", 1)
        srv.kill9()
        seg = d.last_segment()
        data = read(seg)
        rec = jf.records(data)[1]
        err = d.start_fails(counter_types="mention")
        assert "offset %d, record 2 (seq 2)" % rec.off in err, err
        assert "--truncate-at %d" % rec.off in err, err
        p = check_tool(seg, "--truncate-at", rec.off + 1)
        assert p.returncode == 1 and read(seg) == data, p.stdout
        p = check_tool(seg, "--truncate-at", rec.off)
        assert p.returncode == 0 and "removing 2 sound records" in p.stdout, \
            p.stdout
        srv = d.start(counter_types="mention")
        with srv.resp() as c:
            assert c.cmd("CNT.TOTAL", 1) == 1 and c.cmd("CNT.TOTAL", 2) == 0
        srv.kill9()


# -- version 1

def test_version_1_journal_still_loads():
    """A segment written before sequence numbers (the fuzz corpus keeps
    one) loads; the next segment is version 2 and follows on from it."""
    v1 = os.path.join(REPO, "tests", "fuzz", "corpus", "journal",
                      "segment_v1")
    with Dir() as d:
        os.makedirs(d.path)
        write(d.file("journal.1"), read(v1)[1:])  # its first byte: the mode
        p = check_tool(d.file("journal.1"))
        assert p.returncode == 0 and "format version 1" in p.stdout, p.stdout
        srv = d.start()
        with srv.resp() as c:
            info = info_dict(c.cmd("INFO", "persistence"))["persistence"]
            assert info["loaded_journal_records"] == "18", info
            before = c.cmd("CNT.GETALL", 7)
            assert before, before
            c.cmd("CNT.INCR", 7, 2, 1)
        srv.kill9()
        assert d.segments() == [1, 2]
        two = read(d.file("journal.2"))
        assert jf.header(two)["version"] == 2
        assert jf.header(two)["first_seq"] == 19  # after the 18 of journal.1
        check_clean_and_fix_changes_nothing(d)
        srv = d.start()
        with srv.resp() as c:
            after = c.cmd("CNT.GETALL", 7)
            assert after == [before[0], before[1] + 1] + before[2:], after
        srv.kill9()
