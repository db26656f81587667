"""Clients and tools nobody here wrote, driving unreadd and checking its
answers: redis-py, hiredis (a small C program built here), node-redis and
ioredis with their default options (from npm, cached under
build/node-clients; skipped with a message when npm cannot fetch them),
redis-cli (one-shot, --pipe, --stat, a USER.SCAN walk, help CNT.INCR),
redis-benchmark and prometheus-redis-exporter.

Each sends the largest id (2^63-1) and the largest count (2^32-1)
through, and reads back a null (RCPT.LIST's erased member): no client may
drop the connection on any reply unreadd sends.

The Debian packages come from tools/deps.sh (make test) and .ci/run.
"""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

from harness import (BUILD, ID_MAX, REPO, U32_MAX, Server, free_port,
                     info_flat, run_redis_cli)

# Debian's python3 (python3-redis lives there), whatever runs the tests.
SYS_PY = "/usr/bin/python3"
NODE_DIR = os.path.join(REPO, "build", "node-clients")
NODE_PKGS = ["redis@6.3.1", "ioredis@6.0.0"]


def _run(argv, timeout=60, **kw):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                       **kw)
    return p


def _seed_rcpt(c):
    """Group 9: 41 sends, 42 reads then is erased: RCPT.LIST READ holds a
    null."""
    c.cmd("RCPT.JOIN", 9, 41)
    c.cmd("RCPT.JOIN", 9, 42)
    c.cmd("RCPT.SEND", 9, 100, 41)
    c.cmd("RCPT.READ", 9, 42, 100)
    c.cmd("USER.DEL", 42)


# --------------------------------------------------------------------------
# redis-py

REDIS_PY = r'''
import sys, redis
port = int(sys.argv[1])
IDMAX, U32 = 2**63 - 1, 2**32 - 1
r = redis.Redis(port=port, client_name="pyapp")
assert r.ping() is True
assert r.execute_command("CNT.INCR", 42, "mention", 3) == [3, 3]
assert r.execute_command("CNT.SET", IDMAX, 1, U32) == [U32, U32]
assert r.execute_command("CNT.GET", IDMAX, 1) == U32
assert r.execute_command("CONV.SEQ", IDMAX, IDMAX, 7) == [7, 7]
assert r.execute_command("CONV.LIST", IDMAX) == [IDMAX, 7]
assert r.execute_command("RCPT.LIST", 9, 100, "READ") == [None]
# A transaction: the DM's two writes as one (MULTI/EXEC).
p = r.pipeline(transaction=True)
p.execute_command("CONV.SEQ", 5, 77, 1)
p.execute_command("CNT.INCR", 5, "dm")
assert p.execute() == [[1, 1], [1, 1]]
# Pipelines without a transaction.
p = r.pipeline(transaction=False)
for u in range(100):
    p.execute_command("CNT.INCR", u, 0)
assert len(p.execute()) == 100
info = r.info()
assert info["redis_version"] == "7.0.0" and info["role"] == "master"
assert info["connected_clients"] >= 1 and "used_memory_human" in info
assert "cmdstat_cnt.incr" in r.info("commandstats")
assert r.client_getname() == "pyapp"
names = [c["name"] for c in r.client_list()]
assert "pyapp" in names, names
assert r.client_id() > 0
assert r.dbsize() >= 100
assert r.config_get("save") == {"save": "300 1"}
assert r.config_get("appendonly") == {"appendonly": "yes"}
assert r.config_set("maxmemory", "100mb") is True
assert r.config_get("maxmemory") == {"maxmemory": str(100 << 20)}
cmds = r.command()
assert cmds["cnt.incr"]["arity"] == -3 and cmds["cnt.incr"]["first_key_pos"] == 1
assert r.command_count() == len(cmds)
r.config_set("slowlog-log-slower-than", 0)
r.execute_command("CNT.GET", 1, 0)
log = r.slowlog_get(1)
assert log and log[0]["command"].startswith(b"CNT.GET"), log
# USER.SCAN like SCAN: every user seen.
seen, cursor = set(), 0
while True:
    cursor, uids = r.execute_command("USER.SCAN", cursor, "COUNT", 20)
    seen.update(uids)
    if int(cursor) == 0:
        break
assert set(range(100)) | {42, IDMAX} <= seen
# SELECT through the connection pool's db option, and a bad one.
assert redis.Redis(port=port, db=0).ping()
try:
    redis.Redis(port=port, db=3).ping()
    raise SystemExit("db=3 accepted")
except redis.ResponseError as e:
    assert "DB index is out of range" in str(e)
# MONITOR, parsed by redis-py's own regex.
other = redis.Redis(port=port)
with r.monitor() as m:
    other.execute_command("CNT.INCR", 7, "like")
    cmd = m.next_command()
    assert cmd["command"] == "cnt.incr 7 like", cmd
print("redis-py ok")
'''


