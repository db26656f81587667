/*
 * denseid.c - see denseid.h. Index i lives in chunk i >> BITS at slot
 * i & (CHUNK - 1). Every chunk but the last holds DENSEID_CHUNK indices; the
 * last holds last_cap (a power of two from DENSEID_FIRST_CAP up), so a
 * table of ten dots costs a few hundred bytes, not a whole chunk.
 */
#include "denseid.h"

#include "u64map.h"

#include <stdlib.h>
#include <string.h>

#define DENSEID_FIRST_CAP 16u

struct denseid *denseid_create(size_t vsize, uint32_t max)
{
    struct denseid *d;

    if (vsize == 0 || vsize > 64)
        return NULL;
    d = calloc(1, sizeof(*d));
    if (d == NULL)
        return NULL;
    d->map = u64map_create();
    if (d->map == NULL) {
        free(d);
        return NULL;
    }
    d->vsize = vsize;
    d->max = max;
    return d;
}

void denseid_destroy(struct denseid *d)
{
    if (d == NULL)
        return;
    for (uint32_t i = 0; i < d->chunks; i++) {
        free(d->ids[i]);
        free(d->vals[i]);
    }
    free(d->ids);
    free(d->vals);
    u64map_destroy(d->map);
    free(d);
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

/* Room for one more directory entry. */
static int dir_grow(struct denseid *d)
{
    uint32_t cap = d->dir_cap ? d->dir_cap * 2 : 4;
    uint64_t **ids;
    uint8_t **vals;

    ids = realloc(d->ids, cap * sizeof(*ids));
    if (ids == NULL)
        return DENSEID_ENOMEM;
    d->ids = ids;
    vals = realloc(d->vals, cap * sizeof(*vals));
    if (vals == NULL)
        return DENSEID_ENOMEM; /* ids[] is larger than needed: harmless */
    d->vals = vals;
    d->dir_cap = cap;
    return 0;
}

/* A new last chunk of DENSEID_FIRST_CAP indices. */
static int chunk_add(struct denseid *d)
{
    uint64_t *ids;
    uint8_t *vals;

    if (d->chunks == d->dir_cap && dir_grow(d) != 0)
        return DENSEID_ENOMEM;
    ids = malloc(DENSEID_FIRST_CAP * sizeof(*ids));
    vals = calloc(DENSEID_FIRST_CAP, d->vsize);
    if (ids == NULL || vals == NULL) {
        free(ids);
        free(vals);
        return DENSEID_ENOMEM;
    }
    d->ids[d->chunks] = ids;
    d->vals[d->chunks] = vals;
    d->chunks++;
    d->last_cap = DENSEID_FIRST_CAP;
    return 0;
}

/* Doubles the last chunk. Values first: if the ids then fail, the value
 * block is merely larger than last_cap says, and the next attempt's
 * realloc to the same size is a no-op. */
static int chunk_double(struct denseid *d)
{
    uint32_t last = d->chunks - 1, cap = d->last_cap * 2;
    uint64_t *ids;
    uint8_t *vals;

    vals = realloc(d->vals[last], cap * d->vsize);
    if (vals == NULL)
        return DENSEID_ENOMEM;
    d->vals[last] = vals;
    memset(vals + d->last_cap * d->vsize, 0, d->last_cap * d->vsize);
    ids = realloc(d->ids[last], cap * sizeof(*ids));
    if (ids == NULL)
        return DENSEID_ENOMEM;
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

size_t denseid_bytes(const struct denseid *d)
{
    size_t per = sizeof(uint64_t) + d->vsize, slots = 0;

    if (d->chunks > 0)
        slots = (size_t)(d->chunks - 1) * DENSEID_CHUNK + d->last_cap;
    return sizeof(*d) + u64map_bytes(d->map) +
           (size_t)d->dir_cap * 2 * sizeof(void *) + slots * per;
}

size_t denseid_audit(const struct denseid *d)
{
    size_t bad = u64map_audit(d->map);

    bad += u64map_count(d->map) != d->count;
    bad += d->count > d->max;
    for (uint32_t i = 0; i < d->count; i++)
        bad += u64map_get(d->map, denseid_id(d, i)) != (uint64_t)i + 1;
    return bad;
}
