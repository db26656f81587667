/*
 * cmd_migrate.c - DUMP, RESTORE, RESTORE-ASKING, MIGRATE and MIGRATED:
 * moving ids between servers as Redis moves keys (redis-cli --cluster
 * reshard and rebalance send MIGRATE), a key being an id whose whole
 * state is one user record (persistence/userrec.h).
 *
 * MIGRATE is not journaled (it is OPF_ADMIN, not OPF_WRITE): replaying it
 * would send the users again. What it changes here is the delete of the
 * ids the target acknowledged, and that runs through the executor as
 * MIGRATED id ..., journaled and replicated as any write, only after the
 * target answered (the target answers once its RESTORE is journaled).
 * A crash in between leaves an id on both sides, the source still
 * serving it; MIGRATE again with REPLACE finishes the move.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "migrate.h"
#include "userrec.h"

/* Keys one MIGRATE takes (redis-cli sends --cluster-pipeline, 10 by
 * default). */
#define MIGRATE_KEYS_MAX 100000

void cmd_DUMP(struct exec_ctx *x)
{
    const char *p;
    size_t n;
    uint64_t id;
    int rc;

    if (!arg_u64(x, 0, "key", &id))
        return;
    rc = userrec_dump(&x->srv->db, id, &p, &n);
    if (rc < 0)
        reply_oom(x);
    else if (rc > 0)
        reply_nil(x->r);
    else
        reply_str(x->r, p, n);
}

static void restore(struct exec_ctx *x)
{
    const struct ur_arg *pay = &x->argv[2];
    bool replace = false;
    uint64_t id, ttl, v;
    char err[256];

    if (!arg_u64(x, 0, "key", &id) || !arg_u64(x, 1, "ttl", &ttl))
        return;
    if (ttl != 0) {
        reply_err(x->r, UR_E_BADARG,
                  "ttl must be 0: a user expires by inactivity "
                  "(inactive-days), not by a TTL");
        return;
    }
    for (uint32_t i = 3; i < x->argc; i++) {
        if (arg_is(x, i, "REPLACE")) {
            replace = true;
        } else if (arg_is(x, i, "ABSTTL")) {
            /* ttl 0 either way */
        } else if ((arg_is(x, i, "IDLETIME") || arg_is(x, i, "FREQ")) &&
                   i + 1 < x->argc) {
            if (!arg_u64(x, ++i, "IDLETIME or FREQ", &v))
                return;
        } else {
            char text[40];

            reply_err(x->r, UR_E_BADARG,
                      "unknown RESTORE option '%s' (REPLACE, ABSTTL, "
                      "IDLETIME seconds, FREQ frequency)",
                      arg_text(x, i, text, sizeof(text)));
            return;
        }
    }
    if (pay->kind != UR_ARG_STR) {
        reply_err(x->r, UR_E_ERR,
                  "DUMP payload version or checksum are wrong "
                  "(not a user record)");
        return;
    }
    switch (userrec_restore(&x->srv->db, id, pay->str, pay->len, replace, err,
                            sizeof(err))) {
    case USERREC_OK:
        reply_status(x->r, "OK");
        return;
    case USERREC_BUSY:
        reply_err(x->r, UR_E_BUSYKEY, "Target key name already exists.");
        return;
    case USERREC_MISSING:
        reply_err(x->r, UR_E_TRYAGAIN, "%s", err);
        return;
    case USERREC_NOMEM:
        reply_oom(x);
        return;
    case USERREC_CORRUPT:
        break;
    }
    reply_err(x->r, UR_E_ERR, "DUMP payload version or checksum are wrong (%s)",
              err);
}

void cmd_RESTORE(struct exec_ctx *x)
{
    restore(x);
}

void cmd_RESTORE_ASKING(struct exec_ctx *x)
{
    restore(x);
}

void cmd_MIGRATED(struct exec_ctx *x)
{
    uint64_t n = 0, id;

    for (uint32_t i = 0; i < x->argc; i++)
        if (!arg_u64(x, i, "id", &id))
            return;
    for (uint32_t i = 0; i < x->argc; i++) {
        arg_u64(x, i, "id", &id);
        n += userrec_delete(&x->srv->db, id);
    }
    reply_int(x->r, n);
}

/* ---- MIGRATE ------------------------------------------------------------ */

/* A growable byte buffer for the pipeline. */
struct out {
    char *p;
    size_t n, cap;
    bool failed;
};

static void out_put(struct out *o, const char *p, size_t n)
{
    if (o->failed)
        return;
    if (n > o->cap - o->n) {
        size_t cap = o->cap ? o->cap : 4096;
        char *more;

        while (n > cap - o->n)
            cap *= 2;
        more = realloc(o->p, cap);
        if (more == NULL) {
            o->failed = true;
            return;
        }
        o->p = more;
        o->cap = cap;
    }
    memcpy(o->p + o->n, p, n);
    o->n += n;
}