def test_redis_py():
    with Server() as srv, srv.resp() as c:
        _seed_rcpt(c)
        p = _run([SYS_PY, "-c", REDIS_PY, str(srv.port)])
        assert p.returncode == 0, p.stdout + p.stderr
        assert "redis-py ok" in p.stdout


# --------------------------------------------------------------------------
# hiredis

HIREDIS_C = r'''
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static redisContext *c;

static redisReply *cmd(const char *fmt, const char *a)
{
    redisReply *r = a ? redisCommand(c, fmt, a) : redisCommand(c, fmt);
    if (r == NULL) {
        fprintf(stderr, "%s: connection lost: %s\n", fmt, c->errstr);
        exit(1);
    }
    return r;
}

#define CHECK(x) do { if (!(x)) { fprintf(stderr, "line %d: %s\n", __LINE__, #x); exit(1); } } while (0)

int main(int argc, char **argv)
{
    redisReply *r;
    c = redisConnect("127.0.0.1", atoi(argv[1]));
    CHECK(c != NULL && c->err == 0);
    r = cmd("CNT.SET 9223372036854775807 1 4294967295", NULL);
    CHECK(r->type == REDIS_REPLY_ARRAY && r->elements == 2);
    CHECK(r->element[0]->integer == 4294967295LL);
    freeReplyObject(r);
    r = cmd("CONV.SEQ 9223372036854775807 9223372036854775807 3", NULL);
    freeReplyObject(r);
    r = cmd("CONV.LIST 9223372036854775807", NULL);
    CHECK(r->type == REDIS_REPLY_ARRAY && r->elements == 2);
    CHECK(r->element[0]->type == REDIS_REPLY_INTEGER);
    CHECK(r->element[0]->integer == 9223372036854775807LL);
    freeReplyObject(r);
    r = cmd("RCPT.LIST 9 100 READ", NULL);
    CHECK(r->type == REDIS_REPLY_ARRAY && r->elements == 1);
    CHECK(r->element[0]->type == REDIS_REPLY_NIL);
    freeReplyObject(r);
    r = cmd("CNT.INCR %s 0", "000000123456");
    CHECK(r->type == REDIS_REPLY_ARRAY && r->element[1]->integer == 1);
    freeReplyObject(r);
    r = cmd("CNT.INCR 9223372036854775808 0", NULL);
    CHECK(r->type == REDIS_REPLY_ERROR && strstr(r->str, "at most"));
    freeReplyObject(r);
    r = cmd("COMMAND DOCS", NULL);
    CHECK(r->type == REDIS_REPLY_ARRAY && r->elements > 40);
    freeReplyObject(r);
    r = cmd("COMMAND", NULL);
    CHECK(r->type == REDIS_REPLY_ARRAY && r->element[0]->elements == 10);
    freeReplyObject(r);
    r = cmd("INFO everything", NULL);
    CHECK(r->type == REDIS_REPLY_STRING && strstr(r->str, "redis_version:"));
    freeReplyObject(r);
    r = cmd("CLIENT SETNAME %s", "hiredis-test");
    CHECK(r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    r = cmd("CLIENT LIST", NULL);
    CHECK(r->type == REDIS_REPLY_STRING && strstr(r->str, "name=hiredis-test"));
    freeReplyObject(r);
    r = cmd("USER.SCAN 0 COUNT 1000", NULL);
    CHECK(r->type == REDIS_REPLY_ARRAY && r->element[0]->type == REDIS_REPLY_STRING);
    CHECK(r->element[1]->elements >= 2);
    freeReplyObject(r);
    /* Pipelined. */
    for (int i = 0; i < 1000; i++)
        redisAppendCommand(c, "CNT.INCR %d 1", i);
    for (int i = 0; i < 1000; i++) {
        CHECK(redisGetReply(c, (void **)&r) == REDIS_OK);
        CHECK(r->type == REDIS_REPLY_ARRAY);
        freeReplyObject(r);
    }
    redisFree(c);
    puts("hiredis ok");
    return 0;
}
'''


