"""RCPT: read receipts in group chats over RESP multibulk, inline and
binary (test names end in _resp, _inline, _binary), the limits and the
retention, the typed calls of libunread, unread-cli, a randomized run
against a Python model across the protocols, and restarts (from the
snapshot only, the snapshot and the journal after it, the journal alone
after kill -9) that keep every receipt, the memory per message and the
retention clock.
"""

import ctypes
import os
import random
import signal
import subprocess
import tempfile
import time

from harness import (E, ID_MAX, U64_MAX, UNREADD, Server, assert_err, info_dict,
                     info_flat, is_err, run_cli)
from ways import Via, each_way, lib_connect, libunread

DAY_MS = 86400000


def no_such_message(via, reply):
    via.bad(reply, "ERR no such message", E["ERR"])


@each_way
def test_recipients_are_the_members_at_send(rc):
    for uid in (1, 2, 3, 4, 5):
        assert rc("RCPT.JOIN", 7, uid) == uid - 1  # dense mapids
    assert rc("RCPT.QUIT", 7, 5) == 1  # quit before the send: not one
    assert rc("RCPT.SEND", 7, 100, 1) == 3  # 5 members - 1 quit - sender
    assert rc("RCPT.JOIN", 7, 6) == 5  # join after the send: not one
    assert rc("RCPT.QUIT", 7, 4) == 1  # quit after the send: still one
    assert rc("RCPT.COUNT", 7, 100) == [0, 3]
    assert rc("RCPT.LIST", 7, 100, "UNREAD") == [2, 3, 4]
    assert rc("RCPT.READ", 7, 1, 100) == 0  # the sender
    assert rc("RCPT.READ", 7, 5, 100) == 0
    assert rc("RCPT.READ", 7, 6, 100) == 0
    assert rc("RCPT.READ", 7, 4, 100) == 1  # quit after: may still read
    assert rc("RCPT.READ", 7, 4, 100) == 0  # reading twice counts once
    assert rc("RCPT.COUNT", 7, 100) == [1, 2]
    assert rc("RCPT.LIST", 7, 100, "READ") == [4]
    assert rc("RCPT.LIST", 7, 100, "unread") == [2, 3]
    assert rc("RCPT.READ", 7, 2, 100, 100, 555) == 1
    assert rc("RCPT.READ", 7, 3, 100) == 1  # everyone: collapses
    assert rc("RCPT.COUNT", 7, 100) == [3, 0]
    assert rc("RCPT.LIST", 7, 100, "READ") == [2, 3, 4]
    assert rc("RCPT.LIST", 7, 100, "UNREAD") == []


@each_way
def test_rejoin_keeps_the_mapid(rc):
    assert rc("RCPT.JOIN", 1, 500) == 0
    assert rc("RCPT.JOIN", 1, 600) == 1
    assert rc("RCPT.QUIT", 1, 500) == 1
    assert rc("RCPT.QUIT", 1, 500) == 0
    assert rc("RCPT.QUIT", 1, 700) == 0  # never joined
    assert rc("RCPT.QUIT", 2, 500) == 0  # unknown group
    assert rc("RCPT.JOIN", 1, 500) == 0
    assert rc("RCPT.JOIN", 1, 500) == 0
    assert rc("RCPT.SEND", 1, 9, 600) == 1  # 500 is back
    assert rc("RCPT.JOIN", 2, 600) == 0  # mapids are per group


