/*
 * test_journal.c - the journal: record codec (round trip, every
 * truncation, every flipped byte), the segment writer (rotation, removal,
 * a write cut short by a file-size limit and cut back), replay through the
 * executor, and whole recoveries through persist_setup on a real
 * directory: journal only, snapshot + journal, torn tail, corruption,
 * a missing segment.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cnt.h"
#include "exec.h"
#include "fsutil.h"
#include "journal.h"
#include "le.h"
#include "persist.h"
#include "replay.h"
#include "t.h"

static char dir[64];

static void make_dir(void)
{
    snprintf(dir, sizeof(dir), "/tmp/test_journal.XXXXXX");
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

static const char *file(const char *name)
{
    static char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return path;
}

static size_t file_size(const char *name)
{
    struct stat st;
    return stat(file(name), &st) == 0 ? (size_t)st.st_size : 0;
}

/* ---- codec -------------------------------------------------------------- */

/* Three records: (opcode, args) as a client would send them. */
static void three_records(struct ur_buf *b)
{
    struct ur_arg a1[3] = {{UR_ARG_INT, 0, NULL, 42},
                           {UR_ARG_STR, 7, "mention", 0},
                           {UR_ARG_INT, 0, NULL, UINT64_MAX}};
    struct ur_arg a2[1] = {{UR_ARG_STR, 0, "", 0}};

    CHECK(journal_rec_append(b, 1000, 0x0101, 3, a1) == 0);
    CHECK(journal_rec_append(b, 2000, 0x0107, 1, a2) == 0);
    CHECK(journal_rec_append(b, 3000, 0x0103, 0, NULL) == 0);
}

static void test_codec_round_trip(void)
{
    struct ur_buf b;
    struct journal_rec rec;
    struct ur_frame_req req;
    struct ur_arg *args = NULL;
    uint32_t cap = 0;
    const char *why;
    size_t off = 0;

    ur_buf_init(&b);
    three_records(&b);
    CHECK(journal_rec_next(b.data, b.len, &off, &rec, &why) == JOURNAL_REC);
    CHECK_EQ_U64(rec.clock_ms, 1000);
    CHECK(journal_rec_request(&rec, &args, &cap, &req, &why) == 0);
    CHECK_EQ_U64(req.op, 0x0101);
    CHECK_EQ_U64(req.argc, 3);
    CHECK(args[0].kind == UR_ARG_INT && args[0].num == 42);
    CHECK(args[1].kind == UR_ARG_STR && args[1].len == 7 &&
          memcmp(args[1].str, "mention", 7) == 0);
    CHECK(args[2].num == UINT64_MAX);
    CHECK(journal_rec_next(b.data, b.len, &off, &rec, &why) == JOURNAL_REC);
    CHECK(journal_rec_request(&rec, &args, &cap, &req, &why) == 0);
    CHECK(req.argc == 1 && args[0].kind == UR_ARG_STR && args[0].len == 0);
    CHECK(journal_rec_next(b.data, b.len, &off, &rec, &why) == JOURNAL_REC);
    CHECK(journal_rec_request(&rec, &args, &cap, &req, &why) == 0);
    CHECK(req.argc == 0 && rec.clock_ms == 3000);
    CHECK(journal_rec_next(b.data, b.len, &off, &rec, &why) == JOURNAL_END);
    CHECK_EQ_U64(off, b.len);
    free(args);

    /* The frame ceiling: more arguments than a frame can count. */
    struct ur_arg *many = calloc(JOURNAL_MAX_ARGS + 1, sizeof(*many));
    for (uint32_t i = 0; i <= JOURNAL_MAX_ARGS; i++)
        many[i] = (struct ur_arg){UR_ARG_INT, 0, NULL, i};
    size_t before = b.len;
    errno = 0;
    CHECK(journal_rec_append(&b, 1, 0x0107, JOURNAL_MAX_ARGS + 1, many) != 0);
    CHECK(errno == E2BIG && b.len == before);
    free(many);
    ur_buf_deinit(&b);
}

