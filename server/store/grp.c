/*
 * grp.c - GRP on two shared containers:
 *
 *   groups   a denseid: gid -> a dense index (assigned at the group's first
 *            use, never reused) and per index a struct grp_group, its head
 *            and its window: a ring of 32-bit timestamp offsets,
 *            ring[seq % cap] for the `known` newest seqs, allocated at the
 *            first post with RING_MIN slots and doubled each time it is
 *            full, up to `window` (most groups never see unread-cap + 1
 *            messages: a group of 12 posts holds 16 slots, not 101);
 *   members  a listmap: uid -> the user's memberships, one u64 entry each,
 *            index << 33 | seen << 1 | 1 (31 bits of group index, the low
 *            32 bits of seen), by ascending index.
 *
 * So a membership is 8 bytes, inline in the user's map slot when it is the
 * user's only one: one slot (~20 bytes) for a user in one group, ~20 + 8 +
 * 8n bytes for n groups (~11 bytes a membership at 10). Users in no group
 * have no entry.
 *
 * Nothing scans members: a post touches its group alone, an unread is one
 * lookup in the user's list and one group, a total walks the user's list.
 */
#include "grp.h"

#include "db.h"
#include "denseid.h"
#include "listmap.h"
#include "mem.h"

#include <stdlib.h>
#include <string.h>

/* Group indexes fill the top 31 bits of a membership entry. */
#define GIDX_BITS 31
#define MEMB_SHIFT (64 - GIDX_BITS)

/* A ring's first size, and its growth step's smallest. */
#define RING_MIN 4u

struct grp_group {
    uint64_t head;   /* seq of the newest message; 0 before any */
    uint64_t base;   /* window timestamps are offsets from base */
    uint32_t *ring;  /* ring[seq % cap]; NULL before the first post */
    uint32_t window; /* timestamps kept at most; 0 before the first post */
    uint32_t cap;    /* ring slots: known <= cap <= window */
    uint32_t known;  /* kept timestamps: seqs head - known + 1 .. head */
};

struct grp_store {
    struct denseid *groups;  /* gid -> index, struct grp_group */
    struct listmap *members; /* uid -> membership entries */
    struct mem_acct mem;     /* both, and the windows */
};

static inline uint64_t memb_entry(uint32_t gidx, uint32_t seen)
{
    return (uint64_t)gidx << MEMB_SHIFT | (uint64_t)seen << 1 | 1;
}

static inline uint32_t memb_gidx(uint64_t e)
{
    return (uint32_t)(e >> MEMB_SHIFT);
}

static inline struct grp_group *group_at(const struct grp_store *s,
                                         uint32_t gidx)
{
    return denseid_val(s->groups, gidx);
}

/* Unread modulo 2^32 (grp.h, "Widths"). */
static inline uint64_t memb_unread(const struct grp_group *g, uint64_t e)
{
    return (uint32_t)((uint32_t)g->head - (uint32_t)(e >> 1));
}

/* gid's index, adding the group when new. GRP_OK or GRP_ENOMEM (also when
 * the 2^31 indexes are all given: ~100 GB of groups). */
static int group_get(struct grp_store *s, uint64_t gid, uint32_t *gidx)
{
    return denseid_intern(s->groups, gid, gidx) == 0 ? GRP_OK : GRP_ENOMEM;
}

/* The timestamp of kept message seq. */
static inline uint64_t ring_ts(const struct grp_group *g, uint64_t seq)
{
    return g->base + g->ring[seq % g->cap];
}

/* Gives g's ring `cap` slots, keeping the newest timestamps that fit.
 * GRP_OK or GRP_ENOMEM (g unchanged). */
static int ring_resize(struct grp_store *s, struct grp_group *g, uint32_t cap)
{
    uint32_t keep = g->known < cap ? g->known : cap;
    uint32_t *r = mem_zalloc(&s->mem, (size_t)cap * sizeof(*r));

    if (r == NULL)
        return GRP_ENOMEM;
    for (uint64_t q = g->head - keep + 1; q <= g->head; q++)
        r[q % cap] = g->ring[q % g->cap];
    mem_free(&s->mem, g->ring, (size_t)g->cap * sizeof(*r));
    g->ring = r;
    g->cap = cap;
    g->known = keep;
    return GRP_OK;
}

