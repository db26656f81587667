"""BC: broadcast channels over RESP multibulk, inline and binary (test
names end in _resp, _inline, _binary), the typed calls of libunread,
unread-cli, and a randomized run against a Python model across the
protocols.
"""

import ctypes
import os
import random
import signal
import tempfile

from harness import E, ID_MAX, U64_MAX, Server, info_flat, is_err, run_cli
from ways import Via, each_way, lib_connect, libunread


@each_way
def test_new_user_reads_zero_then_counts_later_publishes(bc):
    assert bc("BC.PUBLISH", 1) == 1
    assert bc("BC.PUBLISH", 1) == 2
    assert bc("BC.UNREAD", 7, 1) == 0  # registered at the head
    assert bc("BC.UNREAD", 7, 1) == 0
    assert bc("BC.PUBLISH", 1) == 3
    assert bc("BC.PUBLISH", 1) == 4
    assert bc("BC.UNREAD", 7, 1) == 2
    assert bc("BC.UNREAD", 8, 1) == 0  # a later user starts from here


@each_way
def test_read_resets(bc):
    bc("BC.UNREAD", 7, 1)
    for _ in range(3):
        bc("BC.PUBLISH", 1)
    assert bc("BC.UNREAD", 7, 1) == 3
    assert bc("BC.READ", 7, 1) == 0
    assert bc("BC.UNREAD", 7, 1) == 0
    bc("BC.PUBLISH", 1)
    assert bc("BC.UNREAD", 7, 1) == 1
    assert bc("BC.READ", 9, 1) == 0  # registers a new user too
    bc("BC.PUBLISH", 1)
    assert bc("BC.UNREAD", 9, 1) == 1


@each_way
def test_channels_are_independent(bc):
    assert bc("BC.UNREAD", 7, 2) == 0  # nothing published yet
    assert bc("BC.PUBLISH", 2) == 1
    assert bc("BC.UNREAD", 7, 2) == 1  # the first publish counts
    assert bc("BC.PUBLISH", ID_MAX) == 1
    assert bc("BC.PUBLISH", 0) == 1
    assert bc("BC.UNREAD", 7, 0) == 0
    assert bc("BC.UNREAD", ID_MAX, ID_MAX) == 0
    bc("BC.READ", 7, 2)
    bc("BC.PUBLISH", 0)
    assert bc("BC.UNREAD", 7, 0) == 1
    assert bc("BC.UNREAD", 7, 2) == 0


@each_way
def test_unread_is_not_capped(bc):
    bc("BC.UNREAD", 1, 5)
    for _ in range(150):
        bc("BC.PUBLISH", 5)
    assert bc("BC.UNREAD", 1, 5) == 150


@each_way
def test_bad_numbers_are_refused(bc):
    bc("BC.UNREAD", 1, 5)
    bc("BC.PUBLISH", 5)
    for bad in ("x", "-1", "1.5", "0x10", "+1", str(ID_MAX + 1)):
        bc.bad(bc("BC.PUBLISH", bad), "ERR ch must be")
        bc.bad(bc("BC.UNREAD", bad, 5), "ERR uid must be")
        bc.bad(bc("BC.UNREAD", 1, bad), "ERR ch must be")
        bc.bad(bc("BC.READ", bad, 5), "ERR uid must be")
        bc.bad(bc("BC.READ", 1, bad), "ERR ch must be")
    assert bc("BC.UNREAD", 1, 5) == 1  # nothing changed
    assert bc("BC.PUBLISH", 5) == 2


@each_way
def test_wrong_arity(bc):
    for name, args in (("BC.PUBLISH", []), ("BC.PUBLISH", [1, 2]),
                       ("BC.UNREAD", [1]),
                       ("BC.UNREAD", [1, 2, "WITHEXPIRY", 4]),
                       ("BC.READ", [1]), ("BC.READ", [1, 2, 3, 4])):
        bc.bad(bc(name, *args),
               "ERR wrong number of arguments for '%s'" % name, E["ARITY"])
    assert bc("BC.PUBLISH", 1) == 1


def test_state_is_shared_between_protocols_and_cli():
    with Server() as srv, srv.resp() as r, srv.bin() as b:
        assert r.cmd("BC.UNREAD", 1, 100) == 0
        assert b.call("BC.PUBLISH", 100) == 1
        assert r.inline("BC.PUBLISH 100") == 2
        assert b.call("BC.UNREAD", 1, 100) == 2
        out = run_cli(srv, "BC.UNREAD", 1, 100)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == ["2"], out.stdout
        out = run_cli(srv, "BC.READ", 1, 100)
        assert out.returncode == 0 and out.stdout.split() == ["0"], out
        assert r.cmd("BC.UNREAD", 1, 100) == 0
        info = info_flat(r.cmd("INFO", "memory"))
        assert info["bc_subscriptions"] == "1"
        assert int(info["bc_bytes"]) > 0
        assert b.call("DEBUG", "AUDIT") == 0


