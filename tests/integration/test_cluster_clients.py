"""Redis Cluster clients with their default options against a 3-primary,
3-replica unreadd cluster made by `redis-cli --cluster create`: redis-py's
RedisCluster (Debian's python3-redis), ioredis's Cluster and node-redis's
createCluster (npm, cached under build/node-clients as test_clients.py
does; skipped with a message when npm cannot fetch them), and libunread
in cluster mode (build/cluster_client, sync and async). Each runs the
same random commands of every family, and every answer must equal what
one server holding the same data answers (a differential test).

Global writes are copied by their owner to the other shards
asynchronously (docs/OPERATIONS.md "What a global write promises"), so
the commands run in phases: global writes, then (once every link has
delivered its copies) user commands, and again.
"""

import json
import os
import random
import subprocess

from harness import Resp, Server, info_flat, is_err
from cluster_rig import Cluster
from sentinel_rig import wait_until
import test_clients

PY = "/usr/bin/python3"  # Debian's, with python3-redis

USERS = [3, 17, 42, 1001, 77777, 123456789, 9000000001, 5, 6, 8]
GROUPS = [1, 2, 3, 4]
CHANNELS = [10, 11, 12]
DOTS = [20, 21, 22]
AUTHORS = [30, 31, 32, 33]


def phases(seed, n=6, per=150):
    """[(kind, [command, ...]), ...]: 'global' phases of global writes,
    'user' phases of everything else."""
    rng = random.Random(seed)
    u = lambda: rng.choice(USERS)  # noqa: E731
    g = lambda: rng.choice(GROUPS)  # noqa: E731
    posts = {gid: 0 for gid in GROUPS}
    out = []
    ts = 1000
    for p in range(n):
        if p % 2 == 0:
            cmds = []
            for _ in range(per // 3):
                ts += 10
                k = rng.randrange(6)
                if k == 0:
                    cmds.append(["BC.PUBLISH", rng.choice(CHANNELS)])
                elif k == 1:
                    gid = g()
                    posts[gid] += 1
                    cmds.append(["GRP.POST", gid, ts])
                elif k == 2 and any(posts.values()):
                    gid = rng.choice([x for x in GROUPS if posts[x]])
                    cmds.append(["GRP.RECALL", gid,
                                 rng.randint(1, posts[gid])])
                elif k == 3:
                    cmds.append(["DOT.PUSH", rng.choice(DOTS), ts])
                elif k == 4:
                    cmds.append(["FEED.POST", rng.choice(AUTHORS),
                                 rng.randint(1, 3)])
                else:
                    cmds.append(["FEED.UNPOST", rng.choice(AUTHORS)])
            out.append(("global", cmds))
            continue
        cmds = []
        for _ in range(per):
            ts += 10
            k = rng.randrange(26)
            uid = u()
            c = {
                0: ["CNT.INCR", uid, rng.randrange(5), rng.randint(1, 4)],
                1: ["CNT.DECR", uid, rng.randrange(5)],
                2: ["CNT.GETALL", uid],
                3: ["CNT.TOTAL", uid],
                4: ["CONV.SEQ", uid, rng.randrange(4), rng.randint(1, 30)],
                5: ["CONV.READ", uid, rng.randrange(4)],
                6: ["CONV.LIST", uid],
                7: ["CONV.TOTAL", uid],
                8: ["GRP.JOIN", uid, g()],
                9: ["GRP.SEEN", uid, g()],
                10: ["GRP.UNREAD", uid, g()],
                11: ["GRP.TOTAL", uid],
                12: ["BC.UNREAD", uid, rng.choice(CHANNELS)],
                13: ["BC.READ", uid, rng.choice(CHANNELS)],
                14: ["DOT.CLICK", uid, rng.choice(DOTS), ts],
                15: ["DOT.CHECK", uid] + DOTS,
                16: ["FEED.FOLLOW", uid, rng.choice(AUTHORS)],
                17: ["FEED.UNREAD", uid],
                18: ["FEED.RESET", uid],
                19: ["RCPT.JOIN", g(), uid],
                20: ["RCPT.SEND", g(), rng.randint(1, 20), uid],
                21: ["RCPT.COUNT", g(), rng.randint(1, 20)],
                22: ["USER.BADGE", uid],
                23: ["GRP.LIST", uid],
                24: ["CNT.CLEAR", uid],
                25: ["FEED.UNFOLLOW", uid, rng.choice(AUTHORS)],
            }[k]
            cmds.append(c)
        out.append(("user", cmds))
    return out


def norm(v):
    """A reply as JSON-able values: bytes as str, an error as {"err": 1}
    (clients word their errors each their own way)."""
    if is_err(v):
        return {"err": 1}
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, list):
        return [norm(x) for x in v]
    return v


def reference(ph):
    """What one server answers."""
    out = []
    with Server() as srv, Resp(srv.port) as c:
        for _, cmds in ph:
            out.append([norm(c.cmd(*cmd)) for cmd in cmds])
    return out


def quiet(cl):
    """Every master's links have delivered everything queued."""
    def delivered():
        for n in cl.masters():
            for k, v in info_flat(n.cmd("INFO", "cluster")).items():
                if k.startswith("cluster_peer") and "pending=0," not in v:
                    return False
        return True
    wait_until(delivered, 10, "the global copies to be delivered")


