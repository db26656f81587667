/*
 * test_client.c - libunread against a fake server: a forked child on a
 * loopback port that parses request frames with the real codec, logs each
 * request it receives to a pipe ("0101 i42 s7:mention"), and answers with
 * canned replies chosen by opcode and uid, or misbehaves on purpose
 * (silence, deafness, a reply cut short, a wrong request id, garbage).
 * Several fakes make a cluster. The real server is not needed. The hash
 * ring and the circuit breaker are also tested on their own
 * (unread_shard.h), the breaker with a clock the test drives.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "frame.h"
#include "ops.h"
#include "proto.h"
#include "t.h"
#include "unread_sentinel.h"
#include "unread.h"
#include "unread_shard.h"

/* Test-only opcodes, in the DEBUG range, unknown to the real server. */
#define OP_ECHO 0x0FEE /* replies with its arguments as an array */
#define OP_TREE 0x0FEF /* replies with a fixed nested value */

/* uids that make the fake answer badly */
#define UID_ARITY 666   /* error ARITY */
#define UID_NOAUTH 667  /* error NOAUTH */
#define UID_SHAPE 777   /* a reply of the wrong shape */
#define UID_RANGE 778   /* a value out of range / not ascending */
#define UID_BIGTYPE 779 /* CNT.GETALL with type 64 */

enum fake_mode {
    FAKE_NORMAL,      /* canned replies */
    FAKE_SILENT,      /* reads, never answers */
    FAKE_CLOSE_MID,   /* first connection: half a reply, then close */
    FAKE_BAD_ID,      /* every reply carries id + 1 */
    FAKE_GARBAGE,     /* answers 16 bytes that are not a frame */
    FAKE_CLOSE_AFTER, /* first connection: `arg` replies, then close */
    FAKE_CLOSE_IDLE,  /* first connection: closed after 1 reply */
    FAKE_DEAF,        /* accepts, never reads */
    FAKE_SKEW,        /* canned replies, but global writes answer + 1 */
    FAKE_PUSH         /* a push frame (id 0, flag PUSH) before each reply */
};

struct fake {
    pid_t pid;
    uint16_t port;
    int log; /* read end of the request log, or -1 */
};

/* ---- The fake server (child process) ----------------------------------- */

static uint64_t arg_num(const struct ur_arg *a)
{
    return a->kind == UR_ARG_INT ? a->num : 1000 + a->len;
}

static void put_error(struct ur_buf *b, uint32_t id, uint16_t code,
                      const char *msg)
{
    size_t off;

    ur_frame_reply_begin(b, id, &off);
    ur_frame_put_err(b, code, msg, strlen(msg));
    ur_frame_reply_end(b, off, code);
}

static void put_ints(struct ur_buf *b, size_t n, const uint64_t *v)
{
    size_t i;

    ur_frame_put_arr(b, (uint32_t)n);
    for (i = 0; i < n; i++)
        ur_frame_put_int(b, v[i]);
}

/* The writes a cluster sends to every server. */
static bool is_global(uint16_t op)
{
    const struct ur_op *o = ur_op_by_code(op);

    return o != NULL &&
           ((o->flags & OPF_GLOBAL) || strcmp(o->name, "DOT.PUSH") == 0 ||
            strcmp(o->name, "FEED.POST") == 0 ||
            strcmp(o->name, "FEED.UNPOST") == 0);
}

/* The canned reply to one request. A global write answers its first
 * argument times 10 (plus 1 on a skewed fake), as GRP.POST answers a
 * seq. */
static void fake_answer(struct ur_buf *b, const struct ur_frame_req *rq,
                        uint32_t id, bool skew)
{
    const struct ur_arg *a = rq->argv;
    uint64_t uid = rq->argc > 0 ? arg_num(&a[0]) : 0;
    uint64_t type = rq->argc > 1 ? arg_num(&a[1]) : 0;
    size_t off;
    uint32_t i;

    if (uid == UID_ARITY && rq->op != OP_ECHO) {
        put_error(b, id, UR_E_ARITY,
                  "wrong number of arguments for 'CNT.INCR'");
        return;
    }
    if (uid == UID_NOAUTH && rq->op != OP_ECHO) {
        put_error(b, id, UR_E_NOAUTH, "Authentication required.");
        return;
    }
    ur_frame_reply_begin(b, id, &off);
    if (is_global(rq->op)) {
        ur_frame_put_int(b, uid * 10 + skew);
        ur_frame_reply_end(b, off, 0);
        return;
    }
    switch (rq->op) {
    case UR_OP_PING:
        ur_frame_put_status(b, "PONG", 4);
        break;
    case UR_OP_QUIT:
        ur_frame_put_status(b, "OK", 2);
        break;
    case UR_OP_CONFIG: /* CONFIG GET counter-types (the async handshake) */
        ur_frame_put_arr(b, 2);
        ur_frame_put_str(b, "counter-types", 13);
        ur_frame_put_str(b, "mention comment like dm system", 30);
        break;
    case UR_OP_CNT_INCR:
    case UR_OP_CNT_DECR:
    case UR_OP_CNT_SET:
        if (uid == UID_SHAPE) {
            ur_frame_put_int(b, 5);
        } else {
            uint64_t v[2] = {rq->argc > 2 ? arg_num(&a[2]) : 1, uid * 2 + type};
            put_ints(b, 2, v);
        }
        break;
    case UR_OP_CNT_GET:
        if (uid == UID_SHAPE)
            ur_frame_put_str(b, "x", 1);
        else
            ur_frame_put_int(b, uid == UID_RANGE ? (1ull << 32) : uid + type);
        break;
    case UR_OP_CNT_GETALL: {
        static const uint64_t ok[4] = {0, 3, 4, 1}, odd[3] = {0, 3, 4},
                              desc[4] = {4, 1, 0, 3}, big[2] = {64, 1};
        if (uid == 1)
            put_ints(b, 4, ok);
        else if (uid == UID_SHAPE)
            put_ints(b, 3, odd);
        else if (uid == UID_RANGE)
            put_ints(b, 4, desc);
        else if (uid == UID_BIGTYPE)
            put_ints(b, 2, big);
        else
            put_ints(b, 0, NULL);
        break;
    }
    case UR_OP_CNT_TOTAL:
        ur_frame_put_int(b, uid * 3);
        break;
    case UR_OP_CNT_CLEAR:
        ur_frame_put_int(b, rq->argc - 1);
        break;
    case UR_OP_CNT_MTOTAL: /* each uid's CNT.TOTAL, as above */
        ur_frame_put_arr(b, rq->argc);
        for (i = 0; i < rq->argc; i++)
            ur_frame_put_int(b, arg_num(&a[i]) * 3);
        break;
    case UR_OP_USER_MBADGE: /* a compound element per uid: [uid, "u<uid>"] */
        ur_frame_put_arr(b, rq->argc);
        for (i = 0; i < rq->argc; i++) {
            char name[32];
            int n = snprintf(name, sizeof(name), "u%llu",
                             (unsigned long long)arg_num(&a[i]));

            ur_frame_put_arr(b, 2);
            ur_frame_put_int(b, arg_num(&a[i]));
            ur_frame_put_str(b, name, (size_t)n);
        }
        break;
    case UR_OP_CONV_MTOTAL: /* one element short: a bad shape */
        ur_frame_put_arr(b, rq->argc - 1);
        for (i = 1; i < rq->argc; i++)
            ur_frame_put_int(b, 0);
        break;
    case OP_ECHO:
        ur_frame_put_arr(b, rq->argc);
        for (i = 0; i < rq->argc; i++) {
            if (a[i].kind == UR_ARG_INT)
                ur_frame_put_int(b, a[i].num);
            else
                ur_frame_put_str(b, a[i].str, a[i].len);
        }
        break;
    case OP_TREE:
        /* [1, "abc", nil, [OK, []], "x\0y", (error BADARG "bad")] */
        ur_frame_put_arr(b, 6);
        ur_frame_put_int(b, 1);
        ur_frame_put_str(b, "abc", 3);
        ur_frame_put_nil(b);
        ur_frame_put_arr(b, 2);
        ur_frame_put_status(b, "OK", 2);
        ur_frame_put_arr(b, 0);
        ur_frame_put_str(b, "x\0y", 3);
        ur_frame_put_err(b, UR_E_BADARG, "bad", 3);
        break;
    default:
        b->len = off;
        put_error(b, id, UR_E_UNKNOWN, "unknown opcode");
        return;
    }
    ur_frame_reply_end(b, off, 0);
}

/* One log line per request: opcode in hex, then i<num> or s<len>:<bytes>. */
static void fake_log(int fd, const struct ur_frame_req *rq)
{
    char line[4096];
    size_t n;
    uint32_t i;

    if (fd < 0)
        return;
    n = (size_t)snprintf(line, sizeof(line), "%04x", rq->op);
    for (i = 0; i < rq->argc && n < sizeof(line) - 100; i++) {
        if (rq->argv[i].kind == UR_ARG_INT)
            n += (size_t)snprintf(line + n, sizeof(line) - n, " i%llu",
                                  (unsigned long long)rq->argv[i].num);
        else
            n += (size_t)snprintf(line + n, sizeof(line) - n, " s%u:%.*s",
                                  rq->argv[i].len, (int)rq->argv[i].len,
                                  rq->argv[i].str);
    }
    line[n++] = '\n';
    if (write(fd, line, n) < 0)
        _exit(3);
}