def test_client_library_calls():
    u64, u64p, vp = ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64), \
        ctypes.c_void_p
    lib = libunread({
        "unread_bc_publish": (ctypes.c_int, [vp, u64, u64p]),
        "unread_bc_unread": (ctypes.c_int, [vp, u64, u64, u64p]),
        "unread_bc_read": (ctypes.c_int, [vp, u64, u64]),
    })
    if lib is None:
        print("libunread.so cannot be loaded here (sanitizer build): "
              "covered by the plain build")
        return
    with Server() as srv:
        h = lib_connect(lib, srv)
        try:
            v = u64(99)
            assert lib.unread_bc_unread(h, 1, 5, ctypes.byref(v)) == 0
            assert v.value == 0
            assert lib.unread_bc_publish(h, 5, ctypes.byref(v)) == 0
            assert v.value == 1
            assert lib.unread_bc_publish(h, 5, None) == 0
            assert lib.unread_bc_unread(h, 1, 5, ctypes.byref(v)) == 0
            assert v.value == 2
            assert lib.unread_bc_read(h, 1, 5) == 0
            assert lib.unread_bc_unread(h, 1, 5, ctypes.byref(v)) == 0
            assert v.value == 0
            assert lib.unread_ping(h) == 0
        finally:
            lib.unread_close(h)


def test_registration_by_a_read_survives_restarts():
    """BC.UNREAD of a new user changes state: the journal must have it,
    or after a restart the user would be registered at a later head."""
    with tempfile.TemporaryDirectory(prefix="unreadd-bc-") as tmp:
        data = os.path.join(tmp, "data")
        os.makedirs(data)

        def on_dir():
            return Server(args=["--dir", data], check_exit=False,
                          save_seconds=0)

        with on_dir() as srv, srv.resp() as c:
            c.cmd("BC.PUBLISH", 1)
            c.cmd("BC.PUBLISH", 1)
            assert c.cmd("BC.UNREAD", 7, 1) == 0  # registered at 2
            c.cmd("BC.PUBLISH", 1)
            c.cmd("BC.READ", 8, 1)
            c.cmd("BC.PUBLISH", 1)
            srv.stop(signal.SIGKILL)  # the journal alone
        for _ in range(2):  # then from the snapshot written at SIGTERM
            with on_dir() as srv, srv.resp() as c:
                assert c.cmd("BC.UNREAD", 7, 1) == 2
                assert c.cmd("BC.UNREAD", 8, 1) == 1
                info = info_flat(c.cmd("INFO", "memory"))
                assert info["bc_subscriptions"] == "2"
                assert c.cmd("DEBUG", "AUDIT") == 0


def test_random_ops_match_model_across_protocols():
    seed = int(os.environ.get("UNREADD_TEST_SEED", "20240613"))
    rng = random.Random(seed)
    head, off = {}, {}
    with Server() as srv:
        ways = [Via(srv, k) for k in ("resp", "inline", "binary")]
        uids = [0, 1, ID_MAX] + [rng.randrange(1 << 63) for _ in range(8)]
        chans = [0, 3, ID_MAX] + [rng.randrange(1 << 63) for _ in range(2)]
        for i in range(2000):
            via = rng.choice(ways)
            u, ch = rng.choice(uids), rng.choice(chans)
            op = rng.random()
            where = "op %d (seed %d, %s)" % (i, seed, via.kind)
            if op < 0.3:
                head[ch] = head.get(ch, 0) + 1
                assert via("BC.PUBLISH", ch) == head[ch], where
            elif op < 0.8:
                off.setdefault((u, ch), head.get(ch, 0))
                want = head.get(ch, 0) - off[(u, ch)]
                assert via("BC.UNREAD", u, ch) == want, where
            else:
                off[(u, ch)] = head.get(ch, 0)
                assert via("BC.READ", u, ch) == 0, where
        assert ways[0]("DEBUG", "AUDIT") == 0
        info = info_flat(ways[0]("INFO", "memory"))
        assert int(info["bc_subscriptions"]) == len(off)
        for via in ways:
            via.close()


test_random_ops_match_model_across_protocols.timeout = 120


def test_errors_do_not_change_state():
    with Server() as srv, srv.resp() as c:
        c.cmd("BC.UNREAD", 1, 50)
        c.cmd("BC.PUBLISH", 50)
        for args in (("BC.PUBLISH", "x"), ("BC.UNREAD", 1), ("BC.READ", 1, "y"),
                     ("BC.READ", 1, 50, 2, 3), ("BC.READ", 1, 50, "z"),
                     ("BC.UNREAD", 1, 50, "WITHOUT")):
            assert is_err(c.cmd(*args)), args
        assert c.cmd("BC.UNREAD", 1, 50) == 1
        assert c.cmd("BC.PUBLISH", 50) == 2
