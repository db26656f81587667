/*
 * cluster_client.c - drives libunread's cluster mode for the integration
 * tests (test_client_cluster.py): one handle, sync or async, in cluster
 * mode over seeds; commands one per line on stdin, one result line each
 * on stdout.
 *
 *   cluster_client sync|async SEEDS [--plain] [--tls CA [CERT KEY]]
 *
 * --plain: not cluster mode (SEEDS is a server list, test_tls.py); --tls:
 * TLS, the server checked against CA, with a client certificate when
 * CERT and KEY are given.
 *   cmd NAME ARG...    any command (unread_command / _async_command)
 *                      -> "cmd RC FLAT" and "redir TEXT|-"
 *   incr UID TYPE N    unread_cnt_incr   -> "incr RC VALUE TOTAL"
 *   mtotal UID...      unread_cnt_mtotal -> "mtotal RC T1 T2 ..."
 *   batch UID...       (sync) a batch of CNT.INCR uid 0 1 each
 *                      -> "batch RC FLAT"
 *   pipe UID...        (sync) a pipeline of CNT.INCR uid 0 1 each
 *                      -> "pipe RC1 RC2 ..."
 *   sub CH             unread_subscribe -> "sub RC ERRSTR"
 *   quit
 *
 * FLAT is the reply on one line: an integer, a string, an error's text,
 * an array as [a,b,...]. RC is libunread's result code. A handle that
 * cannot be made prints "connect ERRSTR" and exits 1.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../async_done.h"
#include "unread.h"

#define MAXW 4100

static void flat(const struct unread_reply *r)
{
    size_t i;

    if (r == NULL) {
        fputs("-", stdout);
        return;
    }
    switch (r->kind) {
    case UNREAD_REPLY_INT:
        printf("%llu", (unsigned long long)r->integer);
        break;
    case UNREAD_REPLY_SINT:
        printf("%lld", (long long)r->integer);
        break;
    case UNREAD_REPLY_ARRAY:
        putchar('[');
        for (i = 0; i < r->n; i++) {
            if (i > 0)
                putchar(',');
            flat(&r->elem[i]);
        }
        putchar(']');
        break;
    case UNREAD_REPLY_NIL:
        fputs("nil", stdout);
        break;
    default:
        for (i = 0; i < r->len; i++)
            putchar(r->str[i] == '\n' || r->str[i] == '\r' ? ' ' : r->str[i]);
    }
}

static void on_msg(struct unread *c, const struct unread_message *m, void *priv)
{
    (void)c, (void)m, (void)priv;
}

static void on_amsg(struct unread_async *a, const struct unread_message *m,
                    void *priv)
{
    (void)a, (void)m, (void)priv;
}

static unsigned long long num(const char *s)
{
    return strtoull(s, NULL, 10);
}

int main(int argc, char **argv)
{
    static char line[1 << 16];
    static char *w[MAXW];
    static uint64_t uids[MAXW], totals[MAXW];
    struct unread_opts *o;
    struct unread *c = NULL;
    struct unread_async *a = NULL;
    char err[512];
    bool async;

    if (argc < 3) {
        fprintf(stderr, "usage: cluster_client sync|async SEEDS [--plain] "
                        "[--tls CA [CERT KEY]]\n");
        return 2;
    }
    async = strcmp(argv[1], "async") == 0;
    o = unread_opts_new();
    if (o == NULL || unread_opts_set_timeouts(o, 2000, 5000, 5000) != 0)
        return 2;
    (void)unread_opts_set_cluster(o, argc < 4 || strcmp(argv[3], "--plain"));
    for (int i = 3; i < argc; i++)
        if (strcmp(argv[i], "--tls") == 0 && i + 1 < argc &&
            (unread_opts_set_tls(o, true) != 0 ||
             unread_opts_set_tls_ca(o, argv[i + 1], NULL) != 0 ||
             (i + 3 < argc &&
              unread_opts_set_tls_cert(o, argv[i + 2], argv[i + 3]) != 0)))
            return 2;
    if (async)
        a = unread_async_connect(argv[2], o, err, sizeof(err));
    else
        c = unread_connect_cluster(argv[2], o, err, sizeof(err));
    unread_opts_free(o);
    if (a == NULL && c == NULL) {
        printf("connect %s\n", err);
        return 1;
    }
    while (fgets(line, sizeof(line), stdin) != NULL) {
        static struct unread_arg args[MAXW];
        struct unread_reply *r = NULL;
        struct done d = {false, 0};
        size_t n = 0, i;
        int rc;

        for (char *t = strtok(line, " \t\r\n"); t != NULL && n < MAXW;
             t = strtok(NULL, " \t\r\n"))
            w[n++] = t;
        if (n == 0)
            continue;
        if (strcmp(w[0], "quit") == 0)
            break;
        if (strcmp(w[0], "cmd") == 0 && n >= 2) {
            for (i = 2; i < n; i++)
                args[i - 2] = unread_arg_str(w[i], strlen(w[i]));
            if (async)
                rc = finish(a,
                            unread_async_command(a, w[1], 0, (unsigned)(n - 2),
                                                 args, &r, on_done, &d),
                            &d, NULL);
            else
                rc = unread_command(c, w[1], 0, (unsigned)(n - 2), args, &r);
            printf("cmd %d ", rc);
            if (r == NULL)
                fputs(async ? unread_async_errstr(a) : unread_errstr(c),
                      stdout);
            else
                flat(r);
            unread_reply_free(r);
            printf("\nredir %s\n", !async && unread_redirected(c) != NULL
                                       ? unread_redirected(c)
                                       : "-");
        } else if (strcmp(w[0], "incr") == 0 && n == 4) {
            uint32_t value = 0;
            uint64_t total = 0;

            if (async)
                rc = finish(a,
                            unread_async_cnt_incr(a, num(w[1]),
                                                  (unsigned)num(w[2]),
                                                  (uint32_t)num(w[3]), &value,
                                                  &total, on_done, &d),
                            &d, NULL);
            else
                rc = unread_cnt_incr(c, num(w[1]), (unsigned)num(w[2]),
                                     (uint32_t)num(w[3]), &value, &total);
            printf("incr %d %u %llu\n", rc, value, (unsigned long long)total);
        } else if (strcmp(w[0], "mtotal") == 0) {
            for (i = 1; i < n; i++)
                uids[i - 1] = num(w[i]);
            if (async)
                rc = finish(a,
                            unread_async_cnt_mtotal(a, uids, n - 1, totals,
                                                    on_done, &d),
                            &d, NULL);
            else
                rc = unread_cnt_mtotal(c, uids, n - 1, totals);
            printf("mtotal %d", rc);
            for (i = 1; i < n; i++)
                printf(" %llu", (unsigned long long)totals[i - 1]);
            putchar('\n');
        } else if (strcmp(w[0], "batch") == 0 && !async) {
            rc = unread_batch_begin(c);
            for (i = 1; i < n && rc == 0; i++)
                rc = unread_pipe_cnt_incr(c, num(w[i]), 0, 1);
            if (rc == 0)
                rc = unread_batch_exec(c, &r);
            else
                unread_batch_reset(c); /* a refused queue call: still open */
            printf("batch %d ", rc);
            if (r == NULL)
                fputs(unread_errstr(c), stdout);
            else
                flat(r);
            putchar('\n');
            unread_reply_free(r);
        } else if (strcmp(w[0], "pipe") == 0 && !async) {
            rc = unread_pipe_begin(c);
            for (i = 1; i < n && rc == 0; i++)
                rc = unread_pipe_cnt_incr(c, num(w[i]), 0, 1);
            if (rc == 0)
                rc = unread_pipe_flush(c);
            printf("pipe");
            if (rc != 0)
                printf(" fail %d %s", rc, unread_errstr(c));
            for (i = 1; i < n && rc == 0; i++) {
                int x = unread_pipe_read(c, &r);

                printf(" %d:", x);
                flat(r);
                unread_reply_free(r);
                r = NULL;
            }
            putchar('\n');
        } else if (strcmp(w[0], "sub") == 0 && n == 2) {
            rc = async ? unread_async_subscribe(a, w[1], on_amsg, NULL)
                       : unread_subscribe(c, w[1], on_msg, NULL);
            printf("sub %d %s\n", rc,
                   async ? unread_async_errstr(a) : unread_errstr(c));
        } else {
            printf("usage %s\n", w[0]);
        }
        fflush(stdout);
    }
    unread_close(c);
    unread_async_close(a);
    return 0;
}
