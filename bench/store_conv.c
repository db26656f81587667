/*
 * store_conv.c - memory per (user, conversation) and time per operation of
 * the CONV store, without a server around it.
 *
 *   store_conv [-n ENTRIES] [-c CONVS_PER_USER]
 *
 * Loads ENTRIES (default 1,000,000) conversations, CONVS_PER_USER (default:
 * both 1 and 10, each in a child process of its own so that RSS figures do
 * not mix) per user, uids and cids random 64-bit, each with a few unread
 * messages. Prints the store's own accounting and the process RSS growth
 * per entry, the worst single insert in CPU time (a table resize stall
 * would show there; on a shared machine the wall-clock worst is mostly
 * preemption), then ns/op, also in CPU time, of CONV.SEQ (a new message),
 * CONV.READ (read all) and CONV.GET on random existing conversations, and one
 * machine-readable line per distribution starting with "store_conv".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_gettime clocks, sysconf */
#endif
#include "conv.h"
#include "store_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* Entry e: user e / per, conversation e. */
static uint64_t uid_of(uint64_t e, unsigned per)
{
    return su_splitmix(e / per);
}

static uint64_t cid_of(uint64_t e)
{
    return su_splitmix(e ^ 0x5555555555555555ULL);
}

enum bench_op { B_SEQ, B_READ, B_GET };

/* ns per operation over n random existing entries; B_SEQ adds a message
 * (seqs from seq0 up, above every loaded one), B_READ reads all. */
static double time_op(struct conv_store *s, uint64_t n, unsigned per,
                      enum bench_op op, uint64_t seq0, uint64_t salt)
{
    uint64_t t0 = su_cpu_ns(), sink = 0, total;
    uint32_t unread = 0;

    for (uint64_t k = 0; k < n; k++) {
        uint64_t e = su_splitmix(k ^ salt) % n, uid = uid_of(e, per);

        if (op == B_GET)
            unread = conv_get(s, uid, cid_of(e));
        else
            conv_update(s, op == B_SEQ ? CONV_OP_SEQ : CONV_OP_READ_ALL, uid,
                        cid_of(e), seq0 + k, &unread, &total);
        sink += unread;
    }
    if (sink == UINT64_MAX)
        printf("(sink)\n");
    return (double)(su_cpu_ns() - t0) / (double)n;
}

static int run(uint64_t n, unsigned per)
{
    struct su_lat load = {0};
    uint64_t t0, t1, total;
    size_t rss0, rss1, bytes;
    double seq_ns, read_ns, get_ns;
    struct conv_store *s;
    uint32_t unread;

    rss0 = su_rss_bytes();
    s = conv_create();
    if (s == NULL)
        return 1;
    t0 = su_clock_ns();
    for (uint64_t e = 0; e < n; e++) {
        uint64_t c0 = su_cpu_ns();

        if (conv_update(s, CONV_OP_SEQ, uid_of(e, per), cid_of(e), 1 + e % 20,
                        &unread, &total) != 0) {
            fprintf(stderr, "out of memory at entry %" PRIu64 "\n", e);
            return 1;
        }
        su_lat_add(&load, su_cpu_ns() - c0, e);
    }
    t1 = su_clock_ns();
    rss1 = su_rss_bytes();
    bytes = conv_bytes(s);
    if (conv_entries(s) != n || conv_audit(s) != 0) {
        fprintf(stderr, "store inconsistent after load\n");
        return 1;
    }
    /* Seqs above every loaded one: each SEQ adds a message. */
    seq_ns = time_op(s, n, per, B_SEQ, 1000, 1);
    read_ns = time_op(s, n, per, B_READ, 0, 2);
    get_ns = time_op(s, n, per, B_GET, 0, 3);
    if (conv_audit(s) != 0) {
        fprintf(stderr, "store inconsistent after the timed runs\n");
        return 1;
    }
    printf("entries          %" PRIu64 " (%" PRIu64
           " users x %u conversations, random ids)\n",
           n, n / per, per);
    printf("store accounting %zu bytes, %.2f bytes/entry\n", bytes,
           (double)bytes / (double)n);
    printf("process RSS      +%zu bytes, %.2f bytes/entry\n", rss1 - rss0,
           (double)(rss1 - rss0) / (double)n);
    printf("load             %.3f s, %.0f ns/insert (with the timing calls); "
           "worst %.1f us of CPU, %" PRIu64 " over 100 us\n",
           (double)(t1 - t0) / 1e9, (double)(t1 - t0) / (double)n,
           (double)load.worst / 1e3, load.over100us);
    printf("ns/op            SEQ %.0f, READ %.0f, GET %.0f\n", seq_ns, read_ns,
           get_ns);
    printf(
        "store_conv per=%u entries=%" PRIu64 " store_bytes=%zu "
        "store_bpe=%.2f rss_bytes=%zu rss_bpe=%.2f worst_insert_cpu_ns=%" PRIu64
        " seq_ns=%.0f read_ns=%.0f get_ns=%.0f\n\n",
        per, n, bytes, (double)bytes / (double)n, rss1 - rss0,
        (double)(rss1 - rss0) / (double)n, load.worst, seq_ns, read_ns, get_ns);
    conv_destroy(s);
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: store_conv [-n ENTRIES] [-c CONVS_PER_USER]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    static const unsigned dists[] = {1, 10};
    uint64_t n = 1000000, per = 0;
    const struct su_opt opts[] = {{"-n", &n, NULL}, {"-c", &per, NULL}, {0}};
    int status = 0;

    if (su_parse_opts(argc, argv, opts) != 0 || n == 0 || n < per ||
        per > UINT32_MAX)
        usage();
    if (per != 0)
        return run(n, (unsigned)per);
    for (size_t d = 0; d < sizeof(dists) / sizeof(dists[0]); d++) {
        pid_t pid;
        int ws;

        fflush(stdout);
        pid = fork();
        if (pid == 0) {
            int rc = run(n, dists[d]);

            fflush(stdout);
            _exit(rc);
        }
        if (pid < 0 || waitpid(pid, &ws, 0) != pid || !WIFEXITED(ws) ||
            WEXITSTATUS(ws) != 0)
            status = 1;
    }
    return status;
}
