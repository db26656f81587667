"""Running the server (docs/OPERATIONS.md): INFO sections and
fields that move, CONFIG GET of every key, the Prometheus endpoint,
maxmemory refusal and recovery, --help and --version, the example
configuration and OPERATIONS.md covering every key, and `make install`
with a C program built against the installed library by pkg-config.
"""

import os
import re
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

from harness import BUILD, E, REPO, UNREADD, Server, assert_err, \
    free_port, info_dict

SECTIONS = ["server", "clients", "memory", "persistence", "stats", "expiry",
            "commandstats"]


def help_keys():
    """{key: default} from `unreadd --help` (the config table)."""
    out = subprocess.run([UNREADD, "--help"], capture_output=True, text=True,
                         timeout=10)
    assert out.returncode == 0, out.stderr
    keys = dict(re.findall(r"^  --(\S+) +(.*)$", out.stdout, re.M))
    assert len(keys) >= 20, out.stdout
    return keys


def test_help_and_version():
    keys = help_keys()
    for k, v in (("port", "7460"), ("inactive-days", "30"),
                 ("expire-families", "grp bc dot feed"), ("maxmemory", "0"),
                 ("metrics-port", "0"), ("enable-debug-command", "no")):
        assert keys[k] == v, (k, keys.get(k))
    out = subprocess.run([UNREADD, "--version"], capture_output=True,
                         text=True, timeout=10)
    assert out.returncode == 0 and re.fullmatch(r"unreadd \d+\.\d+\.\d+\n",
                                                out.stdout), out


def test_config_get_every_key():
    keys = help_keys()
    with Server() as srv, srv.resp() as c:
        got = c.cmd("CONFIG", "GET", "*")
        pairs = dict(zip(got[::2], got[1::2]))
        assert sorted(k.decode() for k in pairs) == sorted(keys)
        for k in keys:
            reply = c.cmd("CONFIG", "GET", k)
            assert reply[0] == k.encode(), reply
        assert c.cmd("CONFIG", "GET", "inactive-days") == \
            [b"inactive-days", b"30"]
    with Server(maxmemory="3mb", inactive_days=7) as srv, srv.resp() as c:
        assert c.cmd("CONFIG", "GET", "maxmemory") == \
            [b"maxmemory", b"3145728"]
        assert c.cmd("CONFIG", "GET", "inactive-days") == \
            [b"inactive-days", b"7"]


def test_docs_cover_every_key():
    """docs/unreadd.conf sets (or shows, commented) every key at its
    default; docs/OPERATIONS.md explains every key."""
    keys = help_keys()
    conf = open(os.path.join(REPO, "docs", "unreadd.conf")).read()
    ops = open(os.path.join(REPO, "docs", "OPERATIONS.md")).read()
    for k, v in keys.items():
        m = re.search(r"^#? ?%s (.*)$" % re.escape(k), conf, re.M)
        assert m, "docs/unreadd.conf lacks " + k
        if not m.group(0).startswith("#"):
            assert m.group(1).strip('"') in (v, v.replace(" ", ",")) or \
                set(m.group(1).strip('"').split()) == set(v.split()), \
                (k, m.group(1), v)
        assert "`%s`" % k in ops, "docs/OPERATIONS.md lacks `%s`" % k
    # The example configuration is a working one.
    with Server(config_file=os.path.join(REPO, "docs", "unreadd.conf")) as srv:
        with srv.resp() as c:
            assert c.cmd("PING") == "PONG"


def test_info_sections_and_moving_fields():
    with Server() as srv, srv.resp() as c:
        info = info_dict(c.cmd("INFO"))
        for sec in SECTIONS[:-1]:
            assert sec in info, (sec, sorted(info))
        for sec in SECTIONS:
            one = info_dict(c.cmd("INFO", sec))
            assert list(one) == [sec], (sec, list(one))
        mem = info["memory"]
        for k in ("used_memory", "used_memory_rss", "maxmemory",
                  "maxmemory_reached", "cnt_bytes", "cnt_users",
                  "cnt_bytes_per_user", "activity_users"):
            assert k in mem, k
        before = info
        for uid in range(1, 101):
            c.cmd("CNT.INCR", uid, 0)
        c.cmd("CNT.GET", 1, "nope")
        after = info_dict(c.cmd("INFO"))
        assert int(after["memory"]["cnt_users"]) == 100
        assert int(after["memory"]["used_memory"]) > \
            int(before["memory"]["used_memory"])
        assert int(after["stats"]["total_commands_processed"]) >= \
            int(before["stats"]["total_commands_processed"]) + 101
        assert int(after["stats"]["total_errors"]) == \
            int(before["stats"]["total_errors"]) + 1
        # CNT is not in expire-families: its users are not tracked.
        assert after["expiry"]["active_users"] == "0"
        assert int(after["persistence"]["changes_since_last_save"]) >= 100
        cs = info_dict(c.cmd("INFO", "commandstats"))["commandstats"]
        assert re.fullmatch(r"calls=100,usec=\d+,usec_per_call=\d+\.\d\d,"
                            r"rejected_calls=0,failed_calls=0,errors=0",
                            cs["cmdstat_cnt.incr"]), cs
        assert re.fullmatch(r"calls=1,usec=\d+,usec_per_call=\d+\.\d\d,"
                            r"rejected_calls=0,failed_calls=1,errors=1",
                            cs["cmdstat_cnt.get"]), cs


