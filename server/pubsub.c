/*
 * pubsub.c - see pubsub.h.
 *
 * A subscription is one struct ps_sub, listed twice: in its channel's (or
 * pattern's) array of subscribers and in its client's array of channels
 * (or patterns), each knowing its position in both, so that leaving is
 * O(1) from either side (swap with the last) and a client with 100,000
 * channels or a channel with 100,000 clients costs nothing more to leave.
 * Whether a client already holds a subscription is found by walking the
 * shorter of its two arrays.
 *
 * Channels and patterns live in two chained hash tables keyed by their
 * bytes (XXH3 with a per-process seed, so that names chosen by clients
 * cannot pile up in one chain); a channel or pattern exists while it has a
 * subscriber. Patterns are also listed in an array: publish matches the
 * channel against each distinct pattern once, as Redis does.
 */
#include "pubsub.h"

#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "clients.h"
#include "exec.h"
#include "proto.h"
#include "reply.h"
#include "server.h"
#include "u64map.h"

struct ps_sub {
    struct ps_chan *ch;
    struct client *cl;
    uint32_t ch_pos; /* index in ch->subs */
    uint32_t cl_pos; /* index in the client's list */
};

struct ps_chan {
    struct ps_chan *next; /* hash chain */
    uint64_t hash;
    struct ps_sub **subs;
    uint32_t nsubs, cap;
    uint32_t pat_pos;    /* a pattern: its index in ps->patlist */
    uint32_t may_prefix; /* a pattern: bit i, it might match prefix i */
    int prefix;          /* a channel: its numbered prefix, -1 none */
    uint64_t id;         /* ... and id */
    size_t len;
    char name[];
};

/* The subscriptions of one client: [0] channels, [1] patterns. */
struct ps_client {
    struct ps_sub **list[2];
    uint32_t n[2], cap[2];
};

/* Every allocation of the module (one registry per process). */
static size_t ps_bytes_held;

static void *ps_alloc(size_t n)
{
    void *p = malloc(n);

    if (p != NULL)
        ps_bytes_held += n;
    return p;
}

static void ps_free(void *p, size_t n)
{
    if (p == NULL)
        return;
    ps_bytes_held -= n;
    free(p);
}

/* Grows an array of pointers to hold one more: 0 or -1. */
static int grow(void *arrp, uint32_t n, uint32_t *cap)
{
    void ***arr = arrp;
    uint32_t ncap;
    void **p;

    if (n < *cap)
        return 0;
    ncap = *cap ? *cap * 2 : 4;
    p = ps_alloc((size_t)ncap * sizeof(void *));
    if (p == NULL)
        return -1;
    if (n > 0)
        memcpy(p, *arr, (size_t)n * sizeof(void *));
    ps_free(*arr, (size_t)*cap * sizeof(void *));
    *arr = p;
    *cap = ncap;
    return 0;
}

/* ---- the tables ---------------------------------------------------------- */

static uint64_t name_hash(const struct pubsub *ps, const char *s, size_t n)
{
    return XXH3_64bits_withSeed(s, n, ps->seed);
}

static struct ps_chan *table_find(const struct ps_table *t, uint64_t h,
                                  const char *s, size_t n)
{
    if (t->slots == NULL)
        return NULL;
    for (struct ps_chan *c = t->slots[h & t->mask]; c != NULL; c = c->next)
        if (c->hash == h && c->len == n && memcmp(c->name, s, n) == 0)
            return c;
    return NULL;
}

/* Doubles the slots past one entry per slot. 0 or -1 (unchanged). */
static int table_grow(struct ps_table *t)
{
    size_t old = t->slots ? t->mask + 1 : 0;
    size_t nslots = old ? old * 2 : 16;
    struct ps_chan **s;

    if (t->count < old)
        return 0;
    s = ps_alloc(nslots * sizeof(*s));
    if (s == NULL)
        return old ? 0 : -1; /* a longer chain still works */
    memset(s, 0, nslots * sizeof(*s));
    for (size_t i = 0; i < old; i++) {
        struct ps_chan *c = t->slots[i], *next;

        for (; c != NULL; c = next) {
            next = c->next;
            c->next = s[c->hash & (nslots - 1)];
            s[c->hash & (nslots - 1)] = c;
        }
    }
    ps_free(t->slots, old * sizeof(*s));
    t->slots = s;
    t->mask = nslots - 1;
    return 0;
}

