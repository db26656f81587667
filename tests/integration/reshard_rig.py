"""Online resharding under load (issue 32; docs/OPERATIONS.md "Add a
shard", "Remove a shard", "A move was interrupted"): the data, the
writers and the model shared by test_reshard.py (the reduced run in make
test) and tests/faults/_reshard_full.py (make test-reshard-full). Not a
test file.

populate(cl, n)   users 1..n with state in every family (two counters
                  each, a conversation, groups, channels, dots, feeds,
                  RCPT groups keyed by the same id), global objects
                  published to every shard; routed by slot, pipelined.
snapshot(cl, us)  {uid: USER.INFO lines + RCPT.COUNT}: a user's whole
                  state as the server shows it, to compare before and
                  after a move.
Writers           build/reshard-writer processes (libunread, sync, async,
                  pipe, batch; a global GRP.POST writer) and a redis-py
                  RedisCluster writer (Debian's python3), each on its own
                  users, each keeping a model of its acknowledged writes
                  (reshard_writer.c's "U" lines).
check_model(...)  every writer user's state against the model: 0 lost,
                  0 doubled (an unknown outcome may count 0 or 1 times).

Python 3 standard library only.
"""

import os
import signal
import subprocess
import time

import harness
from harness import Resp, info_flat, is_err
from sentinel_rig import wait_until

WRITER = os.path.join(harness.BUILD, "reshard-writer")
DEBIAN_PY = "/usr/bin/python3"
BC_MAX = 200          # published on channel 60 (reshard_writer.c BC_MAX)
WRITER_GROUPS = [101, 102, 103, 104]  # posted by the global writer
WRITER_CONV, WRITER_CH, WRITER_TYPE = 50, 60, 2


def _crc_table():
    t = []
    for i in range(256):
        c = i << 8
        for _ in range(8):
            c = ((c << 1) ^ 0x1021) if c & 0x8000 else c << 1
        t.append(c & 0xFFFF)
    return t


_CRC = _crc_table()


def slot(key):
    """Redis Cluster's hash slot of key (no hash tags: ids only)."""
    crc = 0
    for b in str(key).encode():
        crc = ((crc << 8) & 0xFFFF) ^ _CRC[((crc >> 8) ^ b) & 0xFF]
    return crc % 16384


def slot_map(node):
    """[port of slot 0, ..., port of slot 16383] per node's CLUSTER SLOTS
    (None where no node serves)."""
    m = [None] * 16384
    for r in node.cmd("CLUSTER", "SLOTS"):
        for s in range(r[0], r[1] + 1):
            m[s] = r[2][1]
    return m


def routed(cl, cmds, via=None):
    """Runs cmds (each keyed by its first argument), each on the node
    serving its key, pipelined per node; the replies in cmds' order. A
    command answered MOVED (the map changed meanwhile: a failover) runs
    again on the new owner."""
    out = [None] * len(cmds)
    todo = list(range(len(cmds)))
    for _ in range(5):
        m = slot_map(via or cl.masters()[0])
        by = {}
        for i in todo:
            by.setdefault(m[slot(cmds[i][1])], []).append(i)
        for port, idx in by.items():
            with Resp(port, timeout=60) as c:
                for k in range(0, len(idx), 20000):
                    part = idx[k:k + 20000]
                    for i, r in zip(part,
                                    c.pipeline([cmds[i] for i in part])):
                        out[i] = r
        todo = [i for i in todo if is_err(out[i], "MOVED")]
        if not todo:
            break
        time.sleep(0.5)
    return out


def quiet(cl, timeout=60):
    """Every master's links have delivered the global copies queued, and
    no full sync of global objects is in progress (a promoted replica
    sends its objects to every primary)."""
    def delivered():
        for n in cl.masters():
            for k, v in info_flat(n.cmd("INFO", "cluster")).items():
                if k.startswith("cluster_peer") and (
                        "pending=0," not in v or
                        ("sync=" in v and "sync=no" not in v and
                         "sync=0" not in v)):
                    return False
        return True
    wait_until(delivered, timeout, "the global copies to be delivered")


def writer_users(i, per):
    """Writer i's users: [base, base + per)."""
    return 1 + i * per, per


