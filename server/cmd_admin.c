/*
 * cmd_admin.c - connection and administration handlers (docs/COMMANDS.md,
 * "Admin and connection"): PING, ECHO, HELLO, HELP, QUIT, INFO, CONFIG (SAVE
 * and friends: cmd_persist.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "acl.h"
#include "auth.h"
#include "cmds.h"
#include "frame.h"
#include "log.h"
#include "metrics.h"
#include "persist.h"
#include "u32map.h"

/* Argument i back as a bulk string, whichever form it came in. */
static void reply_arg(struct exec_ctx *x, uint32_t i)
{
    char num[24];
    const struct ur_arg *a = &x->argv[i];
    if (a->kind == UR_ARG_STR)
        reply_str(x->r, a->str, a->len);
    else
        reply_str(x->r, num, ur_fmt_u64(num, a->num));
}

/* In RESP2's subscribed mode a reply must look like a message, so PING
 * answers ["pong", message or ""], as Redis does. */
void cmd_PING(struct exec_ctx *x)
{
    if (x->sess->subs != 0 && x->sess->proto == REPLY_RESP) {
        reply_arr(x->r, 2);
        reply_str(x->r, "pong", 4);
        if (x->argc == 0)
            reply_str(x->r, "", 0);
        else
            reply_arg(x, 0);
    } else if (x->argc == 0) {
        reply_status(x->r, "PONG");
    } else {
        reply_arg(x, 0);
    }
}

void cmd_ECHO(struct exec_ctx *x)
{
    reply_arg(x, 0);
}

/*
 * HELLO [protover [AUTH [username] password] [SETNAME name]]: protover is
 * the RESP version on text connections (2 or 3: HELLO 3 switches the
 * connection to RESP3) and the frame version on binary ones (1). AUTH
 * authenticates before the handshake (auth.h), so a client connects in
 * one round trip on either protocol; the user name may be left out.
 * Nothing changes unless the whole command succeeds.
 */
void cmd_HELLO(struct exec_ctx *x)
{
    bool bin = x->sess->proto == REPLY_BIN;
    uint64_t ver =
        bin ? UR_FRAME_VERSION : (x->sess->proto == REPLY_RESP3 ? 3 : 2);
    uint32_t auth_at = 0, auth_n = 0, name_at = 0;
    char text[32];

    if (x->argc >= 1) {
        if (!arg_u64(x, 0, "protover", &ver))
            return;
        if (bin ? ver != UR_FRAME_VERSION : (ver != 2 && ver != 3)) {
            reply_err(
                x->r, UR_E_NOPROTO, "unsupported protocol version %llu (%s)",
                (unsigned long long)ver, bin ? "binary: 1" : "RESP: 2 or 3");
            return;
        }
    }
    for (uint32_t i = 1; i < x->argc;) {
        uint32_t left = x->argc - i - 1;

        if (arg_is(x, i, "AUTH") && left >= 1 && auth_at == 0) {
            /* user and password, or the password alone */
            auth_n = left >= 2 && !arg_is(x, i + 2, "SETNAME") ? 2 : 1;
            auth_at = i + 1;
            i += 1 + auth_n;
        } else if (arg_is(x, i, "SETNAME") && left >= 1 && name_at == 0) {
            name_at = i + 1;
            i += 2;
        } else {
            reply_err(x->r, UR_E_BADARG,
                      "syntax error in HELLO option '%s' (HELLO [protover "
                      "[AUTH username password] [SETNAME name]])",
                      arg_text(x, i, text, sizeof(text)));
            return;
        }
    }
    if (name_at != 0 && !client_name_ok(x, name_at))
        return;
    if (auth_at != 0) {
        struct exec_ctx a = *x;

        a.argc = auth_at + auth_n; /* the password is its last argument */
        if (!auth_login(&a, auth_at))
            return;
    }
    if (name_at != 0 && !client_set_name(x, name_at))
        return;
    if (!bin)
        x->sess->proto = ver == 3 ? REPLY_RESP3 : REPLY_RESP;
    /* The reply is in the new protocol: this writer already began in the
     * old one, but only a map header differs and none is written yet. */
    x->r->proto = x->sess->proto;
    reply_map(x->r, 7);
    reply_cstr(x->r, "server");
    reply_cstr(x->r, "unreadd");
    reply_cstr(x->r, "version");
    reply_cstr(x->r, UNREADD_VERSION);
    reply_cstr(x->r, "proto");
    reply_int(x->r, ver);
    reply_cstr(x->r, "id");
    reply_int(x->r, x->sess->id);
    reply_cstr(x->r, "mode");
    reply_cstr(x->r, "standalone");
    reply_cstr(x->r, "role");
    reply_cstr(x->r, x->srv->readonly_data ? "replica" : "master");
    reply_cstr(x->r, "modules");
    reply_arr(x->r, 0);
}

