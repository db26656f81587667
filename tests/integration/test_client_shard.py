"""libunread's sharding client against real servers: three unreadd shards on
one machine, driven through unread-cli --cluster (which routes exactly as
the library does) and the example badge_service, checked shard by shard
over RESP.

Routing is stable (a uid's counters live on exactly one shard, whatever the
order of the server list), global writes reach every shard (and GRP.POST
seqs that disagree are reported), killing one shard degrades only its
users, and a client reconnects by itself after a shard restarts.
"""

import collections
import contextlib
import os
import signal
import subprocess
import tempfile
import time

from harness import BUILD, REPO, UNREAD_CLI, Server, info_flat

CC = os.environ.get("CC", "cc")


@contextlib.contextmanager
def shards(n=3):
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(Server()) for _ in range(n)]


def server_list(servers):
    return ",".join("127.0.0.1:%d" % s.port for s in servers)


def cli(servers, *args, input=None, timeout=30):
    argv = [UNREAD_CLI, "--cluster", server_list(servers)] + \
        [str(a) for a in args]
    return subprocess.run(argv, input=input, capture_output=True, text=True,
                          timeout=timeout)


def script(fmt, values):
    return "".join(fmt % v + "\n" for v in values)


def start_again(srv):
    """Starts a stopped server on its port and data directory, as an
    operator restarting a shard would."""
    err = open(srv._stderr_path, "ab")
    srv.proc = subprocess.Popen(srv.argv(), stdin=subprocess.DEVNULL,
                                stdout=err, stderr=err, cwd=srv.tmp.name)
    err.close()
    assert srv._wait_ready(), "restart failed:\n" + srv.stderr_tail()


def owners(servers, uids):
    """uid -> indexes of the shards where its counter type 0 is not 0."""
    conns = [s.resp() for s in servers]
    try:
        return {u: [i for i, c in enumerate(conns) if c.cmd("CNT.GET", u, 0)]
                for u in uids}
    finally:
        for c in conns:
            c.close()


def test_cluster_routes_each_uid_to_one_shard_stably():
    uids = range(1, 201)
    with shards(3) as srv:
        p = cli(srv, input=script("CNT.INCR %d 0", uids))
        assert p.returncode == 0, p.stderr
        assert p.stdout.split() == ["1", "1"] * len(uids)
        first = owners(srv, uids)
        assert all(len(v) == 1 for v in first.values()), first
        spread = collections.Counter(v[0] for v in first.values())
        assert len(spread) == 3 and min(spread.values()) > 30, spread

        # another client, the servers listed in another order: same shards
        p = cli(list(reversed(srv)), input=script("CNT.INCR %d 0", uids))
        assert p.returncode == 0, p.stderr
        assert p.stdout.split() == ["2", "2"] * len(uids)
        assert owners(srv, uids) == first


def test_cluster_global_writes_reach_every_shard():
    with shards(3) as srv:
        p = cli(srv, input="GRP.POST 7\nGRP.POST 7\nBC.PUBLISH 3\n"
                           "FEED.POST 11 4\nDOT.PUSH 5 1000\n")
        assert p.returncode == 0, p.stderr
        assert p.stdout.split() == ["1", "2", "1", "4", "1000"]
        for s in srv:
            with s.resp() as c:
                assert c.cmd("GRP.POST", 7) == 3
                assert c.cmd("BC.PUBLISH", 3) == 2
                assert c.cmd("FEED.POST", 11) == 5
                assert c.cmd("DOT.CHECK", 42, 5) == [1]

        # one shard posted out of band: the seqs disagree, and the client
        # says so instead of returning one of them
        with srv[1].resp() as c:
            assert c.cmd("GRP.POST", 7) == 4
        p = cli(srv, "GRP.POST", 7)
        assert p.returncode == 1
        assert "disagree" in p.stderr, p.stderr
        assert "127.0.0.1:%d=5" % srv[1].port in p.stderr, p.stderr


