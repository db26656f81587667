/*
 * cmd_pubsub.c - SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH,
 * PUBSUB (docs/COMMANDS.md, "Pub/sub"): arguments in, pubsub.h, reply out.
 *
 * (UN)SUBSCRIBE confirms each channel with its own value, as Redis does:
 * on RESP one top-level array (RESP2) or push (RESP3) per channel, which
 * Redis clients read as they read messages; on the binary protocol, where
 * each request has exactly one reply frame, one array holding them.
 */
#include <stdio.h>
#include <string.h>

#include "cmds.h"
#include "pubsub.h"

/* Argument i's bytes: a string as it is, an integer (binary protocol) as
 * its decimal text in buf (>= 24 bytes). */
static const char *arg_bytes(const struct exec_ctx *x, uint32_t i, char *buf,
                             size_t *n)
{
    const struct ur_arg *a = &x->argv[i];

    if (a->kind == UR_ARG_STR) {
        *n = a->len;
        return a->str;
    }
    *n = ur_fmt_u64(buf, a->num);
    return buf;
}

/* Subscriptions need a connection that can take pushes: not replay, the
 * expiry sweep or a test session. */
static bool can_push(struct exec_ctx *x)
{
    const struct client *cl = x->sess->client;

    if (cl != NULL && cl->io != NULL && cl->io->push_out != NULL)
        return true;
    reply_err(x->r, UR_E_BADARG, "%s needs a client connection", x->op->name);
    return false;
}

/* One confirmation: [kind, name (or null), subscriptions after]. */
static void confirm(struct exec_ctx *x, const char *kind, const char *name,
                    size_t n, uint32_t count)
{
    reply_push(x->r, 3);
    reply_cstr(x->r, kind);
    if (name != NULL)
        reply_str(x->r, name, n);
    else
        reply_nil(x->r);
    reply_int(x->r, count);
}

static void subscribe(struct exec_ctx *x, bool pattern)
{
    const char *kind = pattern ? "psubscribe" : "subscribe";

    if (!can_push(x))
        return;
    if (x->sess->proto == REPLY_BIN)
        reply_arr(x->r, x->argc);
    for (uint32_t i = 0; i < x->argc; i++) {
        char num[24];
        size_t n;
        const char *name = arg_bytes(x, i, num, &n);

        if (pubsub_subscribe(x->srv, x->sess->client, name, n, pattern) < 0) {
            x->r->oom = true; /* the reply becomes -OOM; those before stay */
            return;
        }
        confirm(x, kind, name, n, x->sess->subs);
    }
}

/* Leaves the named ones, or every one of the connection (newest first);
 * with none at all, one confirmation with a null name. */
static void unsubscribe(struct exec_ctx *x, bool pattern)
{
    const char *kind = pattern ? "punsubscribe" : "unsubscribe";
    struct client *cl = x->sess->client;
    uint32_t have = cl ? pubsub_client_count(cl, pattern) : 0;

    if (x->argc > 0) {
        if (x->sess->proto == REPLY_BIN)
            reply_arr(x->r, x->argc);
        for (uint32_t i = 0; i < x->argc; i++) {
            char num[24];
            size_t n;
            const char *name = arg_bytes(x, i, num, &n);

            if (cl != NULL)
                pubsub_unsubscribe(x->srv, cl, name, n, pattern);
            confirm(x, kind, name, n, x->sess->subs);
        }
        return;
    }
    if (x->sess->proto == REPLY_BIN)
        reply_arr(x->r, have ? have : 1);
    if (have == 0) {
        confirm(x, kind, NULL, 0, x->sess->subs);
        return;
    }
    for (uint32_t i = have; i-- > 0;) {
        size_t n;
        const char *name = pubsub_client_name(cl, pattern, i, &n);

        /* The name lives in the registry: reply before it goes. */
        reply_push(x->r, 3);
        reply_cstr(x->r, kind);
        reply_str(x->r, name, n);
        pubsub_unsubscribe(x->srv, cl, name, n, pattern);
        reply_int(x->r, x->sess->subs);
    }
}

void cmd_SUBSCRIBE(struct exec_ctx *x)
{
    subscribe(x, false);
}

void cmd_PSUBSCRIBE(struct exec_ctx *x)
{
    subscribe(x, true);
}

void cmd_UNSUBSCRIBE(struct exec_ctx *x)
{
    unsubscribe(x, false);
}

void cmd_PUNSUBSCRIBE(struct exec_ctx *x)
{
    unsubscribe(x, true);
}

void cmd_PUBLISH(struct exec_ctx *x)
{
    char nc[24], nm[24];
    size_t cn, mn;
    const char *ch = arg_bytes(x, 0, nc, &cn);
    const char *msg = arg_bytes(x, 1, nm, &mn);

    reply_int(x->r, pubsub_publish(x->srv, ch, cn, msg, mn));
}

struct chan_list {
    struct reply *r;
    uint32_t n;
};

static void chan_visit(const char *name, size_t n, void *ctx)
{
    struct chan_list *cl = ctx;

    reply_str(cl->r, name, n);
    cl->n++;
}

static const char *const pubsub_help[] = {
    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: "
    "'*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, "
    "excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a "
    "<pattern> (none: unreadd has no sharded pub/sub).",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level "
    "channel(s) (0).",
    "HELP",
    "    Print this help.",
};

void cmd_PUBSUB(struct exec_ctx *x)
{
    const struct pubsub *ps = &x->srv->pubsub;
    char text[65];

    if (arg_is(x, 0, "CHANNELS") || arg_is(x, 0, "SHARDCHANNELS")) {
        struct chan_list cl = {x->r, 0};
        char num[24];
        size_t n = 0;
        const char *pat = x->argc > 1 ? arg_bytes(x, 1, num, &n) : NULL;
        size_t mark;

        if (x->argc > 2)
            goto arity;
        mark = reply_arr_defer(x->r);
        if (arg_is(x, 0, "CHANNELS"))
            pubsub_channels(ps, pat, n, chan_visit, &cl);
        reply_arr_finish(x->r, mark, cl.n);
    } else if (arg_is(x, 0, "NUMSUB") || arg_is(x, 0, "SHARDNUMSUB")) {
        bool shard = arg_is(x, 0, "SHARDNUMSUB");

        reply_map(x->r, x->argc - 1);
        for (uint32_t i = 1; i < x->argc; i++) {
            char num[24];
            size_t n;
            const char *ch = arg_bytes(x, i, num, &n);

            reply_str(x->r, ch, n);
            reply_int(x->r, shard ? 0 : pubsub_numsub(ps, ch, n));
        }
    } else if (arg_is(x, 0, "NUMPAT")) {
        if (x->argc != 1)
            goto arity;
        reply_int(x->r, pubsub_numpat(ps));
    } else if (arg_is(x, 0, "HELP")) {
        size_t n = sizeof(pubsub_help) / sizeof(pubsub_help[0]);

        reply_arr(x->r, (uint32_t)n);
        for (size_t i = 0; i < n; i++)
            reply_status(x->r, pubsub_help[i]);
    } else {
        reply_err(x->r, UR_E_BADARG,
                  "unknown subcommand '%s'. Try PUBSUB HELP.",
                  arg_text(x, 0, text, sizeof(text)));
    }
    return;
arity:
    reply_err(x->r, UR_E_ARITY,
              "wrong number of arguments for 'PUBSUB %s' command",
              arg_text(x, 0, text, sizeof(text)));
}
