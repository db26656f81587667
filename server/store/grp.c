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
 *   members  a memblist: uid -> the user's memberships by ascending index,
 *            each the group index, the mute flag and the low 32 bits of
 *            seen, as entries index << 34 | muted << 33 | seen << 1 | 1
 *            (memblist.h packs them in the bytes the list needs);
 *   recs     a u64map: group index -> its recalled seqs (an exact-size
 *            ascending array), for the groups with some; a group's
 *            `nrec` says how many, so a group without recalls costs no
 *            lookup;
 *   ment     a u64map: uid -> the user's mentions, one u64 each, index <<
 *            32 | the low 32 bits of the seq, ascending, for the users
 *            with some.
 *
 * So a user in one group costs one map slot (~20 bytes); in n groups, one
 * slot plus 8 + n x (1..4 + 1..4) bytes: 8 + 3n for groups a few thousand
 * indexes apart read up to seq 255 (~6 bytes a membership at 10 groups).
 * Users in no group have no entry. A seen that outgrows its record's
 * width re-encodes the record: GRP.SEEN, GRP.MARKUNREAD and GRP.SEENALL
 * can fail for memory even for a member (nothing changed).
 *
 * Nothing scans members: a post touches its group alone, an unread is one
 * lookup in the user's list and one group, a total walks the user's list.
 */
#include "grp.h"

#include "db.h"
#include "denseid.h"
#include "memblist.h"
#include "mem.h"
#include "u64map.h"

#include <stdlib.h>
#include <string.h>

/* Group indexes fill the top 30 bits of a membership entry. */
#define GIDX_BITS 30
#define MEMB_SHIFT (64 - GIDX_BITS)
#define MEMB_MUTED (UINT64_C(1) << 33)

/* Memberships decoded at a time by the loops over a user's groups. */
#define DECODE_RUN 32u

/* A ring's first size, and its growth step's smallest. */
#define RING_MIN 4u

struct grp_group {
    uint64_t head;   /* seq of the newest message; 0 before any */
    uint64_t base;   /* window timestamps are offsets from base */
    uint32_t *ring;  /* ring[seq % cap]; NULL before the first post */
    uint32_t window; /* timestamps kept at most; 0 before the first post */
    uint32_t cap;    /* ring slots: known <= cap <= window */
    uint32_t known;  /* kept timestamps: seqs head - known + 1 .. head */
    uint32_t nrec;   /* recalled seqs (in recs) */
};

/* A user's mentions: index << 32 | low 32 bits of the seq, ascending. */
struct gml {
    uint32_t n, cap;
    uint64_t e[];
};

struct grp_store {
    struct denseid *groups;   /* gid -> index, struct grp_group */
    struct memblist *members; /* uid -> membership entries */
    struct u64map *recs;      /* group index -> uint64_t[nrec] */
    struct u64map *ment;      /* uid -> struct gml */
    struct mem_acct mem;      /* all four, the windows, recalls, mentions */
};

static inline uint64_t memb_entry(uint32_t gidx, uint32_t seen, bool muted)
{
    return (uint64_t)gidx << MEMB_SHIFT | (muted ? MEMB_MUTED : 0) |
           (uint64_t)seen << 1 | 1;
}

