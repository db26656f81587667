"""Pub/sub as Redis has it (docs/COMMANDS.md, "Pub/sub"): SUBSCRIBE,
UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH, PUBSUB, RESP2's subscribed
mode and its errors, RESP3 push messages on a normal connection, the
binary protocol's push frames, RESET, the subscriber output limits, and
the real clients: redis-cli, redis-py's pubsub(), node-redis and ioredis.

"No message" is never waited for: a marker published afterwards must be
the next message the subscriber reads."""

import os
import select
import socket
import subprocess
import time

from harness import (Err, Push, Server, Status, assert_err, encode_frame,
                     encode_multibulk, info_flat, is_err)

SYS_PY = "/usr/bin/python3"


def subscribe(c, *chans, pattern=False):
    """SUBSCRIBE (PSUBSCRIBE) on a RESP connection: one confirmation each,
    the count growing."""
    kind = b"psubscribe" if pattern else b"subscribe"
    c.send(encode_multibulk(kind.decode().upper(), *chans))
    got = [c.read_reply() for _ in chans]
    for ch, g in zip(chans, got):
        assert g[0] == kind and g[1] == (ch if isinstance(ch, bytes)
                                         else str(ch).encode()), got
    return [g[2] for g in got]


def test_subscribe_publish_and_message_shape_resp2():
    with Server() as srv, srv.resp() as sub, srv.resp() as pub:
        assert subscribe(sub, "news", "sport") == [1, 2]
        assert pub.cmd("PUBLISH", "news", "hello") == 1
        assert sub.read_reply() == [b"message", b"news", b"hello"]
        assert pub.cmd("PUBLISH", "nobody", "x") == 0
        # Binary-safe channel names and payloads.
        odd = b"a\r\nb\x00c"
        assert subscribe(sub, odd) == [3]
        assert pub.cmd("PUBLISH", odd, b"\x00\r\n$5\r\n") == 1
        assert sub.read_reply() == [b"message", odd, b"\x00\r\n$5\r\n"]
        # Subscribing twice to a channel counts once.
        assert subscribe(sub, "news") == [3]
        assert pub.cmd("PUBLISH", "news", "once") == 1
        assert sub.read_reply() == [b"message", b"news", b"once"]
        # Two subscribers, one publish: both, in order.
        with srv.resp() as sub2:
            assert subscribe(sub2, "sport") == [1]
            for i in range(20):
                assert pub.cmd("PUBLISH", "sport", i) == 2
            for c in (sub, sub2):
                for i in range(20):
                    assert c.read_reply() == [b"message", b"sport",
                                              str(i).encode()]


def test_subscribed_mode_allows_only_what_redis_allows():
    with Server() as srv, srv.resp() as c, srv.resp() as pub:
        assert subscribe(c, "a", "b") == [1, 2]
        r = c.cmd("CNT.GET", 1, 0)
        assert_err(r)
        assert "Can't execute 'cnt.get': only (P|S)SUBSCRIBE / " \
            "(P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this " \
            "context" in r.text, r
        assert_err(c.cmd("PUBLISH", "a", "x"))
        assert_err(c.cmd("MULTI"))
        assert_err(c.cmd("NOSUCH"), "ERR")
        # PING answers like a message.
        assert c.cmd("PING") == [b"pong", b""]
        assert c.cmd("PING", "hi") == [b"pong", b"hi"]
        # Messages still arrive between the replies.
        assert pub.cmd("PUBLISH", "a", "m1") == 1
        assert c.read_reply() == [b"message", b"a", b"m1"]
        # PSUBSCRIBE adds to the same count; UNSUBSCRIBE without arguments
        # leaves every channel (newest first), not the patterns.
        assert subscribe(c, "x.*", pattern=True) == [3]
        c.send(encode_multibulk("UNSUBSCRIBE"))
        got = [c.read_reply() for _ in range(2)]
        assert sorted(g[1] for g in got) == [b"a", b"b"]
        assert [g[0] for g in got] == [b"unsubscribe"] * 2
        assert [g[2] for g in got] == [2, 1]
        assert_err(c.cmd("CNT.GET", 1, 0))  # still a pattern: still in it
        assert c.cmd("PUNSUBSCRIBE", "x.*") == [b"punsubscribe", b"x.*", 0]
        # Out of subscribed mode: everything runs again.
        assert c.cmd("CNT.GET", 1, 0) == 0
        assert c.cmd("PING") == "PONG"
        # Leaving nothing: one confirmation with a null name.
        assert c.cmd("UNSUBSCRIBE") == [b"unsubscribe", None, 0]
        assert c.cmd("PUNSUBSCRIBE") == [b"punsubscribe", None, 0]
        assert c.cmd("UNSUBSCRIBE", "never") == [b"unsubscribe", b"never", 0]
        # QUIT works in subscribed mode.
        subscribe(c, "q")
        assert c.cmd("QUIT") == "OK"
        c.wait_closed()
        assert pub.cmd("PUBSUB", "NUMSUB", "q") == [b"q", 0]


