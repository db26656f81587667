/*
 * test_allocfail.c - the promise the journal rests on, under allocation
 * failure: a command that answers an error changed nothing.
 *
 * Every family runs scripts of its write commands (and the reads that
 * change state) through the executor on a scratch server, over states that
 * take the stores through their growth paths: maps splitting, lists going
 * from inline to out of line, records growing, rings doubling, new
 * groups, dots, authors and channels. Each command that allocates is run
 * again and again with its Nth allocation failing (mem.h's hook), for
 * N = 1, 2, ... until it runs without a failure, once with only the Nth
 * failing and once with every allocation from the Nth on failing. After
 * each run:
 *   - DEBUG AUDIT is 0 (db_audit: totals, invariants, and every store's
 *     byte account against its shapes, so a block leaked on a failure path
 *     shows here);
 *   - an error reply is -OOM, the db serialised as a snapshot is the same
 *     bytes as before the command, and no journal record was appended;
 *   - a success that absorbed a failure (optional upkeep such as a split
 *     skipped) is a state of its own: the script is replayed up to the
 *     command to get the state before it back.
 * A first plain pass counts each command's allocations, so that only the
 * commands with failure points are repeated. Between scripts the db is
 * freed and every byte the stores counted must be back (mem_used).
 *
 * The scripts must cover every OPF_WRITE op of ops.def: a new write
 * command fails this test until a script runs it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "exec.h"
#include "mem.h"
#include "persist.h"
#include "replay.h"
#include "slot.h"
#include "snapshot.h"
#include "t.h"
#include "userrec.h"

static struct server srv;
static struct session sess = {.id = 1, .proto = REPLY_RESP, .authed = true};
static uint64_t t0; /* timestamps given to commands: recent, fixed */

/* ---- The journal --------------------------------------------------------
 * Everything the test knows of persistence is here, so that it follows the
 * executor/persistence seam when that moves: a journal on a scratch
 * directory, and how many records it has been given. */

static char jdir[] = "/tmp/ur_allocfail_XXXXXX";

static int journal_open(void)
{
    char err[512];

    if (mkdtemp(jdir) == NULL)
        return -1;
    snprintf(srv.cfg.dir, sizeof(srv.cfg.dir), "%s", jdir);
    if (replay_open(&srv, err, sizeof(err)) != 0) {
        fprintf(stderr, "replay_open: %s\n", err);
        return -1;
    }
    return 0;
}

static uint64_t journal_records(void)
{
    return persist_appended(srv.persist);
}

static void journal_close(void)
{
    char cmd[128];

    replay_close(&srv);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", jdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", jdir);
}

/* ---- Running commands ---------------------------------------------------- */

static struct ur_buf out;

/* Runs one text command (words split on spaces); its reply is in out, its
 * status returned. */
#define LINE_MAX_BYTES 8192

/* An argument "hex:..." is the bytes the hex digits spell (RESTORE's
 * records), decoded in place. */
static uint32_t unhex(char *p)
{
    uint32_t n = 0;

    for (const char *h = p + 4; h[0] && h[1]; h += 2) {
        unsigned v;

        sscanf(h, "%2x", &v);
        p[n++] = (char)v;
    }
    return n;
}

static int run(const char *line)
{
    static char copy[LINE_MAX_BYTES];
    struct ur_arg argv[64];
    struct reply r;
    uint32_t argc = 0;

    snprintf(copy, sizeof(copy), "%s", line);
    for (char *p = strtok(copy, " "); p && argc < 64; p = strtok(NULL, " ")) {
        uint32_t len =
            strncmp(p, "hex:", 4) == 0 ? unhex(p) : (uint32_t)strlen(p);

        argv[argc++] = (struct ur_arg){UR_ARG_STR, len, p, 0};
    }
    out.len = 0;
    reply_begin(&r, &out, REPLY_RESP, 0);
    exec_text(&srv, &sess, argc, argv, &r);
    reply_end(&r);
    ur_buf_append(&out, "", 1);
    return r.status;
}

/* The whole db as snapshot bytes: the state a restart would see. Written
 * to a file in memory. */
