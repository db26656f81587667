/*
 * backlog.h - the replication backlog (docs/PERSISTENCE.md, "Replication"):
 * the last bytes of the replication stream, in fixed blocks, addressed by
 * stream offset. One buffer serves both purposes Redis 7 gives its
 * shared replication buffer: partial resync (a replica that reconnects
 * reads from where it stopped, as long as that is still here) and the
 * output of every replica (each link reads through a cursor of its own,
 * nothing is copied per replica).
 *
 * Blocks never move: a cursor keeps pointing into its block while bytes
 * are appended. The owner trims whole blocks from the head, never past the
 * smallest offset a cursor still needs (backlog_trim).
 */
#ifndef UR_BACKLOG_H
#define UR_BACKLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BACKLOG_BLOCK (64u << 10) /* bytes of stream per block */

struct backlog_block {
    struct backlog_block *next;
    uint64_t start; /* stream offset of data[0] */
    uint32_t used;
    char data[BACKLOG_BLOCK];
};

struct backlog {
    struct backlog_block *head, *tail;
    uint64_t start; /* offset of the first byte held (head->start) */
    uint64_t end;   /* offset after the last byte appended */
    size_t blocks;  /* allocated */
};

/* A reader's place: the next byte to read is at offset off. */
struct backlog_cursor {
    struct backlog_block *blk; /* NULL: not located yet (empty backlog) */
    uint32_t pos;
    uint64_t off;
};

/* Empty, at offset: the next byte appended is that offset's. */
void backlog_init(struct backlog *b, uint64_t offset);
/* Frees every block (cursors become invalid). */
void backlog_deinit(struct backlog *b);

/* Appends n1 bytes at p1 then n2 at p2 (a record's header and payload).
 * 0, or -1 on allocation failure (nothing appended). */
int backlog_append(struct backlog *b, const void *p1, size_t n1, const void *p2,
                   size_t n2);

/* A cursor at off: true when start <= off <= end, else false. */
bool backlog_seek(const struct backlog *b, uint64_t off,
                  struct backlog_cursor *c);

/* The bytes readable at c in one piece (*p, the count; 0 at the end).
 * backlog_skip moves c past n of them (n <= the count). */
size_t backlog_peek(const struct backlog *b, struct backlog_cursor *c,
                    const char **p);
void backlog_skip(struct backlog_cursor *c, size_t n);

/* Frees the head blocks that end at or before keep (an offset): no
 * cursor may point into them. */
void backlog_trim(struct backlog *b, uint64_t keep);

/* Bytes held (end - start) and bytes allocated. */
static inline uint64_t backlog_histlen(const struct backlog *b)
{
    return b->end - b->start;
}
static inline size_t backlog_bytes(const struct backlog *b)
{
    return b->blocks * sizeof(struct backlog_block);
}

#endif
