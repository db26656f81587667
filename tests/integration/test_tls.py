"""TLS (issue 33; docs/OPERATIONS.md "Security"): certificates made at test
time by tests/integration/tlsgen.py, a server with tls-port beside its
plaintext port (or alone), both protocols over TLS on one port (RESP from
redis-cli --tls and redis-py ssl=True, binary frames from libunread's two
handles and unread-cli --tls), certificates checked both ways, rotation
by CONFIG SET, replication over TLS, the metrics port over TLS, and bad
input: plaintext bytes on the TLS port, a handshake cut at every byte,
1,000 half-open handshakes against the limits.
"""

import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time

from harness import (BUILD, UNREAD_CLI, Resp, Server, free_port,
                     info_flat, is_err)
from sentinel_rig import wait_until
from test_client_cluster import Drv
import tlsgen

DEBIAN_PY = "/usr/bin/python3"
_CERTS = None


def certs():
    """The test certificates, made once per run."""
    global _CERTS
    if _CERTS is None:
        d = os.path.join(tempfile.gettempdir(), "unreadd-test-certs-%d" %
                         os.getpid())
        _CERTS = tlsgen.certs(d)
    return _CERTS


def tls_server(c=None, **config):
    """A Server with TLS on a port of its own beside the plaintext one."""
    c = c or certs()
    config.setdefault("tls_port", free_port())
    config.setdefault("tls_cert_file", c.server)
    config.setdefault("tls_key_file", c.server_key)
    config.setdefault("tls_ca_cert_file", c.ca)
    return Server(**config)


def ctx(c=None, cert=True, ca=None):
    """A client context trusting the test CA (or ca), with the client
    certificate unless cert is False (or another (cert, key) pair)."""
    c = c or certs()
    x = ssl.create_default_context(cafile=ca or c.ca)
    if cert is True:
        x.load_cert_chain(c.client, c.client_key)
    elif cert:
        x.load_cert_chain(*cert)
    return x


def tls_resp(port, context=None, timeout=5.0):
    r = Resp.__new__(Resp)
    s = socket.create_connection(("127.0.0.1", port), timeout)
    r.sock = (context or ctx()).wrap_socket(s, server_hostname="localhost")
    r.sock.settimeout(timeout)
    r.buf = bytearray()
    return r


def cli(*args, timeout=20):
    return subprocess.run([UNREAD_CLI] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=timeout)


def rcli(*args, timeout=20):
    return subprocess.run(["redis-cli"] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=timeout)


def tls_args(srv, c=None, cert=True):
    c = c or certs()
    a = ["-p", srv.config["tls_port"], "--tls", "--cacert", c.ca]
    if cert:
        a += ["--cert", c.client, "--key", c.client_key]
    return a


def handshake_fails(port, context):
    try:
        with tls_resp(port, context) as r:
            # TLS 1.3: a refused client certificate shows at the first read
            return is_err(r.cmd("PING")) or False
    except (ssl.SSLError, ConnectionError, OSError):
        return True


def test_both_protocols_and_every_client_over_tls():
    c = certs()
    with tls_server() as srv:
        tp = srv.config["tls_port"]
        # RESP: redis-cli --tls and a Python TLS socket
        out = rcli(*tls_args(srv), "CNT.INCR", 42, 0, 5)
        assert out.returncode == 0 and out.stdout.split() == ["5", "5"], out
        with tls_resp(tp) as r:
            assert r.cmd("CNT.INCR", 42, 0, 1) == [6, 6]
            assert r.cmd("HELLO", 3)[b"proto"] == 3
        # binary frames: unread-cli --tls and both libunread handles
        out = cli(*tls_args(srv), "CNT.GET", 42, 0)
        assert out.returncode == 0 and out.stdout.strip() == "6", out
        for mode in ("sync", "async"):
            d = Drv(mode, "127.0.0.1:%d" % tp, "--plain", "--tls", c.ca,
                    c.client, c.client_key)
            try:
                assert d.incr(42, 0, 1)[0] == 0
                # a reply of many TLS records (over 16 KB), and many users
                uids = list(range(1, 3001))
                rc, totals = d.mtotal(uids)
                assert rc == 0 and len(totals) == 3000 and totals[41] > 0
                rc, out, _ = d.cmd("INFO")
                assert rc == 0 and "tls_clients" in out, out[:200]
            finally:
                d.close()
        # the same data on the plaintext port
        assert srv.resp().cmd("CNT.GET", 42, 0) == 8
        info = info_flat(srv.resp().cmd("INFO", "server"))
        assert info["tcp_port"] == str(srv.port), info
        # redis-py (Debian's) with ssl=True
        prog = ("import redis,sys; r=redis.Redis(port=%d, ssl=True, "
                "ssl_ca_certs=%r, ssl_certfile=%r, ssl_keyfile=%r); "
                "print(r.execute_command('CNT.INCR', 42, 0, 2))"
                % (tp, c.ca, c.client, c.client_key))
        out = subprocess.run([DEBIAN_PY, "-c", prog], capture_output=True,
                             text=True, timeout=30)
        assert out.returncode == 0 and "10" in out.stdout, out


