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
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "faults"))

from _rig import (Rig, SlowBin, SlowResp, connect, encode_batch,  # noqa: E402
                  is_misconf, power_loss)
from harness import encode_frame, encode_multibulk  # noqa: E402

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
