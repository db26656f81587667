/*
 * unread_pipe.c - pipelines on the synchronous handle (unread_pipe_begin,
 * queue, flush, read; docs/CLIENT.md, section 2): the public face of the
 * rounds of unread_round.c.
 */
#include "ops.h"
#include "unread_cluster.h"
#include "unread_int.h"
#include "unread_round.h"

int unread_pipe_begin(struct unread *c)
{
    if (c->piping)
        return uc_err(&c->k, UNREAD_EUSAGE, "a pipeline is already open");
    if (c->batch.open)
        return uc_err(&c->k, UNREAD_EUSAGE,
                      "a batch is open: execute it or reset it");
    uc_round_refresh(c); /* cluster mode: routes from a fresh map */
    if (c->k.cl != NULL)
        c->k.cl->last[0] = '\0';
    c->piping = true;
    return 0;
}

int unread_pipe_cmd(struct unread *c, const char *name, uint16_t opcode,
                    unsigned argc, const struct unread_arg *argv)
{
    uint16_t op = 0;
    int rc;

    if (!c->piping && !c->batch.open)
        return uc_err(&c->k, UNREAD_EUSAGE,
                      "no pipeline open (unread_pipe_begin)");
    rc = uc_resolve_op(&c->k, name, opcode, &op);
    if (rc != 0)
        return rc;
    if (c->batch.open)
        return uc_batch_add(c, op, argc, argv);
    return uc_req_queue(c, uc_route(&c->k, op, argc, argv), op, argc, argv);
}

int uc_pipe_ints(struct unread *c, uint16_t op, unsigned argc,
                 const uint64_t *v)
{
    struct unread_arg argv[UNREAD_CNT_TYPES + 1];
    unsigned i;

    if (argc > UNREAD_CNT_TYPES + 1)
        return uc_err(&c->k, UNREAD_EUSAGE, "%u integer arguments: at most %u",
                      argc, (unsigned)UNREAD_CNT_TYPES + 1);
    for (i = 0; i < argc; i++)
        argv[i] = unread_arg_int(v[i]);
    return unread_pipe_cmd(c, NULL, op, argc, argv);
}

size_t unread_pipe_queued(const struct unread *c)
{
    return c->unflushed;
}

size_t unread_pipe_pending(const struct unread *c)
{
    return c->pending;
}

int unread_pipe_flush(struct unread *c)
{
    if (!c->piping)
        return uc_err(&c->k, UNREAD_EUSAGE,
                      "no pipeline open (unread_pipe_begin)");
    return uc_flush_all(c);
}

int unread_pipe_read(struct unread *c, struct unread_reply **out)
{
    struct uc_res r;

    *out = NULL;
    if (!c->piping)
        return uc_err(&c->k, UNREAD_EUSAGE, "no pipeline open");
    if (c->pending == 0)
        return uc_err(&c->k, UNREAD_EUSAGE,
                      "no reply pending (%zu queued: flush first)",
                      c->unflushed);
    uc_req_read(c, &r);
    if (c->pending == 0 && c->unflushed == 0) {
        c->piping = false;
        uc_round_end(c);
    }
    if (r.rc < 0)
        return r.rc;
    return uc_reply_tree(c, r.rc, r.server, &r.h, r.body, out);
}

void unread_pipe_reset(struct unread *c)
{
    size_t s;

    unread_batch_reset(c);
    if (!c->piping)
        return;
    for (s = 0; s < c->k.nsrv; s++)
        uc_conn_abandon(&c->k.srv[s].conn);
    uc_round_end(c);
    c->piping = false;
}
