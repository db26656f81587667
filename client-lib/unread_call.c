/*
 * unread_call.c - the synchronous face's calls: the helpers behind the
 * typed calls of every family (unread_int.h), the generic command
 * (unread_command), and the message of the last failure.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "proto.h"
#include "unread_cluster.h"
#include "unread_int.h"
#include "unread_round.h"

int uc_set_err(struct unread *c, int rc, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(c->k.err, sizeof(c->k.err), fmt, ap);
    va_end(ap);
    return rc;
}

/* Cluster mode: a request whose node could not be reached was not sent
 * (UNREAD_ECONNECT, or an open circuit): the map is asked again and, when
 * it names another node now (a failover), the request goes there once. */
static int cluster_reroute(struct unread *c, int rc, uint32_t to, uint16_t op,
                           unsigned argc, const struct unread_arg *argv,
                           struct ur_frame_hdr *h, const char **body)
{
    uint32_t again;

    if (c->k.cl == NULL || c->piping || c->batch.open ||
        (rc != UNREAD_ECONNECT && rc != UNREAD_EUNAVAIL))
        return rc;
    c->k.cl->refreshed_ms = 0; /* now, not after the pause */
    uc_round_refresh(c);
    again = uc_route(&c->k, op, argc, argv);
    if (again == to)
        return rc;
    return uc_round_call(c, again, op, argc, argv, h, body);
}

int uc_roundtrip(struct unread *c, uint16_t op, unsigned argc,
                 const struct unread_arg *argv, struct ur_frame_hdr *h,
                 const char **body)
{
    uint32_t to;
    int rc;

    if (!c->piping && !c->batch.open)
        uc_round_refresh(c); /* cluster mode: a stale map asked again */
    to = uc_route(&c->k, op, argc, argv);
    rc = uc_round_call(c, to, op, argc, argv, h, body);
    return cluster_reroute(c, rc, to, op, argc, argv, h, body);
}

bool uc_rd_int(struct ur_val_reader *rd, uint64_t *v)
{
    struct ur_val x;

    if (!ur_val_next(rd, &x) || x.kind != UR_VAL_INT)
        return false;
    *v = x.num;
    return true;
}

bool uc_rd_arr(struct ur_val_reader *rd, uint32_t *count)
{
    struct ur_val x;

    if (!ur_val_next(rd, &x) || x.kind != UR_VAL_ARR)
        return false;
    *count = x.count;
    return true;
}

/*
 * A typed call got a reply of the wrong shape: the server and the library
 * disagree on the command, and nothing later on that stream is trusted.
 * It does not count against the circuit: the server is reachable, and one
 * command's disagreement must not degrade every other.
 */
int uc_shape_err(struct unread *c, uint16_t op)
{
    const struct ur_op *o = ur_op_by_code(op);

    uc_set_err(c, UNREAD_EPROTO, "%s: protocol error: unexpected reply to %s",
               c->k.addr[c->k.last_srv].name, o != NULL ? o->name : "command");
    uc_conn_drop(&c->k.srv[c->k.last_srv].conn);
    return UNREAD_EPROTO;
}

int uc_call_uids(struct unread *c, uint16_t op, const uint64_t *uids, size_t n,
                 uint64_t *out)
{
    struct unread_arg *argv;
    size_t done = 0, k, i;
    int rc = 0, degraded = 0;

    if (n == 0)
        return 0;
    if (uids == NULL || out == NULL)
        return uc_set_err(c, UNREAD_EUSAGE, "%zu uids: uids and out needed", n);
    argv = malloc((n < UR_UIDS_MAX ? n : UR_UIDS_MAX) * sizeof(*argv));
    if (argv == NULL)
        return uc_set_err(c, UNREAD_ENOMEM, "out of memory");
    for (; done < n && rc == 0; done += k) {
        struct ur_val_reader rd;
        struct ur_frame_hdr h;
        const char *body;
        uint32_t count;
        uint64_t v;

        k = n - done < UR_UIDS_MAX ? n - done : UR_UIDS_MAX;
        for (i = 0; i < k; i++)
            argv[i] = unread_arg_int(uids[done + i]);
        rc = uc_roundtrip(c, op, (unsigned)k, argv, &h, &body);
        if (rc != 0 && rc != UNREAD_DEGRADED)
            break;
        ur_val_reader_init(&rd, body, h.len);
        if (rc == UNREAD_DEGRADED && h.len == c->k.dflt.len &&
            memcmp(body, c->k.dflt.data, h.len) == 0) {
            /* one server, unreachable: the default for every uid */
            for (i = 0; i < k; i++)
                out[done + i] = c->k.opt.default_value;
        } else {
            if (!uc_rd_arr(&rd, &count) || count != k) {
                rc = uc_shape_err(c, op);
                break;
            }
            for (i = 0; i < k; i++) {
                if (!uc_rd_int(&rd, &v)) {
                    rc = uc_shape_err(c, op);
                    break;
                }
                out[done + i] = v;
            }
        }
        if (rc == UNREAD_DEGRADED) {
            degraded = 1;
            rc = 0;
        }
    }
    free(argv);
    return rc != 0 ? rc : degraded ? UNREAD_DEGRADED : 0;
}

