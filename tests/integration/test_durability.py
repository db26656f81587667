"""An acknowledgement means durable, on every path out of the server
(issue 15 finding 4, docs/PERSISTENCE.md "Faults"): with the journal
failing (the fault shim, tests/faults/faultfs.c), the reply of a write
whose record is not written never leaves, neither through the end-of-turn
flush nor through the write event of a congested socket, for a single
command, MULTI/EXEC and a binary batch, on one connection or several;
reads go on; it leaves once the journal is written again. The randomized
version of this is tests/faults/journal_fail.py. And what a restarted
server replays is made durable before it acknowledges more (a power cut
after a kill -9 would take it otherwise; tests/faults/kill9.py).
"""

import os
import shutil
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "faults"))

from _rig import (Rig, SlowBin, SlowResp, connect, encode_batch,  # noqa: E402
                  is_misconf, power_loss)
from harness import Err, encode_frame, encode_multibulk  # noqa: E402

# Replies queued ahead of the held one: more than the socket takes (the
# shim makes the server's send buffer small), less than OUT_PAUSE.
AHEAD = 8000


def congest(srv, cls, uid):
    """A connection whose AHEAD replies fill its socket: the server's
    write event is armed, its output buffer not empty."""
    c = connect(srv.port, cls, rcvbuf=2048)
    if cls is SlowResp:
        c.send(b"".join(encode_multibulk("CNT.GET", uid, 0)
                        for _ in range(AHEAD)))
    else:
        c.send(b"".join(encode_frame("CNT.GET", c.alloc_id(), uid, 0)
                        for _ in range(AHEAD)))
    srv.wait_for(lambda: int(srv.info("clients")["client_output_bytes"]) > 0,
                 what="replies queued behind a full socket")
    return c


def held_write(c, kind, uid):
    """Sends one write of `kind`; returns how to read its reply."""
    if kind == "resp":
        c.send(encode_multibulk("CNT.INCR", uid, 1))
        return lambda: c.read_reply()
    if kind == "multi":
        c.send(encode_multibulk("MULTI") +
               encode_multibulk("CNT.INCR", uid, 1) + encode_multibulk("EXEC"))

        def read():
            assert c.read_reply() == "OK"
            assert c.read_reply() == "QUEUED"
            return c.read_reply()
        return read
    rid = c.alloc_id()
    if kind == "bin":
        c.send(encode_frame("CNT.INCR", rid, uid, 1))
    else:
        c.send(encode_batch(rid, [("CNT.INCR", uid, 1)]))
    return lambda: c.reply(rid)


def drain(c, kind):
    for _ in range(AHEAD):
        r = c.read_reply() if kind in ("resp", "multi") else c.read_frame()
        assert r is not None


def test_held_replies_never_leave_through_a_congested_socket():
    """For each kind of write (RESP, binary, MULTI/EXEC, binary batch): a
    congested connection sends it just as the journal starts failing, and
    reads every earlier reply; the write's reply stays held while a
    second connection's write is refused and its read answered; kill -9
    and restart: the write is not there, and nobody was told it was."""
    for i, kind in enumerate(("resp", "bin", "multi", "batch")):
        uid = 10 + i
        with Rig(sndbuf=4096) as rig:
            srv = rig.start(journal_fsync="everysec")
            c = congest(srv, SlowBin if kind in ("bin", "batch") else SlowResp,
                        uid)
            rig.faults.set("write journal. ENOSPC")
            read = held_write(c, kind, uid)
            srv.wait_for(lambda: srv.info("persistence")["journal_status"] ==
                         "broken", what="the journal to fail")
            drain(c, kind)  # the socket takes everything before the write
            c.sock.settimeout(0.5)
            try:
                r = read()
            except TimeoutError:
                r = None
            assert r is None, "%s: reply of an unwritten write left: %r" % (
                kind, r)
            with srv.resp() as other:
                assert is_misconf(other.cmd("CNT.INCR", 99, 1))
                assert other.cmd("CNT.GET", 99, 1) == 0  # reads go on
            srv.kill9()
            c.close()
            rig.faults.clear()
            srv = rig.start()
            with srv.resp() as other:
                assert other.cmd("CNT.GET", uid, 1) == 0, kind
            srv.kill9()


