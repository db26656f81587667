/*
 * bench_run.c - see bench_run.h.
 *
 * Each connection keeps a ring of its requests in flight (send time, id,
 * the reply kinds it accepts). A readable connection is read until the
 * socket is empty, every complete reply is matched to the ring's oldest
 * entry, then the connection is topped up to its depth and written once:
 * one read and one write per wake-up whatever the depth, which is what
 * keeps the client light at pipeline 16.
 *
 * Threads share nothing but the run's instants (fixed before they start)
 * and an abort flag; each has its own connections, epoll set, counters and
 * histogram, merged after the join.
 */
#include "bench_run.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_S 1000000000ull
#define READ_CHUNK (64u << 10)
#define MAX_EVENTS 64
#define STALL_NS (10 * NS_PER_S) /* no event for this long: server gone */
#define WAIT_MS 100              /* epoll timeout, to notice the stall */

struct flight {
    uint64_t sent_ns;
    uint32_t id;
    uint8_t expect; /* BX_* */
};

struct conn {
    int fd;
    bool want_out; /* EPOLLOUT armed */
    struct ur_buf in, out;
    size_t out_sent;
    struct flight *ring; /* cap entries, count from head */
    unsigned cap, head, count;
    uint32_t next_id;
    uint64_t next; /* load: the next key; requests: operations left */
    struct bench_rng rng;
};

/* Fixed before the threads start, except the flag. */
struct shared {
    uint64_t measure_ns; /* replies from here on are measured ... */
    uint64_t stop_ns;    /* ... until here, when sending stops (by time) */
    atomic_bool abort;   /* a thread failed: everyone stops */
};

