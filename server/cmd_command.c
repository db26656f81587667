/*
 * cmd_command.c - COMMAND: the op table (protocol/ops.def) described the
 * way Redis 7 describes its own, so that Redis tools work from it:
 * redis-cli builds `help CNT.INCR`, its hints and completion from COMMAND
 * DOCS; cluster-aware clients find a command's key with COMMAND INFO or
 * GETKEYS; client libraries count and list commands.
 *
 * Nothing here is written by hand per command: flags, categories and key
 * positions derive from OPF_*, the group from the opcode range, and the
 * argument tree of COMMAND DOCS from the syntax column, parsed by
 * syntax_parse below ("uid type [delta]", "gid msgid READ|UNREAD [offset
 * count]", "[protover [AUTH username password] [SETNAME name]]").
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "acl.h"
#include "cmds.h"

/* ---- the syntax column as an argument tree ----------------------------- */

enum arg_type { A_STRING, A_INTEGER, A_KEY, A_TOKEN, A_ONEOF, A_BLOCK };

static const char *const arg_type_names[] = {"string",     "integer", "key",
                                             "pure-token", "oneof",   "block"};

#define SYN_NODES 96
#define SYN_KIDS 24

struct syn_node {
    enum arg_type type;
    const char *word; /* name or token, not terminated */
    size_t len;
    const char *src; /* the node's text in the syntax column */
    size_t src_len;
    bool optional, multiple;
    uint8_t nkids;
    uint8_t kids[SYN_KIDS];
};

struct syn {
    struct syn_node n[SYN_NODES];
    unsigned count;
    const char *p; /* parse position */
    bool bad;
    bool key_given; /* the op's key argument was typed already */
    bool has_key;
};

/* Argument names that are integers (ids, counts, times). */
static bool int_name(const char *w, size_t len)
{
    static const char *const names[] = {
        "uid",     "gid",    "cid",      "ch",     "dot",    "author",
        "msgid",   "seq",    "ts",       "delta",  "value",  "count",
        "offset",  "n",      "timeout",  "index",  "cursor", "id",
        "seconds", "maxage", "protover", "sender", "mapid"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strlen(names[i]) == len && memcmp(names[i], w, len) == 0)
            return true;
    return false;
}

static bool is_token(const char *w, size_t len)
{
    bool letter = false;

    for (size_t i = 0; i < len; i++) {
        if (islower((unsigned char)w[i]))
            return false;
        letter |= isupper((unsigned char)w[i]) != 0;
    }
    return letter || (len > 0 && isdigit((unsigned char)w[0]));
}

static int syn_new(struct syn *s, enum arg_type t, const char *w, size_t len)
{
    if (s->count == SYN_NODES) {
        s->bad = true;
        return 0;
    }
    s->n[s->count] = (struct syn_node){t, w, len, w, len, false, false, 0, {0}};
    return (int)s->count++;
}

static void syn_add(struct syn *s, int parent, int kid)
{
    struct syn_node *p = &s->n[parent];

    if (p->nkids == SYN_KIDS) {
        s->bad = true;
        return;
    }
    p->kids[p->nkids++] = (uint8_t)kid;
}

static void skip_blank(struct syn *s)
{
    while (*s->p == ' ')
        s->p++;
}

static int parse_alt(struct syn *s, char close);

/* One item: a word or a bracketed group, and a following "...". */
static int parse_item(struct syn *s)
{
    const char *start;
    int item;

    skip_blank(s);
    start = s->p;
    if (*s->p == '[') {
        s->p++;
        item = parse_alt(s, ']');
        if (*s->p == ']')
            s->p++;
        else
            s->bad = true;
        s->n[item].optional = true;
    } else {
        const char *w = s->p;
        size_t len = strcspn(w, " []|");
        enum arg_type t;

        if (len == 0) {
            s->bad = true;
            s->p += *s->p != '\0';
            return syn_new(s, A_STRING, "arg", 3);
        }
        s->p += len;
        if (len == 3 && memcmp(w, "...", 3) == 0) {
            s->bad = true;
            return syn_new(s, A_STRING, "arg", 3);
        }
        if (is_token(w, len))
            t = A_TOKEN;
        else if (s->has_key && !s->key_given)
            t = A_KEY;
        else
            t = int_name(w, len) ? A_INTEGER : A_STRING;
        if (t != A_TOKEN)
            s->key_given = true;
        item = syn_new(s, t, w, len);
    }
    skip_blank(s);
    if (strncmp(s->p, "...", 3) == 0) {
        s->p += 3;
        s->n[item].multiple = true;
    }
    s->n[item].src = start;
    s->n[item].src_len = (size_t)(s->p - start);
    while (s->n[item].src_len > 0 && start[s->n[item].src_len - 1] == ' ')
        s->n[item].src_len--;
    return item;
}