static bool write_all(int fd, const char *p, size_t n)
{
    ssize_t w;

    while (n > 0) {
        w = write(fd, p, n);
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Serves one connection; returns when it is closed by either side. */
static void fake_conn(int fd, enum fake_mode mode, int arg, bool first,
                      int logfd)
{
    static struct ur_arg args[UR_MAX_ARGS_DEFAULT];
    struct ur_limits lim = {UR_MAX_FRAME_DEFAULT, UR_MAX_ARGS_DEFAULT,
                            UR_MAX_INLINE_DEFAULT};
    struct ur_buf in, out;
    struct ur_frame_req rq;
    size_t consumed, hint;
    enum ur_parse st;
    ssize_t n;
    int answered = 0;

    ur_buf_init(&in);
    ur_buf_init(&out);
    while (mode == FAKE_DEAF)
        pause(); /* until killed */
    for (;;) {
        if (ur_buf_reserve(&in, 65536) != 0)
            break;
        n = read(fd, in.data + in.len, in.cap - in.len);
        if (n <= 0)
            break;
        in.len += (size_t)n;
        for (;;) {
            st = ur_frame_parse_request(in.data, in.len, &lim, args, &rq,
                                        &consumed, &hint);
            if (st == UR_PARSE_NEED_MORE)
                break;
            if (st != UR_PARSE_OK)
                goto done;
            fake_log(logfd, &rq);
            if (mode == FAKE_GARBAGE) {
                write_all(fd, "GARBAGE-GARBAGE!", 16);
            } else if (mode != FAKE_SILENT) {
                size_t start = out.len;

                if (mode == FAKE_PUSH) {
                    size_t hdr;
                    ur_frame_push_begin(&out, &hdr);
                    ur_frame_put_str(&out, "pushed", 6);
                    ur_frame_reply_end(&out, hdr, 0);
                    start = out.len;
                }
                fake_answer(&out, &rq, mode == FAKE_BAD_ID ? rq.id + 1 : rq.id,
                            mode == FAKE_SKEW);
                if (mode == FAKE_CLOSE_MID && first) {
                    write_all(fd, out.data, start + (out.len - start) / 2);
                    goto done;
                }
                answered++;
            }
            ur_buf_consume(&in, consumed);
            if (first && ((mode == FAKE_CLOSE_AFTER && answered == arg) ||
                          (mode == FAKE_CLOSE_IDLE && answered == 1))) {
                write_all(fd, out.data, out.len);
                goto done;
            }
            if (rq.op == UR_OP_QUIT) {
                write_all(fd, out.data, out.len);
                goto done;
            }
        }
        if (!write_all(fd, out.data, out.len))
            break;
        out.len = 0;
    }
done:
    close(fd);
    ur_buf_deinit(&in);
    ur_buf_deinit(&out);
}

/* A fake on `port` (0: any free one), e.g. the port of a fake that was
 * stopped, to play a server restart. */
static struct fake fake_start_on(enum fake_mode mode, int arg, bool log,
                                 uint16_t port)
{
    struct fake f = {-1, 0, -1};
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    int lfd, pfd[2] = {-1, -1}, fd, one = 1;
    bool first = true;

    lfd = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons(port);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        listen(lfd, 16) != 0 ||
        getsockname(lfd, (struct sockaddr *)&sa, &sl) != 0) {
        perror("fake_start");
        exit(2);
    }
    f.port = ntohs(sa.sin_port);
    if (log && pipe(pfd) != 0) {
        perror("pipe");
        exit(2);
    }
    fflush(NULL);
    f.pid = fork();
    if (f.pid < 0) {
        perror("fork");
        exit(2);
    }
    if (f.pid == 0) {
        signal(SIGPIPE, SIG_IGN);
        if (pfd[0] >= 0)
            close(pfd[0]);
        for (;;) {
            fd = accept(lfd, NULL, NULL);
            if (fd < 0)
                _exit(0);
            fake_conn(fd, mode, arg, first, pfd[1]);
            first = false;
        }
    }
    close(lfd);
    if (pfd[1] >= 0)
        close(pfd[1]);
    f.log = pfd[0];
    return f;
}

static struct fake fake_start(enum fake_mode mode, int arg, bool log)
{
    return fake_start_on(mode, arg, log, 0);
}

static void fake_stop(struct fake *f)
{
    kill(f->pid, SIGKILL);
    waitpid(f->pid, NULL, 0);
    if (f->log >= 0)
        close(f->log);
}

/* The next logged request, "" when none arrives within 2 s. */
static const char *fake_next(struct fake *f)
{
    static char line[4096];
    struct pollfd p = {f->log, POLLIN, 0};
    size_t n = 0;
    char ch;

    while (n < sizeof(line) - 1) {
        if (poll(&p, 1, 2000) <= 0 || read(f->log, &ch, 1) != 1)
            break;
        if (ch == '\n')
            break;
        line[n++] = ch;
    }
    line[n] = '\0';
    return line;
}

/* True when nothing more was logged within 100 ms. */
static bool fake_quiet(struct fake *f)
{
    struct pollfd p = {f->log, POLLIN, 0};

    return poll(&p, 1, 100) == 0;
}

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct unread *conn(const struct fake *f, int timeout_ms)
{
    char err[256];
    struct unread *c =
        unread_connect("127.0.0.1", f->port, timeout_ms, err, sizeof(err));

    if (c == NULL)
        fprintf(stderr, "connect: %s\n", err);
    return c;
}

/* ---- Tests -------------------------------------------------------------- */

/* Each typed call sends its opcode and integer arguments and decodes the
 * reply. */
static void test_typed_calls(void)
{
    struct fake f = fake_start(FAKE_NORMAL, 0, true);
    struct unread *c = conn(&f, 2000);
    struct unread_cnt_pair pairs[UNREAD_CNT_TYPES];
    const uint8_t types[2] = {1, 4};
    uint32_t value = 0;
    uint64_t total = 0;
    unsigned n = 99;

    CHECK(c != NULL);
    if (c == NULL)
        goto out;
    CHECK(unread_fd(c) >= 0);
    CHECK_EQ_U64(unread_ping(c), 0);
    CHECK(strcmp(fake_next(&f), "0001") == 0);

    CHECK_EQ_U64(unread_cnt_incr(c, 42, 3, 5, &value, &total), 0);
    CHECK(strcmp(fake_next(&f), "0101 i42 i3 i5") == 0);
    CHECK_EQ_U64(value, 5);
    CHECK_EQ_U64(total, 87);

    CHECK_EQ_U64(unread_cnt_decr(c, 43, 0, 2, &value, &total), 0);
    CHECK(strcmp(fake_next(&f), "0102 i43 i0 i2") == 0);
    CHECK_EQ_U64(value, 2);
    CHECK_EQ_U64(total, 86);

    CHECK_EQ_U64(unread_cnt_set(c, 44, 63, 4294967295u, &value, NULL), 0);
    CHECK(strcmp(fake_next(&f), "0103 i44 i63 i4294967295") == 0);
    CHECK_EQ_U64(value, 4294967295u);

    CHECK_EQ_U64(unread_cnt_get(c, 50, 7, &value), 0);
    CHECK(strcmp(fake_next(&f), "0104 i50 i7") == 0);
    CHECK_EQ_U64(value, 57);

    CHECK_EQ_U64(unread_cnt_total(c, UINT64_MAX / 4, &total), 0);
    CHECK(strcmp(fake_next(&f), "0106 i4611686018427387903") == 0);
    CHECK_EQ_U64(total, (UINT64_MAX / 4) * 3);

    CHECK_EQ_U64(unread_cnt_getall(c, 1, pairs, &n), 0);
    CHECK(strcmp(fake_next(&f), "0105 i1") == 0);
    CHECK_EQ_U64(n, 2);
    CHECK_EQ_U64(pairs[0].type, 0);
    CHECK_EQ_U64(pairs[0].value, 3);
    CHECK_EQ_U64(pairs[1].type, 4);
    CHECK_EQ_U64(pairs[1].value, 1);
    CHECK_EQ_U64(unread_cnt_getall(c, 2, pairs, &n), 0);
    fake_next(&f);
    CHECK_EQ_U64(n, 0);

    CHECK_EQ_U64(unread_cnt_clear(c, 9, types, 2, &total), 0);
    CHECK(strcmp(fake_next(&f), "0107 i9 i1 i4") == 0);
    CHECK_EQ_U64(total, 2);
    CHECK_EQ_U64(unread_cnt_clear(c, 9, NULL, 0, &total), 0);
    CHECK(strcmp(fake_next(&f), "0107 i9") == 0);
    CHECK_EQ_U64(total, 0);
    /* More types than exist: refused before sending. */
    CHECK_EQ_U64(unread_cnt_clear(c, 9, types, 65, &total), UNREAD_EUSAGE);
    CHECK(fake_quiet(&f));
    unread_close(c);
out:
    fake_stop(&f);
}

/* The generic call: name lookup, string arguments, every reply kind, and
 * unknown names refused locally. */
static void test_command(void)
{
    struct fake f = fake_start(FAKE_NORMAL, 0, true);
    struct unread *c = conn(&f, 2000);
    struct unread_arg argv[3];
    struct unread_reply *r = NULL, *e;

    CHECK(c != NULL);
    if (c == NULL)
        goto out;
    argv[0] = unread_arg_int(7);
    argv[1] = unread_arg_str("mention", 7);
    CHECK_EQ_U64(unread_command(c, "cnt.Incr", 0, 2, argv, &r), 0);
    CHECK(strcmp(fake_next(&f), "0101 i7 s7:mention") == 0);
    CHECK(r != NULL && r->kind == UNREAD_REPLY_ARRAY && r->n == 2);
    if (r != NULL && r->n == 2) {
        CHECK(r->elem[0].kind == UNREAD_REPLY_INT);
        CHECK_EQ_U64(r->elem[0].integer, 1);
        CHECK_EQ_U64(r->elem[1].integer, 14 + 1007);
    }
    unread_reply_free(r);

    /* by opcode, binary-safe strings both ways */
    argv[0] = unread_arg_str("a\0b", 3);
    argv[1] = unread_arg_str("", 0);
    argv[2] = unread_arg_int(UINT64_MAX);
    CHECK_EQ_U64(unread_command(c, NULL, OP_ECHO, 3, argv, &r), 0);
    fake_next(&f);
    CHECK(r != NULL && r->kind == UNREAD_REPLY_ARRAY && r->n == 3);
    if (r != NULL && r->n == 3) {
        CHECK(r->elem[0].kind == UNREAD_REPLY_STR);
        CHECK_EQ_U64(r->elem[0].len, 3);
        CHECK(memcmp(r->elem[0].str, "a\0b", 4) == 0);
        CHECK(r->elem[1].kind == UNREAD_REPLY_STR && r->elem[1].len == 0 &&
              r->elem[1].str[0] == '\0');
        CHECK_EQ_U64(r->elem[2].integer, UINT64_MAX);
    }
    unread_reply_free(r);

    CHECK_EQ_U64(unread_command(c, NULL, OP_TREE, 0, NULL, &r), 0);
    fake_next(&f);
    CHECK(r != NULL && r->kind == UNREAD_REPLY_ARRAY && r->n == 6);
    if (r != NULL && r->n == 6) {
        CHECK(r->elem[0].kind == UNREAD_REPLY_INT && r->elem[0].integer == 1);
        CHECK(r->elem[1].kind == UNREAD_REPLY_STR &&
              strcmp(r->elem[1].str, "abc") == 0 && r->elem[1].len == 3);
        CHECK(r->elem[2].kind == UNREAD_REPLY_NIL);
        e = &r->elem[3];
        CHECK(e->kind == UNREAD_REPLY_ARRAY && e->n == 2);
        if (e->n == 2) {
            CHECK(e->elem[0].kind == UNREAD_REPLY_STATUS &&
                  strcmp(e->elem[0].str, "OK") == 0);
            CHECK(e->elem[1].kind == UNREAD_REPLY_ARRAY && e->elem[1].n == 0 &&
                  e->elem[1].elem == NULL);
        }
        CHECK(r->elem[4].len == 3 && memcmp(r->elem[4].str, "x\0y", 3) == 0);
        CHECK(r->elem[5].kind == UNREAD_REPLY_ERROR &&
              r->elem[5].code == UNREAD_ERR_BADARG &&
              strcmp(r->elem[5].str, "ERR bad") == 0);
    }
    unread_reply_free(r);

    /* unknown name: an error reply made locally, nothing sent */
    CHECK_EQ_U64(unread_command(c, "NOPE.X", 0, 0, NULL, &r),
                 UNREAD_ERR_UNKNOWN);
    CHECK(r != NULL && r->kind == UNREAD_REPLY_ERROR &&
          r->code == UNREAD_ERR_UNKNOWN &&
          strcmp(r->str, "ERR unknown command 'NOPE.X'") == 0);
    CHECK(strcmp(unread_errstr(c), "ERR unknown command 'NOPE.X'") == 0);
    unread_reply_free(r);
    CHECK(fake_quiet(&f));

    /* unknown opcode: the server's error */
    CHECK_EQ_U64(unread_command(c, NULL, 0x0F99, 0, NULL, &r),
                 UNREAD_ERR_UNKNOWN);
    CHECK(strcmp(fake_next(&f), "0f99") == 0);
    CHECK(r != NULL && strcmp(r->str, "ERR unknown opcode") == 0);
    unread_reply_free(r);

    /* a bad argument kind is a usage error; nothing is sent */
    argv[0].kind = 9;
    CHECK_EQ_U64(unread_command(c, NULL, OP_ECHO, 1, argv, &r), UNREAD_EUSAGE);
    CHECK(r == NULL);
    CHECK(fake_quiet(&f));
    CHECK_EQ_U64(unread_ping(c), 0);
    CHECK(strcmp(fake_next(&f), "0001") == 0);
    unread_close(c);
out:
    fake_stop(&f);
}

/* Server errors come back as their wire code and text; the connection
 * survives them. */
static void test_server_errors(void)
{
    struct fake f = fake_start(FAKE_NORMAL, 0, false);
    struct unread *c = conn(&f, 2000);
    struct unread_reply *r = NULL;
    struct unread_arg a = unread_arg_int(UID_ARITY);
    uint32_t value = 123;
    int fd;

    CHECK(c != NULL);
    if (c == NULL)
        goto out;
    fd = unread_fd(c);
    CHECK_EQ_U64(unread_cnt_incr(c, UID_ARITY, 0, 1, &value, NULL),
                 UNREAD_ERR_ARITY);
    CHECK(strcmp(unread_errstr(c),
                 "ERR wrong number of arguments for 'CNT.INCR'") == 0);
    CHECK_EQ_U64(value, 123); /* untouched on failure */
    CHECK_EQ_U64(unread_cnt_get(c, UID_NOAUTH, 0, &value), UNREAD_ERR_NOAUTH);
    CHECK(strcmp(unread_errstr(c), "NOAUTH Authentication required.") == 0);
    CHECK(strcmp(unread_strerror(UNREAD_ERR_NOAUTH), "NOAUTH") == 0);

    CHECK_EQ_U64(unread_command(c, "CNT.GET", 0, 1, &a, &r), UNREAD_ERR_ARITY);
    CHECK(r != NULL && r->kind == UNREAD_REPLY_ERROR &&
          r->code == UNREAD_ERR_ARITY);
    unread_reply_free(r);

    CHECK_EQ_U64(unread_ping(c), 0);
    CHECK(unread_fd(c) == fd); /* same connection */
    unread_close(c);
out:
    fake_stop(&f);
}

/* Replies of the wrong shape for a typed call are protocol errors; the
 * next call reconnects. */
static void test_bad_shapes(void)
{
    struct fake f = fake_start(FAKE_NORMAL, 0, false);
    struct unread *c = conn(&f, 2000);
    struct unread_cnt_pair pairs[UNREAD_CNT_TYPES];
    uint32_t value;
    unsigned n;

    CHECK(c != NULL);
    if (c == NULL)
        goto out;
    CHECK_EQ_U64(unread_cnt_incr(c, UID_SHAPE, 0, 1, &value, NULL),
                 UNREAD_EPROTO);
    CHECK(strstr(unread_errstr(c), "CNT.INCR") != NULL);
    CHECK(unread_fd(c) < 0);
    CHECK_EQ_U64(unread_cnt_get(c, UID_SHAPE, 0, &value), UNREAD_EPROTO);
    CHECK_EQ_U64(unread_cnt_get(c, UID_RANGE, 0, &value), UNREAD_EPROTO);
    CHECK_EQ_U64(unread_cnt_getall(c, UID_SHAPE, pairs, &n), UNREAD_EPROTO);
    CHECK_EQ_U64(unread_cnt_getall(c, UID_RANGE, pairs, &n), UNREAD_EPROTO);
    CHECK_EQ_U64(unread_cnt_getall(c, UID_BIGTYPE, pairs, &n), UNREAD_EPROTO);
    CHECK_EQ_U64(unread_cnt_get(c, 1, 1, &value), 0);
    CHECK_EQ_U64(value, 2);
    unread_close(c);
out:
    fake_stop(&f);
}

/* 10,000 queued requests, one flush, replies read in order. */
static void test_pipeline_10k(void)
{
    enum { N = 10000 };
    struct fake f = fake_start(FAKE_NORMAL, 0, false);
    struct unread *c = conn(&f, 5000);
    struct unread_reply *r;
    uint64_t i, bad = 0;
    int rc;

    CHECK(c != NULL);
    if (c == NULL)
        goto out;
    CHECK_EQ_U64(unread_pipe_begin(c), 0);
    for (i = 0; i < N; i++)
        if (unread_pipe_cnt_incr(c, 100000 + i, (unsigned)(i % 64),
                                 (uint32_t)(i % 1000)) != 0)
            bad++;
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(unread_pipe_queued(c), N);
    CHECK_EQ_U64(unread_pipe_pending(c), 0);
    /* synchronous calls wait for the pipeline */
    CHECK_EQ_U64(unread_ping(c), UNREAD_EUSAGE);
    CHECK_EQ_U64(unread_pipe_flush(c), 0);
    CHECK_EQ_U64(unread_pipe_queued(c), 0);
    CHECK_EQ_U64(unread_pipe_pending(c), N);
    for (i = 0; i < N; i++) {
        rc = unread_pipe_read(c, &r);
        if (rc != 0 || r->kind != UNREAD_REPLY_ARRAY || r->n != 2 ||
            r->elem[0].integer != i % 1000 ||
            r->elem[1].integer != (100000 + i) * 2 + i % 64)
            bad++;
        unread_reply_free(r);
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(unread_pipe_pending(c), 0);
    /* the pipeline is over: reads are misuse, sync calls work again */
    CHECK_EQ_U64(unread_pipe_read(c, &r), UNREAD_EUSAGE);
    CHECK(r == NULL);
    CHECK_EQ_U64(unread_ping(c), 0);

    /* the same again, mixing typed, generic and error replies */
    CHECK_EQ_U64(unread_pipe_begin(c), 0);
    CHECK_EQ_U64(unread_pipe_cmd(c, "PING", 0, 0, NULL), 0);
    CHECK_EQ_U64(unread_pipe_cnt_get(c, UID_NOAUTH, 0), 0);
    CHECK_EQ_U64(unread_pipe_cnt_total(c, 5), 0);
    CHECK_EQ_U64(unread_pipe_cmd(c, "NOPE", 0, 0, NULL), UNREAD_ERR_UNKNOWN);
    CHECK_EQ_U64(unread_pipe_flush(c), 0);
    /* queue more while replies are pending: sent by the next flush */
    CHECK_EQ_U64(unread_pipe_cnt_getall(c, 1), 0);
    CHECK_EQ_U64(unread_pipe_read(c, &r), 0);
    CHECK(r != NULL && r->kind == UNREAD_REPLY_STATUS &&
          strcmp(r->str, "PONG") == 0);
    unread_reply_free(r);
    CHECK_EQ_U64(unread_pipe_read(c, &r), UNREAD_ERR_NOAUTH);
    CHECK(r != NULL && r->kind == UNREAD_REPLY_ERROR);
    unread_reply_free(r);
    CHECK_EQ_U64(unread_pipe_read(c, &r), 0);
    CHECK(r != NULL && r->kind == UNREAD_REPLY_INT && r->integer == 15);
    unread_reply_free(r);
    CHECK_EQ_U64(unread_pipe_read(c, &r), UNREAD_EUSAGE); /* not flushed */
    CHECK_EQ_U64(unread_pipe_flush(c), 0);
    CHECK_EQ_U64(unread_pipe_read(c, &r), 0);
    CHECK(r != NULL && r->kind == UNREAD_REPLY_ARRAY && r->n == 4);
    unread_reply_free(r);
    CHECK_EQ_U64(unread_ping(c), 0);
    unread_close(c);
out:
    fake_stop(&f);
}

/* Misuse is refused without harming the connection; reset drops queued
 * requests unsent. */
static void test_pipeline_usage(void)
{
    struct fake f = fake_start(FAKE_NORMAL, 0, true);
    struct unread *c = conn(&f, 2000);
    struct unread_reply *r;

    CHECK(c != NULL);
    if (c == NULL)
        goto out;
    CHECK_EQ_U64(unread_pipe_cnt_incr(c, 1, 0, 1), UNREAD_EUSAGE);
    CHECK_EQ_U64(unread_pipe_flush(c), UNREAD_EUSAGE);
    CHECK_EQ_U64(unread_pipe_read(c, &r), UNREAD_EUSAGE);
    CHECK_EQ_U64(unread_pipe_begin(c), 0);
    CHECK_EQ_U64(unread_pipe_begin(c), UNREAD_EUSAGE);
    CHECK_EQ_U64(unread_pipe_flush(c), 0); /* nothing queued: no-op */
    CHECK_EQ_U64(unread_pipe_cnt_incr(c, 1, 0, 1), 0);
    CHECK_EQ_U64(unread_pipe_cnt_incr(c, 2, 0, 1), 0);
    CHECK_EQ_U64(unread_pipe_read(c, &r), UNREAD_EUSAGE);
    unread_pipe_reset(c);
    CHECK_EQ_U64(unread_pipe_queued(c), 0);
    CHECK_EQ_U64(unread_ping(c), 0);
    CHECK(strcmp(fake_next(&f), "0001") == 0); /* the incrs never left */

    /* reset with replies pending: the connection is replaced */
    CHECK_EQ_U64(unread_pipe_begin(c), 0);
    CHECK_EQ_U64(unread_pipe_cnt_total(c, 1), 0);
    CHECK_EQ_U64(unread_pipe_flush(c), 0);
    CHECK(strcmp(fake_next(&f), "0106 i1") == 0);
    unread_pipe_reset(c);
    CHECK(unread_fd(c) < 0);
    CHECK_EQ_U64(unread_cnt_total(c, 2, NULL), 0);
    CHECK(strcmp(fake_next(&f), "0106 i2") == 0);
    unread_close(c);
out:
    fake_stop(&f);
}

/* A connection lost mid-pipeline fails the rest; nothing is replayed. */
static void test_pipeline_failure(void)
{
    struct fake f = fake_start(FAKE_CLOSE_AFTER, 5, true);
    struct unread *c = conn(&f, 2000);
    struct unread_reply *r;
    int i, rc, ok = 0, closed = 0;

    CHECK(c != NULL);
    if (c == NULL)
        goto out;
    CHECK_EQ_U64(unread_pipe_begin(c), 0);
    for (i = 0; i < 10; i++)
        unread_pipe_cnt_total(c, (uint64_t)i);
    CHECK_EQ_U64(unread_pipe_flush(c), 0);
    for (i = 0; i < 10; i++) {
        rc = unread_pipe_read(c, &r);

        if (rc == 0 && i < 5 && r->integer == (uint64_t)i * 3)
            ok++;
        /* FIN, or RST had the fake not read every request */
        if ((rc == UNREAD_ECLOSED || rc == UNREAD_EIO) && r == NULL && i >= 5)
            closed++;
        unread_reply_free(r);
    }
    CHECK_EQ_U64(ok, 5);
    CHECK_EQ_U64(closed, 5);
    CHECK_EQ_U64(unread_pipe_read(c, &r), UNREAD_EUSAGE); /* over */
    for (i = 0; i < 5; i++)
        fake_next(&f);                         /* the 5 answered */
    CHECK_EQ_U64(unread_ping(c), 0);           /* reconnected */
    CHECK(strcmp(fake_next(&f), "0001") == 0); /* no replay */
    unread_close(c);
out:
    fake_stop(&f);
}

/* A reply with another request's id is a protocol error. */
static void test_bad_id(void)
{
    struct fake f = fake_start(FAKE_BAD_ID, 0, false);
    struct unread *c = conn(&f, 2000);
    struct unread_reply *r;

    CHECK(c != NULL);
    if (c == NULL)
        goto out;
    CHECK_EQ_U64(unread_ping(c), UNREAD_EPROTO);
    CHECK(strstr(unread_errstr(c), "expected 1") != NULL);
    CHECK(unread_fd(c) < 0);
    CHECK_EQ_U64(unread_pipe_begin(c), 0);
    unread_pipe_cnt_total(c, 1);
    unread_pipe_cnt_total(c, 2);
    CHECK_EQ_U64(unread_pipe_flush(c), 0);
    CHECK_EQ_U64(unread_pipe_read(c, &r), UNREAD_EPROTO);
    CHECK_EQ_U64(unread_pipe_read(c, &r), UNREAD_EPROTO);
    CHECK_EQ_U64(unread_pipe_read(c, &r), UNREAD_EUSAGE);
    unread_close(c);
out:
    fake_stop(&f);
}

/* Push frames (MONITOR, pub/sub) answer no request: the library sets
 * them aside and matches the replies around them to their requests. */
static void test_push_frames_are_set_aside(void)
{
    struct fake f = fake_start(FAKE_PUSH, 0, false);
    struct unread *c = conn(&f, 2000);
    struct unread_reply *r;
    int n = 0;

    CHECK(c != NULL);
    if (c == NULL)
        goto out;
    CHECK_EQ_U64(unread_ping(c), 0);
    CHECK_EQ_U64(unread_pipe_begin(c), 0);
    for (int i = 0; i < 50; i++)
        unread_pipe_cnt_total(c, (uint64_t)i);
    CHECK_EQ_U64(unread_pipe_flush(c), 0);
    while (unread_pipe_read(c, &r) == 0) {
        n++;
        unread_reply_free(r);
    }
    CHECK_EQ_U64(n, 50);
    CHECK_EQ_U64(unread_ping(c), 0);
    unread_close(c);
out:
    fake_stop(&f);
}

/* Bytes that are not a frame are a protocol error. */
static void test_garbage(void)
{
    struct fake f = fake_start(FAKE_GARBAGE, 0, false);
    struct unread *c = conn(&f, 2000);

    CHECK(c != NULL);
    if (c == NULL)
        goto out;
    CHECK_EQ_U64(unread_ping(c), UNREAD_EPROTO);
    CHECK(strstr(unread_errstr(c), "malformed") != NULL);
    unread_close(c);
out:
    fake_stop(&f);
}

/* A server that never answers: the call gives up at its timeout. */
static void test_timeout(void)
{
    struct fake f = fake_start(FAKE_SILENT, 0, false);
    struct unread *c = conn(&f, 2000);
    struct unread_reply *r;
    int64_t t0, dt;

    CHECK(c != NULL);
    if (c == NULL)
        goto out;
    unread_set_timeout(c, 200);
    t0 = mono_ms();
    CHECK_EQ_U64(unread_ping(c), UNREAD_ETIMEOUT);
    dt = mono_ms() - t0;
    CHECK(dt >= 150 && dt < 2000);
    CHECK(strstr(unread_errstr(c), "timeout") != NULL);
    CHECK(unread_fd(c) < 0);
    /* the pipeline read is bounded the same way */
    CHECK_EQ_U64(unread_pipe_begin(c), 0);
    unread_pipe_cnt_total(c, 1);
    CHECK_EQ_U64(unread_pipe_flush(c), 0);
    t0 = mono_ms();
    CHECK_EQ_U64(unread_pipe_read(c, &r), UNREAD_ETIMEOUT);
    dt = mono_ms() - t0;
    CHECK(dt >= 150 && dt < 2000);
    unread_close(c);
out:
    fake_stop(&f);
}

/* A reply cut short by a close is an error; the next call reconnects. */
static void test_close_mid_reply(void)
{
    struct fake f = fake_start(FAKE_CLOSE_MID, 0, false);
    struct unread *c = conn(&f, 2000);
    uint32_t value;

    CHECK(c != NULL);
    if (c == NULL)
        goto out;
    CHECK_EQ_U64(unread_cnt_incr(c, 1, 2, 3, &value, NULL), UNREAD_ECLOSED);
    CHECK(strstr(unread_errstr(c), "closed") != NULL);
    CHECK(unread_fd(c) < 0);
    CHECK_EQ_U64(unread_cnt_incr(c, 1, 2, 3, &value, NULL), 0);
    CHECK_EQ_U64(value, 3);
    unread_close(c);
out:
    fake_stop(&f);
}

/* A server that closed an idle connection (restart, QUIT): the next call
 * notices before sending and goes out on a new connection. */
static void test_reconnect_idle(void)
{
    struct fake f = fake_start(FAKE_CLOSE_IDLE, 0, true);
    struct unread *c = conn(&f, 2000);
    struct unread_reply *r = NULL;

    CHECK(c != NULL);
    if (c == NULL)
        goto out;
    CHECK_EQ_U64(unread_ping(c), 0);
    fake_next(&f);
    usleep(50 * 1000); /* let the close arrive */
    CHECK_EQ_U64(unread_cnt_total(c, 3, NULL), 0);
    CHECK(strcmp(fake_next(&f), "0106 i3") == 0);
    CHECK_EQ_U64(unread_command(c, "QUIT", 0, 0, NULL, &r), 0);
    CHECK(r != NULL && strcmp(r->str, "OK") == 0);
    unread_reply_free(r);
    fake_next(&f);
    usleep(50 * 1000);
    CHECK_EQ_U64(unread_ping(c), 0);
    CHECK(strcmp(fake_next(&f), "0001") == 0);
    unread_close(c);
out:
    fake_stop(&f);
}

/* Nothing listens: the connect fails at once, not at the timeout. A name
 * resolves. */
static void test_connect(void)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    struct unread *c;
    struct fake f;
    char err[256] = "";
    int fd, port;
    int64_t t0;

    fd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    port = ntohs(sa.sin_port);
    close(fd); /* bound, never listened: the port is closed */

    t0 = mono_ms();
    c = unread_connect("127.0.0.1", (uint16_t)port, 5000, err, sizeof(err));
    CHECK(c == NULL);
    CHECK(mono_ms() - t0 < 1000);
    CHECK(strstr(err, "refused") != NULL);
    c = unread_connect("no-such-host.invalid", 7460, 1000, err, sizeof(err));
    CHECK(c == NULL);
    CHECK(strstr(err, "no-such-host.invalid") != NULL);
    CHECK(unread_connect("127.0.0.1", (uint16_t)port, 100, NULL, 0) == NULL);

    f = fake_start(FAKE_NORMAL, 0, false);
    c = unread_connect("localhost", f.port, 2000, err, sizeof(err));
    CHECK(c != NULL);
    if (c != NULL)
        CHECK_EQ_U64(unread_ping(c), 0);
    unread_close(c);
    fake_stop(&f);

    /* a server that went away for good: each call tries once, fails fast */
    f = fake_start(FAKE_NORMAL, 0, false);
    c = conn(&f, 2000);
    fake_stop(&f);
    if (c != NULL) {
        usleep(50 * 1000);
        t0 = mono_ms();
        CHECK(unread_ping(c) < 0);
        CHECK_EQ_U64(unread_ping(c), UNREAD_ECONNECT);
        CHECK(mono_ms() - t0 < 1000);
        CHECK(strstr(unread_errstr(c), "refused") != NULL);
    }
    unread_close(c);
    unread_close(NULL);
    unread_reply_free(NULL);
}

static void test_strerror(void)
{
    CHECK(strcmp(unread_strerror(UNREAD_OK), "OK") == 0);
    CHECK(strcmp(unread_strerror(UNREAD_ETIMEOUT), "ETIMEOUT") == 0);
    CHECK(strcmp(unread_strerror(UNREAD_ERR_ARITY), "ARITY") == 0);
    CHECK(strcmp(unread_strerror(-100), "EUNKNOWN") == 0);
    CHECK(unread_strerror(1000) != NULL);
    CHECK(strcmp(unread_strerror(UNREAD_EUNAVAIL), "EUNAVAIL") == 0);
    CHECK(strcmp(unread_strerror(UNREAD_EMISMATCH), "EMISMATCH") == 0);
    CHECK(strcmp(unread_strerror(UNREAD_DEGRADED), "DEGRADED") == 0);
}

/* ---- Server lists, ring, breaker (pure) ---------------------------------- */

static void test_addrs_parse(void)
{
    static const char *const bad[] = {
        "",     "a:1,",   ",a:1", "a:0", "a:65536", "a:x",  "a:",        "::1",
        "[::1", "[::1]x", "[]:1", ":1",  "a:1,a:1", "a, a", "a:1 ,, b:2"};
    struct uc_addr *a = NULL;
    char err[256], *many;
    size_t n = 0, i, len;

    CHECK(uc_addrs_parse(" a:1, b ,[::1]:9,[fe80::1]", 7460, &a, &n, err,
                         sizeof(err)) == 0);
    CHECK_EQ_U64(n, 4);
    if (n == 4) {
        CHECK(strcmp(a[0].host, "a") == 0 && a[0].port == 1 &&
              strcmp(a[0].name, "a:1") == 0);
        CHECK(strcmp(a[1].name, "b:7460") == 0 && a[1].port == 7460);
        CHECK(strcmp(a[2].host, "::1") == 0 && a[2].port == 9 &&
              strcmp(a[2].name, "[::1]:9") == 0);
        CHECK(strcmp(a[3].name, "[fe80::1]:7460") == 0);
    }
    uc_addrs_free(a, n);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        if (uc_addrs_parse(bad[i], 7460, &a, &n, err, sizeof(err)) == 0) {
            fprintf(stderr, "accepted '%s'\n", bad[i]);
            CHECK(false);
            uc_addrs_free(a, n);
        }
        CHECK(err[0] != '\0');
    }
    /* 1024 servers is the limit */
    many = malloc(1025 * 16);
    len = 0;
    for (i = 0; i < 1025; i++)
        len += (size_t)sprintf(many + len, "%sh%zu:1", i > 0 ? "," : "", i);
    CHECK(uc_addrs_parse(many, 7460, &a, &n, err, sizeof(err)) != 0);
    many[len - strlen(",h1024:1")] = '\0';
    CHECK(uc_addrs_parse(many, 7460, &a, &n, err, sizeof(err)) == 0);
    CHECK_EQ_U64(n, 1024);
    uc_addrs_free(a, n);
    free(many);
}

