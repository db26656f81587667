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
#include <xxhash.h>

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

#define SALT 0x5eed5eed12345678ULL

/* Three records (opcode, args) as a client would send them, seqs from
 * seq. */
static void three_records_at(struct ur_buf *b, uint64_t salt, uint64_t seq)
{
    struct ur_arg a1[3] = {{UR_ARG_INT, 0, NULL, 42},
                           {UR_ARG_STR, 7, "mention", 0},
                           {UR_ARG_INT, 0, NULL, UINT64_MAX}};
    struct ur_arg a2[1] = {{UR_ARG_STR, 0, "", 0}};

    CHECK(journal_rec_append(b, salt, seq, 1000, 0x0101, 3, a1) == 0);
    CHECK(journal_rec_append(b, salt, seq + 1, 2000, 0x0107, 1, a2) == 0);
    CHECK(journal_rec_append(b, salt, seq + 2, 3000, 0x0103, 0, NULL) == 0);
}

/* The header of segment seg whose first record has sequence number first. */
static void seg_header(struct ur_buf *b, uint64_t seg, uint64_t first,
                       uint64_t salt)
{
    struct journal_hdr h = {JOURNAL_VERSION, 0, seg, first, salt, 0};
    char raw[JOURNAL_HDR];

    journal_hdr_encode(raw, &h);
    CHECK(ur_buf_append(b, raw, sizeof(raw)) == 0);
}

/* A whole segment 1: header and three records, seqs 1..3. */
static void three_segment(struct ur_buf *b)
{
    seg_header(b, 1, 1, SALT);
    three_records_at(b, SALT, 1);
}

/* Record boundaries of a scanned, clean segment image: bounds[0] is the
 * header's end, bounds[n] the file's; returns n. */
static unsigned bounds_of(const struct ur_buf *b, size_t *bounds, unsigned max)
{
    struct journal_scan s;
    struct journal_rec rec;
    unsigned n = 0;
    size_t off;

    journal_scan(b->data, b->len, NULL, true, &s);
    CHECK(s.state == JOURNAL_CLEAN);
    off = bounds[0] = s.hdr.len;
    while (n < max && journal_rec_next(&s, b->data, &off, &rec))
        bounds[++n] = off;
    return n;
}

