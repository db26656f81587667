/*
 * test_batch.c - atomic batches (server/batch.c) on a scratch db, with no
 * socket: batch frames built with the frame encoders and read by the real
 * parser, MULTI/EXEC/DISCARD through exec_text on one session, a
 * randomized run against a naive model, and the journal on a real
 * directory: a batch is one record, replayed whole, and cut whole when a
 * crash tore it.
 */
#include <ctype.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "batch.h"
#include "cnt.h"
#include "exec.h"
#include "frame.h"
#include "journal.h"
#include "persist.h"
#include "replay.h"
#include "t.h"

#define MAX_WORDS 16

static struct server srv;
static struct session sess = {.id = 1, .proto = REPLY_RESP, .authed = true};
static struct ur_buf out;
static char dir[64];

/* ---- helpers ------------------------------------------------------------ */

static void server_up(void)
{
    memset(&srv, 0, sizeof(srv));
    config_init(&srv.cfg);
    CHECK(db_init(&srv.db) == 0);
}

static void server_down(void)
{
    replay_close(&srv);
    db_deinit(&srv.db);
    slowlog_deinit(&srv.slowlog);
    batch_multi_end(&sess);
}

/* Splits line into words, in a buffer of its own. */
static uint32_t words(const char *line, char *copy, size_t cap,
                      char *w[MAX_WORDS])
{
    uint32_t n = 0;

    snprintf(copy, cap, "%s", line);
    for (char *p = strtok(copy, " "); p && n < MAX_WORDS; p = strtok(NULL, " "))
        w[n++] = p;
    return n;
}

/* The reply in out, NUL-terminated. */
static const char *reply_text(void)
{
    ur_buf_append(&out, "", 1);
    return out.data;
}

/* Runs one text command on sess; returns the reply. The words are
 * overwritten by the next call, as a connection's input buffer is. */
static const char *text(const char *line)
{
    static char copy[512];
    struct ur_arg argv[MAX_WORDS];
    char *w[MAX_WORDS];
    uint32_t argc = words(line, copy, sizeof(copy), w);
    struct reply r;

    for (uint32_t i = 0; i < argc; i++)
        argv[i] = (struct ur_arg){UR_ARG_STR, (uint32_t)strlen(w[i]), w[i], 0};
    out.len = 0;
    reply_begin(&r, &out, (enum reply_proto)sess.proto, 0);
    exec_text(&srv, &sess, argc, argv, &r);
    reply_end(&r);
    memset(copy, 'x', sizeof(copy) - 1);
    return reply_text();
}

/*
 * Encodes the commands (NULL-terminated; "CNT.INCR 1 0 1", or "0x01ff"
 * for a raw opcode) as one batch frame: words of digits become integer
 * arguments, the others strings.
 */
static void encode_batch(struct ur_buf *b, uint32_t id, const char *const *cmds)
{
    static char copy[512];
    char *w[MAX_WORDS];
    size_t off;
    uint16_t n = 0;

    CHECK(ur_frame_req_begin(b, UR_FRAME_OP_BATCH, id, &off) == 0);
    for (; cmds[n] != NULL; n++) {
        uint32_t argc = words(cmds[n], copy, sizeof(copy), w);
        const struct ur_op *op = ur_op_by_name(w[0], strlen(w[0]));
        uint16_t code = op ? op->code : (uint16_t)strtoul(w[0], NULL, 16);

        CHECK(ur_frame_put_sub_hdr(b, code, (uint16_t)(argc - 1)) == 0);
        for (uint32_t i = 1; i < argc; i++) {
            if (isdigit((unsigned char)w[i][0]))
                CHECK(ur_frame_put_arg_int(b, strtoull(w[i], NULL, 10)) == 0);
            else
                CHECK(ur_frame_put_arg_str(b, w[i], strlen(w[i])) == 0);
        }
    }
    ur_frame_req_end(b, off, n);
}

/* Sends the commands as one batch frame through the real parser and
 * batch_exec, answering in sess's protocol; returns the reply (binary
 * replies are not text: look at out). *failed: batch_exec's count. */