@each_way
def test_list_pages_in_join_order(rc):
    uids = [1000 + 7 * i for i in range(150)]
    for u in uids:
        rc("RCPT.JOIN", 3, u)
    assert rc("RCPT.SEND", 3, 1, uids[0]) == 149
    readers = uids[1::2]
    for u in readers:
        assert rc("RCPT.READ", 3, u, 1) == 1
    assert rc("RCPT.COUNT", 3, 1) == [75, 74]
    assert rc("RCPT.LIST", 3, 1, "READ") == readers
    pages = []
    for off in range(0, 80, 20):
        pages += rc("RCPT.LIST", 3, 1, "READ", off, 20)
    assert pages == readers
    assert rc("RCPT.LIST", 3, 1, "UNREAD", 0, 3) == uids[2:8:2]
    assert rc("RCPT.LIST", 3, 1, "UNREAD", 73, 10) == [uids[-2]]
    assert rc("RCPT.LIST", 3, 1, "UNREAD", 74, 10) == []
    assert rc("RCPT.LIST", 3, 1, "READ", 0, 0) == []
    assert rc("RCPT.LIST", 3, 1, "READ", 4294967295, 1) == []
    # counts match lists
    r, u = rc("RCPT.COUNT", 3, 1)
    assert len(rc("RCPT.LIST", 3, 1, "READ")) == r
    assert len(rc("RCPT.LIST", 3, 1, "UNREAD")) == u


@each_way
def test_readupto_marks_tracked_messages_up_to_msgid(rc):
    for u in (1, 2, 3):
        rc("RCPT.JOIN", 4, u)
    for msgid, sender in ((50, 1), (20, 1), (40, 2), (60, 1)):  # any order
        assert rc("RCPT.SEND", 4, msgid, sender) == 2
    assert rc("RCPT.READUPTO", 4, 2, 45) == 1  # 20 (40 is its own)
    assert rc("RCPT.READUPTO", 4, 3, 50) == 3  # 20, 40, 50
    assert rc("RCPT.READUPTO", 4, 3, 50) == 0
    assert rc("RCPT.COUNT", 4, 20) == [2, 0]
    assert rc("RCPT.COUNT", 4, 50) == [1, 1]
    assert rc("RCPT.COUNT", 4, 60) == [0, 2]
    assert rc("RCPT.READUPTO", 4, 9, ID_MAX) == 0  # not a member
    assert rc("RCPT.READUPTO", 99, 1, ID_MAX) == 0  # unknown group


@each_way
def test_resend_is_idempotent(rc):
    for u in (1, 2, 3):
        rc("RCPT.JOIN", 5, u)
    assert rc("RCPT.SEND", 5, 77, 1) == 2
    assert rc("RCPT.READ", 5, 2, 77) == 1
    rc("RCPT.JOIN", 5, 4)
    assert rc("RCPT.SEND", 5, 77, 1) == 2  # same answer, nothing reset
    assert rc("RCPT.COUNT", 5, 77) == [1, 1]
    r = rc("RCPT.SEND", 5, 77, 3)
    rc.bad(r, "ERR msgid already sent by another sender", E["ERR"])
    assert rc("RCPT.SEND", 6, 1, 1) == 0  # nobody joined group 6
    assert rc("RCPT.COUNT", 6, 1) == [0, 0]


@each_way
def test_untracked_messages(rc):
    no_such_message(rc, rc("RCPT.COUNT", 8, 1))  # unknown group
    no_such_message(rc, rc("RCPT.LIST", 8, 1, "READ"))
    rc("RCPT.JOIN", 8, 1)
    rc("RCPT.SEND", 8, 1, 1)
    no_such_message(rc, rc("RCPT.COUNT", 8, 2))  # unknown msgid
    no_such_message(rc, rc("RCPT.LIST", 8, 2, "UNREAD", 0, 10))
    assert rc("RCPT.READ", 8, 1, 2, 3) == 0  # skipped, not an error
    assert rc("RCPT.READ", 9, 1, 1) == 0


