/*
 * store_bc.c - memory per (user, channel) and speed of the BC store,
 * without a server around it.
 *
 *   store_bc [-u USERS] [-c CHANNELS_PER_USER] [-U BIG_USERS]
 *
 * Memory: USERS random uids (default 1,000,000) each read CHANNELS_PER_USER
 * channels (default 1) out of 16, which registers them; prints the store's
 * own accounting and the process RSS growth per entry.
 *
 * Speed, on that store: BC.PUBLISH (bc_publish) and BC.UNREAD of
 * registered users (bc_unread, random order, so most lookups miss the
 * cache as on a busy server), ns per call. Then more users are registered
 * in one channel up to BIG_USERS (default 10,000,000; 0 skips) and
 * publish is timed again: its cost must not depend on the audience.
 *
 * Ends with one machine-readable line starting with "store_bc".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_gettime clocks, sysconf */
#endif
#include "bc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHANNELS 16
#define PUBLISHES 2000000
#define READS 2000000

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
    fprintf(stderr, "usage: store_bc [-u USERS] [-c CHANNELS_PER_USER] "
                    "[-U BIG_USERS]\n");
    exit(2);
}

static void die(const char *what)
{
    fprintf(stderr, "store_bc: %s\n", what);
    exit(1);
}

/* Registers users [from, to) in channels first .. first + n - 1 (mod
 * CHANNELS), user i's first channel depending on i. */
static void register_users(struct bc_store *s, uint64_t from, uint64_t to,
                           unsigned n)
{
    for (uint64_t i = from; i < to; i++)
        for (unsigned k = 0; k < n; k++)
            if (bc_read(s, splitmix(i), (i + k) % CHANNELS) != 0)
                die("bc_read failed");
}

/* ns per bc_publish to channel 0, over `calls` calls. */
static double time_publish(struct bc_store *s, uint64_t calls)
{
    uint64_t head = 0, t0 = clock_ns();

    for (uint64_t i = 0; i < calls; i++)
        if (bc_publish(s, 0, &head) != 0)
            die("bc_publish failed");
    return (double)(clock_ns() - t0) / (double)calls;
}

/* ns per bc_unread of a registered user, users in random order (before
 * any publish, so every answer must be 0). */
static double time_unread(struct bc_store *s, uint64_t users)
{
    uint64_t t0 = clock_ns();

    for (uint64_t i = 0; i < READS; i++) {
        uint64_t u = splitmix(i ^ 0x5555) % users, unread;
        bool registered;

        if (bc_unread(s, splitmix(u), u % CHANNELS, &unread, &registered) !=
                0 ||
            registered || unread != 0)
            die("unexpected bc_unread result");
    }
    return (double)(clock_ns() - t0) / READS;
}

int main(int argc, char **argv)
{
    uint64_t users = 1000000, big = 10000000;
    unsigned per = 1;
    double pub_small, pub_big = 0, unread_ns, store_bpe, rss_bpe;
    size_t rss0, rss1, entries;
    struct bc_store *s;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-u") == 0 && i + 1 < argc)
            users = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "-c") == 0 && i + 1 < argc)
            per = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "-U") == 0 && i + 1 < argc)
            big = strtoull(argv[++i], NULL, 10);
        else
            usage();
    }
    if (users == 0 || per == 0 || per > CHANNELS || (big && big < users))
        usage();

    rss0 = rss_bytes();
    s = bc_create();
    if (s == NULL)
        die("bc_create failed");
    register_users(s, 0, users, per);
    rss1 = rss_bytes();
    entries = bc_entries(s);
    if (entries != users * per || bc_audit(s) != 0)
        die("store inconsistent after load");
    store_bpe = (double)bc_bytes(s) / (double)entries;
    rss_bpe = (double)(rss1 - rss0) / (double)entries;
    printf("memory         %" PRIu64 " users x %u channel(s) = %zu entries\n",
           users, per, entries);
    printf("  entries      %.2f bytes/entry (store accounting), %.2f "
           "bytes/entry (RSS growth)\n",
           store_bpe, rss_bpe);

    unread_ns = time_unread(s, users);
    pub_small = time_publish(s, PUBLISHES);
    printf("speed          BC.UNREAD %.1f ns/call, BC.PUBLISH %.1f ns/call "
           "(%zu entries)\n",
           unread_ns, pub_small, entries);
    if (big > 0) {
        /* Channel 0 grows to `big` users: only the audience changes. */
        for (uint64_t i = users; i < big; i++)
            if (bc_read(s, splitmix(i), 0) != 0)
                die("bc_read failed");
        pub_big = time_publish(s, PUBLISHES);
        printf("               BC.PUBLISH %.1f ns/call with %zu entries "
               "(%.2fx)\n",
               pub_big, bc_entries(s), pub_big / pub_small);
        if (bc_audit(s) != 0)
            die("store inconsistent after the big load");
    }
    printf("store_bc users=%" PRIu64 " channels_per_user=%u entries=%zu "
           "store_bpe=%.2f rss_bpe=%.2f unread_ns=%.1f publish_ns=%.1f "
           "big_entries=%zu publish_big_ns=%.1f\n",
           users, per, entries, store_bpe, rss_bpe, unread_ns, pub_small,
           big ? bc_entries(s) : (size_t)0, pub_big);
    bc_destroy(s);
    return 0;
}
