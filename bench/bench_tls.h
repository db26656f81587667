/*
 * bench_tls.h - unread-bench over TLS (--tls, --cacert, --cert, --key):
 * one client context for the run, a blocking handshake on each connected
 * socket before the run starts, then reads and writes shaped like
 * read(2) and send(2) (-1 with errno EAGAIN when OpenSSL wants the socket
 * again), so the load engine (bench_run.c) keeps one code path for both.
 * A bench concern only: OpenSSL directly, not libunread's TLS, so the
 * client's cost per byte is the same for unreadd's binary frames and
 * Redis's RESP (bench/tls.py, `make bench-tls`).
 *
 * A NULL SSL means plaintext everywhere below.
 */
#ifndef BENCH_TLS_H
#define BENCH_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <openssl/ssl.h>

/*
 * The run's client context: the server's certificate checked against
 * ca_file (NULL: not checked), cert_file / key_file presented when both
 * are given (servers with tls-auth-clients yes). 0, or -1 with a message.
 */
int bench_tls_setup(const char *ca_file, const char *cert_file,
                    const char *key_file, char *err, size_t errlen);
/* bench_tls_setup succeeded: every connection is to be TLS. */
bool bench_tls_on(void);

/*
 * A full handshake on fd (connected, blocking, no session resumed): the
 * SSL, or NULL with a message. fd stays the caller's to close.
 */
SSL *bench_tls_connect(int fd, char *err, size_t errlen);
/* The protocol version and cipher suite of the run's first handshake
 * ("TLSv1.3 TLS_AES_256_GCM_SHA384"), or "" before one. */
const char *bench_tls_negotiated(void);
/* Sends close_notify (without waiting for the peer's) and frees ssl. */
void bench_tls_close(SSL *ssl);

/* read(2) and send(2) on fd, or SSL_read / SSL_write on ssl. EOF is 0;
 * OpenSSL's WANT_READ / WANT_WRITE are -1 with errno EAGAIN, its other
 * failures -1 with errno EPROTO (or the system call's errno). */
ssize_t bench_tls_read(int fd, SSL *ssl, void *buf, size_t n);
ssize_t bench_tls_write(int fd, SSL *ssl, const void *buf, size_t n);
/* What a failed bench_tls_read / bench_tls_write's errno err means: TLS's
 * reason (an alert from the server, a bad record), or strerror(err). */
const char *bench_tls_error(SSL *ssl, int err);
/* Decrypted bytes OpenSSL holds for ssl that a read would return without
 * touching the socket (0 for plaintext). */
size_t bench_tls_pending(SSL *ssl);

/*
 * --handshakes: `threads` threads, each a loop of connect + full TLS
 * handshake + close (plaintext: connect + close) to host:port for
 * `seconds`. The handshakes completed into *done. 0, or -1 with a message
 * (a failed connect or handshake ends the run).
 */
int bench_tls_handshakes(const char *host, uint16_t port, unsigned threads,
                         double seconds, uint64_t *done, double *wall_s,
                         char *err, size_t errlen);

#endif
