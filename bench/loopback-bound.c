/*
 * loopback-bound.c - what this machine's kernel allows the badge phase of
 * bench/pubsub.py, with no server at all (docs/PERFORMANCE.md, "Pub/sub"):
 * a sender writes one small message per send to a random one of N
 * loopback TCP connections, a receiver process reads them all with epoll,
 * as pubsub-bench's subscribers do. On loopback the receiver's TCP
 * receive path, its wake-up and its ACK run in the sender's send, on the
 * sender's core, so the sender's CPU per message is the least a server
 * pays per badge message on this machine, at this hour (the figure moves
 * with the host's load by tens of percent between hours).
 *
 *   loopback-bound [-n conns] [-d seconds] [-m bytes] [-u batch] [-j]
 *
 * -u batch sends batch messages per io_uring_enter (IORING_OP_SEND,
 * bare system calls) instead of one write() each: what batching the
 * system calls would save. With two or more CPUs the sender runs on CPU 0
 * and the receiver on CPU 1 (the pinning of bench/pubsub.py). Output: the
 * sender's messages/s, its CPU (cores), its CPU per message, messages per
 * core-second of the sender, the receiver's rate, TCP segments per
 * message (/proc/net/snmp), as text or one JSON object (-j).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

static struct {
    unsigned conns, msg, batch;
    double seconds;
    bool json;
} opt = {10000, 60, 0, 4, false};

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpu_seconds(void)
{
    struct rusage r;

    getrusage(RUSAGE_SELF, &r);
    return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
           (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

static void die(const char *what)
{
    fprintf(stderr, "loopback-bound: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void pin(int cpu)
{
    cpu_set_t s;

    if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
        return;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    (void)sched_setaffinity(0, sizeof(s), &s);
}

/* Tcp: OutSegs of /proc/net/snmp (the whole machine's), -1 if unknown. */
static long long out_segs(void)
{
    FILE *f = fopen("/proc/net/snmp", "r");
    char names[2048], vals[2048];
    long long v = -1;

    if (f == NULL)
        return -1;
    while (fgets(names, sizeof(names), f) != NULL) {
        if (strncmp(names, "Tcp:", 4) != 0 ||
            fgets(vals, sizeof(vals), f) == NULL)
            continue;
        char *sn, *sv;
        char *n = strtok_r(names, " \n", &sn), *x = strtok_r(vals, " \n", &sv);

        for (; n != NULL && x != NULL;
             n = strtok_r(NULL, " \n", &sn), x = strtok_r(NULL, " \n", &sv))
            if (strcmp(n, "OutSegs") == 0)
                v = atoll(x);
        break;
    }
    fclose(f);
    return v;
}

/* ---- the receiver: reads everything; its byte count in shared memory -- */

static uint64_t *shared_bytes;

static void receiver(const struct sockaddr_in *sa)
{
    int ep = epoll_create1(0), one = 1;
    int *fds = calloc(opt.conns, sizeof(*fds));
    static char buf[65536];
    struct epoll_event evs[256];
    uint64_t bytes = 0;

    pin(1);
    if (ep < 0 || fds == NULL)
        die("receiver setup");
    for (unsigned i = 0; i < opt.conns; i++) {
        struct epoll_event ev = {EPOLLIN, {.u32 = i}};

        fds[i] = socket(AF_INET, SOCK_STREAM, 0);
        if (fds[i] < 0 || connect(fds[i], (const void *)sa, sizeof(*sa)) != 0)
            die("connect");
        setsockopt(fds[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        fcntl(fds[i], F_SETFL, O_NONBLOCK);
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev) != 0)
            die("epoll_ctl");
    }
    for (;;) {
        int n = epoll_wait(ep, evs, 256, 100);

        for (int i = 0; i < n; i++) {
            ssize_t r;

            while ((r = read(fds[evs[i].data.u32], buf, sizeof(buf))) > 0)
                bytes += (uint64_t)r;
            if (r == 0) /* the sender is done */
                _exit(0);
        }
        __atomic_store_n(shared_bytes, bytes, __ATOMIC_RELAXED);
    }
}

