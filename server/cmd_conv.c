/*
 * cmd_conv.c - CONV handlers (docs/COMMANDS.md, "CONV"): arguments in, store
 * call, reply out.
 *
 * The writes take options after their positional arguments, in any order,
 * each at most once (which ones each command takes: ops.def):
 *   MENTION      the message mentions the user
 *   SPARSE       the seq is a sparse id (every write of a sparse
 *                conversation carries it, none of a dense one)
 *   SOURCE s     the message comes from source s (0..7 or a conv-sources
 *                name)
 *   THREAD tid   the command applies to thread tid of the conversation
 */
#include <stdio.h>
#include <stdlib.h>

#include "cmds.h"
#include "badges.h"
#include "conv.h"
#include "page.h"

_Static_assert(CONV_SOURCES == CONFIG_MAX_SOURCES, "conv-sources' size");

/* CONV.LIST's default and largest count: bounds the reply (~1.8 MB in
 * binary, ~2.5 MB in RESP; with STATE ~6 MB). */
#define CONV_LIST_MAX 100000

static bool uid_cid(struct exec_ctx *x, uint64_t *uid, uint64_t *cid)
{
    return arg_u64(x, 0, "uid", uid) && arg_u64(x, 1, "cid", cid);
}

/* The option words: index = bit of conv_req.flags. */
static const char *const opt_names[] = {"MENTION", "SPARSE", "THREAD",
                                        "SOURCE"};
#define NOPTS (sizeof(opt_names) / sizeof(opt_names[0]))

static int opt_of(const struct exec_ctx *x, uint32_t i)
{
    for (unsigned k = 0; k < NOPTS; k++)
        if (arg_is(x, i, opt_names[k]))
            return (int)k;
    return -1;
}

/* "MENTION, SPARSE, THREAD tid" for the options in mask. */
static void opt_list(uint32_t mask, char *out, size_t cap)
{
    size_t len = 0;

    out[0] = '\0';
    for (unsigned k = 0; k < NOPTS && len < cap; k++)
        if (mask & (1u << k))
            len += (size_t)snprintf(out + len, cap - len, "%s%s%s",
                                    len ? ", " : "", opt_names[k],
                                    k == 2   ? " tid"
                                    : k == 3 ? " s"
                                             : "");
}

/* A message source: 0..CONV_SOURCES-1 or a name from conv-sources. */
static bool arg_source(struct exec_ctx *x, uint32_t i, uint32_t *out)
{
    const struct ur_arg *a = &x->argv[i];
    uint64_t v;
    char text[65];
    int k;

    if (a->kind == UR_ARG_INT ? (v = a->num, true)
                              : ur_parse_u64(a->str, a->len, &v)) {
        if (v < CONV_SOURCES) {
            *out = (uint32_t)v;
            return true;
        }
    } else if ((k = config_source_by_name(&x->srv->cfg, a->str, a->len)) >= 0) {
        *out = (uint32_t)k;
        return true;
    }
    reply_err(x->r, UR_E_BADARG,
              "unknown source '%s' (use 0..%d or a name from conv-sources)",
              arg_text(x, i, text, sizeof(text)), CONV_SOURCES - 1);
    return false;
}

/* Whether argument i is one of the option words (so not a positional
 * number). */
static bool is_opt(const struct exec_ctx *x, uint32_t i)
{
    return i < x->argc && x->argv[i].kind == UR_ARG_STR && opt_of(x, i) >= 0;
}

/*
 * The options from argument i on, those of `allowed` only, into rq. false
 * after replying the error.
 */
static bool parse_opts(struct exec_ctx *x, uint32_t i, uint32_t allowed,
                       struct conv_req *rq)
{
    char text[33], list[64];