/* The span of text from node a's start to node b's end. */
static void span(struct syn *s, int node, int a, int b)
{
    s->n[node].src = s->n[a].src;
    s->n[node].src_len = (size_t)(s->n[b].src + s->n[b].src_len - s->n[a].src);
}

/* A sequence of items up to '|', close or the end: one item stands for
 * itself, more make a block. */
static int parse_seq(struct syn *s, char close)
{
    int items[SYN_KIDS], n = 0, block;

    for (;;) {
        skip_blank(s);
        if (*s->p == '\0' || *s->p == '|' || *s->p == close || s->bad)
            break;
        if (n == SYN_KIDS) {
            s->bad = true;
            break;
        }
        items[n++] = parse_item(s);
    }
    if (n == 1)
        return items[0];
    block = syn_new(s, A_BLOCK, "", 0);
    for (int i = 0; i < n; i++)
        syn_add(s, block, items[i]);
    if (n > 0)
        span(s, block, items[0], items[n - 1]);
    return block;
}

static int parse_alt(struct syn *s, char close)
{
    int first = parse_seq(s, close), alt;

    skip_blank(s);
    if (*s->p != '|')
        return first;
    alt = syn_new(s, A_ONEOF, "", 0);
    syn_add(s, alt, first);
    int last = first;
    while (*s->p == '|' && !s->bad) {
        s->p++;
        last = parse_seq(s, close);
        syn_add(s, alt, last);
        skip_blank(s);
    }
    span(s, alt, first, last);
    return alt;
}

/* The op's key arguments (ops.h ur_op_key_first): positions count the
 * command name as 0, as Redis's do; last -1: to the end. */
static bool op_has_key(const struct ur_op *op)
{
    return ur_op_key_first(op) != 0;
}

static int64_t op_first_key(const struct ur_op *op)
{
    return ur_op_key_first(op);
}

static int64_t op_last_key(const struct ur_op *op)
{
    return ur_op_key_last(op);
}

/* Parses op's syntax into s; the root (a block of the top-level items,
 * or a oneof) is node 0's... returned. -1 when there are no arguments. */
static int syntax_parse(struct syn *s, const struct ur_op *op)
{
    int root;

    memset(s, 0, sizeof(*s));
    s->p = op->syntax;
    s->has_key = op_has_key(op);
    skip_blank(s);
    if (*s->p == '\0')
        return -1;
    root = parse_alt(s, '\0');
    return s->bad ? -2 : root;
}

/* A node's name: its word, or for groups the words of its children
 * joined by '-' (Redis names every argument). */
static void node_name(const struct syn *s, int i, char *buf, size_t cap)
{
    const struct syn_node *n = &s->n[i];
    size_t k = 0;

    buf[0] = '\0';
    if (n->type != A_ONEOF && n->type != A_BLOCK) {
        snprintf(buf, cap, "%.*s", (int)n->len, n->word);
        for (k = 0; buf[k] != '\0'; k++)
            buf[k] = (char)tolower((unsigned char)buf[k]);
        return;
    }
    for (unsigned c = 0; c < n->nkids && k + 2 < cap; c++) {
        char sub[64];

        node_name(s, n->kids[c], sub, sizeof(sub));
        k += (size_t)snprintf(buf + k, cap - k, "%s%s", c ? "-" : "", sub);
        if (k >= cap)
            k = cap - 1;
    }
}

/*
 * Arguments nest at most ARG_LEVELS deep: a deeper one (or any flag at
 * that level) is described by its syntax text as one string argument,
 * which redis-cli's help shows the same. COMMAND DOCS then stays within 8
 * levels of arrays, what the binary protocol (UR_MAX_DEPTH) and common
 * RESP readers (hiredis before 1.0: 7 levels below the top) accept.
 */
#define ARG_LEVELS 2

