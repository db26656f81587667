/*
 * badge_gateway.c - a push gateway on libunread's subscriptions: it holds
 * many device connections and forwards each badge change of a device's
 * user to it, so no device polls. A device is any TCP client speaking
 * lines: it sends its uid ("42\n") and then receives, for every write
 * that changed what user 42 sees, the server's badge message
 * (docs/COMMANDS.md, "Badge channels"), one line each:
 *
 *     badge 7 cnt 3 conv 4 cnt.0 2 conv.100 4
 *
 * The gateway subscribes `badge:<uid>` once per user however many of its
 * devices are connected (a phone and a tab), and leaves the channel when
 * the last one goes. It runs on one thread: libunread's asynchronous
 * handle and the devices' sockets share one libevent loop. With a
 * sharded deployment each user's channel is subscribed on that user's
 * shard; a shard that restarts is connected again and its users
 * subscribed again by the library (the changes made meanwhile are not
 * replayed: a device that must not miss one re-reads USER.BADGE after
 * a gap). The servers need `notify-badges yes`.
 *
 *   badge_gateway host:port[,host:port...] [listen-port [max-devices]]
 *
 * Defaults: port 7461 on 127.0.0.1, 10000 devices. Prints "listening
 * PORT" when it accepts devices (port 0: one chosen by the system), and
 * "final devices=N users=N forwarded=N dropped=N" at SIGINT/SIGTERM. A
 * device that sends a bad line gets "error ...\n" and is closed; one that
 * does not read its messages (more than 64 KiB waiting) is dropped.
 *
 * Build: cc badge_gateway.c $(pkg-config --cflags --libs unread libevent)
 * (the Makefile builds it as build/badge_gateway).
 */
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "unread.h"
#include "unread_libevent.h"

#define GW_BUCKETS 4096        /* users hashed by uid */
#define GW_MAX_LINE 32         /* a device's uid line */
#define GW_MAX_OUT (64u << 10) /* bytes waiting for a device, at most */

struct device;

/* A user with at least one device: its channel is subscribed. */
struct user {
    struct user *next; /* hash chain */
    uint64_t uid;
    struct device *devs; /* its devices */
    char channel[32];    /* "badge:<uid>" */
};

struct device {
    struct gw *gw;
    struct bufferevent *bev;
    struct user *user;                  /* NULL until its uid line */
    struct device *next;                /* the user's other devices */
    struct device *prev_all, *next_all; /* every device */
};

struct gw {
    struct event_base *base;
    struct unread_async *a;
    struct user *users[GW_BUCKETS];
    struct device *all;
    size_t ndev, nusers, max_dev;
    uint64_t forwarded, dropped;
};

static struct user **user_slot(struct gw *g, uint64_t uid)
{
    struct user **pp = &g->users[uid % GW_BUCKETS];

    while (*pp != NULL && (*pp)->uid != uid)
        pp = &(*pp)->next;
    return pp;
}

static void device_close(struct device *d);

/* A message on badge:<uid>: one line to each of the user's devices. */
static void on_badge(struct unread_async *a, const struct unread_message *m,
                     void *priv)
{
    struct user *u = priv;
    struct device *d, *next;
    struct gw *g;

    (void)a;
    for (d = u->devs; d != NULL; d = next) {
        next = d->next;
        g = d->gw;
        if (evbuffer_get_length(bufferevent_get_output(d->bev)) > GW_MAX_OUT) {
            g->dropped++; /* a device that does not read: let it go */
            device_close(d);
            continue;
        }
        bufferevent_write(d->bev, m->payload, m->payload_len);
        bufferevent_write(d->bev, "\n", 1);
        g->forwarded++;
    }
}

/* Device d is user uid's: the user's channel is subscribed with its first
 * device. 0, or -1 when out of memory. */
static int device_join(struct device *d, uint64_t uid)
{
    struct gw *g = d->gw;
    struct user **pp = user_slot(g, uid), *u = *pp;

    if (u == NULL) {
        u = calloc(1, sizeof(*u));
        if (u == NULL)
            return -1;
        u->uid = uid;
        snprintf(u->channel, sizeof(u->channel), "badge:%llu",
                 (unsigned long long)uid);
        if (unread_async_subscribe(g->a, u->channel, on_badge, u) != 0) {
            free(u);
            return -1;
        }
        *pp = u;
        g->nusers++;
    }
    d->user = u;
    d->next = u->devs;
    u->devs = d;
    return 0;
}

/* Device d leaves its user; the last one leaves the channel. */
static void device_leave(struct device *d)
{
    struct user *u = d->user, **pp;
    struct device **dp;
    struct gw *g = d->gw;

    if (u == NULL)
        return;
    for (dp = &u->devs; *dp != d; dp = &(*dp)->next)
        ;
    *dp = d->next;
    d->user = NULL;
    if (u->devs != NULL)
        return;
    (void)unread_async_unsubscribe(g->a, u->channel);
    pp = user_slot(g, u->uid);
    *pp = u->next;
    free(u);
    g->nusers--;
}

static void device_close(struct device *d)
{
    device_leave(d);
    if (d->prev_all != NULL)
        d->prev_all->next_all = d->next_all;
    else
        d->gw->all = d->next_all;
    if (d->next_all != NULL)
        d->next_all->prev_all = d->prev_all;
    bufferevent_free(d->bev);
    d->gw->ndev--;
    free(d);
}

