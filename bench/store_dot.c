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

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECKS 2000000

/* splitmix64: a bijection of the counter, so random ids never repeat. */
static uint64_t splitmix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t clock_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
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
    fprintf(stderr, "usage: store_dot [-u USERS] [-d DOTS_PER_USER] "
                    "[-n DOTS]\n");
    exit(2);
}

static void die(const char *what)
{
    fprintf(stderr, "store_dot: %s\n", what);
    exit(1);
}

/* The dot id of dot number i (0..dots-1). */
static uint64_t dot_id(uint64_t i)
{
    return splitmix(i ^ 0x5bd1e995);
}

int main(int argc, char **argv)
{
    uint64_t users = 100000, per_user = 10, dots = 100, push, t0, t1, t2;
    uint64_t clicks, step, shown = 0;
    struct dot_store *s = dot_create();
    size_t rss0, rss1, bytes0, bytes;

    for (int i = 1; i < argc; i++) {
        uint64_t *opt = NULL;

        if (strcmp(argv[i], "-u") == 0)
            opt = &users;
        else if (strcmp(argv[i], "-d") == 0)
            opt = &per_user;
        else if (strcmp(argv[i], "-n") == 0)
            opt = &dots;
        if (opt == NULL || i + 1 >= argc)
            usage();
        *opt = strtoull(argv[++i], NULL, 10);
    }
    if (s == NULL || users == 0 || per_user == 0 || per_user > dots ||
        dots > DOT_MAX_DOTS)
        usage();
    for (uint64_t d = 0; d < dots; d++)
        if (dot_push(s, dot_id(d), 1000000 + d, &push) != 0)
            die("dot_push failed");

    /* User u clicks dots first, first + step, ... (mod dots): distinct
     * (step is prime to dots), in an order that differs between users. */
    step = dots % 7 ? 7 : 1;
    rss0 = rss_bytes();
    bytes0 = dot_bytes(s);
    t0 = clock_ns();
    for (uint64_t u = 0; u < users; u++) {
        uint64_t first = splitmix(u) % dots, uid = splitmix(u ^ 0xfeed);

        for (uint64_t k = 0; k < per_user; k++) {
            uint64_t d = (first + k * step) % dots;

            if (dot_click(s, uid, dot_id(d), 999000 + splitmix(u + k) % 2000) !=
                0)
                die("dot_click failed");
        }
    }
    t1 = clock_ns();
    rss1 = rss_bytes();
    bytes = dot_bytes(s) - bytes0;
    clicks = dot_clicks(s);
    if (clicks != users * per_user || dot_audit(s) != 0)
        die("store inconsistent after load");

    for (uint64_t i = 0; i < CHECKS; i++) {
        uint64_t u = splitmix(i) % users;

        shown += dot_shown(s, splitmix(u ^ 0xfeed), dot_id(i % dots));
    }
    t2 = clock_ns();

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