static void table_unlink(struct ps_table *t, struct ps_chan *c)
{
    struct ps_chan **pp = &t->slots[c->hash & t->mask];

    while (*pp != c)
        pp = &(*pp)->next;
    *pp = c->next;
    t->count--;
}

static void table_free(struct ps_table *t)
{
    ps_free(t->slots, t->slots ? (t->mask + 1) * sizeof(*t->slots) : 0);
    t->slots = NULL;
    t->mask = 0;
    t->count = 0;
}

/* ---- numbered channels ------------------------------------------------- */

int pubsub_prefix(struct pubsub *ps, const char *prefix)
{
    size_t n = strlen(prefix);
    struct ps_prefix *p;

    for (unsigned i = 0; i < ps->nprefix; i++)
        if (strcmp(ps->prefix[i].name, prefix) == 0)
            return (int)i;
    if (ps->nprefix == PUBSUB_PREFIXES || n == 0 || n > PUBSUB_PREFIX_MAX ||
        !pubsub_idle(ps))
        return -1;
    p = &ps->prefix[ps->nprefix];
    p->ids = u64map_create(NULL);
    if (p->ids == NULL)
        return -1;
    memcpy(p->name, prefix, n + 1);
    p->len = (uint8_t)n;
    p->patterns = 0;
    return (int)ps->nprefix++;
}

/* The numbered prefix of channel s[0..n) and its id: canonical decimal
 * (no sign, no leading zero) after the prefix. -1 when none. */
static int numbered(const struct pubsub *ps, const char *s, size_t n,
                    uint64_t *id)
{
    for (unsigned i = 0; i < ps->nprefix; i++) {
        const struct ps_prefix *p = &ps->prefix[i];
        const char *d = s + p->len;
        size_t dn = n - p->len;

        if (n <= p->len || memcmp(s, p->name, p->len) != 0)
            continue;
        if ((dn > 1 && d[0] == '0') ||
            ur_parse_uint(d, dn, UINT64_MAX, id) != UR_NUM_OK)
            return -1;
        return (int)i;
    }
    return -1;
}

bool pubsub_watched(const struct pubsub *ps, unsigned idx, uint64_t id)
{
    const struct ps_prefix *p = &ps->prefix[idx];

    return p->patterns != 0 ||
           (u64map_count(p->ids) != 0 && u64map_get(p->ids, id) != 0);
}

bool pubsub_watched_chan(const struct pubsub *ps, unsigned idx, uint64_t id,
                         const struct ps_chan **chan)
{
    const struct ps_prefix *p = &ps->prefix[idx];

    *chan = u64map_count(p->ids) != 0
                ? (const struct ps_chan *)(uintptr_t)u64map_get(p->ids, id)
                : NULL;
    return *chan != NULL || p->patterns != 0;
}

const struct ps_chan *pubsub_chan(const struct pubsub *ps, unsigned idx,
                                  uint64_t id)
{
    const struct ps_prefix *p = &ps->prefix[idx];

    if (u64map_count(p->ids) == 0)
        return NULL;
    return (const struct ps_chan *)(uintptr_t)u64map_get(p->ids, id);
}

void pubsub_prefetch(const struct ps_chan *c, int stage)
{
    if (c == NULL)
        return;
    switch (stage) {
    case 0:
        __builtin_prefetch(c);
        return;
    case 1:
        __builtin_prefetch(c->subs);
        return;
    case 2:
        if (c->nsubs != 0)
            __builtin_prefetch(c->subs[0]);
        return;
    default:
        if (c->nsubs != 0)
            __builtin_prefetch(c->subs[0]->cl);
        return;
    }
}