@each_way
def test_bad_input_is_refused(rc):
    rc("RCPT.JOIN", 1, 1)
    rc("RCPT.JOIN", 1, 2)
    rc("RCPT.SEND", 1, 10, 1)
    rc("RCPT.SEND", 1, 11, 1)
    for args in (("RCPT.JOIN", "x", 1), ("RCPT.JOIN", 1, "-1"),
                 ("RCPT.QUIT", "18446744073709551616", 1),
                 ("RCPT.SEND", 1, "1.5", 1), ("RCPT.SEND", 1, 12, 1, "now"),
                 ("RCPT.READUPTO", 1, 2, "x"), ("RCPT.COUNT", 1, "+1"),
                 ("RCPT.LIST", 1, 10, "READ", "x", 1),
                 ("RCPT.LIST", 1, 10, "READ", 0, "4294967296")):
        rc.bad(rc(*args))
    r = rc("RCPT.LIST", 1, 10, "SEEN")
    rc.bad(r)
    assert "READ or UNREAD" in r.text
    # All or nothing: a bad msgid anywhere marks none of them.
    rc.bad(rc("RCPT.READ", 1, 2, 10, "x", 11))
    assert rc("RCPT.COUNT", 1, 10) == [0, 1]
    assert rc("RCPT.COUNT", 1, 11) == [0, 1]
    # A send dated before the retention horizon is refused.
    rc.bad(rc("RCPT.SEND", 1, 12, 1, 5), "ERR ts is older")
    no_such_message(rc, rc("RCPT.COUNT", 1, 12))


@each_way
def test_wrong_arity(rc):
    for args in (("RCPT.JOIN", 1), ("RCPT.JOIN", 1, 2, 3), ("RCPT.QUIT",),
                 ("RCPT.SEND", 1, 2), ("RCPT.SEND", 1, 2, 3, 4, 5),
                 ("RCPT.READ", 1, 2), ("RCPT.READUPTO", 1, 2),
                 ("RCPT.COUNT", 1), ("RCPT.COUNT", 1, 2, 3),
                 ("RCPT.LIST", 1, 2), ("RCPT.LIST", 1, 2, "READ", 0),
                 ("RCPT.LIST", 1, 2, "READ", 0, 1, 2)):
        rc.bad(rc(*args), "ERR wrong number of arguments", E["ARITY"])


def test_member_limit_is_a_clear_error():
    with Server(rcpt_max_members=3) as srv, srv.resp() as r, srv.bin() as b:
        assert [r.cmd("RCPT.JOIN", 1, u) for u in (10, 11, 12)] == [0, 1, 2]
        e = r.cmd("RCPT.JOIN", 1, 13)
        assert_err(e, "ERR group is at rcpt-max-members (3")
        assert_err(b.call("RCPT.JOIN", 1, 13), None, E["LIMIT"])
        assert r.cmd("RCPT.QUIT", 1, 10) == 1
        # Quitting frees no mapid, a rejoin is never refused.
        assert_err(b.call("RCPT.JOIN", 1, 13), None, E["LIMIT"])
        assert b.call("RCPT.JOIN", 1, 10) == 0
        assert r.cmd("RCPT.JOIN", 2, 13) == 0  # the limit is per group
        assert r.cmd("CONFIG", "GET", "rcpt-max-members") == [
            b"rcpt-max-members", b"3"]


def test_retention_hides_old_messages():
    """A message dated just inside the retention disappears from every
    answer when it leaves it (about a second later)."""
    with Server(rcpt_max_age_days=1) as srv, srv.resp() as r:
        now = int(time.time() * 1000)
        r.cmd("RCPT.JOIN", 1, 1)
        r.cmd("RCPT.JOIN", 1, 2)
        assert r.cmd("RCPT.SEND", 1, 1, 1, now - DAY_MS + 1500) == 1
        assert r.cmd("RCPT.SEND", 1, 2, 1) == 1
        assert r.cmd("RCPT.COUNT", 1, 1) == [0, 1]
        srv.wait_for(lambda: is_err(r.cmd("RCPT.COUNT", 1, 1)), timeout=6,
                     what="message 1 to expire")
        assert r.cmd("RCPT.READ", 1, 2, 1, 2) == 1  # only message 2
        assert r.cmd("RCPT.READUPTO", 1, 2, 10) == 0
        assert_err(r.cmd("RCPT.LIST", 1, 1, "UNREAD"), "ERR no such message")
        # Writes drop it for good; the same msgid is then a new message.
        r.cmd("RCPT.QUIT", 1, 9)
        assert r.cmd("RCPT.SEND", 1, 1, 2) == 1
        assert r.cmd("RCPT.COUNT", 1, 1) == [0, 1]
        assert info_flat(r.cmd("INFO", "memory"))["rcpt_messages"] == "2"
        assert r.cmd("DEBUG", "AUDIT") == 0
        assert r.cmd("CONFIG", "GET", "rcpt-max-age-days") == [
            b"rcpt-max-age-days", b"1"]


