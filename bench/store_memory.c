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
#include "store_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static void lat_print(const char *name, const struct su_lat *l)
{
    printf("worst op (%s) %8.1f us (user %" PRIu64 "); ops >10us: %" PRIu64
           ", >100us: %" PRIu64 ", >1ms: %" PRIu64 "\n",
           name, (double)l->worst / 1e3, l->worst_at, l->over10us, l->over100us,
           l->over1ms);
}

static void usage(void)
{
    fprintf(stderr, "usage: store_memory [-n USERS] [-t TYPES] [--seq]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    uint64_t n = 1000000, types = 2, t0, t1;
    int seq = 0;
    const struct su_opt opts[] = {
        {"-n", &n, NULL}, {"-t", &types, NULL}, {"--seq", NULL, &seq}, {0}};
    struct su_lat wall = {0}, cpu = {0}, cpu_resize = {0}, cpu_plain = {0};
    uint64_t resizes = 0;
    size_t rss0, rss1, bytes;
    struct cnt_store *s;
    uint32_t v;
    uint64_t total;

    if (su_parse_opts(argc, argv, opts) != 0 || n == 0 || types == 0 ||
        types > CNT_TYPES)
        usage();

    rss0 = su_rss_bytes();
    s = cnt_create();
    if (s == NULL)
        return 1;
    t0 = su_clock_ns();
    for (uint64_t i = 0; i < n; i++) {
        uint64_t uid = seq ? i + 1 : su_splitmix(i);
        unsigned first = (unsigned)(su_splitmix(i ^ 0x5555) % CNT_TYPES);

        for (unsigned j = 0; j < types; j++) {
            unsigned type = (first + j * 7) % CNT_TYPES;
            size_t b0 = cnt_bytes(s);
            uint64_t c0 = su_cpu_ns();
            uint64_t w0 = su_clock_ns(), w1, c1;
            int rc = cnt_incr(s, uid, type, 1 + (i + j) % 100, &v, &total);

            w1 = su_clock_ns();
            c1 = su_cpu_ns();
            if (rc != 0) {
                fprintf(stderr, "out of memory at user %" PRIu64 "\n", i);
                return 1;
            }
            su_lat_add(&wall, w1 - w0, i);
            su_lat_add(&cpu, c1 - c0, i);
            /* Only a new user (j == 0, stored inline) can resize the map. */
            if (j == 0 && cnt_bytes(s) != b0) {
                su_lat_add(&cpu_resize, c1 - c0, i);
                resizes++;
            } else {
                su_lat_add(&cpu_plain, c1 - c0, i);
            }
        }
    }
    t1 = su_clock_ns();
    rss1 = su_rss_bytes();
    bytes = cnt_bytes(s);

    if (cnt_entries(s) != n || cnt_audit(s) != 0) {
        fprintf(stderr, "store inconsistent after load\n");
        return 1;
    }
    printf("users            %" PRIu64 " (%s uids), %" PRIu64 " types each\n",
           n, seq ? "sequential" : "random", types);
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
    printf("store_memory n=%" PRIu64 " types=%" PRIu64
           " seq=%d store_bytes=%zu "
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