bool pubsub_prefix_watched(const struct pubsub *ps, unsigned idx)
{
    const struct ps_prefix *p = &ps->prefix[idx];

    return p->patterns != 0 || u64map_count(p->ids) != 0;
}

struct id_walk {
    pubsub_id_fn fn;
    void *ctx;
};

static void id_visit(uint64_t id, uint64_t val, void *ctx)
{
    const struct id_walk *w = ctx;

    (void)val;
    w->fn(id, w->ctx);
}

void pubsub_prefix_scan(const struct pubsub *ps, unsigned idx, pubsub_id_fn fn,
                        void *ctx)
{
    struct id_walk w = {fn, ctx};
    uint64_t cursor = 0;

    if (idx >= ps->nprefix)
        return;
    do
        u64map_scan(ps->prefix[idx].ids, &cursor, SIZE_MAX, id_visit, &w);
    while (cursor != 0);
}

/* ---- setup --------------------------------------------------------------- */

int pubsub_setup(struct pubsub *ps, uint64_t seed)
{
    memset(ps, 0, sizeof(*ps));
    ps->seed = seed;
    return 0;
}

void pubsub_teardown(struct pubsub *ps)
{
    for (unsigned i = 0; i < ps->nprefix; i++)
        u64map_destroy(ps->prefix[i].ids);
    table_free(&ps->chans);
    table_free(&ps->pats);
    ps_free(ps->patlist, (size_t)ps->patcap * sizeof(*ps->patlist));
    for (size_t i = 0; i < sizeof(ps->enc) / sizeof(ps->enc[0]); i++)
        ur_buf_deinit(&ps->enc[i]);
    memset(ps, 0, sizeof(*ps));
}

size_t pubsub_bytes(const struct pubsub *ps)
{
    size_t n = ps_bytes_held;

    for (unsigned i = 0; i < ps->nprefix; i++)
        n += u64map_bytes(ps->prefix[i].ids);
    return n;
}

/* ---- subscribing --------------------------------------------------------- */

static struct ps_chan *chan_new(struct pubsub *ps, bool pattern, uint64_t h,
                                const char *s, size_t n)
{
    struct ps_table *t = pattern ? &ps->pats : &ps->chans;
    struct ps_chan *c;

    if (table_grow(t) != 0)
        return NULL;
    if (pattern && grow(&ps->patlist, ps->npatlist, &ps->patcap) != 0)
        return NULL;
    c = ps_alloc(sizeof(*c) + n + 1);
    if (c == NULL)
        return NULL;
    memset(c, 0, sizeof(*c));
    c->hash = h;
    c->len = n;
    memcpy(c->name, s, n);
    c->name[n] = '\0';
    c->prefix = -1;
    if (pattern) {
        for (unsigned i = 0; i < ps->nprefix; i++)
            if (pubsub_glob_prefix(s, n, ps->prefix[i].name, ps->prefix[i].len))
                c->may_prefix |= 1u << i;
    } else {
        c->prefix = numbered(ps, s, n, &c->id);
        if (c->prefix >= 0 && u64map_put(ps->prefix[c->prefix].ids, c->id,
                                         (uint64_t)(uintptr_t)c) != 0) {
            ps_free(c, sizeof(*c) + n + 1);
            return NULL;
        }
    }
    if (pattern) {
        c->pat_pos = ps->npatlist;
        ps->patlist[ps->npatlist++] = c;
        for (unsigned i = 0; i < ps->nprefix; i++)
            ps->prefix[i].patterns += c->may_prefix >> i & 1;
    }
    c->next = t->slots[h & t->mask];
    t->slots[h & t->mask] = c;
    t->count++;
    ps->epoch++;
    return c;
}

