/*
 * pubsub_client.c - drives libunread's subscriptions for the integration
 * tests (test_client_pubsub.py): one handle, sync or async, over a server
 * list; commands one per line on stdin, results one per line on stdout.
 *
 *   pubsub_client sync|async host:port[,host:port...]
 *
 *   sub CH | psub PAT | unsub CH | punsub PAT   ("*": every one)
 *                         -> "sub CH rc" ...
 *   listen MS             (sync) -> the messages, then "listened N"
 *   stopon PAYLOAD        (sync) a message with this payload stops listen
 *   pub CH PAYLOAD        (sync) -> "pub CH rc receivers"
 *   incr UID              CNT.INCR uid 0 1 on the same handle
 *                         -> "incr UID rc value"
 *   count                 -> "count N" (subscriptions)
 *   quit
 *
 * Each message prints as "msg SHARD PATTERN|- CHANNEL PAYLOAD". The
 * async handle delivers on its loop, which also watches stdin.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unread.h"

static char stop_payload[256];

static void print_msg(const struct unread_message *m)
{
    printf("msg %zu %.*s %.*s %.*s\n", m->shard,
           m->pattern != NULL ? (int)m->pattern_len : 1,
           m->pattern != NULL ? m->pattern : "-", (int)m->channel_len,
           m->channel, (int)m->payload_len, m->payload);
    fflush(stdout);
}

static void on_sync(struct unread *c, const struct unread_message *m,
                    void *priv)
{
    (void)priv;
    print_msg(m);
    if (stop_payload[0] != '\0' && m->payload_len == strlen(stop_payload) &&
        memcmp(m->payload, stop_payload, m->payload_len) == 0)
        unread_listen_stop(c);
}

static void on_async(struct unread_async *a, const struct unread_message *m,
                     void *priv)
{
    (void)a;
    (void)priv;
    print_msg(m);
}

struct incr {
    unsigned long long uid;
    uint32_t value;
    uint64_t total;
};

static void incr_done(struct unread_async *a, int rc, void *priv)
{
    struct incr *q = priv;

    (void)a;
    printf("incr %llu %d %u\n", q->uid, rc, q->value);
    fflush(stdout);
    free(q);
}

/* One command line; false at quit. */
static bool run(struct unread *c, struct unread_async *a, char *line)
{
    char *cmd = strtok(line, " \n"), *arg = strtok(NULL, " \n");
    char *rest = strtok(NULL, "\n");
    const char *name = arg != NULL && strcmp(arg, "*") != 0 ? arg : NULL;
    uint64_t n = 0;
    int rc = 0;

    if (cmd == NULL)
        return true;
    if (strcmp(cmd, "quit") == 0)
        return false;
    if (strcmp(cmd, "sub") == 0)
        rc = c != NULL ? unread_subscribe(c, arg, on_sync, NULL)
                       : unread_async_subscribe(a, arg, on_async, NULL);
    else if (strcmp(cmd, "psub") == 0)
        rc = c != NULL ? unread_psubscribe(c, arg, on_sync, NULL)
                       : unread_async_psubscribe(a, arg, on_async, NULL);
    else if (strcmp(cmd, "unsub") == 0)
        rc = c != NULL ? unread_unsubscribe(c, name)
                       : unread_async_unsubscribe(a, name);
    else if (strcmp(cmd, "punsub") == 0)
        rc = c != NULL ? unread_punsubscribe(c, name)
                       : unread_async_punsubscribe(a, name);
    if (strstr("sub psub unsub punsub", cmd) != NULL) {
        printf("%s %s %d\n", cmd, arg != NULL ? arg : "?", rc);
    } else if (strcmp(cmd, "count") == 0) {
        printf("count %zu\n", c != NULL ? unread_subscriptions(c)
                                        : unread_async_subscriptions(a));
    } else if (strcmp(cmd, "listen") == 0 && c != NULL) {
        rc = unread_listen(c, atoi(arg != NULL ? arg : "0"));
        printf("listened %d\n", rc);
    } else if (strcmp(cmd, "stopon") == 0 && arg != NULL) {
        snprintf(stop_payload, sizeof(stop_payload), "%s", arg);
    } else if (strcmp(cmd, "pub") == 0 && c != NULL && arg != NULL) {
        rc = unread_publish(c, arg, rest != NULL ? rest : "",
                            rest != NULL ? strlen(rest) : 0, &n);
        printf("pub %s %d %llu\n", arg, rc, (unsigned long long)n);
    } else if (strcmp(cmd, "incr") == 0 && arg != NULL && c != NULL) {
        uint32_t v = 0;
        uint64_t total;

        rc = unread_cnt_incr(c, strtoull(arg, NULL, 10), 0, 1, &v, &total);
        printf("incr %s %d %u\n", arg, rc, v);
    } else if (strcmp(cmd, "incr") == 0 && arg != NULL) {
        struct incr *q = calloc(1, sizeof(*q));

        q->uid = strtoull(arg, NULL, 10);
        rc = unread_async_cnt_incr(a, q->uid, 0, 1, &q->value, &q->total,
                                   incr_done, q);
        if (rc != 0) {
            printf("incr %s %d 0\n", arg, rc);
            free(q);
        }
    } else {
        printf("? %s\n", cmd);
    }
    fflush(stdout);
    return true;
}