def test_hiredis():
    with Server() as srv, srv.resp() as c, \
            tempfile.TemporaryDirectory() as tmp:
        _seed_rcpt(c)
        src = os.path.join(tmp, "t.c")
        exe = os.path.join(tmp, "t")
        with open(src, "w") as f:
            f.write(HIREDIS_C)
        cflags = _run(["pkg-config", "--cflags", "--libs", "hiredis"]).stdout
        p = _run(["cc", "-O1", "-o", exe, src] + cflags.split())
        assert p.returncode == 0, p.stderr
        p = _run([exe, str(srv.port)])
        assert p.returncode == 0, p.stdout + p.stderr
        assert "hiredis ok" in p.stdout
        assert c.cmd("CNT.GET", 999, 1) == 1


# --------------------------------------------------------------------------
# node-redis and ioredis

NODE_JS = r'''
import assert from 'node:assert/strict';
import { createClient, RESP_TYPES } from 'redis';
import Redis from 'ioredis';
const port = Number(process.argv[2]);
const MAX = '9223372036854775807', U32 = 4294967295;

// node-redis with its defaults: HELLO 3, CLIENT SETINFO, and a name.
const c = createClient({ url: `redis://127.0.0.1:${port}`, name: 'nodeapp' });
c.on('error', e => { console.error('node-redis error', e); process.exit(1); });
await c.connect();
assert.deepEqual(await c.sendCommand(['CNT.INCR', '42', 'mention', '3']), [3, 3]);
assert.deepEqual(await c.sendCommand(['CNT.SET', MAX, '1', String(U32)]), [U32, U32]);
const hello = await c.sendCommand(['HELLO']);
assert.equal(hello.proto, 3);
const info = await c.sendCommand(['CLIENT', 'INFO']);
assert.match(info, /name=nodeapp .*resp=3 lib-name=node-redis lib-ver=\S+/);
assert.deepEqual(await c.sendCommand(['RCPT.LIST', '9', '100', 'READ']), [null]);
// Ids past 2^53 lose digits as JS numbers: map integers to strings.
await c.sendCommand(['CONV.SEQ', '7', MAX, '5']);
const s = c.withTypeMapping({ [RESP_TYPES.NUMBER]: String });
assert.deepEqual(await s.sendCommand(['CONV.LIST', '7']), [MAX, '5']);
const m = await c.multi().addCommand(['CONV.SEQ', '5', '77', '1'])
    .addCommand(['CNT.INCR', '5', 'dm']).exec();
assert.deepEqual(m, [[1, 1], [1, 1]]);
const cfg = await c.configGet('save');
assert.equal(cfg.save, '300 1');
assert.ok(await c.dbSize() >= 2);
await c.quit();

// ioredis, defaults (RESP2), then stringNumbers for the big ids.
const r = new Redis({ port, connectionName: 'ioapp' });
assert.deepEqual(await r.call('CNT.GET', MAX, '1'), U32);
assert.deepEqual(await r.call('RCPT.LIST', '9', '100', 'READ'), [null]);
const rs = new Redis({ port, stringNumbers: true });
assert.deepEqual(await rs.call('CONV.LIST', '7'), [MAX, '5']);
assert.equal(await r.client('GETNAME'), 'ioapp');
const pipe = await r.pipeline().call('CNT.INCR', '1', '0').call('CNT.TOTAL', '1').exec();
assert.deepEqual(pipe, [[null, [1, 1]], [null, 1]]);
const infoText = await r.info('server');
assert.match(infoText, /redis_version:7\.0\.0/);
r.disconnect(); rs.disconnect();
console.log('node ok');
'''


