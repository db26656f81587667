/*
 * sec_cnt.c - the CNT section of the snapshot (sections.def, id 1).
 *
 * Raw bytes: one record per user holding a non-zero counter, in the
 * store's walk order:
 *   u64 uid, u8 n (1..64), then n times: u8 type (strictly ascending,
 *   < 64), varint value (1..4294967295)
 * A user with two small counters takes 13 bytes before compression.
 */
#include "cnt.h"
#include "sections.h"

/* Users per cnt_scan call: bounds the stack of a walk step, not memory. */
#define SCAN_BATCH 1024

static void save_user(uint64_t uid, unsigned n, const uint8_t *types,
                      const uint32_t *vals, void *ctx)
{
    struct snap_writer *w = ctx;

    snap_put_u64(w, uid);
    snap_put_u8(w, (uint8_t)n);
    for (unsigned i = 0; i < n; i++) {
        snap_put_u8(w, types[i]);
        snap_put_varint(w, vals[i]);
    }
}

int sec_cnt_save(const struct db *db, struct snap_writer *w)
{
    uint64_t cursor = 0;

    do {
        cnt_scan(db->cnt, &cursor, SCAN_BATCH, save_user, w);
        if (snap_put_failed(w))
            return -1;
    } while (cursor != 0);
    return 0;
}

int sec_cnt_save_user(const struct db *db, struct snap_writer *w, uint64_t uid)
{
    uint8_t types[CNT_TYPES];
    uint32_t vals[CNT_TYPES];
    unsigned n = cnt_getall(db->cnt, uid, types, vals);

    if (n > 0)
        save_user(uid, n, types, vals, w);
    return snap_put_failed(w) ? -1 : 0;
}

int sec_cnt_load(struct db *db, struct snap_reader *r)
{
    uint8_t types[CNT_TYPES];
    uint32_t vals[CNT_TYPES];

    while (snap_more(r)) {
        uint64_t uid, v;
        uint8_t n;
        int rc;

        if (snap_get_u64(r, &uid) != 0 || snap_get_u8(r, &n) != 0)
            return -1;
        if (n == 0 || n > CNT_TYPES)
            return snap_fail(r, "user %llu: %u counter types",
                             (unsigned long long)uid, n);
        for (unsigned i = 0; i < n; i++) {
            if (snap_get_u8(r, &types[i]) != 0 ||
                snap_get_varint(r, CNT_VALUE_MAX, &v) != 0)
                return -1;
            if (types[i] >= CNT_TYPES || (i > 0 && types[i] <= types[i - 1]))
                return snap_fail(r, "user %llu: bad or unordered type %u",
                                 (unsigned long long)uid, types[i]);
            if (v == 0)
                return snap_fail(r, "user %llu: zero value stored",
                                 (unsigned long long)uid);
            vals[i] = (uint32_t)v;
        }
        rc = cnt_put_user(db->cnt, uid, n, types, vals);
        if (rc != 0)
            return snap_fail(r, "user %llu: %s", (unsigned long long)uid,
                             rc > 0 ? "listed twice" : "out of memory");
    }
    return 0;
}
