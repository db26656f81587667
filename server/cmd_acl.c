/*
 * cmd_acl.c - ACL SETUSER | GETUSER | DELUSER | LIST | USERS | WHOAMI |
 * CAT | LOG | SAVE | LOAD | GENPASS | DRYRUN | HELP (acl.h; Redis's
 * replies and messages).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/rand.h>

#include "acl.h"
#include "cmds.h"
#include "log.h"

/* The user named by argument i, or NULL. */
static struct acl_user *user_arg(struct exec_ctx *x, uint32_t i)
{
    const struct ur_arg *a = &x->argv[i];
    char num[24];

    if (a->kind == UR_ARG_INT)
        return acl_user_find(x->srv->acl, num, ur_fmt_u64(num, a->num));
    return acl_user_find(x->srv->acl, a->str, a->len);
}

static void arg_name(const struct ur_arg *a, char num[24], const char **s,
                     size_t *n)
{
    if (a->kind == UR_ARG_INT) {
        *n = ur_fmt_u64(num, a->num);
        *s = num;
    } else {
        *s = a->str;
        *n = a->len;
    }
}

static bool want_args(struct exec_ctx *x, uint32_t min, uint32_t max,
                      const char *sub)
{
    if (x->argc >= min && x->argc <= max)
        return true;
    reply_err(x->r, UR_E_ARITY,
              "wrong number of arguments for 'acl|%s' command", sub);
    return false;
}

static void acl_setuser_cmd(struct exec_ctx *x)
{
    char err[512], num[24];
    const char *name;
    size_t n;

    arg_name(&x->argv[1], num, &name, &n);
    if (acl_setuser(x->srv, name, n, x->argv + 2, x->argc - 2, x->sess, x->r,
                    err, sizeof(err)) != 0) {
        reply_err(x->r, UR_E_ERR, "%s", err);
        return;
    }
    reply_status(x->r, "OK");
}

/* Redis 7's shape: flags, passwords, commands, keys, channels,
 * selectors; keys and channels as one string each. */
static void acl_getuser_cmd(struct exec_ctx *x)
{
    struct acl_user *u = user_arg(x, 1);
    char *keys, *chans, *cmds, hex[65];

    if (u == NULL) {
        reply_nil(x->r);
        return;
    }
    keys = acl_user_part(u, ACL_PART_KEYS);
    chans = acl_user_part(u, ACL_PART_CHANNELS);
    cmds = acl_user_part(u, ACL_PART_COMMANDS);
    if (keys == NULL || chans == NULL || cmds == NULL) {
        reply_oom(x);
    } else {
        reply_map(x->r, 6);
        reply_cstr(x->r, "flags");
        reply_set(x->r, u->nopass ? 2 : 1);
        reply_cstr(x->r, u->on ? "on" : "off");
        if (u->nopass)
            reply_cstr(x->r, "nopass");
        reply_cstr(x->r, "passwords");
        reply_arr(x->r, u->npass);
        for (uint32_t i = 0; i < u->npass; i++) {
            acl_pass_hex(u, i, hex);
            reply_str(x->r, hex, 64);
        }
        reply_cstr(x->r, "commands");
        reply_cstr(x->r, cmds);
        reply_cstr(x->r, "keys");
        reply_cstr(x->r, keys);
        reply_cstr(x->r, "channels");
        reply_cstr(x->r, chans);
        reply_cstr(x->r, "selectors");
        reply_arr(x->r, 0);
    }
    free(keys);
    free(chans);
    free(cmds);
}

static void acl_deluser_cmd(struct exec_ctx *x)
{
    uint64_t n = 0;
    char num[24];

    for (uint32_t i = 1; i < x->argc; i++) {
        const char *name;
        size_t len;

        arg_name(&x->argv[i], num, &name, &len);
        if (len == 7 && memcmp(name, "default", 7) == 0) {
            reply_err(x->r, UR_E_ERR, "The 'default' user cannot be removed");
            return;
        }
    }
    for (uint32_t i = 1; i < x->argc; i++) {
        const char *name;
        size_t len;

        arg_name(&x->argv[i], num, &name, &len);
        n += (uint64_t)acl_deluser(x->srv, name, len, x->sess, x->r);
    }
    reply_int(x->r, n);
}

