"""Badge channels (docs/COMMANDS.md, "Badge channels"; server/badges.h):
with notify-badges yes, every kind of write of every family publishes the
user's new badge on badge:<uid>, or a global write its head on
bc:<ch>, grp:<gid>, dot:<id>, feed:<author>; once per turn (a pipeline,
a batch frame, a MULTI: one message); never for a write that changed
nothing; after the writer's reply; from the expiry sweep too.

A write that must publish nothing is followed by a marker write that
must: the marker is then the next message, so "nothing" is checked
without waiting for anything."""

from harness import Err, Push, Server, encode_multibulk, info_flat

DAY = 86400
MARK_UID = 999999  # a user whose CNT writes serve as markers


def payload(text):
    """'badge 3 cnt 3 cnt.0 3' -> [('badge', 3), ('cnt', 3), ...]."""
    w = text.decode().split()
    assert len(w) % 2 == 0, text
    return [(w[i], int(w[i + 1])) for i in range(0, len(w), 2)]


class Sub:
    """A RESP2 subscriber of some channels (and patterns)."""

    def __init__(self, srv, chans=(), pats=()):
        self.c = srv.resp()
        n = 0
        if chans:
            self.c.send(encode_multibulk("SUBSCRIBE", *chans))
            n += len(chans)
        if pats:
            self.c.send(encode_multibulk("PSUBSCRIBE", *pats))
            n += len(pats)
        for _ in range(n):
            r = self.c.read_reply()
            assert r[0] in (b"subscribe", b"psubscribe"), r

    def next(self):
        """(channel, parsed payload) of the next message."""
        m = self.c.read_reply()
        assert m[0] in (b"message", b"pmessage"), m
        return m[-2].decode(), payload(m[-1])

    def close(self):
        self.c.close()


def badge(uid, *pairs):
    return ("badge:%d" % uid, list(pairs))


def expect(sub, *msgs):
    for want in msgs:
        got = sub.next()
        assert got == want, (got, want)


def marked(sub, w):
    """No message came before this point: a marker write now publishes
    on badge:MARK_UID, which must be the very next message."""
    r = w.cmd("CNT.INCR", MARK_UID, 0)
    ch, p = sub.next()
    assert ch == "badge:%d" % MARK_UID, (ch, p)
    assert p[-1] == ("cnt.0", r[0]), p


def server(**kw):
    kw.setdefault("notify_badges", "yes")
    return Server(**kw)


def test_cnt_writes():
    with server() as srv, srv.resp() as w:
        s = Sub(srv, ["badge:1", "badge:%d" % MARK_UID])
        assert w.cmd("CNT.INCR", 1, "mention", 3) == [3, 3]
        expect(s, badge(1, ("badge", 3), ("cnt", 3), ("cnt.0", 3)))
        assert w.cmd("CNT.INCR", 1, "like") == [1, 4]
        expect(s, badge(1, ("badge", 4), ("cnt", 4), ("cnt.2", 1)))
        w.cmd("CNT.DECR", 1, 0, 2)
        expect(s, badge(1, ("badge", 2), ("cnt", 2), ("cnt.0", 1)))
        w.cmd("CNT.SET", 1, 4, 10)
        expect(s, badge(1, ("badge", 12), ("cnt", 12), ("cnt.4", 10)))
        w.cmd("CNT.CLEAR", 1, 2)
        expect(s, badge(1, ("badge", 11), ("cnt", 11), ("cnt.2", 0)))
        w.cmd("CNT.CLEAR", 1)
        expect(s, badge(1, ("badge", 0), ("cnt", 0)))
        # Notices: a notice counted twice, an ACK of an unknown one, a
        # DECR at 0, a CLEAR of nothing, a SET to the same value: nothing.
        assert w.cmd("CNT.INCR", 1, 1, 1, "ID", 77) == [1, 1]
        expect(s, badge(1, ("badge", 1), ("cnt", 1), ("cnt.1", 1)))
        assert w.cmd("CNT.INCR", 1, 1, 1, "ID", 77) == [1, 1]
        w.cmd("CNT.ACK", 1, 1, 12345)
        w.cmd("CNT.DECR", 1, 3)
        w.cmd("CNT.CLEAR", 1, 3)
        w.cmd("CNT.SET", 1, 0, 0)
        marked(s, w)
        w.cmd("CNT.ACK", 1, 1, 77)
        expect(s, badge(1, ("badge", 0), ("cnt", 0), ("cnt.1", 0)))
        w.cmd("CNT.ACK", 1, 1, 77)  # read already
        marked(s, w)
        # Past the cap, the part stays 100 but the type's count moves.
        w.cmd("CNT.SET", 1, 0, 150)
        expect(s, badge(1, ("badge", 100), ("cnt", 100), ("cnt.0", 150)))
        w.cmd("CNT.INCR", 1, 0)
        expect(s, badge(1, ("badge", 100), ("cnt", 100), ("cnt.0", 151)))
        # Another user's writes are not on badge:1.
        w.cmd("CNT.INCR", 2, 0)
        marked(s, w)


