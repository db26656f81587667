"""Atomic batches (docs/PROTOCOL.md 2.12 and 3.5, server/batch.h) with a
real server: the binary batch frame (raw frames encoded here, byte for byte
as documented), MULTI/EXEC/DISCARD over RESP, inline and redis-cli, the
errors of each, atomicity against a concurrent reader, journal replay of
batches after kill -9, and libunread's batch API through ctypes.
"""

import ctypes
import os
import signal
import struct
import subprocess
import sys
import tempfile
import threading

from harness import (BUILD, E, HDR, MAGIC, VERSION, Bin, ConnectionClosed,
                     Resp, Server, assert_err, encode_arg, encode_frame,
                     free_port, opcode, run_redis_cli)

BATCH = 0xFF01


def encode_batch(rid, cmds, argc=None):
    """A batch frame: cmds is [(name or opcode, arg, ...), ...]."""
    body = b""
    for c in cmds:
        op = opcode(c[0]) if isinstance(c[0], str) else c[0]
        body += struct.pack("<HH", op, len(c) - 1)
        body += b"".join(encode_arg(a) for a in c[1:])
    return HDR.pack(MAGIC, VERSION, BATCH, rid, len(body),
                    len(cmds) if argc is None else argc, 0) + body


def batch(b, cmds):
    """Sends one batch frame on Bin connection b; returns its reply."""
    rid = b.alloc_id()
    b.send(encode_batch(rid, cmds))
    return b.reply(rid)


# --------------------------------------------------------------------------
# The binary batch frame.

# docs/PROTOCOL.md 2.12: CONV.SEQ 42 7 3 and CNT.INCR 42 3 1 as batch id 9.
DOC_REQUEST = bytes.fromhex(
    "b70101ff09000000" "3e00000002000000"
    "02020300" "012a00000000000000" "010700000000000000" "010300000000000000"
    "01010300" "012a00000000000000" "010300000000000000" "010100000000000000")
DOC_REPLY = bytes.fromhex(
    "b701000009000000" "3300000000000000"
    "0302000000"
    "0302000000" "010300000000000000" "010300000000000000"
    "0302000000" "010100000000000000" "010100000000000000")


def test_batch_frame_bytes_as_documented():
    assert encode_batch(9, [("CONV.SEQ", 42, 7, 3),
                            ("CNT.INCR", 42, 3, 1)]) == DOC_REQUEST
    with Server() as srv, srv.raw() as c:
        c.send(DOC_REQUEST)
        assert c.read_exact(len(DOC_REPLY)) == DOC_REPLY


def test_batch_binary_runs_in_order_with_errors_in_place():
    with Server() as srv, srv.bin() as b:
        assert batch(b, [("CNT.INCR", 1, 0, 1), ("CNT.INCR", 1, 3, 2),
                         ("CNT.GET", 1, 3), ("CNT.TOTAL", 1),
                         ("PING",)]) == [[1, 1], [2, 3], 2, 3, "PONG"]
        # a command failing at run time answers its error in its place and
        # does not undo the others
        r = batch(b, [("CNT.INCR", 2, 0, 1), ("CNT.INCR", 2, 64, 1),
                      ("CNT.INCR", 2, "dm", 1)])
        assert r[0] == [1, 1] and r[2] == [1, 2]
        assert_err(r[1], None, E["BADARG"])
        assert batch(b, []) == []
        # batches and plain frames pipelined: replies in order, ids echoed
        rids = [b.alloc_id() for _ in range(3)]
        b.send(encode_batch(rids[0], [("CNT.INCR", 3, 0, 1)]) +
               encode_batch(rids[1], [("CNT.GET", 3, 0), ("CNT.GET", 3, 1)]) +
               encode_frame("CNT.GET", rids[2], 3, 0))
        assert b.reply(rids[0]) == [[1, 1]]
        assert b.reply(rids[1]) == [1, 0]
        assert b.reply(rids[2]) == 1