def _node_clients():
    """The node_modules dir with node-redis and ioredis, installed once
    into build/node-clients; None (with the reason printed) when node or
    npm is missing or the registry cannot be reached."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        print("skipped: node/npm not installed (apt-get install nodejs npm)")
        return None
    marker = os.path.join(NODE_DIR, "node_modules", ".unreadd-" +
                          "-".join(NODE_PKGS).replace("/", "_"))
    if not os.path.exists(marker):
        os.makedirs(NODE_DIR, exist_ok=True)
        with open(os.path.join(NODE_DIR, "package.json"), "w") as f:
            f.write('{"private": true, "type": "module"}\n')
        p = _run(["npm", "install", "--no-audit", "--no-fund",
                  "--loglevel=error", "--prefix", NODE_DIR] + NODE_PKGS,
                 timeout=240)
        if p.returncode != 0:
            print("skipped: npm could not install %s: %s" %
                  (" ".join(NODE_PKGS), (p.stderr or p.stdout)[-300:]))
            return None
        open(marker, "w").close()
    return NODE_DIR


def test_node_redis_and_ioredis():
    d = _node_clients()
    if d is None:
        return
    with Server() as srv, srv.resp() as c:
        _seed_rcpt(c)
        script = os.path.join(d, "unreadd_test.mjs")
        with open(script, "w") as f:
            f.write(NODE_JS)
        p = _run(["node", script, str(srv.port)], cwd=d)
        assert p.returncode == 0, p.stdout + p.stderr
        assert "node ok" in p.stdout
        assert c.cmd("CNT.GET", 1, 0) == 1
test_node_redis_and_ioredis.timeout = 300


# --------------------------------------------------------------------------
# redis-cli

def test_redis_cli_one_shot_help_and_errors():
    with Server() as srv, srv.resp() as c:
        p = run_redis_cli(srv, "CNT.INCR", 42, "mention")
        assert p.stdout == "1\n1\n", p  # piped: the raw form
        p = run_redis_cli(srv, "--no-raw", "CNT.INCR", 42, "dm", 3)
        assert p.stdout == "1) (integer) 3\n2) (integer) 4\n", p.stdout
        p = run_redis_cli(srv, "CNT.SET", ID_MAX, 1, U32_MAX)
        assert p.stdout == "%d\n%d\n" % (U32_MAX, U32_MAX)
        _seed_rcpt(c)
        p = run_redis_cli(srv, "--no-raw", "RCPT.LIST", 9, 100, "READ")
        assert p.stdout == "1) (nil)\n", p.stdout
        # help comes from COMMAND DOCS: syntax, summary, group.
        p = run_redis_cli(srv, "help", "CNT.INCR")
        out = re.sub(r"\x1b\[[0-9;]*m", "", p.stdout)
        assert "CNT.INCR uid type [delta]" in out, out
        assert "summary: Adds delta" in out and "group: cnt" in out, out
        p = run_redis_cli(srv, "help", "RCPT.LIST")
        assert "RCPT.LIST gid msgid READ|UNREAD [offset count]" in \
            re.sub(r"\x1b\[[0-9;]*m", "", p.stdout)
        p = run_redis_cli(srv, "CNT.INCR", "x", 0)
        assert "uid must be an integer" in p.stdout + p.stderr


def test_redis_cli_pipe_mass_insert():
    n = 20000
    lines = "".join("CNT.INCR %d %d\r\n" % (i % 5000, i % 5) for i in range(n))
    with Server() as srv, srv.resp() as c:
        p = run_redis_cli(srv, "--pipe", input=lines, timeout=60)
        assert p.returncode == 0, p.stdout + p.stderr
        assert re.search(r"errors: 0, replies: %d" % n, p.stdout), p.stdout
        assert c.cmd("DBSIZE") == 5000
        assert sum(c.cmd("CNT.TOTAL", u) for u in range(0, 5000, 97)) == \
            4 * len(range(0, 5000, 97))


def test_redis_cli_stat_shows_real_columns():
    with Server() as srv, srv.resp() as c:
        for u in range(30):
            c.cmd("CNT.INCR", u, 0)
        argv = ["stdbuf", "-o0", "redis-cli", "-p", str(srv.port), "--stat",
                "-i", "0.1"]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        lines = []
        try:
            while len(lines) < 5:
                lines.append(proc.stdout.readline())
        finally:
            # ^C is how --stat ends (tests/run.py makes sure that SIGINT
            # is not inherited ignored); kill it if not, so that the
            # error says so rather than hiding what failed before.
            proc.send_signal(signal.SIGINT)
            try:
                rc = proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                rc = "none within 5 s"
        assert rc == -signal.SIGINT, "redis-cli --stat exit on SIGINT: %s" % rc
        text = "".join(lines)
        assert "-9223372036854775808" not in text, text
        row = lines[2].split()
        assert row[0] == "30" and row[2] == "2" and row[3] == "0", text


def test_user_scan_walk_with_redis_cli():
    """The --scan equivalent: redis-cli --scan walks SCAN's keys; users
    are walked with USER.SCAN (docs/OPERATIONS.md shows the loop)."""
    with Server() as srv, srv.bin() as b:
        uids = set(range(0, 3000, 3)) | {ID_MAX}
        b.pipeline([("FEED.FOLLOW", u, 1) for u in uids])
        seen, cursor = [], "0"
        while True:
            p = run_redis_cli(srv, "--raw", "USER.SCAN", cursor, "COUNT", 100)
            out = p.stdout.split()
            cursor, got = out[0], out[1:]
            seen += [int(x) for x in got]
            if cursor == "0":
                break
        assert set(seen) == uids


# --------------------------------------------------------------------------
# redis-benchmark

def test_redis_benchmark_with_rand_int_ids():
    with Server() as srv, srv.resp() as c:
        p = _run(["redis-benchmark", "-p", str(srv.port), "-n", "3000",
                  "-r", "100000", "-c", "4", "CNT.INCR", "__rand_int__",
                  "mention"], timeout=120)
        out = p.stdout + p.stderr
        assert p.returncode == 0, out
        assert "WARNING" not in out and "ERROR" not in out.upper().replace(
            "ERRORS", ""), out
        assert 'host configuration "save": 300 1' in out, out
        assert 'host configuration "appendonly": yes' in out, out
        assert "requests per second" in out
        # Real work: 3000 increments over users 0..99999.
        s = info_flat(c.cmd("INFO", "commandstats"))
        assert s["cmdstat_cnt.incr"].startswith("calls=3000,")
        users = c.cmd("DBSIZE")
        assert 2000 < users <= 3000
        total, cursor = 0, b"0"
        while True:
            cursor, uids = c.cmd("USER.SCAN", cursor, "COUNT", 1000)
            total += sum(c.cmd("CNT.TOTAL", u) for u in set(uids))
            if cursor == b"0":
                break
        assert total == 3000
        # The largest id and count, through redis-benchmark's reader.
        p = _run(["redis-benchmark", "-p", str(srv.port), "-n", "200", "-c",
                  "2", "CNT.SET", str(ID_MAX), "1", str(U32_MAX)], timeout=60)
        assert p.returncode == 0 and "WARNING" not in p.stdout + p.stderr
        assert c.cmd("CNT.GET", ID_MAX, 1) == U32_MAX


# --------------------------------------------------------------------------
# prometheus-redis-exporter

def test_prometheus_redis_exporter_scrapes_without_errors():
    with Server() as srv, srv.resp() as c:
        for u in range(50):
            c.cmd("CNT.INCR", u, 0)
            c.cmd("CONV.SEQ", u, 1, 5)
        c.cmd("BGSAVE")
        srv.wait_for(lambda: info_flat(c.cmd("INFO", "persistence"))
                     ["rdb_bgsave_in_progress"] == "0", what="bgsave")
        port = free_port()
        log = tempfile.TemporaryFile(mode="w+")
        exp = subprocess.Popen(["prometheus-redis-exporter", "-redis.addr",
                                "redis://127.0.0.1:%d" % srv.port,
                                "-web.listen-address", "127.0.0.1:%d" % port],
                               stdout=log, stderr=log)
        try:
            text = None
            for _ in range(100):
                try:
                    with urllib.request.urlopen(
                            "http://127.0.0.1:%d/metrics" % port,
                            timeout=5) as r:
                        text = r.read().decode()
                    break
                except OSError:
                    time.sleep(0.05)
            assert text is not None, "exporter did not answer"
            # A second scrape, as Prometheus keeps scraping.
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                        timeout=5) as r:
                text = r.read().decode()
        finally:
            exp.terminate()
            exp.wait(10)
        log.seek(0)
        logged = log.read()
        assert "level=error" not in logged and "level=warn" not in logged, \
            logged
        series = [l for l in text.splitlines()
                  if l.startswith("redis_") and not l.startswith("#")]
        names = {re.match(r"[a-z_]+", l).group(0) for l in series}
        assert len(series) >= 120, (len(series), sorted(names))
        values = dict(l.rsplit(" ", 1) for l in series)
        assert values["redis_up"] == "1"
        assert values['redis_db_keys{db="db0"}'] == "100"
        assert values['redis_commands_total{cmd="cnt.incr"}'] == "50"
        assert 'redis_commands_duration_seconds_total{cmd="conv.seq"}' in \
            values
        assert float(values["redis_rdb_last_save_timestamp_seconds"]) > 0
        assert values["redis_aof_enabled"] == "1"
        assert values["redis_connected_clients"] in ("2", "3")
        assert "redis_slowlog_length" in names  # SLOWLOG LEN answered
        assert values['redis_exporter_last_scrape_error{err=""}'] == "0"
test_prometheus_redis_exporter_scrapes_without_errors.timeout = 60