    for (; i < x->argc; i++) {
        int k = opt_of(x, i);
        uint32_t bit = k >= 0 ? 1u << k : 0;

        if (bit == 0 || !(allowed & bit) || (rq->flags & bit)) {
            opt_list(allowed, list, sizeof(list));
            reply_err(x->r, UR_E_BADARG,
                      "unknown or repeated option '%s' (%s takes %s)",
                      arg_text(x, i, text, sizeof(text)), x->op->name,
                      allowed ? list : "no options");
            return false;
        }
        rq->flags |= bit;
        if (bit != CONV_THREAD && bit != CONV_SOURCE)
            continue;
        if (i + 1 == x->argc) {
            reply_err(x->r, UR_E_BADARG, "%s needs a value", opt_names[k]);
            return false;
        }
        i++;
        if (bit == CONV_SOURCE ? !arg_source(x, i, &rq->source)
                               : !arg_u64(x, i, "tid", &rq->tid))
            return false;
        if (bit == CONV_THREAD && rq->tid > CONV_ID_MAX) {
            reply_err(x->r, UR_E_BADARG, "tid must be at most %llu",
                      (unsigned long long)CONV_ID_MAX);
            return false;
        }
    }
    return true;
}

/* Every mutator's store call and its [unread, total] reply. */
static void conv_reply(struct exec_ctx *x, uint64_t uid, uint64_t cid,
                       struct conv_req *rq)
{
    uint64_t total;
    uint32_t unread;

    rq->window = x->srv->cfg.unread_cap;
    switch (conv_apply(x->srv->db.conv, uid, cid, rq, &unread, &total)) {
    case 0:
        reply_pair(x->r, unread, total);
        break;
    case CONV_ELIMIT:
        reply_err(x->r, UR_E_LIMIT,
                  "a conversation remembers at most %d recalled messages "
                  "above its read watermark",
                  CONV_RECALL_MAX);
        break;
    case CONV_EMODE:
        if (rq->flags & CONV_SPARSE)
            reply_err(x->r, UR_E_BADARG,
                      "conversation %llu of user %llu has dense seqs (its "
                      "first write had no SPARSE): SPARSE is refused",
                      (unsigned long long)cid, (unsigned long long)uid);
        else
            reply_err(x->r, UR_E_BADARG,
                      "conversation %llu of user %llu has sparse ids: pass "
                      "SPARSE with them",
                      (unsigned long long)cid, (unsigned long long)uid);
        break;
    case CONV_ETHREADS:
        reply_err(x->r, UR_E_LIMIT,
                  "a conversation keeps at most %d threads, and all of them "
                  "have unread messages",
                  CONV_THREAD_MAX);
        break;
    case CONV_EINVAL:
        if (rq->arg > CONV_ID_MAX)
            reply_err(x->r, UR_E_BADARG,
                      "conversation %llu of user %llu has sparse ids: they "
                      "are at most %llu",
                      (unsigned long long)cid, (unsigned long long)uid,
                      (unsigned long long)CONV_ID_MAX);
        else
            reply_err(x->r, UR_E_BADARG, "argument out of range");
        break;
    default:
        reply_oom(x);
    }
}

/*
 * uid cid, the seq at argument 2 (optional when !need_seq: then absent,
 * or an option word there), then the options of `allowed`. *have_seq tells
 * whether a seq was given. false after replying the error.
 */
static bool write_args(struct exec_ctx *x, const char *what, bool need_seq,
                       uint32_t allowed, uint64_t *uid, uint64_t *cid,
                       struct conv_req *rq, bool *have_seq)
{
    uint32_t next = 2;

    if (!uid_cid(x, uid, cid))
        return false;
    *have_seq = need_seq || (x->argc > 2 && !is_opt(x, 2));
    if (*have_seq) {
        if (x->argc < 3 || is_opt(x, 2)) {
            reply_err(x->r, UR_E_BADARG, "%s needs a %s before its options",
                      x->op->name, what);
            return false;
        }
        if (!arg_u64(x, 2, what, &rq->arg))
            return false;
        next = 3;
    }
    if (!parse_opts(x, next, allowed, rq))
        return false;
    if ((rq->flags & CONV_SPARSE) && *have_seq && rq->arg > CONV_ID_MAX) {
        reply_err(x->r, UR_E_BADARG, "sparse ids must be at most %llu",
                  (unsigned long long)CONV_ID_MAX);
        return false;
    }
    return true;
}