/* Makes room for one more timestamp in a group that keeps `window`: a
 * smaller window drops the oldest now; a full ring below the window
 * doubles. GRP_OK or GRP_ENOMEM (g's kept timestamps unchanged). */
static int ring_make_room(struct grp_store *s, struct grp_group *g,
                          uint32_t window)
{
    uint32_t cap;

    if (g->cap > window && ring_resize(s, g, window) != GRP_OK)
        return GRP_ENOMEM;
    if (g->known < g->cap || g->cap >= window)
        return GRP_OK;
    cap = g->cap < RING_MIN ? RING_MIN : g->cap * 2;
    return ring_resize(s, g, cap < window ? cap : window);
}

/*
 * Moves g's base up so that ts - base fits in 32 bits: to the oldest kept
 * timestamp when that is enough, else as little as needed, recording the
 * kept timestamps below the new base at the base itself.
 */
static void ring_rebase(struct grp_group *g, uint64_t ts)
{
    uint64_t first = g->head - g->known + 1;
    uint64_t base = ts - UINT32_MAX, oldest = ring_ts(g, first);

    if (oldest > base)
        base = oldest;
    for (uint64_t q = first; q <= g->head; q++) {
        uint64_t t = ring_ts(g, q);

        g->ring[q % g->cap] = t > base ? (uint32_t)(t - base) : 0;
    }
    g->base = base;
}

/* Appends the next message at ts (clamped to the newest kept one, so the
 * window stays sorted). g's ring has a slot (ring_make_room). */
static void ring_append(struct grp_group *g, uint64_t ts)
{
    if (g->known == 0) {
        g->base = ts;
    } else {
        uint64_t last = ring_ts(g, g->head);

        if (ts < last)
            ts = last;
        if (ts - g->base > UINT32_MAX)
            ring_rebase(g, ts);
    }
    g->head++;
    g->ring[g->head % g->cap] = (uint32_t)(ts - g->base);
    if (g->known < g->cap)
        g->known++;
}

/*
 * The seq of g's last message posted at or before ts, as far as the window
 * knows: when ts is older than every kept message (or than the base), the
 * seq just before the window.
 */
static uint64_t group_seen_at(const struct grp_group *g, uint64_t ts)
{
    uint64_t lo = g->head - g->known + 1, hi = g->head + 1;

    if (ts < g->base)
        return lo - 1;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;

        if (g->ring[mid % g->cap] <= ts - g->base)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo - 1;
}

/*
 * The shared body of join and seen: uid's membership of gid placed at the
 * last message at or before ts when new; an existing one moves forward to
 * it when `advance`, else stays. *unread after.
 */
static int memb_place(struct grp_store *s, uint64_t uid, uint64_t gid,
                      uint64_t ts, bool advance, uint32_t max_groups,
                      uint64_t *unread)
{
    const struct grp_group *g;
    const uint64_t *list;
    uint64_t *e, one, nm;
    uint32_t gidx;
    bool known = denseid_find(s->groups, gid, &gidx);

    if (known && (e = listmap_find(s->members, uid, gidx)) != NULL) {
        g = group_at(s, gidx);
        if (advance) {
            uint64_t at = group_seen_at(g, ts);

            if (g->head - at < memb_unread(g, *e))
                *e = memb_entry(gidx, (uint32_t)at);
        }
        *unread = memb_unread(g, *e);
        return GRP_OK;
    }
    if (listmap_get(s->members, uid, &list, &one) >= max_groups)
        return GRP_ELIMIT;
    if (!known && group_get(s, gid, &gidx) != GRP_OK)
        return GRP_ENOMEM;
    g = group_at(s, gidx);
    nm = memb_entry(gidx, (uint32_t)group_seen_at(g, ts));
    if (listmap_add(s->members, uid, nm) != 0) {
        /* Fixed: the group created for this join used to stay behind. */
        if (!known)
            denseid_unintern(s->groups, gid);
        return GRP_ENOMEM;
    }
    *unread = memb_unread(g, nm);
    return GRP_OK;
}

struct grp_store *grp_create(void)
{
    struct grp_store *s = mem_zalloc(NULL, sizeof(*s));