def test_state_is_shared_between_protocols_and_cli():
    with Server() as srv, srv.resp() as r, srv.bin() as b:
        assert r.cmd("RCPT.JOIN", 40, 1) == 0
        assert b.call("RCPT.JOIN", 40, 2) == 1
        assert r.inline("RCPT.JOIN 40 3") == 2
        assert b.call("RCPT.SEND", 40, 1000, 1) == 2
        assert r.cmd("RCPT.READ", 40, 3, 1000) == 1
        assert b.call("RCPT.COUNT", 40, 1000) == [1, 1]
        out = run_cli(srv, "RCPT.LIST", 40, 1000, "UNREAD")
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == ["2"], out.stdout
        out = run_cli(srv, "RCPT.COUNT", 40, 1000)
        assert out.stdout.split() == ["1", "1"], out.stdout
        info = info_flat(r.cmd("INFO", "memory"))
        assert info["rcpt_messages"] == "1"
        assert int(info["rcpt_bytes"]) > 0
        help_text = b"".join(r.cmd("HELP", "RCPT.LIST")).decode()
        assert "READ|UNREAD" in help_text


def test_client_library_calls():
    u32p = ctypes.POINTER(ctypes.c_uint32)
    u64p = ctypes.POINTER(ctypes.c_uint64)
    vp, u64 = ctypes.c_void_p, ctypes.c_uint64
    lib = libunread({
        "unread_rcpt_join": (ctypes.c_int, [vp, u64, u64, u32p]),
        "unread_rcpt_quit": (ctypes.c_int, [vp, u64, u64,
                                            ctypes.POINTER(ctypes.c_int)]),
        "unread_rcpt_send": (ctypes.c_int, [vp, u64, u64, u64, u64, u32p]),
        "unread_rcpt_read": (ctypes.c_int, [vp, u64, u64, u64p, ctypes.c_uint,
                                            u64p]),
        "unread_rcpt_readupto": (ctypes.c_int, [vp, u64, u64, u64, u64p]),
        "unread_rcpt_count": (ctypes.c_int, [vp, u64, u64, u32p, u32p]),
        "unread_rcpt_list": (ctypes.c_int, [vp, u64, u64, ctypes.c_int,
                                            ctypes.c_uint32, ctypes.c_uint32,
                                            ctypes.POINTER(u64p),
                                            ctypes.POINTER(ctypes.c_size_t)]),
    })
    if lib is None:
        print("libunread.so cannot be loaded here (sanitizer build): "
              "covered by the plain build")
        return
    libc = ctypes.CDLL(None)
    libc.free.argtypes = [vp]
    now = U64_MAX  # UNREAD_RCPT_NOW
    with Server(rcpt_max_members=4) as srv:
        h = lib_connect(lib, srv)
        try:
            m, n = ctypes.c_uint32(), ctypes.c_uint32()
            for i, uid in enumerate((11, 12, 13, 14)):
                assert lib.unread_rcpt_join(h, 9, uid, ctypes.byref(m)) == 0
                assert m.value == i
            assert lib.unread_rcpt_join(h, 9, 15, None) == E["LIMIT"]
            assert b"rcpt-max-members" in lib.unread_errstr(h)
            was = ctypes.c_int(7)
            assert lib.unread_rcpt_quit(h, 9, 14, ctypes.byref(was)) == 0
            assert was.value == 1
            assert lib.unread_rcpt_send(h, 9, 100, 11, now,
                                        ctypes.byref(n)) == 0
            assert n.value == 2
            assert lib.unread_rcpt_send(h, 9, 200, 11,
                                        int(time.time() * 1000),
                                        ctypes.byref(n)) == 0
            marked = ctypes.c_uint64()
            ids = (ctypes.c_uint64 * 3)(100, 200, 300)
            assert lib.unread_rcpt_read(h, 9, 12, ids, 3,
                                        ctypes.byref(marked)) == 0
            assert marked.value == 2
            assert lib.unread_rcpt_readupto(h, 9, 13, 150,
                                            ctypes.byref(marked)) == 0
            assert marked.value == 1
            r, u = ctypes.c_uint32(), ctypes.c_uint32()
            assert lib.unread_rcpt_count(h, 9, 200, ctypes.byref(r),
                                         ctypes.byref(u)) == 0
            assert (r.value, u.value) == (1, 1)
            uids, cnt = u64p(), ctypes.c_size_t()
            assert lib.unread_rcpt_list(h, 9, 200, 0, 0, 0xFFFFFFFF,
                                        ctypes.byref(uids),
                                        ctypes.byref(cnt)) == 0
            assert [uids[i] for i in range(cnt.value)] == [13]
            libc.free(uids)
            assert lib.unread_rcpt_list(h, 9, 100, 1, 1, 5,
                                        ctypes.byref(uids),
                                        ctypes.byref(cnt)) == 0
            assert [uids[i] for i in range(cnt.value)] == [13]
            libc.free(uids)
            assert lib.unread_rcpt_list(h, 9, 100, 0, 0, 5,
                                        ctypes.byref(uids),
                                        ctypes.byref(cnt)) == 0
            assert cnt.value == 0 and not uids
            # Server errors come back as their codes, with the message.
            assert lib.unread_rcpt_count(h, 9, 999, None, None) == E["ERR"]
            assert b"no such message" in lib.unread_errstr(h)
            assert lib.unread_rcpt_list(h, 9, 999, 1, 0, 5, ctypes.byref(uids),
                                        ctypes.byref(cnt)) == E["ERR"]
            assert lib.unread_rcpt_read(h, 9, 12, ids, 0, None) == E["ARITY"]
            assert lib.unread_ping(h) == 0
        finally:
            lib.unread_close(h)


