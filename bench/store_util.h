/*
 * store_util.h - what the store figures (bench/store_*.c) share: random ids,
 * clocks, the process RSS, worst-case latency tallies and option parsing.
 *
 * Each bench/store_*.c is a program of its own, linked with the store
 * objects only, so the helpers are static inline here rather than a module
 * to link. Every program keeps its own options, output and usage text.
 */
#ifndef UR_STORE_UTIL_H
#define UR_STORE_UTIL_H

#include <err.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* splitmix64: a bijection of the counter, so random ids never repeat. */
static inline uint64_t su_splitmix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static inline uint64_t su_ns(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Wall-clock time, ns. */
static inline uint64_t su_clock_ns(void)
{
    return su_ns(CLOCK_MONOTONIC);
}

/* This thread's CPU time, ns: what an operation itself cost, page faults
 * included, where the wall clock on a shared machine mostly shows
 * preemption. */
static inline uint64_t su_cpu_ns(void)
{
    return su_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* Resident set size of the process, bytes; 0 when /proc cannot say. */
static inline size_t su_rss_bytes(void)
{
    unsigned long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f == NULL)
        return 0;
    if (fscanf(f, "%lu %lu", &size, &resident) != 2)
        resident = 0;
    fclose(f);
    return resident * (size_t)sysconf(_SC_PAGESIZE);
}

/* A failed store call or a broken invariant: "PROGRAM: what", exit 1. */
static inline _Noreturn void su_die(const char *what)
{
    errx(1, "%s", what);
}

/* Worst and tail of one clock's per-operation times (ns); zero-initialize.
 * worst_at is the caller's index of the worst operation. */
struct su_lat {
    uint64_t worst, worst_at, over10us, over100us, over1ms;
};

static inline void su_lat_add(struct su_lat *l, uint64_t ns, uint64_t at)
{
    if (ns > l->worst) {
        l->worst = ns;
        l->worst_at = at;
    }
    l->over10us += ns > 10000;
    l->over100us += ns > 100000;
    l->over1ms += ns > 1000000;
}

/* One command-line option: NAME NUMBER stores the number in *num; when num
 * is NULL, NAME stands alone and sets *flag to 1. */
struct su_opt {
    const char *name;
    uint64_t *num;
    int *flag;
};

/* Parses argv[1..argc) against opts (ended by a NULL name). 0, or -1 on an
 * unknown option or a NAME missing its NUMBER: the caller prints its usage.
 * Numbers are read as strtoull reads them. */
static inline int su_parse_opts(int argc, char **argv,
                                const struct su_opt *opts)
{
    for (int i = 1; i < argc; i++) {
        const struct su_opt *o = opts;

        while (o->name != NULL && strcmp(argv[i], o->name) != 0)
            o++;
        if (o->name == NULL || (o->num != NULL && i + 1 >= argc))
            return -1;
        if (o->num != NULL)
            *o->num = strtoull(argv[++i], NULL, 10);
        else
            *o->flag = 1;
    }
    return 0;
}

#endif
