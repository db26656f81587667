/*
 * unread_rcpt.c - libunread's RCPT calls (docs/RCPT.md): typed synchronous
 * calls and pipeline queue helpers over the connection core (unread_int.h).
 * Every RCPT op is routed by its first argument, the gid.
 */
#include <stdlib.h>
#include <string.h>

#include "unread_int.h"

static int prep_rcpt_join(struct uc_core *k, struct uc_call *q, uint64_t gid,
                          uint64_t uid, uint32_t *mapid)
{
    uint64_t args[2] = {gid, uid};
    int rc = uc_q_ints(k, q, UR_OP_RCPT_JOIN, 2, args);

    q->decode = uc_dec_u32;
    q->out[0] = mapid;
    return rc;
}
UC_FACES(rcpt_join, (uint64_t gid, uint64_t uid, uint32_t *mapid),
         (gid, uid, mapid))

static int prep_rcpt_quit(struct uc_core *k, struct uc_call *q, uint64_t gid,
                          uint64_t uid, int *was_member)
{
    uint64_t args[2] = {gid, uid};
    int rc = uc_q_ints(k, q, UR_OP_RCPT_QUIT, 2, args);

    q->decode = uc_dec_flag;
    q->out[0] = was_member;
    return rc;
}
UC_FACES(rcpt_quit, (uint64_t gid, uint64_t uid, int *was_member),
         (gid, uid, was_member))

static int prep_rcpt_send(struct uc_core *k, struct uc_call *q, uint64_t gid,
                          uint64_t msgid, uint64_t sender, uint64_t ts,
                          uint32_t *nrcpt)
{
    uint64_t args[4] = {gid, msgid, sender, ts};
    int rc =
        uc_q_ints(k, q, UR_OP_RCPT_SEND, ts == UNREAD_RCPT_NOW ? 3 : 4, args);

    q->decode = uc_dec_u32;
    q->out[0] = nrcpt;
    return rc;
}
UC_FACES(rcpt_send,
         (uint64_t gid, uint64_t msgid, uint64_t sender, uint64_t ts,
          uint32_t *nrcpt),
         (gid, msgid, sender, ts, nrcpt))

/* The arguments of RCPT.READ (gid, uid, then the msgids), or NULL on
 * allocation failure (recorded for unread_errstr). The caller frees them. */
static struct unread_arg *read_argv(struct unread *c, uint64_t gid,
                                    uint64_t uid, const uint64_t *msgids,
                                    unsigned n)
{
    struct unread_arg *argv = malloc(((size_t)n + 2) * sizeof(*argv));

    if (argv == NULL) {
        uc_set_err(c, UNREAD_ENOMEM,
                   "out of memory for RCPT.READ of %u messages", n);
        return NULL;
    }
    argv[0] = unread_arg_int(gid);
    argv[1] = unread_arg_int(uid);
    for (unsigned i = 0; i < n; i++)
        argv[i + 2] = unread_arg_int(msgids[i]);
    return argv;
}

/* RCPT.READ: how many of the q->n msgids were newly marked (a write:
 * never degraded). */
static int dec_marked(struct uc_core *k, const struct uc_call *q, int rc,
                      struct ur_val_reader *rd)
{
    uint64_t v;

    if (rc != 0)
        return rc;
    if (!uc_rd_int(rd, &v) || v > q->n)
        return uc_bad_reply(k, q->op);
    if (q->out[0] != NULL)
        *(uint64_t *)q->out[0] = v;
    return 0;
}

static int prep_rcpt_read(struct uc_core *k, struct uc_call *q, uint64_t gid,
                          uint64_t uid, const uint64_t *msgids, unsigned n,
                          uint64_t *marked)
{
    unsigned i;
    int rc;

    if (n > 0 && msgids == NULL)
        return uc_err(k, UNREAD_EUSAGE, "RCPT.READ: %u msgids, none given", n);
    rc = uc_q_alloc(k, q, UR_OP_RCPT_READ, n + 2);
    if (rc != 0)
        return rc;
    q->argv[0] = unread_arg_int(gid);
    q->argv[1] = unread_arg_int(uid);
    for (i = 0; i < n; i++)
        q->argv[i + 2] = unread_arg_int(msgids[i]);
    q->decode = dec_marked;
    q->out[0] = marked;
    q->n = n;
    return 0;
}
UC_FACES(rcpt_read,
         (uint64_t gid, uint64_t uid, const uint64_t *msgids, unsigned n,
          uint64_t *marked),
         (gid, uid, msgids, n, marked))

static int prep_rcpt_readupto(struct uc_core *k, struct uc_call *q,
                              uint64_t gid, uint64_t uid, uint64_t msgid,
                              uint64_t *marked)
{
    uint64_t args[3] = {gid, uid, msgid};
    int rc = uc_q_ints(k, q, UR_OP_RCPT_READUPTO, 3, args);

    q->decode = uc_dec_u64;
    q->out[0] = marked;
    return rc;
}
UC_FACES(rcpt_readupto,
         (uint64_t gid, uint64_t uid, uint64_t msgid, uint64_t *marked),
         (gid, uid, msgid, marked))

/* RCPT.COUNT: [read, unread]; degraded: the default in both. */
static int dec_count(struct uc_core *k, const struct uc_call *q, int rc,
                     struct ur_val_reader *rd)
{
    uint64_t r, u;
    uint32_t count;

