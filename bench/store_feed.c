/*
 * store_feed.c - memory per follow edge and the speed of the FEED store's
 * reads and writes, without a server around it.
 *
 *   store_feed [-u USERS] [-f FOLLOWS] [-a AUTHORS] [-F UNREAD_FOLLOWS] [-s]
 *
 * Memory, each shape in a child process of its own (so that RSS growth is
 * its own): USERS users (default 5000) follow FOLLOWS random authors each
 * (default 200) out of AUTHORS (default 100,000, all of which have posted
 * 1 to 50 times: snapshots of 1 to 50); then the same with 1, 10 and 2,000
 * follows per user (1,000,000 edges each); then `make bench-memory`'s
 * shape (bench/bench_feed.c): 5,000 users following 200 consecutive
 * authors each out of 10,000, none of whom has posted, loaded as 50
 * connections load it. Each prints the store's own accounting and the
 * process RSS growth per edge.
 *
 * FEED.UNREAD: 256 users follow UNREAD_FOLLOWS random authors each
 * (default 2000) out of 1,000,000, then feed_unread with the default cap
 * (99) is timed over those users in turn, so that most count reads miss
 * the cache as they would on a busy server:
 *   full walk   a few new posts (< cap): every edge is read, the worst case;
 *   early stop  every followee has new posts: the walk stops past the cap.
 * Each prints the mean, p50, p99 and worst time per call.
 *
 * `make bench`'s FEED rows on the store alone (bench/bench_feed.c's shape,
 * where the counts stay in the cache): FEED.UNREAD over 200 followees
 * (feed-unread), and FEED.FOLLOW of a new author then FEED.UNFOLLOW of it
 * (feed-follow), mean time per call or pair.
 *
 * -s: the speed figures alone (memory figures 0). The run ends with one
 * machine-readable line starting with "store_feed".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_gettime clocks, sysconf */
#endif
#include "feed.h"
#include "store_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#define CAP 99
#define SPEED_USERS 256
#define SPEED_AUTHORS 1000000
#define SPEED_CALLS 20000
/* bench/bench_feed.c's shape. */
#define BENCH_USERS 5000
#define BENCH_FOLLOWS 200
#define BENCH_AUTHORS 10000
#define BENCH_CALLS 200000

