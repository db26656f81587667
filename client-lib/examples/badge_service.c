/*
 * badge_service.c - a small service on libunread: it delivers direct
 * messages (the receiver's conversation seq and its "dm" counter) and
 * renders app badges (the receiver's counter total), over a sharded
 * deployment, and keeps working while a shard restarts:
 *   - a badge whose shard is down renders the default (0: no badge),
 *     marked degraded, at once: the breaker never lets a dead shard stall
 *     the page;
 *   - a delivery is one atomic batch (CONV.SEQ and CNT.INCR of the
 *     receiver): a reader never sees one without the other;
 *   - a delivery whose shard is down is not lost: the library says it was
 *     not sent (UNREAD_EUNAVAIL), the service queues it and retries it
 *     when the shard is back.
 *
 *   badge_service host:port[,host:port...] [seconds]
 *
 * It simulates DMs between 1000 users for `seconds` (default 10), prints
 * one status line a second, then retries what is still queued for up to 5
 * seconds. Exit status 0 when every delivery got through, 1 otherwise.
 *
 * Build: cc -Iclient-lib client-lib/examples/badge_service.c \
 *            build/libunread.a -lxxhash -o build/badge_service
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "unread.h"

#define USERS 1000
#define TYPE_DM 3 /* "dm": its position in the server's counter-types */
#define QUEUE_MAX 4096
#define RETRIES_PER_TICK 16
#define DRAIN_SECONDS 5

/* One DM to deliver: the receiver's conversation seq and its "dm"
 * counter, written together. */
struct dm {
    uint64_t uid; /* receiver */
    uint64_t cid; /* conversation: here, the sender */
    uint64_t seq; /* the message's seq in the conversation */
};

struct svc {
    struct unread *c;
    struct dm queue[QUEUE_MAX]; /* deliveries waiting for their shard */
    size_t qhead, qlen;
    uint64_t next_seq[USERS + 1]; /* per sender: a stand-in message store */
    uint64_t delivered, retried, dropped, uncertain, rejected;
    uint64_t badges, degraded_badges;
};

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * What a delivery's result means: true when the DM needs nothing more.
 * Not sent (UNREAD_EUNAVAIL): retry later. Sent but unanswered (a
 * timeout, a lost connection): the server ran all of the batch or none of
 * it, we cannot tell which, and CNT.INCR is not idempotent: count it as
 * uncertain and leave it to the nightly reconciliation (CONV.SEQ and
 * CNT.SET from the message store) rather than risk counting it twice. A
 * server error, for the batch or one of its commands, is a bug or a
 * limit: log and drop.
 */
static bool settled(struct svc *s, int rc, const struct unread_reply *r)
{
    size_t i;

    if (rc == UNREAD_EUNAVAIL || rc == UNREAD_ENOMEM)
        return false;
    if (rc < 0) {
        s->uncertain++;
        return true;
    }
    if (rc > 0) {
        fprintf(stderr, "badge_service: batch refused: %s\n",
                unread_errstr(s->c));
        s->rejected++;
        return true;
    }
    for (i = 0; i < r->n; i++) {
        if (r->elem[i].kind == UNREAD_REPLY_ERROR) {
            fprintf(stderr, "badge_service: rejected: %s\n", r->elem[i].str);
            s->rejected++;
            break;
        }
    }
    return true;
}

/*
 * Delivers one DM as one atomic batch: both writes are keyed by the
 * receiver, so they go to one shard, in one round trip, and run there
 * with nothing in between: no reader ever sees the conversation's unread
 * without the counter's, and a crash of the server keeps both or neither.
 * Returns true when the DM needs nothing more.
 */
static bool deliver(struct svc *s, const struct dm *m)
{
    struct unread_reply *r = NULL;
    bool done;
    int rc;

    if (unread_batch_begin(s->c) != 0 ||
        unread_pipe_conv_seq(s->c, m->uid, m->cid, m->seq) != 0 ||
        unread_pipe_cnt_incr(s->c, m->uid, TYPE_DM, 1) != 0) {
        unread_batch_reset(s->c);
        return false; /* out of memory: try again later */
    }
    rc = unread_batch_exec(s->c, &r);
    done = settled(s, rc, r);
    unread_reply_free(r);
    return done;
}