def scrape(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                timeout=5) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = r.read().decode()
    samples = {}
    for line in text.splitlines():
        if line.startswith("#"):
            assert re.match(r"# (HELP|TYPE) unreadd_\w+ ", line), line
            continue
        name, value = line.rsplit(" ", 1)
        samples[name] = float(value)
    return samples


def test_metrics_endpoint():
    mport = free_port()
    with Server(metrics_port=mport, enable_debug_command="yes") as srv, \
            srv.resp() as c:
        assert c.cmd("PING") == "PONG"  # accepted: counted as a client
        m0 = scrape(mport)
        for name in ('unreadd_info{version="0.1.0"}', "unreadd_uptime_seconds",
                     "unreadd_connected_clients",
                     "unreadd_rejected_connections_total",
                     "unreadd_errors_total", "unreadd_memory_used_bytes",
                     "unreadd_maxmemory_reached",
                     'unreadd_family_bytes{family="bc"}',
                     'unreadd_family_entries{family="cnt",unit="user"}',
                     "unreadd_journal_ok", "unreadd_last_save_ok",
                     "unreadd_journal_fsyncs_total",
                     "unreadd_journal_fsync_delayed_total",
                     "unreadd_journal_last_fsync_seconds",
                     "unreadd_journal_fsync_in_progress",
                     "unreadd_expired_users_total",
                     'unreadd_expired_entries_total{family="dot"}',
                     "unreadd_expiry_cycle_max_seconds"):
            assert name in m0, name
        assert m0["unreadd_connected_clients"] == 1
        for uid in range(1, 11):
            c.cmd("BC.UNREAD", uid, 1)
        c.cmd("BC.UNREAD", "x", 1)
        c.cmd("DEBUG", "ADVANCE-CLOCK", 31 * 86400)
        srv.wait_for(lambda: scrape(mport)["unreadd_expired_users_total"] ==
                     10, 10, "expiry")
        # The writes above are journaled and synced within a second or so
        # (journal-fsync everysec, the default).
        srv.wait_for(lambda: scrape(mport)["unreadd_journal_fsyncs_total"] >=
                     1, 10, "a journal fsync")
        m1 = scrape(mport)
        assert m1["unreadd_journal_fsync_in_progress"] in (0, 1)
        assert m1["unreadd_journal_last_fsync_seconds"] >= 0
        assert m1['unreadd_command_calls_total{cmd="BC.UNREAD"}'] == 11
        assert m1['unreadd_command_errors_total{cmd="BC.UNREAD"}'] == 1
        assert m1['unreadd_expired_entries_total{family="bc"}'] == 10
        assert m1["unreadd_errors_total"] == m0["unreadd_errors_total"] + 1
        assert m1["unreadd_expiry_sweeps_total"] >= 1
        assert m1['unreadd_family_entries{family="bc",unit="subscription"}'] \
            == 0
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/other" % mport,
                                   timeout=5)
            raise AssertionError("a path other than /metrics was served")
        except urllib.error.HTTPError as e:
            assert e.code == 404
        req = urllib.request.Request("http://127.0.0.1:%d/metrics" % mport,
                                     data=b"x", method="POST")
        try:
            urllib.request.urlopen(req, timeout=5)
            raise AssertionError("POST was served")
        except urllib.error.HTTPError as e:
            assert e.code in (405, 501), e.code
        assert c.cmd("PING") == "PONG"
    with Server() as srv:  # off by default: nothing listens
        assert b"metrics" not in srv.stderr_text().encode()


