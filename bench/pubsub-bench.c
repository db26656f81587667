/*
 * pubsub-bench.c - subscribers at scale, over RESP, against unreadd or
 * Redis (bench/pubsub.py runs it; docs/PERFORMANCE.md, "Pub/sub"):
 *
 *   badge   S subscriber connections, each on its own badge:<uid> (uids
 *           base..base+S-1), and C writer connections keeping P
 *           `CNT.INCR uid 0` each in flight to random users of those
 *           (unreadd with notify-badges yes). Reports writes/s, push
 *           messages/s delivered, and the latency from a write's reply to
 *           the arrival of the first badge message that reports it (its
 *           cnt.0 value or a later one), p50/p99/p99.9.
 *   fanout  S subscribers on one channel and one publisher keeping P
 *           `PUBLISH fan <payload>` in flight; the payload starts with the
 *           send time. Reports publishes/s, messages/s delivered (every
 *           subscriber's), and publish-to-arrival latency. Redis and
 *           unreadd alike.
 *   gateway push as deployed (issue 34): G gateway connections (-g) hold
 *           the S badge:<uid> subscriptions between them (uid i on
 *           gateway i mod G, subscribed 1,000 channels a command), the
 *           writers as in badge mode. With --publish the writers send
 *           `PUBLISH badge:<uid> "cnt.0 <n>"` instead (n counted here, one
 *           per write): Redis's equivalent of a write that pushes its
 *           badge, without the counter. The same figures as badge mode,
 *           and the server's write and read syscalls per message
 *           delivered (/proc/<pid>/io syscw, syscr). With --external
 *           the subscriptions are held by another process
 *           (client-lib/examples/push_gateway.c, through libunread):
 *           writers only, the server's own count (INFO pubsub_delivered)
 *           is the rate, and there is no latency.
 *
 * One thread, epoll, nonblocking sockets: the client is as cheap per
 * message as it can be, and its CPU is reported so a run it bounded is
 * recognizable. Output: text, or one JSON object with --json.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include "bench_hist.h"

#define RING 16 /* writes per user awaiting their badge message */

struct pending {
    uint64_t value;
    uint64_t ns;
};

struct user {
    struct pending ring[RING];
    unsigned n;
    uint64_t sent;      /* --publish: the last n published for it */
    uint64_t pushed;    /* the highest cnt.0 a badge message reported */
    uint64_t pushed_ns; /* ... and when it arrived */
};

enum role { SUBSCRIBER, WRITER };

struct conn {
    int fd;
    enum role role;
    char *in;
    size_t in_len, in_cap;
    char *out;
    size_t out_len, out_off, out_cap;
    uint64_t *inflight;     /* writer: the uid of each request, in order */
    uint64_t *inflight_val; /* --publish: the n each PUBLISH carries */
    unsigned head, count;
    bool confirmed;   /* subscriber: its SUBSCRIBE was answered */
    unsigned want;    /* gateway: channels it subscribes to */
    unsigned granted; /* ... and the confirmations so far */
};

static struct {
    const char *host;
    int port;
    bool fanout, gateway, publish, external;
    unsigned gateways;
    unsigned subs, writers, pipeline;
    double seconds, warmup;
    uint64_t base;
    unsigned payload;
    bool json;
} opt = {"127.0.0.1", 7460, false, false, false,   false, 4,    1000,
         4,           16,   5,     1,     1000000, 64,    false};

static struct user *users;
static struct conn *conns;
static unsigned nconns;
static int ep;
static bool measuring;
static struct bench_hist hist;
static uint64_t writes, messages, errors;

/* The window in slices of SLICE_NS: messages parsed in each, so that a
 * window still ramping up (or draining) shows as uneven slices. */
#define SLICE_NS 500000000ull
#define SLICES_MAX 1024
static double slice_rate[SLICES_MAX];
static unsigned nslices;
static uint64_t slice_end, slice_base, slice_t;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t next_rand(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545f4914f6cdd1dull;
}