static void enqueue(struct svc *s, const struct dm *m)
{
    if (s->qlen == QUEUE_MAX) {
        s->dropped++;
        return;
    }
    s->queue[(s->qhead + s->qlen) % QUEUE_MAX] = *m;
    s->qlen++;
}

/* Retries a few queued deliveries, oldest first; those whose shard is
 * still down go back to the end (cheaply: their breaker answers at once). */
static void retry_some(struct svc *s)
{
    struct dm m;
    size_t i, n = s->qlen < RETRIES_PER_TICK ? s->qlen : RETRIES_PER_TICK;

    for (i = 0; i < n; i++) {
        m = s->queue[s->qhead];
        s->qhead = (s->qhead + 1) % QUEUE_MAX;
        s->qlen--;
        s->retried++;
        if (deliver(s, &m))
            s->delivered++;
        else
            enqueue(s, &m);
    }
}

static void new_dm(struct svc *s)
{
    struct dm m = {0};
    uint64_t sender = 1 + (uint64_t)rand() % USERS;

    m.uid = 1 + (uint64_t)rand() % USERS;
    m.cid = sender;
    m.seq = ++s->next_seq[sender];
    if (deliver(s, &m))
        s->delivered++;
    else
        enqueue(s, &m);
}

/* The badge of one user: its counter total, or the default while its shard
 * is down. A page shows it either way; it never waits for a dead shard. */
static void render_badge(struct svc *s)
{
    uint64_t uid = 1 + (uint64_t)rand() % USERS, total = 0;
    int rc = unread_cnt_total(s->c, uid, &total);

    s->badges++;
    if (rc == UNREAD_DEGRADED)
        s->degraded_badges++;
    else if (rc != 0)
        fprintf(stderr, "badge_service: badge of %llu: %s\n",
                (unsigned long long)uid, unread_errstr(s->c));
}

static void status(const struct svc *s, const char *when)
{
    printf("%s delivered=%llu queued=%zu retried=%llu dropped=%llu "
           "uncertain=%llu rejected=%llu badges=%llu degraded_badges=%llu\n",
           when, (unsigned long long)s->delivered, s->qlen,
           (unsigned long long)s->retried, (unsigned long long)s->dropped,
           (unsigned long long)s->uncertain, (unsigned long long)s->rejected,
           (unsigned long long)s->badges,
           (unsigned long long)s->degraded_badges);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    static struct svc s;
    struct unread_opts *o;
    char err[512], when[32];
    int64_t start, end, next_status;
    long seconds = argc > 2 ? atol(argv[2]) : 10;

    if (argc < 2 || seconds <= 0) {
        fprintf(stderr, "usage: badge_service host:port[,...] [seconds]\n");
        return 2;
    }
    o = unread_opts_new();
    if (o == NULL)
        return 2;
    unread_opts_set_timeouts(o, 200, 200, 200);
    unread_opts_set_degraded(o, true, 0); /* badges default to 0; writes
                                             say "not sent" */
    unread_opts_set_breaker(o, 3, 500);
    s.c = unread_connect_cluster(argv[1], o, err, sizeof(err));
    unread_opts_free(o);
    if (s.c == NULL) {
        fprintf(stderr, "badge_service: %s\n", err);
        return 2;
    }
    srand(1);
    start = now_ms();
    end = start + seconds * 1000;
    next_status = start + 1000;
    while (now_ms() < end) {
        new_dm(&s);
        render_badge(&s);
        retry_some(&s);
        if (now_ms() >= next_status) {
            snprintf(when, sizeof(when), "t=%llds",
                     (long long)((next_status - start) / 1000));
            status(&s, when);
            next_status += 1000;
        }
        usleep(1000);
    }
    end = now_ms() + DRAIN_SECONDS * 1000;
    while (s.qlen > 0 && now_ms() < end) {
        retry_some(&s);
        usleep(10 * 1000);
    }
    status(&s, "final");
    unread_close(s.c);
    return s.qlen == 0 && s.dropped == 0 && s.rejected == 0 ? 0 : 1;
}
