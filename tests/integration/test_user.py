"""USER.INFO and USER.DEL across every family (docs/OPERATIONS.md, "Users and expiry"), over RESP, inline
and binary; redis-cli and unread-cli show USER.INFO; the typed calls of
libunread; FLUSHALL; bad input.
"""

import ctypes

from harness import E, ID_MAX, U64_MAX, Server, assert_err, info_dict, \
    run_cli, run_redis_cli
from ways import each_way, lib_connect, libunread


def seed(via, uid):
    """uid's state in every family, with numbers USER.INFO must show."""
    via("CNT.INCR", uid, 0, 3)      # mention=3
    via("CNT.INCR", uid, 3, 1)      # dm=1
    via("CONV.SEQ", uid, 77, 12)
    via("CONV.READ", uid, 77, 9)
    via("CONV.RECALL", uid, 77, 11)
    via("GRP.JOIN", uid, 5)
    for _ in range(7):
        via("GRP.POST", 5)
    via("BC.UNREAD", uid, 1)
    via("BC.PUBLISH", 1)
    via("DOT.PUSH", 3, 1000)
    via("DOT.CLICK", uid, 3, 500)
    via("FEED.FOLLOW", uid, 9)
    via("FEED.POST", 9, 12)
    via("RCPT.JOIN", 40, 99)
    via("RCPT.JOIN", 40, uid)
    via("RCPT.SEND", 40, 1000, 99)
    via("RCPT.READ", 40, uid, 1000)


def text(lines):
    return [l.decode() if isinstance(l, bytes) else l for l in lines]


@each_way
def test_info_explains_every_count(via):
    seed(via, 42)
    seed(via, 43)  # the same again for another user, who posts more
    lines = text(via("USER.INFO", 42))
    assert lines == [
        "cnt: mention=3 dm=1 total=4",
        "conv 77: max=12 read=9 unread=2 muted=0 recalled=[11]",
        "conv: conversations=1 total=2 (unmuted unread) mentions=0 chats=1 "
        "threads=0",
        "grp 5: head=14 seen=0 unread=14",
        "grp: groups=1 total=14 (unmuted unread) mentions=0",
        "bc 1: head=2 offset=0 unread=2",
        "bc: channels=1 (a channel not listed registers the user at its "
        "head: 0 unread)",
        "dot 3: clicked=500 pushed=1000 shows=1",
        "dot: clicked=1 (a pushed dot not listed shows)",
        "feed 9: posts=24 snapshot=0 new=24",
        "feed: follows=1 unread=24",
        "rcpt 40: mapid=1 quit=0",
        "rcpt: groups=1",
        lines[-1]], lines
    assert lines[-1].startswith("active: last on ")
    assert "0 days ago; inactive-days 30" in lines[-1]
    # The counts agree with what the family commands answer.
    assert via("CNT.TOTAL", 42) == 4
    assert via("CONV.TOTAL", 42) == 2
    assert via("GRP.TOTAL", 42) == 14
    assert via("BC.UNREAD", 42, 1) == 2
    assert via("FEED.UNREAD", 42) == 24


@each_way
def test_info_of_an_unknown_user(via):
    lines = text(via("USER.INFO", ID_MAX))
    assert lines[0] == "cnt: total=0"
    assert lines[-1].startswith("active: not tracked")
    assert len(lines) == 8


@each_way
def test_del_erases_everywhere_but_the_anonymous_receipt(via):
    seed(via, 42)
    seed(via, 43)
    assert via("USER.DEL", 42) == 7  # cnt, conv, grp, bc, dot, feed, rcpt
    assert via("USER.DEL", 42) == 0
    lines = text(via("USER.INFO", 42))
    assert lines[0] == "cnt: total=0"
    assert "grp: groups=0 total=0 (unmuted unread) mentions=0" in lines
    assert "rcpt: groups=0" in lines
    assert lines[-1].startswith("active: not tracked")
    # 42 read message 1000 before it was erased: still counted, anonymous.
    assert via("RCPT.COUNT", 40, 1000) == [1, 0]
    listed = via("RCPT.LIST", 40, 1000, "READ")
    assert None in listed and 42 not in listed  # a null: erased
    assert via("RCPT.SEND", 40, 1001, 99) == 1  # only 43 now
    # Reads as new everywhere; the other user keeps everything.
    assert via("BC.UNREAD", 42, 1) == 0
    assert via("DOT.CHECK", 42, 3) == [1]
    assert via("FEED.UNREAD", 42) == 0
    assert via("GRP.TOTAL", 43) == 7
    assert via("CNT.TOTAL", 43) == 4
    assert via("RCPT.JOIN", 40, 42) == 3  # a new mapid
    assert via("DEBUG", "AUDIT") == 0