/* ---- io_uring, bare: one SQ/CQ pair for batches of sends ---------------- */

static struct {
    int fd;
    unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
    struct io_uring_sqe *sqes;
    struct io_uring_cqe *cqes;
} ring = {-1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};

static void ring_setup(unsigned entries)
{
    struct io_uring_params p;
    char *sq, *cq;

    memset(&p, 0, sizeof(p));
    ring.fd = (int)syscall(__NR_io_uring_setup, entries, &p);
    if (ring.fd < 0)
        die("io_uring_setup");
    sq = mmap(NULL, p.sq_off.array + p.sq_entries * sizeof(unsigned),
              PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring.fd,
              IORING_OFF_SQ_RING);
    cq = mmap(NULL, p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe),
              PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring.fd,
              IORING_OFF_CQ_RING);
    ring.sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe),
                     PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring.fd,
                     IORING_OFF_SQES);
    if (sq == MAP_FAILED || cq == MAP_FAILED || ring.sqes == MAP_FAILED)
        die("mmap io_uring");
    ring.sq_tail = (unsigned *)(void *)(sq + p.sq_off.tail);
    ring.sq_mask = (unsigned *)(void *)(sq + p.sq_off.ring_mask);
    ring.sq_array = (unsigned *)(void *)(sq + p.sq_off.array);
    ring.cq_head = (unsigned *)(void *)(cq + p.cq_off.head);
    ring.cq_tail = (unsigned *)(void *)(cq + p.cq_off.tail);
    ring.cq_mask = (unsigned *)(void *)(cq + p.cq_off.ring_mask);
    ring.cqes = (struct io_uring_cqe *)(void *)(cq + p.cq_off.cqes);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static unsigned next_conn(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % opt.conns);
}

/* batch sends, through the ring or one write() each: how many went. */
static unsigned send_batch(const int *fds, const char *m, unsigned batch)
{
    unsigned sent = 0;

    if (ring.fd < 0) {
        for (unsigned j = 0; j < batch; j++)
            if (write(fds[next_conn()], m, opt.msg) == (ssize_t)opt.msg)
                sent++;
        return sent;
    }
    unsigned tail = *ring.sq_tail;

    for (unsigned j = 0; j < batch; j++, tail++) {
        unsigned idx = tail & *ring.sq_mask;
        struct io_uring_sqe *e = &ring.sqes[idx];

        memset(e, 0, sizeof(*e));
        e->opcode = IORING_OP_SEND;
        e->fd = fds[next_conn()];
        e->addr = (uint64_t)(uintptr_t)m;
        e->len = opt.msg;
        e->msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL;
        ring.sq_array[idx] = idx;
    }
    __atomic_store_n(ring.sq_tail, tail, __ATOMIC_RELEASE);
    if (syscall(__NR_io_uring_enter, ring.fd, batch, batch,
                IORING_ENTER_GETEVENTS, NULL, 0) < 0)
        die("io_uring_enter");
    unsigned h = *ring.cq_head;
    unsigned t = __atomic_load_n(ring.cq_tail, __ATOMIC_ACQUIRE);

    for (; h != t; h++)
        if (ring.cqes[h & *ring.cq_mask].res == (int)opt.msg)
            sent++;
    __atomic_store_n(ring.cq_head, h, __ATOMIC_RELEASE);
    return sent;
}

static void usage(void)
{
    fprintf(stderr, "usage: loopback-bound [-n conns (10000)] [-d seconds "
                    "(4)] [-m bytes (60)] [-u io_uring batch (0: write)] "
                    "[-j]\n");
    exit(1);
}