/* ---- Public: generic command ------------------------------------------- */

/* A reply (status >= 0) as a tree for the caller, from server s. */
int uc_reply_tree(struct unread *c, int status, uint32_t s,
                  const struct ur_frame_hdr *h, const char *body,
                  struct unread_reply **out)
{
    int rc = uc_tree_build(body, h->len, out);

    if (rc == UNREAD_ENOMEM)
        return uc_set_err(c, rc, "out of memory for a reply");
    if (rc != 0) {
        uc_conn_drop(&c->k.srv[s].conn);
        return uc_set_err(c, rc, "%s: protocol error: bad reply body",
                          c->k.addr[s].name);
    }
    return status;
}

/* unread_command to `to` (a server, or UC_ALL), or routed when route_it. */
static int command(struct unread *c, bool route_it, uint32_t to,
                   const char *name, uint16_t opcode, unsigned argc,
                   const struct unread_arg *argv, struct unread_reply **out)
{
    struct ur_frame_hdr h;
    const char *body;
    uint16_t op = 0;
    int rc;

    *out = NULL;
    rc = uc_resolve_op(&c->k, name, opcode, &op);
    if (rc != 0) {
        *out = uc_reply_error(rc, c->k.err);
        return *out != NULL ? rc
                            : uc_set_err(c, UNREAD_ENOMEM, "out of memory");
    }
    if (route_it) {
        if (!c->piping && !c->batch.open)
            uc_round_refresh(c);
        to = uc_route(&c->k, op, argc, argv);
    }
    rc = uc_round_call(c, to, op, argc, argv, &h, &body);
    if (route_it)
        rc = cluster_reroute(c, rc, to, op, argc, argv, &h, &body);
    if (rc < 0)
        return rc;
    return uc_reply_tree(c, rc, c->k.last_srv, &h, body, out);
}

int unread_command(struct unread *c, const char *name, uint16_t opcode,
                   unsigned argc, const struct unread_arg *argv,
                   struct unread_reply **out)
{
    return command(c, true, 0, name, opcode, argc, argv, out);
}

int unread_command_shard(struct unread *c, size_t shard, const char *name,
                         uint16_t opcode, unsigned argc,
                         const struct unread_arg *argv,
                         struct unread_reply **out)
{
    if (shard >= c->k.nsrv) {
        *out = NULL;
        return uc_set_err(c, UNREAD_EUSAGE, "shard %zu: the handle has %zu",
                          shard, c->k.nsrv);
    }
    return command(c, false, (uint32_t)shard, name, opcode, argc, argv, out);
}

/* ---- Typed calls for both faces ---------------------------------------- */

static int q_room(struct uc_core *k, struct uc_call *q, unsigned argc)
{
    if (argc > UINT16_MAX)
        return uc_err(k, UNREAD_EUSAGE, "%u arguments: at most %u", argc,
                      (unsigned)UINT16_MAX);
    q->argc = argc;
    q->argv = q->inl;
    if (argc > UC_CALL_INLINE &&
        (q->argv = malloc(argc * sizeof(*q->argv))) == NULL)
        return uc_err(k, UNREAD_ENOMEM, "out of memory for %u arguments", argc);
    return 0;
}

static void q_init(struct uc_call *q, uint16_t op)
{
    memset(q, 0, sizeof(*q));
    q->op = op;
    q->argv = q->inl;
}

