/*
 * store_rcpt.c - bytes per message and time per operation of the RCPT
 * store, without a server around it.
 *
 *   store_rcpt [-m MEMBERS] [-g GROUPS] [-n MESSAGES] [-w WINDOW]
 *   store_rcpt --everyone | --lag | --half [-g GROUPS] [-n MESSAGES]
 *              [-ops OPERATIONS]
 *
 * Default scenario (200 members, 20 groups, 10,000 messages each, window
 * 200): each group has MEMBERS members; messages are sent one after the
 * other by a random member, msgids increasing with gaps. Reading lags
 * sending by WINDOW messages: when message i is sent, every member reads
 * message i - WINDOW, so everything older than the window is read by
 * everyone. Inside the window, at the end, the message of age a (0 =
 * newest) has been read by the first a/WINDOW of the members. Membership
 * changes as it does in real groups: every 500 messages one member quits
 * and a new one joins. Nothing expires.
 *
 * The three read shapes of `make bench-memory` (issue 21's goals; the
 * same loads as bench/bench_rcpt.c's rcpt-count, rcpt-lag and rcpt-half
 * rows, defaults 100 groups of 200 members x 1,000 messages, msgid i + 1
 * sent by member 7(i + 1) mod 200):
 *   --everyone  every member reads by RCPT.READUPTO, lagging the sends:
 *               the message of age a has been read by the mapids below
 *               8 * floor(a / 2), by everyone from age 50 on;
 *   --lag       members 0..189 read with RCPT.READUPTO every 20 messages
 *               (member j after message i when (i + j) mod 20 = 19, up to
 *               it), members 190..199 never read;
 *   --half      each message is read by a random half of the members with
 *               RCPT.READ, in batches: after every 22nd message each member
 *               reads its share of the last 22.
 * After the load, the operations of `make bench`'s RCPT rows on random
 * messages of random groups: READ by a random member (rcpt-read), COUNT
 * (rcpt-count), and rcpt-mix (10% SEND of a new random msgid, 60% READ,
 * 30% COUNT), then READUPTO of the newest message by a random member.
 *
 * Prints the store's own accounting per message (every record, bitmap,
 * index and map; members amortized over the group's messages), the
 * process RSS growth per message, the time per operation, and one
 * machine-readable line starting with "store_rcpt".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_gettime clocks, sysconf */
#endif
#include "rcpt.h"
#include "store_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define T0 1700000000000ULL

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
    uint64_t x = rng_state;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545f4914f6cdd1dULL;
}

static void usage(void)
{
    fprintf(stderr, "usage: store_rcpt [-m MEMBERS] [-g GROUPS] [-n MESSAGES] "
                    "[-w WINDOW]\n"
                    "       store_rcpt --everyone | --lag | --half [-g GROUPS] "
                    "[-n MESSAGES] [-ops OPERATIONS]\n");
    exit(2);
}

/* uid of member k of group g (members are numbered as they join). */
static uint64_t uid_of(uint64_t g, uint64_t k)
{
    return g * 1000000007ULL + k + 1;
}

static uint64_t msgid_of(uint64_t i)
{
    return 1000000 + i * 7;
}

static void nop_uid(uint64_t uid, void *ctx)
{
    *(uint64_t *)ctx += uid;
}

struct params {
    uint64_t members, groups, msgs, window, ops;
};

struct timing {
    uint64_t send_ns, sends, read_ns, reads;
};

/* Loads one group as the default scenario says; adds SEND and READ
 * times. */
static int load_group(struct rcpt_store *s, const struct params *p, uint64_t g,
                      struct timing *t)
{
    uint64_t joined = 0, first = 0; /* members first..joined-1 are in */
    uint32_t m, n;

    for (; joined < p->members; joined++)
        if (rcpt_join(s, g, uid_of(g, joined), UINT32_MAX, &m) != RCPT_OK)
            return -1;
    for (uint64_t i = 0; i < p->msgs; i++) {
        uint64_t sender = uid_of(g, first + rng() % p->members), t0, t1;

        if (i % 500 == 499) {
            rcpt_quit(s, g, uid_of(g, first++));
            if (rcpt_join(s, g, uid_of(g, joined++), UINT32_MAX, &m) != 0)
                return -1;
        }
        t0 = su_clock_ns();
        if (rcpt_send(s, g, msgid_of(i), sender, T0 + i, 0, &n) != RCPT_OK)
            return -1;
        t1 = su_clock_ns();
        t->send_ns += t1 - t0;
        t->sends++;
        if (i >= p->window) {
            t0 = su_clock_ns();
            for (uint64_t k = 0; k < joined; k++)
                rcpt_read(s, g, uid_of(g, k), msgid_of(i - p->window), 0);
            t1 = su_clock_ns();
            t->read_ns += t1 - t0;
            t->reads += joined;
        }
    }
    /* The window: the message of age a read by the first a/window. */
    for (uint64_t a = 0; a < p->window && a < p->msgs; a++) {
        uint64_t i = p->msgs - 1 - a, readers = joined * a / p->window;

        for (uint64_t k = 0; k < readers; k++)
            rcpt_read(s, g, uid_of(g, k), msgid_of(i), 0);
    }
    return 0;
}