static void die(const char *what)
{
    fprintf(stderr, "pubsub-bench: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (p == NULL)
        die("realloc");
    return p;
}

static void out_append(struct conn *c, const char *s, size_t n)
{
    if (c->out_len + n > c->out_cap) {
        c->out_cap = (c->out_len + n) * 2;
        c->out = xrealloc(c->out, c->out_cap);
    }
    memcpy(c->out + c->out_len, s, n);
    c->out_len += n;
}

/* A command as a RESP multibulk of strings. */
static void out_cmd(struct conn *c, int argc, const char **argv,
                    const size_t *len)
{
    char hdr[32];
    int n = snprintf(hdr, sizeof(hdr), "*%d\r\n", argc);

    out_append(c, hdr, (size_t)n);
    for (int i = 0; i < argc; i++) {
        n = snprintf(hdr, sizeof(hdr), "$%zu\r\n", len[i]);
        out_append(c, hdr, (size_t)n);
        out_append(c, argv[i], len[i]);
        out_append(c, "\r\n", 2);
    }
}

static void flush_out(struct conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = write(c->fd, c->out + c->out_off, c->out_len - c->out_off);

        if (n > 0) {
            c->out_off += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && errno == EAGAIN) {
            struct epoll_event ev = {EPOLLIN | EPOLLOUT, {.ptr = c}};
            epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
            return;
        } else {
            die("write");
        }
    }
    c->out_off = c->out_len = 0;
}

/* ---- RESP: just what the replies and messages here need --------------- */

/* The line at p[0..n) up to CRLF: its length (CRLF excluded), or -1 when
 * incomplete. */
static long line_len(const char *p, size_t n)
{
    const char *e = memchr(p, '\r', n);

    if (e == NULL || (size_t)(e - p) + 1 >= n)
        return -1;
    return e - p;
}

struct val {
    char type;
    long long num;   /* ':' and the counts of '*', '>' and '$' */
    const char *str; /* '$' */
    size_t len;
};

/* One value's header (and a bulk's bytes) at p: bytes used, 0 when
 * incomplete. */
static size_t read_val(const char *p, size_t n, struct val *v)
{
    long l = line_len(p, n);

    if (l < 1)
        return 0;
    v->type = p[0];
    v->num = strtoll(p + 1, NULL, 10);
    if (v->type == '$' && v->num >= 0) {
        size_t need = (size_t)l + 2 + (size_t)v->num + 2;

        if (need > n)
            return 0;
        v->str = p + l + 2;
        v->len = (size_t)v->num;
        return need;
    }
    return (size_t)l + 2;
}

/* One whole reply or message (an aggregate of scalars): its elements in
 * el[0..*count), bytes used, 0 when incomplete. */
static size_t read_msg(const char *p, size_t n, struct val *el, int max,
                       int *count)
{
    struct val top;
    size_t used = read_val(p, n, &top), k;

    *count = 0;
    if (used == 0)
        return 0;
    if (top.type != '*' && top.type != '>') {
        el[0] = top;
        *count = 1;
        return used;
    }
    for (long long i = 0; i < top.num; i++) {
        struct val v;

        k = read_val(p + used, n - used, &v);
        if (k == 0)
            return 0;
        if (*count < max)
            el[(*count)++] = v;
        used += k;
    }
    return used;
}

/* ---- the load ------------------------------------------------------------ */

