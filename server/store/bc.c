/*
 * bc.c - BC: a u64map from channel id to its struct bc_chan, each channel
 * holding its head and a tagged u32map from uid to the low 32 bits of the
 * user's offset, tagged with the user's activity day (bc.h).
 *
 * Why a table per channel rather than one per user: broadcast channels are
 * few and their audiences huge, and the common user is in one or a few of
 * them. A per-user u64map slot costs 18-19 bytes even with the offset
 * inline; a per-channel u32map costs ~12.3 bytes per (user, channel) with
 * its activity day (bc.h), with
 * one or with many channels per user. Forgetting a user (expiry, USER.DEL)
 * visits each channel, which is cheap because channels are few.
 *
 * The store keeps a running total of entries, updated around every insert,
 * and every table allocates through its account (mem.h), so bc_entries and
 * bc_bytes are O(1); bc_audit recomputes both.
 */
#include "bc.h"

#include "db.h"
#include "hash.h"
#include "mem.h"

#include <string.h>
#include "u32map.h"
#include "u64map.h"

struct bc_chan {
    uint64_t head;
    struct u32map *offs; /* uid -> (uint32_t)offset */
};

struct bc_store {
    struct u64map *chans; /* ch -> struct bc_chan * */
    struct mem_acct mem;  /* the channel map, channels, offset tables */
    size_t nchans;
    /* Every channel again, in creation order, for the reads over all of a
     * user's channels (bc_user_unread, bc_prefetch_user): walking an
     * array costs a few instructions a channel where a walk of the map
     * costs hundreds a call. Channels are never removed but the one just
     * created (chan_put_new), so it stays in step with the map. */
    struct bc_chan **all;
    size_t allcap;
    size_t entries; /* sum of u32map_count over channels */
    size_t tracked; /* users whose day is kept here (tag != 0) */
    /* The user and day of the entry the last unread/read touched, so that
     * the executor's activity mark right after needs no lookup. */
    uint64_t hint_uid;
    uint16_t hint_day;
    bool hint;
    /* The users filter: bit (hash >> (64 - fbits)) set for every user ever
     * registered since the store was empty, so that asking for the day of
     * a user in no channel (most commands of users BC does not track)
     * costs one bit, not a lookup per channel. Never a false "absent";
     * a bit stays set after its user leaves. NULL: not yet, or could not
     * grow (then every user may be present). */
    uint8_t *filt;
    uint32_t fbits; /* the filter's bits */
    bool filt_off;  /* an allocation failed: no filter until rebuilt */
    size_t fusers;  /* users it holds at most (new users since built) */
    uint64_t fseed; /* the map's hash seed */
    /* A larger filter being built (NULL: none) from a walk of every entry,
     * a few entries per new user, then put in the place of filt: each
     * rebuild leaves out the users gone since, so that the share of bits
     * set stays bounded. */
    uint8_t *nfilt;
    uint32_t nbits;
    uint64_t rb_chan, rb_user; /* the walk's cursors */
};

static bool first_chan(const struct bc_store *s, uint64_t uid, uint64_t ch);

static inline struct bc_chan *chan_of(uint64_t w)
{
    return (struct bc_chan *)(uintptr_t)w;
}

/* Bits of a filter per entry when it is built: ~15% of them set, ~28%
 * when it is built again (its users doubled), so a user in no channel
 * costs lookups in at most ~1 of 4 cases, for 0.4-0.75 bytes a user. */
#define FILT_BITS_PER_ENTRY 6u
#define FILT_MIN_BITS 4096u
#define FILT_MAX_BITS (UINT32_C(1) << 31)
/* Entries walked per new user while a filter is rebuilt: it ends well
 * before the users double again. */
#define FILT_STEP 64u

static inline size_t filt_bytes(uint32_t fbits)
{
    return ((size_t)fbits + 7) / 8;
}

/* uid's bit: the top 32 bits of its hash scaled to the size. */
static inline uint64_t filt_bit(uint64_t seed, uint32_t fbits, uint64_t uid)
{
    return ((hash_u64(uid, seed) >> 32) * fbits) >> 32;
}

static inline void filt_set(uint8_t *f, uint32_t fbits, uint64_t seed,
                            uint64_t uid)
{
    uint64_t b = filt_bit(seed, fbits, uid);

    f[b >> 3] |= (uint8_t)(1u << (b & 7));
}

