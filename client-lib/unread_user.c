/*
 * unread_user.c - libunread's USER calls and FLUSHALL (docs/OPERATIONS.md,
 * "Users and expiry"): typed synchronous calls and a pipeline queue helper over
 * the connection core (unread_int.h).
 */
#include "unread_int.h"

int unread_user_info(struct unread *c, uint64_t uid, struct unread_reply **out)
{
    struct unread_arg a = unread_arg_int(uid);

    return unread_command(c, NULL, UR_OP_USER_INFO, 1, &a, out);
}

int unread_user_del(struct unread *c, uint64_t uid, uint64_t *removed)
{
    return uc_call_int(c, UR_OP_USER_DEL, 1, &uid, removed);
}

int unread_flushall(struct unread *c)
{
    struct unread_reply *r = NULL;
    int rc = unread_command(c, NULL, UR_OP_FLUSHALL, 0, NULL, &r);

    if (rc == 0 && r->kind != UNREAD_REPLY_STATUS)
        rc = uc_shape_err(c, UR_OP_FLUSHALL);
    unread_reply_free(r);
    return rc;
}

int unread_pipe_user_del(struct unread *c, uint64_t uid)
{
    struct unread_arg a = unread_arg_int(uid);

    return unread_pipe_cmd(c, NULL, UR_OP_USER_DEL, 1, &a);
}