struct worker {
    pthread_t th;
    const struct bench_plan *p;
    struct shared *sh;
    struct conn *conns;
    unsigned n;
    int ep;
    unsigned inflight;
    uint64_t ops, errors;
    char first_error[BENCH_ERR_TEXT];
    bool failed;
    char err[BENCH_ERR_TEXT];
    struct bench_hist hist;
};

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static double cpu_seconds(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* Sleeps until t_ns, or until a thread aborts the run. */
static void wait_until(const struct shared *sh, uint64_t t_ns)
{
    const uint64_t slice = NS_PER_S / 20;

    for (uint64_t now = now_ns(); now < t_ns && !atomic_load(&sh->abort);
         now = now_ns()) {
        uint64_t d = t_ns - now < slice ? t_ns - now : slice;
        struct timespec ts = {(time_t)(d / NS_PER_S), (long)(d % NS_PER_S)};

        nanosleep(&ts, NULL);
    }
}

/* Records the worker's first failure and tells the others to stop; -1. */
static int fail(struct worker *w, const char *fmt, ...)
{
    va_list ap;

    if (!w->failed) {
        va_start(ap, fmt);
        vsnprintf(w->err, sizeof(w->err), fmt, ap);
        va_end(ap);
        w->failed = true;
    }
    atomic_store(&w->sh->abort, true);
    return -1;
}

static const char *kind_name(uint8_t kind)
{
    static const char *const names[] = {"?",   "integer", "string", "array",
                                        "nil", "status",  "error"};
    return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "?";
}

static bool has_work(const struct worker *w, const struct conn *c, uint64_t now)
{
    const struct bench_plan *p = w->p;

    if (p->load)
        return c->next < p->keys.n;
    if (p->requests > 0)
        return c->next > 0;
    return now < w->sh->stop_ns;
}

/* Builds the next operation (or load step) into cmds; its command count. */
static unsigned next_op(struct worker *w, struct conn *c,
                        struct bench_cmd *cmds)
{
    const struct bench_plan *p = w->p;
    uint64_t key;

    if (p->load) {
        key = c->next;
        c->next += p->conns;
        return p->wl->load(&p->ctx, key, cmds);
    }
    if (p->requests > 0)
        c->next--;
    key = bench_keys_next(&p->keys, &c->rng);
    return p->wl->op(&p->ctx, key, &c->rng, cmds);
}

/* Tops the connection up to its depth, encoding into c->out. */
static int conn_fill(struct worker *w, struct conn *c, uint64_t now)
{
    const struct bench_plan *p = w->p;
    struct bench_cmd cmds[BENCH_OP_MAX];

    while (c->count < p->pipeline && has_work(w, c, now)) {
        unsigned n = next_op(w, c, cmds);

        for (unsigned i = 0; i < n; i++) {
            struct flight *f = &c->ring[(c->head + c->count) % c->cap];

            if (bench_encode(&c->out, p->target, &cmds[i], c->next_id) != 0)
                return fail(w, "%s: cannot encode a request for %s",
                            p->wl->name, bench_target_name(p->target));
            f->sent_ns = now;
            f->id = c->next_id++;
            f->expect = cmds[i].expect;
            c->count++;
            w->inflight++;
        }
    }
    return 0;
}

static int set_events(struct worker *w, struct conn *c, bool out)
{
    struct epoll_event ev = {EPOLLIN | (out ? EPOLLOUT : 0), {.ptr = c}};

    if (epoll_ctl(w->ep, EPOLL_CTL_MOD, c->fd, &ev) != 0)
        return fail(w, "epoll_ctl: %s", strerror(errno));
    c->want_out = out;
    return 0;
}

/* Writes what the socket takes; EPOLLOUT is armed only while it is full. */
static int conn_flush(struct worker *w, struct conn *c)
{
    while (c->out_sent < c->out.len) {
        ssize_t n = send(c->fd, c->out.data + c->out_sent,
                         c->out.len - c->out_sent, MSG_NOSIGNAL);

        if (n > 0) {
            c->out_sent += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return c->want_out ? 0 : set_events(w, c, true);
        return fail(w, "write: %s", strerror(errno));
    }
    c->out.len = 0;
    c->out_sent = 0;
    return c->want_out ? set_events(w, c, false) : 0;
}

static void note_error(struct worker *w, const struct bench_reply *r)
{
    if (w->errors++ > 0)
        return;
    if (r->kind == UR_VAL_ERR)
        snprintf(w->first_error, sizeof(w->first_error), "%s: %.*s",
                 w->p->wl->name, (int)r->text_len, r->text);
    else
        snprintf(w->first_error, sizeof(w->first_error),
                 "%s: unexpected %s reply", w->p->wl->name, kind_name(r->kind));
}

/* Matches a reply to the oldest request in flight and accounts for it. */
static int on_reply(struct worker *w, struct conn *c,
                    const struct bench_reply *r, uint64_t now)
{
    const struct shared *sh = w->sh;
    struct flight *f;

    if (c->count == 0)
        return fail(w, "a reply to no request");
    f = &c->ring[c->head];
    c->head = (c->head + 1) % c->cap;
    c->count--;
    w->inflight--;
    if (w->p->target == BENCH_BINARY && r->id != f->id)
        return fail(w, "reply id %u, expected %u", r->id, f->id);
    if (r->kind == UR_VAL_ERR || !(f->expect & BX(r->kind)))
        note_error(w, r);
    if (now >= sh->measure_ns && now < sh->stop_ns) {
        w->ops++;
        bench_hist_record(&w->hist, now - f->sent_ns);
    }
    return 0;
}

/* Reads until the socket is empty, then handles every complete reply. */
static int conn_read(struct worker *w, struct conn *c, uint64_t now)
{
    struct bench_reply r;
    size_t off = 0;

    for (;;) {
        size_t room;
        ssize_t n;

        if (ur_buf_reserve(&c->in, READ_CHUNK) != 0)
            return fail(w, "out of memory");
        room = c->in.cap - c->in.len;
        n = read(c->fd, c->in.data + c->in.len, room);
        if (n > 0) {
            c->in.len += (size_t)n;
            if ((size_t)n < room)
                break;
            continue;
        }
        if (n == 0)
            return fail(w, "the server closed a connection");
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            break;
        return fail(w, "read: %s", strerror(errno));
    }
    for (;;) {
        enum ur_parse st = bench_parse_reply(w->p->target, c->in.data + off,
                                             c->in.len - off, &r);
        if (st == UR_PARSE_NEED_MORE)
            break;
        if (st != UR_PARSE_OK)
            return fail(w, "malformed reply (%s)", ur_parse_name(st));
        if (on_reply(w, c, &r, now) != 0)
            return -1;
        off += r.consumed;
    }
    ur_buf_consume(&c->in, off);
    return 0;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct epoll_event evs[MAX_EVENTS];
    uint64_t now = now_ns(), last_event = now;

    for (unsigned i = 0; i < w->n; i++)
        if (conn_fill(w, &w->conns[i], now) || conn_flush(w, &w->conns[i]))
            return NULL;
    while (w->inflight > 0 && !atomic_load(&w->sh->abort)) {
        int n = epoll_wait(w->ep, evs, MAX_EVENTS, WAIT_MS);

        if (n < 0 && errno != EINTR) {
            fail(w, "epoll_wait: %s", strerror(errno));
            return NULL;
        }
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;

            now = now_ns();
            if ((evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) &&
                conn_read(w, c, now) != 0)
                return NULL;
            if (conn_fill(w, c, now) || conn_flush(w, c))
                return NULL;
        }
        now = now_ns();
        if (n > 0)
            last_event = now;
        else if (now - last_event > STALL_NS)
            fail(w, "no reply for %llu s: the server stopped answering",
                 (unsigned long long)(STALL_NS / NS_PER_S));
    }
    return NULL;
}

static void conn_deinit(struct conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    ur_buf_deinit(&c->in);
    ur_buf_deinit(&c->out);
    free(c->ring);
}

/* Connection number g of the plan: connected, non-blocking, in w's epoll
 * set. The ring holds a full depth plus one operation's commands. */
static int conn_init(struct worker *w, struct conn *c, unsigned g, char *err,
                     size_t errlen)
{
    const struct bench_plan *p = w->p;
    struct epoll_event ev = {EPOLLIN, {.ptr = c}};

    memset(c, 0, sizeof(*c));
    c->fd = -1;
    c->cap = p->pipeline + BENCH_OP_MAX;
    c->ring = calloc(c->cap, sizeof(*c->ring));
    if (c->ring == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    bench_rng_seed(&c->rng, p->seed ^ ((uint64_t)g << 32 | g));
    if (p->load)
        c->next = g;
    else if (p->requests > 0)
        c->next = p->requests / p->conns + (g < p->requests % p->conns);
    c->next_id = 1;
    c->fd = bench_dial(p->host, p->port, err, errlen);
    if (c->fd < 0)
        return -1;
    if (fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK) != 0 ||
        epoll_ctl(w->ep, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
        snprintf(err, errlen, "socket set-up: %s", strerror(errno));
        return -1;
    }
    return 0;
}

static void workers_free(struct worker *ws, unsigned nw)
{
    for (unsigned t = 0; t < nw; t++) {
        for (unsigned i = 0; i < ws[t].n; i++)
            conn_deinit(&ws[t].conns[i]);
        free(ws[t].conns);
        if (ws[t].ep >= 0)
            close(ws[t].ep);
    }
    free(ws);
}

/* Worker t gets connections t, t + threads, t + 2 * threads, ... */
static int workers_setup(const struct bench_plan *p, struct shared *sh,
                         struct worker *ws, char *err, size_t errlen)
{
    for (unsigned t = 0; t < p->threads; t++) {
        struct worker *w = &ws[t];
        unsigned want = p->conns / p->threads + (t < p->conns % p->threads);

        w->p = p;
        w->sh = sh;
        bench_hist_init(&w->hist);
        w->ep = epoll_create1(EPOLL_CLOEXEC);
        w->conns = calloc(want, sizeof(*w->conns));
        if (w->ep < 0 || w->conns == NULL) {
            snprintf(err, errlen, "out of memory or descriptors");
            return -1;
        }
        for (; w->n < want; w->n++)
            if (conn_init(w, &w->conns[w->n], t + w->n * p->threads, err,
                          errlen) != 0) {
                w->n++; /* so that it is freed */
                return -1;
            }
    }
    return 0;
}

/* Sums the workers into res; -1 with the first failure's message. */
static int workers_merge(const struct worker *ws, unsigned nw,
                         struct bench_result *res, char *err, size_t errlen)
{
    int rc = 0;

    for (unsigned t = 0; t < nw; t++) {
        const struct worker *w = &ws[t];

        if (w->failed && rc == 0) {
            snprintf(err, errlen, "%s", w->err);
            rc = -1;
        }
        if (w->errors > 0 && res->errors == 0)
            memcpy(res->first_error, w->first_error, sizeof(w->first_error));
        res->ops += w->ops;
        res->errors += w->errors;
        bench_hist_merge(&res->hist, &w->hist);
    }
    return rc;
}

int bench_run(const struct bench_plan *p, struct bench_result *res, char *err,
              size_t errlen)
{
    bool by_time = !p->load && p->requests == 0;
    struct shared sh = {0, UINT64_MAX, false};
    struct worker *ws;
    unsigned started = 0;
    uint64_t t0;
    double cpu0 = 0, cpu1 = 0;
    int rc = -1;

    memset(res, 0, sizeof(*res));
    bench_hist_init(&res->hist);
    ws = calloc(p->threads, sizeof(*ws));
    if (ws == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (unsigned t = 0; t < p->threads; t++)
        ws[t].ep = -1;
    if (workers_setup(p, &sh, ws, err, errlen) != 0)
        goto out;

    t0 = now_ns();
    if (by_time) {
        sh.measure_ns = t0 + (uint64_t)(p->warmup * NS_PER_S);
        sh.stop_ns = sh.measure_ns + (uint64_t)(p->seconds * NS_PER_S);
    } else {
        cpu0 = cpu_seconds();
    }
    for (; started < p->threads; started++) {
        if (pthread_create(&ws[started].th, NULL, worker_main, &ws[started]) !=
            0) {
            atomic_store(&sh.abort, true);
            snprintf(err, errlen, "cannot start a thread");
            break;
        }
    }
    if (by_time && started == p->threads) {
        wait_until(&sh, sh.measure_ns);
        cpu0 = cpu_seconds();
        wait_until(&sh, sh.stop_ns);
        cpu1 = cpu_seconds();
    }
    for (unsigned t = 0; t < started; t++)
        pthread_join(ws[t].th, NULL);
    if (!by_time)
        cpu1 = cpu_seconds();
    res->wall_s = by_time ? p->seconds : (double)(now_ns() - t0) / NS_PER_S;
    res->cpu_s = cpu1 - cpu0;
    if (started == p->threads)
        rc = workers_merge(ws, p->threads, res, err, errlen);
out:
    workers_free(ws, p->threads);
    return rc;
}
