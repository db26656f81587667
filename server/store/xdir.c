/*
 * xdir.c - see xdir.h. Everything here runs when a node is created, split,
 * merged or freed, never on a plain lookup.
 */
#include "xdir.h"

#include <string.h>

/* First directory index of the range of a depth-d node holding index idx. */
static inline size_t range_first(const struct xdir *x, size_t idx, uint8_t d)
{
    unsigned shift = x->depth - d;

    return (idx >> shift) << shift;
}

static inline size_t range_len(const struct xdir *x, uint8_t d)
{
    return (size_t)1 << (x->depth - d);
}

void xdir_init(struct xdir *x)
{
    x->one = NULL;
    x->v = &x->one;
    x->depth = 0;
}

size_t xdir_bytes(const struct xdir *x)
{
    return x->depth ? ((size_t)1 << x->depth) * sizeof(*x->v) : 0;
}

void xdir_deinit(struct xdir *x, struct mem_acct *a)
{
    if (x->depth > 0)
        mem_free(a, x->v, xdir_bytes(x));
    xdir_init(x);
}

struct xdir_node *xdir_walk(const struct xdir *x, size_t *i)
{
    struct xdir_node *n;

    if (*i >= ((size_t)1 << x->depth))
        return NULL;
    n = x->v[*i];
    if (n == NULL) /* an empty map: its only entry */
        *i = SIZE_MAX;
    else
        *i += range_len(x, n->depth);
    return n;
}

void xdir_set_first(struct xdir *x, struct xdir_node *n)
{
    x->one = n;
}

/* Points the range of the depth-d node holding index idx to n. */
static void range_set(struct xdir *x, size_t idx, uint8_t d,
                      struct xdir_node *n)
{
    size_t first = range_first(x, idx, d), len = range_len(x, d);

    for (size_t i = 0; i < len; i++)
        x->v[first + i] = n;
}

void xdir_replace(struct xdir *x, uint64_t h, struct xdir_node *n)
{
    range_set(x, xdir_index(x, h), n->depth, n);
}

int xdir_split_room(struct xdir *x, struct mem_acct *a, uint8_t d)
{
    size_t n = (size_t)1 << x->depth;
    struct xdir_node **v;

    if (d < x->depth)
        return 0;
    v = mem_alloc(a, 2 * n * sizeof(*v));
    if (v == NULL)
        return -1;
    for (size_t i = 0; i < n; i++)
        v[2 * i] = v[2 * i + 1] = x->v[i];
    if (x->depth > 0)
        mem_free(a, x->v, n * sizeof(*v));
    x->v = v;
    x->depth++;
    return 0;
}

void xdir_split(struct xdir *x, uint64_t h, uint8_t d, struct xdir_node *lo,
                struct xdir_node *hi)
{
    size_t first = range_first(x, xdir_index(x, h), d);
    size_t half = range_len(x, d) / 2;

    for (size_t i = 0; i < half; i++) {
        x->v[first + i] = lo;
        x->v[first + half + i] = hi;
    }
}

struct xdir_node *xdir_buddy(const struct xdir *x, uint64_t h, uint8_t d,
                             bool *lower)
{
    size_t idx = xdir_index(x, h);
    size_t bidx = idx ^ range_len(x, d);
    struct xdir_node *b = x->v[bidx];

    *lower = idx < bidx;
    return b->depth == d ? b : NULL;
}

/* Halves the directory while no node uses its last bit. */
static void shrink(struct xdir *x, struct mem_acct *a)
{
    while (x->depth > 0) {
        size_t n = (size_t)1 << x->depth;

        for (size_t i = 0; i < n; i++)
            if (x->v[i]->depth == x->depth)
                return;
        for (size_t i = 0; i < n / 2; i++)
            x->v[i] = x->v[2 * i];
        if (x->depth == 1) {
            x->one = x->v[0];
            mem_free(a, x->v, n * sizeof(*x->v));
            x->v = &x->one;
        } else {
            /* A shrink: never fails (mem.h). */
            x->v =
                mem_realloc(a, x->v, n * sizeof(*x->v), n / 2 * sizeof(*x->v));
        }
        x->depth--;
    }
}

void xdir_merge(struct xdir *x, struct mem_acct *a, uint64_t h,
                struct xdir_node *n)
{
    bool top = n->depth + 1 == x->depth;

    range_set(x, xdir_index(x, h), n->depth, n);
    if (top)
        shrink(x, a);
}

void xdir_clear(struct xdir *x, struct mem_acct *a)
{
    shrink(x, a);
    x->one = NULL;
}

size_t xdir_audit(const struct xdir *x, xdir_check_fn check, void *ctx,
                  size_t *nodes)
{
    size_t bad = 0, n = (size_t)1 << x->depth;

    *nodes = 0;
    for (size_t i = 0; i < n;) {
        const struct xdir_node *s = x->v[i];
        size_t span;

        if (s == NULL) {
            bad += x->depth != 0;
            break;
        }
        if (s->depth > x->depth) {
            bad++;
            break;
        }
        span = range_len(x, s->depth);
        for (size_t j = 0; j < span; j++)
            bad += i + j >= n || x->v[i + j] != s;
        bad += check(x, s, i, span, ctx);
        ++*nodes;
        i += span;
    }
    return bad;
}
