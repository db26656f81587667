/*
 * fuzz_tls.c - libFuzzer target for the TLS path of a connection: the
 * server's transport (server/tls.c under server/transport.h) taking a
 * connection, its non-blocking handshake, its reads, and the protocol
 * choice and framing of what it decrypts, as net.c does them.
 *
 * The first byte of an input picks the shape:
 *   even: the rest is what a client sends before any handshake (junk, a
 *         ClientHello cut anywhere, plaintext RESP to the TLS port): the
 *         handshake must fail or wait, never crash, never hand out bytes.
 *   odd:  an in-process OpenSSL client completes a real handshake with the
 *         server over a socketpair, then sends the rest as application
 *         data in records of the sizes the second byte picks; the server
 *         reads it through tr_read (records split and joined as they
 *         come) and parses it as a connection's requests: binary frames
 *         when the first decrypted byte is the frame magic, RESP
 *         otherwise, each up to its first framing error. What the server
 *         read must be exactly what the client sent.
 * The certificate is made in memory at start (an EC key, self-signed),
 * written to a scratch directory for tls_configure, as the server loads
 * its files.
 *
 *   make fuzz && build-fuzz/fuzz_tls tests/fuzz/corpus/tls
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "config.h"
#include "frame.h"
#include "resp.h"
#include "tls.h"
#include "transport.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define ASSERT(c)                                                              \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

#define MAX_ARGS 64
#define STEPS 64 /* handshake steps at most, each side */

static const struct ur_limits lim = {
    .max_frame = 1 << 16, .max_args = MAX_ARGS, .max_inline = 4096};
static struct ur_arg args[MAX_ARGS + 1];
static SSL_CTX *client_ctx;

/* A self-signed EC certificate and its key as PEM files in dir. */
static void make_cert(const char *crt, const char *key)
{
    EVP_PKEY *pk = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    FILE *f;

    ASSERT(pk != NULL && x != NULL);
    ASSERT(ASN1_INTEGER_set(X509_get_serialNumber(x), 1) == 1);
    ASSERT(X509_gmtime_adj(X509_getm_notBefore(x), -3600) != NULL);
    ASSERT(X509_gmtime_adj(X509_getm_notAfter(x), 86400L * 365) != NULL);
    ASSERT(X509_set_pubkey(x, pk) == 1);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                               (const unsigned char *)"localhost", -1, -1, 0);
    ASSERT(X509_set_issuer_name(x, X509_get_subject_name(x)) == 1);
    ASSERT(X509_sign(x, pk, EVP_sha256()) > 0);
    ASSERT((f = fopen(crt, "w")) != NULL);
    ASSERT(PEM_write_X509(f, x) == 1);
    fclose(f);
    ASSERT((f = fopen(key, "w")) != NULL);
    ASSERT(PEM_write_PrivateKey(f, pk, NULL, NULL, 0, NULL, NULL) == 1);
    fclose(f);
    X509_free(x);
    EVP_PKEY_free(pk);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static struct config cfg;
    char dir[] = "/tmp/fuzz-tls-XXXXXX", err[512];

    (void)argc, (void)argv;
    ASSERT(mkdtemp(dir) != NULL);
    config_init(&cfg);
    cfg.tls_port = 1; /* tls_wanted: the contexts are built */
    snprintf(cfg.tls_cert_file, sizeof(cfg.tls_cert_file), "%s/s.crt", dir);
    snprintf(cfg.tls_key_file, sizeof(cfg.tls_key_file), "%s/s.key", dir);
    cfg.tls_auth_clients = TLS_AUTH_NO;
    make_cert(cfg.tls_cert_file, cfg.tls_key_file);
    if (tls_configure(&cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "fuzz_tls: %s\n", err);
        abort();
    }
    unlink(cfg.tls_cert_file);
    unlink(cfg.tls_key_file);
    rmdir(dir);
    client_ctx = SSL_CTX_new(TLS_client_method());
    ASSERT(client_ctx != NULL);
    SSL_CTX_set_verify(client_ctx, SSL_VERIFY_NONE, NULL);
    return 0;
}

