"""Replication (docs/OPERATIONS.md "Replicas and failover", docs/
PERSISTENCE.md "Replication") with real servers on loopback: a replica's
full sync and stream (every family, batches, expiry), read-only replicas,
ROLE and INFO as Redis shows them, CLIENT LIST/KILL of replication links,
partial resync after a cut link, a replica's restart and a promotion,
WAIT, min-replicas-to-write, replica-serve-stale-data, chained replicas,
the journal off, and bad input on both sides of a link (a fake replica, a
fake primary sending a damaged stream).
"""

import os
import socket
import struct
import tempfile
import threading
import time

from harness import (E, Server, assert_err, encode_multibulk, info_flat,
                     is_err)
from test_batch import batch

ZERO_ID = "0" * 40


def info(c, section="replication"):
    return info_flat(c.cmd("INFO", section))


class DataServer(Server):
    """A server on a data dir the test owns (restarts keep its files)."""

    def __init__(self, datadir, **config):
        config.setdefault("save_seconds", 0)
        super().__init__(**config)
        self.datadir = datadir

    def argv(self):
        argv = super().argv()
        argv[argv.index("--dir") + 1] = self.datadir
        return argv


def replica_of(primary, **config):
    return Server(replicaof="127.0.0.1 %d" % primary.port, **config)


def wait_until(pred, timeout=10.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what)


def synced(primary, *replicas, timeout=10.0):
    """Waits until every replica's link is up and its offset is the
    primary's."""
    with primary.resp() as p:
        def caught_up():
            want = int(info(p)["master_repl_offset"])
            for r in replicas:
                with r.resp() as c:
                    i = info(c)
                    if (i.get("master_link_status") != "up" or
                            int(i["slave_repl_offset"]) != want):
                        return False
            return True
        wait_until(caught_up, timeout, "replicas in sync")


def seed(c, n=30):
    """Writes of every family, a MULTI and a binary-style batch."""
    for u in range(1, n + 1):
        c.cmd("CNT.INCR", u, u % 5, u)
        c.cmd("CONV.SEQ", u, 7, u)
        c.cmd("GRP.JOIN", u, 3)
        c.cmd("BC.UNREAD", u, 1)
        c.cmd("DOT.CLICK", u, 2, 1000)
        c.cmd("FEED.FOLLOW", u, 50 + u % 3)
    for _ in range(3):
        c.cmd("GRP.POST", 3)
        c.cmd("BC.PUBLISH", 1)
        c.cmd("FEED.POST", 51)
    c.cmd("DOT.PUSH", 2, 2000)
    c.cmd("RCPT.JOIN", 9, 1)
    c.cmd("RCPT.JOIN", 9, 2)
    c.cmd("RCPT.SEND", 9, 100, 1)
    c.cmd("RCPT.READ", 9, 2, 100)
    assert c.cmd("MULTI") == "OK"
    c.cmd("CONV.SEQ", 1, 8, 5)
    c.cmd("CNT.INCR", 1, "dm", 2)
    assert len(c.cmd("EXEC")) == 2


def state(c, uids=range(1, 31)):
    """What a node answers about some users: USER.INFO lines (minus the
    activity line, which reads the local clock) and counts."""
    out = []
    for u in uids:
        lines = [l for l in c.cmd("USER.INFO", u)]
        out.append((u, lines, c.cmd("CNT.GETALL", u), c.cmd("CONV.TOTAL", u),
                    c.cmd("GRP.TOTAL", u), c.cmd("FEED.UNREAD", u)))
    out.append(c.cmd("RCPT.COUNT", 9, 100))
    return out


def test_full_sync_and_stream():
    with Server() as p:
        with p.resp() as c:
            seed(c)
        with replica_of(p) as r:
            synced(p, r)
            with p.resp() as pc, r.resp() as rc:
                assert state(rc) == state(pc)
                assert rc.cmd("DEBUG", "AUDIT") == 0
                # The stream after the sync: single commands and batches.
                pc.cmd("CNT.INCR", 77, 0, 9)
                assert pc.cmd("MULTI") == "OK"
                pc.cmd("CNT.INCR", 77, 1, 2)
                pc.cmd("CONV.SEQ", 77, 1, 4)
                pc.cmd("EXEC")
                with p.bin() as b:
                    assert batch(b, [("CNT.INCR", 78, 2, 1),
                                     ("CONV.SEQ", 78, 2, 3)]) == [[1, 1],
                                                                  [3, 3]]
                synced(p, r)
                for u in (77, 78):
                    assert rc.cmd("USER.INFO", u) == pc.cmd("USER.INFO", u)
                assert rc.cmd("CNT.GETALL", 77) == [0, 9, 1, 2]
                i = info(pc)
                assert i["role"] == "master"
                assert i["connected_slaves"] == "1"
                assert int(i["repl_sync_full"]) == 1
                ri = info(rc)
                assert ri["role"] == "slave"
                assert ri["master_link_status"] == "up"
                assert ri["master_replid"] == i["master_replid"]
                assert rc.cmd("DEBUG", "AUDIT") == 0


