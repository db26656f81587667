/*
 * unread_answer.c - how a request's replies become one answer
 * (unread_core.h, "Answers"), for both faces: a reply's status checked
 * against its value; a global write's replies combined (GRP.POST's seqs
 * must agree); a split request's arrays merged back in the caller's order;
 * and degraded mode's mapping of a failure to the default or to "not
 * sent". No I/O: the faces bring the replies.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "proto.h"
#include "unread_sentinel.h"
#include "unread_core.h"

int uc_reply_status(struct uc_conn *c, const struct ur_frame_hdr *h,
                    const char *body)
{
    struct ur_val_reader rd;
    struct ur_val v;

    ur_val_reader_init(&rd, body, h->len);
    if (ur_val_next(&rd, &v) &&
        ((h->op == 0 && v.kind != UR_VAL_ERR) ||
         (h->op != 0 && v.kind == UR_VAL_ERR && v.code == h->op))) {
        if (h->op == UNREAD_ERR_READONLY && c->a->sentinel != NULL &&
            !c->a->sentinel->replica)
            c->a->sentinel->stale = true; /* a failover: ask again */
        return h->op;
    }
    snprintf(c->err, sizeof(c->err),
             "%s: protocol error: reply status %u does not match its value",
             c->a->name, (unsigned)h->op);
    return UNREAD_EPROTO;
}

/* The seq of a GRP.POST reply, or false when it is not one integer. */
static bool res_int(const struct uc_res *r, uint64_t *v)
{
    struct ur_val_reader rd;
    struct ur_val x;

    ur_val_reader_init(&rd, r->body, r->h.len);
    if (!ur_val_next(&rd, &x) || x.kind != UR_VAL_INT)
        return false;
    *v = x.num;
    return true;
}

/*
 * The first client-side failure, else the first server error, else the
 * first server's reply - after checking that GRP.POST's seqs agree
 * (UNREAD_EMISMATCH, with every server's answer in errstr).
 */
void uc_combine(struct uc_core *k, uint16_t op, size_t n,
                const struct uc_res *res, struct uc_res *out)
{
    size_t i, pick = n, len;
    uint64_t v0 = 0, v = 0;
    bool same;

    for (i = 0; i < n && pick == n; i++)
        if (res[i].rc < 0)
            pick = i;
    for (i = 0; i < n && pick == n; i++)
        if (res[i].rc > 0)
            pick = i;
    *out = res[pick == n ? 0 : pick];
    if (out->rc != 0 || op != UR_OP_GRP_POST)
        return;
    same = res_int(&res[0], &v0);
    for (i = 1; i < n && same; i++)
        same = res_int(&res[i], &v) && v == v0;
    if (same)
        return;
    len = (size_t)snprintf(k->err, sizeof(k->err),
                           "GRP.POST: servers disagree on the seq:");
    for (i = 0; i < n && len < sizeof(k->err); i++) {
        if (res_int(&res[i], &v))
            len += (size_t)snprintf(k->err + len, sizeof(k->err) - len,
                                    " %s=%llu", k->addr[res[i].server].name,
                                    (unsigned long long)v);
        else
            len += (size_t)snprintf(k->err + len, sizeof(k->err) - len,
                                    " %s=(not an integer)",
                                    k->addr[res[i].server].name);
    }
    out->rc = UNREAD_EMISMATCH;
}

/* The message of a server's error reply, as the text protocol shows it. */
static void set_reply_err(struct uc_core *k, const struct uc_res *r)
{
    struct ur_val_reader rd;
    struct ur_val v;

    ur_val_reader_init(&rd, r->body, r->h.len);
    if (ur_val_next(&rd, &v))
        uc_err(k, r->rc, "%s %.*s", ur_err_prefix(v.code), (int)v.len, v.str);
}

/* The reply body of a degraded batch of n reads: an ARRAY holding the
 * default n times. 0, or -1 when out of memory. */
static int degraded_batch(struct uc_core *k, uint16_t n)
{
    uint16_t i;
    int rc;

    k->dflt_batch.len = 0;
    rc = ur_frame_put_arr(&k->dflt_batch, n);
    for (i = 0; i < n && rc == 0; i++)
        rc = ur_frame_put_int(&k->dflt_batch, k->opt.default_value);
    return rc;
}