def test_cluster_killing_one_shard_degrades_only_its_users():
    uids = range(1, 61)
    with shards(3) as srv:
        p = cli(srv, input=script("CNT.SET %d 0 5", uids))
        assert p.returncode == 0, p.stderr
        own = owners(srv, uids)
        dead = 1
        dead_uids = [u for u in uids if own[u] == [dead]]
        live_uids = [u for u in uids if own[u] != [dead]]
        assert dead_uids and live_uids
        srv[dead].stop(signal.SIGKILL)

        t0 = time.monotonic()
        p = cli(srv, "--default", 0, "--no-raw",
                input=script("CNT.GET %d 0", uids))
        assert time.monotonic() - t0 < 10
        assert p.returncode == 0, p.stderr
        lines = p.stdout.splitlines()
        assert len(lines) == len(uids), p.stdout
        for u, line in zip(uids, lines):
            if u in dead_uids:
                assert line.startswith("(integer) 0 (degraded: "), line
                assert "127.0.0.1:%d" % srv[dead].port in line, line
            else:
                assert line == "(integer) 5", (u, line)

        # one shot: the default and exit status 2, or the value and 0
        p = cli(srv, "--default", 9, "CNT.GET", dead_uids[0], 0)
        assert (p.returncode, p.stdout) == (2, "9\n"), p
        assert "degraded" in p.stderr
        p = cli(srv, "--default", 9, "CNT.GET", live_uids[0], 0)
        assert (p.returncode, p.stdout) == (0, "5\n"), p
        # a write for a dead shard's user is refused, not queued silently
        p = cli(srv, "--default", 0, "CNT.INCR", dead_uids[0], 0)
        assert p.returncode == 1 and "Error" in p.stderr, p
        # without degraded mode the client will not start half blind
        p = cli(srv, "PING")
        assert p.returncode == 1 and "refused" in p.stderr, p
        start_again(srv[dead])


