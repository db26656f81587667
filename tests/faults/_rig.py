"""The fault rigs shared by the suites in tests/faults/ (not a suite itself:
files starting with "_" are not run).

A suite is a script tests/faults/<name>.py that runs a real server through
faults and exits non-zero when anything failed, ending its output with
"N passed, N failed" (one per trial). It reads UNREADD_BUILD (the build
dir, as the integration harness does) and FAULTS_QUICK=1, under which it
runs a few trials only: `make test` runs every suite so (tests/run.py),
`make test-faults` runs each in full.

Pieces:
  Faults        the control file of the LD_PRELOAD shim (faultfs.c): set
                rules while the server runs ("write journal. ENOSPC"),
                count what it injected, and the environment that loads it.
  Rig           a data dir the test owns, and servers started on it (killed
                and started again on the same files).
  Stream        one client pipelining CNT.INCR writes without waiting for
                replies (RESP, binary, MULTI/EXEC or binary batches),
                optionally reading them slowly through a small receive
                buffer (a congested socket), counting per key what it sent
                and what was acknowledged, and when.
  check_acked   after a restart: every acknowledged increment is there,
                nothing more than was sent.
  power_loss    what a power cut leaves of the journal: each segment cut
                back to the size it had at its last successful fdatasync.
"""

import os
import random
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
sys.dont_write_bytecode = True

import harness  # noqa: E402
from harness import (HDR, MAGIC, VERSION, Bin, ConnectionClosed, Err,  # noqa
                     Resp, Server, encode_arg, encode_frame, encode_multibulk,
                     info_dict, opcode)

QUICK = os.environ.get("FAULTS_QUICK") == "1"
SHIM = os.path.join(harness.BUILD, "faultfs.so")
CTL_MAX = 4096
BATCH_OP = 0xFF01


def trials(full, quick):
    return quick if QUICK else full


# --------------------------------------------------------------------------
# The shim's control file.


class Faults:
    """Rules for tests/faults/faultfs.c, switched while the server runs."""

    def __init__(self, tmpdir, track="journal.", sndbuf=None):
        self.ctl = os.path.join(tmpdir, "faultfs.ctl")
        self.log = os.path.join(tmpdir, "faultfs.log")
        self.synced = os.path.join(tmpdir, "faultfs.synced")
        self.track = track
        self.sndbuf = sndbuf
        self.gen = 0
        with open(self.ctl, "wb") as f:
            f.write(b"\0" * CTL_MAX)

    def env(self):
        asan = os.environ.get("ASAN_OPTIONS", "")
        asan = (asan + ":" if asan else "") + "verify_asan_link_order=0"
        env = {"LD_PRELOAD": SHIM, "FAULTFS_CTL": self.ctl,
               "FAULTFS_LOG": self.log, "FAULTFS_TRACK": self.track,
               "FAULTFS_SYNCED": self.synced, "ASAN_OPTIONS": asan}
        if self.sndbuf:
            env["FAULTFS_SNDBUF"] = str(self.sndbuf)
        return env

    def set(self, *rules):
        """Replaces the rules ("<op> <path-substring> <errno> [count=N]
        [skip=N] [partial] [lose]"); none: no fault."""
        self.gen += 1
        text = "%d\n%s%send %d\n" % (self.gen, "\n".join(rules),
                                     "\n" if rules else "", self.gen)
        data = text.encode()
        assert len(data) < CTL_MAX
        with open(self.ctl, "r+b") as f:
            f.write(data + b"\0" * (CTL_MAX - len(data)))

    def clear(self):
        self.set()

    def injected(self, what=None):
        """Faults injected so far (lines of the shim's log), optionally
        only those of one call ("write", "fdatasync", ...)."""
        try:
            with open(self.log) as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return 0
        if what is None:
            return len(lines)
        return sum(1 for ln in lines if ln.split(" ")[1:2] == [what])

    def synced_sizes(self):
        """path -> size at its last successful fdatasync."""
        out = {}
        try:
            with open(self.synced) as f:
                for line in f:
                    path, _, size = line.rstrip("\n").rpartition(" ")
                    if path:
                        out[path] = int(size)
        except FileNotFoundError:
            pass
        return out


# --------------------------------------------------------------------------
# Servers on a data dir the test owns.


class DirServer(Server):
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

    def info(self, section=None):
        with self.resp() as c:
            text = c.cmd("INFO", section) if section else c.cmd("INFO")
        flat = {}
        for sec in info_dict(text).values():
            flat.update(sec)
        return flat


class Rig:
    """A scratch data dir, the shim's control file, and the servers
    started on them (the shim is loaded when shim=True)."""

    def __init__(self, shim=True, sndbuf=None):
        self.tmp = tempfile.TemporaryDirectory(prefix="unreadd-faults-")
        self.path = os.path.join(self.tmp.name, "data")
        self.faults = Faults(self.tmp.name, sndbuf=sndbuf) if shim else None
        self.servers = []

    def start(self, **config):
        env = self.faults.env() if self.faults else None
        srv = DirServer(self.path, env=env, **config)
        self.servers.append(srv)
        return srv.start()

    def logs(self):
        return "\n".join(s.stderr_text() for s in self.servers)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for srv in self.servers:
            srv.done()
        self.tmp.cleanup()
        return False