def test_replica_is_read_only():
    with Server() as p:
        with replica_of(p) as r:
            synced(p, r)
            with r.resp() as c:
                assert_err(c.cmd("CNT.INCR", 1, 0), "READONLY")
                assert_err(c.cmd("FLUSHALL"), "READONLY")
                assert c.cmd("CNT.GET", 1, 0) == 0
                # A read that would register a user changes nothing here.
                assert c.cmd("BC.UNREAD", 5, 9) == 0
                assert c.cmd("USER.INFO", 5) == c.cmd("USER.INFO", 6)
                assert c.cmd("MULTI") == "OK"
                c.cmd("CNT.GET", 1, 0)
                c.cmd("CNT.INCR", 1, 0)
                assert_err(c.cmd("EXEC"), "READONLY")
                assert c.cmd("ROLE")[0] == b"slave"
            with r.bin() as b:
                v = b.call("CNT.INCR", 1, 0)
                assert is_err(v, code=E["READONLY"]), v
                assert b.call("CNT.GET", 1, 0) == 0
            with p.resp() as pc:
                pc.cmd("BC.PUBLISH", 9)
                synced(p, r)
                with r.resp() as c:
                    # still unregistered on the replica: 0, as the primary
                    # would answer it for a new user
                    assert c.cmd("BC.UNREAD", 5, 9) == 0
                assert pc.cmd("BC.UNREAD", 5, 9) == 0


def test_role_info_and_clients():
    with Server() as p:
        with replica_of(p, replica_priority=42) as r:
            synced(p, r)
            with p.resp() as pc, r.resp() as rc:
                role = pc.cmd("ROLE")
                assert role[0] == b"master" and isinstance(role[1], int)
                assert role[2] == [[b"127.0.0.1", str(r.port).encode(),
                                    str(role[1]).encode()]]
                role = rc.cmd("ROLE")
                assert role[:3] == [b"slave", b"127.0.0.1", p.port]
                assert role[3] == b"connected" and role[4] == role[4]
                i = info(pc)
                line = i["slave0"]
                assert line.startswith("ip=127.0.0.1,port=%d,state=online,"
                                       "offset=" % r.port), line
                assert len(i["master_replid"]) == 40
                ri = info(rc)
                for k in ("master_host", "master_port", "master_link_status",
                          "master_last_io_seconds_ago", "slave_repl_offset",
                          "slave_priority", "replica_announced",
                          "master_sync_in_progress", "slave_read_only"):
                    assert k in ri, k
                assert ri["slave_priority"] == "42"
                assert ri["master_port"] == str(p.port)
                assert "master_link_down_since_seconds" not in ri
                # HELLO's role
                assert rc.cmd("HELLO", 2)[11] == b"replica"
                assert pc.cmd("HELLO", 2)[11] == b"master"
                # The links are clients of type replica and master.
                lst = pc.cmd("CLIENT", "LIST", "TYPE", "replica").decode()
                assert lst.count("\n") == 1 and "flags=S" in lst, lst
                lst = rc.cmd("CLIENT", "LIST", "TYPE", "master").decode()
                assert lst.count("\n") == 1 and "flags=M" in lst, lst
                # CLIENT KILL TYPE normal (sentinel's) leaves them alone.
                with p.resp() as other:
                    other.cmd("PING")
                    assert pc.cmd("CLIENT", "KILL", "TYPE", "normal") == 1
                assert rc.cmd("CLIENT", "KILL", "TYPE", "normal") == 0
                pc.cmd("CNT.INCR", 1, 0)
                synced(p, r)
                assert info(pc)["connected_slaves"] == "1"


