"""CONV: conversation unread over RESP multibulk, inline and binary (test
names end in _resp, _inline, _binary), bad input, the typed calls of
libunread, unread-cli, INFO, and a long randomized run through the server
against a Python model, with DEBUG AUDIT after it.
"""

import ctypes
import os
import random

from harness import (E, U32_MAX, ID_MAX, U64_MAX, Server, assert_err, info_flat,
                     is_err, run_cli)
from ways import Via, each_way, lib_connect, libunread

RECALL_MAX = 1024
LIST_MAX = 100000


@each_way
def test_seq_replayed_or_retried_never_counts_twice(conv):
    assert conv("CONV.SEQ", 1, 10, 5) == [5, 5]
    assert conv("CONV.SEQ", 1, 10, 5) == [5, 5]  # retried
    assert conv("CONV.SEQ", 1, 10, 2) == [5, 5]  # replayed late
    assert conv("CONV.SEQ", 1, 10, 6) == [6, 6]
    assert conv("CONV.SEQ", 1, 11, 3) == [3, 9]  # total over both
    assert conv("CONV.SEQ", 2, 10, 1) == [1, 1]  # another user
    assert conv("CONV.GET", 1, 10) == 6
    assert conv("CONV.TOTAL", 1) == 9


@each_way
def test_seq_at_or_below_the_watermark_adds_nothing(conv):
    # The clear raced ahead of the increments: no ghost unread.
    assert conv("CONV.READ", 1, 10, 8) == [0, 0]
    assert conv("CONV.SEQ", 1, 10, 7) == [0, 0]
    assert conv("CONV.SEQ", 1, 10, 8) == [0, 0]
    assert conv("CONV.SEQ", 1, 10, 9) == [1, 1]


@each_way
def test_read_never_moves_the_watermark_back(conv):
    conv("CONV.SEQ", 1, 10, 10)
    assert conv("CONV.READ", 1, 10, 6) == [4, 4]
    assert conv("CONV.READ", 1, 10, 2) == [4, 4]  # stale
    assert conv("CONV.READ", 1, 10) == [0, 0]  # default: up to max
    assert conv("CONV.SEQ", 1, 10, 12) == [2, 2]
    assert conv("CONV.READ", 1, 10, 11) == [1, 1]
    assert conv("CONV.READ", 1, 10) == [0, 0]
    assert conv("CONV.READ", 1, 99) == [0, 0]  # unknown: stays unknown
    assert conv("CONV.LIST", 1) == []


@each_way
def test_markunread_moves_the_watermark_back(conv):
    conv("CONV.SEQ", 1, 10, 10)
    conv("CONV.READ", 1, 10)
    assert conv("CONV.MARKUNREAD", 1, 10, 8) == [3, 3]
    assert conv("CONV.MARKUNREAD", 1, 10, 10) == [1, 1]  # forward too
    assert conv("CONV.MARKUNREAD", 1, 10, 1) == [10, 10]
    # Past max: the message exists; its late SEQ adds nothing.
    assert conv("CONV.MARKUNREAD", 1, 10, 15) == [1, 1]
    assert conv("CONV.SEQ", 1, 10, 15) == [1, 1]
    assert conv("CONV.MARKUNREAD", 1, 11, 4) == [1, 2]  # new conversation


@each_way
def test_recall_lowers_unread_once(conv):
    conv("CONV.SEQ", 1, 10, 10)
    assert conv("CONV.RECALL", 1, 10, 4) == [9, 9]
    assert conv("CONV.RECALL", 1, 10, 4) == [9, 9]  # twice = once
    assert conv("CONV.READ", 1, 10, 6) == [4, 4]
    assert conv("CONV.RECALL", 1, 10, 5) == [4, 4]  # a read one: nothing
    assert conv("CONV.RECALL", 1, 10, 6) == [4, 4]  # at the watermark
    assert conv("CONV.RECALL", 1, 10, 10) == [3, 3]
    # Above max: remembered, so the message never counts.
    assert conv("CONV.RECALL", 1, 10, 12) == [3, 3]
    assert conv("CONV.SEQ", 1, 10, 13) == [5, 5]  # 7, 8, 9, 11, 13
    # A recall before any message of the conversation.
    assert conv("CONV.RECALL", 1, 20, 1) == [0, 5]
    assert conv("CONV.SEQ", 1, 20, 2) == [1, 6]
    assert conv("DEBUG", "AUDIT") == 0


@each_way
def test_mute_keeps_the_count_and_leaves_the_total(conv):
    conv("CONV.SEQ", 1, 10, 5)
    conv("CONV.SEQ", 1, 11, 3)
    assert conv("CONV.MUTE", 1, 10, 1) == [5, 3]
    assert conv("CONV.GET", 1, 10) == 5
    assert conv("CONV.TOTAL", 1) == 3
    assert conv("CONV.SEQ", 1, 10, 9) == [9, 3]
    assert conv("CONV.LIST", 1) == [10, 9, 11, 3]  # muted ones listed
    assert conv("CONV.MUTE", 1, 10, 0) == [9, 12]
    assert conv("CONV.MUTE", 1, 12, 1) == [0, 12]  # remembered ahead
    assert conv("CONV.SEQ", 1, 12, 4) == [4, 12]


@each_way
def test_del_forgets_the_conversation(conv):
    conv("CONV.SEQ", 1, 10, 5)
    conv("CONV.SEQ", 1, 11, 3)
    assert conv("CONV.DEL", 1, 11) == 5
    assert conv("CONV.DEL", 1, 11) == 5
    assert conv("CONV.GET", 1, 11) == 0
    assert conv("CONV.SEQ", 1, 11, 2) == [2, 7]  # counts afresh
    assert conv("CONV.DEL", 1, 10) == 2
    assert conv("CONV.DEL", 1, 11) == 0
    assert conv("CONV.DEL", 5, 5) == 0
    assert conv("CONV.LIST", 1) == []


@each_way
def test_list_shows_exactly_the_nonzero_ones(conv):
    conv("CONV.SEQ", 1, 30, 3)
    conv("CONV.SEQ", 1, 10, 1)
    conv("CONV.SEQ", 1, 20, 2)
    conv("CONV.READ", 1, 20)
    conv("CONV.MUTE", 1, 5, 1)
    conv("CONV.SEQ", 1, ID_MAX, 7)
    assert conv("CONV.LIST", 1) == [10, 1, 30, 3, ID_MAX, 7]
    assert conv("CONV.LIST", 1, 2) == [10, 1, 30, 3]
    assert conv("CONV.LIST", 1, 0) == []
    assert conv("CONV.LIST", 1, LIST_MAX) == [10, 1, 30, 3, ID_MAX, 7]
    assert conv("CONV.LIST", 2) == []


@each_way
def test_incr_feeds_counts(conv):
    assert conv("CONV.INCR", 1, 10) == [1, 1]
    assert conv("CONV.INCR", 1, 10, 4) == [5, 5]
    assert conv("CONV.INCR", 1, 10, 0) == [5, 5]
    assert conv("CONV.READ", 1, 10) == [0, 0]
    assert conv("CONV.INCR", 1, 10, 2) == [2, 2]
    # unread saturates at 2^32 - 1; the total is their u64 sum.
    assert conv("CONV.INCR", 1, 10, 1 << 40) == [U32_MAX, U32_MAX]
    assert conv("CONV.INCR", 1, 11, ID_MAX) == [U32_MAX, 2 * U32_MAX]
    assert conv("CONV.INCR", 1, 11, ID_MAX) == [U32_MAX, 2 * U32_MAX]
    assert conv("CONV.SEQ", 1, 11, ID_MAX) == [U32_MAX, 2 * U32_MAX]
    assert conv("CONV.READ", 1, 11) == [0, U32_MAX]
    assert conv("DEBUG", "AUDIT") == 0


