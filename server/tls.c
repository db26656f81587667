/*
 * tls.c - see tls.h. The settings follow Redis's tls.c (tlsCreateContext):
 * the same options, the same defaults, the same meaning of each key, so
 * that a Redis operator's configuration means the same here.
 *
 * The transport: each connection is one SSL on its socket (a socket BIO:
 * OpenSSL's reads and writes are the system calls net.c would make).
 * Partial writes and moving write buffers are allowed, so a write retried
 * after EAGAIN may come from a grown (moved) output buffer, as long as it
 * starts with the same bytes, which is how every caller retries. The
 * server's context reads ahead (one read(2) for the record header and
 * body, not two), hence tr_pending; idle connections give their record
 * buffers back (SSL_MODE_RELEASE_BUFFERS), so an idle TLS client costs
 * its session only (docs/PERFORMANCE.md, "TLS").
 */
#include "tls.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "log.h"

/* The bytes tr_sendfile moves per call over TLS: one record. */
#define SENDFILE_CHUNK 16384u

static SSL_CTX *server_ctx; /* accepted connections */
static SSL_CTX *client_ctx; /* this server's outgoing links */
static int64_t cert_not_after;
static uint64_t loads;

/* The text of the last failure (single-threaded: read right after). */
static char last_error[256];

/* ---- Building the contexts ---------------------------------------------- */

/* OpenSSL's queued errors as one line into buf ("" when none), the queue
 * emptied. */
static void ssl_errors(char *buf, size_t cap)
{
    unsigned long e;
    size_t used = 0;

    buf[0] = '\0';
    while ((e = ERR_get_error()) != 0) {
        char one[160];

        if (used + 3 >= cap)
            continue;
        ERR_error_string_n(e, one, sizeof(one));
        used += (size_t)snprintf(buf + used, cap - used, "%s%s",
                                 used ? "; " : "", one);
        if (used >= cap)
            used = cap - 1;
    }
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* err is fmt's message, then OpenSSL's reasons in parentheses: -1. */
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    ssl_errors(why, sizeof(why));
    if (why[0] != '\0' && n >= 0 && (size_t)n < errlen)
        snprintf(err + n, errlen - (size_t)n, " (%s)", why);
    return -1;
}

/* The passphrase of an encrypted key: userdata is the config's string. */
static int pass_cb(char *buf, int size, int rwflag, void *userdata)
{
    const char *pass = userdata;
    size_t n = pass != NULL ? strlen(pass) : 0;

    (void)rwflag;
    if (n == 0 || n >= (size_t)size)
        return 0;
    memcpy(buf, pass, n);
    return (int)n;
}

/* tls-protocols: the versions named (TLSv1, TLSv1.1, TLSv1.2, TLSv1.3;
 * "": the last two), the others turned off as Redis does. 0 with *off the
 * SSL_OP_NO_* options, or -1. */
static int protocols(const char *text, unsigned long *off, char *err,
                     size_t errlen)
{
    static const struct {
        const char *name;
        unsigned long op;
    } v[] = {{"TLSv1", SSL_OP_NO_TLSv1},
             {"TLSv1.1", SSL_OP_NO_TLSv1_1},
             {"TLSv1.2", SSL_OP_NO_TLSv1_2},
             {"TLSv1.3", SSL_OP_NO_TLSv1_3}};
    unsigned long on = 0, all = 0;
    const char *p = text;

    for (size_t i = 0; i < 4; i++)
        all |= v[i].op;
    if (text[0] == '\0') {
        *off = SSL_OP_NO_TLSv1 | SSL_OP_NO_TLSv1_1;
        return 0;
    }
    for (;;) {
        size_t len, i;

        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (*p == '\0')
            break;
        len = strcspn(p, " \t,");
        for (i = 0; i < 4; i++)
            if (strlen(v[i].name) == len && strncasecmp(p, v[i].name, len) == 0)
                break;
        if (i == 4) {
            snprintf(err, errlen,
                     "tls-protocols: '%.*s' is not one of TLSv1, TLSv1.1, "
                     "TLSv1.2, TLSv1.3",
                     (int)(len > 32 ? 32 : len), p);
            return -1;
        }
        on |= v[i].op;
        p += len;
    }
    if (on == 0) {
        snprintf(err, errlen, "tls-protocols: no protocol named");
        return -1;
    }
    *off = all & ~on;
    return 0;
}