@each_way
def test_info_and_del_cover_the_chat_features(via):
    """Mentions, threads, sparse ids, sources, mute flags and recalls are
    explained by USER.INFO and erased by USER.DEL, in CONV and GRP."""
    via("CONV.SEQ", 42, 77, 3, "MENTION", "SOURCE", 2)
    via("CONV.SEQ", 42, 77, 2, "THREAD", 5, "MENTION")
    via("CONV.ROLLUP", 42, 77, 0)
    via("CONV.SEQ", 42, 78, 1000001, "SPARSE")
    via("GRP.JOIN", 42, 9)
    via("GRP.POST", 9, 1000, "MENTION", 42)
    via("GRP.MUTE", 42, 9, 1)
    lines = text(via("USER.INFO", 42))
    assert "conv 77: max=3 read=0 unread=3 muted=0 recalled=[] collapsed " \
        "mentions=[3] source2=[3]" in lines, lines
    assert "conv 77 thread 5: max=2 read=0 unread=2 mentions=[2]" in lines
    assert "conv 78: max=1000001 read=0 unread=1 muted=0 recalled=[] " \
        "sparse ids=[1000001]" in lines
    assert "conv: conversations=2 total=4 (unmuted unread) mentions=2 " \
        "chats=2 threads=1" in lines
    assert "grp 9: head=1 seen=0 unread=1 muted=1 mentions=1" in lines
    assert "grp: groups=1 total=0 (unmuted unread) mentions=1" in lines
    assert via("USER.DEL", 42) == 3
    assert via("CONV.MENTIONS", 42) == 0
    assert via("CONV.STATE", 42, 77, "THREAD", 5) == [0, 0, 0, 0, 0, 0]
    assert via("GRP.MENTIONS", 42) == 0
    assert via("GRP.STATE", 42, 9) == [0, 0, 0, 0, 0, 0]
    # Back as new: the conversation's mode is forgotten too.
    assert via("CONV.SEQ", 42, 78, 5) == [5, 5]
    assert via("INFO", "memory") is not None
    assert via("DEBUG", "AUDIT") == 0


def test_expiry_forgets_the_chat_features():
    with Server(expire_families="conv grp") as srv, srv.resp() as c:
        c.cmd("CONV.SEQ", 42, 77, 3, "MENTION", "THREAD", 1)
        c.cmd("CONV.SEQ", 42, 78, 1000001, "SPARSE")
        c.cmd("GRP.JOIN", 42, 9)
        c.cmd("GRP.POST", 9, 1000, "MENTION", 42)
        c.cmd("GRP.MUTE", 42, 9, 1)
        assert c.cmd("USER.EXPIRE", 42, "conv", "grp") == 3
        assert c.cmd("CONV.MENTIONS", 42) == 0
        assert c.cmd("CONV.TOTAL", 42, "CHATS", "THREADS") == [0, 0, 0]
        assert c.cmd("GRP.MENTIONS", 42) == 0
        assert c.cmd("GRP.TOTAL", 42, "CHATS") == [0, 0]
        assert c.cmd("DEBUG", "AUDIT") == 0


@each_way
def test_bad_input(via):
    for cmd in (("USER.INFO",), ("USER.INFO", 1, 2), ("USER.DEL",),
                ("USER.DEL", 1, 2), ("FLUSHALL", 1)):
        via.bad(via(*cmd), code=E["ARITY"])
    for cmd in (("USER.INFO", "x"), ("USER.INFO", -1),
                ("USER.DEL", 2 ** 64), ("USER.DEL", "1x")):
        via.bad(via(*cmd))
    via.bad(via("RCPT.JOIN", 1, U64_MAX))  # past the integer range