static const char *batch_failed(const char *const *cmds, uint32_t *failed)
{
    static struct ur_arg args[UR_MAX_ARGS_DEFAULT];
    const struct ur_limits lim = {srv.cfg.max_frame, srv.cfg.max_args, 0};
    struct ur_frame_req req;
    struct ur_buf in;
    struct reply r;
    size_t used, hint;

    ur_buf_init(&in);
    encode_batch(&in, 77, cmds);
    CHECK(ur_frame_parse_request(in.data, in.len, &lim, args, &req, &used,
                                 &hint) == UR_PARSE_OK);
    CHECK(used == in.len && req.op == UR_FRAME_OP_BATCH && req.argc == 0);
    out.len = 0;
    reply_begin(&r, &out, (enum reply_proto)sess.proto, req.id);
    *failed = batch_exec(&srv, &sess, &req, &r);
    reply_end(&r);
    ur_buf_deinit(&in);
    return reply_text();
}

static const char *batch(const char *const *cmds)
{
    uint32_t failed;

    return batch_failed(cmds, &failed);
}

#define BATCH(...) batch((const char *const[]){__VA_ARGS__, NULL})

static bool starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* ---- batch frames ---------------------------------------------------------
 */

static void test_batch_runs_in_order(void)
{
    server_up();
    CHECK(strcmp(BATCH("CNT.INCR 1 0 1", "CNT.INCR 1 3 2", "CNT.GET 1 3",
                       "CNT.TOTAL 1"),
                 "*4\r\n*2\r\n:1\r\n:1\r\n*2\r\n:2\r\n:3\r\n:2\r\n:3\r\n") ==
          0);
    /* names and integers as strings work as in any request */
    CHECK(strcmp(BATCH("CNT.INCR 1 mention", "PING"),
                 "*2\r\n*2\r\n:2\r\n:4\r\n+PONG\r\n") == 0);
    CHECK(strcmp(BATCH("PING"), "*1\r\n+PONG\r\n") == 0);
    server_down();
}

static void test_batch_refused_whole(void)
{
    uint32_t failed = 9;

    server_up();
    CHECK(starts(BATCH("CNT.INCR 5 0 1", "0x01ff", "CNT.INCR 5 1 1"),
                 "-ERR batch op 1: unknown opcode 0x01ff"));
    CHECK(starts(BATCH("CNT.INCR 5 0 1", "CNT.INCR 5 1", "CNT.GET 5"),
                 "-ERR batch op 2: wrong number of arguments for 'CNT.GET'"));
    CHECK(starts(BATCH("CNT.INCR 5 0 1", "SAVE"),
                 "-ERR batch op 1: SAVE is not allowed in a batch"));
    CHECK(starts(BATCH("MULTI"),
                 "-ERR batch op 0: MULTI is not allowed in a batch"));
    CHECK(starts(BATCH("CNT.INCR 5 0 1", "0xff01"),
                 "-ERR batch op 1: unknown opcode 0xff01"));
    CHECK(starts(
        batch_failed((const char *const[]){"CNT.INCR 5 0 1", "QUIT", NULL},
                     &failed),
        "-ERR batch op 1: QUIT is not allowed"));
    CHECK_EQ_U64(failed, 0);
    /* nothing ran: no user was even created */
    CHECK_EQ_U64(cnt_entries(srv.db.cnt), 0);

    /* a session that must AUTH: refused whole, AUTH-free ops included */
    snprintf(srv.cfg.requirepass, sizeof(srv.cfg.requirepass), "pw");
    sess.authed = false;
    CHECK(starts(BATCH("PING", "CNT.INCR 5 0 1"),
                 "-NOAUTH batch op 1: Authentication required."));
    CHECK(strcmp(BATCH("PING"), "*1\r\n+PONG\r\n") == 0);
    sess.authed = true;
    CHECK_EQ_U64(cnt_entries(srv.db.cnt), 0);
    CHECK(srv.stats.errors >= 7);
    server_down();
}

