/*
 * cmd_scan.c - USER.SCAN and DBSIZE: the users of the user-keyed families
 * (CNT, CONV, GRP, DOT, FEED: each holds a map keyed by uid), as Redis's
 * SCAN and DBSIZE see keys. BC keeps its users per channel and RCPT per
 * group, so neither is walked here (docs/COMMANDS.md).
 *
 * The cursor walks the families one after the other. Each family's own
 * walk is a cursor over its map, which is kept in hash order with the
 * cursor the hash of the next entry (u64map.h, wmap.h): inserts, deletes
 * and growth between calls never make it miss an entry present for the
 * whole walk. USER.SCAN's cursor packs the family (3 bits) and that hash
 * without its low SCAN_DROP bits into 63 bits, so that it stays a
 * non-negative Redis integer. Rounding the hash down can only move the
 * walk back, never past an entry: a few users come twice (SCAN allows
 * that), none is missed. A call visits at least SCAN_MIN users, more than
 * share one rounded hash, so a walk always moves forward and ends.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cmds.h"
#include "cnt.h"
#include "conv.h"
#include "dot.h"
#include "feed.h"
#include "grp.h"
#include "slot.h"

#define SCAN_DROP 4
#define SCAN_MIN ((1u << SCAN_DROP) + 1)
#define SCAN_HASH_BITS (63 - 3)
#define SCAN_COUNT_MAX 1000000u

struct uids {
    uint64_t *v;
    size_t n, cap;
    bool oom;
};

static void uids_add(struct uids *u, uint64_t uid)
{
    if (u->n > 0 && u->v[u->n - 1] == uid)
        return; /* a user's entries come in a row: one uid */
    if (u->n == u->cap) {
        size_t cap = u->cap ? u->cap * 2 : 64;
        uint64_t *v = realloc(u->v, cap * sizeof(*v));
        if (v == NULL) {
            u->oom = true;
            return;
        }
        u->v = v;
        u->cap = cap;
    }
    u->v[u->n++] = uid;
}

static void cnt_visit(uint64_t uid, unsigned n, const uint8_t *types,
                      const uint32_t *vals, void *ctx)
{
    (void)n, (void)types, (void)vals;
    uids_add(ctx, uid);
}

static void conv_visit(uint64_t uid, uint64_t cid, const struct conv_info *ci,
                       void *ctx)
{
    (void)cid, (void)ci;
    uids_add(ctx, uid);
}

static void grp_visit(uint64_t uid, uint32_t group,
                      const struct grp_member_info *mi, void *ctx)
{
    (void)group, (void)mi;
    uids_add(ctx, uid);
}

static void list_visit(uint64_t uid, uint32_t n, const uint64_t *e, void *ctx)
{
    (void)n, (void)e;
    uids_add(ctx, uid);
}

static void feed_visit(uint64_t uid, uint32_t n, struct feed_edges *e,
                       void *ctx)
{
    (void)n, (void)e;
    uids_add(ctx, uid);
}

/* One step of a family's walk (up to max users), and its user count. */
struct scan_family {
    size_t (*scan)(const struct db *db, uint64_t *cursor, size_t max,
                   struct uids *u);
    size_t (*users)(const struct db *db);
};

static size_t cnt_step(const struct db *db, uint64_t *c, size_t max,
                       struct uids *u)
{
    return cnt_scan(db->cnt, c, max, cnt_visit, u);
}

static size_t cnt_count(const struct db *db)
{
    return cnt_entries(db->cnt); /* an entry is a user */
}

static size_t conv_step(const struct db *db, uint64_t *c, size_t max,
                        struct uids *u)
{
    return conv_scan(db->conv, c, max, conv_visit, u);
}

static size_t conv_count(const struct db *db)
{
    return conv_users(db->conv);
}

static size_t grp_step(const struct db *db, uint64_t *c, size_t max,
                       struct uids *u)
{
    return grp_scan_members(db->grp, c, max, grp_visit, u);
}

static size_t grp_count(const struct db *db)
{
    return grp_users(db->grp);
}

static size_t dot_step(const struct db *db, uint64_t *c, size_t max,
                       struct uids *u)
{
    return dot_scan(db->dot, c, max, list_visit, u);
}

static size_t dot_count(const struct db *db)
{
    return dot_users(db->dot);
}

static size_t feed_step(const struct db *db, uint64_t *c, size_t max,
                        struct uids *u)
{
    return feed_scan(db->feed, c, max, feed_visit, u);
}

static size_t feed_count(const struct db *db)
{
    return feed_users(db->feed);
}

/*
 * One entry per family of families.def, so that a new family cannot be
 * forgotten: it fails to compile until SCAN_<ID> says how USER.SCAN walks
 * its users, or that it does not ({NULL, NULL}: BC keeps users per
 * channel, RCPT per group).
 */
#define SCAN_CNT                                                               \
    {                                                                          \
        cnt_step, cnt_count                                                    \
    }
#define SCAN_CONV                                                              \
    {                                                                          \
        conv_step, conv_count                                                  \
    }
#define SCAN_GRP                                                               \
    {                                                                          \
        grp_step, grp_count                                                    \
    }
#define SCAN_BC                                                                \
    {                                                                          \
        NULL, NULL                                                             \
    }
#define SCAN_DOT                                                               \
    {                                                                          \
        dot_step, dot_count                                                    \
    }
