/*
 * client_bench.c - libunread's two faces side by side, from one client
 * thread against one server: CNT.INCR through the synchronous API (one
 * call at a time, and pipelines of `depth`) and through the asynchronous
 * handle (`depth` requests in flight, its own poll loop), each for the
 * same number of seconds, in one run.
 *
 *   client-bench [host:port] [seconds] [depth ...]
 *
 * Defaults: 127.0.0.1:7460, 3 s per row, depths 1 and 16. One line per
 * row: "face depth ops/s". Writes CNT counters of uids 1..10000, type 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "unread.h"

#define KEYS 10000

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double sync_calls(struct unread *c, double seconds)
{
    double end = now_s() + seconds, t0 = now_s();
    uint64_t n = 0;

    while ((n & 63) != 0 || now_s() < end) {
        if (unread_cnt_incr(c, 1 + n % KEYS, 0, 1, NULL, NULL) != 0) {
            fprintf(stderr, "sync: %s\n", unread_errstr(c));
            exit(1);
        }
        n++;
    }
    return (double)n / (now_s() - t0);
}

static double sync_pipelines(struct unread *c, unsigned depth, double seconds)
{
    double end = now_s() + seconds, t0 = now_s();
    struct unread_reply *r;
    uint64_t n = 0;
    unsigned i;

    while (now_s() < end) {
        unread_pipe_begin(c);
        for (i = 0; i < depth; i++)
            unread_pipe_cnt_incr(c, 1 + (n + i) % KEYS, 0, 1);
        unread_pipe_flush(c);
        for (i = 0; i < depth; i++) {
            if (unread_pipe_read(c, &r) != 0) {
                fprintf(stderr, "pipeline: %s\n", unread_errstr(c));
                exit(1);
            }
            unread_reply_free(r);
        }
        n += depth;
    }
    return (double)n / (now_s() - t0);
}

struct abench {
    struct unread_async *a;
    uint64_t started, done;
    double end;
    bool stop;
};

static void next(struct abench *b);

static void on_done(struct unread_async *a, int rc, void *priv)
{
    struct abench *b = priv;

    if (rc != 0) {
        fprintf(stderr, "async: %s\n", unread_async_errstr(a));
        exit(1);
    }
    b->done++;
    if (!b->stop)
        next(b);
}

static void next(struct abench *b)
{
    if ((b->started & 63) == 0 && now_s() >= b->end)
        b->stop = true;
    if (b->stop)
        return;
    if (unread_async_cnt_incr(b->a, 1 + b->started % KEYS, 0, 1, NULL, NULL,
                              on_done, b) != 0) {
        fprintf(stderr, "async: %s\n", unread_async_errstr(b->a));
        exit(1);
    }
    b->started++;
}

static double async_depth(struct unread_async *a, unsigned depth,
                          double seconds)
{
    struct abench b = {a, 0, 0, 0, false};
    double t0 = now_s();
    unsigned i;

    b.end = t0 + seconds;
    for (i = 0; i < depth; i++)
        next(&b);
    while (unread_async_pending(a) > 0)
        unread_async_poll(a, 1000);
    return (double)b.done / (now_s() - t0);
}

int main(int argc, char **argv)
{
    const char *server = argc > 1 ? argv[1] : "127.0.0.1:7460";
    double seconds = argc > 2 ? atof(argv[2]) : 3;
    unsigned depths[8] = {1, 16}, nd = 2, i;
    struct unread *c;
    struct unread_async *a;
    char err[256];

    if (argc > 3) {
        for (nd = 0; nd < 8 && (int)nd + 3 < argc; nd++)
            depths[nd] = (unsigned)atoi(argv[nd + 3]);
    }
    c = unread_connect_cluster(server, NULL, err, sizeof(err));
    a = unread_async_connect(server, NULL, err, sizeof(err));
    if (c == NULL || a == NULL) {
        fprintf(stderr, "client-bench: %s\n", err);
        return 1;
    }
    printf("face depth ops/s\n");
    for (i = 0; i < nd; i++) {
        if (depths[i] == 1)
            printf("sync 1 %.0f\n", sync_calls(c, seconds));
        else
            printf("sync-pipeline %u %.0f\n", depths[i],
                   sync_pipelines(c, depths[i], seconds));
        printf("async %u %.0f\n", depths[i],
               async_depth(a, depths[i], seconds));
        fflush(stdout);
    }
    unread_async_close(a);
    unread_close(c);
    return 0;
}