def test_batch_binary_refused_whole_keeps_connection():
    with Server() as srv, srv.bin() as b:
        for cmds, code, text in [
                ([("CNT.INCR", 5, 0, 1), (0x01FF,)], "UNKNOWN",
                 "batch op 1: unknown opcode 0x01ff"),
                ([("CNT.INCR", 5, 0, 1), ("CNT.GET", 5)], "ARITY",
                 "batch op 1: wrong number of arguments for 'CNT.GET'"),
                ([("CNT.INCR", 5, 0, 1), ("SAVE",)], "ERR",
                 "batch op 1: SAVE is not allowed in a batch"),
                ([("QUIT",)], "ERR", "batch op 0: QUIT is not allowed"),
                ([(BATCH,)], "UNKNOWN", "batch op 0: unknown opcode 0xff01"),
                ([("MULTI",)], "ERR", "batch op 0: MULTI is not allowed")]:
            r = batch(b, cmds)
            assert_err(r, None, E[code])
            assert r.text.startswith(text), r
        # nothing ran, and the connection is still served
        assert b.call("CNT.GET", 5, 0) == 0
        assert b.call("PING") == "PONG"


def test_batch_binary_framing_errors_close():
    """A body whose sub-requests do not fit it is framing lost (PROTO);
    counts over max-args are TOOBIG; both close after the error."""
    bad = [
        # sub-request header runs past the body
        (HDR.pack(MAGIC, VERSION, BATCH, 1, 2, 1, 0) + b"\x01\x01", "PROTO"),
        # an argument runs past the body
        (HDR.pack(MAGIC, VERSION, BATCH, 1, 8, 1, 0) +
         struct.pack("<HH", 0x0104, 2) + b"\x01\x00\x00\x00", "PROTO"),
        # bytes left over after the announced sub-requests
        (encode_batch(1, [("PING",), ("PING",)], argc=1), "PROTO"),
        # more sub-requests than the body can hold
        (encode_batch(1, [("PING",)], argc=2), "PROTO"),
        # a sub-request with more than max-args arguments
        (encode_batch(1, [("CNT.CLEAR",) + (1,) * 9]), "TOOBIG"),
        # more sub-requests than max-args
        (encode_batch(1, [("PING",)] * 9), "TOOBIG"),
    ]
    with Server(max_args=8) as srv:
        for frame, code in bad:
            with srv.bin() as b:
                b.send(encode_batch(7, [("PING",)]) + frame)
                assert b.reply(7) == ["PONG"]
                assert_err(b.reply(1), None, E[code])
                assert b.wait_closed(), frame.hex()
        with srv.bin() as b:
            assert b.call("PING") == "PONG"


# --------------------------------------------------------------------------
# MULTI / EXEC / DISCARD.


def test_multi_exec_resp():
    with Server() as srv, srv.resp() as c:
        assert c.cmd("MULTI") == "OK"
        assert c.cmd("CNT.INCR", 9, "mention") == "QUEUED"
        assert c.cmd("CNT.INCR", 9, "dm", 2) == "QUEUED"
        assert c.cmd("CNT.INCR", 9, "nosuch") == "QUEUED"  # fails at run
        assert c.cmd("CNT.TOTAL", 9) == "QUEUED"
        with srv.resp() as other:  # queued, not run
            assert other.cmd("CNT.TOTAL", 9) == 0
        r = c.cmd("EXEC")
        assert r[0] == [1, 1] and r[1] == [2, 3] and r[3] == 3
        assert_err(r[2], "ERR unknown counter type")
        assert c.cmd("CNT.GET", 9, "dm") == 2
        # inline works the same, and an empty transaction is an empty array
        assert c.inline("MULTI") == "OK"
        assert c.inline("CNT.INCR 9 dm") == "QUEUED"
        assert c.inline("EXEC") == [[3, 4]]
        assert c.cmd("MULTI") == "OK"
        assert c.cmd("EXEC") == []


