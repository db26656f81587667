/*
 * page.h - the listing options CONV.LIST and GRP.LIST share, and their
 * reply: `uid [count] [STATE] [RECENT] [CURSOR cursor]`.
 *
 *   count   entries at most (default and maximum: the caller's)
 *   STATE   each entry as [id, max, read, unread, muted, mentions,
 *           first_unread] instead of [id, unread]
 *   RECENT  newest first (by the entry's recency key, then ascending id)
 *           instead of by ascending id
 *   CURSOR  paging: the reply becomes [next, [entries]]; pass 0 first,
 *           then each reply's next, until next is 0. By id, next is the
 *           id to start from (stable under changes); by recency, a
 *           position (an entry that moves meanwhile may be seen twice or
 *           not at all)
 */
#ifndef UR_PAGE_H
#define UR_PAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exec.h"

struct page_opts {
    uint64_t count;
    bool state, recent, paged;
    uint64_t cursor;
};

/* One entry with unread: its id, its recency (larger: newer) and its
 * state (max, read, unread, muted, mentions, first_unread). */
struct page_item {
    uint64_t id, recency;
    uint64_t st[6];
};

/* Parses the options from argument `from` on; max_count bounds count
 * (and is its default). false after replying the error. */
bool page_parse(struct exec_ctx *x, uint32_t from, uint64_t max_count,
                struct page_opts *o);

/*
 * Replies the page of items[0..n), the entries of the listing in
 * ascending id order; by id only those from the cursor on need be given,
 * and n may stop at count + 1 (one past the page tells that more follow).
 * Sorts items for RECENT.
 */
void page_reply(struct exec_ctx *x, struct page_item *items, size_t n,
                const struct page_opts *o);

#endif
