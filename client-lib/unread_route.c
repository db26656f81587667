/*
 * unread_route.c - where a request goes (unread_core.h, "Routing"): from
 * the op table's flags only (protocol/ops.def), and the request's first
 * argument or its uids. Pure: no I/O. Both faces route through it.
 */
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "proto.h"
#include "unread_cluster.h"
#include "unread_core.h"

/* A write every server must see (OPF_GLOBAL), or a command keyed by its
 * first argument, a uid (OPF_USER) or a group (OPF_GID). */
static bool op_keyed(const struct ur_op *o)
{
    return (o->flags & (OPF_USER | OPF_GID)) != 0;
}

/* Many users per call: every argument from ur_op_uids_from() on is a
 * uid. */
static bool op_uids(const struct ur_op *o)
{
    return (o->flags & OPF_UIDS) != 0;
}

bool uc_op_is_global(uint16_t op)
{
    const struct ur_op *o = ur_op_by_code(op);

    return o != NULL && (o->flags & OPF_GLOBAL) != 0;
}

bool uc_op_is_read(uint16_t op)
{
    const struct ur_op *o = ur_op_by_code(op);

    return o != NULL && (o->flags & OPF_READ);
}

bool uc_arg_key(const struct unread_arg *a, uint64_t *key)
{
    if (a->kind == UNREAD_ARG_INT) {
        *key = a->num;
        return true;
    }
    return a->kind == UNREAD_ARG_STR && a->str != NULL &&
           ur_parse_uint(a->str, a->len, UINT64_MAX, key) == UR_NUM_OK;
}

/*
 * The server of a request for many users: the one holding all its uids,
 * or UC_SPLIT. A uid that is not a usable key sends the whole request to
 * the first server, whose error reply is the answer.
 */
static uint32_t route_uids(const struct uc_core *k, const struct ur_op *o,
                           unsigned argc, const struct unread_arg *argv)
{
    unsigned from = ur_op_uids_from(o->flags), i;
    uint32_t first = UC_FIRST_SERVER, s;
    uint64_t key;

    for (i = from; i < argc; i++) {
        if (!uc_arg_key(&argv[i], &key))
            return UC_FIRST_SERVER;
        s = uc_ring_find(&k->ring, key);
        if (i == from)
            first = s;
        else if (s != first)
            return UC_SPLIT;
    }
    return first;
}

uint32_t uc_route(const struct uc_core *k, uint16_t op, unsigned argc,
                  const struct unread_arg *argv)
{
    const struct ur_op *o;
    uint64_t key;

    if (k->cl != NULL)
        return uc_cluster_route(k, op, argc, argv);
    if (k->nsrv == 1)
        return UC_FIRST_SERVER;
    o = ur_op_by_code(op);
    if (o == NULL)
        return UC_FIRST_SERVER;
    if (o->flags & OPF_GLOBAL)
        return UC_ALL;
    if (op_uids(o))
        return route_uids(k, o, argc, argv);
    if (!op_keyed(o) || argc == 0 || !uc_arg_key(&argv[0], &key))
        return UC_FIRST_SERVER;
    return uc_ring_find(&k->ring, key);
}

size_t uc_shard_of(const struct uc_core *k, uint64_t key)
{
    if (k->cl != NULL)
        return uc_cluster_slot_server(k, (int)ur_u64_slot(key));
    return k->nsrv == 1 ? 0 : uc_ring_find(&k->ring, key);
}

/* Room for n replies of one request in k->res. */
static int res_reserve(struct uc_core *k, size_t n)
{
    struct uc_res *p;

    if (n <= k->res_cap)
        return 0;
    p = realloc(k->res, n * sizeof(*p));
    if (p == NULL)
        return -1;
    memset(p + k->res_cap, 0, (n - k->res_cap) * sizeof(*p));
    k->res = p;
    k->res_cap = n;
    return 0;
}

