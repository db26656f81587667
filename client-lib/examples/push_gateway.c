/*
 * push_gateway.c - the store's side of a push gateway as it is deployed
 * (docs/PERFORMANCE.md, "Pub/sub"): a few connections hold many users'
 * badge subscriptions between them, and every badge message that arrives
 * is counted (where a real gateway would hand it to the user's websocket,
 * APNs or FCM). badge_gateway.c is the same thing with devices attached;
 * this one is what `make bench-pubsub` drives with writers
 * (pubsub-bench -m gateway --external) to measure unreadd through
 * libunread.
 *
 *   push_gateway host:port[,host:port...] gateways users [first-uid]
 *
 * Users first-uid .. first-uid+users-1 (default first-uid 1000000): user
 * i's channel badge:<uid> on gateway i mod gateways, each gateway its own
 * asynchronous handle (one connection per server), all on one libevent
 * loop. Prints "subscribed G N" once every gateway's subscriptions are
 * confirmed (a PING answered after them on each connection), "messages
 * M" at SIGUSR1 (every gateway's count so far), and at SIGINT/SIGTERM
 * "final gateways=G users=N messages=M stray=S per_gateway=a,b,..."
 * (stray: a message for a user that is not that gateway's, which must
 * stay 0). The servers need `notify-badges yes`.
 *
 * Build: cc push_gateway.c $(pkg-config --cflags --libs unread libevent)
 * (the Makefile builds it as build/push_gateway).
 */
#include <event2/event.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unread.h"
#include "unread_libevent.h"

#define MAX_GATEWAYS 1024

struct gateway {
    struct pg *pg;
    struct unread_async *a;
    unsigned index;
    uint64_t messages, stray;
    bool pinged;
};

struct pg {
    struct event_base *base;
    struct gateway *gw;
    unsigned ngw, pinged;
    uint64_t users, first;
};

/* A uid, canonical decimal, 1 to 20 digits, at most 2^64 - 1, from
 * s[0..n): true when it is one. */