int uc_q_alloc(struct uc_core *k, struct uc_call *q, uint16_t op, unsigned argc)
{
    q_init(q, op);
    return q_room(k, q, argc);
}

int uc_q_ints(struct uc_core *k, struct uc_call *q, uint16_t op, unsigned argc,
              const uint64_t *v)
{
    unsigned i;
    int rc;

    q_init(q, op);
    rc = q_room(k, q, argc);
    for (i = 0; rc == 0 && i < argc; i++)
        q->argv[i] = unread_arg_int(v[i]);
    return rc;
}

int uc_q_args(struct uc_core *k, struct uc_call *q, uint16_t op, unsigned argc,
              const struct unread_arg *argv)
{
    int rc;

    q_init(q, op);
    rc = q_room(k, q, argc);
    if (rc == 0 && argc > 0)
        memcpy(q->argv, argv, argc * sizeof(*argv));
    return rc;
}

static void q_free(struct uc_call *q)
{
    if (q->argv != q->inl)
        free(q->argv);
    q->argv = q->inl;
}

int uc_bad_reply(struct uc_core *k, uint16_t op)
{
    const struct ur_op *o = ur_op_by_code(op);

    return uc_err(k, UNREAD_EPROTO,
                  "%s: protocol error: unexpected reply to %s",
                  k->addr[k->last_srv].name, o != NULL ? o->name : "command");
}

uint64_t uc_core_default(const struct uc_core *k)
{
    return k->opt.default_value;
}

int uc_dec_u64(struct uc_core *k, const struct uc_call *q, int rc,
               struct ur_val_reader *rd)
{
    uint64_t v;

    if (!uc_rd_int(rd, &v))
        return uc_bad_reply(k, q->op);
    if (q->out[0] != NULL)
        *(uint64_t *)q->out[0] = v;
    return rc;
}

int uc_dec_u32(struct uc_core *k, const struct uc_call *q, int rc,
               struct ur_val_reader *rd)
{
    uint64_t v;

    if (!uc_rd_int(rd, &v) || (rc == 0 && v > UINT32_MAX))
        return uc_bad_reply(k, q->op);
    if (q->out[0] != NULL)
        *(uint32_t *)q->out[0] = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
    return rc;
}

int uc_dec_zero(struct uc_core *k, const struct uc_call *q, int rc,
                struct ur_val_reader *rd)
{
    uint64_t v;

    if (!uc_rd_int(rd, &v) || (rc == 0 && v != 0))
        return uc_bad_reply(k, q->op);
    return rc;
}

int uc_dec_pair32(struct uc_core *k, const struct uc_call *q, int rc,
                  struct ur_val_reader *rd)
{
    uint64_t v, t;
    uint32_t count;

    if (rc != 0) /* writes: never degraded */
        return rc;
    if (!uc_rd_arr(rd, &count) || count != 2 || !uc_rd_int(rd, &v) ||
        !uc_rd_int(rd, &t) || v > UINT32_MAX)
        return uc_bad_reply(k, q->op);
    if (q->out[0] != NULL)
        *(uint32_t *)q->out[0] = (uint32_t)v;
    if (q->out[1] != NULL)
        *(uint64_t *)q->out[1] = t;
    return 0;
}

int uc_dec_count_ex(struct uc_core *k, const struct uc_call *q, int rc,
                    struct ur_val_reader *rd)
{
    uint64_t v, e;
    uint32_t n;

    if (rc == UNREAD_DEGRADED) {
        v = k->opt.default_value;
        e = 0;
    } else if (!uc_rd_arr(rd, &n) || n != 2 || !uc_rd_int(rd, &v) ||
               !uc_rd_int(rd, &e)) {
        return uc_bad_reply(k, q->op);
    }
    if (q->out[0] != NULL)
        *(uint64_t *)q->out[0] = v;
    if (q->out[1] != NULL)
        *(uint64_t *)q->out[1] = e;
    return rc;
}

int uc_dec_tree(struct uc_core *k, const struct uc_call *q, int rc,
                struct ur_val_reader *rd)
{
    int t = uc_tree_build(rd->p, (size_t)(rd->end - rd->p),
                          (struct unread_reply **)q->out[0]);

    if (t == UNREAD_ENOMEM)
        return uc_err(k, t, "out of memory for a reply");
    if (t != 0)
        return uc_err(k, t, "%s: protocol error: bad reply body",
                      k->addr[k->last_srv].name);
    return rc;
}

