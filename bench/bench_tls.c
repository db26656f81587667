/*
 * bench_tls.c - see bench_tls.h.
 *
 * Partial writes and moving write buffers are allowed, as the server's
 * transport allows them (server/tls.c): the load engine retries a write
 * after EAGAIN from its output buffer's first unsent byte, and the buffer
 * may have grown (moved) in between. The context keeps no sessions, so
 * every handshake is a full one.
 */
#include "bench_tls.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>

#include "bench_wire.h"

static SSL_CTX *ctx;
/* The reason of this thread's last TLS failure in a read or write. */
static __thread char io_error[200];
/* What the first handshake of the run agreed on (set once, before any
 * other thread starts: connections are made before the run's threads). */
static char negotiated[96];

/* OpenSSL's first queued reason into buf, the queue emptied. */
static void ssl_reason(char *buf, size_t cap)
{
    unsigned long e = ERR_get_error();

    if (e == 0)
        snprintf(buf, cap, "no reason given");
    else
        ERR_error_string_n(e, buf, cap);
    ERR_clear_error();
}

int bench_tls_setup(const char *ca_file, const char *cert_file,
                    const char *key_file, char *err, size_t errlen)
{
    char why[200];

    ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL)
        goto fail;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                              SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    if (ca_file != NULL) {
        if (SSL_CTX_load_verify_locations(ctx, ca_file, NULL) != 1)
            goto fail;
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    }
    if (cert_file != NULL && key_file != NULL &&
        (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1 ||
         SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1 ||
         SSL_CTX_check_private_key(ctx) != 1))
        goto fail;
    return 0;
fail:
    ssl_reason(why, sizeof(why));
    snprintf(err, errlen, "TLS set-up: %s", why);
    SSL_CTX_free(ctx);
    ctx = NULL;
    return -1;
}

bool bench_tls_on(void)
{
    return ctx != NULL;
}

SSL *bench_tls_connect(int fd, char *err, size_t errlen)
{
    SSL *ssl = SSL_new(ctx);
    char why[200];
    int rc;

    if (ssl == NULL || SSL_set_fd(ssl, fd) != 1) {
        ssl_reason(why, sizeof(why));
        snprintf(err, errlen, "TLS: %s", why);
        SSL_free(ssl);
        return NULL;
    }
    rc = SSL_connect(ssl);
    if (rc != 1) {
        int e = SSL_get_error(ssl, rc);
        long v = SSL_get_verify_result(ssl);

        ssl_reason(why, sizeof(why));
        if (v != X509_V_OK)
            snprintf(err, errlen, "TLS handshake: certificate: %s",
                     X509_verify_cert_error_string(v));
        else if (e == SSL_ERROR_SYSCALL || e == SSL_ERROR_ZERO_RETURN)
            snprintf(err, errlen, "TLS handshake: the server closed (%s)",
                     errno ? strerror(errno) : "EOF");
        else
            snprintf(err, errlen, "TLS handshake: %s", why);
        SSL_free(ssl);
        return NULL;
    }
    if (negotiated[0] == '\0')
        snprintf(negotiated, sizeof(negotiated), "%s %s", SSL_get_version(ssl),
                 SSL_get_cipher_name(ssl));
    return ssl;
}

const char *bench_tls_negotiated(void)
{
    return negotiated;
}

void bench_tls_close(SSL *ssl)
{
    if (ssl == NULL)
        return;
    SSL_shutdown(ssl);
    SSL_free(ssl);
}

/* SSL_read / SSL_write's result rc in read(2)'s shape. */
static ssize_t io_result(SSL *ssl, int rc)
{
    switch (SSL_get_error(ssl, rc)) {
    case SSL_ERROR_NONE:
        return rc;
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN:
        return 0;
    case SSL_ERROR_SYSCALL:
        ERR_clear_error();
        if (errno == 0)
            return 0; /* EOF without close_notify */
        return -1;
    default:
        ssl_reason(io_error, sizeof(io_error));
        errno = EPROTO;
        return -1;
    }
}

ssize_t bench_tls_read(int fd, SSL *ssl, void *buf, size_t n)
{
    int rc;

    if (ssl == NULL)
        return read(fd, buf, n);
    if (n > INT32_MAX)
        n = INT32_MAX;
    errno = 0;
    rc = SSL_read(ssl, buf, (int)n);
    return rc > 0 ? rc : io_result(ssl, rc);
}

