"""Integration-test harness: a real unreadd on a free port, real clients.

Server       context manager: starts build/unreadd (or $UNREADD_BUILD/unreadd)
             with a temp --dir on a free port (through $UNREADD_WRAPPER when
             set, e.g. "valgrind --error-exitcode=99": make valgrind),
             waits until the port accepts,
             and on exit sends SIGTERM, waits, and asserts exit status 0 and
             no sanitizer report in its stderr.
Resp         RESP2 client: multibulk requests, inline lines, raw bytes;
             replies parsed into Python values (see below).
Bin          binary-protocol client (docs/PROTOCOL.md, protocol/frame.h):
             frames encoded and decoded here, independently of protocol/*.c,
             with request-id checks.
run_cli      runs build/unread-cli; run_redis_cli runs redis-cli.

Reply values, both protocols:
    integer -> int          bulk/string -> bytes      nil -> None
    status  -> Status (str) array -> list             error -> Err

The opcode table and the error codes are read from protocol/ops.def and
protocol/proto.h, so the tests follow the one table.

Python 3 standard library only.
"""

import os
import re
import shlex
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(REPO, os.environ.get("UNREADD_BUILD", "build"))
# Sanitizer builds (make asan/ubsan) pay per-allocation overhead: memory
# bounds measured in bytes per connection scale by this factor.
MEMORY_SLACK = 2.0 if os.path.basename(BUILD) in ("build-asan",
                                                  "build-ubsan") else 1.0
UNREADD = os.path.join(BUILD, "unreadd")
UNREAD_CLI = os.path.join(BUILD, "unread-cli")
WRAPPER = shlex.split(os.environ.get("UNREADD_WRAPPER", ""))

TIMEOUT = float(os.environ.get("UNREADD_TEST_IO_TIMEOUT", "10"))
U32_MAX = 4294967295
U64_MAX = 18446744073709551615
# The integer range every argument shares (proto.h UR_INT_MAX).
ID_MAX = 9223372036854775807
TYPE_NAMES = ["mention", "comment", "like", "dm", "system"]

SANITIZER_MARKERS = (
    "ERROR: AddressSanitizer",
    "ERROR: LeakSanitizer",
    "runtime error:",
    "ERROR: UndefinedBehaviorSanitizer",
)


# --------------------------------------------------------------------------
# The command table and error codes, read from the C sources.


def _load_ops():
    """name -> (opcode, min_args, max_args) from protocol/ops.def."""
    text = open(os.path.join(REPO, "protocol", "ops.def")).read()
    ops = {}
    pat = re.compile(r'^OP\(\s*(\w+)\s*,\s*"([^"]+)"\s*,\s*(0x[0-9A-Fa-f]+)\s*,'
                     r'\s*(\w+)\s*,\s*(\w+)\s*,', re.M)
    for m in pat.finditer(text):
        lo = int(m.group(4))
        hi = m.group(5)
        hi = None if hi == "UR_VARARGS" else int(hi)
        ops[m.group(2)] = (int(m.group(3), 16), lo, hi)
    return ops


def _load_errors():
    """symbolic name -> (code, prefix) from UR_ERRORS in protocol/proto.h."""
    text = open(os.path.join(REPO, "protocol", "proto.h")).read()
    errs = {}
    for m in re.finditer(r'X\((\w+),\s*(\d+),\s*"(\w+)"\)', text):
        errs[m.group(1)] = (int(m.group(2)), m.group(3))
    return errs


OPS = _load_ops()
ERRORS = _load_errors()
E = {name: code for name, (code, _prefix) in ERRORS.items()}


def opcode(name):
    return OPS[name.upper()][0]


# --------------------------------------------------------------------------
# Reply values.


class Status(str):
    """A status reply (+OK, +PONG; binary kind 0x05)."""

    def __repr__(self):
        return "Status(%s)" % str.__repr__(self)


