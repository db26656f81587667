"""CNT: typed counters per user, over RESP multibulk, inline and binary.

Each behaviour is checked once per way in (test names end in _resp, _inline,
_binary); the randomized test interleaves all three on the same uids
against a Python model.
"""

import os
import random

from harness import (E, U32_MAX, ID_MAX, U64_MAX, TYPE_NAMES, Err, Server,
                     assert_err, is_err)

TYPE_NUM = {n: i for i, n in enumerate(TYPE_NAMES)}


class Via:
    """Sends a command by one of the three ways in. Arguments are given as
    text would give them (names allowed); the binary way turns names and
    decimals into u64 integer arguments."""

    def __init__(self, srv, kind):
        self.kind = kind
        self.c = srv.bin() if kind == "binary" else srv.resp()

    def __call__(self, name, *args):
        if self.kind == "resp":
            return self.c.cmd(name, *args)
        if self.kind == "inline":
            return self.c.inline(" ".join(str(a) for a in (name,) + args))
        out = []
        for a in args:
            if isinstance(a, str) and a in TYPE_NUM:
                a = TYPE_NUM[a]
            elif isinstance(a, str) and a.isdigit() and int(a) < 1 << 64:
                a = int(a)
            out.append(a)
        return self.c.call(name, *out)

    def bad(self, reply, text_prefix="ERR", code=E["BADARG"]):
        if self.kind == "binary":
            assert_err(reply, None, code)
        else:
            assert_err(reply, text_prefix)

    def close(self):
        self.c.close()


def each_way(fn):
    """Defines fn_resp, fn_inline and fn_binary tests from fn(via)."""
    g = fn.__globals__
    for kind in ("resp", "inline", "binary"):
        def test(kind=kind):
            with Server() as srv:
                via = Via(srv, kind)
                try:
                    fn(via)
                finally:
                    via.close()
        test.__name__ = "%s_%s" % (fn.__name__, kind)
        test.__qualname__ = test.__name__
        test.__module__ = fn.__module__
        test.order_line = fn.__code__.co_firstlineno
        g[test.__name__] = test
    return None


# --------------------------------------------------------------------------


@each_way
def test_incr_returns_value_and_total(cnt):
    assert cnt("CNT.INCR", 42, "mention") == [1, 1]
    assert cnt("CNT.INCR", 42, "mention", 4) == [5, 5]
    assert cnt("CNT.INCR", 42, 3, 2) == [2, 7]
    assert cnt("CNT.INCR", 42, "dm") == [3, 8]  # dm is type 3
    assert cnt("CNT.INCR", 43, 0) == [1, 1]  # another user, own total


@each_way
def test_names_and_numbers_are_the_same_types(cnt):
    for i, name in enumerate(TYPE_NAMES):
        assert cnt("CNT.INCR", 7, name, i + 1) == [i + 1, sum(range(i + 2))]
        assert cnt("CNT.GET", 7, i) == i + 1
        assert cnt("CNT.GET", 7, name) == i + 1
    assert cnt("CNT.GETALL", 7) == [0, 1, 1, 2, 2, 3, 3, 4, 4, 5]


@each_way
def test_decr_floors_at_zero(cnt):
    assert cnt("CNT.SET", 5, "comment", 5) == [5, 5]
    assert cnt("CNT.INCR", 5, "like", 10) == [10, 15]
    assert cnt("CNT.DECR", 5, "comment", 2) == [3, 13]
    assert cnt("CNT.DECR", 5, "comment") == [2, 12]
    assert cnt("CNT.DECR", 5, "comment", 100) == [0, 10]
    assert cnt("CNT.DECR", 5, "comment") == [0, 10]
    assert cnt("CNT.DECR", 6, 9) == [0, 0]  # never-seen user
    assert cnt("CNT.GETALL", 5) == [2, 10]


