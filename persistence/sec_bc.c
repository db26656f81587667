/*
 * sec_bc.c - the BC section of the snapshot (sections.def, id 4).
 *
 * Raw bytes: one record per channel, in the store's walk order:
 *   u64 ch, varint head, varint users, then users times:
 *     u64 uid, varint unread (<= head)
 * A user up to date takes 9 bytes before compression.
 */
#include "bc.h"
#include "sections.h"

/* Channels, then users, per walk call: bounds a walk step, not memory. */
#define SCAN_BATCH 1024

struct save_ctx {
    const struct bc_store *s;
    struct snap_writer *w;
};

static void save_user(uint64_t uid, uint64_t unread, void *ctx)
{
    struct snap_writer *w = ctx;

    snap_put_u64(w, uid);
    snap_put_varint(w, unread);
}

static void save_chan(uint64_t ch, uint64_t head, size_t users, void *ctx)
{
    const struct save_ctx *sc = ctx;
    uint64_t cursor = 0;

    snap_put_u64(sc->w, ch);
    snap_put_varint(sc->w, head);
    snap_put_varint(sc->w, users);
    do
        bc_scan_users(sc->s, ch, &cursor, SCAN_BATCH, save_user, sc->w);
    while (cursor != 0 && !snap_put_failed(sc->w));
}

int sec_bc_save(const struct db *db, struct snap_writer *w)
{
    struct save_ctx sc = {db->bc, w};
    uint64_t cursor = 0;

    do {
        bc_scan_channels(db->bc, &cursor, 1, save_chan, &sc);
        if (snap_put_failed(w))
            return -1;
    } while (cursor != 0);
    return 0;
}

static int load_chan(struct bc_store *s, struct snap_reader *r)
{
    uint64_t ch, head, users, uid, unread;
    int rc;

    if (snap_get_u64(r, &ch) != 0 ||
        snap_get_varint(r, UINT64_MAX, &head) != 0 ||
        snap_get_varint(r, UINT64_MAX, &users) != 0)
        return -1;
    rc = bc_restore_channel(s, ch, head);
    if (rc != 0)
        return snap_fail(r, "channel %llu: %s", (unsigned long long)ch,
                         rc > 0 ? "listed twice" : "out of memory");
    for (uint64_t i = 0; i < users; i++) {
        if (snap_get_u64(r, &uid) != 0 ||
            snap_get_varint(r, head, &unread) != 0)
            return -1;
        rc = bc_restore_user(s, ch, uid, unread);
        if (rc != 0)
            return snap_fail(r, "channel %llu, user %llu: %s",
                             (unsigned long long)ch, (unsigned long long)uid,
                             rc > 0 ? "listed twice or unread too large"
                                    : "out of memory");
    }
    return 0;
}

int sec_bc_load(struct db *db, struct snap_reader *r)
{
    while (snap_more(r))
        if (load_chan(db->bc, r) != 0)
            return -1;
    return 0;
}
