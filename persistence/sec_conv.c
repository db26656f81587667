/*
 * sec_conv.c - the CONV section of the snapshot (sections.def, id 2).
 *
 * Raw bytes: one record per (user, conversation), in the store's walk
 * order (a user's conversations together):
 *   u64 uid, u64 cid, varint read, varint max - read,
 *   u8 flags: bit 0 muted, bit 1 extended (the chat features follow),
 *   varint nrecall (0..CONV_RECALL_MAX), then nrecall times: varint gap
 *   (>= 1) from the previous recalled seq, the first from read
 * and when extended:
 *   u8 xflags: bit 0 sparse ids, bit 1 collapsed (thread unread stays out)
 *   sparse only: varint lost - read (0: none), varint nids
 *     (0..CONV_WINDOW_MAX) and nids gaps from read as for recalls
 *   varint tag mask: bit 0 mentions, bit 1 + s source s; per set bit, in
 *     order: varint n (1..CONV_TAG_MAX) and n gaps from read
 *   varint nthreads (0..CONV_THREAD_MAX), then per thread, by ascending
 *     tid: varint tid (the first) or tid gap (>= 1, the next ones), varint
 *     read, varint max - read, varint nrecall and gaps, sparse only: lost
 *     and ids as above, varint nmentions (0..CONV_TAG_MAX) and gaps
 * Files written before the chat features never set bit 1 (their flags
 * byte is the muted byte, 0 or 1), so they load as they always did; a
 * newer record on an older unreadd is refused as an impossible state.
 *
 * The user totals and the thread sums are not saved: conv_put and
 * conv_put_thread rebuild them, and the loader cannot be handed a total
 * that disagrees with its parts. An ordinary conversation takes ~21 bytes
 * before compression, a mention or a sparse id 1 to 9 more.
 */
#include <stdlib.h>

#include "conv.h"
#include "sections.h"

/* Users per conv_scan call: bounds the work of a walk step, not memory. */
#define SCAN_BATCH 1024

#define FL_MUTED 1u
#define FL_EXT 2u
#define XF_SPARSE 1u
#define XF_COLLAPSED 2u

/* vals[0..n) as gaps, the first from base. */
static void put_gaps(struct snap_writer *w, const uint64_t *vals, uint32_t n,
                     uint64_t base)
{
    snap_put_varint(w, n);
    for (uint32_t i = 0; i < n; i++)
        snap_put_varint(w, vals[i] - (i ? vals[i - 1] : base));
}

/* A thread's timeline, or the sparse part of the main one. */
static void put_sparse(struct snap_writer *w, const struct conv_info *ci)
{
    snap_put_varint(w, ci->lost ? ci->lost - ci->read : 0);
    put_gaps(w, ci->ids, ci->nids, ci->read);
}

static bool extended(const struct conv_info *ci)
{
    if (ci->sparse || ci->collapsed || ci->nthreads)
        return true;
    for (unsigned k = 0; k < CONV_TAGS; k++)
        if (ci->ntag[k])
            return true;
    return false;
}

static void save_thread(struct snap_writer *w, const struct conv_info *ti,
                        bool sparse)
{
    snap_put_varint(w, ti->read);
    snap_put_varint(w, ti->max - ti->read);
    put_gaps(w, ti->recall, ti->nrecall, ti->read);
    if (sparse)
        put_sparse(w, ti);
    put_gaps(w, ti->tag[CONV_TAG_MENTION], ti->ntag[CONV_TAG_MENTION],
             ti->read);
}