void cmd_CONV_INCR(struct exec_ctx *x)
{
    struct conv_req rq = {CONV_OP_INCR, 0, 1, 0, 0, 0};
    uint64_t uid, cid;
    bool have;

    if (write_args(x, "delta", false, CONV_MENTION | CONV_SOURCE | CONV_THREAD,
                   &uid, &cid, &rq, &have))
        conv_reply(x, uid, cid, &rq);
}

void cmd_CONV_SEQ(struct exec_ctx *x)
{
    struct conv_req rq = {CONV_OP_SEQ, 0, 0, 0, 0, 0};
    uint64_t uid, cid;
    bool have;

    if (write_args(x, "seq", true,
                   CONV_MENTION | CONV_SPARSE | CONV_SOURCE | CONV_THREAD, &uid,
                   &cid, &rq, &have))
        conv_reply(x, uid, cid, &rq);
}

void cmd_CONV_READ(struct exec_ctx *x)
{
    struct conv_req rq = {CONV_OP_READ, 0, 0, 0, 0, 0};
    uint64_t uid, cid;
    bool have;

    if (!write_args(x, "seq", false, CONV_SPARSE | CONV_THREAD, &uid, &cid, &rq,
                    &have))
        return;
    if (!have)
        rq.op = CONV_OP_READ_ALL;
    conv_reply(x, uid, cid, &rq);
}

void cmd_CONV_MARKUNREAD(struct exec_ctx *x)
{
    struct conv_req rq = {CONV_OP_MARKUNREAD, 0, 0, 0, 0, 0};
    uint64_t uid, cid;
    bool have;

    if (!write_args(x, "seq", true, CONV_SPARSE | CONV_THREAD, &uid, &cid, &rq,
                    &have))
        return;
    if (rq.arg == 0) {
        reply_err(x->r, UR_E_BADARG,
                  "seq must be at least 1 (it becomes the first unread "
                  "message)");
        return;
    }
    conv_reply(x, uid, cid, &rq);
}

void cmd_CONV_RECALL(struct exec_ctx *x)
{
    struct conv_req rq = {CONV_OP_RECALL, 0, 0, 0, 0, 0};
    uint64_t uid, cid;
    bool have;

    if (write_args(x, "seq", true, CONV_SPARSE | CONV_THREAD, &uid, &cid, &rq,
                   &have))
        conv_reply(x, uid, cid, &rq);
}

/* MUTE and ROLLUP: uid cid 0|1. */
static void flag_cmd(struct exec_ctx *x, enum conv_op op, const char *meaning)
{
    struct conv_req rq = {op, 0, 0, 0, 0, 0};
    uint64_t uid, cid;

    if (!uid_cid(x, &uid, &cid) || !arg_u64(x, 2, "flag", &rq.arg))
        return;
    if (rq.arg > 1) {
        reply_err(x->r, UR_E_BADARG, "flag must be %s", meaning);
        return;
    }
    conv_reply(x, uid, cid, &rq);
}

void cmd_CONV_MUTE(struct exec_ctx *x)
{
    flag_cmd(x, CONV_OP_MUTE, "0 (unmute) or 1 (mute)");
}

void cmd_CONV_ROLLUP(struct exec_ctx *x)
{
    flag_cmd(x, CONV_OP_ROLLUP,
             "1 (threads count in the conversation) or 0 (they do not)");
}

void cmd_CONV_DEL(struct exec_ctx *x)
{
    uint64_t uid, cid;

    if (uid_cid(x, &uid, &cid))
        reply_int(x->r, conv_del(x->srv->db.conv, uid, cid));
}

void cmd_CONV_GET(struct exec_ctx *x)
{
    uint64_t uid, cid;

    if (uid_cid(x, &uid, &cid))
        reply_int(x->r, conv_get(x->srv->db.conv, uid, cid));
}

