/*
 * store_memory.c - memory per user and worst single-operation latency of
 * the CNT store, without a server around it.
 *
 *   store_memory [-n USERS] [-t TYPES] [--seq]
 *
 * Loads USERS users (default 1,000,000) with TYPES non-zero counter types
 * each (default 2), uids random 64-bit (or 1..USERS with --seq), then prints
 * the store's own accounting and the process RSS growth, both per user, the
 * worst time any single cnt_incr took during the load (a resize stall would
 * show here) and one machine-readable line starting with "store_memory".
 *
 * Each operation is timed twice: wall clock, and the thread's CPU time. On a
 * shared machine the wall-clock worst is usually a preemption; the CPU-time
 * worst is what the operation itself cost, page faults included. CPU times
 * are also split by whether the operation resized the table (cnt_bytes
 * changed): the worst of the others is the machine's noise floor (interrupts,
 * steal time) for comparison.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_gettime clocks, sysconf */
#endif
#include "cnt.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* splitmix64: a bijection of the counter, so random uids never repeat. */
static uint64_t splitmix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Worst and tail of one clock's per-operation times. */
struct lat {
    uint64_t worst, worst_at, over10us, over100us, over1ms;
};

static void lat_add(struct lat *l, uint64_t d, uint64_t user)
{
    if (d > l->worst) {
        l->worst = d;
        l->worst_at = user;
    }
    l->over10us += d > 10000;
    l->over100us += d > 100000;
    l->over1ms += d > 1000000;
}

static void lat_print(const char *name, const struct lat *l)
{
    printf("worst op (%s) %8.1f us (user %" PRIu64 "); ops >10us: %" PRIu64
           ", >100us: %" PRIu64 ", >1ms: %" PRIu64 "\n",
           name, (double)l->worst / 1e3, l->worst_at, l->over10us, l->over100us,
           l->over1ms);
}

static size_t rss_bytes(void)
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

static void usage(void)
{
    fprintf(stderr, "usage: store_memory [-n USERS] [-t TYPES] [--seq]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    uint64_t n = 1000000, t0, t1;
    struct lat wall = {0, 0, 0, 0, 0}, cpu = {0, 0, 0, 0, 0};
    struct lat cpu_resize = {0, 0, 0, 0, 0}, cpu_plain = {0, 0, 0, 0, 0};
    uint64_t resizes = 0;
    unsigned types = 2;
    int seq = 0;
    size_t rss0, rss1, bytes;
    struct cnt_store *s;
    uint32_t v;
    uint64_t total;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
            n = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "-t") == 0 && i + 1 < argc)
            types = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--seq") == 0)
            seq = 1;
        else
            usage();
    }
    if (n == 0 || types == 0 || types > CNT_TYPES)
        usage();

    rss0 = rss_bytes();
    s = cnt_create();
    if (s == NULL)
        return 1;
    t0 = clock_ns(CLOCK_MONOTONIC);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t uid = seq ? i + 1 : splitmix(i);
        unsigned first = (unsigned)(splitmix(i ^ 0x5555) % CNT_TYPES);

        for (unsigned j = 0; j < types; j++) {
            unsigned type = (first + j * 7) % CNT_TYPES;
            size_t b0 = cnt_bytes(s);
            uint64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
            uint64_t w0 = clock_ns(CLOCK_MONOTONIC), w1, c1;
            int rc = cnt_incr(s, uid, type, 1 + (i + j) % 100, &v, &total);

            w1 = clock_ns(CLOCK_MONOTONIC);
            c1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
            if (rc != 0) {
                fprintf(stderr, "out of memory at user %" PRIu64 "\n", i);
                return 1;
            }
            lat_add(&wall, w1 - w0, i);
            lat_add(&cpu, c1 - c0, i);
            /* Only a new user (j == 0, stored inline) can resize the map. */
            if (j == 0 && cnt_bytes(s) != b0) {
                lat_add(&cpu_resize, c1 - c0, i);
                resizes++;
            } else {
                lat_add(&cpu_plain, c1 - c0, i);
            }
        }
    }
    t1 = clock_ns(CLOCK_MONOTONIC);
    rss1 = rss_bytes();
    bytes = cnt_bytes(s);

    if (cnt_users(s) != n || cnt_audit(s) != 0) {
        fprintf(stderr, "store inconsistent after load\n");
        return 1;
    }
    printf("users            %" PRIu64 " (%s uids), %u types each\n", n,
           seq ? "sequential" : "random", types);
    printf("store accounting %zu bytes, %.2f bytes/user\n", bytes,
           (double)bytes / (double)n);
    printf("process RSS      +%zu bytes, %.2f bytes/user\n", rss1 - rss0,
           (double)(rss1 - rss0) / (double)n);
    printf("load             %.3f s, %.0f ns/op (with the timing calls)\n",
           (double)(t1 - t0) / 1e9, (double)(t1 - t0) / (double)(n * types));
    lat_print("cpu ", &cpu);
    lat_print("wall", &wall);
    printf("table resizes    %" PRIu64 "\n", resizes);
    lat_print("cpu, resizing", &cpu_resize);
    lat_print("cpu, other", &cpu_plain);
    printf("store_memory n=%" PRIu64 " types=%u seq=%d store_bytes=%zu "
           "store_bpu=%.2f rss_bytes=%zu rss_bpu=%.2f worst_op_cpu_ns=%" PRIu64
           " worst_resize_cpu_ns=%" PRIu64 " worst_op_wall_ns=%" PRIu64
           " ops_over_100us_cpu=%" PRIu64 " ops_over_100us_wall=%" PRIu64
           " resizes=%" PRIu64 " load_ns=%" PRIu64 "\n",
           n, types, seq, bytes, (double)bytes / (double)n, rss1 - rss0,
           (double)(rss1 - rss0) / (double)n, cpu.worst, cpu_resize.worst,
           wall.worst, cpu.over100us, wall.over100us, resizes, t1 - t0);
    cnt_destroy(s);
    return 0;
}
