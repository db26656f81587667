"""Persistence (docs/PERSISTENCE.md) with a real server, real files
and real signals: round trips through snapshot only, journal only and both;
kill -9 under write load with journal-fsync always (every acknowledged write
survives), also during a background save, and with everysec; the everysec
fsync thread; SIGTERM under load; damaged files
(torn tail, flipped byte, truncated snapshot, wrong version, a directory in
place of a file) and the repair tool; a full disk (RLIMIT_FSIZE set on the
running server with prlimit) during journal writes and during saves.
"""

import os
import random
import re
import resource
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from harness import (OPS, UNREADD, Server, assert_err, encode_multibulk,
                     info_dict, is_err)

SNAPSHOT = "snapshot.urs"


class DataServer(Server):
    """A server on a data dir the test owns, so it can be killed and
    started again on the same files."""

    def __init__(self, datadir, **config):
        config.setdefault("save_seconds", 0)
        super().__init__(check_exit=False, **config)
        self.datadir = datadir

    def argv(self):
        argv = super().argv()
        argv[argv.index("--dir") + 1] = self.datadir
        return argv

    def kill9(self):
        return self.stop(signal.SIGKILL)

    def done(self):
        if self.alive():
            self.stop(signal.SIGKILL)
        self._stderr_copy = self.stderr_text()
        self.tmp.cleanup()


class Dir:
    """A scratch data dir and the servers started on it."""

    def __init__(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="unreadd-persist-")
        self.path = os.path.join(self.tmp.name, "data")
        self.servers = []

    def start(self, **config):
        srv = DataServer(self.path, **config)
        self.servers.append(srv)
        return srv.start()

    def start_fails(self, **config):
        """Starts a server that must refuse to start; returns its stderr."""
        argv = [UNREADD, "--port", "1", "--dir", self.path]
        for k, v in config.items():
            argv += ["--" + k.replace("_", "-"), str(v)]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=20)
        assert p.returncode != 0, "unreadd started:\n" + p.stderr
        return p.stderr

    def file(self, name):
        return os.path.join(self.path, name)

    def segments(self):
        return sorted(int(n.split(".")[1]) for n in os.listdir(self.path)
                      if re.fullmatch(r"journal\.\d+", n))

    def last_segment(self):
        return self.file("journal.%d" % self.segments()[-1])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for srv in self.servers:
            srv.done()
        self.tmp.cleanup()
        return False


def check_tool(*args):
    return subprocess.run([UNREADD, "--check"] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=60)


def persistence_info(srv):
    with srv.resp() as c:
        return info_dict(c.cmd("INFO", "persistence"))["persistence"]


# -- state helpers

def write_state(srv, seed, users=300, model=None):
    """A deterministic mix of CNT writes over both protocols on uids
    0..users-1, applied to model ({uid: {type: value}}, the state before;
    empty when None); returns the model after."""
    rnd = random.Random(seed)
    model = {} if model is None else model
    with srv.resp() as c, srv.bin() as b:
        cmds = []
        for _ in range(users * 4):
            uid, t = rnd.randrange(users), rnd.randrange(8)
            v = rnd.choice([1, 5, 300, 70000, 4294967295])
            kind = rnd.randrange(3)
            cur = model.setdefault(uid, {})
            if kind == 0:
                cmds.append(("CNT.SET", uid, t, v))
                cur[t] = v
            elif kind == 1:
                cmds.append(("CNT.INCR", uid, t, 3))
                cur[t] = min(cur.get(t, 0) + 3, 4294967295)
            else:
                cmds.append(("CNT.CLEAR", uid, t))
                cur.pop(t, None)
        half = len(cmds) // 2
        for r in c.pipeline(cmds[:half]):
            assert not is_err(r), r
        for r in b.pipeline(cmds[half:]):
            assert not is_err(r), r
    return model


def read_state(srv, uids):
    with srv.resp() as c:
        return dict(zip(uids, c.pipeline([("CNT.GETALL", u) for u in uids])))


def assert_state(srv, model):
    expected = {uid: [x for t in sorted(tv) if tv[t] for x in (t, tv[t])]
                for uid, tv in model.items()}
    got = read_state(srv, sorted(expected))
    bad = {u: (got[u], expected[u]) for u in expected if got[u] != expected[u]}
    assert not bad, "state differs (got, want): %r" % dict(list(bad.items())[:5])
    with srv.resp() as c:
        assert c.cmd("DEBUG", "AUDIT") == 0