def test_reset_leaves_subscribed_mode_and_resp3():
    with Server(requirepass="pw") as srv, srv.resp() as c, \
            srv.resp() as pub:
        assert c.cmd("AUTH", "pw") == "OK"
        assert isinstance(c.cmd("HELLO", 3), dict)
        c.send(encode_multibulk("SUBSCRIBE", "r"))
        assert c.read_reply() == Push([b"subscribe", b"r", 1])
        assert c.cmd("CLIENT", "SETNAME", "before") == "OK"
        assert c.cmd("RESET") == "RESET"
        # RESP2 again, unsubscribed, nameless, and AUTH needed again.
        assert_err(c.cmd("CNT.GET", 1, 0), "NOAUTH")
        assert c.cmd("AUTH", "pw") == "OK"
        c.send(encode_multibulk("CLIENT", "GETNAME"))
        assert c.read_line() == b"$-1"
        assert pub.cmd("AUTH", "pw") == "OK"
        assert pub.cmd("PUBLISH", "r", "x") == 0
        # RESET in RESP2 subscribed mode, and in MULTI.
        subscribe(c, "r")
        assert c.cmd("RESET") == "RESET"
        assert c.cmd("AUTH", "pw") == "OK"
        assert c.cmd("MULTI") == "OK"
        assert c.cmd("RESET") == "RESET"
        assert c.cmd("AUTH", "pw") == "OK"
        r = c.cmd("EXEC")
        assert_err(r)
        assert "without MULTI" in r.text


def test_patterns_follow_redis_glob():
    with Server() as srv, srv.resp() as sub, srv.resp() as pub:
        pats = ["news.*", "h?llo", "h[ae]llo", "x[^0-9]", "lit\\*", "r[a-c]*"]
        assert subscribe(sub, *pats, pattern=True) == list(range(1, 7))
        cases = [
            ("news.eu", ["news.*"]),
            ("news.", ["news.*"]),
            ("hello", ["h?llo", "h[ae]llo"]),
            ("hillo", ["h?llo"]),
            ("hallo", ["h?llo", "h[ae]llo"]),
            ("xa", ["x[^0-9]"]),
            ("x5", []),
            ("lit*", ["lit\\*"]),
            ("litx", []),
            ("rb-anything", ["r[a-c]*"]),
            ("rd", []),
            ("News.eu", []),  # case-sensitive
        ]
        for ch, want in cases:
            assert pub.cmd("PUBLISH", ch, "m") == len(want), ch
            got = sorted(sub.read_reply()[1].decode() for _ in want)
            assert got == sorted(want), (ch, got)
        # A channel and a matching pattern: two messages.
        assert subscribe(sub, "news.eu") == [7]
        assert pub.cmd("PUBLISH", "news.eu", "both") == 2
        got = [sub.read_reply() for _ in range(2)]
        assert [b"message", b"news.eu", b"both"] in got
        assert [b"pmessage", b"news.*", b"news.eu", b"both"] in got
        # The marker: nothing else was queued.
        assert pub.cmd("PUBLISH", "news.eu", "end") == 2
        assert sub.read_reply()[-1] == b"end"
        assert sub.read_reply()[-1] == b"end"
        assert pub.cmd("PUBSUB", "NUMPAT") == 6