def test_certificates_are_checked_both_ways():
    c = certs()
    with tls_server(tls_auth_clients="yes") as srv:
        tp = srv.config["tls_port"]
        # the client refuses a server its CA did not sign, or an expired one
        assert handshake_fails(tp, ctx(ca=c.other_ca))
        out = cli("-p", tp, "--tls", "--cacert", c.other_ca, "--cert",
                  c.client, "--key", c.client_key, "PING")
        assert out.returncode == 1 and "verify" in out.stderr, out
        # the server refuses no client certificate, another CA's, expired
        assert handshake_fails(tp, ctx(cert=False))
        assert handshake_fails(tp, ctx(cert=(c.other_server,
                                             c.other_server_key)))
        assert handshake_fails(tp, ctx(cert=(c.expired, c.expired_key)))
        out = rcli(*tls_args(srv, cert=False), "PING")
        assert "PONG" not in out.stdout, out
        # ... and serves the right one
        with tls_resp(tp) as r:
            assert r.cmd("PING") == "PONG"
        log = srv.stderr_text()
        assert "TLS handshake failed" in log or "certificate" in log, log
        # optional: no certificate is fine, a bad one is not
        assert srv.resp().cmd("CONFIG", "SET", "tls-auth-clients",
                              "optional") == "OK"
        with tls_resp(tp, ctx(cert=False)) as r:
            assert r.cmd("PING") == "PONG"
        assert handshake_fails(tp, ctx(cert=(c.other_server,
                                             c.other_server_key)))
    with tls_server(tls_cert_file=c.expired,
                    tls_key_file=c.expired_key) as srv:
        out = cli(*tls_args(srv), "PING")
        assert out.returncode == 1 and "expired" in out.stderr, out


def test_rotation_in_place_without_protected_configs():
    """The files are protected configs: another path needs
    enable-protected-configs, but new files put in place at the same paths
    are read again by a CONFIG SET of those paths (certificate rotation)."""
    c = certs()
    d = tempfile.mkdtemp(prefix="unreadd-tls-rotate-")
    crt, key = os.path.join(d, "server.crt"), os.path.join(d, "server.key")
    shutil.copy(c.server, crt)
    shutil.copy(c.server_key, key)
    with tls_server(tls_auth_clients="no", tls_cert_file=crt,
                    tls_key_file=key) as srv, srv.resp() as r:
        tp = srv.config["tls_port"]
        with tls_resp(tp, ctx(cert=False)) as x:
            assert x.cmd("PING") == "PONG"
        assert is_err(r.cmd("CONFIG", "SET", "tls-cert-file", c.other_server,
                            "tls-key-file", c.other_server_key),
                      "ERR CONFIG SET failed (possibly related to argument")
        shutil.copy(c.other_server, crt)
        shutil.copy(c.other_server_key, key)
        assert r.cmd("CONFIG", "SET", "tls-cert-file", crt,
                     "tls-key-file", key) == "OK"
        assert handshake_fails(tp, ctx(cert=False))
        with tls_resp(tp, ctx(cert=False, ca=c.other_ca)) as x:
            assert x.cmd("PING") == "PONG"
    shutil.rmtree(d, ignore_errors=True)