    if (s == NULL)
        return NULL;
    mem_acct_init(&s->mem, NULL);
    s->groups = denseid_create(&s->mem, sizeof(struct grp_group),
                               UINT32_C(1) << GIDX_BITS);
    s->members = listmap_create(&s->mem, GIDX_BITS);
    if (s->groups == NULL || s->members == NULL) {
        grp_destroy(s);
        return NULL;
    }
    return s;
}

void grp_destroy(struct grp_store *s)
{
    if (s == NULL)
        return;
    if (s->groups != NULL)
        for (uint32_t i = 0; i < denseid_count(s->groups); i++)
            mem_free(&s->mem, group_at(s, i)->ring,
                     (size_t)group_at(s, i)->cap * sizeof(uint32_t));
    denseid_destroy(s->groups);
    listmap_destroy(s->members);
    mem_free(NULL, s, sizeof(*s));
}

int grp_post(struct grp_store *s, uint64_t gid, uint64_t ts, uint32_t window,
             uint64_t *seq)
{
    struct grp_group *g;
    uint32_t gidx;
    bool known = denseid_find(s->groups, gid, &gidx);

    if (window == 0)
        window = 1;
    if (!known && group_get(s, gid, &gidx) != GRP_OK)
        return GRP_ENOMEM;
    g = group_at(s, gidx);
    if (ring_make_room(s, g, window) != GRP_OK) {
        /* Fixed: the group created for this post used to stay behind. */
        if (!known)
            denseid_unintern(s->groups, gid);
        return GRP_ENOMEM;
    }
    g->window = window;
    ring_append(g, ts);
    *seq = g->head;
    return GRP_OK;
}

int grp_join(struct grp_store *s, uint64_t uid, uint64_t gid,
             uint32_t max_groups, uint64_t *unread)
{
    return memb_place(s, uid, gid, UINT64_MAX, false, max_groups, unread);
}

int grp_seen(struct grp_store *s, uint64_t uid, uint64_t gid, uint64_t ts,
             uint32_t max_groups, uint64_t *unread)
{
    return memb_place(s, uid, gid, ts, true, max_groups, unread);
}

bool grp_member(const struct grp_store *s, uint64_t uid, uint64_t gid)
{
    uint32_t gidx;
    uint64_t e;

    return denseid_find(s->groups, gid, &gidx) &&
           listmap_lookup(s->members, uid, gidx, &e);
}

/* What a bulk join did for gids[i], to take it back. */
#define DID_JOIN 1u   /* uid is a member since this call */
#define DID_INTERN 2u /* the group is new to the store since this call */

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

/*
 * Counts the new memberships first (on a sorted copy, so repeats count
 * once) to refuse a join past the limit before anything changes; a join
 * that fails for memory undoes those made before it.
 */
int grp_join_many(struct grp_store *s, uint64_t uid, const uint64_t *gids,
                  uint32_t n, uint32_t max_groups, uint64_t limit,
                  uint64_t *unread)
{
    size_t bytes = (n ? n : 1) * sizeof(uint64_t);
    uint64_t *sorted = mem_alloc(NULL, bytes), one, sum = 0;
    uint8_t *did = mem_zalloc(NULL, n ? n : 1);
    const uint64_t *list;
    uint32_t fresh = 0, i, gidx;
    int rc = GRP_OK;

    if (sorted == NULL || did == NULL) {
        rc = GRP_ENOMEM;
        goto done;
    }
    memcpy(sorted, gids, n * sizeof(*sorted));
    qsort(sorted, n, sizeof(*sorted), u64_cmp);
    for (i = 0; i < n; i++)
        fresh += (i == 0 || sorted[i] != sorted[i - 1]) &&
                 !grp_member(s, uid, sorted[i]);
    if (fresh > 0 &&
        (uint64_t)listmap_get(s->members, uid, &list, &one) + fresh >
            max_groups) {
        rc = GRP_ELIMIT;
        goto done;
    }
    for (i = 0; i < n; i++) {
        bool known = denseid_find(s->groups, gids[i], &gidx);
        bool member = known && grp_member(s, uid, gids[i]);
        uint64_t u;

        rc = grp_join(s, uid, gids[i], UINT32_MAX, &u);
        if (rc != GRP_OK) {
            /* back in reverse order: a group this call created is the
             * last interned when its turn comes */
            while (i-- > 0) {
                if (did[i] & DID_JOIN)
                    grp_leave(s, uid, gids[i]);
                if (did[i] & DID_INTERN)
                    denseid_unintern(s->groups, gids[i]);
            }
            goto done;
        }
        did[i] = (uint8_t)((member ? 0 : DID_JOIN) | (known ? 0 : DID_INTERN));
    }
    for (i = 0; i < n && sum <= limit; i++)
        if (i == 0 || sorted[i] != sorted[i - 1])
            sum += grp_unread(s, uid, sorted[i]);
    *unread = sum;

done:
    mem_free(NULL, sorted, sorted ? bytes : 0);
    mem_free(NULL, did, did ? (n ? n : 1) : 0);
    return rc;
}

