/*
 * async_badge.c - an event-driven badge service on libunread's
 * asynchronous handle and libevent: it delivers notifications (a "dm"
 * counter per receiver) and renders badges (a user's counter total) over
 * a sharded deployment, `depth` operations in flight at once from one
 * thread, and keeps going while a shard restarts:
 *   - a badge whose shard is down renders the default (0), marked
 *     degraded, at once: the breaker never lets a dead shard stall it;
 *   - a delivery carries a notice id (CNT.INCR uid dm 1 ID nid), which the
 *     server counts once however often it is sent, so a delivery that
 *     failed for any reason - not sent, or sent and unanswered - is
 *     simply retried until it is answered: none is lost, none counted
 *     twice (the server remembers a user's last 64 notice ids: keep the
 *     deliveries per user in one run below that, as the defaults do).
 * At the end it reads every user's counter back and compares it with the
 * deliveries it made.
 *
 *   async_badge host:port[,host:port...] [operations [depth [users]]]
 *
 * Defaults: 100000 operations (half deliveries, half badges), 64 in
 * flight, 2000 users. Prints a status line a second and a final line;
 * exit status 0 when every delivery was applied exactly once, 1
 * otherwise, 2 on bad arguments.
 *
 * Build: cc async_badge.c $(pkg-config --cflags --libs unread libevent)
 * (the Makefile builds it as build/async_badge).
 */
#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "unread.h"
#include "unread_libevent.h"

#define RETRY_MS 50      /* a failed delivery is sent again after this */
#define GIVE_UP_MS 30000 /* the run stops trying after this */
#define NID_BASE 1000000ull

/* One operation in flight: its outputs live here until its callback. */
struct op {
    struct svc *s;
    struct op *next; /* on the retry list */
    bool delivery;
    uint64_t uid, nid;
    uint32_t value;
    uint64_t total;
};

struct svc {
    struct unread_async *a;
    struct event_base *base;
    struct event *tick;
    unsigned dm; /* the counter type "dm", by name */
    uint64_t ops, started, done, users, depth;
    uint64_t *sent; /* per user: deliveries made */
    struct op *retry;
    uint64_t delivered, retries, badges, degraded_badges, failed_badges;
    uint64_t checked, mismatches;
    int64_t start_ms, next_status_ms;
    bool checking;
    int exit_status;
};

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void start_op(struct svc *s);
static void send_op(struct op *o);
static void check_all(struct svc *s);

static void status(struct svc *s, const char *when)
{
    printf("%s ops=%llu delivered=%llu retries=%llu retry_queue=%s "
           "badges=%llu degraded_badges=%llu failed_badges=%llu\n",
           when, (unsigned long long)s->done, (unsigned long long)s->delivered,
           (unsigned long long)s->retries, s->retry != NULL ? "yes" : "no",
           (unsigned long long)s->badges,
           (unsigned long long)s->degraded_badges,
           (unsigned long long)s->failed_badges);
    fflush(stdout);
}

/* The operation's answer. A delivery is done when the server answered
 * it; anything else sends it again later (safe: the notice id). */
static void on_done(struct unread_async *a, int rc, void *priv)
{
    struct op *o = priv;
    struct svc *s = o->s;

    (void)a;
    if (o->delivery && rc != 0) {
        if (rc > 0 && rc != UNREAD_DEGRADED) {
            fprintf(stderr, "async_badge: delivery refused: %s\n",
                    unread_async_errstr(a));
            s->exit_status = 1;
        } else {
            s->retries++;
            o->next = s->retry;
            s->retry = o;
            return;
        }
    }
    if (o->delivery && rc == 0) {
        s->delivered++;
        s->sent[o->uid]++;
    } else if (!o->delivery) {
        s->badges++;
        if (rc == UNREAD_DEGRADED)
            s->degraded_badges++;
        else if (rc != 0)
            s->failed_badges++;
    }
    s->done++;
    free(o);
    if (s->started < s->ops)
        start_op(s);
    else if (s->done == s->ops)
        check_all(s);
}

static void send_op(struct op *o)
{
    struct svc *s = o->s;
    int rc;

    if (o->delivery)
        rc = unread_async_cnt_incr_id(s->a, o->uid, s->dm, 1, o->nid, &o->value,
                                      &o->total, on_done, o);
    else
        rc = unread_async_cnt_total(s->a, o->uid, &o->total, on_done, o);
    if (rc != 0) { /* out of memory: try again with the retries */
        o->next = s->retry;
        s->retry = o;
    }
}

static void start_op(struct svc *s)
{
    struct op *o = calloc(1, sizeof(*o));

    if (o == NULL) {
        s->exit_status = 1;
        event_base_loopbreak(s->base);
        return;
    }
    o->s = s;
    o->delivery = s->started % 2 == 0;
    o->uid = 1 + (uint64_t)rand() % s->users;
    o->nid = NID_BASE + s->started;
    s->started++;
    send_op(o);
}

