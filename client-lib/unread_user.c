/*
 * unread_user.c - libunread's USER calls and FLUSHALL (docs/OPERATIONS.md,
 * "Users and expiry"): typed synchronous calls and a pipeline queue helper over
 * the connection core (unread_int.h).
 */
#include "unread_int.h"

#include <string.h>

/* A bulk string of the reply into dst[cap] (NUL-terminated, cut). */
static bool rd_name(struct ur_val_reader *rd, char *dst, size_t cap)
{
    struct ur_val v;
    size_t n;

    if (!ur_val_next(rd, &v) || v.kind != UR_VAL_STR)
        return false;
    n = v.len < cap - 1 ? v.len : cap - 1;
    memcpy(dst, v.str, n);
    dst[n] = '\0';
    return true;
}

static int prep_user_info(struct uc_core *k, struct uc_call *q, uint64_t uid,
                          struct unread_reply **out)
{
    int rc = uc_q_ints(k, q, UR_OP_USER_INFO, 1, &uid);

    uc_q_tree(q, out);
    return rc;
}
UC_FACES(user_info, (uint64_t uid, struct unread_reply **out), (uid, out))

static int prep_user_del(struct uc_core *k, struct uc_call *q, uint64_t uid,
                         uint64_t *removed)
{
    int rc = uc_q_ints(k, q, UR_OP_USER_DEL, 1, &uid);

    q->decode = uc_dec_u64;
    q->out[0] = removed;
    return rc;
}
UC_FACES(user_del, (uint64_t uid, uint64_t *removed), (uid, removed))

static int dec_status_ok(struct uc_core *k, const struct uc_call *q, int rc,
                         struct ur_val_reader *rd)
{
    struct ur_val v;

    if (rc != 0)
        return rc;
    if (!ur_val_next(rd, &v) || v.kind != UR_VAL_STATUS)
        return uc_bad_reply(k, q->op);
    return 0;
}

static int prep_flushall(struct uc_core *k, struct uc_call *q, int unused)
{
    int rc = uc_q_ints(k, q, UR_OP_FLUSHALL, 0, NULL);

    (void)unused;
    q->decode = dec_status_ok;
    return rc;
}

int unread_flushall(struct unread *c)
{
    struct uc_call q;
    int rc = prep_flushall((struct uc_core *)(void *)c, &q, 0);

    return rc != 0 ? rc : uc_sync(c, &q);
}

int unread_async_flushall(struct unread_async *a, unread_async_cb *cb,
                          void *priv)
{
    struct uc_call q;
    int rc = prep_flushall(uc_async_core(a), &q, 0);

    return rc != 0 ? rc : uc_async(a, &q, cb, priv);
}

int unread_pipe_user_del(struct unread *c, uint64_t uid)
{
    struct unread_arg a = unread_arg_int(uid);

    return unread_pipe_cmd(c, NULL, UR_OP_USER_DEL, 1, &a);
}

static int prep_user_mbadge(struct uc_core *k, struct uc_call *q,
                            const uint64_t *uids, size_t n, uint64_t *badges)
{
    return uc_q_uids(k, q, UR_OP_USER_MBADGE, uids, n, badges);
}
UC_FACES(user_mbadge, (const uint64_t *uids, size_t n, uint64_t *badges),
         (uids, n, badges))

/* USER.BADGE: [badge, family, value, ..., ("expired", ms)]; degraded: the
 * default badge, no part. q->n: withexpiry. */
static int dec_badge(struct uc_core *k, const struct uc_call *q, int rc,
                     struct ur_val_reader *rd)
{
    struct unread_badge b;
    uint32_t count;
    unsigned i;
    bool withexpiry = q->n != 0;