# --------------------------------------------------------------------------
# The randomized model test.


class Model:
    """Sets of uids: members in join order, quit marks, and per message the
    recipients and the readers."""

    def __init__(self):
        self.order = {}  # gid -> [uid, ...] (mapid order)
        self.quit = {}  # gid -> set of uids
        self.msgs = {}  # (gid, msgid) -> [sender_map, nmemb, rcpt, read]

    def mapid(self, gid, uid):
        order = self.order.get(gid, [])
        return order.index(uid) if uid in order else None

    def join(self, gid, uid, limit):
        order = self.order.setdefault(gid, [])
        q = self.quit.setdefault(gid, set())
        if uid not in order:
            if len(order) >= limit:
                return None
            order.append(uid)
        q.discard(uid)
        return order.index(uid)

    def quit_(self, gid, uid):
        if uid in self.order.get(gid, []) and uid not in self.quit[gid]:
            self.quit[gid].add(uid)
            return 1
        return 0

    def send(self, gid, msgid, sender):
        order = self.order.get(gid, [])
        m = self.msgs.get((gid, msgid))
        smap = self.mapid(gid, sender)
        if m is not None:
            want = smap if smap is not None and smap < m[1] else None
            return len(m[2]) if want == m[0] else "EEXIST"
        rcpt = {u for u in order if u not in self.quit.get(gid, ())
                and u != sender}
        self.msgs[(gid, msgid)] = [smap, len(order), rcpt, set()]
        return len(rcpt)

    def read(self, gid, uid, msgid):
        m = self.msgs.get((gid, msgid))
        if m is None or uid not in m[2] or uid in m[3]:
            return 0
        m[3].add(uid)
        return 1

    def list(self, gid, msgid, want_read):
        m = self.msgs[(gid, msgid)]
        return [u for u in self.order[gid] if u in m[2]
                and (u in m[3]) == want_read]