void cmd_CONV_TOTAL(struct exec_ctx *x)
{
    struct conv_user_counts uc;
    bool chats = false, threads = false;
    uint64_t uid;
    char text[33];
    bool with = false;

    if (!arg_u64(x, 0, "uid", &uid))
        return;
    for (uint32_t i = 1; i < x->argc; i++) {
        if (arg_is(x, i, "CHATS") && !chats) {
            chats = true;
        } else if (arg_is(x, i, "THREADS") && !threads) {
            threads = true;
        } else if (arg_is(x, i, "WITHEXPIRY") && !with) {
            with = true;
        } else {
            reply_err(x->r, UR_E_BADARG,
                      "unknown or repeated option '%s' (CONV.TOTAL takes "
                      "CHATS, THREADS, WITHEXPIRY)",
                      arg_text(x, i, text, sizeof(text)));
            return;
        }
    }
    if (!chats && !threads) {
        reply_count(x, FAM_CONV, uid, conv_total(x->srv->db.conv, uid), with);
        return;
    }
    conv_user_counts(x->srv->db.conv, uid, &uc);
    reply_arr(x->r, 1 + chats + threads + with);
    reply_int(x->r, conv_total(x->srv->db.conv, uid));
    if (chats)
        reply_int(x->r, uc.chats);
    if (threads)
        reply_int(x->r, uc.threads);
    if (with)
        reply_int(x->r, db_expiry_pending(&x->srv->db, uid, FAM_CONV));
}

/* Every uid is checked before the reply's first value goes out. */
void cmd_CONV_MTOTAL(struct exec_ctx *x)
{
    uint64_t uid;

    for (uint32_t i = 0; i < x->argc; i++)
        if (!arg_u64(x, i, "uid", &uid))
            return;
    reply_arr(x->r, x->argc);
    for (uint32_t i = 0; i < x->argc; i++) {
        (void)arg_u64(x, i, "uid", &uid);
        reply_int(x->r, conv_total(x->srv->db.conv, uid));
    }
}

void cmd_CONV_MENTIONS(struct exec_ctx *x)
{
    struct conv_user_counts uc;
    uint64_t uid;

    if (!arg_u64(x, 0, "uid", &uid))
        return;
    conv_user_counts(x->srv->db.conv, uid, &uc);
    reply_int(x->r, uc.mentions);
}

void cmd_CONV_READALL(struct exec_ctx *x)
{
    uint64_t uid, total;

    if (!arg_u64(x, 0, "uid", &uid))
        return;
    if (conv_read_all_user(x->srv->db.conv, uid, &total) != 0)
        reply_oom(x);
    else
        reply_int(x->r, total);
}

static void state_reply(struct reply *r, const struct conv_state *st)
{
    reply_arr(r, 6);
    reply_int(r, st->max);
    reply_int(r, st->read);
    reply_int(r, st->unread);
    reply_int(r, st->muted);
    reply_int(r, st->mentions);
    reply_int(r, st->first_unread);
}

void cmd_CONV_STATE(struct exec_ctx *x)
{
    struct conv_req rq = {CONV_OP_READ, 0, 0, 0, 0, 0};
    struct conv_state st;
    uint64_t uid, cid;

    if (!uid_cid(x, &uid, &cid) || !parse_opts(x, 2, CONV_THREAD, &rq))
        return;
    conv_state(x->srv->db.conv, uid, cid,
               rq.flags & CONV_THREAD ? &rq.tid : NULL, &st);
    state_reply(x->r, &st);
}

/* THREADS and SOURCES: a flat [key, count, ...] built in one pass. */
struct pairs_out {
    struct reply *r;
    size_t mark;
    bool started;
};

static void pair_emit(uint64_t key, uint32_t count, void *ctx)
{
    struct pairs_out *o = ctx;

    if (!o->started) {
        o->mark = reply_arr_defer(o->r);
        o->started = true;
    }
    reply_int(o->r, key);
    reply_int(o->r, count);
}

