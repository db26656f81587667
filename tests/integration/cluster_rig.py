"""unreadd nodes in cluster mode on loopback, built into a cluster by stock
`redis-cli --cluster create` (docs/OPERATIONS.md, "Cluster"): used by
test_cluster.py and the cluster fault suite. Not a test file.

CNode     an unreadd with cluster-enabled yes on a port of its own below
          55535 (Redis derives a bus port as port + 10000, and redis-cli
          shows it), restartable on that port with its dir and nodes.conf
          (sentinel_rig.Node).
Cluster   N masters with R replicas each: start() runs redis-cli --cluster
          create and waits until every node says cluster_state:ok and every
          node's CLUSTER NODES agrees on every master's slots.

Python 3 standard library only.
"""

import os
import random
import shutil
import socket
import subprocess
import tempfile

import harness
from harness import Resp
from sentinel_rig import Node, wait_until

REDIS_CLI = "redis-cli"


def low_port():
    """A free loopback port p with p + 10000 <= 65535 also free."""
    for _ in range(200):
        p = random.randint(20000, 55000)
        ok = True
        for q in (p, p + 10000):
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", q))
            except OSError:
                ok = False
            finally:
                s.close()
        if ok:
            return p
    raise RuntimeError("no free port pair below 55535")


def crc16(data):
    """CRC16-XMODEM, as Redis Cluster hashes keys (independent of C)."""
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def key_slot(key):
    k = str(key).encode()
    s = k.find(b"{")
    if s >= 0:
        e = k.find(b"}", s + 1)
        if e > s + 1:
            k = k[s + 1:e]
    return crc16(k) % 16384


class CNode(Node):
    def __init__(self, root, name, **config):
        config.setdefault("cluster_enabled", "yes")
        super().__init__(root, name, **config)
        self.fixed_port = low_port()

    def addr(self):
        """host:port as the cluster knows the node (its TLS port with
        tls-cluster yes)."""
        if self.config.get("tls_cluster") == "yes":
            return "127.0.0.1:%d" % self.config["tls_port"]
        return "127.0.0.1:%d" % self.port

    def nodes(self):
        """CLUSTER NODES as a list of dicts."""
        out = []
        for line in self.cmd("CLUSTER", "NODES").decode().splitlines():
            f = line.split(" ")
            out.append({"id": f[0], "addr": f[1].split("@")[0],
                        "flags": f[2].split(","), "master": f[3],
                        "epoch": int(f[6]), "link": f[7], "slots": f[8:]})
        return out

    def myid(self):
        return self.cmd("CLUSTER", "MYID").decode()

    def cinfo(self):
        return harness.info_flat(self.cmd("CLUSTER", "INFO"))


def signature(node):
    """What redis-cli compares: each master's id and slots, sorted."""
    sig = []
    for n in node.nodes():
        slots = sorted(s for s in n["slots"] if not s.startswith("["))
        if slots:
            sig.append(n["id"] + ":" + ",".join(slots))
    return "|".join(sorted(sig))