/* Parses a connection's decrypted bytes as net.c does: the protocol from
 * the first byte, requests up to the first framing error. */
static void parse(const char *buf, size_t len)
{
    size_t off = 0;

    while (off < len) {
        size_t used = 0, hint = 0;
        uint32_t argc = 0;
        enum ur_parse st;

        if ((uint8_t)buf[0] == UR_FRAME_MAGIC) {
            struct ur_frame_req req;

            st = ur_frame_parse_request(buf + off, len - off, &lim, args, &req,
                                        &used, &hint);
        } else {
            st = ur_resp_parse_request(buf + off, len - off, &lim, args, &argc,
                                       &used, &hint);
        }
        if (st != UR_PARSE_OK)
            break;
        ASSERT(used > 0 && used <= len - off);
        off += used;
    }
}

/* Junk before any handshake: the server must not get past it. */
static void before_handshake(const uint8_t *data, size_t size)
{
    struct tr_conn t;
    char buf[4096];
    int sv[2], rc = 1;

    ASSERT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
    if (size > 0) {
        ssize_t w = write(sv[1], data, size); /* what fits: the rest is cut */

        ASSERT(w > 0);
    }
    shutdown(sv[1], SHUT_WR);
    ASSERT(tr_accept(&t, &tr_tls, sv[0]) == 0);
    for (int i = 0; i < STEPS && rc == 1; i++)
        rc = tr_handshake(&t);
    /* Random bytes cannot complete a handshake with no client to answer
     * the server's flight: it failed, or it waits for more. */
    ASSERT(rc != 0);
    ASSERT(tr_read(&t, buf, sizeof(buf)) <= 0);
    tr_close(&t);
    close(sv[1]);
}

/* A real handshake, then data in records of chosen sizes. */
static void after_handshake(uint8_t sizes, const uint8_t *data, size_t size)
{
    struct tr_conn t;
    SSL *c;
    int sv[2], srv_rc = 1, cli_rc = -1;
    char *got = malloc(size + 1);
    size_t have = 0, sent = 0;

    ASSERT(got != NULL);
    ASSERT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
    ASSERT(tr_accept(&t, &tr_tls, sv[0]) == 0);
    ASSERT((c = SSL_new(client_ctx)) != NULL);
    SSL_set_fd(c, sv[1]);
    SSL_set_connect_state(c);
    for (int i = 0; i < STEPS && (srv_rc != 0 || cli_rc != 1); i++) {
        if (cli_rc != 1)
            cli_rc = SSL_do_handshake(c);
        if (srv_rc == 1)
            srv_rc = tr_handshake(&t);
        ASSERT(srv_rc >= 0);
    }
    ASSERT(srv_rc == 0 && cli_rc == 1);
    /* The client writes records of 1..255 bytes (0: as large as OpenSSL
     * makes them) while the server reads, until the client's
     * close_notify reaches the server (tr_read 0). */
    for (int i = 0; i < 1 << 20; i++) {
        ssize_t n;

        if (sent < size) {
            size_t k = sizes == 0 ? size - sent : (size_t)sizes;
            int w;

            if (k > size - sent)
                k = size - sent;
            w = SSL_write(c, data + sent, (int)k);
            if (w > 0)
                sent += (size_t)w;
            else
                ASSERT(SSL_get_error(c, w) == SSL_ERROR_WANT_WRITE);
            if (sent == size)
                SSL_shutdown(c);
        } else if (size == 0 && i == 0) {
            SSL_shutdown(c);
        }
        n = tr_read(&t, got + have, size + 1 - have);
        if (n > 0) {
            have += (size_t)n;
            ASSERT(have <= size);
        } else if (n == 0) {
            break;
        } else {
            ASSERT(errno == EAGAIN);
        }
    }
    ASSERT(have == size && memcmp(got, data, size) == 0);
    if (have > 0)
        parse(got, have);
    SSL_free(c);
    tr_close(&t);
    close(sv[1]);
    free(got);
    ERR_clear_error();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if ((data[0] & 1) == 0)
        before_handshake(data + 1, size - 1);
    else if (size >= 2)
        after_handshake(data[1], data + 2, size - 2);
    return 0;
}