def test_multi_errors_resp():
    with Server() as srv, srv.resp() as c:
        assert_err(c.cmd("EXEC"), "ERR EXEC without MULTI")
        assert_err(c.cmd("DISCARD"), "ERR DISCARD without MULTI")
        # nested MULTI: an error, the transaction stays open
        assert c.cmd("MULTI") == "OK"
        assert_err(c.cmd("MULTI"), "ERR MULTI calls can not be nested")
        assert c.cmd("CNT.INCR", 10, 0) == "QUEUED"
        assert c.cmd("EXEC") == [[1, 1]]
        # refused when queued: EXECABORT, nothing runs
        for bad in [("NOPE",), ("CNT.GET", 10), ("SAVE",),
                    ("SHUTDOWN", "NOSAVE")]:
            assert c.cmd("MULTI") == "OK"
            assert c.cmd("CNT.INCR", 10, 0) == "QUEUED"
            assert_err(c.cmd(*bad), "ERR")
            assert c.cmd("CNT.INCR", 10, 0) == "QUEUED"
            assert_err(c.cmd("EXEC"), "EXECABORT Transaction discarded")
        assert c.cmd("CNT.GET", 10, 0) == 1
        # DISCARD
        assert c.cmd("MULTI") == "OK"
        assert c.cmd("CNT.INCR", 10, 0, 5) == "QUEUED"
        assert c.cmd("DISCARD") == "OK"
        assert_err(c.cmd("EXEC"), "ERR EXEC without MULTI")
        assert c.cmd("CNT.GET", 10, 0) == 1
        # QUIT in MULTI closes; the queue goes with the connection
        assert c.cmd("MULTI") == "OK"
        assert c.cmd("CNT.INCR", 10, 0) == "QUEUED"
        assert c.cmd("QUIT") == "OK"
        assert c.wait_closed()
    with Server(max_args=8) as srv, srv.resp() as c:
        assert c.cmd("MULTI") == "OK"
        for _ in range(8):
            assert c.cmd("CNT.INCR", 11, 0) == "QUEUED"
        assert_err(c.cmd("CNT.INCR", 11, 0), "ERR transaction too large")
        assert_err(c.cmd("EXEC"), "EXECABORT")
        assert c.cmd("CNT.GET", 11, 0) == 0


def test_multi_refused_on_binary():
    with Server() as srv, srv.bin() as b:
        for name in ("MULTI", "EXEC", "DISCARD"):
            r = b.call(name)
            assert_err(r, None, E["ERR"])
            assert "batch frame" in r.text
        assert b.call("CNT.INCR", 1, 0) == [1, 1]


def test_multi_exec_redis_cli():
    with Server() as srv:
        p = run_redis_cli(srv, input="MULTI\nCNT.INCR 1 dm\nCNT.INCR 1 like 2\n"
                          "EXEC\nMULTI\nFOO\nEXEC\n")
        assert p.returncode == 0, p.stderr
        assert p.stdout.split("\n")[:8] == [
            "OK", "QUEUED", "QUEUED", "1", "1", "2", "3", "OK"], p.stdout
        assert "EXECABORT Transaction discarded" in p.stdout
        p = run_redis_cli(srv, "CNT.TOTAL", "1")
        assert p.stdout.strip() == "3"


# --------------------------------------------------------------------------
# Atomicity: a concurrent reader never sees half of a batch.

ROUNDS = 3000


