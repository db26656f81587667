"""unread-bench against a real server: short runs of each target with
--json, the preload and the audit, and error replies making it fail.
Timing figures are never asserted here (they live in `make bench`)."""

import json
import os
import shutil
import subprocess
import tempfile
import time

from harness import BUILD, Resp, Server, free_port

UNREAD_BENCH = os.path.join(BUILD, "unread-bench")


def bench(port, *args, expect_rc=0):
    argv = [UNREAD_BENCH, "--json", "-p", str(port), "-c", "4", "-P", "4",
            "-T", "1"] + [str(a) for a in args]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert p.returncode == expect_rc, "exit %d\n%s%s" % (
        p.returncode, p.stdout, p.stderr)
    return json.loads(p.stdout), p.stderr


def check_clean(r, workload, target):
    assert r["workload"] == workload and r["target"] == target, r
    assert r["ops"] > 0 and r["ops_per_sec"] > 0, r
    assert r["errors"] == 0 and r["first_error"] is None, r
    lat = r["latency_us"]
    assert 0 < lat["p50"] <= lat["p99"] <= lat["p999"] <= lat["max"], lat


def test_bench_binary_and_text_each_workload():
    assert os.path.exists(UNREAD_BENCH), "unread-bench not built"
    with Server() as srv:
        for target in ("binary", "text"):
            for wl in ("cnt-incr", "cnt-get", "cnt-mix"):
                r, _ = bench(srv.port, "-t", target, "-w", wl, "-d", "0.3",
                             "-r", 1000, "--preload", "--audit")
                check_clean(r, wl, target)
                assert r["audit_mismatches"] == 0, r


def test_bench_preload_gives_every_key_its_counters():
    with Server() as srv:
        r, _ = bench(srv.port, "-w", "cnt-get", "--load", "-r", 500,
                     "--types", 3)
        assert r["mode"] == "load" and r["ops"] == 500 * 3, r
        with srv.resp() as c:
            assert c.cmd("INFO", "memory").count(b"cnt_users:500\r") == 1
            for uid in (0, 1, 499):
                flat = c.cmd("CNT.GETALL", uid)
                assert flat[0::2] == [0, 1, 2], flat
                assert all(1 <= v <= 9 for v in flat[1::2]), flat
            assert c.cmd("CNT.GETALL", 500) == []


def test_bench_request_count_and_zipf():
    with Server() as srv:
        r, _ = bench(srv.port, "-w", "cnt-incr", "-n", 1000, "-r", 100,
                     "--zipf", "0.99")
        assert r["mode"] == "requests" and r["ops"] == 1000, r
        with srv.resp() as c:
            totals = [c.cmd("CNT.TOTAL", uid) for uid in range(100)]
        assert sum(totals) == 1000
        # Zipf: the most popular key gets far more than a uniform 1%.
        assert totals[0] > 50 and totals[0] == max(totals), totals[:10]


def test_bench_error_replies_fail_the_run():
    # Redis commands sent to unreadd: every reply is an error.
    with Server() as srv:
        r, err = bench(srv.port, "-t", "redis", "-w", "cnt-get", "-n", 200,
                       expect_rc=2)
        assert r["errors"] == 200, r
        assert "unknown command" in r["first_error"], r
        assert "FAILED" in err


def test_bench_bad_usage():
    for args in (["-w", "no-such"], ["-P", "0"], ["-t", "nope"],
                 ["--types", "9"], ["-d", "x"]):
        p = subprocess.run([UNREAD_BENCH] + args, capture_output=True,
                           text=True, timeout=10)
        assert p.returncode == 1, (args, p.stdout, p.stderr)
    p = subprocess.run([UNREAD_BENCH, "-p", str(free_port()), "-n", "1"],
                       capture_output=True, text=True, timeout=10)
    assert p.returncode == 1 and "connect" in p.stderr, p.stderr


def test_bench_list_names_the_redis_equivalents():
    p = subprocess.run([UNREAD_BENCH, "--list"], capture_output=True,
                       text=True, timeout=10)
    assert p.returncode == 0
    for needle in ("cnt-incr", "EVALSHA", "cnt-get", "HGET", "cnt-mix"):
        assert needle in p.stdout, p.stdout


def test_bench_redis_when_installed():
    if shutil.which("redis-server") is None:
        print("skipped: redis-server not installed")
        return
    with tempfile.TemporaryDirectory(prefix="unread-bench-test-") as tmp:
        port = free_port()
        proc = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", tmp],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 10
            while True:
                try:
                    with Resp(port, 1) as c:
                        assert c.cmd("PING") == "PONG"
                    break
                except OSError:
                    assert time.monotonic() < deadline, "redis did not start"
                    time.sleep(0.02)
            for wl in ("cnt-incr", "cnt-get", "cnt-mix"):
                r, _ = bench(port, "-t", "redis", "-w", wl, "-d", "0.3",
                             "-r", 1000, "--preload")
                check_clean(r, wl, "redis")
            with Resp(port) as c:
                for uid in (0, 7, 999):
                    flat = c.cmd("HGETALL", "u:%d" % uid)
                    f = {flat[i]: int(flat[i + 1])
                         for i in range(0, len(flat), 2)}
                    assert f.pop(b"total") == sum(f.values()), f
        finally:
            proc.terminate()
            proc.wait(10)