/* A certificate and its key into ctx: 0 or -1 with err naming the files. */
static int load_pair(SSL_CTX *ctx, const char *cert, const char *key,
                     const char *pass, const char *what, char *err,
                     size_t errlen)
{
    SSL_CTX_set_default_passwd_cb(ctx, pass_cb);
    SSL_CTX_set_default_passwd_cb_userdata(ctx, (void *)(uintptr_t)pass);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) <= 0)
        return fail(err, errlen, "%s: cannot load the certificate %s", what,
                    cert);
    if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) <= 0)
        return fail(err, errlen,
                    "%s: cannot load the private key %s (a wrong or missing "
                    "passphrase?)",
                    what, key);
    if (SSL_CTX_check_private_key(ctx) != 1)
        return fail(err, errlen,
                    "%s: the private key %s does not match the certificate",
                    what, key);
    /* The callback's userdata is the caller's string: not kept. */
    SSL_CTX_set_default_passwd_cb_userdata(ctx, NULL);
    return 0;
}

static int load_dh(SSL_CTX *ctx, const char *file, char *err, size_t errlen)
{
    EVP_PKEY *dh = NULL;
    BIO *bio;

    if (file[0] == '\0') {
        SSL_CTX_set_dh_auto(ctx, 1);
        return 0;
    }
    bio = BIO_new_file(file, "r");
    if (bio != NULL)
        dh = PEM_read_bio_Parameters(bio, NULL);
    BIO_free(bio);
    if (dh == NULL || SSL_CTX_set0_tmp_dh_pkey(ctx, dh) != 1) {
        EVP_PKEY_free(dh);
        return fail(err, errlen, "tls-dh-params-file: cannot load %s", file);
    }
    return 0;
}

/*
 * One context: the server's (accepting) or the client's (connecting),
 * with what both share (protocols, ciphers, the CA). NULL with err.
 */