static void save_conv(uint64_t uid, uint64_t cid, const struct conv_info *ci,
                      void *ctx)
{
    struct snap_writer *w = ctx;
    bool ext = extended(ci);
    uint64_t mask = 0, prev = 0;

    snap_put_u64(w, uid);
    snap_put_u64(w, cid);
    snap_put_varint(w, ci->read);
    snap_put_varint(w, ci->max - ci->read);
    snap_put_u8(w, (uint8_t)((ci->muted ? FL_MUTED : 0) | (ext ? FL_EXT : 0)));
    put_gaps(w, ci->recall, ci->nrecall, ci->read);
    if (!ext)
        return;
    snap_put_u8(w, (uint8_t)((ci->sparse ? XF_SPARSE : 0) |
                             (ci->collapsed ? XF_COLLAPSED : 0)));
    if (ci->sparse)
        put_sparse(w, ci);
    for (unsigned k = 0; k < CONV_TAGS; k++)
        mask |= ci->ntag[k] ? UINT64_C(1) << k : 0;
    snap_put_varint(w, mask);
    for (unsigned k = 0; k < CONV_TAGS; k++)
        if (ci->ntag[k])
            put_gaps(w, ci->tag[k], ci->ntag[k], ci->read);
    snap_put_varint(w, ci->nthreads);
    for (uint32_t i = 0; i < ci->nthreads; i++) {
        struct conv_info ti;
        uint64_t tid;

        conv_info_thread(ci, i, &tid, &ti);
        snap_put_varint(w, i ? tid - prev : tid);
        prev = tid;
        save_thread(w, &ti, ci->sparse);
    }
}

int sec_conv_save(const struct db *db, struct snap_writer *w)
{
    uint64_t cursor = 0;

    do {
        conv_scan(db->conv, &cursor, SCAN_BATCH, save_conv, w);
        if (snap_put_failed(w))
            return -1;
    } while (cursor != 0);
    return 0;
}

int sec_conv_save_user(const struct db *db, struct snap_writer *w, uint64_t uid)
{
    conv_user_info(db->conv, uid, save_conv, w);
    return snap_put_failed(w) ? -1 : 0;
}

/* The loader's buffers: fixed sizes, except the sparse ids, grown as ids
 * are actually read (never from a count in the file). */
struct lbuf {
    uint64_t recall[CONV_RECALL_MAX];
    uint64_t tag[CONV_TAGS][CONV_TAG_MAX];
    uint64_t *ids;
    size_t idcap;
};

/* Reads n (<= max) gaps, the first from base, into out (room for max)
 * or, when grow, into lb->ids, grown as needed. *n the count. */
static int get_gaps(struct snap_reader *r, uint64_t max, uint64_t base,
                    uint64_t *out, struct lbuf *grow, uint32_t *n)
{
    uint64_t cnt, gap, prev = base;

    if (snap_get_varint(r, max, &cnt) != 0)
        return -1;
    for (uint64_t i = 0; i < cnt; i++) {
        if (grow != NULL && i == grow->idcap) {
            size_t cap = grow->idcap ? 2 * grow->idcap : 64;
            uint64_t *more = realloc(grow->ids, cap * sizeof(uint64_t));

            if (more == NULL)
                return snap_fail(r, "out of memory");
            grow->ids = more;
            grow->idcap = cap;
        }
        if (snap_get_varint(r, UINT64_MAX - prev, &gap) != 0)
            return -1;
        prev += gap;
        (grow ? grow->ids : out)[i] = prev;
    }
    *n = (uint32_t)cnt;
    return 0;
}

/* The sparse fields of a timeline whose read is ci->read. */
static int get_sparse(struct snap_reader *r, struct conv_info *ci,
                      struct lbuf *lb)
{
    uint64_t lost;

    if (snap_get_varint(r, UINT64_MAX - ci->read, &lost) != 0 ||
        get_gaps(r, CONV_WINDOW_MAX, ci->read, NULL, lb, &ci->nids) != 0)
        return -1;
    ci->lost = lost ? ci->read + lost : 0;
    ci->ids = lb->ids;
    return 0;
}

/* read, max - read and the recalled seqs, into ci (cleared first). */
static int get_timeline(struct snap_reader *r, struct conv_info *ci,
                        struct lbuf *lb, uint8_t *flags)
{
    uint64_t span;

    *ci = (struct conv_info){0};
    ci->recall = lb->recall;
    if (snap_get_varint(r, UINT64_MAX, &ci->read) != 0 ||
        snap_get_varint(r, UINT64_MAX - ci->read, &span) != 0 ||
        (flags != NULL && snap_get_u8(r, flags) != 0) ||
        get_gaps(r, CONV_RECALL_MAX, ci->read, lb->recall, NULL,
                 &ci->nrecall) != 0)
        return -1;
    ci->max = ci->read + span;
    return 0;
}

