/*
 * cmd_client.c - connections as Redis's tools see them: CLIENT, MONITOR,
 * SELECT, RESET. The connections themselves are net.c's; what is known of them
 * is in the client registry (clients.h), which is all a handler touches.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "acl.h"
#include "clients.h"
#include "cmds.h"

/* Redis refuses names with spaces, newlines and other special bytes:
 * CLIENT LIST's lines must stay parsable. */
static bool name_chars_ok(const struct ur_arg *a)
{
    if (a->kind != UR_ARG_STR)
        return true;
    for (uint32_t i = 0; i < a->len; i++) {
        unsigned char c = (unsigned char)a->str[i];
        if (c < '!' || c > '~')
            return false;
    }
    return true;
}

bool client_name_ok(struct exec_ctx *x, uint32_t i)
{
    const struct ur_arg *a = &x->argv[i];

    if (!name_chars_ok(a)) {
        reply_err(x->r, UR_E_BADARG,
                  "Client names cannot contain spaces, newlines or special "
                  "characters.");
        return false;
    }
    if (a->kind == UR_ARG_STR && a->len >= CLIENT_NAME_MAX) {
        reply_err(x->r, UR_E_BADARG, "client name longer than %d bytes",
                  CLIENT_NAME_MAX - 1);
        return false;
    }
    return true;
}

/* Argument i as text (an integer formatted); the length. */
static size_t arg_bytes(const struct exec_ctx *x, uint32_t i, char *num,
                        const char **s)
{
    const struct ur_arg *a = &x->argv[i];

    if (a->kind == UR_ARG_INT) {
        *s = num;
        return ur_fmt_u64(num, a->num);
    }
    *s = a->str;
    return a->len;
}

/* Sets a string field of the caller's client from argument i. */
static bool set_field(struct exec_ctx *x, char **field, uint32_t i)
{
    char num[24];
    const char *s;
    size_t n = arg_bytes(x, i, num, &s);

    if (x->sess->client == NULL)
        return true; /* replay, tests: nothing to name */
    if (clients_set_str(field, s, n) != 0) {
        reply_oom(x);
        return false;
    }
    return true;
}

bool client_set_name(struct exec_ctx *x, uint32_t i)
{
    return x->sess->client == NULL || set_field(x, &x->sess->client->name, i);
}

/* Redis's client types, as CLIENT KILL TYPE names them: a replica's link
 * (flags S), this replica's link to its primary (M), pubsub (a client
 * with a subscription), normal (the rest). */
enum { TYPE_NORMAL, TYPE_REPLICA, TYPE_MASTER, TYPE_PUBSUB };

static uint32_t client_type(const struct client *cl)
{
    if (cl->flags & CLIENT_REPLICA)
        return TYPE_REPLICA;
    if (cl->flags & CLIENT_MASTER)
        return TYPE_MASTER;
    if (cl->sess != NULL && cl->sess->subs != 0)
        return TYPE_PUBSUB;
    return TYPE_NORMAL;
}

/* The type named by argument i; false after replying the error. */
static bool arg_client_type(struct exec_ctx *x, uint32_t i, uint32_t *type)
{
    char text[65];

    if (arg_is(x, i, "normal"))
        *type = TYPE_NORMAL;
    else if (arg_is(x, i, "replica") || arg_is(x, i, "slave"))
        *type = TYPE_REPLICA;
    else if (arg_is(x, i, "master"))
        *type = TYPE_MASTER;
    else if (arg_is(x, i, "pubsub"))
        *type = TYPE_PUBSUB;
    else {
        reply_err(x->r, UR_E_BADARG, "Unknown client type '%s'",
                  arg_text(x, i, text, sizeof(text)));
        return false;
    }
    return true;
}

/* The lines of CLIENT LIST (every client, or those whose id is in ids,
 * or of type; type -1: any) or of CLIENT INFO (the caller). */