bool grp_leave(struct grp_store *s, uint64_t uid, uint64_t gid)
{
    uint32_t gidx;

    return denseid_find(s->groups, gid, &gidx) &&
           listmap_del(s->members, uid, gidx);
}

uint64_t grp_unread(const struct grp_store *s, uint64_t uid, uint64_t gid)
{
    uint32_t gidx;
    uint64_t e;

    if (!denseid_find(s->groups, gid, &gidx) ||
        !listmap_lookup(s->members, uid, gidx, &e))
        return 0;
    return memb_unread(group_at(s, gidx), e);
}

uint64_t grp_total(const struct grp_store *s, uint64_t uid, uint64_t limit)
{
    const uint64_t *e;
    uint64_t one, sum = 0;
    uint32_t n = listmap_get(s->members, uid, &e, &one);

    for (uint32_t i = 0; i < n && sum <= limit; i++)
        sum += memb_unread(group_at(s, memb_gidx(e[i])), e[i]);
    return sum;
}

uint32_t grp_groups(const struct grp_store *s, uint64_t uid)
{
    const uint64_t *e;
    uint64_t one;

    return listmap_get(s->members, uid, &e, &one);
}

static int item_cmp(const void *a, const void *b)
{
    uint64_t x = ((const struct grp_item *)a)->gid;
    uint64_t y = ((const struct grp_item *)b)->gid;

    return (x > y) - (x < y);
}

uint32_t grp_list(const struct grp_store *s, uint64_t uid, struct grp_item *out)
{
    const uint64_t *e;
    uint64_t one;
    uint32_t n = listmap_get(s->members, uid, &e, &one), k = 0;

    for (uint32_t i = 0; i < n; i++) {
        uint32_t gidx = memb_gidx(e[i]);
        uint64_t u = memb_unread(group_at(s, gidx), e[i]);

        if (u > 0)
            out[k++] = (struct grp_item){denseid_id(s->groups, gidx), u};
    }
    /* Lists are in index order (first use); replies go by gid. */
    qsort(out, k, sizeof(*out), item_cmp);
    return k;
}

uint32_t grp_group_count(const struct grp_store *s)
{
    return denseid_count(s->groups);
}

void grp_group_info(const struct grp_store *s, uint32_t i,
                    struct grp_group_info *gi)
{
    const struct grp_group *g = group_at(s, i);

    *gi = (struct grp_group_info){denseid_id(s->groups, i), g->head, g->window,
                                  g->known};
}

uint64_t grp_group_ts(const struct grp_store *s, uint32_t i, uint32_t k)
{
    const struct grp_group *g = group_at(s, i);

    return ring_ts(g, g->head - g->known + 1 + k);
}

struct member_walk {
    const struct grp_store *s;
    grp_member_fn fn;
    void *ctx;
};

static void member_visit(uint64_t uid, uint32_t n, const uint64_t *e, void *ctx)
{
    const struct member_walk *mw = ctx;

    for (uint32_t i = 0; i < n; i++)
        mw->fn(uid, memb_gidx(e[i]),
               memb_unread(group_at(mw->s, memb_gidx(e[i])), e[i]), mw->ctx);
}

size_t grp_scan_members(const struct grp_store *s, uint64_t *cursor, size_t max,
                        grp_member_fn fn, void *ctx)
{
    struct member_walk mw = {s, fn, ctx};

    return listmap_scan(s->members, cursor, max, member_visit, &mw);
}

/* Whether (head, window, known, ts) can be a group's state. */
static bool group_valid(uint64_t head, uint32_t window, uint32_t known,
                        const uint64_t *ts)
{
    if (window > GRP_WINDOW_MAX || known > window || known > head ||
        (head > 0 && known == 0))
        return false;
    for (uint32_t k = 1; k < known; k++)
        if (ts[k] < ts[k - 1])
            return false;
    return true;
}

