/*
 * userrec.c - the user record: see userrec.h, and docs/PERSISTENCE.md
 * "User record" for the bytes.
 *
 * CNT, CONV, the notices and RCPT's group travel in their snapshot
 * section's raw format (sections.h: the *_save_user writers), and are
 * checked by that section's own loader, run on scratch stores of this
 * module: what a snapshot refuses, a record refuses. GRP, BC, DOT and
 * FEED number their global objects in their sections, which a single
 * user cannot carry, so their parts name the objects by id, in parts of
 * their own checked here.
 *
 * The server is one thread: the dump buffer, the scratch stores and the
 * decoded parts are static, reused from one record to the next.
 */
#include "userrec.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "bc.h"
#include "cnt.h"
#include "conv.h"
#include "days.h"
#include "dot.h"
#include "feed.h"
#include "grp.h"
#include "le.h"
#include "notice.h"
#include "rcpt.h"
#include "sections.h"
#include "snapshot.h"
#include "u32map.h"

/* ---- one object membership of GRP, BC, DOT or FEED -------------------- */

/* GRP: id gid, a head there, b seen, muted, ments mentions from ment_off;
 * BC: id channel, a head there, b seen; DOT: id dot, a click time; FEED:
 * id author, a snapshot. */
struct ent {
    uint64_t id, a, b;
    uint32_t muted, nment;
    size_t ment_off;
    uint32_t idx; /* restore: the object's number here */
};

struct ents {
    struct ent *v;
    size_t n, cap;
    uint64_t *ment;
    size_t nment, mcap;
};

static int ents_add(struct ents *e, const struct ent *x)
{
    if (e->n == e->cap) {
        size_t cap = e->cap ? 2 * e->cap : 64;
        struct ent *v = realloc(e->v, cap * sizeof(*v));

        if (v == NULL)
            return -1;
        e->v = v;
        e->cap = cap;
    }
    e->v[e->n++] = *x;
    return 0;
}

static int ments_add(struct ents *e, uint64_t seq)
{
    if (e->nment == e->mcap) {
        size_t cap = e->mcap ? 2 * e->mcap : 64;
        uint64_t *v = realloc(e->ment, cap * sizeof(*v));

        if (v == NULL)
            return -1;
        e->ment = v;
        e->mcap = cap;
    }
    e->ment[e->nment++] = seq;
    return 0;
}

static void ents_free(struct ents *e)
{
    free(e->v);
    free(e->ment);
    memset(e, 0, sizeof(*e));
}

static int by_id(const void *a, const void *b)
{
    const struct ent *x = a, *y = b;

    return x->id < y->id ? -1 : x->id > y->id;
}

static int by_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* ---- state --------------------------------------------------------------- */

static struct snap_writer *recw;  /* the record being dumped */
static struct snap_writer *partw; /* one part being dumped */
static struct ents ents;          /* a part's memberships, dump or restore */
static struct db scratch;         /* cnt, conv and rcpt only: the checks */

void userrec_teardown(void)
{
    snap_mem_free(recw);
    snap_mem_free(partw);
    recw = partw = NULL;
    ents_free(&ents);
    cnt_destroy(scratch.cnt);
    conv_destroy(scratch.conv);
    rcpt_destroy(scratch.rcpt);
    memset(&scratch, 0, sizeof(scratch));
}

static int writers(void)
{
    if (recw == NULL)
        recw = snap_mem_writer();
    if (partw == NULL)
        partw = snap_mem_writer();
    return recw != NULL && partw != NULL ? 0 : -1;
}

/* ---- exists and delete --------------------------------------------------- */

static void no_notice(const struct notice *n, void *ctx)
{
    (void)n;
    (void)ctx;
}

static void no_conv(uint64_t uid, uint64_t cid, const struct conv_info *ci,
                    void *ctx)
{
    (void)uid;
    (void)cid;
    (void)ci;
    (void)ctx;
}

static void no_dot(uint64_t dot, uint64_t click, uint64_t push, bool shown,
                   void *ctx)
{
    (void)dot;
    (void)click;
    (void)push;
    (void)shown;
    (void)ctx;
}

static void no_feed(uint64_t author, uint32_t count, uint32_t snapshot,
                    void *ctx)
{
    (void)author;
    (void)count;
    (void)snapshot;
    (void)ctx;
}