def power_loss(rig):
    """After a kill -9: cuts every journal segment back to the size it had
    at its last successful fdatasync (the shim recorded it), as a power cut
    would; a segment never synced is removed. Returns the bytes cut."""
    synced = rig.faults.synced_sizes()
    cut = 0
    for name in os.listdir(rig.path):
        if not name.startswith("journal."):
            continue
        path = os.path.join(rig.path, name)
        size = os.path.getsize(path)
        keep = synced.get(os.path.realpath(path), synced.get(path))
        if keep is None:
            os.unlink(path)
            cut += size
        elif keep < size:
            os.truncate(path, keep)
            cut += size - keep
    return cut


# --------------------------------------------------------------------------
# Writers.


def encode_batch(rid, cmds):
    body = b""
    for c in cmds:
        body += struct.pack("<HH", opcode(c[0]), len(c) - 1)
        body += b"".join(encode_arg(a) for a in c[1:])
    return HDR.pack(MAGIC, VERSION, BATCH_OP, rid, len(body), len(cmds),
                    0) + body


class SlowMixin:
    """Reads through a small receive buffer, pausing before each read."""

    delay = 0.0
    chunk = 65536

    def _fill(self):
        if self.delay:
            time.sleep(self.delay)
        try:
            data = self.sock.recv(self.chunk)
        except ConnectionResetError:
            data = b""
        if not data:
            raise ConnectionClosed("server closed the connection")
        self.buf += data


class SlowResp(SlowMixin, Resp):
    pass


class SlowBin(SlowMixin, Bin):
    pass


def connect(port, cls, rcvbuf=None, delay=0.0, timeout=20):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.settimeout(timeout)
    s.connect(("127.0.0.1", port))
    c = cls.__new__(cls)
    c.sock = s
    c.buf = bytearray()
    c.next_id = 1
    c.delay = delay
    c.chunk = min(rcvbuf or 65536, 65536)
    return c


KINDS = ("resp", "bin", "multi", "batch")


def is_misconf(r):
    return isinstance(r, Err) and (r.text.startswith("MISCONF") or
                                   r.code == harness.E["MISCONF"])


