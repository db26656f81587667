/*
 * exec.c - see exec.h. Dispatch is an array indexed by the op's position in
 * the table, generated from ops.def like everything else.
 *
 * The executor owns the command: it pins the clock, decides every
 * refusal, writes every reply, and tells persistence what ran. Every
 * command that changed state (OPF_WRITE answered without error, or
 * x->dirty) is journaled: persist_stage stages its record (with the
 * pinned time) before it runs, persist_feed keeps or drops it after. The
 * journal thus holds the request as received plus the time it ran at, and
 * replay (replay.c, with srv->loading set) is exact as long as handlers
 * take the time from server_clock_ms.
 *
 * The AUTH gate is in exec_op, which every path reaches (text, binary,
 * batches): a session that has not authenticated runs OPF_NOAUTH ops only.
 * So is RESP2's subscribed mode (OPF_SUBOK ops only), and the probe of
 * the badge channels (badges.h) around every write while someone
 * subscribes: execution propagates, nothing below it publishes.
 */
#include "exec.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "batch.h"
#include "cluster.h"
#include "clients.h"
#include "cluster_copy.h"
#include "cluster_keys.h"
#include "cmds.h"
#include "badges.h"
#include "persist.h"
#include "repl.h"
#include "users.h"

static const cmd_fn handlers[UR_OP_COUNT] = {
#define OP(id, name, code, min, max, flags, syn, rep, cost, sum) cmd_##id,
#include "ops.def"
#undef OP
};

/* An OPF_UIDS op carries at most UR_UIDS_MAX uids (ops.h). */
bool exec_arity_ok(const struct ur_op *op, uint32_t argc)
{
    return argc >= op->min_args &&
           (op->max_args == UR_VARARGS || argc <= op->max_args) &&
           (!(op->flags & OPF_UIDS) ||
            argc - ur_op_uids_from(op->flags) <= UR_UIDS_MAX);
}

void exec_arity_err(struct reply *r, const struct ur_op *op, const char *where)
{
    char uids[40] = "";

    if (op->flags & OPF_UIDS)
        snprintf(uids, sizeof(uids), ", at most %u uids", UR_UIDS_MAX);
    reply_err(r, UR_E_ARITY,
              "%swrong number of arguments for '%s' (expected: %s%s%s%s)",
              where, op->name, op->name, op->syntax[0] ? " " : "", op->syntax,
              uids);
}

/*
 * maxmemory (docs/OPERATIONS.md): once the stores hold that many bytes
 * (INFO used_memory), writes that may allocate answer -OOM; reads, and
 * writes that only free (OPF_FREES), still run. Not while loading: what
 * was acknowledged once must load again.
 */
static bool refused_oom(const struct server *srv, const struct ur_op *op,
                        struct reply *r)
{
    size_t used;

    if (srv->cfg.maxmemory == 0 || srv->loading ||
        (op->flags & (OPF_WRITE | OPF_FREES)) != OPF_WRITE)
        return false;
    used = db_bytes(&srv->db);
    if (used < srv->cfg.maxmemory)
        return false;
    reply_err(r, UR_E_OOM,
              "used memory (%zu bytes) is at maxmemory (%llu bytes): writes "
              "are refused until memory is freed (deletions, USER.DEL, "
              "expiry, FLUSHALL); reads still work",
              used, (unsigned long long)srv->cfg.maxmemory);
    return true;
}

bool exec_refuse_write(struct server *srv, struct reply *r)
{
    const char *why;

    if (srv->persist == NULL || srv->loading ||
        (why = persist_refusal(srv->persist)) == NULL)
        return false;
    reply_err(r, UR_E_MISCONF,
              "the journal cannot be written (%s): write commands are "
              "refused until it can be; reads still work",
              why);
    return true;
}

bool exec_clock_pin(struct server *srv)
{
    if (srv->clock_pinned)
        return false;
    srv->clock_pin_ms = server_turn_clock(srv);
    srv->clock_pinned = true;
    return true;
}

/* Whether op's runs reach the journal: every command but pure admin ones
 * (which change no data), when there is persistence and it is not the
 * journal being loaded. */
static bool journaled(const struct server *srv, const struct ur_op *op)
{
    return srv->persist != NULL && !srv->loading &&
           !((op->flags & OPF_ADMIN) && !(op->flags & OPF_WRITE));
}