@each_way
def test_flushall(via):
    seed(via, 42)
    assert via("FLUSHALL") == "OK"
    assert via("CNT.TOTAL", 42) == 0
    assert via("GRP.POST", 5) == 1  # groups are gone too
    lines = text(via("USER.INFO", 42))
    assert lines[-1].startswith("active: not tracked")  # CNT only since
    assert via("BC.UNREAD", 42, 1) == 0
    lines = text(via("USER.INFO", 42))
    assert lines[-1].startswith("active: last on")
    assert via("DEBUG", "AUDIT") == 0


def test_info_memory_after_del_and_flushall():
    with Server() as srv, srv.resp() as c:
        seed(c.cmd, 42)
        mem = info_dict(c.cmd("INFO", "memory"))["memory"]
        assert mem["activity_users"] == "1"
        assert int(mem["activity_bytes"]) > 0
        c.cmd("USER.DEL", 42)
        mem = info_dict(c.cmd("INFO", "memory"))["memory"]
        for fam, unit in (("cnt", "users"), ("conv", "conversations"),
                          ("grp", "memberships"), ("bc", "subscriptions"),
                          ("dot", "clicks"), ("feed", "follows"),
                          ("activity", "users")):
            assert mem["%s_%s" % (fam, unit)] == "0", (fam, mem)
        assert mem["rcpt_messages"] == "1"
        c.cmd("FLUSHALL")
        mem = info_dict(c.cmd("INFO", "memory"))["memory"]
        assert mem["rcpt_messages"] == "0"


def test_cli_and_redis_cli_show_info():
    with Server() as srv, srv.resp() as c:
        seed(c.cmd, 42)
        out = run_cli(srv, "USER.INFO", 42)
        assert out.returncode == 0, out.stderr
        assert "cnt: mention=3 dm=1 total=4" in out.stdout
        out = run_redis_cli(srv, "USER.INFO", "42")
        assert out.returncode == 0, out.stderr
        assert "grp 5: head=7 seen=0 unread=7" in out.stdout
        out = run_cli(srv, "USER.DEL", 42)
        assert out.returncode == 0 and out.stdout.split() == ["7"], out


def test_client_library_calls():
    vp, u64 = ctypes.c_void_p, ctypes.c_uint64
    lib = libunread({
        "unread_user_info": (ctypes.c_int, [vp, u64,
                                            ctypes.POINTER(vp)]),
        "unread_user_del": (ctypes.c_int, [vp, u64, ctypes.POINTER(u64)]),
        "unread_flushall": (ctypes.c_int, [vp]),
        "unread_reply_free": (None, [vp]),
        "unread_cnt_total": (ctypes.c_int, [vp, u64, ctypes.POINTER(u64)]),
    })
    if lib is None:
        print("libunread.so cannot be loaded here (sanitizer build): "
              "covered by the plain build")
        return

    class Reply(ctypes.Structure):
        pass
    Reply._fields_ = [("kind", ctypes.c_int), ("integer", u64),
                      ("str", ctypes.c_char_p), ("len", ctypes.c_size_t),
                      ("n", ctypes.c_size_t),
                      ("elem", ctypes.POINTER(Reply)), ("code", ctypes.c_int)]
    with Server() as srv, srv.resp() as c:
        seed(c.cmd, 42)
        h = lib_connect(lib, srv)
        try:
            out = vp()
            assert lib.unread_user_info(h, 42, ctypes.byref(out)) == 0
            r = ctypes.cast(out, ctypes.POINTER(Reply)).contents
            assert r.kind == 3 and r.n == 14
            assert r.elem[0].str == b"cnt: mention=3 dm=1 total=4"
            lib.unread_reply_free(out)
            n = u64(0)
            assert lib.unread_user_del(h, 42, ctypes.byref(n)) == 0
            assert n.value == 7
            assert lib.unread_user_del(h, 42, ctypes.byref(n)) == 0
            assert n.value == 0
            c.cmd("CNT.INCR", 1, 0)
            assert lib.unread_flushall(h) == 0
            assert lib.unread_cnt_total(h, 1, ctypes.byref(n)) == 0
            assert n.value == 0
        finally:
            lib.unread_close(h)