def test_resp3_pushes_on_a_normal_connection():
    with Server() as srv, srv.resp() as c, srv.resp() as pub:
        assert isinstance(c.cmd("HELLO", 3), dict)
        c.send(encode_multibulk("SUBSCRIBE", "t", "u"))
        assert c.read_reply() == Push([b"subscribe", b"t", 1])
        assert c.read_reply() == Push([b"subscribe", b"u", 2])
        # Every command still runs, with its usual reply.
        assert c.cmd("CNT.INCR", 5, 0) == [1, 1]
        assert pub.cmd("PUBLISH", "t", "one") == 1
        m = c.read_reply()
        assert isinstance(m, Push) and m == [b"message", b"t", b"one"]
        # Its own publish: the reply first, then the push.
        assert c.cmd("PUBLISH", "u", "self") == 1
        assert c.read_reply() == Push([b"message", b"u", b"self"])
        c.send(encode_multibulk("PSUBSCRIBE", "t*"))
        assert c.read_reply() == Push([b"psubscribe", b"t*", 3])
        assert pub.cmd("PUBLISH", "tx", "p") == 1
        assert c.read_reply() == Push([b"pmessage", b"t*", b"tx", b"p"])
        c.send(encode_multibulk("UNSUBSCRIBE", "t"))
        assert c.read_reply() == Push([b"unsubscribe", b"t", 2])


def test_binary_protocol_push_frames():
    with Server() as srv, srv.bin() as b, srv.resp() as pub, \
            srv.bin() as bpub:
        # One reply frame per request: the confirmations in one array.
        assert b.call("SUBSCRIBE", "ch", 5) == [[b"subscribe", b"ch", 1],
                                                [b"subscribe", b"5", 2]]
        assert b.call("PSUBSCRIBE", "c*") == [[b"psubscribe", b"c*", 3]]
        assert pub.cmd("PUBLISH", "ch", "hi") == 2
        assert b.read_push() == [b"message", b"ch", b"hi"]
        assert b.read_push() == [b"pmessage", b"c*", b"ch", b"hi"]
        # An integer channel is its decimal text; commands still run while
        # subscribed, and pushes in between are set aside, not taken for
        # replies.
        assert bpub.call("PUBLISH", 5, 77) == 1
        assert b.call("CNT.INCR", 9, 1) == [1, 1]
        assert b.pushes == [[b"message", b"5", b"77"]]
        b.pushes.clear()
        for i in range(50):
            pub.cmd("PUBLISH", "ch", i)
        assert b.call("CNT.GET", 9, 1) == 1
        got = [b.read_push() for _ in range(100)]
        assert [g[-1] for g in got if g[0] == b"message"] == \
            [str(i).encode() for i in range(50)]
        # Its own publish: reply, then push frames.
        assert b.call("PUBLISH", "ch", "me") == 2
        assert b.read_push() == [b"message", b"ch", b"me"]
        assert b.read_push() == [b"pmessage", b"c*", b"ch", b"me"]
        assert b.call("UNSUBSCRIBE") == [[b"unsubscribe", b"5", 2],
                                         [b"unsubscribe", b"ch", 1]]
        assert b.call("PUNSUBSCRIBE") == [[b"punsubscribe", b"c*", 0]]
        assert b.call("UNSUBSCRIBE") == [[b"unsubscribe", None, 0]]
        assert pub.cmd("PUBLISH", "ch", "gone") == 0
        # Not in a batch frame (a PUBLISH is).
        from test_batch import encode_batch
        b.send(encode_batch(901, [("CNT.INCR", 1, 0), ("SUBSCRIBE", "ch")]))
        r = b.reply(901)
        assert isinstance(r, Err) and "SUBSCRIBE" in r.text, r
        assert b.call("SUBSCRIBE", "ch") == [[b"subscribe", b"ch", 1]]
        b.send(encode_batch(902, [("CNT.INCR", 1, 0), ("PUBLISH", "ch", 1)]))
        assert b.reply(902) == [[1, 1], 1]
        assert b.read_push() == [b"message", b"ch", b"1"]