static void help_one(struct exec_ctx *x, const struct ur_op *op)
{
    char line[512];
    reply_arr(x->r, 5);
    snprintf(line, sizeof(line), "%s%s%s", op->name, op->syntax[0] ? " " : "",
             op->syntax);
    reply_cstr(x->r, line);
    reply_cstr(x->r, op->summary);
    snprintf(line, sizeof(line), "reply: %s", op->reply);
    reply_cstr(x->r, line);
    snprintf(line, sizeof(line), "complexity: %s", op->cost);
    reply_cstr(x->r, line);
    snprintf(line, sizeof(line), "opcode: 0x%04x", op->code);
    reply_cstr(x->r, line);
}

void cmd_HELP(struct exec_ctx *x)
{
    if (x->argc == 1) {
        const struct ur_arg *a = &x->argv[0];
        const struct ur_op *op =
            a->kind == UR_ARG_STR ? ur_op_by_name(a->str, a->len) : NULL;
        if (op == NULL) {
            char text[65];
            reply_err(x->r, UR_E_UNKNOWN, "unknown command '%s'",
                      arg_text(x, 0, text, sizeof(text)));
            return;
        }
        help_one(x, op);
        return;
    }
    reply_arr(x->r, UR_OP_COUNT);
    for (unsigned i = 0; i < UR_OP_COUNT; i++) {
        const struct ur_op *op = &ur_ops[i];
        char line[512];
        snprintf(line, sizeof(line), "%s%s%s - %s", op->name,
                 op->syntax[0] ? " " : "", op->syntax, op->summary);
        reply_cstr(x->r, line);
    }
}

void cmd_QUIT(struct exec_ctx *x)
{
    reply_status(x->r, "OK");
    x->r->close_after = true;
}

struct config_reply {
    struct reply *r;
    uint32_t n;
    const char *seen[128]; /* names answered: a key matched twice once */
};

static void config_one(const char *name, const char *value, void *ctx)
{
    struct config_reply *cr = ctx;

    for (uint32_t i = 0; i < cr->n; i++)
        if (cr->seen[i] == name)
            return;
    if (cr->n < sizeof(cr->seen) / sizeof(cr->seen[0]))
        cr->seen[cr->n] = name;
    reply_cstr(cr->r, name);
    reply_cstr(cr->r, value);
    cr->n++;
}

static void config_get(struct exec_ctx *x)
{
    struct config_reply cr = {x->r, 0, {NULL}};
    size_t mark = reply_arr_defer(x->r);

    for (uint32_t i = 1; i < x->argc; i++) {
        char pat[128];

        arg_text(x, i, pat, sizeof(pat));
        config_match(&x->srv->cfg, pat, strlen(pat), config_one, &cr);
    }
    reply_map_finish(x->r, mark, cr.n);
}

/* Puts a key changed by CONFIG SET into effect where it is not read
 * anew each time. */
static void config_apply(struct server *srv, const char *key)
{
    char err[256];

    if (strcmp(key, "loglevel") == 0)
        log_set_level((enum log_level)srv->cfg.loglevel);
    else if (strcmp(key, "logfile") == 0 &&
             log_open(srv->cfg.logfile, err, sizeof(err)) != 0)
        log_warn("CONFIG SET logfile: %s; the log stays where it was", err);
    else if (strcmp(key, "slowlog-max-len") == 0)
        slowlog_trim(&srv->slowlog, srv->cfg.slowlog_max_len);
    acl_config_changed(srv, key);
    if (srv->on_config != NULL)
        srv->on_config(srv, key);
}

/* CONFIG SET name value [name value ...]: every pair is checked on a copy
 * first, so that a refused one changes nothing (as Redis 7). */