static int run_default(struct params p)
{
    struct timing t = {0, 0, 0, 0};
    uint64_t sink = 0, t0, nops;
    size_t rss0, rss1, bytes, msgs;
    struct rcpt_store *s;
    double count_ns, list_ns, read_ns, upto_ns;

    rss0 = su_rss_bytes();
    s = rcpt_create();
    if (s == NULL)
        return 1;
    for (uint64_t g = 1; g <= p.groups; g++) {
        if (load_group(s, &p, g, &t) != 0) {
            fprintf(stderr, "load failed in group %" PRIu64 "\n", g);
            return 1;
        }
    }
    rss1 = su_rss_bytes();
    bytes = rcpt_bytes(s);
    msgs = rcpt_entries(s);
    if (msgs != p.groups * p.msgs || rcpt_audit(s) != 0) {
        fprintf(stderr, "store inconsistent after load\n");
        return 1;
    }

    /* Steady state: COUNT of any message. */
    nops = 1000000;
    t0 = su_clock_ns();
    for (uint64_t i = 0; i < nops; i++) {
        uint32_t r, u;

        rcpt_count(s, 1 + rng() % p.groups, msgid_of(rng() % p.msgs), 0, &r,
                   &u);
        sink += r + u;
    }
    count_ns = (double)(su_clock_ns() - t0) / (double)nops;

    /* LIST: a page of 20 unread readers of a window message. */
    nops = 100000;
    t0 = su_clock_ns();
    for (uint64_t i = 0; i < nops; i++) {
        uint32_t n;

        rcpt_list(s, 1 + rng() % p.groups,
                  msgid_of(p.msgs - 1 - rng() % p.window), 0, false, 0, 20,
                  nop_uid, &sink, &n);
    }
    list_ns = (double)(su_clock_ns() - t0) / (double)nops;

    /* READ of a window message by any member (some are new marks). */
    nops = 1000000;
    t0 = su_clock_ns();
    for (uint64_t i = 0; i < nops; i++)
        sink += rcpt_read(s, 1 + rng() % p.groups, uid_of(1, rng() % p.members),
                          msgid_of(p.msgs - 1 - rng() % p.window), 0);
    read_ns = (double)(su_clock_ns() - t0) / (double)nops;

    /* READUPTO the newest message. */
    nops = 2000;
    t0 = su_clock_ns();
    for (uint64_t i = 0; i < nops; i++) {
        uint64_t g = 1 + rng() % p.groups;

        sink +=
            rcpt_read_upto(s, g, uid_of(g, rng() % p.members), UINT64_MAX, 0);
    }
    upto_ns = (double)(su_clock_ns() - t0) / (double)nops;

    printf("scenario         %" PRIu64 " groups x %" PRIu64
           " messages, %" PRIu64 " members (+1 quit and 1 join per 500 "
           "messages), window %" PRIu64 "\n",
           p.groups, p.msgs, p.members, p.window);
    printf("store accounting %zu bytes, %.2f bytes/message\n", bytes,
           (double)bytes / (double)msgs);
    printf("process RSS      +%zu bytes, %.2f bytes/message\n", rss1 - rss0,
           (double)(rss1 - rss0) / (double)msgs);
    printf("send             %.0f ns/op\n",
           (double)t.send_ns / (double)t.sends);
    printf("read (load)      %.0f ns/op\n",
           (double)t.read_ns / (double)t.reads);
    printf("count            %.0f ns/op\n", count_ns);
    printf("list (20 unread) %.0f ns/op\n", list_ns);
    printf("read (window)    %.0f ns/op\n", read_ns);
    printf("readupto         %.0f ns/op\n", upto_ns);
    printf("store_rcpt members=%" PRIu64 " groups=%" PRIu64
           " messages=%zu window=%" PRIu64 " store_bytes=%zu store_bpm=%.2f "
           "rss_bpm=%.2f send_ns=%.0f read_ns=%.0f count_ns=%.0f "
           "list_ns=%.0f readupto_ns=%.0f sink=%" PRIu64 "\n",
           p.members, p.groups, msgs, p.window, bytes,
           (double)bytes / (double)msgs, (double)(rss1 - rss0) / (double)msgs,
           (double)t.send_ns / (double)t.sends, read_ns, count_ns, list_ns,
           upto_ns, sink % 10);
    rcpt_destroy(s);
    return 0;
}

