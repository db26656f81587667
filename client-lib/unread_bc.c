/*
 * unread_bc.c - libunread's BC calls (docs/COMMANDS.md, "BC"): typed
 * synchronous calls and pipeline queue helpers over the connection core
 * (unread_int.h).
 */
#include "unread_int.h"

static int prep_bc_publish(struct uc_core *k, struct uc_call *q, uint64_t ch,
                           uint64_t *head)
{
    int rc = uc_q_ints(k, q, UR_OP_BC_PUBLISH, 1, &ch);

    q->decode = uc_dec_u64;
    q->out[0] = head;
    return rc;
}
UC_FACES(bc_publish, (uint64_t ch, uint64_t *head), (ch, head))

static int prep_bc_unread(struct uc_core *k, struct uc_call *q, uint64_t uid,
                          uint64_t ch, uint64_t *unread)
{
    uint64_t args[2] = {uid, ch};
    int rc = uc_q_ints(k, q, UR_OP_BC_UNREAD, 2, args);

    q->decode = uc_dec_u64;
    q->out[0] = unread;
    return rc;
}
UC_FACES(bc_unread, (uint64_t uid, uint64_t ch, uint64_t *unread),
         (uid, ch, unread))

static int prep_bc_read(struct uc_core *k, struct uc_call *q, uint64_t uid,
                        uint64_t ch)
{
    uint64_t args[2] = {uid, ch};
    int rc = uc_q_ints(k, q, UR_OP_BC_READ, 2, args);

    q->decode = uc_dec_zero;
    return rc;
}
UC_FACES(bc_read, (uint64_t uid, uint64_t ch), (uid, ch))

int unread_pipe_bc_publish(struct unread *c, uint64_t ch)
{
    return uc_pipe_ints(c, UR_OP_BC_PUBLISH, 1, &ch);
}

int unread_pipe_bc_unread(struct unread *c, uint64_t uid, uint64_t ch)
{
    uint64_t a[2] = {uid, ch};

    return uc_pipe_ints(c, UR_OP_BC_UNREAD, 2, a);
}

int unread_pipe_bc_read(struct unread *c, uint64_t uid, uint64_t ch)
{
    uint64_t a[2] = {uid, ch};

    return uc_pipe_ints(c, UR_OP_BC_READ, 2, a);
}

static int prep_bc_read_upto(struct uc_core *k, struct uc_call *q, uint64_t uid,
                             uint64_t ch, uint64_t upto, uint64_t *unread)
{
    uint64_t args[3] = {uid, ch, upto};
    int rc = uc_q_ints(k, q, UR_OP_BC_READ, 3, args);

    q->decode = uc_dec_u64;
    q->out[0] = unread;
    return rc;
}
UC_FACES(bc_read_upto,
         (uint64_t uid, uint64_t ch, uint64_t upto, uint64_t *unread),
         (uid, ch, upto, unread))

static int prep_bc_unread_ex(struct uc_core *k, struct uc_call *q, uint64_t uid,
                             uint64_t ch, uint64_t *unread, uint64_t *expired)
{
    uint64_t args[2] = {uid, ch};

    return uc_q_count_ex(k, q, UR_OP_BC_UNREAD, 2, args, unread, expired);
}
UC_FACES(bc_unread_ex,
         (uint64_t uid, uint64_t ch, uint64_t *unread, uint64_t *expired),
         (uid, ch, unread, expired))

int unread_pipe_bc_read_upto(struct unread *c, uint64_t uid, uint64_t ch,
                             uint64_t upto)
{
    uint64_t a[3] = {uid, ch, upto};

    return uc_pipe_ints(c, UR_OP_BC_READ, 3, a);
}