def test_conv_writes():
    with server() as srv, srv.resp() as w:
        s = Sub(srv, ["badge:5", "badge:%d" % MARK_UID])
        w.cmd("CONV.SEQ", 5, 100, 3)
        expect(s, badge(5, ("badge", 3), ("conv", 3), ("conv.100", 3)))
        w.cmd("CONV.SEQ", 5, 100, 3)  # idempotent: nothing
        w.cmd("CONV.SEQ", 5, 100, 2)  # older: nothing
        w.cmd("CONV.READ", 5, 100, 0)  # stale read: nothing
        w.cmd("CONV.MUTE", 5, 400, 1)  # an empty conversation: nothing
        marked(s, w)
        w.cmd("CONV.INCR", 5, 200, 2)
        expect(s, badge(5, ("badge", 5), ("conv", 5), ("conv.200", 2)))
        w.cmd("CONV.MUTE", 5, 200, 1)  # the total drops, the count stays
        expect(s, badge(5, ("badge", 3), ("conv", 3), ("conv.200", 2)))
        w.cmd("CONV.READ", 5, 100, 2)
        expect(s, badge(5, ("badge", 1), ("conv", 1), ("conv.100", 1)))
        w.cmd("CONV.RECALL", 5, 100, 3)
        expect(s, badge(5, ("badge", 0), ("conv", 0), ("conv.100", 0)))
        w.cmd("CONV.RECALL", 5, 100, 3)  # again: nothing
        marked(s, w)
        w.cmd("CONV.MARKUNREAD", 5, 100, 2)
        expect(s, badge(5, ("badge", 1), ("conv", 1), ("conv.100", 1)))
        w.cmd("CONV.DEL", 5, 200)  # muted: the total stays; its count goes
        expect(s, badge(5, ("badge", 1), ("conv", 1), ("conv.200", 0)))
        w.cmd("CONV.SEQ", 5, 300, 4)
        expect(s, badge(5, ("badge", 5), ("conv", 5), ("conv.300", 4)))
        w.cmd("CONV.READALL", 5)
        expect(s, badge(5, ("badge", 0), ("conv", 0)))
        w.cmd("CONV.READALL", 5)
        marked(s, w)


def test_grp_writes_and_the_group_channel():
    with server() as srv, srv.resp() as w:
        s = Sub(srv, ["badge:7", "grp:40", "badge:%d" % MARK_UID])
        w.cmd("GRP.POST", 40)
        expect(s, ("grp:40", [("head", 1)]))
        # Joining at the head changes nothing the user sees.
        assert w.cmd("GRP.JOIN", 7, 40) == 0
        marked(s, w)
        # A post: the group's channel, never a message per member.
        w.cmd("GRP.POST", 40)
        expect(s, ("grp:40", [("head", 2)]))
        marked(s, w)
        w.cmd("GRP.SEEN", 7, 40)
        expect(s, badge(7, ("badge", 0), ("grp", 0), ("grp.40", 0)))
        w.cmd("GRP.SEEN", 7, 40)  # again: nothing
        marked(s, w)
        w.cmd("GRP.MARKUNREAD", 7, 40, 1)
        expect(s, badge(7, ("badge", 2), ("grp", 2), ("grp.40", 2)))
        w.cmd("GRP.MUTE", 7, 40, 1)
        expect(s, badge(7, ("badge", 0), ("grp", 0), ("grp.40", 2)))
        w.cmd("GRP.MUTE", 7, 40, 0)
        expect(s, badge(7, ("badge", 2), ("grp", 2), ("grp.40", 2)))
        w.cmd("GRP.SEENALL", 7)
        expect(s, badge(7, ("badge", 0), ("grp", 0)))
        w.cmd("GRP.POST", 40)
        expect(s, ("grp:40", [("head", 3)]))
        assert w.cmd("GRP.LEAVE", 7, 40) == 1
        expect(s, badge(7, ("badge", 0), ("grp", 0), ("grp.40", 0)))
        # A recall moves no head: nothing on grp:40.
        w.cmd("GRP.RECALL", 40, 3)
        marked(s, w)