def populate(cl, n, writers=6, per=500):
    """Users 1..n, state in every family; the writers' users (the first
    writers * per) also in channel 60 at its head and in the writer
    groups. Global objects are written to their owners and copied to
    every shard before this returns."""
    wusers = writers * per
    cmds = []
    for u in range(1, n + 1):
        cmds.append(["CNT.INCR", u, 0, u % 7 + 1])
        cmds.append(["CNT.INCR", u, 1, u % 5 + 1, "ID", 1000 + u])
        cmds.append(["CONV.SEQ", u, u % 3 + 1, u % 11 + 1])
        if u % 2 == 0:
            cmds.append(["GRP.JOIN", u, u % 4 + 1])
        if u % 3 == 0:
            cmds.append(["BC.UNREAD", u, u % 3 + 61])
        if u % 5 == 0:
            cmds.append(["DOT.CLICK", u, u % 2 + 20, 1000 + u])
        if u % 5 == 1:
            cmds.append(["FEED.FOLLOW", u, u % 3 + 30])
        if u % 10 == 0:  # RCPT group u: its state moves with slot(u)
            cmds.append(["RCPT.JOIN", u, u])
            cmds.append(["RCPT.JOIN", u, u + 1])
            cmds.append(["RCPT.SEND", u, 1, u])
        if u <= wusers:
            cmds.append(["BC.UNREAD", u, WRITER_CH])
            if u <= per:
                cmds.append(["GRP.JOIN", u] + WRITER_GROUPS)
    bad = [(c, r) for c, r in zip(cmds, routed(cl, cmds)) if is_err(r)]
    assert not bad, bad[:5]
    quiet(cl)
    glob = [["BC.PUBLISH", WRITER_CH]] * BC_MAX
    for ch in (61, 62, 63):
        glob += [["BC.PUBLISH", ch]] * 3
    for g in (1, 2, 3, 4):
        glob += [["GRP.POST", g, 5000 + g]] * 2
    glob += [["DOT.PUSH", 20, 5000], ["FEED.POST", 30, 2],
             ["FEED.POST", 31, 1]]
    bad = [(c, r) for c, r in zip(glob, routed(cl, glob)) if is_err(r)]
    assert not bad, bad[:5]
    quiet(cl)


def snapshot(cl, uids, skip=()):
    """{uid: [USER.INFO lines..., RCPT.COUNT uid 1]}; lines starting with
    a prefix in skip (the writers' families) left out."""
    uids = list(uids)
    cmds = [["USER.INFO", u] for u in uids]
    cmds += [["RCPT.COUNT", u, 1] for u in uids]
    r = routed(cl, cmds)
    out = {}
    for i, u in enumerate(uids):
        lines = r[i]
        assert isinstance(lines, list), (u, lines)
        # "rcpt G:" of another group G and the "rcpt:" total are the
        # memberships in the RCPT groups that happen to be on the user's
        # node: group state, checked with its own id (RCPT.COUNT G).
        keep = [x.decode() for x in lines
                if not x.decode().startswith(tuple(skip)) and
                (not x.startswith(b"rcpt") or
                 x.startswith(b"rcpt %d:" % u))]
        out[u] = keep + ["rcpt count %r" % (r[len(uids) + i],)]
    return out


def totals(cl, n, skip=()):
    """{uid: CNT.TOTAL} of users 1..n not in skip: cheap enough for every
    user (their counters: 2 types each)."""
    uids = [u for u in range(1, n + 1) if u not in skip]
    return dict(zip(uids, routed(cl, [["CNT.TOTAL", u] for u in uids])))


# The families' lines the writers change (their users are checked
# against the model instead).
WRITER_LINES = ("cnt:", "conv %d:" % WRITER_CONV, "conv:",
                "bc %d:" % WRITER_CH, "grp 10", "grp:", "cnt notice")


def diff(before, after, limit=5):
    """The users whose snapshots differ (at most limit shown)."""
    bad = [u for u in before if before[u] != after.get(u)]
    return len(bad), [(u, before[u], after.get(u)) for u in bad[:limit]]