bool userrec_exists(const struct db *db, uint64_t id)
{
    uint8_t types[CNT_TYPES];
    uint32_t vals[CNT_TYPES], day;
    uint16_t tag;
    struct db_expiry e;

    return cnt_getall(db->cnt, id, types, vals) > 0 ||
           notice_user(cnt_notices(db->cnt), id, no_notice, NULL) > 0 ||
           conv_user_info(db->conv, id, no_conv, NULL) > 0 ||
           grp_groups(db->grp, id) > 0 ||
           dot_user_info(db->dot, id, no_dot, NULL) > 0 ||
           feed_user_info(db->feed, id, no_feed, NULL) > 0 ||
           bc_user_day(db->bc, id, &tag) || /* a filter first, not O(chans) */
           db_active_day(db, id, &day) || db_expiry_get(db, id, &e) ||
           rcpt_group_held(db->rcpt, id);
}

uint64_t userrec_delete(struct db *db, uint64_t id)
{
    uint64_t removed[FAM_COUNT] = {0};
    uint64_t n;

    n = db_forget_user(db, id, ((1u << FAM_COUNT) - 1) & ~(1u << FAM_RCPT),
                       removed);
    db_expiry_forget(db, id);
    if (rcpt_drop_group(db->rcpt, id))
        n++;
    return n;
}

/* ---- dump ---------------------------------------------------------------- */

static bool dump_nomem; /* a visit could not keep what it saw */

static void grp_visit(uint64_t uid, uint32_t group,
                      const struct grp_member_info *mi, void *ctx)
{
    const struct grp_store *s = ctx;
    struct grp_group_info gi;
    struct ent x = {0};

    (void)uid;
    grp_group_info(s, group, &gi);
    x.id = gi.gid;
    x.a = gi.head;
    x.b = gi.head - mi->unread;
    x.muted = mi->muted;
    x.nment = mi->nment;
    x.ment_off = ents.nment;
    for (uint32_t k = 0; k < mi->nment; k++)
        if (ments_add(&ents, mi->ment[k]) != 0)
            dump_nomem = true;
    if (ents_add(&ents, &x) != 0)
        dump_nomem = true;
}

static int put_ents(struct snap_writer *w, bool ment)
{
    qsort(ents.v, ents.n, sizeof(*ents.v), by_id);
    snap_put_u32(w, (uint32_t)ents.n);
    for (size_t i = 0; i < ents.n; i++) {
        const struct ent *x = &ents.v[i];

        snap_put_u64(w, x->id);
        snap_put_u64(w, x->a);
        snap_put_u64(w, x->b);
        if (!ment)
            continue;
        snap_put_u8(w, (uint8_t)x->muted);
        snap_put_u32(w, x->nment);
        for (uint32_t k = 0; k < x->nment; k++)
            snap_put_u64(w, ents.ment[x->ment_off + k]);
    }
    return snap_put_failed(w) ? -1 : 0;
}

static int dump_grp(const struct db *db, struct snap_writer *w, uint64_t id)
{
    ents.n = ents.nment = 0;
    dump_nomem = false;
    if (grp_user_members(db->grp, id, grp_visit, db->grp) == 0)
        return 0;
    return dump_nomem ? -1 : put_ents(w, true);
}

static void bc_visit(uint64_t ch, uint64_t head, uint64_t unread, void *ctx)
{
    struct ent x = {.id = ch, .a = head, .b = head - unread};

    if (ents_add(&ents, &x) != 0)
        *(bool *)ctx = true;
}

static void dot_visit(uint64_t dot, uint64_t click, uint64_t push, bool shown,
                      void *ctx)
{
    struct ent x = {.id = dot, .a = click};

    (void)push;
    (void)shown;
    if (ents_add(&ents, &x) != 0)
        *(bool *)ctx = true;
}

static void feed_visit(uint64_t author, uint32_t count, uint32_t snapshot,
                       void *ctx)
{
    struct ent x = {.id = author, .a = snapshot};

    (void)count;
    if (ents_add(&ents, &x) != 0)
        *(bool *)ctx = true;
}

static int dump_ents(const struct db *db, struct snap_writer *w, uint64_t id,
                     enum userrec_part kind)
{
    bool failed = false;
    uint16_t tag;
    size_t n;

