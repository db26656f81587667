/*
 * unread_shard.c - server lists, the consistent-hash ring and the circuit
 * breaker (unread_shard.h). Pure: no sockets, no clock.
 */
#include "unread_sentinel.h"
#include "unread_shard.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define UC_MAX_HOST 255

/* ---- Server lists ------------------------------------------------------ */

static bool is_blank(char ch)
{
    return ch == ' ' || ch == '\t';
}

static int list_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int list_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* Decimal port 1..65535 in s[0..n). */
static bool parse_port(const char *s, size_t n, uint16_t *port)
{
    uint32_t v = 0;
    size_t i;

    if (n == 0 || n > 5)
        return false;
    for (i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (uint32_t)(s[i] - '0');
    }
    if (v == 0 || v > UINT16_MAX)
        return false;
    *port = (uint16_t)v;
    return true;
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);

    if (d != NULL) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* One item s[0..n), blanks already trimmed, into *a. 0, or -1 with a
 * message; on -1 *a owns nothing. */
static int parse_one(const char *s, size_t n, uint16_t default_port,
                     struct uc_addr *a, char *err, size_t errlen)
{
    const char *host = s, *colon, *close;
    size_t hlen, plen = 0;
    bool v6 = false;
    char name[UC_MAX_HOST + 16];

    memset(a, 0, sizeof(*a));
    a->port = default_port;
    if (n > 0 && s[0] == '[') {
        close = memchr(s, ']', n);
        if (close == NULL)
            return list_err(err, errlen, "server '%.*s': missing ']'", (int)n,
                            s);
        v6 = true;
        host = s + 1;
        hlen = (size_t)(close - host);
        colon = close + 1 < s + n ? close + 1 : NULL;
        if (colon != NULL && *colon != ':')
            return list_err(err, errlen, "server '%.*s': junk after ']'",
                            (int)n, s);
    } else {
        colon = memchr(s, ':', n);
        hlen = colon != NULL ? (size_t)(colon - s) : n;
        if (colon != NULL && memchr(colon + 1, ':', n - hlen - 1) != NULL)
            return list_err(err, errlen,
                            "server '%.*s': write an IPv6 address as "
                            "[addr]:port",
                            (int)n, s);
    }
    if (colon != NULL) {
        plen = n - (size_t)(colon + 1 - s);
        if (!parse_port(colon + 1, plen, &a->port))
            return list_err(err, errlen, "server '%.*s': bad port", (int)n, s);
    }
    if (hlen == 0 || hlen > UC_MAX_HOST)
        return list_err(err, errlen, "server '%.*s': bad host", (int)n, s);
    snprintf(name, sizeof(name), v6 ? "[%.*s]:%u" : "%.*s:%u", (int)hlen, host,
             (unsigned)a->port);
    a->host = dup_n(host, hlen);
    a->name = dup_n(name, strlen(name));
    if (a->host == NULL || a->name == NULL) {
        free(a->host);
        free(a->name);
        return list_err(err, errlen, "out of memory");
    }
    return 0;
}

int uc_addr_make(struct uc_addr *a, const char *host, size_t hlen,
                 uint16_t port)
{
    char name[UC_MAX_HOST + 16];
    bool v6 = memchr(host, ':', hlen) != NULL;

    memset(a, 0, sizeof(*a));
    if (hlen == 0 || hlen > UC_MAX_HOST)
        return -1;
    a->port = port;
    snprintf(name, sizeof(name), v6 ? "[%.*s]:%u" : "%.*s:%u", (int)hlen, host,
             (unsigned)port);
    a->host = dup_n(host, hlen);
    a->name = dup_n(name, strlen(name));
    if (a->host == NULL || a->name == NULL) {
        free(a->host);
        free(a->name);
        memset(a, 0, sizeof(*a));
        return -1;
    }
    return 0;
}

void uc_addrs_free(struct uc_addr *a, size_t n)
{
    size_t i;

    if (a == NULL)
        return;
    for (i = 0; i < n; i++) {
        free(a[i].host);
        free(a[i].name);
        uc_sentinel_free(a[i].sentinel);
    }
    free(a);
}

int uc_addrs_parse(const char *list, uint16_t default_port,
                   struct uc_addr **out, size_t *n, char *err, size_t errlen)
{
    struct uc_addr *a = NULL;
    const char *p = list, *end, *b, *e;
    size_t count = 1, i, k = 0;

