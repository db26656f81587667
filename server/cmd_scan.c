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

#define SCAN_DROP 4
#define SCAN_MIN ((1u << SCAN_DROP) + 1)
#define SCAN_HASH_BITS (63 - 3)
#define SCAN_COUNT_MAX 1000000u

/* The families walked, in cursor order. */
static const unsigned scan_fams[] = {FAM_CNT, FAM_CONV, FAM_GRP, FAM_DOT,
                                     FAM_FEED};
#define SCAN_FAMS (sizeof(scan_fams) / sizeof(scan_fams[0]))

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

/* One step of family f's walk: up to max users. */
static size_t fam_scan(const struct db *db, unsigned f, uint64_t *cursor,
                       size_t max, struct uids *u)
{
    switch (f) {
    case FAM_CNT:
        return cnt_scan(db->cnt, cursor, max, cnt_visit, u);
    case FAM_CONV:
        return conv_scan(db->conv, cursor, max, conv_visit, u);
    case FAM_GRP:
        return grp_scan_members(db->grp, cursor, max, grp_visit, u);
    case FAM_DOT:
        return dot_scan(db->dot, cursor, max, list_visit, u);
    case FAM_FEED:
        return feed_scan(db->feed, cursor, max, list_visit, u);
    default:
        *cursor = 0;
        return 0;
    }
}

static size_t fam_users(const struct db *db, unsigned f)
{
    switch (f) {
    case FAM_CNT:
        return cnt_entries(db->cnt); /* one entry per user */
    case FAM_CONV:
        return conv_users(db->conv);
    case FAM_GRP:
        return grp_users(db->grp);
    case FAM_DOT:
        return dot_users(db->dot);
    case FAM_FEED:
        return feed_users(db->feed);
    default:
        return 0;
    }
}

uint64_t scan_users_held(const struct db *db)
{
    uint64_t n = 0;

    for (size_t i = 0; i < SCAN_FAMS; i++)
        n += fam_users(db, scan_fams[i]);
    return n;
}

void cmd_DBSIZE(struct exec_ctx *x)
{
    reply_int(x->r, scan_users_held(&x->srv->db));
}

/* The position in scan_fams of the family argument i names; -1 after
 * replying the error. */
static int fam_arg(struct exec_ctx *x, uint32_t i)
{
    char text[32];

    arg_text(x, i, text, sizeof(text));
    for (size_t k = 0; k < SCAN_FAMS; k++)
        if (strcasecmp(text, db_families[scan_fams[k]].name) == 0)
            return (int)k;
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
    if (k >= SCAN_FAMS || (only >= 0 && k != (unsigned)only)) {
        reply_err(x->r, UR_E_BADARG, "invalid cursor");
        return;
    }

    size_t visited = 0;
    next = 0;
    for (;;) {
        visited += fam_scan(&x->srv->db, scan_fams[k], &h, count - visited, &u);
        if (h == 0) { /* this family's walk ended */
            if (only >= 0 || k + 1 == SCAN_FAMS)
                break;
            k++;
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
