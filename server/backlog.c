/*
 * backlog.c - see backlog.h.
 */
#include "backlog.h"

#include <stdlib.h>
#include <string.h>

void backlog_init(struct backlog *b, uint64_t offset)
{
    memset(b, 0, sizeof(*b));
    b->start = b->end = offset;
}

void backlog_deinit(struct backlog *b)
{
    struct backlog_block *k = b->head;

    while (k != NULL) {
        struct backlog_block *next = k->next;
        free(k);
        k = next;
    }
    b->head = b->tail = NULL;
    b->blocks = 0;
    b->start = b->end;
}

/* Copies up to cap bytes of the two parts into dst, taking them from the
 * parts in order; returns how many. */
struct parts {
    const char *p[2];
    size_t n[2];
};

static size_t take(struct parts *s, char *dst, size_t cap)
{
    size_t done = 0;

    for (int i = 0; i < 2 && done < cap; i++) {
        size_t k = s->n[i] < cap - done ? s->n[i] : cap - done;

        if (k == 0)
            continue;
        memcpy(dst + done, s->p[i], k);
        s->p[i] += k;
        s->n[i] -= k;
        done += k;
    }
    return done;
}

int backlog_append(struct backlog *b, const void *p1, size_t n1, const void *p2,
                   size_t n2)
{
    struct parts src = {{p1, p2}, {n1, n2}};
    struct backlog_block *first = NULL, *last = NULL;
    size_t n = n1 + n2;
    size_t room = b->tail != NULL ? BACKLOG_BLOCK - b->tail->used : 0;
    size_t more = n > room ? n - room : 0;
    uint64_t at = b->end + (room < n ? room : n);

    /* The new blocks first, so that a failure appends nothing. */
    while (more > 0) {
        struct backlog_block *k = malloc(sizeof(*k));
        size_t want = more < BACKLOG_BLOCK ? more : BACKLOG_BLOCK;

        if (k == NULL) {
            while (first != NULL) {
                struct backlog_block *next = first->next;
                free(first);
                first = next;
            }
            return -1;
        }
        k->next = NULL;
        k->start = at;
        k->used = 0;
        if (last != NULL)
            last->next = k;
        else
            first = k;
        last = k;
        at += want;
        more -= want;
    }
    if (room > 0)
        b->tail->used +=
            (uint32_t)take(&src, b->tail->data + b->tail->used, room);
    for (struct backlog_block *k = first; k != NULL; k = k->next) {
        k->used = (uint32_t)take(&src, k->data, BACKLOG_BLOCK);
        b->blocks++;
    }
    if (first != NULL) {
        if (b->tail != NULL)
            b->tail->next = first;
        else
            b->head = first;
        b->tail = last;
    }
    b->end += n;
    return 0;
}

bool backlog_seek(const struct backlog *b, uint64_t off,
                  struct backlog_cursor *c)
{
    if (off < b->start || off > b->end)
        return false;
    c->off = off;
    c->blk = NULL;
    c->pos = 0;
    for (struct backlog_block *k = b->head; k != NULL; k = k->next) {
        if (off >= k->start && off <= k->start + k->used) {
            c->blk = k;
            c->pos = (uint32_t)(off - k->start);
            /* At a full block's end: the next block, when there is one. */
            if (c->pos == BACKLOG_BLOCK && k->next != NULL) {
                c->blk = k->next;
                c->pos = 0;
            }
            break;
        }
    }
    return true;
}

size_t backlog_peek(const struct backlog *b, struct backlog_cursor *c,
                    const char **p)
{
    if (c->off >= b->end)
        return 0;
    if (c->blk == NULL && !backlog_seek(b, c->off, c))
        return 0;
    if (c->blk == NULL)
        return 0;
    if (c->pos == c->blk->used && c->blk->next != NULL) {
        c->blk = c->blk->next;
        c->pos = 0;
    }
    *p = c->blk->data + c->pos;
    return c->blk->used - c->pos;
}

void backlog_skip(struct backlog_cursor *c, size_t n)
{
    c->pos += (uint32_t)n;
    c->off += n;
}

void backlog_trim(struct backlog *b, uint64_t keep)
{
    while (b->head != NULL && b->head->next != NULL &&
           b->head->start + b->head->used <= keep) {
        struct backlog_block *k = b->head;

        b->head = k->next;
        b->start = b->head->start;
        b->blocks--;
        free(k);
    }
}
