/*
 * migrate.c - see migrate.h. A small cache of connections (transport.h:
 * TCP or TLS), each with a read buffer; the socket is non-blocking and
 * poll() on what the stream wants bounds every step.
 */
#include "migrate.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tls.h"
#include "transport.h"

#define HOST_MAX 256
#define RBUF 4096

struct migrate_conn {
    struct tr_conn tr; /* tr.fd -1: free */
    bool tls;
    int port;
    char host[HOST_MAX];
    uint64_t last_ms;
    char rbuf[RBUF];
    size_t rlen, rpos;
};

static struct migrate_conn conns[MIGRATE_CONNS];
static bool conns_ready;

static uint64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void conns_init(void)
{
    if (conns_ready)
        return;
    for (int i = 0; i < MIGRATE_CONNS; i++)
        conns[i].tr.fd = -1;
    conns_ready = true;
}

void migrate_close(struct migrate_conn *c)
{
    if (c == NULL || c->tr.fd < 0)
        return;
    tr_close(&c->tr);
    c->tr.fd = -1;
    c->rlen = c->rpos = 0;
}

void migrate_teardown(void)
{
    conns_init();
    for (int i = 0; i < MIGRATE_CONNS; i++)
        migrate_close(&conns[i]);
}

/* Waits until the stream's want (read or write) is ready, or deadline:
 * 1 ready, 0 timeout, -1 error. */
static int wait_want(struct tr_conn *t, uint64_t deadline)
{
    short ev = t->want == TR_WANT_WRITE ? POLLOUT : POLLIN;

    for (;;) {
        uint64_t now = mono_ms();
        struct pollfd p = {t->fd, ev, 0};
        int rc;

        if (now >= deadline)
            return 0;
        rc =
            poll(&p, 1, (int)(deadline - now > 60000 ? 60000 : deadline - now));
        if (rc > 0)
            return 1;
        if (rc < 0 && errno != EINTR)
            return -1;
    }
}

/* Connects c->tr to host:port over TCP or TLS within timeout_ms. */
static int dial(struct migrate_conn *c, const char *host, int port, bool tls,
                uint64_t timeout_ms, char *err, size_t errlen)
{
    uint64_t deadline = mono_ms() + timeout_ms;
    int rc;

    if (tr_connect(&c->tr, tls ? &tr_tls : &tr_tcp, host, (uint32_t)port, err,
                   errlen) != 0) {
        c->tr.fd = -1;
        return -1;
    }
    while ((rc = tr_handshake(&c->tr)) == 1)
        if (wait_want(&c->tr, deadline) != 1) {
            snprintf(err, errlen, "connecting to %s:%d: timed out", host, port);
            migrate_close(c);
            return -1;
        }
    if (rc != 0) {
        snprintf(err, errlen, "connecting to %s:%d: %s", host, port,
                 tr_error(&c->tr));
        migrate_close(c);
        return -1;
    }
    return 0;
}

struct migrate_conn *migrate_connect(const char *host, int port, bool tls,
                                     uint64_t timeout_ms, bool *reused,
                                     char *err, size_t errlen)
{
    uint64_t now = mono_ms();
    struct migrate_conn *c = NULL, *oldest = NULL;

    conns_init();
    err[0] = '\0';
    *reused = false;
    if (strlen(host) >= HOST_MAX) {
        snprintf(err, errlen, "host name too long");
        return NULL;
    }
    for (int i = 0; i < MIGRATE_CONNS; i++) {
        struct migrate_conn *k = &conns[i];

        if (k->tr.fd >= 0 && now - k->last_ms > MIGRATE_KEEP_MS)
            migrate_close(k); /* idle too long: as Redis, 10 s */
        if (k->tr.fd >= 0 && k->port == port && k->tls == tls &&
            strcmp(k->host, host) == 0) {
            k->last_ms = now;
            *reused = true;
            return k;
        }
        if (c == NULL && k->tr.fd < 0)
            c = k;
        if (k->tr.fd >= 0 && (oldest == NULL || k->last_ms < oldest->last_ms))
            oldest = k;
    }
    if (c == NULL) {
        migrate_close(oldest);
        c = oldest;
    }
    if (dial(c, host, port, tls, timeout_ms, err, errlen) != 0)
        return NULL;
    snprintf(c->host, sizeof(c->host), "%s", host);
    c->port = port;
    c->tls = tls;
    c->last_ms = now;
    c->rlen = c->rpos = 0;
    return c;
}

int migrate_write(struct migrate_conn *c, const char *p, size_t n,
                  uint64_t timeout_ms)
{
    uint64_t deadline = mono_ms() + timeout_ms;

    while (n > 0) {
        ssize_t k = tr_write(&c->tr, p, n);

        if (k > 0) {
            p += k;
            n -= (size_t)k;
            continue;
        }
        if (k < 0 && (errno == EAGAIN || errno == EINTR) &&
            wait_want(&c->tr, deadline) == 1)
            continue;
        migrate_close(c);
        return -1;
    }
    c->last_ms = mono_ms();
    return 0;
}

int migrate_read_line(struct migrate_conn *c, char *line, size_t cap,
                      uint64_t timeout_ms)
{
    uint64_t deadline = mono_ms() + timeout_ms;
    size_t k = 0;
    bool cr = false;

    for (;;) {
        ssize_t n;

        while (c->rpos < c->rlen) {
            char ch = c->rbuf[c->rpos++];

            if (cr && ch == '\n') {
                line[k] = '\0';
                c->last_ms = mono_ms();
                if (line[0] != '+' && line[0] != '-' && line[0] != ':') {
                    migrate_close(c);
                    return -1;
                }
                return 0;
            }
            if (cr && k + 1 < cap)
                line[k++] = '\r';
            cr = ch == '\r';
            if (!cr && k + 1 < cap)
                line[k++] = ch;
        }
        n = tr_read(&c->tr, c->rbuf, sizeof(c->rbuf));
        if (n > 0) {
            c->rlen = (size_t)n;
            c->rpos = 0;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR) &&
            wait_want(&c->tr, deadline) == 1)
            continue;
        migrate_close(c);
        return -1;
    }
}