def test_partial_resync_after_a_cut_link():
    with Server() as p:
        with replica_of(p) as r:
            synced(p, r)
            with p.resp() as pc, r.resp() as rc:
                pc.cmd("CNT.INCR", 1, 0, 5)
                synced(p, r)
                full = int(info(pc)["repl_sync_full"])
                assert rc.cmd("CLIENT", "KILL", "TYPE", "master") == 1
                for u in range(100):
                    pc.cmd("CNT.INCR", u, 1)
                synced(p, r)
                i = info(pc)
                assert int(i["repl_sync_full"]) == full
                assert int(i["repl_sync_partial_ok"]) >= 1
                assert rc.cmd("CNT.GETALL", 1) == pc.cmd("CNT.GETALL", 1)
                # From the primary's side too.
                assert pc.cmd("CLIENT", "KILL", "TYPE", "replica") == 1
                pc.cmd("CNT.INCR", 500, 2, 7)
                synced(p, r)
                assert int(info(pc)["repl_sync_full"]) == full
                assert rc.cmd("CNT.GET", 500, 2) == 7


def test_resync_past_the_backlog_is_full():
    with Server(repl_backlog_size=16384) as p:
        with replica_of(p) as r:
            synced(p, r)
            with p.resp() as pc, r.resp() as rc:
                rc.cmd("CONFIG", "SET", "repl-timeout", "60")
                r.proc.send_signal(19)  # SIGSTOP: the replica hears nothing
                try:
                    pc.cmd("CLIENT", "KILL", "TYPE", "replica")
                    for u in range(3000):  # far more than the backlog
                        pc.cmd("CNT.INCR", u, 1)
                    # the cron trims the backlog
                    wait_until(lambda: int(info(pc)["repl_backlog_histlen"])
                               < 200000, what="backlog trimmed")
                finally:
                    r.proc.send_signal(18)  # SIGCONT
                synced(p, r)
                i = info(pc)
                assert int(i["repl_sync_full"]) == 2, i
                assert rc.cmd("CNT.GET", 2999, 1) == 1


def test_replica_restart_resyncs_partially():
    d = tempfile.mkdtemp(prefix="unreadd-repl-")
    with Server() as p:
        with p.resp() as pc:
            seed(pc)
        r = DataServer(d, replicaof="127.0.0.1 %d" % p.port)
        with r:
            synced(p, r)
        with p.resp() as pc:
            for u in range(50):
                pc.cmd("CNT.INCR", u, 3, 2)
            full = int(info(pc)["repl_sync_full"])
        with DataServer(d, replicaof="127.0.0.1 %d" % p.port) as r:
            synced(p, r)
            with p.resp() as pc, r.resp() as rc:
                i = info(pc)
                assert int(i["repl_sync_full"]) == full, i
                assert int(i["repl_sync_partial_ok"]) >= 1
                assert state(rc) == state(pc)
                assert rc.cmd("DEBUG", "AUDIT") == 0


def test_promotion_and_the_other_replica():
    with Server() as p:
        with p.resp() as pc:
            seed(pc)
        with replica_of(p) as r1, replica_of(p) as r2:
            synced(p, r1, r2)
            with p.resp() as pc:
                pc.cmd("CNT.INCR", 1, 0, 1)
            synced(p, r1, r2)
            with r1.resp() as c1, r2.resp() as c2:
                old = info(c1)["master_replid"]
                assert c1.cmd("REPLICAOF", "NO", "ONE") == "OK"
                i1 = info(c1)
                assert i1["role"] == "master"
                assert i1["master_replid2"] == old
                assert i1["master_replid"] != old
                # Sentinel's way: inside MULTI, with CONFIG REWRITE (which
                # fails without a config file) and CLIENT KILL.
                assert c2.cmd("MULTI") == "OK"
                c2.cmd("SLAVEOF", "127.0.0.1", r1.port)
                c2.cmd("CONFIG", "REWRITE")
                c2.cmd("CLIENT", "KILL", "TYPE", "normal")
                c2.cmd("CLIENT", "KILL", "TYPE", "pubsub")
                res = c2.cmd("EXEC")
                assert res[0] == "OK", res
                synced(r1, r2)
                i1 = info(c1)
                assert int(i1["repl_sync_partial_ok"]) == 1, i1
                assert int(i1["repl_sync_full"]) == 0, i1
                assert info(c2)["master_replid"] == i1["master_replid"]
                c1.cmd("CNT.INCR", 1, 0, 10)
                synced(r1, r2)
                assert c2.cmd("CNT.GET", 1, 0) == c1.cmd("CNT.GET", 1, 0)
                # The old primary, with a write the others never saw,
                # follows the new one: a full sync drops that write.
                with p.resp() as pc:
                    pc.cmd("CNT.INCR", 999, 0, 1)
                    assert pc.cmd("REPLICAOF", "127.0.0.1", r1.port) == "OK"
                    assert pc.cmd("REPLICAOF", "127.0.0.1", r1.port) == \
                        "OK Already connected to specified master"
                    synced(r1, p)
                    assert pc.cmd("CNT.GET", 999, 0) == 0
                    assert state(pc) == state(c1)
                    assert pc.cmd("DEBUG", "AUDIT") == 0


