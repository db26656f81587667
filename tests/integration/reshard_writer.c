/*
 * reshard_writer.c - the libunread writer of the resharding tests
 * (tests/integration/test_reshard.py, tests/faults/_reshard_full.py):
 * writes through a cluster-mode handle while slots move, keeps a model
 * of what each write was answered, reads back its own users to check
 * that reads stay exact, and prints the model at SIGTERM.
 *
 *   reshard-writer MODE SEEDS UID_BASE NUIDS [PERIOD_MS [wait]]
 *
 * MODE (how the writes are sent):
 *   sync    one call at a time on the synchronous handle
 *   async   one call at a time on the asynchronous handle
 *   pipe    pipelines of 8 CNT.INCRs of 8 users (any slots)
 *   batch   batches of one user's CNT.INCR and CONV.SEQ (one slot)
 *   global  GRP.POST of groups UID_BASE..UID_BASE+NUIDS-1, one at a time
 *
 * The users are UID_BASE..UID_BASE+NUIDS-1, written round robin, this
 * writer alone writing them:
 *   C  CNT.INCR uid 2 1      (counter type 2 starts at 0)
 *   V  CONV.SEQ uid 50 seq   (seq 1, 2, ... per user)
 *   B  BC.READ uid 60 upto   (upto 1, 2, ... per user, at most BC_MAX)
 *   R  CNT.GET uid 2         (a read: must be the acknowledged count, or
 *                             above it by at most the unknown ones)
 * A write answered is acknowledged; one whose outcome the client could
 * not learn (a timeout, a closed connection) is unknown: it may have
 * been applied once or not at all. Any other error is an error. With
 * wait (sync, async and global modes; the kill variants of the full run),
 * each write is followed by WAIT 1 100 on the same node and is
 * acknowledged only when a replica has it; else its outcome is unknown
 * (a failover may lose it).
 *
 * Printed at SIGTERM:
 *   U uid c_ack c_unk v_ack v_try b_ack b_try   (per user; global mode:
 *                                                c_* are GRP.POSTs)
 *   T ms ops        a sample every PERIOD_MS (default 100): monotonic
 *                   ms and writes acknowledged so far
 *   E n text        errors other than unknown outcomes, the first's text
 *   X n text        reads that were not exact, the first's text
 *   N n             unknown outcomes
 *   F n             writes and reads not sent (the node could not be
 *                   reached: a killed node; not applied)
 *   END
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../async_done.h"
#include "unread.h"

#define BC_MAX 200 /* the rig publishes this many on channel 60 */
#define PIPE_N 8
#define MAX_SAMPLES 100000

struct user {
    uint64_t c_ack, c_unk, v_ack, v_try, b_ack, b_try;
};

static volatile sig_atomic_t stop;
static struct user *users;
static uint64_t base, nusers, acked, unknown, refused, nerr, nbad;
static char first_err[256], first_bad[256];
static struct unread *c;
static struct unread_async *a;
static bool wait_replica;

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

static long long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A client-side failure whose request may or may not have run. */
static bool outcome_unknown(int rc)
{
    return rc == UNREAD_ETIMEOUT || rc == UNREAD_EIO || rc == UNREAD_ECLOSED ||
           rc == UNREAD_EPROTO;
}

static void error(int rc, const char *what, uint64_t uid)
{
    if (nerr++ == 0)
        snprintf(first_err, sizeof(first_err), "%s uid %llu: rc %d %s", what,
                 (unsigned long long)uid, rc,
                 a != NULL ? unread_async_errstr(a) : unread_errstr(c));
}

static int call(const char *name, unsigned argc, const struct unread_arg *argv,
                struct unread_reply **r);

/* With wait: whether a replica has the write just answered. */
static bool replicated(void)
{
    struct unread_arg args[2] = {unread_arg_int(1), unread_arg_int(100)};
    struct unread_reply *r;
    bool ok;

    if (!wait_replica)
        return true;
    ok = call("WAIT", 2, args, &r) == 0 && r != NULL &&
         r->kind == UNREAD_REPLY_INT && r->integer >= 1;
    unread_reply_free(r);
    return ok;
}

/* Records a write's outcome: true when it was acknowledged. */
static bool record(int rc, const char *what, uint64_t uid, uint64_t *unk)
{
    if (rc == 0 && !replicated()) {
        unknown++;
        if (unk != NULL)
            (*unk)++;
        return false;
    }
    if (rc == 0) {
        acked++;
        return true;
    }
    if (outcome_unknown(rc)) {
        unknown++;
        if (unk != NULL)
            (*unk)++;
    } else if (rc == UNREAD_ECONNECT || rc == UNREAD_EUNAVAIL) {
        refused++; /* not sent: not applied (a killed node) */
    } else {
        error(rc, what, uid);
    }
    return false;
}