#define SCAN_FEED                                                              \
    {                                                                          \
        feed_step, feed_count                                                  \
    }
#define SCAN_RCPT                                                              \
    {                                                                          \
        NULL, NULL                                                             \
    }
static const struct scan_family scan_fams[FAM_COUNT] = {
#define FAMILY(f, ID, lo, hi, unit, expiry, prefetch, title)                   \
    [FAM_##ID] = SCAN_##ID,
#include "families.def"
#undef FAMILY
};
_Static_assert(FAM_COUNT <= 8, "USER.SCAN's cursor has 3 bits of family");

uint64_t scan_users_held(const struct db *db)
{
    uint64_t n = 0;

    for (unsigned f = 0; f < FAM_COUNT; f++)
        if (scan_fams[f].users != NULL)
            n += scan_fams[f].users(db);
    return n;
}

void cmd_DBSIZE(struct exec_ctx *x)
{
    reply_int(x->r, scan_users_held(&x->srv->db));
}

/* The family argument i names, when USER.SCAN walks it; -1 after
 * replying the error. */
static int fam_arg(struct exec_ctx *x, uint32_t i)
{
    char text[32];
    int f;

    arg_text(x, i, text, sizeof(text));
    f = db_family_by_name(text, strlen(text));
    if (f >= 0 && scan_fams[f].scan != NULL)
        return f;
    reply_err(x->r, UR_E_BADARG,
              "family '%s' is not walked by USER.SCAN (cnt conv grp dot "
              "feed: bc and rcpt keep their users per channel and group)",
              text);
    return -1;
}

void cmd_USER_SCAN(struct exec_ctx *x)
{
    uint64_t cursor, count = 10, h, next;
    int only = -1;
    unsigned k;
    struct uids u = {0};
    char num[24];

    if (!arg_u64(x, 0, "cursor", &cursor))
        return;
    for (uint32_t i = 1; i < x->argc; i += 2) {
        if (i + 1 >= x->argc) {
            reply_err(x->r, UR_E_BADARG,
                      "syntax error: USER.SCAN cursor [COUNT count] [FAMILY "
                      "family]");
            return;
        }
        if (arg_is(x, i, "COUNT")) {
            if (!arg_u64(x, i + 1, "count", &count))
                return;
            if (count == 0) {
                reply_err(x->r, UR_E_BADARG, "count must be at least 1");
                return;
            }
        } else if (arg_is(x, i, "FAMILY")) {
            only = fam_arg(x, i + 1);
            if (only < 0)
                return;
        } else {
            reply_err(x->r, UR_E_BADARG,
                      "syntax error: USER.SCAN cursor [COUNT count] [FAMILY "
                      "family]");
            return;
        }
    }
    if (count > SCAN_COUNT_MAX)
        count = SCAN_COUNT_MAX;
    if (count < SCAN_MIN)
        count = SCAN_MIN;
    k = (unsigned)(cursor >> SCAN_HASH_BITS);
    h = (cursor & ((UINT64_C(1) << SCAN_HASH_BITS) - 1)) << SCAN_DROP;
    if (cursor == 0 && only >= 0)
        k = (unsigned)only;
    while (cursor == 0 && only < 0 && k < FAM_COUNT &&
           scan_fams[k].scan == NULL)
        k++;
    if (k >= FAM_COUNT || scan_fams[k].scan == NULL ||
        (only >= 0 && k != (unsigned)only)) {
        reply_err(x->r, UR_E_BADARG, "invalid cursor");
        return;
    }

    size_t visited = 0;
    next = 0;
    for (;;) {
        visited += scan_fams[k].scan(&x->srv->db, &h, count - visited, &u);
        if (h == 0) { /* this family's walk ended */
            unsigned f = k + 1;

            while (f < FAM_COUNT && scan_fams[f].scan == NULL)
                f++;
            if (only >= 0 || f == FAM_COUNT)
                break;
            k = f;
        } else if (visited >= count) {
            next = (uint64_t)k << SCAN_HASH_BITS | h >> SCAN_DROP;
            if (next != 0)
                break; /* (0 would read as the end: keep walking) */
        }
        if (visited >= count && h == 0) {
            next = (uint64_t)k << SCAN_HASH_BITS; /* the next family's start */
            break;
        }
        if (visited >= count)
            count = visited + 1;
    }
    if (u.oom) {
        free(u.v);
        reply_oom(x);
        return;
    }
    reply_arr(x->r, 2);
    reply_str(x->r, num, ur_fmt_u64(num, next));
    reply_arr(x->r, (uint32_t)u.n);
    for (size_t i = 0; i < u.n; i++)
        reply_int(x->r, u.v[i]);
    free(u.v);
}

int scan_each_user(const struct db *db, void (*fn)(uint64_t uid, void *ctx),
                   void *ctx)
{
    struct uids step = {0};

    for (unsigned f = 0; f < FAM_COUNT; f++) {
        uint64_t cursor = 0;

        if (scan_fams[f].scan == NULL)
            continue;
        do {
            step.n = 0;
            scan_fams[f].scan(db, &cursor, 4096, &step);
            for (size_t i = 0; i < step.n; i++)
                fn(step.v[i], ctx);
        } while (cursor != 0 && !step.oom);
    }
    free(step.v);
    return step.oom ? -1 : 0;
}
