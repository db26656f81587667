/*
 * unread-cli.c - the console of unreadd, over the binary protocol through
 * libunread.
 *
 *   unread-cli [-h host] [-p port | --cluster host:port,... |
 *              --sentinel host:port,... [--master name,...] [--replica]]
 *              [-t ms] [--user name] [-a password] [--default N]
 *              [--raw|--no-raw]
 *              [--tls [--cacert file] [--cacertdir dir] [--cert file]
 *               [--key file] [--sni name] [--insecure]] [CMD [ARG ...]]
 *
 * With a command: runs it once; exit status 0, 1 on an error reply or a
 * connection failure, or 2 when --default answered a read with the default
 * because its server could not be reached (degraded). Without: a prompt
 * reading one command per line from stdin. --cluster routes each command
 * to its shard as libunread does (docs/CLIENT.md); --sentinel asks those
 * sentinels where each master named by --master (default mymaster) is,
 * again after a failover, or for one of its replicas with --replica; --default
 * turns on degraded mode. Arguments that are canonical decimals go as integers,
 * the rest as byte strings, which the server resolves (counter type names such
 * as "mention"). Replies print as redis-cli prints them: the human form on a
 * terminal (or --no-raw), the raw form otherwise (or --raw), so scripts
 * that parse redis-cli output can parse this one. --tls and its options
 * are redis-cli's: the connection is TLS, the server's certificate checked
 * against --cacert/--cacertdir (the system's store without them) and its
 * name (--sni, else -h), not checked at all with --insecure.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <editline/readline.h>

#include "ops.h"
#include "proto.h"
#include "unread.h"

#define CLI_CONNECT_TIMEOUT_MS 5000

struct cli {
    const char *host;
    uint16_t port;
    const char *cluster;  /* --cluster list, or NULL */
    bool cmode;           /* -c: a cluster-mode deployment's seeds */
    const char *sentinel; /* --sentinel list, or NULL */
    const char *master;   /* --master names */
    bool replica;         /* --replica */
    const char *auth;     /* -a password, or NULL */
    const char *user;     /* --user name (an ACL user), or NULL */
    bool degraded;        /* --default given */
    uint64_t dflt;        /* its value */
    int timeout_ms;       /* per command; 0: none */
    bool tty;             /* human form, else raw */
    bool tls;             /* --tls */
    bool insecure;        /* --insecure */
    const char *cacert;   /* --cacert, --cacertdir, --cert, --key, --sni */
    const char *cacertdir;
    const char *cert;
    const char *key;
    const char *sni;
    struct unread *conn; /* NULL until connected */
};

/* ---- Reply printing (redis-cli's two forms) --------------------------- */

/* A bulk string in the human form: quoted, escaped like redis-cli's
 * sdscatrepr, so binary bytes and newlines stay visible. */
static void print_quoted(const char *s, size_t n)
{
    size_t i;
    unsigned char ch;

    putchar('"');
    for (i = 0; i < n; i++) {
        ch = (unsigned char)s[i];
        switch (ch) {
        case '\\':
        case '"':
            putchar('\\');
            putchar(ch);
            break;
        case '\n':
            fputs("\\n", stdout);
            break;
        case '\r':
            fputs("\\r", stdout);
            break;
        case '\t':
            fputs("\\t", stdout);
            break;
        case '\a':
            fputs("\\a", stdout);
            break;
        case '\b':
            fputs("\\b", stdout);
            break;
        default:
            if (ch >= 0x20 && ch < 0x7F)
                putchar(ch);
            else
                printf("\\x%02x", ch);
        }
    }
    putchar('"');
}

/*
 * The human form. Array elements are numbered with the width of the
 * largest index; a nested array's first element continues its parent's
 * line and the rest are indented under it (redis-cli cliFormatReplyTTY).
 */