void cmd_CONV_THREADS(struct exec_ctx *x)
{
    struct pairs_out o = {x->r, 0, false};
    uint64_t uid, cid;
    size_t n;

    if (!uid_cid(x, &uid, &cid))
        return;
    n = conv_threads(x->srv->db.conv, uid, cid, pair_emit, &o);
    if (!o.started)
        reply_arr(x->r, 0);
    else
        reply_arr_finish(x->r, o.mark, (uint32_t)(2 * n));
}

void cmd_CONV_SOURCES(struct exec_ctx *x)
{
    uint32_t counts[CONV_SOURCES], n = 0;
    uint64_t uid, cid;

    if (!uid_cid(x, &uid, &cid))
        return;
    conv_sources(x->srv->db.conv, uid, cid, counts);
    for (unsigned k = 0; k < CONV_SOURCES; k++)
        n += counts[k] != 0;
    reply_arr(x->r, 2 * n);
    for (unsigned k = 0; k < CONV_SOURCES; k++)
        if (counts[k] != 0) {
            reply_int(x->r, k);
            reply_int(x->r, counts[k]);
        }
}

/* CONV.LIST: the entries with unread into a growing array. By id, the
 * walk starts at the cursor and stops one past the page. */
struct list_acc {
    struct page_item *items;
    size_t n, cap, stop;
    bool nomem;
};

static bool list_add(uint64_t cid, const struct conv_state *st, void *ctx)
{
    struct list_acc *a = ctx;

    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        struct page_item *more = realloc(a->items, cap * sizeof(*more));

        if (more == NULL) {
            a->nomem = true;
            return false;
        }
        a->items = more;
        a->cap = cap;
    }
    a->items[a->n++] =
        (struct page_item){cid,
                           st->max,
                           {st->max, st->read, st->unread, st->muted,
                            st->mentions, st->first_unread}};
    return a->n < a->stop;
}

void cmd_CONV_LIST(struct exec_ctx *x)
{
    struct list_acc a = {NULL, 0, 0, SIZE_MAX, false};
    struct page_opts o;
    uint64_t uid;
    size_t n;

    if (!arg_u64(x, 0, "uid", &uid) || !page_parse(x, 1, CONV_LIST_MAX, &o))
        return;
    if (!o.recent)
        a.stop = (size_t)o.count + 1;
    if (a.stop == 0 ||
        conv_each(x->srv->db.conv, uid, o.recent ? 0 : o.cursor, list_add, &a,
                  &n) != 0 ||
        a.nomem)
        reply_oom(x);
    else
        page_reply(x, a.items, a.n, &o);
    free(a.items);
}

/* ---- USER.INFO, USER.BADGE --------------------------------------------- */

/* The total CONV.TOTAL answers: muted conversations are out of it. */
bool cmd_conv_badge(const struct server *srv, uint64_t uid, uint64_t limit,
                    uint64_t *part, const union badge_probe *bp)
{
    (void)srv;
    (void)uid;
    (void)limit;
    if (part == NULL)
        return true;
    *part = conv_total_probed(&bp->w);
    return true;
}

/* Stages 2 and 3 in place of 1 (conv_prefetch_user): the bucket's lines
 * exactly, where stage 1 asks for as many as the largest bucket has. */
void cmd_conv_badge_hint(const struct server *srv, uint64_t uid, int stage,
                         union badge_probe *bp)
{
    conv_probe_user(srv->db.conv, uid, stage, &bp->w);
}

/* Seqs shown on a conversation's line, per list. */
#define INFO_SEQS 8