# -- round trips

def test_round_trip_snapshot_only():
    with Dir() as d:
        srv = d.start(journal="no")
        want = write_state(srv, 1)
        assert srv.stop() == 0  # SIGTERM: final snapshot
        assert os.path.exists(d.file(SNAPSHOT))
        assert d.segments() == []
        srv = d.start(journal="no")
        assert_state(srv, want)
        info = persistence_info(srv)
        assert info["journal_enabled"] == "0"
        assert info["loaded_journal_records"] == "0"
        with srv.resp() as c:
            assert c.cmd("SAVE") == "OK"
            assert abs(c.cmd("LASTSAVE") - time.time()) < 5


def test_round_trip_journal_only():
    with Dir() as d:
        for fsync in ("always", "everysec", "no"):
            srv = d.start(journal_fsync=fsync)
            want = write_state(srv, 2)
            srv.kill9()  # no snapshot at all
            assert not os.path.exists(d.file(SNAPSHOT))
            srv = d.start()
            assert_state(srv, want)
            info = persistence_info(srv)
            assert int(info["loaded_journal_records"]) >= 1200
            srv.kill9()
            shutil.rmtree(d.path)


def test_round_trip_snapshot_and_journal():
    with Dir() as d:
        srv = d.start()
        first = write_state(srv, 3)
        with srv.resp() as c:
            assert c.cmd("BGSAVE") == "Background saving started"
            srv.wait_for(lambda: persistence_info(srv)["bgsave_in_progress"]
                         == "0", what="bgsave")
            info = persistence_info(srv)
            assert info["last_save_status"] == "ok"
            assert info["changes_since_last_save"] == "0"
        assert os.path.exists(d.file(SNAPSHOT))
        both = write_state(srv, 4, users=200, model=first)
        srv.kill9()
        srv = d.start()
        assert_state(srv, both)
        info = persistence_info(srv)
        assert info["loaded_journal_records"] == "800", info
        # The check tool agrees with the server about both files.
        p = check_tool(d.file(SNAPSHOT))
        assert p.returncode == 0 and "OK" in p.stdout, p.stdout
        assert "cnt" in p.stdout
        p = check_tool(d.last_segment())
        assert p.returncode == 0 and "800 sound records" in p.stdout, p.stdout


def test_replay_keeps_the_clock():
    """A default timestamp is the server clock at execution; replay pins the
    clock to the recorded one, so the value after a restart is exact."""
    if "DOT.PUSH" not in OPS:
        return
    with Dir() as d:
        srv = d.start()
        with srv.resp() as c:
            pushed = c.cmd("DOT.PUSH", 77)
        time.sleep(0.05)
        srv.kill9()
        srv = d.start()
        with srv.resp() as c:
            assert c.cmd("DOT.PUSH", 77, 1) == pushed


# -- kill -9 under load

class Writer(threading.Thread):
    """Pipelined CNT.INCR of its own keys, counting what it sent and what
    was acknowledged, until the connection dies or stop is set."""

    def __init__(self, srv, base, sent, acked):
        super().__init__(daemon=True)
        self.srv, self.base, self.sent, self.acked = srv, base, sent, acked
        self.stop = False
        self.rnd = random.Random(base)

    def run(self):
        try:
            c = self.srv.resp(timeout=10)
        except OSError:
            return
        try:
            while not self.stop:
                keys = [(self.base + self.rnd.randrange(100),
                         self.rnd.randrange(3)) for _ in range(50)]
                for k in keys:
                    self.sent[k] = self.sent.get(k, 0) + 1
                replies = c.pipeline([("CNT.INCR", u, t) for u, t in keys])
                for k, r in zip(keys, replies):
                    assert not is_err(r), r
                    self.acked[k] = self.acked.get(k, 0) + 1
        except Exception:
            pass  # the server was killed under us
        finally:
            c.close()


def check_acknowledged(srv, sent, acked):
    keys = sorted(sent)
    with srv.resp() as c:
        got = c.pipeline([("CNT.GET", u, t) for u, t in keys])
    lost = [(k, v, acked.get(k, 0)) for k, v in zip(keys, got)
            if not acked.get(k, 0) <= v <= sent[k]]
    assert not lost, "acknowledged writes lost (key, value, acked): %r" % \
        lost[:5]
    return sum(acked.values())


