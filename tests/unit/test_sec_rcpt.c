/*
 * test_sec_rcpt.c - the RCPT section of the snapshot: a randomized store
 * (groups of 0 to 300 mapids, joins, quits and rejoins between sends,
 * reads, READUPTO, retention drops, msgids resent after they expired)
 * survives a round trip message by message: the same counts and the same
 * READ and UNREAD lists for every message at several retention horizons,
 * the same walk (quit sets shared again, messages read by everyone still
 * without a bitmap), about the same bytes, and the same answers to the
 * same later commands. Crafted sections whose checksums are right but
 * whose content is not are refused with a message, never loaded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "rcpt.h"
#include "snap_craft.h"
#include "t.h"

#define GROUPS 14
#define STEPS 60000
#define AGE_MS 3000000ull /* the retention of the run */
#define T0 1700000000000ull
#define MAX_SENT 40000

/* Mapid pools: group g draws uids from pool[g % 7] candidates (0: nobody
 * ever joins; sends come from non-members). */
static const unsigned pool[7] = {0, 3, 20, 64, 65, 130, 300};

static uint64_t gid_of(unsigned g)
{
    return g * 1000003ull + 7;
}

static uint64_t uid_of(unsigned g, unsigned i)
{
    return (uint64_t)i * 7919 + g;
}

struct sent {
    uint64_t gid, msgid;
};

struct run {
    uint64_t clock; /* ms */
    size_t nsent;
    struct sent sent[MAX_SENT];
};

static uint64_t horizon(const struct run *run)
{
    return run->clock - AGE_MS;
}

enum { JOIN, QUIT, SEND, READ, UPTO, FORGET, EXPIRE };

/* Runs without USER.DEL: every uid of a group names one mapid. */
static bool no_forget;

struct cmd {
    unsigned op;
    uint64_t gid, uid, msgid, ts;
};

/* A random command: mostly sends and reads; sends mostly fresh, some
 * near the horizon (they expire soon). */
static struct cmd random_cmd(struct run *run)
{
    unsigned g = (unsigned)(t_rng() % GROUPS), x = (unsigned)(t_rng() % 100);
    unsigned np = pool[g % 7] + pool[g % 7] / 5 + 1;
    struct cmd c = {EXPIRE, gid_of(g), uid_of(g, (unsigned)(t_rng() % np)),
                    t_rng() % 4000, 0};

    run->clock += t_rng() % 400;
    if (x < 8)
        c.op = pool[g % 7] > 0 ? JOIN : QUIT;
    else if (x < 12)
        c.op = QUIT;
    else if (x < 40)
        c.op = SEND;
    else if (x < 90)
        c.op = READ;
    else if (x < 93)
        c.op = UPTO;
    else if (x < 94 && !no_forget)
        c.op = FORGET;
    c.ts = run->clock - (x < 20 ? t_rng() % 1000 : AGE_MS - t_rng() % 200000);
    return c;
}

/* The store's answer to c at horizon h, as one number. Retention drops
 * are not compared: two stores may free invisible messages in another
 * order. */
static uint64_t apply(struct rcpt_store *s, const struct cmd *c, uint64_t h)
{
    uint32_t v = 0;
    int rc;

    switch (c->op) {
    case JOIN:
        rc = rcpt_join(s, c->gid, c->uid, 100000, &v);
        return (uint64_t)(uint32_t)rc << 32 | v;
    case QUIT:
        return rcpt_quit(s, c->gid, c->uid);
    case SEND:
        rc = rcpt_send(s, c->gid, c->msgid, c->uid, c->ts, h, &v);
        return (uint64_t)(uint32_t)rc << 32 | v;
    case READ:
        return rcpt_read(s, c->gid, c->uid, c->msgid, h);
    case UPTO:
        return rcpt_read_upto(s, c->gid, c->uid, c->msgid, h);
    case FORGET:
        return rcpt_forget_user(s, c->uid);
    default:
        rcpt_expire_step(s, h, 16);
        return 0;
    }
}

/* A store after a random run: retention has dropped the oldest messages,
 * some msgids were resent after they expired. */
