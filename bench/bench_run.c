/*
 * bench_run.c - see bench_run.h.
 *
 * A connection is one socket per server (one, unless --cluster). Each
 * socket keeps a ring of its requests in flight (send time, id, the reply
 * kinds it accepts). A readable socket is read until it is empty, every
 * complete reply is matched to the ring's oldest entry, then its
 * connection is topped up to its depth and each socket given requests is
 * written once: one read and one write per wake-up whatever the depth,
 * which is what keeps the client light at pipeline 16.
 *
 * Threads share nothing but the run's instants (fixed before they start)
 * and an abort flag; each has its own connections, epoll set, counters and
 * histogram, merged after the join.
 */
#include "slot.h"
#include "bench_run.h"

#include <errno.h>
#include <limits.h>
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

#include "bench_tls.h"
#include "ops.h"
#include "unread.h"

#define NS_PER_S 1000000000ull
#define READ_CHUNK (64u << 10)
#define MAX_EVENTS 64
#define STALL_NS (10 * NS_PER_S) /* no event for this long: server gone */
#define WAIT_MS 100              /* epoll timeout, to notice the stall */
#define ROUTE_ALL UINT_MAX       /* a global write: every server */
#define CLUSTER_TIMEOUT_MS 10000 /* connecting the placement handle */

struct flight {
    uint64_t sent_ns;
    uint32_t id;
    uint8_t expect; /* BX_* */
};

struct conn;

/* One server's socket of a connection. */
struct sock {
    int fd;
    SSL *ssl;      /* --tls: the connection's TLS, else NULL */
    bool want_out; /* EPOLLOUT armed */
    struct ur_buf in, out;
    size_t out_sent;
    struct flight *ring; /* cap entries, count from head */
    unsigned cap, head, count;
    uint32_t next_id;
    struct conn *conn;
};

