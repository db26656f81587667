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

int uc_roundtrip(struct unread *c, uint16_t op, unsigned argc,
                 const struct unread_arg *argv, struct ur_frame_hdr *h,
                 const char **body)
{
    return uc_round_call(c, uc_route(&c->k, op, argc, argv), op, argc, argv, h,
                         body);
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

int uc_call_ints(struct unread *c, uint16_t op, unsigned argc,
                 const uint64_t *v, struct ur_val_reader *rd)
{
    struct unread_arg argv[UNREAD_CNT_TYPES + 1];
    struct ur_frame_hdr h;
    const char *body;
    unsigned i;
    int rc;

    if (argc > UNREAD_CNT_TYPES + 1)
        return uc_set_err(c, UNREAD_EUSAGE, "%u integer arguments: at most %u",
                          argc, (unsigned)UNREAD_CNT_TYPES + 1);
    for (i = 0; i < argc; i++)
        argv[i] = unread_arg_int(v[i]);
    rc = uc_roundtrip(c, op, argc, argv, &h, &body);
    if (rc == 0 || rc == UNREAD_DEGRADED)
        ur_val_reader_init(rd, body, h.len);
    return rc;
}

int uc_call_int(struct unread *c, uint16_t op, unsigned argc,
                const uint64_t *args, uint64_t *out)
{
    struct ur_val_reader rd;
    uint64_t v;
    int rc;

    rc = uc_call_ints(c, op, argc, args, &rd);
    if (rc != 0 && rc != UNREAD_DEGRADED)
        return rc;
    if (!uc_rd_int(&rd, &v))
        return uc_shape_err(c, op);
    if (out != NULL)
        *out = v;
    return rc;
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

uint64_t uc_default(const struct unread *c)
{
    return c->k.opt.default_value;
}

int uc_call_int_list(struct unread *c, uint16_t op, uint64_t first,
                     const uint64_t *rest, size_t n, uint64_t *out)
{
    struct unread_arg *argv;
    struct ur_frame_hdr h;
    struct ur_val_reader rd;
    const char *body;
    uint64_t v;
    size_t i;
    int rc;

    if (n == 0 || rest == NULL || n >= UINT16_MAX)
        return uc_set_err(c, UNREAD_EUSAGE, "%zu items: 1 to %u", n,
                          (unsigned)UINT16_MAX - 1);
    argv = malloc((n + 1) * sizeof(*argv));
    if (argv == NULL)
        return uc_set_err(c, UNREAD_ENOMEM, "out of memory");
    argv[0] = unread_arg_int(first);
    for (i = 0; i < n; i++)
        argv[i + 1] = unread_arg_int(rest[i]);
    rc = uc_roundtrip(c, op, (unsigned)n + 1, argv, &h, &body);
    free(argv);
    if (rc != 0 && rc != UNREAD_DEGRADED)
        return rc;
    ur_val_reader_init(&rd, body, h.len);
    if (!uc_rd_int(&rd, &v))
        return uc_shape_err(c, op);
    if (out != NULL)
        *out = v;
    return rc;
}

int uc_call_count_ex(struct unread *c, uint16_t op, unsigned argc,
                     const uint64_t *args, uint64_t *count, uint64_t *expired)
{
    struct unread_arg argv[4];
    struct ur_val_reader rd;
    struct ur_frame_hdr h;
    const char *body;
    uint32_t n;
    uint64_t v, e;
    unsigned i;
    int rc;

    if (argc > 3)
        return uc_set_err(c, UNREAD_EUSAGE, "%u arguments: at most 3", argc);
    for (i = 0; i < argc; i++)
        argv[i] = unread_arg_int(args[i]);
    argv[argc] = unread_arg_str("WITHEXPIRY", 10);
    rc = uc_roundtrip(c, op, argc + 1, argv, &h, &body);
    if (rc != 0 && rc != UNREAD_DEGRADED)
        return rc;
    ur_val_reader_init(&rd, body, h.len);
    if (rc == UNREAD_DEGRADED) {
        v = c->k.opt.default_value;
        e = 0;
    } else if (!uc_rd_arr(&rd, &n) || n != 2 || !uc_rd_int(&rd, &v) ||
               !uc_rd_int(&rd, &e)) {
        return uc_shape_err(c, op);
    }
    if (count != NULL)
        *count = v;
    if (expired != NULL)
        *expired = e;
    return rc;
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
    if (route_it)
        to = uc_route(&c->k, op, argc, argv);
    rc = uc_round_call(c, to, op, argc, argv, &h, &body);
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
