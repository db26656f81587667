/*
 * mem.h - the stores' allocator: malloc, calloc, realloc, free and the page
 * mappings of large u64map segments, counted (Redis's zmalloc idea).
 *
 * Every call names an account and a size, and moves that account, every
 * account above it and the process-wide total (mem_used) by the requested
 * size. So a store's _bytes() reads its account instead of a counter kept
 * by hand beside each allocation, and INFO, maxmemory and DEBUG AUDIT
 * cannot drift from what was allocated. Sizes are the requested ones, not
 * malloc's rounded blocks: the figures the stores always reported. Frees
 * are sized: the stores always know how big a block is.
 *
 * Accounts form a tree. A store owns the root account of its data; each
 * container it creates (u64map, u32map, wmap, memblist, denseid) owns an
 * account whose `up` is its owner's. The rule for a container's own struct:
 * it is charged to the owner's account, and what the container allocates
 * to its own, so <container>_bytes() is sizeof(struct) + its account, and
 * the owner's account includes both. A NULL account charges the process
 * total only.
 *
 * Growth may fail (NULL, nothing changed); shrinking never does: a realloc
 * to a smaller size that the C library refuses keeps the block and counts
 * the smaller size, which the block still holds. Callers then need no
 * "failed shrink" path, and the counts stay the sizes they asked for.
 *
 * Fault injection (SQLite's fault-injection malloc; tests only):
 * mem_fail_after(n, sticky) makes the nth allocation from now fail (1: the
 * next one), and with sticky every one after it too. An allocation is any
 * call that can fail: mem_alloc, mem_zalloc, a growing mem_realloc, mem_map
 * and mem_remap. tests/unit/test_allocfail.c runs every write command with
 * each of its allocations failing in turn.
 *
 * Not thread-safe: the stores live on the event loop's thread (a forked
 * snapshot writer has its own copy).
 */
#ifndef UR_MEM_H
#define UR_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mem_acct {
    size_t bytes;        /* held through this account and those below */
    struct mem_acct *up; /* charged too (the owner's account), or NULL */
};

/* An empty account under up (NULL: a root). */
static inline void mem_acct_init(struct mem_acct *a, struct mem_acct *up)
{
    a->bytes = 0;
    a->up = up;
}

/* n bytes (n >= 1), or NULL. */
void *mem_alloc(struct mem_acct *a, size_t n);
/* n zeroed bytes (n >= 1), or NULL. */
void *mem_zalloc(struct mem_acct *a, size_t n);
/*
 * p (a block of old bytes, or NULL with old 0) resized to n >= 1 bytes: the
 * new address, or NULL with p intact when growing fails. A shrink always
 * returns a valid block (p itself if the C library refuses).
 */
void *mem_realloc(struct mem_acct *a, void *p, size_t old, size_t n);
/* Frees p, a block of n bytes (the size it was allocated or last resized
 * to). NULL is a no-op. */
void mem_free(struct mem_acct *a, void *p, size_t n);

/* n bytes (a multiple of the page size) of zeroed private pages, or NULL. */
void *mem_map(struct mem_acct *a, size_t n);
/* The pages of mapping p (old bytes) recycled as n bytes of zeroed pages,
 * cheaper than a fresh mapping (fewer page faults): the new address, or
 * NULL with p intact. */
void *mem_remap(struct mem_acct *a, void *p, size_t old, size_t n);
void mem_unmap(struct mem_acct *a, void *p, size_t n);

/* Bytes held by every account of the process: the stores' total. */
size_t mem_used(void);

/*
 * Test hook. n >= 1: the nth allocation from now fails, and with sticky
 * every later one too, until the next call; n == 0 turns failures off.
 * Resets mem_failures.
 */
void mem_fail_after(uint64_t n, bool sticky);
/* Allocations failed by the hook since mem_fail_after. */
uint64_t mem_failures(void);
/* Allocations (the calls that can fail) made so far, failed ones included:
 * the difference across a call is how many failure points it has. */
uint64_t mem_allocs(void);

#endif