static void reply_arg(struct reply *r, const struct syn *s, int i,
                      unsigned level)
{
    const struct syn_node *n = &s->n[i];
    uint32_t pairs = 2;
    char name[128];
    unsigned nflags = (unsigned)n->optional + (unsigned)n->multiple;

    if (level >= ARG_LEVELS && (n->nkids > 0 || nflags > 0)) {
        reply_map(r, 2);
        reply_cstr(r, "name");
        reply_str(r, n->src, n->src_len);
        reply_cstr(r, "type");
        reply_cstr(r, "string");
        return;
    }
    node_name(s, i, name, sizeof(name));
    pairs += n->type == A_TOKEN;
    pairs += n->type == A_KEY;
    pairs += nflags > 0;
    pairs += n->type == A_ONEOF || n->type == A_BLOCK;
    reply_map(r, pairs);
    reply_cstr(r, "name");
    reply_cstr(r, name);
    reply_cstr(r, "type");
    reply_cstr(r, arg_type_names[n->type]);
    if (n->type == A_KEY) {
        reply_cstr(r, "key_spec_index");
        reply_int(r, 0);
    }
    if (n->type == A_TOKEN) {
        reply_cstr(r, "token");
        reply_str(r, n->word, n->len);
    }
    if (nflags > 0) {
        reply_cstr(r, "flags");
        reply_set(r, nflags);
        if (n->optional)
            reply_status(r, "optional");
        if (n->multiple)
            reply_status(r, "multiple");
    }
    if (n->type == A_ONEOF || n->type == A_BLOCK) {
        reply_cstr(r, "arguments");
        reply_arr(r, n->nkids);
        for (unsigned c = 0; c < n->nkids; c++)
            reply_arg(r, s, n->kids[c], level + 1);
    }
}

/* COMMAND DOCS's arguments: the top-level items (a root block's
 * children, or the root alone). */
static void reply_args(struct reply *r, const struct ur_op *op)
{
    struct syn s;
    int root = syntax_parse(&s, op);

    if (root < 0) {
        reply_arr(r, 0);
        return;
    }
    if (s.n[root].type == A_BLOCK && !s.n[root].optional &&
        !s.n[root].multiple) {
        reply_arr(r, s.n[root].nkids);
        for (unsigned c = 0; c < s.n[root].nkids; c++)
            reply_arg(r, &s, s.n[root].kids[c], 0);
        return;
    }
    reply_arr(r, 1);
    reply_arg(r, &s, root, 0);
}

/* ---- flags, categories, groups ----------------------------------------- */

static const char *op_group(const struct ur_op *op)
{
    unsigned fam = db_family_of_opcode(op->code);

    if (fam < FAM_COUNT)
        return db_families[fam].name;
    switch (op->code >> 8) {
    case 0x08:
        return "user";
    case 0x0F:
        return "server";
    default:
        break;
    }
    if (op->code >= UR_OP_SUBSCRIBE && op->code <= UR_OP_PUBSUB)
        return "pubsub";
    switch (op->code) {
    case UR_OP_PING:
    case UR_OP_HELLO:
    case UR_OP_RESET:
    case UR_OP_QUIT:
    case UR_OP_ECHO:
    case UR_OP_AUTH:
    case UR_OP_CLIENT:
    case UR_OP_SELECT:
        return "connection";
    case UR_OP_MULTI:
    case UR_OP_EXEC:
    case UR_OP_DISCARD:
        return "transactions";
    default:
        return "server";
    }
}

static void lower(char *dst, size_t cap, const char *s)
{
    size_t k = 0;

    for (; s[k] != '\0' && k + 1 < cap; k++)
        dst[k] = (char)tolower((unsigned char)s[k]);
    dst[k] = '\0';
}

/* Redis's arity: the argument count with the name, negative when it is a
 * minimum. */
static int64_t op_arity(const struct ur_op *op)
{
    int64_t n = (int64_t)op->min_args + 1;

    return op->max_args == op->min_args ? n : -n;
}

#define MAX_WORDS 16

static unsigned op_flags(const struct ur_op *op, const char **out)
{
    unsigned n = 0;

    if (op->flags & OPF_WRITE)
        out[n++] = "write";
    if (op->flags & OPF_READ)
        out[n++] = "readonly";
    if ((op->flags & (OPF_WRITE | OPF_FREES)) == OPF_WRITE)
        out[n++] = "denyoom";
    if (op->flags & OPF_ADMIN)
        out[n++] = "admin";
    if (op->flags & OPF_NOAUTH)
        out[n++] = "no_auth";
    if (op->flags & OPF_FAST)
        out[n++] = "fast";
    if (op->flags & OPF_NOBATCH)
        out[n++] = "no_multi";
    if (strcmp(op_group(op), "pubsub") == 0)
        out[n++] = "pubsub";
    if (op->code == UR_OP_PING || op->code == UR_OP_INFO ||
        op->code == UR_OP_HELLO || op->code == UR_OP_AUTH)
        out[n++] = "loading";
    return n;
}