def test_maxmemory_refuses_writes_and_recovers():
    with Server() as srv, srv.resp() as c:
        base = int(info_dict(c.cmd("INFO", "memory"))["memory"]["used_memory"])
    limit = base + 200000
    with Server(maxmemory=limit) as srv, srv.resp() as c:
        uid = 0
        while True:
            uid += 1
            r = c.cmd("CNT.INCR", uid, 0)
            if not isinstance(r, list):
                break
            assert uid < 100000, "maxmemory never reached"
        assert_err(r, "OOM")
        assert "maxmemory" in r
        mem = info_dict(c.cmd("INFO", "memory"))["memory"]
        assert mem["maxmemory"] == str(limit)
        assert mem["maxmemory_reached"] == "1"
        # Reads go on; writes that only free go on; others are refused.
        assert c.cmd("CNT.GET", 1, 0) == 1
        assert c.cmd("CNT.TOTAL", uid + 5) == 0
        assert_err(c.cmd("BC.PUBLISH", 1), "OOM")
        assert_err(c.cmd("GRP.JOIN", 1, 1), "OOM")
        with srv.bin() as b:
            assert_err(b.call("CNT.INCR", 1, 0), None, E["OOM"])
        assert c.cmd("CNT.CLEAR", 1) == 0
        assert c.cmd("GRP.LEAVE", 1, 1) == 0
        # Tables shrink once mostly empty: erase three users in four.
        for u in range(1, 3 * uid // 4):
            c.cmd("USER.DEL", u)
        mem = info_dict(c.cmd("INFO", "memory"))["memory"]
        assert mem["maxmemory_reached"] == "0", mem
        assert c.cmd("CNT.INCR", 1, 0) == [1, 1]
        # FLUSHALL is always allowed.
        while isinstance(c.cmd("CNT.INCR", uid, 0), list):
            uid += 1
        assert c.cmd("FLUSHALL") == "OK"
        assert c.cmd("CNT.INCR", 1, 0) == [1, 1]
        assert c.cmd("DEBUG", "AUDIT") == 0


def test_sigterm_saves_and_exits_zero():
    with Server() as srv, srv.resp() as c:
        c.cmd("CNT.INCR", 1, 0)
    assert srv.returncode == 0
    assert "snapshot saved" in srv.stderr_text()


C_PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <unread.h>

int main(int argc, char **argv)
{
    char err[256];
    struct unread *c = unread_connect("127.0.0.1", (uint16_t)atoi(argv[1]),
                                      2000, err, sizeof(err));
    uint32_t value;
    uint64_t total;

    if (c == NULL) {
        fprintf(stderr, "connect: %s\n", err);
        return 1;
    }
    if (unread_cnt_incr(c, 42, 0, 5, &value, &total) != 0 ||
        unread_cnt_total(c, 42, &total) != 0) {
        fprintf(stderr, "call: %s\n", unread_errstr(c));
        return 1;
    }
    printf("total %llu\n", (unsigned long long)total);
    unread_close(c);
    return 0;
}
"""


def test_make_install_and_pkg_config():
    with tempfile.TemporaryDirectory(prefix="unreadd-install-") as tmp:
        dest = os.path.join(tmp, "root")
        out = subprocess.run(["make", "-s", "install", "BUILD=" + BUILD,
                              "DESTDIR=" + dest, "PREFIX=/usr/local"],
                             cwd=REPO, capture_output=True, text=True,
                             timeout=600)
        assert out.returncode == 0, out.stdout + out.stderr
        pre = os.path.join(dest, "usr", "local")
        for path in ("bin/unreadd", "bin/unread-cli", "bin/unread-bench",
                     "include/unread.h", "lib/libunread.a",
                     "lib/libunread.so", "lib/pkgconfig/unread.pc",
                     "share/doc/unreadd/unreadd.conf",
                     "share/doc/unreadd/unreadd.service"):
            assert os.path.exists(os.path.join(pre, path)), path
        pc = open(os.path.join(pre, "lib/pkgconfig/unread.pc")).read()
        assert "prefix=/usr/local\n" in pc and "@" not in pc, pc
        with open(os.path.join(pre, "lib/libunread.so"), "rb") as f:
            if b"libasan.so" in f.read():
                print("sanitizer build: the C program is built by the "
                      "plain build's run")
                return
        env = dict(os.environ,
                   PKG_CONFIG_PATH=os.path.join(pre, "lib", "pkgconfig"),
                   PKG_CONFIG_SYSROOT_DIR=dest)
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "unread"],
                               env=env, capture_output=True, text=True,
                               timeout=30)
        assert flags.returncode == 0, flags.stderr
        src = os.path.join(tmp, "prog.c")
        with open(src, "w") as f:
            f.write(C_PROGRAM)
        prog = os.path.join(tmp, "prog")
        cc = subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", src, "-o",
                             prog] + flags.stdout.split(),
                            capture_output=True, text=True, timeout=60)
        assert cc.returncode == 0, cc.stderr
        with Server() as srv:
            run = subprocess.run([prog, str(srv.port)], capture_output=True,
                                 text=True, timeout=30,
                                 env=dict(os.environ, LD_LIBRARY_PATH=
                                          os.path.join(pre, "lib")))
            assert run.returncode == 0, run.stderr
            assert run.stdout == "total 5\n"


test_make_install_and_pkg_config.timeout = 600