/* A batch record: two commands, the second one's arguments wider than the
 * record's frame header counts (2 sub-requests, 3 arguments). */
static void test_codec_batch(void)
{
    struct ur_arg a1[1] = {{UR_ARG_INT, 0, NULL, 7}};
    struct ur_arg a2[3] = {{UR_ARG_INT, 0, NULL, 42},
                           {UR_ARG_STR, 2, "dm", 0},
                           {UR_ARG_INT, 0, NULL, 1}};
    struct ur_buf b;
    struct journal_rec rec;
    struct ur_frame_req req;
    struct ur_batch_reader rd;
    struct ur_frame_sub sub;
    struct ur_arg *args = NULL;
    uint32_t cap = 0;
    const char *why;
    size_t off = 0, start;

    ur_buf_init(&b);
    CHECK(journal_rec_append(&b, 500, 0x0101, 3, a2) == 0);
    start = b.len;
    CHECK(journal_batch_begin(&b, 900) == 0);
    CHECK(journal_batch_put(&b, start, 0x0106, 1, a1) == 0);
    CHECK(journal_batch_put(&b, start, 0x0101, 3, a2) == 0);
    journal_batch_end(&b, start, 2);

    CHECK(journal_rec_next(b.data, b.len, &off, &rec, &why) == JOURNAL_REC);
    CHECK(journal_rec_next(b.data, b.len, &off, &rec, &why) == JOURNAL_REC);
    CHECK_EQ_U64(rec.clock_ms, 900);
    CHECK(journal_rec_request(&rec, &args, &cap, &req, &why) == 0);
    CHECK(req.op == UR_FRAME_OP_BATCH && req.nsub == 2 && req.argc == 0);
    CHECK(cap >= 3 && req.argv == args);
    ur_batch_reader_init(&rd, req.body, req.body_len, req.nsub);
    CHECK(ur_batch_next(&rd, req.argv, cap, &sub));
    CHECK(sub.op == 0x0106 && sub.argc == 1 && args[0].num == 7);
    CHECK(ur_batch_next(&rd, req.argv, cap, &sub));
    CHECK(sub.op == 0x0101 && sub.argc == 3 && args[1].len == 2 &&
          memcmp(args[1].str, "dm", 2) == 0 && args[2].num == 1);
    CHECK(!ur_batch_next(&rd, req.argv, cap, &sub));
    CHECK(journal_rec_next(b.data, b.len, &off, &rec, &why) == JOURNAL_END);

    /* any cut inside the batch record is a torn tail, never a record */
    for (size_t n = start + 1; n < b.len; n++) {
        size_t o = start;
        CHECK(journal_rec_next(b.data, n, &o, &rec, &why) == JOURNAL_TORN);
    }

    /* a sub-request with more arguments than a frame counts */
    struct ur_arg *many = calloc(JOURNAL_MAX_ARGS + 1, sizeof(*many));
    for (uint32_t i = 0; i <= JOURNAL_MAX_ARGS; i++)
        many[i] = (struct ur_arg){UR_ARG_INT, 0, NULL, i};
    size_t before = b.len;
    errno = 0;
    CHECK(journal_batch_put(&b, start, 0x0107, JOURNAL_MAX_ARGS + 1, many) !=
          0);
    CHECK(errno == E2BIG && b.len == before);
    free(many);
    free(args);
    ur_buf_deinit(&b);
}

/* Reads every record of buf[0..len): how many, and the final status. */
static enum journal_next read_all(const char *buf, size_t len, unsigned *n,
                                  size_t *end)
{
    struct journal_rec rec;
    const char *why;
    enum journal_next st;
    size_t off = 0;

    *n = 0;
    while ((st = journal_rec_next(buf, len, &off, &rec, &why)) == JOURNAL_REC)
        (*n)++;
    *end = off;
    return st;
}

