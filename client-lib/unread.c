/*
 * unread.c - libunread's core and synchronous handle: the core both faces
 * share (unread_core.h: servers, options, messages, counter-type names),
 * and struct unread's life - connect, options, authenticate, close - and
 * what it tells of itself (shards, circuits, errors). Routing is
 * unread_route.c, breakers unread_server.c, answers unread_answer.c, the
 * synchronous rounds unread_round.c, calls unread_call.c and
 * unread_<family>.c, pipelines unread_pipe.c, batches unread_batch.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "proto.h"
#include "unread_int.h"
#include "unread_round.h"

/* The public codes are the wire codes: keep them in step with proto.h. */
#define UNREAD_SAME(a, b) _Static_assert((int)(a) == (int)(b), #a " != " #b)
UNREAD_SAME(UNREAD_ERR_ERR, UR_E_ERR);
UNREAD_SAME(UNREAD_ERR_ARITY, UR_E_ARITY);
UNREAD_SAME(UNREAD_ERR_UNKNOWN, UR_E_UNKNOWN);
UNREAD_SAME(UNREAD_ERR_BADARG, UR_E_BADARG);
UNREAD_SAME(UNREAD_ERR_NOAUTH, UR_E_NOAUTH);
UNREAD_SAME(UNREAD_ERR_OOM, UR_E_OOM);
UNREAD_SAME(UNREAD_ERR_MISCONF, UR_E_MISCONF);
UNREAD_SAME(UNREAD_ERR_NOPROTO, UR_E_NOPROTO);
UNREAD_SAME(UNREAD_ERR_TOOBIG, UR_E_TOOBIG);
UNREAD_SAME(UNREAD_ERR_LIMIT, UR_E_LIMIT);
UNREAD_SAME(UNREAD_ERR_PROTO, UR_E_PROTO);
UNREAD_SAME(UNREAD_ERR_WRONGPASS, UR_E_WRONGPASS);
UNREAD_SAME(UNREAD_ERR_EXECABORT, UR_E_EXECABORT);
UNREAD_SAME(UR_E__COUNT, 14); /* a new code in proto.h: add it to unread.h */
/* Reply kinds are the wire's value tags. */
UNREAD_SAME(UNREAD_REPLY_INT, UR_VAL_INT);
UNREAD_SAME(UNREAD_REPLY_STR, UR_VAL_STR);
UNREAD_SAME(UNREAD_REPLY_ARRAY, UR_VAL_ARR);
UNREAD_SAME(UNREAD_REPLY_NIL, UR_VAL_NIL);
UNREAD_SAME(UNREAD_REPLY_STATUS, UR_VAL_STATUS);
UNREAD_SAME(UNREAD_REPLY_ERROR, UR_VAL_ERR);
UNREAD_SAME(UNREAD_REPLY_SINT, UR_VAL_SINT);
/* Circuit states are the breaker's. */
UNREAD_SAME(UNREAD_CIRCUIT_CLOSED, UC_CLOSED);
UNREAD_SAME(UNREAD_CIRCUIT_OPEN, UC_OPEN);
UNREAD_SAME(UNREAD_CIRCUIT_HALF_OPEN, UC_HALF_OPEN);
#undef UNREAD_SAME
_Static_assert(UNREAD_DEGRADED > UINT16_MAX, "a wire code could collide");

#define UNREAD_ERRLEN UC_CORE_ERRLEN

/* ---- The core ----------------------------------------------------------- */

int uc_err(struct uc_core *k, int rc, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(k->err, sizeof(k->err), fmt, ap);
    va_end(ap);
    return rc;
}

int uc_core_password(struct uc_core *k, const char *password)
{
    char *copy = NULL;
    size_t s;

    if (password != NULL && (copy = strdup(password)) == NULL)
        return -1;
    free(k->opt.password);
    k->opt.password = copy;
    for (s = 0; s < k->nsrv; s++)
        k->srv[s].conn.password = copy;
    return 0;
}

void uc_core_deinit(struct uc_core *k)
{
    size_t s;

    if (k->srv != NULL)
        for (s = 0; s < k->nsrv; s++)
            uc_conn_deinit(&k->srv[s].conn);
    uc_ring_deinit(&k->ring);
    ur_buf_deinit(&k->dflt);
    ur_buf_deinit(&k->dflt_batch);
    ur_buf_deinit(&k->merged);
    free(k->share_of);
    free(k->opt.password);
    free(k->srv);
    free(k->res);
    uc_addrs_free(k->addr, k->nsrv);
    k->srv = NULL;
    k->res = NULL;
    k->share_of = NULL;
    k->addr = NULL;
}