# The redis-py writer: RedisCluster follows MOVED, ASK (with ASKING) and
# TRYAGAIN itself. Its CNT.INCRs carry a notice id (ID nid), so a retry
# redis-py makes after a lost reply counts once; it prints the same
# model lines as reshard_writer.c.
PY_WRITER = r"""
import signal, sys, time
import redis
from redis.cluster import RedisCluster, ClusterNode
import re
port, base, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
wait = len(sys.argv) > 4 and sys.argv[4] == "wait"
stop = []
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
rc = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", port)],
                  socket_timeout=3.0, socket_connect_timeout=1.0)
U = {u: [0, 0, 0, 0, 0, 0] for u in range(base, base + n)}
acked = unknown = refused = nerr = nbad = 0
ferr = fbad = ""
T = []
nid = 10**9
nxt = time.monotonic()
i = 0
def unk(e):
    return isinstance(e, (redis.exceptions.ConnectionError,
                          redis.exceptions.TimeoutError))
class NotReplicated(Exception):
    pass
class NotRun(Exception):
    pass
direct = {}
def conn(host, port):
    if (host, port) not in direct:
        direct[(host, port)] = redis.Redis(host=host, port=port,
                                           socket_timeout=3.0)
    return direct[(host, port)]
def call(*cmd):
    # Without wait: RedisCluster follows MOVED, ASK and TRYAGAIN. With
    # wait: the command and WAIT 1 100 in one round trip on the owner's
    # connection (ASKING first after an ASK), acknowledged only when a
    # replica has it.
    if not wait:
        return rc.execute_command(*cmd)
    node = rc.get_node_from_key(str(cmd[1]))
    r = conn(node.host, node.port)
    asking = False
    for _ in range(10):
        p = r.pipeline(transaction=False)
        if asking:
            p.execute_command("ASKING")
        p.execute_command(*cmd)
        p.execute_command("WAIT", 1, 100)
        res = p.execute(raise_on_error=False)
        if asking:
            res = res[1:]
        e = res[0]
        if isinstance(e, redis.exceptions.AskError) or (
                isinstance(e, redis.exceptions.ResponseError) and
                str(e).startswith("ASK ")):
            m = re.search(r"([0-9.]+):([0-9]+)", str(e))
            r, asking = conn(m.group(1), int(m.group(2))), True
            continue
        asking = False
        if isinstance(e, (redis.exceptions.MovedError,
                          redis.exceptions.TryAgainError,
                          redis.exceptions.ClusterDownError)) or (
                isinstance(e, redis.exceptions.ResponseError) and
                str(e).startswith(("CLUSTERDOWN", "TRYAGAIN", "MOVED"))):
            # (a plain connection's pipeline does not map the cluster
            # errors to their classes)
            time.sleep(0.02)
            rc.nodes_manager.initialize()
            node = rc.get_node_from_key(str(cmd[1]))
            r = conn(node.host, node.port)
            continue
        if isinstance(e, Exception):
            raise e
        if cmd[0] != "CNT.GET" and not (isinstance(res[1], int) and
                                        res[1] >= 1):
            raise NotReplicated()
        return e
    raise NotRun()
while not stop:
    now = time.monotonic()
    if now >= nxt:
        T.append((int(now * 1000), acked)); nxt += 0.1
    uid = base + i % n
    u = U[uid]
    k = (i // n) % 4
    i += 1
    try:
        if k == 0:
            nid += 1
            call("CNT.INCR", uid, 2, 1, "ID", nid)
            u[0] += 1; acked += 1
        elif k == 1:
            u[3] += 1
            call("CONV.SEQ", uid, 50, u[3])
            u[2] = u[3]; acked += 1
        elif k == 2:
            if u[5] >= 200: continue
            u[5] += 1
            call("BC.READ", uid, 60, u[5])
            u[4] = u[5]; acked += 1
        else:
            v = call("CNT.GET", uid, 2)
            if not (u[0] <= v <= u[0] + u[1]):
                nbad += 1
                fbad = fbad or "CNT.GET %d 2 = %r, acknowledged %d, unknown %d" % (uid, v, u[0], u[1])
    except (NotRun, redis.exceptions.ClusterDownError):
        # not run: a failover in progress (CLUSTERDOWN after redis-py's
        # own retries)
        refused += 1
        time.sleep(0.05)
    except Exception as e:
        if unk(e) or isinstance(e, NotReplicated):
            if unk(e):
                time.sleep(0.05)
                try:
                    rc.nodes_manager.initialize()
                except Exception:
                    pass
            unknown += 1
            if k == 0: u[1] += 1
        else:
            nerr += 1
            ferr = ferr or "%s uid %d: %r" % (("CNT.INCR", "CONV.SEQ", "BC.READ", "CNT.GET")[k], uid, e)
out = sys.stdout
for uid, u in U.items():
    out.write("U %d %s\n" % (uid, " ".join(map(str, u))))
for t in T:
    out.write("T %d %d\n" % t)
out.write("E %d %s\nX %d %s\nN %d\nF %d\nEND\n" % (nerr, ferr, nbad, fbad, unknown, refused))
"""