/* Stages op's journal record; false after replying why it cannot be. */
static bool stage(struct server *srv, const struct ur_op *op, uint32_t argc,
                  const struct ur_arg *argv, struct reply *r)
{
    if (!journaled(srv, op) ||
        persist_stage(srv->persist, srv->clock_pin_ms, op, argc, argv) == 0)
        return true;
    if (errno == E2BIG)
        reply_err(r, UR_E_TOOBIG,
                  "request too large to journal (at most %u arguments)",
                  JOURNAL_MAX_ARGS);
    else
        reply_err(r, UR_E_OOM, "out of memory for the journal record");
    return false;
}

/*
 * After every command: its time (the executor's share of a request: from
 * the end of the previous command of the same read, or from its own
 * start, to now: one clock read per command on the network path, see
 * server.h cmd_ns), INFO commandstats and errorstats, SLOWLOG, the
 * latency monitor, CLIENT LIST's idle and cmd, and MONITOR.
 */
#define REDACT_ARGS 16

/*
 * The arguments SLOWLOG keeps, with every secret (clients_arg_secret: AUTH
 * and HELLO AUTH passwords, CONFIG SET of requirepass, masterauth and the
 * TLS key passphrases) replaced by "(redacted)", as MONITOR shows them.
 * Only the commands that can carry a secret are copied, into `out`; they
 * have few arguments, past REDACT_ARGS they are kept whole.
 */
static const struct ur_arg *redact(const struct ur_op *op, uint32_t argc,
                                   const struct ur_arg *argv,
                                   struct ur_arg out[REDACT_ARGS])
{
    static const char hidden[] = "(redacted)";
    bool any = false;

    if ((op->code != UR_OP_AUTH && op->code != UR_OP_HELLO &&
         op->code != UR_OP_CONFIG) ||
        argc > REDACT_ARGS)
        return argv;
    for (uint32_t i = 0; i < argc; i++) {
        out[i] = argv[i];
        if (clients_arg_secret(op, argc, argv, i)) {
            out[i].kind = UR_ARG_STR;
            out[i].str = hidden;
            out[i].len = sizeof(hidden) - 1;
            any = true;
        }
    }
    return any ? out : argv;
}

static void exec_done(struct server *srv, struct session *sess,
                      const struct ur_op *op, uint32_t argc,
                      const struct ur_arg *argv, const struct reply *r,
                      uint64_t t0)
{
    struct ur_arg shown[REDACT_ARGS];
    uint64_t now = server_mono_ns();
    uint64_t usec = (now - t0) / 1000;
    int64_t slower = srv->cfg.slowlog_slower_than;

    srv->cmd_ns = now;
    srv->stats.op_usec[op->index] += usec;
    if (r->status != UR_E_OK && r->status < UR_E__COUNT)
        srv->stats.err_by_code[r->status]++;
    if (srv->loading)
        return; /* replay at start-up: not a client's command */
    if (slower >= 0 && usec >= (uint64_t)slower)
        slowlog_add(
            &srv->slowlog, srv->cfg.slowlog_max_len, server_now_ms() / 1000,
            usec, op->name, argc, redact(op, argc, argv, shown),
            sess->client ? sess->client->addr : "",
            sess->client && sess->client->name ? sess->client->name : "");
    if (srv->cfg.latency_threshold != 0)
        latency_add(&srv->latency, LAT_COMMAND, server_now_ms() / 1000,
                    usec / 1000, srv->cfg.latency_threshold);
    if (sess->client != NULL) {
        sess->client->last_ms = now / 1000000u;
        if (srv->clist.monitors != 0)
            clients_monitor_feed(srv, sess, op, argc, argv);
    }
}

/* RESP2's subscribed mode (pubsub.h): Redis's words, the command's name
 * in lower case. */
static void submode_err(struct reply *r, const struct ur_op *op)
{
    char name[64];
    size_t k = 0;

    for (; op->name[k] != '\0' && k + 1 < sizeof(name); k++)
        name[k] =
            (char)(op->name[k] >= 'A' && op->name[k] <= 'Z' ? op->name[k] + 32
                                                            : op->name[k]);
    name[k] = '\0';
    reply_err(r, UR_E_ERR,
              "Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / "
              "PING / QUIT / RESET are allowed in this context",
              name);
}

