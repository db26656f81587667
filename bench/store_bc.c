/*
 * store_bc.c - memory per (user, channel) and speed of the BC store,
 * without a server around it.
 *
 *   store_bc [-u USERS] [-c CHANNELS_PER_USER] [-C CHANNELS] [-U BIG_USERS]
 *
 * Memory: USERS random uids (default 1,000,000) each read CHANNELS_PER_USER
 * channels (default 1) out of CHANNELS (default 16; `make bench-memory`'s
 * row is -C 1), which registers them, and get an activity day as the
 * server gives them; prints the store's own accounting and the process
 * RSS growth per entry, and the time of a registration.
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
#include "store_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t channels = 16;
#define PUBLISHES 2000000
#define READS 2000000

static void usage(void)
{
    fprintf(stderr, "usage: store_bc [-u USERS] [-c CHANNELS_PER_USER] "
                    "[-C CHANNELS] [-U BIG_USERS]\n");
    exit(2);
}

/* Registers users [from, to) in channels first .. first + n - 1 (mod
 * channels), user i's first channel depending on i, each with the day
 * 20,000 (as the server's activity mark after a BC command). */
static void register_users(struct bc_store *s, uint64_t from, uint64_t to,
                           uint64_t n)
{
    for (uint64_t i = from; i < to; i++) {
        for (uint64_t k = 0; k < n; k++)
            if (bc_read(s, su_splitmix(i), (i + k) % channels) != 0)
                su_die("bc_read failed");
        if (bc_set_user_day(s, su_splitmix(i), 20000) != 1)
            su_die("bc_set_user_day failed");
    }
}

/* ns per bc_publish to channel 0, over `calls` calls. */
static double time_publish(struct bc_store *s, uint64_t calls)
{
    uint64_t head = 0, t0 = su_clock_ns();

    for (uint64_t i = 0; i < calls; i++)
        if (bc_publish(s, 0, &head) != 0)
            su_die("bc_publish failed");
    return (double)(su_clock_ns() - t0) / (double)calls;
}

/* ns per bc_unread of a registered user, users in random order (before
 * any publish, so every answer must be 0). */
static double time_unread(struct bc_store *s, uint64_t users)
{
    uint64_t t0 = su_clock_ns();

    for (uint64_t i = 0; i < READS; i++) {
        uint64_t u = su_splitmix(i ^ 0x5555) % users, unread;
        bool registered;

        if (bc_unread(s, su_splitmix(u), u % channels, &unread, &registered) !=
                0 ||
            registered || unread != 0)
            su_die("unexpected bc_unread result");
    }
    return (double)(su_clock_ns() - t0) / READS;
}

int main(int argc, char **argv)
{
    uint64_t users = 1000000, per = 1, big = 10000000;
    const struct su_opt opts[] = {{"-u", &users, NULL},
                                  {"-c", &per, NULL},
                                  {"-C", &channels, NULL},
                                  {"-U", &big, NULL},
                                  {0}};
    double pub_small, pub_big = 0, unread_ns, store_bpe, rss_bpe, reg_ns;
    uint64_t t0;
    size_t rss0, rss1, entries;
    struct bc_store *s;

    if (su_parse_opts(argc, argv, opts) != 0 || users == 0 || per == 0 ||
        channels == 0 || per > channels || (big && big < users))
        usage();

    rss0 = su_rss_bytes();
    s = bc_create();
    if (s == NULL)
        su_die("bc_create failed");
    t0 = su_clock_ns();
    register_users(s, 0, users, per);
    reg_ns = (double)(su_clock_ns() - t0) / (double)(users * per);
    rss1 = su_rss_bytes();
    entries = bc_entries(s);
    if (entries != users * per || bc_audit(s) != 0)
        su_die("store inconsistent after load");
    store_bpe = (double)bc_bytes(s) / (double)entries;
    rss_bpe = (double)(rss1 - rss0) / (double)entries;
    printf("memory         %" PRIu64 " users x %" PRIu64
           " channel(s) = %zu entries\n",
           users, per, entries);
    printf("  entries      %.2f bytes/entry (store accounting), %.2f "
           "bytes/entry (RSS growth); %.1f ns a registration\n",
           store_bpe, rss_bpe, reg_ns);

    unread_ns = time_unread(s, users);
    pub_small = time_publish(s, PUBLISHES);
    printf("speed          BC.UNREAD %.1f ns/call, BC.PUBLISH %.1f ns/call "
           "(%zu entries)\n",
           unread_ns, pub_small, entries);
    if (big > 0) {
        /* Channel 0 grows to `big` users: only the audience changes. */
        for (uint64_t i = users; i < big; i++)
            if (bc_read(s, su_splitmix(i), 0) != 0)
                su_die("bc_read failed");
        pub_big = time_publish(s, PUBLISHES);
        printf("               BC.PUBLISH %.1f ns/call with %zu entries "
               "(%.2fx)\n",
               pub_big, bc_entries(s), pub_big / pub_small);
        if (bc_audit(s) != 0)
            su_die("store inconsistent after the big load");
    }
    printf("store_bc users=%" PRIu64 " channels_per_user=%" PRIu64
           " channels=%" PRIu64
           " entries=%zu store_bpe=%.2f rss_bpe=%.2f register_ns=%.1f "
           "unread_ns=%.1f publish_ns=%.1f big_entries=%zu "
           "publish_big_ns=%.1f\n",
           users, per, channels, entries, store_bpe, rss_bpe, reg_ns, unread_ns,
           pub_small, big ? bc_entries(s) : (size_t)0, pub_big);
    bc_destroy(s);
    return 0;
}