/* Whether uid may be in some channel. */
static inline bool filt_maybe(const struct bc_store *s, uint64_t uid)
{
    uint64_t b;

    if (s->filt_off)
        return true;
    if (s->filt == NULL)
        return s->entries != 0;
    b = filt_bit(s->fseed, s->fbits, uid);
    return s->filt[b >> 3] >> (b & 7) & 1;
}

/* The filter size for n entries. */
static uint32_t filt_size_for(size_t n)
{
    if (n > FILT_MAX_BITS / FILT_BITS_PER_ENTRY)
        return FILT_MAX_BITS;
    n *= FILT_BITS_PER_ENTRY;
    return n < FILT_MIN_BITS ? FILT_MIN_BITS : (uint32_t)n;
}

static void filt_entry_visit(uint64_t uid, uint32_t off, void *ctx)
{
    struct bc_store *s = ctx;

    (void)off;
    filt_set(s->nfilt, s->nbits, s->fseed, uid);
}

static void filt_chan_visit(uint64_t ch, uint64_t w, void *ctx)
{
    const struct bc_chan **c = ctx;

    (void)ch;
    *c = chan_of(w);
}

/* Walks up to budget entries into the filter being built; at the end of
 * the walk it replaces the filter. */
static void filt_rebuild_step(struct bc_store *s, size_t budget)
{
    while (budget > 0) {
        const struct bc_chan *c = NULL;
        uint64_t next = s->rb_chan;

        u64map_scan(s->chans, &next, 1, filt_chan_visit, &c);
        if (c != NULL) {
            budget -=
                u32map_scan(c->offs, &s->rb_user, budget, filt_entry_visit, s);
            if (s->rb_user != 0)
                return;
            s->rb_chan = next;
            if (next != 0)
                continue;
        }
        if (s->filt != NULL)
            mem_free(&s->mem, s->filt, filt_bytes(s->fbits));
        s->filt = s->nfilt;
        s->fbits = s->nbits;
        s->fusers = s->entries;
        s->nfilt = NULL;
        s->filt_off = false;
        return;
    }
}

/* uid, new to BC, was added: its bit is set, in the filter being built
 * too, and the filter is rebuilt larger once its users doubled. */
static void filt_add(struct bc_store *s, uint64_t uid)
{
    s->fusers++;
    if (s->filt == NULL && !s->filt_off) {
        s->fbits = FILT_MIN_BITS;
        s->filt = mem_zalloc(&s->mem, filt_bytes(s->fbits));
        /* Not trusted until a rebuild (below, at the next new users)
         * has walked every entry. */
        s->filt_off = s->filt == NULL;
    }
    if (s->filt != NULL)
        filt_set(s->filt, s->fbits, s->fseed, uid);
    if (s->nfilt != NULL) {
        filt_set(s->nfilt, s->nbits, s->fseed, uid);
        filt_rebuild_step(s, FILT_STEP);
    } else if (s->filt_off || (s->fusers * FILT_BITS_PER_ENTRY / 2 > s->fbits &&
                               s->fbits < FILT_MAX_BITS)) {
        uint32_t nb = filt_size_for(s->entries);

        s->nfilt = mem_zalloc(&s->mem, filt_bytes(nb));
        if (s->nfilt == NULL)
            return; /* the filter stays as it is, asked again later */
        s->nbits = nb;
        s->rb_chan = 0;
        s->rb_user = 0;
        filt_rebuild_step(s, FILT_STEP);
    }
}

static void filt_free(struct bc_store *s)
{
    if (s->filt != NULL)
        mem_free(&s->mem, s->filt, filt_bytes(s->fbits));
    if (s->nfilt != NULL)
        mem_free(&s->mem, s->nfilt, filt_bytes(s->nbits));
    s->filt = NULL;
    s->nfilt = NULL;
    s->fbits = 0;
    s->filt_off = false;
    s->fusers = 0;
}

/* An empty store starts its filter again. */
static void filt_reset(struct bc_store *s)
{
    if (s->entries == 0)
        filt_free(s);
}