def test_acknowledgements_are_paced_and_asked_for():
    """A replica acknowledges at most every 100 ms (plus its periodic
    ACK), not once per read: each ACK costs the primary a wakeup and a
    read. Its last offset is still acknowledged without a WAIT (the
    replica's cron), and a WAIT gets an ACK at once (the primary asks)."""
    with Server() as p, replica_of(p) as r:
        synced(p, r)
        with p.resp() as pc, r.resp() as rc:
            before = int(info(rc, "stats")["total_net_repl_output_bytes"])
            t = time.monotonic()
            rounds = 300
            for i in range(rounds):
                pc.send(b"".join(encode_multibulk("CNT.INCR", i, 0)
                                 for _ in range(4)))
                for _ in range(4):
                    pc.read_reply()
                time.sleep(0.002)
            elapsed = time.monotonic() - t
            want = int(info(pc)["master_repl_offset"])

            def acked():
                line = info(pc)["slave0"]
                return "offset=%d," % want in line
            wait_until(acked, 10, "the replica's last offset acknowledged")
            sent = int(info(rc, "stats")["total_net_repl_output_bytes"]) - before
            ack = len(encode_multibulk("REPLCONF", "ACK", want))
            # one ACK per 100 ms of the run, its periodic ones, the
            # cron's last: far fewer than one per round
            bound = (elapsed / 0.1 + elapsed + 4) * ack
            assert sent <= bound, (sent, bound, elapsed)
            assert sent < rounds * ack / 2, (sent, elapsed)
            # the primary asks: WAIT does not wait for the next paced ACK
            pc.cmd("CNT.INCR", 1, 0)
            assert pc.cmd("WAIT", 1, 0) == 1


def test_wait():
    with Server() as p:
        with p.resp() as pc:
            pc.cmd("CNT.INCR", 1, 0)
            assert pc.cmd("WAIT", 0, 0) == 0
            t = time.monotonic()
            assert pc.cmd("WAIT", 1, 200) == 0  # no replica: times out
            assert time.monotonic() - t >= 0.15
        with replica_of(p) as r:
            synced(p, r)
            with p.resp() as pc:
                pc.cmd("CNT.INCR", 1, 0)
                assert pc.cmd("WAIT", 1, 5000) == 1
                t = time.monotonic()
                assert pc.cmd("WAIT", 2, 300) == 1
                assert time.monotonic() - t >= 0.25
                # pipelined: the commands after a blocked WAIT wait for it
                pc.send(encode_multibulk("CNT.INCR", 2, 0) +
                        encode_multibulk("WAIT", 1, 0) +
                        encode_multibulk("CNT.GET", 2, 0))
                assert pc.read_reply() == [1, 1]
                assert pc.read_reply() == 1
                assert pc.read_reply() == 1
                assert_err(pc.cmd("MULTI") and pc.cmd("WAIT", 1, 0), "ERR")
                pc.cmd("DISCARD")
            with p.bin() as b:
                b.call("CNT.INCR", 3, 0)
                assert b.call("WAIT", 1, 1000) == 1
            with r.resp() as rc:
                assert_err(rc.cmd("WAIT", 1, 0), "ERR WAIT cannot")
            # A replica that does not acknowledge: WAIT times out; a
            # connection closed while it waits leaves nothing behind.
            r.proc.send_signal(19)
            try:
                with p.resp() as pc:
                    pc.cmd("CNT.INCR", 4, 0)
                    assert pc.cmd("WAIT", 1, 200) == 0
                    pc.send(encode_multibulk("WAIT", 1, 0))
                    time.sleep(0.1)
                with p.resp() as pc:
                    assert pc.cmd("PING") == "PONG"
            finally:
                r.proc.send_signal(18)