def test_bc_dot_feed_writes_and_global_heads():
    with server() as srv, srv.resp() as w:
        s = Sub(srv, ["badge:9", "bc:1", "dot:3", "feed:20",
                      "badge:%d" % MARK_UID])
        # BC: registering by a read is not a change the user sees.
        assert w.cmd("BC.UNREAD", 9, 1) == 0
        marked(s, w)
        w.cmd("BC.PUBLISH", 1)
        expect(s, ("bc:1", [("head", 1)]))
        w.cmd("BC.PUBLISH", 2)  # nobody listens to bc:2
        marked(s, w)
        w.cmd("BC.READ", 9, 1)
        expect(s, badge(9, ("badge", 0), ("bc", 0), ("bc.1", 0)))
        w.cmd("BC.READ", 9, 1)
        marked(s, w)
        # DOT: a push is the dot's channel; a click dismisses it.
        w.cmd("DOT.PUSH", 3, 1000)
        expect(s, ("dot:3", [("head", 1000)]))
        w.cmd("DOT.PUSH", 3, 500)  # older: the push time stays
        marked(s, w)
        w.cmd("DOT.CLICK", 9, 3, 2000)
        expect(s, badge(9, ("badge", 0), ("dot", 0), ("dot.3", 0)))
        w.cmd("DOT.PUSH", 3, 3000)
        expect(s, ("dot:3", [("head", 3000)]))
        w.cmd("DOT.CLICK", 9, 3, 1500)  # stale click: nothing
        marked(s, w)
        # FEED: follows start at the current count; posts go to the
        # author's channel; a reset clears the part.
        w.cmd("FEED.POST", 20, 2)
        expect(s, ("feed:20", [("head", 2)]))
        assert w.cmd("FEED.FOLLOW", 9, 20) == 1
        marked(s, w)
        w.cmd("FEED.POST", 20, 3)
        expect(s, ("feed:20", [("head", 5)]))
        w.cmd("FEED.UNPOST", 20, 1)
        expect(s, ("feed:20", [("head", 4)]))
        w.cmd("FEED.RESET", 9)
        # The dot pushed again shows (dot part 1), feed had 2.
        expect(s, badge(9, ("badge", 1), ("feed", 0)))
        w.cmd("FEED.UNFOLLOW", 9, 20)
        marked(s, w)
        # RCPT publishes nothing.
        w.cmd("RCPT.JOIN", 70, 9)
        w.cmd("RCPT.SEND", 70, 1, 8)
        w.cmd("RCPT.READ", 70, 9, 1)
        marked(s, w)


def test_user_del_expiry_and_flushall():
    with server(enable_debug_command="yes") as srv, srv.resp() as w:
        s = Sub(srv, ["badge:11", "badge:12", "badge:%d" % MARK_UID])
        w.cmd("CNT.INCR", 11, 0, 2)
        expect(s, badge(11, ("badge", 2), ("cnt", 2), ("cnt.0", 2)))
        w.cmd("GRP.JOIN", 11, 4)
        w.cmd("GRP.POST", 4)
        w.cmd("USER.DEL", 11)
        expect(s, badge(11, ("badge", 0), ("cnt", 0), ("grp", 0)))
        w.cmd("USER.DEL", 11)  # nothing left: nothing
        marked(s, w)
        # The expiry sweep (a timer, no client's turn) publishes too.
        w.cmd("GRP.JOIN", 12, 4)
        w.cmd("GRP.POST", 4)
        w.cmd("DEBUG", "ADVANCE-CLOCK", 31 * DAY)
        expect(s, badge(12, ("badge", 0), ("grp", 0)))
        # FLUSHALL: every subscribed user whose badge it changed.
        w.cmd("CNT.INCR", 12, 1)
        expect(s, badge(12, ("badge", 1), ("cnt", 1), ("cnt.1", 1)))
        w.cmd("FLUSHALL")
        got = sorted([s.next(), s.next()])
        assert got == sorted([badge(12, ("badge", 0), ("cnt", 0)),
                              badge(MARK_UID, ("badge", 0), ("cnt", 0))]), got
        w.cmd("FLUSHALL")
        marked(s, w)