/* The final check: each user's counter is what was delivered to it. */
static void on_checked(struct unread_async *a, int rc, void *priv)
{
    struct op *o = priv;
    struct svc *s = o->s;

    if (rc != 0) { /* the shard may still be coming back: ask again */
        s->retries++;
        o->next = s->retry;
        s->retry = o;
        return;
    }
    if (o->value != s->sent[o->uid]) {
        if (s->mismatches++ < 5)
            fprintf(stderr,
                    "async_badge: user %llu: counter %u, delivered "
                    "%llu\n",
                    (unsigned long long)o->uid, o->value,
                    (unsigned long long)s->sent[o->uid]);
    }
    free(o);
    if (++s->checked == s->users) {
        status(s, "final");
        printf("checked users=%llu mismatches=%llu\n",
               (unsigned long long)s->checked,
               (unsigned long long)s->mismatches);
        event_base_loopbreak(s->base);
    }
    (void)a;
}

static void send_check(struct op *o)
{
    if (unread_async_cnt_get(o->s->a, o->uid, o->s->dm, &o->value, on_checked,
                             o) != 0) {
        o->next = o->s->retry;
        o->s->retry = o;
    }
}

static void check_all(struct svc *s)
{
    uint64_t u;

    s->checking = true;
    for (u = 1; u <= s->users; u++) {
        struct op *o = calloc(1, sizeof(*o));

        if (o == NULL) {
            s->exit_status = 1;
            event_base_loopbreak(s->base);
            return;
        }
        o->s = s;
        o->uid = u;
        send_check(o);
    }
}

/* Every RETRY_MS: the retries go out again, a status line a second. */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct svc *s = arg;
    struct op *list = s->retry, *o;
    int64_t now = now_ms();

    (void)fd;
    (void)what;
    s->retry = NULL;
    while ((o = list) != NULL) {
        list = o->next;
        if (s->checking && !o->delivery)
            send_check(o);
        else
            send_op(o);
    }
    if (now >= s->next_status_ms) {
        char when[32];

        snprintf(when, sizeof(when), "t=%llds",
                 (long long)((now - s->start_ms) / 1000));
        status(s, when);
        s->next_status_ms += 1000;
    }
    if (now - s->start_ms > GIVE_UP_MS) {
        fprintf(stderr, "async_badge: gave up after %d ms\n", GIVE_UP_MS);
        s->exit_status = 1;
        event_base_loopbreak(s->base);
    }
}

/* The first answer: the servers' counter types are known, "dm" has a
 * number; the operations start. */
static void on_ready(struct unread_async *a, int rc, void *priv)
{
    struct svc *s = priv;
    uint64_t i;

    if (unread_async_type(a, "dm", &s->dm) != 0) {
        fprintf(stderr, "async_badge: counter type dm: %s (ping: %s)\n",
                unread_async_errstr(a), unread_strerror(rc));
        s->exit_status = 1;
        event_base_loopbreak(s->base);
        return;
    }
    s->start_ms = now_ms();
    s->next_status_ms = s->start_ms + 1000;
    for (i = 0; i < s->depth && s->started < s->ops; i++)
        start_op(s);
}

int main(int argc, char **argv)
{
    static struct svc s;
    struct unread_opts *o;
    struct timeval tv = {0, RETRY_MS * 1000};
    char err[512];

    if (argc < 2) {
        fprintf(stderr, "usage: async_badge host:port[,...] [operations "
                        "[depth [users]]]\n");
        return 2;
    }
    s.ops = argc > 2 ? strtoull(argv[2], NULL, 10) : 100000;
    s.depth = argc > 3 ? strtoull(argv[3], NULL, 10) : 64;
    s.users = argc > 4 ? strtoull(argv[4], NULL, 10) : 2000;
    if (s.ops == 0 || s.depth == 0 || s.users == 0)
        return 2;
    s.sent = calloc(s.users + 1, sizeof(*s.sent));
    s.base = event_base_new();
    o = unread_opts_new();
    if (s.sent == NULL || s.base == NULL || o == NULL)
        return 2;
    unread_opts_set_timeouts(o, 300, 500, 500);
    unread_opts_set_degraded(o, true, 0); /* badges: 0 while down */
    unread_opts_set_breaker(o, 3, 300);
    unread_opts_set_reconnect(o, 50, 500);
    s.a = unread_async_connect(argv[1], o, err, sizeof(err));
    unread_opts_free(o);
    if (s.a == NULL) {
        fprintf(stderr, "async_badge: %s\n", err);
        return 2;
    }
    if (unread_async_libevent_attach(s.a, s.base) != 0 ||
        unread_async_ping(s.a, on_ready, &s) != 0)
        return 2;
    s.tick = event_new(s.base, -1, EV_PERSIST, on_tick, &s);
    if (s.tick == NULL || event_add(s.tick, &tv) != 0)
        return 2;
    srand(1);
    s.start_ms = now_ms();
    event_base_dispatch(s.base);
    unread_async_close(s.a);
    event_free(s.tick);
    event_base_free(s.base);
    free(s.sent);
    if (s.done != s.ops || s.checked != s.users || s.mismatches != 0)
        s.exit_status = 1;
    return s.exit_status;
}