/* One command on whichever handle, one at a time. The asynchronous
 * call's result goes to statics: a call given up at SIGTERM completes
 * later, at unread_async_close, after this frame is gone. */
static int call(const char *name, unsigned argc, const struct unread_arg *argv,
                struct unread_reply **r)
{
    static struct done d;
    static struct unread_reply *ar;
    int rc;

    *r = NULL;
    if (c != NULL)
        return unread_command(c, name, 0, argc, argv, r);
    d.fired = false;
    ar = NULL;
    rc = finish(a,
                unread_async_command(a, name, 0, argc, argv, &ar, on_done, &d),
                &d, &stop);
    if (d.fired)
        *r = ar; /* else it lands in ar at close, and is not freed */
    return rc;
}

static void check_read(uint64_t uid, struct user *u)
{
    struct unread_arg args[2] = {unread_arg_int(uid), unread_arg_int(2)};
    struct unread_reply *r;
    int rc = call("CNT.GET", 2, args, &r);

    if (rc == 0 && r != NULL && r->kind == UNREAD_REPLY_INT) {
        if (r->integer < u->c_ack || r->integer > u->c_ack + u->c_unk) {
            if (nbad++ == 0)
                snprintf(
                    first_bad, sizeof(first_bad),
                    "CNT.GET %llu 2 = %llu, acknowledged %llu, unknown "
                    "%llu",
                    (unsigned long long)uid, (unsigned long long)r->integer,
                    (unsigned long long)u->c_ack, (unsigned long long)u->c_unk);
        }
    } else if (rc == UNREAD_ECONNECT || rc == UNREAD_EUNAVAIL) {
        refused++; /* the node is down: no answer, not a wrong one */
    } else if (!outcome_unknown(rc)) {
        error(rc, "CNT.GET", uid);
    }
    unread_reply_free(r);
}

static void one(uint64_t i, bool global)
{
    uint64_t uid = base + i % nusers;
    struct user *u = &users[i % nusers];
    struct unread_arg args[3];
    struct unread_reply *r;
    int rc;

    if (global) {
        args[0] = unread_arg_int(uid);
        rc = call("GRP.POST", 1, args, &r);
        unread_reply_free(r);
        if (record(rc, "GRP.POST", uid, &u->c_unk))
            u->c_ack++;
        return;
    }
    switch ((i / nusers) % 4) {
    case 0:
        args[0] = unread_arg_int(uid);
        args[1] = unread_arg_int(2);
        args[2] = unread_arg_int(1);
        rc = call("CNT.INCR", 3, args, &r);
        unread_reply_free(r);
        if (record(rc, "CNT.INCR", uid, &u->c_unk))
            u->c_ack++;
        break;
    case 1:
        args[0] = unread_arg_int(uid);
        args[1] = unread_arg_int(50);
        args[2] = unread_arg_int(++u->v_try);
        rc = call("CONV.SEQ", 3, args, &r);
        unread_reply_free(r);
        if (record(rc, "CONV.SEQ", uid, NULL))
            u->v_ack = u->v_try;
        break;
    case 2:
        if (u->b_try >= BC_MAX)
            break;
        args[0] = unread_arg_int(uid);
        args[1] = unread_arg_int(60);
        args[2] = unread_arg_int(++u->b_try);
        rc = call("BC.READ", 3, args, &r);
        unread_reply_free(r);
        if (record(rc, "BC.READ", uid, NULL))
            u->b_ack = u->b_try;
        break;
    default:
        check_read(uid, u);
    }
}

/* PIPE_N CNT.INCRs of consecutive users in one pipeline; each reply is
 * its own outcome. */
static void pipe_round(uint64_t i)
{
    int rc = unread_pipe_begin(c);
    size_t k, queued = 0;

    for (k = 0; k < PIPE_N && rc == 0; k++, queued++)
        rc = unread_pipe_cnt_incr(c, base + (i + k) % nusers, 2, 1);
    if (rc != 0) {
        error(rc, "pipe queue", base + i % nusers);
        unread_pipe_reset(c);
        return;
    }
    (void)unread_pipe_flush(c); /* a failure reads as each reply's */
    for (k = 0; k < queued; k++) {
        struct user *u = &users[(i + k) % nusers];
        struct unread_reply *r = NULL;

        rc = unread_pipe_read(c, &r);
        unread_reply_free(r);
        if (record(rc, "pipe CNT.INCR", base + (i + k) % nusers, &u->c_unk))
            u->c_ack++;
    }
    unread_pipe_reset(c);
    if (i % (PIPE_N * 4) == 0)
        check_read(base + i % nusers, &users[i % nusers]);
}