@each_way
def test_recall_limit(conv):
    conv("CONV.SEQ", 1, 10, 5000)
    for i in range(1, RECALL_MAX + 1):
        assert conv("CONV.RECALL", 1, 10, i) == [5000 - i, 5000 - i]
    r = conv("CONV.RECALL", 1, 10, 4000)
    conv.bad(r, "ERR a conversation remembers at most 1024", E["LIMIT"])
    assert conv("CONV.RECALL", 1, 10, 7) == [5000 - RECALL_MAX] * 2
    # Reading past recalls forgets them and frees room.
    assert conv("CONV.READ", 1, 10, 100) == [4900 - (RECALL_MAX - 100)] * 2
    assert conv("CONV.RECALL", 1, 10, 4000) == [4900 - (RECALL_MAX - 100) - 1] * 2


@each_way
def test_wrong_arity_is_an_error_for_every_conv_command(conv):
    too_few = {"CONV.INCR": [1], "CONV.SEQ": [1, 2], "CONV.READ": [1],
               "CONV.MARKUNREAD": [1, 2], "CONV.RECALL": [1, 2],
               "CONV.MUTE": [1, 2], "CONV.DEL": [1], "CONV.GET": [1],
               "CONV.TOTAL": [], "CONV.LIST": [], "CONV.STATE": [1],
               "CONV.THREADS": [1], "CONV.ROLLUP": [1, 2],
               "CONV.MENTIONS": [], "CONV.READALL": [], "CONV.SOURCES": [1]}
    most = {"CONV.INCR": 9, "CONV.SEQ": 9, "CONV.READ": 7,
            "CONV.MARKUNREAD": 7, "CONV.RECALL": 7, "CONV.MUTE": 3,
            "CONV.DEL": 2, "CONV.GET": 2, "CONV.TOTAL": 4, "CONV.LIST": 6,
            "CONV.STATE": 4, "CONV.THREADS": 2, "CONV.ROLLUP": 3,
            "CONV.MENTIONS": 1, "CONV.READALL": 1, "CONV.SOURCES": 2,
            "CONV.MTOTAL": None}
    too_many = {name: [1] * (n + 1) for name, n in most.items() if n}
    for table in (too_few, too_many):
        for name, args in table.items():
            r = conv(name, *args)
            conv.bad(r, "ERR wrong number of arguments for '%s'" % name,
                     E["ARITY"])
    assert conv("CONV.LIST", 1) == []  # nothing was written


@each_way
def test_unknown_and_repeated_options_are_refused(conv):
    conv("CONV.SEQ", 1, 10, 5)
    bad = [("CONV.SEQ", 1, 10, 6, "LOUD"), ("CONV.SEQ", 1, 10, 6, "MENTION",
                                             "MENTION"),
           ("CONV.INCR", 1, 10, 1, "SPARSE"), ("CONV.READ", 1, 10, "MENTION"),
           ("CONV.RECALL", 1, 10, 6, "SOURCE", 1),
           ("CONV.STATE", 1, 10, "MENTION"), ("CONV.SEQ", 1, 10, 6, "THREAD"),
           ("CONV.SEQ", 1, 10, 6, "SOURCE"), ("CONV.TOTAL", 1, "CHATS",
                                              "CHATS"),
           ("CONV.TOTAL", 1, "BOTH"), ("CONV.LIST", 1, "STATE", "STATE"),
           ("CONV.LIST", 1, "CURSOR"), ("CONV.LIST", 1, 5, "OLDEST")]
    for cmd in bad:
        r = conv(*cmd)
        conv.bad(r, "ERR ")
        assert "option" in str(r) or "needs" in str(r) or "CURSOR" in str(r) \
            or conv.kind == "binary", (cmd, r)
    conv.bad(conv("CONV.SEQ", 1, 10, 6, "SOURCE", 8),
             "ERR unknown source '8' (use 0..7 or a name from conv-sources)")
    conv.bad(conv("CONV.SEQ", 1, 10, 6, "SOURCE", "orders"),
             "ERR unknown source 'orders'")
    conv.bad(conv("CONV.SEQ", 1, 10, 6, "THREAD", 1 << 63),
             "ERR tid must be at most 9223372036854775807")
    conv.bad(conv("CONV.SEQ", 1, 10, "MENTION"),
             "ERR CONV.SEQ needs a seq before its options")
    conv.bad(conv("CONV.LIST", 1, 0, "CURSOR", 0),
             "ERR count must be at least 1 with CURSOR")
    # Nothing changed.
    assert conv("CONV.STATE", 1, 10) == [5, 0, 5, 0, 0, 1]
    assert conv("CONV.TOTAL", 1) == 5
    assert conv("DEBUG", "AUDIT") == 0


def _ints(v):
    """A RESP2 reply with integers past 2^63-1, which RESP2 carries as bulk
    strings of digits (docs/COMMANDS.md, "Replies"), read back as ints."""
    if isinstance(v, list):
        return [_ints(x) for x in v]
    if isinstance(v, bytes) and v.isdigit() and int(v) > ID_MAX:
        return int(v)
    return v


@each_way
def test_bad_numbers_are_refused(conv):
    conv("CONV.SEQ", 1, 10, 5)
    bad = [("CONV.SEQ", "x", 10, 5, "uid"), ("CONV.SEQ", 1, "-1", 5, "cid"),
           ("CONV.SEQ", 1, 10, str(1 << 64), "seq"),
           ("CONV.INCR", 1, 10, "1.5", "delta"),
           ("CONV.READ", 1, 10, "+3", "seq"), ("CONV.GET", 1, "0x10", "cid"),
           ("CONV.TOTAL", "1e3", "uid"), ("CONV.LIST", 1, "ten", "count")]
    for *cmd, what in bad:
        r = conv(*cmd)
        conv.bad(r, "ERR %s must be " % what)
        assert "9223372036854775807" in r.text, r
    conv.bad(conv("CONV.MUTE", 1, 10, 2), "ERR flag must be 0 (unmute) or 1")
    conv.bad(conv("CONV.MARKUNREAD", 1, 10, 0), "ERR seq must be at least 1")
    conv.bad(conv("CONV.LIST", 1, LIST_MAX + 1),
             "ERR count must be at most 100000")
    # Nothing changed.
    assert conv("CONV.LIST", 1) == [10, 5]
    assert conv("CONV.TOTAL", 1) == 5


# --------------------------------------------------------------------------
# The chat features (issue: conversations as chat apps need them).

ID_MAX = (1 << 63) - 1


@each_way
def test_sparse_ids_count_one_each(conv):
    """Ids from one generator for the whole service: gaps do not count."""
    for i, mid in enumerate([1000001, 1000005, 1000009]):
        assert conv("CONV.SEQ", 1, 10, mid, "SPARSE") == [i + 1, i + 1]
    assert conv("CONV.SEQ", 1, 10, 1000005, "SPARSE") == [3, 3]  # a retry
    assert conv("CONV.SEQ", 1, 10, 1000007, "SPARSE") == [3, 3]  # below max
    assert conv("CONV.READ", 1, 10, 1000005, "SPARSE") == [1, 1]
    assert conv("CONV.STATE", 1, 10) == [1000009, 1000005, 1, 0, 0, 1000009]
    snow = 1234567890123456789  # a snowflake-sized id: one message
    assert conv("CONV.SEQ", 1, 11, snow, "SPARSE") == [1, 2]
    assert conv("CONV.SEQ", 1, 11, ID_MAX, "SPARSE") == [2, 3]
    assert conv("CONV.RECALL", 1, 11, snow, "SPARSE") == [1, 2]
    assert conv("CONV.READ", 1, 11, "SPARSE") == [0, 1]
    # Mixing modes is a clear error, and changes nothing.
    conv.bad(conv("CONV.SEQ", 1, 10, 1000010),
             "ERR conversation 10 of user 1 has sparse ids: pass SPARSE")
    # Reads, recalls and mark-unread follow the conversation's mode.
    assert conv("CONV.READ", 1, 10, 1000007) == [1, 1]
    assert conv("CONV.RECALL", 1, 10, 1000009) == [0, 0]
    assert conv("CONV.MARKUNREAD", 1, 10, 1000009) == [1, 1]
    assert conv("CONV.RECALL", 1, 10, 1000009, "SPARSE") == [0, 0]
    # Every integer argument is at most 2^63-1 (the range all commands
    # share), so a sparse id past it is refused as any such argument is.
    conv.bad(conv("CONV.READ", 1, 10, ID_MAX + 1),
             "ERR seq must be at most 9223372036854775807")
    conv.bad(conv("CONV.INCR", 1, 10), "ERR conversation 10 of user 1 has "
             "sparse ids")
    conv("CONV.SEQ", 1, 12, 5)
    conv.bad(conv("CONV.SEQ", 1, 12, 6, "SPARSE"),
             "ERR conversation 12 of user 1 has dense seqs")
    conv.bad(conv("CONV.SEQ", 1, 13, ID_MAX + 1, "SPARSE"),
             "ERR seq must be at most 9223372036854775807")
    assert conv("CONV.TOTAL", 1) == 5
    assert conv("DEBUG", "AUDIT") == 0