/* ---- The shapes of `make bench-memory` --------------------------------- */

#define SHAPE_MEMBERS 200
#define EVERYONE_WINDOW                                                        \
    50                  /* --everyone: younger messages are not read by        \
                           everyone */
#define LAG_READERS 190 /* --lag: members 190..199 never read */
#define LAG_EVERY 20    /* --lag: messages between a reader's reads */
#define HALF_BATCH 22   /* --half: messages per round of reads */

enum shape { EVERYONE, LAG, HALF };

static const char *const shape_name[] = {"everyone", "lag", "half"};

static uint64_t shape_uid(uint64_t g, uint64_t j)
{
    return g * SHAPE_MEMBERS + j + 1;
}

static uint64_t shape_sender(uint64_t msgid)
{
    return msgid * 7 % SHAPE_MEMBERS;
}

/* --everyone: members who have read the message of age a (a multiple of
 * 8 of them, as bench_rcpt.c's readers()). */
static uint64_t everyone_readers(uint64_t age)
{
    if (age >= EVERYONE_WINDOW)
        return SHAPE_MEMBERS;
    return 8 * (age * (SHAPE_MEMBERS / 8) / EVERYONE_WINDOW);
}

/* --half: whether member j reads message i of group g (a random half). */
static bool half_reads(uint64_t g, uint64_t i, uint64_t j)
{
    return su_splitmix((g << 32 | i) * 4 + j / 64) >> (j % 64) & 1;
}

static void fail_load(const char *what, uint64_t g)
{
    fprintf(stderr, "load failed in group %" PRIu64 ": %s\n", g, what);
    exit(1);
}

static void shape_load(struct rcpt_store *s, enum shape sh, uint64_t g,
                       uint64_t msgs)
{
    uint32_t m, n;

    for (uint64_t j = 0; j < SHAPE_MEMBERS; j++)
        if (rcpt_join(s, g, shape_uid(g, j), UINT32_MAX, &m) != RCPT_OK)
            fail_load("join", g);
    for (uint64_t i = 0; i < msgs; i++) {
        if (rcpt_send(s, g, i + 1, shape_uid(g, shape_sender(i + 1)), T0 + i, 0,
                      &n) != RCPT_OK)
            fail_load("send", g);
        if (sh == LAG) {
            for (uint64_t j = 0; j < LAG_READERS; j++)
                if ((i + j) % LAG_EVERY == LAG_EVERY - 1)
                    rcpt_read_upto(s, g, shape_uid(g, j), i + 1, 0);
        } else if (sh == HALF &&
                   (i % HALF_BATCH == HALF_BATCH - 1 || i == msgs - 1)) {
            for (uint64_t j = 0; j < SHAPE_MEMBERS; j++)
                for (uint64_t k = i - i % HALF_BATCH; k <= i; k++)
                    if (half_reads(g, k, j))
                        rcpt_read(s, g, shape_uid(g, j), k + 1, 0);
        }
    }
    if (sh != EVERYONE)
        return;
    for (uint64_t j = 0; j < SHAPE_MEMBERS; j++) {
        uint64_t age = 0;

        while (everyone_readers(age) <= j)
            age++;
        if (age < msgs)
            rcpt_read_upto(s, g, shape_uid(g, j), msgs - age, 0);
    }
}