static void test_codec_truncated(void)
{
    struct ur_buf b;
    size_t bounds[4], end;
    unsigned n, bad = 0;

    ur_buf_init(&b);
    three_records(&b);
    /* record boundaries */
    bounds[0] = 0;
    for (unsigned i = 0; i < 3; i++)
        bounds[i + 1] =
            bounds[i] + JOURNAL_REC_HDR + le_rd32(b.data + bounds[i]);
    CHECK_EQ_U64(bounds[3], b.len);
    for (size_t cut = 0; cut <= b.len; cut++) {
        unsigned whole = 0;
        while (whole < 3 && bounds[whole + 1] <= cut)
            whole++;
        enum journal_next st = read_all(b.data, cut, &n, &end);
        if (n != whole || end != bounds[whole] ||
            st != (cut == bounds[whole] ? JOURNAL_END : JOURNAL_TORN))
            bad++;
    }
    CHECK_EQ_U64(bad, 0);
    ur_buf_deinit(&b);
}

static void test_codec_flipped(void)
{
    struct ur_buf b;
    size_t bounds[4], end;
    unsigned n, wrong = 0;

    ur_buf_init(&b);
    three_records(&b);
    bounds[0] = 0;
    for (unsigned i = 0; i < 3; i++)
        bounds[i + 1] =
            bounds[i] + JOURNAL_REC_HDR + le_rd32(b.data + bounds[i]);
    for (size_t i = 0; i < b.len; i++) {
        unsigned k = 0; /* the damaged record */
        while (bounds[k + 1] <= i)
            k++;
        for (unsigned bit = 0; bit < 8; bit++) {
            b.data[i] ^= (char)(1 << bit);
            /* Records before it read; it does not (BAD, or TORN when
             * its length now overruns the buffer). */
            if (read_all(b.data, b.len, &n, &end) == JOURNAL_END || n != k ||
                end != bounds[k])
                wrong++;
            b.data[i] ^= (char)(1 << bit);
        }
    }
    CHECK_EQ_U64(wrong, 0);
    ur_buf_deinit(&b);
}

static void test_header(void)
{
    char h[JOURNAL_HDR];
    uint64_t seg;
    const char *why;

    journal_hdr_encode(h, 77);
    CHECK(journal_hdr_check(h, sizeof(h), &seg, &why) == 0 && seg == 77);
    CHECK(journal_hdr_check(h, sizeof(h) - 1, &seg, &why) != 0);
    h[8] = 2;
    CHECK(journal_hdr_check(h, sizeof(h), &seg, &why) != 0);
    CHECK(strstr(why, "version") != NULL);
    h[0] = 'X';
    CHECK(journal_hdr_check(h, sizeof(h), &seg, &why) != 0);
    CHECK(strstr(why, "magic") != NULL);
}

/* ---- segment writer ------------------------------------------------------ */

static void test_writer_rotate_drop(void)
{
    struct journal j;
    uint64_t ended;

    make_dir();
    journal_init(&j, dir, 1, 1);
    /* Nothing written yet: rotating ends no file. */
    CHECK(journal_rotate(&j, &ended) == 0 && ended == 0 && j.seg == 1);
    CHECK_EQ_U64(file_size("journal.1"), 0);
    three_records(&j.buf);
    j.appended += 3;
    CHECK(journal_write(&j) == 0);
    CHECK_EQ_U64(j.written, 3);
    CHECK(j.buf.len == 0);
    size_t one = file_size("journal.1");
    CHECK(one > JOURNAL_HDR);
    CHECK(journal_sync(&j) == 0 && j.synced == 3);
    CHECK(journal_rotate(&j, &ended) == 0 && ended == 1 && j.seg == 2);
    three_records(&j.buf);
    j.appended += 3;
    CHECK(journal_write(&j) == 0);
    CHECK_EQ_U64(file_size("journal.2"), one);
    CHECK_EQ_U64(journal_bytes(&j), 2 * one);
    journal_drop_through(&j, 1);
    CHECK_EQ_U64(file_size("journal.1"), 0);
    CHECK_EQ_U64(file_size("journal.2"), one);
    CHECK_EQ_U64(j.first_seg, 2);
    journal_deinit(&j);
    remove_dir();
}

/* A sync run elsewhere (the everysec thread) gets a descriptor of its
 * own that outlives a rotation, and its outcome moves synced or sets err. */