@each_way(unread_cap=3)
def test_sparse_ids_kept_up_to_the_cap(conv):
    """Memory stays bounded: unread-cap ids kept; past them the count reads
    cap + 1, exact again once read reaches the dropped ones."""
    for k in range(1, 7):
        assert conv("CONV.SEQ", 1, 10, 100 * k, "SPARSE") == [min(k, 4)] * 2
    # 100, 200, 300 dropped (300 the newest of them): first_unread says so.
    assert conv("CONV.STATE", 1, 10) == [600, 0, 4, 0, 0, 300]
    assert conv("CONV.READ", 1, 10, 250, "SPARSE") == [4, 4]
    assert conv("CONV.READ", 1, 10, 300, "SPARSE") == [3, 3]
    assert conv("CONV.STATE", 1, 10) == [600, 300, 3, 0, 0, 400]
    assert conv("CONV.READ", 1, 10, 500, "SPARSE") == [1, 1]
    assert conv("DEBUG", "AUDIT") == 0


@each_way
def test_mentions_follow_unread(conv):
    """Seqs 1..5, 2 and 4 mention the user; muted: total 0, mentions 2;
    read to 3: 1; recall 4: 0."""
    for q in range(1, 6):
        extra = ["MENTION"] if q in (2, 4) else []
        assert conv("CONV.SEQ", 1, 10, q, *extra) == [q, q]
    assert conv("CONV.MUTE", 1, 10, 1) == [5, 0]
    assert conv("CONV.TOTAL", 1) == 0
    assert conv("CONV.MENTIONS", 1) == 2
    assert conv("CONV.STATE", 1, 10) == [5, 0, 5, 1, 2, 1]
    assert conv("CONV.READ", 1, 10, 3) == [2, 0]
    assert conv("CONV.MENTIONS", 1) == 1
    assert conv("CONV.RECALL", 1, 10, 4) == [1, 0]
    assert conv("CONV.MENTIONS", 1) == 0
    assert conv("CONV.STATE", 1, 10) == [5, 3, 1, 1, 0, 5]
    # Another conversation's mentions add up; INCR can mention too.
    assert conv("CONV.INCR", 1, 11, 2, "MENTION") == [2, 2]
    assert conv("CONV.SEQ", 1, 11, 2, "MENTION") == [2, 2]  # a retry
    assert conv("CONV.MENTIONS", 1) == 2
    assert conv("CONV.READ", 1, 11) == [0, 0]
    assert conv("CONV.MENTIONS", 1) == 0
    assert conv("DEBUG", "AUDIT") == 0


@each_way
def test_threads_roll_up_or_not(conv):
    conv("CONV.SEQ", 1, 10, 4)
    assert conv("CONV.SEQ", 1, 10, 3, "THREAD", 7) == [3, 7]
    assert conv("CONV.SEQ", 1, 10, 2, "THREAD", 9, "MENTION") == [2, 9]
    assert conv("CONV.STATE", 1, 10) == [4, 0, 9, 0, 1, 1]
    assert conv("CONV.STATE", 1, 10, "THREAD", 9) == [2, 0, 2, 0, 1, 1]
    assert conv("CONV.GET", 1, 10) == 9
    assert conv("CONV.THREADS", 1, 10) == [7, 3, 9, 2]
    assert conv("CONV.TOTAL", 1, "CHATS", "THREADS") == [9, 1, 2]
    # Collapsed threads (Mattermost's choice): the conversation counts its
    # own messages only; the threads count on their own.
    assert conv("CONV.ROLLUP", 1, 10, 0) == [4, 4]
    assert conv("CONV.STATE", 1, 10) == [4, 0, 4, 0, 0, 1]
    assert conv("CONV.TOTAL", 1, "THREADS") == [4, 2]
    assert conv("CONV.MENTIONS", 1) == 1
    assert conv("CONV.ROLLUP", 1, 10, 1) == [9, 9]
    # Reading a thread leaves the main timeline's count alone, and back.
    assert conv("CONV.READ", 1, 10, 2, "THREAD", 7) == [1, 7]
    assert conv("CONV.STATE", 1, 10, "THREAD", 7) == [3, 2, 1, 0, 0, 3]
    assert conv("CONV.READ", 1, 10) == [3, 3]
    assert conv("CONV.STATE", 1, 10) == [4, 4, 3, 0, 1, 0]
    assert conv("CONV.MARKUNREAD", 1, 10, 1, "THREAD", 7) == [3, 5]
    assert conv("CONV.RECALL", 1, 10, 2, "THREAD", 9) == [1, 4]
    assert conv("CONV.THREADS", 1, 10) == [7, 3, 9, 1]
    assert conv("CONV.STATE", 1, 10, "THREAD", 5) == [0, 0, 0, 0, 0, 0]
    conv.bad(conv("CONV.MUTE", 1, 10, 1, "THREAD", 7), None if
             conv.kind == "binary" else "ERR", E["ARITY"])
    assert conv("DEBUG", "AUDIT") == 0


@each_way
def test_sources_inside_one_conversation(conv):
    """A system-notification dialogue: the count per message source."""
    for q, src in [(1, 0), (2, 1), (3, 1), (4, 7), (5, 1)]:
        assert conv("CONV.SEQ", 1, 10, q, "SOURCE", src) == [q, q]
    assert conv("CONV.SOURCES", 1, 10) == [0, 1, 1, 3, 7, 1]
    assert conv("CONV.READ", 1, 10, 2) == [3, 3]
    assert conv("CONV.SOURCES", 1, 10) == [1, 2, 7, 1]
    assert conv("CONV.RECALL", 1, 10, 4) == [2, 2]
    assert conv("CONV.SOURCES", 1, 10) == [1, 2]
    assert conv("CONV.READ", 1, 10) == [0, 0]
    assert conv("CONV.SOURCES", 1, 10) == []
    assert conv("CONV.SOURCES", 2, 10) == []


def test_source_names_from_the_configuration():
    with Server(conv_sources="order promo security") as srv, \
            srv.resp() as c, srv.bin() as b:
        assert c.cmd("CONV.SEQ", 1, 10, 1, "SOURCE", "promo") == [1, 1]
        assert b.call("CONV.SEQ", 1, 10, 2, "SOURCE", "SECURITY") == [2, 2]
        assert c.cmd("CONV.SEQ", 1, 10, 3, "SOURCE", 0) == [3, 3]
        assert c.cmd("CONV.SOURCES", 1, 10) == [0, 1, 1, 1, 2, 1]
        assert is_err(c.cmd("CONV.SEQ", 1, 10, 4, "SOURCE", "spam"),
                      "ERR unknown source 'spam'")
        assert c.cmd("CONFIG", "GET", "conv-sources") == [
            b"conv-sources", b"order promo security"]