@each_way
def test_set_reconciles_and_zero_removes(cnt):
    assert cnt("CNT.SET", 9, "like", 9) == [9, 9]
    assert cnt("CNT.SET", 9, 63, 1) == [1, 10]
    assert cnt("CNT.SET", 9, "like", 4) == [4, 5]
    assert cnt("CNT.SET", 9, "like", 0) == [0, 1]
    assert cnt("CNT.GETALL", 9) == [63, 1]
    assert cnt("CNT.SET", 9, 63, 0) == [0, 0]
    assert cnt("CNT.GETALL", 9) == []
    assert cnt("CNT.TOTAL", 9) == 0


@each_way
def test_get_of_unknown_user_and_type_is_zero(cnt):
    assert cnt("CNT.GET", 12345, "mention") == 0
    assert cnt("CNT.GET", 12345, 63) == 0
    assert cnt("CNT.TOTAL", 12345) == 0
    assert cnt("CNT.GETALL", 12345) == []


@each_way
def test_getall_lists_nonzero_types_ascending(cnt):
    for t, v in ((63, 2), (0, 1), (17, 3), (5, 4), (1, 5)):
        cnt("CNT.SET", 77, t, v)
    cnt("CNT.SET", 77, 17, 0)
    cnt("CNT.INCR", 77, 40)
    cnt("CNT.DECR", 77, 40)
    assert cnt("CNT.GETALL", 77) == [0, 1, 1, 5, 5, 4, 63, 2]
    assert cnt("CNT.TOTAL", 77) == 12


@each_way
def test_clear_all_and_some_types(cnt):
    for t in range(6):
        cnt("CNT.SET", 3, t, t + 1)  # total 21
    assert cnt("CNT.CLEAR", 3, "mention") == 20
    assert cnt("CNT.CLEAR", 3, 1, "like") == 15
    assert cnt("CNT.CLEAR", 3, 40) == 15  # zero type: nothing changes
    assert cnt("CNT.GETALL", 3) == [3, 4, 4, 5, 5, 6]
    assert cnt("CNT.CLEAR", 3) == 0
    assert cnt("CNT.GETALL", 3) == []
    assert cnt("CNT.CLEAR", 3) == 0
    assert cnt("CNT.CLEAR", 999) == 0  # never-seen user


@each_way
def test_incr_saturates_at_u32_max(cnt):
    assert cnt("CNT.SET", 1, 0, U32_MAX - 1) == [U32_MAX - 1, U32_MAX - 1]
    assert cnt("CNT.INCR", 1, 0, 5) == [U32_MAX, U32_MAX]
    assert cnt("CNT.INCR", 1, 0) == [U32_MAX, U32_MAX]
    assert cnt("CNT.INCR", 1, 1, U32_MAX) == [U32_MAX, 2 * U32_MAX]
    assert cnt("CNT.INCR", 1, 1, U32_MAX) == [U32_MAX, 2 * U32_MAX]
    assert cnt("CNT.DECR", 1, 0, U32_MAX) == [0, U32_MAX]


@each_way
def test_total_of_64_saturated_types_exceeds_u32(cnt):
    for t in range(64):
        assert cnt("CNT.SET", 2, t, U32_MAX)[0] == U32_MAX
    assert cnt("CNT.TOTAL", 2) == 64 * U32_MAX
    assert len(cnt("CNT.GETALL", 2)) == 128
    assert cnt("CNT.INCR", 2, 63) == [U32_MAX, 64 * U32_MAX]
    assert cnt("CNT.CLEAR", 2, *range(0, 64, 2)) == 32 * U32_MAX


@each_way
def test_set_rejects_value_over_u32(cnt):
    assert cnt("CNT.SET", 4, 0, U32_MAX) == [U32_MAX, U32_MAX]
    cnt.bad(cnt("CNT.SET", 4, 0, U32_MAX + 1))
    cnt.bad(cnt("CNT.SET", 4, 0, "-1"))
    cnt.bad(cnt("CNT.SET", 4, 0, "x"))
    assert cnt("CNT.GET", 4, 0) == U32_MAX  # unchanged by the bad writes