/* " name=[a,b,+3 more]" into out, when n > 0. */
static size_t seq_list(char *out, size_t cap, const char *name,
                       const uint64_t *v, uint32_t n)
{
    size_t len = 0;

    if (n == 0 || cap == 0)
        return 0;
    len += (size_t)snprintf(out, cap, " %s=[", name);
    for (uint32_t i = 0; i < n && i < INFO_SEQS && len < cap; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s%llu", i ? "," : "",
                                (unsigned long long)v[i]);
    if (n > INFO_SEQS && len < cap)
        len +=
            (size_t)snprintf(out + len, cap - len, ",+%u more", n - INFO_SEQS);
    if (len < cap)
        len += (size_t)snprintf(out + len, cap - len, "]");
    return len < cap ? len : cap - 1;
}

/* The parts of a timeline's line after its numbers. */
static void tl_extras(const struct conv_info *ci, char *out, size_t cap)
{
    size_t len = 0;
    char name[16];

    out[0] = '\0';
    len += seq_list(out + len, cap - len, "recalled", ci->recall, ci->nrecall);
    len += seq_list(out + len, cap - len, "mentions", ci->tag[CONV_TAG_MENTION],
                    ci->ntag[CONV_TAG_MENTION]);
    for (unsigned k = 0; k < CONV_SOURCES; k++) {
        snprintf(name, sizeof(name), "source%u", k);
        len += seq_list(out + len, cap - len, name, ci->tag[1 + k],
                        ci->ntag[1 + k]);
    }
    if (ci->sparse) {
        len += seq_list(out + len, cap - len, "ids", ci->ids, ci->nids);
        if (ci->lost && len < cap)
            len += (size_t)snprintf(out + len, cap - len, " lost=%llu",
                                    (unsigned long long)ci->lost);
    }
}

static void conv_line(uint64_t uid, uint64_t cid, const struct conv_info *ci,
                      void *ctx)
{
    struct user_lines *L = ctx;
    char extras[400];

    (void)uid;
    if (!user_line_room(L))
        return;
    tl_extras(ci, extras, sizeof(extras));
    user_line(L, "conv %llu: max=%llu read=%llu unread=%u muted=%d%s%s%s%s",
              (unsigned long long)cid, (unsigned long long)ci->max,
              (unsigned long long)ci->read, ci->unread, ci->muted,
              ci->nrecall ? "" : " recalled=[]", ci->sparse ? " sparse" : "",
              ci->collapsed ? " collapsed" : "", extras);
    for (uint32_t i = 0; i < ci->nthreads && user_line_room(L); i++) {
        struct conv_info ti;
        uint64_t tid;

        conv_info_thread(ci, i, &tid, &ti);
        tl_extras(&ti, extras, sizeof(extras));
        user_line(L, "conv %llu thread %llu: max=%llu read=%llu unread=%u%s",
                  (unsigned long long)cid, (unsigned long long)tid,
                  (unsigned long long)ti.max, (unsigned long long)ti.read,
                  ti.unread, extras);
    }
}

void cmd_conv_user_info(struct user_lines *L, const struct server *srv,
                        uint64_t uid)
{
    size_t n = conv_user_info(srv->db.conv, uid, conv_line, L);
    struct conv_user_counts uc;

    conv_user_counts(srv->db.conv, uid, &uc);
    user_lines_more(L, "conv", n);
    user_line(L,
              "conv: conversations=%zu total=%llu (unmuted unread) "
              "mentions=%llu chats=%llu threads=%llu",
              n, (unsigned long long)conv_total(srv->db.conv, uid),
              (unsigned long long)uc.mentions, (unsigned long long)uc.chats,
              (unsigned long long)uc.threads);
}

/* ---- badge channels (badges.h) ------------------------------------------ */

/* The conversation written; CONV.READALL has none. */
bool cmd_conv_badge_key(const struct server *srv, const struct ur_op *op,
                        uint32_t argc, const struct ur_arg *argv, uint64_t *key)
{
    (void)srv, (void)op;
    return argc >= 2 && badges_arg_u64(&argv[1], key);
}

uint64_t cmd_conv_badge_value(const struct server *srv, bool head, uint64_t uid,
                              uint64_t key)
{
    (void)head;
    return conv_get(srv->db.conv, uid, key);
}