static void test_writer_sync_elsewhere(void)
{
    struct journal j;
    uint64_t upto = 0, ended;
    int fd;

    make_dir();
    journal_init(&j, dir, 1, 1);
    CHECK(journal_sync_begin(&j, &upto) == -1 && errno == ENOENT);
    three_records(&j.buf);
    j.appended += 3;
    CHECK(journal_write(&j) == 0);
    fd = journal_sync_begin(&j, &upto);
    CHECK(fd >= 0 && fd != j.fd);
    CHECK(fcntl(fd, F_GETFD) == FD_CLOEXEC);
    CHECK_EQ_U64(upto, 3);
    CHECK(journal_rotate(&j, &ended) == 0 && j.fd < 0);
    CHECK_EQ_U64(j.syncs, 1); /* the rotation's own */
    CHECK(fdatasync(fd) == 0);
    close(fd);
    CHECK(journal_sync_end(&j, upto, 0, 123) == 0);
    CHECK_EQ_U64(j.synced, 3);
    CHECK_EQ_U64(j.syncs, 2);
    CHECK_EQ_U64(j.sync_us, 123);
    three_records(&j.buf);
    j.appended += 3;
    CHECK(journal_write(&j) == 0);
    fd = journal_sync_begin(&j, &upto);
    CHECK(fd >= 0 && upto == 6);
    close(fd);
    CHECK(journal_sync_end(&j, upto, EIO, 9) == -1 && errno == EIO);
    CHECK(j.err == EIO);
    CHECK_EQ_U64(j.synced, 3);
    CHECK_EQ_U64(j.syncs, 2);
    journal_deinit(&j);
    remove_dir();
}

/* A file-size limit makes the write fail part way: the writer cuts the
 * partial record back, keeps the buffer, and a later write completes. */
static void test_writer_write_fails(void)
{
    struct rlimit old, lim;
    struct journal j;
    struct ur_buf expect;
    struct fs_map m;

    make_dir();
    signal(SIGXFSZ, SIG_IGN);
    journal_init(&j, dir, 1, 1);
    three_records(&j.buf);
    j.appended = 3;
    CHECK(journal_write(&j) == 0);
    size_t good = file_size("journal.1");

    ur_buf_init(&expect);
    for (int i = 0; i < 50; i++) {
        three_records(&j.buf);
        three_records(&expect);
    }
    j.appended += 150;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = good + 100;
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    CHECK(journal_write(&j) != 0);
    CHECK(j.err == EFBIG);
    CHECK_EQ_U64(file_size("journal.1"), good);
    CHECK_EQ_U64(j.written, 3);
    CHECK_EQ_U64(j.buf.len, expect.len);
    setrlimit(RLIMIT_FSIZE, &old);
    CHECK(journal_write(&j) == 0);
    CHECK_EQ_U64(j.written, 153);
    CHECK(fs_map_open(&m, file("journal.1")) == 0);
    CHECK_EQ_U64(m.len, good + expect.len);
    CHECK(m.len == good + expect.len &&
          memcmp(m.data + good, expect.data, expect.len) == 0);
    fs_map_close(&m);
    ur_buf_deinit(&expect);
    journal_deinit(&j);
    remove_dir();
}

/* ---- replay and recovery ------------------------------------------------- */

static struct server srv;

static void server_up(void)
{
    config_init(&srv.cfg);
    snprintf(srv.cfg.dir, sizeof(srv.cfg.dir), "%s", dir);
    CHECK(db_init(&srv.db) == 0);
}

static void server_down(void)
{
    replay_close(&srv);
    db_deinit(&srv.db);
    memset(&srv, 0, sizeof(srv));
}

/* Starts persistence on dir: 0, or -1 with the message in err. */
static int start(char *err, size_t errlen)
{
    server_up();
    return replay_open(&srv, err, errlen);
}