    for (b = list; *b != '\0'; b++)
        count += *b == ',';
    if (count > UC_MAX_SERVERS)
        return list_err(err, errlen, "more than %u servers",
                        (unsigned)UC_MAX_SERVERS);
    a = calloc(count, sizeof(*a));
    if (a == NULL)
        return list_err(err, errlen, "out of memory");
    for (;;) {
        end = strchr(p, ',');
        if (end == NULL)
            end = p + strlen(p);
        for (b = p; b < end && is_blank(*b); b++)
            ;
        for (e = end; e > b && is_blank(e[-1]); e--)
            ;
        if (b == e) {
            list_err(err, errlen, "empty server in list '%s'", list);
            goto error;
        }
        if (parse_one(b, (size_t)(e - b), default_port, &a[k], err, errlen))
            goto error;
        k++;
        for (i = 0; i + 1 < k; i++) {
            if (strcmp(a[i].name, a[k - 1].name) == 0) {
                list_err(err, errlen, "server %s listed twice", a[i].name);
                goto error;
            }
        }
        if (*end == '\0')
            break;
        p = end + 1;
    }
    *out = a;
    *n = k;
    return 0;

error:
    uc_addrs_free(a, k);
    return -1;
}

/* ---- Ring --------------------------------------------------------------- */

static int point_cmp(const void *x, const void *y)
{
    const struct uc_ring_point *a = x, *b = y;

    if (a->hash != b->hash)
        return a->hash < b->hash ? -1 : 1;
    return a->server < b->server ? -1 : a->server > b->server;
}

int uc_ring_build(struct uc_ring *r, const struct uc_addr *a, size_t nservers,
                  unsigned points)
{
    size_t s, i, k = 0;

    r->pt = NULL;
    r->n = 0;
    if (nservers == 0 || points == 0 || nservers > UC_MAX_RING / points)
        return -1;
    r->pt = malloc(nservers * points * sizeof(*r->pt));
    if (r->pt == NULL)
        return -1;
    for (s = 0; s < nservers; s++) {
        for (i = 0; i < points; i++) {
            r->pt[k].hash =
                XXH3_64bits_withSeed(a[s].name, strlen(a[s].name), i);
            r->pt[k].server = (uint32_t)s;
            k++;
        }
    }
    qsort(r->pt, k, sizeof(*r->pt), point_cmp);
    r->n = k;
    return 0;
}

void uc_ring_deinit(struct uc_ring *r)
{
    free(r->pt);
    r->pt = NULL;
    r->n = 0;
}

uint32_t uc_ring_find(const struct uc_ring *r, uint64_t key)
{
    unsigned char le[8];
    uint64_t h;
    size_t lo = 0, hi = r->n, mid, i;

    /* Little-endian bytes: the same placement on every host. */
    for (i = 0; i < 8; i++)
        le[i] = (unsigned char)(key >> (8 * i));
    h = XXH3_64bits(le, sizeof(le));
    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (r->pt[mid].hash < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    return r->pt[lo == r->n ? 0 : lo].server;
}

/* ---- Circuit breaker ----------------------------------------------------- */

bool uc_breaker_admit(struct uc_breaker *b, const struct uc_breaker_cfg *cfg,
                      int64_t now)
{
    if (b->state != UC_OPEN)
        return true;
    if (now - b->opened_at < cfg->open_ms)
        return false;
    b->state = UC_HALF_OPEN;
    return true;
}

void uc_breaker_done(struct uc_breaker *b, const struct uc_breaker_cfg *cfg,
                     bool ok, int64_t now)
{
    if (ok) {
        b->state = UC_CLOSED;
        b->failures = 0;
        return;
    }
    if (b->failures < UINT32_MAX)
        b->failures++;
    if (b->state == UC_HALF_OPEN || b->failures >= cfg->failures) {
        b->state = UC_OPEN;
        b->opened_at = now;
    }
}

int64_t uc_breaker_wait(const struct uc_breaker *b,
                        const struct uc_breaker_cfg *cfg, int64_t now)
{
    int64_t left;

    if (b->state != UC_OPEN)
        return 0;
    left = b->opened_at + cfg->open_ms - now;
    return left > 0 ? left : 0;
}