class Stream:
    """One connection pipelining CNT.INCR on its own keys (uid base..base+
    keys-1, types 0..3) as `kind` units: a single command (resp, bin), a
    MULTI/EXEC block or a binary batch of 2..6 commands. A sender thread
    writes units ahead without waiting; the reader takes their replies in
    order, slowly when delay/rcvbuf make it a congested client.

    sent[key]   increments sent (applied or not: replies unread)
    acked[key]  increments acknowledged with success
    acks        (time, key) of each acknowledgement, when times=True
    refused     units answered -MISCONF
    unexpected  other error replies (a failure of the trial)
    """

    def __init__(self, port, kind, base, seed, rcvbuf=None, delay=0.0,
                 keys=50, times=False, window=4000):
        self.port, self.kind, self.base = port, kind, base
        self.rnd = random.Random(seed)
        self.rcvbuf, self.delay, self.keys = rcvbuf, delay, keys
        self.times = times
        self.sent, self.acked, self.acks = {}, {}, []
        self.refused = 0
        self.unexpected = []
        self.units = []  # (keys, rid) in send order; the reader's queue
        self.cv = threading.Condition()
        self.window = window  # units sent and not yet answered, at most
        self.stop = False
        self.closed = False
        self.c = None
        self.sender = threading.Thread(target=self._send, daemon=True)
        self.reader = threading.Thread(target=self._read, daemon=True)

    def start(self):
        cls = SlowBin if self.kind in ("bin", "batch") else SlowResp
        self.c = connect(self.port, cls, self.rcvbuf, self.delay)
        self.sender.start()
        self.reader.start()
        return self

    def _unit(self):
        n = 1 if self.kind in ("resp", "bin") else self.rnd.randint(2, 6)
        keys = [(self.base + self.rnd.randrange(self.keys),
                 self.rnd.randrange(4)) for _ in range(n)]
        cmds = [("CNT.INCR", u, t) for u, t in keys]
        rid = 0
        if self.kind == "resp":
            data = encode_multibulk(*cmds[0])
        elif self.kind == "multi":
            data = encode_multibulk("MULTI") + b"".join(
                encode_multibulk(*c) for c in cmds) + encode_multibulk("EXEC")
        else:
            rid = self.c.alloc_id()
            if self.kind == "bin":
                data = encode_frame(cmds[0][0], rid, *cmds[0][1:])
            else:
                data = encode_batch(rid, cmds)
        return keys, rid, data

    def _send(self):
        try:
            while not self.stop:
                out = []
                with self.cv:
                    while len(self.units) >= self.window and not self.stop \
                            and not self.closed:
                        self.cv.wait(0.1)
                    if self.stop or self.closed:
                        break
                    for _ in range(32):
                        keys, rid, data = self._unit()
                        for k in keys:
                            self.sent[k] = self.sent.get(k, 0) + 1
                        self.units.append((keys, rid))
                        out.append(data)
                    self.cv.notify_all()
                self.c.sock.sendall(b"".join(out))
        except OSError:
            pass

    def _reply(self, keys, rid):
        """The unit's reply: a list of per-command results, or an Err."""
        c = self.c
        if self.kind in ("resp", "bin"):
            r = c.read_reply() if self.kind == "resp" else c.reply(rid)
            return r if isinstance(r, Err) else [r]
        if self.kind == "batch":
            return c.reply(rid)
        first = c.read_reply()  # MULTI
        if isinstance(first, Err):
            return first
        queued = [c.read_reply() for _ in keys]
        r = c.read_reply()  # EXEC
        for q in queued:
            if isinstance(q, Err) and not isinstance(r, Err):
                return q
        return r

    def _read(self):
        try:
            while True:
                with self.cv:
                    while not self.units and not self.stop:
                        self.cv.wait(0.1)
                    if not self.units:
                        break
                    keys, rid = self.units[0]
                r = self._reply(keys, rid)
                now = time.monotonic()
                with self.cv:
                    self.units.pop(0)
                    self.cv.notify_all()
                if isinstance(r, Err):
                    if is_misconf(r):
                        self.refused += 1
                    else:
                        self.unexpected.append(r.text)
                    continue
                assert isinstance(r, list) and len(r) == len(keys), r
                for k, v in zip(keys, r):
                    if isinstance(v, Err):
                        self.unexpected.append("%s: %s" % (self.kind, v.text))
                        continue
                    self.acked[k] = self.acked.get(k, 0) + 1
                    if self.times:
                        self.acks.append((now, k))
        except (ConnectionClosed, OSError):
            pass
        except Exception:
            self.unexpected.append(traceback.format_exc())
        finally:
            with self.cv:
                self.closed = True
                self.cv.notify_all()

    def halt(self, timeout=20):
        """Stops sending and waits for the replies of what was sent (or the
        connection's end)."""
        with self.cv:
            self.stop = True
            self.cv.notify_all()
        self.sender.join(timeout)
        self.reader.join(timeout)
        self.close()

    def close(self):
        if self.c is not None:
            self.c.close()

    def join_dead(self, timeout=20):
        """After the server died: collects both threads."""
        self.stop = True
        self.sender.join(timeout)
        self.reader.join(timeout)
        self.close()


def merge(streams):
    sent, acked = {}, {}
    for s in streams:
        for k, v in s.sent.items():
            sent[k] = sent.get(k, 0) + v
        for k, v in s.acked.items():
            acked[k] = acked.get(k, 0) + v
    return sent, acked


def check_acked(srv, sent, acked, floor=None):
    """Every key holds at least what was acknowledged (or floor[key] when
    given: the acknowledgements a power loss may not take) and at most what
    was sent. Returns the number of acknowledged increments checked."""
    floor = acked if floor is None else floor
    keys = sorted(sent)
    got = []
    with srv.resp(timeout=60) as c:
        for i in range(0, len(keys), 5000):
            part = keys[i:i + 5000]
            got += c.pipeline([("CNT.GET", u, t) for u, t in part])
    bad = [(k, v, floor.get(k, 0), sent[k]) for k, v in zip(keys, got)
           if not floor.get(k, 0) <= v <= sent[k]]
    assert not bad, "acknowledged writes lost (key, value, acked, sent): %r" % (
        bad[:5],)
    return sum(floor.values())


# --------------------------------------------------------------------------
# Running a suite.


def run_suite(name, trial_fns, epilogue=None):
    """trial_fns: [(label, fn), ...]. Each fn runs one trial and raises on
    failure (or returns a note for its line). Prints one line per trial,
    epilogue() if given, and ends with "N passed, N failed"; returns the
    exit status."""
    passed = failed = 0
    t0 = time.monotonic()
    for label, fn in trial_fns:
        t = time.monotonic()
        try:
            note = fn()
            passed += 1
            print("ok   %s %s (%.2fs)%s" % (name, label, time.monotonic() - t,
                                            " " + note if note else ""),
                  flush=True)
        except Exception:
            failed += 1
            print("FAIL %s %s (%.2fs)" % (name, label, time.monotonic() - t),
                  flush=True)
            print("    " + traceback.format_exc().replace("\n", "\n    "),
                  flush=True)
    if epilogue is not None:
        print(epilogue(), flush=True)
    print("%s: %.1fs" % (name, time.monotonic() - t0), flush=True)
    print("%d passed, %d failed" % (passed, failed), flush=True)
    return 1 if failed else 0