def test_random_ops_match_model_across_protocols():
    seed = int(os.environ.get("UNREADD_TEST_SEED", "20240611"))
    rng = random.Random(seed)
    model = Model()
    limit = 40
    with Server(rcpt_max_members=limit) as srv:
        ways = [Via(srv, k) for k in ("resp", "inline", "binary")]
        try:
            for step in range(3000):
                via = rng.choice(ways)
                gid = rng.randrange(3)
                uid = rng.randrange(50 if gid == 0 else 6)
                msgid = rng.randrange(60)
                op = rng.randrange(100)
                if op < 10:
                    want = model.join(gid, uid, limit)
                    got = via("RCPT.JOIN", gid, uid)
                    if want is None:
                        via.bad(got, "ERR group is at", E["LIMIT"])
                    else:
                        assert got == want, (step, got, want)
                elif op < 14:
                    assert via("RCPT.QUIT", gid, uid) == model.quit_(gid, uid)
                elif op < 30:
                    want = model.send(gid, msgid, uid)
                    got = via("RCPT.SEND", gid, msgid, uid)
                    if want == "EEXIST":
                        via.bad(got, "ERR msgid already sent", E["ERR"])
                    else:
                        assert got == want, (step, got, want)
                elif op < 60:
                    ids = [rng.randrange(60) for _ in range(rng.randrange(1, 4))]
                    want = sum(model.read(gid, uid, i) for i in ids)
                    assert via("RCPT.READ", gid, uid, *ids) == want, step
                elif op < 64:
                    want = sum(model.read(gid, uid, i) for i in range(msgid + 1))
                    assert via("RCPT.READUPTO", gid, uid, msgid) == want, step
                elif op < 82:
                    m = model.msgs.get((gid, msgid))
                    got = via("RCPT.COUNT", gid, msgid)
                    if m is None:
                        no_such_message(via, got)
                    else:
                        assert got == [len(m[3]), len(m[2]) - len(m[3])], step
                else:
                    want_read = rng.random() < 0.5
                    word = "READ" if want_read else "UNREAD"
                    if (gid, msgid) not in model.msgs:
                        no_such_message(via, via("RCPT.LIST", gid, msgid, word))
                        continue
                    full = model.list(gid, msgid, want_read)
                    if rng.random() < 0.5:
                        assert via("RCPT.LIST", gid, msgid, word) == full
                    else:
                        off, cnt = rng.randrange(8), rng.randrange(6)
                        got = via("RCPT.LIST", gid, msgid, word, off, cnt)
                        assert got == full[off:off + cnt], step
            assert ways[0]("DEBUG", "AUDIT") == 0
        finally:
            for w in ways:
                w.close()


# --------------------------------------------------------------------------
# Restarts: the RCPT snapshot section, and the journal replayed over it.


def on_dir(data, **config):
    """A server on a data dir kept across restarts (the last --dir wins);
    the exit status is the test's business."""
    config.setdefault("save_seconds", 0)
    return Server(args=["--dir", data], check_exit=False, **config)


def run_all(c, cmds, chunk=500):
    """Pipelines cmds; every reply must be a success."""
    out = []
    for i in range(0, len(cmds), chunk):
        out += c.pipeline(cmds[i:i + chunk])
    bad = [(cmd, r) for cmd, r in zip(cmds, out) if is_err(r)]
    assert not bad, bad[:3]
    return out