static bool parse_u64(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    size_t i;

    if (n == 0 || n > 20 || (s[0] == '0' && n > 1))
        return false;
    for (i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9' ||
            v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return true;
}

/* A badge message: counted, and checked to be one of this gateway's users
 * (the channel is "badge:<uid>"). */
static void on_badge(struct unread_async *a, const struct unread_message *m,
                     void *priv)
{
    struct gateway *g = priv;
    uint64_t uid;

    (void)a;
    g->messages++;
    if (m->channel_len < 7 || memcmp(m->channel, "badge:", 6) != 0 ||
        !parse_u64(m->channel + 6, m->channel_len - 6, &uid) ||
        uid < g->pg->first || uid - g->pg->first >= g->pg->users ||
        (uid - g->pg->first) % g->pg->ngw != g->index)
        g->stray++;
}

/* The PING queued after a gateway's subscriptions: they are all
 * confirmed when it is answered (one connection, replies in order). */
static void on_pinged(struct unread_async *a, int rc, void *priv)
{
    struct gateway *g = priv;
    struct pg *pg = g->pg;

    (void)a;
    if (rc != 0) {
        fprintf(stderr, "push_gateway: gateway %u: PING: %d\n", g->index, rc);
        event_base_loopbreak(pg->base);
        return;
    }
    g->pinged = true;
    if (++pg->pinged == pg->ngw) {
        printf("subscribed %u %llu\n", pg->ngw, (unsigned long long)pg->users);
        fflush(stdout);
    }
}

static uint64_t total_messages(const struct pg *pg)
{
    uint64_t n = 0;

    for (unsigned i = 0; i < pg->ngw; i++)
        n += pg->gw[i].messages;
    return n;
}

static void on_usr1(evutil_socket_t sig, short what, void *priv)
{
    (void)sig;
    (void)what;
    printf("messages %llu\n", (unsigned long long)total_messages(priv));
    fflush(stdout);
}

static void on_stop(evutil_socket_t sig, short what, void *priv)
{
    (void)sig;
    (void)what;
    event_base_loopbreak(priv);
}

static int usage(void)
{
    fprintf(stderr,
            "usage: push_gateway host:port[,...] gateways users "
            "[first-uid]\n"
            "  gateways 1..%d, users >= 1\n",
            MAX_GATEWAYS);
    return 2;
}

int main(int argc, char **argv)
{
    struct pg pg;
    struct event *ev[3];
    char err[256];
    uint64_t v;
    int rc = 1;

    memset(&pg, 0, sizeof(pg));
    pg.first = 1000000;
    if (argc < 4 || argc > 5 || !parse_u64(argv[2], strlen(argv[2]), &v) ||
        v == 0 || v > MAX_GATEWAYS ||
        !parse_u64(argv[3], strlen(argv[3]), &pg.users) || pg.users == 0 ||
        (argc == 5 && !parse_u64(argv[4], strlen(argv[4]), &pg.first)) ||
        pg.first + pg.users < pg.first)
        return usage();
    pg.ngw = (unsigned)v;
    signal(SIGPIPE, SIG_IGN);
    pg.base = event_base_new();
    pg.gw = calloc(pg.ngw, sizeof(*pg.gw));
    if (pg.base == NULL || pg.gw == NULL)
        goto error;
    for (unsigned i = 0; i < pg.ngw; i++) {
        struct gateway *g = &pg.gw[i];

        g->pg = &pg;
        g->index = i;
        g->a = unread_async_connect(argv[1], NULL, err, sizeof(err));
        if (g->a == NULL || unread_async_libevent_attach(g->a, pg.base) != 0) {
            fprintf(stderr, "push_gateway: %s\n", g->a ? "attach" : err);
            goto error;
        }
    }
    for (uint64_t i = 0; i < pg.users; i++) {
        char ch[32];
        struct gateway *g = &pg.gw[i % pg.ngw];

        snprintf(ch, sizeof(ch), "badge:%llu",
                 (unsigned long long)(pg.first + i));
        if (unread_async_subscribe(g->a, ch, on_badge, g) != 0) {
            fprintf(stderr, "push_gateway: subscribe %s failed\n", ch);
            goto error;
        }
    }
    for (unsigned i = 0; i < pg.ngw; i++) {
        if (unread_async_ping(pg.gw[i].a, on_pinged, &pg.gw[i]) != 0)
            goto error;
    }
    ev[0] = evsignal_new(pg.base, SIGUSR1, on_usr1, &pg);
    ev[1] = evsignal_new(pg.base, SIGINT, on_stop, pg.base);
    ev[2] = evsignal_new(pg.base, SIGTERM, on_stop, pg.base);
    for (int i = 0; i < 3; i++)
        event_add(ev[i], NULL);
    event_base_dispatch(pg.base);
    for (int i = 0; i < 3; i++)
        event_free(ev[i]);

    uint64_t stray = 0;
    for (unsigned i = 0; i < pg.ngw; i++)
        stray += pg.gw[i].stray;
    printf("final gateways=%u users=%llu messages=%llu stray=%llu "
           "per_gateway=",
           pg.ngw, (unsigned long long)pg.users,
           (unsigned long long)total_messages(&pg), (unsigned long long)stray);
    for (unsigned i = 0; i < pg.ngw; i++)
        printf("%s%llu", i ? "," : "", (unsigned long long)pg.gw[i].messages);
    printf("\n");
    rc = pg.pinged == pg.ngw && stray == 0 ? 0 : 1;
error:
    if (pg.gw != NULL) {
        for (unsigned i = 0; i < pg.ngw; i++)
            unread_async_close(pg.gw[i].a);
        free(pg.gw);
    }
    if (pg.base != NULL)
        event_base_free(pg.base);
    return rc;
}