static void reply_clients(struct exec_ctx *x, bool self_only,
                          const uint64_t *ids, uint32_t nids, int64_t type)
{
    struct ur_buf b = {0};
    uint64_t now = server_mono_ms();
    bool oom = false;

    for (struct client *cl = x->srv->clist.head; cl != NULL && !oom;
         cl = cl->next) {
        bool want = !self_only || cl == x->sess->client;

        if (nids > 0) {
            want = false;
            for (uint32_t k = 0; k < nids; k++)
                want |= cl->sess->id == ids[k];
        }
        if (!want || (type >= 0 && client_type(cl) != (uint32_t)type))
            continue;
        oom = clients_describe(x->srv, cl, now, &b) != 0 ||
              ur_buf_append(&b, "\n", 1) != 0;
    }
    if (oom)
        reply_oom(x);
    else
        reply_str(x->r, b.data ? b.data : "", b.len);
    ur_buf_deinit(&b);
}

struct kill_filter {
    bool by_id, by_addr, by_laddr, by_type, by_user, skipme, by_age;
    uint64_t id, maxage;
    const struct ur_arg *addr, *laddr;
    uint32_t type;             /* TYPE: the client_type() wanted */
    const struct ur_arg *user; /* USER name */
};

static bool arg_eq(const struct ur_arg *a, const char *s)
{
    return a->kind == UR_ARG_STR && a->len == strlen(s) &&
           memcmp(a->str, s, a->len) == 0;
}

static bool kill_match(const struct exec_ctx *x, const struct kill_filter *f,
                       const struct client *cl, uint64_t now)
{
    if (f->skipme && cl == x->sess->client)
        return false;
    if (f->by_id && cl->sess->id != f->id)
        return false;
    if (f->by_addr && !arg_eq(f->addr, cl->addr))
        return false;
    if (f->by_laddr && !arg_eq(f->laddr, cl->laddr))
        return false;
    if (f->by_type && client_type(cl) != f->type)
        return false;
    if (f->by_user && !arg_eq(f->user, acl_session_user(cl->sess)))
        return false;
    if (f->by_age && (now - cl->ctime_ms) / 1000 < f->maxage)
        return false;
    return true;
}

/* Closes cl: the caller's own connection after this reply, any other at
 * once. */
static void kill_one(struct exec_ctx *x, struct client *cl)
{
    if (cl == x->sess->client)
        x->r->close_after = true;
    else
        cl->io->kill(cl);
}

static void client_kill(struct exec_ctx *x)
{
    struct kill_filter f = {0};
    uint64_t now = server_mono_ms(), killed = 0;
    struct client *cl, *next;
    char text[65];

    if (x->argc == 2) {
        /* CLIENT KILL addr:port, the old form: OK or an error. */
        for (cl = x->srv->clist.head; cl != NULL; cl = cl->next)
            if (arg_eq(&x->argv[1], cl->addr))
                break;
        if (cl == NULL) {
            reply_err(x->r, UR_E_ERR, "No such client");
            return;
        }
        kill_one(x, cl);
        reply_status(x->r, "OK");
        return;
    }
    f.skipme = true;
    if (x->argc % 2 == 0) {
        reply_err(x->r, UR_E_BADARG, "syntax error: CLIENT KILL filter value");
        return;
    }
    for (uint32_t i = 1; i + 1 < x->argc; i += 2) {
        uint32_t v = i + 1;

        if (arg_is(x, i, "ID")) {
            f.by_id = true;
            if (!arg_u64(x, v, "client id", &f.id))
                return;
        } else if (arg_is(x, i, "ADDR")) {
            f.by_addr = true;
            f.addr = &x->argv[v];
        } else if (arg_is(x, i, "LADDR")) {
            f.by_laddr = true;
            f.laddr = &x->argv[v];
        } else if (arg_is(x, i, "TYPE")) {
            f.by_type = true;
            if (!arg_client_type(x, v, &f.type))
                return;
        } else if (arg_is(x, i, "USER")) {
            f.by_user = true;
            f.user = &x->argv[v];
        } else if (arg_is(x, i, "SKIPME")) {
            if (arg_is(x, v, "yes")) {
                f.skipme = true;
            } else if (arg_is(x, v, "no")) {
                f.skipme = false;
            } else {
                reply_err(x->r, UR_E_BADARG, "syntax error: SKIPME yes|no");
                return;
            }
        } else if (arg_is(x, i, "MAXAGE")) {
            f.by_age = true;
            if (!arg_u64(x, v, "maxage", &f.maxage))
                return;
        } else {
            reply_err(x->r, UR_E_BADARG,
                      "syntax error: unknown CLIENT KILL filter '%s'",
                      arg_text(x, i, text, sizeof(text)));
            return;
        }
    }
    for (cl = x->srv->clist.head; cl != NULL; cl = next) {
        next = cl->next; /* kill_one may unlink cl */
        if (!kill_match(x, &f, cl, now))
            continue;
        killed++;
        kill_one(x, cl);
    }
    reply_int(x->r, killed);
}