static void acl_list_cmd(struct exec_ctx *x, bool names)
{
    const struct acl *acl = x->srv->acl;

    reply_arr(x->r, acl->nusers);
    for (uint32_t i = 0; i < acl->nusers; i++) {
        char *line;

        if (names) {
            reply_cstr(x->r, acl->users[i]->name);
            continue;
        }
        line = acl_user_describe(acl->users[i]);
        reply_cstr(x->r, line != NULL ? line : "");
        free(line);
    }
}

static void lower(char *dst, size_t cap, const char *s)
{
    size_t k = 0;

    for (; s[k] != '\0' && k + 1 < cap; k++)
        dst[k] = (char)tolower((unsigned char)s[k]);
    dst[k] = '\0';
}

/* ACL CAT: every category; ACL CAT name: its commands. */
static void acl_cat_cmd(struct exec_ctx *x)
{
    const char *w[16];
    char name[64];

    if (x->argc == 1) {
        static const char *const names[] = {
            "keyspace", "read",     "write",     "set",        "sortedset",
            "list",     "hash",     "string",    "bitmap",     "hyperloglog",
            "geo",      "stream",   "pubsub",    "admin",      "fast",
            "slow",     "blocking", "dangerous", "connection", "transaction",
            "scripting"};
        size_t nn = sizeof(names) / sizeof(names[0]);

        reply_arr(x->r, (uint32_t)(nn + FAM_COUNT + 1));
        for (size_t i = 0; i < nn; i++)
            reply_cstr(x->r, names[i]);
        for (unsigned f = 0; f < FAM_COUNT; f++)
            reply_cstr(x->r, db_families[f].name);
        reply_cstr(x->r, "user");
        return;
    }
    {
        char cat[64];
        uint32_t n = 0;
        size_t mark;
        const struct ur_arg *a = &x->argv[1];

        if (a->kind != UR_ARG_STR || a->len + 2 > sizeof(cat)) {
            reply_err(x->r, UR_E_ERR, "Unknown category");
            return;
        }
        cat[0] = '@';
        for (size_t i = 0; i < a->len; i++)
            cat[i + 1] = (char)tolower((unsigned char)a->str[i]);
        cat[a->len + 1] = '\0';
        /* known: some op has it, or it is one of Redis's */
        {
            char err[128];
            struct acl_user *probe = acl_user_new("probe", 5);
            char rule[70];
            int rc;

            if (probe == NULL) {
                reply_oom(x);
                return;
            }
            snprintf(rule, sizeof(rule), "+%s", cat);
            rc = acl_user_rule(probe, rule, strlen(rule), err, sizeof(err));
            acl_user_unref(probe);
            if (rc != 0) {
                reply_err(x->r, UR_E_ERR, "Unknown category '%s'", cat + 1);
                return;
            }
        }
        mark = reply_arr_defer(x->r);
        for (unsigned i = 0; i < UR_OP_COUNT; i++) {
            unsigned k = acl_op_categories(&ur_ops[i], w);
            for (unsigned j = 0; j < k; j++) {
                if (strcmp(w[j], cat) == 0) {
                    lower(name, sizeof(name), ur_ops[i].name);
                    reply_cstr(x->r, name);
                    n++;
                    break;
                }
            }
        }
        reply_arr_finish(x->r, mark, n);
    }
}