/* Runs one text command (words split on spaces); returns the reply. */
static const char *run(const char *line)
{
    static char copy[512];
    static struct ur_buf out;
    struct session sess = {.id = 1, .proto = REPLY_RESP};
    struct ur_arg argv[32];
    struct reply r;
    uint32_t argc = 0;

    snprintf(copy, sizeof(copy), "%s", line);
    for (char *p = strtok(copy, " "); p && argc < 32; p = strtok(NULL, " "))
        argv[argc++] = (struct ur_arg){UR_ARG_STR, (uint32_t)strlen(p), p, 0};
    out.len = 0;
    reply_begin(&r, &out, REPLY_RESP, 0);
    exec_text(&srv, &sess, argc, argv, &r);
    reply_end(&r);
    ur_buf_append(&out, "", 1);
    return out.data;
}

/* A deterministic mix of CNT writes; the state is summed up by sig(). */
static void workload(unsigned seed, unsigned n)
{
    char line[128];

    srand(seed);
    for (unsigned i = 0; i < n; i++) {
        unsigned uid = (unsigned)rand() % 300, t = (unsigned)rand() % 8;
        switch (rand() % 5) {
        case 0:
            snprintf(line, sizeof(line), "CNT.DECR %u %u %u", uid, t,
                     (unsigned)rand() % 3);
            break;
        case 1:
            snprintf(line, sizeof(line), "CNT.SET %u %u %u", uid, t,
                     (unsigned)rand());
            break;
        case 2:
            snprintf(line, sizeof(line), "CNT.CLEAR %u %u", uid, t);
            break;
        default:
            snprintf(line, sizeof(line), "CNT.INCR %u %s %u", uid,
                     t == 0 ? "mention" : "3", (unsigned)rand() % 40);
        }
        run(line);
    }
}

static uint64_t sig(void)
{
    uint64_t h = cnt_entries(srv.db.cnt);
    for (uint64_t uid = 0; uid < 300; uid++)
        for (unsigned t = 0; t < 8; t++)
            h = h * 1000003 + cnt_get(srv.db.cnt, uid, t);
    return h;
}

static void test_recover_journal_only(void)
{
    char err[1024];
    uint64_t want;

    make_dir();
    CHECK(start(err, sizeof(err)) == 0);
    workload(7, 2000);
    run("CNT.GET 1 1");      /* reads are not journaled */
    run("CNT.INCR 1 bogus"); /* nor are errors */
    want = sig();
    persist_flush(srv.persist);
    CHECK_EQ_U64(persist_durable(srv.persist), persist_appended(srv.persist));
    CHECK_EQ_U64(persist_appended(srv.persist), 2000);
    server_down();

    CHECK(start(err, sizeof(err)) == 0);
    CHECK_EQ_U64(sig(), want);
    struct persist_info pi;
    persist_info(srv.persist, &pi);
    CHECK_EQ_U64(pi.loaded_records, 2000);
    CHECK_EQ_U64(pi.journal_segment, 2);
    /* more writes go to segment 2; a third start replays both */
    workload(8, 500);
    want = sig();
    persist_flush(srv.persist);
    server_down();
    CHECK(start(err, sizeof(err)) == 0);
    CHECK_EQ_U64(sig(), want);
    CHECK(file_size("journal.1") > 0 && file_size("journal.2") > 0);
    server_down();
    remove_dir();
}

static void test_recover_snapshot_and_journal(void)
{
    char err[1024];
    uint64_t want;

    make_dir();
    CHECK(start(err, sizeof(err)) == 0);
    workload(11, 1500);
    CHECK(persist_save(srv.persist, err, sizeof(err)) == 0);
    /* the snapshot covers segment 1, which is gone */
    CHECK_EQ_U64(file_size("journal.1"), 0);
    CHECK(file_size("snapshot.urs") > 0);
    workload(12, 700);
    want = sig();
    persist_flush(srv.persist);
    server_down();

    CHECK(start(err, sizeof(err)) == 0);
    CHECK_EQ_U64(sig(), want);
    struct persist_info pi;
    persist_info(srv.persist, &pi);
    CHECK_EQ_U64(pi.loaded_records, 700);
    /* a final save leaves the snapshot alone */
    CHECK(persist_shutdown(srv.persist, true) == 0);
    server_down();
    CHECK(start(err, sizeof(err)) == 0);
    CHECK_EQ_U64(sig(), want);
    persist_info(srv.persist, &pi);
    CHECK_EQ_U64(pi.loaded_records, 0);
    server_down();
    remove_dir();
}