static void test_batch_runtime_error_keeps_others(void)
{
    uint32_t failed = 0;

    server_up();
    CHECK(strcmp(batch_failed((const char *const[]){"CNT.INCR 7 0 1",
                                                    "CNT.INCR 7 nosuch 1",
                                                    "CNT.INCR 7 1 1", NULL},
                              &failed),
                 "*3\r\n*2\r\n:1\r\n:1\r\n"
                 "-ERR unknown counter type 'nosuch' (use 0..63 or a name "
                 "from counter-types)\r\n"
                 "*2\r\n:1\r\n:2\r\n") == 0);
    CHECK_EQ_U64(failed, 1);
    CHECK_EQ_U64(cnt_get(srv.db.cnt, 7, 0), 1);
    CHECK_EQ_U64(cnt_get(srv.db.cnt, 7, 1), 1);
    server_down();
}

static void test_batch_empty_and_binary(void)
{
    struct ur_frame_hdr h;
    struct ur_val_reader vr;
    struct ur_val v;
    size_t used, hint;

    server_up();
    CHECK(strcmp(BATCH("CNT.GET 1 0") + 0, "*1\r\n:0\r\n") == 0);
    CHECK(strcmp(batch((const char *const[]){NULL}), "*0\r\n") == 0);

    /* binary: one frame, the request's id, status 0, an error element */
    sess.proto = REPLY_BIN;
    BATCH("CNT.INCR 3 0 4", "CNT.INCR 3 64");
    out.len--; /* reply_text's NUL */
    CHECK(ur_frame_parse_reply(out.data, out.len, 1u << 20, &h, &used, &hint) ==
          UR_PARSE_OK);
    CHECK(used == out.len && h.id == 77 && h.op == 0);
    ur_val_reader_init(&vr, out.data + UR_FRAME_HDR, h.len);
    CHECK(ur_val_next(&vr, &v) && v.kind == UR_VAL_ARR && v.count == 2);
    CHECK(ur_val_next(&vr, &v) && v.kind == UR_VAL_ARR && v.count == 2);
    CHECK(ur_val_next(&vr, &v) && v.kind == UR_VAL_INT && v.num == 4);
    CHECK(ur_val_next(&vr, &v) && v.kind == UR_VAL_INT && v.num == 4);
    CHECK(ur_val_next(&vr, &v) && v.kind == UR_VAL_ERR &&
          v.code == UR_E_BADARG);
    CHECK(!ur_val_next(&vr, &v));

    /* refused: the status is the error's code */
    BATCH("CNT.INCR 3 0 4", "CNT.GET 3");
    out.len--;
    CHECK(ur_frame_parse_reply(out.data, out.len, 1u << 20, &h, &used, &hint) ==
          UR_PARSE_OK);
    CHECK(h.op == UR_E_ARITY && h.id == 77);
    CHECK_EQ_U64(cnt_get(srv.db.cnt, 3, 0), 4);
    sess.proto = REPLY_RESP;
    server_down();
}

/* ---- MULTI / EXEC / DISCARD -----------------------------------------------
 */

static void test_multi_exec(void)
{
    server_up();
    CHECK(strcmp(text("MULTI"), "+OK\r\n") == 0);
    CHECK(strcmp(text("CNT.INCR 9 mention 1"), "+QUEUED\r\n") == 0);
    CHECK(strcmp(text("CNT.INCR 9 dm 2"), "+QUEUED\r\n") == 0);
    CHECK(strcmp(text("CNT.INCR 9 64"), "+QUEUED\r\n") == 0); /* runtime */
    CHECK(strcmp(text("CNT.TOTAL 9"), "+QUEUED\r\n") == 0);
    /* queued, not run */
    CHECK_EQ_U64(cnt_entries(srv.db.cnt), 0);
    /* the words were overwritten after each call: the queue holds copies */
    const char *rep = text("EXEC");
    CHECK(starts(rep, "*4\r\n*2\r\n:1\r\n:1\r\n*2\r\n:2\r\n:3\r\n"
                      "-ERR unknown counter type '64'"));
    CHECK(strcmp(rep + strlen(rep) - 6, "\r\n:3\r\n") == 0);
    CHECK(sess.multi == NULL);
    CHECK(strcmp(text("CNT.GET 9 3"), ":2\r\n") == 0);

    /* an empty transaction */
    CHECK(strcmp(text("MULTI"), "+OK\r\n") == 0);
    CHECK(strcmp(text("EXEC"), "*0\r\n") == 0);
    server_down();
}