static void chan_drop(struct pubsub *ps, struct ps_chan *c, bool pattern)
{
    table_unlink(pattern ? &ps->pats : &ps->chans, c);
    if (pattern) {
        struct ps_chan *last = ps->patlist[--ps->npatlist];

        ps->patlist[c->pat_pos] = last;
        last->pat_pos = c->pat_pos;
        for (unsigned i = 0; i < ps->nprefix; i++)
            ps->prefix[i].patterns -= c->may_prefix >> i & 1;
    } else if (c->prefix >= 0) {
        u64map_del(ps->prefix[c->prefix].ids, c->id);
    }
    ps_free(c->subs, (size_t)c->cap * sizeof(*c->subs));
    ps_free(c, sizeof(*c) + c->len + 1);
    ps->epoch++;
}

static struct ps_sub *find_sub(const struct ps_client *pc,
                               const struct ps_chan *c, const struct client *cl,
                               int k)
{
    if (pc == NULL || c == NULL)
        return NULL;
    if (pc->n[k] <= c->nsubs) {
        for (uint32_t i = 0; i < pc->n[k]; i++)
            if (pc->list[k][i]->ch == c)
                return pc->list[k][i];
    } else {
        for (uint32_t i = 0; i < c->nsubs; i++)
            if (c->subs[i]->cl == cl)
                return c->subs[i];
    }
    return NULL;
}

static void counts_changed(struct server *srv, struct client *cl, int delta)
{
    struct ps_client *pc = cl->ps;
    uint32_t before = cl->sess->subs;

    srv->pubsub.subscriptions += (uint64_t)(int64_t)delta;
    cl->sess->subs = pc->n[0] + pc->n[1];
    if (before == 0 && cl->sess->subs != 0)
        srv->pubsub.sub_clients++;
    else if (before != 0 && cl->sess->subs == 0)
        srv->pubsub.sub_clients--;
}

int pubsub_subscribe(struct server *srv, struct client *cl, const char *name,
                     size_t n, bool pattern)
{
    struct pubsub *ps = &srv->pubsub;
    struct ps_table *t = pattern ? &ps->pats : &ps->chans;
    uint64_t h = name_hash(ps, name, n);
    struct ps_chan *c = table_find(t, h, name, n);
    int k = pattern ? 1 : 0;
    struct ps_client *pc = cl->ps;
    struct ps_sub *s;
    bool created = false;

    if (find_sub(pc, c, cl, k) != NULL)
        return 0;
    if (pc == NULL) {
        pc = ps_alloc(sizeof(*pc));
        if (pc == NULL)
            return -1;
        memset(pc, 0, sizeof(*pc));
        cl->ps = pc;
    }
    if (grow(&pc->list[k], pc->n[k], &pc->cap[k]) != 0)
        return -1;
    if (c == NULL) {
        c = chan_new(ps, pattern, h, name, n);
        if (c == NULL)
            return -1;
        created = true;
    }
    s = ps_alloc(sizeof(*s));
    if (s == NULL || grow(&c->subs, c->nsubs, &c->cap) != 0) {
        ps_free(s, sizeof(*s));
        if (created)
            chan_drop(ps, c, pattern);
        return -1;
    }
    s->ch = c;
    s->cl = cl;
    s->ch_pos = c->nsubs;
    c->subs[c->nsubs++] = s;
    s->cl_pos = pc->n[k];
    pc->list[k][pc->n[k]++] = s;
    counts_changed(srv, cl, 1);
    return 1;
}

static void sub_drop(struct server *srv, struct client *cl, struct ps_sub *s,
                     int k)
{
    struct ps_client *pc = cl->ps;
    struct ps_chan *c = s->ch;
    struct ps_sub *last;

    last = c->subs[--c->nsubs];
    c->subs[s->ch_pos] = last;
    last->ch_pos = s->ch_pos;
    last = pc->list[k][--pc->n[k]];
    pc->list[k][s->cl_pos] = last;
    last->cl_pos = s->cl_pos;
    if (c->nsubs == 0)
        chan_drop(&srv->pubsub, c, k == 1);
    ps_free(s, sizeof(*s));
    counts_changed(srv, cl, -1);
}