static SSL_CTX *ctx_build(const struct config *cfg, bool server, char *err,
                          size_t errlen)
{
    SSL_CTX *ctx =
        SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
    const char *ca_file =
        cfg->tls_ca_cert_file[0] ? cfg->tls_ca_cert_file : NULL;
    const char *ca_dir = cfg->tls_ca_cert_dir[0] ? cfg->tls_ca_cert_dir : NULL;
    unsigned long off;

    if (ctx == NULL) {
        fail(err, errlen, "TLS: cannot create a context");
        return NULL;
    }
    if (protocols(cfg->tls_protocols, &off, err, errlen) != 0)
        goto error;
    SSL_CTX_set_options(ctx, off | SSL_OP_NO_COMPRESSION |
                                 SSL_OP_NO_RENEGOTIATION |
                                 SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                              SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_RELEASE_BUFFERS);
    if (cfg->tls_ciphers[0] != '\0' &&
        SSL_CTX_set_cipher_list(ctx, cfg->tls_ciphers) != 1) {
        fail(err, errlen, "tls-ciphers: '%s' names no cipher",
             cfg->tls_ciphers);
        goto error;
    }
    if (cfg->tls_ciphersuites[0] != '\0' &&
        SSL_CTX_set_ciphersuites(ctx, cfg->tls_ciphersuites) != 1) {
        fail(err, errlen, "tls-ciphersuites: '%s' names no cipher suite",
             cfg->tls_ciphersuites);
        goto error;
    }
    if ((ca_file != NULL || ca_dir != NULL) &&
        SSL_CTX_load_verify_locations(ctx, ca_file, ca_dir) != 1) {
        fail(err, errlen,
             "tls-ca-cert-file / tls-ca-cert-dir: cannot load the CA "
             "certificates from %s",
             ca_file != NULL ? ca_file : ca_dir);
        goto error;
    }
    if (server) {
        if (load_pair(ctx, cfg->tls_cert_file, cfg->tls_key_file,
                      cfg->tls_key_file_pass, "tls-cert-file", err,
                      errlen) != 0 ||
            load_dh(ctx, cfg->tls_dh_params_file, err, errlen) != 0)
            goto error;
        if (cfg->tls_prefer_server_ciphers)
            SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
#ifdef SSL_OP_NO_CLIENT_RENEGOTIATION
        SSL_CTX_set_options(ctx, SSL_OP_NO_CLIENT_RENEGOTIATION);
#endif
        SSL_CTX_set_read_ahead(ctx, 1);
        if (cfg->tls_session_caching) {
            SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
            SSL_CTX_sess_set_cache_size(ctx, cfg->tls_session_cache_size);
            SSL_CTX_set_timeout(ctx, (long)cfg->tls_session_cache_timeout);
            SSL_CTX_set_session_id_context(ctx,
                                           (const unsigned char *)"unreadd", 7);
        } else {
            SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
            SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
        }
        switch (cfg->tls_auth_clients) {
        case TLS_AUTH_YES:
            SSL_CTX_set_verify(
                ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
            break;
        case TLS_AUTH_OPTIONAL:
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
            break;
        default:
            SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
        }
    } else {
        const char *cert = cfg->tls_client_cert_file[0]
                               ? cfg->tls_client_cert_file
                               : cfg->tls_cert_file;
        const char *key = cfg->tls_client_cert_file[0]
                              ? cfg->tls_client_key_file
                              : cfg->tls_key_file;
        const char *pass = cfg->tls_client_cert_file[0]
                               ? cfg->tls_client_key_file_pass
                               : cfg->tls_key_file_pass;

        if (cert[0] != '\0' &&
            load_pair(ctx, cert, key, pass,
                      cfg->tls_client_cert_file[0] ? "tls-client-cert-file"
                                                   : "tls-cert-file",
                      err, errlen) != 0)
            goto error;
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    }
    return ctx;

error:
    SSL_CTX_free(ctx);
    return NULL;
}

bool tls_wanted(const struct config *cfg)
{
    return cfg->tls_port != 0 || cfg->tls_replication || cfg->tls_cluster ||
           cfg->metrics_tls;
}

/* The end of validity of ctx's certificate, Unix seconds (0: unknown). */
static int64_t not_after(SSL_CTX *ctx)
{
    X509 *x = SSL_CTX_get0_certificate(ctx);
    struct tm tm;

    if (x == NULL || ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm) != 1)
        return 0;
    return (int64_t)timegm(&tm);
}

int tls_configure(const struct config *cfg, char *err, size_t errlen)
{
    SSL_CTX *srv_ctx = NULL, *cli_ctx = NULL;

    if (!tls_wanted(cfg))
        return 0;
    if (cfg->tls_cert_file[0] == '\0' || cfg->tls_key_file[0] == '\0') {
        snprintf(err, errlen,
                 "TLS (tls-port, tls-replication, tls-cluster or metrics-tls) "
                 "needs tls-cert-file and tls-key-file");
        return -1;
    }
    if (cfg->tls_ca_cert_file[0] == '\0' && cfg->tls_ca_cert_dir[0] == '\0' &&
        (cfg->tls_auth_clients != TLS_AUTH_NO || cfg->tls_replication ||
         cfg->tls_cluster)) {
        snprintf(err, errlen,
                 "TLS: tls-ca-cert-file or tls-ca-cert-dir is needed to "
                 "verify %s (or tls-auth-clients no)",
                 cfg->tls_auth_clients != TLS_AUTH_NO ? "clients" : "peers");
        return -1;
    }
    ERR_clear_error();
    srv_ctx = ctx_build(cfg, true, err, errlen);
    if (srv_ctx == NULL)
        return -1;
    cli_ctx = ctx_build(cfg, false, err, errlen);
    if (cli_ctx == NULL) {
        SSL_CTX_free(srv_ctx);
        return -1;
    }
    SSL_CTX_free(server_ctx);
    SSL_CTX_free(client_ctx);
    server_ctx = srv_ctx;
    client_ctx = cli_ctx;
    cert_not_after = not_after(srv_ctx);
    loads++;
    return 0;
}