def fill_group(c, rng, gid, nmemb, nmsgs):
    """A group at a steady state: nmemb members, then nmsgs messages from
    random members, with quits, joins and rejoins between them; every
    member has read up to a point in the last 60 messages, and a few read
    some newer ones. Returns [(gid, msgid)]."""
    uids = [gid * 100000 + i for i in range(nmemb)]
    cmds = [("RCPT.JOIN", gid, u) for u in uids]
    msgids = []
    for i in range(nmsgs):
        if i % 97 == 50:
            cmds.append(("RCPT.QUIT", gid, rng.choice(uids)))
        if i % 151 == 70:
            uids.append(gid * 100000 + len(uids))
            cmds.append(("RCPT.JOIN", gid, uids[-1]))
        if i % 211 == 100:
            cmds.append(("RCPT.JOIN", gid, rng.choice(uids)))  # maybe back
        msgids.append(1 + 3 * i + rng.randrange(3))
        cmds.append(("RCPT.SEND", gid, msgids[-1], rng.choice(uids)))
    cmds += [("RCPT.READUPTO", gid, u, msgids[-1 - rng.randrange(60)])
             for u in uids if nmsgs]
    cmds += [("RCPT.READ", gid, rng.choice(uids), rng.choice(msgids[-80:]))
             for _ in range(4 * len(uids)) if nmsgs]
    run_all(c, cmds)
    return [(gid, m) for m in msgids]


def fill_receipts(c, seed, groups):
    """groups: [(gid, members, messages)]; returns every (gid, msgid)."""
    rng = random.Random(seed)
    msgs = []
    for gid, nmemb, nmsgs in groups:
        msgs += fill_group(c, rng, gid, nmemb, nmsgs)
    return msgs


def fill_edge_groups(c):
    """Group 3: nobody in it, messages from a non-member. Group 4: member
    40001 quit, then came back after the last message. Returns every
    (gid, msgid)."""
    run_all(c, [("RCPT.SEND", 3, m, 9) for m in range(1, 6)] +
            [("RCPT.JOIN", 4, u) for u in (40000, 40001, 40002)] +
            [("RCPT.QUIT", 4, 40001), ("RCPT.SEND", 4, 1, 40000),
             ("RCPT.READ", 4, 40002, 1), ("RCPT.JOIN", 4, 40001)])
    return [(3, m) for m in range(1, 6)] + [(4, 1)]


def receipts(c, msgs):
    """Everything the server says of each message: counts and both
    lists."""
    cmds = []
    for gid, m in msgs:
        cmds += [("RCPT.COUNT", gid, m), ("RCPT.LIST", gid, m, "READ"),
                 ("RCPT.LIST", gid, m, "UNREAD")]
    return run_all(c, cmds)


def rcpt_memory(c):
    info = info_flat(c.cmd("INFO", "memory"))
    return int(info["rcpt_messages"]), float(info["rcpt_bytes_per_message"])


def loaded_journal_records(c):
    info = info_dict(c.cmd("INFO", "persistence"))["persistence"]
    return int(info["loaded_journal_records"])


