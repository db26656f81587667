/*
 * unread_tls.c - see unread_tls.h.
 */
#include "unread_tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

struct uc_tls {
    SSL_CTX *ctx;
    bool verify;
    char *server_name; /* NULL: the host connected to */
};

/* OpenSSL's queued errors as one line after prefix, the queue emptied. */
static void ssl_err(char *err, size_t errlen, const char *prefix)
{
    unsigned long e;
    size_t used;

    snprintf(err, errlen, "%s", prefix);
    used = strlen(err);
    while ((e = ERR_get_error()) != 0) {
        char one[160];

        ERR_error_string_n(e, one, sizeof(one));
        if (used + 4 < errlen)
            used += (size_t)snprintf(err + used, errlen - used, "%s%s",
                                     used > strlen(prefix) ? "; " : ": ", one);
        if (used >= errlen)
            used = errlen - 1;
    }
}

static char *dup_or_null(const char *s, bool *oom)
{
    char *d;

    if (s == NULL)
        return NULL;
    d = strdup(s);
    if (d == NULL)
        *oom = true;
    return d;
}

int uc_tls_opts_copy(struct uc_tls_opts *dst, const struct uc_tls_opts *src)
{
    struct uc_tls_opts n = *src;
    bool oom = false;

    n.ca_file = dup_or_null(src->ca_file, &oom);
    n.ca_dir = dup_or_null(src->ca_dir, &oom);
    n.cert_file = dup_or_null(src->cert_file, &oom);
    n.key_file = dup_or_null(src->key_file, &oom);
    n.server_name = dup_or_null(src->server_name, &oom);
    if (oom) {
        uc_tls_opts_free(&n);
        return -1;
    }
    *dst = n;
    return 0;
}

void uc_tls_opts_free(struct uc_tls_opts *o)
{
    free(o->ca_file);
    free(o->ca_dir);
    free(o->cert_file);
    free(o->key_file);
    free(o->server_name);
    o->ca_file = o->ca_dir = o->cert_file = o->key_file = NULL;
    o->server_name = NULL;
}