static int put_failed(struct snap_reader *r, uint64_t uid, uint64_t cid,
                      const char *what, int rc)
{
    return snap_fail(r, "user %llu conversation %llu%s: %s",
                     (unsigned long long)uid, (unsigned long long)cid, what,
                     rc > 0              ? "listed twice"
                     : rc == CONV_ENOMEM ? "out of memory"
                                         : "impossible state");
}

/* The extension of a record: into ci; *nthreads how many threads follow. */
static int get_ext(struct snap_reader *r, struct conv_info *ci, struct lbuf *lb,
                   uint64_t *nthreads)
{
    uint64_t mask;
    uint8_t xf;

    if (snap_get_u8(r, &xf) != 0)
        return -1;
    if (xf & ~(XF_SPARSE | XF_COLLAPSED))
        return snap_fail(r, "unknown conversation flags 0x%02x", xf);
    ci->sparse = xf & XF_SPARSE;
    ci->collapsed = xf & XF_COLLAPSED;
    if (ci->sparse && get_sparse(r, ci, lb) != 0)
        return -1;
    if (snap_get_varint(r, (UINT64_C(1) << CONV_TAGS) - 1, &mask) != 0)
        return -1;
    for (unsigned k = 0; k < CONV_TAGS; k++) {
        if (!(mask & (UINT64_C(1) << k)))
            continue;
        if (get_gaps(r, CONV_TAG_MAX, ci->read, lb->tag[k], NULL,
                     &ci->ntag[k]) != 0)
            return -1;
        if (ci->ntag[k] == 0)
            return snap_fail(r, "an empty tag list marked present");
        ci->tag[k] = lb->tag[k];
    }
    return snap_get_varint(r, CONV_THREAD_MAX, nthreads);
}

static int load_thread(struct conv_store *s, struct snap_reader *r,
                       uint64_t uid, uint64_t cid, bool sparse, uint64_t *tid,
                       uint64_t i, struct lbuf *lb)
{
    struct conv_info ti;
    uint64_t gap;
    int rc;

    if (snap_get_varint(r, i ? UINT64_MAX - *tid : UINT64_MAX, &gap) != 0)
        return -1;
    if (i > 0 && gap == 0)
        return snap_fail(r, "threads not in ascending order");
    *tid = i ? *tid + gap : gap;
    if (get_timeline(r, &ti, lb, NULL) != 0 ||
        (sparse && get_sparse(r, &ti, lb) != 0) ||
        get_gaps(r, CONV_TAG_MAX, ti.read, lb->tag[CONV_TAG_MENTION], NULL,
                 &ti.ntag[CONV_TAG_MENTION]) != 0)
        return -1;
    ti.tag[CONV_TAG_MENTION] = lb->tag[CONV_TAG_MENTION];
    rc = conv_put_thread(s, uid, cid, *tid, &ti);
    return rc == 0 ? 0 : put_failed(r, uid, cid, " thread", rc);
}

/* One record. */
static int load_conv(struct conv_store *s, struct snap_reader *r,
                     struct lbuf *lb)
{
    uint64_t uid, cid, nthreads = 0, tid = 0;
    struct conv_info ci;
    uint8_t flags;
    int rc;

    if (snap_get_u64(r, &uid) != 0 || snap_get_u64(r, &cid) != 0 ||
        get_timeline(r, &ci, lb, &flags) != 0)
        return -1;
    if (flags & ~(FL_MUTED | FL_EXT))
        return put_failed(r, uid, cid, "", CONV_EINVAL);
    ci.muted = flags & FL_MUTED;
    if ((flags & FL_EXT) && get_ext(r, &ci, lb, &nthreads) != 0)
        return -1;
    rc = conv_put(s, uid, cid, &ci, (uint32_t)nthreads);
    if (rc != 0)
        return put_failed(r, uid, cid, "", rc);
    for (uint64_t i = 0; i < nthreads; i++)
        if (load_thread(s, r, uid, cid, ci.sparse, &tid, i, lb) != 0)
            return -1;
    return 0;
}

int sec_conv_load(struct db *db, struct snap_reader *r)
{
    struct lbuf *lb = calloc(1, sizeof(*lb)); /* ~82 KiB */
    int rc = 0;

    if (lb == NULL)
        return snap_fail(r, "out of memory");
    while (rc == 0 && snap_more(r))
        rc = load_conv(db->conv, r, lb);
    free(lb->ids);
    free(lb);
    return rc;
}
