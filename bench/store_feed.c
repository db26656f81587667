/*
 * store_feed.c - memory per follow edge and FEED.UNREAD time of the FEED
 * store, without a server around it.
 *
 *   store_feed [-u USERS] [-f FOLLOWS] [-a AUTHORS] [-F UNREAD_FOLLOWS]
 *
 * Memory: USERS users (default 5000) follow FOLLOWS random authors each
 * (default 200) out of AUTHORS (default 100,000, all of which have posted);
 * prints the store's own accounting and the process RSS growth per edge.
 *
 * Speed: 256 users follow UNREAD_FOLLOWS random authors each (default
 * 2000) out of 1,000,000, then feed_unread with the default cap (99) is
 * timed over those users in turn, so that most count reads miss the cache
 * as they would on a busy server:
 *   full walk   a few new posts (< cap): every edge is read, the worst case;
 *   early stop  every followee has new posts: the walk stops past the cap.
 * Each prints the mean, p50, p99 and worst time per call, and the run ends
 * with one machine-readable line starting with "store_feed".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_gettime clocks, sysconf */
#endif
#include "feed.h"
#include "store_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define CAP 99
#define SPEED_USERS 256
#define SPEED_AUTHORS 1000000
#define SPEED_CALLS 20000

static void usage(void)
{
    fprintf(stderr, "usage: store_feed [-u USERS] [-f FOLLOWS] [-a AUTHORS] "
                    "[-F UNREAD_FOLLOWS]\n");
    exit(2);
}

/* uid u follows n distinct random authors out of `authors` (author ids are
 * su_splitmix(index), so the author index order is random too). */
static void follow_random(struct feed_store *s, uint64_t uid, uint64_t n,
                          uint64_t authors, uint64_t seed)
{
    uint64_t added = 0;

    for (uint64_t k = 0; added < n; k++) {
        uint64_t a = su_splitmix(su_splitmix(seed + k) % authors);
        int rc = feed_follow(s, uid, a, FEED_MAX_AUTHORS);

        if (rc < 0)
            su_die("feed_follow failed");
        added += (uint64_t)rc;
    }
}

struct mem_result {
    double store_bpe, rss_bpe;
};