test_held_replies_never_leave_through_a_congested_socket.timeout = 60


def test_held_replies_leave_once_the_journal_is_written_again():
    """The same, lifted: a congested connection pipelines a write and an
    atomic batch (MULTI/EXEC, a binary batch frame) in one go as the
    journal starts failing; both replies stay held until the journal can
    be written again, then arrive in order by themselves, and the writes
    survive a kill -9."""
    for cls in (SlowResp, SlowBin):
        with Rig(sndbuf=4096) as rig:
            srv = rig.start(journal_fsync="always")
            c = congest(srv, cls, 20)
            rig.faults.set("write journal. EIO")
            if cls is SlowResp:
                c.send(encode_multibulk("CNT.INCR", 20, 1) +
                       encode_multibulk("MULTI") +
                       encode_multibulk("CNT.INCR", 20, 1) +
                       encode_multibulk("CNT.INCR", 21, 1) +
                       encode_multibulk("EXEC"))
            else:
                r1, r2 = c.alloc_id(), c.alloc_id()
                c.send(encode_frame("CNT.INCR", r1, 20, 1) +
                       encode_batch(r2, [("CNT.INCR", 20, 1),
                                         ("CNT.INCR", 21, 1)]))
            srv.wait_for(lambda: srv.info("persistence")["journal_status"] ==
                         "broken", what="the journal to fail")
            drain(c, "resp" if cls is SlowResp else "bin")
            c.sock.settimeout(0.3)
            try:
                r = c.read_reply() if cls is SlowResp else c.read_frame()
            except TimeoutError:
                r = None
            assert r is None, r
            rig.faults.clear()
            c.sock.settimeout(10)
            if cls is SlowResp:
                assert c.read_reply() == [1, 1]
                assert c.read_reply() == "OK"
                assert c.read_reply() == "QUEUED"
                assert c.read_reply() == "QUEUED"
                assert c.read_reply() == [[2, 2], [1, 1]]
            else:
                assert c.reply(r1) == [1, 1]
                assert c.reply(r2) == [[2, 2], [1, 1]]
            srv.wait_for(lambda: srv.info("persistence")["journal_status"] ==
                         "ok", what="the journal to be ok")
            with srv.resp() as other:
                assert other.cmd("CNT.INCR", 20, 1) == [3, 3]
            c.close()
            srv.kill9()
            srv = rig.start()
            with srv.resp() as other:
                assert other.cmd("CNT.GET", 20, 1) == 3
                assert other.cmd("CNT.GET", 21, 1) == 1
            srv.kill9()


test_held_replies_leave_once_the_journal_is_written_again.timeout = 60


def test_replayed_journal_is_synced_before_new_writes():
    """A server killed before its fdatasync (journal-fsync no here, or
    everysec within its second) leaves acknowledged records in the page
    cache only. The next server replays them and must sync them before
    acknowledging anything on top: a power cut after that (simulated: each
    segment cut back to its last synced size) takes none of them."""
    with Rig() as rig:
        srv = rig.start(journal_fsync="no")
        with srv.resp() as c:
            for r in c.pipeline([("CNT.INCR", 30, 1)] * 100):
                assert r[0] >= 1
        srv.kill9()
        srv = rig.start(journal_fsync="no")
        with srv.resp() as c:
            assert c.cmd("CNT.GET", 30, 1) == 100
        srv.kill9()
        assert power_loss(rig) == 0, "replayed records left unsynced"
        srv = rig.start()
        with srv.resp() as c:
            assert c.cmd("CNT.GET", 30, 1) == 100
        srv.kill9()


# -- an fdatasync that fails is never retried and trusted ------------------

def persistence(srv):
    return srv.info("persistence")


def metrics_text(port):
    import urllib.request
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                timeout=10) as r:
        return r.read().decode()