static void send_write(struct conn *c)
{
    uint64_t uid = opt.base + next_rand() % opt.subs;
    unsigned slot = (c->head + c->count) % opt.pipeline;
    char num[24], cmd[128];
    int nl = snprintf(num, sizeof(num), "%llu", (unsigned long long)uid);
    int n;

    if (opt.publish) {
        char ch[40], msg[40];
        uint64_t v = ++users[uid - opt.base].sent;
        const char *argv[3] = {"PUBLISH", ch, msg};
        size_t len[3] = {7, 0, 0};

        len[1] = (size_t)snprintf(ch, sizeof(ch), "badge:%s", num);
        len[2] = (size_t)snprintf(msg, sizeof(msg), "cnt.0 %llu ",
                                  (unsigned long long)v);
        out_cmd(c, 3, argv, len);
        c->inflight_val[slot] = v;
    } else {
        n = snprintf(cmd, sizeof(cmd),
                     "*4\r\n$8\r\nCNT.INCR\r\n$%d\r\n%s\r\n$1\r\n0\r\n$1\r\n"
                     "1\r\n",
                     nl, num);
        out_append(c, cmd, (size_t)n);
    }
    c->inflight[slot] = uid;
    c->count++;
}

static void send_publish(struct conn *c)
{
    char payload[4096];
    const char *argv[3] = {"PUBLISH", "fan", payload};
    size_t len[3] = {7, 3, opt.payload};
    int n = snprintf(payload, sizeof(payload), "%020llu",
                     (unsigned long long)now_ns());

    memset(payload + n, 'x', opt.payload > (unsigned)n ? opt.payload - n : 0);
    out_cmd(c, 3, argv, len);
    c->count++;
}

static void refill(struct conn *c)
{
    while (c->count < opt.pipeline) {
        if (opt.fanout)
            send_publish(c);
        else
            send_write(c);
    }
    flush_out(c);
}

static struct user *user_of(uint64_t uid)
{
    return &users[uid - opt.base];
}

/* The reply to a CNT.INCR: the value after it. */
static void on_write_reply(uint64_t uid, uint64_t value, uint64_t t)
{
    struct user *u = user_of(uid);

    if (measuring)
        writes++;
    if (opt.external)
        return; /* its message goes to another process: no latency */
    if (u->pushed >= value) { /* its badge message came first */
        if (measuring)
            bench_hist_record(&hist, 0);
        return;
    }
    if (u->n == RING) { /* never reported yet: counted as its age now */
        if (measuring)
            bench_hist_record(&hist, t - u->ring[0].ns);
        memmove(u->ring, u->ring + 1, (RING - 1) * sizeof(u->ring[0]));
        u->n--;
    }
    u->ring[u->n].value = value;
    u->ring[u->n].ns = t;
    u->n++;
}

static uint64_t field_value(const char *s, size_t n, const char *name)
{
    size_t k = strlen(name);

    for (size_t i = 0; i + k < n; i++)
        if ((i == 0 || s[i - 1] == ' ') && memcmp(s + i, name, k) == 0 &&
            s[i + k] == ' ')
            return strtoull(s + i + k + 1, NULL, 10);
    return 0;
}

static void on_badge(const struct val *ch, const struct val *msg, uint64_t t)
{
    uint64_t uid = strtoull(ch->str + 6, NULL, 10);
    uint64_t v = field_value(msg->str, msg->len, "cnt.0");
    struct user *u;
    unsigned k = 0;

    if (uid < opt.base || uid >= opt.base + opt.subs)
        return;
    u = user_of(uid);
    if (v > u->pushed) {
        u->pushed = v;
        u->pushed_ns = t;
    }
    for (unsigned i = 0; i < u->n; i++) {
        if (u->ring[i].value <= v) {
            if (measuring)
                bench_hist_record(&hist, t - u->ring[i].ns);
        } else {
            u->ring[k++] = u->ring[i];
        }
    }
    u->n = k;
}