/* A journal that cannot hold a request refuses the write, and a command
 * that fails on replay stops the start naming the file. */
static void test_replay_failure(void)
{
    char err[1024];
    struct ur_buf b;
    struct replay_result res;
    struct ur_arg a[2] = {{UR_ARG_INT, 0, NULL, 5},
                          {UR_ARG_STR, 5, "bogus", 0}};

    make_dir();
    server_up();
    ur_buf_init(&b);
    CHECK(journal_rec_append(&b, 1, 0x0101, 2, a) == 0);
    CHECK(replay_buf(&srv, b.data, b.len, true, &res, err, sizeof(err)) != 0);
    CHECK(strstr(err, "CNT.INCR failed on replay") != NULL);
    CHECK(strstr(err, "unknown counter type") != NULL);
    CHECK_EQ_U64(res.bad_off, 0);
    /* an unknown opcode fails the same way */
    b.len = 0;
    CHECK(journal_rec_append(&b, 1, 0x7777, 0, NULL) == 0);
    CHECK(replay_buf(&srv, b.data, b.len, true, &res, err, sizeof(err)) != 0);
    ur_buf_deinit(&b);
    server_down();
    remove_dir();
}

/* Appends n bytes of the record in buf to the file. */
static void append_file(const char *name, const void *p, size_t n)
{
    int fd = open(file(name), O_WRONLY | O_APPEND);
    CHECK(fd >= 0 && write(fd, p, n) == (ssize_t)n);
    close(fd);
}

static void test_recover_torn_tail(void)
{
    char err[1024];
    struct ur_buf b;
    uint64_t want;

    make_dir();
    CHECK(start(err, sizeof(err)) == 0);
    workload(21, 300);
    want = sig();
    persist_flush(srv.persist);
    server_down();
    size_t good = file_size("journal.1");
    ur_buf_init(&b);
    three_records(&b);
    append_file("journal.1", b.data, 20); /* a record cut short */
    CHECK(start(err, sizeof(err)) == 0);
    CHECK_EQ_U64(sig(), want);
    CHECK_EQ_U64(file_size("journal.1"), good);
    server_down();
    ur_buf_deinit(&b);
    remove_dir();
}

static void test_recover_refuses_corruption(void)
{
    char err[1024];
    struct ur_buf b;

    make_dir();
    CHECK(start(err, sizeof(err)) == 0);
    workload(31, 300);
    persist_flush(srv.persist);
    server_down();

    /* a flipped byte in the middle: refused, naming file, offset, tool */
    int fd = open(file("journal.1"), O_RDWR);
    char c;
    size_t mid = file_size("journal.1") / 2;
    CHECK(pread(fd, &c, 1, (off_t)mid) == 1);
    c ^= 0x10;
    CHECK(pwrite(fd, &c, 1, (off_t)mid) == 1);
    CHECK(start(err, sizeof(err)) != 0);
    CHECK(strstr(err, file("journal.1")) != NULL);
    CHECK(strstr(err, "offset ") != NULL);
    CHECK(strstr(err, "--check") != NULL);
    server_down();
    c ^= 0x10;
    CHECK(pwrite(fd, &c, 1, (off_t)mid) == 1);
    close(fd);

    /* a torn record that is not in the last segment: refused */
    ur_buf_init(&b);
    three_records(&b);
    append_file("journal.1", b.data, 20);
    fd = open(file("journal.2"), O_WRONLY | O_CREAT, 0644);
    char h[JOURNAL_HDR];
    journal_hdr_encode(h, 2);
    CHECK(write(fd, h, sizeof(h)) == (ssize_t)sizeof(h));
    close(fd);
    CHECK(start(err, sizeof(err)) != 0);
    CHECK(strstr(err, "not the last segment") != NULL);
    server_down();

    /* a missing segment: refused */
    unlink(file("journal.1"));
    CHECK(start(err, sizeof(err)) != 0);
    CHECK(strstr(err, "journal.1 is missing") != NULL);
    server_down();

    /* a segment whose header names another number: refused */
    char from[256];
    snprintf(from, sizeof(from), "%s", file("journal.2"));
    CHECK(rename(from, file("journal.1")) == 0);
    CHECK(start(err, sizeof(err)) != 0);
    CHECK(strstr(err, "names segment 2") != NULL);
    server_down();

    /* an unreadable snapshot (a directory in its place): refused */
    unlink(file("journal.1"));
    CHECK(mkdir(file("snapshot.urs"), 0755) == 0);
    CHECK(start(err, sizeof(err)) != 0);
    CHECK(strstr(err, "cannot read") != NULL);
    server_down();
    rmdir(file("snapshot.urs"));
    ur_buf_deinit(&b);
    remove_dir();
}