class Writer:
    """One writer process; its output (the model) read at stop()."""

    def __init__(self, name, argv, path, nice=0):
        self.name = name
        self.path = path
        if nice:  # below the servers and redis-cli on a busy machine
            argv = ["nice", "-n", str(nice)] + argv
        self.proc = subprocess.Popen(argv, stdout=open(path, "w"),
                                     stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        self.users = {}
        self.samples = []
        self.errors = self.bad = self.unknown = self.refused = 0
        self.first_error = self.first_bad = ""
        self.global_ = False

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("writer %s ignored SIGTERM" % self.name)
        text = open(self.path, errors="replace").read()
        assert self.proc.returncode == 0 and text.endswith("END\n"), \
            "writer %s exited with %s:\n%s" % (self.name,
                                               self.proc.returncode,
                                               text[-3000:])
        for line in text.splitlines():
            w = line.split(" ", 2)
            if w[0] == "U":
                f = [int(x) for x in line.split()[1:]]
                self.users[f[0]] = f[1:]
            elif w[0] == "T":
                self.samples.append((int(w[1]), int(w[2])))
            elif w[0] == "E":
                self.errors = int(w[1])
                self.first_error = w[2] if len(w) > 2 else ""
            elif w[0] == "X":
                self.bad = int(w[1])
                self.first_bad = w[2] if len(w) > 2 else ""
            elif w[0] == "N":
                self.unknown = int(w[1])
            elif w[0] == "F":
                self.refused = int(w[1])
        return self


def stop_writers(writers):
    """Stops every writer (all of them, even when one fails), then
    raises the first failure."""
    first = None
    for w in writers:
        try:
            w.stop()
        except BaseException as e:  # noqa: B902 - re-raised below
            first = first or e
    if first is not None:
        raise first


def start_writers(cl, tmp, modes=("sync", "async", "pipe", "batch"),
                  per=500, py=1, wait=False, nice=0):
    """The writers: one per libunread mode, py redis-py ones, and the
    global GRP.POST writer; writer i writes users writer_users(i, per).
    wait: each write acknowledged only once a replica has it (WAIT 1
    100), for the runs that kill a primary. nice: the writers' niceness
    (make test: the move is what is measured, on a busy machine)."""
    extra = ["100", "wait"] if wait else []
    seeds = ",".join(n.addr() for n in cl.masters())
    out = []
    i = 0
    for mode in modes:
        base, n = writer_users(i, per)
        out.append(Writer(mode, [WRITER, mode, seeds, str(base), str(n)] +
                          extra,
                          os.path.join(tmp, "writer-%s.out" % mode), nice))
        i += 1
    script = os.path.join(tmp, "pywriter.py")
    with open(script, "w") as f:
        f.write(PY_WRITER)
    for k in range(py):
        base, n = writer_users(i, per)
        out.append(Writer("redis-py%d" % k,
                          [DEBIAN_PY, script, str(cl.masters()[0].port),
                           str(base), str(n)] + extra[1:],
                          os.path.join(tmp, "writer-py%d.out" % k), nice))
        i += 1
    g = Writer("global", [WRITER, "global", seeds, str(WRITER_GROUPS[0]),
                          str(len(WRITER_GROUPS))] + extra,
               os.path.join(tmp, "writer-global.out"), nice)
    g.global_ = True
    out.append(g)
    return out


def check_model(cl, writers, allow_refused=False, per=500):
    """Every writer user's state against its writer's model; the writers'
    own errors and inexact reads. Returns a list of problems (empty when
    0 lost, 0 doubled, no error)."""
    problems = []
    posts = {}
    for w in writers:
        if w.errors:
            problems.append("%s: %d errors, first: %s" % (
                w.name, w.errors, w.first_error))
        if w.bad:
            problems.append("%s: %d inexact reads, first: %s" % (
                w.name, w.bad, w.first_bad))
        if w.refused and not allow_refused:
            problems.append("%s: %d writes not sent" % (w.name, w.refused))
        if w.global_:
            posts = w.users
    uids, want = [], []
    for w in writers:
        if w.global_:
            continue
        for uid, (c_ack, c_unk, v_ack, v_try, b_ack, b_try) in \
                w.users.items():
            uids.append(uid)
            want.append((w.name, c_ack, c_unk, v_ack, v_try, b_ack, b_try))
    cmds = []
    for u in uids:
        cmds += [["CNT.GET", u, WRITER_TYPE], ["CONV.GET", u, WRITER_CONV],
                 ["BC.UNREAD", u, WRITER_CH], ["CNT.GET", u, 0],
                 ["CNT.GET", u, 1]]
    r = routed(cl, cmds)
    lost = doubled = 0
    for i, u in enumerate(uids):
        name, c_ack, c_unk, v_ack, v_try, b_ack, b_try = want[i]
        cnt, conv, bc, c0, c1 = r[5 * i:5 * i + 5]
        facts = []
        if not isinstance(cnt, int) or cnt < c_ack:
            lost += 1
            facts.append("CNT %r < acknowledged %d" % (cnt, c_ack))
        elif cnt > c_ack + c_unk:
            doubled += 1
            facts.append("CNT %d > acknowledged %d + unknown %d" % (
                cnt, c_ack, c_unk))
        if not isinstance(conv, int) or not v_ack <= conv <= v_try:
            lost += 1
            facts.append("CONV unread %r not in [%d, %d]" % (
                conv, v_ack, v_try))
        if not isinstance(bc, int) or not \
                BC_MAX - b_try <= bc <= BC_MAX - b_ack:
            lost += 1
            facts.append("BC unread %r not in [%d, %d]" % (
                bc, BC_MAX - b_try, BC_MAX - b_ack))
        if (c0, c1) != (u % 7 + 1, u % 5 + 1):
            lost += 1
            facts.append("populated counters %r %r" % (c0, c1))
        if facts and len(problems) < 20:
            problems.append("%s user %d: %s" % (name, u, "; ".join(facts)))
    # The global writer's posts: every member of a writer group (users
    # 1..per) counts each post once, on every shard.
    quiet(cl)
    members = [u for u in uids if u <= per]
    cmds = [["GRP.UNREAD", u, g] for u in members for g in WRITER_GROUPS]
    r = routed(cl, cmds)
    for (cmd, got) in zip(cmds, r):
        g = cmd[2]
        ack, unk = posts[g][0], posts[g][1]
        if not isinstance(got, int) or not ack <= got <= ack + unk:
            if isinstance(got, int) and got > ack + unk:
                doubled += 1
            else:
                lost += 1
            if len(problems) < 40:
                problems.append("GRP.UNREAD %d %d = %r, posts acknowledged "
                                "%d unknown %d" % (cmd[1], g, got, ack, unk))
    if lost or doubled:
        problems.insert(0, "%d lost, %d doubled over %d users" % (
            lost, doubled, len(uids)))
    return problems


def rates(writers, t0, t1):
    """Writes acknowledged per second, all writers: before t0 (from one
    second after the writers started) and between t0 and t1 (monotonic
    ms)."""
    def rate(a, b):
        n = 0
        for w in writers:
            s = [x for x in w.samples if a <= x[0] <= b]
            if len(s) >= 2:
                n += s[-1][1] - s[0][1]
        return n * 1000.0 / max(1, b - a)
    start = min(w.samples[0][0] for w in writers if w.samples) + 1000
    return rate(start, t0), rate(t0, t1)


def now_ms():
    return int(time.monotonic() * 1000)


def moved_users(before, after, n, to=None):
    """How many of users 1..n changed owner between two slot maps (to:
    only those that went to the node of that port: a failover changes
    owners too)."""
    return sum(1 for u in range(1, n + 1)
               if before[slot(u)] != after[slot(u)] and
               (to is None or after[slot(u)] == to))


def count_keys(node, slots=None):
    """COUNTKEYSINSLOT summed over slots (default: those node serves),
    pipelined."""
    from cluster_rig import slots_of
    slots = sorted(slots_of(node) if slots is None else slots)
    with Resp(node.port, timeout=60) as c:
        r = c.pipeline([["CLUSTER", "COUNTKEYSINSLOT", s] for s in slots])
    bad = [x for x in r if not isinstance(x, int)]
    assert not bad, bad[:3]
    return sum(r)


def known_everywhere(cl, node_id):
    def known():
        return all(any(x["id"] == node_id for x in n.nodes())
                   for n in cl.live())
    wait_until(known, 30, "node %s known to every node" % node_id)


def check_clean(cl, node):
    """redis-cli --cluster check: agreement, full coverage, no slot left
    open."""
    out = cl.cli("--cluster", "check", node.addr(), check=False)
    assert "[OK] All nodes agree about slots configuration." in out, out
    assert "[OK] All 16384 slots covered." in out, out
    assert "[WARNING]" not in out and "[ERR]" not in out, out
    return out