class Cluster:
    """with Cluster(masters=3, replicas=1) as cl: ..."""

    def __init__(self, masters=3, replicas=1, tls=None, **config):
        """tls: test certificates (tlsgen.Certs): every node with a TLS
        port, tls-cluster and tls-replication yes; redis-cli over TLS."""
        self.nmasters = masters
        self.nreplicas = replicas
        self.config = config
        self.tls = tls
        self.tmp = tempfile.mkdtemp(prefix="unreadd-cluster-")
        self.nodes = []

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.dump()
            self.stop()
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.dump()
        self.stop()
        return False

    def new_node(self, **config):
        cfg = dict(self.config)
        if self.tls is not None:
            cfg.update(tls_port=low_port(), tls_cluster="yes",
                       tls_replication="yes", tls_cert_file=self.tls.server,
                       tls_key_file=self.tls.server_key,
                       tls_ca_cert_file=self.tls.ca)
        cfg.update(config)
        n = CNode(self.tmp, "node%d" % len(self.nodes), **cfg).start()
        self.nodes.append(n)
        return n

    def start(self):
        for _ in range(self.nmasters * (1 + self.nreplicas)):
            self.new_node()
        out = self.cli("--cluster", "create",
                       *[n.addr() for n in self.nodes],
                       "--cluster-replicas", str(self.nreplicas),
                       "--cluster-yes", timeout=60)
        assert "[OK] All 16384 slots covered." in out, out
        self.wait_agree()
        self.wait_replicas()
        return self

    def wait_replicas(self, timeout=20):
        """Every live replica's link to its master is up."""
        def linked():
            for n in self.live():
                i = harness.info_flat(n.cmd("INFO", "replication"))
                if i.get("role") == "slave" and \
                        i.get("master_link_status") != "up":
                    return False
            return True
        wait_until(linked, timeout, "every replica's link")

    def cli(self, *args, timeout=30, check=True, input=None):
        if self.tls is not None:
            args = ("--tls", "--cacert", self.tls.ca, "--cert",
                    self.tls.client, "--key", self.tls.client_key) + args
        p = subprocess.run([REDIS_CLI] + list(args), capture_output=True,
                           text=True, timeout=timeout, input=input)
        if check and p.returncode != 0:
            raise AssertionError("redis-cli %s: exit %d\n%s%s" % (
                " ".join(args), p.returncode, p.stdout, p.stderr))
        return p.stdout + p.stderr

    def live(self):
        return [n for n in self.nodes if n.proc is not None]

    def wait_agree(self, timeout=20, nodes=None):
        """Every live node (or those given): cluster_state:ok and one
        signature, the one redis-cli's join wait compares."""
        def agreed():
            sigs = set()
            for n in nodes or self.live():
                if n.cinfo().get("cluster_state") != "ok":
                    return False
                sigs.add(signature(n))
            return len(sigs) == 1
        wait_until(agreed, timeout, "every node to agree on the slots")

    def masters(self):
        """The live nodes that are masters with slots, by their own word."""
        out = []
        for n in self.live():
            me = [x for x in n.nodes() if "myself" in x["flags"]][0]
            if "master" in me["flags"] and me["slots"]:
                out.append(n)
        return out

    def by_port(self, port):
        return [n for n in self.nodes
                if port in (n.port, n.config.get("tls_port"))][0]

    def owner(self, key, via=None):
        """The node serving key's slot, per CLUSTER SLOTS of via."""
        via = via or self.live()[0]
        slot = key_slot(key)
        for r in via.cmd("CLUSTER", "SLOTS"):
            if r[0] <= slot <= r[1]:
                return self.by_port(r[2][1])
        return None

    def dump(self):
        for n in self.nodes:
            try:
                print("--- %s (port %s)\n%s" % (n.root, n.port,
                                                n.stderr_tail()))
            except Exception:
                pass

    def stop(self):
        for n in self.nodes:
            try:
                n.stop()
            except Exception:
                pass
        shutil.rmtree(self.tmp, ignore_errors=True)


def bc_head(node, ch):
    """Channel ch's head as node holds it: USER.INFO of a scratch user of
    the node, registered in the channel, shows it."""
    uid = scratch_uid(node)
    node.cmd("BC.UNREAD", uid, ch)
    for line in node.cmd("USER.INFO", uid):
        text = line.decode() if isinstance(line, bytes) else str(line)
        if text.startswith("bc %d: head=" % ch):
            return int(text.split("head=")[1].split()[0])
    raise AssertionError("no head for channel %d on %d" % (ch, node.port))


def slots_of(node):
    """The slots node serves, per its own CLUSTER SLOTS."""
    out = set()
    for r in node.cmd("CLUSTER", "SLOTS"):
        if r[2][1] in (node.port, node.config.get("tls_port")):
            out.update(range(r[0], r[1] + 1))
    return out


def scratch_uid(node):
    """A uid of node's slots from 900000000 up, kept for probes."""
    slots = slots_of(node)
    for u in range(900000000, 900100000):
        if key_slot(u) in slots:
            return u
    raise AssertionError("no scratch uid")


def resp(node, timeout=5.0):
    return Resp(node.port, timeout=timeout)
