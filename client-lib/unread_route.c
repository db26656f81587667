/*
 * unread_route.c - where a request goes (unread_core.h, "Routing"): from
 * the op table's flags only (protocol/ops.def), and the request's first
 * argument or its uids. Pure: no I/O. Both faces route through it.
 */
#include <string.h>

#include "ops.h"
#include "proto.h"
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

unsigned uc_split_map(const struct uc_core *k, uint16_t op, unsigned argc,
                      const struct unread_arg *argv, uint32_t *map)
{
    const struct ur_op *o = ur_op_by_code(op);
    unsigned from = ur_op_uids_from(o->flags), i;
    uint64_t key = 0;

    for (i = from; i < argc; i++) {
        (void)uc_arg_key(&argv[i], &key); /* uc_route checked it */
        map[i - from] = uc_ring_find(&k->ring, key);
    }
    return from;
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