static void acl_log_cmd(struct exec_ctx *x)
{
    uint64_t count = 10;

    if (x->argc == 2 && arg_is(x, 1, "RESET")) {
        acl_log_reset(x->srv->acl);
        reply_status(x->r, "OK");
        return;
    }
    if (x->argc == 2) {
        const struct ur_arg *a = &x->argv[1];
        if (a->kind == UR_ARG_INT) {
            count = a->num;
        } else if (ur_parse_uint(a->str, a->len, UR_INT_MAX, &count) !=
                   UR_NUM_OK) {
            reply_err(x->r, UR_E_ERR,
                      "value is out of range, must be positive");
            return;
        }
    }
    acl_log_reply(x->srv, x->r, count);
}

static void acl_genpass_cmd(struct exec_ctx *x)
{
    static const char digits[] = "0123456789abcdef";
    uint64_t bits = 256;
    unsigned char raw[512];
    char out[1025];
    size_t chars;

    if (x->argc == 2) {
        const struct ur_arg *a = &x->argv[1];
        bool ok =
            a->kind == UR_ARG_INT
                ? (bits = a->num, true)
                : ur_parse_uint(a->str, a->len, UR_INT_MAX, &bits) == UR_NUM_OK;
        if (!ok || bits == 0 || bits > 4096) {
            reply_err(x->r, UR_E_ERR,
                      "ACL GENPASS argument must be the number of bits for "
                      "the output password, a positive number up to 4096");
            return;
        }
    }
    chars = (size_t)(bits + 3) / 4;
    if (RAND_bytes(raw, (int)((chars + 1) / 2)) != 1) {
        reply_err(x->r, UR_E_ERR, "no random bytes from the system");
        return;
    }
    for (size_t i = 0; i < chars; i++)
        out[i] = digits[(raw[i / 2] >> (i % 2 ? 0 : 4)) & 15];
    reply_str(x->r, out, chars);
}

/* ACL DRYRUN user command [arg ...]: OK, or why not, as Redis 7. */
static void acl_dryrun_cmd(struct exec_ctx *x)
{
    struct acl_user *u = user_arg(x, 1);
    const struct ur_arg *c = &x->argv[2];
    const struct ur_op *op;
    const char *what = NULL;
    size_t wlen = 0;
    char name[64], text[80];
    int v;

    if (u == NULL) {
        reply_err(x->r, UR_E_ERR, "User '%s' not found",
                  arg_text(x, 1, text, sizeof(text)));
        return;
    }
    op = c->kind == UR_ARG_STR ? ur_op_by_name(c->str, c->len) : NULL;
    if (op == NULL) {
        reply_err(x->r, UR_E_ERR, "Command '%s' not found",
                  arg_text(x, 2, text, sizeof(text)));
        return;
    }
    if (!exec_arity_ok(op, x->argc - 3)) {
        exec_arity_err(x->r, op, "");
        return;
    }
    v = acl_user_may(u, op, x->argc - 3, x->argv + 3, &what, &wlen);
    lower(name, sizeof(name), op->name);
    if (v == ACL_ALLOW) {
        reply_status(x->r, "OK");
    } else if (v == ACL_DENY_CMD) {
        char m[160];
        int n = snprintf(m, sizeof(m),
                         "This user has no permissions to run the '%s' "
                         "command",
                         name);
        reply_str(x->r, m, (size_t)n);
    } else {
        char m[256];
        int n = snprintf(m, sizeof(m),
                         "This user has no permissions to access the '%.*s' "
                         "%s",
                         (int)(wlen > 100 ? 100 : wlen), what,
                         v == ACL_DENY_KEY ? "key" : "channel");
        reply_str(x->r, m, (size_t)n);
    }
}

static const char *const help_lines[] = {
    "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CAT [<category>]",
    "    List all commands that belong to <category>, or all command "
    "categories",
    "    when no category is specified.",
    "DELUSER <username> [<username> ...]",
    "    Delete a list of users.",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Returns whether the user can execute the given command without "
    "executing the command.",
    "GETUSER <username>",
    "    Get the user's details.",
    "GENPASS [<bits>]",
    "    Generate a secure 256-bit user password. The optional `bits` "
    "argument can",
    "    be used to specify a different size.",
    "LIST",
    "    Show users details in config file format.",
    "LOAD",
    "    Reload users from the ACL file.",
    "LOG [<count> | RESET]",
    "    Show the ACL log entries.",
    "SAVE",
    "    Save the current config to the ACL file.",
    "SETUSER <username> <attribute> [<attribute> ...]",
    "    Create or modify a user with the specified attributes.",
    "USERS",
    "    List all the registered usernames.",
    "WHOAMI",
    "    Return the current connection username.",
    "HELP",
    "    Print this help."};

