/*
 * unread_batch.c - atomic batches on the synchronous handle
 * (unread_batch_begin ... unread_batch_exec; docs/CLIENT.md, section 9):
 * the commands encoded as one batch frame's body, routed to one server.
 */
#include <stdlib.h>

#include "ops.h"
#include "unread_cluster.h"
#include "unread_int.h"
#include "unread_round.h"

/* The open batch is over: the next one starts empty. A long batch's body
 * is given back. */
static void batch_clear(struct unread *c)
{
    struct uc_batch *b = &c->batch;

    b->open = false;
    b->writes = false;
    b->server = UC_FIRST_SERVER;
    b->slot = -1;
    b->n = 0;
    b->body.len = 0;
    ur_buf_shrink(&b->body, UC_BATCH_KEEP);
}

/*
 * Adds one command to the open batch, or nothing (a usage error: a global
 * write, another server than the batch's, too many commands or bytes; or
 * out of memory). The commands are only encoded here; the server checks
 * them when the batch arrives.
 */
int uc_batch_add(struct unread *c, uint16_t op, unsigned argc,
                 const struct unread_arg *argv)
{
    struct uc_batch *b = &c->batch;
    const struct ur_op *o = ur_op_by_code(op);
    size_t mark = b->body.len;
    uint32_t to;
    int rc;

    rc = uc_args_check(&c->k, argc, argv);
    if (rc != 0)
        return rc;
    if (o != NULL && uc_op_is_global(op) && c->k.cl == NULL)
        return uc_err(&c->k, UNREAD_EUSAGE,
                      "%s cannot be batched: every server must apply it",
                      o->name);
    if (c->k.cl != NULL && o != NULL && ur_op_key_first(o) != 0 &&
        argc >= ur_op_key_first(o)) {
        /* Cluster mode: a batch runs on one node and its keys must share
         * one slot, as the node checks (CROSSSLOT). */
        unsigned first = ur_op_key_first(o),
                 last = ur_op_key_last(o) < 0 ? argc : first;

        for (unsigned i = first - 1; i < last; i++) {
            int slot = uc_cluster_arg_slot(&argv[i]);

            if (slot >= 0 && b->slot >= 0 && slot != b->slot)
                return uc_err(&c->k, UNREAD_ERR_CROSSSLOT,
                              "CROSSSLOT a batch runs on one slot: this "
                              "command's key is in slot %d, the batch's in "
                              "%d",
                              slot, b->slot);
            if (slot >= 0)
                b->slot = slot; /* (a bad key: the node's error) */
        }
    }
    if (b->n == UINT16_MAX)
        return uc_err(&c->k, UNREAD_EUSAGE, "a batch holds at most %u commands",
                      (unsigned)UINT16_MAX);
    to = uc_route(&c->k, op, argc, argv);
    if (to == UC_SPLIT)
        return uc_err(&c->k, UNREAD_EUSAGE,
                      "%s: its uids live on several servers, and a batch "
                      "runs on one",
                      o->name);
    if (b->n > 0 && to != b->server)
        return uc_err(&c->k, UNREAD_EUSAGE,
                      "a batch runs on one server: this command goes to "
                      "%s, the batch to %s",
                      c->k.addr[to].name, c->k.addr[b->server].name);
    if (ur_frame_put_sub_hdr(&b->body, op, (uint16_t)argc) != 0 ||
        uc_put_args(&b->body, argc, argv) != 0) {
        b->body.len = mark;
        return uc_err(&c->k, UNREAD_ENOMEM, "out of memory queuing a command");
    }
    if (b->body.len > UR_MAX_FRAME_CEILING) {
        b->body.len = mark;
        return uc_err(&c->k, UNREAD_EUSAGE, "a batch is at most %u bytes",
                      (unsigned)UR_MAX_FRAME_CEILING);
    }
    b->server = to;
    b->n++;
    b->writes |= !uc_op_is_read(op);
    return 0;
}

int unread_batch_begin(struct unread *c)
{
    if (c->batch.open)
        return uc_err(&c->k, UNREAD_EUSAGE, "a batch is already open");
    if (!c->piping)
        uc_round_refresh(c);
    c->batch.slot = -1;
    c->batch.open = true;
    return 0;
}

int unread_batch_exec(struct unread *c, struct unread_reply **out)
{
    uint16_t n = c->batch.n;
    struct ur_frame_hdr h;
    const char *body;
    int rc;

    *out = NULL;
    if (!c->batch.open)
        return uc_err(&c->k, UNREAD_EUSAGE,
                      "no batch open (unread_batch_begin)");
    if (c->piping)
        return uc_err(&c->k, UNREAD_EUSAGE,
                      "a pipeline is open: queue the batch with "
                      "unread_pipe_batch");
    c->batch.open = false; /* it is sent as one request of its own */
    rc = uc_round_call(c, c->batch.server, UR_FRAME_OP_BATCH, 0, NULL, &h,
                       &body);
    batch_clear(c);
    if (rc < 0)
        return rc;
    rc = uc_reply_tree(c, rc, c->k.last_srv, &h, body, out);
    if (rc == 0 && ((*out)->kind != UNREAD_REPLY_ARRAY || (*out)->n != n)) {
        unread_reply_free(*out);
        *out = NULL;
        return uc_shape_err(c, UR_FRAME_OP_BATCH);
    }
    return rc;
}

int unread_pipe_batch(struct unread *c)
{
    int rc;

    if (!c->batch.open || !c->piping)
        return uc_err(&c->k, UNREAD_EUSAGE, "no batch open inside a pipeline");
    rc = uc_req_queue(c, c->batch.server, UR_FRAME_OP_BATCH, 0, NULL);
    batch_clear(c);
    return rc;
}

void unread_batch_reset(struct unread *c)
{
    batch_clear(c);
}