/* Whether badges.h probes op: notify-badges, a write, someone subscribed
 * to something (no probe, nor any lookup, otherwise), not replay. */
static inline bool badges_watching(const struct server *srv,
                                   const struct ur_op *op)
{
    return srv->cfg.notify_badges && (op->flags & OPF_WRITE) &&
           !pubsub_idle(&srv->pubsub) && !srv->loading;
}

/* A user command with at most this many arguments gets its uid parsed
 * once (uid_once); a longer one parses it where it is used, as before. */
#define UID_ONCE_ARGS 8

/*
 * A user command's first argument is its uid (OPF_USER), and over RESP
 * it is text: the handler, the activity mark (users.c) and the badge
 * probe (badges.c) would each parse it. It is parsed once here instead:
 * when it is a valid uid (0..UR_INT_MAX), the command runs on a copy of
 * its arguments whose first is that number, as the binary protocol sends
 * it, which every consumer already takes. Only the running sees the copy:
 * the journal record (staged before), MONITOR and SLOWLOG keep the
 * arguments as received. A uid that does not parse stays text, so the
 * handler refuses it with the same message as before. Returns the
 * arguments to run with: argv, or own filled.
 */
static const struct ur_arg *uid_once(const struct ur_op *op, uint32_t argc,
                                     const struct ur_arg *argv,
                                     struct ur_arg own[UID_ONCE_ARGS])
{
    uint64_t uid;

    if ((op->flags & (OPF_USER | OPF_ADMIN)) != OPF_USER || argc == 0 ||
        argc > UID_ONCE_ARGS || argv[0].kind != UR_ARG_STR ||
        ur_parse_uint(argv[0].str, argv[0].len, UR_INT_MAX, &uid) != UR_NUM_OK)
        return argv;
    /* A loop of struct copies: a few arguments, where memcpy of a
     * variable length costs more than the copy. */
    for (uint32_t i = 1; i < argc; i++)
        own[i] = argv[i];
    own[0] = (struct ur_arg){.kind = UR_ARG_INT, .num = uid};
    return own;
}

void exec_op(struct server *srv, struct session *sess, const struct ur_op *op,
             uint32_t argc, const struct ur_arg *argv, struct reply *r)
{
    struct exec_ctx x = {srv, sess, op, argc, argv, r, false};
    struct ur_arg own[UID_ONCE_ARGS];
    bool pinned = exec_clock_pin(srv);
    uint64_t t0 = srv->cmd_clock ? srv->cmd_ns : server_mono_ns();
    bool ran = false;

    srv->stats.commands++;
    srv->stats.calls[op->index]++;
    if (sess->client != NULL)
        sess->client->last_op = (int16_t)op->index;
    if (session_needs_auth(srv, sess) && !(op->flags & OPF_NOAUTH)) {
        reply_err(r, UR_E_NOAUTH, "Authentication required.");
    } else if (sess->subs != 0 && sess->proto == REPLY_RESP &&
               !(op->flags & OPF_SUBOK)) {
        submode_err(r, op);
    } else if (!exec_arity_ok(op, argc)) {
        exec_arity_err(r, op, "");
    } else if (srv->cluster != NULL && !srv->loading && !srv->cluster_routed &&
               cluster_refuse(srv, sess, op, argc, argv, r)) {
        /* MOVED, CROSSSLOT, CLUSTERDOWN: another node's, or none's */
    } else if (!refused_oom(srv, op, r) && !repl_refuse(srv, op, r) &&
               !((op->flags & OPF_WRITE) && exec_refuse_write(srv, r)) &&
               stage(srv, op, argc, argv, r)) {
        struct badges_probe np;
        bool watch = badges_watching(srv, op);

        x.argv = uid_once(op, argc, argv, own);
        if (watch)
            badges_before(srv, op, argc, x.argv, &np);
        ran = true;
        handlers[op->index](&x);
        /* A replica's clients change nothing, activity included: only
         * the primary's records write there (repl.h). */
        if (r->status == UR_E_OK && !(srv->readonly_data && !srv->loading))
            x.dirty |= users_mark_active(srv, op, argc, x.argv,
                                         x.dirty || (op->flags & OPF_WRITE));
        /* The owner of a global object copies its new value to every
         * other primary (cluster_copy.h): after the handler, before the
         * record is fed, so the copy's version is the offset it starts. */
        if (srv->cluster != NULL && (op->flags & OPF_GLOBAL) &&
            r->status == UR_E_OK && !srv->loading)
            ccopy_written(srv, op, argc, x.argv);
        /* The slot's key index learns the ids a write gave state to
         * (cluster_keys.h). */
        if (srv->cluster != NULL && r->status == UR_E_OK &&
            (x.dirty || (op->flags & OPF_WRITE)))
            cluster_keys_note(srv, op, argc, x.argv);
        if (journaled(srv, op)) {
            persist_feed(srv->persist, x.dirty || ((op->flags & OPF_WRITE) &&
                                                   r->status == UR_E_OK));
            repl_feed(srv, sess);
        }
        if (watch)
            badges_after(srv, &np);
    }
    if (r->status != UR_E_OK) {
        srv->stats.errors++;
        srv->stats.op_errors[op->index]++;
        if (!ran)
            srv->stats.op_rejected[op->index]++;
    }
    if (pinned)
        srv->clock_pinned = false;
    if (sess->asking && op->code != UR_OP_ASKING)
        sess->asking = false; /* ASKING holds for one command */
    exec_done(srv, sess, op, argc, argv, r, t0);
}