void tls_teardown(void)
{
    SSL_CTX_free(server_ctx);
    SSL_CTX_free(client_ctx);
    server_ctx = client_ctx = NULL;
}

bool tls_ready(void)
{
    return server_ctx != NULL;
}

struct bufferevent *tls_http_bev(struct event_base *base, void *arg)
{
    SSL *ssl = server_ctx != NULL ? SSL_new(server_ctx) : NULL;
    struct bufferevent *bev;

    (void)arg;
    if (ssl == NULL)
        return NULL;
    bev = bufferevent_openssl_socket_new(
        base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL) {
        SSL_free(ssl);
        return NULL;
    }
    /* A scraper that closes without a TLS goodbye is not an error. */
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    return bev;
}

void tls_get_info(struct tls_info *out)
{
    memset(out, 0, sizeof(*out));
    out->cert_not_after = cert_not_after;
    out->loads = loads;
    if (server_ctx != NULL)
        out->session_hits = (uint64_t)SSL_CTX_sess_hits(server_ctx);
}

/* ---- The transport ------------------------------------------------------ */

/* A failure of ssl's last call: its text kept for tls_error, errno and
 * t->err set (EPROTO for the TLS library's own errors). */
static void failed(struct tr_conn *t, int code)
{
    SSL *ssl = t->ssl;
    char why[200];
    long v;

    ssl_errors(why, sizeof(why));
    if (code == SSL_ERROR_SYSCALL && why[0] == '\0') {
        t->err = errno != 0 && errno != EAGAIN ? errno : ECONNRESET;
    } else {
        t->err = EPROTO;
        v = SSL_get_verify_result(ssl);
        if (v != X509_V_OK)
            snprintf(last_error, sizeof(last_error),
                     "certificate verify failed: %s",
                     X509_verify_cert_error_string(v));
        else
            snprintf(last_error, sizeof(last_error), "%s",
                     why[0] ? why : "TLS error");
    }
    errno = t->err;
}

/* SSL_read / SSL_write / SSL_do_handshake returned r <= 0: -1 with errno
 * EAGAIN (t->want set), 0 for a clean end (close_notify), or -1 with the
 * failure. */
static ssize_t result(struct tr_conn *t, int r)
{
    int code = SSL_get_error(t->ssl, r);

    switch (code) {
    case SSL_ERROR_WANT_READ:
        t->want = TR_WANT_READ;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_WANT_WRITE:
        t->want = TR_WANT_WRITE;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN:
        return 0;
    default:
        failed(t, code);
        return -1;
    }
}

/* Whether a dotted or colon address (SNI carries names only). */
static bool is_address(const char *name)
{
    unsigned char buf[sizeof(struct in6_addr)];

    return inet_pton(AF_INET, name, buf) == 1 ||
           inet_pton(AF_INET6, name, buf) == 1;
}

static int tls_init(struct tr_conn *t, bool accept, const char *name)
{
    SSL_CTX *ctx = accept ? server_ctx : client_ctx;
    SSL *ssl;

    if (ctx == NULL) {
        snprintf(last_error, sizeof(last_error), "TLS is not configured");
        t->err = errno = EPROTO;
        return -1;
    }
    ERR_clear_error();
    ssl = SSL_new(ctx);
    if (ssl == NULL || SSL_set_fd(ssl, t->fd) != 1) {
        SSL_free(ssl);
        snprintf(last_error, sizeof(last_error), "out of memory");
        t->err = errno = ENOMEM;
        return -1;
    }
    if (accept) {
        SSL_set_accept_state(ssl);
    } else {
        SSL_set_connect_state(ssl);
        if (name != NULL && !is_address(name))
            SSL_set_tlsext_host_name(ssl, name);
    }
    t->ssl = ssl;
    return 0;
}

