/*
 * ops.h - the command table (ops.def) as C: the opcode enum, the op
 * descriptor and lookups by name and by opcode. Pure data, no I/O.
 */
#ifndef UR_OPS_H
#define UR_OPS_H

#include <stddef.h>
#include <stdint.h>

#define UR_VARARGS 0xFFFFu

enum ur_op_flags {
    OPF_READ = 1u << 0,    /* reads state only */
    OPF_WRITE = 1u << 1,   /* changes state: journaled, refused by -MISCONF */
    OPF_ADMIN = 1u << 2,   /* server/connection administration */
    OPF_USER = 1u << 3,    /* first argument is the reading user's uid */
    OPF_NOAUTH = 1u << 4,  /* allowed before AUTH */
    OPF_FAST = 1u << 5,    /* O(1) or O(small bounded) */
    OPF_GLOBAL = 1u << 6,  /* a write every shard must see (GRP.POST, ...):
                              a sharding client sends it to all servers */
    OPF_GID = 1u << 7,     /* keyed by the group id in the first argument
                              (RCPT): a sharding client routes by it */
    OPF_FREES = 1u << 8,   /* a write that only removes state and never
                              allocates: still accepted past maxmemory */
    OPF_NOBATCH = 1u << 9, /* controls the connection, a transaction or the
                              files: refused inside a batch frame and inside
                              MULTI (server/batch.h) */
    OPF_UIDS = 1u << 10,   /* many users per call (USER.MBADGE, ...): every
                              argument from ur_op_uids_from() on is a uid,
                              and the reply is an array with one element per
                              uid, in order. A sharding client splits the
                              uids by server, sends each its share (with the
                              arguments before them), and merges the
                              replies back in order (docs/CLIENT.md) */
    OPF_SUBOK = 1u << 11   /* runs on a RESP2 connection in subscribed mode
                              (SUBSCRIBE ..., PING, QUIT, RESET); the others
                              answer an error there, as in Redis */
};

/*
 * Where an OPF_UIDS op's uids start: the arguments before (at most 3)
 * are common to all of them. Bits 12-13 of the flags; OPF_UIDS_FROM(i)
 * sets them in ops.def (plain OPF_UIDS: from the first argument).
 */
#define OPF_UIDS_SHIFT 12
#define OPF_UIDS_FROM(i) (OPF_UIDS | ((uint32_t)(i) << OPF_UIDS_SHIFT))
#define OPF_UIDS_MASK (3u << OPF_UIDS_SHIFT)

/* Uids one OPF_UIDS request may carry: a larger count is an ARITY error.
 * libunread's typed calls cut longer lists into requests of this many. */
#define UR_UIDS_MAX 1000

static inline unsigned ur_op_uids_from(uint32_t flags)
{
    return (flags & OPF_UIDS_MASK) >> OPF_UIDS_SHIFT;
}

enum ur_opcode {
#define OP(id, name, code, min, max, flags, syn, rep, cost, sum)               \
    UR_OP_##id = code,
#include "ops.def"
#undef OP
};

/* Dense index of an op in the table (0..UR_OP_COUNT-1). */
enum ur_op_index {
#define OP(id, name, code, min, max, flags, syn, rep, cost, sum) UR_OPI_##id,
#include "ops.def"
#undef OP
    UR_OP_COUNT
};

struct ur_op {
    const char *name;    /* upper case, e.g. "CNT.INCR" */
    uint16_t code;       /* wire opcode */
    uint16_t index;      /* enum ur_op_index */
    uint16_t min_args;   /* name excluded */
    uint16_t max_args;   /* name excluded; UR_VARARGS = up to max-args */
    uint32_t flags;      /* OPF_* */
    const char *syntax;  /* arguments after the name */
    const char *reply;   /* what the reply holds */
    const char *cost;    /* time complexity */
    const char *summary; /* one or two sentences */
};

/*
 * An op's key arguments, one rule for COMMAND's key positions, cluster
 * routing (server/cluster.c) and ACL key patterns: the first argument of
 * user commands (the uid), RCPT (the gid) and global writes (the object:
 * channel, group, dot, author), every argument from its uids on for
 * OPF_UIDS ops (USER.MBADGE). Positions count the command name as 0, as
 * Redis's do: 0 is "no key" (FLUSHALL, admin commands); last -1 is "to
 * the end".
 */
static inline unsigned ur_op_key_first(const struct ur_op *op)
{
    if (op->flags & OPF_UIDS)
        return ur_op_uids_from(op->flags) + 1;
    if (op->flags & (OPF_USER | OPF_GID))
        return 1;
    return (op->flags & OPF_GLOBAL) && op->min_args >= 1 ? 1 : 0;
}

static inline int ur_op_key_last(const struct ur_op *op)
{
    if (op->flags & OPF_UIDS)
        return -1;
    return ur_op_key_first(op) != 0 ? 1 : 0;
}

/* The table, in ops.def order; ur_ops[i].index == i. */
extern const struct ur_op ur_ops[UR_OP_COUNT];

/* Op by command name, ASCII case-insensitive; NULL if unknown. O(1). */
const struct ur_op *ur_op_by_name(const char *name, size_t len);

/* Op by wire opcode; NULL if unknown. O(1). */
const struct ur_op *ur_op_by_code(uint16_t code);

#endif