/* The ACL categories (acl.h), derived from the op table in one place:
 * what COMMAND INFO shows is what +@category grants. */
static unsigned op_categories(const struct ur_op *op, const char **out)
{
    return acl_op_categories(op, out);
}

static void reply_words(struct reply *r, const char **w, unsigned n)
{
    reply_set(r, n);
    for (unsigned i = 0; i < n; i++)
        reply_status(r, w[i]);
}

/* COMMAND INFO's key specs: one, at argument 1, for keyed ops. */
static void reply_key_specs(struct reply *r, const struct ur_op *op)
{
    if (!op_has_key(op)) {
        reply_arr(r, 0);
        return;
    }
    reply_arr(r, 1);
    reply_map(r, 3);
    reply_cstr(r, "flags");
    reply_set(r, 2);
    reply_status(r, op->flags & OPF_WRITE ? "RW" : "RO");
    reply_status(r, op->flags & OPF_WRITE ? "update" : "access");
    reply_cstr(r, "begin_search");
    reply_map(r, 2);
    reply_cstr(r, "type");
    reply_cstr(r, "index");
    reply_cstr(r, "spec");
    reply_map(r, 1);
    reply_cstr(r, "index");
    reply_i64(r, op_first_key(op));
    reply_cstr(r, "find_keys");
    reply_map(r, 2);
    reply_cstr(r, "type");
    reply_cstr(r, "range");
    reply_cstr(r, "spec");
    reply_map(r, 3);
    reply_cstr(r, "lastkey");
    reply_i64(r, op->flags & OPF_UIDS ? -1 : 0);
    reply_cstr(r, "keystep");
    reply_int(r, 1);
    reply_cstr(r, "limit");
    reply_int(r, 0);
}

static void reply_info(struct reply *r, const struct ur_op *op)
{
    const char *w[MAX_WORDS];
    char name[64];
    bool key = op_has_key(op);

    lower(name, sizeof(name), op->name);
    reply_arr(r, 10);
    reply_cstr(r, name);
    reply_i64(r, op_arity(op));
    reply_words(r, w, op_flags(op, w));
    reply_i64(r, op_first_key(op));
    reply_i64(r, op_last_key(op));
    reply_int(r, key ? 1 : 0);
    reply_words(r, w, op_categories(op, w));
    reply_set(r, 0);
    reply_key_specs(r, op);
    reply_arr(r, 0);
}

static void reply_docs(struct reply *r, const struct ur_op *op)
{
    reply_map(r, 5);
    reply_cstr(r, "summary");
    reply_cstr(r, op->summary);
    reply_cstr(r, "since");
    reply_cstr(r, "0.1.0");
    reply_cstr(r, "group");
    reply_cstr(r, op_group(op));
    reply_cstr(r, "complexity");
    reply_cstr(r, op->cost);
    reply_cstr(r, "arguments");
    reply_args(r, op);
}

/* The op argument i names, or NULL (then an unknown name). */
static const struct ur_op *arg_op(const struct exec_ctx *x, uint32_t i)
{
    const struct ur_arg *a = &x->argv[i];

    return a->kind == UR_ARG_STR ? ur_op_by_name(a->str, a->len) : NULL;
}

/* Glob match, case-insensitive, * and ? (COMMAND LIST FILTERBY PATTERN). */
static bool glob(const char *p, size_t plen, const char *s)
{
    if (plen == 0)
        return *s == '\0';
    if (*p == '*')
        return glob(p + 1, plen - 1, s) || (*s != '\0' && glob(p, plen, s + 1));
    if (*s == '\0')
        return false;
    if (*p != '?' && tolower((unsigned char)*p) != tolower((unsigned char)*s))
        return false;
    return glob(p + 1, plen - 1, s + 1);
}

