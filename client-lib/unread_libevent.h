/*
 * unread_libevent.h - runs a libunread asynchronous handle on a libevent
 * event_base (docs/CLIENT.md, "Asynchronous handle"):
 *
 *     #include <event2/event.h>
 *     #include <unread.h>
 *     #include <unread_libevent.h>
 *
 *     struct unread_async *a = unread_async_connect(servers, o, err, n);
 *     unread_async_libevent_attach(a, base);
 *     ... queue requests; event_base_dispatch(base) runs them ...
 *     unread_async_close(a);          (detaches the adapter)
 *
 * Header only, as hiredis's adapters are: libunread itself does not link
 * libevent, so only programs that include this header need it (link
 * them with `pkg-config --libs unread libevent`). The adapter keeps one
 * event per server socket and one timer; it uses only the public hooks of
 * unread.h (unread_async_attach), so a loop library without an adapter
 * can be driven the same way. Threads: the handle and the event_base must
 * be used from one thread.
 */
#ifndef UNREAD_LIBEVENT_H
#define UNREAD_LIBEVENT_H

#include <stdlib.h>

#include <event2/event.h>

#include "unread.h"

struct unread_libevent {
    struct unread_async *a;
    struct event_base *base;
    struct event *timer;
    size_t n;
    struct {
        struct event *ev;
        int fd;
        int events;
    } * srv;
};

static inline void unread_libevent_on_io(evutil_socket_t fd, short what,
                                         void *arg)
{
    struct unread_libevent *le = (struct unread_libevent *)arg;
    int ev = 0;

    if (what & EV_READ)
        ev |= UNREAD_EV_READ;
    if (what & EV_WRITE)
        ev |= UNREAD_EV_WRITE;
    unread_async_handle_events(le->a, (int)fd, ev);
}

static inline void unread_libevent_on_timer(evutil_socket_t fd, short what,
                                            void *arg)
{
    struct unread_libevent *le = (struct unread_libevent *)arg;

    (void)fd;
    (void)what;
    unread_async_handle_timeout(le->a);
}

static inline void unread_libevent_watch(void *data, size_t i, int fd,
                                         int events)
{
    struct unread_libevent *le = (struct unread_libevent *)data;
    short what = EV_PERSIST;

    if (i >= le->n)
        return;
    if (le->srv[i].ev != NULL &&
        (le->srv[i].fd != fd || events != le->srv[i].events)) {
        event_free(le->srv[i].ev);
        le->srv[i].ev = NULL;
    }
    le->srv[i].fd = fd;
    le->srv[i].events = events;
    if (fd < 0 || events == 0 || le->srv[i].ev != NULL)
        return;
    if (events & UNREAD_EV_READ)
        what |= EV_READ;
    if (events & UNREAD_EV_WRITE)
        what |= EV_WRITE;
    le->srv[i].ev = event_new(le->base, fd, what, unread_libevent_on_io, le);
    if (le->srv[i].ev != NULL)
        event_add(le->srv[i].ev, NULL);
}

static inline void unread_libevent_timer(void *data, int ms)
{
    struct unread_libevent *le = (struct unread_libevent *)data;
    struct timeval tv;

    if (ms < 0) {
        event_del(le->timer);
        return;
    }
    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    event_add(le->timer, &tv);
}

static inline void unread_libevent_detach(void *data)
{
    struct unread_libevent *le = (struct unread_libevent *)data;
    size_t i;

    for (i = 0; i < le->n; i++)
        if (le->srv[i].ev != NULL)
            event_free(le->srv[i].ev);
    event_free(le->timer);
    free(le->srv);
    free(le);
}

/* Attaches a to base: 0, or UNREAD_ENOMEM, or UNREAD_EUSAGE when a is
 * already attached to a loop. The adapter is freed by unread_async_close. */
static inline int unread_async_libevent_attach(struct unread_async *a,
                                               struct event_base *base)
{
    struct unread_libevent *le =
        (struct unread_libevent *)calloc(1, sizeof(*le));
    struct unread_async_hooks h;
    size_t i;
    int rc;

    if (le == NULL)
        return UNREAD_ENOMEM;
    le->a = a;
    le->base = base;
    le->n = unread_async_shards(a);
    le->srv = calloc(le->n, sizeof(*le->srv));
    le->timer = evtimer_new(base, unread_libevent_on_timer, le);
    if (le->srv == NULL || le->timer == NULL) {
        if (le->timer != NULL)
            event_free(le->timer);
        free(le->srv);
        free(le);
        return UNREAD_ENOMEM;
    }
    for (i = 0; i < le->n; i++)
        le->srv[i].fd = -1;
    h.data = le;
    h.watch = unread_libevent_watch;
    h.timer = unread_libevent_timer;
    h.detach = unread_libevent_detach;
    rc = unread_async_attach(a, &h);
    if (rc != 0)
        unread_libevent_detach(le);
    return rc;
}

#endif