static void print_tty(const struct unread_reply *r, const char *prefix)
{
    char sub[256];
    size_t i, width, plen;

    switch (r->kind) {
    case UNREAD_REPLY_INT:
        printf("(integer) %llu\n", (unsigned long long)r->integer);
        break;
    case UNREAD_REPLY_SINT:
        printf("(integer) %lld\n", (long long)(int64_t)r->integer);
        break;
    case UNREAD_REPLY_STR:
        print_quoted(r->str, r->len);
        putchar('\n');
        break;
    case UNREAD_REPLY_STATUS:
        fwrite(r->str, 1, r->len, stdout);
        putchar('\n');
        break;
    case UNREAD_REPLY_ERROR:
        printf("(error) %s\n", r->str);
        break;
    case UNREAD_REPLY_NIL:
        puts("(nil)");
        break;
    case UNREAD_REPLY_ARRAY:
        if (r->n == 0) {
            puts("(empty array)");
            break;
        }
        width = 1;
        for (i = r->n; i >= 10; i /= 10)
            width++;
        /* Depth is at most UR_MAX_DEPTH and width at most 10 digits, so
         * the prefix always fits. */
        plen = strlen(prefix);
        memcpy(sub, prefix, plen);
        memset(sub + plen, ' ', width + 2);
        sub[plen + width + 2] = '\0';
        for (i = 0; i < r->n; i++) {
            printf("%s%*zu) ", i == 0 ? "" : prefix, (int)width, i + 1);
            print_tty(&r->elem[i], sub);
        }
        break;
    default:
        printf("(unknown reply kind %d)\n", r->kind);
    }
}

/* The raw form, without the final newline: values as they are, array
 * elements on their own lines, nil as nothing (redis-cli
 * cliFormatReplyRaw). */
static void print_raw(const struct unread_reply *r)
{
    size_t i;

    switch (r->kind) {
    case UNREAD_REPLY_INT:
        printf("%llu", (unsigned long long)r->integer);
        break;
    case UNREAD_REPLY_SINT:
        printf("%lld", (long long)(int64_t)r->integer);
        break;
    case UNREAD_REPLY_STR:
    case UNREAD_REPLY_STATUS:
    case UNREAD_REPLY_ERROR:
        fwrite(r->str, 1, r->len, stdout);
        break;
    case UNREAD_REPLY_ARRAY:
        for (i = 0; i < r->n; i++) {
            if (i > 0)
                putchar('\n');
            print_raw(&r->elem[i]);
        }
        break;
    default:
        break;
    }
}

/*
 * Prints one reply. Text made to be read as a page (INFO's bulk string,
 * HELP's lines) prints raw even on a terminal, as redis-cli does for INFO:
 * quoting it would show "\n" instead of line breaks.
 */
static void print_reply(const struct cli *cli, const struct unread_reply *r,
                        bool page)
{
    if (cli->tty && !(page && r->kind != UNREAD_REPLY_ERROR)) {
        print_tty(r, "");
    } else {
        print_raw(r);
        putchar('\n');
    }
    fflush(stdout);
}

/* ---- Commands ---------------------------------------------------------- */

/* A cluster, or one server in degraded mode: the options handle. */
static struct unread *cli_open(const struct cli *cli, char *err, size_t errlen)
{
    struct unread_opts *o = unread_opts_new();
    struct unread *c;
    char one[300];

