"""redis-sentinel (Debian's, 7.0) monitoring unreadd (docs/OPERATIONS.md,
"Replicas and failover"): three real sentinels see a primary with two
replicas as Redis's, discover each other over the hello channel, and the
transaction a sentinel sends to reconfigure a server does what it does on
Redis; unread-cli (libunread) finds the master or a replica through them.
Failovers themselves, many times over with writers: tests/faults/failover.py.
"""

import os
import re
import subprocess

from harness import (UNREAD_CLI, Resp, Server, assert_err, free_port,
                     info_flat, is_err, run_redis_cli)
from sentinel_rig import MASTER, Group, wait_until


def cli(args, timeout=20):
    return subprocess.run([UNREAD_CLI, "--raw"] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=timeout)


def test_sentinels_monitor_a_group():
    with Group(replicas=2, sentinels=3) as g:
        primary, reps = g.nodes[0], g.nodes[1:]
        # Each sentinel: a healthy master, both replicas, the two others
        # (found over __sentinel__:hello), and a quorum that can fail over.
        for s in g.sentinels:
            m = s.master()
            assert m["flags"] == "master" and m["role-reported"] == "master"
            assert m["runid"] == primary.info("server")["run_id"]
            assert int(m["num-slaves"]) == 2
            assert int(m["num-other-sentinels"]) == 2
            assert s.cmd("SENTINEL", "CKQUORUM", MASTER).startswith("OK")
            others = s.cmd("SENTINEL", "SENTINELS", MASTER)
            assert len(others) == 2
            for r in s.replicas():
                node = g.node(int(r["port"]))
                assert r["runid"] == node.info("server")["run_id"]
                assert r["role-reported"] == "slave"
                assert int(r["master-port"]) == primary.port
        # The hello channel: every sentinel subscribed on every node, and
        # named its links as Redis's sentinels do.
        for n in g.nodes:
            numsub = n.cmd("PUBSUB", "NUMSUB", "__sentinel__:hello")
            assert numsub == [b"__sentinel__:hello", 3], numsub
            names = re.findall(r"name=(\S*)", n.cmd("CLIENT", "LIST").decode())
            assert sum(x.startswith("sentinel-") and x.endswith("-cmd")
                       for x in names) == 3, names
            assert sum(x.endswith("-pubsub") for x in names) == 3, names
        # redis-cli against a replica shows role:slave the Redis way.
        p = run_redis_cli(reps[0], "INFO", "replication")
        assert p.returncode == 0
        i = info_flat(p.stdout)
        assert i["role"] == "slave" and i["master_link_status"] == "up"
        assert int(i["master_port"]) == primary.port
        assert re.search(r"^slave0:ip=127\.0\.0\.1,port=\d+,state=online,"
                         r"offset=\d+,lag=\d+\r?$",
                         run_redis_cli(primary, "INFO", "replication").stdout,
                         re.M)
        role = run_redis_cli(reps[1], "ROLE").stdout.split()
        assert role[:3] == ["slave", "127.0.0.1", str(primary.port)], role


test_sentinels_monitor_a_group.timeout = 60