def metric(text, name):
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError("no metric " + name)


def test_fsync_failure_refuses_writes_until_a_snapshot_and_fresh_segment():
    """One fdatasync of the journal fails with EIO and the pages it covered
    are dropped (the shim zeroes them), while snapshots cannot be written
    yet: writes are refused with -MISCONF naming the fdatasync, reads are
    served, INFO and /metrics say so, the log says why; the journal is not
    written again (a retried fdatasync would succeed and prove nothing).
    Once a snapshot can be written the server writes it and a fresh
    segment by itself and takes writes again; after kill -9 everything
    acknowledged, before the failure and after, is there. Both fsync
    modes: with always the replies of the turn whose fdatasync failed wait
    for the snapshot."""
    from harness import free_port
    for fsync in ("everysec", "always"):
        with Rig() as rig:
            mport = free_port()
            srv = rig.start(journal_fsync=fsync, metrics_port=mport)
            with srv.resp() as c:
                for r in c.pipeline([("CNT.INCR", 40, 1)] * 300):
                    assert r[0] >= 1
            rig.faults.set("fdatasync journal. EIO count=1 lose",
                           "create snapshot.tmp ENOSPC")
            held = srv.resp()
            held.send(encode_multibulk("CNT.INCR", 41, 1))
            srv.wait_for(lambda: persistence(srv)["journal_status"] ==
                         "untrusted", 10, "the journal to be untrusted")
            info = persistence(srv)
            assert "fdatasync failed: Input/output error" in \
                info["journal_error"], info
            assert info["journal_fsync_failures"] == "1"
            with srv.resp() as c:
                r = c.cmd("CNT.INCR", 42, 1)
                assert is_misconf(r) and "fdatasync failed" in r.text, r
                assert c.cmd("CNT.GET", 40, 1) == 300  # reads go on
            text = metrics_text(mport)
            assert metric(text, "unreadd_journal_untrusted") == 1
            assert metric(text, "unreadd_journal_ok") == 0
            assert metric(text, "unreadd_journal_fsync_failures_total") == 1
            assert "fdatasync failed" in srv.stderr_text()
            if fsync == "always":
                held.sock.settimeout(0.5)
                try:
                    r = held.read_reply()
                except TimeoutError:
                    r = None
                # its record was written, its fdatasync failed: no reply
                # (unless the write was refused, turn order permitting)
                assert r is None or is_misconf(r), r
                held.sock.settimeout(10)
            size = os.path.getsize(os.path.join(rig.path, "journal.1"))
            time.sleep(0.3)
            assert os.path.getsize(os.path.join(rig.path, "journal.1")) == \
                size, "the untrusted segment was written again"
            rig.faults.clear()  # snapshots can be written again
            srv.wait_for(lambda: persistence(srv)["journal_status"] == "ok",
                         15, "the resync")
            if fsync == "always" and r is None:
                assert held.read_reply() == [1, 1]
            held.close()
            info = persistence(srv)
            assert info["journal_resyncs"] == "1", info
            assert "trusted again" in srv.stderr_text()
            with srv.resp() as c:
                assert c.cmd("CNT.INCR", 42, 1) == [1, 1]
            srv.kill9()
            srv = rig.start(journal_fsync=fsync)
            with srv.resp() as c:
                assert c.cmd("CNT.GET", 40, 1) == 300
                assert c.cmd("CNT.GET", 42, 1) == 1
            srv.kill9()


test_fsync_failure_refuses_writes_until_a_snapshot_and_fresh_segment \
    .timeout = 90


# -- the data directory vanishing or being replaced -------------------------

def acked_incrs(srv, uid, n):
    with srv.resp() as c:
        return sum(1 for r in c.pipeline([("CNT.INCR", uid, 1)] * n)
                   if isinstance(r, list))


