/*
 * tls.h - TLS with OpenSSL 3 (docs/OPERATIONS.md, "TLS"): the contexts
 * built from Redis's tls-* keys, and the TLS transport (transport.h) that
 * net.c, repl.c, cluster links and the metrics port run over.
 *
 * Two contexts: the server's (what accepted connections get: tls-cert-file
 * and tls-key-file, clients verified as tls-auth-clients says against
 * tls-ca-cert-file / tls-ca-cert-dir) and the client's (what this server's
 * own outgoing links get: replication with tls-replication, cluster links
 * with tls-cluster; the peer verified against the same CA, and
 * tls-client-cert-file, or else tls-cert-file, shown as this server's
 * certificate). They are built at start when any of tls-port,
 * tls-replication, tls-cluster or metrics-tls asks for TLS, and again by
 * CONFIG SET of any tls-* key: a new pair replaces the old one only when
 * it built, so a bad file refuses the CONFIG SET and changes nothing. A
 * connection keeps the context it started with (OpenSSL counts
 * references): rotating a certificate closes nobody.
 *
 * Nothing here runs while TLS is off: a plaintext server never calls into
 * OpenSSL.
 */
#ifndef UR_TLS_H
#define UR_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "transport.h"

struct bufferevent;
struct event_base;

extern const struct tr_type tr_tls;

/* Whether cfg uses TLS anywhere (tls-port, tls-replication, tls-cluster,
 * metrics-tls). */
bool tls_wanted(const struct config *cfg);

/*
 * Builds both contexts from cfg when tls_wanted (a no-op otherwise): 0,
 * or -1 with a message naming the key and file at fault. Also CONFIG
 * SET's check of a tls-* key (tls_configure with the configuration it
 * would make): the contexts are replaced only on success.
 */
int tls_configure(const struct config *cfg, char *err, size_t errlen);

/* Frees the contexts (connections still holding them keep them alive). */
void tls_teardown(void);

/* Whether the server's context is built (tls-port or metrics-tls can
 * serve). */
bool tls_ready(void);

/* metrics-tls: evhttp's bufferevent callback (evhttp_set_bevcb), so each
 * connection evhttp accepts is a TLS stream on the server's context
 * through libevent's OpenSSL bufferevent. NULL (evhttp drops the
 * connection) when TLS is off or out of memory. */
struct bufferevent *tls_http_bev(struct event_base *base, void *arg);

/* What INFO and /metrics show of the contexts: the certificate's end of
 * validity (Unix seconds; 0: none loaded) and how many times the
 * contexts were built. */
struct tls_info {
    int64_t cert_not_after;
    uint64_t loads;
    uint64_t session_hits; /* resumed handshakes (session cache, tickets) */
};
void tls_get_info(struct tls_info *out);

#endif