int uc_split_plan(struct uc_core *k, uint16_t op, unsigned argc,
                  const struct unread_arg *argv, struct uc_split *sp)
{
    const struct ur_op *o = ur_op_by_code(op);
    uint32_t *table = k->cl != NULL ? k->cl->group_of : k->group_of;
    unsigned g, i, n;
    uint32_t *at;
    uint64_t key = 0;

    memset(sp, 0, sizeof(*sp));
    sp->from = ur_op_uids_from(o->flags);
    n = sp->n = argc - sp->from;
    /* one block: map, server, start, key, at (n each, start n + 1) */
    sp->map = malloc((5 * (size_t)n + 1) * sizeof(uint32_t));
    sp->uids = malloc((n + (size_t)argc) * sizeof(*sp->uids));
    if (sp->map == NULL || sp->uids == NULL) {
        uc_split_free(sp);
        return uc_err(k, UNREAD_ENOMEM, "out of memory splitting a request");
    }
    sp->server = sp->map + n;
    sp->start = sp->server + n;
    sp->key = sp->start + n + 1;
    at = sp->key + n;
    sp->args = sp->uids + n;
    for (i = 0; i < n; i++) {
        const struct unread_arg *a = &argv[sp->from + i];
        uint32_t kv, srv;

        if (k->cl != NULL) {
            int slot = uc_cluster_arg_slot(a);

            kv = slot < 0 ? 0 : (uint32_t)slot; /* (refused whole) */
            srv = uc_cluster_slot_server(k, slot);
        } else {
            (void)uc_arg_key(a, &key); /* uc_route checked it */
            kv = srv = uc_ring_find(&k->ring, key);
        }
        if (table[kv] == UINT32_MAX) {
            table[kv] = sp->groups;
            sp->key[sp->groups] = kv;
            sp->server[sp->groups] = srv;
            sp->start[sp->groups] = 0;
            sp->groups++;
        }
        sp->map[i] = table[kv];
        sp->start[table[kv]]++;
    }
    for (g = 0; g < sp->groups; g++)
        table[sp->key[g]] = UINT32_MAX; /* the table is clean again */
    /* counts to offsets; the uids, grouped, in the caller's order */
    for (g = 0, i = 0; g < sp->groups; g++) {
        unsigned c = sp->start[g];

        sp->start[g] = at[g] = i;
        i += c;
    }
    sp->start[sp->groups] = n;
    for (i = 0; i < n; i++)
        sp->uids[at[sp->map[i]]++] = argv[sp->from + i];
    memcpy(sp->args, argv, sp->from * sizeof(*argv));
    if (res_reserve(k, sp->groups) != 0) {
        uc_split_free(sp);
        return uc_err(k, UNREAD_ENOMEM, "out of memory splitting a request");
    }
    return 0;
}

unsigned uc_split_args(struct uc_split *sp, unsigned g)
{
    unsigned m = sp->start[g + 1] - sp->start[g];

    memcpy(sp->args + sp->from, sp->uids + sp->start[g], m * sizeof(*sp->uids));
    return sp->from + m;
}

void uc_split_free(struct uc_split *sp)
{
    free(sp->map);
    free(sp->uids);
    memset(sp, 0, sizeof(*sp));
}

int uc_args_check(struct uc_core *k, unsigned argc,
                  const struct unread_arg *argv)
{
    unsigned i;

    if (argc > UINT16_MAX)
        return uc_err(k, UNREAD_EUSAGE, "%u arguments: at most %u", argc,
                      (unsigned)UINT16_MAX);
    for (i = 0; i < argc; i++) {
        if (argv[i].kind == UNREAD_ARG_INT)
            continue;
        if (argv[i].kind != UNREAD_ARG_STR || argv[i].len > UINT32_MAX ||
            (argv[i].str == NULL && argv[i].len > 0))
            return uc_err(k, UNREAD_EUSAGE,
                          "argument %u: bad kind, length or pointer", i);
    }
    return 0;
}

int uc_resolve_op(struct uc_core *k, const char *name, uint16_t opcode,
                  uint16_t *op)
{
    const struct ur_op *o;

    if (name == NULL && opcode == UR_FRAME_OP_BATCH)
        return uc_err(k, UNREAD_EUSAGE,
                      "opcode 0x%04x is the batch frame: use "
                      "unread_batch_begin",
                      opcode);
    if (name == NULL) {
        *op = opcode;
        return 0;
    }
    o = ur_op_by_name(name, strlen(name));
    if (o == NULL)
        return uc_err(k, UNREAD_ERR_UNKNOWN, "ERR unknown command '%s'", name);
    *op = o->code;
    return 0;
}