def test_the_reconfiguration_transaction():
    """What sentinelSendSlaveOf sends: MULTI, SLAVEOF, CONFIG REWRITE,
    CLIENT KILL TYPE normal, CLIENT KILL TYPE pubsub, EXEC; the sender
    survives (SKIPME yes), every other normal and pubsub client is closed,
    replication links are not, and the config file says where it is."""
    with Server(save_seconds=0) as primary:
        conf_dir = primary.tmp.name
        conf = os.path.join(conf_dir, "replica.conf")
        open(conf, "w").write("save-seconds 0\n")
        with Server(config_file=conf,
                    replicaof="127.0.0.1 %d" % primary.port) as rep:
            wait_until(lambda: info_flat(rep.resp().cmd(
                "INFO", "replication"))["master_link_status"] == "up",
                what="the link")
            normal, sub = rep.resp(), rep.resp()
            assert sub.cmd("SUBSCRIBE", "__sentinel__:hello")[0] == \
                b"subscribe"
            assert normal.cmd("PING") == "PONG"
            with rep.resp() as s:
                assert s.cmd("CLIENT", "SETNAME", "sentinel-1234abcd-cmd") \
                    == "OK"
                for c in (["MULTI"], ["SLAVEOF", "NO", "ONE"],
                          ["CONFIG", "REWRITE"],
                          ["CLIENT", "KILL", "TYPE", "normal"],
                          ["CLIENT", "KILL", "TYPE", "pubsub"]):
                    assert s.cmd(*c) in ("OK", "QUEUED"), c
                out = s.cmd("EXEC")
                assert out[0] == "OK" and out[1] == "OK", out
                assert out[2] >= 1 and out[3] == 1, out
                assert s.cmd("PING") == "PONG"  # the sender survives
                normal.wait_closed()
                sub.wait_closed()
                assert s.cmd("ROLE")[0] == b"master"
                assert "replicaof" not in open(conf).read()
                # Back under the primary, as a failover repoints a replica.
                s.cmd("MULTI")
                s.cmd("SLAVEOF", "127.0.0.1", primary.port)
                s.cmd("CONFIG", "REWRITE")
                s.cmd("CLIENT", "KILL", "TYPE", "normal")
                s.cmd("CLIENT", "KILL", "TYPE", "pubsub")
                out = s.cmd("EXEC")
                assert out[:2] == ["OK", "OK"] and out[3] == 0, out
                assert re.search(r"^replicaof 127\.0\.0\.1 %d$" % primary.port,
                                 open(conf).read(), re.M)
                wait_until(lambda: info_flat(s.cmd("INFO", "replication"))
                           ["master_link_status"] == "up", what="relink")
                # The primary's replication link is no normal client: a
                # CLIENT KILL TYPE normal there leaves it.
                with primary.resp() as p:
                    p.cmd("CLIENT", "KILL", "TYPE", "normal")
                    assert info_flat(p.cmd("INFO", "replication"))[
                        "connected_slaves"] == "1"
                # Bad input inside the transaction fails in its place.
                s.cmd("MULTI")
                s.cmd("SLAVEOF", "127.0.0.1", "notaport")
                s.cmd("CLIENT", "KILL", "TYPE", "bogus")
                out = s.cmd("EXEC")
                assert is_err(out[0]) and is_err(out[1]), out
                assert s.cmd("ROLE")[0] == b"slave"


def test_unread_cli_through_sentinels():
    with Group(replicas=2, sentinels=3) as g:
        primary = g.nodes[0]
        sl = g.sentinel_list()
        p = cli(["--sentinel", sl, "--master", MASTER, "CNT.INCR", 7, 1, 3])
        assert p.returncode == 0, p.stderr
        assert p.stdout.split() == ["3", "3"]
        assert primary.cmd("CNT.GET", 7, 1) == 3
        # Reads from a replica: it has the write once synced; writes there
        # answer READONLY.
        wait_until(lambda: all(n.cmd("CNT.GET", 7, 1) == 3
                               for n in g.nodes[1:]), what="replicas")
        p = cli(["--sentinel", sl, "--master", MASTER, "--replica",
                 "CNT.GET", 7, 1])
        assert p.returncode == 0 and p.stdout.strip() == "3", p
        p = cli(["--sentinel", sl, "--master", MASTER, "--replica",
                 "CNT.INCR", 7, 1])
        assert p.returncode == 1 and "READONLY" in p.stdout + p.stderr, p
        # One sentinel down of three: the others answer.
        g.sentinels[0].stop()
        p = cli(["--sentinel", sl, "--master", MASTER, "CNT.GET", 7, 1])
        assert p.returncode == 0 and p.stdout.strip() == "3", p
        # Bad input: an unknown master, no sentinel reachable, both
        # --sentinel and --cluster.
        p = cli(["--sentinel", sl, "--master", "nosuch", "PING"])
        assert p.returncode == 1 and "no master named 'nosuch'" in p.stderr
        dead = "127.0.0.1:%d" % free_port()
        p = cli(["--sentinel", dead, "--master", MASTER, "PING"])
        assert p.returncode == 1 and "none of 1 sentinels" in p.stderr, p
        p = cli(["--sentinel", sl, "--cluster", "127.0.0.1:1", "PING"])
        assert p.returncode == 1 and "not both" in p.stderr
        p = cli(["--sentinel", sl, "--master", "a,,b", "PING"])
        assert p.returncode == 1 and "empty master name" in p.stderr, p


test_unread_cli_through_sentinels.timeout = 60
