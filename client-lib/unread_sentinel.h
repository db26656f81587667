/*
 * unread_sentinel.h - servers found through redis-sentinel (docs/CLIENT.md,
 * "Sentinel"). With unread_opts_set_sentinels, each server of a handle is a
 * master name that the sentinels monitor instead of an address: before
 * every connect (the first, and each after a failure or a -READONLY) the
 * connection asks the sentinels, one after the other, where that master
 * is (SENTINEL get-master-addr-by-name), or for one of its healthy replicas
 * (SENTINEL replicas) when the handle reads from replicas. The ring
 * identity of such a server is its master name, so a failover moves no
 * key. Internal; not installed.
 */
#ifndef UNREAD_SENTINEL_H
#define UNREAD_SENTINEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unread_shard.h"

#define UC_SENTINEL_PORT 26379
#define UC_SENTINEL_HOST 256

/* One master name and where its sentinels said it is. */
struct uc_sentinel {
    struct uc_addr *sent; /* the sentinels, asked in turn */
    size_t nsent;
    size_t first;  /* the one that answered last: asked first */
    char *master;  /* the master name */
    bool replica;  /* a replica of it instead (reads) */
    uint32_t turn; /* which healthy replica, round robin */
    bool stale;    /* a -READONLY: ask again before the next request */
    char host[UC_SENTINEL_HOST]; /* the answer; "" before any */
    uint16_t port;
};

/*
 * The servers of a handle whose list names masters: names is
 * "name,name,..." (each once, at most UC_MAX_SERVERS), sentinels
 * "host:port,..." (port 26379 when omitted). Each address gets its own
 * struct uc_sentinel (freed by uc_addrs_free), host NULL until asked.
 * 0, or -1 with a message in err.
 */
int uc_sentinel_addrs(const char *names, const char *sentinels, bool replica,
                      struct uc_addr **out, size_t *n, char *err,
                      size_t errlen);
void uc_sentinel_free(struct uc_sentinel *s);

/*
 * Asks the sentinels where s's master (or a replica of it) is, each within
 * timeout_ms (<= 0: none), until one knows: 0 with s->host and s->port
 * set, or -1 with a message in err (no sentinel answered, or none knows
 * the name). With tls (the handle's, unread_tls.h) each sentinel is
 * spoken to over TLS, verified as a server is.
 */
struct uc_tls;
int uc_sentinel_resolve(struct uc_sentinel *s, struct uc_tls *tls,
                        int timeout_ms, char *err, size_t errlen);

#endif