static void on_readable(struct conn *c)
{
    for (;;) {
        ssize_t n;

        /* A subscriber's messages are small and it is one of thousands:
         * a small buffer (a large one is an mmap and its page faults per
         * connection, in the first seconds of the run). */
        size_t room = c->role == WRITER || opt.gateway ? 65536 : 2048;

        if (c->in_cap - c->in_len < room) {
            c->in_cap = c->in_cap ? c->in_cap * 2 : 2 * room;
            c->in = xrealloc(c->in, c->in_cap);
        }
        n = read(c->fd, c->in + c->in_len, c->in_cap - c->in_len);
        if (n == 0) {
            fprintf(stderr, "pubsub-bench: the server closed a %s\n",
                    c->role == WRITER ? "publisher" : "subscriber");
            exit(1);
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                break;
            die("read");
        }
        c->in_len += (size_t)n;
        if ((size_t)n < c->in_cap - c->in_len)
            break;
    }
    uint64_t t = now_ns();
    size_t off = 0;
    bool replied = false;

    for (;;) {
        struct val el[4];
        int count;
        size_t used = read_msg(c->in + off, c->in_len - off, el, 4, &count);

        if (used == 0)
            break;
        off += used;
        if (count >= 1 && el[0].type == '-') {
            errors++;
            fprintf(stderr, "pubsub-bench: error reply: %.*s\n",
                    (int)line_len(c->in + off - used, used),
                    c->in + off - used);
            exit(2);
        }
        if (c->role == WRITER) {
            uint64_t uid = c->inflight[c->head];
            uint64_t val = opt.publish ? c->inflight_val[c->head] : 0;

            c->head = (c->head + 1) % opt.pipeline;
            c->count--;
            replied = true;
            if (opt.fanout) {
                if (measuring)
                    writes++;
            } else if (opt.publish && count == 1 && el[0].type == ':') {
                on_write_reply(uid, val, t);
            } else if (count == 2 && el[0].type == ':') {
                on_write_reply(uid, (uint64_t)el[0].num, t);
            }
            continue;
        }
        /* A subscriber: its confirmation, then messages. */
        if (count == 3 && el[0].len == 9 &&
            memcmp(el[0].str, "subscribe", 9) == 0) {
            c->confirmed = ++c->granted >= c->want;
            continue;
        }
        if (count < 3 || el[0].len != 7 || memcmp(el[0].str, "message", 7))
            continue;
        if (measuring)
            messages++;
        if (opt.fanout) {
            uint64_t sent = strtoull(el[2].str, NULL, 10);

            if (measuring && t > sent)
                bench_hist_record(&hist, t - sent);
        } else {
            on_badge(&el[1], &el[2], t);
        }
    }
    memmove(c->in, c->in + off, c->in_len - off);
    c->in_len -= off;
    if (replied)
        refill(c);
}

static int dial(void)
{
    struct sockaddr_in sa = {0};
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

    if (fd < 0)
        die("socket");
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)opt.port);
    if (inet_pton(AF_INET, opt.host, &sa.sin_addr) != 1) {
        fprintf(stderr, "pubsub-bench: bad host %s\n", opt.host);
        exit(1);
    }
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
        die("connect");
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

static void add_conn(struct conn *c, enum role role)
{
    struct epoll_event ev = {EPOLLIN, {.ptr = c}};

    memset(c, 0, sizeof(*c));
    c->fd = dial();
    c->role = role;
    if (role == WRITER) {
        c->inflight = calloc(opt.pipeline, sizeof(*c->inflight));
        c->inflight_val = calloc(opt.pipeline, sizeof(*c->inflight_val));
    }
    if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) != 0)
        die("epoll_ctl");
}

static void loop_until(uint64_t deadline, bool (*done)(void))
{
    struct epoll_event evs[256];

    while ((deadline == 0 || now_ns() < deadline) &&
           (done == NULL || !done())) {
        int n = epoll_wait(ep, evs, 256, 100);

        if (n < 0 && errno != EINTR)
            die("epoll_wait");
        if (measuring && nslices < SLICES_MAX) {
            uint64_t t = now_ns();

            if (t >= slice_end) {
                slice_rate[nslices++] = (double)(messages - slice_base) * 1e9 /
                                        (double)(t - slice_t);
                slice_base = messages;
                slice_t = t;
                slice_end = t + SLICE_NS;
            }
        }
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;

            if (evs[i].events & EPOLLOUT) {
                struct epoll_event ev = {EPOLLIN, {.ptr = c}};
                epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
                flush_out(c);
            }
            if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
                on_readable(c);
        }
    }
}