static int run_sync(const char *servers)
{
    struct unread_opts *o = unread_opts_new();
    char err[256], line[1024];
    struct unread *c;

    unread_opts_set_reconnect(o, 50, 400);
    c = unread_connect_cluster(servers, o, err, sizeof(err));
    unread_opts_free(o);
    if (c == NULL) {
        fprintf(stderr, "connect: %s\n", err);
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    while (fgets(line, sizeof(line), stdin) != NULL && run(c, NULL, line))
        ;
    unread_close(c);
    return 0;
}

static int run_async(const char *servers)
{
    struct unread_opts *o = unread_opts_new();
    struct unread_async_pollfd w[64];
    struct pollfd p[65];
    char err[256], line[1024];
    struct unread_async *a;
    size_t n, i;
    bool more = true;
    int t;

    unread_opts_set_reconnect(o, 50, 400);
    a = unread_async_connect(servers, o, err, sizeof(err));
    unread_opts_free(o);
    if (a == NULL) {
        fprintf(stderr, "connect: %s\n", err);
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    while (more) {
        n = unread_async_fds(a, w, 64);
        p[0].fd = 0;
        p[0].events = POLLIN;
        for (i = 0; i < n; i++) {
            p[i + 1].fd = w[i].fd;
            p[i + 1].events =
                (short)(((w[i].events & UNREAD_EV_READ) ? POLLIN : 0) |
                        ((w[i].events & UNREAD_EV_WRITE) ? POLLOUT : 0));
        }
        t = unread_async_timeout(a);
        if (poll(p, n + 1, t) < 0 && errno != EINTR)
            break;
        for (i = 0; i < n; i++) {
            int ev = 0;

            if (p[i + 1].revents & (POLLIN | POLLHUP | POLLERR))
                ev |= UNREAD_EV_READ;
            if (p[i + 1].revents & POLLOUT)
                ev |= UNREAD_EV_WRITE;
            if (ev != 0)
                unread_async_handle_events(a, p[i + 1].fd, ev);
        }
        unread_async_handle_timeout(a);
        if (p[0].revents & (POLLIN | POLLHUP)) {
            /* a line at a time: the tests write whole lines */
            if (fgets(line, sizeof(line), stdin) == NULL)
                break;
            more = run(NULL, a, line);
            unread_async_flush(a);
        }
    }
    unread_async_close(a);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: pubsub_client sync|async servers\n");
        return 2;
    }
    setvbuf(stdin, NULL, _IONBF, 0);
    return strcmp(argv[1], "sync") == 0 ? run_sync(argv[2])
                                        : run_async(argv[2]);
}