class Err:
    """An error reply. text is the whole line without '-' ("ERR unknown
    command 'FOO'"); prefix its first word; code the binary status code
    (None for RESP)."""

    def __init__(self, text, code=None):
        self.text = text
        self.prefix = text.split(" ", 1)[0] if text else ""
        self.code = code

    def startswith(self, s):
        return self.text.startswith(s)

    def __contains__(self, s):
        return s in self.text

    def __repr__(self):
        if self.code is None:
            return "Err(%r)" % self.text
        return "Err(code=%d, %r)" % (self.code, self.text)


class Push(list):
    """A RESP3 push message (">")."""


class RSet(list):
    """A RESP3 set ("~"), kept in wire order."""


class BigNum(int):
    """A RESP3 big number ("(")."""


class Double(float):
    """A RESP3 double (",")."""


class ConnectionClosed(Exception):
    pass


def is_err(v, prefix=None, code=None):
    if not isinstance(v, Err):
        return False
    if prefix is not None and not v.text.startswith(prefix):
        return False
    if code is not None and v.code != code:
        return False
    return True


def assert_err(v, prefix="ERR", code=None):
    assert is_err(v, prefix, code), "expected error %r (code %r), got %r" % (
        prefix, code, v)


# --------------------------------------------------------------------------
# The server.

_started = []  # servers started during the current test (for the runner)


def started_servers():
    return list(_started)


def reset_started():
    del _started[:]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class ServerExited(Exception):
    pass