int pubsub_unsubscribe(struct server *srv, struct client *cl, const char *name,
                       size_t n, bool pattern)
{
    struct pubsub *ps = &srv->pubsub;
    int k = pattern ? 1 : 0;
    struct ps_chan *c = table_find(pattern ? &ps->pats : &ps->chans,
                                   name_hash(ps, name, n), name, n);
    struct ps_sub *s = find_sub(cl->ps, c, cl, k);

    if (s == NULL)
        return 0;
    sub_drop(srv, cl, s, k);
    return 1;
}

uint32_t pubsub_client_count(const struct client *cl, bool pattern)
{
    return cl->ps ? cl->ps->n[pattern ? 1 : 0] : 0;
}

const char *pubsub_client_name(const struct client *cl, bool pattern,
                               uint32_t i, size_t *n)
{
    const struct ps_chan *c = cl->ps->list[pattern ? 1 : 0][i]->ch;

    *n = c->len;
    return c->name;
}

void pubsub_client_gone(struct server *srv, struct client *cl)
{
    struct ps_client *pc = cl->ps;

    if (pc == NULL)
        return;
    for (int k = 0; k < 2; k++) {
        while (pc->n[k] > 0)
            sub_drop(srv, cl, pc->list[k][pc->n[k] - 1], k);
        ps_free(pc->list[k], (size_t)pc->cap[k] * sizeof(*pc->list[k]));
    }
    ps_free(pc, sizeof(*pc));
    cl->ps = NULL;
    cl->sess->subs = 0;
}

/* ---- publishing ---------------------------------------------------------- */

/* A bulk string's header and bytes at p ($<n>\r\n<bytes>\r\n): the end. */
static char *put_bulk(char *p, const char *s, size_t n)
{
    *p++ = '$';
    p += ur_fmt_u64(p, n);
    *p++ = '\r';
    *p++ = '\n';
    memcpy(p, s, n);
    p += n;
    *p++ = '\r';
    *p++ = '\n';
    return p;
}

/*
 * ["message", channel, payload] on RESP2 (an array) or RESP3 (a push)
 * appended to b in one reservation: the shape nearly every message has
 * (a badge channel's), written without the reply builder's per-element
 * calls. 0, or -1 when out of memory (b unchanged).
 */
static int put_message(struct ur_buf *b, unsigned proto, const char *ch,
                       size_t n, const char *msg, size_t mlen)
{
    static const char head2[] = "*3\r\n$7\r\nmessage\r\n";
    static const char head3[] = ">3\r\n$7\r\nmessage\r\n";
    char *p;

    if (ur_buf_reserve(b, sizeof(head2) - 1 + 2 * (1 + 20 + 2 + 2) + n +
                              mlen) != 0)
        return -1;
    p = b->data + b->len;
    memcpy(p, proto == REPLY_RESP3 ? head3 : head2, sizeof(head2) - 1);
    p = put_bulk(p + sizeof(head2) - 1, ch, n);
    p = put_bulk(p, msg, mlen);
    b->len = (size_t)(p - b->data);
    return 0;
}

/* The message in proto, encoded once per publish into ps->enc[proto]
 * (empty until asked). pattern NULL: a "message", else a "pmessage". */
static const struct ur_buf *encoded(struct pubsub *ps, unsigned proto,
                                    const struct ps_chan *pat, const char *ch,
                                    size_t n, const char *msg, size_t mlen)
{
    struct ur_buf *b = &ps->enc[proto];
    struct reply r;

    if (b->len != 0)
        return b;
    if (pat == NULL && proto != REPLY_BIN)
        return put_message(b, proto, ch, n, msg, mlen) == 0 ? b : NULL;
    reply_begin_push(&r, b, (enum reply_proto)proto);
    reply_push(&r, pat ? 4 : 3);
    if (pat) {
        reply_str(&r, "pmessage", 8);
        reply_str(&r, pat->name, pat->len);
    } else {
        reply_str(&r, "message", 7);
    }
    reply_str(&r, ch, n);
    reply_str(&r, msg, mlen);
    if (r.oom) {
        b->len = 0;
        return NULL;
    }
    reply_end(&r);
    return b;
}