    if (o == NULL || unread_opts_set_password(o, cli->auth) != 0 ||
        unread_opts_set_user(o, cli->user) != 0) {
        unread_opts_free(o);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    unread_opts_set_timeouts(o, CLI_CONNECT_TIMEOUT_MS, cli->timeout_ms,
                             cli->timeout_ms);
    unread_opts_set_degraded(o, cli->degraded, cli->dflt);
    if (cli->cmode)
        (void)unread_opts_set_cluster(o, true);
    if (cli->tls &&
        (unread_opts_set_tls(o, true) != 0 ||
         unread_opts_set_tls_ca(o, cli->cacert, cli->cacertdir) != 0 ||
         unread_opts_set_tls_cert(o, cli->cert, cli->key) != 0 ||
         unread_opts_set_tls_server_name(o, cli->sni) != 0 ||
         unread_opts_set_tls_verify(o, !cli->insecure) != 0)) {
        unread_opts_free(o);
        snprintf(err, errlen, "bad --tls options (--key needs --cert)");
        return NULL;
    }
    if (cli->sentinel != NULL &&
        unread_opts_set_sentinels(o, cli->sentinel, cli->replica) != 0) {
        unread_opts_free(o);
        snprintf(err, errlen, "bad --sentinel list");
        return NULL;
    }
    if (cli->sentinel != NULL) {
        c = unread_connect_cluster(cli->master, o, err, errlen);
        unread_opts_free(o);
        return c;
    }
    snprintf(one, sizeof(one),
             strchr(cli->host, ':') != NULL ? "[%.255s]:%u" : "%.255s:%u",
             cli->host, (unsigned)cli->port);
    c = unread_connect_cluster(cli->cluster != NULL ? cli->cluster : one, o,
                               err, errlen);
    unread_opts_free(o);
    return c;
}

static bool cli_connect(struct cli *cli)
{
    char err[512];

    if (cli->conn != NULL)
        return true;
    if (cli->cluster != NULL || cli->sentinel != NULL || cli->degraded ||
        cli->auth != NULL || cli->cmode || cli->tls)
        cli->conn = cli_open(cli, err, sizeof(err));
    else
        cli->conn = unread_connect(cli->host, cli->port, CLI_CONNECT_TIMEOUT_MS,
                                   err, sizeof(err));
    if (cli->conn == NULL) {
        fprintf(stderr, "Could not connect to unreadd: %s\n", err);
        return false;
    }
    unread_set_timeout(cli->conn, cli->timeout_ms);
    return true;
}

/* The default a degraded read got, marked as such: inline on a terminal,
 * on stderr in the raw form so scripts still read one value. */
static void print_degraded(const struct cli *cli, const struct unread_reply *r)
{
    if (cli->tty) {
        printf("(integer) %llu (degraded: %s)\n",
               (unsigned long long)r->integer, unread_errstr(cli->conn));
    } else {
        printf("%llu\n", (unsigned long long)r->integer);
        fprintf(stderr, "degraded: %s\n", unread_errstr(cli->conn));
    }
    fflush(stdout);
}

/* ---- SUBSCRIBE and PSUBSCRIBE: messages as they arrive ---------------- */

/* An array of strings and, last, an integer, printed as a reply. */
static void print_event(const struct cli *cli, const char *const *s,
                        const size_t *len, size_t n, const uint64_t *count)
{
    struct unread_reply e[5], r;
    size_t i;

    memset(e, 0, sizeof(e));
    for (i = 0; i < n; i++) {
        e[i].kind = UNREAD_REPLY_STR;
        e[i].str = (char *)s[i];
        e[i].len = len[i];
    }
    if (count != NULL) {
        e[n].kind = UNREAD_REPLY_INT;
        e[n++].integer = *count;
    }
    memset(&r, 0, sizeof(r));
    r.kind = UNREAD_REPLY_ARRAY;
    r.n = n;
    r.elem = e;
    print_reply(cli, &r, false);
}

static void cli_message(struct unread *c, const struct unread_message *m,
                        void *priv)
{
    const char *s[4];
    size_t len[4], n = 0;

    (void)c;
    s[n] = m->pattern != NULL ? "pmessage" : "message";
    len[n] = strlen(s[n]);
    n++;
    if (m->pattern != NULL) {
        s[n] = m->pattern;
        len[n++] = m->pattern_len;
    }
    s[n] = m->channel;
    len[n++] = m->channel_len;
    s[n] = m->payload;
    len[n++] = m->payload_len;
    print_event(priv, s, len, n, NULL);
}

/*
 * SUBSCRIBE / PSUBSCRIBE as redis-cli runs them: each subscription's
 * confirmation, then every message as it arrives, until the process is
 * interrupted (Ctrl-C). Through libunread's subscriptions, so a cluster
 * subscribes each channel on its shard. Returns 1 when it cannot go on.
 */
static int cli_subscribe(struct cli *cli, bool pattern, size_t argc,
                         char *const *argv, const size_t *lens)
{
    const char *s[2];
    size_t len[2], i;
    uint64_t count;
    int rc;

    if (argc < 2) {
        fprintf(stderr, "(error) ERR wrong number of arguments for '%s'\n",
                argv[0]);
        return 1;
    }
    if (!cli_connect(cli))
        return 1;
    if (cli->tty)
        printf("Reading messages... (press Ctrl-C to quit)\n");
    for (i = 1; i < argc; i++) {
        if (memchr(argv[i], '\0', lens[i]) != NULL) {
            fprintf(stderr, "(error) a name with a NUL byte\n");
            return 1;
        }
        rc = pattern ? unread_psubscribe(cli->conn, argv[i], cli_message, cli)
                     : unread_subscribe(cli->conn, argv[i], cli_message, cli);
        if (rc != 0) {
            fprintf(stderr, "(error) %s\n", unread_errstr(cli->conn));
            return 1;
        }
        s[0] = pattern ? "psubscribe" : "subscribe";
        len[0] = strlen(s[0]);
        s[1] = argv[i];
        len[1] = lens[i];
        count = unread_subscriptions(cli->conn);
        print_event(cli, s, len, 2, &count);
    }
    for (;;) {
        rc = unread_listen(cli->conn, -1);
        if (rc < 0) {
            fprintf(stderr, "Error: %s\n", unread_errstr(cli->conn));
            return 1;
        }
    }
}

/*
 * Runs one command given as argc words (word 0 the name; words may hold
 * any bytes). Returns 0; 1 on an error reply, an unknown command or a
 * connection failure; 2 when degraded mode answered with the default.
 */
static int cli_run(struct cli *cli, size_t argc, char *const *argv,
                   const size_t *lens)
{
    const struct ur_op *op;
    struct unread_arg *args = NULL;
    struct unread_reply *r = NULL;
    struct unread_reply local;
    char msg[300];
    size_t i;
    uint64_t v;
    int rc, status = 1;

    op = ur_op_by_name(argv[0], lens[0]);
    if (op == NULL) {
        /* No round trip: the binary protocol needs an opcode. */
        memset(&local, 0, sizeof(local));
        local.kind = UNREAD_REPLY_ERROR;
        local.code = UNREAD_ERR_UNKNOWN;
        local.len =
            (size_t)snprintf(msg, sizeof(msg), "ERR unknown command '%.*s'",
                             lens[0] > 256 ? 256 : (int)lens[0], argv[0]);
        local.str = msg;
        print_reply(cli, &local, false);
        return 1;
    }
    if (argc - 1 > UINT16_MAX) {
        fprintf(stderr, "(error) ERR too many arguments\n");
        return 1;
    }
    if (op->code == UR_OP_SUBSCRIBE || op->code == UR_OP_PSUBSCRIBE)
        return cli_subscribe(cli, op->code == UR_OP_PSUBSCRIBE, argc, argv,
                             lens);
    args = calloc(argc, sizeof(*args));
    if (args == NULL) {
        fprintf(stderr, "unread-cli: out of memory\n");
        return 1;
    }
    for (i = 1; i < argc; i++) {
        if (ur_parse_u64(argv[i], lens[i], &v))
            args[i - 1] = unread_arg_int(v);
        else
            args[i - 1] = unread_arg_str(argv[i], lens[i]);
    }
    if (!cli_connect(cli))
        goto done;
    rc = unread_command(cli->conn, NULL, op->code, (unsigned)(argc - 1), args,
                        &r);
    if (rc < 0) {
        fprintf(stderr, "Error: %s\n", unread_errstr(cli->conn));
        goto done;
    }
    if (unread_redirected(cli->conn) != NULL) {
        /* as redis-cli -c says it, before the reply */
        printf("-> Redirected to %s\n", unread_redirected(cli->conn));
    }
    if (rc == UNREAD_DEGRADED) {
        print_degraded(cli, r);
        status = 2;
        goto done;
    }
    print_reply(cli, r, op->code == UR_OP_INFO || op->code == UR_OP_HELP);
    status = rc == 0 ? 0 : 1;

done:
    unread_reply_free(r);
    free(args);
    return status;
}

/* ---- Interactive mode -------------------------------------------------- */

/* One line of any length from f, without its newline; NULL at EOF. The
 * buffer is reused across calls. */
static char *read_line(FILE *f, char **buf, size_t *cap)
{
    size_t len = 0, n;
    char *p;

    if (*buf == NULL) {
        *cap = 1024;
        *buf = malloc(*cap);
        if (*buf == NULL)
            return NULL;
    }
    for (;;) {
        if (fgets(*buf + len, (int)(*cap - len), f) == NULL)
            return len > 0 ? *buf : NULL;
        n = strlen(*buf + len);
        len += n;
        if (len > 0 && (*buf)[len - 1] == '\n') {
            (*buf)[--len] = '\0';
            if (len > 0 && (*buf)[len - 1] == '\r')
                (*buf)[--len] = '\0';
            return *buf;
        }
        if (len + 1 < *cap)
            continue; /* a last line without a newline */
        p = realloc(*buf, *cap * 2);
        if (p == NULL)
            return NULL;
        *buf = p;
        *cap *= 2;
    }
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

static bool is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' ||
           ch == '\f';
}

/*
 * Splits a line into words like redis-cli (sdssplitargs): blanks separate
 * words; "double quotes" group and understand \" \\ \n \r \t \a \b \xHH;
 * 'single quotes' group and understand \' only. A closing quote must end
 * the word. Words are decoded into out (at least strlen(line) + 1 bytes:
 * a word never grows and each but the last is followed by a separator
 * that pays for its NUL). Returns the word count, or -1 on unbalanced
 * quotes. words/lens must hold max words.
 */
static long split_line(const char *line, char *out, char **words, size_t *lens,
                       size_t max)
{
    const char *p = line;
    char *w = out, q;
    size_t n = 0;
    int hi, lo;

    for (;;) {
        while (is_space(*p))
            p++;
        if (*p == '\0')
            return (long)n;
        if (n == max)
            return -1;
        words[n] = w;
        if (*p == '"' || *p == '\'') {
            q = *p++;
            for (;;) {
                if (*p == '\0')
                    return -1;
                if (*p == q) {
                    p++;
                    break;
                }
                if (*p == '\\' && q == '\'' && p[1] == '\'') {
                    *w++ = '\'';
                    p += 2;
                } else if (*p == '\\' && q == '"' && p[1] != '\0') {
                    p++;
                    switch (*p) {
                    case 'n':
                        *w++ = '\n';
                        break;
                    case 'r':
                        *w++ = '\r';
                        break;
                    case 't':
                        *w++ = '\t';
                        break;
                    case 'a':
                        *w++ = '\a';
                        break;
                    case 'b':
                        *w++ = '\b';
                        break;
                    case 'x':
                        hi = hexval(p[1]);
                        lo = hi >= 0 ? hexval(p[2]) : -1;
                        if (lo >= 0) {
                            *w++ = (char)(hi * 16 + lo);
                            p += 2;
                        } else {
                            *w++ = 'x';
                        }
                        break;
                    default:
                        *w++ = *p;
                    }
                    p++;
                } else {
                    *w++ = *p++;
                }
            }
            if (*p != '\0' && !is_space(*p))
                return -1;
        } else {
            while (*p != '\0' && !is_space(*p))
                *w++ = *p++;
        }
        lens[n] = (size_t)(w - words[n]);
        *w++ = '\0';
        n++;
    }
}

static bool word_is(const char *w, size_t n, const char *s)
{
    size_t i;

    if (n != strlen(s))
        return false;
    for (i = 0; i < n; i++)
        if ((w[i] | 0x20) != s[i])
            return false;
    return true;
}

/* ---- Line editing (libedit) on a terminal ------------------------------ */

/* Completion of the first word: command names from the op table. */
static char *complete_name(const char *text, int state)
{
    static unsigned i;
    static size_t len;

    if (state == 0) {
        i = 0;
        len = strlen(text);
    }
    while (i < UR_OP_COUNT) {
        const char *name = ur_ops[i++].name;

        if (strncasecmp(name, text, len) == 0)
            return strdup(name);
    }
    return NULL;
}

static char **complete(const char *text, int start, int end)
{
    (void)end;
    rl_attempted_completion_over = 1;
    return start == 0 ? rl_completion_matches(text, complete_name) : NULL;
}

/* ~/.unreadcli_history, or $UNREADCLI_HISTFILE ("/dev/null": none), as
 * redis-cli keeps ~/.rediscli_history. */
static char *history_path(void)
{
    const char *env = getenv("UNREADCLI_HISTFILE");
    const char *home = getenv("HOME");
    char *path;

    if (env != NULL && env[0] != '\0')
        return strcmp(env, "/dev/null") == 0 ? NULL : strdup(env);
    if (home == NULL || home[0] == '\0')
        return NULL;
    path = malloc(strlen(home) + sizeof("/.unreadcli_history"));
    if (path != NULL)
        sprintf(path, "%s/.unreadcli_history", home);
    return path;
}

/* The prompt redis-cli shows: where commands go, or that nothing is
 * connected (a failure is retried with each command). */
static void prompt_text(const struct cli *cli, char *buf, size_t cap)
{
    if (cli->cluster != NULL)
        snprintf(buf, cap, "%s> ", cli->cluster);
    else if (cli->sentinel != NULL)
        snprintf(buf, cap, "%s%s> ", cli->master,
                 cli->replica ? "(replica)" : "");
    else if (cli->conn != NULL && unread_fd(cli->conn) >= 0)
        snprintf(buf, cap, "%s:%u> ", cli->host, (unsigned)cli->port);
    else
        snprintf(buf, cap, "not connected> ");
}

static int cli_repl(struct cli *cli)
{
    char *line = NULL, *out = NULL, **words = NULL;
    size_t cap = 0, outcap = 0, *lens = NULL, max;
    bool prompt = isatty(STDIN_FILENO);
    bool edit = prompt && isatty(STDOUT_FILENO);
    char *hist = edit ? history_path() : NULL;
    char ptext[300];
    long n;

    if (edit) {
        rl_readline_name = "unread-cli";
        rl_attempted_completion_function = complete;
        using_history();
        stifle_history(1000);
        if (hist != NULL)
            read_history(hist);
    }

    /* Connect up front, as redis-cli does, so the prompt tells the truth;
     * a failure is reported and retried with each command. */
    (void)cli_connect(cli);
    for (;;) {
        if (edit) {
            prompt_text(cli, ptext, sizeof(ptext));
            free(line);
            line = readline(ptext);
            if (line == NULL)
                break;
            if (line[0] != '\0') {
                add_history(line);
                if (hist != NULL)
                    write_history(hist);
            }
        } else {
            if (prompt) {
                prompt_text(cli, ptext, sizeof(ptext));
                fputs(ptext, stdout);
                fflush(stdout);
            }
            if (read_line(stdin, &line, &cap) == NULL)
                break;
        }
        max = strlen(line) + 1;
        if (max > outcap) {
            free(out);
            free(words);
            free(lens);
            out = malloc(max);
            words = malloc(max * sizeof(*words));
            lens = malloc(max * sizeof(*lens));
            if (out == NULL || words == NULL || lens == NULL) {
                fprintf(stderr, "unread-cli: out of memory\n");
                break;
            }
            outcap = max;
        }
        n = split_line(line, out, words, lens, max);
        if (n < 0) {
            puts("Invalid argument(s)");
            fflush(stdout);
            continue;
        }
        if (n == 0)
            continue;
        if (n == 1 && (word_is(words[0], lens[0], "quit") ||
                       word_is(words[0], lens[0], "exit")))
            break;
        cli_run(cli, (size_t)n, words, lens);
    }
    if (prompt && (edit || feof(stdin)))
        putchar('\n');
    free(hist);
    free(line);
    free(out);
    free(words);
    free(lens);
    return 0;
}

/* ---- main --------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: unread-cli [-c] [-h host] [-p port | --cluster list |\n"
            "                  --sentinel list [--master names] [--replica]] "
            "[-t ms] "
            "[--user name] [-a password]\n"
            "                  [--default N] [--raw|--no-raw] [--tls ...] "
            "[command [arg ...]]\n"
            "  -h host    server address or name (default 127.0.0.1)\n"
            "  -p port    server port (default %u)\n"
            "  --cluster host:port,host:port,...\n"
            "             shards: each command goes where libunread routes "
            "it\n"
            "  -c         cluster mode (cluster-enabled yes): the server, "
            "or the\n"
            "             --cluster list, are seeds; commands follow MOVED "
            "and ASK\n"
            "  --sentinel host:port,...  ask these redis-sentinels where "
            "the master is\n"
            "  --master name,...  the masters they monitor (default "
            "mymaster), one a shard\n"
            "  --replica  connect to a replica of each master (reads)\n"
            "  -t ms      timeout per command, 0 for none (default 0)\n"
            "  -a password  the servers' requirepass (or the --user's "
            "password),\n"
            "             sent with AUTH on connect\n"
            "  --user name  the ACL user to log in as (AUTH name password; "
            "default:\n"
            "             the default user)\n"
            "  --default N  degraded mode: a read whose server is down "
            "answers N,\n"
            "             marked degraded (exit status 2)\n"
            "  --tls      connect over TLS (the server's tls-port)\n"
            "  --cacert file, --cacertdir dir  the CA certificates that "
            "sign the\n"
            "             server's (default: the system's store)\n"
            "  --cert file, --key file  this client's certificate and key\n"
            "             (servers with tls-auth-clients yes)\n"
            "  --sni name  the server name to check and send (default: -h)\n"
            "  --insecure  do not check the server's certificate\n"
            "  --raw      print replies raw even on a terminal\n"
            "  --no-raw   print replies in the human form even when piped\n"
            "  --version  print the version and exit\n"
            "Without a command, reads commands from stdin, one per line;\n"
            "on a terminal with line editing, completion of command names\n"
            "and history in ~/.unreadcli_history ($UNREADCLI_HISTFILE).\n"
            "Exit status: 0, 1 on an error, 2 on a degraded answer.\n",
            (unsigned)UNREAD_DEFAULT_PORT);
}

static bool parse_num(const char *s, uint64_t max, uint64_t *out)
{
    return ur_parse_u64(s, strlen(s), out) && *out <= max;
}

int main(int argc, char **argv)
{
    struct cli cli;
    size_t *lens = NULL;
    uint64_t v;
    int i, j, status, raw = -1;

    memset(&cli, 0, sizeof(cli));
    cli.host = "127.0.0.1";
    cli.port = UNREAD_DEFAULT_PORT;
    cli.master = "mymaster";
    for (i = 1; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        } else if (strcmp(argv[i], "--raw") == 0) {
            raw = 1;
        } else if (strcmp(argv[i], "--no-raw") == 0) {
            raw = 0;
        } else if (strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--version") == 0 ||
                   strcmp(argv[i], "-v") == 0) {
            printf("unread-cli %s\n", UNREAD_VERSION);
            return 0;
        } else if (strcmp(argv[i], "-h") == 0 && i + 1 < argc) {
            cli.host = argv[++i];
        } else if (strcmp(argv[i], "-p") == 0 && i + 1 < argc) {
            if (!parse_num(argv[++i], UINT16_MAX, &v) || v == 0) {
                fprintf(stderr, "unread-cli: bad port '%s'\n", argv[i]);
                return 1;
            }
            cli.port = (uint16_t)v;
        } else if (strcmp(argv[i], "-a") == 0 && i + 1 < argc) {
            cli.auth = argv[++i];
        } else if ((strcmp(argv[i], "--user") == 0 ||
                    strcmp(argv[i], "--pass") == 0) &&
                   i + 1 < argc) {
            /* redis-cli's spellings: --user name, --pass password */
            if (argv[i][2] == 'u')
                cli.user = argv[++i];
            else
                cli.auth = argv[++i];
        } else if (strcmp(argv[i], "-c") == 0) {
            cli.cmode = true;
        } else if (strcmp(argv[i], "--cluster") == 0 && i + 1 < argc) {
            cli.cluster = argv[++i];
        } else if (strcmp(argv[i], "--sentinel") == 0 && i + 1 < argc) {
            cli.sentinel = argv[++i];
        } else if (strcmp(argv[i], "--master") == 0 && i + 1 < argc) {
            cli.master = argv[++i];
        } else if (strcmp(argv[i], "--replica") == 0) {
            cli.replica = true;
        } else if (strcmp(argv[i], "--tls") == 0) {
            cli.tls = true;
        } else if (strcmp(argv[i], "--insecure") == 0) {
            cli.insecure = true;
        } else if (strcmp(argv[i], "--cacert") == 0 && i + 1 < argc) {
            cli.cacert = argv[++i];
        } else if (strcmp(argv[i], "--cacertdir") == 0 && i + 1 < argc) {
            cli.cacertdir = argv[++i];
        } else if (strcmp(argv[i], "--cert") == 0 && i + 1 < argc) {
            cli.cert = argv[++i];
        } else if (strcmp(argv[i], "--key") == 0 && i + 1 < argc) {
            cli.key = argv[++i];
        } else if (strcmp(argv[i], "--sni") == 0 && i + 1 < argc) {
            cli.sni = argv[++i];
        } else if (strcmp(argv[i], "--default") == 0 && i + 1 < argc) {
            if (!parse_num(argv[++i], UINT64_MAX, &cli.dflt)) {
                fprintf(stderr, "unread-cli: bad default '%s'\n", argv[i]);
                return 1;
            }
            cli.degraded = true;
        } else if (strcmp(argv[i], "-t") == 0 && i + 1 < argc) {
            if (!parse_num(argv[++i], INT32_MAX, &v)) {
                fprintf(stderr, "unread-cli: bad timeout '%s'\n", argv[i]);
                return 1;
            }
            cli.timeout_ms = (int)v;
        } else {
            usage(stderr);
            return 1;
        }
    }
    cli.tty = raw >= 0 ? raw == 0 : isatty(STDOUT_FILENO);
    if (cli.sentinel != NULL && (cli.cluster != NULL || cli.cmode)) {
        fprintf(stderr, "unread-cli: --sentinel or --cluster/-c, not both\n");
        return 1;
    }

    if (i < argc) {
        lens = malloc((size_t)(argc - i) * sizeof(*lens));
        if (lens == NULL) {
            fprintf(stderr, "unread-cli: out of memory\n");
            return 1;
        }
        for (j = i; j < argc; j++)
            lens[j - i] = strlen(argv[j]);
        status = cli_run(&cli, (size_t)(argc - i), argv + i, lens);
        free(lens);
    } else {
        status = cli_repl(&cli);
    }
    unread_close(cli.conn);
    return status;
}
