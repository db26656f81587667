/*
 * store_grp.c - memory per membership and speed of the GRP store, without
 * a server around it.
 *
 *   store_grp [-u USERS] [-g GROUPS_PER_USER] [-G GROUPS] [-p POSTS]
 *
 * Memory: GROUPS groups (default 10,000) each get POSTS posts (default
 * 100, i.e. a full window at the default cap of 99), then USERS random
 * uids (default 100,000) join GROUPS_PER_USER distinct groups each
 * (default 10): 1,000,000 memberships of ~100 members a group. Prints the
 * store's own accounting and the process RSS growth per membership, for
 * the memberships alone and with the groups (heads, windows) included.
 *
 * Speed, on that store, users and groups in random order so that most
 * lookups miss the cache as on a busy server, ns per call: GRP.POST,
 * GRP.UNREAD, GRP.SEEN with a ts inside the window, GRP.TOTAL (the user's
 * GROUPS_PER_USER groups, every one with unread).
 *
 * Ends with one machine-readable line starting with "store_grp".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_gettime clocks, sysconf */
#endif
#include "grp.h"
#include "store_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define CAP 99
#define CALLS 1000000
#define T0 UINT64_C(1700000000000) /* the first post's ts */

static void usage(void)
{
    fprintf(stderr, "usage: store_grp [-u USERS] [-g GROUPS_PER_USER] "
                    "[-G GROUPS] [-p POSTS]\n");
    exit(2);
}

static uint64_t gid_of(uint64_t g)
{
    return su_splitmix(g ^ 0x6a09e667f3bcc909ULL);
}

/* The k-th group of user i: distinct for k < per <= groups, as 7919 is a
 * prime that does not divide groups (main checks). */
static uint64_t group_of(uint64_t i, uint64_t k, uint64_t groups)
{
    return (su_splitmix(i) + k * 7919) % groups;
}

struct grp_bench {
    struct grp_store *s;
    uint64_t users, per, groups, posts;
};

/* ns per call of each operation over CALLS random (user, group) picks. */
static double time_unread(const struct grp_bench *b)
{
    uint64_t t0 = su_clock_ns(), sum = 0;

    for (uint64_t i = 0; i < CALLS; i++) {
        uint64_t u = su_splitmix(i) % b->users;

        sum += grp_unread(b->s, su_splitmix(u ^ 0xfeed),
                          gid_of(group_of(u, i % b->per, b->groups)));
    }
    if (sum == 0)
        su_die("no unread at all");
    return (double)(su_clock_ns() - t0) / CALLS;
}

static double time_total(const struct grp_bench *b)
{
    uint64_t t0 = su_clock_ns(), sum = 0;

    for (uint64_t i = 0; i < CALLS; i++)
        sum += grp_total(b->s, su_splitmix(su_splitmix(i) % b->users ^ 0xfeed),
                         CAP);
    if (sum == 0)
        su_die("no unread at all");
    return (double)(su_clock_ns() - t0) / CALLS;
}

/* SEEN at a ts in the middle of the window (monotonic: later calls on the
 * same membership mostly leave it, which is the common case too). */
static double time_seen(const struct grp_bench *b)
{
    uint64_t t0 = su_clock_ns(), unread;

    for (uint64_t i = 0; i < CALLS; i++) {
        uint64_t u = su_splitmix(i ^ 0x77) % b->users;

        if (grp_seen(b->s, su_splitmix(u ^ 0xfeed),
                     gid_of(group_of(u, i % b->per, b->groups)),
                     T0 + b->posts / 2, 100000, &unread) != GRP_OK)
            su_die("grp_seen failed");
    }
    return (double)(su_clock_ns() - t0) / CALLS;
}

static double time_post(const struct grp_bench *b)
{
    uint64_t t0 = su_clock_ns(), seq;

    for (uint64_t i = 0; i < CALLS; i++)
        if (grp_post(b->s, gid_of(su_splitmix(i) % b->groups),
                     T0 + b->posts + i, CAP + 1, &seq) != GRP_OK)
            su_die("grp_post failed");
    return (double)(su_clock_ns() - t0) / CALLS;
}

