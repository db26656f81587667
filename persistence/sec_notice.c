/*
 * sec_notice.c - CNT's notices read once (sections.def, id 9): the
 * notices the CNT store remembers per (user, type) (server/store/notice.h).
 * A section of its own beside CNT's (id 1), so that snapshots written
 * before notices existed load unchanged: without it, no notice.
 *
 * Raw bytes: one record per user holding notices, in the store's walk
 * order:
 *   u64 uid, varint n (1..4096), then n times, oldest first:
 *   u8 type (< 64), u8 read (0 or 1), varint delta (<= 4294967295),
 *   u64 nid
 * An id at most once per type, at most 64 per type (the loader refuses
 * anything else).
 */
#include "cnt.h"
#include "notice.h"
#include "sections.h"

#include <stdlib.h>

/* Users per notice_scan call: bounds the stack of a walk step. */
#define SCAN_BATCH 256
#define USER_MAX ((uint32_t)NOTICE_MAX * NOTICE_TYPES)

static void save_user(uint64_t uid, uint32_t n, const struct notice *v,
                      void *ctx)
{
    struct snap_writer *w = ctx;

    snap_put_u64(w, uid);
    snap_put_varint(w, n);
    for (uint32_t i = 0; i < n; i++) {
        snap_put_u8(w, v[i].type);
        snap_put_u8(w, v[i].read);
        snap_put_varint(w, v[i].delta);
        snap_put_u64(w, v[i].nid);
    }
}

int sec_notice_save(const struct db *db, struct snap_writer *w)
{
    uint64_t cursor = 0;

    do {
        notice_scan(cnt_notices(db->cnt), &cursor, SCAN_BATCH, save_user, w);
        if (snap_put_failed(w))
            return -1;
    } while (cursor != 0);
    return 0;
}

static void count_one(const struct notice *n, void *ctx)
{
    (void)n;
    (void)ctx;
}

static void put_one(const struct notice *n, void *ctx)
{
    struct snap_writer *w = ctx;

    snap_put_u8(w, n->type);
    snap_put_u8(w, n->read);
    snap_put_varint(w, n->delta);
    snap_put_u64(w, n->nid);
}

int sec_notice_save_user(const struct db *db, struct snap_writer *w,
                         uint64_t uid)
{
    const struct notice_set *s = cnt_notices(db->cnt);
    uint32_t n = notice_user(s, uid, count_one, NULL);

    if (n == 0)
        return 0;
    snap_put_u64(w, uid);
    snap_put_varint(w, n);
    notice_user(s, uid, put_one, w);
    return snap_put_failed(w) ? -1 : 0;
}

/* One user's n notices, read into v (USER_MAX entries), into the store. */
static int load_user(struct db *db, struct snap_reader *r, uint64_t uid,
                     uint32_t n, struct notice *v)
{
    for (uint32_t i = 0; i < n; i++) {
        uint64_t delta;

        if (snap_get_u8(r, &v[i].type) != 0 || snap_get_u8(r, &v[i].read) ||
            snap_get_varint(r, UINT32_MAX, &delta) != 0 ||
            snap_get_u64(r, &v[i].nid) != 0)
            return -1;
        v[i].delta = (uint32_t)delta;
        v[i].zero = 0;
    }
    switch (notice_put_user(cnt_notices_mut(db->cnt), uid, n, v)) {
    case 0:
        return 0;
    case 1:
        return snap_fail(r,
                         "user %llu: notices not a set's (a type >= 64, a "
                         "read flag not 0 or 1, an id twice in a type, more "
                         "than %u in a type, or the user listed twice)",
                         (unsigned long long)uid, NOTICE_MAX);
    default:
        return snap_fail(r, "user %llu: out of memory",
                         (unsigned long long)uid);
    }
}

int sec_notice_load(struct db *db, struct snap_reader *r)
{
    struct notice *v = malloc(USER_MAX * sizeof(*v));
    int rc = 0;

    if (v == NULL)
        return snap_fail(r, "out of memory");
    while (rc == 0 && snap_more(r)) {
        uint64_t uid, n;

        if (snap_get_u64(r, &uid) != 0 || snap_get_varint(r, USER_MAX, &n) != 0)
            rc = -1;
        else if (n == 0)
            rc = snap_fail(r, "user %llu: no notice", (unsigned long long)uid);
        else
            rc = load_user(db, r, uid, (uint32_t)n, v);
    }
    free(v);
    return rc;
}