    memset(&b, 0, sizeof(b));
    if (rc == UNREAD_DEGRADED) {
        b.badge = uc_core_default(k);
    } else {
        if (!uc_rd_arr(rd, &count) || count < 1 || count % 2 == 0 ||
            !uc_rd_int(rd, &b.badge))
            return uc_bad_reply(k, q->op);
        b.nparts = (count - 1) / 2 - (withexpiry ? 1 : 0);
        if (b.nparts > UNREAD_BADGE_PARTS || (withexpiry && count < 3))
            return uc_bad_reply(k, q->op);
        for (i = 0; i < b.nparts; i++)
            if (!rd_name(rd, b.part[i].family, sizeof(b.part[i].family)) ||
                !uc_rd_int(rd, &b.part[i].value))
                return uc_bad_reply(k, q->op);
        if (withexpiry) {
            char word[16];

            if (!rd_name(rd, word, sizeof(word)) ||
                strcmp(word, "expired") != 0 || !uc_rd_int(rd, &b.expired))
                return uc_bad_reply(k, q->op);
        }
    }
    if (q->out[0] != NULL)
        *(struct unread_badge *)q->out[0] = b;
    return rc;
}

static int prep_user_badge(struct uc_core *k, struct uc_call *q, uint64_t uid,
                           const char *const *families, unsigned nfamilies,
                           int withexpiry, struct unread_badge *out)
{
    struct unread_arg argv[2 + UNREAD_BADGE_PARTS];
    unsigned argc = 0, i;
    int rc;

    if (nfamilies > UNREAD_BADGE_PARTS || (nfamilies > 0 && families == NULL))
        return uc_err(k, UNREAD_EUSAGE, "USER.BADGE: %u families, at most %u",
                      nfamilies, (unsigned)UNREAD_BADGE_PARTS);
    argv[argc++] = unread_arg_int(uid);
    for (i = 0; i < nfamilies; i++)
        argv[argc++] = unread_arg_str(families[i], strlen(families[i]));
    if (withexpiry)
        argv[argc++] = unread_arg_str("WITHEXPIRY", 10);
    rc = uc_q_args(k, q, UR_OP_USER_BADGE, argc, argv);
    q->decode = dec_badge;
    q->out[0] = out;
    q->n = withexpiry != 0;
    return rc;
}
UC_FACES(user_badge,
         (uint64_t uid, const char *const *families, unsigned nfamilies,
          int withexpiry, struct unread_badge *out),
         (uid, families, nfamilies, withexpiry, out))

static int dec_status(struct uc_core *k, const struct uc_call *q, int rc,
                      struct ur_val_reader *rd)
{
    struct unread_user_status st;
    uint32_t count, i;
    char state[16];

    if (rc != 0)
        return rc; /* not a count: no default to give */
    memset(&st, 0, sizeof(st));
    if (!uc_rd_arr(rd, &count) || count < 3 || count - 3 > UNREAD_BADGE_PARTS ||
        !rd_name(rd, state, sizeof(state)) ||
        !uc_rd_int(rd, &st.last_active_ms) || !uc_rd_int(rd, &st.expired_ms))
        return uc_bad_reply(k, q->op);
    if (strcmp(state, "active") == 0)
        st.state = UNREAD_USER_ACTIVE;
    else if (strcmp(state, "expired") == 0)
        st.state = UNREAD_USER_EXPIRED;
    else if (strcmp(state, "unknown") == 0)
        st.state = UNREAD_USER_UNKNOWN;
    else
        return uc_bad_reply(k, q->op);
    st.npending = count - 3;
    for (i = 0; i < st.npending; i++)
        if (!rd_name(rd, st.pending[i], sizeof(st.pending[i])))
            return uc_bad_reply(k, q->op);
    if (q->out[0] != NULL)
        *(struct unread_user_status *)q->out[0] = st;
    return 0;
}

static int prep_user_status(struct uc_core *k, struct uc_call *q, uint64_t uid,
                            struct unread_user_status *out)
{
    int rc = uc_q_ints(k, q, UR_OP_USER_STATUS, 1, &uid);

    q->decode = dec_status;
    q->out[0] = out;
    return rc;
}
UC_FACES(user_status, (uint64_t uid, struct unread_user_status *out),
         (uid, out))