def preload(srv, users):
    """users CNT.SET in one pipeline, replies counted, not parsed."""
    c = srv.resp()
    c.send(b"".join(encode_multibulk("CNT.SET", 10 ** 6 + u, 4, u + 1)
                    for u in range(users)))
    seen = 0
    while seen < users:
        seen += c.sock.recv(1 << 20).count(b"*")
    c.close()


def kill_during_bgsave(srv):
    """BGSAVE, and kill -9 while INFO still shows it running. True when the
    kill landed during the save."""
    with srv.resp() as c:
        for _ in range(5):
            assert c.cmd("BGSAVE") == "Background saving started"
            info = info_dict(c.cmd("INFO", "persistence"))["persistence"]
            if info["bgsave_in_progress"] == "1":
                srv.kill9()
                return True
    srv.kill9()
    return False


def test_kill9_under_load_loses_no_acknowledged_write():
    """Four kills at random moments under pipelined writes with
    journal-fsync always, two of them while a background save of 200k
    users runs; each restart must hold every acknowledged increment."""
    rnd = random.Random()
    sent, acked = {}, {}
    during = 0
    with Dir() as d:
        srv = d.start(journal_fsync="always")
        preload(srv, 200000)
        for rnd_round in range(4):
            writers = [Writer(srv, 1000 * (i + 1), sent, acked)
                       for i in range(2)]
            for w in writers:
                w.start()
            time.sleep(rnd.uniform(0.1, 0.5))
            if rnd_round % 2 == 1:
                during += kill_during_bgsave(srv)
            else:
                srv.kill9()
            for w in writers:
                w.join(10)
            srv = d.start(journal_fsync="always")
            total = check_acknowledged(srv, sent, acked)
            assert total > 0
            with srv.resp() as c:
                assert c.cmd("CNT.GET", 10 ** 6 + 199999, 4) == 200000
        srv.kill9()
        assert sum(acked.values()) > 500
        assert during >= 1, "no kill landed during a background save"


test_kill9_under_load_loses_no_acknowledged_write.timeout = 60


# -- everysec: the fsync thread

def bgsync_threads(srv):
    """The server's threads named bgsync (persistence/bgsync.c)."""
    task = "/proc/%d/task" % srv.proc.pid
    names = []
    for tid in os.listdir(task):
        with open(os.path.join(task, tid, "comm")) as f:
            names.append(f.read().strip())
    return names.count("bgsync")


def test_everysec_fsync_runs_in_a_thread():
    """journal-fsync everysec fdatasyncs from a second thread (always and no
    have none). Under write load INFO shows its fdatasyncs moving, the last
    one never much older than a second (what a power loss can take,
    docs/PERSISTENCE.md section 4), and SIGTERM with the thread busy exits
    0 and loses nothing."""
    sent, acked = {}, {}
    with Dir() as d:
        for config in ({"journal_fsync": "always"}, {"journal_fsync": "no"},
                       {"journal": "no"}):
            srv = d.start(**config)
            assert bgsync_threads(srv) == 0, config
            srv.kill9()
        srv = d.start(journal_fsync="everysec")
        assert bgsync_threads(srv) == 1
        writers = [Writer(srv, 7000 * (i + 1), sent, acked) for i in range(2)]
        for w in writers:
            w.start()
        time.sleep(1.5)  # a load that lasts: the window sampled below
        samples = []
        for _ in range(25):
            samples.append((time.time() * 1000, persistence_info(srv)))
            time.sleep(0.1)
        fsyncs = [int(i["journal_fsyncs"]) for _, i in samples]
        assert fsyncs[-1] >= fsyncs[0] + 1, fsyncs
        stale = max(now - int(i["last_fsync_time_ms"]) for now, i in samples)
        assert stale < 2500, "no fdatasync for %d ms under load" % stale
        assert {i["journal_fsync_in_progress"] for _, i in samples} <= {"0", "1"}
        assert int(samples[-1][1]["journal_last_fsync_us"]) > 0
        assert int(samples[-1][1]["journal_fsync_delayed"]) >= 0
        assert samples[-1][1]["journal_status"] == "ok"
        assert srv.stop() == 0
        for w in writers:
            w.join(10)
        srv = d.start()
        assert check_acknowledged(srv, sent, acked) > 0
        srv.kill9()