static void command_list(struct exec_ctx *x)
{
    const char *pat = "*";
    size_t plen = 1;
    uint32_t n = 0;
    size_t mark;

    if (x->argc == 4 && arg_is(x, 1, "FILTERBY") && arg_is(x, 2, "PATTERN") &&
        x->argv[3].kind == UR_ARG_STR) {
        pat = x->argv[3].str;
        plen = x->argv[3].len;
        if (plen > 64) {
            reply_err(x->r, UR_E_BADARG, "pattern too long");
            return;
        }
    } else if (x->argc != 1) {
        reply_err(x->r, UR_E_BADARG,
                  "syntax error: COMMAND LIST [FILTERBY PATTERN pattern]");
        return;
    }
    mark = reply_arr_defer(x->r);
    for (unsigned i = 0; i < UR_OP_COUNT; i++) {
        char name[64];

        lower(name, sizeof(name), ur_ops[i].name);
        if (!glob(pat, plen, name))
            continue;
        reply_cstr(x->r, name);
        n++;
    }
    reply_arr_finish(x->r, mark, n);
}

void cmd_COMMAND(struct exec_ctx *x)
{
    char text[65];

    if (x->argc == 0 || (arg_is(x, 0, "INFO") && x->argc == 1)) {
        reply_arr(x->r, UR_OP_COUNT);
        for (unsigned i = 0; i < UR_OP_COUNT; i++)
            reply_info(x->r, &ur_ops[i]);
    } else if (arg_is(x, 0, "INFO")) {
        reply_arr(x->r, x->argc - 1);
        for (uint32_t i = 1; i < x->argc; i++) {
            const struct ur_op *op = arg_op(x, i);
            if (op == NULL)
                reply_nil(x->r);
            else
                reply_info(x->r, op);
        }
    } else if (arg_is(x, 0, "COUNT") && x->argc == 1) {
        reply_int(x->r, UR_OP_COUNT);
    } else if (arg_is(x, 0, "LIST")) {
        command_list(x);
    } else if (arg_is(x, 0, "DOCS")) {
        uint32_t n = 0;
        size_t mark = reply_arr_defer(x->r);

        for (uint32_t i = 0; i < (x->argc == 1 ? UR_OP_COUNT : x->argc - 1);
             i++) {
            const struct ur_op *op =
                x->argc == 1 ? &ur_ops[i] : arg_op(x, i + 1);
            char name[64];

            if (op == NULL)
                continue; /* Redis leaves unknown names out */
            lower(name, sizeof(name), op->name);
            reply_cstr(x->r, name);
            reply_docs(x->r, op);
            n++;
        }
        reply_map_finish(x->r, mark, n);
    } else if (arg_is(x, 0, "GETKEYS") && x->argc >= 2) {
        const struct ur_op *op = arg_op(x, 1);

        if (op == NULL) {
            reply_err(x->r, UR_E_BADARG, "Invalid command specified");
        } else if (!exec_arity_ok(op, x->argc - 2)) {
            reply_err(x->r, UR_E_BADARG,
                      "Invalid number of arguments specified for command");
        } else if (!op_has_key(op)) {
            reply_err(x->r, UR_E_BADARG, "The command has no key arguments");
        } else {
            uint32_t from = (uint32_t)op_first_key(op) + 1; /* in argv */
            uint32_t to = op->flags & OPF_UIDS ? x->argc : from + 1;

            reply_arr(x->r, to - from);
            for (uint32_t i = from; i < to; i++) {
                if (x->argv[i].kind == UR_ARG_STR)
                    reply_str(x->r, x->argv[i].str, x->argv[i].len);
                else
                    reply_int(x->r, x->argv[i].num);
            }
        }
    } else if (arg_is(x, 0, "HELP") && x->argc == 1) {
        static const char *const help[] = {
            "COMMAND <subcommand> [<arg> ...]. Subcommands are:",
            "(no subcommand)",
            "    Every command's details.",
            "COUNT",
            "    The number of commands.",
            "DOCS [command ...]",
            "    Documentation of commands.",
            "GETKEYS command [arg ...]",
            "    The key arguments of a command.",
            "INFO [command ...]",
            "    Details of commands.",
            "LIST [FILTERBY PATTERN pattern]",
            "    Command names."};
        reply_arr(x->r, sizeof(help) / sizeof(help[0]));
        for (size_t i = 0; i < sizeof(help) / sizeof(help[0]); i++)
            reply_status(x->r, help[i]);
    } else {
        reply_err(x->r, UR_E_BADARG,
                  "unknown subcommand or wrong number of arguments for "
                  "'%s'. Try COMMAND HELP.",
                  arg_text(x, 0, text, sizeof(text)));
    }
}