static void out_bulk(struct out *o, const char *p, size_t n)
{
    char h[32];
    int k = snprintf(h, sizeof(h), "$%zu\r\n", n);

    out_put(o, h, (size_t)k);
    out_put(o, p, n);
    out_put(o, "\r\n", 2);
}

static void out_cmd(struct out *o, unsigned argc)
{
    char h[16];
    int k = snprintf(h, sizeof(h), "*%u\r\n", argc);

    out_put(o, h, (size_t)k);
}

static void out_arg(struct out *o, const struct exec_ctx *x, uint32_t i)
{
    char num[24];
    const struct ur_arg *a = &x->argv[i];

    if (a->kind == UR_ARG_INT)
        out_bulk(o, num,
                 (size_t)snprintf(num, sizeof(num), "%llu",
                                  (unsigned long long)a->num));
    else
        out_bulk(o, a->str, a->len);
}

struct mig_args {
    char host[256];
    uint64_t port, timeout;
    bool copy, replace;
    uint32_t auth, auth2;  /* argument index of the password / user, or 0 */
    uint32_t first, nkeys; /* the keys: argv[first .. first + nkeys) */
};

static bool mig_parse(struct exec_ctx *x, struct mig_args *m)
{
    const struct ur_arg *h = &x->argv[0];
    uint64_t dbn;
    char text[40];

    memset(m, 0, sizeof(*m));
    if (h->kind != UR_ARG_STR || h->len == 0 || h->len >= sizeof(m->host)) {
        reply_err(x->r, UR_E_BADARG, "bad host");
        return false;
    }
    memcpy(m->host, h->str, h->len);
    if (!arg_u64(x, 1, "port", &m->port) ||
        !arg_u64(x, 3, "destination-db", &dbn) ||
        !arg_u64(x, 4, "timeout", &m->timeout))
        return false;
    if (m->port == 0 || m->port > 65535) {
        reply_err(x->r, UR_E_BADARG, "port must be 1..65535");
        return false;
    }
    if (dbn != 0) {
        reply_err(x->r, UR_E_BADARG, "destination-db must be 0 (one db)");
        return false;
    }
    if (m->timeout == 0)
        m->timeout = 1000; /* Redis: 0 means its default, 1 s */
    for (uint32_t i = 5; i < x->argc; i++) {
        if (arg_is(x, i, "COPY")) {
            m->copy = true;
        } else if (arg_is(x, i, "REPLACE")) {
            m->replace = true;
        } else if (arg_is(x, i, "AUTH") && i + 1 < x->argc) {
            m->auth = ++i;
        } else if (arg_is(x, i, "AUTH2") && i + 2 < x->argc) {
            m->auth2 = ++i;
            m->auth = ++i;
        } else if (arg_is(x, i, "KEYS")) {
            if (!(x->argv[2].kind == UR_ARG_STR && x->argv[2].len == 0)) {
                reply_err(x->r, UR_E_ERR,
                          "When using MIGRATE KEYS option, the key argument "
                          "must be set to the empty string");
                return false;
            }
            m->first = i + 1;
            m->nkeys = x->argc - m->first;
            break;
        } else {
            reply_err(x->r, UR_E_ERR, "syntax error near '%s'",
                      arg_text(x, i, text, sizeof(text)));
            return false;
        }
    }
    if (m->first == 0) {
        if (x->argv[2].kind == UR_ARG_STR && x->argv[2].len == 0) {
            reply_err(x->r, UR_E_ERR, "no key: give a key or KEYS key ...");
            return false;
        }
        m->first = 2;
        m->nkeys = 1;
    }
    if (m->nkeys == 0 || m->nkeys > MIGRATE_KEYS_MAX) {
        reply_err(x->r, UR_E_ERR, "KEYS takes 1 to %u keys", MIGRATE_KEYS_MAX);
        return false;
    }
    return true;
}

/* The deletes of the moved ids, through the executor: journaled and
 * replicated as MIGRATED (chunks of at most 4096 ids a record). UR_E_OK,
 * or the refusal of a chunk (-MISCONF, -NOREPLICAS, ...) with its text in
 * why: the ids of that chunk and the next ones stay here too. */
static uint16_t delete_moved(struct exec_ctx *x, const uint64_t *ids, size_t n,
                             char *why, size_t whylen)
{
    struct ur_arg argv[4096];
    struct ur_buf buf;
    uint16_t status = UR_E_OK;

    ur_buf_init(&buf);
    for (size_t i = 0; i < n && status == UR_E_OK;) {
        uint32_t k = 0;
        struct reply r;

        for (; i < n && k < 4096; i++)
            argv[k++] = (struct ur_arg){.kind = UR_ARG_INT, .num = ids[i]};
        buf.len = 0;
        reply_begin(&r, &buf, REPLY_RESP, 0);
        exec_op(x->srv, x->sess, &ur_ops[UR_OPI_MIGRATED], k, argv, &r);
        reply_end(&r);
        status = r.status;
        if (status != UR_E_OK) {
            size_t len = buf.len > 3 ? buf.len - 3 : 0; /* "-" .. "\r\n" */

            snprintf(why, whylen, "%.*s", (int)len,
                     buf.len > 1 ? buf.data + 1 : "");
        }
    }
    ur_buf_deinit(&buf);
    return status;
}