@each_way
def test_uid_range_is_u64(cnt):
    assert cnt("CNT.INCR", ID_MAX, 0) == [1, 1]
    assert cnt("CNT.INCR", 0, 0, 2) == [2, 2]
    assert cnt("CNT.TOTAL", ID_MAX) == 1
    assert cnt("CNT.TOTAL", 0) == 2
    for bad in (str(ID_MAX + 1), "-1", "abc", "1.5", "99999999999999999999999",
                "0x10", "+1", "1e3"):
        r = cnt("CNT.INCR", bad, 0)
        cnt.bad(r, "ERR uid must be")
    assert cnt("CNT.TOTAL", ID_MAX) == 1
    assert cnt("CNT.TOTAL", 0) == 2


@each_way
def test_type_must_be_0_to_63_or_a_name(cnt):
    assert cnt("CNT.INCR", 8, 63) == [1, 1]
    for bad in ("64", "-1", "1000", "18446744073709551616"):
        cnt.bad(cnt("CNT.INCR", 8, bad))
    if cnt.kind != "binary":  # names are a text-protocol feature
        cnt.bad(cnt("CNT.INCR", 8, "nosuchtype"), "ERR unknown counter type")
        cnt.bad(cnt("CNT.CLEAR", 8, 63, "nosuchtype"))
    cnt.bad(cnt("CNT.GET", 8, 64))
    cnt.bad(cnt("CNT.CLEAR", 8, 63, 64))
    # A rejected CLEAR clears nothing.
    assert cnt("CNT.GETALL", 8) == [63, 1]


@each_way
def test_wrong_arity_is_an_error_for_every_cnt_command(cnt):
    too_few = {"CNT.INCR": [1], "CNT.DECR": [1], "CNT.SET": [1, 0],
               "CNT.GET": [1], "CNT.GETALL": [], "CNT.TOTAL": [],
               "CNT.CLEAR": []}
    too_many = {"CNT.INCR": [1, 0, 1, "ID", 1, 1], "CNT.DECR": [1, 0, 1, 1],
                "CNT.SET": [1, 0, 1, 1], "CNT.GET": [1, 0, 1],
                "CNT.GETALL": [1, 0], "CNT.TOTAL": [1, "WITHEXPIRY", 0]}
    for table in (too_few, too_many):
        for name, args in table.items():
            r = cnt(name, *args)
            cnt.bad(r, "ERR wrong number of arguments for '%s'" % name,
                    E["ARITY"])
    assert cnt("CNT.GETALL", 1) == []  # nothing was written


def test_command_names_are_case_insensitive():
    with Server() as srv, srv.resp() as c:
        assert c.cmd("cnt.incr", 1, "mention") == [1, 1]
        assert c.cmd("Cnt.Incr", 1, "mention") == [2, 2]
        assert c.inline("cnt.total 1") == 2


def test_counter_types_config_renames_types():
    with Server(counter_types="alpha beta gamma") as srv, srv.resp() as c:
        assert c.cmd("CNT.INCR", 1, "gamma") == [1, 1]
        assert c.cmd("CNT.GETALL", 1) == [2, 1]
        assert_err(c.cmd("CNT.INCR", 1, "mention"), "ERR unknown counter type")


def test_state_is_shared_between_protocols():
    with Server() as srv, srv.resp() as r, srv.bin() as b:
        assert r.cmd("CNT.INCR", 100, "dm", 2) == [2, 2]
        assert b.call("CNT.INCR", 100, 3, 3) == [5, 5]
        assert r.inline("CNT.INCR 100 dm") == [6, 6]
        assert b.call("CNT.GETALL", 100) == [3, 6]
        assert r.cmd("CNT.GET", 100, 3) == 6


# --------------------------------------------------------------------------
# The randomized model test.


class Model:
    def __init__(self):
        self.users = {}

    def get(self, uid, t):
        return self.users.get(uid, {}).get(t, 0)

    def put(self, uid, t, v):
        u = self.users.setdefault(uid, {})
        if v:
            u[t] = v
        else:
            u.pop(t, None)

    def total(self, uid):
        return sum(self.users.get(uid, {}).values())

    def getall(self, uid):
        return [x for t in sorted(self.users.get(uid, {}))
                for x in (t, self.users[uid][t])]