@each_way
def test_mark_all_read(conv):
    conv("CONV.SEQ", 1, 10, 5)
    conv("CONV.SEQ", 1, 11, 3, "MENTION")
    conv("CONV.MUTE", 1, 11, 1)
    conv("CONV.SEQ", 1, 12, 2, "THREAD", 4)
    conv("CONV.SEQ", 1, 13, 1000, "SPARSE")
    conv("CONV.SEQ", 2, 10, 5)
    assert conv("CONV.TOTAL", 1) == 8
    assert conv("CONV.READALL", 1) == 0
    assert conv("CONV.TOTAL", 1, "CHATS", "THREADS") == [0, 0, 0]
    assert conv("CONV.MENTIONS", 1) == 0
    assert conv("CONV.LIST", 1) == []
    assert conv("CONV.GET", 1, 11) == 0  # muted ones too
    assert conv("CONV.TOTAL", 2) == 5  # another user
    assert conv("CONV.READALL", 9) == 0  # nobody
    # Later messages count from there.
    assert conv("CONV.SEQ", 1, 10, 7) == [2, 2]
    assert conv("CONV.SEQ", 1, 12, 3, "THREAD", 4) == [1, 3]
    assert conv("CONV.SEQ", 1, 13, 1001, "SPARSE") == [1, 4]
    assert conv("DEBUG", "AUDIT") == 0


@each_way
def test_total_counts_the_chats(conv):
    conv("CONV.SEQ", 1, 10, 5)
    conv("CONV.SEQ", 1, 11, 3)
    conv("CONV.SEQ", 1, 12, 2)
    conv("CONV.MUTE", 1, 12, 1)
    conv("CONV.SEQ", 1, 13, 4)
    conv("CONV.READ", 1, 13)
    assert conv("CONV.TOTAL", 1, "CHATS") == [8, 2]
    assert conv("CONV.TOTAL", 1, "THREADS", "CHATS") == [8, 2, 0]
    assert conv("CONV.TOTAL", 1, "WITHEXPIRY", "CHATS") == [8, 2, 0]
    assert conv("CONV.TOTAL", 1, "WITHEXPIRY") == [8, 0]
    assert conv("CONV.TOTAL", 1) == 8
    assert conv("CONV.TOTAL", 2, "CHATS") == [0, 0]


@each_way
def test_list_with_state_pages_and_recency(conv):
    # cid: newest id; ids from one generator, so recency is comparable.
    for cid, mid in [(30, 105), (10, 101), (20, 109), (40, 103), (50, 107)]:
        conv("CONV.SEQ", 1, cid, mid, "SPARSE")
    conv("CONV.READ", 1, 40, "SPARSE")  # read: not listed
    conv("CONV.MUTE", 1, 50, 1)  # muted: listed
    assert conv("CONV.LIST", 1) == [10, 1, 20, 1, 30, 1, 50, 1]
    assert conv("CONV.LIST", 1, "STATE") == [
        10, 101, 0, 1, 0, 0, 101, 20, 109, 0, 1, 0, 0, 109,
        30, 105, 0, 1, 0, 0, 105, 50, 107, 0, 1, 1, 0, 107]
    assert conv("CONV.LIST", 1, "RECENT") == [20, 1, 50, 1, 30, 1, 10, 1]
    # Pages by id: the cursor is where to go on.
    assert conv("CONV.LIST", 1, 2, "CURSOR", 0) == [21, [10, 1, 20, 1]]
    assert conv("CONV.LIST", 1, 2, "CURSOR", 21) == [0, [30, 1, 50, 1]]
    # A change between pages does not shift the next one.
    conv("CONV.SEQ", 1, 15, 1)
    assert conv("CONV.LIST", 1, 2, "CURSOR", 21) == [0, [30, 1, 50, 1]]
    # Pages by recency.
    page1 = conv("CONV.LIST", 1, 2, "RECENT", "CURSOR", 0)
    assert page1 == [2, [20, 1, 50, 1]]
    assert conv("CONV.LIST", 1, 2, "RECENT", "CURSOR", 2) == [4, [30, 1, 10, 1]]
    assert conv("CONV.LIST", 1, 2, "CURSOR", 4, "RECENT") == [0, [15, 1]]
    assert conv("CONV.LIST", 1, 5, "STATE", "CURSOR", 0) == [0, [
        10, 101, 0, 1, 0, 0, 101, 15, 1, 0, 1, 0, 0, 1,
        20, 109, 0, 1, 0, 0, 109, 30, 105, 0, 1, 0, 0, 105,
        50, 107, 0, 1, 1, 0, 107]]
    assert conv("CONV.LIST", 2, 5, "CURSOR", 0) == [0, []]


@each_way
def test_chat_features_wrong_arguments(conv):
    conv("CONV.SEQ", 1, 10, 5, "THREAD", 2)
    conv.bad(conv("CONV.ROLLUP", 1, 10, 2), "ERR flag must be 1")
    conv.bad(conv("CONV.STATE", 1, 10, "THREAD", "x"), "ERR tid must be")
    conv.bad(conv("CONV.THREADS", 1, "x"), "ERR cid must be")
    conv.bad(conv("CONV.MENTIONS", "-1"), "ERR uid must be")
    conv.bad(conv("CONV.READALL", "x"), "ERR uid must be")
    conv.bad(conv("CONV.MARKUNREAD", 1, 10, 0, "THREAD", 2),
             "ERR seq must be at least 1")
    assert conv("CONV.STATE", 1, 10, "THREAD", 2) == [5, 0, 5, 0, 0, 1]
    assert conv("DEBUG", "AUDIT") == 0


def test_thread_limit():
    with Server() as srv, srv.bin() as b:
        b.pipeline([("CONV.SEQ", 1, 10, 1, "THREAD", t) for t in range(1024)])
        assert b.call("CONV.TOTAL", 1) == 1024
        r = b.call("CONV.SEQ", 1, 10, 1, "THREAD", 5000)
        assert_err(r, None, E["LIMIT"])
        assert "at most 1024 threads" in str(r)
        b.call("CONV.READ", 1, 10, "THREAD", 3)
        # A read thread gives way to a new one.
        assert b.call("CONV.SEQ", 1, 10, 1, "THREAD", 5000) == [1, 1024]
        assert len(b.call("CONV.THREADS", 1, 10)) == 2 * 1024
        assert b.call("DEBUG", "AUDIT") == 0


def test_command_names_are_case_insensitive():
    with Server() as srv, srv.resp() as c:
        assert c.cmd("conv.seq", 1, 2, 3) == [3, 3]
        assert c.cmd("Conv.Read", 1, 2) == [0, 0]
        assert c.inline("conv.total 1") == 0


def test_state_is_shared_between_protocols_and_cli():
    with Server() as srv, srv.resp() as r, srv.bin() as b:
        assert r.cmd("CONV.SEQ", 100, 7, 4) == [4, 4]
        assert b.call("CONV.SEQ", 100, 8, 2) == [2, 6]
        assert r.inline("CONV.MUTE 100 7 1") == [4, 2]
        assert b.call("CONV.LIST", 100) == [7, 4, 8, 2]
        out = run_cli(srv, "CONV.TOTAL", 100)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == ["2"], out.stdout
        out = run_cli(srv, "CONV.READ", 100, 8)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == ["0", "0"], out.stdout
        assert r.cmd("CONV.GET", 100, 7) == 4


def test_info_memory_counts_conversations():
    with Server() as srv, srv.bin() as b:
        b.pipeline([("CONV.SEQ", u, c, 3) for u in range(50)
                    for c in range(1 + u % 3)])
        info = info_flat(b.call("INFO", "memory"))
        assert info["conv_conversations"] == str(sum(1 + u % 3
                                                     for u in range(50)))
        assert int(info["conv_bytes"]) > 0
        b.pipeline([("CONV.DEL", u, c) for u in range(50)
                    for c in range(1 + u % 3)])
        info = info_flat(b.call("INFO", "memory"))
        assert info["conv_conversations"] == "0"


