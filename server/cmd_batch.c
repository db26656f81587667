/*
 * cmd_batch.c - MULTI, EXEC and DISCARD (server/batch.h): the text
 * protocol's transaction. A binary client sends a batch frame instead: one
 * round trip, and nothing held in the server between requests.
 */
#include "batch.h"
#include "cmds.h"

/* true on a text connection, else false after answering the refusal. */
static bool text_only(struct exec_ctx *x)
{
    if (x->sess->proto != REPLY_BIN)
        return true;
    reply_err(x->r, UR_E_ERR,
              "%s is a text-protocol command: a binary client sends a batch "
              "frame (opcode 0x%04x)",
              x->op->name, UR_FRAME_OP_BATCH);
    return false;
}

void cmd_MULTI(struct exec_ctx *x)
{
    if (!text_only(x))
        return;
    if (x->sess->multi != NULL)
        reply_err(x->r, UR_E_ERR, "MULTI calls can not be nested");
    else if (batch_multi_begin(x->sess) != 0)
        reply_oom(x);
    else
        reply_status(x->r, "OK");
}

void cmd_EXEC(struct exec_ctx *x)
{
    if (!text_only(x))
        return;
    if (x->sess->multi == NULL)
        reply_err(x->r, UR_E_ERR, "EXEC without MULTI");
    else
        batch_multi_exec(x->srv, x->sess, x->r);
}

void cmd_DISCARD(struct exec_ctx *x)
{
    if (!text_only(x))
        return;
    if (x->sess->multi == NULL) {
        reply_err(x->r, UR_E_ERR, "DISCARD without MULTI");
        return;
    }
    batch_multi_end(x->sess);
    reply_status(x->r, "OK");
}