/* ---- Sentinel (unread_sentinel.h) against a fake sentinel --------------- */

/* A child answering each connection's one request with the next canned
 * reply: replies[i] for the i-th connection. Returns its port. */
static uint16_t fake_sentinel(const char *const *replies, size_t n, pid_t *pid)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;

    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        listen(ls, 8) != 0 || getsockname(ls, (struct sockaddr *)&sa, &sl))
        abort();
    *pid = fork();
    if (*pid == 0) {
        for (size_t i = 0; i < n; i++) {
            char buf[4096];
            int fd = accept(ls, NULL, NULL);

            if (fd < 0)
                _exit(1);
            if (recv(fd, buf, sizeof(buf), 0) > 0 && replies[i] != NULL)
                (void)!write(fd, replies[i], strlen(replies[i]));
            close(fd);
        }
        _exit(0);
    }
    close(ls);
    return ntohs(sa.sin_port);
}

static struct uc_sentinel *sentinel_of(uint16_t port, bool replica,
                                       struct uc_addr **a, size_t *n)
{
    char list[64], err[256];

    snprintf(list, sizeof(list), "127.0.0.1:%u", (unsigned)port);
    if (uc_sentinel_addrs("m1", list, replica, a, n, err, sizeof(err)) != 0)
        abort();
    return (*a)[0].sentinel;
}

