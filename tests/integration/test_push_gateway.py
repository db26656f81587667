"""client-lib/examples/push_gateway.c, the gateway as deployed (issue 34):
G connections (libunread asynchronous handles) hold N users' badge
subscriptions between them, user i on gateway i mod G; every badge
message of a write to one of those users arrives once, on its user's
gateway, and is counted; bad arguments are refused. Then the bench's
use of it: pubsub-bench -m gateway --external drives writers only, and
the server's count of messages is the example's.
"""

import json
import os
import signal
import subprocess

from harness import BUILD, Server, info_flat
from test_client_pubsub import WAIT, Lines, wait_pubsub

GATEWAY = os.path.join(BUILD, "push_gateway")
PUBSUB_BENCH = os.path.join(BUILD, "pubsub-bench")


def delivered(srv):
    with srv.resp() as c:
        return int(info_flat(c.cmd("INFO", "stats"))["pubsub_delivered"])


def final(gw):
    gw.p.send_signal(signal.SIGTERM)
    line = gw.until(lambda l: l.startswith("final "))[-1]
    assert gw.p.wait(timeout=WAIT) == 0, gw.p.stderr.read()
    return dict(kv.split("=") for kv in line.split()[1:])


def test_push_gateway_holds_users_on_few_connections():
    with Server(notify_badges="yes") as srv:
        gw = Lines([GATEWAY, "127.0.0.1:%d" % srv.port, "3", "300", "5000"],
                   stdin=False)
        try:
            assert gw.next() == "subscribed 3 300"
            wait_pubsub(srv, ("NUMSUB", "badge:5000"), 1)
            with srv.resp() as c:
                assert len(c.cmd("PUBSUB", "CHANNELS", "badge:*")) == 300
                assert c.cmd("PUBSUB", "NUMSUB", "badge:5299") == \
                    [b"badge:5299", 1]
                assert c.cmd("PUBSUB", "NUMSUB", "badge:5300") == \
                    [b"badge:5300", 0]
                # three connections hold them all (and ours)
                clients = c.cmd("CLIENT", "LIST").decode().splitlines()
                assert len(clients) == 4, clients
                users = [5000 + i for i in range(0, 300, 7)]  # 43 users
                for u in users:
                    c.cmd("CNT.INCR", u, 0)
                c.cmd("CNT.INCR", 4999, 0)   # not the gateway's
                c.cmd("CNT.INCR", 5300, 0)
                c.cmd("CONV.INCR", 5001, 9, 2)  # another family's badge
            srv.wait_for(lambda: delivered(srv) == len(users) + 1,
                         WAIT, "the messages to be sent")
            gw.p.send_signal(signal.SIGUSR1)
            assert gw.until(lambda l: l.startswith("messages "))[-1] == \
                "messages %d" % (len(users) + 1)
            f = final(gw)
            assert f["messages"] == str(len(users) + 1) and \
                f["stray"] == "0", f
            per = [int(x) for x in f["per_gateway"].split(",")]
            # user 5000 + i on gateway i mod 3; 5001's CONV badge on 1
            want = [0, 0, 0]
            for u in users + [5001]:
                want[(u - 5000) % 3] += 1
            assert per == want, (per, want)
        finally:
            if gw.p.poll() is None:
                gw.p.kill()
            gw.p.wait()


def test_push_gateway_refuses_bad_arguments():
    for args in ([], ["127.0.0.1:1"], ["127.0.0.1:1", "0", "10"],
                 ["127.0.0.1:1", "1025", "10"], ["127.0.0.1:1", "2", "0"],
                 ["127.0.0.1:1", "2", "x"], ["127.0.0.1:1", "2", "10", "-1"],
                 ["127.0.0.1:1", "2", "10", "18446744073709551615"]):
        p = subprocess.run([GATEWAY] + args, capture_output=True, text=True,
                           timeout=WAIT)
        assert p.returncode == 2 and "usage: push_gateway" in p.stderr, \
            (args, p.returncode, p.stderr)


def test_pubsub_bench_drives_the_example_gateway():
    with Server(notify_badges="yes") as srv:
        gw = Lines([GATEWAY, "127.0.0.1:%d" % srv.port, "4", "2000"],
                   stdin=False)
        try:
            assert gw.next() == "subscribed 4 2000"
            before = delivered(srv)
            p = subprocess.run(
                [PUBSUB_BENCH, "--json", "-m", "gateway", "--external",
                 "-g", "4", "-s", "2000", "-p", str(srv.port), "-c", "2",
                 "-P", "8", "-d", "0.3", "--warmup", "0.1"],
                capture_output=True, text=True, timeout=60)
            assert p.returncode == 0, p.stdout + p.stderr
            r = json.loads(p.stdout)
            assert r["mode"] == "gateway" and r["gateways"] == 4
            assert r["messages_per_sec"] == 0 and r["latency_samples"] == 0
            assert r["server_messages_per_sec"] > 0, r
            assert r["server_writes_per_message"] > 0, r
            sent = delivered(srv) - before
            assert sent > 0
            f = final(gw)
            assert int(f["messages"]) == sent and f["stray"] == "0", (f, sent)
        finally:
            if gw.p.poll() is None:
                gw.p.kill()
            gw.p.wait()
        # --external belongs to gateway mode
        p = subprocess.run([PUBSUB_BENCH, "--external", "-p", str(srv.port)],
                           capture_output=True, text=True, timeout=WAIT)
        assert p.returncode == 1 and "usage" in p.stderr