static void test_multi_errors(void)
{
    server_up();
    CHECK(strcmp(text("EXEC"), "-ERR EXEC without MULTI\r\n") == 0);
    CHECK(strcmp(text("DISCARD"), "-ERR DISCARD without MULTI\r\n") == 0);

    /* nested MULTI is an error that keeps the transaction */
    CHECK(strcmp(text("MULTI"), "+OK\r\n") == 0);
    CHECK(strcmp(text("MULTI"), "-ERR MULTI calls can not be nested\r\n") == 0);
    CHECK(strcmp(text("CNT.INCR 10 0 1"), "+QUEUED\r\n") == 0);
    CHECK(strcmp(text("EXEC"), "*1\r\n*2\r\n:1\r\n:1\r\n") == 0);

    /* refused when queued: EXECABORT, nothing runs */
    const char *refusals[] = {"NOPE 1", "CNT.GET 10", "SAVE", "BGSAVE"};
    for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
        CHECK(strcmp(text("MULTI"), "+OK\r\n") == 0);
        CHECK(strcmp(text("CNT.INCR 10 0 1"), "+QUEUED\r\n") == 0);
        CHECK(starts(text(refusals[i]), "-ERR "));
        CHECK(strcmp(text("CNT.INCR 10 0 1"), "+QUEUED\r\n") == 0);
        CHECK(strcmp(text("EXEC"), "-EXECABORT Transaction discarded "
                                   "because of previous errors.\r\n") == 0);
        CHECK(sess.multi == NULL);
    }
    CHECK(strcmp(text("MULTI"), "+OK\r\n") == 0);
    CHECK(starts(text("SHUTDOWN NOSAVE"),
                 "-ERR SHUTDOWN is not allowed in a transaction"));
    CHECK(!srv.shutdown_asap);
    CHECK(strcmp(text("DISCARD"), "+OK\r\n") == 0);
    CHECK_EQ_U64(cnt_get(srv.db.cnt, 10, 0), 1);

    /* DISCARD drops the queue */
    CHECK(strcmp(text("MULTI"), "+OK\r\n") == 0);
    CHECK(strcmp(text("CNT.INCR 10 0 5"), "+QUEUED\r\n") == 0);
    CHECK(strcmp(text("DISCARD"), "+OK\r\n") == 0);
    CHECK(strcmp(text("EXEC"), "-ERR EXEC without MULTI\r\n") == 0);
    CHECK_EQ_U64(cnt_get(srv.db.cnt, 10, 0), 1);

    /* QUIT runs at once, even in MULTI */
    CHECK(strcmp(text("MULTI"), "+OK\r\n") == 0);
    CHECK(strcmp(text("QUIT"), "+OK\r\n") == 0);
    CHECK(sess.multi != NULL); /* freed when the connection goes */
    server_down();
    CHECK(sess.multi == NULL);
}

static void test_multi_limits(void)
{
    char line[64];

    server_up();
    srv.cfg.max_args = 3;
    CHECK(strcmp(text("MULTI"), "+OK\r\n") == 0);
    for (int i = 0; i < 3; i++)
        CHECK(strcmp(text("CNT.INCR 11 0 1"), "+QUEUED\r\n") == 0);
    CHECK(starts(text("CNT.INCR 11 0 1"),
                 "-ERR transaction too large: at most 3 commands"));
    CHECK(starts(text("EXEC"), "-EXECABORT"));

    srv.cfg.max_args = 4096;
    srv.cfg.max_frame = 200; /* bytes of the queued commands */
    CHECK(strcmp(text("MULTI"), "+OK\r\n") == 0);
    int queued = 0;
    const char *rep;
    for (;;) {
        snprintf(line, sizeof(line), "CNT.INCR 11 0 %d", queued);
        rep = text(line);
        if (!starts(rep, "+QUEUED"))
            break;
        queued++;
    }
    CHECK(starts(rep, "-ERR transaction too large"));
    CHECK(queued > 3 && queued < 20);
    CHECK(starts(text("EXEC"), "-EXECABORT"));
    CHECK_EQ_U64(cnt_get(srv.db.cnt, 11, 0), 0);
    server_down();
}