static void config_set_pairs(struct exec_ctx *x)
{
    struct config next = x->srv->cfg;
    char err[512];
    bool tls = false;

    if (x->argc < 3 || (x->argc - 1) % 2 != 0) {
        reply_err(x->r, UR_E_ARITY,
                  "wrong number of arguments for 'CONFIG SET' (CONFIG SET "
                  "name value [name value ...])");
        return;
    }
    for (uint32_t i = 1; i < x->argc; i += 2) {
        char key[64], value[CONFIG_STR_MAX];
        const struct ur_arg *v = &x->argv[i + 1];

        arg_text(x, i, key, sizeof(key));
        if (v->kind == UR_ARG_INT) {
            value[ur_fmt_u64(value, v->num)] = '\0';
        } else if (v->len >= sizeof(value) ||
                   memchr(v->str, '\0', v->len) != NULL) {
            reply_err(x->r, UR_E_BADARG,
                      "CONFIG SET failed: '%s': value "
                      "too long or not text",
                      key);
            return;
        } else {
            memcpy(value, v->str, v->len);
            value[v->len] = '\0';
        }
        for (uint32_t j = 1; j < i; j += 2) {
            if (x->argv[j].kind == UR_ARG_STR &&
                x->argv[i].kind == UR_ARG_STR &&
                x->argv[j].len == x->argv[i].len &&
                strncasecmp(x->argv[j].str, x->argv[i].str, x->argv[i].len) ==
                    0) {
                reply_err(x->r, UR_E_BADARG,
                          "CONFIG SET failed: duplicate parameter '%s'", key);
                return;
            }
        }
        if (config_protected_change(&x->srv->cfg, key, value) &&
            !config_allows(x->srv->cfg.enable_protected_configs,
                           session_local(x->sess))) {
            reply_err(x->r, UR_E_ERR,
                      "CONFIG SET failed (possibly related to argument "
                      "'%s') - can't set protected config",
                      key);
            return;
        }
        if (config_set_runtime(&next, key, value, err, sizeof(err)) != 0) {
            reply_err(x->r, UR_E_BADARG, "CONFIG SET failed: %s", err);
            return;
        }
        if (strncasecmp(key, "tls-", 4) == 0)
            tls = true;
    }
    /* The certificates are read again (rotation): a file that does not
     * load refuses the whole CONFIG SET. */
    if (tls && x->srv->on_tls_config != NULL &&
        x->srv->on_tls_config(x->srv, &next, err, sizeof(err)) != 0) {
        reply_err(x->r, UR_E_BADARG, "CONFIG SET failed: %s", err);
        return;
    }
    x->srv->cfg = next;
    for (uint32_t i = 1; i < x->argc; i += 2) {
        char key[64];
        const char *canon;

        arg_text(x, i, key, sizeof(key));
        canon = config_canonical(key);
        if (canon != NULL)
            config_apply(x->srv, canon);
    }
    reply_status(x->r, "OK");
}

static void config_resetstat(struct server *srv)
{
    memset(&srv->stats, 0, sizeof(srv->stats));
    srv->stat_reset_ms = server_now_ms();
}

void cmd_CONFIG(struct exec_ctx *x)
{
    char text[65], err[512];

    if (arg_is(x, 0, "GET") && x->argc == 1) {
        reply_err(x->r, UR_E_ARITY,
                  "wrong number of arguments for 'CONFIG GET' (CONFIG GET "
                  "pattern [pattern ...])");
    } else if (arg_is(x, 0, "GET")) {
        config_get(x);
    } else if (arg_is(x, 0, "SET")) {
        config_set_pairs(x);
    } else if (arg_is(x, 0, "REWRITE") && x->argc == 1) {
        if (x->srv->cfg.config_file[0] == '\0') {
            reply_err(x->r, UR_E_ERR,
                      "The server is running without a config file: start "
                      "it with --config FILE for CONFIG REWRITE to have a "
                      "file to write");
            return;
        }
        char *users = acl_config_lines(x->srv);
        int rc = config_rewrite(&x->srv->cfg, x->srv->cfg.config_file, users,
                                err, sizeof(err));

        free(users);
        if (rc != 0) {
            log_warn("CONFIG REWRITE: %s", err);
            reply_err(x->r, UR_E_ERR, "Rewriting config file: %s", err);
            return;
        }
        log_info("CONFIG REWRITE wrote %s", x->srv->cfg.config_file);
        reply_status(x->r, "OK");
    } else if (arg_is(x, 0, "RESETSTAT") && x->argc == 1) {
        config_resetstat(x->srv);
        reply_status(x->r, "OK");
    } else if (arg_is(x, 0, "HELP") && x->argc == 1) {
        reply_arr(x->r, 5);
        reply_status(x->r, "CONFIG <subcommand> [<arg> ...]. Subcommands are:");
        reply_status(x->r, "GET pattern [pattern ...]: matching keys and "
                           "values.");
        reply_status(x->r, "SET name value [name value ...]: changes keys "
                           "that may change at run time.");
        reply_status(x->r, "REWRITE: writes the values into the config "
                           "file.");
        reply_status(x->r, "RESETSTAT: zeroes INFO's counters.");
    } else {
        reply_err(x->r, UR_E_BADARG,
                  "unknown CONFIG subcommand or wrong number of arguments "
                  "for '%s' (GET, SET, REWRITE, RESETSTAT)",
                  arg_text(x, 0, text, sizeof(text)));
    }
}