static bool no_file(struct exec_ctx *x)
{
    if (x->srv->cfg.aclfile[0] != '\0')
        return false;
    reply_err(x->r, UR_E_ERR,
              "This server is not configured to use an ACL file. You may "
              "want to specify users via the ACL SETUSER command and then "
              "issue a CONFIG REWRITE (assuming you have a config file set) "
              "in order to store users in the config file.");
    return true;
}

void cmd_ACL(struct exec_ctx *x)
{
    char err[1024], text[40];

    if (x->srv->acl == NULL) {
        reply_err(x->r, UR_E_ERR, "ACL is not set up in this process");
    } else if (arg_is(x, 0, "SETUSER")) {
        if (want_args(x, 2, UINT32_MAX, "setuser"))
            acl_setuser_cmd(x);
    } else if (arg_is(x, 0, "GETUSER")) {
        if (want_args(x, 2, 2, "getuser"))
            acl_getuser_cmd(x);
    } else if (arg_is(x, 0, "DELUSER")) {
        if (want_args(x, 2, UINT32_MAX, "deluser"))
            acl_deluser_cmd(x);
    } else if (arg_is(x, 0, "LIST")) {
        if (want_args(x, 1, 1, "list"))
            acl_list_cmd(x, false);
    } else if (arg_is(x, 0, "USERS")) {
        if (want_args(x, 1, 1, "users"))
            acl_list_cmd(x, true);
    } else if (arg_is(x, 0, "WHOAMI")) {
        if (want_args(x, 1, 1, "whoami"))
            reply_cstr(x->r, acl_session_user(x->sess));
    } else if (arg_is(x, 0, "CAT")) {
        if (want_args(x, 1, 2, "cat"))
            acl_cat_cmd(x);
    } else if (arg_is(x, 0, "LOG")) {
        if (want_args(x, 1, 2, "log"))
            acl_log_cmd(x);
    } else if (arg_is(x, 0, "SAVE")) {
        if (want_args(x, 1, 1, "save") && !no_file(x)) {
            if (acl_save(x->srv, err, sizeof(err)) != 0) {
                log_warn("ACL SAVE: %s", err);
                reply_err(x->r, UR_E_ERR,
                          "There was an error trying to save "
                          "the ACLs. Please check the server "
                          "logs for more information");
            } else {
                reply_status(x->r, "OK");
            }
        }
    } else if (arg_is(x, 0, "LOAD")) {
        if (want_args(x, 1, 1, "load") && !no_file(x)) {
            if (acl_load(x->srv, x->sess, x->r, err, sizeof(err)) != 0)
                reply_err(x->r, UR_E_ERR, "%s", err);
            else
                reply_status(x->r, "OK");
        }
    } else if (arg_is(x, 0, "GENPASS")) {
        if (want_args(x, 1, 2, "genpass"))
            acl_genpass_cmd(x);
    } else if (arg_is(x, 0, "DRYRUN")) {
        if (want_args(x, 3, UINT32_MAX, "dryrun"))
            acl_dryrun_cmd(x);
    } else if (arg_is(x, 0, "HELP")) {
        size_t n = sizeof(help_lines) / sizeof(help_lines[0]);
        reply_arr(x->r, (uint32_t)n);
        for (size_t i = 0; i < n; i++)
            reply_status(x->r, help_lines[i]);
    } else {
        reply_err(x->r, UR_E_ERR, "unknown subcommand '%s'. Try ACL HELP.",
                  arg_text(x, 0, text, sizeof(text)));
    }
}
