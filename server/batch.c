/*
 * batch.c - see batch.h.
 *
 * A MULTI transaction keeps its commands as a batch body, the same bytes a
 * binary client would send in a batch frame, so EXEC and the batch frame
 * share one runner, one journal record format and one replay path.
 */
#include "batch.h"

#include <stdio.h>
#include <stdlib.h>

#include "acl.h"
#include "buf.h"
#include "cluster.h"
#include "persist.h"
#include "repl.h"

struct multi {
    struct ur_buf body; /* the queued commands, as a batch body */
    uint32_t n;         /* commands queued */
    uint32_t argc_max;  /* the most arguments of one of them */
    bool failed;        /* one was refused: EXEC answers EXECABORT */
};

/* "batch op i: ", the prefix of a refusal's message, in buf. */
static const char *at(char buf[32], uint32_t i)
{
    snprintf(buf, 32, "batch op %u: ", i);
    return buf;
}

/*
 * Checks every sub-request of body before anything runs: true with
 * *writes set when one of them is a write, or false after answering the
 * first refusal.
 */
static bool check(struct server *srv, struct session *sess, const char *body,
                  size_t len, uint32_t nsub, struct ur_arg *args, uint32_t cap,
                  bool *writes, struct reply *r)
{
    struct ur_batch_reader rd;
    struct ur_frame_sub sub;
    const struct ur_op *op;
    struct cluster_batch cb;
    char where[32];
    uint32_t i;

    *writes = false;
    cluster_batch_init(&cb);
    ur_batch_reader_init(&rd, body, len, nsub);
    for (i = 0; ur_batch_next(&rd, args, cap, &sub); i++) {
        op = ur_op_by_code(sub.op);
        if (op == NULL) {
            reply_err(r, UR_E_UNKNOWN, "%sunknown opcode 0x%04x", at(where, i),
                      sub.op);
            return false;
        }
        if (op->flags & OPF_NOBATCH) {
            reply_err(r, UR_E_ERR, "%s%s is not allowed in a batch",
                      at(where, i), op->name);
            return false;
        }
        if (session_needs_auth(srv, sess) && !(op->flags & OPF_NOAUTH)) {
            reply_err(r, UR_E_NOAUTH, "%sAuthentication required.",
                      at(where, i));
            return false;
        }
        if (!exec_arity_ok(op, sub.argc)) {
            exec_arity_err(r, op, at(where, i));
            return false;
        }
        if (acl_refuses(srv, sess, op, sub.argc, sub.argv, r))
            return false; /* NOPERM: the whole batch is refused */
        if (srv->cluster != NULL && !srv->loading &&
            !cluster_batch_add(srv, &cb, op, sub.argc, sub.argv, at(where, i),
                               r))
            return false;
        *writes |= (op->flags & OPF_WRITE) != 0;
    }
    if (i != nsub) {
        reply_err(r, UR_E_PROTO, "malformed batch body");
        return false;
    }
    /* Cluster mode: every key in one slot, and that slot served here. */
    if (srv->cluster != NULL && !srv->loading &&
        cluster_batch_refuse(srv, sess, &cb, r))
        return false;
    return true;
}

/* Checks and runs a batch body; returns how many sub-requests failed. */
static uint32_t run(struct server *srv, struct session *sess, const char *body,
                    size_t len, uint32_t nsub, struct ur_arg *args,
                    uint32_t cap, struct reply *r)
{
    struct ur_batch_reader rd;
    struct ur_frame_sub sub;
    struct reply elem;
    uint32_t failed = 0;
    bool writes;
    bool journaled = srv->persist != NULL && !srv->loading;

    if (!check(srv, sess, body, len, nsub, args, cap, &writes, r) ||
        repl_refuse_batch(srv, writes, r) ||
        (writes && exec_refuse_write(srv, r))) {
        srv->stats.errors++;
        return 0;
    }
    if (journaled && persist_batch_begin(srv->persist, srv->clock_pin_ms)) {
        reply_err(r, UR_E_OOM, "out of memory for the journal record");
        srv->stats.errors++;
        return 0;
    }
    reply_arr(r, nsub);
    ur_batch_reader_init(&rd, body, len, nsub);
    srv->cluster_routed = true; /* check() routed it whole */
    while (ur_batch_next(&rd, args, cap, &sub)) {
        reply_begin_elem(&elem, r);
        exec_op(srv, sess, ur_op_by_code(sub.op), sub.argc, sub.argv, &elem);
        reply_end_elem(&elem, r);
        failed += elem.status != UR_E_OK;
    }
    srv->cluster_routed = false;
    if (journaled) {
        persist_batch_end(srv->persist);
        repl_feed(srv, sess);
    }
    return failed;
}

