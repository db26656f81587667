/*
 * cluster_keys.c - see cluster_keys.h.
 *
 * Each slot is an open-addressing set of ids with linear probing and
 * backward-shift deletion (no tombstones), grown at a load of 7/8;
 * UINT64_MAX marks an empty cell (ids are at most UR_INT_MAX). The 16384
 * slot heads cost 16 bytes each whatever the data.
 */
#include "cluster_keys.h"

#include <stdlib.h>
#include <string.h>

#include "bc.h"
#include "cluster.h"
#include "cmds.h"
#include "days.h"
#include "log.h"
#include "mem.h"
#include "rcpt.h"
#include "slot.h"
#include "userrec.h"

#define EMPTY UINT64_MAX
#define CAP_MIN 4u

struct kslot {
    uint64_t *v;
    uint32_t n, cap; /* cap: 0 or a power of two */
};

struct ckeys {
    struct kslot *slot; /* UR_SLOTS of them; NULL: not built */
    struct mem_acct mem;
    size_t n;
    uint64_t used_ms; /* monotonic: its last read */
};

struct ckeys *ckeys_create(void)
{
    struct ckeys *k = calloc(1, sizeof(*k));

    if (k == NULL)
        return NULL;
    mem_acct_init(&k->mem, NULL);
    return k;
}

static void slots_free(struct ckeys *k)
{
    if (k->slot == NULL)
        return;
    for (unsigned s = 0; s < UR_SLOTS; s++)
        if (k->slot[s].cap != 0)
            mem_free(&k->mem, k->slot[s].v, k->slot[s].cap * sizeof(uint64_t));
    mem_free(&k->mem, k->slot, UR_SLOTS * sizeof(*k->slot));
    k->slot = NULL;
    k->n = 0;
}

/* Empty heads for every slot: 0, or -1 on no memory. */
static int slots_alloc(struct ckeys *k)
{
    slots_free(k);
    k->slot = mem_zalloc(&k->mem, UR_SLOTS * sizeof(*k->slot));
    return k->slot != NULL ? 0 : -1;
}

bool ckeys_built(const struct ckeys *k)
{
    return k->slot != NULL;
}

void ckeys_destroy(struct ckeys *k)
{
    if (k == NULL)
        return;
    slots_free(k);
    free(k);
}

static inline uint32_t cell_of(uint64_t id, uint32_t cap)
{
    id ^= id >> 33;
    id *= 0xff51afd7ed558ccdull;
    id ^= id >> 29;
    return (uint32_t)id & (cap - 1);
}

static int grow(struct ckeys *k, struct kslot *ks)
{
    uint32_t cap = ks->cap ? ks->cap * 2 : CAP_MIN;
    uint64_t *v = mem_alloc(&k->mem, cap * sizeof(uint64_t));

    if (v == NULL)
        return -1;
    memset(v, 0xff, cap * sizeof(uint64_t));
    for (uint32_t i = 0; i < ks->cap; i++) {
        uint32_t j;

        if (ks->v[i] == EMPTY)
            continue;
        for (j = cell_of(ks->v[i], cap); v[j] != EMPTY; j = (j + 1) & (cap - 1))
            ;
        v[j] = ks->v[i];
    }
    if (ks->cap != 0)
        mem_free(&k->mem, ks->v, ks->cap * sizeof(uint64_t));
    ks->v = v;
    ks->cap = cap;
    return 0;
}

int ckeys_add(struct ckeys *k, uint64_t id)
{
    struct kslot *ks;
    uint32_t j;

    if (id == EMPTY || k->slot == NULL)
        return 0;
    ks = &k->slot[ur_u64_slot(id)];
    if (ks->cap != 0)
        for (j = cell_of(id, ks->cap); ks->v[j] != EMPTY;
             j = (j + 1) & (ks->cap - 1))
            if (ks->v[j] == id)
                return 0;
    if ((uint64_t)(ks->n + 1) * 8 > (uint64_t)ks->cap * 7 && grow(k, ks) != 0)
        return -1;
    for (j = cell_of(id, ks->cap); ks->v[j] != EMPTY;
         j = (j + 1) & (ks->cap - 1))
        ;
    ks->v[j] = id;
    ks->n++;
    k->n++;
    return 0;
}

static uint32_t find(const struct kslot *ks, uint64_t id)
{
    if (ks->cap == 0)
        return UINT32_MAX;
    for (uint32_t j = cell_of(id, ks->cap); ks->v[j] != EMPTY;
         j = (j + 1) & (ks->cap - 1))
        if (ks->v[j] == id)
            return j;
    return UINT32_MAX;
}