def test_a_user_with_many_conversations():
    """Past 128 conversations a user's set changes form: nothing a client
    sees changes with it."""
    with Server() as srv, srv.bin() as b:
        cids = [ID_MAX - 7 * i for i in range(400)]
        replies = b.pipeline([("CONV.SEQ", 9, c, 1 + i % 3)
                              for i, c in enumerate(cids)])
        totals = [r[1] for r in replies]
        assert totals[-1] == sum(1 + i % 3 for i in range(400))
        assert totals == sorted(totals)
        b.pipeline([("CONV.READ", 9, c) for c in cids[::2]])
        want = sorted((c, 1 + i % 3) for i, c in enumerate(cids) if i % 2)
        assert b.call("CONV.LIST", 9) == [x for p in want for x in p]
        assert b.call("CONV.LIST", 9, 3) == [x for p in want[:3] for x in p]
        assert b.call("DEBUG", "AUDIT") == 0
        b.pipeline([("CONV.DEL", 9, c) for c in cids[:-1]])
        assert b.call("CONV.LIST", 9) == [cids[-1], 1]  # index 399: unread
        assert b.call("CONV.TOTAL", 9) == 1
        assert b.call("CONV.DEL", 9, cids[-1]) == 0
        assert b.call("CONV.LIST", 9) == []
        assert b.call("DEBUG", "AUDIT") == 0


def test_client_library_calls():
    u64, u32 = ctypes.c_uint64, ctypes.c_uint32
    p_u64, p_u32 = ctypes.POINTER(u64), ctypes.POINTER(u32)
    pair_args = [ctypes.c_void_p, u64, u64, u64, p_u32, p_u64]

    class Pair(ctypes.Structure):
        _fields_ = [("cid", u64), ("unread", u32)]

    lib = libunread({
        "unread_conv_incr": (ctypes.c_int, pair_args),
        "unread_conv_seq": (ctypes.c_int, pair_args),
        "unread_conv_read": (ctypes.c_int, pair_args),
        "unread_conv_read_all": (ctypes.c_int, [ctypes.c_void_p, u64, u64,
                                                p_u32, p_u64]),
        "unread_conv_markunread": (ctypes.c_int, pair_args),
        "unread_conv_recall": (ctypes.c_int, pair_args),
        "unread_conv_mute": (ctypes.c_int, [ctypes.c_void_p, u64, u64,
                                            ctypes.c_int, p_u32, p_u64]),
        "unread_conv_del": (ctypes.c_int, [ctypes.c_void_p, u64, u64, p_u64]),
        "unread_conv_get": (ctypes.c_int, [ctypes.c_void_p, u64, u64, p_u32]),
        "unread_conv_total": (ctypes.c_int, [ctypes.c_void_p, u64, p_u64]),
        "unread_conv_list": (ctypes.c_int, [ctypes.c_void_p, u64,
                                            ctypes.c_uint,
                                            ctypes.POINTER(Pair),
                                            ctypes.POINTER(ctypes.c_uint)]),
    })
    if lib is None:
        print("libunread.so cannot be loaded here (sanitizer build): "
              "covered by the plain build")
        return
    with Server() as srv:
        h = lib_connect(lib, srv)
        try:
            un, tot = u32(), u64()

            def pair(fn, *args):
                un.value, tot.value = 77, 77
                rc = fn(h, *args, ctypes.byref(un), ctypes.byref(tot))
                return rc, un.value, tot.value

            assert pair(lib.unread_conv_seq, 1, 10, 5) == (0, 5, 5)
            assert pair(lib.unread_conv_incr, 1, 11, 2) == (0, 2, 7)
            assert pair(lib.unread_conv_read, 1, 10, 3) == (0, 2, 4)
            assert pair(lib.unread_conv_recall, 1, 10, 5) == (0, 1, 3)
            assert pair(lib.unread_conv_markunread, 1, 10, 1) == (0, 4, 6)
            assert pair(lib.unread_conv_mute, 1, 11, 1) == (0, 2, 4)
            assert pair(lib.unread_conv_read_all, 1, 10) == (0, 0, 0)
            assert pair(lib.unread_conv_markunread, 1, 10, 0)[0] == \
                E["BADARG"]
            assert b"seq must be at least 1" in lib.unread_errstr(h)
            assert lib.unread_conv_get(h, 1, 11, ctypes.byref(un)) == 0
            assert un.value == 2
            assert lib.unread_conv_total(h, 1, ctypes.byref(tot)) == 0
            assert tot.value == 0
            out, n = (Pair * 4)(), ctypes.c_uint()
            assert lib.unread_conv_list(h, 1, 4, out, ctypes.byref(n)) == 0
            assert n.value == 1 and (out[0].cid, out[0].unread) == (11, 2)
            assert lib.unread_conv_list(h, 1, 0, None, ctypes.byref(n)) == 0
            assert n.value == 0
            assert lib.unread_conv_list(h, 1, LIST_MAX + 1, None,
                                        ctypes.byref(n)) == E["BADARG"]
            assert lib.unread_conv_del(h, 1, 11, ctypes.byref(tot)) == 0
            assert tot.value == 0
            assert lib.unread_ping(h) == 0  # the connection is still good
        finally:
            lib.unread_close(h)