static void test_multi_binary_refused(void)
{
    struct reply r;
    struct session bs = {.id = 2, .proto = REPLY_BIN, .authed = true};
    const uint16_t ops[] = {UR_OP_MULTI, UR_OP_EXEC, UR_OP_DISCARD};
    struct ur_frame_hdr h;
    size_t used, hint;

    server_up();
    for (size_t i = 0; i < 3; i++) {
        out.len = 0;
        reply_begin(&r, &out, REPLY_BIN, 5);
        exec_binary(&srv, &bs, ops[i], 0, NULL, &r);
        reply_end(&r);
        CHECK(ur_frame_parse_reply(out.data, out.len, 1u << 20, &h, &used,
                                   &hint) == UR_PARSE_OK);
        CHECK(h.op == UR_E_ERR);
        CHECK(memmem(out.data, out.len, "batch frame", 11) != NULL);
    }
    CHECK(bs.multi == NULL);
    server_down();
}

/* ---- randomized, against a naive model ------------------------------------
 */

/*
 * Random batches of CNT.INCR/DECR/SET on 4 users x 4 types, some refused
 * as a whole (an unknown opcode or a bad arity somewhere), some with a
 * command failing at run time (type 64). Each batch is run both as a frame
 * and (every other one) as MULTI/EXEC; the model applies the same rules.
 */
static uint64_t model[4][4];

static void model_apply(int kind, unsigned u, unsigned t, uint32_t v)
{
    uint64_t *x;

    if (t >= 4)
        return; /* the run-time failure case: the server refuses it too */
    x = &model[u][t];
    if (kind == 0)
        *x = *x + v > UINT32_MAX ? UINT32_MAX : *x + v;
    else if (kind == 1)
        *x = *x > v ? *x - v : 0;
    else
        *x = v;
}

/* Runs `rounds` random batches on srv, keeping the model in step. */
static void random_batches(unsigned seed, int rounds)
{
    static const char *const names[] = {"CNT.INCR", "CNT.DECR", "CNT.SET"};
    char cmd[16][64], line[80];
    const char *cmds[17], *rep;

    srand(seed);
    for (int round = 0; round < rounds; round++) {
        int n = 1 + rand() % 8, refuse = rand() % 6, kinds[16];
        unsigned us[16], ts[16];
        uint32_t vs[16];
        bool multi = round % 2 == 1;

        for (int i = 0; i < n; i++) {
            kinds[i] = rand() % 3;
            us[i] = (unsigned)rand() % 4;
            ts[i] = rand() % 10 == 0 ? 64 : (unsigned)rand() % 4;
            vs[i] = (uint32_t)rand() % 100;
            snprintf(cmd[i], sizeof(cmd[i]), "%s %u %u %u", names[kinds[i]],
                     us[i], ts[i], vs[i]);
            cmds[i] = cmd[i];
        }
        if (refuse == 0)
            snprintf(cmd[n - 1], sizeof(cmd[0]), "CNT.SET %u 1", us[0]);
        cmds[n] = NULL;
        if (multi) {
            CHECK(strcmp(text("MULTI"), "+OK\r\n") == 0);
            for (int i = 0; i < n; i++)
                text(cmds[i]);
            rep = text("EXEC");
        } else {
            rep = batch(cmds);
        }
        if (refuse == 0) {
            CHECK(starts(rep, multi ? "-EXECABORT" : "-ERR batch op"));
            continue;
        }
        snprintf(line, sizeof(line), "*%d\r\n", n);
        CHECK(starts(rep, line));
        for (int i = 0; i < n; i++)
            model_apply(kinds[i], us[i], ts[i], vs[i]);
    }
}

static void check_model(void)
{
    for (unsigned u = 0; u < 4; u++)
        for (unsigned t = 0; t < 4; t++)
            CHECK_EQ_U64(cnt_get(srv.db.cnt, u, t), model[u][t]);
}

