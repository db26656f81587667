/*
 * migrate.c - see migrate.h. A small cache of blocking sockets, each with
 * a read buffer; poll() bounds every step.
 */
#include "migrate.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HOST_MAX 256
#define RBUF 4096

struct migrate_conn {
    int fd; /* -1: free */
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
        conns[i].fd = -1;
    conns_ready = true;
}

void migrate_close(struct migrate_conn *c)
{
    if (c == NULL || c->fd < 0)
        return;
    close(c->fd);
    c->fd = -1;
    c->rlen = c->rpos = 0;
}

void migrate_teardown(void)
{
    conns_init();
    for (int i = 0; i < MIGRATE_CONNS; i++)
        migrate_close(&conns[i]);
}

/* Waits for events on fd until deadline; 1 ready, 0 timeout, -1 error. */
static int wait_fd(int fd, short events, uint64_t deadline)
{
    for (;;) {
        uint64_t now = mono_ms();
        struct pollfd p = {fd, events, 0};
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

static int dial(const char *host, int port, uint64_t timeout_ms, char *err,
                size_t errlen)
{
    struct addrinfo hints = {0}, *res = NULL, *ai;
    char service[16];
    uint64_t deadline = mono_ms() + timeout_ms;
    int fd = -1, rc;

    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(service, sizeof(service), "%d", port);
    rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "cannot resolve %s: %s", host, gai_strerror(rc));
        return -1;
    }
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        int soerr = 0, one = 1;
        socklen_t sl = sizeof(soerr);

        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ||
            (errno == EINPROGRESS && wait_fd(fd, POLLOUT, deadline) == 1 &&
             getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 &&
             soerr == 0)) {
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            break;
        }
        snprintf(err, errlen, "connecting to %s:%d: %s", host, port,
                 soerr ? strerror(soerr) : "timed out");
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0 && ai == NULL && err[0] == '\0')
        snprintf(err, errlen, "connecting to %s:%d failed", host, port);
    return fd;
}

struct migrate_conn *migrate_connect(const char *host, int port,
                                     uint64_t timeout_ms, bool *reused,
                                     char *err, size_t errlen)
{
    uint64_t now = mono_ms();
    struct migrate_conn *c = NULL, *oldest = NULL;

    conns_init();
    err[0] = '\0';
    *reused = false;
    for (int i = 0; i < MIGRATE_CONNS; i++) {
        struct migrate_conn *k = &conns[i];

        if (k->fd >= 0 && now - k->last_ms > MIGRATE_KEEP_MS)
            migrate_close(k); /* idle too long: as Redis, 10 s */
        if (k->fd >= 0 && k->port == port && strcmp(k->host, host) == 0) {
            k->last_ms = now;
            *reused = true;
            return k;
        }
        if (c == NULL && k->fd < 0)
            c = k;
        if (k->fd >= 0 && (oldest == NULL || k->last_ms < oldest->last_ms))
            oldest = k;
    }
    if (c == NULL) {
        migrate_close(oldest);
        c = oldest;
    }
    if (strlen(host) >= HOST_MAX) {
        snprintf(err, errlen, "host name too long");
        return NULL;
    }
    c->fd = dial(host, port, timeout_ms, err, errlen);
    if (c->fd < 0)
        return NULL;
    snprintf(c->host, sizeof(c->host), "%s", host);
    c->port = port;
    c->last_ms = now;
    c->rlen = c->rpos = 0;
    return c;
}

int migrate_write(struct migrate_conn *c, const char *p, size_t n,
                  uint64_t timeout_ms)
{
    uint64_t deadline = mono_ms() + timeout_ms;

    while (n > 0) {
        ssize_t k = send(c->fd, p, n, MSG_NOSIGNAL);

        if (k > 0) {
            p += k;
            n -= (size_t)k;
            continue;
        }
        if (k < 0 && (errno == EAGAIN || errno == EINTR) &&
            wait_fd(c->fd, POLLOUT, deadline) == 1)
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
        ssize_t n;

        if (wait_fd(c->fd, POLLIN, deadline) != 1 ||
            (n = recv(c->fd, c->rbuf, sizeof(c->rbuf), 0)) <= 0) {
            migrate_close(c);
            return -1;
        }
        c->rlen = (size_t)n;
        c->rpos = 0;
    }
}