def test_chat_client_library_calls():
    u64, u32, vp = ctypes.c_uint64, ctypes.c_uint32, ctypes.c_void_p
    p_u64, p_u32 = ctypes.POINTER(u64), ctypes.POINTER(u32)
    p_uint = ctypes.POINTER(ctypes.c_uint)

    class Opt(ctypes.Structure):
        _fields_ = [("flags", ctypes.c_uint), ("tid", u64),
                    ("source", ctypes.c_uint)]

    class State(ctypes.Structure):
        _fields_ = [("max", u64), ("read", u64), ("unread", u64),
                    ("muted", ctypes.c_int), ("mentions", u64),
                    ("first_unread", u64)]

    class Entry(ctypes.Structure):
        _fields_ = [("id", u64), ("st", State)]

    class Pair(ctypes.Structure):
        _fields_ = [("cid", u64), ("unread", u32)]

    opt_args = [vp, u64, u64, u64, ctypes.POINTER(Opt), p_u32, p_u64]
    lib = libunread({
        "unread_conv_seq_opt": (ctypes.c_int, opt_args),
        "unread_conv_incr_opt": (ctypes.c_int, opt_args),
        "unread_conv_read_opt": (ctypes.c_int, opt_args),
        "unread_conv_markunread_opt": (ctypes.c_int, opt_args),
        "unread_conv_recall_opt": (ctypes.c_int, opt_args),
        "unread_conv_rollup": (ctypes.c_int, [vp, u64, u64, ctypes.c_int,
                                              p_u32, p_u64]),
        "unread_conv_state": (ctypes.c_int, [vp, u64, u64, p_u64,
                                             ctypes.POINTER(State)]),
        "unread_conv_mentions": (ctypes.c_int, [vp, u64, p_u64]),
        "unread_conv_readall": (ctypes.c_int, [vp, u64, p_u64]),
        "unread_conv_total_counts": (ctypes.c_int, [vp, u64, p_u64, p_u64,
                                                    p_u64]),
        "unread_conv_threads": (ctypes.c_int, [vp, u64, u64,
                                               ctypes.POINTER(Pair),
                                               ctypes.c_uint, p_uint]),
        "unread_conv_sources": (ctypes.c_int, [vp, u64, u64, p_u32]),
        "unread_conv_list_page": (ctypes.c_int, [vp, u64, ctypes.c_int, u64,
                                                 ctypes.c_uint,
                                                 ctypes.POINTER(Entry), p_uint,
                                                 p_u64]),
    })
    if lib is None:
        print("libunread.so cannot be loaded here (sanitizer build): "
              "covered by the plain build")
        return
    MENTION, SPARSE, THREAD, SOURCE = 1, 2, 4, 8
    with Server() as srv:
        h = lib_connect(lib, srv)
        try:
            un, tot = u32(), u64()

            def call(fn, uid, cid, arg, flags=0, tid=0, source=0):
                o = Opt(flags, tid, source)
                rc = fn(h, uid, cid, arg, ctypes.byref(o), ctypes.byref(un),
                        ctypes.byref(tot))
                return rc, un.value, tot.value

            for q in range(1, 6):
                assert call(lib.unread_conv_seq_opt, 1, 10, q,
                            MENTION if q in (2, 4) else 0) == (0, q, q)
            assert call(lib.unread_conv_seq_opt, 1, 11, 1000001, SPARSE) == \
                (0, 1, 6)
            assert call(lib.unread_conv_seq_opt, 1, 11, 1000009, SPARSE) == \
                (0, 2, 7)
            assert call(lib.unread_conv_read_opt, 1, 11, 1000001, SPARSE) == \
                (0, 1, 6)
            assert call(lib.unread_conv_seq_opt, 1, 11, 5)[0] == E["BADARG"]
            assert b"has sparse ids" in lib.unread_errstr(h)
            assert call(lib.unread_conv_incr_opt, 1, 10, 2, THREAD | SOURCE,
                        tid=3, source=1)[0] == E["BADARG"]
            assert call(lib.unread_conv_incr_opt, 1, 10, 2, THREAD,
                        tid=3) == (0, 2, 8)
            assert call(lib.unread_conv_incr_opt, 1, 12, 2, SOURCE,
                        source=5) == (0, 2, 10)
            st = State()
            assert lib.unread_conv_state(h, 1, 10, None, ctypes.byref(st)) == 0
            assert (st.max, st.read, st.unread, st.muted, st.mentions,
                    st.first_unread) == (5, 0, 7, 0, 2, 1)
            tid = u64(3)
            assert lib.unread_conv_state(h, 1, 10, ctypes.byref(tid),
                                         ctypes.byref(st)) == 0
            assert (st.max, st.unread, st.first_unread) == (2, 2, 1)
            assert call(lib.unread_conv_recall_opt, 1, 10, 4) == (0, 6, 9)
            assert call(lib.unread_conv_markunread_opt, 1, 10, 2, THREAD,
                        tid=3) == (0, 1, 8)
            assert lib.unread_conv_rollup(h, 1, 10, 0, ctypes.byref(un),
                                          ctypes.byref(tot)) == 0
            assert (un.value, tot.value) == (4, 7)
            m = u64()
            assert lib.unread_conv_mentions(h, 1, ctypes.byref(m)) == 0
            assert m.value == 1
            chats, threads = u64(), u64()
            assert lib.unread_conv_total_counts(
                h, 1, ctypes.byref(tot), ctypes.byref(chats),
                ctypes.byref(threads)) == 0
            assert (tot.value, chats.value, threads.value) == (7, 3, 1)
            pairs, n = (Pair * 4)(), ctypes.c_uint()
            assert lib.unread_conv_threads(h, 1, 10, pairs, 4,
                                           ctypes.byref(n)) == 0
            assert n.value == 1 and (pairs[0].cid, pairs[0].unread) == (3, 1)
            counts = (u32 * 8)()
            assert lib.unread_conv_sources(h, 1, 12, counts) == 0
            assert list(counts) == [0, 0, 0, 0, 0, 2, 0, 0]
            page, nxt = (Entry * 2)(), u64()
            assert lib.unread_conv_list_page(h, 1, 0, 0, 2, page,
                                             ctypes.byref(n),
                                             ctypes.byref(nxt)) == 0
            assert n.value == 2 and nxt.value == 12
            assert [(e.id, e.st.unread, e.st.max) for e in page] == \
                [(10, 4, 5), (11, 1, 1000009)]
            assert lib.unread_conv_list_page(h, 1, 1, 0, 2, page,
                                             ctypes.byref(n),
                                             ctypes.byref(nxt)) == 0
            assert [e.id for e in page[:n.value]] == [11, 10]
            assert nxt.value == 2  # by recency: a position
            assert lib.unread_conv_readall(h, 1, ctypes.byref(tot)) == 0
            assert tot.value == 0
            assert call(lib.unread_conv_read_opt, 1, 10, U64_MAX, THREAD,
                        tid=3) == (0, 0, 0)  # UNREAD_CONV_ALL
            assert lib.unread_ping(h) == 0
        finally:
            lib.unread_close(h)


def test_cli_runs_the_chat_commands():
    """unread-cli sends any command of the table by name."""
    with Server() as srv:
        for args, want in [
                (("CONV.SEQ", 1, 10, 2, "MENTION", "THREAD", 4), ["2", "2"]),
                (("CONV.STATE", 1, 10, "THREAD", 4),
                 ["2", "0", "2", "0", "1", "1"]),
                (("CONV.MENTIONS", 1), ["1"]),
                (("CONV.THREADS", 1, 10), ["4", "2"]),
                (("CONV.SEQ", 1, 11, 1000001, "SPARSE"), ["1", "3"]),
                (("CONV.LIST", 1, 1, "CURSOR", 0), ["11", "10", "2"]),
                (("CONV.READALL", 1), ["0"])]:
            out = run_cli(srv, *args)
            assert out.returncode == 0, out.stderr
            got = [w for w in out.stdout.split() if w.isdigit()]
            assert got == want, (args, out.stdout)


def test_errors_do_not_change_state():
    with Server() as srv, srv.resp() as c:
        c.cmd("CONV.SEQ", 50, 1, 5)
        c.cmd("CONV.RECALL", 50, 1, 3)
        bad = [("CONV.SEQ", 50, 1), ("CONV.SEQ", 50, 1, "x"),
               ("CONV.MUTE", 50, 1, 7), ("CONV.MARKUNREAD", 50, 1, 0),
               ("CONV.READ", 50, 1, -1), ("CONV.DEL", 50),
               ("CONV.INCR", 50, 1, 1, 1)]
        for args in bad:
            assert is_err(c.cmd(*args)), args
        assert c.cmd("CONV.LIST", 50) == [1, 4]
        assert c.cmd("CONV.TOTAL", 50) == 4
        assert c.cmd("DEBUG", "AUDIT") == 0


# --------------------------------------------------------------------------
# The randomized model test.

MODEL_CAP = 4  # unread-cap of the model runs: a sparse conversation keeps 4
TAG_KINDS = 1 + 8  # mentions, then sources 0..7