static void test_sentinel(void)
{
    static const char *const bad[] = {"", "a,", ",a", "a,,b", "a,a"};
    static const char *const replies[] = {
        /* get-master-addr-by-name */
        "*2\r\n$9\r\n127.0.0.1\r\n$4\r\n7461\r\n",
        /* unknown name */
        "*-1\r\n",
        /* not an address */
        "*2\r\n$9\r\n127.0.0.1\r\n$4\r\n0x10\r\n",
        /* replicas: one down, one with its link down, two healthy */
        "*4\r\n"
        "*6\r\n$2\r\nip\r\n$1\r\na\r\n$4\r\nport\r\n$1\r\n1\r\n"
        "$5\r\nflags\r\n$12\r\nslave,s_down\r\n"
        "*6\r\n$2\r\nip\r\n$1\r\nb\r\n$4\r\nport\r\n$1\r\n2\r\n"
        "$18\r\nmaster-link-status\r\n$3\r\nerr\r\n"
        "*4\r\n$2\r\nip\r\n$1\r\nc\r\n$4\r\nport\r\n$1\r\n3\r\n"
        "*6\r\n$2\r\nip\r\n$1\r\nd\r\n$4\r\nport\r\n$1\r\n4\r\n"
        "$18\r\nmaster-link-status\r\n$2\r\nok\r\n",
    };
    struct uc_addr *a = NULL;
    struct uc_sentinel *s;
    char err[256];
    size_t n = 0, i;
    pid_t pid;
    uint16_t port;
    int st;

    /* master names, each once; the sentinels' list as a server list */
    CHECK(uc_sentinel_addrs(" m1 , m2", "h1,h2:5", false, &a, &n, err,
                            sizeof(err)) == 0);
    CHECK_EQ_U64(n, 2);
    CHECK(strcmp(a[0].name, "m1") == 0 && strcmp(a[1].name, "m2") == 0);
    CHECK(a[1].sentinel->nsent == 2 &&
          a[1].sentinel->sent[0].port == UC_SENTINEL_PORT &&
          a[1].sentinel->sent[1].port == 5);
    uc_addrs_free(a, n);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        CHECK(uc_sentinel_addrs(bad[i], "h", false, &a, &n, err, sizeof(err)) !=
              0);
        CHECK(err[0] != '\0');
    }
    CHECK(uc_sentinel_addrs("m", "h:0", false, &a, &n, err, sizeof(err)) != 0);

    /* answers: an address, an unknown name, garbage */
    port = fake_sentinel(replies, 3, &pid);
    s = sentinel_of(port, false, &a, &n);
    CHECK(uc_sentinel_resolve(s, NULL, 2000, err, sizeof(err)) == 0);
    CHECK(strcmp(s->host, "127.0.0.1") == 0 && s->port == 7461);
    CHECK(uc_sentinel_resolve(s, NULL, 2000, err, sizeof(err)) != 0);
    CHECK(strstr(err, "no master named 'm1'") != NULL);
    CHECK(uc_sentinel_resolve(s, NULL, 2000, err, sizeof(err)) != 0);
    CHECK(strstr(err, "none of 1 sentinels") != NULL);
    uc_addrs_free(a, n);
    waitpid(pid, &st, 0);

    /* replicas: only the healthy ones, in turn */
    {
        const char *const rr[] = {replies[3], replies[3], replies[3]};
        const char *got[3];

        port = fake_sentinel(rr, 3, &pid);
        s = sentinel_of(port, true, &a, &n);
        for (i = 0; i < 3; i++) {
            CHECK(uc_sentinel_resolve(s, NULL, 2000, err, sizeof(err)) == 0);
            got[i] = s->host[0] == 'c' ? "c" : s->host[0] == 'd' ? "d" : "?";
        }
        CHECK(strcmp(got[0], "?") != 0 && strcmp(got[0], got[1]) != 0 &&
              strcmp(got[0], got[2]) == 0);
        uc_addrs_free(a, n);
        waitpid(pid, &st, 0);
    }

    /* nobody listening */
    port = fake_sentinel(replies, 0, &pid);
    waitpid(pid, &st, 0);
    s = sentinel_of(port, false, &a, &n);
    CHECK(uc_sentinel_resolve(s, NULL, 500, err, sizeof(err)) != 0);
    uc_addrs_free(a, n);
}

/* A ring over a list of names, or exits: the ring tests need one. */
static void ring_of(const char *list, unsigned points, struct uc_ring *r,
                    struct uc_addr **a, size_t *n)
{
    char err[256];

    if (uc_addrs_parse(list, 7460, a, n, err, sizeof(err)) != 0 ||
        uc_ring_build(r, *a, *n, points) != 0) {
        fprintf(stderr, "ring_of(%s): %s\n", list, err);
        exit(2);
    }
}

static const char *owner(const struct uc_ring *r, const struct uc_addr *a,
                         uint64_t key)
{
    return a[uc_ring_find(r, key)].name;
}

/* The placement is fixed forever: a deployment's data sits where it says.
 * These owners were computed once; a change here moves users. */
static void test_ring_golden(void)
{
    static const struct {
        uint64_t key;
        const char *owner;
    } golden[] = {{0u, "shard-a:7460"},
                  {1u, "shard-c:7460"},
                  {5u, "shard-b:7460"},
                  {6u, "shard-a:7460"},
                  {7u, "shard-b:7460"},
                  {10u, "shard-a:7460"},
                  {42u, "shard-b:7460"},
                  {123456789u, "shard-c:7460"},
                  {1099511627776u, "shard-c:7460"},
                  {18446744073709551615u, "shard-c:7460"}};
    struct uc_ring r;
    struct uc_addr *a;
    size_t n, i;

    ring_of("shard-a:7460,shard-b:7460,shard-c:7460", 160, &r, &a, &n);
    for (i = 0; i < sizeof(golden) / sizeof(golden[0]); i++) {
        if (strcmp(owner(&r, a, golden[i].key), golden[i].owner) != 0) {
            fprintf(stderr, "key %llu: %s, was %s\n",
                    (unsigned long long)golden[i].key,
                    owner(&r, a, golden[i].key), golden[i].owner);
            CHECK(false);
        }
    }
    uc_ring_deinit(&r);
    uc_addrs_free(a, n);
}

/* Balance, independence from the list order, and ~1/N movement when a
 * server joins or leaves, always to or from that server. */
static void test_ring_movement(void)
{
    enum { KEYS = 100000 };
    struct uc_ring r3, r3b, r4, r10, r11;
    struct uc_addr *a3, *a3b, *a4, *a10, *a11;
    size_t n3, n3b, n4, n10, n11, share[3] = {0, 0, 0};
    size_t moved = 0, wrong = 0, moved11 = 0, i;
    const char *o3, *o4;
    const char *l10 = "s0:1,s1:1,s2:1,s3:1,s4:1,s5:1,s6:1,s7:1,s8:1,s9:1";
    char l11[128];
    uint64_t k;

    ring_of("s0:1,s1:1,s2:1", 160, &r3, &a3, &n3);
    ring_of("s2:1,s0:1,s1:1", 160, &r3b, &a3b, &n3b);
    ring_of("s0:1,s1:1,s2:1,s3:1", 160, &r4, &a4, &n4);
    for (i = 0; i < KEYS; i++) {
        k = i * 2654435761u + 17; /* spread, as uids are not */
        o3 = owner(&r3, a3, k);
        o4 = owner(&r4, a4, k);
        share[uc_ring_find(&r3, k)]++;
        if (strcmp(o3, owner(&r3b, a3b, k)) != 0)
            wrong++;
        if (strcmp(o3, o4) != 0) {
            moved++;
            if (strcmp(o4, "s3:1") != 0)
                wrong++; /* moved between old servers */
        }
    }
    CHECK_EQ_U64(wrong, 0);
    for (i = 0; i < 3; i++) {
        /* 1/3 each, within 20% (160 points: ~8% typical) */
        CHECK(share[i] > KEYS * 0.8 / 3 && share[i] < KEYS * 1.2 / 3);
    }
    /* a fourth server takes ~1/4 */
    CHECK(moved > KEYS * 0.18 && moved < KEYS * 0.32);

    snprintf(l11, sizeof(l11), "%s,s10:1", l10);
    ring_of(l10, 160, &r10, &a10, &n10);
    ring_of(l11, 160, &r11, &a11, &n11);
    for (i = 0; i < KEYS; i++)
        if (strcmp(owner(&r10, a10, i), owner(&r11, a11, i)) != 0)
            moved11++;
    /* an eleventh takes ~1/11 = 0.091 */
    CHECK(moved11 > KEYS * 0.06 && moved11 < KEYS * 0.125);

    uc_ring_deinit(&r3);
    uc_ring_deinit(&r3b);
    uc_ring_deinit(&r4);
    uc_ring_deinit(&r10);
    uc_ring_deinit(&r11);
    uc_addrs_free(a3, n3);
    uc_addrs_free(a3b, n3b);
    uc_addrs_free(a4, n4);
    uc_addrs_free(a10, n10);
    uc_addrs_free(a11, n11);
}

/* The breaker driven by the test's own clock. */
static void test_breaker_clock(void)
{
    struct uc_breaker_cfg cfg = {3, 100};
    struct uc_breaker b = {UC_CLOSED, 0, 0};
    int64_t t = 1000;

    CHECK(uc_breaker_admit(&b, &cfg, t));
    uc_breaker_done(&b, &cfg, false, t);
    uc_breaker_done(&b, &cfg, false, t);
    uc_breaker_done(&b, &cfg, true, t); /* a success resets the count */
    uc_breaker_done(&b, &cfg, false, t);
    uc_breaker_done(&b, &cfg, false, t);
    CHECK_EQ_U64(b.state, UC_CLOSED);
    CHECK(uc_breaker_admit(&b, &cfg, t));
    uc_breaker_done(&b, &cfg, false, t); /* the third in a row */
    CHECK_EQ_U64(b.state, UC_OPEN);
    CHECK(!uc_breaker_admit(&b, &cfg, t + 1));
    CHECK_EQ_U64(uc_breaker_wait(&b, &cfg, t + 30), 70);
    CHECK(!uc_breaker_admit(&b, &cfg, t + 99));
    /* time is up: one probe, which fails: open again from then */
    CHECK(uc_breaker_admit(&b, &cfg, t + 100));
    CHECK_EQ_U64(b.state, UC_HALF_OPEN);
    uc_breaker_done(&b, &cfg, false, t + 150);
    CHECK_EQ_U64(b.state, UC_OPEN);
    CHECK(!uc_breaker_admit(&b, &cfg, t + 200));
    CHECK_EQ_U64(uc_breaker_wait(&b, &cfg, t + 200), 50);
    /* the next probe succeeds: closed, count reset */
    CHECK(uc_breaker_admit(&b, &cfg, t + 250));
    uc_breaker_done(&b, &cfg, true, t + 251);
    CHECK_EQ_U64(b.state, UC_CLOSED);
    CHECK_EQ_U64(b.failures, 0);
    CHECK_EQ_U64(uc_breaker_wait(&b, &cfg, t + 251), 0);
    uc_breaker_done(&b, &cfg, false, t + 300);
    CHECK_EQ_U64(b.state, UC_CLOSED);
}