def test_a_turn_publishes_once_per_user():
    with server() as srv, srv.resp() as w:
        s = Sub(srv, ["badge:21", "badge:22", "bc:5", "badge:%d" % MARK_UID])
        # One pipeline, sent at once: one turn.
        w.pipeline([("CNT.INCR", 21, 0)] * 10 + [("CONV.SEQ", 21, 8, 4)] +
                   [("CNT.INCR", 22, 1)] * 3 + [("BC.PUBLISH", 5)] * 4)
        got = sorted([s.next() for _ in range(3)])
        assert got == sorted([
            badge(21, ("badge", 14), ("cnt", 10), ("conv", 4), ("cnt.0", 10),
                  ("conv.8", 4)),
            badge(22, ("badge", 3), ("cnt", 3), ("cnt.1", 3)),
            ("bc:5", [("head", 4)])]), got
        marked(s, w)
        # MULTI/EXEC: once, after the whole transaction.
        assert w.cmd("MULTI") == "OK"
        w.cmd("CONV.SEQ", 21, 9, 1)
        w.cmd("CNT.INCR", 21, "dm")
        w.cmd("CNT.INCR", 21, "dm")
        assert len(w.cmd("EXEC")) == 3
        expect(s, badge(21, ("badge", 17), ("cnt", 12), ("conv", 5),
                        ("conv.9", 1), ("cnt.3", 2)))
        marked(s, w)
        # Writes that cancel out within a turn still make one message
        # (the figures are read once, at its end).
        w.pipeline([("CNT.INCR", 22, 1), ("CNT.DECR", 22, 1)])
        expect(s, badge(22, ("badge", 3), ("cnt", 3), ("cnt.1", 3)))
        marked(s, w)


def test_a_binary_batch_publishes_once_and_binary_subscribers():
    with server() as srv, srv.bin() as b, srv.bin() as bs, srv.resp() as w:
        s = Sub(srv, ["badge:31", "badge:%d" % MARK_UID])
        assert bs.call("SUBSCRIBE", "badge:31") == [[b"subscribe",
                                                     b"badge:31", 1]]
        from test_batch import batch
        r = batch(b, [("CONV.SEQ", 31, 77, 2), ("CNT.INCR", 31, 3),
                      ("CNT.INCR", 31, 3)])
        assert r == [[2, 2], [1, 1], [2, 2]]
        want = badge(31, ("badge", 4), ("cnt", 2), ("conv", 2), ("conv.77", 2),
                     ("cnt.3", 2))
        expect(s, want)
        marked(s, w)
        p = bs.read_push()
        assert p[:2] == [b"message", b"badge:31"]
        assert payload(p[2]) == want[1]


def test_patterns_hear_every_user_and_the_setting_is_runtime():
    with Server() as srv, srv.resp() as w:
        s = Sub(srv, ["badge:%d" % MARK_UID], pats=["badge:*", "bc:*"])
        # notify-badges no (the default): nothing is published.
        w.cmd("CNT.INCR", 41, 0)
        w.cmd("BC.PUBLISH", 6)
        w.cmd("PUBLISH", "badge:%d" % MARK_UID, "badge 0")
        m = s.c.read_reply()
        assert m[0] == b"message" and m[2] == b"badge 0", m
        m = s.c.read_reply()  # and the pattern's copy of it
        assert m[0] == b"pmessage" and m[3] == b"badge 0", m
        assert w.cmd("CONFIG", "SET", "notify-badges", "yes") == "OK"
        w.cmd("CNT.INCR", 41, 0)
        m = s.c.read_reply()
        assert m[:3] == [b"pmessage", b"badge:*", b"badge:41"], m
        assert payload(m[3]) == [("badge", 2), ("cnt", 2), ("cnt.0", 2)]
        w.cmd("BC.PUBLISH", 6)
        m = s.c.read_reply()
        assert m[:3] == [b"pmessage", b"bc:*", b"bc:6"], m
        assert payload(m[3]) == [("head", 2)]
        info = info_flat(w.cmd("INFO"))
        assert info["notify_badges"] == "yes"
        assert int(info["notify_messages"]) == 2
        assert w.cmd("CONFIG", "SET", "notify-badges", "no") == "OK"
        w.cmd("CNT.INCR", 41, 0)
        assert w.cmd("PUBLISH", "x", "y") == 0
        w.cmd("PUBLISH", "badge:%d" % MARK_UID, "end")
        assert s.c.read_reply()[-1] == b"end"


