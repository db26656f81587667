/*
 * buf.c - the growable byte buffer. Growth doubles the capacity so that a
 * stream of appends costs amortised O(1) per byte; consume keeps unread
 * bytes at data[0] so parsers always see one contiguous region.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

#define UR_BUF_MIN 64

void ur_buf_init(struct ur_buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void ur_buf_deinit(struct ur_buf *b)
{
    free(b->data);
    ur_buf_init(b);
}

int ur_buf_grow(struct ur_buf *b, size_t extra)
{
    size_t need, cap;
    char *p;

    if (b->cap - b->len >= extra)
        return 0;
    if (extra > SIZE_MAX - b->len)
        return -1;
    need = b->len + extra;
    cap = b->cap ? b->cap : UR_BUF_MIN;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) {
            cap = need;
            break;
        }
        cap *= 2;
    }
    p = realloc(b->data, cap);
    if (p == NULL)
        return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

int ur_buf_append(struct ur_buf *b, const void *p, size_t n)
{
    if (n == 0)
        return 0;
    if (ur_buf_reserve(b, n) != 0)
        return -1;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

void ur_buf_consume(struct ur_buf *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
}

/* A failed shrinking realloc leaves the buffer as it was: it stays valid,
 * only larger than wanted. */
void ur_buf_shrink(struct ur_buf *b, size_t keep)
{
    size_t target = b->len > keep ? b->len : keep;
    char *p;

    if (b->cap <= target)
        return;
    if (target == 0) {
        free(b->data);
        b->data = NULL;
        b->cap = 0;
        return;
    }
    p = realloc(b->data, target);
    if (p == NULL)
        return;
    b->data = p;
    b->cap = target;
}