def test_cluster_client_reconnects_after_a_shard_restarts():
    with shards(3) as srv:
        own = None
        p = subprocess.Popen([UNREAD_CLI, "--cluster", server_list(srv)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, bufsize=1)
        try:
            def incr(uid):
                p.stdin.write("CNT.INCR %d 0\n" % uid)
                p.stdin.flush()
                return [p.stdout.readline().strip() for _ in range(2)]

            for uid in range(1, 31):
                assert incr(uid) == ["1", "1"]
            own = owners(srv, range(1, 31))
            for s in srv:
                s.stop()
                start_again(s)
            for uid in range(1, 31):
                value = incr(uid)
                assert len(value) == 2 and value[0].isdigit(), value
        finally:
            p.stdin.close()
            rc = p.wait(10)
            err = p.stderr.read()
            p.stdout.close()
            p.stderr.close()
        assert rc == 0 and "Error" not in err, err
        assert own is not None


def _sanitizer_flags(lib):
    """The -fsanitize flags libunread.a was built with (make asan/ubsan),
    which a program linking it needs too."""
    syms = subprocess.run(["nm", lib], capture_output=True, text=True).stdout
    kinds = [k for k, mark in (("address", "__asan_"),
                               ("undefined", "__ubsan_")) if mark in syms]
    return ["-fsanitize=" + ",".join(kinds)] if kinds else []


def wait_served(srv, n=50):
    """Waits until the example has sent the shard `srv` n commands (the
    kill below is then mid-run, however slowly the machine started it)."""
    def served():
        with srv.resp() as c:
            return int(info_flat(c.cmd("INFO", "stats"))
                       ["total_commands_processed"]) > n
    srv.wait_for(served, 20, "the example's first writes")


def test_badge_service_example_rides_out_a_shard_restart():
    lib = os.path.join(BUILD, "libunread.a")
    src = os.path.join(REPO, "client-lib", "examples", "badge_service.c")
    with tempfile.TemporaryDirectory() as tmp, shards(3) as srv:
        exe = os.path.join(tmp, "badge_service")
        b = subprocess.run([CC, "-std=c11", "-D_GNU_SOURCE", "-Wall",
                            "-Wextra", "-Werror", "-O1",
                            "-I" + os.path.join(REPO, "client-lib"), src, lib,
                            "-lxxhash", "-lssl", "-lcrypto", "-o", exe] +
                           _sanitizer_flags(lib),
                           capture_output=True, text=True)
        assert b.returncode == 0, b.stderr
        p = subprocess.Popen([exe, server_list(srv), "4"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        wait_served(srv[1])
        srv[1].stop(signal.SIGKILL)
        time.sleep(1.0)  # the outage the example rides out, not a wait
        start_again(srv[1])
        out, err = p.communicate(timeout=30)
        assert p.returncode == 0, out + err
        final = out.splitlines()[-1].split()
        assert final[0] == "final", out
        stats = dict(kv.split("=") for kv in final[1:])
        assert stats["queued"] == "0" and stats["dropped"] == "0", out
        assert int(stats["delivered"]) > 500, out
        assert int(stats["degraded_badges"]) > 0, out
        assert int(stats["retried"]) > 0, out


test_badge_service_example_rides_out_a_shard_restart.timeout = 60


def test_async_badge_example_rides_out_a_shard_restart():
    """The asynchronous example (built by the Makefile): 100k operations
    from one thread over three shards, one killed and restarted mid-run;
    every delivery is applied exactly once (journal-fsync always: a
    kill -9 loses no acknowledged write), badges of the dead shard are
    degraded meanwhile."""
    exe = os.path.join(BUILD, "async_badge")
    with contextlib.ExitStack() as stack:
        srv = [stack.enter_context(Server(journal_fsync="always"))
               for _ in range(3)]
        p = subprocess.Popen([exe, server_list(srv), "100000", "64", "2000"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        wait_served(srv[1])
        srv[1].stop(signal.SIGKILL)
        time.sleep(1.0)  # the outage the example rides out, not a wait
        start_again(srv[1])
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, out + err
        lines = out.splitlines()
        final = dict(kv.split("=") for kv in
                     [l for l in lines if l.startswith("final ")][0].split()[1:])
        assert final["ops"] == "100000" and final["delivered"] == "50000", out
        assert int(final["retries"]) > 0, out  # the restart was felt
        assert lines[-1] == "checked users=2000 mismatches=0", out
        # and the servers agree with the example's own count
        total = 0
        for s in srv:
            with s.resp() as c:
                for u in range(1, 2001):
                    total += c.cmd("CNT.GET", u, 3)
        assert total == 50000


test_async_badge_example_rides_out_a_shard_restart.timeout = 90


TYPES_CLIENT = r'''
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.unread_connect.restype = ctypes.c_void_p
lib.unread_connect.argtypes = [ctypes.c_char_p, ctypes.c_uint16, ctypes.c_int,
                               ctypes.c_char_p, ctypes.c_size_t]
lib.unread_type.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                            ctypes.POINTER(ctypes.c_uint)]
lib.unread_errstr.restype = ctypes.c_char_p
lib.unread_errstr.argtypes = [ctypes.c_void_p]
lib.unread_close.argtypes = [ctypes.c_void_p]
err = ctypes.create_string_buffer(256)
c = lib.unread_connect(b"127.0.0.1", int(sys.argv[2]), 2000, err, 256)
assert c, err.value
t = ctypes.c_uint(99)
assert lib.unread_type(c, b"dm", ctypes.byref(t)) == 0 and t.value == 2
assert lib.unread_type(c, b"ALPHA", ctypes.byref(t)) == 0 and t.value == 0
assert lib.unread_type(c, b"7", ctypes.byref(t)) == 0 and t.value == 7
assert lib.unread_type(c, b"mention", ctypes.byref(t)) == 4  # BADARG
assert b"mention" in lib.unread_errstr(c)
lib.unread_close(c)
print("ok")
'''


def _preload(lib):
    """LD_PRELOAD for a sanitizer runtime libunread.so needs first."""
    syms = subprocess.run(["nm", "-D", lib], capture_output=True,
                          text=True).stdout
    if "__asan_" not in syms:
        return {}
    rt = subprocess.run([CC, "-print-file-name=libasan.so"],
                        capture_output=True, text=True).stdout.strip()
    return {"LD_PRELOAD": rt, "ASAN_OPTIONS": "detect_leaks=0"}


def test_counter_types_by_name_through_the_library():
    """unread_type() asks the servers' counter-types once: names resolve
    to their position, numbers to themselves, unknown names are BADARG."""
    import sys
    lib = os.path.join(BUILD, "libunread.so")
    with Server(counter_types="alpha beta dm") as srv:
        p = subprocess.run([sys.executable, "-c", TYPES_CLIENT, lib,
                            str(srv.port)], capture_output=True, text=True,
                           env=dict(os.environ, **_preload(lib)), timeout=30)
        assert p.returncode == 0 and p.stdout.strip() == "ok", \
            p.stdout + p.stderr
