/*
 * transport.c - see transport.h: the TCP transport, and the connect and
 * handshake steps every transport shares.
 */
#include "transport.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- TCP ---------------------------------------------------------------- */

static int tcp_init(struct tr_conn *t, bool accept, const char *name)
{
    (void)t, (void)accept, (void)name;
    return 0;
}

static int tcp_handshake(struct tr_conn *t)
{
    (void)t;
    return 0;
}

/* A failure's errno for tr_error; EAGAIN waits for the event of want. */
static ssize_t tcp_result(struct tr_conn *t, ssize_t n, uint8_t want)
{
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            t->want = want;
        else if (errno != EINTR)
            t->err = errno;
    }
    return n;
}

static ssize_t tcp_read(struct tr_conn *t, void *buf, size_t n)
{
    return tcp_result(t, read(t->fd, buf, n), TR_WANT_READ);
}

static ssize_t tcp_write(struct tr_conn *t, const void *buf, size_t n)
{
    return tcp_result(t, write(t->fd, buf, n), TR_WANT_WRITE);
}

static ssize_t tcp_writev(struct tr_conn *t, const struct iovec *iov,
                          int iovcnt)
{
    return tcp_result(t, writev(t->fd, iov, iovcnt), TR_WANT_WRITE);
}

static ssize_t tcp_sendfile(struct tr_conn *t, int in_fd, off_t *off, size_t n)
{
    return tcp_result(t, sendfile(t->fd, in_fd, off, n), TR_WANT_WRITE);
}

static size_t tcp_pending(const struct tr_conn *t)
{
    (void)t;
    return 0;
}

static void tcp_close(struct tr_conn *t, bool close_fd)
{
    if (close_fd && t->fd >= 0)
        close(t->fd);
}

static const char *tcp_error(const struct tr_conn *t)
{
    return t->err != 0 ? strerror(t->err) : "closed";
}

const struct tr_type tr_tcp = {
    "tcp",      tcp_init,     tcp_handshake, tcp_read,  tcp_write,
    tcp_writev, tcp_sendfile, tcp_pending,   tcp_close, tcp_error};

/* ---- Every transport ---------------------------------------------------- */

int tr_accept(struct tr_conn *t, const struct tr_type *type, int fd)
{
    memset(t, 0, sizeof(*t));
    t->type = type;
    t->fd = fd;
    t->state = type == &tr_tcp ? TR_READY : TR_HANDSHAKE;
    t->want = TR_WANT_READ;
    if (type->init(t, true, NULL) != 0) {
        t->fd = -1;
        return -1;
    }
    return 0;
}

int tr_connect(struct tr_conn *t, const struct tr_type *type, const char *host,
               uint32_t port, char *err, size_t errlen)
{
    struct addrinfo hints, *res = NULL, *ai;
    char portstr[8];
    int fd = -1, one = 1, rc, e = 0;

    memset(t, 0, sizeof(*t));
    t->type = type;
    t->fd = -1;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(portstr, sizeof(portstr), "%u", port);
    rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "cannot resolve %s: %s", host, gai_strerror(rc));
        return -1;
    }
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    0);
        if (fd < 0) {
            e = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ||
            errno == EINPROGRESS)
            break;
        e = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        snprintf(err, errlen, "cannot connect to %s:%u: %s", host, port,
                 strerror(e));
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    t->fd = fd;
    if (type->init(t, false, host) != 0) {
        snprintf(err, errlen, "%s to %s:%u: %s", type->name, host, port,
                 type->error(t));
        close(fd);
        t->fd = -1;
        return -1;
    }
    t->state = TR_CONNECTING;
    t->want = TR_WANT_WRITE;
    return 0;
}

int tr_handshake(struct tr_conn *t)
{
    if (t->state == TR_CONNECTING) {
        int soerr = 0;
        socklen_t len = sizeof(soerr);

        if (getsockopt(t->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0)
            soerr = errno;
        if (soerr != 0) {
            t->err = soerr;
            return -1;
        }
        t->state = TR_HANDSHAKE;
    }
    if (t->state == TR_HANDSHAKE) {
        int rc = t->type->handshake(t);

        if (rc != 0)
            return rc;
        t->state = TR_READY;
    }
    t->want = TR_WANT_NONE;
    return 0;
}

void tr_close(struct tr_conn *t)
{
    if (t->type == NULL || (t->fd < 0 && t->ssl == NULL))
        return;
    t->type->close(t, true);
    t->fd = -1;
    t->ssl = NULL;
}