def test_random_ops_match_model_across_protocols():
    seed = int(os.environ.get("UNREADD_TEST_SEED", "20240607"))
    rng = random.Random(seed)
    m = Model()
    with Server() as srv:
        ways = [Via(srv, k) for k in ("resp", "inline", "binary")]
        uids = [0, 1, 2, ID_MAX] + [rng.randrange(1 << 63) for _ in range(8)]

        def typ(via):
            t = rng.choice([0, 1, 2, 3, 4, 5, 6, 31, 62, 63])
            if via.kind != "binary" and t < 5 and rng.random() < 0.5:
                return t, TYPE_NAMES[t]
            return t, t

        def delta():
            r = rng.random()
            if r < 0.03:
                return U32_MAX
            if r < 0.06:
                return 1 << 31
            return rng.randint(1, 5)

        for i in range(2000):
            via = rng.choice(ways)
            uid = rng.choice(uids)
            op = rng.random()
            where = "op %d (seed %d, %s)" % (i, seed, via.kind)
            if op < 0.35:
                t, targ = typ(via)
                if rng.random() < 0.5:
                    r = via("CNT.INCR", uid, targ)
                    d = 1
                else:
                    d = delta()
                    r = via("CNT.INCR", uid, targ, d)
                m.put(uid, t, min(U32_MAX, m.get(uid, t) + d))
                assert r == [m.get(uid, t), m.total(uid)], (where, r)
            elif op < 0.55:
                t, targ = typ(via)
                d = delta()
                r = via("CNT.DECR", uid, targ, d)
                m.put(uid, t, max(0, m.get(uid, t) - d))
                assert r == [m.get(uid, t), m.total(uid)], (where, r)
            elif op < 0.65:
                t, targ = typ(via)
                v = rng.choice([0, 1, 2, 10, U32_MAX, rng.randrange(U32_MAX)])
                r = via("CNT.SET", uid, targ, v)
                m.put(uid, t, v)
                assert r == [v, m.total(uid)], (where, r)
            elif op < 0.75:
                t, targ = typ(via)
                assert via("CNT.GET", uid, targ) == m.get(uid, t), where
            elif op < 0.83:
                assert via("CNT.GETALL", uid) == m.getall(uid), where
            elif op < 0.91:
                assert via("CNT.TOTAL", uid) == m.total(uid), where
            else:
                if rng.random() < 0.3:
                    r = via("CNT.CLEAR", uid)
                    m.users.pop(uid, None)
                else:
                    picks = {}
                    for _ in range(rng.randint(1, 3)):
                        t, targ = typ(via)
                        picks[t] = targ
                    r = via("CNT.CLEAR", uid, *picks.values())
                    for t in picks:
                        m.put(uid, t, 0)
                assert r == m.total(uid), (where, r)

        # Every user, read back every way: parts, GETALL and TOTAL agree.
        for via in ways:
            for uid in uids:
                flat = via("CNT.GETALL", uid)
                assert flat == m.getall(uid), (via.kind, uid)
                assert via("CNT.TOTAL", uid) == sum(flat[1::2])
        for via in ways:
            via.close()


test_random_ops_match_model_across_protocols.timeout = 120


def test_errors_do_not_change_state():
    with Server() as srv, srv.resp() as c:
        c.cmd("CNT.SET", 50, 0, 5)
        bad = [("CNT.INCR", 50), ("CNT.INCR", 50, 64), ("CNT.INCR", 50, 0, "x"),
               ("CNT.SET", 50, 0, U32_MAX + 1), ("CNT.CLEAR", 50, 0, "nosuch"),
               ("CNT.DECR", "x", 0)]
        for args in bad:
            assert is_err(c.cmd(*args)), args
        assert c.cmd("CNT.GETALL", 50) == [0, 5]
        assert not isinstance(c.cmd("CNT.TOTAL", 50), Err)