static void test_batch_random(void)
{
    server_up();
    memset(model, 0, sizeof(model));
    random_batches(4242, 400);
    check_model();
    server_down();
}

/* ---- the journal ----------------------------------------------------------
 */

static void make_dir(void)
{
    snprintf(dir, sizeof(dir), "/tmp/test_batch.XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
}

static void remove_dir(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[384];

    while (d != NULL && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d != NULL)
        closedir(d);
    rmdir(dir);
}

static const char *seg1(void)
{
    static char path[256];
    snprintf(path, sizeof(path), "%s/journal.1", dir);
    return path;
}

static size_t seg1_size(void)
{
    struct stat st;
    return stat(seg1(), &st) == 0 ? (size_t)st.st_size : 0;
}

/* A server on dir, its journal replayed. */
static void start(void)
{
    char err[1024];

    server_up();
    snprintf(srv.cfg.dir, sizeof(srv.cfg.dir), "%s", dir);
    CHECK(replay_open(&srv, err, sizeof(err)) == 0);
}

/* The sub-request count of every batch record of segment 1, in order, in
 * nsub[0..); returns the number of records. */
static unsigned seg1_records(uint32_t *nsub, unsigned max)
{
    struct journal_scan s;
    struct journal_rec rec;
    struct ur_frame_req req;
    struct ur_arg *args = NULL;
    const char *why;
    uint32_t cap = 0;
    unsigned n = 0;
    size_t off = JOURNAL_HDR, len;
    char *buf;
    FILE *f = fopen(seg1(), "rb");

    len = seg1_size();
    buf = malloc(len + 1);
    CHECK(f != NULL && fread(buf, 1, len, f) == len);
    fclose(f);
    journal_scan(buf, len, NULL, true, &s);
    CHECK(s.state == JOURNAL_CLEAN);
    while (n < max && journal_rec_next(&s, buf, &off, &rec)) {
        CHECK(journal_rec_request(&rec, &args, &cap, &req, &why) == 0);
        nsub[n++] = req.op == UR_FRAME_OP_BATCH ? req.nsub : 0;
    }
    free(args);
    free(buf);
    return n;
}

static void test_journal_one_record(void)
{
    uint32_t nsub[8];

    make_dir();
    start();
    /* reads and failed commands are not recorded; the batch is one record
     * holding its two writes */
    CHECK(starts(BATCH("CNT.INCR 1 0 1", "CNT.GET 1 0", "CNT.INCR 1 bogus",
                       "CNT.INCR 1 1 1"),
                 "*4\r\n"));
    CHECK_EQ_U64(persist_appended(srv.persist), 1);
    /* a batch of reads (or of failures) leaves no record */
    BATCH("CNT.GET 1 0", "CNT.TOTAL 1", "CNT.INCR 1 bogus");
    CHECK_EQ_U64(persist_appended(srv.persist), 1);
    /* a refused batch neither */
    BATCH("CNT.INCR 1 0 1", "0x01ff");
    CHECK_EQ_U64(persist_appended(srv.persist), 1);
    /* MULTI/EXEC: one record too */
    text("MULTI");
    text("CNT.INCR 2 0 5");
    text("CNT.SET 2 3 7");
    CHECK(starts(text("EXEC"), "*2\r\n"));
    CHECK_EQ_U64(persist_appended(srv.persist), 2);
    CHECK(strcmp(text("CNT.INCR 3 0 1"), "*2\r\n:1\r\n:1\r\n") == 0);
    persist_flush(srv.persist);
    server_down();

    CHECK_EQ_U64(seg1_records(nsub, 8), 3);
    CHECK_EQ_U64(nsub[0], 2);
    CHECK_EQ_U64(nsub[1], 2);
    CHECK_EQ_U64(nsub[2], 0); /* a plain record */

    start();
    CHECK_EQ_U64(cnt_get(srv.db.cnt, 1, 0), 1);
    CHECK_EQ_U64(cnt_get(srv.db.cnt, 1, 1), 1);
    CHECK_EQ_U64(cnt_get(srv.db.cnt, 2, 0), 5);
    CHECK_EQ_U64(cnt_get(srv.db.cnt, 2, 3), 7);
    CHECK_EQ_U64(cnt_get(srv.db.cnt, 3, 0), 1);
    struct persist_info pi;
    persist_info(srv.persist, &pi);
    CHECK_EQ_U64(pi.loaded_records, 3);
    server_down();
    remove_dir();
}

/* One plain record, then a batch's; *before and *after: the segment's
 * size before and after the batch's record. */
static void write_batch_record(size_t *before, size_t *after)
{
    make_dir();
    start();
    text("CNT.INCR 1 0 1");
    persist_flush(srv.persist);
    *before = seg1_size();
    BATCH("CNT.INCR 1 0 1", "CNT.INCR 2 0 1", "CNT.INCR 3 0 1");
    persist_flush(srv.persist);
    *after = seg1_size();
    server_down();
}

/* A crash in the middle of writing a batch's record: at start the torn
 * record is cut, and none of the batch is applied, wherever the cut. */
static void test_journal_torn_batch(void)
{
    size_t before, after;

    write_batch_record(&before, &after);
    CHECK(after > before + 3 * 20);
    start();
    CHECK_EQ_U64(cnt_get(srv.db.cnt, 1, 0), 2);
    CHECK_EQ_U64(cnt_get(srv.db.cnt, 3, 0), 1);
    server_down();
    remove_dir();
    for (size_t cut = before + 1; cut < after; cut += 5) {
        write_batch_record(&before, &after);
        CHECK(truncate(seg1(), (off_t)cut) == 0);
        start();
        CHECK_EQ_U64(cnt_get(srv.db.cnt, 1, 0), 1);
        CHECK_EQ_U64(cnt_get(srv.db.cnt, 2, 0), 0);
        CHECK_EQ_U64(cnt_get(srv.db.cnt, 3, 0), 0);
        CHECK_EQ_U64(seg1_size(), before); /* cut back to the last whole */
        server_down();
        remove_dir();
    }
}

/* The journal cannot be written: a batch holding a write is refused as a
 * whole (-MISCONF), a batch of reads runs. */
static void test_journal_misconf(void)
{
    struct rlimit old, lim;

    make_dir();
    signal(SIGXFSZ, SIG_IGN);
    start();
    text("CNT.INCR 1 0 1");
    persist_flush(srv.persist);
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = seg1_size();
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    text("CNT.INCR 1 0 1");
    persist_flush(srv.persist); /* fails: the journal is broken */
    CHECK(starts(BATCH("CNT.GET 1 0", "CNT.INCR 2 0 1"), "-MISCONF"));
    CHECK(strcmp(BATCH("CNT.GET 1 0"), "*1\r\n:2\r\n") == 0);
    setrlimit(RLIMIT_FSIZE, &old);
    persist_flush(srv.persist);
    CHECK(starts(BATCH("CNT.GET 1 0", "CNT.INCR 2 0 1"), "*2\r\n"));
    persist_flush(srv.persist);
    server_down();
    start();
    CHECK_EQ_U64(cnt_get(srv.db.cnt, 1, 0), 2);
    CHECK_EQ_U64(cnt_get(srv.db.cnt, 2, 0), 1);
    server_down();
    remove_dir();
}

/* Random batches, replayed from the journal after a restart. */
static void test_journal_random_replay(void)
{
    make_dir();
    start();
    memset(model, 0, sizeof(model));
    random_batches(777, 300);
    check_model();
    persist_flush(srv.persist);
    server_down();
    start();
    check_model();
    server_down();
    remove_dir();
}

int main(void)
{
    T_RUN(test_batch_runs_in_order);
    T_RUN(test_batch_refused_whole);
    T_RUN(test_batch_runtime_error_keeps_others);
    T_RUN(test_batch_empty_and_binary);
    T_RUN(test_multi_exec);
    T_RUN(test_multi_errors);
    T_RUN(test_multi_limits);
    T_RUN(test_multi_binary_refused);
    T_RUN(test_batch_random);
    T_RUN(test_journal_one_record);
    T_RUN(test_journal_torn_batch);
    T_RUN(test_journal_misconf);
    T_RUN(test_journal_random_replay);
    ur_buf_deinit(&out);
    T_END();
}