def test_min_replicas_to_write():
    with Server(min_replicas_to_write=1, min_replicas_max_lag=10) as p:
        with p.resp() as pc:
            assert_err(pc.cmd("CNT.INCR", 1, 0), "NOREPLICAS")
            assert pc.cmd("CNT.GET", 1, 0) == 0
            assert pc.cmd("MULTI") == "OK"
            pc.cmd("CNT.INCR", 1, 0)
            assert_err(pc.cmd("EXEC"), "NOREPLICAS")
            with p.bin() as b:
                assert is_err(b.call("CNT.INCR", 1, 0),
                              code=E["NOREPLICAS"])
            with replica_of(p) as r:
                synced(p, r)
                wait_until(lambda: pc.cmd("CNT.INCR", 1, 0) == [1, 1] or
                           pc.cmd("CNT.GET", 1, 0) > 0,
                           what="writes accepted with a replica")
                assert info(pc)["min_slaves_good_slaves"] == "1"
            wait_until(lambda: is_err(pc.cmd("CNT.INCR", 1, 0)),
                       what="NOREPLICAS again")


def test_stale_data_refused_when_asked():
    with Server() as p:
        pass
    port = p.port
    with Server(replicaof="127.0.0.1 %d" % port,
                replica_serve_stale_data="no") as r:
        with r.resp() as rc:
            assert_err(rc.cmd("CNT.GET", 1, 0), "MASTERDOWN")
            assert rc.cmd("PING") == "PONG"
            i = info(rc)
            assert i["master_link_status"] == "down"
            assert i["master_link_down_since_seconds"] == "-1"
            assert rc.cmd("CONFIG", "SET", "replica-serve-stale-data",
                          "yes") == "OK"
            assert rc.cmd("CNT.GET", 1, 0) == 0
            assert rc.cmd("REPLICAOF", "NO", "ONE") == "OK"
            assert rc.cmd("CNT.INCR", 1, 0) == [1, 1]


def test_chained_replica_and_journal_off():
    with Server(journal="no") as p:
        with p.resp() as pc:
            seed(pc)
        with replica_of(p, journal="no") as r1:
            with replica_of(r1) as r2:
                synced(p, r1)
                synced(r1, r2)
                with p.resp() as pc:
                    pc.cmd("CNT.INCR", 5, 4, 4)
                synced(p, r1)
                synced(r1, r2)
                with p.resp() as pc, r2.resp() as c2:
                    assert state(c2) == state(pc)
                    assert info(c2)["master_replid"] == \
                        info(pc)["master_replid"]


def test_expiry_comes_from_the_primary():
    day = 86400
    with Server(enable_debug_command="yes", inactive_days=1) as p:
        with replica_of(p, enable_debug_command="yes",
                        inactive_days=1) as r:
            with p.resp() as pc:
                pc.cmd("BC.UNREAD", 1, 1)
                pc.cmd("DOT.CLICK", 1, 1, 5)
            synced(p, r)
            with r.resp() as rc:
                # The replica's own clock moving changes nothing there.
                rc.cmd("DEBUG", "ADVANCE-CLOCK", 3 * day)
                time.sleep(0.5)
                assert info(rc, "expiry")["expired_users"] == "0"
                assert rc.cmd("USER.STATUS", 1)[0] == b"active"
            with p.resp() as pc:
                pc.cmd("DEBUG", "ADVANCE-CLOCK", 3 * day)
                wait_until(lambda: info(pc, "expiry")["expired_users"] == "1",
                           what="expiry on the primary")
            synced(p, r)
            with p.resp() as pc, r.resp() as rc:
                assert rc.cmd("USER.STATUS", 1) == pc.cmd("USER.STATUS", 1)
                assert rc.cmd("USER.STATUS", 1)[0] == b"expired"


def test_restarted_primary_takes_a_new_history():
    d = tempfile.mkdtemp(prefix="unreadd-repl-")
    p = DataServer(d)
    with p:
        with p.resp() as pc:
            pc.cmd("CNT.INCR", 1, 0, 3)
            before = info(pc)
    with DataServer(d) as p:
        with p.resp() as pc:
            after = info(pc)
            assert after["master_replid"] != before["master_replid"]
            assert after["master_replid2"] == before["master_replid"]
            assert after["master_repl_offset"] == before["master_repl_offset"]
            assert pc.cmd("CNT.GET", 1, 0) == 3
        # Twice: the history record in the journal is read back.
        with p.resp() as pc:
            pc.cmd("CNT.INCR", 1, 0, 1)
            mid = info(pc)
    with DataServer(d) as p:
        with p.resp() as pc:
            again = info(pc)
            assert again["master_replid2"] == mid["master_replid"]
            assert int(again["master_repl_offset"]) == \
                int(mid["master_repl_offset"])


