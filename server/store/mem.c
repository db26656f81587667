/*
 * mem.c - see mem.h. The accounts are plain counters walked up the tree on
 * every call: trees are two or three deep, and every call pays for a malloc
 * or a system call anyway.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mremap */
#endif
#include "mem.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static size_t mem_total;

/* The hook: 0 when off, else the allocations left until the failing one
 * (1: the next fails). */
static uint64_t fail_countdown;
static bool fail_sticky;
static uint64_t fail_count;
static uint64_t alloc_count;

static void charge(struct mem_acct *a, size_t n)
{
    mem_total += n;
    for (; a != NULL; a = a->up)
        a->bytes += n;
}

static void discharge(struct mem_acct *a, size_t n)
{
    mem_total -= n;
    for (; a != NULL; a = a->up)
        a->bytes -= n;
}

/* Whether the hook fails this allocation. */
static bool fail_now(void)
{
    alloc_count++;
    if (__builtin_expect(fail_countdown == 0, 1))
        return false;
    if (fail_countdown > 1) {
        fail_countdown--;
        return false;
    }
    if (!fail_sticky)
        fail_countdown = 0;
    fail_count++;
    return true;
}

void *mem_alloc(struct mem_acct *a, size_t n)
{
    void *p = fail_now() ? NULL : malloc(n);

    if (p != NULL)
        charge(a, n);
    return p;
}

void *mem_zalloc(struct mem_acct *a, size_t n)
{
    void *p = fail_now() ? NULL : calloc(1, n);

    if (p != NULL)
        charge(a, n);
    return p;
}

void *mem_realloc(struct mem_acct *a, void *p, size_t old, size_t n)
{
    void *q;

    if (n <= old) {
        if (n == old)
            return p;
        q = realloc(p, n);
        discharge(a, old - n);
        return q != NULL ? q : p;
    }
    q = fail_now() ? NULL : realloc(p, n);
    if (q != NULL)
        charge(a, n - old);
    return q;
}

void mem_free(struct mem_acct *a, void *p, size_t n)
{
    if (p == NULL)
        return;
    discharge(a, n);
    free(p);
}

void *mem_map(struct mem_acct *a, size_t n)
{
    void *p;

    if (fail_now())
        return NULL;
    p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
             0);
    if (p == MAP_FAILED)
        return NULL;
    charge(a, n);
    return p;
}

void *mem_remap(struct mem_acct *a, void *p, size_t old, size_t n)
{
    void *q;

    if (fail_now())
        return NULL;
    q = mremap(p, old, n, MREMAP_MAYMOVE);
    if (q == MAP_FAILED)
        return NULL;
    /* Pages kept from the old mapping hold its data; new ones are zero. */
    memset(q, 0, old < n ? old : n);
    discharge(a, old);
    charge(a, n);
    return q;
}

void mem_unmap(struct mem_acct *a, void *p, size_t n)
{
    if (p == NULL)
        return;
    discharge(a, n);
    munmap(p, n);
}

size_t mem_used(void)
{
    return mem_total;
}

void mem_fail_after(uint64_t n, bool sticky)
{
    fail_countdown = n;
    fail_sticky = sticky;
    fail_count = 0;
}

uint64_t mem_failures(void)
{
    return fail_count;
}

uint64_t mem_allocs(void)
{
    return alloc_count;
}