class Timeline:
    """One timeline as docs/COMMANDS.md says: read, max, the recalled seqs,
    a sparse one's kept ids and the newest lost id, and the tags."""

    def __init__(self):
        self.read = self.max = self.lost = 0
        self.rec = set()
        self.ids = []
        self.tags = [set() for _ in range(TAG_KINDS)]

    def zero(self):
        return not (self.read or self.max or self.rec or self.ids or
                    self.lost or any(self.tags))

    def unread(self, sparse):
        if sparse:
            return len(self.ids) + (1 if self.lost else 0)
        return self.max - self.read - sum(1 for r in self.rec
                                          if r <= self.max)

    def first_unread(self, sparse):
        if sparse:
            return self.lost or (self.ids[0] if self.ids else 0)
        if self.unread(False) == 0:
            return 0
        q = self.read + 1
        while q in self.rec:
            q += 1
        return q

    def set_read(self, read, sparse):
        self.read = read
        self.max = max(self.max, read)
        floor = self.max if sparse else read
        self.rec = {r for r in self.rec if r > floor}
        self.ids = [i for i in self.ids if i > read]
        if self.lost <= read:
            self.lost = 0
        self.tags = [{q for q in t if q > read} for t in self.tags]

    def untag(self, q):
        for t in self.tags:
            t.discard(q)

    def tag(self, kinds, q):
        for k in kinds:
            if k > 0:
                for j in range(1, TAG_KINDS):
                    if j != k:
                        self.tags[j].discard(q)
            self.tags[k].add(q)

    def apply(self, name, arg, sparse, kinds):
        if name == "CONV.INCR":
            old = self.max
            self.max = min(self.max + arg, U64_MAX)
            for q in range(old + 1, self.max + 1) if kinds else ():
                if q not in self.rec:
                    self.tag(kinds, q)
        elif name == "CONV.SEQ" and not sparse:
            self.max = max(self.max, arg)
            if arg > self.read and arg not in self.rec:
                self.tag(kinds, arg)
        elif name == "CONV.SEQ" and arg > self.max:
            self.max = arg
            recalled = arg in self.rec
            self.rec = {r for r in self.rec if r > self.max}
            if not recalled:
                if len(self.ids) == MODEL_CAP:
                    self.lost = self.ids.pop(0)
                    self.untag(self.lost)
                self.ids.append(arg)
                self.tag(kinds, arg)
        elif name == "CONV.SEQ":
            if arg > self.read and arg in self.ids:
                self.tag(kinds, arg)
        elif name == "CONV.READ":
            target = self.max if arg is None else arg
            if arg is None or target > self.read:
                self.set_read(target, sparse)
        elif name == "CONV.MARKUNREAD":
            recalled = sparse and arg > self.max and arg in self.rec
            self.set_read(arg - 1, sparse)
            self.max = max(self.max, arg)
            if sparse:
                self.rec = {r for r in self.rec if r > self.max}
                if not (recalled or arg in self.ids or self.lost >= arg):
                    if len(self.ids) >= MODEL_CAP:
                        self.lost = arg
                    else:
                        self.ids.insert(0, arg)
        elif name == "CONV.RECALL":
            if sparse:
                if arg in self.ids:
                    self.ids.remove(arg)
                    self.untag(arg)
                elif arg > self.max:
                    self.rec.add(arg)
            elif arg > self.read:
                self.rec.add(arg)
                self.untag(arg)


class Conversation:
    def __init__(self):
        self.main = Timeline()
        self.muted = self.sparse = self.collapsed = False
        self.threads = {}  # tid -> Timeline

    def exists(self):
        return (not self.main.zero() or self.muted or self.collapsed or
                bool(self.threads))

    def blank(self):
        return (not self.sparse and self.main.max == 0 and not self.main.rec
                and not self.threads)

    def tunread(self, t):
        return min(t.unread(self.sparse), U32_MAX)

    def unread(self):
        u = self.main.unread(self.sparse)
        if u >= U32_MAX:
            return U32_MAX
        if not self.collapsed:
            u += sum(self.tunread(t) for t in self.threads.values())
        return min(u, U32_MAX)

    def mentions(self, every=False):
        n = len(self.main.tags[0])
        if every or not self.collapsed:
            n += sum(len(t.tags[0]) for t in self.threads.values())
        return n

    def state(self, tid=None):
        if tid is None:
            t = self.main
            return [t.max, t.read, self.unread(), int(self.muted),
                    self.mentions(), t.first_unread(self.sparse)]
        t = self.threads.get(tid)
        if t is None:
            return [0, 0, 0, int(self.muted), 0, 0]
        return [t.max, t.read, self.tunread(t), int(self.muted),
                len(t.tags[0]), t.first_unread(self.sparse)]


class Model:
    """The documented model, as plainly as possible: per (uid, cid) a
    Conversation."""

    def __init__(self):
        self.users = {}  # uid -> {cid: Conversation}

    def conv(self, uid, cid):
        return self.users.get(uid, {}).get(cid)

    def unread(self, uid, cid):
        c = self.conv(uid, cid)
        return c.unread() if c else 0

    def state(self, uid, cid, tid=None):
        c = self.conv(uid, cid)
        return c.state(tid) if c else [0, 0, 0, 0, 0, 0]

    def total(self, uid):
        return sum(c.unread() for c in self.users.get(uid, {}).values()
                   if not c.muted)

    def counts(self, uid):
        convs = self.users.get(uid, {}).values()
        return (sum(c.mentions(True) for c in convs),
                sum(1 for c in convs if not c.muted and c.unread()),
                sum(1 for c in convs if not c.muted
                    for t in c.threads.values() if c.tunread(t)))

    def listing(self, uid):
        convs = self.users.get(uid, {})
        return [x for c in sorted(convs) if convs[c].unread()
                for x in (c, convs[c].unread())]

    def read_all(self, uid):
        for c in self.users.get(uid, {}).values():
            c.main.set_read(c.main.max, c.sparse)
            for t in c.threads.values():
                t.set_read(t.max, c.sparse)

    def apply(self, name, uid, cid, arg, opts):
        """opts: {"sparse", "mention", "source", "tid"}; returns an error
        string, or None with the change made."""
        if name == "CONV.DEL":
            self.users.get(uid, {}).pop(cid, None)
            return None
        c = self.conv(uid, cid) or Conversation()
        sparse = c.sparse
        if name in ("CONV.INCR", "CONV.SEQ", "CONV.MARKUNREAD",
                    "CONV.RECALL") or (name == "CONV.READ" and
                                       arg is not None):
            want = opts.get("sparse", False)
            if sparse and (name == "CONV.INCR" or
                           (name == "CONV.SEQ" and not want)):
                return "mode"
            if sparse and arg > ID_MAX:
                return "range"
            if want and not sparse:
                if not c.blank():
                    return "mode"
                sparse = True
        if name == "CONV.MUTE":
            c.muted = bool(arg)
        elif name == "CONV.ROLLUP":
            c.collapsed = not arg
        else:
            kinds = ([0] if opts.get("mention") else []) + \
                ([1 + opts["source"]] if "source" in opts else [])
            tid = opts.get("tid")
            t = c.main if tid is None else c.threads.get(tid, Timeline())
            if name == "CONV.RECALL" and not sparse and arg > t.read and \
                    arg not in t.rec and len(t.rec) == RECALL_MAX:
                return "limit"
            c.sparse = sparse
            t.apply(name, arg, sparse, kinds)
            if tid is not None:
                if t.zero():
                    c.threads.pop(tid, None)
                else:
                    c.threads[tid] = t
        if c.exists():
            self.users.setdefault(uid, {})[cid] = c
        else:
            self.users.get(uid, {}).pop(cid, None)
        return None