def test_rotation_and_passphrase_and_tls_only():
    c = certs()
    with tls_server(tls_auth_clients="no",
                    enable_protected_configs="yes") as srv:
        tp = srv.config["tls_port"]
        old = tls_resp(tp, ctx(cert=False))
        assert old.cmd("PING") == "PONG"
        r = srv.resp()
        # a file that does not load: refused, the old certificate kept
        bad = r.cmd("CONFIG", "SET", "tls-cert-file", "/nonexistent.crt")
        assert is_err(bad), bad
        with tls_resp(tp, ctx(cert=False)) as x:
            assert x.cmd("PING") == "PONG"
        # rotated: new connections get the other CA's certificate, the old
        # connection goes on
        assert r.cmd("CONFIG", "SET", "tls-cert-file", c.other_server,
                     "tls-key-file", c.other_server_key) == "OK"
        assert handshake_fails(tp, ctx(cert=False))
        with tls_resp(tp, ctx(cert=False, ca=c.other_ca)) as x:
            assert x.cmd("PING") == "PONG"
        assert old.cmd("CNT.INCR", 1, 0, 1) == [1, 1]
        old.close()
        # an encrypted key with its passphrase; the passphrase is a secret
        assert r.cmd("CONFIG", "SET", "tls-key-file-pass", tlsgen.PASS,
                     "tls-cert-file", c.server, "tls-key-file",
                     c.enc_key) == "OK"
        with tls_resp(tp, ctx(cert=False)) as x:
            assert x.cmd("PING") == "PONG"
        shown = r.cmd("CONFIG", "GET", "tls-key-file-pass")
        assert tlsgen.PASS.encode() not in b"".join(
            v if isinstance(v, bytes) else str(v).encode() for v in shown)
    # port 0: TLS alone
    tp = free_port()
    d = tempfile.mkdtemp(prefix="unreadd-test-")
    p = subprocess.Popen(
        [os.path.join(BUILD, "unreadd"), "--port", "0", "--bind",
         "127.0.0.1", "--dir", d, "--tls-port", str(tp), "--tls-cert-file",
         c.server, "--tls-key-file", c.server_key, "--tls-ca-cert-file",
         c.ca], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: rcli("-p", tp, "--tls", "--cacert", c.ca,
                                "--cert", c.client, "--key", c.client_key,
                                "PING").stdout.strip() == "PONG", 15,
                   "the TLS-only server")
    finally:
        p.terminate()
        p.wait(10)


def client_hello():
    """The bytes a TLS client sends first (a real ClientHello)."""
    inb, outb = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx().wrap_bio(inb, outb, server_hostname="localhost")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outb.read()


