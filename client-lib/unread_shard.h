/*
 * unread_shard.h - libunread's cluster arithmetic, pure (no sockets, no
 * clock of its own): the server list, the consistent-hash ring that maps a
 * uid or gid to a server, and the per-server circuit breaker. Internal to
 * the library (and its unit test); not installed.
 */
#ifndef UNREAD_SHARD_H
#define UNREAD_SHARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UC_MAX_SERVERS 1024
#define UC_MAX_RING (1u << 20) /* servers x points per server */

/* One server of a list. name ("host:port", IPv6 hosts in brackets) is its
 * identity on the ring. */
struct uc_addr {
    char *host;
    uint16_t port;
    char *name;
    struct uc_sentinel *sentinel; /* a master name (unread_sentinel.h) */
};

/*
 * Parses "host:port,host:port,..." (":port" may be omitted for the default
 * port; an IPv6 host is written "[::1]:7460"; blanks around items are
 * ignored). At most UC_MAX_SERVERS servers, each named once. Returns 0 and
 * an array owned by the caller (free with uc_addrs_free), or -1 with a
 * message in err.
 */
int uc_addrs_parse(const char *list, uint16_t default_port,
                   struct uc_addr **out, size_t *n, char *err, size_t errlen);
void uc_addrs_free(struct uc_addr *a, size_t n);
/* One address from a host (hlen bytes, an IPv6 one without brackets) and
 * a port, as parsed from a list: 0, or -1 (empty or too long host, out of
 * memory) with *a zeroed. */
int uc_addr_make(struct uc_addr *a, const char *host, size_t hlen,
                 uint16_t port);

/*
 * The ring: `points` points per server, at XXH3_64bits_withSeed(name, i)
 * for i in 0..points-1, sorted. A key goes to the server of the first
 * point at or after XXH3_64bits of its 8 little-endian bytes (wrapping).
 * Placement depends only on the servers' names and `points`, not on the
 * order of the list; adding a server takes over ~1/N of the keys, all of
 * them moving to it.
 */
struct uc_ring_point {
    uint64_t hash;
    uint32_t server;
};

struct uc_ring {
    struct uc_ring_point *pt;
    size_t n;
};

/* 0, or -1 when out of memory or servers x points is 0 or over UC_MAX_RING. */
int uc_ring_build(struct uc_ring *r, const struct uc_addr *a, size_t nservers,
                  unsigned points);
void uc_ring_deinit(struct uc_ring *r);

/* The server index owning key; the ring must not be empty. O(log n). */
uint32_t uc_ring_find(const struct uc_ring *r, uint64_t key);

/*
 * Circuit breaker of one server. Closed: requests go. After `failures`
 * consecutive failed round trips it opens: requests are refused without
 * touching the network. open_ms after opening, the next admitted round
 * trip is a probe (half-open): success closes the circuit, failure opens
 * it again for another open_ms. Times are the caller's monotonic ms, so
 * the breaker can be driven by any clock.
 */
enum uc_circuit { UC_CLOSED = 0, UC_OPEN = 1, UC_HALF_OPEN = 2 };

struct uc_breaker_cfg {
    uint32_t failures; /* >= 1 */
    int64_t open_ms;   /* >= 0 */
};

struct uc_breaker {
    uint8_t state; /* enum uc_circuit */
    uint32_t failures;
    int64_t opened_at;
};

/* True when a request may go now; an open circuit whose time is up turns
 * half-open here (the caller's round trip is the probe). */
bool uc_breaker_admit(struct uc_breaker *b, const struct uc_breaker_cfg *cfg,
                      int64_t now);

/* Records the outcome of one round trip (or connect attempt). */
void uc_breaker_done(struct uc_breaker *b, const struct uc_breaker_cfg *cfg,
                     bool ok, int64_t now);

/* Milliseconds until an open circuit admits a probe; 0 otherwise. */
int64_t uc_breaker_wait(const struct uc_breaker *b,
                        const struct uc_breaker_cfg *cfg, int64_t now);

#endif