static unsigned confirmed;

static unsigned nsubconns; /* subscriber connections: S, or G gateways */

static bool all_confirmed(void)
{
    confirmed = 0;
    for (unsigned i = 0; i < nsubconns; i++)
        confirmed += conns[i].confirmed;
    return confirmed == nsubconns;
}

static double cpu_seconds(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/*
 * The server's own count of messages handed to subscribers (unreadd's INFO
 * stats pubsub_delivered), asked on a blocking side connection at the
 * window's edges: the messages the server sent in the window beside those
 * the subscribers parsed. -1 when the server has no such field (Redis).
 */
static int stats_fd = -1;

static long long info_field(const char *section, const char *field)
{
    char req[64], key[64];
    int rl = snprintf(req, sizeof(req), "*2\r\n$4\r\nINFO\r\n$%zu\r\n%s\r\n",
                      strlen(section), section);
    size_t kl = (size_t)snprintf(key, sizeof(key), "\n%s:", field);
    char buf[65536];
    size_t len = 0;
    long long body = -1;
    const char *f;

    if (stats_fd < 0)
        return -1;
    if (write(stats_fd, req, (size_t)rl) != rl)
        return -1;
    for (;;) { /* one bulk string: $<n>\r\n<n bytes>\r\n */
        ssize_t n = read(stats_fd, buf + len, sizeof(buf) - 1 - len);
        long l;

        if (n <= 0)
            return -1;
        len += (size_t)n;
        buf[len] = '\0';
        if (body < 0 && (l = line_len(buf, len)) > 0) {
            if (buf[0] != '$')
                return -1;
            body = (long long)l + 2 + strtoll(buf + 1, NULL, 10) + 2;
        }
        if (body >= 0 && (long long)len >= body)
            break;
        if (len == sizeof(buf) - 1)
            return -1;
    }
    f = strstr(buf, key);
    return f ? strtoll(f + kl, NULL, 10) : -1;
}

static long long server_delivered(void)
{
    return info_field("stats", "pubsub_delivered");
}

/* The server's CPU seconds (user + system) when it runs on this host
 * (INFO server's process_id, /proc/<pid>/stat), else -1. */
static long long server_pid = -1;

static double server_cpu(void)
{
    char path[64], buf[1024], *p;
    unsigned long long ut, st;
    FILE *f;
    size_t n;

    if (server_pid <= 0)
        return -1;
    snprintf(path, sizeof(path), "/proc/%lld/stat", server_pid);
    if ((f = fopen(path, "r")) == NULL)
        return -1;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* after "(comm) ": state, then fields 4..; utime and stime are 14, 15 */
    if ((p = strrchr(buf, ')')) == NULL ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
               &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* The server's write and read syscalls so far (/proc/<pid>/io syscw,
 * syscr; write(), writev() and read() on its sockets count), or -1. */
static void server_syscalls(long long *w, long long *r)
{
    char path[64], line[128];
    FILE *f;

    *w = *r = -1;
    if (server_pid <= 0)
        return;
    snprintf(path, sizeof(path), "/proc/%lld/io", server_pid);
    if ((f = fopen(path, "r")) == NULL)
        return;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "syscw: ", 7) == 0)
            *w = strtoll(line + 7, NULL, 10);
        else if (strncmp(line, "syscr: ", 7) == 0)
            *r = strtoll(line + 7, NULL, 10);
    }
    fclose(f);
}

/* CPU seconds the whole machine spent busy (user, nice, system, irq,
 * softirq: /proc/stat), -1 when unknown. */