static char *snap(size_t *len)
{
    static int fd = -1;
    uint64_t bytes = 0;
    char *buf = NULL;

    if (fd < 0)
        fd = memfd_create("allocfail", 0);
    if (fd < 0 || ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0 ||
        snapshot_write(fd, &srv.db, 0, 0, NULL, &bytes) != 0 ||
        (buf = malloc(bytes ? bytes : 1)) == NULL ||
        pread(fd, buf, bytes, 0) != (ssize_t)bytes) {
        fprintf(stderr, "snapshot to memory failed\n");
        exit(1);
    }
    *len = bytes;
    return buf;
}

/* A fresh, empty db. Every byte the old one held must be given back. */
static size_t db_reset(void)
{
    size_t lost;

    db_deinit(&srv.db);
    userrec_teardown(); /* its scratch stores count too */
    lost = mem_used();
    if (db_init(&srv.db) != 0) {
        fprintf(stderr, "db_init failed\n");
        exit(1);
    }
    return lost;
}

/* ---- Scripts ------------------------------------------------------------- */

struct script {
    char **cmd;
    bool *plain; /* setup only: not probed */
    size_t n, cap;
};

static struct script S;

static void vadd(bool plain, const char *fmt, va_list ap)
{
    static char line[LINE_MAX_BYTES];

    vsnprintf(line, sizeof(line), fmt, ap);
    if (S.n == S.cap) {
        S.cap = S.cap ? S.cap * 2 : 256;
        S.cmd = realloc(S.cmd, S.cap * sizeof(*S.cmd));
        S.plain = realloc(S.plain, S.cap * sizeof(*S.plain));
    }
    S.plain[S.n] = plain;
    S.cmd[S.n++] = strdup(line);
}

/* A command of the script, probed. */
static void add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void add(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vadd(false, fmt, ap);
    va_end(ap);
}

/* A command that only builds the state for the next ones (where probing
 * every one would take long and find nothing new). */