/* With the journal off nothing is journaled, and a save still removes the
 * segments a previous run left. */
static void test_journal_off(void)
{
    char err[1024];
    uint64_t want;

    make_dir();
    CHECK(start(err, sizeof(err)) == 0);
    workload(41, 200);
    want = sig();
    persist_flush(srv.persist);
    server_down();

    server_up();
    srv.cfg.journal = false;
    CHECK(replay_open(&srv, err, sizeof(err)) == 0);
    CHECK_EQ_U64(sig(), want);
    run("CNT.INCR 999 1 5");
    CHECK_EQ_U64(persist_appended(srv.persist), 0);
    CHECK(persist_save(srv.persist, err, sizeof(err)) == 0);
    CHECK_EQ_U64(file_size("journal.1"), 0);
    want = sig();
    server_down();
    CHECK(start(err, sizeof(err)) == 0);
    CHECK_EQ_U64(sig(), want);
    server_down();
    remove_dir();
}

/* The journal is refused by a full disk (a file-size limit): writes get
 * -MISCONF, reads go on, and the next flush that succeeds heals it. */
static void test_misconf(void)
{
    char err[1024];
    struct rlimit old, lim;
    uint64_t want;

    make_dir();
    signal(SIGXFSZ, SIG_IGN);
    CHECK(start(err, sizeof(err)) == 0);
    run("CNT.INCR 1 1 1");
    persist_flush(srv.persist);
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = file_size("journal.1");
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    run("CNT.INCR 1 1 1");
    persist_flush(srv.persist);
    CHECK(persist_durable(srv.persist) < persist_appended(srv.persist));
    CHECK(strncmp(run("CNT.INCR 1 1 1"), "-MISCONF", 8) == 0);
    CHECK(strcmp(run("CNT.GET 1 1"), ":2\r\n") == 0);
    setrlimit(RLIMIT_FSIZE, &old);
    persist_flush(srv.persist);
    CHECK_EQ_U64(persist_durable(srv.persist), persist_appended(srv.persist));
    CHECK(strcmp(run("CNT.INCR 1 1 1"), "*2\r\n:3\r\n:3\r\n") == 0);
    want = sig();
    persist_flush(srv.persist);
    server_down();
    CHECK(start(err, sizeof(err)) == 0);
    CHECK_EQ_U64(sig(), want);
    server_down();
    remove_dir();
}

int main(void)
{
    T_RUN(test_codec_round_trip);
    T_RUN(test_codec_batch);
    T_RUN(test_codec_truncated);
    T_RUN(test_codec_flipped);
    T_RUN(test_header);
    T_RUN(test_writer_rotate_drop);
    T_RUN(test_writer_sync_elsewhere);
    T_RUN(test_writer_write_fails);
    T_RUN(test_recover_journal_only);
    T_RUN(test_recover_snapshot_and_journal);
    T_RUN(test_replay_failure);
    T_RUN(test_recover_torn_tail);
    T_RUN(test_recover_refuses_corruption);
    T_RUN(test_journal_off);
    T_RUN(test_misconf);
    T_END();
}
