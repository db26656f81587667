/*
 * store_rcpt.c - bytes per message and time per operation of the RCPT
 * store at steady state, without a server around it.
 *
 *   store_rcpt [-m MEMBERS] [-g GROUPS] [-n MESSAGES] [-w WINDOW]
 *
 * The scenario (defaults: 200 members, 20 groups, 10,000 messages each,
 * window 200): each group has MEMBERS members; messages are sent one after
 * the other by a random member, msgids increasing with gaps. Reading lags
 * sending by WINDOW messages: when message i is sent, every member reads
 * message i - WINDOW, so everything older than the window is read by
 * everyone (collapsed). Inside the window, at the end, the message of age
 * a (0 = newest) has been read by the first a/WINDOW of the members.
 * Membership changes as it does in real groups: every 500 messages one
 * member quits and a new one joins (so quit snapshots change and member
 * counts grow). Nothing expires.
 *
 * Prints the store's own accounting per message (every record, bitmap,
 * snapshot, index and map; the member maps are included, amortized over
 * the group's messages), the process RSS growth per message, the time per
 * SEND and READ during the load, then COUNT, LIST (a page of 20 unread),
 * READ of window messages and READUPTO at steady state, and one
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
    fprintf(stderr, "usage: store_rcpt [-m MEMBERS] [-g GROUPS] "
                    "[-n MESSAGES] [-w WINDOW]\n");
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
    uint64_t members, groups, msgs, window;
};

struct timing {
    uint64_t send_ns, sends, read_ns, reads;
};

/* Loads one group as the scenario says; adds SEND and READ times. */
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

int main(int argc, char **argv)
{
    struct params p = {200, 20, 10000, 200};
    struct timing t = {0, 0, 0, 0};
    uint64_t sink = 0, t0, nops;
    size_t rss0, rss1, bytes, msgs;
    struct rcpt_store *s;
    double count_ns, list_ns, read_ns, upto_ns;
    const struct su_opt opts[] = {{"-m", &p.members, NULL},
                                  {"-g", &p.groups, NULL},
                                  {"-n", &p.msgs, NULL},
                                  {"-w", &p.window, NULL},
                                  {0}};

    if (su_parse_opts(argc, argv, opts) != 0 || p.members < 2 ||
        p.groups == 0 || p.msgs == 0 || p.window == 0)
        usage();

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

    /* READUPTO the newest message: walks the window's open messages. */
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