static void client_pause(struct exec_ctx *x)
{
    uint64_t ms;
    bool all = true;

    if (!arg_u64(x, 1, "timeout", &ms))
        return;
    if (x->argc == 3) {
        if (arg_is(x, 2, "WRITE")) {
            all = false;
        } else if (!arg_is(x, 2, "ALL")) {
            reply_err(x->r, UR_E_BADARG,
                      "syntax error: CLIENT PAUSE timeout "
                      "[WRITE|ALL]");
            return;
        }
    }
    if (ms > UINT32_MAX) {
        reply_err(x->r, UR_E_BADARG, "timeout is out of range");
        return;
    }
    /* As Redis: a second pause never shortens the first, and ALL wins. */
    uint64_t end = server_mono_ms() + ms;
    if (x->srv->pause_end_ms == 0) {
        x->srv->pause_all = all;
        x->srv->pause_end_ms = end;
    } else {
        x->srv->pause_all |= all;
        if (end > x->srv->pause_end_ms)
            x->srv->pause_end_ms = end;
    }
    if (ms == 0)
        x->srv->pause_end_ms = 0;
    if (x->srv->on_pause != NULL)
        x->srv->on_pause(x->srv);
    reply_status(x->r, "OK");
}

static const char *const client_help[] = {
    "CLIENT <subcommand> [<arg> ...]. Subcommands are:",
    "ID",
    "    The id of the current connection.",
    "INFO",
    "    Information about the current connection.",
    "LIST [ID id ...]",
    "    Every connection, one line each.",
    "GETNAME",
    "    The name of the current connection.",
    "SETNAME name",
    "    Names the current connection.",
    "SETINFO LIB-NAME|LIB-VER value",
    "    The client library's name or version.",
    "KILL addr | KILL <filter> value ...",
    "    Closes connections: ID, ADDR, LADDR, TYPE, USER, SKIPME, MAXAGE.",
    "PAUSE timeout [WRITE|ALL]",
    "    Holds writes (or every command).",
    "UNPAUSE",
    "    Ends a pause.",
    "NO-EVICT on|off, NO-TOUCH on|off, REPLY ON",
    "    Accepted, no effect.",
};