struct conn {
    struct sock *socks; /* one per server, in the placement's order */
    unsigned nsock;
    unsigned count; /* requests in flight over all its sockets */
    uint64_t next;  /* load: the next key; requests: operations left */
    uint64_t end;   /* load: its last key + 1 */
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
    struct unread *placement; /* --cluster: this thread's ring, else NULL */
    struct bench_cmd *cmds;   /* room for one operation or load step */
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

/* utime + stime of process pid in seconds (/proc/PID/stat), or -1. */
static double proc_cpu_seconds(int pid)
{
    char path[64], buf[1024];
    unsigned long long ut, st;
    const char *p;
    FILE *f;
    size_t n;

    if (pid <= 0)
        return -1;
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    f = fopen(path, "r");
    if (f == NULL)
        return -1;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')'); /* the name may hold spaces */
    if (p == NULL ||
        sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
               &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
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
        return c->next < c->end;
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

    if (p->load)
        return p->wl->load(&p->ctx, c->next++, cmds);
    if (p->requests > 0)
        c->next--;
    key = bench_keys_next(&p->keys, &c->rng);
    return p->wl->op(&p->ctx, key, &c->rng, cmds);
}

/*
 * Where a request goes on a cluster, as libunread routes it: a global
 * write to every server, a uid- or gid-keyed command to the key's server,
 * anything else to the first. Workloads send keys as integers.
 */
static unsigned route(const struct worker *w, const struct bench_cmd *cmd)
{
    const struct ur_op *o;

    if (w->placement == NULL)
        return 0;
    o = ur_op_by_code(cmd->op);
    if (o == NULL)
        return 0;
    if (w->p->slot_map != NULL) {
        unsigned k = ur_op_key_first(o);

        if (k == 0 || cmd->argc < k || cmd->argv[k - 1].kind != BARG_INT)
            return 0;
        return w->p->slot_map[ur_u64_slot(cmd->argv[k - 1].num)];
    }
    if (o->flags & OPF_GLOBAL)
        return ROUTE_ALL;
    if (!(o->flags & (OPF_USER | OPF_GID)) || cmd->argc == 0 ||
        cmd->argv[0].kind != BARG_INT)
        return 0;
    return (unsigned)unread_shard_of(w->placement, cmd->argv[0].num);
}

/* Appends one request to socket s's output and its ring. */
static int sock_push(struct worker *w, struct sock *s,
                     const struct bench_cmd *cmd, uint64_t now)
{
    const struct bench_plan *p = w->p;
    struct flight *f = &s->ring[(s->head + s->count) % s->cap];

    if (bench_encode(&s->out, p->target, cmd, s->next_id) != 0)
        return fail(w, "%s: cannot encode a request for %s", p->wl->name,
                    bench_target_name(p->target));
    f->sent_ns = now;
    f->id = s->next_id++;
    f->expect = cmd->expect;
    s->count++;
    s->conn->count++;
    w->inflight++;
    return 0;
}

/* Tops the connection up to its depth, encoding into its sockets' output
 * buffers. A socket's ring holds the depth plus one operation or load
 * step, which is what one connection can have in flight at most. */
static int conn_fill(struct worker *w, struct conn *c, uint64_t now)
{
    const struct bench_plan *p = w->p;

    while (c->count < p->pipeline && has_work(w, c, now)) {
        unsigned n = next_op(w, c, w->cmds);

        for (unsigned i = 0; i < n; i++) {
            unsigned to = route(w, &w->cmds[i]);

            for (unsigned s = 0; s < c->nsock; s++)
                if ((to == ROUTE_ALL || to == s) &&
                    sock_push(w, &c->socks[s], &w->cmds[i], now) != 0)
                    return -1;
        }
    }
    return 0;
}

static int set_events(struct worker *w, struct sock *c, bool out)
{
    struct epoll_event ev = {EPOLLIN | (out ? EPOLLOUT : 0), {.ptr = c}};

    if (epoll_ctl(w->ep, EPOLL_CTL_MOD, c->fd, &ev) != 0)
        return fail(w, "epoll_ctl: %s", strerror(errno));
    c->want_out = out;
    return 0;
}

/* Writes what the socket takes; EPOLLOUT is armed only while it is full. */
static int sock_flush(struct worker *w, struct sock *c)
{
    while (c->out_sent < c->out.len) {
        ssize_t n = bench_tls_write(c->fd, c->ssl, c->out.data + c->out_sent,
                                    c->out.len - c->out_sent);

        if (n > 0) {
            c->out_sent += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return c->want_out ? 0 : set_events(w, c, true);
        return fail(w, "write: %s", bench_tls_error(c->ssl, errno));
    }
    c->out.len = 0;
    c->out_sent = 0;
    return c->want_out ? set_events(w, c, false) : 0;
}

/* Tops the connection up and writes every socket that has output. */
static int conn_send(struct worker *w, struct conn *c, uint64_t now)
{
    if (conn_fill(w, c, now) != 0)
        return -1;
    for (unsigned s = 0; s < c->nsock; s++)
        if (c->socks[s].out.len > 0 && sock_flush(w, &c->socks[s]) != 0)
            return -1;
    return 0;
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
static int on_reply(struct worker *w, struct sock *c,
                    const struct bench_reply *r, uint64_t now)
{
    const struct shared *sh = w->sh;
    struct flight *f;

    if (c->count == 0)
        return fail(w, "a reply to no request");
    f = &c->ring[c->head];
    c->head = (c->head + 1) % c->cap;
    c->count--;
    c->conn->count--;
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
static int sock_read(struct worker *w, struct sock *c, uint64_t now)
{
    struct bench_reply r;
    size_t off = 0;

    for (;;) {
        size_t room;
        ssize_t n;

        if (ur_buf_reserve(&c->in, READ_CHUNK) != 0)
            return fail(w, "out of memory");
        room = c->in.cap - c->in.len;
        n = bench_tls_read(c->fd, c->ssl, c->in.data + c->in.len, room);
        if (n > 0) {
            c->in.len += (size_t)n;
            /* short: the socket is empty, unless TLS holds more (a read
             * returns one record at most) */
            if ((size_t)n < room && bench_tls_pending(c->ssl) == 0)
                break;
            continue;
        }
        if (n == 0)
            return fail(w, "the server closed a connection");
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            break;
        return fail(w, "read: %s", bench_tls_error(c->ssl, errno));
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
        if (conn_send(w, &w->conns[i], now) != 0)
            return NULL;
    while (w->inflight > 0 && !atomic_load(&w->sh->abort)) {
        int n = epoll_wait(w->ep, evs, MAX_EVENTS, WAIT_MS);

        if (n < 0 && errno != EINTR) {
            fail(w, "epoll_wait: %s", strerror(errno));
            return NULL;
        }
        for (int i = 0; i < n; i++) {
            struct sock *s = evs[i].data.ptr;

            now = now_ns();
            if ((evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) &&
                sock_read(w, s, now) != 0)
                return NULL;
            if ((evs[i].events & EPOLLOUT) && sock_flush(w, s) != 0)
                return NULL;
            if (conn_send(w, s->conn, now) != 0)
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

static void sock_deinit(struct sock *s)
{
    bench_tls_close(s->ssl);
    if (s->fd >= 0)
        close(s->fd);
    ur_buf_deinit(&s->in);
    ur_buf_deinit(&s->out);
    free(s->ring);
}

static void conn_deinit(struct conn *c)
{
    for (unsigned s = 0; s < c->nsock; s++)
        sock_deinit(&c->socks[s]);
    free(c->socks);
}

/* Splits "host:port" or "[v6]:port" (a placement's server name) into
 * host[0..hostlen) and *port; -1 when it has no port. */
static int split_name(const char *name, char *host, size_t hostlen,
                      uint16_t *port)
{
    const char *colon = strrchr(name, ':');
    const char *h = name;
    size_t n;
    uint64_t v;

    if (colon == NULL || !ur_parse_u64(colon + 1, strlen(colon + 1), &v) ||
        v == 0 || v > 65535)
        return -1;
    n = (size_t)(colon - name);
    if (n >= 2 && name[0] == '[' && name[n - 1] == ']') {
        h++;
        n -= 2;
    }
    if (n == 0 || n >= hostlen)
        return -1;
    memcpy(host, h, n);
    host[n] = '\0';
    *port = (uint16_t)v;
    return 0;
}

/* Socket i of c: connected to server i (the plan's one server, or the
 * placement's i-th), non-blocking, in w's epoll set. */
static int sock_init(struct worker *w, struct conn *c, unsigned i, unsigned cap,
                     char *err, size_t errlen)
{
    const struct bench_plan *p = w->p;
    struct sock *s = &c->socks[i];
    struct epoll_event ev = {EPOLLIN, {.ptr = s}};
    const char *host = p->host;
    uint16_t port = p->port;
    char name[256];

    s->fd = -1;
    s->conn = c;
    s->cap = cap;
    s->next_id = 1;
    s->ring = calloc(cap, sizeof(*s->ring));
    if (s->ring == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (w->placement != NULL) {
        if (split_name(unread_shard_name(w->placement, i), name, sizeof(name),
                       &port) != 0) {
            snprintf(err, errlen, "bad server name '%s'",
                     unread_shard_name(w->placement, i));
            return -1;
        }
        host = name;
    }
    s->fd = bench_dial(host, port, err, errlen);
    if (s->fd < 0)
        return -1;
    if (bench_tls_on() &&
        (s->ssl = bench_tls_connect(s->fd, err, errlen)) == NULL)
        return -1;
    if (fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) | O_NONBLOCK) != 0 ||
        epoll_ctl(w->ep, EPOLL_CTL_ADD, s->fd, &ev) != 0) {
        snprintf(err, errlen, "socket set-up: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* First key of connection g's run when n keys are split into conns runs
 * of consecutive keys whose lengths differ by at most one. */
static uint64_t run_start(uint64_t n, unsigned conns, unsigned g)
{
    uint64_t extra = n % conns;

    return n / conns * g + (g < extra ? g : extra);
}

/* Connection number g of the plan: one socket per server. */
static int conn_init(struct worker *w, struct conn *c, unsigned g, char *err,
                     size_t errlen)
{
    const struct bench_plan *p = w->p;
    unsigned cap = p->pipeline + (p->load ? BENCH_LOAD_MAX : BENCH_OP_MAX);

    memset(c, 0, sizeof(*c));
    bench_rng_seed(&c->rng, p->seed ^ ((uint64_t)g << 32 | g));
    if (p->load) {
        c->next = run_start(p->keys.n, p->conns, g);
        c->end = run_start(p->keys.n, p->conns, g + 1);
    } else if (p->requests > 0) {
        c->next = p->requests / p->conns + (g < p->requests % p->conns);
    }
    c->nsock = w->placement ? (unsigned)unread_shards(w->placement) : 1;
    c->socks = calloc(c->nsock, sizeof(*c->socks));
    if (c->socks == NULL) {
        c->nsock = 0;
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (unsigned i = 0; i < c->nsock; i++)
        if (sock_init(w, c, i, cap, err, errlen) != 0) {
            for (unsigned j = i + 1; j < c->nsock; j++)
                c->socks[j].fd = -1; /* so that it is freed */
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
        free(ws[t].cmds);
        unread_close(ws[t].placement);
        if (ws[t].ep >= 0)
            close(ws[t].ep);
    }
    free(ws);
}

/* --cluster: the thread's own placement handle (a libunread handle is
 * used by one thread at a time), connected to every server. */
static int placement_open(struct worker *w, char *err, size_t errlen)
{
    struct unread_opts *o;

    if (w->p->cluster == NULL)
        return 0;
    o = unread_opts_new();
    if (o == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    unread_opts_set_timeouts(o, CLUSTER_TIMEOUT_MS, 1000, 1000);
    w->placement = unread_connect_cluster(w->p->cluster, o, err, errlen);
    unread_opts_free(o);
    return w->placement != NULL ? 0 : -1;
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
        w->cmds =
            calloc(p->load ? BENCH_LOAD_MAX : BENCH_OP_MAX, sizeof(*w->cmds));
        if (w->ep < 0 || w->conns == NULL || w->cmds == NULL) {
            snprintf(err, errlen, "out of memory or descriptors");
            return -1;
        }
        if (placement_open(w, err, errlen) != 0)
            return -1;
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
    double cpu0 = 0, cpu1 = 0, srv0 = -1, srv1 = -1;
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
        srv0 = proc_cpu_seconds(p->server_pid);
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
        srv0 = proc_cpu_seconds(p->server_pid);
        wait_until(&sh, sh.stop_ns);
        cpu1 = cpu_seconds();
        srv1 = proc_cpu_seconds(p->server_pid);
    }
    for (unsigned t = 0; t < started; t++)
        pthread_join(ws[t].th, NULL);
    if (!by_time) {
        cpu1 = cpu_seconds();
        srv1 = proc_cpu_seconds(p->server_pid);
    }
    res->wall_s = by_time ? p->seconds : (double)(now_ns() - t0) / NS_PER_S;
    res->cpu_s = cpu1 - cpu0;
    res->server_cpu_s = srv0 >= 0 && srv1 >= 0 ? srv1 - srv0 : -1;
    if (started == p->threads)
        rc = workers_merge(ws, p->threads, res, err, errlen);
out:
    workers_free(ws, p->threads);
    return rc;
}