static void enc_reset(struct pubsub *ps)
{
    for (size_t i = 0; i < sizeof(ps->enc) / sizeof(ps->enc[0]); i++) {
        ps->enc[i].len = 0;
        ur_buf_shrink(&ps->enc[i], 4096);
    }
}

/* Hands the message to every subscriber of c. */
static uint64_t deliver(struct pubsub *ps, const struct ps_chan *c,
                        const struct ps_chan *pat, const char *ch, size_t n,
                        const char *msg, size_t mlen)
{
    uint64_t sent = 0;

    if (c->nsubs == 1 && pat == NULL) {
        /* One subscriber (every badge channel, as a rule): a RESP message
         * is written straight into its output, not encoded then copied. */
        struct client *cl = c->subs[0]->cl;
        unsigned proto = cl->sess->proto;

        if (proto != REPLY_BIN) {
            struct ur_buf *out = cl->io->push_out(cl);

            if (out == NULL || put_message(out, proto, ch, n, msg, mlen) != 0) {
                ps->dropped++;
                return 1;
            }
            cl->io->push_done(cl);
            ps->delivered++;
            return 1;
        }
    }
    enc_reset(ps);
    for (uint32_t i = 0; i < c->nsubs; i++) {
        struct client *cl = c->subs[i]->cl;
        const struct ur_buf *e =
            encoded(ps, cl->sess->proto, pat, ch, n, msg, mlen);
        struct ur_buf *out;

        sent++;
        if (e == NULL || (out = cl->io->push_out(cl)) == NULL ||
            ur_buf_append(out, e->data, e->len) != 0) {
            ps->dropped++;
            continue;
        }
        cl->io->push_done(cl);
        ps->delivered++;
    }
    return sent;
}

uint64_t pubsub_publish(struct server *srv, const char *ch, size_t n,
                        const char *msg, size_t mlen)
{
    struct pubsub *ps = &srv->pubsub;

    if (pubsub_idle(ps)) {
        ps->published++;
        return 0;
    }
    return pubsub_publish_chan(
        srv, table_find(&ps->chans, name_hash(ps, ch, n), ch, n), ch, n, msg,
        mlen);
}

uint64_t pubsub_publish_chan(struct server *srv, const struct ps_chan *c,
                             const char *ch, size_t n, const char *msg,
                             size_t mlen)
{
    struct pubsub *ps = &srv->pubsub;
    uint64_t sent = 0;

    ps->published++;
    if (c != NULL)
        sent += deliver(ps, c, NULL, ch, n, msg, mlen);
    for (uint32_t i = 0; i < ps->npatlist; i++) {
        const struct ps_chan *p = ps->patlist[i];

        if (pubsub_glob(p->name, p->len, ch, n))
            sent += deliver(ps, p, p, ch, n, msg, mlen);
    }
    return sent;
}

uint64_t pubsub_numsub(const struct pubsub *ps, const char *ch, size_t n)
{
    const struct ps_chan *c =
        table_find(&ps->chans, name_hash(ps, ch, n), ch, n);

    return c ? c->nsubs : 0;
}

void pubsub_channels(const struct pubsub *ps, const char *pattern, size_t plen,
                     pubsub_visit_fn fn, void *ctx)
{
    const struct ps_table *t = &ps->chans;

    if (t->slots == NULL)
        return;
    for (size_t i = 0; i <= t->mask; i++)
        for (const struct ps_chan *c = t->slots[i]; c != NULL; c = c->next)
            if (pattern == NULL || pubsub_glob(pattern, plen, c->name, c->len))
                fn(c->name, c->len, ctx);
}

/* ---- glob ------------------------------------------------------------------
 */

/*
 * One pattern element at p[*pi] against the byte c: whether it matches,
 * *pi moved past the element. The element is not '*'. A '[' without its
 * ']' matches up to the end of the pattern, as in Redis.
 */