static void chan_free(struct bc_store *s, struct bc_chan *c)
{
    u32map_destroy(c->offs);
    mem_free(&s->mem, c, sizeof(*c));
}

/* ch's channel, created when new (*created); NULL on allocation failure. */
static struct bc_chan *chan_get(struct bc_store *s, uint64_t ch, bool *created)
{
    uint64_t w = u64map_get(s->chans, ch);
    struct bc_chan *c;

    *created = false;
    if (w != 0)
        return chan_of(w);
    if (s->nchans == s->allcap) {
        size_t cap = s->allcap ? 2 * s->allcap : 4;
        struct bc_chan **all = mem_realloc(
            &s->mem, s->all, s->allcap * sizeof(*all), cap * sizeof(*all));

        if (all == NULL)
            return NULL;
        s->all = all;
        s->allcap = cap;
    }
    c = mem_alloc(&s->mem, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->head = 0;
    c->offs = u32map_create_tagged(&s->mem);
    if (c->offs == NULL ||
        u64map_put(s->chans, ch, (uint64_t)(uintptr_t)c) != 0) {
        chan_free(s, c);
        return NULL;
    }
    s->all[s->nchans++] = c;
    *created = true;
    return c;
}

/* A walk over the channels for one user: its day in the first channel
 * other than skip that holds it (every entry of a user has the same day),
 * or a new day for every entry. */
struct day_ctx {
    uint64_t uid;
    const struct bc_chan *skip;
    uint16_t day; /* found, or to set */
    bool found;
};

static void day_get_visit(uint64_t ch, uint64_t w, void *ctx)
{
    struct day_ctx *dc = ctx;
    uint16_t tag;

    (void)ch;
    if (dc->found || chan_of(w) == dc->skip ||
        u32map_ref_tagged(chan_of(w)->offs, dc->uid, &tag) == NULL)
        return;
    dc->found = true;
    dc->day = tag;
}

/* Setting a user's day in every channel: a channel whose bucket cannot
 * take the day (an allocation failed) stops the walk, and the channels
 * already set get the old day back, which their buckets still hold (a
 * bucket's window of 1-byte tags, u32map.c, moves to hold the tags it
 * has, the user's old one among them). */
struct day_set_ctx {
    uint64_t uid;
    uint16_t day;
    bool found, failed;
};

static void day_set_visit(uint64_t ch, uint64_t w, void *ctx)
{
    struct day_set_ctx *dc = ctx;
    int rc;

    (void)ch;
    if (dc->failed)
        return;
    rc = u32map_set_tag(chan_of(w)->offs, dc->uid, dc->day);
    dc->found |= rc == 0;
    dc->failed = rc < 0;
}

/* Gives uid's entries in every channel the day; 0, or -1 on allocation
 * failure (nothing changed). */
static int set_days(struct bc_store *s, uint64_t uid, uint16_t day,
                    uint16_t old)
{
    struct day_set_ctx dc = {uid, day, false, false};
    uint64_t cursor = 0;

    do
        u64map_scan(s->chans, &cursor, SIZE_MAX, day_set_visit, &dc);
    while (cursor != 0 && !dc.failed);
    if (!dc.failed)
        return 0;
    dc = (struct day_set_ctx){uid, old, false, false};
    cursor = 0;
    do
        u64map_scan(s->chans, &cursor, SIZE_MAX, day_set_visit, &dc);
    while (cursor != 0);
    return -1;
}

/* uid's day in the channels other than skip; false when it is in none. */
static bool user_day(const struct bc_store *s, uint64_t uid,
                     const struct bc_chan *skip, uint16_t *day)
{
    struct day_ctx dc = {uid, skip, 0, false};
    uint64_t cursor = 0;

    do
        u64map_scan(s->chans, &cursor, SIZE_MAX, day_get_visit, &dc);
    while (cursor != 0 && !dc.found);
    *day = dc.day;
    return dc.found;
}

/* Sets uid's offset in c, adding the user when absent (with the day its
 * other entries have), and keeps the store's totals. 0 or -1 (nothing
 * changed). */
static int chan_put(struct bc_store *s, struct bc_chan *c, uint64_t uid,
                    uint32_t off)
{
    size_t n = u32map_count(c->offs);
    uint16_t day = 0;
    bool known = true;

    if (u32map_ref_tagged(c->offs, uid, &day) == NULL)
        known = filt_maybe(s, uid) && user_day(s, uid, c, &day);
    if (u32map_put_tagged(c->offs, uid, off, day) != 0)
        return -1;
    s->entries = s->entries - n + u32map_count(c->offs);
    if (!known)
        filt_add(s, uid);
    s->hint = true;
    s->hint_uid = uid;
    s->hint_day = day;
    return 0;
}

/* chan_put for a user command: a channel this command created is removed
 * again when the put fails, so that an error changes nothing. */
static int chan_put_new(struct bc_store *s, uint64_t ch, struct bc_chan *c,
                        bool created, uint64_t uid, uint32_t off)
{
    if (chan_put(s, c, uid, off) == 0)
        return 0;
    /* Fixed: the channel created for this command used to stay behind. */
    if (created) { /* the last one created: s->all's last */
        u64map_del(s->chans, ch);
        s->nchans--;
        chan_free(s, c);
    }
    return -1;
}

struct bc_store *bc_create(void)
{
    struct bc_store *s = mem_zalloc(NULL, sizeof(*s));