static bool opts_valid(const struct unread_opts *o, size_t n, char *err,
                       size_t errlen)
{
    if (o->breaker_failures < 1 || o->breaker_open_ms < 0) {
        snprintf(err, errlen,
                 "breaker_failures must be at least 1 and "
                 "breaker_open_ms at least 0");
        return false;
    }
    if (o->ring_points < 1 || n > UC_MAX_RING / o->ring_points) {
        snprintf(err, errlen, "ring_points must be 1 to %zu for %zu servers",
                 (size_t)UC_MAX_RING / n, n);
        return false;
    }
    return true;
}

int uc_core_init(struct uc_core *k, struct uc_addr *a, size_t n,
                 const struct unread_opts *o, char *err, size_t errlen)
{
    size_t i;

    memset(k, 0, sizeof(*k));
    k->addr = a;
    k->nsrv = n;
    ur_buf_init(&k->dflt);
    ur_buf_init(&k->dflt_batch);
    ur_buf_init(&k->merged);
    if (!opts_valid(o, n, err, errlen))
        return -1;
    k->opt.connect_timeout_ms = o->connect_timeout_ms;
    k->opt.read_timeout_ms = o->read_timeout_ms;
    k->opt.write_timeout_ms = o->write_timeout_ms;
    k->opt.degraded = o->degraded;
    k->opt.default_value = o->default_value;
    k->opt.breaker_failures = o->breaker_failures;
    k->opt.breaker_open_ms = o->breaker_open_ms;
    k->opt.ring_points = o->ring_points;
    k->brk_cfg.failures = o->breaker_failures;
    k->brk_cfg.open_ms = o->breaker_open_ms;
    k->srv = calloc(n, sizeof(*k->srv));
    k->res = calloc(n, sizeof(*k->res));
    k->share_of = calloc(n, sizeof(*k->share_of));
    if (k->srv == NULL || k->res == NULL || k->share_of == NULL ||
        (n > 1 && uc_ring_build(&k->ring, a, n, o->ring_points) != 0) ||
        ur_frame_put_int(&k->dflt, o->default_value) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (i = 0; i < n; i++)
        uc_conn_init(&k->srv[i].conn, &a[i]);
    if (uc_core_password(k, o->password) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

int uc_core_addrs(const char *list, const char *host, uint16_t port,
                  struct uc_addr **a, size_t *n, char *err, size_t errlen)
{
    char *one;
    size_t len;
    int rc;

    if (list != NULL)
        return uc_addrs_parse(list, UNREAD_DEFAULT_PORT, a, n, err, errlen);
    if (host == NULL)
        host = "127.0.0.1";
    /* One server is a list of one; an IPv6 address takes brackets. */
    len = strlen(host) + 16;
    one = malloc(len);
    if (one == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(one, len, strchr(host, ':') != NULL ? "[%s]:%u" : "%s:%u", host,
             (unsigned)port);
    rc = uc_addrs_parse(one, port, a, n, err, errlen);
    free(one);
    return rc;
}

/* ---- The synchronous handle --------------------------------------------- */

#define UC_DEFAULT_TIMEOUT_MS 1000
#define UC_DEFAULT_BREAKER_FAILURES 3
#define UC_DEFAULT_BREAKER_OPEN_MS 1000
#define UC_DEFAULT_RING_POINTS 160

void unread_opts_init(struct unread_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->connect_timeout_ms = UC_DEFAULT_TIMEOUT_MS;
    o->read_timeout_ms = UC_DEFAULT_TIMEOUT_MS;
    o->write_timeout_ms = UC_DEFAULT_TIMEOUT_MS;
    o->breaker_failures = UC_DEFAULT_BREAKER_FAILURES;
    o->breaker_open_ms = UC_DEFAULT_BREAKER_OPEN_MS;
    o->ring_points = UC_DEFAULT_RING_POINTS;
}

static void handle_free(struct unread *c)
{
    uc_core_deinit(&c->k);
    ur_buf_deinit(&c->batch.body);
    free(c->split_map);
    free(c->split_argv);
    free(c->slot);
    free(c);
}

/*
 * A handle over the n servers in a (which it takes over, even on failure),
 * connected to each: without degraded mode a server that cannot be
 * reached fails it; with it, that server's circuit counts the failure.
 */
static struct unread *handle_create(struct uc_addr *a, size_t n,
                                    const struct unread_opts *o, char *err,
                                    size_t errlen)
{
    struct unread *c = calloc(1, sizeof(*c));
    size_t i;

    if (c == NULL) {
        uc_addrs_free(a, n);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ur_buf_init(&c->batch.body);
    if (uc_core_init(&c->k, a, n, o, err, errlen) != 0)
        goto error;
    for (i = 0; i < n; i++) {
        if (uc_round_server(c, (uint32_t)i) != 0 && !o->degraded) {
            snprintf(err, errlen, "%s", c->k.srv[i].conn.err);
            goto error;
        }
    }
    uc_round_end(c);
    return c;

error:
    handle_free(c);
    return NULL;
}

struct unread *unread_connect(const char *host, uint16_t port, int timeout_ms,
                              char *err, size_t errlen)
{
    struct unread_opts o;
    struct uc_addr *a;
    char local[UNREAD_ERRLEN];
    size_t n;

    if (err == NULL || errlen == 0) {
        err = local;
        errlen = sizeof(local);
    }
    if (uc_core_addrs(NULL, host, port, &a, &n, err, errlen) != 0)
        return NULL;
    unread_opts_init(&o);
    o.connect_timeout_ms = timeout_ms;
    o.read_timeout_ms = timeout_ms;
    o.write_timeout_ms = timeout_ms;
    return handle_create(a, n, &o, err, errlen);
}

struct unread *unread_connect_cluster(const char *servers,
                                      const struct unread_opts *opts, char *err,
                                      size_t errlen)
{
    struct unread_opts o;
    struct uc_addr *a;
    char local[UNREAD_ERRLEN];
    size_t n;

    if (err == NULL || errlen == 0) {
        err = local;
        errlen = sizeof(local);
    }
    if (servers == NULL) {
        snprintf(err, errlen, "no servers");
        return NULL;
    }
    if (opts == NULL)
        unread_opts_init(&o);
    else
        o = *opts;
    if (uc_core_addrs(servers, NULL, 0, &a, &n, err, errlen) != 0)
        return NULL;
    return handle_create(a, n, &o, err, errlen);
}

int unread_auth(struct unread *c, const char *password)
{
    struct unread_arg a = {UNREAD_ARG_STR, 0, password, 0};
    struct ur_frame_hdr h;
    const char *body;
    int rc, first = 0;
    uint32_t s;

    if (c->piping)
        return uc_err(&c->k, UNREAD_EUSAGE,
                      "a pipeline is open: read its replies or reset it");
    if (uc_core_password(&c->k, password) != 0)
        return uc_err(&c->k, UNREAD_ENOMEM, "out of memory");
    if (password == NULL)
        return 0;
    a.len = strlen(password);
    for (s = 0; s < c->k.nsrv; s++) {
        if (c->k.srv[s].conn.fd < 0)
            continue; /* authenticates when it connects */
        rc = uc_round_call(c, s, UR_OP_AUTH, 1, &a, &h, &body);
        if (first == 0)
            first = rc;
    }
    return first;
}
void unread_close(struct unread *c)
{
    if (c != NULL)
        handle_free(c);
}

void unread_set_timeout(struct unread *c, int timeout_ms)
{
    c->k.opt.read_timeout_ms = timeout_ms;
    c->k.opt.write_timeout_ms = timeout_ms;
}

int unread_fd(const struct unread *c)
{
    return c->k.srv[0].conn.fd;
}

size_t unread_shards(const struct unread *c)
{
    return c->k.nsrv;
}

size_t unread_shard_of(const struct unread *c, uint64_t key)
{
    return c->k.nsrv == 1 ? 0 : uc_ring_find(&c->k.ring, key);
}

const char *unread_shard_name(const struct unread *c, size_t i)
{
    return i < c->k.nsrv ? c->k.addr[i].name : NULL;
}

int unread_shard_circuit(const struct unread *c, size_t i)
{
    return i < c->k.nsrv ? c->k.srv[i].brk.state : -1;
}

const char *unread_errstr(const struct unread *c)
{
    return c->k.err;
}

const char *unread_strerror(int code)
{
    switch (code) {
    case UNREAD_OK:
        return "OK";
    case UNREAD_EIO:
        return "EIO";
    case UNREAD_ETIMEOUT:
        return "ETIMEOUT";
    case UNREAD_EPROTO:
        return "EPROTO";
    case UNREAD_ECLOSED:
        return "ECLOSED";
    case UNREAD_ECONNECT:
        return "ECONNECT";
    case UNREAD_ENOMEM:
        return "ENOMEM";
    case UNREAD_EUSAGE:
        return "EUSAGE";
    case UNREAD_EUNAVAIL:
        return "EUNAVAIL";
    case UNREAD_EMISMATCH:
        return "EMISMATCH";
    case UNREAD_DEGRADED:
        return "DEGRADED";
    default:
        return code > 0 && code <= UINT16_MAX ? ur_err_name((uint32_t)code)
                                              : "EUNKNOWN";
    }
}