ssize_t bench_tls_write(int fd, SSL *ssl, const void *buf, size_t n)
{
    int rc;

    if (ssl == NULL)
        return send(fd, buf, n, MSG_NOSIGNAL);
    if (n > INT32_MAX)
        n = INT32_MAX;
    errno = 0;
    rc = SSL_write(ssl, buf, (int)n);
    return rc > 0 ? rc : io_result(ssl, rc);
}

const char *bench_tls_error(SSL *ssl, int err)
{
    return ssl != NULL && err == EPROTO ? io_error : strerror(err);
}

size_t bench_tls_pending(SSL *ssl)
{
    return ssl != NULL ? (size_t)SSL_pending(ssl) : 0;
}

/* ---- --handshakes ------------------------------------------------------- */

#define PING "*1\r\n$4\r\nPING\r\n"
#define PONG "+PONG\r\n"
#define PONG_TIMEOUT_MS 10000

struct hs_run {
    const char *host;
    uint16_t port;
    uint64_t stop_ns;
    atomic_uint_fast64_t done;
    atomic_bool failed;
    pthread_mutex_t lock;
    char err[256];
};

static uint64_t clock_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* PING, and the whole PONG read back: the server finished its side. */
static int ping(int fd, SSL *ssl, char *err, size_t errlen)
{
    char buf[16];
    size_t got = 0;
    struct pollfd p = {fd, POLLIN, 0};

    if (bench_tls_write(fd, ssl, PING, sizeof(PING) - 1) !=
        (ssize_t)sizeof(PING) - 1) {
        snprintf(err, errlen, "PING: %s", strerror(errno));
        return -1;
    }
    while (got < sizeof(PONG) - 1) {
        ssize_t n;

        if (bench_tls_pending(ssl) == 0 && poll(&p, 1, PONG_TIMEOUT_MS) != 1) {
            snprintf(err, errlen, "no PONG within %d ms", PONG_TIMEOUT_MS);
            return -1;
        }
        n = bench_tls_read(fd, ssl, buf + got, sizeof(PONG) - 1 - got);
        if (n < 0 && errno == EAGAIN)
            continue;
        if (n <= 0) {
            snprintf(err, errlen, "the server closed before PONG");
            return -1;
        }
        got += (size_t)n;
    }
    if (memcmp(buf, PONG, sizeof(PONG) - 1) != 0) {
        snprintf(err, errlen, "PING answered '%.*s'", (int)got, buf);
        return -1;
    }
    return 0;
}

static void *hs_main(void *arg)
{
    struct hs_run *r = arg;
    char err[256];

    while (!atomic_load(&r->failed) && clock_ns() < r->stop_ns) {
        int fd = bench_dial(r->host, r->port, err, sizeof(err));
        SSL *ssl = NULL;
        int rc = -1;

        if (fd >= 0 && (!bench_tls_on() ||
                        (ssl = bench_tls_connect(fd, err, sizeof(err)))))
            rc = ping(fd, ssl, err, sizeof(err));
        bench_tls_close(ssl);
        if (fd >= 0)
            close(fd);
        if (rc != 0) {
            pthread_mutex_lock(&r->lock);
            if (!atomic_exchange(&r->failed, true))
                snprintf(r->err, sizeof(r->err), "%s", err);
            pthread_mutex_unlock(&r->lock);
            break;
        }
        atomic_fetch_add(&r->done, 1);
    }
    return NULL;
}

int bench_tls_handshakes(const char *host, uint16_t port, unsigned threads,
                         double seconds, uint64_t *done, double *wall_s,
                         char *err, size_t errlen)
{
    struct hs_run r;
    pthread_t *th = calloc(threads, sizeof(*th));
    unsigned started = 0;
    uint64_t t0 = clock_ns();

    if (th == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memset(&r, 0, sizeof(r));
    r.host = host;
    r.port = port;
    r.stop_ns = t0 + (uint64_t)(seconds * 1e9);
    pthread_mutex_init(&r.lock, NULL);
    for (; started < threads; started++)
        if (pthread_create(&th[started], NULL, hs_main, &r) != 0)
            break;
    for (unsigned i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    free(th);
    pthread_mutex_destroy(&r.lock);
    *done = atomic_load(&r.done);
    *wall_s = (double)(clock_ns() - t0) / 1e9;
    if (started < threads) {
        snprintf(err, errlen, "cannot start a thread");
        return -1;
    }
    if (atomic_load(&r.failed)) {
        snprintf(err, errlen, "%s", r.err);
        return -1;
    }
    return 0;
}