int main(int argc, char **argv)
{
    struct sockaddr_in sa = {0};
    socklen_t sl = sizeof(sa);
    struct rlimit rl;
    int o, ls, one = 1;
    pid_t child;

    while ((o = getopt(argc, argv, "n:d:m:u:j")) != -1) {
        switch (o) {
        case 'n':
            opt.conns = (unsigned)atoi(optarg);
            break;
        case 'd':
            opt.seconds = atof(optarg);
            break;
        case 'm':
            opt.msg = (unsigned)atoi(optarg);
            break;
        case 'u':
            opt.batch = (unsigned)atoi(optarg);
            break;
        case 'j':
            opt.json = true;
            break;
        default:
            usage();
        }
    }
    if (opt.conns == 0 || opt.msg == 0 || opt.msg > 4096 || opt.seconds <= 0 ||
        opt.batch > 256)
        usage();
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
        rl.rlim_cur < 2 * opt.conns + 64) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    shared_bytes = mmap(NULL, sizeof(uint64_t), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared_bytes == MAP_FAILED)
        die("mmap");
    ls = socket(AF_INET, SOCK_STREAM, 0);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (ls < 0 || bind(ls, (void *)&sa, sizeof(sa)) != 0 ||
        listen(ls, 4096) != 0 || getsockname(ls, (void *)&sa, &sl) != 0)
        die("listen");
    child = fork();
    if (child < 0)
        die("fork");
    if (child == 0)
        receiver(&sa);
    pin(0);

    int *fds = calloc(opt.conns, sizeof(*fds));
    static char m[4096];

    if (fds == NULL)
        die("calloc");
    memset(m, 'x', sizeof(m));
    for (unsigned i = 0; i < opt.conns; i++) {
        fds[i] = accept(ls, NULL, NULL);
        if (fds[i] < 0)
            die("accept");
        setsockopt(fds[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        fcntl(fds[i], F_SETFL, O_NONBLOCK);
    }
    if (opt.batch > 0)
        ring_setup(256);

    /* A second of warm-up, then the window. */
    unsigned batch = opt.batch ? opt.batch : 64;
    uint64_t sent = 0, s0 = 0, r0 = 0;
    double start = now(), t0 = 0, c0 = 0, wall;
    long long g0 = 0;
    bool measuring = false;

    for (;;) {
        sent += send_batch(fds, m, batch);
        double t = now();

        if (!measuring && t >= start + 1) {
            measuring = true;
            t0 = t;
            s0 = sent;
            c0 = cpu_seconds();
            g0 = out_segs();
            r0 = __atomic_load_n(shared_bytes, __ATOMIC_RELAXED);
        } else if (measuring && t >= t0 + opt.seconds) {
            break;
        }
    }
    wall = now() - t0;
    double cpu = cpu_seconds() - c0;
    long long segs = out_segs() - g0;
    uint64_t got = __atomic_load_n(shared_bytes, __ATOMIC_RELAXED) - r0;
    uint64_t n = sent - s0;

    for (unsigned i = 0; i < opt.conns; i++)
        close(fds[i]);
    free(fds);
    waitpid(child, NULL, 0);
    if (n == 0 || cpu <= 0) {
        fprintf(stderr, "loopback-bound: nothing measured\n");
        return 1;
    }
    if (opt.json)
        printf("{\"conns\": %u, \"bytes\": %u, \"io_uring_batch\": %u, "
               "\"messages_per_sec\": %.0f, \"sender_cores\": %.3f, "
               "\"us_per_message\": %.3f, \"messages_per_core_second\": %.0f, "
               "\"received_per_sec\": %.0f, \"segments_per_message\": %.2f}\n",
               opt.conns, opt.msg, opt.batch, (double)n / wall, cpu / wall,
               cpu / (double)n * 1e6, (double)n / cpu,
               (double)got / opt.msg / wall,
               segs >= 0 ? (double)segs / (double)n : -1.0);
    else
        printf("%u connections, %u-byte messages, %s: %.0f messages/s, "
               "sender %.2f cores, %.2f us per message (%.0f per core-second), "
               "received %.0f/s, %.2f TCP segments per message\n",
               opt.conns, opt.msg, opt.batch ? "io_uring batches" : "write()",
               (double)n / wall, cpu / wall, cpu / (double)n * 1e6,
               (double)n / cpu, (double)got / opt.msg / wall,
               segs >= 0 ? (double)segs / (double)n : -1.0);
    return 0;
}