def test_a_badge_follows_the_writers_reply():
    """The writer subscribed to its own badge (RESP3): its reply first,
    then the push; never the other way round."""
    with server() as srv, srv.resp() as c:
        assert isinstance(c.cmd("HELLO", 3), dict)
        c.send(encode_multibulk("SUBSCRIBE", "badge:51"))
        assert c.read_reply() == Push([b"subscribe", b"badge:51", 1])
        for i in range(1, 4):
            assert c.cmd("CNT.INCR", 51, 0) == [i, i]
            m = c.read_reply()
            assert isinstance(m, Push) and m[1] == b"badge:51", m
            assert payload(m[2]) == [("badge", i), ("cnt", i), ("cnt.0", i)]
        # journal-fsync always: still after the reply (and after the
        # record is synced).
    with server(journal_fsync="always") as srv, srv.resp() as w:
        s = Sub(srv, ["badge:52"])
        assert w.cmd("CNT.INCR", 52, 1) == [1, 1]
        expect(s, badge(52, ("badge", 1), ("cnt", 1), ("cnt.1", 1)))


def test_unsubscribed_users_cost_no_probe():
    with server() as srv, srv.resp() as w:
        s = Sub(srv, ["badge:61"])
        for u in range(100):
            w.cmd("CNT.INCR", 1000 + u, 0)
        w.cmd("BC.PUBLISH", 9)
        info = info_flat(w.cmd("INFO"))
        assert info["notify_probes"] == "0"
        w.cmd("CNT.INCR", 61, 0)
        expect(s, badge(61, ("badge", 1), ("cnt", 1), ("cnt.0", 1)))
        assert info_flat(w.cmd("INFO"))["notify_probes"] == "1"


def test_channels_that_come_and_go_within_the_turn():
    """The flush publishes through the channel record the write's probe
    found, unless a channel record was created or freed since
    (pubsub_epoch): then it looks the channel up again. A RESP3 client
    subscribed to its own badge sends, in one turn, a write and then
    leaves (and rejoins) the channel: the record the probe saw is freed
    before the flush."""
    with server() as srv, srv.resp() as c, srv.resp() as w:
        s = Sub(srv, ["badge:%d" % MARK_UID])
        assert isinstance(c.cmd("HELLO", 3), dict)
        c.send(encode_multibulk("SUBSCRIBE", "badge:71"))
        assert c.read_reply() == Push([b"subscribe", b"badge:71", 1])
        # Write, leave, rejoin: one message, to the channel's new record.
        c.send(encode_multibulk("CNT.INCR", 71, 0) +
               encode_multibulk("UNSUBSCRIBE", "badge:71") +
               encode_multibulk("SUBSCRIBE", "badge:71"))
        assert c.read_reply() == [1, 1]
        assert c.read_reply() == Push([b"unsubscribe", b"badge:71", 0])
        assert c.read_reply() == Push([b"subscribe", b"badge:71", 1])
        m = c.read_reply()
        assert isinstance(m, Push) and m[:2] == [b"message", b"badge:71"], m
        assert payload(m[2]) == [("badge", 1), ("cnt", 1), ("cnt.0", 1)]
        # Write, leave: nobody is on the channel at the end of the turn.
        c.send(encode_multibulk("CNT.INCR", 71, 0) +
               encode_multibulk("UNSUBSCRIBE", "badge:71"))
        assert c.read_reply() == [2, 2]
        assert c.read_reply() == Push([b"unsubscribe", b"badge:71", 0])
        # Another user's channel created between a write and the flush:
        # the write's own channel still gets its message.
        c.send(encode_multibulk("SUBSCRIBE", "badge:72"))
        assert c.read_reply() == Push([b"subscribe", b"badge:72", 1])
        c.send(encode_multibulk("CNT.INCR", 72, 1) +
               encode_multibulk("SUBSCRIBE", "badge:73") +
               encode_multibulk("CNT.INCR", 73, 2))
        assert c.read_reply() == [1, 1]
        assert c.read_reply() == Push([b"subscribe", b"badge:73", 2])
        assert c.read_reply() == [1, 1]
        got = sorted([c.read_reply(), c.read_reply()])
        assert [m[1] for m in got] == [b"badge:72", b"badge:73"], got
        assert payload(got[0][2]) == [("badge", 1), ("cnt", 1), ("cnt.1", 1)]
        assert payload(got[1][2]) == [("badge", 1), ("cnt", 1), ("cnt.2", 1)]
        # Nothing else reached anyone (the marker is the next message).
        marked(s, w)
        assert c.cmd("PING") == "PONG"