/* Copies a client-supplied name for an error message: printable ASCII
 * only, at most cap-1 bytes. */
static void printable(char *dst, size_t cap, const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        dst[k++] = (c >= 0x20 && c < 0x7f && c != '\'') ? (char)c : '?';
    }
    dst[k] = '\0';
}

static void unknown(struct server *srv, struct reply *r, const char *fmt,
                    const char *what)
{
    srv->stats.commands++;
    srv->stats.errors++;
    srv->stats.err_by_code[UR_E_UNKNOWN]++;
    reply_err(r, UR_E_UNKNOWN, fmt, what);
}

/*
 * The last command name looked up, as sent, and its op: a pipeline is
 * mostly of one command, and comparing the name with the last one costs
 * less than hashing it (ur_op_by_name). Names are compared byte for byte,
 * so another spelling ("cnt.incr") just takes the lookup; the op table
 * never changes, so the entry never goes stale.
 */
#define LAST_NAME_MAX 16
static char last_name[LAST_NAME_MAX];
static uint32_t last_len; /* 0: nothing cached */
static const struct ur_op *last_op;

static const struct ur_op *op_by_name(const char *name, uint32_t len)
{
    const struct ur_op *op;

    if (len == last_len && memcmp(name, last_name, len) == 0)
        return last_op;
    op = ur_op_by_name(name, len);
    if (op != NULL && len <= LAST_NAME_MAX) {
        memcpy(last_name, name, len);
        last_len = len;
        last_op = op;
    }
    return op;
}

void exec_text(struct server *srv, struct session *sess, uint32_t argc,
               const struct ur_arg *argv, struct reply *r)
{
    const struct ur_op *op = op_by_name(argv[0].str, argv[0].len);
    if (op == NULL) {
        char name[65];
        printable(name, sizeof(name), argv[0].str, argv[0].len);
        unknown(srv, r, "unknown command '%s'", name);
        batch_multi_fail(sess);
        return;
    }
    if (sess->multi != NULL &&
        batch_multi_queue(srv, sess, op, argc - 1, argv + 1, r))
        return;
    exec_op(srv, sess, op, argc - 1, argv + 1, r);
}

void exec_binary(struct server *srv, struct session *sess, uint16_t opcode,
                 uint32_t argc, const struct ur_arg *argv, struct reply *r)
{
    const struct ur_op *op = ur_op_by_code(opcode);
    if (op == NULL) {
        char code[8];
        snprintf(code, sizeof(code), "0x%04x", opcode);
        unknown(srv, r, "unknown opcode %s", code);
        return;
    }
    exec_op(srv, sess, op, argc, argv, r);
}

void exec_prefetch(const struct server *srv, uint16_t opcode, uint64_t uid,
                   int stage)
{
    const struct ur_op *op;

    if (!exec_prefetchable(opcode))
        return;
    op = ur_op_by_code(opcode);
    if (op == NULL || (op->flags & (OPF_USER | OPF_ADMIN)) != OPF_USER)
        return;
    db_prefetch_user(&srv->db, db_family_of_opcode(opcode), uid, stage);
}