static void fill(struct run *run, struct db *db)
{
    uint32_t m;

    CHECK(db_init(db) == 0);
    run->clock = T0;
    for (unsigned i = 0; i < STEPS; i++) {
        struct cmd c = random_cmd(run);

        if (apply(db->rcpt, &c, horizon(run)) == 0 && c.op == SEND &&
            run->nsent < MAX_SENT)
            run->sent[run->nsent++] = (struct sent){c.gid, c.msgid};
    }
    /* Group 99: 1002 quit, a message, 1002 back: nobody has quit now, but
     * the last message went out under a quit set. */
    for (unsigned i = 0; i < 5; i++)
        CHECK(rcpt_join(db->rcpt, 99, 1000 + i, 100000, &m) == RCPT_OK);
    CHECK(rcpt_quit(db->rcpt, 99, 1002));
    CHECK(rcpt_send(db->rcpt, 99, 1, 1000, run->clock, 0, &m) == RCPT_OK);
    CHECK(rcpt_join(db->rcpt, 99, 1002, 100000, &m) == RCPT_OK);
}

struct uids {
    uint32_t n;
    uint64_t v[512];
};

static void collect(uint64_t uid, void *ctx)
{
    struct uids *u = ctx;

    if (u->n < 512)
        u->v[u->n++] = uid;
}

/* What a store says of one message at one horizon, as a digest: the
 * counts and both lists. */
static uint64_t answers(const struct rcpt_store *s, uint64_t gid,
                        uint64_t msgid, uint64_t h)
{
    struct uids rd = {0, {0}}, un = {0, {0}};
    uint32_t c[2] = {0, 0}, n;
    uint64_t d;

    if (rcpt_count(s, gid, msgid, h, &c[0], &c[1]) != RCPT_OK)
        return 1;
    CHECK(rcpt_list(s, gid, msgid, h, true, 0, UINT32_MAX, collect, &rd, &n) ==
          RCPT_OK);
    CHECK(rcpt_list(s, gid, msgid, h, false, 0, UINT32_MAX, collect, &un, &n) ==
          RCPT_OK);
    CHECK(rd.n == c[0] && un.n == c[1]);
    d = XXH3_64bits_withSeed(c, sizeof(c), msgid);
    d ^= XXH3_64bits_withSeed(rd.v, rd.n * 8, 1);
    return d ^ XXH3_64bits_withSeed(un.v, un.n * 8, 2) * 3;
}

/* A walk as an order-independent sum of per-group digests (the group
 * order is the map's), each item of a group hashed in order. */
struct walk_sum {
    uint64_t sum;
    XXH3_state_t *h;
    bool open;
    size_t groups, epochs, msgs, bitmaps, gaps, parked;
};

static void walk_close(struct walk_sum *ws)
{
    if (ws->open)
        ws->sum += XXH3_64bits_digest(ws->h);
    ws->open = false;
}

static void walk_group(uint64_t gid, uint32_t nmap, void *ctx)
{
    struct walk_sum *ws = ctx;

    walk_close(ws);
    XXH3_64bits_reset(ws->h);
    ws->open = true;
    ws->groups++;
    XXH3_64bits_update(ws->h, &gid, 8);
    XXH3_64bits_update(ws->h, &nmap, 4);
}

static void walk_member(uint64_t uid, bool quit, void *ctx)
{
    struct walk_sum *ws = ctx;
    uint64_t v[2] = {uid, quit};

    XXH3_64bits_update(ws->h, v, sizeof(v));
}

static void walk_epoch(uint32_t nwords, const uint64_t *quit, void *ctx)
{
    struct walk_sum *ws = ctx;

    ws->epochs++;
    XXH3_64bits_update(ws->h, "E", 1);
    XXH3_64bits_update(ws->h, quit, nwords * 8);
}

static void walk_msg(const struct rcpt_msg_info *m, void *ctx)
{
    struct walk_sum *ws = ctx;
    uint64_t v[5] = {m->msgid, m->ts, m->nmemb, m->sender, m->sender_done};

    ws->msgs++;
    XXH3_64bits_update(ws->h, v, sizeof(v));
    if (m->reads != NULL) {
        ws->bitmaps++;
        XXH3_64bits_update(ws->h, m->reads, RCPT_BYTES(m->nmemb));
    }
}

static void walk_marks(uint32_t ngaps, void *ctx)
{
    struct walk_sum *ws = ctx;

    ws->gaps += ngaps;
    XXH3_64bits_update(ws->h, &ngaps, 4);
}