static void setup(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void setup(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vadd(true, fmt, ap);
    va_end(ap);
}

static void script_free(void)
{
    for (size_t i = 0; i < S.n; i++)
        free(S.cmd[i]);
    free(S.cmd);
    free(S.plain);
    S = (struct script){NULL, NULL, 0, 0};
}

/* Ops run by some script, for the coverage check. */
static bool op_run[UR_OP_COUNT];
/* Totals, for the summary line. */
static uint64_t n_probed, n_runs, n_errors, n_absorbed;

struct verdict {
    const char *name;
    size_t bad;
};

static void fail(struct verdict *v, size_t i, uint64_t nth, bool sticky,
                 const char *what)
{
    if (v->bad++ < 10)
        fprintf(stderr,
                "  %s: command %zu '%s', allocation %llu failing%s: %s\n",
                v->name, i, S.cmd[i], (unsigned long long)nth,
                sticky ? " (and every later one)" : "", what);
}

/* The state before command i again: replayed from an empty db. */
static void replay(struct verdict *v, size_t i)
{
    if (db_reset() != 0)
        fail(v, i, 0, false, "bytes not freed after an absorbed failure");
    for (size_t k = 0; k < i; k++)
        run(S.cmd[k]);
}

/* Command i with each of its allocations failing in turn (see the top). */
static void probe(struct verdict *v, size_t i, int clean_status)
{
    size_t len0, len;
    char *s0 = snap(&len0), *s1;
    uint64_t j0 = journal_records();

    n_probed++;
    for (uint64_t nth = 1;; nth++) {
        for (int sticky = 0; sticky < 2; sticky++) {
            int status;
            uint64_t failed;

            mem_fail_after(nth, sticky);
            status = run(S.cmd[i]);
            failed = mem_failures();
            mem_fail_after(0, false);
            n_runs++;
            if (db_audit(&srv.db) != 0)
                fail(v, i, nth, sticky, "DEBUG AUDIT is not 0");
            if (failed == 0) {
                /* No failure point left: the command ran as it should. */
                if (status != clean_status)
                    fail(v, i, nth, sticky, "another reply than first");
                free(s0);
                return;
            }
            if (status == UR_E_OK) {
                n_absorbed++;
                replay(v, i);
                j0 = journal_records();
                continue;
            }
            n_errors++;
            if (status != UR_E_OOM && status != clean_status)
                fail(v, i, nth, sticky, out.data);
            s1 = snap(&len);
            if (len != len0 || memcmp(s0, s1, len) != 0)
                fail(v, i, nth, sticky, "an error reply changed the state");
            free(s1);
            if (journal_records() != j0)
                fail(v, i, nth, sticky, "an error reply was journaled");
        }
        if (nth > 100000) {
            fail(v, i, nth, false, "never ran without a failure");
            free(s0);
            return;
        }
    }
}

/* Runs the script now in S under the failure loop (see the top). */
static void check_script(const char *name)
{
    struct verdict v = {name, 0};
    uint64_t *allocs = calloc(S.n, sizeof(*allocs));
    int *status = calloc(S.n, sizeof(*status));
    size_t lost;

    for (size_t i = 0; i < S.n; i++) {
        uint64_t a = mem_allocs();
        const struct ur_op *op =
            ur_op_by_name(S.cmd[i], strcspn(S.cmd[i], " "));

        status[i] = run(S.cmd[i]);
        allocs[i] = mem_allocs() - a;
        if (op != NULL)
            op_run[op->index] = true;
    }
    if (db_audit(&srv.db) != 0)
        fail(&v, S.n - 1, 0, false, "DEBUG AUDIT is not 0 after a plain run");
    lost = db_reset();
    if (lost != 0)
        fprintf(stderr, "  %s: %zu bytes not freed\n", name, lost);
    v.bad += lost != 0;
    for (size_t i = 0; i < S.n; i++) {
        if (allocs[i] == 0 || S.plain[i])
            run(S.cmd[i]);
        else
            probe(&v, i, status[i]);
    }
    lost = db_reset();
    if (lost != 0)
        fprintf(stderr, "  %s: %zu bytes not freed after the probes\n", name,
                lost);
    v.bad += lost != 0;
    CHECK_EQ_U64(v.bad, 0);
    free(allocs);
    free(status);
    script_free();
}

/* ---- The families' scripts ----------------------------------------------- */

/* One user through every counter form, then enough users to split the
 * map's first segment, then everything taken away again. */
static void test_cnt(void)
{
    for (unsigned t = 0; t < 64; t++)
        add("CNT.INCR 1 %u %u", t, t + 1);
    add("CNT.SET 2 5 40000000"); /* too wide for the inline forms */
    add("CNT.SET 2 5 3");
    add("CNT.INCR 3 1 2");
    add("CNT.INCR 3 2 2");
    add("CNT.INCR 3 3 20000"); /* three types, one too wide: a record */
    for (unsigned t = 63; t > 2; t--)
        add("CNT.DECR 1 %u 1000", t);
    add("CNT.CLEAR 1 0");
    for (uint64_t u = 100; u < 4600; u++)
        add("CNT.INCR %llu %llu", (unsigned long long)u,
            (unsigned long long)(u % 64));
    for (uint64_t u = 100; u < 4600; u += 2)
        add("CNT.CLEAR %llu", (unsigned long long)u);
    /* notices read once: records growing, types filling past 64, early
     * acks, settling */
    for (unsigned n = 1; n < 90; n++)
        add("CNT.INCR 40 %u 1 ID %u", n % 3, n);
    for (unsigned n = 1; n < 90; n += 5)
        add("CNT.ACK 40 %u %u", n % 3, n);
    for (unsigned n = 500; n < 520; n++)
        add("CNT.ACK 41 1 %u", n); /* unknown: remembered read */
    add("CNT.INCR 41 1 2 ID 505");
    add("CNT.SET 40 0 9");
    add("CNT.CLEAR 40");
    add("CNT.INCR 42 7 4294967295 ID 1"); /* a record */
    add("CNT.INCR 42 7 1 ID 2");
    check_script("cnt");
}

/* One user past the sorted array into its own map and back, recalls
 * (full records), wide watermarks; many users to split the wmap. */
static void test_conv(void)
{
    for (unsigned c = 1; c <= 140; c++)
        add("CONV.INCR 1 %u %u", c, c % 3 + 1);
    for (unsigned c = 1; c <= 140; c += 7) {
        add("CONV.RECALL 1 %u %u", c, c % 3 + 1);
        add("CONV.RECALL 1 %u 9", c);
        add("CONV.SEQ 1 %u 9", c);
        add("CONV.MUTE 1 %u 1", c);
    }
    for (unsigned r = 20; r < 40; r++)
        add("CONV.RECALL 1 2 %u", r);
    add("CONV.SEQ 1 2 40");
    add("CONV.READ 1 2 30");
    add("CONV.MARKUNREAD 1 2 25");
    add("CONV.READ 1 3");
    add("CONV.SEQ 1 500 4398046511104"); /* read/max past the compact form */
    add("CONV.READ 1 500 4398046511100");
    add("CONV.INCR 1 501 3000000");
    add("CONV.MUTE 1 501 1");
    add("CONV.LIST 1 10");
    for (unsigned c = 1; c <= 140; c++)
        add("CONV.DEL 1 %u", c);
    for (unsigned u = 10; u < 700; u++) {
        add("CONV.INCR %u 7 1", u);
        if (u % 5 == 0)
            add("CONV.SEQ %u 8 3", u);
    }
    for (unsigned u = 10; u < 700; u += 3)
        add("CONV.READ %u 7", u);
    check_script("conv");
}

/* The chat features: mentions and sources (tag lists growing from none),
 * sparse ids past the window (unread-cap), threads created, grown, read
 * away and replaced, roll-up, mark-all-read over every user form and a
 * watermark leaving the compact form. */
static void test_conv_chat(void)
{
    for (unsigned q = 1; q <= 12; q++)
        add("CONV.SEQ 1 10 %u%s", q,
            q % 2   ? " MENTION"
            : q % 3 ? " SOURCE 2"
                    : " MENTION SOURCE 5");
    add("CONV.INCR 1 10 3 MENTION SOURCE 1");
    add("CONV.RECALL 1 10 4");
    add("CONV.READ 1 10 6");
    add("CONV.MARKUNREAD 1 10 3");
    for (unsigned k = 1; k <= 105; k++)
        add("CONV.SEQ 1 11 %u SPARSE%s", 1000 + 7 * k, k % 4 ? "" : " MENTION");
    add("CONV.RECALL 1 11 1700 SPARSE");
    add("CONV.RECALL 1 11 5000 SPARSE");
    add("CONV.READ 1 11 1300 SPARSE");
    add("CONV.MARKUNREAD 1 11 1001 SPARSE");
    for (unsigned t = 1; t <= 20; t++) {
        add("CONV.SEQ 1 12 %u THREAD %u MENTION", t % 4 + 1, t);
        add("CONV.INCR 1 13 2 THREAD %u", t);
        add("CONV.SEQ 1 14 %u SPARSE THREAD %u", 100 + t, t % 5);
    }
    add("CONV.RECALL 1 12 1 THREAD 4");
    add("CONV.MARKUNREAD 1 12 1 THREAD 5");
    add("CONV.ROLLUP 1 12 0");
    add("CONV.ROLLUP 1 15 0");
    add("CONV.ROLLUP 1 12 1");
    for (unsigned t = 1; t <= 20; t += 3)
        add("CONV.READ 1 13 THREAD %u", t);
    add("CONV.SEQ 1 16 2199023255550"); /* read-all leaves the compact form */
    add("CONV.READ 1 16 2199023255548");
    add("CONV.SEQ 1 16 2199023255560 THREAD 3");
    add("CONV.READ 1 16 2199023255552 THREAD 3");
    add("CONV.SEQ 1 16 2199023255570 THREAD 3");
    add("CONV.STATE 1 12 THREAD 2");
    add("CONV.LIST 1 5 STATE RECENT CURSOR 0");
    add("CONV.READALL 1");
    for (unsigned c = 100; c < 240; c++) /* a user in the map form */
        add("CONV.SEQ 2 %u 3%s", c, c % 9 ? "" : " MENTION THREAD 1");
    add("CONV.READALL 2");
    add("CONV.SEQ 3 1 5 MENTION"); /* one conversation, inline */
    add("CONV.READALL 3");
    add("CONV.DEL 1 12");
    add("CONV.DEL 1 11");
    check_script("conv chat");
}

/* Groups created by posts, joins and seens; rings doubling to the window;
 * users in many groups; the group index table past its first chunk. */
static void test_grp(void)
{
    for (unsigned k = 0; k < 130; k++)
        add("GRP.POST 1 %llu", (unsigned long long)(t0 + k));
    for (unsigned g = 2; g < 60; g++) {
        add("GRP.POST %u %llu", g, (unsigned long long)t0);
        add("GRP.JOIN 1 %u", g);
    }
    for (unsigned g = 60; g < 90; g++)
        add("GRP.JOIN 2 %u", g); /* groups created by a join */
    /* bulk joins: new groups and members, repeats */
    for (unsigned u = 700; u < 720; u++)
        add("GRP.JOIN %u 1 2 %u %u %u 2", u, 5000 + u, 6000 + u, 61);
    for (unsigned g = 90; g < 100; g++)
        add("GRP.SEEN 3 %u %llu", g, (unsigned long long)t0);
    add("GRP.SEEN 1 1 %llu", (unsigned long long)(t0 + 50));
    add("GRP.SEEN 1 1");
    for (unsigned u = 10; u < 600; u++)
        add("GRP.JOIN %u %u", u, u % 7 + 1);
    for (unsigned g = 2; g < 60; g += 2)
        add("GRP.LEAVE 1 %u", g);
    /* The group table's second chunk starts at index 4096. */
    for (unsigned g = 100; g < 4070; g++)
        setup("GRP.POST %u %llu", g, (unsigned long long)t0);
    for (unsigned g = 4070; g < 4110; g++)
        add("GRP.POST %u %llu", g, (unsigned long long)t0);
    check_script("grp");
}

/* Mutes, mark-unread (joining too), recalls growing to their bound,
 * posts that mention members (mention lists from none), mark-all-read. */
static void test_grp_chat(void)
{
    for (unsigned u = 1; u <= 12; u++)
        add("GRP.JOIN %u 5", u);
    for (unsigned k = 0; k < 40; k++)
        add("GRP.POST 5 %llu MENTION %u %u 99", (unsigned long long)(t0 + k),
            k % 12 + 1, (k + 5) % 12 + 1);
    add("GRP.POST 6 %llu MENTION 1", (unsigned long long)t0); /* new group */
    for (unsigned u = 1; u <= 12; u += 2)
        add("GRP.MUTE %u 5 1", u);
    add("GRP.MUTE 1 5 0");
    add("GRP.MARKUNREAD 1 5 3");
    add("GRP.MARKUNREAD 20 5 30"); /* joins */
    for (unsigned q = 1; q <= 40; q += 3)
        add("GRP.RECALL 5 %u", q);
    add("GRP.SEEN 2 5 %llu", (unsigned long long)(t0 + 20));
    add("GRP.STATE 3 5");
    add("GRP.LIST 3 5 STATE RECENT CURSOR 0");
    add("GRP.SEENALL 4");
    add("GRP.LEAVE 6 5");
    for (unsigned k = 0; k < 1030; k++) /* past the recall bound */
        setup("GRP.POST 7 %llu", (unsigned long long)(t0 + k));
    for (unsigned q = 1; q <= 1030; q++)
        setup("GRP.RECALL 7 %u", q);
    add("GRP.RECALL 7 1030");
    /* Seens that outgrow their record's one-byte values (memblist.h):
     * the re-encoding can fail, and nothing may change when it does. */
    for (unsigned u = 30; u <= 32; u++) {
        setup("GRP.JOIN %u 8", u);
        setup("GRP.JOIN %u 9", u);
    }
    for (unsigned k = 0; k < 300; k++)
        setup("GRP.POST 8 %llu", (unsigned long long)(t0 + k));
    add("GRP.SEENALL 30");
    add("GRP.SEEN 31 8");
    add("GRP.MARKUNREAD 32 8 290");
    check_script("grp chat");
}

/* Channels created by each command, one channel's table past a bucket
 * split, many channels. */
static void test_bc(void)
{
    for (unsigned c = 1; c < 40; c++)
        add("BC.PUBLISH %u", c);
    for (unsigned u = 1; u < 1300; u++)
        add(u % 2 ? "BC.READ %u 1" : "BC.UNREAD %u 1", u);
    for (unsigned c = 40; c < 80; c++)
        add(c % 2 ? "BC.UNREAD 7 %u" : "BC.READ 7 %u", c);
    for (unsigned c = 80; c < 90; c++)
        add("BC.READ 8 %u 3", c); /* upto, channels created by it */
    for (unsigned u = 1; u < 40; u++)
        add("BC.READ %u 1 %u", u, u % 30);
    check_script("bc");
}

/* Dots past the index table's first chunk; users clicking many dots (every
 * size class of the click records, out of line and growing there), new
 * dots created by clicks, a class's second chunk of records. */
static void test_dot(void)
{
    for (unsigned d = 1; d < 4200; d++)
        add("DOT.PUSH %u %llu", d, (unsigned long long)t0);
    for (unsigned d = 1; d < 60; d++)
        add("DOT.CLICK 1 %u %llu", d, (unsigned long long)(t0 + d));
    for (unsigned d = 1; d < 90; d++)
        add("DOT.CLICK 3 %u %llu", 91 - d, (unsigned long long)(t0 + d));
    for (unsigned d = 5000; d < 5020; d++)
        add("DOT.CLICK 2 %u %llu", d, (unsigned long long)t0);
    for (unsigned u = 10; u < 2200; u++)
        add("DOT.CLICK %u %u", u, u % 9 + 1);
    check_script("dot");
}

/* Authors created by posts and follows, users following many. */
static void test_feed(void)
{
    for (unsigned a = 1; a < 300; a++)
        add("FEED.POST %u %u", a, a % 4 + 1);
    for (unsigned a = 1; a < 80; a++)
        add("FEED.FOLLOW 1 %u", a);
    for (unsigned a = 9000; a < 9030; a++)
        add("FEED.FOLLOW 2 %u", a);
    add("FEED.UNPOST 3 2");
    add("FEED.RESET 1");
    for (unsigned a = 1; a < 80; a += 3)
        add("FEED.UNFOLLOW 1 %u", a);
    for (unsigned u = 10; u < 700; u++)
        add("FEED.FOLLOW %u %u", u, u % 11 + 1);
    /* bulk follows: new authors, followees, repeats */
    for (unsigned u = 700; u < 720; u++)
        add("FEED.FOLLOW %u 1 %u %u 2 %u", u, 20000 + u, 30000 + u, 20000 + u);
    /* packed lists: blocks that split in the middle and at the front,
     * widen for a far author or a new snapshot, a bulk follow into a long
     * list, a reset whose snapshots need more bits */
    for (unsigned i = 0; i < 150; i++)
        add("FEED.FOLLOW 2 %u", 9000 + (i * 37) % 300);
    for (unsigned a = 8999; a > 8930; a -= 3)
        add("FEED.FOLLOW 2 %u", a);
    add("FEED.POST 9001 100000");
    add("FEED.FOLLOW 2 9001 1 2 3 40000 9003");
    add("FEED.RESET 2");
    add("FEED.FOLLOW 2 4000000000");
    check_script("feed");
}

/* A group past its first chunks of members and records, quits between
 * sends (shared quit sets), reads collapsing messages; groups created by
 * joins and sends. */
static void test_rcpt(void)
{
    for (unsigned u = 1; u <= 300; u++)
        add("RCPT.JOIN 1 %u", u);
    for (unsigned m = 1; m <= 300; m++) {
        add("RCPT.SEND 1 %u %u %llu", m, m % 300 + 1,
            (unsigned long long)(t0 + m));
        if (m % 25 == 0)
            add("RCPT.QUIT 1 %u", m);
        if (m % 40 == 0)
            add("RCPT.JOIN 1 %u", m - 15);
    }
    for (unsigned u = 1; u <= 300; u += 4)
        add("RCPT.READ 1 %u %u %u %u", u, u, u + 1, u + 2);
    for (unsigned u = 1; u <= 300; u += 9)
        add("RCPT.READUPTO 1 %u 200", u);
    /* Watermarks: late msgids (below one sent before) that READUPTO reads
     * one by one; members joining mid-chunk, so that a chunk's bitmaps of
     * out-of-order reads widen; senders behind their own watermark. */
    for (unsigned m = 1; m <= 40; m++)
        add("RCPT.SEND 1 %u %u %llu", 1000 - m, m + 1,
            (unsigned long long)(t0 + 400 + m));
    for (unsigned u = 2; u <= 300; u += 37)
        add("RCPT.READUPTO 1 %u 980", u);
    for (unsigned m = 0; m < 24; m++) {
        add("RCPT.JOIN 1 %u", 301 + m);
        add("RCPT.SEND 1 %u %u %llu", 2000 + m, m + 2,
            (unsigned long long)(t0 + 500 + m));
    }
    for (unsigned m = 0; m < 24; m += 2)
        add("RCPT.READ 1 7 %u %u", 2000 + m, 2001 + m);
    add("RCPT.READ 1 320 2023 2022 2021");
    for (unsigned m = 1; m < 24; m += 2) /* one msgid, out of order */
        add("RCPT.READ 1 11 %u", 2024 - m);
    add("RCPT.SEND 2 1 5 %llu", (unsigned long long)t0); /* new group */
    for (unsigned g = 3; g < 40; g++) {
        add("RCPT.JOIN %u 1", g);
        add("RCPT.JOIN %u 2", g);
        add("RCPT.SEND %u 1 1 %llu", g, (unsigned long long)t0);
        add("RCPT.READ %u 2 1", g);
    }
    check_script("rcpt");
}

/* The commands of no family: erasing users and everything. */
static void test_users(void)
{
    for (unsigned u = 1; u < 300; u++) {
        add("CNT.INCR %u 1", u);
        add("CONV.INCR %u 1", u);
        add("GRP.JOIN %u 1", u);
        add("BC.READ %u 1", u);
        add("DOT.CLICK %u 1 %llu", u, (unsigned long long)t0);
        add("FEED.FOLLOW %u 1", u);
        add("RCPT.JOIN 1 %u", u);
    }
    for (unsigned u = 1; u < 300; u += 2)
        add("USER.DEL %u", u);
    for (unsigned u = 2; u < 300; u += 4)
        add("USER.EXPIRE %u cnt conv grp bc dot feed", u);
    add("FLUSHALL");
    add("CNT.INCR 1 1");
    check_script("users");
}

/* Moving users: RESTORE of a record holding every family (the global
 * objects it names already held, as on a cluster's primaries), and the
 * deletes MIGRATE journals (MIGRATED). */
static void test_restore(void)
{
    static char hex[LINE_MAX_BYTES];
    const char *p;
    size_t n;

    run("CNT.INCR 7 1 3");
    run("CNT.INCR 7 2 4 ID 99");
    run("CONV.SEQ 7 70 10 MENTION");
    run("CONV.SEQ 7 71 12 THREAD 5");
    run("GRP.JOIN 7 900");
    run("BC.READ 7 33");
    run("DOT.CLICK 7 44");
    run("FEED.FOLLOW 7 55");
    run("RCPT.JOIN 7 7");
    run("RCPT.JOIN 7 8");
    run("RCPT.SEND 7 1000 7");
    CHECK(userrec_dump(&srv.db, 7, &p, &n) == 0);
    CHECK(2 * n + 16 < sizeof(hex));
    for (size_t i = 0; i < n && 2 * i + 3 < sizeof(hex); i++)
        snprintf(hex + 2 * i, 3, "%02x", (unsigned char)p[i]);
    db_reset();
    setup("GRP.JOIN 8 900");
    setup("BC.READ 8 33");
    setup("DOT.CLICK 8 44 %llu", (unsigned long long)t0);
    setup("FEED.FOLLOW 8 55");
    add("RESTORE 7 0 hex:%s", hex);
    add("MIGRATED 7");
    add("RESTORE-ASKING 7 0 hex:%s", hex);
    add("MIGRATED 7 8");
    check_script("restore");
}

/* Cluster mode's copies of global objects (GLOBALCOPY), as a receiver's
 * replica or its journal's replay applies them: with srv.loading, which
 * applies without the owner and version checks a live node makes. */
static void test_cluster_copies(void)
{
    static const char id[] = "0123456789abcdef0123456789abcdef01234567";
    /* 0x4141414141414141: a head, a recalled seq and a timestamp that the
     * text of a command can carry as the 8 bytes "AAAAAAAA". */
    const unsigned long long big = 0x4141414141414141ull;

    for (unsigned k = 1; k < 40; k++) {
        add("GLOBALCOPY %s 1 %u %u BC %u %u", id, k, ur_u64_slot(k), k, k * 3);
        add("GLOBALCOPY %s 1 %u %u DOT %u %llu", id, k, ur_u64_slot(k), k,
            (unsigned long long)t0 + k);
        add("GLOBALCOPY %s 1 %u %u FEED %u %u", id, k, ur_u64_slot(k), k, k);
        add("GLOBALCOPY %s 1 %u %u POST %u %u %llu", id, k, ur_u64_slot(k), k,
            k % 5 + 1, (unsigned long long)t0 + k);
        add("GLOBALCOPY %s 1 %u %u POST %u %u %llu 1 2 3", id, k,
            ur_u64_slot(k), k, k % 5 + 300, (unsigned long long)t0 + k);
        add("GLOBALCOPY %s 1 %u %u RECALL %u 2", id, k, ur_u64_slot(k), k);
        add("GLOBALCOPY %s 1 %u %u UDEL %u", id, k, ur_u64_slot(k), k);
    }
    for (unsigned k = 100; k < 110; k++)
        add("GLOBALCOPY %s 2 %u %u GROUP %u %llu 1 AAAAAAAA AAAAAAAA", id, k,
            ur_u64_slot(k), k, big);
    srv.loading = true;
    check_script("cluster copies");
    srv.loading = false;
}

/* Every write command of the table ran in some script above. */
static void test_coverage(void)
{
    for (unsigned i = 0; i < UR_OP_COUNT; i++) {
        if (!(ur_ops[i].flags & OPF_WRITE) || op_run[i])
            continue;
        fprintf(stderr, "  %s: a write command no script runs\n",
                ur_ops[i].name);
        CHECK(op_run[i]);
    }
}

int main(void)
{
    config_init(&srv.cfg);
    t0 = server_now_ms();
    ur_buf_init(&out);
    if (db_init(&srv.db) != 0 || journal_open() != 0)
        return 1;
    T_RUN(test_cnt);
    T_RUN(test_conv);
    T_RUN(test_conv_chat);
    T_RUN(test_grp);
    T_RUN(test_grp_chat);
    T_RUN(test_bc);
    T_RUN(test_dot);
    T_RUN(test_feed);
    T_RUN(test_rcpt);
    T_RUN(test_users);
    T_RUN(test_cluster_copies);
    T_RUN(test_restore);
    T_RUN(test_coverage);
    fprintf(stderr,
            "%llu commands probed, %llu runs, %llu error replies, %llu "
            "failures absorbed\n",
            (unsigned long long)n_probed, (unsigned long long)n_runs,
            (unsigned long long)n_errors, (unsigned long long)n_absorbed);
    journal_close();
    db_deinit(&srv.db);
    CHECK_EQ_U64(mem_used(), 0);
    ur_buf_deinit(&out);
    T_END();
}