void uc_surface(struct uc_core *k, const struct uc_what *w, struct uc_res *r)
{
    bool batch = w->op == UR_FRAME_OP_BATCH;

    if (r->rc > 0 && r->rc != UNREAD_DEGRADED) {
        set_reply_err(k, r);
        return;
    }
    if (r->rc == 0 || r->rc == UNREAD_EMISMATCH || r->rc == UNREAD_DEGRADED)
        return;
    uc_err(k, r->rc, "%s", k->srv[r->server].conn.err);
    if (!k->opt.degraded || !uc_unreachable(r->rc))
        return;
    if (batch ? w->batch_reads : uc_op_is_read(w->op)) {
        if (batch && degraded_batch(k, w->nbatch) != 0) {
            r->rc = uc_err(k, UNREAD_ENOMEM, "out of memory");
            return;
        }
        r->rc = UNREAD_DEGRADED;
        memset(&r->h, 0, sizeof(r->h));
        r->h.len = (uint32_t)(batch ? k->dflt_batch.len : k->dflt.len);
        r->body = batch ? k->dflt_batch.data : k->dflt.data;
    } else if (r->rc == UNREAD_ECONNECT) {
        r->rc = UNREAD_EUNAVAIL;
    }
}

/* Skips one value (an array with all its elements) in rd. */
static bool skip_value(struct ur_val_reader *rd)
{
    struct ur_val v;
    uint64_t left = 1;

    while (left > 0) {
        if (!ur_val_next(rd, &v))
            return false;
        left--;
        if (v.kind == UR_VAL_ARR)
            left += v.count;
    }
    return true;
}

/* Whether a failed share of a split read reads as defaults. */
static bool split_degrades(const struct uc_core *k, uint16_t op, int rc)
{
    return k->opt.degraded && uc_unreachable(rc) && uc_op_is_read(op);
}

/* A reply of the wrong shape to op from server s: the server and the
 * library disagree on the command. */
static int shape_err(struct uc_core *k, uint16_t op, uint32_t s)
{
    const struct ur_op *o = ur_op_by_code(op);

    k->last_srv = s;
    return uc_err(k, UNREAD_EPROTO,
                  "%s: protocol error: unexpected reply to %s", k->addr[s].name,
                  o != NULL ? o->name : "command");
}

/* One server's share of a split request, while merging. */
struct uc_share {
    struct ur_val_reader rd;
    uint32_t sent; /* uids it was sent */
};

/*
 * A failed share fails the request (the first client-side failure, else
 * the first server error), except in degraded mode, where an unreachable
 * server's uids read as the default and the answer is UNREAD_DEGRADED.
 * A share of the wrong shape is UNREAD_EPROTO, its server in last_srv.
 */
bool uc_merge(struct uc_core *k, uint16_t op, const struct uc_res *res,
              size_t span, const uint32_t *map, uint32_t nuids,
              struct uc_res *out)
{
    struct uc_share local[16], *sh = local;
    size_t i, pick = span;
    bool degraded = false;
    int rc = UNREAD_ENOMEM;

    for (i = 0; i < span && pick == span; i++)
        if (res[i].rc < 0 && !split_degrades(k, op, res[i].rc))
            pick = i;
    for (i = 0; i < span && pick == span; i++)
        if (res[i].rc > 0)
            pick = i;
    if (pick != span) {
        *out = res[pick];
        return false;
    }
    memset(out, 0, sizeof(*out));
    out->server = res[0].server;
    if (span > 16 && (sh = calloc(span, sizeof(*sh))) == NULL)
        goto fail;
    /* map: uid -> its share (reply) index, one per group (uc_split) */
    for (i = 0; i < span; i++)
        sh[i].sent = 0;
    for (uint32_t u = 0; u < nuids; u++)
        sh[map[u]].sent++;
    for (i = 0; i < span; i++) {
        struct ur_val v;

        if (res[i].rc != 0) {
            degraded = true;
            continue;
        }
        ur_val_reader_init(&sh[i].rd, res[i].body, res[i].h.len);
        if (!ur_val_next(&sh[i].rd, &v) || v.kind != UR_VAL_ARR ||
            v.count != sh[i].sent) {
            rc = shape_err(k, op, res[i].server);
            goto fail;
        }
    }
    k->merged.len = 0;
    if (ur_frame_put_arr(&k->merged, nuids) != 0)
        goto fail;
    for (uint32_t u = 0; u < nuids; u++) {
        uint32_t at = map[u];
        struct uc_share *one = &sh[at];
        const char *from = one->rd.p;

        if (res[at].rc != 0) {
            if (ur_frame_put_int(&k->merged, k->opt.default_value) != 0)
                goto fail;
            continue;
        }
        if (!skip_value(&one->rd)) {
            rc = shape_err(k, op, res[at].server);
            goto fail;
        }
        if (ur_buf_append(&k->merged, from, (size_t)(one->rd.p - from)) != 0)
            goto fail;
    }
    if (sh != local)
        free(sh);
    out->rc = degraded ? UNREAD_DEGRADED : 0;
    out->h.len = (uint32_t)k->merged.len;
    out->body = k->merged.data;
    if (degraded)
        uc_err(k, UNREAD_DEGRADED,
               "a server of the request could not be reached: its "
               "users read as the default");
    return true;

fail:
    if (sh != local)
        free(sh);
    out->rc = rc == UNREAD_ENOMEM
                  ? uc_err(k, rc, "out of memory merging replies")
                  : rc;
    return true;
}
