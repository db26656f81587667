"""A replicated unreadd under real redis-sentinel, on loopback free ports
(docs/OPERATIONS.md, "Replicas and failover"): used by test_sentinel.py
and the failover suite (tests/faults/failover.py). Not a test file.

Node      an unreadd on a data dir and config file the rig keeps, on a port
          it keeps across restarts (kill -9 and start again as the same
          instance, as a supervisor restarts it), started with --config so
          that sentinel's CONFIG REWRITE has a file to write.
Sentinel  a redis-sentinel process with its own config file.
Group     1 primary, N replicas and M sentinels monitoring it under one
          master name: start(), healthy(), master(), nodes by port.

Python 3 standard library only (redis-py writers run in Debian's python3,
see failover.py).
"""

import os
import shutil
import signal
import subprocess
import tempfile
import time

import harness
from harness import Resp, Server, free_port, info_flat

MASTER = "unread"


def wait_until(pred, timeout=10.0, what="condition", step=0.05):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = pred()
        except (OSError, harness.ConnectionClosed, KeyError, ValueError,
                TypeError) as e:
            # a node restarting, or INFO between two states (a replica in
            # its handshake has no offset yet): look again
            last = e
        if last and not isinstance(last, Exception):
            return last
        time.sleep(step)
    raise AssertionError("timed out after %.0f s waiting for %s (last: %r)" %
                         (timeout, what, last))


class Node(Server):
    """An unreadd the rig restarts on the same port, dir and config file."""

    def __init__(self, root, name, **config):
        config.setdefault("save_seconds", 0)
        self.root = os.path.join(root, name)
        os.makedirs(os.path.join(self.root, "data"), exist_ok=True)
        self.conf = os.path.join(self.root, "unreadd.conf")
        if not os.path.exists(self.conf):
            open(self.conf, "w").write("# written by sentinel_rig.py\n")
        super().__init__(config_file=self.conf, **config)
        self.fixed_port = None

    def argv(self):
        argv = super().argv()
        argv[argv.index("--dir") + 1] = os.path.join(self.root, "data")
        return argv

    def start(self):
        if self.fixed_port is None:
            super().start()
            self.fixed_port = self.port
            return self
        # Restart on the same port (a sentinel knows the instance by it).
        self.tmp = tempfile.TemporaryDirectory(prefix="unreadd-test-")
        os.makedirs(os.path.join(self.tmp.name, "data"))
        self._stderr_path = os.path.join(self.root, "stderr.log")
        self.port = self.fixed_port
        err = open(self._stderr_path, "ab")
        self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL,
                                     stdout=err, stderr=err, cwd=self.root)
        err.close()
        deadline = time.monotonic() + 15
        while not self._wait_ready():
            if time.monotonic() > deadline:
                raise harness.ServerExited("restart on port %d failed:\n%s" %
                                           (self.port, self.stderr_tail()))
            # The old socket may linger a moment: try again.
            self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL,
                                         stdout=open(self._stderr_path, "ab"),
                                         stderr=subprocess.STDOUT,
                                         cwd=self.root)
            time.sleep(0.1)
        return self

    def kill9(self):
        if self.proc is not None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
            self.proc = None

    def cmd(self, *args, timeout=5.0):
        with Resp(self.port, timeout=timeout) as c:
            return c.cmd(*args)

    def info(self, section="replication"):
        return info_flat(self.cmd("INFO", section))


