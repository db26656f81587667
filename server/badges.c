/*
 * badges.c - see badges.h.
 *
 * The turn's dirty set is an array of entries (one per user or global
 * object) indexed by a small open-addressing table, both emptied by each
 * flush: a turn touches few entries, and an entry holds what its message
 * needs (the families whose part changed, the keys written), never the
 * figures themselves, which the flush reads once, after the whole turn.
 */
#include "badges.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "persist.h"
#include "server.h"

enum probe_kind {
    NP_NONE = 0,
    NP_USER,   /* a user command of family fam */
    NP_ALL,    /* a user command of every family (USER.DEL, USER.EXPIRE) */
    NP_GLOBAL, /* a global write of family fam on object id */
    NP_FLUSH   /* FLUSHALL: every exactly subscribed user and object */
};

/* Entry kinds: KIND_BADGE for badge:<id>, KIND_FAM + f for "<f>:<id>". */
#define KIND_BADGE 0
#define KIND_FAM 1

struct badges_entry {
    uint64_t id;
    uint8_t kind;
    uint8_t nkeys;
    uint16_t fams; /* badge: bit f, family f's part or key changed */
    uint8_t key_fam[BADGES_KEYS];
    /* The channel's record as the probe found it, valid while pubsub's
     * epoch is still `epoch` (NO_EPOCH: not known, looked up at the
     * flush). */
    const struct ps_chan *chan;
    uint64_t epoch;
    uint64_t keys[BADGES_KEYS];
};

#define NO_EPOCH UINT64_MAX

/* FLUSHALL's view of one subscribed user (parts) or object (v[0]). */
struct badges_snap {
    uint8_t kind;
    uint64_t id;
    uint64_t v[FAM_COUNT];
};

typedef bool (*key_fn)(const struct server *srv, const struct ur_op *op,
                       uint32_t argc, const struct ur_arg *argv, uint64_t *key);
typedef uint64_t (*value_fn)(const struct server *srv, bool head, uint64_t uid,
                             uint64_t key);

