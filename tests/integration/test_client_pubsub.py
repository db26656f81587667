"""libunread's subscriptions (unread.h, "Pub/sub"; docs/CLIENT.md) against
real servers, over the binary protocol's push frames: the synchronous
handle (unread_listen) and the asynchronous one (callbacks on its loop),
driven by build/pubsub_client; subscriptions made again after a server
restarts; a cluster of three servers, where badge:<uid> lives on the uid's
shard, other channels on the first server, patterns on all, and each
message arrives once; unread-cli SUBSCRIBE; the badge_gateway example.

A subscriber's stream from one server is ordered: a marker published
after the writes arrives after their messages, so "nothing more" is
checked by waiting for the marker, never by sleeping."""

import os
import queue
import signal
import socket
import subprocess
import threading
import time

from harness import BUILD, UNREAD_CLI, Server

DRIVER = os.path.join(BUILD, "pubsub_client")
GATEWAY = os.path.join(BUILD, "badge_gateway")
WAIT = 20.0  # seconds a test waits for an expected line at most


class Lines:
    """A subprocess whose stdout lines are read by a thread into a queue."""

    def __init__(self, argv, stdin=True):
        self.p = subprocess.Popen(
            argv, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            bufsize=1)
        self.q = queue.Queue()
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for line in self.p.stdout:
            self.q.put(line.rstrip("\n"))
        self.q.put(None)

    def next(self, timeout=WAIT):
        try:
            line = self.q.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("no line within %ss" % timeout)
        assert line is not None, "exited: " + self.p.stderr.read()
        return line

    def until(self, pred, timeout=WAIT):
        """The lines read up to and including the first that pred takes."""
        end = time.monotonic() + timeout
        seen = []
        while True:
            line = self.next(max(0.01, end - time.monotonic()))
            seen.append(line)
            if pred(line):
                return seen

    def close(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()


class Driver(Lines):
    """pubsub_client: one handle (sync or async) over a server list."""

    def __init__(self, mode, servers):
        super().__init__([DRIVER, mode, ",".join(
            "127.0.0.1:%d" % s.port for s in servers)])
        self.mode = mode
        assert self.next() == "ready"

    def send(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()

    def quit(self):
        """Closes the handle and exits: cleanly (a sanitizer build fails
        the exit status on a leak or a bad access)."""
        self.send("quit")
        assert self.p.wait(timeout=WAIT) == 0, self.p.stderr.read()

    def cmd(self, line):
        """A command's own result line (messages before it are kept)."""
        self.send(line)
        word = line.split()[0]
        lines = self.until(lambda l: l.split()[0] == word)
        self.pending = getattr(self, "pending", []) + \
            [l for l in lines[:-1] if l.startswith("msg ")]
        return lines[-1]

    def messages_until(self, *ends):
        """Every message up to those whose payloads are `ends` (one each,
        from any servers): sync, by unread_listen rounds; async, as they
        come."""
        got = getattr(self, "pending", [])
        self.pending = []
        deadline = time.monotonic() + WAIT

        def left():
            seen = [m.split(" ", 4)[4] for m in got]
            return [e for e in ends if e not in seen]

        while left():
            assert time.monotonic() < deadline, (ends, got)
            if self.mode == "sync":
                if len(ends) == 1:
                    self.send("stopon " + ends[0])
                self.send("listen %d" % (WAIT * 1000 if len(ends) == 1
                                         else 200))
                got += self.until(lambda l: l.startswith("listened "))[:-1]
            else:
                got.append(self.next())
        return [msg(m) for m in got]


def msg(line):
    """'msg SHARD PATTERN|- CHANNEL PAYLOAD' -> (shard, pattern, channel,
    payload)."""
    _, shard, pat, ch, payload = line.split(" ", 4)
    return int(shard), None if pat == "-" else pat, ch, payload


def wait_pubsub(srv, args, n):
    """Until PUBSUB args answers n (the async handle's requests are on
    their way when its calls return)."""
    with srv.resp() as c:
        end = time.monotonic() + WAIT
        while True:
            got = c.cmd("PUBSUB", *args)
            if args[0] == "NUMSUB":
                got = got[1]
            if got == n:
                return
            assert time.monotonic() < end, (args, got, n)
            time.sleep(0.02)


def wait_numsub(srv, channel, n):
    wait_pubsub(srv, ("NUMSUB", channel), n)


def start_again(srv):
    """The server again on its port and data directory."""
    err = open(srv._stderr_path, "ab")
    srv.proc = subprocess.Popen(srv.argv(), stdin=subprocess.DEVNULL,
                                stdout=err, stderr=err, cwd=srv.tmp.name)
    err.close()
    assert srv._wait_ready(), "restart failed:\n" + srv.stderr_tail()


def test_subscribe_delivers_badges_and_messages_on_both_handles():
    for mode in ("sync", "async"):
        with Server(notify_badges="yes") as srv:
            d = Driver(mode, [srv])
            try:
                assert d.cmd("sub badge:5") == "sub badge:5 0"
                assert d.cmd("psub news.*") == "psub news.* 0"
                assert d.cmd("sub badge:5") == "sub badge:5 0"  # replaces
                assert d.cmd("count") == "count 2"
                wait_numsub(srv, "badge:5", 1)
                wait_pubsub(srv, ("NUMPAT",), 1)
                with srv.resp() as c:
                    c.cmd("CNT.INCR", 5, 0, 3)
                    c.cmd("CNT.INCR", 6, 0, 1)  # nobody listens to 6
                    c.cmd("PUBLISH", "news.x", "hello world")
                    c.cmd("PUBLISH", "other", "not subscribed")
                    c.cmd("PUBLISH", "badge:5", "END1")
                assert d.messages_until("END1") == [
                    (0, None, "badge:5", "badge 3 cnt 3 cnt.0 3"),
                    (0, "news.*", "news.x", "hello world"),
                    (0, None, "badge:5", "END1")]
                # the handle's calls still run while it is subscribed;
                # its own write's badge reaches it
                assert d.cmd("incr 5") == "incr 5 0 4"
                with srv.resp() as c:
                    c.cmd("PUBLISH", "badge:5", "END2")
                assert d.messages_until("END2") == [
                    (0, None, "badge:5", "badge 4 cnt 4 cnt.0 4"),
                    (0, None, "badge:5", "END2")]
                # left: nothing more from the channel, the pattern stays
                assert d.cmd("unsub badge:5") == "unsub badge:5 0"
                assert d.cmd("unsub never-subscribed") == \
                    "unsub never-subscribed 0"
                wait_numsub(srv, "badge:5", 0)
                with srv.resp() as c:
                    c.cmd("CNT.INCR", 5, 0, 1)
                    c.cmd("PUBLISH", "news.end", "END3")
                assert d.messages_until("END3") == [
                    (0, "news.*", "news.end", "END3")]
                assert d.cmd("punsub *") == "punsub * 0"
                assert d.cmd("count") == "count 0"
                if mode == "sync":
                    # nothing to listen to: a usage error, at once
                    d.send("listen 100000")
                    assert d.next() == "listened -7"
                    assert d.cmd("pub news.x hi") == "pub news.x 0 0"
                wait_pubsub(srv, ("NUMPAT",), 0)
                d.quit()
            finally:
                d.close()


def test_subscriptions_are_made_again_after_the_server_restarts():
    for mode in ("sync", "async"):
        with Server(notify_badges="yes") as srv:
            d = Driver(mode, [srv])
            try:
                assert d.cmd("sub badge:7") == "sub badge:7 0"
                assert d.cmd("psub grp:*") == "psub grp:* 0"
                srv.stop()
                start_again(srv)
                if mode == "sync":
                    # the receive loop reconnects while it waits
                    d.send("stopon END")
                    d.send("listen %d" % (WAIT * 1000))
                wait_numsub(srv, "badge:7", 1)
                wait_pubsub(srv, ("NUMPAT",), 1)
                with srv.resp() as c:
                    c.cmd("CNT.INCR", 7, 1, 2)
                    c.cmd("GRP.POST", 9)
                    c.cmd("PUBLISH", "badge:7", "END")
                if mode == "sync":
                    lines = d.until(lambda l: l.startswith("listened "))
                    got = [msg(l) for l in lines[:-1]]
                else:
                    got = d.messages_until("END")
                assert got == [(0, None, "badge:7", "badge 2 cnt 2 cnt.1 2"),
                               (0, "grp:*", "grp:9", "head 1"),
                               (0, None, "badge:7", "END")], got
                d.quit()
            finally:
                d.close()


def test_sync_subscribe_while_the_server_is_down_is_kept_and_made_later():
    """A subscription that cannot be made now returns the failure but is
    kept: unread_listen makes it once the server is back."""
    with Server(notify_badges="yes") as srv:
        d = Driver("sync", [srv])
        try:
            assert d.cmd("sub badge:1") == "sub badge:1 0"
            srv.stop()
            rc = int(d.cmd("sub badge:2").split()[2])
            assert rc < 0, rc  # a failure to reach the server
            assert d.cmd("count") == "count 2"
            start_again(srv)
            d.send("stopon END")
            d.send("listen %d" % (WAIT * 1000))
            wait_numsub(srv, "badge:2", 1)
            wait_numsub(srv, "badge:1", 1)
            with srv.resp() as c:
                c.cmd("CNT.INCR", 2, 0, 1)
                c.cmd("PUBLISH", "badge:1", "END")
            lines = d.until(lambda l: l.startswith("listened "))
            assert [msg(l) for l in lines[:-1]] == [
                (0, None, "badge:2", "badge 1 cnt 1 cnt.0 1"),
                (0, None, "badge:1", "END")], lines
            d.quit()
        finally:
            d.close()


def uids_by_shard(servers, n_each=2):
    """Some uids per shard, found by where CNT.INCR made through the
    library lands (unread-cli --cluster routes as the library does)."""
    out = {i: [] for i in range(len(servers))}
    lst = ",".join("127.0.0.1:%d" % s.port for s in servers)
    conns = [s.resp() for s in servers]
    try:
        uid = 1000
        while any(len(v) < n_each for v in out.values()):
            uid += 1
            subprocess.run([UNREAD_CLI, "--cluster", lst, "CNT.INCR", str(uid),
                            "2", "1"], check=True, capture_output=True)
            where = [i for i, c in enumerate(conns)
                     if c.cmd("CNT.GET", uid, 2)]
            assert len(where) == 1, (uid, where)
            if len(out[where[0]]) < n_each:
                out[where[0]].append(uid)
            assert uid < 1300
    finally:
        for c in conns:
            c.close()
    return out


def test_cluster_subscribes_each_channel_on_its_shard_and_delivers_once():
    with Server(notify_badges="yes") as s0, Server(notify_badges="yes") as s1, \
            Server(notify_badges="yes") as s2:
        srv = [s0, s1, s2]
        shard_uids = uids_by_shard(srv)
        for mode in ("sync", "async"):
            d = Driver(mode, srv)
            try:
                subs = [u for us in shard_uids.values() for u in us[:1]]
                for u in subs:
                    assert d.cmd("sub badge:%d" % u) == "sub badge:%d 0" % u
                assert d.cmd("sub grp:9") == "sub grp:9 0"
                assert d.cmd("psub grp:*") == "psub grp:* 0"
                assert d.cmd("psub badge:*") == "psub badge:* 0"
                # each channel on its own shard, patterns on every shard
                for i, s in enumerate(srv):
                    for j, us in shard_uids.items():
                        wait_numsub(s, "badge:%d" % us[0], 1 if i == j else 0)
                    wait_numsub(s, "grp:9", 1 if i == 0 else 0)
                    wait_pubsub(s, ("NUMPAT",), 2)
                conns = [s.resp() for s in srv]
                try:
                    for i, us in shard_uids.items():
                        for u in us:  # a subscribed uid, and one by pattern
                            conns[i].cmd("CNT.INCR", u, 0, 5)
                    # a global write runs on every server, each publishes
                    for c in conns:
                        c.cmd("GRP.POST", 9)
                    # a copy published on a shard that is not the
                    # channel's: not delivered (each message once)
                    stray = shard_uids[0][0]
                    conns[1].cmd("PUBLISH", "badge:%d" % stray, "stray")
                    for i, us in shard_uids.items():
                        conns[i].cmd("PUBLISH", "badge:%d" % us[1],
                                     "END%d" % i)
                finally:
                    for c in conns:
                        c.close()
                got = d.messages_until(*["END%d" % i
                                         for i in range(len(srv))])
                want = [(0, None, "grp:9"), (0, "grp:*", "grp:9")]
                for i, us in shard_uids.items():
                    want += [(i, None, "badge:%d" % us[0]),
                             (i, "badge:*", "badge:%d" % us[0]),
                             (i, "badge:*", "badge:%d" % us[1]),
                             (i, "badge:*", "badge:%d" % us[1])]
                key = lambda m: (m[0], m[1] or "", m[2])
                assert sorted((m[:3] for m in got), key=key) == \
                    sorted(want, key=key), got
                for m in got:
                    if m[2].startswith("badge:") and \
                            not m[3].startswith("END"):
                        assert "cnt.0" in m[3], m
                assert not any(m[3] == "stray" for m in got), got
                heads = [m[3] for m in got if m[2] == "grp:9"]
                assert heads == [heads[0]] * 2, got
                d.quit()
            finally:
                d.close()
            # the next handle starts from a clean slate
            for s in srv:
                wait_numsub(s, "grp:9", 0)


def test_unread_cli_subscribe_prints_messages_as_they_arrive():
    with Server(notify_badges="yes") as srv:
        # no channel: refused at once, as redis-cli's arity error
        r = subprocess.run([UNREAD_CLI, "-p", str(srv.port), "SUBSCRIBE"],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 1 and "wrong number of arguments" in r.stderr
        for verb, names in (("SUBSCRIBE", ["news", "badge:3"]),
                            ("PSUBSCRIBE", ["n*", "badge:*"])):
            cli = Lines([UNREAD_CLI, "-p", str(srv.port), verb] + names,
                        stdin=False)
            try:
                # the raw form (not a terminal), as redis-cli prints it
                want = []
                for i, n in enumerate(names):
                    want += [verb.lower(), n, str(i + 1)]
                assert [cli.next() for _ in want] == want
                with srv.resp() as c:
                    c.cmd("PUBLISH", "news", "hello there")
                    c.cmd("CNT.INCR", 3, 1, 1)
                    c.cmd("PUBLISH", "other", "x")  # matches nothing
                    c.cmd("PUBLISH", "news", "END")
                lines = cli.until(lambda l: l == "END")
                if verb == "SUBSCRIBE":
                    assert lines[:3] == ["message", "news", "hello there"]
                    assert lines[3:6] == ["message", "badge:3",
                                          lines[5]]
                    assert lines[6:] == ["message", "news", "END"]
                else:
                    assert lines[:4] == ["pmessage", "n*", "news",
                                         "hello there"]
                    assert lines[4:7] == ["pmessage", "badge:*", "badge:3"]
                    assert lines[8:] == ["pmessage", "n*", "news", "END"]
                assert "cnt.1" in (lines[5] if verb == "SUBSCRIBE"
                                   else lines[7])
            finally:
                cli.close()


def device(port, uid):
    s = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    s.sendall(b"%s\n" % uid)
    return s


def device_lines(s, n):
    buf = b""
    while buf.count(b"\n") < n:
        chunk = s.recv(4096)
        assert chunk, buf
        buf += chunk
    return buf.decode().splitlines()


def test_badge_gateway_forwards_each_users_badges_to_its_devices():
    with Server(notify_badges="yes") as srv:
        gw = Lines([GATEWAY, "127.0.0.1:%d" % srv.port, "0"], stdin=False)
        try:
            port = int(gw.next().split()[1])
            phone, tab, other = (device(port, b"5"), device(port, b"5"),
                                 device(port, b"6"))
            bad = device(port, b"five")
            assert device_lines(bad, 1) == ["error bad uid"]
            assert bad.recv(100) == b""  # and closed
            wait_numsub(srv, "badge:5", 1)  # one subscription per user
            wait_numsub(srv, "badge:6", 1)
            with srv.resp() as c:
                c.cmd("CNT.INCR", 5, 0, 2)
                c.cmd("CONV.INCR", 6, 100, 3)
                c.cmd("CNT.INCR", 7, 0, 1)  # no device: not subscribed
                c.cmd("CNT.INCR", 5, 1, 1)
            assert device_lines(phone, 2) == device_lines(tab, 2) == [
                "badge 2 cnt 2 cnt.0 2", "badge 3 cnt 3 cnt.1 1"]
            assert device_lines(other, 1) == ["badge 3 conv 3 conv.100 3"]
            # the last device of a user leaves: so does its channel
            phone.close()
            with srv.resp() as c:
                c.cmd("CNT.INCR", 5, 0, 1)
            assert device_lines(tab, 1) == ["badge 4 cnt 4 cnt.0 3"]
            wait_numsub(srv, "badge:5", 1)
            tab.close()
            wait_numsub(srv, "badge:5", 0)
            other.close()
            wait_numsub(srv, "badge:6", 0)
            gw.p.send_signal(signal.SIGTERM)
            assert gw.next() == \
                "final devices=0 users=0 forwarded=6 dropped=0"
            assert gw.p.wait(timeout=WAIT) == 0
        finally:
            gw.close()