    if (s == NULL)
        return NULL;
    mem_acct_init(&s->mem, NULL);
    s->fseed = hash_seed(HASH_U32MAP);
    s->chans = u64map_create(&s->mem);
    if (s->chans == NULL) {
        mem_free(NULL, s, sizeof(*s));
        return NULL;
    }
    return s;
}

static void chan_free_visit(uint64_t ch, uint64_t w, void *ctx)
{
    (void)ch;
    chan_free(ctx, chan_of(w));
}

void bc_destroy(struct bc_store *s)
{
    uint64_t cursor = 0;

    if (s == NULL)
        return;
    do
        u64map_scan(s->chans, &cursor, SIZE_MAX, chan_free_visit, s);
    while (cursor != 0);
    u64map_destroy(s->chans);
    mem_free(&s->mem, s->all, s->allcap * sizeof(*s->all));
    filt_free(s);
    mem_free(NULL, s, sizeof(*s));
}

int bc_publish(struct bc_store *s, uint64_t ch, uint64_t *head)
{
    bool created;
    struct bc_chan *c = chan_get(s, ch, &created);

    if (c == NULL)
        return -1;
    *head = ++c->head;
    return 0;
}

int bc_raise_head(struct bc_store *s, uint64_t ch, uint64_t head)
{
    bool created;
    struct bc_chan *c = chan_get(s, ch, &created);

    if (c == NULL)
        return -1;
    if (head > c->head)
        c->head = head;
    return 0;
}

int bc_unread(struct bc_store *s, uint64_t uid, uint64_t ch, uint64_t *unread,
              bool *registered)
{
    bool created;
    struct bc_chan *c = chan_get(s, ch, &created);
    const uint32_t *off;
    uint16_t tag;

    if (c == NULL)
        return -1;
    off = u32map_ref_tagged(c->offs, uid, &tag);
    *registered = off == NULL;
    if (off != NULL) {
        *unread = (uint32_t)((uint32_t)c->head - *off);
        s->hint = true;
        s->hint_uid = uid;
        s->hint_day = tag;
        return 0;
    }
    *unread = 0;
    return chan_put_new(s, ch, c, created, uid, (uint32_t)c->head);
}

uint64_t bc_peek_unread(const struct bc_store *s, uint64_t uid, uint64_t ch)
{
    uint64_t w = u64map_get(s->chans, ch);
    uint32_t off;

    if (w == 0 || !u32map_get(chan_of(w)->offs, uid, &off))
        return 0;
    return (uint32_t)((uint32_t)chan_of(w)->head - off);
}

int bc_read(struct bc_store *s, uint64_t uid, uint64_t ch)
{
    bool created;
    struct bc_chan *c = chan_get(s, ch, &created);

    if (c == NULL)
        return -1;
    return chan_put_new(s, ch, c, created, uid, (uint32_t)c->head);
}

int bc_read_upto(struct bc_store *s, uint64_t uid, uint64_t ch, uint64_t upto,
                 uint64_t *unread)
{
    bool created;
    struct bc_chan *c = chan_get(s, ch, &created);
    uint32_t *off;
    uint16_t tag;
    uint64_t at;

    if (c == NULL)
        return -1;
    off = u32map_ref_tagged(c->offs, uid, &tag);
    if (off == NULL) {
        *unread = 0;
        return chan_put_new(s, ch, c, created, uid, (uint32_t)c->head);
    }
    /* The user's position as a full seq: head - unread (mod 2^32 kept). */
    at = c->head - (uint32_t)((uint32_t)c->head - *off);
    if (upto > c->head)
        upto = c->head;
    if (upto > at) {
        *off = (uint32_t)upto;
        at = upto;
    }
    *unread = c->head - at;
    s->hint = true;
    s->hint_uid = uid;
    s->hint_day = tag;
    return 0;
}

struct chan_walk {
    bc_chan_fn fn;
    void *ctx;
};

static void chan_visit(uint64_t ch, uint64_t w, void *ctx)
{
    const struct chan_walk *cw = ctx;

    cw->fn(ch, chan_of(w)->head, u32map_count(chan_of(w)->offs), cw->ctx);
}

size_t bc_scan_channels(const struct bc_store *s, uint64_t *cursor, size_t max,
                        bc_chan_fn fn, void *ctx)
{
    struct chan_walk cw = {fn, ctx};

    return u64map_scan(s->chans, cursor, max, chan_visit, &cw);
}

struct user_walk {
    uint64_t head;
    bc_user_fn fn;
    void *ctx;
};

static void user_visit(uint64_t uid, uint32_t off, void *ctx)
{
    const struct user_walk *uw = ctx;

    uw->fn(uid, (uint32_t)((uint32_t)uw->head - off), uw->ctx);
}

size_t bc_scan_users(const struct bc_store *s, uint64_t ch, uint64_t *cursor,
                     size_t max, bc_user_fn fn, void *ctx)
{
    uint64_t w = u64map_get(s->chans, ch);
    struct user_walk uw = {0, fn, ctx};

    if (w == 0) {
        *cursor = 0;
        return 0;
    }
    uw.head = chan_of(w)->head;
    return u32map_scan(chan_of(w)->offs, cursor, max, user_visit, &uw);
}

uint64_t bc_head(const struct bc_store *s, uint64_t ch)
{
    uint64_t w = u64map_get(s->chans, ch);

    return w != 0 ? chan_of(w)->head : 0;
}

bool bc_peek(const struct bc_store *s, uint64_t uid, uint64_t ch,
             uint64_t *unread)
{
    uint64_t w = u64map_get(s->chans, ch);
    uint32_t off;

    if (w == 0 || !u32map_get(chan_of(w)->offs, uid, &off))
        return false;
    *unread = (uint32_t)((uint32_t)chan_of(w)->head - off);
    return true;
}

int bc_restore_channel(struct bc_store *s, uint64_t ch, uint64_t head)
{
    struct bc_chan *c;
    bool created;

    if (u64map_get(s->chans, ch) != 0)
        return 1;
    c = chan_get(s, ch, &created);
    if (c == NULL)
        return -1;
    c->head = head;
    return 0;
}

int bc_restore_user(struct bc_store *s, uint64_t ch, uint64_t uid,
                    uint64_t unread)
{
    uint64_t w = u64map_get(s->chans, ch);
    struct bc_chan *c = chan_of(w);

    if (w == 0 || unread > c->head || unread > UINT32_MAX ||
        u32map_ref(c->offs, uid) != NULL)
        return 1;
    return chan_put(s, c, uid, (uint32_t)(c->head - unread));
}

size_t bc_entries(const struct bc_store *s)
{
    return s->entries;
}

size_t bc_bytes(const struct bc_store *s)
{
    return sizeof(*s) + s->mem.bytes;
}

struct audit_ctx {
    const struct bc_store *s;
    const struct bc_chan *c;
    uint64_t ch;
    size_t bad, entries, offs_bytes, nchans, tracked, users;
};

/* An offset ahead of the head shows as unread above the head (mod 2^32).
 * Every entry of a user has the same day; a user with a day counts once
 * (in its channel of the lowest id). */
static void audit_offset(uint64_t uid, uint32_t off, uint16_t tag, void *ctx)
{
    struct audit_ctx *ac = ctx;
    uint32_t unread = (uint32_t)ac->c->head - off;
    uint16_t other;

    ac->bad += unread > ac->c->head;
    if (user_day(ac->s, uid, ac->c, &other))
        ac->bad += other != tag;
    if (first_chan(ac->s, uid, ac->ch)) {
        ac->tracked += tag != 0;
        ac->users++;
    }
    ac->bad += !filt_maybe(ac->s, uid); /* never a false "absent" */
}

static void audit_chan(uint64_t ch, uint64_t w, void *ctx)
{
    struct audit_ctx *ac = ctx;
    uint64_t cursor = 0;

    ac->c = chan_of(w);
    ac->ch = ch;
    ac->bad += u32map_audit(ac->c->offs);
    do
        u32map_scan_tagged(ac->c->offs, &cursor, SIZE_MAX, audit_offset, ac);
    while (cursor != 0);
    ac->entries += u32map_count(ac->c->offs);
    ac->offs_bytes += u32map_bytes(ac->c->offs);
    ac->nchans++;
}

/* Whether s->all holds the map's channels: as many, distinct (the same
 * entries in all). */
static size_t all_bad(const struct bc_store *s, size_t entries)
{
    size_t sum = 0;

    if (s->nchans > s->allcap)
        return 1;
    for (size_t i = 0; i < s->nchans; i++) {
        if (s->all[i] == NULL)
            return 1;
        sum += u32map_count(s->all[i]->offs);
        for (size_t j = 0; j < i && s->nchans <= 64; j++)
            if (s->all[j] == s->all[i])
                return 1;
    }
    return sum != entries;
}

size_t bc_audit(const struct bc_store *s)
{
    struct audit_ctx ac = {s, NULL, 0, 0, 0, 0, 0, 0, 0};
    uint64_t cursor = 0;

    do
        u64map_scan(s->chans, &cursor, SIZE_MAX, audit_chan, &ac);
    while (cursor != 0);
    return ac.bad + u64map_audit(s->chans) + (ac.entries != s->entries) +
           (ac.nchans != s->nchans) + (ac.tracked != s->tracked) +
           (ac.users > s->fusers) + all_bad(s, ac.entries) +
           (u64map_bytes(s->chans) + s->nchans * sizeof(struct bc_chan) +
                s->allcap * sizeof(*s->all) + ac.offs_bytes +
                (s->filt != NULL ? filt_bytes(s->fbits) : 0) +
                (s->nfilt != NULL ? filt_bytes(s->nbits) : 0) !=
            s->mem.bytes);
}

struct del_ctx {
    struct bc_store *s;
    uint64_t uid;
    size_t n;
    bool tracked;
};

/* Changes the channel's offset table, never the channel map being
 * walked. */
static void del_visit(uint64_t ch, uint64_t w, void *ctx)
{
    struct del_ctx *dc = ctx;
    struct bc_chan *c = chan_of(w);
    uint16_t tag;

    (void)ch;
    if (u32map_ref_tagged(c->offs, dc->uid, &tag) == NULL)
        return;
    dc->tracked |= tag != 0;
    u32map_del(c->offs, dc->uid);
    dc->s->entries--;
    dc->n++;
}

size_t bc_forget_user(struct bc_store *s, uint64_t uid)
{
    struct del_ctx dc = {s, uid, 0, false};
    uint64_t cursor = 0;

    do
        u64map_scan(s->chans, &cursor, SIZE_MAX, del_visit, &dc);
    while (cursor != 0);
    s->tracked -= dc.tracked;
    if (s->hint_uid == uid)
        s->hint = false;
    filt_reset(s);
    return dc.n;
}

/* ---- Activity days ------------------------------------------------------ */

bool bc_user_day(const struct bc_store *s, uint64_t uid, uint16_t *day)
{
    if (s->hint && s->hint_uid == uid) {
        *day = s->hint_day;
        return true;
    }
    *day = 0;
    return filt_maybe(s, uid) && user_day(s, uid, NULL, day);
}

int bc_set_user_day(struct bc_store *s, uint64_t uid, uint16_t day)
{
    uint16_t old;

    if (!bc_user_day(s, uid, &old))
        return 0;
    if (set_days(s, uid, day, old) != 0)
        return -1;
    s->tracked = s->tracked - (old != 0) + (day != 0);
    s->hint = true;
    s->hint_uid = uid;
    s->hint_day = day;
    return 1;
}

size_t bc_tracked_users(const struct bc_store *s)
{
    return s->tracked;
}

/* Whether ch is the channel of the lowest id holding uid: the one entry
 * of uid that walks over days report. */
struct first_ctx {
    uint64_t uid, ch;
    bool first;
};

static void first_visit(uint64_t ch, uint64_t w, void *ctx)
{
    struct first_ctx *fc = ctx;

    if (fc->first && ch < fc->ch && u32map_ref(chan_of(w)->offs, fc->uid))
        fc->first = false;
}

static bool first_chan(const struct bc_store *s, uint64_t uid, uint64_t ch)
{
    struct first_ctx fc = {uid, ch, true};
    uint64_t cursor = 0;

    if (s->nchans == 1)
        return true;
    do
        u64map_scan(s->chans, &cursor, SIZE_MAX, first_visit, &fc);
    while (cursor != 0 && fc.first);
    return fc.first;
}

struct pick_chan {
    uint64_t ch;
    const struct bc_chan *c;
};

static void pick_chan_visit(uint64_t ch, uint64_t w, void *ctx)
{
    struct pick_chan *pc = ctx;

    pc->ch = ch;
    pc->c = chan_of(w);
}

struct days_walk {
    const struct bc_store *s;
    uint64_t ch;
    bc_day_fn fn;
    void *ctx;
};

static void days_visit(uint64_t uid, uint32_t off, uint16_t tag, void *ctx)
{
    const struct days_walk *dw = ctx;

    (void)off;
    if (tag != 0 && first_chan(dw->s, uid, dw->ch))
        dw->fn(uid, tag, dw->ctx);
}

size_t bc_scan_days(const struct bc_store *s, struct bc_day_cursor *cur,
                    size_t max, bc_day_fn fn, void *ctx)
{
    size_t n = 0;

    cur->done = false;
    while (n < max) {
        struct pick_chan pc = {0, NULL};
        uint64_t next = cur->chan;
        struct days_walk dw;

        u64map_scan(s->chans, &next, 1, pick_chan_visit, &pc);
        if (pc.c == NULL)
            break;
        dw = (struct days_walk){s, pc.ch, fn, ctx};
        n += u32map_scan_tagged(pc.c->offs, &cur->user, max - n, days_visit,
                                &dw);
        if (cur->user != 0)
            return n;
        cur->chan = next;
        if (next == 0)
            break;
    }
    if (n < max || cur->chan == 0) {
        cur->chan = 0;
        cur->user = 0;
        cur->done = true;
    }
    return n;
}

struct info_ctx {
    uint64_t uid;
    bc_user_info_fn fn;
    void *ctx;
    size_t n;
};

static void info_visit(uint64_t ch, uint64_t w, void *ctx)
{
    struct info_ctx *ic = ctx;
    const struct bc_chan *c = chan_of(w);
    uint32_t off;

    if (!u32map_get(c->offs, ic->uid, &off))
        return;
    ic->fn(ch, c->head, (uint32_t)((uint32_t)c->head - off), ic->ctx);
    ic->n++;
}

size_t bc_user_info(const struct bc_store *s, uint64_t uid, bc_user_info_fn fn,
                    void *ctx)
{
    struct info_ctx ic = {uid, fn, ctx, 0};
    uint64_t cursor = 0;

    do
        u64map_scan(s->chans, &cursor, SIZE_MAX, info_visit, &ic);
    while (cursor != 0);
    return ic.n;
}

void bc_prefetch_user(const struct bc_store *s, uint64_t uid, int stage)
{
    if (stage > 1)
        return;
    for (size_t i = 0; i < s->nchans; i++)
        u32map_prefetch(s->all[i]->offs, uid, stage);
}

uint64_t bc_user_unread(const struct bc_store *s, uint64_t uid, uint64_t limit)
{
    uint64_t sum = 0;
    uint32_t off;

    for (size_t i = 0; i < s->nchans && sum <= limit; i++) {
        const struct bc_chan *c = s->all[i];

        if (u32map_get(c->offs, uid, &off))
            sum += (uint32_t)((uint32_t)c->head - off);
    }
    return sum;
}
