/*
 * async_done.h - one asynchronous call at a time, for the test drivers
 * (tests/integration/cluster_client.c, tests/faults/failover_writer.c):
 * the call's callback records its result, and the driver polls the
 * handle until it has.
 */
#ifndef TESTS_ASYNC_DONE_H
#define TESTS_ASYNC_DONE_H

#include <signal.h>
#include <stdbool.h>

#include "unread.h"

struct done {
    bool fired;
    int rc;
};

static inline void on_done(struct unread_async *a, int rc, void *priv)
{
    struct done *d = priv;

    (void)a;
    d->fired = true;
    d->rc = rc;
}

/* Waits for d (the call was queued when rc is 0): its rc, or
 * UNREAD_ECLOSED when *stop (if given) was set first. */
static inline int finish(struct unread_async *a, int rc, struct done *d,
                         volatile sig_atomic_t *stop)
{
    if (rc != 0)
        return rc;
    while (!d->fired && (stop == NULL || !*stop))
        unread_async_poll(a, 100);
    return d->fired ? d->rc : UNREAD_ECLOSED;
}

#endif