def test_bad_bytes_and_cut_handshakes():
    with tls_server(tls_handshake_timeout=1, maxclients=100) as srv:
        tp = srv.config["tls_port"]
        # plaintext on the TLS port: closed, nothing else
        for junk in (b"PING\r\n", b"*1\r\n$4\r\nPING\r\n",
                     b"\xb7\x01" + b"\x00" * 30, b"\x16\x03\x01\xff\xff"):
            s = socket.create_connection(("127.0.0.1", tp), 5)
            s.settimeout(5)
            s.sendall(junk)
            try:
                data = s.recv(100)
            except (ConnectionResetError, socket.timeout):
                data = b""
            assert b"PONG" not in data
            s.close()
        # a handshake cut at every byte, then closed
        hello = client_hello()
        assert len(hello) > 100
        for k in range(len(hello)):
            s = socket.create_connection(("127.0.0.1", tp), 5)
            s.sendall(hello[:k])
            s.close()
        # ... and cut and left open: the handshake timeout closes it
        s = socket.create_connection(("127.0.0.1", tp), 5)
        s.sendall(hello[:len(hello) // 2])
        s.settimeout(10)
        t0 = time.monotonic()
        try:
            got = s.recv(100)
        except ConnectionResetError:  # closed with its bytes unread: RST
            got = b""
        # the close, or a TLS alert record (0x15) before it; never a wait
        # past the timeout
        assert got == b"" or got[0] == 0x15, got
        assert time.monotonic() - t0 < 9
        s.close()
        # served again once the server has seen the cut ones close: on a
        # loaded machine some may still hold maxclients' slots a moment
        # (a connection past maxclients is refused: a reset)
        def served():
            try:
                with tls_resp(tp) as r:
                    return r.cmd("PING") == "PONG"
            except (ConnectionError, ssl.SSLError):
                return False
        wait_until(served, 15, "a TLS PING after the cut handshakes")
        # 1,000 half-open handshakes: at most maxclients held, the rest
        # refused; the timeout frees them; served again after (asked on a
        # connection made before, which holds a slot of its own)
        ctl = srv.resp()
        socks = []
        for _ in range(1000):
            try:
                socks.append(socket.create_connection(("127.0.0.1", tp), 5))
            except OSError:
                break
        wait_until(lambda: int(info_flat(ctl.cmd("INFO", "clients"))
                               ["connected_clients"]) <= 100, 10,
                   "the half-open handshakes within maxclients")
        wait_until(lambda: int(info_flat(ctl.cmd("INFO", "clients"))
                               ["connected_clients"]) == 1, 15,
                   "the handshake timeout to close them")
        for s in socks:
            s.close()
        with tls_resp(tp) as r:
            assert r.cmd("PING") == "PONG"
        assert srv.proc.poll() is None
test_bad_bytes_and_cut_handshakes.timeout = 120


def test_idle_connections_stay_served():
    """A TLS connection that answered and went idle has given its record
    buffers back (SSL_MODE_RELEASE_BUFFERS); one left idle with half a
    record received keeps them (nothing of it is lost); both are served
    after, a pipelined burst larger than a record included."""
    with tls_server() as srv:
        tp = srv.config["tls_port"]
        raw = socket.create_connection(("127.0.0.1", tp), 10)
        raw.settimeout(10)
        inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls = ctx().wrap_bio(inc, out, server_hostname="localhost")

        def pump():
            data = out.read()
            if data:
                raw.sendall(data)

        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                pump()
                got = raw.recv(65536)
                assert got, "closed during the handshake"
                inc.write(got)
        pump()

        def replies(want):
            got = b""
            while len(got) < len(want):
                try:
                    got += tls.read(65536)
                except ssl.SSLWantReadError:
                    more = raw.recv(65536)
                    assert more, "closed before the replies"
                    inc.write(more)
            return got

        idle = tls_resp(tp)
        assert idle.cmd("PING") == "PONG"
        tls.write(b"*2\r\n$4\r\nECHO\r\n$5\r\nhello\r\n")
        record = out.read()
        assert len(record) > 10
        raw.sendall(record[:len(record) // 2])
        # idle: a time that has to pass, no event to await
        time.sleep(2.5)
        raw.sendall(record[len(record) // 2:])
        assert replies(b"$5\r\nhello\r\n") == b"$5\r\nhello\r\n"
        # the idle one, trimmed, takes a burst larger than a record
        n = 3000
        idle.sock.sendall(b"*1\r\n$4\r\nPING\r\n" * n)
        for _ in range(n):
            assert idle.read_reply() == "PONG"
        tls.write(b"*1\r\n$4\r\nPING\r\n")
        pump()
        assert replies(b"+PONG\r\n") == b"+PONG\r\n"
        idle.close()
        raw.close()
        assert srv.proc.poll() is None


def test_replication_and_metrics_over_tls():
    c = certs()
    tls = dict(tls_replication="yes", tls_cert_file=c.server,
               tls_key_file=c.server_key, tls_ca_cert_file=c.ca)
    mp = free_port()
    with tls_server(metrics_port=mp, metrics_tls="yes", **tls) as primary:
        r = primary.resp()
        for uid in range(1, 200):
            r.cmd("CNT.INCR", uid, 1, uid)
        with tls_server(**tls) as replica:
            rr = replica.resp()
            assert rr.cmd("REPLICAOF", "127.0.0.1",
                          primary.config["tls_port"]) == "OK"
            wait_until(lambda: info_flat(rr.cmd("INFO", "replication"))
                       .get("master_link_status") == "up", 20,
                       "the replica's TLS link")
            r.cmd("CNT.INCR", 7, 1, 1000)
            assert r.cmd("WAIT", 1, 5000) == 1
            assert rr.cmd("CNT.GET", 7, 1) == 1007
            assert rr.cmd("CNT.GET", 150, 1) == 150
        # the metrics port speaks HTTPS
        x = ctx()
        with socket.create_connection(("127.0.0.1", mp), 5) as s:
            with x.wrap_socket(s, server_hostname="localhost") as t:
                t.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
                body = b""
                while True:
                    b = t.recv(65536)
                    if not b:
                        break
                    body += b
        assert b"200" in body.split(b"\r\n")[0] and b"unreadd_" in body
        # ... and plaintext on it gets nothing
        with socket.create_connection(("127.0.0.1", mp), 5) as s:
            s.settimeout(5)
            s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
            try:
                got = s.recv(100)
            except (ConnectionResetError, socket.timeout):
                got = b""
            assert b"unreadd_" not in got
test_replication_and_metrics_over_tls.timeout = 120


def test_cluster_over_tls():
    """tls-cluster yes: the nodes' links are TLS, the nodes announce their
    TLS ports, redis-cli --cluster create --tls builds it, and clients
    follow the map over TLS."""
    from cluster_rig import Cluster, bc_head
    c = certs()
    with Cluster(masters=3, replicas=1, tls=c) as cl:
        masters = cl.masters()
        for n in cl.nodes:
            assert n.cinfo()["cluster_state"] == "ok"
        ports = {r[2][1] for r in masters[0].cmd("CLUSTER", "SLOTS")}
        assert ports == {n.config["tls_port"] for n in masters}, ports
        # redis-cli -c over TLS follows MOVED between TLS ports
        for uid in (1, 2, 3, 42, 1001):
            out = cl.cli("-c", "-p", str(masters[0].config["tls_port"]),
                         "CNT.INCR", str(uid), "0", "2")
            assert out.split()[-2:] == ["2", "2"], out
        # a global write crosses the TLS links to every shard
        out = cl.cli("-c", "-p", str(masters[1].config["tls_port"]),
                     "BC.PUBLISH", "77")
        wait_until(lambda: all(bc_head(m, 77) == 1 for m in masters), 10,
                   "the channel's head on every shard")
        # libunread in cluster mode over TLS, both handles
        seed = masters[2].addr()
        for mode in ("sync", "async"):
            d = Drv(mode, seed, "--tls", c.ca, c.client, c.client_key)
            try:
                rc, value, _ = d.incr(42, 0, 1)
                assert rc == 0, rc
                rc, totals = d.mtotal([1, 2, 3, 42, 1001])
                assert rc == 0 and totals[:3] == [2, 2, 2], totals
            finally:
                d.close()
        assert cl.owner(42).cmd("CNT.GET", 42, 0) == 4
test_cluster_over_tls.timeout = 180


def test_sentinel_fails_over_tls_servers():
    """redis-sentinel with tls-replication yes monitors a primary and its
    replica on their TLS ports, and promotes the replica when the primary
    dies."""
    c = certs()
    tls = dict(tls_replication="yes", repl_ping_replica_period=1)
    root = tempfile.mkdtemp(prefix="unreadd-tls-sentinel-")
    sentinels = []
    with tls_server(**tls) as primary, tls_server(**tls) as replica:
        pt, rt = primary.config["tls_port"], replica.config["tls_port"]
        primary.resp().cmd("CNT.INCR", 5, 0, 9)
        assert replica.resp().cmd("REPLICAOF", "127.0.0.1", pt) == "OK"
        wait_until(lambda: info_flat(replica.resp().cmd("INFO", "replication"))
                   .get("master_link_status") == "up", 20, "the TLS link")
        try:
            for i in range(3):
                d = os.path.join(root, "s%d" % i)
                os.makedirs(d)
                port = free_port()
                conf = os.path.join(d, "sentinel.conf")
                with open(conf, "w") as f:
                    f.write("port 0\nbind 127.0.0.1\ndir %s\n" % d)
                    f.write("tls-port %d\ntls-cert-file %s\ntls-key-file %s\n"
                            "tls-ca-cert-file %s\ntls-replication yes\n"
                            % (port, c.server, c.server_key, c.ca))
                    f.write("sentinel monitor m 127.0.0.1 %d 2\n" % pt)
                    f.write("sentinel down-after-milliseconds m 1000\n")
                    f.write("sentinel failover-timeout m 10000\n")
                log = open(os.path.join(d, "log"), "ab")
                sentinels.append((port, subprocess.Popen(
                    ["redis-sentinel", conf], stdout=log,
                    stderr=subprocess.STDOUT, cwd=d)))

            def ask(port, *args):
                out = rcli("-p", port, "--tls", "--cacert", c.ca, "--cert",
                           c.client, "--key", c.client_key, *args)
                return out.stdout.split()

            # they see the primary, its replica (by its TLS port) and
            # each other
            wait_until(lambda: all(
                str(rt) in " ".join(ask(p, "SENTINEL", "REPLICAS", "m")) and
                "num-other-sentinels" in ask(p, "SENTINEL", "MASTER", "m")
                for p, _ in sentinels), 30, "the sentinels to see the shard")
            # libunread asks the sentinels over TLS where m is
            via = ["--sentinel", ",".join("127.0.0.1:%d" % p
                                          for p, _ in sentinels),
                   "--master", "m", "--tls", "--cacert", c.ca, "--cert",
                   c.client, "--key", c.client_key]
            out = cli(*via, "CNT.INCR", 5, 0, 1)
            assert out.returncode == 0 and out.stdout.split() == ["10", "10"], \
                out
            primary.stop()
            wait_until(lambda: all(
                ask(p, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "m")[-1:] ==
                [str(rt)] for p, _ in sentinels), 40, "the promotion")
            wait_until(lambda: info_flat(replica.resp().cmd(
                "INFO", "replication"))["role"] == "master", 10,
                "the replica to be the primary")
            assert replica.resp().cmd("CNT.GET", 5, 0) == 10
            # ... and finds the promoted replica there
            out = cli(*via, "CNT.INCR", 5, 0, 1)
            assert out.returncode == 0 and out.stdout.split() == ["11", "11"], \
                out
            # a sentinel that is not TLS (or another CA's) is not answered
            bad = cli("--sentinel", via[1], "--master", "m", "--tls",
                      "--cacert", c.other_ca, "CNT.GET", 5, 0)
            assert bad.returncode != 0 and "sentinel" in bad.stderr, bad
        finally:
            for _, p in sentinels:
                p.terminate()
                p.wait(10)
test_sentinel_fails_over_tls_servers.timeout = 120


NODE_TLS_JS = r'''
import fs from 'node:fs';
import { createClient } from 'redis';
import Redis from 'ioredis';
const [port, ca, cert, key] = [Number(process.argv[2]), ...process.argv.slice(3)];
const tls = { ca: fs.readFileSync(ca), cert: fs.readFileSync(cert),
              key: fs.readFileSync(key), servername: 'localhost' };
const a = createClient({ socket: { host: '127.0.0.1', port, tls: true, ...tls } });
a.on('error', e => { console.error('node-redis', e); });
await a.connect();
const x = await a.sendCommand(['CNT.INCR', '77', '0', '3']);
await a.quit();
const b = new Redis({ host: '127.0.0.1', port, tls });
const y = await b.call('CNT.INCR', '77', '0', '4');
b.disconnect();
console.log(JSON.stringify([x, y]));
'''


def test_node_clients_over_tls():
    import test_clients
    d = test_clients._node_clients()
    if d is None:
        return
    c = certs()
    script = os.path.join(d, "unreadd_tls_test.mjs")
    with open(script, "w") as f:
        f.write(NODE_TLS_JS)
    with tls_server() as srv:
        out = subprocess.run(["node", script, str(srv.config["tls_port"]),
                              c.ca, c.client, c.client_key],
                             capture_output=True, text=True, timeout=60,
                             cwd=d)
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.strip().splitlines()[-1] == "[[3,3],[7,7]]", out