/* ---- Options, timeouts, degraded mode -------------------------------------
 */

/* The options a test sets, made into the library's with its setters. */
struct topts {
    int connect_timeout_ms, read_timeout_ms, write_timeout_ms;
    bool degraded;
    uint64_t default_value;
    unsigned breaker_failures;
    int breaker_open_ms;
};

static void topts_init(struct topts *t)
{
    memset(t, 0, sizeof(*t));
    t->connect_timeout_ms = t->read_timeout_ms = t->write_timeout_ms = 1000;
    t->breaker_failures = 3;
    t->breaker_open_ms = 1000;
}

static struct unread_opts *topts_make(const struct topts *t)
{
    struct unread_opts *o = unread_opts_new();

    CHECK(o != NULL);
    CHECK(unread_opts_set_timeouts(o, t->connect_timeout_ms, t->read_timeout_ms,
                                   t->write_timeout_ms) == 0);
    CHECK(unread_opts_set_degraded(o, t->degraded, t->default_value) == 0);
    CHECK(unread_opts_set_breaker(o, t->breaker_failures, t->breaker_open_ms) ==
          0);
    return o;
}

static struct unread *connect_t(const char *list, const struct topts *t,
                                char *err, size_t errlen)
{
    struct unread_opts *o = t != NULL ? topts_make(t) : NULL;
    struct unread *c = unread_connect_cluster(list, o, err, errlen);

    unread_opts_free(o);
    return c;
}

/* A handle over fakes f[0..n); NULL (reported) if it cannot be made. */
static struct unread *cluster(const struct fake *f, size_t n,
                              const struct topts *o)
{
    char list[1024], err[256];
    size_t len = 0, i;
    struct unread *c;

    for (i = 0; i < n; i++)
        len +=
            (size_t)snprintf(list + len, sizeof(list) - len, "%s127.0.0.1:%u",
                             i > 0 ? "," : "", (unsigned)f[i].port);
    c = connect_t(list, o, err, sizeof(err));
    if (c == NULL)
        fprintf(stderr, "cluster %s: %s\n", list, err);
    return c;
}

/* Degraded mode with a default of 7 and short timeouts. */
static void degraded_opts(struct topts *o, unsigned failures, int open_ms)
{
    topts_init(o);
    o->degraded = true;
    o->default_value = 7;
    o->breaker_failures = failures;
    o->breaker_open_ms = open_ms;
    o->connect_timeout_ms = 1000;
    o->read_timeout_ms = 100;
    o->write_timeout_ms = 100;
}

/* A port nothing listens on (bound, never listened, closed). */
static uint16_t closed_port(void)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    close(fd);
    return ntohs(sa.sin_port);
}

static void test_opts(void)
{
    struct unread_opts *op;
    struct topts o;
    struct unread *c;
    struct fake f = fake_start(FAKE_NORMAL, 0, false);
    char err[256], list[64];

    op = unread_opts_new();
    CHECK(op != NULL);
    /* values out of range are refused, the option kept */
    CHECK_EQ_U64(unread_opts_set_breaker(op, 0, 10), UNREAD_EUSAGE);
    CHECK_EQ_U64(unread_opts_set_breaker(op, 1, -1), UNREAD_EUSAGE);
    CHECK_EQ_U64(unread_opts_set_ring_points(op, 0), UNREAD_EUSAGE);
    CHECK_EQ_U64(unread_opts_set_reconnect(op, 10, 5), UNREAD_EUSAGE);
    CHECK_EQ_U64(unread_opts_set_reconnect(op, 0, 5), 0);
    CHECK_EQ_U64(unread_opts_set_password(op, "x"), 0);
    CHECK_EQ_U64(unread_opts_set_password(op, NULL), 0);
    /* 2 servers x 2^20 points is more than the ring holds */
    CHECK_EQ_U64(unread_opts_set_ring_points(op, 1u << 20), 0);
    CHECK(unread_connect_cluster("a:1,b:2", op, err, sizeof(err)) == NULL);
    CHECK(strstr(err, "ring_points") != NULL);
    unread_opts_free(op);
    unread_opts_free(NULL);
    CHECK_EQ_U64(unread_version(), UNREAD_VERSION_NUMBER);
    CHECK(strcmp(unread_version_string(), UNREAD_VERSION) == 0);
    CHECK(unread_connect_cluster(NULL, NULL, err, sizeof(err)) == NULL);
    CHECK(unread_connect_cluster("a:1,a:1", NULL, NULL, 0) == NULL);

    /* one server down: no handle without degraded mode, one with it */
    snprintf(list, sizeof(list), "127.0.0.1:%u,127.0.0.1:%u", (unsigned)f.port,
             (unsigned)closed_port());
    c = unread_connect_cluster(list, NULL, err, sizeof(err));
    CHECK(c == NULL);
    CHECK(strstr(err, "refused") != NULL && strstr(err, "127.0.0.1:") != NULL);
    degraded_opts(&o, 3, 1000);
    c = connect_t(list, &o, err, sizeof(err));
    CHECK(c != NULL);
    if (c != NULL) {
        CHECK_EQ_U64(unread_shards(c), 2);
        CHECK(strcmp(unread_shard_name(c, 0), list + 0) != 0);
        CHECK(strncmp(unread_shard_name(c, 0), list,
                      strlen(unread_shard_name(c, 0))) == 0);
        CHECK(unread_shard_name(c, 2) == NULL);
        CHECK_EQ_U64(unread_shard_circuit(c, 0), UNREAD_CIRCUIT_CLOSED);
        CHECK_EQ_U64(unread_shard_circuit(c, 1), UNREAD_CIRCUIT_CLOSED);
        CHECK(unread_shard_circuit(c, 2) == -1);
        CHECK(unread_shard_of(c, 12345) < 2);
    }
    unread_close(c);
    fake_stop(&f);
}

/*
 * Each timeout bounds its own phase: connect (a listener whose backlog is
 * full never completes the handshake), write (a server that never reads,
 * against more bytes than the socket buffers hold) and read (a server
 * that never answers).
 */