static void usage(void)
{
    fprintf(stderr, "usage: store_feed [-u USERS] [-f FOLLOWS] [-a AUTHORS] "
                    "[-F UNREAD_FOLLOWS] [-s]\n");
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

/* bench/bench_feed.c's author_of: followee j of a user. */
static uint64_t bench_author(uint64_t uid, uint64_t j)
{
    return (uid * 7919 + j) % BENCH_AUTHORS;
}

/* Connections of `make bench`'s load step (bench/compare.py). */
#define BENCH_CONNS 50

/* bench/bench_feed.c's load as unread-bench runs it: key k is user
 * k / 200's follow of its author k % 200; each of 50 connections loads
 * one contiguous run of keys, so the server sees the runs interleaved
 * (modelled here one key of each run in turn), and authors get their
 * indices in that order. Nobody has posted. */
static void bench_load(struct feed_store *s)
{
    uint64_t keys = (uint64_t)BENCH_USERS * BENCH_FOLLOWS;
    uint64_t run = (keys + BENCH_CONNS - 1) / BENCH_CONNS;

    for (uint64_t i = 0; i < run; i++)
        for (uint64_t g = 0; g < BENCH_CONNS; g++) {
            uint64_t k = g * run + i, u = k / BENCH_FOLLOWS;

            if (k < keys &&
                feed_follow(s, u, bench_author(u, k % BENCH_FOLLOWS),
                            FEED_MAX_AUTHORS) != 1)
                su_die("feed_follow failed");
        }
}

struct mem_result {
    double store_bpe, rss_bpe;
};

/* One memory shape: users x follows random edges out of `authors` that
 * have posted, or (authors == 0) bench_load's. */
static struct mem_result memory_run(const char *name, uint64_t users,
                                    uint64_t follows, uint64_t authors)
{
    struct mem_result res;
    struct feed_store *s = feed_create();
    size_t rss0, rss1, author_bytes, edge_bytes;
    uint64_t edges = users * follows;
    uint32_t count;

    if (s == NULL || follows > (authors ? authors : BENCH_AUTHORS))
        su_die("bad memory run");
    for (uint64_t a = 0; a < authors; a++)
        if (feed_post(s, su_splitmix(a), 1 + a % 50, &count) != 0)
            su_die("feed_post failed");
    rss0 = su_rss_bytes();
    author_bytes = feed_bytes(s);
    if (authors == 0)
        bench_load(s);
    else
        for (uint64_t u = 0; u < users; u++)
            follow_random(s, su_splitmix(u ^ 0xabcdef), follows, authors,
                          u << 32);
    rss1 = su_rss_bytes();
    if (feed_entries(s) != edges || feed_audit(s) != 0)
        su_die("store inconsistent after load");
    /* Edge cost: everything the follows added (the author table of a
     * random shape, loaded first, is counted apart; bench_load's authors
     * come with its follows, as in `make bench-memory`). */
    edge_bytes = feed_bytes(s) - author_bytes;
    res.store_bpe = (double)edge_bytes / (double)edges;
    res.rss_bpe = (double)(rss1 - rss0) / (double)edges;
    printf("memory %-11s %" PRIu64 " users x %" PRIu64 " follows, %" PRIu64
           " authors: %.2f bytes/edge (store accounting), %.2f bytes/edge "
           "(RSS growth)\n",
           name, users, follows, authors ? authors : BENCH_AUTHORS,
           res.store_bpe, res.rss_bpe);
    feed_destroy(s);
    return res;
}

/* memory_run in a child process, so that its RSS growth is its own. */
static struct mem_result memory_child(const char *name, uint64_t users,
                                      uint64_t follows, uint64_t authors)
{
    struct mem_result res;
    int fd[2], ws;
    pid_t pid;

    fflush(stdout);
    if (pipe(fd) != 0 || (pid = fork()) < 0)
        su_die("fork");
    if (pid == 0) {
        close(fd[0]);
        res = memory_run(name, users, follows, authors);
        fflush(stdout);
        _exit(write(fd[1], &res, sizeof(res)) == sizeof(res) ? 0 : 1);
    }
    close(fd[1]);
    if (read(fd[0], &res, sizeof(res)) != sizeof(res) ||
        waitpid(pid, &ws, 0) != pid || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
        su_die("memory run failed");
    close(fd[0]);
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

/* `make bench`'s feed-unread and feed-follow on the store: mean ns per
 * FEED.UNREAD over 200 followees, and per FOLLOW + UNFOLLOW pair. */
static void bench_rows(double *unread_ns, double *pair_ns)
{
    struct feed_store *s = feed_create();
    uint64_t t0, sum = 0, rng = 1;

    if (s == NULL)
        su_die("feed_create failed");
    bench_load(s);
    t0 = su_cpu_ns();
    for (uint64_t i = 0; i < BENCH_CALLS; i++)
        sum += feed_unread(s, su_splitmix(i) % BENCH_USERS, CAP);
    *unread_ns = (double)(su_cpu_ns() - t0) / BENCH_CALLS;
    if (sum != 0)
        su_die("unexpected unread");
    t0 = su_cpu_ns();
    for (uint64_t i = 0; i < BENCH_CALLS; i++) {
        uint64_t uid = su_splitmix(i) % BENCH_USERS;
        uint64_t author =
            BENCH_AUTHORS + (rng = su_splitmix(rng)) % BENCH_AUTHORS;

        if (feed_follow(s, uid, author, 5000) != 1 ||
            !feed_unfollow(s, uid, author))
            su_die("follow/unfollow failed");
    }
    *pair_ns = (double)(su_cpu_ns() - t0) / BENCH_CALLS;
    if (feed_entries(s) != BENCH_USERS * BENCH_FOLLOWS || feed_audit(s) != 0)
        su_die("store inconsistent after the bench rows");
    printf("bench rows       %d users x %d follows out of %d authors (the "
           "counts cached): FEED.UNREAD %.0f ns, FOLLOW + UNFOLLOW %.0f ns\n",
           BENCH_USERS, BENCH_FOLLOWS, BENCH_AUTHORS, *unread_ns, *pair_ns);
    feed_destroy(s);
}

int main(int argc, char **argv)
{
    uint64_t users = 5000, follows = 200, authors = 100000, ufollows = 2000;
    struct speed_result full, early;
    struct mem_result mem = {0, 0}, one = mem, ten = mem, k2 = mem, bench = mem;
    double unread_ns, pair_ns;
    int speed_only = 0;
    const struct su_opt opts[] = {
        {"-u", &users, NULL},      {"-f", &follows, NULL},
        {"-a", &authors, NULL},    {"-F", &ufollows, NULL},
        {"-s", NULL, &speed_only}, {0}};

    if (su_parse_opts(argc, argv, opts) != 0 || users == 0 || follows == 0 ||
        authors == 0 || follows > authors || ufollows == 0 ||
        ufollows > SPEED_AUTHORS)
        usage();
    if (!speed_only) {
        mem = memory_child("main", users, follows, authors);
        one = memory_child("1 follow", 1000000, 1, 100000);
        ten = memory_child("10 follows", 100000, 10, 100000);
        k2 = memory_child("2k follows", 500, 2000, 100000);
        bench = memory_child("bench", BENCH_USERS, BENCH_FOLLOWS, 0);
    }
    speed_run(ufollows, &full, &early);
    bench_rows(&unread_ns, &pair_ns);
    printf("store_feed users=%" PRIu64 " follows=%" PRIu64 " authors=%" PRIu64
           " store_bpe=%.2f rss_bpe=%.2f f1_bpe=%.2f/%.2f f10_bpe=%.2f/%.2f"
           " f2000_bpe=%.2f/%.2f bench_bpe=%.2f/%.2f unread_follows=%" PRIu64
           " full_mean_ns=%.0f full_p50_ns=%" PRIu64 " full_p99_ns=%" PRIu64
           " early_mean_ns=%.0f early_p99_ns=%" PRIu64
           " bench_unread_ns=%.0f bench_follow_pair_ns=%.0f\n",
           users, follows, authors, mem.store_bpe, mem.rss_bpe, one.store_bpe,
           one.rss_bpe, ten.store_bpe, ten.rss_bpe, k2.store_bpe, k2.rss_bpe,
           bench.store_bpe, bench.rss_bpe, ufollows, full.mean_ns, full.p50,
           full.p99, early.mean_ns, early.p99, unread_ns, pair_ns);
    return 0;
}