int main(int argc, char **argv)
{
    struct grp_bench b = {NULL, 100000, 10, 10000, CAP + 1};
    size_t rss0, rss1, rss2, gbytes, memb;
    double all_bpe, memb_bpe, rss_all, rss_memb, post_ns, unread_ns, seen_ns,
        total_ns;
    uint64_t seq, unread;
    const struct su_opt opts[] = {{"-u", &b.users, NULL},
                                  {"-g", &b.per, NULL},
                                  {"-G", &b.groups, NULL},
                                  {"-p", &b.posts, NULL},
                                  {0}};

    if (su_parse_opts(argc, argv, opts) != 0 || b.users == 0 || b.per == 0 ||
        b.groups < b.per || b.groups % 7919 == 0 || b.per > 100000)
        usage();

    rss0 = su_rss_bytes();
    b.s = grp_create();
    if (b.s == NULL)
        su_die("grp_create failed");
    for (uint64_t g = 0; g < b.groups; g++)
        for (uint64_t p = 0; p < b.posts; p++)
            if (grp_post(b.s, gid_of(g), T0 + p, CAP + 1, &seq) != GRP_OK)
                su_die("grp_post failed");
    gbytes = grp_bytes(b.s);
    rss1 = su_rss_bytes();
    for (uint64_t i = 0; i < b.users; i++)
        for (uint64_t k = 0; k < b.per; k++)
            if (grp_join(b.s, su_splitmix(i ^ 0xfeed),
                         gid_of(group_of(i, k, b.groups)), 100000,
                         &unread) != GRP_OK)
                su_die("grp_join failed");
    rss2 = su_rss_bytes();
    memb = grp_entries(b.s);
    if (memb != b.users * b.per || grp_audit(b.s) != 0)
        su_die("store inconsistent after load");
    all_bpe = (double)grp_bytes(b.s) / (double)memb;
    memb_bpe = (double)(grp_bytes(b.s) - gbytes) / (double)memb;
    rss_all = (double)(rss2 - rss0) / (double)memb;
    rss_memb = (double)(rss2 - rss1) / (double)memb;
    printf("memory         %" PRIu64 " users x %" PRIu64 " groups = %zu "
           "memberships; %" PRIu64 " groups x %" PRIu64 " posts\n",
           b.users, b.per, memb, b.groups, b.posts);
    printf("  all          %.2f bytes/membership (store accounting), %.2f "
           "(RSS growth)\n",
           all_bpe, rss_all);
    printf("  memberships  %.2f bytes/membership (store accounting), %.2f "
           "(RSS growth), groups excluded\n",
           memb_bpe, rss_memb);

    /* Everyone has unread for TOTAL: one more post in every group. */
    for (uint64_t g = 0; g < b.groups; g++)
        if (grp_post(b.s, gid_of(g), T0 + b.posts, CAP + 1, &seq) != GRP_OK)
            su_die("grp_post failed");
    unread_ns = time_unread(&b);
    total_ns = time_total(&b);
    seen_ns = time_seen(&b);
    post_ns = time_post(&b);
    printf("speed          GRP.POST %.1f ns, GRP.UNREAD %.1f ns, GRP.SEEN ts "
           "%.1f ns, GRP.TOTAL (%" PRIu64 " groups) %.1f ns\n",
           post_ns, unread_ns, seen_ns, b.per, total_ns);
    if (grp_audit(b.s) != 0)
        su_die("store inconsistent after the speed runs");
    printf("store_grp users=%" PRIu64 " groups_per_user=%" PRIu64
           " groups=%" PRIu64 " posts=%" PRIu64 " memberships=%zu "
           "store_bpe=%.2f rss_bpe=%.2f memb_store_bpe=%.2f "
           "memb_rss_bpe=%.2f post_ns=%.1f unread_ns=%.1f seen_ns=%.1f "
           "total_ns=%.1f\n",
           b.users, b.per, b.groups, b.posts, memb, all_bpe, rss_all, memb_bpe,
           rss_memb, post_ns, unread_ns, seen_ns, total_ns);
    grp_destroy(b.s);
    return 0;
}