int grp_restore_group(struct grp_store *s, uint64_t gid, uint64_t head,
                      uint32_t window, uint32_t known, const uint64_t *ts)
{
    struct grp_group *g;
    uint32_t gidx, cap;

    if (!group_valid(head, window, known, ts) ||
        denseid_find(s->groups, gid, &gidx))
        return 1;
    if (group_get(s, gid, &gidx) != GRP_OK)
        return GRP_ENOMEM;
    g = group_at(s, gidx);
    /* The kept messages go in as posts, on top of the ones before. */
    g->head = head - known;
    g->window = window;
    cap = known > RING_MIN ? known : RING_MIN; /* as the posts would grow it */
    if (cap > window)
        cap = window;
    if (cap > 0 && ring_resize(s, g, cap) != GRP_OK)
        return GRP_ENOMEM; /* the group stays, empty: the load fails */
    for (uint32_t k = 0; k < known; k++)
        ring_append(g, ts[k]);
    return 0;
}

int grp_restore_member(struct grp_store *s, uint64_t uid, uint32_t group,
                       uint64_t unread)
{
    const struct grp_group *g;

    if (group >= denseid_count(s->groups))
        return 1;
    g = group_at(s, group);
    if (unread > g->head || unread > UINT32_MAX ||
        listmap_find(s->members, uid, group) != NULL)
        return 1;
    if (listmap_add(s->members, uid,
                    memb_entry(group, (uint32_t)(g->head - unread))) != 0)
        return GRP_ENOMEM;
    return 0;
}

size_t grp_entries(const struct grp_store *s)
{
    return listmap_entries(s->members);
}

size_t grp_bytes(const struct grp_store *s)
{
    return sizeof(*s) + s->mem.bytes;
}

/* listmap_audit's per-entry rule: a known group, seen not ahead of it. */
static size_t audit_memb(uint64_t e, const void *ctx)
{
    const struct grp_store *s = ctx;
    const struct grp_group *g;

    if (memb_gidx(e) >= denseid_count(s->groups))
        return 1;
    g = group_at(s, memb_gidx(e));
    return memb_unread(g, e) > g->head;
}

/* Violations in group gidx's window: shape, and timestamps in seq order. */
static size_t audit_group(const struct grp_group *g)
{
    size_t bad = 0;

    bad += (g->ring == NULL) != (g->cap == 0);
    bad += g->known > g->cap || g->cap > g->window || g->known > g->head;
    bad += g->head > 0 && g->known == 0;
    if (bad != 0)
        return bad;
    for (uint64_t q = g->head - g->known + 2; q <= g->head; q++)
        bad += g->ring[q % g->cap] < g->ring[(q - 1) % g->cap];
    return bad;
}

size_t grp_audit(const struct grp_store *s)
{
    size_t bad = 0, ring_bytes = 0;

    for (uint32_t i = 0; i < denseid_count(s->groups); i++) {
        bad += audit_group(group_at(s, i));
        ring_bytes += (size_t)group_at(s, i)->cap * sizeof(uint32_t);
    }
    bad += ring_bytes + denseid_bytes(s->groups) + listmap_bytes(s->members) !=
           s->mem.bytes;
    bad += denseid_audit(s->groups);
    bad += listmap_audit(s->members, audit_memb, s);
    return bad;
}

size_t grp_forget_user(struct grp_store *s, uint64_t uid)
{
    return listmap_del_user(s->members, uid);
}

uint32_t grp_user_info(const struct grp_store *s, uint64_t uid, grp_user_fn fn,
                       void *ctx)
{
    const uint64_t *e;
    uint64_t one;
    uint32_t n = listmap_get(s->members, uid, &e, &one);

    for (uint32_t i = 0; i < n; i++) {
        const struct grp_group *g = group_at(s, memb_gidx(e[i]));

        fn(denseid_id(s->groups, memb_gidx(e[i])), g->head,
           memb_unread(g, e[i]), ctx);
    }
    return n;
}

void grp_prefetch_user(const struct grp_store *s, uint64_t uid, int stage)
{
    listmap_prefetch(s->members, uid, stage);
}