def test_pubsub_introspection_info_and_client_list():
    with Server() as srv, srv.resp() as a, srv.resp() as p, \
            srv.resp() as ctl:
        subscribe(a, "x1", "x2", "y")
        subscribe(p, "x1")
        subscribe(p, "z*", pattern=True)
        assert sorted(ctl.cmd("PUBSUB", "CHANNELS")) == [b"x1", b"x2", b"y"]
        assert sorted(ctl.cmd("PUBSUB", "CHANNELS", "x*")) == [b"x1", b"x2"]
        assert ctl.cmd("PUBSUB", "NUMSUB", "x1", "y", "none") == \
            [b"x1", 2, b"y", 1, b"none", 0]
        assert ctl.cmd("PUBSUB", "NUMSUB") == []
        assert ctl.cmd("PUBSUB", "NUMPAT") == 1
        assert ctl.cmd("PUBSUB", "SHARDCHANNELS") == []
        assert ctl.cmd("PUBSUB", "SHARDNUMSUB", "x1") == [b"x1", 0]
        assert len(ctl.cmd("PUBSUB", "HELP")) > 5
        assert_err(ctl.cmd("PUBSUB", "NOPE"))
        assert_err(ctl.cmd("PUBSUB", "NUMPAT", "extra"))
        assert_err(ctl.cmd("PUBSUB"))
        info = info_flat(ctl.cmd("INFO"))
        assert info["pubsub_channels"] == "3"
        assert info["pubsub_patterns"] == "1"
        assert info["pubsub_clients"] == "2"
        lines = ctl.cmd("CLIENT", "LIST").decode().splitlines()
        subs = sorted((f["sub"], f["psub"], f["flags"]) for f in
                      (dict(kv.split("=", 1) for kv in l.split()) for l in
                       lines))
        assert subs == [("0", "0", "N"), ("1", "1", "P"), ("3", "0", "P")]
        # HELLO 3 makes a map of NUMSUB.
        ctl.cmd("HELLO", 3)
        assert ctl.cmd("PUBSUB", "NUMSUB", "y") == {b"y": 1}
        ctl.cmd("HELLO", 2)
        # CLIENT KILL TYPE pubsub closes the subscribers only.
        assert ctl.cmd("CLIENT", "KILL", "TYPE", "pubsub") == 2
        a.wait_closed()
        p.wait_closed()
        assert ctl.cmd("PUBSUB", "CHANNELS") == []
        assert ctl.cmd("PUBSUB", "NUMPAT") == 0
        assert info_flat(ctl.cmd("INFO"))["pubsub_clients"] == "0"
        assert ctl.cmd("CLIENT", "KILL", "TYPE", "normal", "SKIPME",
                       "no") == 1


def test_publish_in_multi_subscribe_refused():
    with Server() as srv, srv.resp() as sub, srv.resp() as c:
        subscribe(sub, "m")
        assert c.cmd("MULTI") == "OK"
        assert c.cmd("PUBLISH", "m", "in-tx") == "QUEUED"
        assert c.cmd("CNT.INCR", 1, 0) == "QUEUED"
        assert c.cmd("EXEC") == [1, [1, 1]]
        assert sub.read_reply() == [b"message", b"m", b"in-tx"]
        assert c.cmd("MULTI") == "OK"
        assert_err(c.cmd("SUBSCRIBE", "m"))
        assert_err(c.cmd("EXEC"), "EXECABORT")
        # The server itself cannot subscribe a journal replay or a batch.
        assert c.cmd("PUBSUB", "NUMSUB", "m") == [b"m", 1]


def test_disconnects_and_many_channels_clean_up():
    with Server() as srv, srv.resp() as ctl:
        subs = [srv.resp() for _ in range(5)]
        for i, s in enumerate(subs):
            subscribe(s, *["c%d" % k for k in range(200)])
            subscribe(s, "p%d*" % i, pattern=True)
        assert len(ctl.cmd("PUBSUB", "CHANNELS")) == 200
        assert ctl.cmd("PUBLISH", "c7", "x") == 5
        for s in subs[:4]:
            s.close()
        srv.wait_for(lambda: ctl.cmd("PUBLISH", "c7", "y") == 1,
                     what="closed subscribers leave their channels")
        assert ctl.cmd("PUBSUB", "NUMPAT") == 1
        subs[4].close()
        srv.wait_for(lambda: ctl.cmd("PUBSUB", "CHANNELS") == [],
                     what="every channel gone")
        assert ctl.cmd("PUBSUB", "NUMPAT") == 0
        info = info_flat(ctl.cmd("INFO"))
        assert info["pubsub_subscriptions"] == "0"