def assert_same_after(c, msgs, want, mem):
    """The restarted server answers exactly as before, with about the same
    bytes per message, and its store passes the audit."""
    got = receipts(c, msgs)
    diff = [(msgs[i // 3], got[i], want[i]) for i in range(len(want))
            if got[i] != want[i]]
    assert not diff, "differs (msg, got, want): %r" % diff[:3]
    n, per = rcpt_memory(c)
    assert n == mem[0], (n, mem)
    assert abs(per - mem[1]) < 0.1 * mem[1], (per, mem)
    assert c.cmd("DEBUG", "AUDIT") == 0
    # Group 4: 40001's rejoin holds for the next message (or a resend).
    assert c.cmd("RCPT.SEND", 4, 2, 40000) == 2


BIG = [(1, 200, 1500), (2, 70, 500)]


def test_restart_from_the_snapshot_only():
    with tempfile.TemporaryDirectory(prefix="unreadd-rcpt-") as tmp:
        with on_dir(tmp, journal="no") as srv, srv.resp() as c:
            msgs = fill_receipts(c, 1, BIG) + fill_edge_groups(c)
            want = receipts(c, msgs)
            mem = rcpt_memory(c)
            srv.stop()  # SIGTERM: the final snapshot
            assert srv.returncode == 0, srv.stderr_tail()
        print("bytes/message before the restart: %.2f (%d messages)" %
              (mem[1], mem[0]))
        with on_dir(tmp, journal="no") as srv, srv.resp() as c:
            assert loaded_journal_records(c) == 0
            print("after: %.2f" % rcpt_memory(c)[1])
            assert_same_after(c, msgs, want, mem)
        p = subprocess.run([UNREADD, "--check",
                            os.path.join(tmp, "snapshot.urs")],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stdout + p.stderr
        # written at the second stop: with the message assert_same_after sent
        assert "rcpt: %d messages" % (mem[0] + 1) in p.stdout, p.stdout


def test_restart_from_the_snapshot_and_the_journal():
    with tempfile.TemporaryDirectory(prefix="unreadd-rcpt-") as tmp:
        with on_dir(tmp) as srv, srv.resp() as c:
            msgs = fill_receipts(c, 2, [(1, 200, 1000)])
            assert c.cmd("SAVE") == "OK"
            # After the snapshot: more of group 1, and new groups.
            rng = random.Random(3)
            run_all(c, [("RCPT.READ", 1, 100000 + rng.randrange(200), m)
                        for _g, m in msgs[-300:]] +
                    [("RCPT.QUIT", 1, 100007), ("RCPT.SEND", 1, 9999, 100001),
                     ("RCPT.JOIN", 1, 100007)])
            msgs += [(1, 9999)] + fill_receipts(c, 4, [(2, 70, 500)])
            msgs += fill_edge_groups(c)
            want = receipts(c, msgs)
            mem = rcpt_memory(c)
            srv.stop(signal.SIGKILL)
        with on_dir(tmp) as srv, srv.resp() as c:
            assert loaded_journal_records(c) > 1000
            assert_same_after(c, msgs, want, mem)


def test_restart_after_kill9_then_from_its_snapshot():
    with tempfile.TemporaryDirectory(prefix="unreadd-rcpt-") as tmp:
        with on_dir(tmp, journal_fsync="always") as srv, srv.resp() as c:
            msgs = fill_receipts(c, 5, BIG) + fill_edge_groups(c)
            want = receipts(c, msgs)
            mem = rcpt_memory(c)
            srv.stop(signal.SIGKILL)  # no snapshot: the journal alone
        assert not os.path.exists(os.path.join(tmp, "snapshot.urs"))
        with on_dir(tmp) as srv, srv.resp() as c:
            assert loaded_journal_records(c) > 1000
            assert_same_after(c, msgs, want, mem)
            msgs.append((4, 2))
            want = receipts(c, msgs)
            mem = rcpt_memory(c)
            srv.stop()  # the final snapshot covers the whole journal
        with on_dir(tmp) as srv, srv.resp() as c:
            assert loaded_journal_records(c) == 0
            assert_same_after(c, msgs, want, mem)


def test_retention_clock_survives_a_restart():
    """A message dated near the end of its retention comes back with its
    time: visible after the restart, gone when its time is up."""
    with tempfile.TemporaryDirectory(prefix="unreadd-rcpt-") as tmp:
        cfg = {"journal": "no", "rcpt_max_age_days": 1}
        with on_dir(tmp, **cfg) as srv, srv.resp() as c:
            now = int(time.time() * 1000)
            run_all(c, [("RCPT.JOIN", 1, u) for u in (1, 2)] +
                    [("RCPT.SEND", 1, 1, 1, now - DAY_MS + 4000),
                     ("RCPT.SEND", 1, 2, 1)])
            srv.stop()
        with on_dir(tmp, **cfg) as srv, srv.resp() as c:
            assert c.cmd("RCPT.COUNT", 1, 1) == [0, 1]
            srv.wait_for(lambda: is_err(c.cmd("RCPT.COUNT", 1, 1)), timeout=8,
                         what="message 1 to expire")
            assert time.time() * 1000 >= now + 4000 - 1000
            assert c.cmd("RCPT.COUNT", 1, 2) == [0, 1]
            assert c.cmd("RCPT.READUPTO", 1, 2, 10) == 1