static double machine_busy(void)
{
    unsigned long long v[7];
    FILE *f = fopen("/proc/stat", "r");
    int n;

    if (f == NULL)
        return -1;
    n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
               &v[3], &v[4], &v[5], &v[6]);
    fclose(f);
    if (n != 7)
        return -1;
    return (double)(v[0] + v[1] + v[2] + v[5] + v[6]) /
           (double)sysconf(_SC_CLK_TCK);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: pubsub-bench [options]\n"
            "  -m, --mode badge|fanout|gateway  (badge)\n"
            "  -g, --gateways G         gateway mode: connections holding the\n"
            "                           subscriptions (4)\n"
            "      --publish            writers PUBLISH badge:<uid> (Redis)\n"
            "      --external           gateway mode: the subscriptions are\n"
            "                           another process's: writers only\n"
            "  -h, --host HOST          (127.0.0.1)\n"
            "  -p, --port PORT          (7460)\n"
            "  -s, --subscribers N      subscriber connections, gateway mode:\n"
            "                           subscriptions (1000)\n"
            "  -c, --connections N      writer connections, badge mode (4)\n"
            "  -P, --pipeline N         requests in flight per writer (16)\n"
            "  -d, --duration S         measured seconds (5)\n"
            "      --warmup S           seconds first, not measured (1)\n"
            "      --base UID           first subscriber's uid (1000000)\n"
            "      --payload BYTES      fanout message size (64)\n"
            "  -j, --json               one JSON object on stdout\n");
    exit(1);
}