static const key_fn key_fns[FAM_COUNT] = {
#define FAMILY(f, ID, lo, hi, unit, expiry, prefetch, title)                   \
    [FAM_##ID] = cmd_##f##_badge_key,
#include "families.def"
#undef FAMILY
};

static const value_fn value_fns[FAM_COUNT] = {
#define FAMILY(f, ID, lo, hi, unit, expiry, prefetch, title)                   \
    [FAM_##ID] = cmd_##f##_badge_value,
#include "families.def"
#undef FAMILY
};

int badges_setup(struct server *srv)
{
    struct badges *n = &srv->badges;
    int i = pubsub_prefix(&srv->pubsub, "badge:");

    memset(n, 0, sizeof(*n));
    if (i < 0)
        return -1;
    n->badge = (unsigned)i;
    for (unsigned f = 0; f < FAM_COUNT; f++) {
        char name[PUBSUB_PREFIX_MAX + 1];

        snprintf(name, sizeof(name), "%s:", db_families[f].name);
        i = pubsub_prefix(&srv->pubsub, name);
        if (i < 0)
            return -1;
        n->fam[f] = (unsigned)i;
        n->name_len[f] = (uint8_t)strlen(db_families[f].name);
    }
    n->ready = true;
    return 0;
}

void badges_teardown(struct server *srv)
{
    struct badges *n = &srv->badges;

    free(n->e);
    free(n->index);
    free(n->snap);
    memset(n, 0, sizeof(*n));
}

bool badges_arg_u64(const struct ur_arg *a, uint64_t *out)
{
    if (a->kind == UR_ARG_INT) {
        *out = a->num;
        return true;
    }
    return ur_parse_uint(a->str, a->len, UR_INT_MAX, out) == UR_NUM_OK;
}

bool badges_arg_ctype(const struct server *srv, const struct ur_arg *a,
                      uint64_t *out)
{
    int t;

    if (badges_arg_u64(a, out))
        return *out < 64;
    if (a->kind != UR_ARG_STR)
        return false;
    t = config_type_by_name(&srv->cfg, a->str, a->len);
    if (t < 0)
        return false;
    *out = (uint64_t)t;
    return true;
}

/* ---- the dirty set ---------------------------------------------------- */

static uint32_t slot_of(const struct badges *n, uint8_t kind, uint64_t id)
{
    uint64_t h = (id ^ ((uint64_t)kind << 56)) * 0x9E3779B97F4A7C15ull;

    return (uint32_t)(h >> 32) & n->index_mask;
}

/* Rebuilds the index for twice the entries' room. 0 or -1. */
static int index_grow(struct badges *n, uint32_t cap)
{
    uint32_t slots = 16;
    uint32_t *idx;

    while (slots < 2 * cap)
        slots *= 2;
    idx = calloc(slots, sizeof(*idx));
    if (idx == NULL)
        return -1;
    free(n->index);
    n->index = idx;
    n->index_mask = slots - 1;
    for (uint32_t i = 0; i < n->n; i++) {
        uint32_t s = slot_of(n, n->e[i].kind, n->e[i].id);

        while (idx[s] != 0)
            s = (s + 1) & n->index_mask;
        idx[s] = i + 1;
    }
    return 0;
}

/* The entry of (kind, id), added when new; NULL when out of memory (the
 * notification is lost, the write is not). chan: the channel's record as
 * the probe found it at pubsub epoch `epoch` (NO_EPOCH: not looked up). */
static struct badges_entry *mark(struct server *srv, uint8_t kind, uint64_t id,
                                 uint64_t epoch, const struct ps_chan *chan)
{
    struct badges *n = &srv->badges;
    struct badges_entry *e;
    uint32_t s;

    if (n->index != NULL) {
        for (s = slot_of(n, kind, id); n->index[s] != 0;
             s = (s + 1) & n->index_mask) {
            e = &n->e[n->index[s] - 1];
            if (e->kind == kind && e->id == id)
                return e;
        }
    }
    if (n->n == n->cap) {
        uint32_t cap = n->cap ? n->cap * 2 : 64;
        struct badges_entry *ne = realloc(n->e, cap * sizeof(*ne));

        if (ne == NULL)
            return NULL;
        n->e = ne;
        n->cap = cap;
        if (index_grow(n, cap) != 0)
            return NULL;
    }
    for (s = slot_of(n, kind, id); n->index[s] != 0;
         s = (s + 1) & n->index_mask)
        ;
    e = &n->e[n->n];
    memset(e, 0, sizeof(*e));
    e->kind = kind;
    e->id = id;
    e->chan = chan;
    e->epoch = epoch;
    n->index[s] = ++n->n;
    if (n->n == 1 && srv->on_badges != NULL)
        srv->on_badges(srv); /* a write outside a client's turn: the sweep */
    return e;
}

static void add_key(struct badges_entry *e, unsigned fam, uint64_t key)
{
    for (unsigned i = 0; i < e->nkeys; i++)
        if (e->key_fam[i] == fam && e->keys[i] == key)
            return;
    if (e->nkeys == BADGES_KEYS)
        return;
    e->key_fam[e->nkeys] = (uint8_t)fam;
    e->keys[e->nkeys++] = key;
}

/* ---- probes ------------------------------------------------------------ */

static void parts(const struct server *srv, uint64_t uid,
                  uint64_t part[FAM_COUNT])
{
    for (unsigned f = 0; f < FAM_COUNT; f++) {
        part[f] = 0;
        badge_part(srv, f, uid, &part[f]);
    }
}

struct snap_walk {
    struct server *srv;
    uint8_t kind;
    bool ok;
};

static void snap_visit(uint64_t id, void *ctx)
{
    struct snap_walk *w = ctx;
    struct badges *n = &w->srv->badges;
    struct badges_snap *s;

    if (!w->ok)
        return;
    if ((n->nsnap & (n->nsnap - 1)) == 0) { /* 0, 1, 2, 4, ...: grow */
        size_t cap = n->nsnap ? (size_t)n->nsnap * 2 : 1;
        struct badges_snap *ns = realloc(n->snap, cap * sizeof(*ns));

        if (ns == NULL) {
            w->ok = false;
            return;
        }
        n->snap = ns;
    }
    s = &n->snap[n->nsnap++];
    s->kind = w->kind;
    s->id = id;
    if (w->kind == KIND_BADGE)
        parts(w->srv, id, s->v);
    else
        s->v[0] = value_fns[w->kind - KIND_FAM](w->srv, true, 0, id);
}

/* FLUSHALL: what every exact subscriber sees now (patterns are not
 * walked: "every user" is not a set FLUSHALL can afford to read). */
static bool snapshot(struct server *srv)
{
    struct badges *n = &srv->badges;
    struct snap_walk w = {srv, KIND_BADGE, true};

    n->nsnap = 0;
    pubsub_prefix_scan(&srv->pubsub, n->badge, snap_visit, &w);
    for (unsigned f = 0; f < FAM_COUNT; f++) {
        w.kind = (uint8_t)(KIND_FAM + f);
        pubsub_prefix_scan(&srv->pubsub, n->fam[f], snap_visit, &w);
    }
    return w.ok;
}

void badges_before(struct server *srv, const struct ur_op *op, uint32_t argc,
                   const struct ur_arg *argv, struct badges_probe *p)
{
    const struct badges *n = &srv->badges;
    const struct pubsub *ps = &srv->pubsub;
    unsigned fam = db_family_of_opcode(op->code);

    p->kind = NP_NONE;
    if (!n->ready)
        return;
    if (op->code == UR_OP_FLUSHALL) {
        if (snapshot(srv))
            p->kind = NP_FLUSH;
        return;
    }
    if (fam == FAM_COUNT) {
        /* USER.DEL, USER.EXPIRE: the user in every family. */
        if ((op->code >> 8) != 0x08 || argc == 0 ||
            !badges_arg_u64(&argv[0], &p->id) ||
            !pubsub_watched_chan(ps, n->badge, p->id, &p->chan))
            return;
        p->kind = NP_ALL;
        p->epoch = pubsub_epoch(ps);
        parts(srv, p->id, p->part);
        srv->badges.probes++;
        return;
    }
    p->fam = fam;
    if (op->flags & OPF_USER) {
        if (argc == 0 || !badges_arg_u64(&argv[0], &p->id) ||
            !pubsub_watched_chan(ps, n->badge, p->id, &p->chan))
            return;
        p->kind = NP_USER;
        p->epoch = pubsub_epoch(ps);
        p->part[fam] = 0;
        badge_part(srv, fam, p->id, &p->part[fam]);
        p->has_key = key_fns[fam](srv, op, argc, argv, &p->key);
        if (p->has_key)
            p->value = value_fns[fam](srv, false, p->id, p->key);
    } else if (op->flags & OPF_GLOBAL) {
        if (!key_fns[fam](srv, op, argc, argv, &p->id) ||
            !pubsub_watched_chan(ps, n->fam[fam], p->id, &p->chan))
            return;
        p->kind = NP_GLOBAL;
        p->epoch = pubsub_epoch(ps);
        p->value = value_fns[fam](srv, true, 0, p->id);
    } else {
        return;
    }
    srv->badges.probes++;
}

static void after_flush(struct server *srv)
{
    struct badges *n = &srv->badges;

    for (uint32_t i = 0; i < n->nsnap; i++) {
        struct badges_snap *s = &n->snap[i];
        struct badges_entry *e;

        if (s->kind == KIND_BADGE) {
            uint64_t now[FAM_COUNT];
            uint16_t fams = 0;

            parts(srv, s->id, now);
            for (unsigned f = 0; f < FAM_COUNT; f++)
                if (now[f] != s->v[f])
                    fams |= (uint16_t)(1u << f);
            if (fams != 0 &&
                (e = mark(srv, KIND_BADGE, s->id, NO_EPOCH, NULL)) != NULL)
                e->fams |= fams;
        } else if (value_fns[s->kind - KIND_FAM](srv, true, 0, s->id) !=
                   s->v[0]) {
            mark(srv, s->kind, s->id, NO_EPOCH, NULL);
        }
    }
    n->nsnap = 0;
}

void badges_after(struct server *srv, struct badges_probe *p)
{
    struct badges_entry *e;
    uint64_t part, now[FAM_COUNT];
    uint16_t fams = 0;

    switch (p->kind) {
    case NP_USER:
        part = 0;
        badge_part(srv, p->fam, p->id, &part);
        if (part == p->part[p->fam] &&
            (!p->has_key ||
             value_fns[p->fam](srv, false, p->id, p->key) == p->value))
            return;
        e = mark(srv, KIND_BADGE, p->id, p->epoch, p->chan);
        if (e == NULL)
            return;
        e->fams |= (uint16_t)(1u << p->fam);
        if (p->has_key)
            add_key(e, p->fam, p->key);
        return;
    case NP_ALL:
        parts(srv, p->id, now);
        for (unsigned f = 0; f < FAM_COUNT; f++)
            if (now[f] != p->part[f])
                fams |= (uint16_t)(1u << f);
        if (fams != 0 &&
            (e = mark(srv, KIND_BADGE, p->id, p->epoch, p->chan)) != NULL)
            e->fams |= fams;
        return;
    case NP_GLOBAL:
        if (value_fns[p->fam](srv, true, 0, p->id) != p->value)
            mark(srv, (uint8_t)(KIND_FAM + p->fam), p->id, p->epoch, p->chan);
        return;
    case NP_FLUSH:
        after_flush(srv);
        return;
    default:
        return;
    }
}

/* ---- publishing -------------------------------------------------------- */

/*
 * Messages are formatted by hand (no printf: a badge message is built for
 * every dirty user of every turn). The longest one, every family's part
 * and BADGES_KEYS keys at 20 digits each, is well under MSG_MAX.
 */
#define MSG_MAX 1024
/* "badge B", then per family " <name> <part>", per key " <name>.<key>
 * <value>": names under PUBSUB_PREFIX_MAX bytes (badges_setup), numbers
 * at most 20 digits. */
_Static_assert(6 + 20 + FAM_COUNT * (2 + PUBSUB_PREFIX_MAX + 20) +
                       BADGES_KEYS * (3 + PUBSUB_PREFIX_MAX + 40) <=
                   MSG_MAX,
               "a badge message fits its buffer");

static char *put_str(char *p, const char *s)
{
    size_t k = strlen(s);

    memcpy(p, s, k);
    return p + k;
}

/* Family f's name (its length kept by badges_setup). */
static char *put_name(const struct server *srv, char *p, unsigned f)
{
    size_t k = srv->badges.name_len[f];

    memcpy(p, db_families[f].name, k);
    return p + k;
}

static char *put_u64(char *p, uint64_t v)
{
    return p + ur_fmt_u64(p, v);
}

/* The channel's record: the probe's when no channel record was created or
 * freed since (pubsub.h, pubsub_epoch), else looked up again. */
static const struct ps_chan *chan_of(const struct server *srv,
                                     const struct badges_entry *e)
{
    const struct badges *n = &srv->badges;

    if (e->epoch == pubsub_epoch(&srv->pubsub))
        return e->chan;
    return pubsub_chan(
        &srv->pubsub,
        e->kind == KIND_BADGE ? n->badge : n->fam[e->kind - KIND_FAM], e->id);
}

/* The families the flush reads: those with a part (has, a bit per
 * family) whose store holds some entry (read: fams[0..nf)); the others
 * with a part have a part of 0 for every user and cost nothing. */
struct flush_fams {
    unsigned fams[FAM_COUNT], nf;
    uint16_t has;
};

/* badge:<id>'s message, from the probes of the families ff->fams that
 * the flush's pipeline ran for e. */
static void publish_badge(struct server *srv, const struct badges_entry *e,
                          const struct flush_fams *ff,
                          const union badge_probe *bp)
{
    char ch[32], msg[MSG_MAX], *p = msg, *c = ch;
    uint64_t read[FAM_COUNT], part[FAM_COUNT] = {0};
    uint64_t badge = badge_of(srv, e->id, ff->fams, ff->nf, bp, read);

    for (unsigned i = 0; i < ff->nf; i++)
        part[ff->fams[i]] = read[i];
    p = put_u64(put_str(p, "badge "), badge);
    for (unsigned fams = e->fams & ff->has; fams != 0; fams &= fams - 1) {
        unsigned f = (unsigned)__builtin_ctz(fams);

        *p++ = ' ';
        p = put_name(srv, p, f);
        *p++ = ' ';
        p = put_u64(p, part[f]);
    }
    for (unsigned i = 0; i < e->nkeys; i++) {
        unsigned f = e->key_fam[i];

        *p++ = ' ';
        p = put_name(srv, p, f);
        *p++ = '.';
        p = put_u64(p, e->keys[i]);
        *p++ = ' ';
        p = put_u64(p, value_fns[f](srv, false, e->id, e->keys[i]));
    }
    c = put_u64(put_str(c, "badge:"), e->id);
    pubsub_publish_chan(srv, chan_of(srv, e), ch, (size_t)(c - ch), msg,
                        (size_t)(p - msg));
}

static void publish_head(struct server *srv, const struct badges_entry *e)
{
    unsigned f = e->kind - KIND_FAM;
    char ch[48], msg[32], *p = msg, *c = ch;

    c = put_name(srv, c, f);
    *c++ = ':';
    c = put_u64(c, e->id);
    p = put_u64(put_str(p, "head "), value_fns[f](srv, true, 0, e->id));
    pubsub_publish_chan(srv, chan_of(srv, e), ch, (size_t)(c - ch), msg,
                        (size_t)(p - msg));
}

/*
 * Publishing walks records scattered over the heap: each dirty user's
 * figures in the stores, its channel's record, the subscription, the
 * subscriber's connection and output buffer. The flush knows the whole
 * set up front, so it runs each user's badge probes as USER.MBADGE does
 * (cmds.h, badge_hint_stage: every family's stage s for the user
 * (DB_PREFETCH_STAGES - s) * PROBE_AHEAD entries ahead of the one
 * published, each stage reading what the one before loaded, the user's
 * probes kept in a ring for the read), and fetches the channel's records
 * a few entries ahead, one pointer level per step: the misses of several
 * entries overlap instead of following one another. Nothing the probes
 * read changes during the flush (publishing writes to outputs only).
 */
#define PROBE_AHEAD 2
/* A power of two above the entries in flight. */
#define PROBE_RING 16
_Static_assert(PROBE_RING > DB_PREFETCH_STAGES * PROBE_AHEAD &&
                   (PROBE_RING & (PROBE_RING - 1)) == 0,
               "PROBE_RING holds every entry in flight");
/* Channel records: entry i + CHAN_AHEAD - 2k gets pubsub_prefetch's
 * stage k. */
#define CHAN_AHEAD 8

bool badges_flush(struct server *srv)
{
    struct badges *n = &srv->badges;
    const int64_t lead = DB_PREFETCH_STAGES * PROBE_AHEAD;
    union badge_probe bp[PROBE_RING][FAM_COUNT];
    struct flush_fams ff = {.nf = 0, .has = 0};
    unsigned fams[FAM_COUNT], nf;
    uint64_t epoch;
    int64_t count = n->n;

    if (n->n == 0)
        return true;
    if (srv->persist != NULL &&
        persist_durable(srv->persist) < persist_appended(srv->persist))
        return false;
    nf = badge_families(srv, fams);
    for (unsigned i = 0; i < nf; i++) {
        ff.has |= (uint16_t)(1u << fams[i]);
        if (db_entries(&srv->db, fams[i]) != 0)
            ff.fams[ff.nf++] = fams[i];
    }
    epoch = pubsub_epoch(&srv->pubsub);
    for (int64_t i = -lead; i < count; i++) {
        for (int s = 0; s < DB_PREFETCH_STAGES; s++) {
            int64_t j = i + (DB_PREFETCH_STAGES - s) * PROBE_AHEAD;

            if (j >= 0 && j < count && n->e[j].kind == KIND_BADGE)
                badge_hint_stage(srv, n->e[j].id, s, ff.fams, ff.nf,
                                 bp[j % PROBE_RING]);
        }
        if (i < 0)
            continue;
        for (int k = 0; k < 4; k++) {
            int64_t j = i + CHAN_AHEAD - 2 * k;

            if (j < count && n->e[j].epoch == epoch)
                pubsub_prefetch(n->e[j].chan, k);
        }
        if (n->e[i].kind == KIND_BADGE)
            publish_badge(srv, &n->e[i], &ff, bp[i % PROBE_RING]);
        else
            publish_head(srv, &n->e[i]);
        n->messages++;
    }
    memset(n->index, 0, ((size_t)n->index_mask + 1) * sizeof(*n->index));
    n->n = 0;
    if (n->cap > 4096) { /* a burst: give its memory back */
        free(n->e);
        free(n->index);
        n->e = NULL;
        n->index = NULL;
        n->cap = 0;
        n->index_mask = 0;
    }
    return true;
}
