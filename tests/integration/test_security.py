"""No client can escape the server (issue 33): CONFIG REWRITE writes back
exactly what was set (a value cannot add a line to the config file),
protected configs (paths) need enable-protected-configs, DEBUG follows
enable-debug-command, and protected mode serves only loopback clients
while the default user has no password."""

import os
import socket
import tempfile

from harness import E, Server, assert_err, info_flat, is_err, pairs


def local_address():
    """An address of this machine other than loopback, or None."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("192.0.2.1", 9))  # no packet is sent
        addr = s.getsockname()[0]
    except OSError:
        return None
    finally:
        s.close()
    return None if addr.startswith("127.") else addr


def exchange(addr, port, data, timeout=5.0):
    """Sends data and reads until the server closes (or timeout)."""
    with socket.create_connection((addr, port), timeout) as s:
        s.settimeout(timeout)
        try:
            s.sendall(data)
        except OSError:
            pass
        out = b""
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    break
                out += b
        except (socket.timeout, ConnectionResetError):
            pass
        return out


NASTY = ["x\nenable-debug-command yes", "a\r\nprotected-mode no", 'q"uo"te',
         "back\\slash\\", "tab\there", "sp ace  two", "\x01\x7f\xff",
         "#not-a-comment", "'single'", "end\\"]


def test_config_rewrite_writes_values_back_exactly():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "unreadd.conf")
        with open(path, "w") as f:
            f.write("# ops\nmaxmemory 1mb\n")
        for value in NASTY:
            with Server(config_file=path, enable_debug_command="no") as srv, \
                    srv.resp() as c:
                assert c.cmd("CONFIG", "SET", "replica-announce-ip",
                             value) == "OK", value
                assert c.cmd("CONFIG", "REWRITE") == "OK"
            text = open(path, "rb").read()
            # one line per key: the value did not start a line of its own
            for line in text.split(b"\n"):
                assert not line.startswith(b"enable-debug-command yes"), text
                assert not line.startswith(b"protected-mode no"), text
            with Server(config_file=path, enable_debug_command="no") as srv, \
                    srv.resp() as c:
                got = pairs(c.cmd("CONFIG", "GET", "replica-announce-ip",
                                  "enable-debug-command", "protected-mode"))
                assert got["replica-announce-ip"] == value.encode("latin-1") \
                    or got["replica-announce-ip"] == value.encode(), \
                    (value, got, text)
                assert got["enable-debug-command"] == b"no", (value, text)
                assert got["protected-mode"] == b"yes", (value, text)
                assert_err(c.cmd("DEBUG", "AUDIT"), "ERR DEBUG command not "
                           "allowed")
            # and a second rewrite of the loaded file is the same file
            with Server(config_file=path) as srv, srv.resp() as c:
                assert c.cmd("CONFIG", "REWRITE") == "OK"
            assert open(path, "rb").read().replace(b"--enable", b"") \
                .count(b"replica-announce-ip") == 1


def test_protected_configs_need_enable_protected_configs():
    with Server(enable_debug_command="no") as srv, srv.resp() as c:
        here = pairs(c.cmd("CONFIG", "GET", "logfile", "dir"))
        for key, value in (("logfile", "/tmp/evil.log"),
                           ("dir", "/etc"),
                           ("tls-cert-file", "/etc/passwd"),
                           ("tls-ca-cert-dir", "/etc")):
            assert_err(c.cmd("CONFIG", "SET", key, value),
                       "ERR CONFIG SET failed (possibly related to argument "
                       "'%s') - can't set protected config" % key)
        # a refused pair refuses the whole CONFIG SET
        assert_err(c.cmd("CONFIG", "SET", "maxmemory", "5mb", "logfile",
                         "/tmp/x"))
        assert pairs(c.cmd("CONFIG", "GET", "maxmemory"))["maxmemory"] == b"0"
        assert pairs(c.cmd("CONFIG", "GET", "logfile", "dir")) == here
        # the same value is no change (a TLS file rotated in place)
        assert c.cmd("CONFIG", "SET", "logfile",
                     here["logfile"].decode()) == "OK"
        assert pairs(c.cmd("CONFIG", "GET", "enable-protected-configs")) == \
            {"enable-protected-configs": b"no"}
        # the key itself cannot be changed at run time
        assert_err(c.cmd("CONFIG", "SET", "enable-protected-configs", "yes"))
        assert_err(c.cmd("CONFIG", "SET", "enable-debug-command", "yes"))
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "moved.log")
        with Server(enable_protected_configs="yes") as srv, srv.resp() as c:
            assert c.cmd("CONFIG", "SET", "logfile", log) == "OK"
            assert pairs(c.cmd("CONFIG", "GET", "logfile"))["logfile"] == \
                log.encode()
        with Server(enable_protected_configs="local") as srv, srv.resp() as c:
            assert c.cmd("CONFIG", "SET", "logfile", log) == "OK"


def test_debug_follows_enable_debug_command():
    with Server(enable_debug_command="no") as srv, srv.resp() as c, \
            srv.bin() as b:
        assert_err(c.cmd("DEBUG", "AUDIT"), "ERR DEBUG command not allowed. "
                   "If the enable-debug-command option is set to \"local\", "
                   "you can run it from a local connection, otherwise you "
                   "need to set this option in the configuration file, and "
                   "then restart the server.")
        assert is_err(b.call("DEBUG", "AUDIT"), code=E["ERR"])
        assert c.cmd("CNT.INCR", 1, 0, 1) == [1, 1]
    with Server(enable_debug_command="yes") as srv, srv.resp() as c:
        assert c.cmd("DEBUG", "AUDIT") == 0
    with Server(enable_debug_command="local") as srv, srv.resp() as c:
        assert c.cmd("DEBUG", "AUDIT") == 0  # loopback
    # a remote client (with a password, past protected mode) is not local
    with Server(enable_debug_command="local", bind="0.0.0.0",
                requirepass="pw") as srv:
        addr = local_address()
        if addr is None:
            print("skip: no address but loopback on this machine")
            return
        out = exchange(addr, srv.port, b"AUTH pw\r\nDEBUG AUDIT\r\nQUIT\r\n")
        assert out.startswith(b"+OK\r\n-ERR DEBUG command not allowed"), out


def test_protected_mode_serves_only_loopback_without_a_password():
    addr = local_address()
    if addr is None:
        print("skip: no address but loopback on this machine")
        return
    with Server(bind="0.0.0.0") as srv, srv.resp() as c:
        # a remote client gets Redis's -DENIED line and the close, before
        # its request is read; nothing it sent ran
        out = exchange(addr, srv.port, b"CNT.INCR 5 0 7\r\n")
        assert out.startswith(b"-DENIED ") and out.endswith(b"\r\n"), out
        assert b"protected mode" in out and out.count(b"\r\n") == 1
        # a binary client gets the same line (the protocol is not known)
        out = exchange(addr, srv.port, b"\xb7\x01")
        assert out.startswith(b"-DENIED "), out
        # junk, or nothing at all
        assert exchange(addr, srv.port, b"").startswith(b"-DENIED ")
        assert c.cmd("CNT.GET", 5, 0) == 0
        assert int(info_flat(c.cmd("INFO", "stats"))
                   ["rejected_connections"]) >= 3
        # loopback is served; a password lifts it
        assert c.cmd("CONFIG", "SET", "requirepass", "s3") == "OK"
        out = exchange(addr, srv.port, b"AUTH s3\r\nCNT.INCR 5 0 7\r\nQUIT\r\n")
        assert out.startswith(b"+OK\r\n*2\r\n:7\r\n:7\r\n"), out
        assert c.cmd("CONFIG", "SET", "requirepass", "") == "OK"
        assert exchange(addr, srv.port, b"PING\r\n").startswith(b"-DENIED ")
        # protected-mode no: served
        assert c.cmd("CONFIG", "SET", "protected-mode", "no") == "OK"
        out = exchange(addr, srv.port, b"PING\r\nQUIT\r\n")
        assert out.startswith(b"+PONG\r\n"), out
    # bound to loopback only, or protected-mode no from the start
    with Server(bind="0.0.0.0", protected_mode="no") as srv:
        assert exchange(addr, srv.port, b"PING\r\nQUIT\r\n") \
            .startswith(b"+PONG")
