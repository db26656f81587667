/*
 * page.c - see page.h.
 */
#include "page.h"

#include <stdlib.h>

bool page_parse(struct exec_ctx *x, uint32_t from, uint64_t max_count,
                struct page_opts *o)
{
    char text[33];

    *o = (struct page_opts){max_count, false, false, false, 0};
    for (uint32_t i = from; i < x->argc; i++) {
        if (i == from && !(x->argv[i].kind == UR_ARG_STR &&
                           (arg_is(x, i, "STATE") || arg_is(x, i, "RECENT") ||
                            arg_is(x, i, "CURSOR")))) {
            if (!arg_u64(x, i, "count", &o->count))
                return false;
            if (o->count > max_count) {
                reply_err(x->r, UR_E_BADARG, "count must be at most %llu",
                          (unsigned long long)max_count);
                return false;
            }
        } else if (arg_is(x, i, "STATE") && !o->state) {
            o->state = true;
        } else if (arg_is(x, i, "RECENT") && !o->recent) {
            o->recent = true;
        } else if (arg_is(x, i, "CURSOR") && !o->paged) {
            if (i + 1 == x->argc) {
                reply_err(x->r, UR_E_BADARG, "CURSOR needs a cursor (0 first)");
                return false;
            }
            if (!arg_u64(x, ++i, "cursor", &o->cursor))
                return false;
            o->paged = true;
        } else {
            reply_err(x->r, UR_E_BADARG,
                      "unknown or repeated option '%s' (%s takes [count] "
                      "[STATE] [RECENT] [CURSOR cursor])",
                      arg_text(x, i, text, sizeof(text)), x->op->name);
            return false;
        }
    }
    if (o->paged && o->count == 0) {
        reply_err(x->r, UR_E_BADARG, "count must be at least 1 with CURSOR");
        return false;
    }
    return true;
}

static int by_recency(const void *a, const void *b)
{
    const struct page_item *p = a, *q = b;

    if (p->recency != q->recency)
        return p->recency < q->recency ? 1 : -1;
    return (p->id > q->id) - (p->id < q->id);
}

void page_reply(struct exec_ctx *x, struct page_item *items, size_t n,
                const struct page_opts *o)
{
    size_t first = 0, k, per = o->state ? 7 : 2;
    uint64_t next = 0;

    if (o->recent) {
        if (n > 1)
            qsort(items, n, sizeof(*items), by_recency);
        first = o->cursor < n ? (size_t)o->cursor : n;
    } else {
        while (first < n && items[first].id < o->cursor)
            first++;
    }
    k = n - first < o->count ? n - first : (size_t)o->count;
    if (first + k < n)
        next = o->recent ? first + k
               : k > 0   ? items[first + k - 1].id + 1
                         : o->cursor;
    if (o->paged) {
        reply_arr(x->r, 2);
        reply_int(x->r, next);
    }
    reply_arr(x->r, (uint32_t)(k * per));
    for (size_t i = first; i < first + k; i++) {
        reply_int(x->r, items[i].id);
        if (!o->state) {
            reply_int(x->r, items[i].st[2]);
            continue;
        }
        for (unsigned j = 0; j < 6; j++)
            reply_int(x->r, items[i].st[j]);
    }
}