int uc_dec_uids(struct uc_core *k, const struct uc_call *q, int rc,
                struct ur_val_reader *rd)
{
    uint64_t *out = q->out[0], v;
    struct ur_val_reader one = *rd;
    uint32_t count;
    size_t i;

    if (rc == UNREAD_DEGRADED && uc_rd_int(&one, &v) && one.p == one.end) {
        for (i = 0; i < q->n; i++)
            out[i] = k->opt.default_value;
        return rc;
    }
    if (!uc_rd_arr(rd, &count) || count != q->n)
        return uc_bad_reply(k, q->op);
    for (i = 0; i < q->n; i++) {
        if (!uc_rd_int(rd, &v))
            return uc_bad_reply(k, q->op);
        out[i] = v;
    }
    return rc;
}

int uc_dec_flag(struct uc_core *k, const struct uc_call *q, int rc,
                struct ur_val_reader *rd)
{
    uint64_t v;

    if (rc != 0)
        return rc; /* writes: never degraded */
    if (!uc_rd_int(rd, &v) || v > 1)
        return uc_bad_reply(k, q->op);
    if (q->out[0] != NULL)
        *(int *)q->out[0] = (int)v;
    return 0;
}

int uc_q_int_list(struct uc_core *k, struct uc_call *q, uint16_t op,
                  uint64_t first, const uint64_t *rest, size_t n, uint64_t *out)
{
    size_t i;
    int rc;

    q_init(q, op);
    if (n == 0 || rest == NULL || n >= UINT16_MAX)
        return uc_err(k, UNREAD_EUSAGE, "%zu items: 1 to %u", n,
                      (unsigned)UINT16_MAX - 1);
    rc = q_room(k, q, (unsigned)n + 1);
    if (rc != 0)
        return rc;
    q->argv[0] = unread_arg_int(first);
    for (i = 0; i < n; i++)
        q->argv[i + 1] = unread_arg_int(rest[i]);
    q->decode = uc_dec_u64;
    q->out[0] = out;
    return 0;
}

void uc_q_tree(struct uc_call *q, struct unread_reply **out)
{
    *out = NULL;
    q->decode = uc_dec_tree;
    q->errors = true;
    q->out[0] = out;
}

int uc_q_uids(struct uc_core *k, struct uc_call *q, uint16_t op,
              const uint64_t *uids, size_t n, uint64_t *out)
{
    q_init(q, op);
    if (n > 0 && (uids == NULL || out == NULL))
        return uc_err(k, UNREAD_EUSAGE, "%zu uids: uids and out needed", n);
    q->many = true;
    q->uids = uids;
    q->n = n;
    q->out[0] = out;
    return 0;
}

int uc_q_count_ex(struct uc_core *k, struct uc_call *q, uint16_t op,
                  unsigned argc, const uint64_t *args, uint64_t *count,
                  uint64_t *expired)
{
    struct unread_arg argv[4];
    unsigned i;
    int rc;

    if (argc > 3)
        return uc_err(k, UNREAD_EUSAGE, "%u arguments: at most 3", argc);
    for (i = 0; i < argc; i++)
        argv[i] = unread_arg_int(args[i]);
    argv[argc] = unread_arg_str("WITHEXPIRY", 10);
    rc = uc_q_args(k, q, op, argc + 1, argv);
    q->decode = uc_dec_count_ex;
    q->out[0] = count;
    q->out[1] = expired;
    return rc;
}

int uc_sync(struct unread *c, struct uc_call *q)
{
    struct ur_val_reader rd;
    struct ur_frame_hdr h;
    const char *body;
    int rc, out;

    if (q->many)
        return uc_call_uids(c, q->op, q->uids, q->n, q->out[0]);
    rc = uc_roundtrip(c, q->op, q->argc, q->argv, &h, &body);
    q_free(q);
    if (q->decode == NULL ||
        !(rc == 0 || rc == UNREAD_DEGRADED || (rc > 0 && q->errors)))
        return rc;
    ur_val_reader_init(&rd, body, h.len);
    out = q->decode(&c->k, q, rc, &rd);
    if (out == UNREAD_EPROTO)
        uc_conn_drop(&c->k.srv[c->k.last_srv].conn);
    return out;
}