    ents.n = ents.nment = 0;
    if (kind == UREC_BC)
        /* bc_user_day's filter spares most users the walk of every
         * channel */
        n = bc_user_day(db->bc, id, &tag)
                ? bc_user_info(db->bc, id, bc_visit, &failed)
                : 0;
    else if (kind == UREC_DOT)
        n = dot_user_info(db->dot, id, dot_visit, &failed);
    else
        n = feed_user_info(db->feed, id, feed_visit, &failed);
    if (failed)
        return -1;
    return n == 0 ? 0 : put_ents(w, false);
}

/* Part kind's bytes of id into w (empty when id holds nothing there). */
static int dump_part(const struct db *db, struct snap_writer *w, uint64_t id,
                     enum userrec_part kind)
{
    uint32_t day;
    struct db_expiry e;
    int rc;

    switch (kind) {
    case UREC_CNT:
        return sec_cnt_save_user(db, w, id);
    case UREC_CONV:
        return sec_conv_save_user(db, w, id);
    case UREC_GRP:
        return dump_grp(db, w, id);
    case UREC_BC:
    case UREC_DOT:
    case UREC_FEED:
        return dump_ents(db, w, id, kind);
    case UREC_RCPT:
        rc = sec_rcpt_save_group(db, w, id);
        if (rc == 1)
            snap_mem_truncate(w, 0);
        return rc < 0 ? -1 : 0;
    case UREC_ACTIVITY:
        if (db_active_day(db, id, &day))
            snap_put_u32(w, day);
        return snap_put_failed(w) ? -1 : 0;
    case UREC_NOTICE:
        return sec_notice_save_user(db, w, id);
    case UREC_EXPIRY:
        if (db_expiry_get(db, id, &e)) {
            snap_put_u64(w, e.ms);
            snap_put_u32(w, e.families);
            snap_put_u32(w, e.pending);
        }
        return snap_put_failed(w) ? -1 : 0;
    }
    return -1;
}

int userrec_dump(const struct db *db, uint64_t id, const char **out,
                 size_t *len)
{
    static const char zero[USERREC_HDR];
    unsigned nparts = 0;
    size_t n;
    char *p;

    if (writers() != 0)
        return -1;
    snap_mem_truncate(recw, 0);
    snap_put(recw, zero, sizeof(zero));
    for (unsigned kind = 1; kind <= UREC_PARTS; kind++) {
        const char *b;

        snap_mem_truncate(partw, 0);
        if (dump_part(db, partw, id, kind) != 0)
            return -1;
        b = snap_mem_bytes(partw, &n);
        if (n == 0)
            continue;
        snap_put_u8(recw, (uint8_t)kind);
        snap_put_u32(recw, (uint32_t)n);
        snap_put(recw, b, n);
        nparts++;
    }
    if (snap_put_failed(recw))
        return -1;
    if (nparts == 0)
        return 1;
    p = snap_mem_bytes(recw, &n);
    memcpy(p, USERREC_MAGIC, 4);
    p[4] = USERREC_VERSION;
    p[5] = (char)nparts;
    p[6] = p[7] = 0;
    le_wr64(p + 8, id);
    le_wr32(p + 16, (uint32_t)(n - USERREC_HDR));
    if (snap_put_u64(recw, XXH3_64bits(p, n)) != 0)
        return -1;
    *out = snap_mem_bytes(recw, len);
    return 0;
}

/* ---- restore ------------------------------------------------------------- */

struct cur {
    const char *p;
    size_t n, off;
    bool bad;
};

static uint64_t get(struct cur *c, size_t w)
{
    uint64_t v;

    if (c->bad || c->n - c->off < w) {
        c->bad = true;
        return 0;
    }
    v = w == 1   ? (uint8_t)c->p[c->off]
        : w == 4 ? le_rd32(c->p + c->off)
                 : le_rd64(c->p + c->off);
    c->off += w;
    return v;
}

/* A record taken apart: where each part's bytes are. */
struct parsed {
    uint64_t id;
    const char *part[UREC_PARTS + 1];
    size_t len[UREC_PARTS + 1];
    /* checked parts, decoded */
    uint32_t day;
    struct db_expiry exp;
    bool create[UREC_PARTS + 1]; /* some object of the part is made here */
};