# ---- bad input ------------------------------------------------------------

def test_bad_replication_commands():
    with Server() as p:
        with p.resp() as c:
            assert_err(c.cmd("PSYNC", "nothex", 1))
            assert_err(c.cmd("PSYNC", "?", "x"))
            assert_err(c.cmd("PSYNC", "?", "-2"))
            assert_err(c.cmd("REPLCONF", "listening-port"))
            assert_err(c.cmd("REPLCONF", "listening-port", 70000))
            assert_err(c.cmd("REPLCONF", "bogus", 1))
            assert c.cmd("REPLCONF", "capa", "psync2") == "OK"
            assert_err(c.cmd("REPLICAOF", "127.0.0.1", 0))
            assert_err(c.cmd("REPLICAOF", "127.0.0.1", "x"))
            assert_err(c.cmd("REPLICAOF", "a b", 1))
            assert_err(c.cmd("WAIT", "x", 0))
            assert_err(c.cmd("WAIT", 1))
            assert c.cmd("ROLE")[0] == b"master"
        with p.bin() as b:
            assert is_err(b.call("PSYNC", "?", "-1"))
        # A fake replica: garbage after PSYNC closes its link, not the
        # server.
        with p.resp() as c:
            c.send(encode_multibulk("PSYNC", "?", "-1"))
            time.sleep(0.2)
            c.send(b"*1\r\n$-5\r\n")
            assert c.wait_closed()
        with p.resp() as c:
            assert c.cmd("PING") == "PONG"
            wait_until(lambda: info(c)["connected_slaves"] == "0",
                       what="the bad link gone")


class FakePrimary(threading.Thread):
    """Answers a replica's handshake, a full sync with a real snapshot
    (taken from a real server), then sends stream bytes of its choice."""

    def __init__(self, snapshot, replid, offset, stream):
        super().__init__(daemon=True)
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        self.snapshot, self.replid, self.offset = snapshot, replid, offset
        self.stream = stream
        self.psyncs = []

    def run(self):
        while True:
            try:
                s, _ = self.sock.accept()
            except OSError:
                return
            try:
                self.serve(s)
            except OSError:
                pass
            finally:
                s.close()

    def serve(self, s):
        f = s.makefile("rb")
        while True:
            line = f.readline()
            if not line:
                return
            n = int(line[1:])
            words = []
            for _ in range(n):
                ln = int(f.readline()[1:])
                words.append(f.read(ln + 2)[:-2].decode())
            if words[0] == "PING":
                s.sendall(b"+PONG\r\n")
            elif words[0] == "REPLCONF" and words[1] != "ACK":
                s.sendall(b"+OK\r\n")
            elif words[0] == "PSYNC":
                self.psyncs.append(words[1:])
                s.sendall(b"\n+FULLRESYNC %s %d\r\n$%d\r\n" % (
                    self.replid.encode(), self.offset, len(self.snapshot)))
                s.sendall(self.snapshot + self.stream)
                time.sleep(0.5)
                return

    def close(self):
        self.sock.close()


def test_replica_refuses_a_damaged_stream():
    # A real snapshot with its origin, from a real primary.
    with Server() as src:
        with src.resp() as c:
            c.cmd("CNT.INCR", 1, 0, 7)
            i = info(c)
            c.cmd("SAVE")
        snap = open(os.path.join(src.tmp.name, "data", "snapshot.urs"),
                    "rb").read()
        replid, offset = i["master_replid"], int(i["master_repl_offset"])
    bad = struct.pack("<QII", offset, 40, 0) + b"\0" * 48  # bad checks
    fake = FakePrimary(snap, replid, offset, bad)
    fake.start()
    try:
        with Server(replicaof="127.0.0.1 %d" % fake.port) as r:
            with r.resp() as rc:
                wait_until(lambda: rc.cmd("CNT.GET", 1, 0) == 7,
                           what="the fake primary's snapshot loaded")
                wait_until(lambda: len(fake.psyncs) >= 2,
                           what="the replica reconnecting")
                assert "bad stream" in r.stderr_text()
                assert info(rc)["master_replid"] == replid
                assert rc.cmd("DEBUG", "AUDIT") == 0
    finally:
        fake.close()