def test_families_that_hold_nothing_and_many_users_in_one_turn():
    """The flush reads only the families whose store holds some entry
    (every user's part is 0 in the others) and pipelines its users' reads
    (badges.c, badges_flush): a family emptied in the turn still lists
    its part, 0; a family that holds entries for another user only adds
    nothing; and a turn of more users than the pipeline holds in flight
    gives each its own figures, whatever families each has."""
    with server() as srv, srv.resp() as w:
        users = list(range(400, 440))
        s = Sub(srv, ["badge:%d" % u for u in users] +
                ["bc:3", "badge:%d" % MARK_UID])
        # Only user 400 in CONV; the CNT write of 401 ignores it.
        w.cmd("CONV.SEQ", 400, 7, 5)
        expect(s, badge(400, ("badge", 5), ("conv", 5), ("conv.7", 5)))
        w.cmd("CNT.INCR", 401, 0, 2)
        expect(s, badge(401, ("badge", 2), ("cnt", 2), ("cnt.0", 2)))
        # 401's CLEAR empties CNT (the marker has not written yet).
        w.cmd("CNT.CLEAR", 401)
        expect(s, badge(401, ("badge", 0), ("cnt", 0)))
        # USER.DEL empties CONV: its part is listed, 0.
        w.cmd("USER.DEL", 400)
        expect(s, badge(400, ("badge", 0), ("conv", 0)))
        marked(s, w)
        # One turn over 40 users, every third with a CONV part, every
        # fifth with a GRP one too: each message its own user's figures.
        setup = []
        for i, u in enumerate(users):
            if i % 3 == 0:
                setup.append(("CONV.SEQ", u, 1, i + 1))
            if i % 5 == 0:
                setup += [("GRP.JOIN", u, 9)]
        w.pipeline(setup + [("GRP.POST", 9), ("GRP.POST", 9)])
        want = {}
        for i, u in enumerate(users):
            conv = i + 1 if i % 3 == 0 else 0
            grp = 2 if i % 5 == 0 else 0
            if conv or grp:
                want[u] = (conv, grp)
        # GRP.POST moves heads (on grp:9, nobody listens), not badges:
        # the members' badge messages came from CONV.SEQ only.
        for _ in [u for u in want if want[u][0]]:
            s.next()
        marked(s, w)
        # A global write amid the users: its head message among theirs.
        writes = [("CNT.INCR", u, 1, 1 + i % 4) for i, u in enumerate(users)]
        w.pipeline(writes[:17] + [("BC.PUBLISH", 3)] + writes[17:])
        got = dict(s.next() for _ in range(len(users) + 1))
        assert got.pop("bc:3") == [("head", 1)]
        for i, u in enumerate(users):
            conv, grp = want.get(u, (0, 0))
            cnt = 1 + i % 4
            assert got["badge:%d" % u] == [
                ("badge", cnt + conv + grp), ("cnt", cnt),
                ("cnt.1", cnt)], (u, got["badge:%d" % u])
        marked(s, w)


def test_uids_and_keys_as_text():
    """The probe reads the uid and the key from the request's text
    (badges_arg_u64) with the handler's rules: leading zeros, the largest
    uid, and a uid past it (the write fails: no message)."""
    top = 2 ** 63 - 1
    with server() as srv, srv.resp() as w:
        s = Sub(srv, ["badge:42", "badge:%d" % top, "badge:%d" % MARK_UID])
        assert w.cmd("CNT.INCR", "00042", "0002") == [1, 1]
        expect(s, badge(42, ("badge", 1), ("cnt", 1), ("cnt.2", 1)))
        assert w.cmd("CNT.INCR", str(top), "0") == [1, 1]
        expect(s, badge(top, ("badge", 1), ("cnt", 1), ("cnt.0", 1)))
        for bad in (str(top + 1), "1" * 20, "4x2", "-42"):
            r = w.cmd("CNT.INCR", bad, 0)
            assert isinstance(r, Err), (bad, r)
        marked(s, w)