test_everysec_fsync_runs_in_a_thread.timeout = 60


def test_kill9_under_everysec_loses_no_acknowledged_write():
    """Under everysec a reply still waits for its record's write(), and the
    page cache outlives the process: a kill -9, with the thread's
    fdatasync in flight or not, loses no acknowledged write at all (only a
    power loss can take the last ~1 s, which no test here can cause).
    Three kills at random moments, each after at least one fdatasync under
    the load."""
    rnd = random.Random()
    sent, acked = {}, {}

    def fsyncs():
        return int(persistence_info(srv)["journal_fsyncs"])

    with Dir() as d:
        srv = d.start()
        for _ in range(3):
            writers = [Writer(srv, 9000 * (i + 1), sent, acked)
                       for i in range(2)]
            before = fsyncs()
            for w in writers:
                w.start()
            srv.wait_for(lambda: fsyncs() > before, 10, "an fdatasync")
            time.sleep(rnd.uniform(0, 1.0))
            srv.kill9()
            for w in writers:
                w.join(10)
            srv = d.start()
            assert check_acknowledged(srv, sent, acked) > 0
        srv.kill9()


test_kill9_under_everysec_loses_no_acknowledged_write.timeout = 60


def test_sigterm_under_load_writes_a_final_snapshot():
    sent, acked = {}, {}
    with Dir() as d:
        srv = d.start()
        writers = [Writer(srv, 5000 * (i + 1), sent, acked) for i in range(2)]
        for w in writers:
            w.start()
        # under load: both writers acknowledged (awaited, however slowly
        # the machine started them)
        srv.wait_for(lambda: {u // 5000 for u, _ in list(acked)} == {1, 2},
                     10, "both writers' first acknowledgements")
        assert srv.stop() == 0
        for w in writers:
            w.join(10)
        assert os.path.exists(d.file(SNAPSHOT))
        assert "snapshot saved" in srv.stderr_text()
        srv = d.start()
        check_acknowledged(srv, sent, acked)
        info = persistence_info(srv)
        assert info["loaded_journal_records"] == "0", info


def test_shutdown_command():
    with Dir() as d:
        srv = d.start()
        want = write_state(srv, 5, users=50)
        with srv.resp() as c:
            assert_err(c.cmd("SHUTDOWN", "LATER"))
            assert c.cmd("SHUTDOWN", "NOSAVE") == "OK"
            assert c.wait_closed()
        srv.proc.wait(10)
        assert srv.stop() == 0
        assert not os.path.exists(d.file(SNAPSHOT))
        srv = d.start()
        assert_state(srv, want)
        with srv.bin() as b:
            assert b.call("SHUTDOWN") == "OK"
        srv.proc.wait(10)
        assert srv.stop() == 0
        assert os.path.exists(d.file(SNAPSHOT)) and d.segments() == []
        srv = d.start()
        assert_state(srv, want)


def test_save_seconds_trigger_and_info():
    with Dir() as d:
        srv = d.start(save_seconds=1)
        info = persistence_info(srv)
        for key in ("changes_since_last_save", "bgsave_in_progress",
                    "last_save_time", "last_save_status",
                    "last_save_duration_ms", "last_save_bytes",
                    "journal_fsync", "journal_status", "journal_bytes",
                    "last_fsync_time_ms"):
            assert key in info, key
        assert info["journal_fsync"] == "everysec"
        with srv.resp() as c:
            assert c.cmd("LASTSAVE") == 0
            assert c.cmd("CONFIG", "GET", "journal*") == [
                b"journal", b"yes", b"journal-fsync", b"everysec"]
            c.cmd("CNT.INCR", 1, 1)
        srv.wait_for(lambda: os.path.exists(d.file(SNAPSHOT)), 5,
                     "the automatic snapshot")
        srv.wait_for(lambda: persistence_info(srv)["changes_since_last_save"]
                     == "0", 5, "changes to be saved")
        info = persistence_info(srv)
        assert int(info["last_fsync_time_ms"]) > 0
        with srv.resp() as c:
            assert c.cmd("LASTSAVE") > 0


# -- damaged files

def make_data(d, users=400):
    """A snapshot plus a journal segment; returns the full state."""
    srv = d.start()
    first = write_state(srv, 6, users)
    with srv.resp() as c:
        assert c.cmd("SAVE") == "OK"
    both = write_state(srv, 7, users // 2, model=first)
    srv.kill9()
    return both


def test_torn_journal_tail_is_cut_with_a_warning():
    with Dir() as d:
        want = make_data(d)
        seg = d.last_segment()
        good = os.path.getsize(seg)
        with open(seg, "ab") as f:
            f.write(b"\x40\x00\x00\x00\x01\x02\x03")  # half a record
        srv = d.start()
        assert_state(srv, want)
        assert "torn last record" in srv.stderr_text()
        assert os.path.getsize(seg) == good
        srv.kill9()


def test_flipped_journal_byte_refuses_then_check_fix_repairs():
    """A flipped byte in the middle is damage, not a torn tail: the server
    refuses to start, --fix refuses to cut (it would remove sound records),
    and only --drop-damaged cuts, keeping what it removes in a side file."""
    with Dir() as d:
        make_data(d)
        seg = d.last_segment()
        size = os.path.getsize(seg)
        with open(seg, "r+b") as f:
            f.seek(size // 2)
            byte = f.read(1)
            f.seek(size // 2)
            f.write(bytes([byte[0] ^ 0x5A]))
        with open(seg, "rb") as f:
            damaged = f.read()
        err = d.start_fails()
        assert seg in err and "offset" in err and "--check" in err, err
        assert "--drop-damaged" in err and "sound records" in err, err
        p = check_tool(seg)
        assert p.returncode == 1, p.stdout
        m = re.search(r"DAMAGED at offset (\d+)", p.stdout)
        assert m and int(m.group(1)) <= size // 2, p.stdout
        cut = int(m.group(1))
        assert "offset %d" % cut in err, err  # the server names the same place
        p = check_tool(seg, "--fix")
        assert p.returncode == 1 and "REFUSED" in p.stdout, p.stdout
        with open(seg, "rb") as f:
            assert f.read() == damaged  # --fix changed nothing
        p = check_tool(seg, "--drop-damaged")
        assert p.returncode == 0 and "FIXED" in p.stdout, p.stdout
        assert os.path.getsize(seg) == cut
        side = [n for n in os.listdir(d.path)
                if n.startswith(os.path.basename(seg) + ".removed-")]
        assert len(side) == 1, os.listdir(d.path)
        with open(d.file(side[0]), "rb") as f:
            assert f.read() == damaged[cut:]
        srv = d.start()  # what is left before the cut loads
        srv.kill9()


def snapshot_of(d):
    make_data(d)
    with open(d.file(SNAPSHOT), "rb") as f:
        return f.read()


def test_damaged_snapshot_refuses_to_start():
    rnd = random.Random()
    with Dir() as d:
        data = snapshot_of(d)
        path = d.file(SNAPSHOT)
        # flipped byte in the middle
        mid = len(data) // 2
        with open(path, "wb") as f:
            f.write(data[:mid] + bytes([data[mid] ^ 1]) + data[mid + 1:])
        err = d.start_fails()
        assert path in err and "offset" in err and "--check" in err, err
        assert check_tool(path).returncode == 1
        # truncated at random offsets
        for cut in [0, 39, len(data) - 1] + [rnd.randrange(len(data))
                                             for _ in range(4)]:
            with open(path, "wb") as f:
                f.write(data[:cut])
            err = d.start_fails()
            assert path in err and "offset" in err, (cut, err)
        # wrong version
        with open(path, "wb") as f:
            f.write(data[:8] + b"\x09\x00\x00\x00" + data[12:])
        err = d.start_fails()
        assert "unknown format version 9" in err, err
        with open(path, "wb") as f:
            f.write(data)
        srv = d.start()
        srv.kill9()


def test_unreadable_file_refuses_to_start():
    """Root reads any file whatever its mode, so the unreadable file is a
    directory standing where a file should be (EISDIR); chmod 000 is used
    too when not root."""
    with Dir() as d:
        want = make_data(d)
        path = d.file(SNAPSHOT)
        os.rename(path, path + ".real")
        os.mkdir(path)
        err = d.start_fails()
        assert "cannot read" in err and "Is a directory" in err, err
        os.rmdir(path)
        os.rename(path + ".real", path)
        seg = d.last_segment()
        os.rename(seg, seg + ".real")
        os.mkdir(seg)
        err = d.start_fails()
        assert "cannot read" in err and seg in err, err
        os.rmdir(seg)
        os.rename(seg + ".real", seg)
        if os.geteuid() != 0:
            os.chmod(path, 0)
            err = d.start_fails()
            assert "Permission denied" in err, err
            os.chmod(path, 0o644)
        srv = d.start()
        assert_state(srv, want)
        srv.kill9()


def test_missing_or_empty_dir_starts_empty():
    with Dir() as d:
        srv = d.start()  # d.path does not exist yet
        with srv.resp() as c:
            assert c.cmd("CNT.GETALL", 1) == []
        srv.kill9()
        shutil.rmtree(d.path)
        os.makedirs(d.path)
        srv = d.start()
        with srv.resp() as c:
            assert c.cmd("CNT.TOTAL", 1) == 0
        srv.kill9()


def test_missing_segment_refuses_to_start():
    with Dir() as d:
        srv = d.start()
        write_state(srv, 8, 50)
        srv.kill9()
        srv = d.start()
        write_state(srv, 9, 50)
        srv.kill9()
        assert d.segments() == [1, 2]
        os.unlink(d.file("journal.1"))
        err = d.start_fails()
        assert "journal.1 is missing" in err, err


def test_second_server_on_the_same_dir_is_refused():
    with Dir() as d:
        srv = d.start()
        err = d.start_fails()
        assert "cannot lock" in err, err
        srv.kill9()


# -- a full disk

def set_fsize(srv, limit):
    resource.prlimit(srv.proc.pid, resource.RLIMIT_FSIZE,
                     (limit, resource.RLIM_INFINITY))


def test_disk_full_during_journal_writes():
    with Dir() as d:
        srv = d.start()
        with srv.resp() as c:
            c.cmd("CNT.INCR", 1, 1)
        srv.wait_for(lambda: os.path.getsize(d.last_segment()) > 24)
        set_fsize(srv, os.path.getsize(d.last_segment()))
        held = srv.resp()
        held.send(b"CNT.INCR 1 1 10\r\n")
        # Its reply waits for the journal; other writes are refused, reads
        # are served.
        with srv.resp() as c:
            srv.wait_for(lambda: persistence_info(srv)["journal_status"]
                         == "broken", what="journal broken")
            assert_err(c.cmd("CNT.INCR", 2, 1), "MISCONF")
            assert c.cmd("CNT.GET", 1, 1) == 11
        assert held.read_available(0.3) == b""
        set_fsize(srv, resource.RLIM_INFINITY)
        assert held.read_reply() == [11, 11]
        held.close()
        with srv.resp() as c:
            srv.wait_for(lambda: persistence_info(srv)["journal_status"]
                         == "ok", what="journal ok")
            assert c.cmd("CNT.INCR", 2, 1) == [1, 1]
        assert "MISCONF" not in srv.stderr_text()
        assert "journal" in srv.stderr_text()
        srv.kill9()
        srv = d.start()
        assert read_state(srv, [1, 2]) == {1: [1, 11], 2: [1, 1]}
        srv.kill9()


def test_disk_full_during_save():
    with Dir() as d:
        srv = d.start()
        want = write_state(srv, 10, 2000)
        set_fsize(srv, 1000)  # below the snapshot's size
        with srv.resp() as c:
            r = c.cmd("SAVE")
            assert_err(r)
            assert "File too large" in r.text, r
            assert c.cmd("BGSAVE") == "Background saving started"
            srv.wait_for(lambda: persistence_info(srv)["bgsave_in_progress"]
                         == "0", what="bgsave to end")
            info = persistence_info(srv)
            assert info["last_save_status"] == "err", info
            assert not os.path.exists(d.file(SNAPSHOT))
            assert not [n for n in os.listdir(d.path) if "tmp" in n]
            set_fsize(srv, resource.RLIM_INFINITY)
            assert c.cmd("BGSAVE") == "Background saving started"
            srv.wait_for(lambda: persistence_info(srv)["last_save_status"]
                         == "ok", what="bgsave to succeed")
        assert "background save" in srv.stderr_text()
        srv.kill9()
        srv = d.start()
        assert_state(srv, want)
        srv.kill9()