struct uc_tls *uc_tls_new(const struct uc_tls_opts *o, bool *failed, char *err,
                          size_t errlen)
{
    struct uc_tls *t;

    *failed = false;
    if (!o->on)
        return NULL;
    *failed = true;
    t = calloc(1, sizeof(*t));
    if (t == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ERR_clear_error();
    t->verify = o->verify;
    t->ctx = SSL_CTX_new(TLS_client_method());
    if (t->ctx == NULL || (o->server_name != NULL &&
                           (t->server_name = strdup(o->server_name)) == NULL)) {
        ssl_err(err, errlen, "TLS: out of memory");
        goto error;
    }
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(t->ctx, SSL_OP_NO_COMPRESSION |
                                    SSL_OP_NO_RENEGOTIATION |
                                    SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_mode(t->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                                 SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (o->ca_file != NULL || o->ca_dir != NULL) {
        if (SSL_CTX_load_verify_locations(t->ctx, o->ca_file, o->ca_dir) != 1) {
            ssl_err(err, errlen, "TLS: cannot load the CA certificates");
            goto error;
        }
    } else if (SSL_CTX_set_default_verify_paths(t->ctx) != 1) {
        ssl_err(err, errlen, "TLS: cannot load the system's CA store");
        goto error;
    }
    if (o->cert_file != NULL) {
        const char *key = o->key_file != NULL ? o->key_file : o->cert_file;

        if (SSL_CTX_use_certificate_chain_file(t->ctx, o->cert_file) != 1) {
            ssl_err(err, errlen, "TLS: cannot load the client certificate");
            goto error;
        }
        if (SSL_CTX_use_PrivateKey_file(t->ctx, key, SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_check_private_key(t->ctx) != 1) {
            ssl_err(err, errlen, "TLS: cannot load the client key");
            goto error;
        }
    }
    SSL_CTX_set_verify(t->ctx, o->verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE,
                       NULL);
    *failed = false;
    return t;

error:
    uc_tls_free(t);
    return NULL;
}

void uc_tls_free(struct uc_tls *t)
{
    if (t == NULL)
        return;
    SSL_CTX_free(t->ctx);
    free(t->server_name);
    free(t);
}

static bool is_address(const char *name)
{
    unsigned char buf[sizeof(struct in6_addr)];

    return inet_pton(AF_INET, name, buf) == 1 ||
           inet_pton(AF_INET6, name, buf) == 1;
}

void *uc_tls_stream(struct uc_tls *t, int fd, const char *host, char *err,
                    size_t errlen)
{
    const char *name = t->server_name != NULL ? t->server_name : host;
    SSL *ssl;

    ERR_clear_error();
    ssl = SSL_new(t->ctx);
    if (ssl == NULL || SSL_set_fd(ssl, fd) != 1) {
        ssl_err(err, errlen, "TLS: out of memory");
        SSL_free(ssl);
        return NULL;
    }
    SSL_set_connect_state(ssl);
    if (name != NULL && !is_address(name))
        SSL_set_tlsext_host_name(ssl, name);
    if (t->verify && name != NULL) {
        X509_VERIFY_PARAM *vp = SSL_get0_param(ssl);
        int ok = is_address(name) ? X509_VERIFY_PARAM_set1_ip_asc(vp, name)
                                  : X509_VERIFY_PARAM_set1_host(vp, name, 0);

        if (ok != 1) {
            ssl_err(err, errlen, "TLS: bad server name");
            SSL_free(ssl);
            return NULL;
        }
    }
    return ssl;
}

/* An SSL call returned r <= 0: -1 with errno EAGAIN and *want, 0 at a
 * clean end, or -1 with a message (errno EPROTO or the system's). */
static ssize_t result(SSL *ssl, int r, int *want, char *err, size_t errlen)
{
    int code = SSL_get_error(ssl, r);
    long v;

    switch (code) {
    case SSL_ERROR_WANT_READ:
        *want = UC_TLS_READ;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_WANT_WRITE:
        *want = UC_TLS_WRITE;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN:
        return 0;
    case SSL_ERROR_SYSCALL:
        if (ERR_peek_error() == 0) {
            int e = errno != 0 && errno != EAGAIN ? errno : ECONNRESET;

            snprintf(err, errlen, "%s", strerror(e));
            errno = e;
            return -1;
        }
        /* fall through */
    default:
        v = SSL_get_verify_result(ssl);
        if (v != X509_V_OK) {
            snprintf(err, errlen, "certificate verify failed: %s",
                     X509_verify_cert_error_string(v));
            ERR_clear_error();
        } else {
            ssl_err(err, errlen, "TLS error");
        }
        errno = EPROTO;
        return -1;
    }
}

int uc_tls_handshake(void *ssl, int *want, char *err, size_t errlen)
{
    ssize_t rc;
    int r;

    ERR_clear_error();
    r = SSL_do_handshake(ssl);
    if (r == 1)
        return 0;
    rc = result(ssl, r, want, err, errlen);
    if (rc < 0 && errno == EAGAIN)
        return 1;
    if (rc == 0)
        snprintf(err, errlen, "closed by the server during the handshake");
    return -1;
}

static int io_len(size_t n)
{
    return n > INT_MAX ? INT_MAX : (int)n;
}

ssize_t uc_tls_recv(void *ssl, void *buf, size_t n, int *want, char *err,
                    size_t errlen)
{
    int r;

    ERR_clear_error();
    r = SSL_read(ssl, buf, io_len(n));
    return r > 0 ? r : result(ssl, r, want, err, errlen);
}

ssize_t uc_tls_send(void *ssl, const void *buf, size_t n, int *want, char *err,
                    size_t errlen)
{
    ssize_t rc;
    int r;

    ERR_clear_error();
    r = SSL_write(ssl, buf, io_len(n));
    if (r > 0)
        return r;
    rc = result(ssl, r, want, err, errlen);
    if (rc == 0) {
        snprintf(err, errlen, "closed by the server");
        errno = EPIPE;
        return -1;
    }
    return rc;
}

size_t uc_tls_pending(void *ssl)
{
    int n = SSL_pending(ssl);

    return n > 0 ? (size_t)n : 0;
}

void uc_tls_close(void *ssl, bool broken)
{
    if (ssl == NULL)
        return;
    if (!broken && SSL_is_init_finished(ssl)) {
        ERR_clear_error();
        SSL_shutdown(ssl);
    }
    SSL_free(ssl);
    ERR_clear_error();
}