static inline bool memb_muted(uint64_t e)
{
    return e & MEMB_MUTED;
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

/* head - seen, modulo 2^32 (grp.h, "Widths"), recalls not subtracted. */
static inline uint64_t memb_raw(const struct grp_group *g, uint64_t e)
{
    return (uint32_t)((uint32_t)g->head - (uint32_t)(e >> 1));
}

static inline uint64_t memb_seen(const struct grp_group *g, uint64_t e)
{
    return g->head - memb_raw(g, e);
}

/* Group gidx's recalled seqs (g->nrec of them), or NULL. */
static inline const uint64_t *
group_recs(const struct grp_store *s, uint32_t gidx, const struct grp_group *g)
{
    return g->nrec ? (const uint64_t *)(uintptr_t)u64map_get(s->recs, gidx)
                   : NULL;
}

/* How many of the n ascending seqs r are <= x. */
static uint32_t seqs_upto(const uint64_t *r, uint32_t n, uint64_t x)
{
    uint32_t lo = 0, hi = n;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;

        if (r[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A member's unread: head - seen, minus the recalled seqs above seen. */
static uint64_t memb_unread(const struct grp_store *s, uint32_t gidx,
                            const struct grp_group *g, uint64_t e)
{
    uint64_t raw = memb_raw(g, e);

    if (g->nrec == 0 || raw == 0)
        return raw;
    return raw - (g->nrec -
                  seqs_upto(group_recs(s, gidx, g), g->nrec, g->head - raw));
}

/* ---- Mentions ----------------------------------------------------------- */

static inline size_t gml_size(uint32_t cap)
{
    return sizeof(struct gml) + (size_t)cap * sizeof(uint64_t);
}

static struct gml *gml_of(const struct grp_store *s, uint64_t uid)
{
    return (struct gml *)(uintptr_t)u64map_get(s->ment, uid);
}

/* The full seq of a mention entry of group g (within 2^32 of its head). */
static inline uint64_t ment_seq(const struct grp_group *g, uint64_t m)
{
    return g->head - (uint32_t)((uint32_t)g->head - (uint32_t)m);
}

/* The range [*lo, *hi) of l's entries of group gidx. */
static void gml_range(const struct gml *l, uint32_t gidx, uint32_t *lo,
                      uint32_t *hi)
{
    uint64_t first = (uint64_t)gidx << 32;

    *lo = l ? seqs_upto(l->e, l->n, first - 1) : 0;
    if (gidx == 0)
        *lo = 0;
    *hi = l ? seqs_upto(l->e, l->n, first | UINT32_MAX) : 0;
}

/* The member's mentions: entries of its group above seen, not recalled. */
static uint64_t memb_mentions(const struct grp_store *s, uint64_t uid,
                              uint32_t gidx, const struct grp_group *g,
                              uint64_t e)
{
    const struct gml *l = gml_of(s, uid);
    const uint64_t *rec = group_recs(s, gidx, g);
    uint64_t seen = memb_seen(g, e), n = 0;
    uint32_t lo, hi;

    gml_range(l, gidx, &lo, &hi);
    for (uint32_t i = lo; i < hi; i++) {
        uint64_t q = ment_seq(g, l->e[i]);
        uint32_t k = rec ? seqs_upto(rec, g->nrec, q) : 0;

        n += q > seen && !(k > 0 && rec[k - 1] == q);
    }
    return n;
}

static void gml_free(struct grp_store *s, uint64_t uid, struct gml *l)
{
    u64map_del(s->ment, uid);
    mem_free(&s->mem, l, gml_size(l->cap));
}

/* Room for k more mentions of uid: 0, or GRP_ENOMEM (a list created for it
 * stays, empty: gml_tidy removes it). */
static int gml_reserve(struct grp_store *s, uint64_t uid, uint32_t k)
{
    struct gml *l = gml_of(s, uid), *nl;
    uint32_t want;

    if (l != NULL && l->cap >= l->n + k)
        return GRP_OK;
    if (l == NULL) {
        nl = mem_zalloc(&s->mem, gml_size(k));
        if (nl == NULL)
            return GRP_ENOMEM;
        if (u64map_put(s->ment, uid, (uint64_t)(uintptr_t)nl) != 0) {
            mem_free(&s->mem, nl, gml_size(k));
            return GRP_ENOMEM;
        }
        nl->cap = k;
        return GRP_OK;
    }
    want = l->n + k;
    nl = mem_realloc(&s->mem, l, gml_size(l->cap), gml_size(want));
    if (nl == NULL)
        return GRP_ENOMEM;
    nl->cap = want;
    *u64map_ref(s->ment, uid) = (uint64_t)(uintptr_t)nl;
    return GRP_OK;
}

/* Frees uid's list when empty, shrinks it when loose. */
static void gml_tidy(struct grp_store *s, uint64_t uid)
{
    struct gml *l = gml_of(s, uid), *nl;

    if (l == NULL || l->n == l->cap)
        return;
    if (l->n == 0) {
        gml_free(s, uid, l);
        return;
    }
    /* a shrink: never fails (mem.h) */
    nl = mem_realloc(&s->mem, l, gml_size(l->cap), gml_size(l->n));
    nl->cap = nl->n;
    *u64map_ref(s->ment, uid) = (uint64_t)(uintptr_t)nl;
}

/* Adds seq (of group gidx) to uid's mentions, room reserved; past
 * GRP_MENTION_MAX of the group the oldest is forgotten. */
static void gml_add(struct grp_store *s, uint64_t uid, uint32_t gidx,
                    uint64_t seq)
{
    struct gml *l = gml_of(s, uid);
    uint64_t m = (uint64_t)gidx << 32 | (uint32_t)seq;
    uint32_t lo, hi, i;

    gml_range(l, gidx, &lo, &hi);
    i = seqs_upto(l->e, l->n, m);
    if (i > 0 && l->e[i - 1] == m)
        return;
    if (hi - lo == GRP_MENTION_MAX) {
        memmove(&l->e[lo], &l->e[lo + 1], (l->n - lo - 1) * sizeof(uint64_t));
        l->n--;
        i--;
    }
    memmove(&l->e[i + 1], &l->e[i], (l->n - i) * sizeof(uint64_t));
    l->e[i] = m;
    l->n++;
}

/* Forgets uid's mentions of group gidx at or below seen (all: UINT64_MAX). */
static void gml_prune(struct grp_store *s, uint64_t uid, uint32_t gidx,
                      uint64_t seen)
{
    struct gml *l = gml_of(s, uid);
    const struct grp_group *g = group_at(s, gidx);
    uint32_t lo, hi, k;

    if (l == NULL)
        return;
    gml_range(l, gidx, &lo, &hi);
    k = lo;
    for (uint32_t i = lo; i < hi; i++)
        if (seen != UINT64_MAX && ment_seq(g, l->e[i]) > seen)
            l->e[k++] = l->e[i];
    memmove(&l->e[k], &l->e[hi], (l->n - hi) * sizeof(uint64_t));
    l->n -= hi - k;
    gml_tidy(s, uid);
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
    struct ml_iter it;
    uint64_t e, nm;
    uint32_t gidx;
    bool known = denseid_find(s->groups, gid, &gidx);

    if (known && memblist_lookup(s->members, uid, gidx, &e)) {
        g = group_at(s, gidx);
        if (advance) {
            uint64_t at = group_seen_at(g, ts);

            if (g->head - at < memb_raw(g, e)) {
                e = memb_entry(gidx, (uint32_t)at, memb_muted(e));
                if (memblist_set(s->members, uid, e) != 0)
                    return GRP_ENOMEM;
                gml_prune(s, uid, gidx, at);
            }
        }
        *unread = memb_unread(s, gidx, g, e);
        return GRP_OK;
    }
    if (memblist_get(s->members, uid, &it) >= max_groups)
        return GRP_ELIMIT;
    if (!known && group_get(s, gid, &gidx) != GRP_OK)
        return GRP_ENOMEM;
    g = group_at(s, gidx);
    nm = memb_entry(gidx, (uint32_t)group_seen_at(g, ts), false);
    if (memblist_add(s->members, uid, nm) != 0) {
        /* Fixed: the group created for this join used to stay behind. */
        if (!known)
            denseid_unintern(s->groups, gid);
        return GRP_ENOMEM;
    }
    *unread = memb_unread(s, gidx, g, nm);
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
    s->members = memblist_create(&s->mem);
    s->recs = u64map_create(&s->mem);
    s->ment = u64map_create(&s->mem);
    /* Each member's slot keeps its activity day in a tag (days.h). */
    if (s->groups == NULL || s->members == NULL || s->recs == NULL ||
        s->ment == NULL || u64map_set_tagged(grp_user_map(s)) != 0) {
        grp_destroy(s);
        return NULL;
    }
    return s;
}

static void free_ment_visit(uint64_t key, uint64_t val, void *ctx)
{
    struct grp_store *s = ctx;
    struct gml *l = (struct gml *)(uintptr_t)val;

    (void)key;
    mem_free(&s->mem, l, gml_size(l->cap));
}

void grp_destroy(struct grp_store *s)
{
    if (s == NULL)
        return;
    if (s->groups != NULL)
        for (uint32_t i = 0; i < denseid_count(s->groups); i++) {
            const struct grp_group *g = group_at(s, i);

            mem_free(&s->mem, g->ring, (size_t)g->cap * sizeof(uint32_t));
            if (g->nrec)
                mem_free(&s->mem, (void *)(uintptr_t)u64map_get(s->recs, i),
                         g->nrec * sizeof(uint64_t));
        }
    if (s->ment != NULL) {
        uint64_t cursor = 0;

        do
            u64map_scan(s->ment, &cursor, SIZE_MAX, free_ment_visit, s);
        while (cursor != 0);
    }
    denseid_destroy(s->groups);
    memblist_destroy(s->members);
    u64map_destroy(s->recs);
    u64map_destroy(s->ment);
    mem_free(NULL, s, sizeof(*s));
}

int grp_post(struct grp_store *s, uint64_t gid, uint64_t ts, uint32_t window,
             uint64_t *seq)
{
    return grp_post_mention(s, gid, ts, window, NULL, 0, seq);
}

/* Frees the lists reserve left empty for uids[0..n). */
static void tidy_all(struct grp_store *s, const uint64_t *uids, size_t n)
{
    for (size_t i = 0; i < n; i++)
        gml_tidy(s, uids[i]);
}

int grp_post_mention(struct grp_store *s, uint64_t gid, uint64_t ts,
                     uint32_t window, const uint64_t *uids, size_t n,
                     uint64_t *seq)
{
    struct grp_group *g;
    uint32_t gidx;
    bool known = denseid_find(s->groups, gid, &gidx);
    uint64_t e;

    if (window == 0)
        window = 1;
    if (!known && group_get(s, gid, &gidx) != GRP_OK)
        return GRP_ENOMEM;
    for (size_t i = 0; i < n; i++)
        if (memblist_lookup(s->members, uids[i], gidx, &e) &&
            gml_reserve(s, uids[i], 1) != GRP_OK) {
            tidy_all(s, uids, i + 1);
            goto nomem;
        }
    g = group_at(s, gidx);
    if (ring_make_room(s, g, window) != GRP_OK) {
        tidy_all(s, uids, n);
        goto nomem;
    }
    g->window = window;
    ring_append(g, ts);
    *seq = g->head;
    for (size_t i = 0; i < n; i++)
        if (memblist_lookup(s->members, uids[i], gidx, &e))
            gml_add(s, uids[i], gidx, g->head);
    tidy_all(s, uids, n);
    return GRP_OK;
nomem:
    /* The group created for this post goes again (no member can have
     * joined it meanwhile: nothing was reserved for it). */
    if (!known)
        denseid_unintern(s->groups, gid);
    return GRP_ENOMEM;
}

static bool group_valid(uint64_t head, uint32_t window, uint32_t known,
                        const uint64_t *ts);

/*
 * Makes g's ring hold what moving its head forward by `steps` messages
 * keeps (window at most), in one allocation, so that the appends after
 * it allocate nothing. GRP_OK or GRP_ENOMEM (g's kept timestamps
 * unchanged).
 */
static int ring_ready(struct grp_store *s, struct grp_group *g, uint64_t steps,
                      uint32_t window)
{
    uint64_t want = (uint64_t)g->known + steps;

    if (want > window)
        want = window;
    if (want < RING_MIN && window >= RING_MIN)
        want = RING_MIN;
    if (g->cap > window)
        return ring_resize(s, g, window);
    if (g->cap >= want)
        return GRP_OK;
    return ring_resize(s, g, (uint32_t)want);
}

/*
 * Moves g's head forward to head (its ring ready for it: ring_ready): the
 * newest messages' timestamps are ts[0..known) (oldest first), those
 * before them take ts[0]. Past what the window keeps, the ring restarts
 * empty. Allocates nothing.
 */
static void group_advance(struct grp_group *g, uint64_t head, uint32_t window,
                          uint32_t known, const uint64_t *ts)
{
    uint64_t first = head - known + 1; /* the seq of ts[0] */

    if (head - g->head > window) {
        g->known = 0;
        g->head = head - window;
    }
    g->window = window;
    while (g->head < head) {
        uint64_t q = g->head + 1;

        ring_append(g, known == 0 ? 0 : q >= first ? ts[q - first] : ts[0]);
    }
}

int grp_copy_post(struct grp_store *s, uint64_t gid, uint64_t seq, uint64_t ts,
                  uint32_t window, const uint64_t *uids, size_t n)
{
    struct grp_group *g;
    uint32_t gidx;
    bool known = denseid_find(s->groups, gid, &gidx);
    uint64_t e;

    if (window == 0)
        window = 1;
    if (seq == 0 || (known && seq <= group_at(s, gidx)->head))
        return 0;
    if (!known && group_get(s, gid, &gidx) != GRP_OK)
        return GRP_ENOMEM;
    g = group_at(s, gidx);
    for (size_t i = 0; i < n; i++)
        if (memblist_lookup(s->members, uids[i], gidx, &e) &&
            gml_reserve(s, uids[i], 1) != GRP_OK) {
            tidy_all(s, uids, i + 1);
            goto nomem;
        }
    if (ring_ready(s, g, seq - g->head, window) != GRP_OK) {
        tidy_all(s, uids, n);
        goto nomem;
    }
    group_advance(g, seq, window, 1, &ts);
    for (size_t i = 0; i < n; i++)
        if (memblist_lookup(s->members, uids[i], gidx, &e))
            gml_add(s, uids[i], gidx, g->head);
    tidy_all(s, uids, n);
    return 1;
nomem:
    if (!known)
        denseid_unintern(s->groups, gid);
    return GRP_ENOMEM;
}

/* Merges g's recalls and rec[0..nrec) (both ascending), those at most
 * head, into u (NULL: only counts); the count. */
static uint32_t recalls_merge(const uint64_t *old, uint32_t nold,
                              const uint64_t *rec, uint32_t nrec, uint64_t head,
                              uint64_t *u)
{
    uint32_t i = 0, j = 0, k = 0;
    uint64_t last = 0;

    while (i < nold || j < nrec) {
        uint64_t v =
            (j == nrec || (i < nold && old[i] <= rec[j])) ? old[i++] : rec[j++];
        if (v > head || (k > 0 && last == v))
            continue;
        if (u != NULL)
            u[k] = v;
        last = v;
        k++;
    }
    return k;
}

/* g's recalls become their union with rec[0..nrec) (ascending), those at
 * most head (the head g is about to have), the newest GRP_RECALL_MAX
 * kept: one new list of the exact size. GRP_OK or GRP_ENOMEM
 * (unchanged). */
static int recalls_union(struct grp_store *s, struct grp_group *g,
                         uint32_t gidx, const uint64_t *rec, uint32_t nrec,
                         uint64_t head)
{
    uint64_t *old = (uint64_t *)(uintptr_t)u64map_get(s->recs, gidx), *u, *tmp;
    uint32_t total = recalls_merge(old, g->nrec, rec, nrec, head, NULL), skip;

    if (nrec == 0 || total == g->nrec)
        return GRP_OK; /* nothing new */
    tmp = malloc((size_t)total * sizeof(*tmp));
    if (tmp == NULL)
        return GRP_ENOMEM;
    recalls_merge(old, g->nrec, rec, nrec, head, tmp);
    skip = total > GRP_RECALL_MAX ? total - GRP_RECALL_MAX : 0;
    u = mem_alloc(&s->mem, (size_t)(total - skip) * sizeof(*u));
    if (u == NULL) {
        free(tmp);
        return GRP_ENOMEM;
    }
    memcpy(u, tmp + skip, (size_t)(total - skip) * sizeof(*u));
    free(tmp);
    if (g->nrec == 0) {
        if (u64map_put(s->recs, gidx, (uint64_t)(uintptr_t)u) != 0) {
            mem_free(&s->mem, u, (size_t)(total - skip) * sizeof(*u));
            return GRP_ENOMEM;
        }
    } else {
        *u64map_ref(s->recs, gidx) = (uint64_t)(uintptr_t)u;
        mem_free(&s->mem, old, (size_t)g->nrec * sizeof(*old));
    }
    g->nrec = total - skip;
    return GRP_OK;
}

int grp_copy_group(struct grp_store *s, uint64_t gid, uint64_t head,
                   uint32_t window, uint32_t known, const uint64_t *ts,
                   uint32_t nrec, const uint64_t *rec)
{
    uint32_t gidx;
    struct grp_group *g;
    bool fresh;
    int rc;

    if (!group_valid(head, window, known, ts) || nrec > GRP_RECALL_MAX)
        return 1;
    for (uint32_t i = 0; i < nrec; i++)
        if (rec[i] == 0 || rec[i] > head || (i > 0 && rec[i] <= rec[i - 1]))
            return 1;
    fresh = !denseid_find(s->groups, gid, &gidx);
    if (fresh) {
        rc = grp_restore_group(s, gid, head, window, known, ts);
        if (rc != 0) {
            if (denseid_find(s->groups, gid, &gidx))
                denseid_unintern(s->groups, gid);
            return rc;
        }
        denseid_find(s->groups, gid, &gidx);
        g = group_at(s, gidx);
        if (recalls_union(s, g, gidx, rec, nrec, head) != GRP_OK) {
            mem_free(&s->mem, g->ring, (size_t)g->cap * sizeof(*g->ring));
            memset(g, 0, sizeof(*g));
            denseid_unintern(s->groups, gid);
            return GRP_ENOMEM;
        }
        return 0;
    }
    g = group_at(s, gidx);
    if (window == 0)
        window = 1;
    /* Every allocation first: an error changes nothing. */
    if (head > g->head && ring_ready(s, g, head - g->head, window) != GRP_OK)
        return GRP_ENOMEM;
    if (recalls_union(s, g, gidx, rec, nrec, head > g->head ? head : g->head) !=
        GRP_OK)
        return GRP_ENOMEM;
    if (head > g->head)
        group_advance(g, head, window, known, ts);
    return 0;
}

int grp_recall(struct grp_store *s, uint64_t gid, uint64_t seq)
{
    struct grp_group *g;
    uint64_t *r, *ref;
    uint32_t gidx, i;

    if (!denseid_find(s->groups, gid, &gidx))
        return GRP_EINVAL;
    g = group_at(s, gidx);
    if (seq == 0 || seq > g->head)
        return GRP_EINVAL;
    r = (uint64_t *)(uintptr_t)u64map_get(s->recs, gidx);
    i = seqs_upto(r, g->nrec, seq);
    if (i > 0 && r[i - 1] == seq)
        return 0;
    if (g->nrec == GRP_RECALL_MAX) { /* the oldest is forgotten */
        if (i == 0)
            return 1; /* this one: older than every one kept */
        memmove(r, r + 1, --i * sizeof(uint64_t));
        r[i] = seq;
        return 1;
    }
    r = mem_realloc(&s->mem, r, g->nrec * sizeof(uint64_t),
                    (g->nrec + 1) * sizeof(uint64_t));
    if (r == NULL)
        return GRP_ENOMEM;
    if (g->nrec == 0) {
        if (u64map_put(s->recs, gidx, (uint64_t)(uintptr_t)r) != 0) {
            mem_free(&s->mem, r, sizeof(uint64_t));
            return GRP_ENOMEM;
        }
    } else {
        ref = u64map_ref(s->recs, gidx);
        *ref = (uint64_t)(uintptr_t)r;
    }
    memmove(r + i + 1, r + i, (g->nrec - i) * sizeof(uint64_t));
    r[i] = seq;
    g->nrec++;
    return 1;
}

int grp_mute(struct grp_store *s, uint64_t uid, uint64_t gid, bool muted)
{
    uint32_t gidx;
    uint64_t e;

    if (!denseid_find(s->groups, gid, &gidx) ||
        !memblist_lookup(s->members, uid, gidx, &e))
        return 1;
    /* The flag has its bit in every width: never re-encodes. */
    memblist_set(s->members, uid, muted ? e | MEMB_MUTED : e & ~MEMB_MUTED);
    return GRP_OK;
}

int grp_markunread(struct grp_store *s, uint64_t uid, uint64_t gid,
                   uint64_t seq, uint32_t max_groups, uint64_t *unread)
{
    const struct grp_group *g;
    struct ml_iter it;
    uint64_t e, nm;
    uint32_t gidx;

    if (!denseid_find(s->groups, gid, &gidx))
        return GRP_EINVAL;
    g = group_at(s, gidx);
    if (seq == 0 || seq > g->head || g->head - (seq - 1) > UINT32_MAX)
        return GRP_EINVAL;
    if (memblist_lookup(s->members, uid, gidx, &e)) {
        nm = memb_entry(gidx, (uint32_t)(seq - 1), memb_muted(e));
        if (memblist_set(s->members, uid, nm) != 0)
            return GRP_ENOMEM;
        gml_prune(s, uid, gidx, seq - 1);
    } else {
        if (memblist_get(s->members, uid, &it) >= max_groups)
            return GRP_ELIMIT;
        nm = memb_entry(gidx, (uint32_t)(seq - 1), false);
        if (memblist_add(s->members, uid, nm) != 0)
            return GRP_ENOMEM;
    }
    *unread = memb_unread(s, gidx, g, nm);
    return GRP_OK;
}

int grp_seen_all(struct grp_store *s, uint64_t uid)
{
    struct gml *l = gml_of(s, uid);
    struct ml_iter it;
    uint32_t n = memblist_get(s->members, uid, &it), top = 0;

    /* Room for the widest head first: then nothing below can fail. */
    for (uint32_t i = 0; i < n; i++) {
        uint32_t h = (uint32_t)group_at(s, memb_gidx(ml_at(&it, i)))->head;

        top = h > top ? h : top;
    }
    if (memblist_fit(s->members, uid, top) != 0)
        return GRP_ENOMEM;
    n = memblist_edit(s->members, uid, &it);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t e = ml_at(&it, i);
        uint32_t gidx = memb_gidx(e);

        memblist_put_at(
            &it, i,
            memb_entry(gidx, (uint32_t)group_at(s, gidx)->head, memb_muted(e)));
    }
    if (l != NULL)
        gml_free(s, uid, l);
    return GRP_OK;
}

/* The state of membership e of group gidx. */
static void state_of(const struct grp_store *s, uint64_t uid, uint32_t gidx,
                     uint64_t e, struct grp_state *st)
{
    const struct grp_group *g = group_at(s, gidx);
    const uint64_t *rec = group_recs(s, gidx, g);

    st->head = g->head;
    st->seen = memb_seen(g, e);
    st->unread = memb_unread(s, gidx, g, e);
    st->muted = memb_muted(e);
    st->mentions = memb_mentions(s, uid, gidx, g, e);
    st->first_unread = 0;
    if (st->unread > 0) {
        uint64_t q = st->seen + 1;

        for (uint32_t i = seqs_upto(rec, g->nrec, st->seen);
             rec && i < g->nrec && rec[i] == q; i++)
            q++;
        st->first_unread = q;
    }
    st->recency = g->known ? ring_ts(g, g->head) : 0;
}

void grp_state(const struct grp_store *s, uint64_t uid, uint64_t gid,
               struct grp_state *st)
{
    uint32_t gidx;
    uint64_t e;

    memset(st, 0, sizeof(*st));
    if (denseid_find(s->groups, gid, &gidx) &&
        memblist_lookup(s->members, uid, gidx, &e))
        state_of(s, uid, gidx, e, st);
}

uint64_t grp_mentions(const struct grp_store *s, uint64_t uid)
{
    struct ml_iter it;
    uint64_t n = 0;
    uint32_t k;

    if (gml_of(s, uid) == NULL)
        return 0;
    k = memblist_get(s->members, uid, &it);
    for (uint32_t i = 0; i < k; i++) {
        uint64_t e = ml_at(&it, i);

        n += memb_mentions(s, uid, memb_gidx(e), group_at(s, memb_gidx(e)), e);
    }
    return n;
}

uint32_t grp_chats(const struct grp_store *s, uint64_t uid)
{
    struct ml_iter it;
    uint64_t e[DECODE_RUN];
    uint32_t n = memblist_get(s->members, uid, &it), k = 0;

    for (uint32_t i = 0; i < n; i += DECODE_RUN) {
        uint32_t r = n - i < DECODE_RUN ? n - i : DECODE_RUN;

        memblist_decode(&it, i, r, e);
        for (uint32_t j = 0; j < r; j++)
            k += !memb_muted(e[j]) &&
                 memb_unread(s, memb_gidx(e[j]), group_at(s, memb_gidx(e[j])),
                             e[j]) != 0;
    }
    return k;
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
           memblist_lookup(s->members, uid, gidx, &e);
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
    uint64_t *sorted = mem_alloc(NULL, bytes), sum = 0;
    uint8_t *did = mem_zalloc(NULL, n ? n : 1);
    struct ml_iter it;
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
        (uint64_t)memblist_get(s->members, uid, &it) + fresh > max_groups) {
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

    if (!denseid_find(s->groups, gid, &gidx) ||
        !memblist_del(s->members, uid, gidx))
        return false;
    gml_prune(s, uid, gidx, UINT64_MAX);
    return true;
}

uint64_t grp_unread(const struct grp_store *s, uint64_t uid, uint64_t gid)
{
    uint32_t gidx;
    uint64_t e;

    if (!denseid_find(s->groups, gid, &gidx) ||
        !memblist_lookup(s->members, uid, gidx, &e))
        return 0;
    return memb_unread(s, gidx, group_at(s, gidx), e);
}

/* grp_total over a record of widths wk, wv (the constants of one
 * instance): the fields read in place, muted ones skipped undecoded. */
static inline __attribute__((always_inline)) uint64_t
total_w(const struct grp_store *s, const struct ml_iter *it, uint64_t limit,
        unsigned wk, unsigned wv)
{
    const uint8_t *k = it->k, *v = it->v;
    uint32_t n = it->n, base = it->base;
    uint64_t sum = 0;

    for (uint32_t i = 0; i < n && sum <= limit; i++) {
        uint32_t f = ml_ld(k + (size_t)i * wk, wk), gidx = base + (f >> 1);

        if (f & 1)
            continue;
        sum +=
            memb_unread(s, gidx, group_at(s, gidx),
                        memb_entry(gidx, ml_ld(v + (size_t)i * wv, wv), false));
    }
    return sum;
}

/* The total over uid's list it of n entries (memblist_get). */
static uint64_t total_of(const struct grp_store *s, const struct ml_iter *it,
                         uint32_t n, uint64_t limit)
{
    if (n == 0)
        return 0;
    if (it->k == NULL)
        return memb_muted(it->one)
                   ? 0
                   : memb_unread(s, memb_gidx(it->one),
                                 group_at(s, memb_gidx(it->one)), it->one);
#define TOTAL(wk, wv)                                                          \
    case ((wk)-1) * 4 + (wv)-1:                                                \
        return total_w(s, it, limit, wk, wv)
    switch ((it->wk - 1) * 4 + it->wv - 1) {
        TOTAL(1, 1);
        TOTAL(1, 2);
        TOTAL(1, 3);
        TOTAL(1, 4);
        TOTAL(2, 1);
        TOTAL(2, 2);
        TOTAL(2, 3);
        TOTAL(2, 4);
        TOTAL(3, 1);
        TOTAL(3, 2);
        TOTAL(3, 3);
        TOTAL(3, 4);
        TOTAL(4, 1);
        TOTAL(4, 2);
        TOTAL(4, 3);
    default:
        return total_w(s, it, limit, 4, 4);
    }
#undef TOTAL
}

uint64_t grp_total(const struct grp_store *s, uint64_t uid, uint64_t limit)
{
    struct ml_iter it;
    uint32_t n = memblist_get(s->members, uid, &it);

    return total_of(s, &it, n, limit);
}

uint64_t grp_total_probed(const struct grp_store *s,
                          const struct u64map_probe *p, uint64_t limit)
{
    struct ml_iter it;
    uint32_t n = memblist_get_probed(p, &it);

    return total_of(s, &it, n, limit);
}

uint32_t grp_groups(const struct grp_store *s, uint64_t uid)
{
    struct ml_iter it;

    return memblist_get(s->members, uid, &it);
}

static int item_cmp(const void *a, const void *b)
{
    uint64_t x = ((const struct grp_item *)a)->gid;
    uint64_t y = ((const struct grp_item *)b)->gid;

    return (x > y) - (x < y);
}

uint32_t grp_list(const struct grp_store *s, uint64_t uid, struct grp_item *out)
{
    struct ml_iter it;
    uint32_t n = memblist_get(s->members, uid, &it), k = 0;

    for (uint32_t i = 0; i < n; i++) {
        uint64_t e = ml_at(&it, i);
        uint32_t gidx = memb_gidx(e);

        if (memb_unread(s, gidx, group_at(s, gidx), e) == 0)
            continue;
        out[k].gid = denseid_id(s->groups, gidx);
        state_of(s, uid, gidx, e, &out[k].st);
        k++;
    }
    /* Lists are in index order (first use); replies go by gid. */
    qsort(out, k, sizeof(*out), item_cmp);
    return k;
}

uint32_t grp_group_count(const struct grp_store *s)
{
    return denseid_count(s->groups);
}

uint64_t grp_head(const struct grp_store *s, uint64_t gid)
{
    uint32_t gidx;

    return denseid_find(s->groups, gid, &gidx) ? group_at(s, gidx)->head : 0;
}

void grp_group_info(const struct grp_store *s, uint32_t i,
                    struct grp_group_info *gi)
{
    const struct grp_group *g = group_at(s, i);

    *gi = (struct grp_group_info){
        denseid_id(s->groups, i), g->head, g->window, g->known, g->nrec,
        group_recs(s, i, g)};
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

static void member_visit(uint64_t uid, const struct ml_iter *it, void *ctx)
{
    const struct member_walk *mw = ctx;
    const struct gml *l = gml_of(mw->s, uid);
    uint64_t ment[GRP_MENTION_MAX];

    for (uint32_t i = 0; i < it->n; i++) {
        uint64_t e = ml_at(it, i);
        uint32_t gidx = memb_gidx(e), lo, hi;
        const struct grp_group *g = group_at(mw->s, gidx);
        struct grp_member_info mi = {memb_raw(g, e), memb_muted(e), 0, ment};

        gml_range(l, gidx, &lo, &hi);
        for (uint32_t k = lo; k < hi && mi.nment < GRP_MENTION_MAX; k++)
            ment[mi.nment++] = ment_seq(g, l->e[k]);
        mw->fn(uid, gidx, &mi, mw->ctx);
    }
}

size_t grp_users(const struct grp_store *s)
{
    return memblist_users(s->members);
}

size_t grp_scan_members(const struct grp_store *s, uint64_t *cursor, size_t max,
                        grp_member_fn fn, void *ctx)
{
    struct member_walk mw = {s, fn, ctx};

    return memblist_scan(s->members, cursor, max, member_visit, &mw);
}

uint32_t grp_user_members(const struct grp_store *s, uint64_t uid,
                          grp_member_fn fn, void *ctx)
{
    struct member_walk mw = {s, fn, ctx};
    struct ml_iter it;
    uint32_t n = memblist_get(s->members, uid, &it);

    if (n > 0)
        member_visit(uid, &it, &mw);
    return n;
}

bool grp_group_find(const struct grp_store *s, uint64_t gid, uint32_t *i)
{
    return denseid_find(s->groups, gid, i);
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

int grp_restore_recalls(struct grp_store *s, uint64_t gid, uint32_t n,
                        const uint64_t *seqs)
{
    struct grp_group *g;
    uint32_t gidx;
    uint64_t *r;

    if (!denseid_find(s->groups, gid, &gidx) || n > GRP_RECALL_MAX)
        return 1;
    g = group_at(s, gidx);
    if (g->nrec != 0)
        return 1;
    for (uint32_t i = 0; i < n; i++)
        if (seqs[i] <= (i ? seqs[i - 1] : 0) || seqs[i] > g->head)
            return 1;
    if (n == 0)
        return 0;
    r = mem_alloc(&s->mem, n * sizeof(*r));
    if (r == NULL)
        return GRP_ENOMEM;
    memcpy(r, seqs, n * sizeof(*r));
    if (u64map_put(s->recs, gidx, (uint64_t)(uintptr_t)r) != 0) {
        mem_free(&s->mem, r, n * sizeof(*r));
        return GRP_ENOMEM;
    }
    g->nrec = n;
    return 0;
}

int grp_restore_member(struct grp_store *s, uint64_t uid, uint32_t group,
                       const struct grp_member_info *mi)
{
    const struct grp_group *g;
    uint64_t seen, e;
    struct gml *l;
    uint32_t lo, hi;

    if (group >= denseid_count(s->groups))
        return 1;
    g = group_at(s, group);
    if (mi->unread > g->head || mi->unread > UINT32_MAX ||
        mi->nment > GRP_MENTION_MAX ||
        memblist_lookup(s->members, uid, group, &e))
        return 1;
    seen = g->head - mi->unread;
    for (uint32_t i = 0; i < mi->nment; i++)
        if (mi->ment[i] <= (i ? mi->ment[i - 1] : seen) ||
            mi->ment[i] > g->head)
            return 1;
    if (mi->nment > 0 && gml_reserve(s, uid, mi->nment) != GRP_OK) {
        gml_tidy(s, uid);
        return GRP_ENOMEM;
    }
    if (memblist_add(s->members, uid,
                     memb_entry(group, (uint32_t)seen, mi->muted)) != 0) {
        gml_tidy(s, uid);
        return GRP_ENOMEM;
    }
    if (mi->nment == 0)
        return 0;
    l = gml_of(s, uid);
    gml_range(l, group, &lo, &hi);
    memmove(&l->e[lo + mi->nment], &l->e[lo], (l->n - lo) * sizeof(uint64_t));
    for (uint32_t i = 0; i < mi->nment; i++)
        l->e[lo + i] = (uint64_t)group << 32 | (uint32_t)mi->ment[i];
    l->n += mi->nment;
    return 0;
}

size_t grp_entries(const struct grp_store *s)
{
    return memblist_entries(s->members);
}

size_t grp_bytes(const struct grp_store *s)
{
    return sizeof(*s) + s->mem.bytes;
}

struct u64map *grp_user_map(const struct grp_store *s)
{
    return memblist_user_map(s->members);
}

/* memblist_audit's per-entry rule: a known group, seen not ahead of it. */
static size_t audit_memb(uint64_t e, const void *ctx)
{
    const struct grp_store *s = ctx;
    const struct grp_group *g;

    if (memb_gidx(e) >= denseid_count(s->groups))
        return 1;
    g = group_at(s, memb_gidx(e));
    return memb_raw(g, e) > g->head;
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

struct audit_ment {
    const struct grp_store *s;
    size_t bad, bytes;
};

/* One user's mentions: ascending, of groups it is in, above seen and at
 * most the head, at most GRP_MENTION_MAX a group, and no more than the
 * membership's unread. */
static void audit_ment_visit(uint64_t uid, uint64_t val, void *ctx)
{
    struct audit_ment *am = ctx;
    const struct gml *l = (const struct gml *)(uintptr_t)val;
    uint64_t e;

    am->bytes += gml_size(l->cap);
    am->bad += l->n == 0 || l->n > l->cap;
    for (uint32_t i = 0; i < l->n; i++) {
        uint32_t gidx = (uint32_t)(l->e[i] >> 32), lo, hi;
        const struct grp_group *g;
        uint64_t q;

        am->bad += i > 0 && l->e[i] <= l->e[i - 1];
        if (gidx >= denseid_count(am->s->groups) ||
            !memblist_lookup(am->s->members, uid, gidx, &e)) {
            am->bad++;
            continue;
        }
        g = group_at(am->s, gidx);
        q = ment_seq(g, l->e[i]);
        am->bad += q <= memb_seen(g, e) || q > g->head;
        gml_range(l, gidx, &lo, &hi);
        if (i == lo)
            am->bad += hi - lo > GRP_MENTION_MAX ||
                       memb_mentions(am->s, uid, gidx, g, e) >
                           memb_unread(am->s, gidx, g, e);
    }
}

size_t grp_audit(const struct grp_store *s)
{
    struct audit_ment am = {s, 0, 0};
    size_t bad = 0, ring_bytes = 0, nrecs = 0;
    uint64_t cursor = 0;

    for (uint32_t i = 0; i < denseid_count(s->groups); i++) {
        const struct grp_group *g = group_at(s, i);
        const uint64_t *r = group_recs(s, i, g);

        bad += audit_group(g);
        ring_bytes += (size_t)g->cap * sizeof(uint32_t);
        /* Recalled seqs: ascending, 1..head, bounded, present iff nrec. */
        bad += g->nrec > GRP_RECALL_MAX || (g->nrec != 0) != (r != NULL) ||
               (g->nrec == 0 && u64map_get(s->recs, i) != 0);
        for (uint32_t k = 0; r && k < g->nrec; k++)
            bad += r[k] <= (k ? r[k - 1] : 0) || r[k] > g->head;
        nrecs += g->nrec;
        am.bytes += g->nrec * sizeof(uint64_t);
    }
    do
        u64map_scan(s->ment, &cursor, SIZE_MAX, audit_ment_visit, &am);
    while (cursor != 0);
    bad += am.bad + u64map_audit(s->recs) + u64map_audit(s->ment);
    /* The account against the shapes. */
    bad += am.bytes + u64map_bytes(s->recs) + u64map_bytes(s->ment) +
               ring_bytes + denseid_bytes(s->groups) +
               memblist_bytes(s->members) !=
           s->mem.bytes;
    bad += denseid_audit(s->groups);
    bad += memblist_audit(s->members, audit_memb, s);
    return bad;
}

size_t grp_forget_user(struct grp_store *s, uint64_t uid)
{
    struct gml *l = gml_of(s, uid);

    if (l != NULL)
        gml_free(s, uid, l);
    return memblist_del_user(s->members, uid);
}

uint32_t grp_user_info(const struct grp_store *s, uint64_t uid, grp_user_fn fn,
                       void *ctx)
{
    struct ml_iter it;
    uint32_t n = memblist_get(s->members, uid, &it);

    for (uint32_t i = 0; i < n; i++) {
        uint64_t e = ml_at(&it, i);
        struct grp_state st;

        state_of(s, uid, memb_gidx(e), e, &st);
        fn(denseid_id(s->groups, memb_gidx(e)), &st, ctx);
    }
    return n;
}

/* Groups whose heads stage 3 asks for: grp_total's first ones. */
#define PREFETCH_GROUPS 8u

/* The heads of the first groups of uid's list it of n entries. */
static void prefetch_heads(const struct grp_store *s, const struct ml_iter *it,
                           uint32_t n)
{
    for (uint32_t i = 0; i < n && i < PREFETCH_GROUPS; i++)
        __builtin_prefetch(group_at(s, memb_gidx(ml_at(it, i))));
}

void grp_prefetch_user(const struct grp_store *s, uint64_t uid, int stage)
{
    struct ml_iter it;
    uint32_t n;

    if (stage < 3) {
        memblist_prefetch(s->members, uid, stage);
        return;
    }
    n = memblist_get(s->members, uid, &it);
    prefetch_heads(s, &it, n);
}

void grp_probe_user(const struct grp_store *s, uint64_t uid, int stage,
                    struct u64map_probe *p)
{
    struct ml_iter it;

    if (stage < 3) {
        memblist_probe(s->members, uid, stage, p);
        return;
    }
    if (stage == 3)
        prefetch_heads(s, &it, memblist_get_probed(p, &it));
}