int main(int argc, char **argv)
{
    static const struct option longs[] = {{"mode", 1, NULL, 'm'},
                                          {"host", 1, NULL, 'h'},
                                          {"port", 1, NULL, 'p'},
                                          {"subscribers", 1, NULL, 's'},
                                          {"connections", 1, NULL, 'c'},
                                          {"pipeline", 1, NULL, 'P'},
                                          {"duration", 1, NULL, 'd'},
                                          {"warmup", 1, NULL, 'W'},
                                          {"base", 1, NULL, 'B'},
                                          {"payload", 1, NULL, 'L'},
                                          {"json", 0, NULL, 'j'},
                                          {"gateways", 1, NULL, 'g'},
                                          {"publish", 0, NULL, 'U'},
                                          {"external", 0, NULL, 'X'},
                                          {NULL, 0, NULL, 0}};
    struct rlimit rl;
    int o;

    while ((o = getopt_long(argc, argv, "m:h:p:s:c:P:d:jg:", longs, NULL)) !=
           -1) {
        switch (o) {
        case 'm':
            if (strcmp(optarg, "fanout") == 0)
                opt.fanout = true;
            else if (strcmp(optarg, "gateway") == 0)
                opt.gateway = true;
            else if (strcmp(optarg, "badge") != 0)
                usage();
            break;
        case 'g':
            opt.gateways = (unsigned)atoi(optarg);
            break;
        case 'U':
            opt.publish = true;
            break;
        case 'X':
            opt.external = true;
            break;
        case 'h':
            opt.host = optarg;
            break;
        case 'p':
            opt.port = atoi(optarg);
            break;
        case 's':
            opt.subs = (unsigned)atoi(optarg);
            break;
        case 'c':
            opt.writers = (unsigned)atoi(optarg);
            break;
        case 'P':
            opt.pipeline = (unsigned)atoi(optarg);
            break;
        case 'd':
            opt.seconds = atof(optarg);
            break;
        case 'W':
            opt.warmup = atof(optarg);
            break;
        case 'B':
            opt.base = strtoull(optarg, NULL, 10);
            break;
        case 'L':
            opt.payload = (unsigned)atoi(optarg);
            break;
        case 'j':
            opt.json = true;
            break;
        default:
            usage();
        }
    }
    if (opt.subs == 0 || opt.pipeline == 0 || opt.seconds <= 0 ||
        opt.payload < 24 || opt.payload > 4000 || opt.writers == 0 ||
        opt.gateways == 0 || (opt.publish && opt.fanout) ||
        (opt.external && !opt.gateway))
        usage();
    if (opt.gateway && opt.gateways > opt.subs)
        opt.gateways = opt.subs;
    if (opt.fanout)
        opt.writers = 1;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
        rl.rlim_cur < opt.subs + opt.writers + 64) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    ep = epoll_create1(0);
    if (ep < 0)
        die("epoll_create1");
    nsubconns = opt.external ? 0 : opt.gateway ? opt.gateways : opt.subs;
    nconns = nsubconns + opt.writers;
    conns = calloc(nconns, sizeof(*conns));
    users = calloc(opt.fanout ? 1 : opt.subs, sizeof(*users));
    if (conns == NULL || users == NULL)
        die("calloc");

    /* Every subscriber subscribed before any load. */
    for (unsigned g = 0; opt.gateway && g < nsubconns; g++) {
        add_conn(&conns[g], SUBSCRIBER);
        for (unsigned i = g; i < opt.subs;) { /* 1,000 channels a command */
            static const char *av[1001];
            static size_t len[1001];
            static char names[1000][40];
            int argc2 = 1;

            av[0] = "SUBSCRIBE";
            len[0] = 9;
            for (; i < opt.subs && argc2 <= 1000; i += nsubconns, argc2++) {
                len[argc2] = (size_t)snprintf(
                    names[argc2 - 1], sizeof(names[0]), "badge:%llu",
                    (unsigned long long)(opt.base + i));
                av[argc2] = names[argc2 - 1];
                conns[g].want++;
            }
            out_cmd(&conns[g], argc2, av, len);
        }
        flush_out(&conns[g]);
    }
    for (unsigned i = 0; !opt.gateway && i < opt.subs; i++) {
        char ch[40];
        const char *av[2] = {"SUBSCRIBE", ch};
        size_t len[2] = {9, 0};

        add_conn(&conns[i], SUBSCRIBER);
        len[1] = opt.fanout
                     ? (size_t)snprintf(ch, sizeof(ch), "fan")
                     : (size_t)snprintf(ch, sizeof(ch), "badge:%llu",
                                        (unsigned long long)(opt.base + i));
        out_cmd(&conns[i], 2, av, len);
        flush_out(&conns[i]);
    }
    loop_until(now_ns() + 60000000000ull, all_confirmed);
    if (confirmed != nsubconns) {
        fprintf(stderr, "pubsub-bench: %u of %u subscribers confirmed\n",
                confirmed, nsubconns);
        return 1;
    }
    stats_fd = dial();
    fcntl(stats_fd, F_SETFL, fcntl(stats_fd, F_GETFL) & ~O_NONBLOCK);
    if (strcmp(opt.host, "127.0.0.1") == 0)
        server_pid = info_field("server", "process_id");
    for (unsigned i = nsubconns; i < nconns; i++) {
        add_conn(&conns[i], WRITER);
        refill(&conns[i]);
    }
    loop_until(now_ns() + (uint64_t)(opt.warmup * 1e9), NULL);

    bench_hist_init(&hist);
    long long sd0 = server_delivered();
    long long sw0, sr0, sw1, sr1;
    server_syscalls(&sw0, &sr0);
    double scpu0 = server_cpu();
    double busy0 = machine_busy();
    measuring = true;
    double cpu0 = cpu_seconds();
    uint64_t t0 = now_ns();
    slice_t = t0;
    slice_end = t0 + SLICE_NS;
    loop_until(t0 + (uint64_t)(opt.seconds * 1e9), NULL);
    double wall = (double)(now_ns() - t0) / 1e9;
    double cpu = cpu_seconds() - cpu0;
    long long sd1 = server_delivered();
    server_syscalls(&sw1, &sr1);
    double scpu = scpu0 >= 0 ? server_cpu() - scpu0 : -1;
    /* the server's syscalls per message the subscribers parsed (the two
     * INFO requests of the window's edges are in them: 4 of millions) */
    double counted = opt.external && sd0 >= 0 && sd1 >= sd0
                         ? (double)(sd1 - sd0) /* --external: the server's */
                         : (double)messages;
    double wpm = sw0 >= 0 && counted > 0 ? (double)(sw1 - sw0) / counted : -1;
    double rpm = sr0 >= 0 && counted > 0 ? (double)(sr1 - sr0) / counted : -1;
    /* Everything else on the machine in the window: other users' noise
     * (-1: unknown). Below 0 is the two clocks' rounding (/proc/stat and
     * the processes' ticks account a softirq apart): nothing else ran. */
    double others =
        busy0 >= 0 && scpu >= 0 ? machine_busy() - busy0 - scpu - cpu : -1;

    if (busy0 >= 0 && scpu >= 0 && others < 0)
        others = 0;
    double smps = sd0 >= 0 && sd1 >= sd0 ? (double)(sd1 - sd0) / wall : -1;
    double smin = 0, smax = 0;

    for (unsigned i = 0; i < nslices; i++) {
        if (i == 0 || slice_rate[i] < smin)
            smin = slice_rate[i];
        if (i == 0 || slice_rate[i] > smax)
            smax = slice_rate[i];
    }

    double wps = (double)writes / wall, mps = (double)messages / wall;
    double p50 = (double)bench_hist_quantile(&hist, 0.5) / 1000.0;
    double p99 = (double)bench_hist_quantile(&hist, 0.99) / 1000.0;
    double p999 = (double)bench_hist_quantile(&hist, 0.999) / 1000.0;
    if (opt.json) {
        printf("{\"mode\": \"%s\", \"subscribers\": %u, \"connections\": %u, "
               "\"pipeline\": %u, \"seconds\": %.3f, \"%s\": %.0f, "
               "\"messages_per_sec\": %.0f, \"latency_samples\": %llu, "
               "\"latency_us\": {\"p50\": %.1f, \"p99\": %.1f, "
               "\"p999\": %.1f, \"max\": %.1f}, \"client_cpu_cores\": %.3f, "
               "\"server_messages_per_sec\": %.0f, \"server_window_cores\": "
               "%.3f, \"others_window_cores\": %.3f, "
               "\"gateways\": %u, \"publish\": %s, "
               "\"server_writes_per_message\": %.4f, "
               "\"server_reads_per_message\": %.4f, "
               "\"slices_messages_per_sec\": [",
               opt.fanout    ? "fanout"
               : opt.gateway ? "gateway"
                             : "badge",
               opt.subs, opt.writers, opt.pipeline, wall,
               opt.fanout ? "publishes_per_sec" : "writes_per_sec", wps, mps,
               (unsigned long long)hist.count, p50, p99, p999,
               (double)hist.max / 1000.0, cpu / wall, smps,
               scpu >= 0 ? scpu / wall : -1.0,
               others >= 0 ? others / wall : -1.0,
               opt.gateway ? (opt.external ? opt.gateways : nsubconns) : 0,
               opt.publish ? "true" : "false", wpm, rpm);
        for (unsigned i = 0; i < nslices; i++)
            printf("%s%.0f", i ? ", " : "", slice_rate[i]);
        printf("]}\n");
    } else {
        printf("%s: %u subscribers, %.0f %s/s, %.0f messages/s delivered, "
               "latency p50 %.1f us p99 %.1f us p99.9 %.1f us (%llu "
               "samples), client %.2f cores\n",
               opt.fanout    ? "fanout"
               : opt.gateway ? "gateway"
                             : "badge",
               opt.subs, wps, opt.fanout ? "publishes" : "writes", mps, p50,
               p99, p999, (unsigned long long)hist.count, cpu / wall);
        printf("  messages/s by %.1f s slice: %.0f-%.0f", SLICE_NS / 1e9, smin,
               smax);
        if (smps >= 0)
            printf("; sent by the server in the window: %.0f/s", smps);
        if (scpu >= 0 && messages > 0)
            printf("; server %.2f cores, %.2f us per message", scpu / wall,
                   scpu / (double)messages * 1e6);
        if (others >= 0)
            printf("; others %.2f cores", others / wall);
        if (wpm >= 0)
            printf("; server syscalls per message: %.3f write, %.3f read", wpm,
                   rpm);
        printf("\n");
    }
    return errors ? 2 : 0;
}