static void walk_mark(uint32_t w, uint32_t qfrom, void *ctx)
{
    struct walk_sum *ws = ctx;
    uint32_t v[2] = {w, qfrom};

    ws->parked += w == RCPT_PARKED;
    XXH3_64bits_update(ws->h, v, sizeof(v));
}

static void walk_gap(const struct rcpt_gap *gp, void *ctx)
{
    struct walk_sum *ws = ctx;

    XXH3_64bits_update(ws->h, gp, sizeof(*gp));
}

static struct walk_sum walk(const struct rcpt_store *s)
{
    static const struct rcpt_walk fns = {walk_group, walk_member, walk_epoch,
                                         walk_msg,   walk_marks,  walk_mark,
                                         walk_gap};
    struct walk_sum ws = {0, XXH3_createState(), false, 0, 0, 0, 0, 0, 0};
    uint64_t cursor = 0;

    do
        rcpt_scan(s, &cursor, 3, &fns, &ws);
    while (cursor != 0);
    walk_close(&ws);
    XXH3_freeState(ws.h);
    return ws;
}

static void test_round_trip(void)
{
    static struct run run;
    struct db a, b;
    struct snap_meta meta;
    struct walk_sum wa, wb;
    char *buf, err[256];
    size_t len, bad = 0;
    double pa, pb;

    fill(&run, &a);
    len = snap_image(&a, 1, 0, &buf);
    CHECK(len > 0);
    CHECK(db_init(&b) == 0);
    CHECK(snapshot_load(buf, len, &b, &meta, err, sizeof(err)) == 0);
    if (rcpt_entries(b.rcpt) != rcpt_entries(a.rcpt))
        fprintf(stderr, "load: %s\n", err);
    CHECK_EQ_U64(rcpt_entries(b.rcpt), rcpt_entries(a.rcpt));
    CHECK_EQ_U64(rcpt_groups(b.rcpt), rcpt_groups(a.rcpt));
    CHECK_EQ_U64(db_audit(&b), 0);
    /* Every message at every horizon: held, now, later, gone. */
    for (size_t i = 0; i < run.nsent; i++) {
        const struct sent *m = &run.sent[i];

        for (uint64_t k = 0; k < 4; k++) {
            uint64_t h = k == 0 ? 0 : horizon(&run) + (k - 1) * AGE_MS / 3;

            bad += answers(a.rcpt, m->gid, m->msgid, h) !=
                   answers(b.rcpt, m->gid, m->msgid, h);
        }
    }
    CHECK_EQ_U64(bad, 0);
    /* The same walk: members, quit sets shared, bitmaps only where open. */
    wa = walk(a.rcpt);
    wb = walk(b.rcpt);
    CHECK(wa.msgs > 1000 && wa.bitmaps > 100 && wa.epochs > 50);
    CHECK(wa.bitmaps < wa.msgs);
    CHECK_EQ_U64(wb.sum, wa.sum);
    CHECK_EQ_U64(wb.groups, wa.groups);
    CHECK_EQ_U64(wb.epochs, wa.epochs);
    CHECK_EQ_U64(wb.bitmaps, wa.bitmaps);
    /* About the same memory: the restored store is not a blown-up copy. */
    pa = (double)rcpt_bytes(a.rcpt) / (double)rcpt_entries(a.rcpt);
    pb = (double)rcpt_bytes(b.rcpt) / (double)rcpt_entries(b.rcpt);
    fprintf(stderr, "bytes/message %.1f before, %.1f after (%zu messages)\n",
            pa, pb, rcpt_entries(a.rcpt));
    CHECK(pb < pa * 1.15 && pb > pa * 0.7);
    /* The same answers to the same commands afterwards. */
    for (unsigned i = 0; i < STEPS / 2; i++) {
        struct cmd c = random_cmd(&run);

        bad += apply(a.rcpt, &c, horizon(&run)) !=
               apply(b.rcpt, &c, horizon(&run));
    }
    /* Group 99's next message goes out under the quit set it has now. */
    bad += answers(a.rcpt, 99, 2, 0) != 1 || answers(b.rcpt, 99, 2, 0) != 1;
    for (unsigned i = 0; i < 2; i++) {
        struct cmd c = {i ? READ : SEND, 99, 1000 + i, 2, run.clock};

        bad += apply(a.rcpt, &c, 0) != apply(b.rcpt, &c, 0);
        bad += answers(a.rcpt, 99, 2, 0) != answers(b.rcpt, 99, 2, 0);
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(db_audit(&a), 0);
    CHECK_EQ_U64(db_audit(&b), 0);
    db_deinit(&a);
    db_deinit(&b);
    free(buf);
}

/* ---- format 1 ------------------------------------------------------------
 * The section as unreadd wrote it before watermarks (format 1): written
 * here from what a store answers, byte for byte as the old sec_rcpt_save
 * did (items 1 to 4), so that a format-1 file of a whole random store can
 * be loaded and its every answer compared. */

struct v1w {
    const struct rcpt_store *s;
    uint8_t *b;
    size_t len, cap;
    uint64_t gid;
    uint32_t nmap, nmemb, nuids;
    uint64_t uids[1][512]; /* mapid -> uid */
};

static void v1_put(struct v1w *v, const void *p, size_t n)
{
    if (v->len + n > v->cap) {
        v->cap = (v->len + n) * 2;
        v->b = realloc(v->b, v->cap);
    }
    memcpy(v->b + v->len, p, n);
    v->len += n;
}

static void v1_u8(struct v1w *v, uint8_t x)
{
    v1_put(v, &x, 1);
}

static void v1_u64(struct v1w *v, uint64_t x)
{
    for (int i = 0; i < 8; i++)
        v1_u8(v, (uint8_t)(x >> (8 * i)));
}

static void v1_varint(struct v1w *v, uint64_t x)
{
    for (; x >= 0x80; x >>= 7)
        v1_u8(v, (uint8_t)(x | 0x80));
    v1_u8(v, (uint8_t)x);
}

static void v1_group(uint64_t gid, uint32_t nmap, void *ctx)
{
    struct v1w *v = ctx;

    CHECK(nmap <= 512);
    v->gid = gid;
    v->nmap = nmap;
    v->nmemb = v->nuids = 0;
    v1_u8(v, 1);
    v1_u64(v, gid);
    v1_varint(v, nmap);
}

static void v1_member(uint64_t uid, bool quit, void *ctx)
{
    struct v1w *v = ctx;

    v->uids[0][v->nuids++] = uid;
    v1_u64(v, uid);
    v1_u8(v, quit);
}

static void v1_epoch(uint32_t nwords, const uint64_t *quit, void *ctx)
{
    struct v1w *v = ctx;

    v1_u8(v, 2);
    v1_varint(v, nwords);
    for (uint32_t i = 0; i < nwords; i++)
        v1_u64(v, quit[i]);
}

static uint32_t v1_mapid(const struct v1w *v, uint64_t uid)
{
    for (uint32_t m = 0; m < v->nmap; m++)
        if (v->uids[0][m] == uid)
            return m;
    CHECK(!"a listed uid that is no member");
    return 0;
}

/* Item 3, or 4 with "read or not a recipient" words from the UNREAD
 * list: every bit set but the unread recipients'. */
static void v1_msg(const struct rcpt_msg_info *m, void *ctx)
{
    struct v1w *v = ctx;
    struct uids un = {0, {0}};
    uint64_t bits[RCPT_WORDS(512)];
    uint32_t n, nw = RCPT_WORDS(m->nmemb);

    CHECK(rcpt_list(v->s, v->gid, m->msgid, 0, false, 0, UINT32_MAX, collect,
                    &un, &n) == RCPT_OK);
    memset(bits, 0xff, sizeof(bits));
    for (uint32_t i = 0; i < un.n; i++) {
        uint32_t k = v1_mapid(v, un.v[i]);

        bits[k / 64] &= ~(UINT64_C(1) << (k % 64));
    }
    v1_u8(v, un.n > 0 ? 4 : 3);
    v1_u64(v, m->msgid);
    for (int i = 0; i < 4; i++)
        v1_u8(v, (uint8_t)(m->ts >> (8 * i)));
    v1_varint(v, m->nmemb - v->nmemb);
    v1_varint(v, m->sender == RCPT_NOSENDER ? 0 : m->sender + 1ull);
    for (uint32_t i = 0; un.n > 0 && i < nw; i++)
        v1_u64(v, bits[i]);
    v->nmemb = m->nmemb;
}

static void v1_marks(uint32_t ngaps, void *ctx)
{
    (void)ngaps, (void)ctx;
}

static void v1_mark(uint32_t w, uint32_t qfrom, void *ctx)
{
    (void)w, (void)qfrom, (void)ctx;
}

static void v1_gap(const struct rcpt_gap *gp, void *ctx)
{
    (void)gp, (void)ctx;
}

/*
 * A format-1 section of a random store (quits, rejoins, retention, resent
 * msgids; no USER.DEL, whose anonymous uids a list cannot tell apart)
 * loads into a store that gives every answer the original gives, at every
 * horizon, passes its audit, answers later commands the same, and takes
 * no more memory than the original (its watermarks are derived).
 */
static void test_format1(void)
{
    static const struct rcpt_walk fns = {v1_group, v1_member, v1_epoch, v1_msg,
                                         v1_marks, v1_mark,   v1_gap};
    static struct run run;
    static struct v1w v;
    struct snap_meta meta;
    struct db a, b;
    uint64_t cursor = 0;
    size_t bad = 0, n;
    char *buf, err[256];

    no_forget = true;
    fill(&run, &a);
    v.s = a.rcpt;
    do
        rcpt_scan(a.rcpt, &cursor, 4, &fns, &v);
    while (cursor != 0);
    CHECK(v.len > 10000);
    n = snap_craft(7, v.b, v.len, &buf);
    CHECK(db_init(&b) == 0);
    err[0] = '\0';
    CHECK(snapshot_load(buf, n, &b, &meta, err, sizeof(err)) == 0);
    if (rcpt_entries(b.rcpt) != rcpt_entries(a.rcpt))
        fprintf(stderr, "load: %s\n", err);
    CHECK_EQ_U64(rcpt_entries(b.rcpt), rcpt_entries(a.rcpt));
    CHECK_EQ_U64(rcpt_groups(b.rcpt), rcpt_groups(a.rcpt));
    CHECK_EQ_U64(db_audit(&b), 0);
    for (size_t i = 0; i < run.nsent; i++)
        for (uint64_t k = 0; k < 4; k++) {
            uint64_t h = k == 0 ? 0 : horizon(&run) + (k - 1) * AGE_MS / 3;
            const struct sent *m = &run.sent[i];

            bad += answers(a.rcpt, m->gid, m->msgid, h) !=
                   answers(b.rcpt, m->gid, m->msgid, h);
        }
    CHECK_EQ_U64(bad, 0);
    fprintf(stderr,
            "format 1: %zu raw bytes, bytes/message %.1f before, "
            "%.1f after\n",
            v.len, (double)rcpt_bytes(a.rcpt) / (double)rcpt_entries(a.rcpt),
            (double)rcpt_bytes(b.rcpt) / (double)rcpt_entries(b.rcpt));
    CHECK(rcpt_bytes(b.rcpt) <= rcpt_bytes(a.rcpt) * 11 / 10);
    for (unsigned i = 0; i < STEPS / 4; i++) {
        struct cmd c = random_cmd(&run);

        bad += apply(a.rcpt, &c, horizon(&run)) !=
               apply(b.rcpt, &c, horizon(&run));
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(db_audit(&a), 0);
    CHECK_EQ_U64(db_audit(&b), 0);
    no_forget = false;
    db_deinit(&a);
    db_deinit(&b);
    free(buf);
    free(v.b);
}

/* ---- crafted sections ---------------------------------------------------- */

/* Loads raw bytes as section 7: the load's result, its message in err. A
 * store that loads must pass its audit. */
static int load_raw(const void *raw, size_t len, char *err, size_t errlen)
{
    struct snap_meta meta;
    struct db db;
    char *buf;
    size_t n = snap_craft(7, raw, len, &buf);
    int rc;

    CHECK(n > 0);
    CHECK(db_init(&db) == 0);
    err[0] = '\0';
    rc = snapshot_load(buf, n, &db, &meta, err, errlen);
    if (rc == 0)
        CHECK_EQ_U64(db_audit(&db), 0);
    db_deinit(&db);
    free(buf);
    return rc;
}

/* true when raw is refused with `want` in the message (want NULL:
 * loaded). */
static bool judged(const void *raw, size_t len, const char *want)
{
    char err[512];
    int rc = load_raw(raw, len, err, sizeof(err));
    bool ok = want == NULL ? rc == 0 : rc != 0 && strstr(err, want) != NULL;

    if (!ok)
        fprintf(stderr, "expected '%s', got rc %d '%s'\n",
                want ? want : "a load", rc, err);
    return ok;
}

#define U64LE(x) (x), 0, 0, 0, 0, 0, 0, 0
#define TS 0x00, 0x30, 0x5a, 0x65 /* 1700409344 s */

/*
 * Group 5: uids 10, 11, 12 (mapids 0, 1, 2), 12 has quit; the quit set
 * {2}; message 100 by mapid 0, read by its one recipient (mapid 1);
 * message 101 by mapid 1, unread by mapid 0 (bitmap ~1: every bit but 0).
 * Offsets: 0 the group (uids at 10, 19, 28, their quit bytes at 18, 27,
 * 36); 37 the quit set (nwords 38, word 39); 47 message 100 (msgid 48,
 * ts 56, nmemb 60, sender 61); 62 message 101 (msgid 63, ts 71, nmemb 75,
 * sender 76, bitmap 77 to 84).
 */
static const unsigned char good[] = {
    1,    U64LE(5), 3,          U64LE(10), 0,    U64LE(11),  0,    U64LE(12),
    1,    2,        1,          U64LE(4),  3,    U64LE(100), TS,   3,
    1,    4,        U64LE(101), TS,        0,    2,          0xfe, 0xff,
    0xff, 0xff,     0xff,       0xff,      0xff, 0xff};

static void test_crafted_good(void)
{
    struct snap_meta meta;
    struct db db;
    char *buf, err[512];
    size_t n = snap_craft(7, good, sizeof(good), &buf);
    uint32_t r, u, cnt;
    struct uids l = {0, {0}};

    CHECK(db_init(&db) == 0);
    CHECK(snapshot_load(buf, n, &db, &meta, err, sizeof(err)) == 0);
    CHECK(rcpt_count(db.rcpt, 5, 100, 0, &r, &u) == RCPT_OK && r == 1 &&
          u == 0);
    CHECK(rcpt_count(db.rcpt, 5, 101, 0, &r, &u) == RCPT_OK && r == 0 &&
          u == 1);
    CHECK(rcpt_list(db.rcpt, 5, 101, 0, false, 0, 10, collect, &l, &cnt) ==
              RCPT_OK &&
          cnt == 1 && l.v[0] == 10);
    /* ts came back: visible at its second, gone a second later */
    CHECK(rcpt_count(db.rcpt, 5, 101, 1700409344000ull, &r, &u) == RCPT_OK);
    CHECK(rcpt_count(db.rcpt, 5, 101, 1700409345000ull, &r, &u) == RCPT_ENOMSG);
    CHECK_EQ_U64(rcpt_read(db.rcpt, 5, 10, 101, 0), 1);
    CHECK(rcpt_count(db.rcpt, 5, 101, 0, &r, &u) == RCPT_OK && r == 1 &&
          u == 0);
    CHECK(rcpt_join(db.rcpt, 5, 12, 3, &cnt) == RCPT_OK && cnt == 2);
    CHECK(rcpt_send(db.rcpt, 5, 102, 10, T0, 0, &cnt) == RCPT_OK && cnt == 2);
    CHECK_EQ_U64(db_audit(&db), 0);
    db_deinit(&db);
    free(buf);
    /* prefixes of whole items */
    CHECK(judged(good, 62, NULL));
    CHECK(judged(good, 47, NULL)); /* a quit set no message uses */
    CHECK(judged(good, 37, NULL)); /* members only */
}

static void test_crafted_bad(void)
{
    unsigned char bad[sizeof(good) * 2];
    char err[512];

#define BAD(off, val, msg)                                                     \
    do {                                                                       \
        memcpy(bad, good, sizeof(good));                                       \
        bad[off] = (val);                                                      \
        CHECK(judged(bad, sizeof(good), msg));                                 \
    } while (0)
    BAD(0, 0, "format 5 (this unreadd reads 1 and 2)"); /* 0 opens format 2 */
    BAD(0, 3, "before any group");
    BAD(47, 9, "unknown item 9");
    BAD(19, 10, "member 10: listed twice");
    BAD(18, 2, "member 10: inconsistent");
    BAD(38, 2, "bad varint");                /* more words than 3 mapids need */
    BAD(39, 0, "quit set: inconsistent");    /* a zero last word */
    BAD(39, 0x0c, "quit set: inconsistent"); /* mapid 3 does not exist */
    BAD(60, 4, "bad varint");                /* nmemb over the mapids */
    BAD(61, 4, "bad varint");                /* sender not under nmemb */
    BAD(63, 100, "message 100: listed twice");
    BAD(77, 0xfa, "message 101: inconsistent"); /* quit mapid 2 unmarked */
    BAD(77, 0xfc, "message 101: inconsistent"); /* sender unmarked */
    BAD(77, 0xff, "message 101: inconsistent"); /* nobody unread */
    BAD(84, 0x7f, "message 101: inconsistent"); /* a padding bit clear */
#undef BAD
    /* Erased users' mapids (RCPT_UID_ANON) come back, as many as there
     * are, always quit. */
    memcpy(bad, good, sizeof(good));
    memset(bad + 10, 0xff, 8);
    memset(bad + 19, 0xff, 8);
    bad[18] = bad[27] = 1;
    CHECK(judged(bad, sizeof(good), NULL));
    bad[27] = 0;
    CHECK(judged(bad, sizeof(good), "member 18446744073709551615: incons"));
    /* the same group twice */
    memcpy(bad, good, sizeof(good));
    memcpy(bad + sizeof(good), good, sizeof(good));
    CHECK(judged(bad, sizeof(bad), "group 5: listed twice"));
    /* a group that holds nothing, last or followed by another */
    const unsigned char empty[] = {1, U64LE(6), 0, 1, U64LE(7), 0};
    CHECK(judged(empty, 10, "group 6 holds nothing"));
    CHECK(judged(empty, sizeof(empty), "group 6 holds nothing"));
    /* nobody joined: a message by a non-member, no recipient */
    const unsigned char alone[] = {1, U64LE(6), 0, 3, U64LE(1), TS, 0, 0};
    CHECK(judged(alone, sizeof(alone), NULL));
    memcpy(bad, alone, sizeof(alone));
    bad[10] = 4; /* "unread" with no recipient: no bitmap word to read */
    CHECK(judged(bad, sizeof(alone), "message 1: inconsistent"));
    /* more mapids than a group may have */
    const unsigned char huge[] = {1, U64LE(6), 0x81, 0x80, 0x80, 0x08};
    CHECK(judged(huge, sizeof(huge), "bad varint"));
    /* Cut anywhere, or any byte changed: refused, or loaded into a store
     * that passes its audit (load_raw checks), never more. */
    for (size_t n = 0; n < sizeof(good); n++)
        load_raw(good, n, err, sizeof(err));
    for (size_t i = 0; i < sizeof(good); i++)
        for (unsigned v = 1; v < 256; v += 51) {
            memcpy(bad, good, sizeof(good));
            bad[i] ^= (unsigned char)v;
            load_raw(bad, sizeof(good), err, sizeof(err));
        }
}

/*
 * Format 2, group 5 as above (uids 10, 11, 12 at mapids 0, 1, 2; 12 quit;
 * the quit set {2}): message 100 by mapid 0, message 101 by mapid 1 and
 * read out of order by mapid 0; marks: mapid 0's watermark at 1 (after
 * 100, its own), mapid 1's at 2 (it read 100, sent 101), mapid 2 parked.
 * Offsets: 0 the format item; 2 the group; 39 the quit set; 49 message
 * 100 (nmemb 62, sender 63); 64 message 101 (nmemb 77, sender 78, reads
 * 79); 80 the marks (ngaps 81, mapid 0's w + 1 82 and qfrom + 1 83,
 * mapid 1's 84 and 85, mapid 2's 86).
 */
static const unsigned char good2[] = {
    0,  2,         1, U64LE(5), 3,          U64LE(10), 0, U64LE(11),
    0,  U64LE(12), 1, 2,        1,          U64LE(4),  5, U64LE(100),
    TS, 3,         2, 6,        U64LE(101), TS,        0, 4,
    1,  7,         0, 2,        0,          3,         0, 0};

static void test_format2_crafted(void)
{
    unsigned char bad[sizeof(good2) + 32];
    struct snap_meta meta;
    struct db db;
    char *buf, err[512];
    size_t n = snap_craft(7, good2, sizeof(good2), &buf);
    uint32_t r, u, cnt;
    struct uids l = {0, {0}};

    CHECK_EQ_U64(sizeof(good2), 87);
    CHECK(db_init(&db) == 0);
    CHECK(snapshot_load(buf, n, &db, &meta, err, sizeof(err)) == 0);
    CHECK(rcpt_count(db.rcpt, 5, 100, 0, &r, &u) == RCPT_OK && r == 1 &&
          u == 0);
    CHECK(rcpt_count(db.rcpt, 5, 101, 0, &r, &u) == RCPT_OK && r == 1 &&
          u == 0);
    CHECK(rcpt_list(db.rcpt, 5, 101, 0, true, 0, 10, collect, &l, &cnt) ==
              RCPT_OK &&
          cnt == 1 && l.v[0] == 10);
    CHECK_EQ_U64(rcpt_read_upto(db.rcpt, 5, 10, 101, 0), 0);
    CHECK_EQ_U64(db_audit(&db), 0);
    CHECK(rcpt_join(db.rcpt, 5, 12, 3, &cnt) == RCPT_OK && cnt == 2);
    CHECK(rcpt_send(db.rcpt, 5, 102, 10, T0, 0, &cnt) == RCPT_OK && cnt == 2);
    CHECK_EQ_U64(db_audit(&db), 0);
    db_deinit(&db);
    free(buf);
#define BAD(off, val, msg)                                                     \
    do {                                                                       \
        memcpy(bad, good2, sizeof(good2));                                     \
        bad[off] = (val);                                                      \
        CHECK(judged(bad, sizeof(good2), msg));                                \
    } while (0)
    BAD(1, 3, "format 3 (this unreadd reads 1 and 2)");
    BAD(49, 3, "unknown item 3 in format 2");
    BAD(62, 4, "bad varint");                   /* nmemb over the mapids */
    BAD(79, 0x02, "message 101: inconsistent"); /* the sender's bit */
    BAD(79, 0x04, "message 101: inconsistent"); /* a quit mapid's bit */
    BAD(79, 0x08, "message 101: inconsistent"); /* no such mapid */
    BAD(79, 0x00, "message 101: inconsistent"); /* a bitmap of nobody */
    /* marks that would count a message for a non-recipient, or an
     * out-of-order read its reader's watermark says it read anyway */
    BAD(82, 3, "group 5 marks: inconsistent"); /* mapid 0 past 101 */
    BAD(84, 1, "group 5 marks: inconsistent"); /* 1 pending at its own */
    BAD(63, 3, "group 5 marks: inconsistent"); /* sender done, not behind */
    BAD(86, 1, "ends inside a record"); /* not parked: its qfrom is missing */
    BAD(83, 2, "group 5 marks: inconsistent"); /* an open gap, not quit */
    BAD(84, 4, "bad varint");                  /* a watermark past the end */
#undef BAD
    /* a group without marks, an item after them */
    CHECK(judged(good2, 80, "group 5 has no marks"));
    memcpy(bad, good2, sizeof(good2));
    memcpy(bad + sizeof(good2), good2 + 49, 15);
    CHECK(judged(bad, sizeof(good2) + 15, "item 5 after group 5's marks"));
    /* a format-2 item in a format-1 section */
    CHECK(judged(good + 0, 47, NULL));
    memcpy(bad, good, sizeof(good));
    bad[47] = 5;
    CHECK(judged(bad, sizeof(good), "unknown item 5 in format 1"));
    /* Cut anywhere, or any byte changed: refused, or loaded into a store
     * that passes its audit (load_raw checks), never more. */
    for (size_t k = 0; k < sizeof(good2); k++)
        load_raw(good2, k, err, sizeof(err));
    for (size_t i = 0; i < sizeof(good2); i++)
        for (unsigned v = 1; v < 256; v += 37) {
            memcpy(bad, good2, sizeof(good2));
            bad[i] ^= (unsigned char)v;
            load_raw(bad, sizeof(good2), err, sizeof(err));
        }
}

int main(void)
{
    T_RUN(test_round_trip);
    T_RUN(test_format1);
    T_RUN(test_crafted_good);
    T_RUN(test_crafted_bad);
    T_RUN(test_format2_crafted);
    T_END();
}