    if (rc == UNREAD_DEGRADED) {
        if (!uc_rd_int(rd, &r))
            return uc_bad_reply(k, q->op);
        u = r;
    } else if (!uc_rd_arr(rd, &count) || count != 2 || !uc_rd_int(rd, &r) ||
               !uc_rd_int(rd, &u) || r > UINT32_MAX || u > UINT32_MAX) {
        return uc_bad_reply(k, q->op);
    }
    if (q->out[0] != NULL)
        *(uint32_t *)q->out[0] = r > UINT32_MAX ? UINT32_MAX : (uint32_t)r;
    if (q->out[1] != NULL)
        *(uint32_t *)q->out[1] = u > UINT32_MAX ? UINT32_MAX : (uint32_t)u;
    return rc;
}

static int prep_rcpt_count(struct uc_core *k, struct uc_call *q, uint64_t gid,
                           uint64_t msgid, uint32_t *nread, uint32_t *nunread)
{
    uint64_t args[2] = {gid, msgid};
    int rc = uc_q_ints(k, q, UR_OP_RCPT_COUNT, 2, args);

    q->decode = dec_count;
    q->out[0] = nread;
    q->out[1] = nunread;
    return rc;
}
UC_FACES(rcpt_count,
         (uint64_t gid, uint64_t msgid, uint32_t *nread, uint32_t *nunread),
         (gid, msgid, nread, nunread))

/* The arguments of RCPT.LIST; offset and count always go (count
 * UINT32_MAX: all). */
static void list_argv(struct unread_arg *argv, uint64_t gid, uint64_t msgid,
                      int want_read, uint32_t offset, uint32_t count)
{
    argv[0] = unread_arg_int(gid);
    argv[1] = unread_arg_int(msgid);
    argv[2] =
        want_read ? unread_arg_str("READ", 4) : unread_arg_str("UNREAD", 6);
    argv[3] = unread_arg_int(offset);
    argv[4] = unread_arg_int(count);
}

/* Reads RCPT.LIST's array of uids into a new array (NULL when empty). 0,
 * UNREAD_ENOMEM, or -1 for a reply of the wrong shape. */
static int list_reply(struct ur_val_reader *rd, size_t body_len,
                      uint32_t count_max, uint64_t **uids, size_t *n)
{
    uint32_t count;
    uint64_t *v = NULL;

    /* An integer takes 9 bytes on the wire: no count can exceed that. */
    if (!uc_rd_arr(rd, &count) || count > count_max || count > body_len / 9)
        return -1;
    if (count > 0 && (v = malloc((size_t)count * sizeof(*v))) == NULL)
        return UNREAD_ENOMEM;
    for (uint32_t i = 0; i < count; i++) {
        if (!uc_rd_int(rd, &v[i])) {
            free(v);
            return -1;
        }
    }
    *uids = v;
    *n = count;
    return 0;
}

static int dec_list(struct uc_core *k, const struct uc_call *q, int rc,
                    struct ur_val_reader *rd)
{
    size_t len = (size_t)(rd->end - rd->p);
    int r;

    if (rc == UNREAD_DEGRADED)
        return rc; /* an empty list */
    r = list_reply(rd, len, (uint32_t)q->n, q->out[0], q->out[1]);
    if (r == UNREAD_ENOMEM)
        return uc_err(k, r, "out of memory for RCPT.LIST");
    return r < 0 ? uc_bad_reply(k, q->op) : 0;
}

static int prep_rcpt_list(struct uc_core *k, struct uc_call *q, uint64_t gid,
                          uint64_t msgid, int want_read, uint32_t offset,
                          uint32_t count, uint64_t **uids, size_t *n)
{
    struct unread_arg argv[5];
    int rc;

    *uids = NULL;
    *n = 0;
    list_argv(argv, gid, msgid, want_read, offset, count);
    rc = uc_q_args(k, q, UR_OP_RCPT_LIST, 5, argv);
    q->decode = dec_list;
    q->out[0] = uids;
    q->out[1] = n;
    q->n = count;
    return rc;
}
UC_FACES(rcpt_list,
         (uint64_t gid, uint64_t msgid, int want_read, uint32_t offset,
          uint32_t count, uint64_t **uids, size_t *n),
         (gid, msgid, want_read, offset, count, uids, n))

int unread_pipe_rcpt_join(struct unread *c, uint64_t gid, uint64_t uid)
{
    uint64_t a[2] = {gid, uid};

    return uc_pipe_ints(c, UR_OP_RCPT_JOIN, 2, a);
}

int unread_pipe_rcpt_send(struct unread *c, uint64_t gid, uint64_t msgid,
                          uint64_t sender, uint64_t ts)
{
    uint64_t a[4] = {gid, msgid, sender, ts};

    return uc_pipe_ints(c, UR_OP_RCPT_SEND, ts == UNREAD_RCPT_NOW ? 3 : 4, a);
}

int unread_pipe_rcpt_read(struct unread *c, uint64_t gid, uint64_t uid,
                          const uint64_t *msgids, unsigned n)
{
    struct unread_arg *argv = read_argv(c, gid, uid, msgids, n);
    int rc;

    if (argv == NULL)
        return UNREAD_ENOMEM;
    rc = unread_pipe_cmd(c, NULL, UR_OP_RCPT_READ, n + 2, argv);
    free(argv);
    return rc;
}

int unread_pipe_rcpt_count(struct unread *c, uint64_t gid, uint64_t msgid)
{
    uint64_t a[2] = {gid, msgid};

    return uc_pipe_ints(c, UR_OP_RCPT_COUNT, 2, a);
}