static struct mem_result memory_run(uint64_t users, uint64_t follows,
                                    uint64_t authors)
{
    struct mem_result res;
    struct feed_store *s = feed_create();
    size_t rss0, rss1, author_bytes, edge_bytes;
    uint32_t count;

    if (s == NULL || follows > authors)
        su_die("bad memory run");
    for (uint64_t a = 0; a < authors; a++)
        if (feed_post(s, su_splitmix(a), 1 + a % 50, &count) != 0)
            su_die("feed_post failed");
    rss0 = su_rss_bytes();
    author_bytes = feed_bytes(s);
    for (uint64_t u = 0; u < users; u++)
        follow_random(s, su_splitmix(u ^ 0xabcdef), follows, authors, u << 32);
    rss1 = su_rss_bytes();
    if (feed_entries(s) != users * follows || feed_audit(s) != 0)
        su_die("store inconsistent after load");
    /* Edge cost: everything the follows added (the author table, loaded
     * first, is counted apart). */
    edge_bytes = feed_bytes(s) - author_bytes;
    res.store_bpe = (double)edge_bytes / (double)(users * follows);
    res.rss_bpe = (double)(rss1 - rss0) / (double)(users * follows);
    printf("memory           %" PRIu64 " users x %" PRIu64 " follows (%" PRIu64
           " edges), %" PRIu64 " authors\n",
           users, follows, users * follows, authors);
    printf("  edges          %.2f bytes/edge (store accounting), %.2f "
           "bytes/edge (RSS growth)\n",
           res.store_bpe, res.rss_bpe);
    printf("  authors        %.2f bytes/author (id map, id, count)\n",
           (double)author_bytes / (double)authors);
    feed_destroy(s);
    return res;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

struct speed_result {
    double mean_ns;
    uint64_t p50, p99, worst;
};

/* Times SPEED_CALLS feed_unread calls over the users in turn; user u's
 * result must be want[u] (read beforehand). */
static struct speed_result time_unread(const struct feed_store *s,
                                       const char *name)
{
    static uint64_t ns[SPEED_CALLS], want[SPEED_USERS];
    struct speed_result r;
    uint64_t total = 0, sum = 0;

    for (unsigned u = 0; u < SPEED_USERS; u++) {
        want[u] = feed_unread(s, su_splitmix(u), CAP);
        sum += want[u];
    }
    for (unsigned i = 0; i < SPEED_CALLS; i++) {
        uint64_t uid = su_splitmix(i % SPEED_USERS), t0 = su_clock_ns(), got;

        got = feed_unread(s, uid, CAP);
        ns[i] = su_clock_ns() - t0;
        if (got != want[i % SPEED_USERS])
            su_die("unexpected unread");
        total += ns[i];
    }
    qsort(ns, SPEED_CALLS, sizeof(ns[0]), cmp_u64);
    r.mean_ns = (double)total / SPEED_CALLS;
    r.p50 = ns[SPEED_CALLS / 2];
    r.p99 = ns[SPEED_CALLS * 99 / 100];
    r.worst = ns[SPEED_CALLS - 1];
    printf("  %-14s unread %.1f on average: mean %.2f us, p50 %.2f us, p99 "
           "%.2f us, worst %.2f us\n",
           name, (double)sum / SPEED_USERS, r.mean_ns / 1e3,
           (double)r.p50 / 1e3, (double)r.p99 / 1e3, (double)r.worst / 1e3);
    return r;
}

static void speed_run(uint64_t follows, struct speed_result *full,
                      struct speed_result *early)
{
    struct feed_store *s = feed_create();
    uint32_t count;

    if (s == NULL || follows > SPEED_AUTHORS)
        su_die("bad speed run");
    for (uint64_t a = 0; a < SPEED_AUTHORS; a++)
        if (feed_post(s, su_splitmix(a), 1 + a % 50, &count) != 0)
            su_die("feed_post failed");
    for (uint64_t u = 0; u < SPEED_USERS; u++)
        follow_random(s, su_splitmix(u), follows, SPEED_AUTHORS, u << 32);
    printf("FEED.UNREAD      %d users x %" PRIu64 " follows out of %d "
           "authors, cap %d\n",
           SPEED_USERS, follows, SPEED_AUTHORS, CAP);
    /* A few new posts: one per 1/40 of the authors, fewer than the cap for
     * every user (~follows/40 of its followees). Then every author posts,
     * so each user's sum passes the cap early. */
    for (uint64_t a = 0; a < SPEED_AUTHORS; a += 40)
        feed_post(s, su_splitmix(a), 1, &count);
    for (uint64_t u = 0; u < SPEED_USERS; u++)
        if (feed_unread(s, su_splitmix(u), CAP) > CAP)
            su_die("too many unread for the full-walk case");
    *full = time_unread(s, "full walk");
    for (uint64_t a = 0; a < SPEED_AUTHORS; a++)
        feed_post(s, su_splitmix(a), 1, &count);
    *early = time_unread(s, "early stop");
    feed_destroy(s);
}

int main(int argc, char **argv)
{
    uint64_t users = 5000, follows = 200, authors = 100000, ufollows = 2000;
    struct speed_result full, early;
    struct mem_result mem;
    const struct su_opt opts[] = {{"-u", &users, NULL},
                                  {"-f", &follows, NULL},
                                  {"-a", &authors, NULL},
                                  {"-F", &ufollows, NULL},
                                  {0}};

    if (su_parse_opts(argc, argv, opts) != 0 || users == 0 || follows == 0 ||
        follows > authors || ufollows == 0 || ufollows > SPEED_AUTHORS)
        usage();
    mem = memory_run(users, follows, authors);
    speed_run(ufollows, &full, &early);
    printf("store_feed users=%" PRIu64 " follows=%" PRIu64 " authors=%" PRIu64
           " store_bpe=%.2f rss_bpe=%.2f unread_follows=%" PRIu64
           " full_mean_ns=%.0f full_p50_ns=%" PRIu64 " full_p99_ns=%" PRIu64
           " early_mean_ns=%.0f early_p99_ns=%" PRIu64 "\n",
           users, follows, authors, mem.store_bpe, mem.rss_bpe, ufollows,
           full.mean_ns, full.p50, full.p99, early.mean_ns, early.p99);
    return 0;
}