static bool elem_match(const char *p, size_t plen, size_t *pi, unsigned char c)
{
    size_t i = *pi;

    if (p[i] == '?') {
        *pi = i + 1;
        return true;
    }
    if (p[i] == '\\' && i + 1 < plen) {
        *pi = i + 2;
        return (unsigned char)p[i + 1] == c;
    }
    if (p[i] == '[') {
        bool neg = false, hit = false;

        i++;
        if (i < plen && p[i] == '^') {
            neg = true;
            i++;
        }
        while (i < plen && p[i] != ']') {
            if (p[i] == '\\' && i + 1 < plen) {
                hit |= (unsigned char)p[i + 1] == c;
                i += 2;
            } else if (i + 2 < plen && p[i + 1] == '-' && p[i + 2] != ']') {
                unsigned char lo = (unsigned char)p[i];
                unsigned char hi = (unsigned char)p[i + 2];

                if (lo > hi) {
                    unsigned char t = lo;
                    lo = hi;
                    hi = t;
                }
                hit |= c >= lo && c <= hi;
                i += 3;
            } else {
                hit |= (unsigned char)p[i] == c;
                i++;
            }
        }
        *pi = i < plen ? i + 1 : i;
        return hit != neg;
    }
    *pi = i + 1;
    return (unsigned char)p[i] == c;
}

/* Every element but '*' consumes exactly one byte, so the classic
 * backtrack-to-the-last-star walk is exact and linear in the tries. */
bool pubsub_glob(const char *p, size_t plen, const char *s, size_t slen)
{
    size_t pi = 0, si = 0, star_p = SIZE_MAX, star_s = 0;

    while (si < slen) {
        if (pi < plen && p[pi] == '*') {
            while (pi < plen && p[pi] == '*')
                pi++;
            if (pi == plen)
                return true;
            star_p = pi;
            star_s = si;
            continue;
        }
        if (pi < plen) {
            size_t next = pi;

            if (elem_match(p, plen, &next, (unsigned char)s[si])) {
                pi = next;
                si++;
                continue;
            }
        }
        if (star_p == SIZE_MAX)
            return false;
        pi = star_p;
        si = ++star_s;
    }
    while (pi < plen && p[pi] == '*')
        pi++;
    return pi == plen;
}

/*
 * The set of pattern positions reachable after each byte of the prefix
 * (an NFA walk over the pattern); the prefix can be extended to a match
 * when any position survives it, since what follows can always be
 * satisfied by some bytes (conservative: a "[]" that matches nothing
 * still says yes).
 */
bool pubsub_glob_prefix(const char *p, size_t plen, const char *prefix,
                        size_t n)
{
    bool small[64], *cur, *nxt;
    bool any = false;

    if (2 * (plen + 1) <= sizeof(small)) {
        cur = small;
    } else {
        cur = malloc(2 * (plen + 1));
        if (cur == NULL)
            return true;
    }
    nxt = cur + plen + 1;
    memset(cur, 0, plen + 1);
    cur[0] = true;
    for (size_t i = 0; i < plen && cur[i] && p[i] == '*'; i++)
        cur[i + 1] = true;
    for (size_t k = 0; k < n; k++) {
        memset(nxt, 0, plen + 1);
        any = false;
        for (size_t i = 0; i <= plen; i++) {
            size_t j = i;

            if (!cur[i])
                continue;
            /* '*' may stay (eat the byte) or be skipped (closure below). */
            if (i < plen && p[i] == '*') {
                nxt[i] = any = true;
                continue;
            }
            if (i < plen && elem_match(p, plen, &j, (unsigned char)prefix[k]))
                nxt[j] = any = true;
        }
        /* Closure: a star may match nothing. */
        for (size_t i = 0; i < plen; i++)
            if (nxt[i] && p[i] == '*')
                nxt[i + 1] = true;
        memcpy(cur, nxt, plen + 1);
        if (!any)
            break;
    }
    if (cur != small)
        free(cur);
    return n == 0 || any;
}