def test_deleted_journal_segment_is_noticed_and_rewritten():
    """rm of the journal segment under a running server: the next write
    finds it deleted (its inode has no name) and acknowledges nothing into
    it; the log says so; the server writes a snapshot (which holds the
    deleted segment's changes too) and a fresh segment, then takes writes
    again; after kill -9 every acknowledged write is there."""
    with Rig() as rig:
        srv = rig.start()
        assert acked_incrs(srv, 50, 200) == 200
        srv.wait_for(lambda: os.path.exists(
            os.path.join(rig.path, "journal.1")))
        os.unlink(os.path.join(rig.path, "journal.1"))
        with srv.resp() as c:
            r = c.cmd("CNT.INCR", 50, 1)
            assert is_misconf(r) or r == [201, 201], r
            extra = 1 if r == [201, 201] else 0
        srv.wait_for(lambda: "was deleted while the server had it open" in
                     srv.stderr_text(), 5, "the log line")
        srv.wait_for(lambda: persistence(srv)["journal_status"] == "ok", 15,
                     "the resync")
        assert acked_incrs(srv, 50, 10) == 10
        srv.kill9()
        srv = rig.start()
        with srv.resp() as c:
            assert c.cmd("CNT.GET", 50, 1) == 210 + extra
        srv.kill9()


def test_removed_data_dir_is_noticed_and_written_again_once_it_exists():
    """rm -rf of the data directory under a running server: writes are
    refused (-MISCONF, the log names the directory), BGSAVE fails, reads
    go on; once the directory exists again the server takes it (lock,
    snapshot, fresh segment) and writes resume; after kill -9 nothing
    acknowledged is missing (it used to restart empty)."""
    with Rig() as rig:
        srv = rig.start()
        assert acked_incrs(srv, 60, 200) == 200
        shutil.rmtree(rig.path)
        srv.wait_for(lambda: persistence(srv)["journal_status"] ==
                     "untrusted", 5, "the directory to be missed")
        assert "data directory %s is gone" % rig.path in srv.stderr_text()
        with srv.resp() as c:
            assert is_misconf(c.cmd("CNT.INCR", 60, 1))
            assert c.cmd("CNT.GET", 60, 1) == 200
            r = c.cmd("BGSAVE")
            assert isinstance(r, Err) or r == "Background saving started", r
        time.sleep(1.2)
        assert persistence(srv)["journal_status"] == "untrusted"
        os.mkdir(rig.path)
        srv.wait_for(lambda: persistence(srv)["journal_status"] == "ok", 15,
                     "the resync into the new directory")
        assert "is a new directory" in srv.stderr_text()
        assert os.path.exists(os.path.join(rig.path, "snapshot.urs"))
        assert acked_incrs(srv, 60, 5) == 5
        srv.kill9()
        srv = rig.start()
        with srv.resp() as c:
            assert c.cmd("CNT.GET", 60, 1) == 205
        srv.kill9()


def test_replaced_or_deleted_snapshot_is_noticed_and_written_again():
    """After a SAVE, the snapshot is deleted, then (after the server wrote
    it again) replaced by another file: each time the server notices,
    refuses writes until it has written its own snapshot and a fresh
    segment, and a restart loads everything acknowledged."""
    with Rig() as rig:
        srv = rig.start()
        assert acked_incrs(srv, 70, 100) == 100
        with srv.resp() as c:
            assert c.cmd("SAVE") == "OK"
        snap = os.path.join(rig.path, "snapshot.urs")
        for n, (damage, words) in enumerate((
                (lambda: os.unlink(snap), "was deleted"),
                (lambda: (open(snap + ".x", "wb").write(b"x" * 100),
                          os.rename(snap + ".x", snap)),
                 "was replaced by a file the server did not write"))):
            assert acked_incrs(srv, 70, 10) == 10
            damage()
            srv.wait_for(lambda: words in srv.stderr_text(), 5, words)
            srv.wait_for(lambda: persistence(srv)["journal_status"] == "ok",
                         15, "the resync")
            assert persistence(srv)["journal_resyncs"] == str(n + 1)
        srv.kill9()
        srv = rig.start()
        with srv.resp() as c:
            assert c.cmd("CNT.GET", 70, 1) == 120
        srv.kill9()