static void test_codec_round_trip(void)
{
    struct ur_buf b;
    struct journal_scan s;
    struct journal_rec rec;
    struct ur_frame_req req;
    struct ur_arg *args = NULL;
    uint32_t cap = 0;
    const char *why;
    size_t off;

    ur_buf_init(&b);
    seg_header(&b, 7, 100, SALT);
    three_records_at(&b, SALT, 100);
    journal_scan(b.data, b.len, NULL, true, &s);
    CHECK(s.state == JOURNAL_CLEAN && s.hdr_ok);
    CHECK_EQ_U64(s.hdr.seg, 7);
    CHECK_EQ_U64(s.hdr.version, JOURNAL_VERSION);
    CHECK_EQ_U64(s.records, 3);
    CHECK_EQ_U64(s.end, b.len);
    CHECK_EQ_U64(s.next_seq, 103);
    CHECK(s.link.next_seq == 103 && !s.link.gap_ok);
    off = s.hdr.len;
    CHECK(journal_rec_next(&s, b.data, &off, &rec));
    CHECK_EQ_U64(rec.clock_ms, 1000);
    CHECK_EQ_U64(rec.seq, 100);
    CHECK(journal_rec_request(&rec, &args, &cap, &req, &why) == 0);
    CHECK_EQ_U64(req.op, 0x0101);
    CHECK_EQ_U64(req.argc, 3);
    CHECK(args[0].kind == UR_ARG_INT && args[0].num == 42);
    CHECK(args[1].kind == UR_ARG_STR && args[1].len == 7 &&
          memcmp(args[1].str, "mention", 7) == 0);
    CHECK(args[2].num == UINT64_MAX);
    CHECK(journal_rec_next(&s, b.data, &off, &rec));
    CHECK(journal_rec_request(&rec, &args, &cap, &req, &why) == 0);
    CHECK(req.argc == 1 && args[0].kind == UR_ARG_STR && args[0].len == 0);
    CHECK(journal_rec_next(&s, b.data, &off, &rec));
    CHECK(journal_rec_request(&rec, &args, &cap, &req, &why) == 0);
    CHECK(req.argc == 0 && rec.clock_ms == 3000 && rec.seq == 102);
    CHECK(!journal_rec_next(&s, b.data, &off, &rec));
    CHECK_EQ_U64(off, b.len);
    free(args);

    /* The same records under another salt are not sound here. */
    b.len = 0;
    seg_header(&b, 7, 100, SALT);
    three_records_at(&b, SALT + 1, 100);
    journal_scan(b.data, b.len, NULL, true, &s);
    CHECK(s.state == JOURNAL_CORRUPT && s.records == 0);

    /* The frame ceiling: more arguments than a frame can count. */
    struct ur_arg *many = calloc(JOURNAL_MAX_ARGS + 1, sizeof(*many));
    for (uint32_t i = 0; i <= JOURNAL_MAX_ARGS; i++)
        many[i] = (struct ur_arg){UR_ARG_INT, 0, NULL, i};
    size_t before = b.len;
    errno = 0;
    CHECK(journal_rec_append(&b, SALT, 1, 1, 0x0107, JOURNAL_MAX_ARGS + 1,
                             many) != 0);
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
    uint64_t per_op[UR_OP_COUNT] = {0};
    struct ur_buf b;
    struct journal_scan s;
    struct journal_rec rec;
    struct ur_frame_req req;
    struct ur_batch_reader rd;
    struct ur_frame_sub sub;
    struct ur_arg *args = NULL;
    uint32_t cap = 0;
    const char *why;
    size_t off, start;

    ur_buf_init(&b);
    seg_header(&b, 1, 1, SALT);
    CHECK(journal_rec_append(&b, SALT, 1, 500, 0x0101, 3, a2) == 0);
    start = b.len;
    CHECK(journal_batch_begin(&b, 900) == 0);
    CHECK(journal_batch_put(&b, start, 0x0106, 1, a1) == 0);
    CHECK(journal_batch_put(&b, start, 0x0101, 3, a2) == 0);
    journal_batch_end(&b, start, 2, SALT, 2);

    journal_scan(b.data, b.len, NULL, true, &s);
    CHECK(s.state == JOURNAL_CLEAN && s.records == 2);
    off = s.hdr.len;
    CHECK(journal_rec_next(&s, b.data, &off, &rec));
    CHECK(journal_rec_next(&s, b.data, &off, &rec));
    CHECK_EQ_U64(rec.clock_ms, 900);
    CHECK_EQ_U64(rec.seq, 2);
    CHECK(journal_rec_request(&rec, &args, &cap, &req, &why) == 0);
    CHECK(req.op == UR_FRAME_OP_BATCH && req.nsub == 2 && req.argc == 0);
    CHECK(cap >= 3 && req.argv == args);
    /* the op table knows it: two commands counted, none refused */
    CHECK(journal_req_check(&req, cap, per_op, &why) == 0);
    CHECK_EQ_U64(per_op[ur_op_by_code(0x0106)->index], 1);
    CHECK_EQ_U64(per_op[ur_op_by_code(0x0101)->index], 1);
    ur_batch_reader_init(&rd, req.body, req.body_len, req.nsub);
    CHECK(ur_batch_next(&rd, req.argv, cap, &sub));
    CHECK(sub.op == 0x0106 && sub.argc == 1 && args[0].num == 7);
    CHECK(ur_batch_next(&rd, req.argv, cap, &sub));
    CHECK(sub.op == 0x0101 && sub.argc == 3 && args[1].len == 2 &&
          memcmp(args[1].str, "dm", 2) == 0 && args[2].num == 1);
    CHECK(!ur_batch_next(&rd, req.argv, cap, &sub));
    CHECK(!journal_rec_next(&s, b.data, &off, &rec));

    /* any cut inside the batch record is a torn tail after record 1 */
    for (size_t n = start + 1; n < b.len; n++) {
        journal_scan(b.data, n, NULL, true, &s);
        CHECK(s.state == JOURNAL_TORN && s.records == 1 && s.end == start);
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

/* journal_req_check knows what the server journals, from the op table. */
static void test_codec_req_check(void)
{
    struct ur_arg a[3] = {{UR_ARG_INT, 0, NULL, 1},
                          {UR_ARG_INT, 0, NULL, 2},
                          {UR_ARG_INT, 0, NULL, 3}};
    /* one more argument than CNT.GET takes */
    const uint32_t too_many = ur_ops[UR_OPI_CNT_GET].max_args + 1;
    struct ur_buf b;
    struct journal_scan s;
    struct journal_rec rec;
    struct ur_frame_req req;
    struct ur_arg *args = NULL;
    uint32_t cap = 0;
    const char *why = "";
    size_t off, start;
    int results[5];

    ur_buf_init(&b);
    seg_header(&b, 1, 1, SALT);
    /* every op of the table with its minimum arguments is accepted */
    for (unsigned i = 0; i < UR_OP_COUNT; i++) {
        struct ur_arg *mina = calloc(ur_ops[i].min_args + 1, sizeof(*mina));
        for (unsigned k = 0; k < ur_ops[i].min_args; k++)
            mina[k] = (struct ur_arg){UR_ARG_INT, 0, NULL, k};
        b.len = JOURNAL_HDR;
        CHECK(journal_rec_append(&b, SALT, 1, 1, ur_ops[i].code,
                                 ur_ops[i].min_args, mina) == 0);
        free(mina);
        journal_scan(b.data, b.len, NULL, true, &s);
        off = s.hdr.len;
        CHECK(journal_rec_next(&s, b.data, &off, &rec));
        CHECK(journal_rec_request(&rec, &args, &cap, &req, &why) == 0);
        CHECK(journal_req_check(&req, cap, NULL, &why) == 0);
    }
    /* refused: an unknown opcode, too many arguments, a batch holding a
     * command that cannot be batched or another batch, an empty batch */
    b.len = JOURNAL_HDR;
    CHECK(journal_rec_append(&b, SALT, 1, 1, 0x7777, 0, NULL) == 0);
    start = b.len;
    CHECK(too_many <= 3);
    CHECK(journal_rec_append(&b, SALT, 2, 1, UR_OP_CNT_GET, too_many, a) == 0);
    off = b.len;
    CHECK(journal_batch_begin(&b, 1) == 0);
    CHECK(journal_batch_put(&b, off, 0x0008, 0, NULL) == 0); /* SAVE */
    journal_batch_end(&b, off, 1, SALT, 3);
    off = b.len;
    CHECK(journal_batch_begin(&b, 1) == 0);
    CHECK(journal_batch_put(&b, off, UR_FRAME_OP_BATCH, 0, NULL) == 0);
    journal_batch_end(&b, off, 1, SALT, 4);
    off = b.len;
    CHECK(journal_batch_begin(&b, 1) == 0);
    journal_batch_end(&b, off, 0, SALT, 5);
    (void)start;
    journal_scan(b.data, b.len, NULL, true, &s);
    CHECK(s.state == JOURNAL_CLEAN && s.records == 5);
    off = s.hdr.len;
    for (unsigned i = 0; i < 5 && journal_rec_next(&s, b.data, &off, &rec);
         i++) {
        results[i] = journal_rec_request(&rec, &args, &cap, &req, &why);
        if (results[i] == 0)
            results[i] = journal_req_check(&req, cap, NULL, &why);
        CHECK(results[i] != 0);
    }
    free(args);
    ur_buf_deinit(&b);
}

static void test_codec_truncated(void)
{
    struct ur_buf b;
    struct journal_scan s;
    size_t bounds[4];
    unsigned bad = 0;

    ur_buf_init(&b);
    three_segment(&b);
    CHECK_EQ_U64(bounds_of(&b, bounds, 3), 3);
    CHECK_EQ_U64(bounds[3], b.len);
    for (size_t cut = 0; cut <= b.len; cut++) {
        unsigned whole = 0;
        while (whole < 3 && bounds[whole + 1] <= cut)
            whole++;
        /* The last segment: the whole records load, the rest is torn. */
        journal_scan(b.data, cut, NULL, true, &s);
        if (cut < JOURNAL_HDR) {
            if (s.state != JOURNAL_TORN || s.hdr_ok)
                bad++;
        } else if (s.records != whole || s.end != bounds[whole] ||
                   s.state !=
                       (cut == bounds[whole] ? JOURNAL_CLEAN : JOURNAL_TORN)) {
            bad++;
        }
        /* Not the last: a cut inside a record is damage. */
        journal_scan(b.data, cut, NULL, false, &s);
        if (s.state != (cut >= JOURNAL_HDR && cut == bounds[whole]
                            ? JOURNAL_CLEAN
                            : JOURNAL_CORRUPT))
            bad++;
    }
    CHECK_EQ_U64(bad, 0);
    ur_buf_deinit(&b);
}

/* Every bit of every byte flipped: never sound, never a torn tail. */
static void test_codec_flipped(void)
{
    struct ur_buf b;
    struct journal_scan s;
    size_t bounds[4];
    unsigned wrong = 0;

    ur_buf_init(&b);
    three_segment(&b);
    bounds_of(&b, bounds, 3);
    for (size_t i = 0; i < b.len; i++) {
        unsigned k = 0; /* the damaged record */
        while (k < 3 && bounds[k + 1] <= i)
            k++;
        for (unsigned bit = 0; bit < 8; bit++) {
            b.data[i] ^= (char)(1 << bit);
            journal_scan(b.data, b.len, NULL, true, &s);
            if (s.state != JOURNAL_CORRUPT)
                wrong++;
            else if (i >= JOURNAL_HDR &&
                     (s.records != k || s.end != bounds[k] ||
                      s.bad_off != bounds[k] ||
                      (k < 2 && s.found_records != 2 - k)))
                wrong++;
            else if (i < JOURNAL_HDR && (s.hdr_ok || s.bad_off != 0))
                wrong++;
            b.data[i] ^= (char)(1 << bit);
        }
    }
    CHECK_EQ_U64(wrong, 0);
    ur_buf_deinit(&b);
}

static void test_header(void)
{
    struct journal_hdr h = {JOURNAL_VERSION, 0, 77, 5, SALT, 0}, got;
    char raw[JOURNAL_HDR];
    const char *why;

    journal_hdr_encode(raw, &h);
    CHECK(journal_hdr_check(raw, sizeof(raw), &got, &why) == 0);
    CHECK(got.seg == 77 && got.first_seq == 5 && got.salt == SALT &&
          got.version == 2 && got.len == JOURNAL_HDR && got.flags == 0);
    CHECK(journal_hdr_check(raw, sizeof(raw) - 1, &got, &why) != 0);
    raw[20] ^= 1;
    CHECK(journal_hdr_check(raw, sizeof(raw), &got, &why) != 0);
    CHECK(strstr(why, "checksum") != NULL);
    raw[20] ^= 1;
    h.flags = 2;
    journal_hdr_encode(raw, &h);
    CHECK(journal_hdr_check(raw, sizeof(raw), &got, &why) != 0);
    CHECK(strstr(why, "flags") != NULL);
    h.flags = JOURNAL_F_ENDS_EARLY;
    journal_hdr_encode(raw, &h);
    CHECK(journal_hdr_check(raw, sizeof(raw), &got, &why) == 0);
    h.first_seq = 0;
    journal_hdr_encode(raw, &h);
    CHECK(journal_hdr_check(raw, sizeof(raw), &got, &why) != 0);
    raw[8] = 3;
    CHECK(journal_hdr_check(raw, sizeof(raw), &got, &why) != 0);
    CHECK(strstr(why, "version") != NULL);
    raw[0] = 'X';
    CHECK(journal_hdr_check(raw, sizeof(raw), &got, &why) != 0);
    CHECK(strstr(why, "magic") != NULL);
}

/* Records in the wrong order, repeated or missing: each is damage at its
 * place, with the records before it sound and those after it found. */
static void test_scan_order(void)
{
    struct ur_buf b, m;
    struct journal_scan s;
    size_t bounds[7], len[6];
    const char *rec[6];

    ur_buf_init(&b);
    ur_buf_init(&m);
    seg_header(&b, 1, 1, SALT);
    three_records_at(&b, SALT, 1);
    three_records_at(&b, SALT, 4);
    CHECK_EQ_U64(bounds_of(&b, bounds, 6), 6);
    for (unsigned i = 0; i < 6; i++) {
        rec[i] = b.data + bounds[i];
        len[i] = bounds[i + 1] - bounds[i];
    }
    /* swap 2 and 3 (0-based 1, 2) */
    m.len = 0;
    ur_buf_append(&m, b.data, JOURNAL_HDR);
    unsigned order[6] = {0, 2, 1, 3, 4, 5};
    for (unsigned i = 0; i < 6; i++)
        ur_buf_append(&m, rec[order[i]], len[order[i]]);
    journal_scan(m.data, m.len, NULL, true, &s);
    CHECK(s.state == JOURNAL_CORRUPT && s.records == 1 &&
          s.bad_off == bounds[1] && s.next_seq == 2 && s.bad_seq == 3);
    CHECK(strstr(s.why, "sequence") != NULL);
    /* duplicate record 4 */
    m.len = 0;
    ur_buf_append(&m, b.data, bounds[4]);
    ur_buf_append(&m, rec[3], len[3]);
    ur_buf_append(&m, b.data + bounds[4], b.len - bounds[4]);
    journal_scan(m.data, m.len, NULL, true, &s);
    CHECK(s.state == JOURNAL_CORRUPT && s.records == 4 &&
          s.bad_off == bounds[4] && s.found_records == 3);
    /* the last record repeated at the end */
    m.len = 0;
    ur_buf_append(&m, b.data, b.len);
    ur_buf_append(&m, rec[5], len[5]);
    journal_scan(m.data, m.len, NULL, true, &s);
    CHECK(s.state == JOURNAL_CORRUPT && s.records == 6);
    /* delete record 3 (0-based 2) */
    m.len = 0;
    ur_buf_append(&m, b.data, bounds[2]);
    ur_buf_append(&m, b.data + bounds[3], b.len - bounds[3]);
    journal_scan(m.data, m.len, NULL, true, &s);
    CHECK(s.state == JOURNAL_CORRUPT && s.records == 2 &&
          s.found_records == 3 && s.found_seq == 4 && s.found_off == s.bad_off);
    /* the last two swapped */
    m.len = 0;
    ur_buf_append(&m, b.data, bounds[4]);
    ur_buf_append(&m, rec[5], len[5]);
    ur_buf_append(&m, rec[4], len[4]);
    journal_scan(m.data, m.len, NULL, true, &s);
    CHECK(s.state == JOURNAL_CORRUPT && s.records == 4);
    /* the last record's length, any bit: damage, not a torn tail */
    unsigned torn = 0;
    for (unsigned bit = 0; bit < 32; bit++) {
        b.data[bounds[5] + 8 + bit / 8] ^= (char)(1 << (bit % 8));
        journal_scan(b.data, b.len, NULL, true, &s);
        torn += s.state != JOURNAL_CORRUPT || s.records != 5;
        b.data[bounds[5] + 8 + bit / 8] ^= (char)(1 << (bit % 8));
    }
    CHECK_EQ_U64(torn, 0);
    /* a tail of zeros the file system added: torn */
    m.len = 0;
    ur_buf_append(&m, b.data, b.len);
    for (unsigned i = 0; i < 700; i++)
        ur_buf_append(&m, "", 1);
    journal_scan(m.data, m.len, NULL, true, &s);
    CHECK(s.state == JOURNAL_TORN && s.records == 6 && s.end == b.len);
    ur_buf_deinit(&m);
    ur_buf_deinit(&b);
}

/* Sequence numbers go on across segments: records cut off the end of a
 * segment that is not the last are found missing at the next one's
 * header, unless an operator's repair marked it as ending early. */
static void test_scan_across_segments(void)
{
    struct journal_link prev;
    struct journal_scan s;
    struct ur_buf b;

    ur_buf_init(&b);
    seg_header(&b, 1, 1, SALT);
    three_records_at(&b, SALT, 1);
    journal_scan(b.data, b.len, NULL, false, &s);
    prev = s.link;
    CHECK(prev.next_seq == 4 && !prev.gap_ok);
    b.len = 0;
    seg_header(&b, 2, 4, SALT + 1);
    three_records_at(&b, SALT + 1, 4);
    journal_scan(b.data, b.len, &prev, true, &s);
    CHECK(s.state == JOURNAL_CLEAN && s.records == 3 && s.gap == 0);
    /* segment 1 lost its last record: 2 starts after a gap */
    prev.next_seq = 3;
    journal_scan(b.data, b.len, &prev, true, &s);
    CHECK(s.state == JOURNAL_CORRUPT && s.bad_off == 24 && s.bad_seq == 4 &&
          s.next_seq == 3 && s.records == 0);
    CHECK(strstr(s.why, "missing") != NULL);
    /* ... accepted when segment 1 is marked as ending early */
    prev.gap_ok = true;
    journal_scan(b.data, b.len, &prev, true, &s);
    CHECK(s.state == JOURNAL_CLEAN && s.gap == 1);
    /* overlap is never accepted */
    prev.next_seq = 5;
    journal_scan(b.data, b.len, &prev, true, &s);
    CHECK(s.state == JOURNAL_CORRUPT && strstr(s.why, "overlap") != NULL);
    ur_buf_deinit(&b);
}

/* A version 1 segment (written before sequence numbers): still loads, and
 * its torn tail is still told from a damaged length. */
static void v1_record(struct ur_buf *b, uint64_t clock, uint64_t uid)
{
    struct ur_arg a[3] = {{UR_ARG_INT, 0, NULL, uid},
                          {UR_ARG_INT, 0, NULL, 1},
                          {UR_ARG_INT, 0, NULL, 5}};
    size_t start = b->len;

    /* the v2 encoder's frame, under a v1 record header */
    CHECK(journal_rec_append(b, 0, 1, clock, 0x0103, 3, a) == 0);
    size_t n = b->len - start - JOURNAL_REC_HDR;
    char hdr[JOURNAL_REC_HDR_V1];
    le_wr32(hdr, (uint32_t)n);
    le_wr64(hdr + 4, XXH3_64bits(b->data + start + JOURNAL_REC_HDR, n));
    memmove(b->data + start + JOURNAL_REC_HDR_V1,
            b->data + start + JOURNAL_REC_HDR, n);
    memcpy(b->data + start, hdr, sizeof(hdr));
    b->len = start + JOURNAL_REC_HDR_V1 + n;
}

static void v1_segment(struct ur_buf *b, unsigned n)
{
    char h[JOURNAL_HDR_V1];

    memcpy(h, JOURNAL_MAGIC, 8);
    le_wr32(h + 8, 1);
    le_wr32(h + 12, 0);
    le_wr64(h + 16, 1);
    CHECK(ur_buf_append(b, h, sizeof(h)) == 0);
    for (unsigned i = 0; i < n; i++)
        v1_record(b, 1000 + i, i);
}

static void test_scan_v1(void)
{
    struct journal_link prev = {10, false};
    struct journal_scan s;
    struct journal_rec rec;
    struct ur_buf b;
    size_t off, rec_len;

    ur_buf_init(&b);
    v1_segment(&b, 5);
    rec_len = (b.len - JOURNAL_HDR_V1) / 5;
    journal_scan(b.data, b.len, &prev, true, &s);
    CHECK(s.state == JOURNAL_CLEAN && s.hdr.version == 1 && s.records == 5);
    CHECK_EQ_U64(s.link.next_seq, 15); /* counted on from the one before */
    off = s.hdr.len;
    CHECK(journal_rec_next(&s, b.data, &off, &rec) && rec.clock_ms == 1000);
    /* every cut: the whole records load */
    unsigned bad = 0;
    for (size_t cut = JOURNAL_HDR_V1; cut < b.len; cut++) {
        journal_scan(b.data, cut, NULL, true, &s);
        size_t whole = (cut - JOURNAL_HDR_V1) / rec_len;
        bad +=
            s.records != whole ||
            s.state != (cut == JOURNAL_HDR_V1 + whole * rec_len ? JOURNAL_CLEAN
                                                                : JOURNAL_TORN);
    }
    CHECK_EQ_U64(bad, 0);
    /* a flipped length bit: damage, whether records follow or not */
    for (unsigned k = 0; k < 5; k++) {
        size_t at = JOURNAL_HDR_V1 + k * rec_len;
        for (unsigned bit = 0; bit < 32; bit++) {
            b.data[at + bit / 8] ^= (char)(1 << (bit % 8));
            journal_scan(b.data, b.len, NULL, true, &s);
            bad += s.state != JOURNAL_CORRUPT || s.records != k;
            b.data[at + bit / 8] ^= (char)(1 << (bit % 8));
        }
    }
    CHECK_EQ_U64(bad, 0);
    ur_buf_deinit(&b);
}

/* ---- segment writer ------------------------------------------------------ */

/* Three records committed to the writer, as persist.c appends them. */
static void append3(struct journal *j)
{
    three_records_at(&j->buf, j->salt, journal_seq_next(j));
    j->appended += 3;
}

/* The segment file name, scanned: its state and record count. */
static void scan_file(const char *name, bool last, struct journal_scan *s,
                      const struct journal_link *prev)
{
    struct fs_map m;

    CHECK(fs_map_open(&m, file(name)) == 0);
    journal_scan(m.data, m.len, prev, last, s);
    fs_map_close(&m);
}

static void test_writer_rotate_drop(void)
{
    struct journal j;
    uint64_t ended;

    make_dir();
    journal_init(&j, dir, 1, 1);
    /* Nothing written yet: rotating ends no file. */
    CHECK(journal_rotate(&j, &ended) == 0 && ended == 0 && j.seg == 1);
    CHECK_EQ_U64(file_size("journal.1"), 0);
    append3(&j);
    CHECK(journal_write(&j) == 0);
    CHECK_EQ_U64(j.written, 3);
    CHECK(j.buf.len == 0);
    size_t one = file_size("journal.1");
    CHECK(one > JOURNAL_HDR);
    CHECK(journal_sync(&j) == 0 && j.synced == 3);
    uint64_t salt1 = j.salt;
    CHECK(journal_rotate(&j, &ended) == 0 && ended == 1 && j.seg == 2);
    CHECK(j.salt != salt1); /* each segment its own */
    append3(&j);
    CHECK(journal_write(&j) == 0);
    CHECK_EQ_U64(file_size("journal.2"), one);
    CHECK_EQ_U64(journal_bytes(&j), 2 * one);
    /* sequence numbers go on across the segments */
    struct journal_scan s1, s2;
    scan_file("journal.1", false, &s1, NULL);
    scan_file("journal.2", true, &s2, &s1.link);
    CHECK(s1.state == JOURNAL_CLEAN && s1.records == 3);
    CHECK(s2.state == JOURNAL_CLEAN && s2.records == 3);
    CHECK(s2.hdr.first_seq == 4 && s2.next_seq == 7);
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
    append3(&j);
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
    append3(&j);
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
    append3(&j);
    CHECK(journal_write(&j) == 0);
    size_t good = file_size("journal.1");

    ur_buf_init(&expect);
    for (int i = 0; i < 50; i++) {
        three_records_at(&expect, j.salt, journal_seq_next(&j));
        append3(&j);
    }
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
    /* A command over slowlog-slower-than (a loaded machine, a sanitizer
     * build) left an entry: LeakSanitizer failed the run. */
    slowlog_deinit(&srv.slowlog);
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
    char err[4096];
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
    char err[4096];
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
    char err[4096];
    struct ur_buf b;
    struct replay_result res;
    struct ur_arg a[2] = {{UR_ARG_INT, 0, NULL, 5},
                          {UR_ARG_STR, 5, "bogus", 0}};

    make_dir();
    server_up();
    ur_buf_init(&b);
    seg_header(&b, 1, 1, SALT);
    CHECK(journal_rec_append(&b, SALT, 1, 1, 0x0101, 2, a) == 0);
    CHECK(replay_buf(&srv, b.data, b.len, NULL, true, &res, err, sizeof(err)) !=
          0);
    CHECK(strstr(err, "CNT.INCR failed on replay") != NULL);
    CHECK(strstr(err, "unknown counter type") != NULL);
    CHECK(strstr(err, "record 1 (seq 1)") != NULL);
    CHECK(res.cmd_failed);
    CHECK_EQ_U64(res.bad_off, JOURNAL_HDR);
    /* an unknown opcode fails the same way */
    b.len = 0;
    seg_header(&b, 1, 1, SALT);
    CHECK(journal_rec_append(&b, SALT, 1, 1, 0x7777, 0, NULL) == 0);
    CHECK(replay_buf(&srv, b.data, b.len, NULL, true, &res, err, sizeof(err)) !=
          0);
    CHECK(res.cmd_failed);
    ur_buf_deinit(&b);
    server_down();
    remove_dir();
}

/* Ids past Redis's integer range are refused from clients, but a journal
 * written before that rule holds them, acknowledged: replay takes them. */
static void test_replay_takes_ids_of_older_journals(void)
{
    char err[4096];
    struct ur_buf b;
    struct replay_result res;
    struct ur_arg a[2] = {{UR_ARG_INT, 0, NULL, UINT64_MAX},
                          {UR_ARG_INT, 0, NULL, 2}};
    struct ur_arg t[2] = {{UR_ARG_STR, 20, "18446744073709551614", 0},
                          {UR_ARG_INT, 0, NULL, 2}};

    make_dir();
    server_up();
    ur_buf_init(&b);
    seg_header(&b, 1, 1, SALT);
    CHECK(journal_rec_append(&b, SALT, 1, 1, UR_OP_CNT_INCR, 2, a) == 0);
    CHECK(journal_rec_append(&b, SALT, 2, 1, UR_OP_CNT_INCR, 2, t) == 0);
    CHECK(replay_buf(&srv, b.data, b.len, NULL, true, &res, err, sizeof(err)) ==
          0);
    CHECK_EQ_U64(res.records, 2);
    CHECK_EQ_U64(cnt_total(srv.db.cnt, UINT64_MAX), 1);
    CHECK_EQ_U64(cnt_total(srv.db.cnt, UINT64_MAX - 1), 1);
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
    char err[4096];
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
    three_records_at(&b, SALT, 1);
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
    char err[4096];
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
    three_records_at(&b, SALT, 1);
    append_file("journal.1", b.data, 20);
    fd = open(file("journal.2"), O_WRONLY | O_CREAT, 0644);
    char h[JOURNAL_HDR];
    struct journal_hdr hh = {JOURNAL_VERSION, 0, 2, 301, SALT, 0};
    journal_hdr_encode(h, &hh);
    CHECK(write(fd, h, sizeof(h)) == (ssize_t)sizeof(h));
    close(fd);
    CHECK(start(err, sizeof(err)) != 0);
    CHECK(strstr(err, "yet a later segment follows") != NULL);
    CHECK(strstr(err, "--drop-damaged") != NULL);
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
    char err[4096];
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
    char err[4096];
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
    T_RUN(test_codec_req_check);
    T_RUN(test_codec_truncated);
    T_RUN(test_codec_flipped);
    T_RUN(test_header);
    T_RUN(test_scan_order);
    T_RUN(test_scan_across_segments);
    T_RUN(test_scan_v1);
    T_RUN(test_writer_rotate_drop);
    T_RUN(test_writer_sync_elsewhere);
    T_RUN(test_writer_write_fails);
    T_RUN(test_recover_journal_only);
    T_RUN(test_recover_snapshot_and_journal);
    T_RUN(test_replay_failure);
    T_RUN(test_replay_takes_ids_of_older_journals);
    T_RUN(test_recover_torn_tail);
    T_RUN(test_recover_refuses_corruption);
    T_RUN(test_journal_off);
    T_RUN(test_misconf);
    T_END();
}
