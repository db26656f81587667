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
#include <strings.h>

#include "ops.h"
#include "proto.h"
#include "unread_cluster.h"
#include "unread_int.h"
#include "unread_pubsub.h"
#include "unread_round.h"
#include "unread_sentinel.h"

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
UNREAD_SAME(UNREAD_ERR_READONLY, UR_E_READONLY);
UNREAD_SAME(UNREAD_ERR_NOREPLICAS, UR_E_NOREPLICAS);
UNREAD_SAME(UNREAD_ERR_MASTERDOWN, UR_E_MASTERDOWN);
UNREAD_SAME(UNREAD_ERR_MOVED, UR_E_MOVED);
UNREAD_SAME(UNREAD_ERR_ASK, UR_E_ASK);
UNREAD_SAME(UNREAD_ERR_CROSSSLOT, UR_E_CROSSSLOT);
UNREAD_SAME(UNREAD_ERR_CLUSTERDOWN, UR_E_CLUSTERDOWN);
UNREAD_SAME(UNREAD_ERR_TRYAGAIN, UR_E_TRYAGAIN);
UNREAD_SAME(UNREAD_ERR_BUSYKEY, UR_E_BUSYKEY);
UNREAD_SAME(UNREAD_ERR_IOERR, UR_E_IOERR);
UNREAD_SAME(UR_E__COUNT, 25); /* a new code in proto.h: add it to unread.h */
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

    uc_ps_free(k);
    uc_cluster_deinit(k);
    if (k->srv != NULL)
        for (s = 0; s < k->nsrv; s++)
            uc_conn_deinit(&k->srv[s].conn);
    uc_ring_deinit(&k->ring);
    ur_buf_deinit(&k->dflt);
    ur_buf_deinit(&k->dflt_batch);
    ur_buf_deinit(&k->merged);
    free(k->group_of);
    uc_tls_free(k->tls);
    k->tls = NULL;
    free(k->opt.password);
    free(k->srv);
    free(k->res);
    uc_addrs_free(k->addr, k->nsrv);
    k->srv = NULL;
    k->res = NULL;
    k->group_of = NULL;
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
    if (o->cluster && o->sentinels != NULL) {
        snprintf(err, errlen,
                 "cluster mode and sentinels do not go together: "
                 "the cluster's map names every primary");
        return false;
    }
    if (o->cluster && n > UC_CLUSTER_CAP) {
        snprintf(err, errlen, "cluster mode: at most %u seeds",
                 (unsigned)UC_CLUSTER_CAP);
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
    bool failed;
    size_t i, cap;

    memset(k, 0, sizeof(*k));
    k->addr = a;
    k->nsrv = n;
    ur_buf_init(&k->dflt);
    ur_buf_init(&k->dflt_batch);
    ur_buf_init(&k->merged);
    if (!opts_valid(o, n, err, errlen))
        return -1;
    k->opt = *o;
    k->opt.password = NULL;  /* the core's own copy, below */
    k->opt.sentinels = NULL; /* parsed into each server's uc_sentinel */
    /* Made into the TLS context, below: not kept. */
    memset(&k->opt.tls, 0, sizeof(k->opt.tls));
    k->opt.tls.on = o->tls.on;
    k->brk_cfg.failures = o->breaker_failures;
    k->brk_cfg.open_ms = o->breaker_open_ms;
    if (o->cluster) {
        /* Room for every node it may learn: connections borrow their
         * address, which must never move. */
        struct uc_addr *grown = realloc(a, UC_CLUSTER_CAP * sizeof(*a));

        if (grown == NULL) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        memset(grown + n, 0, (UC_CLUSTER_CAP - n) * sizeof(*a));
        k->addr = a = grown;
    }
    cap = o->cluster ? UC_CLUSTER_CAP : n;
    k->srv = calloc(cap, sizeof(*k->srv));
    k->res = calloc(cap, sizeof(*k->res));
    k->res_cap = cap;
    k->group_of = malloc(cap * sizeof(*k->group_of));
    if (k->srv == NULL || k->res == NULL || k->group_of == NULL ||
        (n > 1 && !o->cluster &&
         uc_ring_build(&k->ring, a, n, o->ring_points) != 0) ||
        (o->cluster && uc_cluster_init(k) != 0) ||
        ur_frame_put_int(&k->dflt, o->default_value) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memset(k->group_of, 0xff, cap * sizeof(*k->group_of)); /* none */
    k->tls = uc_tls_new(&o->tls, &failed, err, errlen);
    if (failed)
        return -1;
    for (i = 0; i < n; i++) {
        uc_conn_init(&k->srv[i].conn, &a[i]);
        k->srv[i].conn.tls = k->tls;
    }
    if (uc_core_password(k, o->password) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

int uc_core_addrs(const char *list, const char *host, uint16_t port,
                  const struct unread_opts *o, struct uc_addr **a, size_t *n,
                  char *err, size_t errlen)
{
    char *one;
    size_t len;
    int rc;

    if (list != NULL && o != NULL && o->sentinels != NULL)
        return uc_sentinel_addrs(list, o->sentinels, o->sentinel_replica, a, n,
                                 err, errlen);
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

/* ---- Counter types by name ----------------------------------------------- */

/*
 * CONFIG GET counter-types answers [name, value] with the value the names
 * separated by blanks, by position ("mention comment like dm system":
 * mention is 0).
 */
bool uc_core_learn_types(struct uc_core *k, const char *body, size_t len)
{
    struct ur_val_reader rd;
    struct ur_val v;
    unsigned n = 0;
    size_t i, start;

    ur_val_reader_init(&rd, body, len);
    if (!ur_val_next(&rd, &v) || v.kind != UR_VAL_ARR || v.count != 2 ||
        !ur_val_next(&rd, &v) || v.kind != UR_VAL_STR ||
        v.len != strlen("counter-types") ||
        memcmp(v.str, "counter-types", v.len) != 0 || !ur_val_next(&rd, &v) ||
        v.kind != UR_VAL_STR)
        return false;
    for (i = 0; i < v.len;) {
        while (i < v.len && (v.str[i] == ' ' || v.str[i] == '\t'))
            i++;
        start = i;
        while (i < v.len && v.str[i] != ' ' && v.str[i] != '\t')
            i++;
        if (i == start)
            break;
        if (n == UC_TYPES_MAX || i - start >= UC_TYPE_NAME)
            return false;
        memcpy(k->types[n], v.str + start, i - start);
        k->types[n][i - start] = '\0';
        n++;
    }
    k->ntypes = n;
    k->types_known = true;
    return true;
}

int uc_core_type(struct uc_core *k, const char *name, unsigned *type)
{
    uint64_t v;
    unsigned i;

    if (name == NULL)
        return uc_err(k, UNREAD_EUSAGE, "no counter type name");
    if (ur_parse_u64(name, strlen(name), &v)) {
        if (v >= UC_TYPES_MAX)
            return uc_err(k, UNREAD_ERR_BADARG, "ERR counter type %llu: 0..63",
                          (unsigned long long)v);
        *type = (unsigned)v;
        return 0;
    }
    for (i = 0; i < k->ntypes; i++) {
        if (strcasecmp(k->types[i], name) == 0) {
            *type = i;
            return 0;
        }
    }
    return uc_err(k, UNREAD_ERR_BADARG,
                  "ERR unknown counter type '%s' (use 0..63 or a name from "
                  "counter-types)",
                  name);
}

int unread_types_reload(struct unread *c)
{
    struct unread_arg argv[2] = {unread_arg_str("GET", 3),
                                 unread_arg_str("counter-types", 13)};
    struct ur_frame_hdr h;
    const char *body;
    int rc = UNREAD_ECONNECT;
    uint32_t s;

    /* the first server that answers: every server of a deployment has the
     * same counter-types */
    for (s = 0; s < c->k.nsrv; s++) {
        rc = uc_round_call(c, s, UR_OP_CONFIG, 2, argv, &h, &body);
        if (rc == 0 && !uc_core_learn_types(&c->k, body, h.len))
            rc = uc_err(&c->k, UNREAD_EPROTO,
                        "%s: protocol error: unexpected reply to CONFIG GET "
                        "counter-types",
                        c->k.addr[s].name);
        if (rc >= 0 && rc != UNREAD_DEGRADED)
            return rc;
    }
    return rc;
}

int unread_type(struct unread *c, const char *name, unsigned *type)
{
    uint64_t v;
    int rc;

    if (name != NULL && !c->k.types_known &&
        !ur_parse_u64(name, strlen(name), &v)) {
        rc = unread_types_reload(c);
        if (rc != 0)
            return rc;
    }
    return uc_core_type(&c->k, name, type);
}

/* ---- The synchronous handle --------------------------------------------- */

#define UC_DEFAULT_TIMEOUT_MS 1000
#define UC_DEFAULT_BREAKER_FAILURES 3
#define UC_DEFAULT_BREAKER_OPEN_MS 1000
#define UC_DEFAULT_RING_POINTS 160
#define UC_DEFAULT_RECONNECT_MIN_MS 100
#define UC_DEFAULT_RECONNECT_MAX_MS 5000

void uc_opts_defaults(struct unread_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->connect_timeout_ms = UC_DEFAULT_TIMEOUT_MS;
    o->read_timeout_ms = UC_DEFAULT_TIMEOUT_MS;
    o->write_timeout_ms = UC_DEFAULT_TIMEOUT_MS;
    o->breaker_failures = UC_DEFAULT_BREAKER_FAILURES;
    o->breaker_open_ms = UC_DEFAULT_BREAKER_OPEN_MS;
    o->ring_points = UC_DEFAULT_RING_POINTS;
    o->reconnect_min_ms = UC_DEFAULT_RECONNECT_MIN_MS;
    o->reconnect_max_ms = UC_DEFAULT_RECONNECT_MAX_MS;
    o->tls.verify = true;
}

/* ---- Options --------------------------------------------------------------
 */

struct unread_opts *unread_opts_new(void)
{
    struct unread_opts *o = malloc(sizeof(*o));

    if (o != NULL)
        uc_opts_defaults(o);
    return o;
}

void unread_opts_free(struct unread_opts *o)
{
    if (o == NULL)
        return;
    free(o->password);
    free(o->sentinels);
    uc_tls_opts_free(&o->tls);
    free(o);
}

int unread_opts_set_timeouts(struct unread_opts *o, int connect_ms, int read_ms,
                             int write_ms)
{
    o->connect_timeout_ms = connect_ms;
    o->read_timeout_ms = read_ms;
    o->write_timeout_ms = write_ms;
    return 0;
}

int unread_opts_set_degraded(struct unread_opts *o, bool on,
                             uint64_t default_value)
{
    o->degraded = on;
    o->default_value = default_value;
    return 0;
}

int unread_opts_set_breaker(struct unread_opts *o, unsigned failures,
                            int open_ms)
{
    if (failures < 1 || open_ms < 0)
        return UNREAD_EUSAGE;
    o->breaker_failures = failures;
    o->breaker_open_ms = open_ms;
    return 0;
}

int unread_opts_set_ring_points(struct unread_opts *o, unsigned points)
{
    if (points < 1 || points > UC_MAX_RING)
        return UNREAD_EUSAGE;
    o->ring_points = points;
    return 0;
}

int unread_opts_set_password(struct unread_opts *o, const char *password)
{
    char *copy = NULL;

    if (password != NULL && (copy = strdup(password)) == NULL)
        return UNREAD_ENOMEM;
    free(o->password);
    o->password = copy;
    return 0;
}

int unread_opts_set_reconnect(struct unread_opts *o, int min_ms, int max_ms)
{
    if (min_ms < 0 || max_ms < min_ms)
        return UNREAD_EUSAGE;
    o->reconnect_min_ms = min_ms;
    o->reconnect_max_ms = max_ms;
    return 0;
}

int unread_opts_set_cluster(struct unread_opts *o, bool on)
{
    o->cluster = on;
    return 0;
}

int unread_opts_set_sentinels(struct unread_opts *o, const char *sentinels,
                              bool replica)
{
    char *copy = NULL;

    if (sentinels != NULL && sentinels[0] == '\0')
        return UNREAD_EUSAGE;
    if (sentinels != NULL && (copy = strdup(sentinels)) == NULL)
        return UNREAD_ENOMEM;
    free(o->sentinels);
    o->sentinels = copy;
    o->sentinel_replica = replica;
    return 0;
}

int unread_opts_set_tls(struct unread_opts *o, bool on)
{
    o->tls.on = on;
    return 0;
}

/* Replaces *field with a copy of value (NULL: none). */
static int set_str(char **field, const char *value)
{
    char *copy = NULL;

    if (value != NULL && (copy = strdup(value)) == NULL)
        return UNREAD_ENOMEM;
    free(*field);
    *field = copy;
    return 0;
}

int unread_opts_set_tls_ca(struct unread_opts *o, const char *ca_file,
                           const char *ca_dir)
{
    struct uc_tls_opts n = o->tls;

    n.ca_file = n.ca_dir = NULL;
    if (set_str(&n.ca_file, ca_file) != 0 || set_str(&n.ca_dir, ca_dir) != 0) {
        free(n.ca_file);
        return UNREAD_ENOMEM;
    }
    free(o->tls.ca_file);
    free(o->tls.ca_dir);
    o->tls.ca_file = n.ca_file;
    o->tls.ca_dir = n.ca_dir;
    return 0;
}

int unread_opts_set_tls_cert(struct unread_opts *o, const char *cert_file,
                             const char *key_file)
{
    struct uc_tls_opts n = o->tls;

    if (cert_file == NULL && key_file != NULL)
        return UNREAD_EUSAGE;
    n.cert_file = n.key_file = NULL;
    if (set_str(&n.cert_file, cert_file) != 0 ||
        set_str(&n.key_file, key_file) != 0) {
        free(n.cert_file);
        return UNREAD_ENOMEM;
    }
    free(o->tls.cert_file);
    free(o->tls.key_file);
    o->tls.cert_file = n.cert_file;
    o->tls.key_file = n.key_file;
    return 0;
}

int unread_opts_set_tls_server_name(struct unread_opts *o, const char *name)
{
    if (name != NULL && name[0] == '\0')
        return UNREAD_EUSAGE;
    return set_str(&o->tls.server_name, name);
}

int unread_opts_set_tls_verify(struct unread_opts *o, bool verify)
{
    o->tls.verify = verify;
    return 0;
}

int unread_version(void)
{
    return UNREAD_VERSION_NUMBER;
}

const char *unread_version_string(void)
{
    return UNREAD_VERSION;
}

static void handle_free(struct unread *c)
{
    if (c->side != NULL) {
        for (size_t s = 0; s < UC_CLUSTER_CAP; s++)
            if (c->side[s] != NULL) {
                uc_conn_deinit(c->side[s]);
                free(c->side[s]);
            }
        free(c->side);
    }
    ur_buf_deinit(&c->frames);
    uc_core_deinit(&c->k);
    ur_buf_deinit(&c->batch.body);
    free(c->split_map);
    free(c->slot);
    free(c);
}

/*
 * Cluster mode: the first seed that answers gives the map (CLUSTER
 * SLOTS); seeds that do not answer are skipped. 0, or -1 with the reason:
 * no seed answered, or one answered that it is not in cluster mode.
 */
static int cluster_start(struct unread *c, char *err, size_t errlen)
{
    struct unread_arg a = {UNREAD_ARG_STR, 0, "SLOTS", 5};
    struct ur_frame_hdr h;
    const char *body;
    size_t seeds = c->k.nsrv;
    int rc = UNREAD_ECONNECT;

    snprintf(err, errlen, "no seed answered");
    c->refreshing = true;
    for (uint32_t s = 0; s < seeds; s++) {
        rc = uc_round_call(c, s, UR_OP_CLUSTER, 1, &a, &h, &body);
        if (rc == 0) {
            rc = uc_cluster_learn(&c->k, body, h.len);
            if (rc == 0)
                break;
        }
        if (rc > 0 && rc != UNREAD_DEGRADED) {
            snprintf(err, errlen, "%s: CLUSTER SLOTS: %s%s", c->k.addr[s].name,
                     c->k.err,
                     strstr(c->k.err, "disabled") != NULL
                         ? " (start it with cluster-enabled yes, or connect "
                           "without cluster mode)"
                         : "");
            c->refreshing = false;
            return -1;
        }
        snprintf(err, errlen, "%s", c->k.err);
    }
    c->refreshing = false;
    if (rc != 0)
        return -1;
    c->k.cl->last[0] = '\0';
    return 0;
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
    ur_buf_init(&c->frames);
    c->batch.slot = -1;
    if (uc_core_init(&c->k, a, n, o, err, errlen) != 0)
        goto error;
    if (o->cluster) {
        if (cluster_start(c, err, errlen) != 0)
            goto error;
        return c;
    }
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
    if (uc_core_addrs(NULL, host, port, NULL, &a, &n, err, errlen) != 0)
        return NULL;
    uc_opts_defaults(&o);
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
        uc_opts_defaults(&o);
    else
        o = *opts;
    if (uc_core_addrs(servers, NULL, 0, &o, &a, &n, err, errlen) != 0)
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
    return uc_shard_of(&c->k, key);
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

const char *unread_redirected(const struct unread *c)
{
    return c->k.cl != NULL && c->k.cl->last[0] != '\0' ? c->k.cl->last : NULL;
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
