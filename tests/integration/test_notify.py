"""Readiness for systemd's Type=notify (docs/OPERATIONS.md, "Running under
systemd"): unreadd sends READY=1 on $NOTIFY_SOCKET only once its data is
loaded and its port listens, and STOPPING=1 when it begins to shut down.
The service manager's socket is played by a datagram socket of the test.
"""

import os
import signal
import socket
import subprocess
import tempfile
import time

from harness import Server


def notify_socket(tmp):
    path = os.path.join(tmp, "notify")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    s.settimeout(10)
    return s, path


def messages(s, until, timeout=10):
    """datagrams until one holds `until` (a line), as lists of lines"""
    got = []
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        lines = s.recv(4096).decode().split("\n")
        got.append(lines)
        if until in lines:
            return got
    raise AssertionError("no %s in %r" % (until, got))


def test_ready_after_recovery_and_stopping_at_shutdown():
    with tempfile.TemporaryDirectory() as tmp:
        s, path = notify_socket(tmp)
        srv = Server(env={"NOTIFY_SOCKET": path})
        with srv:
            got = messages(s, "READY=1")
            ready = [m for m in got if "READY=1" in m][0]
            assert any(l.startswith("STATUS=serving on 127.0.0.1:%d" % srv.port)
                       for l in ready), ready
            # ready means answering: the port takes a command at once
            with srv.resp() as c:
                assert c.cmd("PING") == "PONG"
            srv.proc.send_signal(signal.SIGTERM)
            got = messages(s, "STOPPING=1")
            assert not any("READY=1" in m for m in got)
            srv.proc.wait(30)
        s.close()


def test_ready_only_after_the_data_is_loaded():
    """A server with data to load: READY=1 comes after the recovery, so
    the first command after it sees the data."""
    with tempfile.TemporaryDirectory() as tmp:
        s, path = notify_socket(tmp)
        with Server() as srv:
            with srv.resp() as c:
                for uid in range(1, 2001):
                    c.cmd("CNT.INCR", uid, 0, uid)
            srv.stop()  # SIGTERM: a final snapshot
            err = open(srv._stderr_path, "ab")
            srv.proc = subprocess.Popen(
                srv.argv(), stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                cwd=srv.tmp.name, env=dict(os.environ, NOTIFY_SOCKET=path))
            err.close()
            messages(s, "READY=1")
            with srv.resp() as c:
                assert c.cmd("CNT.GET", 2000, 0) == 2000
                assert c.cmd("CNT.GET", 1, 0) == 1
        s.close()
