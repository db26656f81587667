"""unread-bench over TLS (--tls, bench/bench_tls.c) against a real unreadd
with a TLS port, and against redis-server over TLS when installed: every
reply checked and the audit clean through TLS, pipelined runs whose
replies span TLS records, --handshakes counting real handshakes, and the
failures: a CA that did not sign the server, a plaintext port, TLS
options without --tls. bench/tls.py's shortest run end to end. Timing
figures are never asserted here (they live in `make bench-tls`)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from harness import BUILD, REPO, Resp, free_port, info_flat
from test_bench import UNREAD_BENCH, check_clean
from test_tls import certs, tls_server


def bench(port, *args, expect_rc=0):
    argv = [UNREAD_BENCH, "--json", "-p", str(port), "-T", "1"] + \
        [str(a) for a in args]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert p.returncode == expect_rc, "exit %d\n%s%s" % (
        p.returncode, p.stdout, p.stderr)
    return (json.loads(p.stdout) if expect_rc == 0 else None), p.stderr


def stats(srv):
    with srv.resp() as x:
        return info_flat(x.cmd("INFO", "stats"))


def test_bench_over_tls_binary_and_text_audited():
    c = certs()
    with tls_server(tls_auth_clients="no") as srv:
        tp = srv.config["tls_port"]
        before = int(stats(srv)["tls_handshakes"])
        for target, wl, depth in (("binary", "cnt-incr", 1),
                                  ("binary", "conv-seq", 64),
                                  ("text", "cnt-mix", 16)):
            r, _ = bench(tp, "--tls", "--cacert", c.ca, "-t", target, "-w",
                         wl, "-c", 4, "-P", depth, "-d", 0.3, "-r", 500,
                         "--preload", "--audit")
            check_clean(r, wl, target)
            assert r["audit_mismatches"] == 0, r
            assert r["tls"].startswith("TLSv1."), r
        r, _ = bench(srv.port, "-w", "cnt-get", "-c", 1, "-n", 10)
        assert r["tls"] is None, r
        # the runs were TLS connections, counted by the server: 4 per
        # run and per preload, and the audit's
        assert int(stats(srv)["tls_handshakes"]) - before >= 3 * 9, stats(srv)


def test_bench_tls_with_client_certificates():
    c = certs()
    with tls_server(tls_auth_clients="yes") as srv:
        tp = srv.config["tls_port"]
        r, _ = bench(tp, "--tls", "--cacert", c.ca, "--cert", c.client,
                     "--key", c.client_key, "-w", "cnt-incr", "-c", 2,
                     "-n", 200, "--audit")
        assert r["ops"] == 200 and r["errors"] == 0, r
        assert r["audit_mismatches"] == 0, r
        assert r["server_cpu_s"] == -1, r  # no --server-pid
        # --server-pid: the server's CPU in the window, sampled
        r, _ = bench(tp, "--tls", "--cacert", c.ca, "--cert", c.client,
                     "--key", c.client_key, "-w", "cnt-incr", "-c", 4,
                     "-P", 16, "-d", 0.5, "--server-pid", srv.proc.pid)
        assert 0 <= r["server_cpu_s"] <= 0.5 * 1.05 + 0.02, r
        _, err = bench(tp, "--server-pid", "x", expect_rc=1)
        assert "bad value" in err, err
        # without a certificate the server refuses the handshake
        _, err = bench(tp, "--tls", "--cacert", c.ca, "-w", "cnt-incr",
                       "-c", 1, "-n", 10, expect_rc=1)
        assert "certificate" in err, err


def test_bench_tls_failures_are_clear():
    c = certs()
    with tls_server(tls_auth_clients="no") as srv:
        tp = srv.config["tls_port"]
        # a CA that did not sign the server's certificate
        _, err = bench(tp, "--tls", "--cacert", c.other_ca, "-c", 1, "-n",
                       10, expect_rc=1)
        assert "certificate" in err, err
        # TLS to the plaintext port: no handshake
        _, err = bench(srv.port, "--tls", "--cacert", c.ca, "-c", 1, "-n",
                       10, expect_rc=1)
        assert "TLS handshake" in err, err
        # plaintext to the TLS port: the run cannot get a reply
        p = subprocess.run([UNREAD_BENCH, "-p", str(tp), "-c", "1", "-n",
                            "1", "-T", "1"], capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == 1, p.stdout + p.stderr
        # a CA file that is not there, TLS options without --tls
        _, err = bench(tp, "--tls", "--cacert", "/nonexistent/ca.pem",
                       "-n", 1, expect_rc=1)
        assert "TLS set-up" in err, err
        _, err = bench(tp, "--cacert", c.ca, "-n", 1, expect_rc=1)
        assert "need --tls" in err, err
        _, err = bench(tp, "--tls", "--cert", c.client, "-n", 1,
                       expect_rc=1)
        assert "go together" in err, err


def test_bench_handshakes_counts_real_handshakes():
    c = certs()
    with tls_server(tls_auth_clients="no") as srv:
        tp = srv.config["tls_port"]
        before = stats(srv)
        r, _ = bench(tp, "--handshakes", "--tls", "--cacert", c.ca,
                     "-T", 2, "-c", 2, "-d", 0.5)
        assert r["mode"] == "handshakes" and r["tls"] is True, r
        assert r["handshakes"] > 0 and r["per_sec"] > 0, r
        after = stats(srv)
        # every counted handshake completed on the server (its PING
        # answered), none of them a resumed session
        got = int(after["tls_handshakes"]) - int(before["tls_handshakes"])
        assert got >= r["handshakes"], (got, r)
        assert after["tls_sessions_resumed"] == \
            before["tls_sessions_resumed"], (before, after)
        r, _ = bench(srv.port, "--handshakes", "-T", 2, "-c", 2, "-d", 0.3)
        assert r["tls"] is False and r["handshakes"] > 0, r
        # a wrong CA: the loop fails with the reason
        _, err = bench(tp, "--handshakes", "--tls", "--cacert", c.other_ca,
                       "-d", 0.3, expect_rc=1)
        assert "certificate" in err, err


def test_bench_redis_over_tls_when_installed():
    if shutil.which("redis-server") is None:
        print("skipped: redis-server not installed")
        return
    c = certs()
    with tempfile.TemporaryDirectory(prefix="unread-bench-tls-") as tmp:
        port, tport = free_port(), free_port()
        proc = subprocess.Popen(
            ["redis-server", "--port", str(port), "--tls-port", str(tport),
             "--tls-cert-file", c.server, "--tls-key-file", c.server_key,
             "--tls-ca-cert-file", c.ca, "--tls-auth-clients", "no",
             "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", tmp], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 10
            while True:
                try:
                    with Resp(port, 1) as x:
                        assert x.cmd("PING") == "PONG"
                    break
                except OSError:
                    assert time.monotonic() < deadline, "no redis"
                    time.sleep(0.02)
            # CNT's Lua script and CONV's function library go in over TLS
            for wl in ("cnt-incr", "conv-seq"):
                r, _ = bench(tport, "--tls", "--cacert", c.ca, "-t", "redis",
                             "-w", wl, "-c", 4, "-P", 16, "-d", 0.3, "-r",
                             500, "--preload")
                check_clean(r, wl, "redis")
            with Resp(port) as x:
                flat = x.cmd("HGETALL", "u:7")
                f = {flat[i]: int(flat[i + 1])
                     for i in range(0, len(flat), 2)}
                assert f and f.pop(b"total") == sum(f.values()), f
            r, _ = bench(tport, "--handshakes", "--tls", "--cacert", c.ca,
                         "-T", 2, "-d", 0.3)
            assert r["handshakes"] > 0, r
        finally:
            proc.terminate()
            proc.wait(10)


def test_tls_bench_script_end_to_end():
    """bench/tls.py's shortest run: every row, the handshakes, the idle
    memory and the goals, into a results file report.py renders."""
    if shutil.which("redis-server") is None:
        print("skipped: redis-server not installed")
        return
    with tempfile.TemporaryDirectory(prefix="tls-bench-test-") as d:
        out = os.path.join(d, "tls.json")
        p = subprocess.run(
            [sys.executable, os.path.join(REPO, "bench", "tls.py"),
             "--build", os.path.relpath(BUILD, REPO), "--seconds", "0.4",
             "--warmup", "0.05", "--reps", "1", "--keys", "2000",
             "--pipelines", "16", "--handshake-seconds", "0.5", "--idle",
             "50", "--retry-budget", "0", "--results", out],
            capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
        assert "Goals (issue 33, TLS):" in p.stdout, p.stdout
        doc = json.load(open(out))
        assert doc["kind"] == "tls" and doc["shortened"], doc["options"]
        for k in ("unreadd", "redis"):
            v = doc["negotiated"][k]
            assert len(v) == 1 and v[0].startswith("TLSv1.3 "), doc

        secs = [r["section"] for r in doc["rows"]]
        assert secs.count("throughput") == 2, secs
        assert secs.count("handshakes") == 2 and secs.count("idle") == 2
        for r in doc["rows"]:
            if r["section"] == "throughput":
                for k in ("unreadd_plain_ops", "unreadd_tls_ops",
                          "redis_plain_ops", "redis_tls_ops"):
                    assert r[k]["median"] > 0, (k, r)
            if r["section"] == "idle":
                # a TLS connection holds more than a plaintext one
                assert r["tls_bytes"]["median"] > 0, r
        goals = [g["goal"] for g in doc["goals"]]
        assert any("over TLS: unreadd / Redis >= 2.0" in g
                   for g in goals), goals
        assert any("TLS / plaintext of unreadd" in g for g in goals), goals
        sys.path.insert(0, os.path.join(REPO, "bench"))
        import report
        text = report.render("tls", out)
        assert "| cnt-incr | 16 |" in text, text