static void test_timeouts(void)
{
    enum { BIG = 32 << 20 };
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    struct topts o;
    struct unread_reply *r = NULL;
    struct unread_arg arg;
    struct unread *c;
    struct fake f;
    char err[256], list[64], *big;
    int lfd, fill[4], i;
    int64_t t0, dt;

    lfd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(lfd, (struct sockaddr *)&sa, sizeof(sa));
    listen(lfd, 0);
    getsockname(lfd, (struct sockaddr *)&sa, &sl);
    for (i = 0; i < 4; i++) {
        fill[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        connect(fill[i], (struct sockaddr *)&sa, sizeof(sa));
    }
    usleep(50 * 1000);
    snprintf(list, sizeof(list), "127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));
    topts_init(&o);
    o.connect_timeout_ms = 150;
    t0 = mono_ms();
    c = connect_t(list, &o, err, sizeof(err));
    dt = mono_ms() - t0;
    CHECK(c == NULL);
    CHECK(strstr(err, "connect: timeout after 150 ms") != NULL);
    CHECK(dt >= 120 && dt < 1500);
    unread_close(c);
    for (i = 0; i < 4; i++)
        close(fill[i]);
    close(lfd);

    f = fake_start(FAKE_DEAF, 0, false);
    topts_init(&o);
    o.write_timeout_ms = 150;
    o.read_timeout_ms = 5000;
    c = cluster(&f, 1, &o);
    big = malloc(BIG);
    CHECK(c != NULL && big != NULL);
    if (c != NULL && big != NULL) {
        memset(big, 'x', BIG);
        arg = unread_arg_str(big, BIG);
        t0 = mono_ms();
        CHECK_EQ_U64(unread_command(c, NULL, OP_ECHO, 1, &arg, &r),
                     UNREAD_ETIMEOUT);
        dt = mono_ms() - t0;
        CHECK(r == NULL);
        CHECK(strstr(unread_errstr(c), "write: timeout after 150 ms") != NULL);
        CHECK(dt >= 120 && dt < 3000);
        CHECK(unread_fd(c) < 0);
    }
    free(big);
    unread_close(c);
    fake_stop(&f);

    f = fake_start(FAKE_SILENT, 0, false);
    topts_init(&o);
    o.write_timeout_ms = 5000;
    o.read_timeout_ms = 150;
    c = cluster(&f, 1, &o);
    CHECK(c != NULL);
    if (c != NULL) {
        t0 = mono_ms();
        CHECK_EQ_U64(unread_ping(c), UNREAD_ETIMEOUT);
        dt = mono_ms() - t0;
        CHECK(strstr(unread_errstr(c), "read: timeout after 150 ms") != NULL);
        CHECK(dt >= 120 && dt < 3000);
    }
    unread_close(c);
    fake_stop(&f);
}

/*
 * A server that stops answering: each read answers the default, the
 * circuit opens after N failures, then calls are decided at once without
 * touching the network (typed, generic and pipelined alike), and after
 * open_ms exactly one probe goes out; it fails, and the circuit opens again.
 */
static void test_degraded_breaker(void)
{
    struct fake f = fake_start(FAKE_SILENT, 0, true);
    struct unread_cnt_pair pairs[UNREAD_CNT_TYPES];
    struct unread_arg a = unread_arg_int(3);
    struct unread_reply *r = NULL;
    struct topts o;
    struct unread *c;
    uint64_t total = 0;
    uint32_t value = 0;
    unsigned n = 9;
    int64_t t0;

    degraded_opts(&o, 2, 300);
    c = cluster(&f, 1, &o);
    CHECK(c != NULL);
    if (c == NULL)
        goto out;
    CHECK_EQ_U64(unread_cnt_total(c, 1, &total), UNREAD_DEGRADED);
    CHECK_EQ_U64(total, 7);
    CHECK(strstr(unread_errstr(c), "read: timeout") != NULL);
    CHECK(strcmp(fake_next(&f), "0106 i1") == 0);
    CHECK_EQ_U64(unread_shard_circuit(c, 0), UNREAD_CIRCUIT_CLOSED);
    CHECK_EQ_U64(unread_cnt_get(c, 2, 3, &value), UNREAD_DEGRADED);
    CHECK_EQ_U64(value, 7);
    CHECK(strcmp(fake_next(&f), "0104 i2 i3") == 0);
    CHECK_EQ_U64(unread_shard_circuit(c, 0), UNREAD_CIRCUIT_OPEN);

    t0 = mono_ms();
    total = 0;
    CHECK_EQ_U64(unread_cnt_total(c, 3, &total), UNREAD_DEGRADED);
    CHECK_EQ_U64(total, 7);
    CHECK(strstr(unread_errstr(c), "circuit open") != NULL);
    CHECK_EQ_U64(unread_cnt_getall(c, 3, pairs, &n), UNREAD_DEGRADED);
    CHECK_EQ_U64(n, 0);
    CHECK_EQ_U64(unread_cnt_incr(c, 3, 0, 1, &value, &total), UNREAD_EUNAVAIL);
    CHECK_EQ_U64(unread_ping(c), UNREAD_EUNAVAIL);
    CHECK_EQ_U64(unread_command(c, "CNT.TOTAL", 0, 1, &a, &r), UNREAD_DEGRADED);
    CHECK(r != NULL && r->kind == UNREAD_REPLY_INT && r->integer == 7);
    unread_reply_free(r);
    CHECK_EQ_U64(unread_pipe_begin(c), 0);
    CHECK_EQ_U64(unread_pipe_cnt_get(c, 4, 0), 0);
    CHECK_EQ_U64(unread_pipe_cnt_incr(c, 4, 0, 1), 0);
    CHECK_EQ_U64(unread_pipe_cnt_total(c, 4), 0);
    CHECK_EQ_U64(unread_pipe_flush(c), 0);
    CHECK_EQ_U64(unread_pipe_read(c, &r), UNREAD_DEGRADED);
    CHECK(r != NULL && r->kind == UNREAD_REPLY_INT && r->integer == 7);
    unread_reply_free(r);
    CHECK_EQ_U64(unread_pipe_read(c, &r), UNREAD_EUNAVAIL);
    CHECK(r == NULL);
    CHECK_EQ_U64(unread_pipe_read(c, &r), UNREAD_DEGRADED);
    unread_reply_free(r);
    CHECK_EQ_U64(unread_pipe_read(c, &r), UNREAD_EUSAGE);
    CHECK(mono_ms() - t0 < 50);
    CHECK(fake_quiet(&f));

    usleep(320 * 1000);
    CHECK_EQ_U64(unread_cnt_total(c, 5, &total), UNREAD_DEGRADED);
    CHECK(strcmp(fake_next(&f), "0106 i5") == 0);
    CHECK_EQ_U64(unread_shard_circuit(c, 0), UNREAD_CIRCUIT_OPEN);
    CHECK_EQ_U64(unread_cnt_total(c, 6, &total), UNREAD_DEGRADED);
    CHECK(fake_quiet(&f));
    unread_close(c);
out:
    fake_stop(&f);
}

/*
 * A server failing in the middle of a pipeline: requests it was sent read
 * as the failure (a write's outcome is unknown) or the default (a read);
 * requests queued to it afterwards are never sent: UNREAD_EUNAVAIL.
 */
static void test_degraded_pipeline_failure(void)
{
    struct fake f = fake_start(FAKE_SILENT, 0, true);
    struct unread_reply *r = NULL;
    struct topts o;
    struct unread *c;

    degraded_opts(&o, 10, 1000);
    c = cluster(&f, 1, &o);
    CHECK(c != NULL);
    if (c == NULL)
        goto out;
    CHECK_EQ_U64(unread_pipe_begin(c), 0);
    CHECK_EQ_U64(unread_pipe_cnt_total(c, 1), 0);
    CHECK_EQ_U64(unread_pipe_cnt_incr(c, 2, 0, 1), 0);
    CHECK_EQ_U64(unread_pipe_flush(c), 0);
    CHECK_EQ_U64(unread_pipe_read(c, &r), UNREAD_DEGRADED);
    CHECK(r != NULL && r->integer == 7);
    unread_reply_free(r);
    CHECK_EQ_U64(unread_pipe_cnt_incr(c, 3, 0, 1), 0);
    CHECK_EQ_U64(unread_pipe_cnt_total(c, 4), 0);
    CHECK_EQ_U64(unread_pipe_read(c, &r), UNREAD_ETIMEOUT);
    CHECK(r == NULL);
    CHECK_EQ_U64(unread_pipe_flush(c), 0);
    CHECK_EQ_U64(unread_pipe_read(c, &r), UNREAD_EUNAVAIL);
    CHECK_EQ_U64(unread_pipe_read(c, &r), UNREAD_DEGRADED);
    unread_reply_free(r);
    CHECK_EQ_U64(unread_pipe_read(c, &r), UNREAD_EUSAGE); /* over */
    CHECK(strcmp(fake_next(&f), "0106 i1") == 0);
    CHECK(strcmp(fake_next(&f), "0101 i2 i0 i1") == 0);
    CHECK(fake_quiet(&f));
    unread_close(c);
out:
    fake_stop(&f);
}

/*
 * A server that goes away and comes back on the same port: reads degrade,
 * writes are refused unsent, the circuit holds while open, then the probe
 * succeeds and the circuit closes. Without degraded mode the same outage
 * is a plain connect failure.
 */
static void test_degraded_recovery(void)
{
    struct fake f = fake_start(FAKE_NORMAL, 0, true);
    struct topts o;
    struct unread *c, *plain;
    uint16_t port = f.port;
    uint64_t total = 0;
    uint32_t value;

    degraded_opts(&o, 2, 200);
    c = cluster(&f, 1, &o);
    plain = conn(&f, 1000);
    CHECK(c != NULL && plain != NULL);
    if (c == NULL || plain == NULL)
        goto out;
    CHECK_EQ_U64(unread_cnt_total(c, 2, &total), 0);
    CHECK_EQ_U64(total, 6);
    fake_next(&f);
    fake_stop(&f);
    usleep(50 * 1000);

    CHECK_EQ_U64(unread_cnt_total(c, 2, &total), UNREAD_DEGRADED);
    CHECK_EQ_U64(total, 7);
    CHECK(strstr(unread_errstr(c), "refused") != NULL);
    CHECK_EQ_U64(unread_cnt_incr(c, 2, 0, 1, &value, NULL), UNREAD_EUNAVAIL);
    CHECK_EQ_U64(unread_shard_circuit(c, 0), UNREAD_CIRCUIT_OPEN);
    CHECK(unread_cnt_total(plain, 2, &total) < 0);
    CHECK_EQ_U64(unread_cnt_total(plain, 2, &total), UNREAD_ECONNECT);
    CHECK_EQ_U64(unread_shard_circuit(plain, 0), UNREAD_CIRCUIT_CLOSED);

    f = fake_start_on(FAKE_NORMAL, 0, true, port);
    CHECK_EQ_U64(unread_cnt_total(c, 2, &total), UNREAD_DEGRADED);
    CHECK(fake_quiet(&f));
    usleep(220 * 1000);
    CHECK_EQ_U64(unread_cnt_total(c, 2, &total), 0);
    CHECK_EQ_U64(total, 6);
    CHECK(strcmp(fake_next(&f), "0106 i2") == 0);
    CHECK_EQ_U64(unread_shard_circuit(c, 0), UNREAD_CIRCUIT_CLOSED);
    unread_close(c); /* the fake serves one connection at a time */
    c = NULL;
    CHECK_EQ_U64(unread_cnt_total(plain, 3, &total), 0); /* reconnected */
    CHECK_EQ_U64(total, 9);
out:
    unread_close(c);
    unread_close(plain);
    fake_stop(&f);
}

/* ---- Clusters --------------------------------------------------------------
 */

static void fakes_start(struct fake *f, size_t n, enum fake_mode mode)
{
    size_t i;

    for (i = 0; i < n; i++)
        f[i] = fake_start(mode, 0, true);
}

static void fakes_stop(struct fake *f, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        fake_stop(&f[i]);
}

static bool fakes_quiet(struct fake *f, size_t n)
{
    size_t i;
    bool quiet = true;

    for (i = 0; i < n; i++)
        quiet = fake_quiet(&f[i]) && quiet;
    return quiet;
}

/* uid-keyed commands go to the uid's server (integer or decimal string),
 * RCPT commands to the gid's, the rest to the first server; a command can
 * also be sent to a chosen server. */
static void test_cluster_routing(void)
{
    struct fake f[3];
    struct unread *c;
    struct unread_reply *r = NULL;
    struct unread_arg argv[2];
    char want[64];
    size_t hits[3] = {0, 0, 0}, s;
    uint64_t uid, total;

    fakes_start(f, 3, FAKE_NORMAL);
    c = cluster(f, 3, NULL);
    CHECK(c != NULL);
    if (c == NULL)
        goto out;
    CHECK_EQ_U64(unread_shards(c), 3);
    for (uid = 1; uid <= 300; uid++) {
        s = unread_shard_of(c, uid);
        CHECK_EQ_U64(unread_cnt_total(c, uid, &total), 0);
        CHECK_EQ_U64(total, uid * 3);
        snprintf(want, sizeof(want), "0106 i%llu", (unsigned long long)uid);
        CHECK(strcmp(fake_next(&f[s]), want) == 0);
        hits[s]++;
    }
    CHECK(hits[0] > 50 && hits[1] > 50 && hits[2] > 50);

    argv[0] = unread_arg_str("123", 3);
    argv[1] = unread_arg_int(0);
    CHECK_EQ_U64(unread_command(c, "CNT.GET", 0, 2, argv, &r), 0);
    unread_reply_free(r);
    CHECK(strcmp(fake_next(&f[unread_shard_of(c, 123)]), "0104 s3:123 i0") ==
          0);
    argv[0] = unread_arg_int(77);
    argv[1] = unread_arg_int(5);
    unread_command(c, "RCPT.COUNT", 0, 2, argv, &r); /* the fake: UNKNOWN */
    unread_reply_free(r);
    CHECK(strcmp(fake_next(&f[unread_shard_of(c, 77)]), "0706 i77 i5") == 0);

    CHECK_EQ_U64(unread_ping(c), 0);
    CHECK(strcmp(fake_next(&f[0]), "0001") == 0);
    argv[0] = unread_arg_str("abc", 3); /* no key: the first server says */
    unread_command(c, "CNT.TOTAL", 0, 1, argv, &r);
    unread_reply_free(r);
    CHECK(strcmp(fake_next(&f[0]), "0106 s3:abc") == 0);

    CHECK_EQ_U64(unread_command_shard(c, 2, "PING", 0, 0, NULL, &r), 0);
    CHECK(r != NULL && r->kind == UNREAD_REPLY_STATUS);
    unread_reply_free(r);
    CHECK(strcmp(fake_next(&f[2]), "0001") == 0);
    CHECK_EQ_U64(unread_command_shard(c, 3, "PING", 0, 0, NULL, &r),
                 UNREAD_EUSAGE);
    CHECK(r == NULL);
    CHECK(fakes_quiet(f, 3));
out:
    unread_close(c);
    fakes_stop(f, 3);
}

/* A pipeline over three servers, with a global write in it: per-server
 * sub-pipelines, replies in the caller's order. */
static void test_cluster_pipeline(void)
{
    enum { N = 600 };
    struct fake f[3];
    struct unread *c;
    struct unread_reply *r;
    struct unread_arg dot = unread_arg_int(5);
    uint64_t i, uid, bad = 0;
    int rc;

    fakes_start(f, 3, FAKE_NORMAL);
    c = cluster(f, 3, NULL);
    CHECK(c != NULL);
    if (c == NULL)
        goto out;
    CHECK_EQ_U64(unread_pipe_begin(c), 0);
    for (i = 0; i < N; i++) {
        uid = 1000 + i * 7;
        if (i == N / 2)
            rc = unread_pipe_cmd(c, "DOT.PUSH", 0, 1, &dot);
        else if (i % 2 == 0)
            rc = unread_pipe_cnt_total(c, uid);
        else
            rc = unread_pipe_cnt_incr(c, uid, (unsigned)(i % 64), (uint32_t)i);
        bad += rc != 0;
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(unread_pipe_queued(c), N);
    CHECK_EQ_U64(unread_pipe_flush(c), 0);
    CHECK_EQ_U64(unread_pipe_pending(c), N);
    for (i = 0; i < N; i++) {
        uid = 1000 + i * 7;
        rc = unread_pipe_read(c, &r);
        if (rc != 0 || r == NULL)
            bad++;
        else if (i == N / 2)
            bad += r->kind != UNREAD_REPLY_INT || r->integer != 50;
        else if (i % 2 == 0)
            bad += r->kind != UNREAD_REPLY_INT || r->integer != uid * 3;
        else
            bad += r->kind != UNREAD_REPLY_ARRAY || r->n != 2 ||
                   r->elem[0].integer != i ||
                   r->elem[1].integer != uid * 2 + i % 64;
        unread_reply_free(r);
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(unread_pipe_pending(c), 0);
    CHECK_EQ_U64(unread_ping(c), 0);
out:
    unread_close(c);
    fakes_stop(f, 3);
}

/* Global writes reach every server; GRP.POST's seqs must agree; with a
 * server down, a global write goes nowhere. */
static void test_cluster_global(void)
{
    static const char *const names[] = {"GRP.POST", "BC.PUBLISH", "DOT.PUSH",
                                        "FEED.POST", "FEED.UNPOST"};
    const struct ur_op *o;
    struct topts opts;
    struct unread_reply *r = NULL;
    struct unread_arg a = unread_arg_int(9);
    struct fake f[3];
    struct unread *c;
    char want[32];
    size_t i, k;

    fakes_start(f, 3, FAKE_NORMAL);
    c = cluster(f, 3, NULL);
    CHECK(c != NULL);
    if (c == NULL)
        goto out;
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        o = ur_op_by_name(names[i], strlen(names[i]));
        CHECK(o != NULL);
        if (o == NULL)
            continue;
        CHECK_EQ_U64(unread_command(c, names[i], 0, 1, &a, &r), 0);
        CHECK(r != NULL && r->kind == UNREAD_REPLY_INT && r->integer == 90);
        unread_reply_free(r);
        snprintf(want, sizeof(want), "%04x i9", o->code);
        for (k = 0; k < 3; k++)
            CHECK(strcmp(fake_next(&f[k]), want) == 0);
    }
    unread_close(c);

    /* the second server answers another seq */
    fake_stop(&f[1]);
    f[1] = fake_start(FAKE_SKEW, 0, true);
    c = cluster(f, 3, NULL);
    CHECK(c != NULL);
    if (c == NULL)
        goto out;
    CHECK_EQ_U64(unread_command(c, "GRP.POST", 0, 1, &a, &r), UNREAD_EMISMATCH);
    CHECK(r == NULL);
    CHECK(strstr(unread_errstr(c), "disagree") != NULL);
    CHECK(strstr(unread_errstr(c), "=90") != NULL);
    CHECK(strstr(unread_errstr(c), "=91") != NULL);
    for (k = 0; k < 3; k++)
        CHECK(strcmp(fake_next(&f[k]), "0301 i9") == 0);
    /* only GRP.POST promises equal answers: the first server's is taken */
    CHECK_EQ_U64(unread_command(c, "FEED.POST", 0, 1, &a, &r), 0);
    CHECK(r != NULL && r->integer == 90);
    unread_reply_free(r);
    for (k = 0; k < 3; k++)
        fake_next(&f[k]);
    unread_close(c);

    /* a server down: nothing is sent to the others */
    fake_stop(&f[2]);
    degraded_opts(&opts, 3, 1000);
    c = cluster(f, 3, &opts);
    CHECK(c != NULL);
    if (c == NULL)
        goto out;
    CHECK_EQ_U64(unread_command(c, "GRP.POST", 0, 1, &a, &r), UNREAD_EUNAVAIL);
    CHECK(r == NULL);
    CHECK(fakes_quiet(f, 2));
    f[2] = fake_start(FAKE_NORMAL, 0, true); /* for fakes_stop */
out:
    unread_close(c);
    fakes_stop(f, 3);
}

/* One server of three down: only its users degrade; the others keep
 * answering, synchronously and in pipelines. */
static void test_cluster_isolation(void)
{
    struct fake f[3];
    struct topts o;
    struct unread_reply *r;
    struct unread *c;
    uint64_t uid, total, bad = 0, degraded = 0;
    int64_t t0;
    int rc;

    fakes_start(f, 3, FAKE_NORMAL);
    degraded_opts(&o, 1, 10000);
    c = cluster(f, 3, &o);
    CHECK(c != NULL);
    if (c == NULL)
        goto out;
    fake_stop(&f[1]);
    usleep(50 * 1000);
    t0 = mono_ms();
    for (uid = 1; uid <= 60; uid++) {
        total = 0;
        rc = unread_cnt_total(c, uid, &total);
        if (unread_shard_of(c, uid) == 1) {
            bad += rc != UNREAD_DEGRADED || total != 7;
            degraded++;
        } else {
            bad += rc != 0 || total != uid * 3;
        }
    }
    CHECK_EQ_U64(bad, 0);
    CHECK(degraded > 5);
    CHECK_EQ_U64(unread_shard_circuit(c, 0), UNREAD_CIRCUIT_CLOSED);
    CHECK_EQ_U64(unread_shard_circuit(c, 1), UNREAD_CIRCUIT_OPEN);
    CHECK_EQ_U64(unread_shard_circuit(c, 2), UNREAD_CIRCUIT_CLOSED);

    CHECK_EQ_U64(unread_pipe_begin(c), 0);
    for (uid = 1; uid <= 60; uid++)
        unread_pipe_cnt_total(c, uid);
    CHECK_EQ_U64(unread_pipe_flush(c), 0);
    for (uid = 1; uid <= 60; uid++) {
        rc = unread_pipe_read(c, &r);
        if (unread_shard_of(c, uid) == 1)
            bad += rc != UNREAD_DEGRADED || r->integer != 7;
        else
            bad += rc != 0 || r->integer != uid * 3;
        unread_reply_free(r);
    }
    CHECK_EQ_U64(bad, 0);
    CHECK(mono_ms() - t0 < 1000);
    f[1] = fake_start(FAKE_NORMAL, 0, true); /* for fakes_stop */
out:
    unread_close(c);
    fakes_stop(f, 3);
}

/* The uids a logged request of op carries, in order, into out; how many
 * ("" or another op: 0). */
static size_t logged_uids(const char *line, uint16_t op, uint64_t *out,
                          size_t cap)
{
    char want[8];
    size_t n = 0;
    const char *p;

    snprintf(want, sizeof(want), "%04x", op);
    if (strncmp(line, want, 4) != 0)
        return 0;
    for (p = strchr(line, ' '); p != NULL && n < cap; p = strchr(p + 1, ' '))
        out[n++] = strtoull(p + 2, NULL, 10);
    return n;
}

/*
 * A request for many users (OPF_UIDS) on a cluster: each server gets its
 * uids only, in the caller's order, in one request; the replies come
 * back merged in the caller's order, compound elements included. Longer
 * lists go in requests of UR_UIDS_MAX. Pipelined with other requests,
 * the order holds. In a batch it is refused unless one server holds all.
 */
static void test_cluster_split(void)
{
    enum { N = 60, LONG = 2 * UR_UIDS_MAX + 5 };
    static uint64_t uids[LONG], totals[LONG], got[LONG];
    struct fake f[3];
    struct unread *c;
    struct unread_reply *r = NULL;
    struct unread_arg argv[N];
    size_t s, i, k, bad = 0, seen = 0, requests = 0;

    for (i = 0; i < LONG; i++)
        uids[i] = 1 + i * 7919 % 100003;
    fakes_start(f, 3, FAKE_NORMAL);
    c = cluster(f, 3, NULL);
    CHECK(c != NULL);
    if (c == NULL)
        goto out;
    CHECK_EQ_U64(unread_cnt_mtotal(c, uids, N, totals), 0);
    for (i = 0; i < N; i++)
        bad += totals[i] != uids[i] * 3;
    for (s = 0; s < 3; s++) {
        size_t j = 0;

        k = logged_uids(fake_next(&f[s]), UR_OP_CNT_MTOTAL, got, N);
        CHECK(k > 0);
        seen += k;
        for (i = 0; i < N; i++)
            if (unread_shard_of(c, uids[i]) == s)
                bad += j >= k || got[j++] != uids[i];
        bad += j != k;
    }
    CHECK_EQ_U64(seen, N);
    CHECK_EQ_U64(bad, 0);
    CHECK(fakes_quiet(f, 3));

    /* compound elements, through the generic call */
    for (i = 0; i < N; i++)
        argv[i] = unread_arg_int(uids[i]);
    CHECK_EQ_U64(unread_command(c, "USER.MBADGE", 0, N, argv, &r), 0);
    CHECK(r != NULL && r->kind == UNREAD_REPLY_ARRAY && r->n == N);
    for (i = 0; r != NULL && i < r->n; i++) {
        char name[32];

        snprintf(name, sizeof(name), "u%llu", (unsigned long long)uids[i]);
        bad += r->elem[i].kind != UNREAD_REPLY_ARRAY || r->elem[i].n != 2 ||
               r->elem[i].elem[0].integer != uids[i] ||
               strcmp(r->elem[i].elem[1].str, name) != 0;
    }
    unread_reply_free(r);
    CHECK_EQ_U64(bad, 0);
    for (s = 0; s < 3; s++)
        (void)fake_next(&f[s]);

    /* a long list: requests of at most UR_UIDS_MAX uids */
    CHECK_EQ_U64(unread_cnt_mtotal(c, uids, LONG, totals), 0);
    for (i = 0; i < LONG; i++)
        bad += totals[i] != uids[i] * 3;
    for (s = 0; s < 3; s++)
        while ((k = logged_uids(fake_next(&f[s]), UR_OP_CNT_MTOTAL, got,
                                LONG)) > 0) {
            bad += k > UR_UIDS_MAX;
            requests++;
        }
    CHECK_EQ_U64(bad, 0);
    /* 3 requests (1000, 1000, 5 uids), each split over the servers its
     * uids live on */
    for (i = 0, k = 0; i < LONG; i += UR_UIDS_MAX) {
        bool on[3] = {false, false, false};

        for (size_t j = i; j < LONG && j < i + UR_UIDS_MAX; j++)
            on[unread_shard_of(c, uids[j])] = true;
        k += on[0] + on[1] + on[2];
    }
    CHECK_EQ_U64(requests, k);
    CHECK(requests >= 7);

    /* in a pipeline, between other requests */
    CHECK_EQ_U64(unread_pipe_begin(c), 0);
    CHECK_EQ_U64(unread_pipe_cnt_total(c, 5), 0);
    CHECK_EQ_U64(unread_pipe_cmd(c, "CNT.MTOTAL", 0, N, argv), 0);
    CHECK_EQ_U64(unread_pipe_cnt_total(c, 6), 0);
    CHECK_EQ_U64(unread_pipe_flush(c), 0);
    CHECK_EQ_U64(unread_pipe_read(c, &r), 0);
    CHECK(r != NULL && r->integer == 15);
    unread_reply_free(r);
    CHECK_EQ_U64(unread_pipe_read(c, &r), 0);
    CHECK(r != NULL && r->kind == UNREAD_REPLY_ARRAY && r->n == N);
    for (i = 0; r != NULL && i < r->n; i++)
        bad += r->elem[i].integer != uids[i] * 3;
    unread_reply_free(r);
    CHECK_EQ_U64(unread_pipe_read(c, &r), 0);
    CHECK(r != NULL && r->integer == 18);
    unread_reply_free(r);
    CHECK_EQ_U64(bad, 0);

    /* a batch runs on one server */
    CHECK_EQ_U64(unread_batch_begin(c), 0);
    CHECK_EQ_U64(unread_pipe_cmd(c, "CNT.MTOTAL", 0, N, argv), UNREAD_EUSAGE);
    unread_batch_reset(c);

    /* a reply of the wrong shape from one server: UNREAD_EPROTO */
    CHECK_EQ_U64(unread_conv_mtotal(c, uids, N, totals), UNREAD_EPROTO);
    CHECK_EQ_U64(unread_ping(c), 0);
out:
    unread_close(c);
    fakes_stop(f, 3);
}

/* A split read with one server down: without degraded mode the call
 * fails; in degraded mode the other servers' users are read and the down
 * server's read as the default (the call says UNREAD_DEGRADED). */
static void test_cluster_split_degraded(void)
{
    enum { N = 40 };
    uint64_t uids[N], totals[N];
    struct topts o;
    struct fake f[3];
    struct unread *c;
    size_t i, down = 3, bad = 0;

    for (i = 0; i < N; i++)
        uids[i] = 100 + i * 13;
    fakes_start(f, 3, FAKE_NORMAL);
    c = cluster(f, 3, NULL);
    CHECK(c != NULL);
    if (c == NULL)
        goto out;
    down = unread_shard_of(c, uids[0]);
    fake_stop(&f[down]);
    CHECK(unread_cnt_mtotal(c, uids, N, totals) < 0);
    unread_close(c);
    degraded_opts(&o, 3, 60000);
    c = cluster(f, 3, &o);
    CHECK(c != NULL);
    if (c == NULL)
        goto out;
    CHECK_EQ_U64(unread_cnt_mtotal(c, uids, N, totals), UNREAD_DEGRADED);
    for (i = 0; i < N; i++)
        bad += totals[i] !=
               (unread_shard_of(c, uids[i]) == down ? 7 : uids[i] * 3);
    CHECK_EQ_U64(bad, 0);
out:
    unread_close(c);
    for (i = 0; i < 3; i++)
        if (i != down)
            fake_stop(&f[i]);
}

/* ---- The asynchronous handle ------------------------------------------- */

/* What a callback saw. */
struct acall {
    int rc;
    int calls;
    uint32_t value;
    uint64_t total;
    struct unread_async *close_me; /* closes the handle from the callback */
};

static void acb(struct unread_async *a, int rc, void *priv)
{
    struct acall *x = priv;

    (void)a;
    x->rc = rc;
    x->calls++;
    if (x->close_me != NULL)
        unread_async_close(x->close_me);
}

static struct unread_async *aconnect(const struct fake *f, size_t n,
                                     const struct topts *t)
{
    char list[1024], err[256];
    size_t len = 0, i;
    struct unread_opts *o = t != NULL ? topts_make(t) : NULL;
    struct unread_async *a;

    for (i = 0; i < n; i++)
        len +=
            (size_t)snprintf(list + len, sizeof(list) - len, "%s127.0.0.1:%u",
                             i > 0 ? "," : "", (unsigned)f[i].port);
    if (o != NULL)
        unread_opts_set_reconnect(o, 20, 100);
    a = unread_async_connect(list, o, err, sizeof(err));
    unread_opts_free(o);
    if (a == NULL)
        fprintf(stderr, "async %s: %s\n", list, err);
    return a;
}

/* Runs the handle's own poll loop until nothing is pending, at most ms:
 * true when it got there. */
static bool arun(struct unread_async *a, int ms)
{
    int64_t end = mono_ms() + ms;

    while (unread_async_pending(a) > 0 && mono_ms() < end)
        unread_async_poll(a, 50);
    return unread_async_pending(a) == 0;
}

/* Typed calls and the generic one, pipelined, answered in order; the
 * counter types learnt at connect; callbacks never inside a queue call. */
static void test_async_calls(void)
{
    struct fake f = fake_start(FAKE_NORMAL, 0, true);
    struct unread_async *a = aconnect(&f, 1, NULL);
    struct acall x[6];
    struct unread_cnt_pair pairs[UNREAD_CNT_TYPES];
    struct unread_arg argv[2] = {unread_arg_int(5), unread_arg_str("hi", 2)};
    struct unread_reply *r = NULL;
    unsigned npairs = 0, type = 99;
    int i;

    memset(x, 0, sizeof(x));
    CHECK(a != NULL);
    if (a == NULL)
        goto out;
    CHECK_EQ_U64(unread_async_type(a, "dm", &type), UNREAD_EUNAVAIL);
    CHECK_EQ_U64(unread_async_type(a, "2", &type), 0);
    CHECK_EQ_U64(type, 2);
    CHECK_EQ_U64(unread_async_cnt_incr(a, 10, 3, 4, &x[0].value, &x[0].total,
                                       acb, &x[0]),
                 0);
    CHECK_EQ_U64(unread_async_cnt_total(a, 7, &x[1].total, acb, &x[1]), 0);
    CHECK_EQ_U64(unread_async_cnt_getall(a, 1, pairs, &npairs, acb, &x[2]), 0);
    CHECK_EQ_U64(unread_async_ping(a, acb, &x[3]), 0);
    CHECK_EQ_U64(
        unread_async_command(a, NULL, OP_ECHO, 2, argv, &r, acb, &x[4]), 0);
    CHECK_EQ_U64(unread_async_cnt_get(a, UID_ARITY, 0, &x[5].value, acb, &x[5]),
                 0);
    for (i = 0; i < 6; i++)
        CHECK_EQ_U64(x[i].calls, 0); /* nothing runs inside a queue call */
    CHECK_EQ_U64(unread_async_pending(a), 6);
    CHECK(arun(a, 3000));
    for (i = 0; i < 6; i++)
        CHECK_EQ_U64(x[i].calls, 1);
    CHECK_EQ_U64(x[0].rc, 0);
    CHECK_EQ_U64(x[0].value, 4);
    CHECK_EQ_U64(x[0].total, 23);
    CHECK_EQ_U64(x[1].rc, 0);
    CHECK_EQ_U64(x[1].total, 21);
    CHECK_EQ_U64(x[2].rc, 0);
    CHECK_EQ_U64(npairs, 2);
    CHECK(npairs == 2 && pairs[1].type == 4 && pairs[1].value == 1);
    CHECK_EQ_U64(x[3].rc, 0);
    CHECK_EQ_U64(x[4].rc, 0);
    CHECK(r != NULL && r->kind == UNREAD_REPLY_ARRAY && r->n == 2 &&
          r->elem[0].integer == 5 && strcmp(r->elem[1].str, "hi") == 0);
    unread_reply_free(r);
    CHECK_EQ_U64(x[5].rc, UNREAD_ERR_ARITY);
    /* the handshake asked the names first; requests in order after it */
    CHECK(strcmp(fake_next(&f), "0006 s3:GET s13:counter-types") == 0);
    CHECK(strcmp(fake_next(&f), "0101 i10 i3 i4") == 0);
    CHECK(strcmp(fake_next(&f), "0106 i7") == 0);
    CHECK_EQ_U64(unread_async_type(a, "dm", &type), 0);
    CHECK_EQ_U64(type, 3);
    CHECK_EQ_U64(unread_async_type(a, "nosuch", &type), UNREAD_ERR_BADARG);
    CHECK(strstr(unread_async_errstr(a), "nosuch") != NULL);

    /* usage errors queue nothing and call nothing */
    CHECK_EQ_U64(unread_async_cnt_total(a, 7, &x[1].total, NULL, NULL),
                 UNREAD_EUSAGE);
    CHECK_EQ_U64(unread_async_command(a, "NO.SUCH", 0, 0, NULL, &r, acb, &x[1]),
                 UNREAD_ERR_UNKNOWN);
    CHECK_EQ_U64(unread_async_pending(a), 0);
out:
    unread_async_close(a);
    fake_stop(&f);
}

/* A cluster: a many-users read split by server and merged in order,
 * chunked past UR_UIDS_MAX; a global write to every server; a skewed
 * one reported. */
static void test_async_cluster(void)
{
    enum { N = 2500 };
    struct fake f[3];
    struct unread_async *a;
    static uint64_t uids[N], totals[N];
    struct acall x[3];
    uint64_t head = 0;
    size_t i;
    bool ok = true;

    memset(x, 0, sizeof(x));
    fakes_start(f, 3, FAKE_NORMAL);
    a = aconnect(f, 3, NULL);
    CHECK(a != NULL);
    if (a == NULL)
        goto out;
    for (i = 0; i < N; i++)
        uids[i] = 1 + i * 7;
    CHECK_EQ_U64(unread_async_cnt_mtotal(a, uids, N, totals, acb, &x[0]), 0);
    CHECK_EQ_U64(unread_async_bc_publish(a, 4, &head, acb, &x[1]), 0);
    CHECK(arun(a, 5000));
    CHECK_EQ_U64(x[0].calls, 1);
    CHECK_EQ_U64(x[0].rc, 0);
    for (i = 0; i < N; i++)
        ok = ok && totals[i] == uids[i] * 3;
    CHECK(ok);
    CHECK_EQ_U64(x[1].rc, 0);
    CHECK_EQ_U64(head, 40);
    for (i = 0; i < 3; i++) {
        const char *line;

        while ((line = fake_next(&f[i]))[0] != '\0' &&
               strncmp(line, "0401", 4) != 0)
            ;
        CHECK(strcmp(line, "0401 i4") == 0); /* every shard published */
    }
    unread_async_close(a);

    /* a shard that answers differently */
    fake_stop(&f[1]);
    f[1] = fake_start_on(FAKE_SKEW, 0, false, f[1].port);
    a = aconnect(f, 3, NULL);
    CHECK(a != NULL);
    if (a == NULL)
        goto out;
    CHECK_EQ_U64(unread_async_command(a, "GRP.POST", 0, 1,
                                      (struct unread_arg[]){unread_arg_int(7)},
                                      (struct unread_reply *[]){NULL}, acb,
                                      &x[2]) == 0,
                 1);
    CHECK(arun(a, 3000));
    CHECK_EQ_U64(x[2].rc, UNREAD_EMISMATCH);
    CHECK(strstr(unread_async_errstr(a), "disagree") != NULL);
out:
    unread_async_close(a);
    fakes_stop(f, 3);
}

/* Per-command timeouts: a silent server fails the request at its own
 * deadline, and every request in flight on it; degraded mode answers the
 * reads with the default. */
static void test_async_timeout(void)
{
    struct fake f = fake_start(FAKE_SILENT, 0, false);
    struct topts t;
    struct unread_async *a;
    struct acall x[3];
    int64_t t0;

    memset(x, 0, sizeof(x));
    topts_init(&t);
    a = aconnect(&f, 1, &t);
    CHECK(a != NULL);
    if (a == NULL)
        goto out;
    unread_async_set_timeout(a, 150);
    t0 = mono_ms();
    CHECK_EQ_U64(unread_async_cnt_total(a, 1, &x[0].total, acb, &x[0]), 0);
    unread_async_set_timeout(a, 5000);
    CHECK_EQ_U64(unread_async_cnt_total(a, 2, &x[1].total, acb, &x[1]), 0);
    CHECK(arun(a, 3000));
    CHECK(mono_ms() - t0 < 2000); /* the first deadline failed both */
    CHECK_EQ_U64(x[0].rc, UNREAD_ETIMEOUT);
    CHECK_EQ_U64(x[1].rc, UNREAD_ETIMEOUT);
    CHECK(strstr(unread_async_errstr(a), "timeout") != NULL);
    unread_async_close(a);

    degraded_opts(&t, 5, 1000);
    a = aconnect(&f, 1, &t);
    CHECK(a != NULL);
    if (a == NULL)
        goto out;
    unread_async_set_timeout(a, 100);
    x[0].total = 0;
    CHECK_EQ_U64(unread_async_cnt_total(a, 1, &x[0].total, acb, &x[0]), 0);
    CHECK_EQ_U64(unread_async_cnt_incr(a, 1, 0, 1, NULL, NULL, acb, &x[2]), 0);
    CHECK(arun(a, 3000));
    CHECK_EQ_U64(x[0].rc, UNREAD_DEGRADED);
    CHECK_EQ_U64(x[0].total, 7);
    CHECK_EQ_U64(x[2].rc, UNREAD_ETIMEOUT); /* sent: outcome unknown */
out:
    unread_async_close(a);
    fake_stop(&f);
}

/* A server restart: the requests in flight on the dead connection fail,
 * later ones reconnect by themselves. */
static void test_async_restart(void)
{
    struct fake f = fake_start(FAKE_NORMAL, 0, false);
    struct topts t;
    struct unread_async *a;
    struct acall x[4];
    uint16_t port = f.port;
    int64_t end;

    memset(x, 0, sizeof(x));
    topts_init(&t);
    a = aconnect(&f, 1, &t);
    CHECK(a != NULL);
    if (a == NULL)
        goto out;
    CHECK_EQ_U64(unread_async_cnt_total(a, 3, &x[0].total, acb, &x[0]), 0);
    CHECK(arun(a, 3000));
    CHECK_EQ_U64(x[0].rc, 0);
    fake_stop(&f);
    /* down: the idle connection's close is seen, the connect refused */
    CHECK_EQ_U64(unread_async_cnt_total(a, 3, &x[1].total, acb, &x[1]), 0);
    CHECK(arun(a, 3000));
    CHECK(x[1].rc == UNREAD_ECONNECT || x[1].rc == UNREAD_ECLOSED ||
          x[1].rc == UNREAD_EIO);
    f = fake_start_on(FAKE_NORMAL, 0, false, port);
    /* back: within the backoff (at most 100 ms here) requests go again */
    end = mono_ms() + 3000;
    do {
        x[2].calls = 0;
        CHECK_EQ_U64(unread_async_cnt_total(a, 4, &x[2].total, acb, &x[2]), 0);
        CHECK(arun(a, 3000));
        if (x[2].rc != 0)
            usleep(20 * 1000);
    } while (x[2].rc != 0 && mono_ms() < end);
    CHECK_EQ_U64(x[2].rc, 0);
    CHECK_EQ_U64(x[2].total, 12);

    /* a connection the server drops mid-stream fails what it owed */
    fake_stop(&f);
    f = fake_start_on(FAKE_CLOSE_AFTER, 1, false, port);
    CHECK_EQ_U64(unread_async_cnt_total(a, 5, &x[0].total, acb, &x[0]), 0);
    CHECK_EQ_U64(unread_async_cnt_total(a, 6, &x[3].total, acb, &x[3]), 0);
    CHECK(arun(a, 3000));
    CHECK(x[0].rc != 0 || x[3].rc != 0);
out:
    unread_async_close(a);
    fake_stop(&f);
}

/* The breaker: a dead server opens its circuit; reads are the default at
 * once without the network, writes are "not sent"; the probe after
 * breaker_open_ms closes it when the server is back. */
static void test_async_breaker(void)
{
    uint16_t port = closed_port();
    struct fake f = {-1, port, -1}, g;
    struct topts t;
    struct unread_async *a;
    struct acall x[4];
    int i;
    int64_t t0;

    memset(x, 0, sizeof(x));
    degraded_opts(&t, 2, 300);
    a = aconnect(&f, 1, &t);
    CHECK(a != NULL);
    if (a == NULL)
        return;
    for (i = 0; i < 3; i++) {
        x[0].total = 0;
        CHECK_EQ_U64(unread_async_cnt_total(a, 1, &x[0].total, acb, &x[0]), 0);
        CHECK(arun(a, 3000));
        CHECK_EQ_U64(x[0].rc, UNREAD_DEGRADED);
        CHECK_EQ_U64(x[0].total, 7);
        usleep(120 * 1000); /* past the reconnect backoff */
    }
    CHECK_EQ_U64(unread_async_shard_circuit(a, 0), UNREAD_CIRCUIT_OPEN);
    t0 = mono_ms();
    CHECK_EQ_U64(unread_async_cnt_incr(a, 1, 0, 1, NULL, NULL, acb, &x[1]), 0);
    CHECK(arun(a, 3000));
    CHECK_EQ_U64(x[1].rc, UNREAD_EUNAVAIL);
    CHECK(strstr(unread_async_errstr(a), "circuit open") != NULL);
    CHECK(mono_ms() - t0 < 100);

    g = fake_start_on(FAKE_NORMAL, 0, false, port);
    usleep(350 * 1000);
    CHECK_EQ_U64(unread_async_cnt_total(a, 2, &x[2].total, acb, &x[2]), 0);
    CHECK(arun(a, 3000));
    CHECK_EQ_U64(x[2].rc, 0);
    CHECK_EQ_U64(x[2].total, 6);
    CHECK_EQ_U64(unread_async_shard_circuit(a, 0), UNREAD_CIRCUIT_CLOSED);
    unread_async_close(a);
    fake_stop(&g);
}

/* Closing from a callback completes the other requests with ECLOSED; a
 * connect that is refused is answered later, never inside the call. */
static void test_async_close(void)
{
    struct fake f = fake_start(FAKE_SILENT, 0, false);
    uint16_t dead = closed_port();
    struct fake d = {-1, dead, -1};
    struct unread_async *a = aconnect(&d, 1, NULL);
    struct acall x[3];

    memset(x, 0, sizeof(x));
    CHECK(a != NULL);
    if (a == NULL)
        goto out;
    CHECK_EQ_U64(unread_async_cnt_total(a, 1, &x[0].total, acb, &x[0]), 0);
    CHECK_EQ_U64(x[0].calls, 0);
    CHECK(arun(a, 3000));
    CHECK_EQ_U64(x[0].calls, 1);
    CHECK_EQ_U64(x[0].rc, UNREAD_ECONNECT);
    CHECK(strstr(unread_async_errstr(a), "refused") != NULL ||
          strstr(unread_async_errstr(a), "attempt") != NULL);
    unread_async_close(a);

    a = aconnect(&f, 1, NULL);
    CHECK(a != NULL);
    if (a == NULL)
        goto out;
    unread_async_set_timeout(a, 100);
    x[0].close_me = a;
    x[0].calls = 0;
    CHECK_EQ_U64(unread_async_cnt_total(a, 1, &x[0].total, acb, &x[0]), 0);
    unread_async_set_timeout(a, 0);
    CHECK_EQ_U64(unread_async_cnt_total(a, 2, &x[1].total, acb, &x[1]), 0);
    /* the first times out, its callback closes the handle: the second
     * completes then, with the same failure (it was in flight on the same
     * connection) */
    while (x[1].calls == 0)
        unread_async_poll(a, 50);
    CHECK_EQ_U64(x[0].calls, 1);
    CHECK_EQ_U64(x[1].calls, 1);
    CHECK(x[1].rc == UNREAD_ETIMEOUT || x[1].rc == UNREAD_ECLOSED);
    a = NULL;
out:
    unread_async_close(a);
    fake_stop(&f);
}

/* Hooks: an event loop of our own watches what the handle asks for. */
struct loop {
    int fd[4], ev[4];
    int timer_ms;
    int watches, detached;
};

static void loop_watch(void *data, size_t i, int fd, int events)
{
    struct loop *l = data;

    if (i < 4) {
        l->fd[i] = fd;
        l->ev[i] = events;
    }
    l->watches++;
}

static void loop_timer(void *data, int ms)
{
    ((struct loop *)data)->timer_ms = ms;
}

static void loop_detach(void *data)
{
    ((struct loop *)data)->detached++;
}

static void test_async_hooks(void)
{
    struct fake f = fake_start(FAKE_NORMAL, 0, false);
    struct unread_async *a = aconnect(&f, 1, NULL);
    struct unread_async_hooks h = {NULL, loop_watch, loop_timer, loop_detach};
    struct loop l;
    struct acall x;
    struct unread_async_pollfd pf[2];
    int64_t end = mono_ms() + 3000;

    memset(&l, 0, sizeof(l));
    memset(&x, 0, sizeof(x));
    l.fd[0] = -1;
    l.timer_ms = -1;
    h.data = &l;
    CHECK(a != NULL);
    if (a == NULL)
        goto out;
    CHECK_EQ_U64(unread_async_attach(a, &h), 0);
    CHECK_EQ_U64(unread_async_attach(a, &h), UNREAD_EUSAGE);
    CHECK(l.fd[0] >= 0 && (l.ev[0] & UNREAD_EV_WRITE)); /* connecting */
    CHECK_EQ_U64(unread_async_fds(a, pf, 2), 1);
    CHECK(pf[0].fd == l.fd[0] && pf[0].events == l.ev[0]);
    CHECK_EQ_U64(unread_async_cnt_total(a, 9, &x.total, acb, &x), 0);
    while (x.calls == 0 && mono_ms() < end) {
        struct pollfd p = {l.fd[0], 0, 0};

        p.events = (short)(((l.ev[0] & UNREAD_EV_READ) ? POLLIN : 0) |
                           ((l.ev[0] & UNREAD_EV_WRITE) ? POLLOUT : 0));
        if (poll(&p, 1, 50) > 0)
            unread_async_handle_events(
                a, p.fd,
                ((p.revents & (POLLIN | POLLHUP | POLLERR)) ? UNREAD_EV_READ
                                                            : 0) |
                    ((p.revents & POLLOUT) ? UNREAD_EV_WRITE : 0));
        if (l.timer_ms == 0)
            unread_async_handle_timeout(a);
    }
    CHECK_EQ_U64(x.calls, 1);
    CHECK_EQ_U64(x.total, 27);
    CHECK_EQ_U64(l.ev[0], UNREAD_EV_READ); /* connected, nothing to send */
    unread_async_close(a);
    CHECK_EQ_U64(l.detached, 1);
out:
    fake_stop(&f);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    T_RUN(test_typed_calls);
    T_RUN(test_push_frames_are_set_aside);
    T_RUN(test_command);
    T_RUN(test_server_errors);
    T_RUN(test_bad_shapes);
    T_RUN(test_pipeline_10k);
    T_RUN(test_pipeline_usage);
    T_RUN(test_pipeline_failure);
    T_RUN(test_bad_id);
    T_RUN(test_garbage);
    T_RUN(test_timeout);
    T_RUN(test_close_mid_reply);
    T_RUN(test_reconnect_idle);
    T_RUN(test_connect);
    T_RUN(test_strerror);
    T_RUN(test_addrs_parse);
    T_RUN(test_ring_golden);
    T_RUN(test_ring_movement);
    T_RUN(test_breaker_clock);
    T_RUN(test_opts);
    T_RUN(test_timeouts);
    T_RUN(test_degraded_breaker);
    T_RUN(test_degraded_pipeline_failure);
    T_RUN(test_degraded_recovery);
    T_RUN(test_cluster_routing);
    T_RUN(test_cluster_pipeline);
    T_RUN(test_cluster_global);
    T_RUN(test_cluster_isolation);
    T_RUN(test_cluster_split);
    T_RUN(test_cluster_split_degraded);
    T_RUN(test_async_calls);
    T_RUN(test_async_cluster);
    T_RUN(test_async_timeout);
    T_RUN(test_async_restart);
    T_RUN(test_async_breaker);
    T_RUN(test_async_close);
    T_RUN(test_async_hooks);
    T_RUN(test_sentinel);
    T_END();
}