void cmd_CLIENT(struct exec_ctx *x)
{
    struct client *me = x->sess->client;
    char text[65];

    if (arg_is(x, 0, "ID") && x->argc == 1) {
        reply_int(x->r, x->sess->id);
    } else if (arg_is(x, 0, "INFO") && x->argc == 1) {
        if (me == NULL)
            reply_str(x->r, "", 0);
        else
            reply_clients(x, true, NULL, 0, -1);
    } else if (arg_is(x, 0, "LIST")) {
        uint64_t ids[64];
        uint32_t nids = 0, t;
        int64_t type = -1;

        for (uint32_t i = 1; i < x->argc;) {
            if (arg_is(x, i, "TYPE") && i + 1 < x->argc) {
                if (!arg_client_type(x, i + 1, &t))
                    return;
                type = t;
                i += 2;
            } else if (arg_is(x, i, "ID") && i + 1 < x->argc) {
                for (i++; i < x->argc && nids < 64; i++)
                    if (!arg_u64(x, i, "client id", &ids[nids++]))
                        return;
            } else {
                reply_err(x->r, UR_E_BADARG,
                          "syntax error: CLIENT LIST [TYPE type] [ID id ...]");
                return;
            }
        }
        reply_clients(x, false, ids, nids, type);
    } else if (arg_is(x, 0, "GETNAME") && x->argc == 1) {
        if (me == NULL || me->name == NULL)
            reply_nil(x->r);
        else
            reply_cstr(x->r, me->name);
    } else if (arg_is(x, 0, "SETNAME") && x->argc == 2) {
        if (client_name_ok(x, 1) && client_set_name(x, 1))
            reply_status(x->r, "OK");
    } else if (arg_is(x, 0, "SETINFO") && x->argc == 3) {
        bool lib = arg_is(x, 1, "LIB-NAME");

        if (!lib && !arg_is(x, 1, "LIB-VER")) {
            reply_err(x->r, UR_E_BADARG,
                      "Unrecognized option '%s' (LIB-NAME or LIB-VER)",
                      arg_text(x, 1, text, sizeof(text)));
            return;
        }
        if (!name_chars_ok(&x->argv[2]) ||
            (x->argv[2].kind == UR_ARG_STR &&
             x->argv[2].len >= CLIENT_NAME_MAX)) {
            reply_err(x->r, UR_E_BADARG,
                      "%s cannot contain spaces, newlines or special "
                      "characters.",
                      lib ? "lib-name" : "lib-ver");
            return;
        }
        if (me != NULL && !set_field(x, lib ? &me->lib_name : &me->lib_ver, 2))
            return;
        reply_status(x->r, "OK");
    } else if (arg_is(x, 0, "KILL") && x->argc >= 2) {
        client_kill(x);
    } else if (arg_is(x, 0, "PAUSE") && (x->argc == 2 || x->argc == 3)) {
        client_pause(x);
    } else if (arg_is(x, 0, "UNPAUSE") && x->argc == 1) {
        x->srv->pause_end_ms = 0;
        if (x->srv->on_pause != NULL)
            x->srv->on_pause(x->srv);
        reply_status(x->r, "OK");
    } else if ((arg_is(x, 0, "NO-EVICT") || arg_is(x, 0, "NO-TOUCH")) &&
               x->argc == 2 && (arg_is(x, 1, "on") || arg_is(x, 1, "off"))) {
        reply_status(x->r, "OK");
    } else if (arg_is(x, 0, "REPLY") && x->argc == 2 && arg_is(x, 1, "ON")) {
        reply_status(x->r, "OK");
    } else if (arg_is(x, 0, "HELP") && x->argc == 1) {
        size_t n = sizeof(client_help) / sizeof(client_help[0]);

        reply_arr(x->r, (uint32_t)n);
        for (size_t i = 0; i < n; i++)
            reply_status(x->r, client_help[i]);
    } else {
        reply_err(x->r, UR_E_BADARG,
                  "unknown subcommand or wrong number of arguments for "
                  "'%s'. Try CLIENT HELP.",
                  arg_text(x, 0, text, sizeof(text)));
    }
}

void cmd_MONITOR(struct exec_ctx *x)
{
    if (!clients_monitor(x->srv, x->sess)) {
        reply_err(x->r, UR_E_ERR, "MONITOR needs a client connection");
        return;
    }
    reply_status(x->r, "OK");
}

/* The reply is written in the protocol the connection had: "+RESET" is
 * the same in RESP2 and RESP3. */
void cmd_RESET(struct exec_ctx *x)
{
    clients_reset(x->srv, x->sess);
    if (x->sess->proto == REPLY_RESP3)
        x->sess->proto = REPLY_RESP;
    reply_status(x->r, "RESET");
}

void cmd_SELECT(struct exec_ctx *x)
{
    const struct ur_arg *a = &x->argv[0];
    uint64_t db;

    if (a->kind == UR_ARG_STR &&
        ur_parse_uint(a->str, a->len, UR_INT_MAX, &db) == UR_NUM_SYNTAX) {
        reply_err(x->r, UR_E_BADARG,
                  "value is not an integer or out of "
                  "range");
        return;
    }
    if (!arg_u64(x, 0, "index", &db))
        return;
    if (db != 0) {
        reply_err(x->r, UR_E_ERR,
                  "DB index is out of range (unreadd has one database: 0)");
        return;
    }
    reply_status(x->r, "OK");
}