def _fill_until_closed(srv, pub, fast, slow_sock, payload, rounds=400,
                       per_round=8):
    """Publishes rounds of messages to "flood"; the fast subscriber reads
    each round whole before the next, the slow one never reads. Returns
    the rounds published before the slow one was dropped."""
    for r in range(rounds):
        n = None
        for _ in range(per_round):
            n = pub.cmd("PUBLISH", "flood", payload)
        for _ in range(per_round):
            m = fast.read_reply()
            assert m[0] == b"message" and len(m[2]) == len(payload)
        if n == 1:
            return r
    raise AssertionError("the slow subscriber was never disconnected")


def _slow_subscriber(srv):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", srv.port))
    s.sendall(encode_multibulk("SUBSCRIBE", "flood"))
    return s


def test_a_slow_subscriber_is_disconnected_others_keep_receiving():
    with Server(pubsub_output_limit="1mb") as srv, srv.resp() as pub, \
            srv.resp() as fast:
        slow = _slow_subscriber(srv)
        subscribe(fast, "flood")
        srv.wait_for(lambda: pub.cmd("PUBSUB", "NUMSUB", "flood") ==
                     [b"flood", 2], what="both subscribed")
        _fill_until_closed(srv, pub, fast, slow, b"z" * 16384)
        info = info_flat(pub.cmd("INFO"))
        assert int(info["pubsub_limit_disconnections"]) == 1
        assert int(info["client_output_limit_disconnections"]) == 1
        # The fast one goes on.
        assert pub.cmd("PUBLISH", "flood", "after") == 1
        assert fast.read_reply() == [b"message", b"flood", b"after"]
        # The slow socket reaches its end once drained.
        slow.settimeout(10)
        while slow.recv(65536):
            pass
        slow.close()


def test_soft_limit_and_redis_name_of_the_limits():
    with Server() as srv, srv.resp() as pub, srv.resp() as fast:
        assert pub.cmd("CONFIG", "GET", "client-output-buffer-limit") == [
            b"client-output-buffer-limit",
            b"normal 67108864 0 0 replica 0 0 0 pubsub 33554432 8388608 60"]
        # Above 256kb for 0 s: dropped at the next push over it.
        assert pub.cmd("CONFIG", "SET", "client-output-buffer-limit",
                       "pubsub 0 256kb 0") == "OK"
        assert pub.cmd("CONFIG", "GET", "pubsub-output-*") == [
            b"pubsub-output-limit", b"0",
            b"pubsub-output-soft-limit", b"262144",
            b"pubsub-output-soft-seconds", b"0"]
        assert_err(pub.cmd("CONFIG", "SET", "client-output-buffer-limit",
                           "replica 1mb 1mb 1"))
        assert_err(pub.cmd("CONFIG", "SET", "client-output-buffer-limit",
                           "pubsub 1mb"))
        slow = _slow_subscriber(srv)
        subscribe(fast, "flood")
        srv.wait_for(lambda: pub.cmd("PUBSUB", "NUMSUB", "flood") ==
                     [b"flood", 2], what="both subscribed")
        _fill_until_closed(srv, pub, fast, slow, b"s" * 16384)
        assert info_flat(pub.cmd("INFO"))["pubsub_limit_disconnections"] == \
            "1"
        slow.close()
        # A normal client's replies are not held to the pubsub limits.
        assert pub.cmd("CONFIG", "SET", "client-output-buffer-limit",
                       "normal 0 0 0 pubsub 1kb 0 0") == "OK"
        assert len(pub.cmd("ECHO", "e" * 100000)) == 100000