static int run_shape(enum shape sh, struct params p)
{
    uint64_t sink = 0, t0, reads = 0;
    size_t rss0, rss1, bytes, msgs;
    struct rcpt_store *s;
    double read_ns, count_ns, mix_ns, upto_ns;

    rss0 = su_rss_bytes();
    s = rcpt_create();
    if (s == NULL)
        return 1;
    for (uint64_t g = 0; g < p.groups; g++)
        shape_load(s, sh, g, p.msgs);
    rss1 = su_rss_bytes();
    bytes = rcpt_bytes(s);
    msgs = rcpt_entries(s);
    if (msgs != p.groups * p.msgs || rcpt_audit(s) != 0) {
        fprintf(stderr, "store inconsistent after load\n");
        return 1;
    }
    for (uint64_t g = 0; g < p.groups; g++)
        for (uint64_t i = 0; i < p.msgs; i++) {
            uint32_t r, u;

            if (rcpt_count(s, g, i + 1, 0, &r, &u) == RCPT_OK)
                reads += r;
        }

    /* rcpt-read: a random member reads a random message. */
    t0 = su_clock_ns();
    for (uint64_t i = 0; i < p.ops; i++) {
        uint64_t g = rng() % p.groups;

        sink += rcpt_read(s, g, shape_uid(g, rng() % SHAPE_MEMBERS),
                          rng() % p.msgs + 1, 0);
    }
    read_ns = (double)(su_clock_ns() - t0) / (double)p.ops;

    /* rcpt-count: a random message. */
    t0 = su_clock_ns();
    for (uint64_t i = 0; i < p.ops; i++) {
        uint32_t r = 0, u = 0;

        rcpt_count(s, rng() % p.groups, rng() % p.msgs + 1, 0, &r, &u);
        sink += r + u;
    }
    count_ns = (double)(su_clock_ns() - t0) / (double)p.ops;

    /* rcpt-mix: 10% a new message (random msgid above the preload), 60% a
     * read, 30% a count. */
    t0 = su_clock_ns();
    for (uint64_t i = 0; i < p.ops; i++) {
        uint64_t g = rng() % p.groups, dice = rng() % 100, k = rng();
        uint32_t r = 0, u = 0;

        if (dice < 10) {
            uint64_t msgid = p.msgs + 1 + k % (1u << 31);

            rcpt_send(s, g, msgid, shape_uid(g, shape_sender(msgid)), T0, 0,
                      &r);
        } else if (dice < 70) {
            r = rcpt_read(s, g, shape_uid(g, k % SHAPE_MEMBERS),
                          (k >> 32) % p.msgs + 1, 0);
        } else {
            rcpt_count(s, g, k % p.msgs + 1, 0, &r, &u);
        }
        sink += r + u;
    }
    mix_ns = (double)(su_clock_ns() - t0) / (double)p.ops;

    /* READUPTO of the newest message by a random member. */
    t0 = su_clock_ns();
    for (uint64_t i = 0; i < p.ops / 100; i++) {
        uint64_t g = rng() % p.groups;

        sink += rcpt_read_upto(s, g, shape_uid(g, rng() % SHAPE_MEMBERS),
                               UINT64_MAX, 0);
    }
    upto_ns = (double)(su_clock_ns() - t0) / (double)(p.ops / 100);
    if (rcpt_audit(s) != 0) {
        fprintf(stderr, "store inconsistent after the operations\n");
        return 1;
    }

    printf("shape            %s: %" PRIu64 " groups x %" PRIu64
           " messages, %d members; %.1f reads per message\n",
           shape_name[sh], p.groups, p.msgs, SHAPE_MEMBERS,
           (double)reads / (double)msgs);
    printf("store accounting %zu bytes, %.2f bytes/message\n", bytes,
           (double)bytes / (double)msgs);
    printf("process RSS      +%zu bytes, %.2f bytes/message\n", rss1 - rss0,
           (double)(rss1 - rss0) / (double)msgs);
    printf("read             %.0f ns/op (rcpt-read)\n", read_ns);
    printf("count            %.0f ns/op (rcpt-count)\n", count_ns);
    printf("mix              %.0f ns/op (rcpt-mix)\n", mix_ns);
    printf("readupto         %.0f ns/op\n", upto_ns);
    printf("store_rcpt shape=%s groups=%" PRIu64 " messages=%zu "
           "store_bytes=%zu store_bpm=%.2f rss_bpm=%.2f read_ns=%.0f "
           "count_ns=%.0f mix_ns=%.0f readupto_ns=%.0f sink=%" PRIu64 "\n",
           shape_name[sh], p.groups, msgs, bytes, (double)bytes / (double)msgs,
           (double)(rss1 - rss0) / (double)msgs, read_ns, count_ns, mix_ns,
           upto_ns, sink % 10);
    rcpt_destroy(s);
    return 0;
}

int main(int argc, char **argv)
{
    struct params p = {200, 20, 10000, 200, 1000000};
    int everyone = 0, lag = 0, half = 0;
    const struct su_opt opts[] = {{"-m", &p.members, NULL},
                                  {"-g", &p.groups, NULL},
                                  {"-n", &p.msgs, NULL},
                                  {"-w", &p.window, NULL},
                                  {"-ops", &p.ops, NULL},
                                  {"--everyone", NULL, &everyone},
                                  {"--lag", NULL, &lag},
                                  {"--half", NULL, &half},
                                  {0}};
    bool shaped;

    for (int i = 1; i < argc; i++)
        if (argv[i][0] == '-' && argv[i][1] == '-') {
            /* the shapes' own defaults, before any -g or -n */
            p.groups = 100;
            p.msgs = 1000;
        }
    if (su_parse_opts(argc, argv, opts) != 0 || p.members < 2 ||
        p.groups == 0 || p.msgs == 0 || p.window == 0 || p.ops < 100 ||
        everyone + lag + half > 1)
        usage();
    shaped = everyone + lag + half == 1;
    if (!shaped)
        return run_default(p);
    return run_shape(everyone ? EVERYONE : lag ? LAG : HALF, p);
}
