/*
 * denseid.c - see denseid.h. Index i lives in chunk i >> BITS at slot
 * i & (CHUNK - 1). Every chunk but the last holds DENSEID_CHUNK indices; the
 * last holds last_cap (a power of two from DENSEID_FIRST_CAP up), so a
 * table of ten dots costs a few hundred bytes, not a whole chunk.
 */
#include "denseid.h"

#include "u64map.h"

#include <string.h>

#define DENSEID_FIRST_CAP 16u

struct denseid *denseid_create(struct mem_acct *owner, size_t vsize,
                               uint32_t max)
{
    struct denseid *d;

    if (vsize == 0 || vsize > 64)
        return NULL;
    d = mem_zalloc(owner, sizeof(*d));
    if (d == NULL)
        return NULL;
    mem_acct_init(&d->mem, owner);
    d->map = u64map_create(&d->mem);
    if (d->map == NULL) {
        mem_free(owner, d, sizeof(*d));
        return NULL;
    }
    d->vsize = vsize;
    d->max = max;
    return d;
}

/* Indices chunk i holds. */
static uint32_t chunk_cap(const struct denseid *d, uint32_t i)
{
    return i + 1 == d->chunks ? d->last_cap : DENSEID_CHUNK;
}

void denseid_destroy(struct denseid *d)
{
    if (d == NULL)
        return;
    for (uint32_t i = 0; i < d->chunks; i++) {
        mem_free(&d->mem, d->ids[i], chunk_cap(d, i) * sizeof(uint64_t));
        mem_free(&d->mem, d->vals[i], chunk_cap(d, i) * d->vsize);
    }
    mem_free(&d->mem, d->ids, d->dir_cap * sizeof(*d->ids));
    mem_free(&d->mem, d->vals, d->dir_cap * sizeof(*d->vals));
    u64map_destroy(d->map);
    mem_free(d->mem.up, d, sizeof(*d));
}

bool denseid_find(const struct denseid *d, uint64_t id, uint32_t *idx)
{
    uint64_t v = u64map_get(d->map, id);

    if (v == 0)
        return false;
    *idx = (uint32_t)(v - 1);
    return true;
}

uint64_t denseid_id(const struct denseid *d, uint32_t idx)
{
    return d->ids[idx >> DENSEID_CHUNK_BITS][idx & (DENSEID_CHUNK - 1)];
}

/*
 * The two growths below change two blocks each. Each block's size follows
 * from the fields (dir_cap, last_cap), so that the frees can name it: when
 * the second block cannot grow, the first is shrunk back (a shrink never
 * fails, mem.h) and the table is exactly as before.
 */

/* Room for one more directory entry. */
static int dir_grow(struct denseid *d)
{
    size_t old = d->dir_cap * sizeof(void *);
    size_t cap = d->dir_cap ? d->dir_cap * 2 : 4;
    uint64_t **ids;
    uint8_t **vals;

    ids = mem_realloc(&d->mem, d->ids, old, cap * sizeof(*ids));
    if (ids == NULL)
        return DENSEID_ENOMEM;
    d->ids = ids;
    vals = mem_realloc(&d->mem, d->vals, old, cap * sizeof(*vals));
    if (vals == NULL) {
        if (old == 0) {
            mem_free(&d->mem, d->ids, cap * sizeof(*ids));
            d->ids = NULL;
        } else {
            d->ids = mem_realloc(&d->mem, d->ids, cap * sizeof(*ids), old);
        }
        return DENSEID_ENOMEM;
    }
    d->vals = vals;
    d->dir_cap = (uint32_t)cap;
    return 0;
}

/* A new last chunk of DENSEID_FIRST_CAP indices. */
static int chunk_add(struct denseid *d)
{
    size_t ni = DENSEID_FIRST_CAP * sizeof(uint64_t);
    size_t nv = DENSEID_FIRST_CAP * d->vsize;
    uint64_t *ids;
    uint8_t *vals;

    if (d->chunks == d->dir_cap && dir_grow(d) != 0)
        return DENSEID_ENOMEM;
    ids = mem_alloc(&d->mem, ni);
    vals = mem_zalloc(&d->mem, nv);
    if (ids == NULL || vals == NULL) {
        mem_free(&d->mem, ids, ni);
        mem_free(&d->mem, vals, nv);
        return DENSEID_ENOMEM;
    }
    d->ids[d->chunks] = ids;
    d->vals[d->chunks] = vals;
    d->chunks++;
    d->last_cap = DENSEID_FIRST_CAP;
    return 0;
}

/* Doubles the last chunk. */
static int chunk_double(struct denseid *d)
{
    uint32_t last = d->chunks - 1, cap = d->last_cap * 2;
    size_t vold = d->last_cap * d->vsize;
    uint64_t *ids;
    uint8_t *vals;

    vals = mem_realloc(&d->mem, d->vals[last], vold, cap * d->vsize);
    if (vals == NULL)
        return DENSEID_ENOMEM;
    d->vals[last] = vals;
    ids = mem_realloc(&d->mem, d->ids[last], d->last_cap * sizeof(*ids),
                      cap * sizeof(*ids));
    if (ids == NULL) {
        d->vals[last] = mem_realloc(&d->mem, vals, cap * d->vsize, vold);
        return DENSEID_ENOMEM;
    }
    memset(vals + vold, 0, vold);
    d->ids[last] = ids;
    d->last_cap = cap;
    return 0;
}

/* Room for index d->count. */
static int room(struct denseid *d)
{
    uint32_t held =
        d->chunks == 0 ? 0 : (d->chunks - 1) * DENSEID_CHUNK + d->last_cap;

    if (d->count < held)
        return 0;
    if (d->chunks == 0 || d->last_cap == DENSEID_CHUNK)
        return chunk_add(d);
    return chunk_double(d);
}

int denseid_intern(struct denseid *d, uint64_t id, uint32_t *idx)
{
    uint32_t i = d->count;

    if (denseid_find(d, id, idx))
        return 0;
    if (d->count >= d->max)
        return DENSEID_EFULL;
    if (room(d) != 0 || u64map_put(d->map, id, (uint64_t)i + 1) != 0)
        return DENSEID_ENOMEM;
    d->ids[i >> DENSEID_CHUNK_BITS][i & (DENSEID_CHUNK - 1)] = id;
    d->count++;
    *idx = i;
    return 0;
}

void denseid_unintern(struct denseid *d, uint64_t id)
{
    uint32_t i = d->count - 1;

    if (d->count == 0 || denseid_id(d, i) != id)
        return;
    u64map_del(d->map, id);
    memset(denseid_val(d, i), 0, d->vsize);
    d->count--;
}

size_t denseid_bytes(const struct denseid *d)
{
    return sizeof(*d) + d->mem.bytes;
}

/* What the account should hold: the map, the directory and the chunks. */
static size_t shape_bytes(const struct denseid *d)
{
    size_t per = sizeof(uint64_t) + d->vsize, slots = 0;

    if (d->chunks > 0)
        slots = (size_t)(d->chunks - 1) * DENSEID_CHUNK + d->last_cap;
    return u64map_bytes(d->map) + (size_t)d->dir_cap * 2 * sizeof(void *) +
           slots * per;
}

size_t denseid_audit(const struct denseid *d)
{
    size_t bad = u64map_audit(d->map);

    bad += shape_bytes(d) != d->mem.bytes;
    bad += u64map_count(d->map) != d->count;
    bad += d->count > d->max;
    for (uint32_t i = 0; i < d->count; i++)
        bad += u64map_get(d->map, denseid_id(d, i)) != (uint64_t)i + 1;
    return bad;
}