static enum userrec_rc fail(char *err, size_t errlen, enum userrec_rc rc,
                            const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static enum userrec_rc fail(char *err, size_t errlen, enum userrec_rc rc,
                            const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return rc;
}

/* The header, the parts' framing and the checksum. */
static enum userrec_rc split(const char *p, size_t n, struct parsed *pr,
                             char *err, size_t errlen)
{
    struct cur c = {p, n, 0, false};
    unsigned nparts, last = 0;

    memset(pr, 0, sizeof(*pr));
    if (n < USERREC_HDR + USERREC_TRAILER || memcmp(p, USERREC_MAGIC, 4) != 0)
        return fail(err, errlen, USERREC_CORRUPT,
                    "not a user record (%zu bytes, magic)", n);
    if (XXH3_64bits(p, n - USERREC_TRAILER) != le_rd64(p + n - USERREC_TRAILER))
        return fail(err, errlen, USERREC_CORRUPT, "checksum mismatch");
    if ((uint8_t)p[4] != USERREC_VERSION)
        return fail(err, errlen, USERREC_CORRUPT, "version %u (reads %u)",
                    (uint8_t)p[4], USERREC_VERSION);
    nparts = (uint8_t)p[5];
    if (p[6] != 0 || p[7] != 0 || nparts == 0 || nparts > UREC_PARTS ||
        le_rd32(p + 16) != n - USERREC_HDR - USERREC_TRAILER)
        return fail(err, errlen, USERREC_CORRUPT, "bad header");
    pr->id = le_rd64(p + 8);
    c.off = USERREC_HDR;
    c.n = n - USERREC_TRAILER;
    for (unsigned i = 0; i < nparts; i++) {
        unsigned kind = (unsigned)get(&c, 1);
        uint32_t len = (uint32_t)get(&c, 4);

        if (c.bad || kind <= last || kind > UREC_PARTS || len == 0 ||
            len > c.n - c.off)
            return fail(err, errlen, USERREC_CORRUPT,
                        "part %u at byte %zu: bad kind, order or length", i,
                        c.off);
        pr->part[kind] = p + c.off;
        pr->len[kind] = len;
        c.off += len;
        last = kind;
    }
    if (c.off != c.n)
        return fail(err, errlen, USERREC_CORRUPT, "bytes after the parts");
    return USERREC_OK;
}

static int scratch_ready(void)
{
    if (scratch.cnt == NULL)
        scratch.cnt = cnt_create();
    if (scratch.conv == NULL)
        scratch.conv = conv_create();
    if (scratch.rcpt == NULL)
        scratch.rcpt = rcpt_create();
    return scratch.cnt && scratch.conv && scratch.rcpt ? 0 : -1;
}

/* After a check: the scratch stores empty again (rebuilt when a bad
 * record left another id's state in them). */
static void scratch_clear(uint64_t id)
{
    cnt_forget_user(scratch.cnt, id);
    conv_forget_user(scratch.conv, id);
    rcpt_drop_group(scratch.rcpt, id);
    if (cnt_entries(scratch.cnt) != 0 ||
        notice_entries(cnt_notices(scratch.cnt)) != 0) {
        cnt_destroy(scratch.cnt);
        scratch.cnt = NULL;
    }
    if (conv_entries(scratch.conv) != 0) {
        conv_destroy(scratch.conv);
        scratch.conv = NULL;
    }
    if (rcpt_groups(scratch.rcpt) != 0) {
        rcpt_destroy(scratch.rcpt);
        scratch.rcpt = NULL;
    }
}

static const char *const part_names[UREC_PARTS + 1] = {
    "",     "cnt",  "conv",     "grp",    "bc",    "dot",
    "feed", "rcpt", "activity", "notice", "expiry"};

/* The parts in their sections' formats, loaded into the scratch stores:
 * their loaders' checks, and only id's state in them. */
static enum userrec_rc check_sections(const struct parsed *pr, char *err,
                                      size_t errlen)
{
    static const unsigned kinds[] = {UREC_CNT, UREC_NOTICE, UREC_CONV,
                                     UREC_RCPT};
    static int (*const loads[])(struct db *, struct snap_reader *) = {
        sec_cnt_load, sec_notice_load, sec_conv_load, sec_rcpt_load};
    uint8_t types[CNT_TYPES];
    uint32_t vals[CNT_TYPES];
    enum userrec_rc rc = USERREC_OK;
    char why[160];

    if (scratch_ready() != 0)
        return fail(err, errlen, USERREC_NOMEM, "out of memory");
    for (unsigned i = 0; i < 4 && rc == USERREC_OK; i++) {
        unsigned k = kinds[i];

        if (pr->part[k] == NULL)
            continue;
        if (snap_mem_load(pr->part[k], pr->len[k], part_names[k], loads[i],
                          &scratch, why, sizeof(why)) != 0)
            /* The loaders say so when memory, not the data, failed. */
            rc = fail(err, errlen,
                      strstr(why, "out of memory") ? USERREC_NOMEM
                                                   : USERREC_CORRUPT,
                      "%s part: %s", part_names[k], why);
    }
    if (rc == USERREC_OK &&
        ((pr->part[UREC_CNT] != NULL &&
          (cnt_entries(scratch.cnt) != 1 ||
           cnt_getall(scratch.cnt, pr->id, types, vals) == 0)) ||
         (pr->part[UREC_NOTICE] != NULL &&
          (notice_users(cnt_notices(scratch.cnt)) != 1 ||
           notice_user(cnt_notices(scratch.cnt), pr->id, no_notice, NULL) ==
               0)) ||
         (pr->part[UREC_CONV] != NULL &&
          (conv_users(scratch.conv) != 1 ||
           conv_user_info(scratch.conv, pr->id, no_conv, NULL) !=
               conv_entries(scratch.conv))) ||
         (pr->part[UREC_RCPT] != NULL &&
          (rcpt_groups(scratch.rcpt) != 1 ||
           !rcpt_group_held(scratch.rcpt, pr->id)))))
        rc = fail(err, errlen, USERREC_CORRUPT,
                  "a part holds another id's state than %llu's",
                  (unsigned long long)pr->id);
    scratch_clear(pr->id);
    return rc;
}

/* Part kind (GRP, BC, DOT, FEED) decoded into ents, checked for form: ids
 * strictly ascending, fields in range. */
static enum userrec_rc decode_ents(const struct parsed *pr, unsigned kind,
                                   char *err, size_t errlen)
{
    struct cur c = {pr->part[kind], pr->len[kind], 0, false};
    uint32_t n = (uint32_t)get(&c, 4);
    uint64_t max = kind == UREC_DOT    ? DOT_MAX_DOTS
                   : kind == UREC_FEED ? FEED_MAX_FOLLOWS
                                       : UINT32_MAX;

    ents.n = ents.nment = 0;
    if (c.bad || n == 0 || n > max || n > c.n / 24)
        return fail(err, errlen, USERREC_CORRUPT, "%s part: bad count",
                    part_names[kind]);
    for (uint32_t i = 0; i < n; i++) {
        struct ent x = {0};

        x.id = get(&c, 8);
        x.a = get(&c, 8);
        x.b = get(&c, 8);
        if (kind == UREC_GRP) {
            x.muted = (uint32_t)get(&c, 1);
            x.nment = (uint32_t)get(&c, 4);
            x.ment_off = ents.nment;
            if (c.bad || x.muted > 1 || x.nment > GRP_MENTION_MAX)
                break;
            for (uint32_t k = 0; k < x.nment; k++) {
                uint64_t seq = get(&c, 8);

                if (c.bad || seq <= (k ? ents.ment[x.ment_off + k - 1] : x.b) ||
                    seq > x.a)
                    return fail(err, errlen, USERREC_CORRUPT,
                                "grp part: group %llu: bad mentions",
                                (unsigned long long)x.id);
                if (ments_add(&ents, seq) != 0)
                    return fail(err, errlen, USERREC_NOMEM, "out of memory");
            }
        }
        if (c.bad)
            break;
        if ((i > 0 && x.id <= ents.v[ents.n - 1].id) ||
            ((kind == UREC_GRP || kind == UREC_BC) && x.b > x.a) ||
            (kind == UREC_DOT && x.a > DOT_TS_MAX) ||
            (kind != UREC_GRP && kind != UREC_BC && x.b != 0) ||
            (kind == UREC_FEED && x.a > UINT32_MAX))
            return fail(err, errlen, USERREC_CORRUPT,
                        "%s part: entry %u out of order or out of range",
                        part_names[kind], i);
        if (ents_add(&ents, &x) != 0)
            return fail(err, errlen, USERREC_NOMEM, "out of memory");
    }
    if (c.bad || c.off != c.n)
        return fail(err, errlen, USERREC_CORRUPT, "%s part: cut or too long",
                    part_names[kind]);
    return USERREC_OK;
}

/* ents (of part kind) against this db's global objects: a membership
 * reads against the head here, which must be at least what the user has
 * seen. An object absent here is made, empty, when the user's state in
 * it needs nothing of it (a group or channel never posted to: they exist
 * only where someone joined; a dot never pushed, an author never
 * followed elsewhere); otherwise the record waits for its copy. */
static enum userrec_rc check_ents(const struct db *db, struct parsed *pr,
                                  unsigned kind, char *err, size_t errlen)
{
    for (size_t i = 0; i < ents.n; i++) {
        struct ent *x = &ents.v[i];
        uint64_t head = 0;
        bool known = true;

        if (kind == UREC_GRP) {
            struct grp_group_info gi;

            known = grp_group_find(db->grp, x->id, &x->idx);
            if (known) {
                grp_group_info(db->grp, x->idx, &gi);
                head = gi.head;
            }
            if (x->nment > 0 && ents.ment[x->ment_off + x->nment - 1] > head)
                known = false, head = 0; /* a mention past the head here */
        } else if (kind == UREC_BC) {
            head = bc_head(db->bc, x->id);
            known = head != 0;
        } else {
            pr->create[kind] = true;
            continue;
        }
        if (!known && (x->a != 0 || x->b != 0))
            return fail(err, errlen, USERREC_MISSING,
                        "%s %llu is behind here (its copy has not arrived): "
                        "retry",
                        kind == UREC_GRP ? "group" : "channel",
                        (unsigned long long)x->id);
        if (known && (x->b > head || head - x->b >= UINT32_MAX))
            return fail(err, errlen, USERREC_MISSING,
                        "%s %llu is behind here (head %llu, seen %llu): retry",
                        kind == UREC_GRP ? "group" : "channel",
                        (unsigned long long)x->id, (unsigned long long)head,
                        (unsigned long long)x->b);
        if (!known)
            pr->create[kind] = true;
    }
    return USERREC_OK;
}

static enum userrec_rc check_small(struct parsed *pr, char *err, size_t errlen)
{
    struct cur c;

    if (pr->part[UREC_ACTIVITY] != NULL) {
        c = (struct cur){pr->part[UREC_ACTIVITY], pr->len[UREC_ACTIVITY], 0,
                         false};
        pr->day = (uint32_t)get(&c, 4);
        if (c.bad || c.off != c.n)
            return fail(err, errlen, USERREC_CORRUPT,
                        "activity part: %zu "
                        "bytes",
                        c.n);
    }
    if (pr->part[UREC_EXPIRY] != NULL) {
        struct db_expiry *e = &pr->exp;

        c = (struct cur){pr->part[UREC_EXPIRY], pr->len[UREC_EXPIRY], 0, false};
        e->ms = get(&c, 8);
        e->families = (uint32_t)get(&c, 4);
        e->pending = (uint32_t)get(&c, 4);
        if (c.bad || c.off != c.n || e->ms > DB_EXPIRY_MS_MAX ||
            e->families == 0 || e->families >> FAM_COUNT != 0 ||
            (e->pending & ~e->families) != 0)
            return fail(err, errlen, USERREC_CORRUPT, "expiry part: bad");
    }
    return USERREC_OK;
}

/* Everything but applying: the framing, every part, the objects here. */
static enum userrec_rc check_all(const struct db *db, const char *p, size_t n,
                                 struct parsed *pr, char *err, size_t errlen)
{
    enum userrec_rc rc = split(p, n, pr, err, errlen);

    if (rc == USERREC_OK)
        rc = check_small(pr, err, errlen);
    if (rc == USERREC_OK)
        rc = check_sections(pr, err, errlen);
    for (unsigned k = UREC_GRP; rc == USERREC_OK && k <= UREC_FEED; k++)
        if (pr->part[k] != NULL) {
            rc = decode_ents(pr, k, err, errlen);
            if (rc == USERREC_OK && db != NULL)
                rc = check_ents(db, pr, k, err, errlen);
        }
    return rc;
}

enum userrec_rc userrec_check(const struct db *db, const char *p, size_t n,
                              uint64_t *id, char *err, size_t errlen)
{
    struct parsed pr;
    enum userrec_rc rc = check_all(db, p, n, &pr, err, errlen);

    *id = pr.id;
    return rc;
}

/* One of GRP, BC, DOT, FEED (decoded again into ents): into db. 0 or -1
 * (no memory). */
static int apply_ents(struct db *db, struct parsed *pr, unsigned kind,
                      char *err, size_t errlen)
{
    uint64_t *clicks;
    uint32_t *authors, *snaps;
    uint64_t id = pr->id;
    int rc = 0;

    if (decode_ents(pr, kind, err, errlen) != USERREC_OK ||
        check_ents(db, pr, kind, err, errlen) != USERREC_OK)
        return -1;
    for (size_t i = 0; i < ents.n && rc == 0; i++) {
        struct ent *x = &ents.v[i];
        struct grp_member_info mi;
        struct grp_group_info gi;

        switch (kind) {
        case UREC_GRP:
            if (!grp_group_find(db->grp, x->id, &x->idx)) {
                if (grp_restore_group(db->grp, x->id, 0, 0, 0, NULL) != 0 ||
                    !grp_group_find(db->grp, x->id, &x->idx)) {
                    rc = -1;
                    break;
                }
            }
            grp_group_info(db->grp, x->idx, &gi);
            mi = (struct grp_member_info){gi.head - x->b, x->muted != 0,
                                          x->nment, ents.ment + x->ment_off};
            rc = grp_restore_member(db->grp, id, x->idx, &mi) == 0 ? 0 : -1;
            break;
        case UREC_BC:
            if (bc_head(db->bc, x->id) == 0)
                (void)bc_restore_channel(db->bc, x->id, 0); /* 1: held */
            rc = bc_restore_user(db->bc, x->id, id,
                                 bc_head(db->bc, x->id) - x->b) == 0
                     ? 0
                     : -1;
            break;
        case UREC_DOT:
            if (!dot_find(db->dot, x->id, &x->idx) &&
                (dot_put_dot(db->dot, x->id, DOT_NEVER) != 0 ||
                 !dot_find(db->dot, x->id, &x->idx)))
                rc = -1;
            break;
        case UREC_FEED:
            if (!feed_author_find(db->feed, x->id, &x->idx) &&
                (feed_put_author(db->feed, x->id, 0) != 0 ||
                 !feed_author_find(db->feed, x->id, &x->idx)))
                rc = -1;
            break;
        }
    }
    if (rc != 0 || (kind != UREC_DOT && kind != UREC_FEED))
        return rc;
    /* By number here, ascending, as dot_put_user and feed_put_user take
     * them. */
    clicks = malloc(ents.n * sizeof(*clicks));
    authors = malloc(ents.n * sizeof(*authors));
    snaps = malloc(ents.n * sizeof(*snaps));
    if (clicks == NULL || authors == NULL || snaps == NULL) {
        rc = -1;
    } else if (kind == UREC_DOT) {
        for (size_t i = 0; i < ents.n; i++)
            clicks[i] = dot_click_make(ents.v[i].idx, ents.v[i].a);
        qsort(clicks, ents.n, sizeof(*clicks), by_u64);
        rc = dot_put_user(db->dot, id, (uint32_t)ents.n, clicks) == 0 ? 0 : -1;
    } else {
        for (size_t i = 0; i < ents.n; i++)
            clicks[i] = (uint64_t)ents.v[i].idx << 32 | ents.v[i].a;
        qsort(clicks, ents.n, sizeof(*clicks), by_u64);
        for (size_t i = 0; i < ents.n; i++) {
            authors[i] = (uint32_t)(clicks[i] >> 32);
            snaps[i] = (uint32_t)clicks[i];
        }
        rc = feed_put_user(db->feed, id, (uint32_t)ents.n, authors, snaps) == 0
                 ? 0
                 : -1;
    }
    free(snaps);
    free(authors);
    free(clicks);
    return rc;
}

/* The activity day, where sec_activity.c's load would put it. */
static int apply_day(struct db *db, uint64_t id, uint32_t day)
{
    const struct db_day_holder *h = NULL;
    uint16_t tag;

    for (unsigned i = 0; i < DB_DAY_HOLDERS && h == NULL; i++)
        if (db_day_holders[i].get(db, id, &tag))
            h = &db_day_holders[i];
    if (h != NULL)
        return h->set(db, id, db_day_tag(day)) < 0 ? -1 : 0;
    return u32map_put_tagged(db->active, id, 0, db_day_tag(day)) != 0 ? -1 : 0;
}

static int apply_all(struct db *db, struct parsed *pr, char *err, size_t errlen)
{
    static const unsigned kinds[] = {UREC_CNT, UREC_NOTICE, UREC_CONV,
                                     UREC_RCPT};
    static int (*const loads[])(struct db *, struct snap_reader *) = {
        sec_cnt_load, sec_notice_load, sec_conv_load, sec_rcpt_load};

    for (unsigned i = 0; i < 4; i++) {
        unsigned k = kinds[i];

        if (pr->part[k] != NULL &&
            snap_mem_load(pr->part[k], pr->len[k], part_names[k], loads[i], db,
                          err, errlen) != 0)
            return -1;
    }
    for (unsigned k = UREC_GRP; k <= UREC_FEED; k++)
        if (pr->part[k] != NULL && apply_ents(db, pr, k, err, errlen) != 0)
            return -1;
    if (pr->part[UREC_ACTIVITY] != NULL && apply_day(db, pr->id, pr->day) != 0)
        return -1;
    if (pr->part[UREC_EXPIRY] != NULL &&
        db_expiry_put(db, pr->id, &pr->exp) != 0)
        return -1;
    return 0;
}

/* Puts back the state a REPLACE took away when the new one could not be
 * applied: old[0..n) is a record this db dumped. Memory may fail again:
 * the id is then left empty (best effort; nothing half-applied). */
static void put_back(struct db *db, uint64_t id, const char *old, size_t n)
{
    struct parsed pr;
    char err[64];

    if (check_all(db, old, n, &pr, err, sizeof(err)) == USERREC_OK &&
        apply_all(db, &pr, err, sizeof(err)) != 0)
        userrec_delete(db, id);
}

enum userrec_rc userrec_restore(struct db *db, uint64_t id, const char *p,
                                size_t n, bool replace, char *err,
                                size_t errlen)
{
    struct parsed pr;
    enum userrec_rc rc = check_all(db, p, n, &pr, err, errlen);
    char *old = NULL;
    size_t oldn = 0;

    if (rc != USERREC_OK)
        return rc;
    if (pr.id != id)
        return fail(err, errlen, USERREC_CORRUPT,
                    "the record is of id %llu, not %llu",
                    (unsigned long long)pr.id, (unsigned long long)id);
    if (userrec_exists(db, id)) {
        const char *cur;
        size_t len;

        if (!replace)
            return fail(err, errlen, USERREC_BUSY, "id %llu holds state",
                        (unsigned long long)id);
        /* The old state, kept until the new one is in. Dumping it
         * overwrites the dump buffer, which p (read again when applied)
         * must not be. */
        if (recw != NULL) {
            size_t rl;
            const char *rb = snap_mem_bytes(recw, &rl);

            if (p >= rb && p < rb + rl)
                return fail(err, errlen, USERREC_CORRUPT,
                            "a record being restored from the dump buffer");
        }
        if (userrec_dump(db, id, &cur, &len) == 0 &&
            (old = malloc(len)) != NULL) {
            memcpy(old, cur, len);
            oldn = len;
        }
        if (old == NULL)
            return fail(err, errlen, USERREC_NOMEM, "out of memory");
        userrec_delete(db, id);
    }
    if (apply_all(db, &pr, err, errlen) != 0) {
        /* Checked whole before: only memory can fail here. */
        userrec_delete(db, id);
        if (old != NULL)
            put_back(db, id, old, oldn);
        free(old);
        return fail(err, errlen, USERREC_NOMEM,
                    "out of memory restoring id %llu", (unsigned long long)id);
    }
    free(old);
    return USERREC_OK;
}

int userrec_digest(const struct db *db, uint64_t id,
                   char hex[USERREC_DIGEST + 1])
{
    const char *p;
    size_t n;
    int rc = userrec_dump(db, id, &p, &n);
    XXH128_hash_t h;

    if (rc < 0)
        return -1;
    if (rc > 0) {
        memset(hex, '0', USERREC_DIGEST);
        hex[USERREC_DIGEST] = '\0';
        return 0;
    }
    h = XXH3_128bits(p, n - USERREC_TRAILER);
    snprintf(hex, USERREC_DIGEST + 1, "%016llx%016llx%08x",
             (unsigned long long)h.high64, (unsigned long long)h.low64,
             (unsigned)(XXH3_64bits(p, n - USERREC_TRAILER) >> 32));
    return 0;
}