/* Runs a batch body with the command clock pinned once for all of it. */
static uint32_t run_pinned(struct server *srv, struct session *sess,
                           const char *body, size_t len, uint32_t nsub,
                           struct ur_arg *args, uint32_t cap, struct reply *r)
{
    bool pinned = exec_clock_pin(srv);
    uint32_t failed = run(srv, sess, body, len, nsub, args, cap, r);

    if (pinned)
        srv->clock_pinned = false;
    return failed;
}

uint32_t batch_exec(struct server *srv, struct session *sess,
                    const struct ur_frame_req *req, struct reply *r)
{
    return run_pinned(srv, sess, req->body, req->body_len, req->nsub, req->argv,
                      req->sub_argc_max, r);
}

/* ---- MULTI / EXEC / DISCARD --------------------------------------------- */

int batch_multi_begin(struct session *sess)
{
    struct multi *m = calloc(1, sizeof(*m));

    if (m == NULL)
        return -1;
    ur_buf_init(&m->body);
    sess->multi = m;
    return 0;
}

static void multi_free(struct multi *m)
{
    ur_buf_deinit(&m->body);
    free(m);
}

void batch_multi_end(struct session *sess)
{
    if (sess->multi == NULL)
        return;
    multi_free(sess->multi);
    sess->multi = NULL;
}

/* A refused command: EXEC will answer EXECABORT, so the queue is dropped
 * at once rather than held until then. */
static void multi_failed(struct multi *m)
{
    m->failed = true;
    ur_buf_deinit(&m->body);
}

void batch_multi_fail(struct session *sess)
{
    if (sess->multi != NULL)
        multi_failed(sess->multi);
}

/* Commands a transaction may queue: as many as a batch frame may hold
 * (max-args, and its u16 count). */
static uint32_t queue_max(const struct server *srv)
{
    return srv->cfg.max_args < UINT16_MAX ? srv->cfg.max_args : UINT16_MAX;
}

/* Whether one more command of argc arguments fits the queue: the batch
 * body a binary client could send (max-frame bytes). */
static bool fits(const struct server *srv, const struct multi *m, uint32_t argc,
                 const struct ur_arg *argv)
{
    return m->n < queue_max(srv) && argc <= UINT16_MAX &&
           UR_FRAME_SUB_HDR + ur_frame_args_len(argc, argv) <=
               srv->cfg.max_frame - m->body.len;
}

bool batch_multi_queue(struct server *srv, struct session *sess,
                       const struct ur_op *op, uint32_t argc,
                       const struct ur_arg *argv, struct reply *r)
{
    struct multi *m = sess->multi;

    if (op->index == UR_OPI_MULTI || op->index == UR_OPI_EXEC ||
        op->index == UR_OPI_DISCARD || op->index == UR_OPI_QUIT ||
        op->index == UR_OPI_RESET)
        return false;
    if (op->flags & OPF_NOBATCH) {
        reply_err(r, UR_E_ERR, "%s is not allowed in a transaction", op->name);
    } else if (!exec_arity_ok(op, argc)) {
        exec_arity_err(r, op, "");
    } else if (acl_refuses(srv, sess, op, argc, argv, r)) {
        /* NOPERM at queue time, as Redis: EXEC answers EXECABORT */
    } else if (srv->cluster != NULL &&
               cluster_refuse(srv, sess, op, argc, argv, r)) {
        /* MOVED or CLUSTERDOWN now; CROSSSLOT between commands at EXEC */
    } else if (m->failed) {
        reply_status(r, "QUEUED"); /* checked, not kept: EXEC aborts */
        return true;
    } else if (!fits(srv, m, argc, argv)) {
        reply_err(r, UR_E_LIMIT,
                  "transaction too large: at most %u commands and %u bytes "
                  "queued (max-args, max-frame)",
                  queue_max(srv), srv->cfg.max_frame);
    } else if (ur_frame_put_sub(&m->body, op->code, (uint16_t)argc, argv) !=
               0) {
        reply_err(r, UR_E_OOM, "out of memory queuing the command");
    } else {
        m->n++;
        if (argc > m->argc_max)
            m->argc_max = argc;
        reply_status(r, "QUEUED");
        return true;
    }
    srv->stats.errors++;
    multi_failed(m);
    return true;
}

void batch_multi_exec(struct server *srv, struct session *sess, struct reply *r)
{
    struct multi *m = sess->multi;
    struct ur_arg *args = NULL;

    /* The transaction ends here whatever happens; its commands run with
     * the session out of MULTI, as they would outside it. */
    sess->multi = NULL;
    if (m->failed) {
        reply_err(r, UR_E_EXECABORT,
                  "Transaction discarded because of previous errors.");
    } else if (m->argc_max > 0 &&
               (args = calloc(m->argc_max, sizeof(*args))) == NULL) {
        reply_err(r, UR_E_OOM, "out of memory running the transaction");
    } else {
        run_pinned(srv, sess, m->body.data, m->body.len, m->n, args,
                   m->argc_max, r);
    }
    free(args);
    multi_free(m);
}