/* After the target took ids: delete them here, or say why they are on
 * both sides now. true when the reply was written (a refusal). */
static bool delete_or_say(struct exec_ctx *x, const uint64_t *ids, size_t n)
{
    char why[256] = "";
    uint16_t st;

    if (n == 0)
        return false;
    st = delete_moved(x, ids, n, why, sizeof(why));
    if (st == UR_E_OK)
        return false;
    reply_err(x->r, st,
              "the target holds the ids now but deleting them here was "
              "refused, so they are on both sides (this one serving): %s",
              why);
    return true;
}

void cmd_MIGRATE(struct exec_ctx *x)
{
    struct mig_args m;
    struct out o = {0};
    struct migrate_conn *c = NULL;
    uint64_t *ids = NULL, *moved = NULL;
    size_t nids = 0, nmoved = 0;
    char err[256], line[512], first_err[512] = "";
    bool reused = false;

    if (!mig_parse(x, &m))
        return;
    if (x->srv->readonly_data) {
        reply_err(x->r, UR_E_READONLY,
                  "You can't write against a read only replica.");
        return;
    }
    ids = malloc(m.nkeys * sizeof(*ids));
    moved = malloc(m.nkeys * sizeof(*moved));
    if (ids == NULL || moved == NULL) {
        reply_oom(x);
        goto out;
    }
    for (uint32_t i = 0; i < m.nkeys; i++) {
        const char *p;
        size_t n;
        uint64_t id;
        int rc;

        if (!arg_u64(x, m.first + i, "key", &id))
            goto out;
        rc = userrec_dump(&x->srv->db, id, &p, &n);
        if (rc < 0) {
            reply_oom(x);
            goto out;
        }
        if (rc > 0)
            continue; /* nothing held: not sent, as Redis skips it */
        if (nids == 0 && m.auth) {
            out_cmd(&o, m.auth2 ? 3 : 2);
            out_bulk(&o, "AUTH", 4);
            if (m.auth2)
                out_arg(&o, x, m.auth2);
            out_arg(&o, x, m.auth);
        }
        out_cmd(&o, m.replace ? 5 : 4);
        out_bulk(&o, "RESTORE-ASKING", 14);
        out_arg(&o, x, m.first + i);
        out_bulk(&o, "0", 1);
        out_bulk(&o, p, n);
        if (m.replace)
            out_bulk(&o, "REPLACE", 7);
        ids[nids++] = id;
    }
    if (nids == 0) {
        reply_status(x->r, "NOKEY");
        goto out;
    }
    if (o.failed) {
        reply_oom(x);
        goto out;
    }
    /* A kept connection the target closed meanwhile fails at once: one
     * more try on a new one, as Redis retries. */
    for (int attempt = 0; attempt < 2; attempt++) {
        c = migrate_connect(m.host, (int)m.port, x->srv->cfg.tls_cluster,
                            m.timeout, &reused, err, sizeof(err));
        if (c == NULL) {
            reply_err(x->r, UR_E_IOERR,
                      "error or timeout connecting to the client: %s", err);
            goto out;
        }
        if (migrate_write(c, o.p, o.n, m.timeout) == 0)
            break;
        c = NULL;
        if (!reused)
            break;
    }
    if (c == NULL) {
        reply_err(x->r, UR_E_IOERR,
                  "error or timeout writing to target instance");
        goto out;
    }
    if (m.auth) {
        if (migrate_read_line(c, line, sizeof(line), m.timeout) != 0) {
            reply_err(x->r, UR_E_IOERR,
                      "error or timeout reading to target instance");
            goto out;
        }
        if (line[0] == '-')
            snprintf(first_err, sizeof(first_err), "%s", line + 1);
    }
    for (size_t i = 0; i < nids; i++) {
        if (migrate_read_line(c, line, sizeof(line), m.timeout) != 0) {
            /* The ids acknowledged so far moved: delete them all the
             * same, the others stay here (and may be on both sides). */
            if (!m.copy && delete_or_say(x, moved, nmoved))
                goto out;
            reply_err(x->r, UR_E_IOERR,
                      "error or timeout reading to target instance");
            goto out;
        }
        if (line[0] == '-') {
            if (first_err[0] == '\0')
                snprintf(first_err, sizeof(first_err), "%s", line + 1);
        } else {
            moved[nmoved++] = ids[i]; /* +OK: it is journaled there */
        }
    }
    if (!m.copy && delete_or_say(x, moved, nmoved))
        goto out;
    if (first_err[0] != '\0')
        reply_err(x->r, UR_E_ERR, "Target instance replied with error: %s",
                  first_err);
    else
        reply_status(x->r, "OK");

out:
    free(o.p);
    free(ids);
    free(moved);
}