bool ckeys_has(const struct ckeys *k, uint64_t id)
{
    return id != EMPTY && k->slot != NULL &&
           find(&k->slot[ur_u64_slot(id)], id) != UINT32_MAX;
}

bool ckeys_del(struct ckeys *k, uint64_t id)
{
    struct kslot *ks;
    uint32_t i, mask;

    if (id == EMPTY || k->slot == NULL)
        return false;
    ks = &k->slot[ur_u64_slot(id)];
    i = find(ks, id);
    mask = ks->cap - 1;
    if (i == UINT32_MAX)
        return false;
    /* Backward shift: each later entry of the run moves into the hole
     * unless its home lies cyclically in (hole, its cell]. */
    for (uint32_t j = (i + 1) & mask; ks->v[j] != EMPTY; j = (j + 1) & mask) {
        uint32_t home = cell_of(ks->v[j], ks->cap);

        if (((j - home) & mask) >= ((j - i) & mask)) {
            ks->v[i] = ks->v[j];
            i = j;
        }
    }
    ks->v[i] = EMPTY;
    ks->n--;
    k->n--;
    if (ks->n == 0) {
        mem_free(&k->mem, ks->v, ks->cap * sizeof(uint64_t));
        ks->v = NULL;
        ks->cap = 0;
    }
    return true;
}

size_t ckeys_entries(const struct ckeys *k)
{
    return k->n;
}

size_t ckeys_bytes(const struct ckeys *k)
{
    return sizeof(*k) + k->mem.bytes;
}

void ckeys_invalidate(struct ckeys *k)
{
    slots_free(k);
}

/* ---- what the stores hold ---------------------------------------------- */

bool cluster_key_held(const struct server *srv, uint64_t id)
{
    /* what a user record would carry: the definition MIGRATE moves by,
     * so that GETKEYSINSLOT never lists an id MIGRATE finds empty */
    return userrec_exists(&srv->db, id);
}

void cluster_keys_note(struct server *srv, const struct ur_op *op,
                       uint32_t argc, const struct ur_arg *argv)
{
    struct ckeys *k = srv->cluster->keys;
    unsigned first = ur_op_key_first(op);
    uint32_t last;

    if (first == 0 || argc < first || (op->flags & OPF_GLOBAL) ||
        k->slot == NULL)
        return;
    last = ur_op_key_last(op) < 0 ? argc : first;
    for (uint32_t i = first - 1; i < last; i++) {
        const struct ur_arg *a = &argv[i];
        uint64_t id;

        if (a->kind == UR_ARG_INT)
            id = a->num;
        else if (!ur_parse_u64(a->str, a->len, &id))
            continue;
        if (ckeys_add(k, id) != 0) {
            log_warn("cluster: out of memory for the key index: it is "
                     "built again at its next read");
            ckeys_invalidate(k);
            return;
        }
    }
}

/* ---- building it --------------------------------------------------------- */

struct build {
    struct ckeys *k;
    bool oom;
};

static void add_id(uint64_t id, void *ctx)
{
    struct build *b = ctx;

    if (!b->oom && ckeys_add(b->k, id) != 0)
        b->oom = true;
}

static void day_visit(uint64_t uid, uint32_t day, void *ctx)
{
    (void)day;
    add_id(uid, ctx);
}

static void expiry_visit(uint64_t uid, const struct db_expiry *e, void *ctx)
{
    (void)e;
    add_id(uid, ctx);
}

static void bc_user_visit(uint64_t uid, uint64_t unread, void *ctx)
{
    (void)unread;
    add_id(uid, ctx);
}

struct chans {
    uint64_t *v;
    size_t n, cap;
    bool oom;
};

static void bc_chan_visit(uint64_t ch, uint64_t head, size_t users, void *ctx)
{
    struct chans *c = ctx;
    uint64_t *grown;

    (void)head;
    if (users == 0 || c->oom)
        return;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;

        grown = realloc(c->v, cap * sizeof(*grown));
        if (grown == NULL) {
            c->oom = true;
            return;
        }
        c->v = grown;
        c->cap = cap;
    }
    c->v[c->n++] = ch;
}