def _writer(port, proto, errors, rounds=ROUNDS):
    """`rounds` batches of CNT.INCR a and CNT.INCR b, pipelined 50 at a
    time, as batch frames (binary) or MULTI/EXEC (RESP)."""
    try:
        if proto == "binary":
            with Bin(port) as b:
                for _ in range(rounds // 50):
                    rids = [b.alloc_id() for _ in range(50)]
                    b.send(b"".join(encode_batch(
                        r, [("CNT.INCR", 1, 0), ("CNT.INCR", 2, 0)])
                        for r in rids))
                    for r in rids:
                        assert len(b.reply(r)) == 2
        else:
            with Resp(port) as c:
                cmds = [("MULTI",), ("CNT.INCR", 1, 0), ("CNT.INCR", 2, 0),
                        ("EXEC",)]
                for _ in range(rounds // 50):
                    out = c.pipeline(cmds * 50)
                    assert all(len(x) == 2 for x in out[3::4])
    except Exception as e:  # reported by the main thread
        errors.append(e)


def _read_pair(b):
    """CNT.GET of both counters in one batch."""
    a, c = batch(b, [("CNT.GET", 1, 0), ("CNT.GET", 2, 0)])
    return a, c


def test_concurrent_reader_never_sees_half_a_batch():
    for proto in ("binary", "resp"):
        with Server() as srv, srv.bin() as rd:
            # the reader's check catches a half-applied pair: done by hand
            # (two plain frames), the half is seen
            assert rd.call("CNT.INCR", 1, 0) == [1, 1]
            assert _read_pair(rd) == (1, 0)
            assert rd.call("CNT.INCR", 2, 0) == [1, 1]

            errors = []
            w = threading.Thread(target=_writer, args=(srv.port, proto,
                                                       errors))
            w.start()
            reads = during = 0
            while w.is_alive() or reads == 0:
                a, c = _read_pair(rd)
                assert a == c, "saw half a batch: %d != %d" % (a, c)
                reads += 1
                during += 1 < a < ROUNDS + 1
                # the RESP reader too, through MULTI/EXEC
                if reads % 4 == 0:
                    with srv.resp() as rc:
                        rc.send(b"MULTI\r\nCNT.GET 1 0\r\nCNT.GET 2 0\r\n"
                                b"EXEC\r\n")
                        out = [rc.read_reply() for _ in range(4)]
                        assert out[3][0] == out[3][1], out
            w.join()
            assert not errors, errors
            assert during > 10, (reads, during)  # they did overlap
            assert _read_pair(rd) == (ROUNDS + 1, ROUNDS + 1)


test_concurrent_reader_never_sees_half_a_batch.timeout = 120


# --------------------------------------------------------------------------
# Journal replay after kill -9.


class DataServer(Server):
    """A server on a data dir the test keeps, so it can be killed and
    started again on the same files."""

    def __init__(self, datadir, **config):
        config.setdefault("save_seconds", 0)
        super().__init__(check_exit=False, **config)
        self.datadir = datadir

    def argv(self):
        argv = super().argv()
        argv[argv.index("--dir") + 1] = self.datadir
        return argv


def test_batches_replayed_after_kill9():
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data")
        with DataServer(data, journal_fsync="always") as srv:
            with srv.bin() as b, srv.resp() as c:
                for i in range(200):
                    assert batch(b, [("CNT.INCR", 1, 0), ("CNT.GET", 1, 0),
                                     ("CNT.INCR", 2, 0, 2),
                                     ("CNT.INCR", 2, 64)])[0] == [i + 1, i + 1]
                c.pipeline([("MULTI",), ("CONV.SEQ", 3, 7, 5),
                            ("CNT.SET", 3, 1, 9)])
                assert c.cmd("EXEC") == [[5, 5], [9, 9]]
            srv.stop(signal.SIGKILL)
        with DataServer(data) as srv, srv.bin() as b:
            assert b.call("CNT.GET", 1, 0) == 200
            assert b.call("CNT.GET", 2, 0) == 400
            assert b.call("CONV.GET", 3, 7) == 5
            assert b.call("CNT.GET", 3, 1) == 9
            srv.stop(signal.SIGKILL)


def test_kill9_under_batch_load_keeps_pairs_whole():
    """kill -9 while batches stream in (journal-fsync everysec, so the last
    moments may be lost): after the restart both counters are equal."""
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data")
        with DataServer(data) as srv:
            errors = []
            w = threading.Thread(target=_writer, args=(srv.port, "binary",
                                                       errors, 10**7))
            w.start()
            with srv.bin() as rd:
                srv.wait_for(lambda: _read_pair(rd)[0] > 500, timeout=30,
                             what="500 batches")
            srv.stop(signal.SIGKILL)
            w.join()
            assert errors and isinstance(errors[0], (ConnectionClosed,
                                                     OSError)), errors
        with DataServer(data) as srv, srv.bin() as b:
            a, c = _read_pair(b)
            assert a == c and a > 0, (a, c)
            srv.stop(signal.SIGKILL)


test_kill9_under_batch_load_keeps_pairs_whole.timeout = 90


# --------------------------------------------------------------------------
# libunread's batch API, through ctypes, in a child process (which gets
# the sanitizer runtime preloaded when libunread.so was built with one).

LIB = os.path.join(BUILD, "libunread.so")

CLIENT = r'''
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])

class Reply(ctypes.Structure):
    pass
Reply._fields_ = [("kind", ctypes.c_int), ("integer", ctypes.c_uint64),
                  ("str", ctypes.c_char_p), ("len", ctypes.c_size_t),
                  ("n", ctypes.c_size_t), ("elem", ctypes.POINTER(Reply)),
                  ("code", ctypes.c_int)]

P = ctypes.c_void_p
U64 = ctypes.c_uint64
lib.unread_connect_cluster.restype = P
lib.unread_connect_cluster.argtypes = [ctypes.c_char_p, P,
                                       ctypes.c_char_p, ctypes.c_size_t]
lib.unread_opts_new.restype = P
lib.unread_opts_free.argtypes = [P]
lib.unread_opts_set_degraded.argtypes = [P, ctypes.c_bool, U64]
lib.unread_opts_set_timeouts.argtypes = [P, ctypes.c_int, ctypes.c_int,
                                         ctypes.c_int]
lib.unread_errstr.restype = ctypes.c_char_p
lib.unread_errstr.argtypes = [P]
for f in ("unread_batch_begin", "unread_pipe_begin", "unread_pipe_flush",
          "unread_pipe_batch"):
    getattr(lib, f).argtypes = [P]
lib.unread_batch_reset.argtypes = [P]
lib.unread_batch_exec.argtypes = [P, ctypes.POINTER(ctypes.POINTER(Reply))]
lib.unread_pipe_read.argtypes = [P, ctypes.POINTER(ctypes.POINTER(Reply))]
lib.unread_reply_free.argtypes = [ctypes.POINTER(Reply)]
lib.unread_pipe_cnt_incr.argtypes = [P, U64, ctypes.c_uint, ctypes.c_uint32]
lib.unread_pipe_cnt_get.argtypes = [P, U64, ctypes.c_uint]
lib.unread_pipe_conv_seq.argtypes = [P, U64, U64, U64]
lib.unread_pipe_grp_post.argtypes = [P, U64, U64]
lib.unread_cnt_total.argtypes = [P, U64, ctypes.POINTER(U64)]
lib.unread_shard_of.restype = ctypes.c_size_t
lib.unread_shard_of.argtypes = [P, U64]
lib.unread_close.argtypes = [P]
EUSAGE, EUNAVAIL, DEGRADED = -7, -8, 0x10000

def value(r):
    if r.kind == 1: return r.integer
    if r.kind == 3: return [value(r.elem[i]) for i in range(r.n)]
    if r.kind == 6: return ("ERR", r.code)
    return (r.kind, r.str)

def connect(servers, degraded=False):
    o = lib.unread_opts_new()
    lib.unread_opts_set_degraded(o, degraded, 7)
    lib.unread_opts_set_timeouts(o, 500, 500, 500)
    err = ctypes.create_string_buffer(256)
    c = lib.unread_connect_cluster(servers.encode(), o, err, 256)
    lib.unread_opts_free(o)
    assert c, err.value
    return c

def exec_(c):
    out = ctypes.POINTER(Reply)()
    rc = lib.unread_batch_exec(c, ctypes.byref(out))
    v = value(out.contents) if out else None
    lib.unread_reply_free(out)
    return rc, v

one, two, dead = sys.argv[2], sys.argv[3], sys.argv[4]

# one server: a DM as one batch, errors in place
c = connect(one)
assert lib.unread_batch_begin(c) == 0
assert lib.unread_batch_begin(c) == EUSAGE
assert lib.unread_pipe_conv_seq(c, 42, 7, 3) == 0
assert lib.unread_pipe_cnt_incr(c, 42, 3, 1) == 0
assert lib.unread_pipe_cnt_incr(c, 42, 64, 1) == 0
t = U64()
assert lib.unread_cnt_total(c, 42, ctypes.byref(t)) == EUSAGE  # batch open
assert lib.unread_pipe_grp_post(c, 5, 2**64 - 1) == EUSAGE     # global
assert b"cannot be batched" in lib.unread_errstr(c)
assert exec_(c) == (0, [[3, 3], [1, 1], ("ERR", 4)])
assert exec_(c) == (EUSAGE, None)                              # closed
assert lib.unread_cnt_total(c, 42, ctypes.byref(t)) == 0 and t.value == 1

# a batch inside a pipeline is one of its requests
assert lib.unread_pipe_begin(c) == 0
assert lib.unread_pipe_cnt_get(c, 42, 3) == 0
assert lib.unread_batch_begin(c) == 0
assert lib.unread_pipe_cnt_incr(c, 42, 3, 1) == 0
assert lib.unread_pipe_cnt_get(c, 42, 3) == 0
assert exec_(c)[0] == EUSAGE                          # pipeline: queue it
assert lib.unread_pipe_batch(c) == 0
assert lib.unread_pipe_cnt_get(c, 42, 3) == 0
assert lib.unread_pipe_flush(c) == 0
got = []
for _ in range(3):
    out = ctypes.POINTER(Reply)()
    assert lib.unread_pipe_read(c, ctypes.byref(out)) == 0
    got.append(value(out.contents))
    lib.unread_reply_free(out)
assert got == [1, [[2, 2], 2], 2], got
lib.unread_close(c)

# a cluster: one batch, one server
c = connect(one + "," + two)
uids = {}
for uid in range(1, 100):
    uids.setdefault(lib.unread_shard_of(c, uid), uid)
a, b = uids[0], uids[1]
assert lib.unread_batch_begin(c) == 0
assert lib.unread_pipe_cnt_incr(c, a, 0, 1) == 0
assert lib.unread_pipe_cnt_incr(c, b, 0, 1) == EUSAGE
assert b"a batch runs on one server" in lib.unread_errstr(c)
assert lib.unread_pipe_cnt_get(c, a, 0) == 0
assert exec_(c) == (0, [[1, 1], 1])
lib.unread_close(c)

# degraded mode, the server down: reads answer defaults, writes not sent
c = connect(dead, degraded=True)
assert lib.unread_batch_begin(c) == 0
assert lib.unread_pipe_cnt_get(c, 1, 0) == 0
assert lib.unread_pipe_cnt_get(c, 1, 1) == 0
assert exec_(c) == (DEGRADED, [7, 7])
assert lib.unread_batch_begin(c) == 0
assert lib.unread_pipe_cnt_get(c, 1, 0) == 0
assert lib.unread_pipe_cnt_incr(c, 1, 0, 1) == 0
assert exec_(c) == (EUNAVAIL, None)
lib.unread_close(c)
print("ok")
'''


def _preload(lib):
    """LD_PRELOAD for a sanitizer runtime libunread.so needs first."""
    syms = subprocess.run(["nm", "-D", lib], capture_output=True,
                          text=True).stdout
    if "__asan_" not in syms:
        return {}
    cc = os.environ.get("CC", "cc")
    rt = subprocess.run([cc, "-print-file-name=libasan.so"],
                        capture_output=True, text=True).stdout.strip()
    return {"LD_PRELOAD": rt, "ASAN_OPTIONS": "detect_leaks=0"}


def test_library_batch_api():
    with Server() as one, Server() as two:
        env = dict(os.environ, **_preload(LIB))
        p = subprocess.run(
            [sys.executable, "-c", CLIENT, LIB, "127.0.0.1:%d" % one.port,
             "127.0.0.1:%d" % two.port, "127.0.0.1:%d" % free_port()],
            capture_output=True, text=True, env=env, timeout=60)
        assert p.returncode == 0 and p.stdout.strip() == "ok", \
            p.stdout + p.stderr


test_library_batch_api.timeout = 60
