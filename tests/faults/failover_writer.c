/*
 * failover_writer.c - the libunread writer of the failover suite
 * (tests/faults/failover.py): writes through a handle given sentinel
 * addresses and a master name, each write followed by WAIT 1 100 on the
 * same connection, until SIGTERM, and prints what happened to every
 * write, one line each:
 *
 *   A <kind> <uid> <seq> <start> <end>  written, acknowledged by a replica
 *   W <kind> <uid> <seq> <start> <end>  written, WAIT answered 0
 *   F <kind> <uid> <seq> <start> <end>  failed: the outcome is unknown
 *
 * kind C: CNT.INCR uid 0 1; kind V: CONV.SEQ uid 1 seq. start and end
 * (the write sent, WAIT answered) are CLOCK_MONOTONIC in milliseconds
 * (Python's time.monotonic() * 1000), so the suite can time the kill
 * against the first write sent after it.
 *
 *   failover-writer SENTINELS MASTER UID_BASE NUIDS [async]
 *   failover-writer --cluster SEEDS UID_BASE NUIDS [async]
 *
 * --cluster: a cluster-mode deployment (tests/faults/cluster_failover.py),
 * the handle in cluster mode over the seeds instead of sentinels.
 * async: the same through the asynchronous handle (unread_async_*), each
 * call driven to completion with unread_async_poll.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../async_done.h"
#include "unread.h"

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

/* ---- the asynchronous handle, one call at a time ----------------------- */

/* What a call writes when it completes: static, since a call given up at
 * SIGTERM completes later, at unread_async_close. */
static struct done a_done;
static struct unread_reply *a_reply;
static uint32_t a_value;
static uint64_t a_total;

static int async_write(struct unread_async *a, char kind, uint64_t uid,
                       uint64_t seq, uint64_t *acked)
{
    struct unread_arg args[3];
    int rc;

    a_done.fired = false;
    a_reply = NULL;

    if (kind == 'C') {
        rc = finish(a,
                    unread_async_cnt_incr(a, uid, 0, 1, &a_value, &a_total,
                                          on_done, &a_done),
                    &a_done, &stop);
    } else {
        args[0] = unread_arg_int(uid);
        args[1] = unread_arg_int(1);
        args[2] = unread_arg_int(seq);
        rc = finish(a,
                    unread_async_command(a, "CONV.SEQ", 0, 3, args, &a_reply,
                                         on_done, &a_done),
                    &a_done, &stop);
        unread_reply_free(a_reply);
        a_reply = NULL;
    }
    if (rc != 0)
        return rc;
    a_done.fired = false;
    args[0] = unread_arg_int(1);
    args[1] = unread_arg_int(100);
    rc = finish(
        a,
        unread_async_command(a, "WAIT", 0, 2, args, &a_reply, on_done, &a_done),
        &a_done, &stop);
    *acked = rc == 0 && a_reply != NULL && a_reply->kind == UNREAD_REPLY_INT
                 ? a_reply->integer
                 : 0;
    unread_reply_free(a_reply);
    return 0;
}

static long long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
    struct unread_opts *o;
    struct unread *c = NULL;
    struct unread_async *as = NULL;
    bool async, cluster;
    char err[512];
    unsigned long long base, nuids, seq = 0;

    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: failover-writer SENTINELS MASTER UID_BASE "
                        "NUIDS [async]\n"
                        "       failover-writer --cluster SEEDS UID_BASE "
                        "NUIDS [async]\n");
        return 2;
    }
    cluster = strcmp(argv[1], "--cluster") == 0;
    async = argc == 6 && strcmp(argv[5], "async") == 0;
    base = strtoull(argv[3], NULL, 10);
    nuids = strtoull(argv[4], NULL, 10);
    if (nuids == 0)
        return 2;
    signal(SIGTERM, on_term);
    signal(SIGPIPE, SIG_IGN);
    o = unread_opts_new();
    if (o == NULL ||
        (cluster ? unread_opts_set_cluster(o, true)
                 : unread_opts_set_sentinels(o, argv[1], false)) != 0 ||
        unread_opts_set_timeouts(o, 500, 1000, 1000) != 0 ||
        unread_opts_set_reconnect(o, 50, 500) != 0)
        return 2;
    while (!stop) {
        struct unread_arg a[3];
        struct unread_reply *r = NULL;
        unsigned long long uid;
        char kind;
        long long start;
        int rc;

        if (async && as == NULL) {
            as = unread_async_connect(argv[2], o, err, sizeof(err));
            if (as == NULL)
                return 2; /* a bad list: connects are found out later */
            unread_async_set_timeout(as, 1000);
        }
        if (!async && c == NULL) {
            c = unread_connect_cluster(argv[2], o, err, sizeof(err));
            if (c == NULL) {
                usleep(20000);
                continue;
            }
        }
        seq++;
        start = now_ms();
        uid = base + seq % nuids;
        kind = (seq & 1) ? 'V' : 'C';
        if (async) {
            uint64_t acked = 0;

            rc = async_write(as, kind, uid, seq, &acked);
            printf("%c %c %llu %llu %lld %lld\n",
                   rc != 0      ? 'F'
                   : acked >= 1 ? 'A'
                                : 'W',
                   kind, uid, seq, start, now_ms());
            if (rc < 0)
                usleep(20000);
            continue;
        }
        if (kind == 'C') {
            uint32_t value;
            uint64_t total;

            rc = unread_cnt_incr(c, uid, 0, 1, &value, &total);
        } else {
            a[0] = unread_arg_int(uid);
            a[1] = unread_arg_int(1);
            a[2] = unread_arg_int(seq);
            rc = unread_command(c, "CONV.SEQ", 0, 3, a, &r);
            unread_reply_free(r);
            r = NULL;
        }
        if (rc == 0) {
            a[0] = unread_arg_int(1);
            a[1] = unread_arg_int(100);
            rc = unread_command(c, "WAIT", 0, 2, a, &r);
            printf("%c %c %llu %llu %lld %lld\n",
                   rc == 0 && r->kind == UNREAD_REPLY_INT && r->integer >= 1
                       ? 'A'
                       : 'W',
                   kind, uid, seq, start, now_ms());
            unread_reply_free(r);
        } else {
            printf("F %c %llu %llu %lld %lld\n", kind, uid, seq, start,
                   now_ms());
            if (rc < 0)
                usleep(20000); /* not reached: the handle reconnects */
        }
    }
    unread_close(c);
    unread_async_close(as);
    unread_opts_free(o);
    fflush(stdout);
    return 0;
}