REDIS_PY = r'''
import json, sys
from redis.cluster import RedisCluster, ClusterNode
from redis.exceptions import ResponseError
port, path = int(sys.argv[1]), sys.argv[2]
rc = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", port)])
out = []
for cmd in json.load(open(path)):
    try:
        out.append(rc.execute_command(*cmd))
    except ResponseError as e:
        out.append({"err": 1})
def norm(v):
    if isinstance(v, bytes): return v.decode()
    if isinstance(v, list): return [norm(x) for x in v]
    return v
print(json.dumps([norm(v) for v in out]))
'''

NODE_CLUSTER_JS = r'''
import fs from 'node:fs';
import { createCluster } from 'redis';
import Redis from 'ioredis';
const [port, path, which] = [Number(process.argv[2]), process.argv[3], process.argv[4]];
const cmds = JSON.parse(fs.readFileSync(path)).map(c => c.map(String));
const READS = /^(CNT\.(GET|GETALL|TOTAL)|CONV\.(LIST|TOTAL)|GRP\.(UNREAD|TOTAL|LIST)|DOT\.CHECK|FEED\.UNREAD|RCPT\.COUNT|USER\.BADGE)$/;
const out = [];
function norm(v) {
  if (v instanceof Error) return { err: 1 };
  if (Array.isArray(v)) return v.map(norm);
  if (Buffer.isBuffer(v)) return v.toString();
  if (v === undefined) return null;
  return v;
}
if (which === 'ioredis') {
  const c = new Redis.Cluster([{ host: '127.0.0.1', port }]);
  for (const cmd of cmds) {
    try { out.push(norm(await c.call(...cmd))); } catch (e) { out.push(norm(e)); }
  }
  c.disconnect();
} else {
  const c = createCluster({ rootNodes: [{ url: `redis://127.0.0.1:${port}` }] });
  c.on('error', e => { console.error('node-redis', e); });
  await c.connect();
  for (const cmd of cmds) {
    try { out.push(norm(await c.sendCommand(cmd[1], READS.test(cmd[0]), cmd))); }
    catch (e) { out.push(norm(e)); }
  }
  await c.close();
}
console.log(JSON.stringify(out));
'''


def run_client(argv, cwd=None):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                       cwd=cwd)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def differential(cl, ph, want, runner, tmp):
    for i, (kind, cmds) in enumerate(ph):
        path = os.path.join(tmp, "phase%d.json" % i)
        with open(path, "w") as f:
            json.dump(cmds, f)
        got = runner(path)
        assert len(got) == len(cmds)
        for cmd, w, g in zip(cmds, want[i], got):
            assert w == g, "%s: one server %r, the cluster %r" % (cmd, w, g)
        if kind == "global":
            quiet(cl)


def test_redis_py_cluster_matches_one_server():
    ph = phases(11)
    want = reference(ph)
    with Cluster(masters=3, replicas=1) as cl:
        script = os.path.join(cl.tmp, "rc.py")
        with open(script, "w") as f:
            f.write(REDIS_PY)
        differential(cl, ph, want, lambda path: run_client(
            [PY, script, str(cl.nodes[0].port), path]), cl.tmp)
        # Through a replica as its seed, too: the client learns the map.
        ph2 = phases(12, n=2)
        want2 = reference(ph2)
        for n in cl.live():
            n.cmd("FLUSHALL")
        differential(cl, ph2, want2, lambda path: run_client(
            [PY, script, str(cl.nodes[4].port), path]), cl.tmp)
test_redis_py_cluster_matches_one_server.timeout = 180


def test_node_cluster_clients_match_one_server():
    d = test_clients._node_clients()
    if d is None:
        return
    script = os.path.join(d, "unreadd_cluster_test.mjs")
    with open(script, "w") as f:
        f.write(NODE_CLUSTER_JS)
    for which, seed in (("ioredis", 21), ("node-redis", 22)):
        ph = phases(seed)
        want = reference(ph)
        with Cluster(masters=3, replicas=1) as cl:
            differential(cl, ph, want, lambda path: run_client(
                ["node", script, str(cl.nodes[1].port), path, which], cwd=d),
                cl.tmp)
test_node_cluster_clients_match_one_server.timeout = 300


def flat_want(v):
    """A norm()ed answer as build/cluster_client prints one (an error as
    ERR: its wording is compared by the tests of each command)."""
    if isinstance(v, dict):
        return "ERR"
    if isinstance(v, list):
        return "[" + ",".join(flat_want(x) for x in v) + "]"
    if v is None:
        return "nil"
    if isinstance(v, str):
        return v.replace("\n", " ").replace("\r", " ")
    return str(v)


def test_libunread_cluster_matches_one_server():
    from test_client_cluster import Drv
    for mode, seed, node in (("sync", 31, 0), ("async", 32, 4)):
        ph = phases(seed)
        want = [[flat_want(w) for w in phase] for phase in reference(ph)]
        with Cluster(masters=3, replicas=1) as cl:
            d = Drv(mode, cl.nodes[node].addr())  # node 4: a replica
            try:
                def run(path):
                    out = []
                    for cmd in json.load(open(path)):
                        rc, text, _ = d.cmd(*cmd)
                        assert rc >= 0, (mode, cmd, text)
                        out.append("ERR" if rc > 0 else text)
                    return out
                differential(cl, ph, want, run, cl.tmp)
            finally:
                d.close()
test_libunread_cluster_matches_one_server.timeout = 240