def test_redis_cli_subscribe():
    with Server() as srv, srv.resp() as pub:
        p = subprocess.Popen(["redis-cli", "-p", str(srv.port), "SUBSCRIBE",
                              "alerts"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        try:
            srv.wait_for(lambda: pub.cmd("PUBSUB", "NUMSUB", "alerts") ==
                         [b"alerts", 1], what="redis-cli subscribed")
            assert pub.cmd("PUBLISH", "alerts", "disk full") == 1
            out = b""
            deadline = time.time() + 10
            while out.count(b"\n") < 6 and time.time() < deadline:
                r, _, _ = select.select([p.stdout], [], [], 1)
                if r:
                    chunk = os.read(p.stdout.fileno(), 4096)
                    if not chunk:
                        break
                    out += chunk
            assert out.decode().splitlines() == [
                "subscribe", "alerts", "1", "message", "alerts",
                "disk full"], out
        finally:
            p.kill()
            p.wait()


REDIS_PY_PUBSUB = r'''
import sys, time, redis
port = int(sys.argv[1])
r = redis.Redis(port=port)
ps = r.pubsub()
ps.subscribe("a", "b")
ps.psubscribe("badge:*")
for want in ("a", "b", "badge:*"):
    m = ps.get_message(timeout=10)
    assert m["type"] in ("subscribe", "psubscribe") and m["channel"] == want.encode(), m
assert r.publish("a", "hello") == 1
m = ps.get_message(timeout=10)
assert m == {"type": "message", "pattern": None, "channel": b"a", "data": b"hello"}, m
assert r.publish("badge:7", "x") == 1
m = ps.get_message(timeout=10)
assert m["type"] == "pmessage" and m["pattern"] == b"badge:*" and m["channel"] == b"badge:7", m
assert r.pubsub_numsub("a") == [(b"a", 1)]
assert r.pubsub_numpat() == 1
assert sorted(r.pubsub_channels()) == [b"a", b"b"]
# A handler, and ping while subscribed.
got = []
ps.subscribe(**{"h": lambda m: got.append(m["data"])})
ps.get_message(timeout=10)  # the subscribe confirmation goes to the handler
r.publish("h", "via-handler")
deadline = time.time() + 10
while not got and time.time() < deadline:
    ps.get_message(timeout=1)
assert got == [b"via-handler"], got
ps.ping()
ps.unsubscribe()
ps.punsubscribe()
ps.close()
# RESP3 when this redis-py speaks it.
try:
    r3 = redis.Redis(port=port, protocol=3)
    r3.ping()
except TypeError:
    r3 = None
if r3 is not None:
    ps3 = r3.pubsub()
    ps3.subscribe("c")
    m = ps3.get_message(timeout=10)
    assert m["type"] == "subscribe", m
    r.publish("c", "resp3")
    m = ps3.get_message(timeout=10)
    assert m["type"] == "message" and m["data"] == b"resp3", m
    ps3.close()
print("redis-py pubsub ok")
'''


def test_redis_py_pubsub():
    with Server() as srv:
        p = subprocess.run([SYS_PY, "-c", REDIS_PY_PUBSUB, str(srv.port)],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stdout + p.stderr
        assert "redis-py pubsub ok" in p.stdout


NODE_PUBSUB = r'''
import { createClient } from "redis";
import Redis from "ioredis";
const port = Number(process.argv[2]);
const fail = (m) => { console.error(m); process.exit(1); };
setTimeout(() => fail("timeout"), 20000);

// node-redis: a duplicate connection in subscriber mode.
const pub = createClient({ socket: { port } });
await pub.connect();
const sub = pub.duplicate();
await sub.connect();
const got = new Promise((res) => sub.subscribe("nr", (msg, ch) => res([ch, msg])));
await new Promise((r) => setTimeout(r, 50));
let n = 0;
while ((n = await pub.publish("nr", "from-node")) === 0)
  await new Promise((r) => setTimeout(r, 20));
const [ch, msg] = await got;
if (ch !== "nr" || msg !== "from-node") fail("node-redis got " + ch + " " + msg);
const pgot = new Promise((res) => sub.pSubscribe("badge:*", (msg, ch) => res([ch, msg])));
await new Promise((r) => setTimeout(r, 50));
while ((await pub.publish("badge:9", "b")) === 0)
  await new Promise((r) => setTimeout(r, 20));
const [pch, pmsg] = await pgot;
if (pch !== "badge:9" || pmsg !== "b") fail("node-redis pattern got " + pch);
await sub.unsubscribe();
await sub.pUnsubscribe();
await sub.quit();

// ioredis: the classic subscriber.
const io = new Redis({ port });
const iosub = new Redis({ port });
const iogot = new Promise((res) => iosub.on("message", (c, m) => res([c, m])));
await iosub.subscribe("io", "io2");
while ((await io.publish("io", "from-ioredis")) === 0)
  await new Promise((r) => setTimeout(r, 20));
const [ic, im] = await iogot;
if (ic !== "io" || im !== "from-ioredis") fail("ioredis got " + ic);
const iop = new Promise((res) => iosub.on("pmessage", (p, c, m) => res([p, c, m])));
await iosub.psubscribe("i*");
while ((await io.publish("ix", "pat")) < 1)
  await new Promise((r) => setTimeout(r, 20));
const [pp, pc, pm] = await iop;
if (pp !== "i*" || pc !== "ix" || pm !== "pat") fail("ioredis pmessage");
iosub.disconnect();
io.disconnect();
await pub.quit();
console.log("node pubsub ok");
process.exit(0);
'''


def test_node_redis_and_ioredis_subscribers():
    from test_clients import NODE_DIR, _node_clients
    d = _node_clients()
    if d is None:
        return
    script = os.path.join(NODE_DIR, "pubsub_test.mjs")
    with open(script, "w") as f:
        f.write(NODE_PUBSUB)
    with Server() as srv:
        p = subprocess.run(["node", script, str(srv.port)],
                           capture_output=True, text=True, timeout=60,
                           cwd=NODE_DIR)
        assert p.returncode == 0, p.stdout + p.stderr
        assert "node pubsub ok" in p.stdout


def test_protocol_md_example_bytes():
    """docs/PROTOCOL.md 2.14: SUBSCRIBE "news" as request 9, byte for
    byte, then the push frame of a PUBLISH news hi."""
    req = bytes.fromhex("b701300009000000090000000100000002040000006e657773")
    reply = bytes.fromhex(
        "b7010000090000002a00000000000000030100000003030000000209000000"
        "73756273637269626502040000006e657773010100000000000000")
    push = bytes.fromhex(
        "b7010000000000002100000000000100030300000002070000006d6573736167"
        "6502040000006e65777302020000006869")
    with Server() as srv, srv.raw() as r, srv.resp() as pub:
        r.send(req)
        assert r.read_exact(len(reply)) == reply
        assert pub.cmd("PUBLISH", "news", "hi") == 1
        assert r.read_exact(len(push)) == push


def test_one_subscriber_message_bytes():
    """A channel with one RESP subscriber (every badge channel) gets its
    message written straight into that subscriber's output: the bytes are
    Redis's, RESP2 and RESP3, for empty, binary and large payloads and
    channels, and for a connection publishing to itself (its reply first,
    then the push)."""
    def bulk(b):
        return b"$%d\r\n%s\r\n" % (len(b), b)

    big = bytes(range(256)) * 300 + b"\r\n"
    cases = [(b"c", b""), (b"", b"x"), (b"a\r\nb", b"\x00\r\n*3\r\n"),
             (b"badge:18446744073709551615", big), (b"k" * 5000, b"v")]
    with Server() as srv, srv.resp() as pub:
        for proto, head in ((2, b"*3\r\n"), (3, b">3\r\n")):
            with srv.raw() as r:
                if proto == 3:
                    # HELLO's map, then a PING's reply as the marker.
                    r.send(encode_multibulk("HELLO", 3) +
                           encode_multibulk("PING"))
                    buf = r.read_exact(1)
                    assert buf == b"%"
                    while not buf.endswith(b"+PONG\r\n"):
                        buf += r.read_exact(1)
                for ch, msg in cases:
                    r.send(encode_multibulk("SUBSCRIBE", ch))
                    conf = head + bulk(b"subscribe") + bulk(ch) + b":1\r\n"
                    assert r.read_exact(len(conf)) == conf
                    assert pub.cmd("PUBLISH", ch, msg) == 1
                    want = head + bulk(b"message") + bulk(ch) + bulk(msg)
                    assert r.read_exact(len(want)) == want, (proto, ch[:20])
                    r.send(encode_multibulk("UNSUBSCRIBE", ch))
                    gone = head + bulk(b"unsubscribe") + bulk(ch) + b":0\r\n"
                    assert r.read_exact(len(gone)) == gone
        # RESP3: its own publish, the reply before the message.
        with srv.resp() as c:
            c.cmd("HELLO", 3)
            c.send(encode_multibulk("SUBSCRIBE", "me"))
            assert c.read_reply() == Push([b"subscribe", b"me", 1])
            assert c.cmd("PUBLISH", "me", big) == 1
            assert c.read_reply() == Push([b"message", b"me", big])