class Server:
    """with Server(**config) as srv: ...

    Keyword arguments become `--key value` options (underscores turned into
    dashes: max_args=10 -> --max-args 10). args= adds raw arguments; env=
    is added to the server's environment (e.g. LD_PRELOAD).
    """

    def __init__(self, args=(), config_file=None, check_exit=True, env=None,
                 **config):
        self.args = list(args)
        self.env = env
        self.config = config
        self.config_file = config_file
        self.check_exit = check_exit
        self.proc = None
        self.port = None
        self.tmp = None
        self.returncode = None
        self._stderr_path = None

    # -- lifecycle

    def argv(self):
        argv = WRAPPER + [UNREADD]
        if self.config_file:
            argv += ["--config", self.config_file]
        # DEBUG (AUDIT, the clock hooks) for the tests' loopback clients:
        # a test that wants the server's own default passes
        # enable_debug_command="no" (it comes later and wins).
        argv += ["--port", str(self.port), "--bind", "127.0.0.1",
                 "--dir", os.path.join(self.tmp.name, "data"),
                 "--enable-debug-command", "local"]
        for k, v in self.config.items():
            argv += ["--" + k.replace("_", "-"), str(v)]
        return argv + self.args

    def start(self):
        if not os.path.exists(UNREADD):
            raise RuntimeError("%s not built (run make)" % UNREADD)
        self.tmp = tempfile.TemporaryDirectory(prefix="unreadd-test-")
        os.makedirs(os.path.join(self.tmp.name, "data"))
        self._stderr_path = os.path.join(self.tmp.name, "stderr.log")
        _started.append(self)
        for attempt in range(5):
            self.port = free_port()
            err = open(self._stderr_path, "ab")
            env = None
            if self.env:
                env = dict(os.environ)
                env.update(self.env)
            self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL,
                                         stdout=err, stderr=err,
                                         cwd=self.tmp.name, env=env)
            err.close()
            if self._wait_ready():
                return self
            # Lost a race for the port? Try another one.
            if "in use" not in self.stderr_text().lower() or attempt == 4:
                raise ServerExited("unreadd exited with %s at start:\n%s" % (
                    self.proc.returncode, self.stderr_tail()))
        return self

    def _wait_ready(self):
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                s = socket.create_connection(("127.0.0.1", self.port), 0.5)
                s.close()
                return True
            except OSError:
                time.sleep(0.01)
        self.proc.kill()
        self.proc.wait()
        raise ServerExited("unreadd did not accept on port %d within 15 s" %
                           self.port)

    def stop(self, sig=signal.SIGTERM, timeout=15):
        """Signals the server and waits; returns the exit status."""
        if self.proc is None:
            return self.returncode
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self.returncode = self.proc.returncode
                self.proc = None
                raise AssertionError("unreadd did not exit within %ds of %s" %
                                     (timeout, signal.Signals(sig).name))
        self.returncode = self.proc.returncode
        self.proc = None
        return self.returncode

    def check_clean_exit(self):
        assert self.returncode == 0, "unreadd exit status %r\n%s" % (
            self.returncode, self.stderr_tail())
        self.check_no_sanitizer_report()

    def check_no_sanitizer_report(self):
        text = self.stderr_text()
        for marker in SANITIZER_MARKERS:
            assert marker not in text, "sanitizer report in unreadd stderr:\n" + \
                self.stderr_tail(60)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        try:
            self.stop()
        finally:
            pass
        # Keep the test's own failure as the reported one; still check the
        # exit when the test body passed.
        if exc_type is None and self.check_exit:
            self.check_clean_exit()
        self._stderr_copy = self.stderr_text()
        self.tmp.cleanup()
        return False

    # -- logs

    def stderr_text(self):
        if getattr(self, "_stderr_copy", None) is not None:
            return self._stderr_copy
        try:
            with open(self._stderr_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except (OSError, TypeError):
            return ""

    def stderr_tail(self, n=30):
        lines = self.stderr_text().splitlines()
        return "\n".join(lines[-n:])

    # -- clients

    def resp(self, timeout=TIMEOUT):
        return Resp(self.port, timeout)

    def bin(self, timeout=TIMEOUT):
        return Bin(self.port, timeout)

    def raw(self, timeout=TIMEOUT):
        return Raw(self.port, timeout)

    def wait_for(self, pred, timeout=5.0, what="condition"):
        deadline = time.monotonic() + timeout
        while True:
            v = pred()
            if v:
                return v
            if time.monotonic() > deadline:
                raise AssertionError("timed out waiting for " + what)
            time.sleep(0.01)


def server(**kw):
    return Server(**kw)


# --------------------------------------------------------------------------
# Raw socket.


class Raw:
    """A plain TCP connection with a receive buffer."""

    def __init__(self, port, timeout=TIMEOUT):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(timeout)
        self.buf = bytearray()

    def send(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.sock.sendall(data)

    def send_slowly(self, data, pause=0.0005):
        """One byte per send(), with TCP_NODELAY and a pause, so the server
        sees as many partial reads as the kernel allows."""
        if isinstance(data, str):
            data = data.encode()
        for i in range(len(data)):
            self.sock.sendall(data[i:i + 1])
            if pause:
                time.sleep(pause)

    def _fill(self):
        try:
            chunk = self.sock.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            raise ConnectionClosed("server closed the connection")
        self.buf += chunk

    def read_exact(self, n):
        while len(self.buf) < n:
            self._fill()
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def read_line(self):
        """Up to and including CRLF; returns the line without it."""
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line = bytes(self.buf[:i])
                del self.buf[:i + 2]
                return line
            self._fill()

    def read_available(self, wait=0.2):
        """Whatever arrives within `wait` seconds of quiet; b'' at EOF."""
        old = self.sock.gettimeout()
        self.sock.settimeout(wait)
        try:
            while True:
                try:
                    self._fill()
                except socket.timeout:
                    break
                except ConnectionClosed:
                    break
        finally:
            self.sock.settimeout(old)
        out = bytes(self.buf)
        self.buf.clear()
        return out

    def wait_closed(self, timeout=5.0):
        """True when the server closes the connection within timeout
        (bytes arriving meanwhile are kept in self.buf)."""
        old = self.sock.gettimeout()
        self.sock.settimeout(timeout)
        try:
            while True:
                try:
                    self._fill()
                except ConnectionClosed:
                    return True
                except socket.timeout:
                    return False
        finally:
            self.sock.settimeout(old)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


# --------------------------------------------------------------------------
# RESP2.


def _b(x):
    if isinstance(x, bytes):
        return x
    if isinstance(x, (bytearray, memoryview)):
        return bytes(x)
    return str(x).encode()


def encode_multibulk(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = _b(a)
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def encode_inline(*args, eol=b"\r\n"):
    return b" ".join(_b(a) for a in args) + eol


class Resp(Raw):
    """RESP2 client. cmd() sends one multibulk request and returns the
    parsed reply; inline() does the same with an inline line."""

    def read_reply(self, depth=0):
        assert depth <= 16, "reply nested too deep"
        line = self.read_line()
        if not line:
            raise AssertionError("empty reply line")
        t, rest = line[:1], line[1:]
        if t == b"+":
            return Status(rest.decode("utf-8", "replace"))
        if t == b"-":
            return Err(rest.decode("utf-8", "replace"))
        if t == b":":
            assert re.fullmatch(rb"-?[0-9]+", rest), "bad integer %r" % line
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n == -1:
                return None
            assert n >= 0, "bad bulk length %r" % line
            data = self.read_exact(n + 2)
            assert data[-2:] == b"\r\n", "bulk not ended by CRLF"
            return data[:-2]
        if t == b"*":
            n = int(rest)
            if n == -1:
                return None
            return [self.read_reply(depth + 1) for _ in range(n)]
        # RESP3 (after HELLO 3)
        if t == b"%":
            out = {}
            for _ in range(int(rest)):
                k = self.read_reply(depth + 1)
                out[k] = self.read_reply(depth + 1)
            return out
        if t == b"~":
            return RSet(self.read_reply(depth + 1) for _ in range(int(rest)))
        if t == b">":
            return Push(self.read_reply(depth + 1) for _ in range(int(rest)))
        if t == b"_":
            assert rest == b"", "bad null %r" % line
            return None
        if t == b"#":
            assert rest in (b"t", b"f"), "bad boolean %r" % line
            return rest == b"t"
        if t == b",":
            return Double(rest.decode())
        if t == b"(":
            assert re.fullmatch(rb"-?[0-9]+", rest), "bad big number %r" % line
            return BigNum(int(rest))
        raise AssertionError("not a RESP reply: %r" % line[:80])

    def cmd(self, *args):
        self.send(encode_multibulk(*args))
        return self.read_reply()

    def inline(self, line, eol="\r\n"):
        if isinstance(line, str):
            line = line.encode()
        self.send(line + _b(eol))
        return self.read_reply()

    def pipeline(self, cmds):
        """Sends every command in one write, then reads as many replies."""
        self.send(b"".join(encode_multibulk(*c) for c in cmds))
        return [self.read_reply() for _ in cmds]


def info_dict(text):
    """INFO bulk -> {section: {key: value}} (section names lower case)."""
    if isinstance(text, bytes):
        text = text.decode()
    out = {}
    sec = None
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("#"):
            sec = line[1:].strip().lower()
            out.setdefault(sec, {})
            continue
        k, _, v = line.partition(":")
        out.setdefault(sec, {})[k] = v
    return out


def info_flat(text):
    flat = {}
    for sec in info_dict(text).values():
        flat.update(sec)
    return flat


def pairs(flat):
    """[k1, v1, k2, v2, ...] -> dict with str keys."""
    assert isinstance(flat, list) and len(flat) % 2 == 0, repr(flat)
    d = {}
    for i in range(0, len(flat), 2):
        k = flat[i]
        if isinstance(k, bytes):
            k = k.decode()
        d[k] = flat[i + 1]
    return d


# --------------------------------------------------------------------------
# Binary protocol (version 1).

MAGIC = 0xB7
VERSION = 1
HDR = struct.Struct("<BBHIIHH")  # magic, version, op/status, id, len, argc, flags
assert HDR.size == 16

ARG_INT, ARG_STR = 0x01, 0x02
V_INT, V_STR, V_ARR, V_NIL, V_STATUS, V_ERR, V_SINT = 1, 2, 3, 4, 5, 6, 7


def encode_arg(a):
    if isinstance(a, bool):
        a = int(a)
    if isinstance(a, int):
        return struct.pack("<BQ", ARG_INT, a)
    a = _b(a)
    return struct.pack("<BI", ARG_STR, len(a)) + a


def encode_frame(op, rid, *args, version=VERSION, magic=MAGIC, flags=0,
                 argc=None, length=None):
    """A request frame; op is a name or an opcode. argc/length override the
    header fields (for bad-input tests)."""
    if isinstance(op, str):
        op = opcode(op)
    body = b"".join(encode_arg(a) for a in args)
    return HDR.pack(magic, version, op, rid,
                    len(body) if length is None else length,
                    len(args) if argc is None else argc, flags) + body


def decode_value(body, pos=0, depth=0):
    """(value, new_pos) from a reply body; raises AssertionError when the
    body is malformed."""
    assert depth <= 8, "reply array nesting over UR_MAX_DEPTH"
    assert pos < len(body), "reply body truncated"
    kind = body[pos]
    pos += 1

    def need(n):
        assert pos + n <= len(body), "reply value overruns the body"

    if kind == V_INT:
        need(8)
        return struct.unpack_from("<Q", body, pos)[0], pos + 8
    if kind == V_SINT:
        need(8)
        return struct.unpack_from("<q", body, pos)[0], pos + 8
    if kind in (V_STR, V_STATUS):
        need(4)
        n = struct.unpack_from("<I", body, pos)[0]
        pos += 4
        need(n)
        s = bytes(body[pos:pos + n])
        if kind == V_STATUS:
            return Status(s.decode("utf-8", "replace")), pos + n
        return s, pos + n
    if kind == V_ARR:
        need(4)
        n = struct.unpack_from("<I", body, pos)[0]
        pos += 4
        assert n <= len(body) - pos, "array count larger than the body"
        out = []
        for _ in range(n):
            v, pos = decode_value(body, pos, depth + 1)
            out.append(v)
        return out, pos
    if kind == V_NIL:
        return None, pos
    if kind == V_ERR:
        need(6)
        code, n = struct.unpack_from("<HI", body, pos)
        pos += 6
        need(n)
        return Err(bytes(body[pos:pos + n]).decode("utf-8", "replace"),
                   code), pos + n
    raise AssertionError("unknown reply value kind 0x%02x" % kind)


class Frame:
    def __init__(self, magic, version, status, rid, length, argc, flags,
                 body):
        self.magic, self.version, self.status, self.id = magic, version, status, rid
        self.len, self.argc, self.flags, self.body = length, argc, flags, body
        v, end = decode_value(body)
        assert end == len(body), "bytes left over in reply body"
        self.value = v

    def __repr__(self):
        return "Frame(status=%d, id=%d, value=%r)" % (self.status, self.id,
                                                      self.value)


class Bin(Raw):
    """Binary-protocol client. call() sends one request and returns the
    reply value (an Err whose code is the frame status when status != 0),
    checking the echoed request id and the reply's consistency."""

    def __init__(self, port, timeout=TIMEOUT):
        super().__init__(port, timeout)
        self.next_id = 1
        self.pushes = []  # push frames' values, set aside in arrival order

    def alloc_id(self):
        rid = self.next_id
        self.next_id = (self.next_id + 1) & 0xFFFFFFFF
        return rid

    def _read_one(self):
        hdr = self.read_exact(16)
        magic, version, status, rid, length, argc, flags = HDR.unpack(hdr)
        assert magic == MAGIC, "reply magic 0x%02x" % magic
        assert version == VERSION, "reply version %d" % version
        assert length <= 64 << 20, "reply length %d" % length
        body = self.read_exact(length)
        return Frame(magic, version, status, rid, length, argc, flags, body)

    def read_frame(self):
        """The next reply frame; push frames (revision 1.1: id 0, flag 1,
        status 0) met on the way are set aside in self.pushes."""
        while True:
            f = self._read_one()
            if f.flags == 1:
                assert f.id == 0 and f.status == 0 and f.argc == 0, \
                    "push frame with id %d status %d" % (f.id, f.status)
                self.pushes.append(f.value)
                continue
            break
        assert f.argc == 0 and f.flags == 0, "reply argc/flags not 0"
        status = f.status
        if status != 0:
            assert isinstance(f.value, Err) and f.value.code == status, \
                "status %d reply must carry one error value with the same " \
                "code, got %r" % (status, f.value)
        else:
            assert not isinstance(f.value, Err), \
                "error value in a status-0 reply: %r" % (f.value,)
        return f

    def read_push(self):
        """The next push frame's value (one set aside first)."""
        if self.pushes:
            return self.pushes.pop(0)
        f = self._read_one()
        assert f.flags == 1 and f.id == 0, \
            "expected a push frame, got id %d flags %d" % (f.id, f.flags)
        return f.value

    def reply(self, rid):
        f = self.read_frame()
        assert f.id == rid, "reply id %d, expected %d" % (f.id, rid)
        return f.value

    def call(self, op, *args):
        rid = self.alloc_id()
        self.send(encode_frame(op, rid, *args))
        return self.reply(rid)

    def pipeline(self, cmds):
        """cmds: [(op, arg, ...), ...]; one write, replies in order."""
        ids = []
        out = []
        for c in cmds:
            rid = self.alloc_id()
            ids.append(rid)
            out.append(encode_frame(c[0], rid, *c[1:]))
        self.send(b"".join(out))
        return [self.reply(rid) for rid in ids]


# --------------------------------------------------------------------------
# State checks used after bad input: seed some counters, then verify that a
# fresh client of each protocol sees exactly them.

SEED = [
    (1001, 0, 3), (1001, 3, 7), (1002, 63, 5), (ID_MAX, 1, 2),
    (0, 4, U32_MAX),
]


def seed_state(srv):
    c = srv.resp()
    try:
        for uid, t, v in SEED:
            r = c.cmd("CNT.SET", uid, t, v)
            assert isinstance(r, list) and r[0] == v, r
    finally:
        c.close()


def expected_getall(uid):
    return sorted((t, v) for u, t, v in SEED if u == uid and v)


def check_state(srv):
    """The server still answers, over both protocols, and the seeded state
    is exactly as it was."""
    assert srv.alive(), "unreadd died:\n" + srv.stderr_tail()
    with srv.resp() as c:
        assert c.cmd("PING") == "PONG"
        for uid in sorted({u for u, _t, _v in SEED}):
            exp = expected_getall(uid)
            flat = [x for tv in exp for x in tv]
            assert c.cmd("CNT.GETALL", uid) == flat, uid
            assert c.cmd("CNT.TOTAL", uid) == sum(v for _t, v in exp), uid
    with srv.bin() as b:
        assert b.call("PING") == "PONG"
        for uid, t, v in SEED:
            assert b.call("CNT.GET", uid, t) == v, (uid, t)


# --------------------------------------------------------------------------
# External tools.


def run_cli(srv, *args, input=None, timeout=20):
    """Runs build/unread-cli against srv; returns CompletedProcess (text)."""
    argv = [UNREAD_CLI, "-p", str(srv.port)] + [str(a) for a in args]
    return subprocess.run(argv, input=input, capture_output=True, text=True,
                          timeout=timeout)


LIBUNREAD = os.path.join(BUILD, "libunread.so")


def libunread_env():
    """The environment for a child process that loads libunread.so with
    ctypes: the sanitizer runtime preloaded when the library was built with
    one (make asan), else nothing added."""
    syms = subprocess.run(["nm", "-D", LIBUNREAD], capture_output=True,
                          text=True).stdout
    env = dict(os.environ)
    if "__asan_" in syms:
        cc = os.environ.get("CC", "cc")
        env["LD_PRELOAD"] = subprocess.run(
            [cc, "-print-file-name=libasan.so"], capture_output=True,
            text=True).stdout.strip()
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    return env


def run_redis_cli(srv, *args, input=None, timeout=20):
    argv = ["redis-cli", "-h", "127.0.0.1", "-p", str(srv.port)] + \
        [str(a) for a in args]
    return subprocess.run(argv, input=input, capture_output=True,
                          text=isinstance(input, str) or input is None,
                          timeout=timeout)


def run_nc(srv, data, timeout=20):
    """netcat-openbsd: sends data, half-closes (-N), prints what comes back
    until the server closes."""
    return subprocess.run(["nc", "-N", "127.0.0.1", str(srv.port)],
                          input=data, capture_output=True, timeout=timeout)


class Sender(threading.Thread):
    """Writes a large request stream while the caller reads replies, so
    neither side blocks on a full socket buffer."""

    def __init__(self, sock, data):
        super().__init__(daemon=True)
        self.sock, self.data, self.error = sock, data, None

    def run(self):
        try:
            self.sock.sendall(self.data)
        except OSError as e:
            self.error = e