/* One user's CNT.INCR and CONV.SEQ in one batch: both or neither. */
static void batch_round(uint64_t i)
{
    uint64_t uid = base + i % nusers;
    struct user *u = &users[i % nusers];
    struct unread_arg args[3] = {unread_arg_int(uid), unread_arg_int(50),
                                 unread_arg_int(u->v_try + 1)};
    struct unread_reply *r = NULL;
    int rc = unread_batch_begin(c);

    if (rc == 0)
        rc = unread_pipe_cnt_incr(c, uid, 2, 1);
    if (rc == 0)
        rc = unread_pipe_cmd(c, "CONV.SEQ", 0, 3, args);
    if (rc != 0) {
        unread_batch_reset(c);
        error(rc, "batch queue", uid);
        return;
    }
    u->v_try++;
    rc = unread_batch_exec(c, &r);
    if (rc == 0 && (r == NULL || r->kind != UNREAD_REPLY_ARRAY || r->n != 2 ||
                    r->elem[0].kind == UNREAD_REPLY_ERROR ||
                    r->elem[1].kind == UNREAD_REPLY_ERROR))
        rc = UNREAD_ERR_ERR;
    unread_reply_free(r);
    if (record(rc, "batch", uid, &u->c_unk)) {
        u->c_ack++;
        u->v_ack = u->v_try;
    }
    if (i % 16 == 0)
        check_read(uid, u);
}

int main(int argc, char **argv)
{
    static long long samples[MAX_SAMPLES][2];
    size_t nsamples = 0;
    struct unread_opts *o;
    char err[512];
    long long period = 100, next;
    const char *mode;
    uint64_t i;

    if (argc < 5) {
        fprintf(stderr, "usage: reshard-writer sync|async|pipe|batch|global "
                        "SEEDS UID_BASE NUIDS [PERIOD_MS]\n");
        return 2;
    }
    mode = argv[1];
    base = strtoull(argv[3], NULL, 10);
    nusers = strtoull(argv[4], NULL, 10);
    if (argc > 5)
        period = atoll(argv[5]);
    wait_replica = argc > 6 && strcmp(argv[6], "wait") == 0;
    users = calloc(nusers ? nusers : 1, sizeof(*users));
    o = unread_opts_new();
    if (users == NULL || nusers == 0 || period <= 0 || o == NULL ||
        unread_opts_set_timeouts(o, 2000, 5000, 5000) != 0 ||
        unread_opts_set_cluster(o, true) != 0)
        return 2;
    signal(SIGTERM, on_term);
    signal(SIGPIPE, SIG_IGN);
    if (strcmp(mode, "async") == 0)
        a = unread_async_connect(argv[2], o, err, sizeof(err));
    else
        c = unread_connect_cluster(argv[2], o, err, sizeof(err));
    unread_opts_free(o);
    if (a == NULL && c == NULL) {
        printf("connect %s\n", err);
        return 1;
    }
    next = now_ms();
    for (i = 0; !stop; i++) {
        if (now_ms() >= next && nsamples < MAX_SAMPLES) {
            samples[nsamples][0] = now_ms();
            samples[nsamples++][1] = (long long)acked;
            next += period;
        }
        if (strcmp(mode, "pipe") == 0)
            pipe_round(i * PIPE_N);
        else if (strcmp(mode, "batch") == 0)
            batch_round(i);
        else
            one(i, strcmp(mode, "global") == 0);
    }
    for (i = 0; i < nusers; i++) {
        struct user *u = &users[i];

        printf("U %llu %llu %llu %llu %llu %llu %llu\n",
               (unsigned long long)(base + i), (unsigned long long)u->c_ack,
               (unsigned long long)u->c_unk, (unsigned long long)u->v_ack,
               (unsigned long long)u->v_try, (unsigned long long)u->b_ack,
               (unsigned long long)u->b_try);
    }
    for (i = 0; i < nsamples; i++)
        printf("T %lld %lld\n", samples[i][0], samples[i][1]);
    printf("E %llu %s\nX %llu %s\nN %llu\nF %llu\nEND\n",
           (unsigned long long)nerr, first_err, (unsigned long long)nbad,
           first_bad, (unsigned long long)unknown, (unsigned long long)refused);
    unread_close(c);
    unread_async_close(a);
    free(users);
    return 0;
}