/*
 * Every integer argument is in 0..UR_INT_MAX (proto.h), on both protocols:
 * what one protocol stores the other can read back, and a RESP integer
 * reply never exceeds a signed 64-bit client's range. Decimal text may
 * have leading zeros (redis-benchmark's zero-padded __rand_int__).
 */
bool arg_u64(struct exec_ctx *x, uint32_t i, const char *what, uint64_t *out)
{
    const struct ur_arg *a = &x->argv[i];
    /* A journal written before the integer range became the rule may hold
     * ids up to 2^64-1, acknowledged then: they must load again. */
    const uint64_t max = x->srv->loading ? UINT64_MAX : UR_INT_MAX;
    char text[32];

    if (a->kind == UR_ARG_INT) {
        if (a->num <= max) {
            *out = a->num;
            return true;
        }
        reply_err(x->r, UR_E_BADARG,
                  "%s must be at most %lld (Redis's integer range); got %llu",
                  what, (long long)UR_INT_MAX, (unsigned long long)a->num);
        return false;
    }
    switch (ur_parse_uint(a->str, a->len, max, out)) {
    case UR_NUM_OK:
        return true;
    case UR_NUM_RANGE:
        reply_err(x->r, UR_E_BADARG,
                  "%s must be at most %lld (Redis's integer range); got %s",
                  what, (long long)UR_INT_MAX,
                  arg_text(x, i, text, sizeof(text)));
        return false;
    default:
        reply_err(x->r, UR_E_BADARG,
                  "%s must be an integer (0..%lld, decimal digits); got '%s'",
                  what, (long long)UR_INT_MAX,
                  arg_text(x, i, text, sizeof(text)));
        return false;
    }
}

bool arg_u32(struct exec_ctx *x, uint32_t i, const char *what, uint32_t *out)
{
    uint64_t v;
    if (!arg_u64(x, i, what, &v))
        return false;
    if (v > UINT32_MAX) {
        reply_err(x->r, UR_E_BADARG, "%s must be at most 4294967295", what);
        return false;
    }
    *out = (uint32_t)v;
    return true;
}

bool arg_ctype(struct exec_ctx *x, uint32_t i, unsigned *out)
{
    const struct ur_arg *a = &x->argv[i];
    uint64_t v = a->num;
    bool num = a->kind == UR_ARG_INT;
    if (!num) {
        enum ur_num st = ur_parse_uint(a->str, a->len, UINT64_MAX, &v);
        num = st != UR_NUM_SYNTAX;
        if (st == UR_NUM_RANGE)
            v = UINT64_MAX;
    }
    if (num) {
        if (v < 64) {
            *out = (unsigned)v;
            return true;
        }
    } else {
        int t = config_type_by_name(&x->srv->cfg, a->str, a->len);
        if (t >= 0) {
            *out = (unsigned)t;
            return true;
        }
    }
    char text[65];
    reply_err(x->r, UR_E_BADARG,
              "unknown counter type '%s' (use 0..63 or a name from "
              "counter-types)",
              arg_text(x, i, text, sizeof(text)));
    return false;
}

bool arg_ts_opt(struct exec_ctx *x, uint32_t i, uint64_t *out)
{
    if (i < x->argc)
        return arg_u64(x, i, "ts", out);
    *out = server_clock_ms(x->srv);
    return true;
}

bool arg_is(const struct exec_ctx *x, uint32_t i, const char *word)
{
    const struct ur_arg *a = &x->argv[i];
    return a->kind == UR_ARG_STR && a->len == strlen(word) &&
           strncasecmp(a->str, word, a->len) == 0;
}

const char *arg_text(const struct exec_ctx *x, uint32_t i, char *buf,
                     size_t cap)
{
    const struct ur_arg *a = &x->argv[i];
    if (a->kind == UR_ARG_INT) {
        char num[24];
        size_t n = ur_fmt_u64(num, a->num);
        printable(buf, cap, num, n);
    } else {
        printable(buf, cap, a->str, a->len);
    }
    return buf;
}

void reply_oom(struct exec_ctx *x)
{
    reply_err(x->r, UR_E_OOM, "out of memory");
}
