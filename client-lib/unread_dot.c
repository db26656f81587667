/*
 * unread_dot.c - libunread's DOT calls (docs/COMMANDS.md, "DOT"): typed
 * synchronous calls and pipeline queue helpers over the connection core
 * (unread_int.h).
 */
#include <stdlib.h>

#include "unread_int.h"

/* Arguments of a command taking [ts]: argc without ts when it is
 * UNREAD_DOT_NOW (the server's clock). */
static unsigned ts_argc(unsigned argc, uint64_t ts)
{
    return ts == UNREAD_DOT_NOW ? argc - 1 : argc;
}

static int prep_dot_push(struct uc_core *k, struct uc_call *q, uint64_t dot,
                         uint64_t ts, uint64_t *push_ts)
{
    uint64_t args[2] = {dot, ts};
    int rc = uc_q_ints(k, q, UR_OP_DOT_PUSH, ts_argc(2, ts), args);

    q->decode = uc_dec_u64;
    q->out[0] = push_ts;
    return rc;
}
UC_FACES(dot_push, (uint64_t dot, uint64_t ts, uint64_t *push_ts),
         (dot, ts, push_ts))

static int prep_dot_click(struct uc_core *k, struct uc_call *q, uint64_t uid,
                          uint64_t dot, uint64_t ts)
{
    uint64_t args[3] = {uid, dot, ts};
    int rc = uc_q_ints(k, q, UR_OP_DOT_CLICK, ts_argc(3, ts), args);

    q->decode = uc_dec_zero;
    return rc;
}
UC_FACES(dot_click, (uint64_t uid, uint64_t dot, uint64_t ts), (uid, dot, ts))

/* The arguments of DOT.CHECK (uid, then the dots), or NULL on allocation
 * failure (recorded for unread_errstr). The caller frees them. */
static struct unread_arg *check_argv(struct unread *c, uint64_t uid,
                                     const uint64_t *dots, unsigned n)
{
    struct unread_arg *argv = malloc(((size_t)n + 1) * sizeof(*argv));

    if (argv == NULL) {
        uc_set_err(c, UNREAD_ENOMEM, "out of memory for DOT.CHECK of %u dots",
                   n);
        return NULL;
    }
    argv[0] = unread_arg_int(uid);
    for (unsigned i = 0; i < n; i++)
        argv[i + 1] = unread_arg_int(dots[i]);
    return argv;
}

/* Reads DOT.CHECK's reply: exactly n integers, each 0 or 1. */
static bool check_reply(struct ur_val_reader *rd, unsigned n, uint8_t *shown)
{
    uint32_t count;
    uint64_t v;

    if (!uc_rd_arr(rd, &count) || count != n)
        return false;
    for (unsigned i = 0; i < n; i++) {
        if (!uc_rd_int(rd, &v) || v > 1)
            return false;
        shown[i] = (uint8_t)v;
    }
    return true;
}

/* DOT.CHECK: n flags into (uint8_t *)out[0]; degraded: every flag is 1
 * when the default is non-zero. */
static int dec_check(struct uc_core *k, const struct uc_call *q, int rc,
                     struct ur_val_reader *rd)
{
    uint8_t *shown = q->out[0];
    uint64_t dflt = 0;

    if (rc == UNREAD_DEGRADED) {
        uc_rd_int(rd, &dflt);
        for (uint64_t i = 0; i < q->n; i++)
            shown[i] = dflt != 0;
        return rc;
    }
    if (!check_reply(rd, (unsigned)q->n, shown))
        return uc_bad_reply(k, q->op);
    return 0;
}

static int prep_dot_check(struct uc_core *k, struct uc_call *q, uint64_t uid,
                          const uint64_t *dots, unsigned n, uint8_t *shown)
{
    unsigned i;
    int rc;

    if (n > 0 && (dots == NULL || shown == NULL))
        return uc_err(k, UNREAD_EUSAGE, "DOT.CHECK: dots and shown needed");
    rc = uc_q_alloc(k, q, UR_OP_DOT_CHECK, n + 1);
    if (rc != 0)
        return rc;
    q->argv[0] = unread_arg_int(uid);
    for (i = 0; i < n; i++)
        q->argv[i + 1] = unread_arg_int(dots[i]);
    q->decode = dec_check;
    q->out[0] = shown;
    q->n = n;
    return 0;
}
UC_FACES(dot_check,
         (uint64_t uid, const uint64_t *dots, unsigned n, uint8_t *shown),
         (uid, dots, n, shown))

int unread_pipe_dot_push(struct unread *c, uint64_t dot, uint64_t ts)
{
    uint64_t a[2] = {dot, ts};

    return uc_pipe_ints(c, UR_OP_DOT_PUSH, ts_argc(2, ts), a);
}

int unread_pipe_dot_click(struct unread *c, uint64_t uid, uint64_t dot,
                          uint64_t ts)
{
    uint64_t a[3] = {uid, dot, ts};

    return uc_pipe_ints(c, UR_OP_DOT_CLICK, ts_argc(3, ts), a);
}

int unread_pipe_dot_check(struct unread *c, uint64_t uid, const uint64_t *dots,
                          unsigned n)
{
    struct unread_arg *argv = check_argv(c, uid, dots, n);
    int rc;

    if (argv == NULL)
        return UNREAD_ENOMEM;
    rc = unread_pipe_cmd(c, NULL, UR_OP_DOT_CHECK, n + 1, argv);
    free(argv);
    return rc;
}