class Sentinel:
    def __init__(self, root, i, primary_port, quorum, down_after_ms,
                 failover_timeout_ms):
        self.dir = os.path.join(root, "sentinel%d" % i)
        os.makedirs(self.dir, exist_ok=True)
        self.port = free_port()
        self.conf = os.path.join(self.dir, "sentinel.conf")
        with open(self.conf, "w") as f:
            f.write("port %d\nbind 127.0.0.1\ndir %s\n" % (self.port, self.dir))
            f.write("sentinel monitor %s 127.0.0.1 %d %d\n" %
                    (MASTER, primary_port, quorum))
            f.write("sentinel down-after-milliseconds %s %d\n" %
                    (MASTER, down_after_ms))
            f.write("sentinel failover-timeout %s %d\n" %
                    (MASTER, failover_timeout_ms))
            f.write("sentinel parallel-syncs %s 2\n" % MASTER)
        self.log = os.path.join(self.dir, "sentinel.log")
        self.proc = subprocess.Popen(["redis-sentinel", self.conf],
                                     stdin=subprocess.DEVNULL,
                                     stdout=open(self.log, "ab"),
                                     stderr=subprocess.STDOUT, cwd=self.dir)

    def cmd(self, *args):
        with Resp(self.port, timeout=5.0) as c:
            return c.cmd(*args)

    def master(self):
        """SENTINEL MASTER as a dict of str."""
        r = self.cmd("SENTINEL", "MASTER", MASTER)
        return {r[i].decode(): r[i + 1].decode() for i in range(0, len(r), 2)}

    def replicas(self):
        out = []
        for r in self.cmd("SENTINEL", "REPLICAS", MASTER):
            out.append({r[i].decode(): r[i + 1].decode()
                        for i in range(0, len(r), 2)})
        return out

    def master_port(self):
        r = self.cmd("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER)
        return int(r[1]) if isinstance(r, list) else None

    def log_text(self):
        try:
            return open(self.log, errors="replace").read()
        except OSError:
            return ""

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


class Group:
    """with Group(replicas=2, sentinels=3) as g: ..."""

    def __init__(self, replicas=2, sentinels=3, quorum=2, down_after_ms=1000,
                 failover_timeout_ms=10000, **config):
        self.nrep = replicas
        self.nsent = sentinels
        self.quorum = quorum
        self.down_after_ms = down_after_ms
        self.failover_timeout_ms = failover_timeout_ms
        self.config = config
        self.tmp = tempfile.mkdtemp(prefix="unreadd-sentinel-")
        self.nodes = []
        self.sentinels = []

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.dump()
        self.stop()
        return False

    def start(self):
        primary = Node(self.tmp, "node0", **self.config).start()
        self.nodes.append(primary)
        for i in range(self.nrep):
            self.nodes.append(Node(self.tmp, "node%d" % (i + 1),
                                   replicaof="127.0.0.1 %d" % primary.port,
                                   **self.config).start())
        for i in range(self.nsent):
            self.sentinels.append(Sentinel(self.tmp, i, primary.port,
                                           self.quorum, self.down_after_ms,
                                           self.failover_timeout_ms))
        self.wait_healthy(primary)

    def sentinel_list(self):
        return ",".join("127.0.0.1:%d" % s.port for s in self.sentinels)

    def node(self, port):
        return next(n for n in self.nodes if n.fixed_port == port)

    def master(self):
        """The node every sentinel names as the master (waits for them to
        agree)."""
        def agreed():
            ports = set()
            for s in self.sentinels:
                ports.add(s.master_port())
            return ports.pop() if len(ports) == 1 else None
        return self.node(wait_until(agreed, 30, "sentinels to agree"))

    def wait_healthy(self, primary, timeout=30):
        """Every sentinel sees primary as a healthy master with every other
        node as an online replica and every other sentinel; every replica's
        link is up and at the primary's offset."""
        others = [n for n in self.nodes if n is not primary]

        def ok():
            for s in self.sentinels:
                m = s.master()
                if int(m["port"]) != primary.port or \
                        m["flags"] != "master" or \
                        int(m["num-slaves"]) != len(others) or \
                        int(m["num-other-sentinels"]) != self.nsent - 1:
                    return False
                reps = s.replicas()
                if sorted(int(r["port"]) for r in reps) != \
                        sorted(n.port for n in others):
                    return False
                if any(r["flags"] != "slave" or
                       r["master-link-status"] != "ok" for r in reps):
                    return False
            off = primary.info()["master_repl_offset"]
            for n in others:
                i = n.info()
                if i["role"] != "slave" or \
                        int(i["master_port"]) != primary.port \
                        or i["master_link_status"] != "up":
                    return False
                if i["slave_repl_offset"] != off:
                    return False
            return True
        wait_until(ok, timeout, "a healthy group under %d" % primary.port,
                   step=0.2)

    def dump(self):
        """What the sentinels logged, for a failure's report."""
        for s in self.sentinels:
            print("---- sentinel %d log (tail)" % s.port)
            print("\n".join(s.log_text().splitlines()[-25:]))
        for n in self.nodes:
            print("---- unreadd %s stderr (tail)" % n.fixed_port)
            print(n.stderr_tail(15))

    def stop(self):
        for s in self.sentinels:
            s.stop()
        for n in self.nodes:
            if n.alive():
                n.stop(timeout=20)
                n.check_no_sanitizer_report()
        shutil.rmtree(self.tmp, ignore_errors=True)
