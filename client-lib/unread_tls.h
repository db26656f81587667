/*
 * unread_tls.h - libunread's TLS (docs/CLIENT.md, "TLS"), with OpenSSL 3:
 * one context per handle, made from its options, and one TLS stream per
 * connection (unread_conn.c) over the connection's non-blocking socket.
 *
 * Verification is on unless the options turn it off: the server's
 * certificate must chain to the CA file or directory given (the system's
 * store when none is) and name the server: the name set with
 * unread_opts_set_tls_server_name, else the host connected to (a DNS name
 * against the certificate's names, an address against its IP
 * addresses). The name, when it is one, also goes in the SNI.
 *
 * The stream functions have the system calls' contract (recv/send: bytes,
 * 0 at the end, -1 with errno EAGAIN and *want set, or -1 with a message).
 * Internal; not installed.
 */
#ifndef UNREAD_TLS_H
#define UNREAD_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The TLS options of struct unread_opts (strings owned by it). */
struct uc_tls_opts {
    bool on;
    bool verify; /* on by default */
    char *ca_file, *ca_dir;
    char *cert_file, *key_file;
    char *server_name;
};

/* A handle's TLS context (opaque: an SSL_CTX with the options). */
struct uc_tls;

enum uc_tls_want { UC_TLS_READ = 1, UC_TLS_WRITE = 2 };

/* The context for o (NULL when TLS is off, or on failure with a message
 * in err: a file that does not load, out of memory). *failed tells
 * which. */
struct uc_tls *uc_tls_new(const struct uc_tls_opts *o, bool *failed, char *err,
                          size_t errlen);
void uc_tls_free(struct uc_tls *t);

/* Copies / frees the option strings (unread_opts_* setters). 0 or -1
 * when out of memory (dst then unchanged). */
int uc_tls_opts_copy(struct uc_tls_opts *dst, const struct uc_tls_opts *src);
void uc_tls_opts_free(struct uc_tls_opts *o);

/* A new stream over the connected socket fd, to a server reached as host
 * (for verification and SNI unless the options name the server): the
 * SSL, or NULL with a message. */
void *uc_tls_stream(struct uc_tls *t, int fd, const char *host, char *err,
                    size_t errlen);
/* One step of the handshake: 0 done, 1 again when *want's event comes,
 * -1 failed (a message in err: the verification's reason when that
 * failed). */
int uc_tls_handshake(void *ssl, int *want, char *err, size_t errlen);
ssize_t uc_tls_recv(void *ssl, void *buf, size_t n, int *want, char *err,
                    size_t errlen);
ssize_t uc_tls_send(void *ssl, const void *buf, size_t n, int *want, char *err,
                    size_t errlen);
/* Decrypted bytes waiting in the stream (poll cannot see them). */
size_t uc_tls_pending(void *ssl);
/* Says goodbye (close_notify, not waited for) unless broken, frees. */
void uc_tls_close(void *ssl, bool broken);

#endif