static int tls_handshake(struct tr_conn *t)
{
    ssize_t rc;
    int r;

    ERR_clear_error();
    r = SSL_do_handshake(t->ssl);
    if (r == 1)
        return 0;
    rc = result(t, r);
    if (rc < 0 && errno == EAGAIN)
        return 1;
    if (rc == 0 || t->err == 0) {
        t->err = EPROTO;
        snprintf(last_error, sizeof(last_error),
                 "closed by the peer during the handshake");
    }
    return -1;
}

static int io_len(size_t n)
{
    return n > INT_MAX ? INT_MAX : (int)n;
}

static ssize_t tls_read(struct tr_conn *t, void *buf, size_t n)
{
    int r;

    ERR_clear_error();
    r = SSL_read(t->ssl, buf, io_len(n));
    return r > 0 ? r : result(t, r);
}

static ssize_t tls_write(struct tr_conn *t, const void *buf, size_t n)
{
    ssize_t r;

    ERR_clear_error();
    r = SSL_write(t->ssl, buf, io_len(n));
    if (r > 0)
        return r;
    r = result(t, (int)r);
    if (r == 0) { /* the peer said goodbye: nothing more can be sent */
        t->err = errno = EPIPE;
        snprintf(last_error, sizeof(last_error), "closed by the peer");
        return -1;
    }
    return r;
}

/* Gathered into one record when small (one write(2), as writev would
 * be); else the first buffer alone, a short write. A retry after EAGAIN
 * presents the same bytes again, which SSL_write requires. */
static ssize_t tls_writev(struct tr_conn *t, const struct iovec *iov,
                          int iovcnt)
{
    static char gather[SENDFILE_CHUNK];
    size_t used = 0;
    int i;

    for (i = 0; i < iovcnt && iov[i].iov_len <= sizeof(gather) - used; i++) {
        memcpy(gather + used, iov[i].iov_base, iov[i].iov_len);
        used += iov[i].iov_len;
    }
    if (used > 0)
        return tls_write(t, gather, used);
    return i < iovcnt ? tls_write(t, iov[i].iov_base, iov[i].iov_len) : 0;
}

/* No kernel TLS: the file's bytes pass through a buffer, a record's worth
 * at a time. A retry after EAGAIN reads the same bytes again (*off has
 * not moved), as SSL_write requires. */
static ssize_t tls_sendfile(struct tr_conn *t, int in_fd, off_t *off, size_t n)
{
    static char chunk[SENDFILE_CHUNK];
    ssize_t got, w;

    got = pread(in_fd, chunk, n < sizeof(chunk) ? n : sizeof(chunk), *off);
    if (got <= 0)
        return got;
    w = tls_write(t, chunk, (size_t)got);
    if (w > 0)
        *off += w;
    return w;
}

static size_t tls_pending(const struct tr_conn *t)
{
    int n = SSL_pending(t->ssl);

    return n > 0 ? (size_t)n : (size_t)SSL_has_pending(t->ssl);
}

static void tls_close(struct tr_conn *t, bool close_fd)
{
    SSL *ssl = t->ssl;

    if (ssl != NULL) {
        /* A goodbye only on a healthy stream (never after a fatal error,
         * as OpenSSL requires), and without waiting for the peer's. */
        if (t->err == 0 && SSL_is_init_finished(ssl)) {
            ERR_clear_error();
            SSL_shutdown(ssl);
        }
        SSL_free(ssl);
        ERR_clear_error();
    }
    t->ssl = NULL;
    if (close_fd && t->fd >= 0)
        close(t->fd);
}

static const char *tls_error(const struct tr_conn *t)
{
    if (t->err == EPROTO)
        return last_error;
    return t->err != 0 ? strerror(t->err) : "closed";
}

const struct tr_type tr_tls = {
    "tls",      tls_init,     tls_handshake, tls_read,  tls_write,
    tls_writev, tls_sendfile, tls_pending,   tls_close, tls_error};
