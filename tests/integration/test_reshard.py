"""Online resharding (issue 32): the parts that run today. DUMP and
RESTORE of one user's whole record as redis-cli's moves use them, and
bad records refused with nothing applied. The rebalance under load, the
removal of a shard, the clients following ASK/TRYAGAIN and bad SETSLOT
/ MIGRATE input are in reshard_pending.py until the cluster side lands.
"""

import reshard_rig as rr
from cluster_rig import Cluster
from harness import is_err
from reshard_pending import two_uids_of_one_slot


def test_bad_records():
    with Cluster(masters=3, replicas=0, unread_cap=1000000) as cl:
        u, v, s = two_uids_of_one_slot(9000000)
        rr.routed(cl, [["CNT.INCR", u, 0, 4], ["CONV.SEQ", u, 1, 9],
                       ["CNT.INCR", v, 1, 2]])
        m = rr.slot_map(cl.nodes[0])
        src = [n for n in cl.masters() if n.port == m[s]][0]
        dst, third = [n for n in cl.masters() if n is not src]
        info0 = src.cmd("USER.INFO", u)

        # DUMP / RESTORE: a truncated or corrupt record refused, nothing
        # applied; a user that exists needs REPLACE (BUSYKEY).
        w = [x for x in range(9000000, 9400000)
             if rr.slot(x) == s and x not in (u, v)][0]  # no such user
        rec = src.cmd("DUMP", u)
        assert isinstance(rec, bytes) and len(rec) > 10, rec
        assert src.cmd("DUMP", w) is None
        for bad in (rec[:-1], rec[:len(rec) // 2], b"",
                    rec[:8] + bytes([rec[8] ^ 0xFF]) + rec[9:],
                    rec[:-1] + bytes([rec[-1] ^ 0x01]), b"junk" * 10):
            r = src.cmd("RESTORE", w, 0, bad)
            assert is_err(r), (bad, r)
            r = src.cmd("RESTORE", u, 0, bad, "REPLACE")
            assert is_err(r), (bad, r)
        assert src.cmd("DUMP", w) is None
        assert src.cmd("USER.INFO", u) == info0
        r = src.cmd("RESTORE", u, 0, rec)
        assert is_err(r, "BUSYKEY"), r
        assert src.cmd("USER.INFO", u) == info0
        for bad in ((), (u,), (u, 0), (u, "x", rec), (u, 0, rec, "JUNK")):
            assert is_err(src.cmd("RESTORE", *bad)), bad
        assert is_err(src.cmd("DUMP"))
        # RESTORE of a user whose slot is another node's: MOVED.
        r = dst.cmd("RESTORE", u, 0, rec, "REPLACE")
        assert is_err(r, "MOVED"), r
        # A good REPLACE: u's state as it was dumped, whole.
        src.cmd("CNT.INCR", u, 0, 10)
        src.cmd("CONV.SEQ", u, 2, 3)
        assert src.cmd("RESTORE", u, 0, rec, "REPLACE") == "OK"
        assert src.cmd("USER.INFO", u) == info0
        assert src.cmd("CNT.GET", u, 0) == 4
        assert src.cmd("CNT.GET", v, 1) == 2
