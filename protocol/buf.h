/*
 * buf.h - a growable byte buffer: the one output and input container of the
 * codecs, the server's connections and the client library.
 */
#ifndef UR_BUF_H
#define UR_BUF_H

#include <stddef.h>

struct ur_buf {
    char *data; /* owned; NULL until the first reserve */
    size_t len; /* bytes in use, from data[0] */
    size_t cap; /* bytes allocated */
};

void ur_buf_init(struct ur_buf *b);
/* Frees the storage; the buffer is empty and reusable afterwards. */
void ur_buf_deinit(struct ur_buf *b);
/* Grows the storage for `extra` more bytes: ur_buf_reserve's slow path. */
int ur_buf_grow(struct ur_buf *b, size_t extra);
/* Ensures room for `extra` more bytes. 0, or -1 on allocation failure.
 * Inline: every reply encoder calls it, and the room is nearly always
 * there already. */
static inline int ur_buf_reserve(struct ur_buf *b, size_t extra)
{
    return b->cap - b->len >= extra ? 0 : ur_buf_grow(b, extra);
}
/* Appends n bytes. 0, or -1 on allocation failure (buffer unchanged). */
int ur_buf_append(struct ur_buf *b, const void *p, size_t n);
/* Drops the first n bytes (n <= len), keeping the rest at data[0]. */
void ur_buf_consume(struct ur_buf *b, size_t n);
/* Releases storage beyond max(len, keep) bytes, so an idle buffer that once
 * held a large burst does not keep it. */
void ur_buf_shrink(struct ur_buf *b, size_t keep);

#endif
