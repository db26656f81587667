/*
 * store_dot.c - memory per (user, dot) click and the speed of clicks and
 * checks of the DOT store, without a server around it.
 *
 *   store_dot [-u USERS] [-d DOTS_PER_USER] [-n DOTS]
 *
 * USERS users (default 100,000) click DOTS_PER_USER distinct dots each
 * (default 10) out of DOTS pushed dots (default 100), in random order, at
 * random times. Prints the store's own accounting and the process RSS
 * growth per click entry, the mean time of a click (during the load) and
 * of a one-dot check (dot_shown, over random users and dots), and one
 * machine-readable line starting with "store_dot".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_gettime clocks, sysconf */
#endif
#include "dot.h"
#include "store_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECKS 2000000

static void usage(void)
{
    fprintf(stderr, "usage: store_dot [-u USERS] [-d DOTS_PER_USER] "
                    "[-n DOTS]\n");
    exit(2);
}

/* The dot id of dot number i (0..dots-1). */
static uint64_t dot_id(uint64_t i)
{
    return su_splitmix(i ^ 0x5bd1e995);
}

int main(int argc, char **argv)
{
    uint64_t users = 100000, per_user = 10, dots = 100, push, t0, t1, t2;
    uint64_t clicks, step, shown = 0;
    struct dot_store *s = dot_create();
    size_t rss0, rss1, bytes0, bytes;
    const struct su_opt opts[] = {{"-u", &users, NULL},
                                  {"-d", &per_user, NULL},
                                  {"-n", &dots, NULL},
                                  {0}};

    if (su_parse_opts(argc, argv, opts) != 0 || s == NULL || users == 0 ||
        per_user == 0 || per_user > dots || dots > DOT_MAX_DOTS)
        usage();
    for (uint64_t d = 0; d < dots; d++)
        if (dot_push(s, dot_id(d), 1000000 + d, &push) != 0)
            su_die("dot_push failed");

    /* User u clicks dots first, first + step, ... (mod dots): distinct
     * (step is prime to dots), in an order that differs between users. */
    step = dots % 7 ? 7 : 1;
    rss0 = su_rss_bytes();
    bytes0 = dot_bytes(s);
    t0 = su_clock_ns();
    for (uint64_t u = 0; u < users; u++) {
        uint64_t first = su_splitmix(u) % dots, uid = su_splitmix(u ^ 0xfeed);

        for (uint64_t k = 0; k < per_user; k++) {
            uint64_t d = (first + k * step) % dots;

            if (dot_click(s, uid, dot_id(d),
                          999000 + su_splitmix(u + k) % 2000) != 0)
                su_die("dot_click failed");
        }
    }
    t1 = su_clock_ns();
    rss1 = su_rss_bytes();
    bytes = dot_bytes(s) - bytes0;
    clicks = dot_entries(s);
    if (clicks != users * per_user || dot_audit(s) != 0)
        su_die("store inconsistent after load");

    for (uint64_t i = 0; i < CHECKS; i++) {
        uint64_t u = su_splitmix(i) % users;

        shown += dot_shown(s, su_splitmix(u ^ 0xfeed), dot_id(i % dots));
    }
    t2 = su_clock_ns();

    printf("clicks           %" PRIu64 " users x %" PRIu64 " dots (%" PRIu64
           " entries) out of %" PRIu64 " dots\n",
           users, per_user, clicks, dots);
    printf("store accounting %.2f bytes/click\n",
           (double)bytes / (double)clicks);
    printf("process RSS      %.2f bytes/click\n",
           (double)(rss1 - rss0) / (double)clicks);
    printf("dot_click        %.0f ns (load, mean)\n",
           (double)(t1 - t0) / (double)clicks);
    printf("dot_shown        %.0f ns (random user and dot, mean; %.0f%% "
           "shown)\n",
           (double)(t2 - t1) / CHECKS, 100.0 * (double)shown / CHECKS);
    printf("store_dot users=%" PRIu64 " per_user=%" PRIu64 " dots=%" PRIu64
           " store_bpc=%.2f rss_bpc=%.2f click_ns=%.0f check_ns=%.0f\n",
           users, per_user, dots, (double)bytes / (double)clicks,
           (double)(rss1 - rss0) / (double)clicks,
           (double)(t1 - t0) / (double)clicks, (double)(t2 - t1) / CHECKS);
    dot_destroy(s);
    return 0;
}