class Workload:
    """Random CONV commands over a few users with 1 to 152 conversations
    (past the 128 where a user's set changes form), seqs mostly small so
    that they collide, now and then at the edges of the compact encoding
    or of u64; some conversations sparse (ids up to 2^63 - 1), threads,
    mentions, sources, mute and roll-up, mark-all-read, and the reads of
    every state; each with the reply the model expects."""

    def __init__(self, seed):
        self.rng = rng = random.Random(seed)
        self.model = Model()
        self.uids = [0, 1, 2, ID_MAX] + [rng.randrange(1 << 63)
                                          for _ in range(4)]
        self.pools = {u: [0, ID_MAX] + [rng.randrange(1 << 63)
                                         for _ in range(n)]
                      for u, n in zip(self.uids, [1, 3, 10, 150, 40, 5, 2, 20])}
        self.sparse = {c for p in self.pools.values() for c in p
                       if c % 4 == 1}
        self.tids = [0, 7, ID_MAX]

    def seq(self, sparse):
        rng = self.rng
        if rng.random() < 0.02:
            if sparse:
                return ID_MAX - rng.randrange(4) - rng.choice([0, 1 << 30])
            return rng.choice([1 << 21, 1 << 41, 3000000, ID_MAX - 3]) + \
                rng.randrange(4)
        return rng.randrange(100)

    def command(self):
        """(command tuple, argument for the model, options)"""
        rng = self.rng
        uid = rng.choice(self.uids)
        pool = self.pools[uid]
        cid = rng.choice(pool[:2 + len(pool) // 2] if rng.random() < 0.5
                         else pool)
        sparse = (cid in self.sparse) != (rng.random() < 0.005)
        r = rng.random()
        if r < 0.05:
            return ("CONV.GET", uid, cid), None, {}
        if r < 0.07:
            return ("CONV.TOTAL", uid), None, {}
        if r < 0.08:
            return ("CONV.TOTAL", uid, "CHATS", "THREADS"), None, {}
        if r < 0.09:
            return ("CONV.MENTIONS", uid), None, {}
        if r < 0.10:
            return ("CONV.LIST", uid), None, {}
        if r < 0.12:
            tid = rng.choice(self.tids) if rng.random() < 0.5 else None
            return ("CONV.STATE", uid, cid) + (
                ("THREAD", tid) if tid is not None else ()), tid, {}
        if r < 0.13:
            return ("CONV.THREADS", uid, cid), None, {}
        if r < 0.135:
            return ("CONV.READALL", uid), None, {}
        if r < 0.15:
            return ("CONV.DEL", uid, cid), None, {}
        if r < 0.17:
            f = rng.randrange(2)
            return ("CONV.MUTE" if r < 0.16 else "CONV.ROLLUP",
                    uid, cid, f), f, {}
        opts, extra = {}, []
        if rng.random() < 0.25:
            opts["tid"] = rng.choice(self.tids)
        if r < 0.22 and not sparse:
            d = (1 << 33) if rng.random() < 0.03 else rng.randrange(4)
            name, arg, args = "CONV.INCR", d, (d,)
        elif r < 0.50:
            name = "CONV.SEQ"
            arg = self.seq(sparse)
            c = self.model.conv(uid, cid)
            t = c and (c.main if "tid" not in opts
                       else c.threads.get(opts["tid"]))
            if sparse and t and t.max < ID_MAX - 10 and rng.random() < 0.7:
                arg = t.max + rng.randrange(1, 6)  # ids going up, gaps
            args = (arg,)
        elif r < 0.62:
            name, arg = "CONV.READ", self.seq(sparse)
            args = (arg,)
        elif r < 0.68:
            name, arg, args = "CONV.READ", None, ()
        elif r < 0.76:
            name, arg = "CONV.MARKUNREAD", max(1, self.seq(sparse))
            args = (arg,)
        else:
            name, arg = "CONV.RECALL", self.seq(sparse)
            args = (arg,)
        small = name == "CONV.SEQ" or (name == "CONV.INCR" and arg < 8)
        if small and rng.random() < 0.3:
            opts["mention"] = True
            extra.append("MENTION")
        if small and "tid" not in opts and rng.random() < 0.2:
            opts["source"] = rng.randrange(3)
            extra += ["SOURCE", opts["source"]]
        if sparse and name != "CONV.INCR":
            opts["sparse"] = True
            extra.append("SPARSE")
        if "tid" in opts:
            extra += ["THREAD", opts["tid"]]
        return (name, uid, cid) + args + tuple(extra), arg, opts

    def expect(self, cmd, arg, opts):
        """Applies cmd to the model; the reply it must get (an Err for a
        refusal: compared by is_err)."""
        m, name, uid = self.model, cmd[0], cmd[1]
        if name == "CONV.TOTAL":
            if len(cmd) == 2:
                return m.total(uid)
            _, chats, threads = m.counts(uid)
            return [m.total(uid), chats, threads]
        if name == "CONV.MENTIONS":
            return m.counts(uid)[0]
        if name == "CONV.LIST":
            return m.listing(uid)
        if name == "CONV.READALL":
            m.read_all(uid)
            return 0
        cid = cmd[2]
        if name == "CONV.GET":
            return m.unread(uid, cid)
        if name == "CONV.STATE":
            return m.state(uid, cid, arg)
        if name == "CONV.THREADS":
            c = m.conv(uid, cid)
            return [x for t in sorted(c.threads) if c.tunread(c.threads[t])
                    for x in (t, c.tunread(c.threads[t]))] if c else []
        err = m.apply(name, uid, cid, arg, opts)
        if err is not None:
            return err
        if name == "CONV.DEL":
            return m.total(uid)
        if "tid" in opts:
            c = m.conv(uid, cid)
            t = c.threads.get(opts["tid"]) if c else None
            return [c.tunread(t) if t else 0, m.total(uid)]
        return [m.unread(uid, cid), m.total(uid)]

    def run(self, conn, n, where=""):
        cmds = [self.command() for _ in range(n)]
        replies = conn.pipeline([c for c, _, _ in cmds])
        for i, ((cmd, arg, opts), got) in enumerate(zip(cmds, replies)):
            want = self.expect(cmd, arg, opts)
            if isinstance(want, str):
                assert is_err(got), "%s op %d %r: got %r, want an error" % (
                    where, i, cmd, got)
                continue
            assert _ints(got) == want, "%s op %d %r: got %r, want %r" % (
                where, i, cmd, got, want)

    def check_all(self, conn):
        """Every user's list, totals and counts, every conversation and
        thread state of the pools."""
        m = self.model
        for uid in self.uids:
            assert conn.call("CONV.LIST", uid) == m.listing(uid)
            mentions, chats, threads = m.counts(uid)
            assert conn.call("CONV.TOTAL", uid, "CHATS", "THREADS") == \
                [m.total(uid), chats, threads]
            assert conn.call("CONV.MENTIONS", uid) == mentions
            got = conn.pipeline([("CONV.STATE", uid, c)
                                 for c in self.pools[uid]])
            assert got == [m.state(uid, c) for c in self.pools[uid]]
            got = conn.pipeline([("CONV.STATE", uid, c, "THREAD", t)
                                 for c in self.pools[uid] for t in self.tids])
            assert got == [m.state(uid, c, t) for c in self.pools[uid]
                           for t in self.tids]
        assert conn.call("DEBUG", "AUDIT") == 0


def test_random_ops_match_model_through_the_server():
    """100k+ commands, mostly pipelined over the binary protocol, some over
    RESP, checked reply by reply against the model; DEBUG AUDIT after."""
    seed = int(os.environ.get("UNREADD_TEST_SEED", "20240613"))
    w = Workload(seed)
    with Server(unread_cap=MODEL_CAP) as srv, srv.bin() as b, \
            srv.resp() as r:
        for batch in range(220):
            w.run(r if batch % 10 == 9 else b, 500,
                  "batch %d (seed %d)" % (batch, seed))
            if batch % 50 == 0:
                assert b.call("DEBUG", "AUDIT") == 0
        w.check_all(b)


test_random_ops_match_model_through_the_server.timeout = 300


def test_state_survives_a_restart():
    """Snapshot (SIGTERM) and journal replay (kill -9) give back every
    conversation: watermarks, max, mute flags, remembered recalls, users in
    every form; the totals are rebuilt and audit clean."""
    from test_persistence import Dir

    w = Workload(int(os.environ.get("UNREADD_TEST_SEED", "20240614")))
    with Dir() as d:
        srv = d.start(unread_cap=MODEL_CAP)
        with srv.bin() as b:
            w.run(b, 20000, "before the snapshot")
        assert srv.stop() == 0  # SIGTERM: final snapshot
        srv = d.start(unread_cap=MODEL_CAP)
        with srv.bin() as b:
            w.check_all(b)
            w.run(b, 5000, "after the snapshot")
        srv.kill9()  # the last 5000 only in the journal
        srv = d.start(unread_cap=MODEL_CAP)
        with srv.bin() as b, srv.resp() as r:
            w.check_all(b)
            info = info_flat(r.cmd("INFO", "persistence"))
            assert int(info["loaded_journal_records"]) > 0


test_state_survives_a_restart.timeout = 120