/* A uid: canonical decimal, 1 to 20 digits, at most 2^64 - 1. */
static bool parse_uid(const char *s, size_t n, uint64_t *uid)
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
    *uid = v;
    return true;
}

static void on_device_event(struct bufferevent *bev, short what, void *priv);

static void on_device_said(struct bufferevent *bev, void *priv)
{
    (void)bev;
    device_close(priv);
}

/* A device's lines: the first names its user; another moves it. */
static void on_device_read(struct bufferevent *bev, void *priv)
{
    struct device *d = priv;
    struct evbuffer *in = bufferevent_get_input(bev);
    uint64_t uid;
    size_t n;
    char *line;

    while ((line = evbuffer_readln(in, &n, EVBUFFER_EOL_CRLF)) != NULL) {
        bool ok = parse_uid(line, n, &uid);

        free(line);
        if (!ok) {
            /* said, then closed once the words are out */
            device_leave(d);
            bufferevent_disable(bev, EV_READ);
            bufferevent_setcb(bev, NULL, on_device_said, on_device_event, d);
            bufferevent_write(bev, "error bad uid\n", 14);
            return;
        }
        if (d->user != NULL && d->user->uid == uid)
            continue;
        device_leave(d);
        if (device_join(d, uid) != 0) {
            bufferevent_write(bev, "error out of memory\n", 20);
            device_close(d);
            return;
        }
    }
    if (evbuffer_get_length(in) > GW_MAX_LINE) {
        device_close(d); /* a line too long to be a uid */
    }
}

static void on_device_event(struct bufferevent *bev, short what, void *priv)
{
    (void)bev;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
        device_close(priv);
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd,
                      struct sockaddr *sa, int salen, void *priv)
{
    struct gw *g = priv;
    struct device *d;

    (void)l;
    (void)sa;
    (void)salen;
    if (g->ndev >= g->max_dev || (d = calloc(1, sizeof(*d))) == NULL) {
        evutil_closesocket(fd);
        return;
    }
    d->gw = g;
    d->bev = bufferevent_socket_new(g->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (d->bev == NULL) {
        evutil_closesocket(fd);
        free(d);
        return;
    }
    g->ndev++;
    d->next_all = g->all;
    if (g->all != NULL)
        g->all->prev_all = d;
    g->all = d;
    bufferevent_setcb(d->bev, on_device_read, NULL, on_device_event, d);
    bufferevent_enable(d->bev, EV_READ | EV_WRITE);
}

static void on_signal(evutil_socket_t sig, short what, void *priv)
{
    (void)sig;
    (void)what;
    event_base_loopbreak(priv);
}

int main(int argc, char **argv)
{
    struct gw g;
    struct sockaddr_in sin;
    socklen_t sl = sizeof(sin);
    struct evconnlistener *l;
    struct event *sig_int, *sig_term;
    struct unread_opts *o;
    char err[256];
    long port = argc > 2 ? strtol(argv[2], NULL, 10) : 7461;

    if (argc < 2 || argc > 4 || port < 0 || port > 65535) {
        fprintf(stderr, "usage: badge_gateway host:port[,...] [listen-port "
                        "[max-devices]]\n");
        return 2;
    }
    memset(&g, 0, sizeof(g));
    g.max_dev = argc > 3 ? strtoul(argv[3], NULL, 10) : 10000;
    signal(SIGPIPE, SIG_IGN);
    g.base = event_base_new();
    o = unread_opts_new();
    if (g.base == NULL || o == NULL)
        return 1;
    g.a = unread_async_connect(argv[1], o, err, sizeof(err));
    unread_opts_free(o);
    if (g.a == NULL || unread_async_libevent_attach(g.a, g.base) != 0) {
        fprintf(stderr, "badge_gateway: %s\n", g.a == NULL ? err : "attach");
        return 1;
    }
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port = htons((uint16_t)port);
    l = evconnlistener_new_bind(g.base, on_accept, &g,
                                LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, -1,
                                (struct sockaddr *)&sin, sizeof(sin));
    if (l == NULL) {
        fprintf(stderr, "badge_gateway: cannot listen on port %ld\n", port);
        return 1;
    }
    getsockname(evconnlistener_get_fd(l), (struct sockaddr *)&sin, &sl);
    printf("listening %u\n", (unsigned)ntohs(sin.sin_port));
    fflush(stdout);
    sig_int = evsignal_new(g.base, SIGINT, on_signal, g.base);
    sig_term = evsignal_new(g.base, SIGTERM, on_signal, g.base);
    event_add(sig_int, NULL);
    event_add(sig_term, NULL);
    event_base_dispatch(g.base);

    printf("final devices=%zu users=%zu forwarded=%llu dropped=%llu\n", g.ndev,
           g.nusers, (unsigned long long)g.forwarded,
           (unsigned long long)g.dropped);
    evconnlistener_free(l);
    while (g.all != NULL)
        device_close(g.all);
    unread_async_close(g.a);
    event_free(sig_int);
    event_free(sig_term);
    event_base_free(g.base);
    return 0;
}