static void rcpt_group_visit(uint64_t gid, uint32_t nmap, void *ctx)
{
    (void)nmap;
    add_id(gid, ctx);
}
static void rcpt_member_nop(uint64_t uid, bool quit, void *ctx)
{
    (void)uid, (void)quit, (void)ctx;
}
static void rcpt_epoch_nop(uint32_t nwords, const uint64_t *quit, void *ctx)
{
    (void)nwords, (void)quit, (void)ctx;
}
static void rcpt_msg_nop(const struct rcpt_msg_info *m, void *ctx)
{
    (void)m, (void)ctx;
}
static void rcpt_marks_nop(uint32_t ngaps, void *ctx)
{
    (void)ngaps, (void)ctx;
}
static void rcpt_mark_nop(uint32_t w, uint32_t qfrom, void *ctx)
{
    (void)w, (void)qfrom, (void)ctx;
}
static void rcpt_gap_nop(const struct rcpt_gap *gap, void *ctx)
{
    (void)gap, (void)ctx;
}

void cluster_keys_cron(struct server *srv)
{
    struct ckeys *k = srv->cluster->keys;

    if (k->slot != NULL && srv->cluster->nopen == 0 &&
        server_mono_ms() - k->used_ms > CKEYS_IDLE_MS) {
        log_info("cluster: key index dropped (%zu ids, %zu bytes): no slot "
                 "moved for %u s",
                 k->n, ckeys_bytes(k), CKEYS_IDLE_MS / 1000);
        slots_free(k);
    }
}

void cluster_keys_replaced(struct server *srv)
{
    if (srv->cluster != NULL)
        ckeys_invalidate(srv->cluster->keys);
}

int cluster_keys_rebuild(struct server *srv)
{
    struct ckeys *k = srv->cluster->keys;
    const struct db *db = &srv->db;
    struct build b = {k, false};
    struct db_day_cursor dc = {0};
    struct chans ch = {0};
    uint64_t cur = 0, t0 = server_mono_ms();
    static const struct rcpt_walk rw = {
        rcpt_group_visit, rcpt_member_nop, rcpt_epoch_nop, rcpt_msg_nop,
        rcpt_marks_nop,   rcpt_mark_nop,   rcpt_gap_nop};

    if (slots_alloc(k) != 0)
        return -1;
    if (scan_each_user(db, add_id, &b) != 0)
        b.oom = true;
    while (!b.oom && !dc.done)
        db_scan_days(db, &dc, 4096, day_visit, &b);
    do
        db_expiry_scan(db, &cur, 4096, expiry_visit, &b);
    while (cur != 0 && !b.oom);
    cur = 0;
    do
        bc_scan_channels(db->bc, &cur, 4096, bc_chan_visit, &ch);
    while (cur != 0 && !ch.oom);
    for (size_t i = 0; i < ch.n && !b.oom; i++) {
        uint64_t uc = 0;
        do
            bc_scan_users(db->bc, ch.v[i], &uc, 4096, bc_user_visit, &b);
        while (uc != 0 && !b.oom);
    }
    free(ch.v);
    cur = 0;
    do
        rcpt_scan(db->rcpt, &cur, 64, &rw, &b);
    while (cur != 0 && !b.oom);
    if (b.oom || ch.oom) {
        ckeys_invalidate(k);
        return -1;
    }
    k->used_ms = server_mono_ms();
    log_info("cluster: key index built: %zu ids, %zu bytes, in %llu ms", k->n,
             ckeys_bytes(k), (unsigned long long)(server_mono_ms() - t0));
    return 0;
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

int cluster_keys_in_slot(struct server *srv, unsigned slot, uint64_t max,
                         uint64_t **out, size_t *n)
{
    struct ckeys *k = srv->cluster->keys;
    struct kslot *ks;
    uint64_t *ids = NULL;
    size_t m = 0, held = 0;

    if (k->slot == NULL && cluster_keys_rebuild(srv) != 0)
        return -1;
    k->used_ms = server_mono_ms();
    ks = &k->slot[slot & (UR_SLOTS - 1)];
    if (ks->n > 0) {
        ids = malloc(ks->n * sizeof(*ids));
        if (ids == NULL)
            return -1;
        for (uint32_t i = 0; i < ks->cap; i++)
            if (ks->v[i] != EMPTY)
                ids[m++] = ks->v[i];
    }
    /* Ids that hold nothing any more leave the index here. */
    for (size_t i = 0; i < m; i++) {
        if (cluster_key_held(srv, ids[i]))
            ids[held++] = ids[i];
        else
            ckeys_del(k, ids[i]);
    }
    if (out == NULL) {
        free(ids);
        *n = held;
        return 0;
    }
    if (held > 1)
        qsort(ids, held, sizeof(*ids), u64_cmp);
    *n = held < max ? held : (size_t)max;
    if (*n == 0) {
        free(ids);
        ids = NULL;
    }
    *out = ids;
    return 0;
}
