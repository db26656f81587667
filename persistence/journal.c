/*
 * journal.c - see journal.h and docs/PERSISTENCE.md.
 *
 * The writer never leaves a partial record behind a good one: a failed
 * write is cut back with ftruncate to the last good length, and if even
 * that fails the cut is retried before the next write. So a segment holds
 * whole records, except for a torn tail left by a crash in the middle of a
 * write, which recovery cuts.
 */
#include "journal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "fsutil.h"
#include "le.h"
#include "ops.h"

/* The record buffer keeps this much between turns: a busy server's turn
 * fits without a realloc, an idle one gives a burst's memory back. */
#define BUF_KEEP (1u << 20)

/* ---- codec ------------------------------------------------------------ */

void journal_hdr_encode(char *out, const struct journal_hdr *h)
{
    memcpy(out, JOURNAL_MAGIC, 8);
    le_wr32(out + 8, JOURNAL_VERSION);
    le_wr32(out + 12, h->flags);
    le_wr64(out + 16, h->seg);
    le_wr64(out + 24, h->first_seq);
    le_wr64(out + 32, h->salt);
    le_wr64(out + 40, XXH3_64bits(out, JOURNAL_HDR - 8));
}

int journal_hdr_check(const char *buf, size_t len, struct journal_hdr *h,
                      const char **why)
{
    memset(h, 0, sizeof(*h));
    if (len < 12) {
        *why = "file shorter than a journal header";
        return -1;
    }
    if (memcmp(buf, JOURNAL_MAGIC, 8) != 0) {
        *why = "bad magic (not a journal segment)";
        return -1;
    }
    h->version = le_rd32(buf + 8);
    if (h->version == JOURNAL_VERSION)
        h->len = JOURNAL_HDR;
    else if (h->version == JOURNAL_VERSION_1)
        h->len = JOURNAL_HDR_V1;
    else {
        *why = "unknown journal format version";
        return -1;
    }
    if (len < h->len) {
        *why = "file shorter than its journal header";
        return -1;
    }
    h->flags = le_rd32(buf + 12);
    h->seg = le_rd64(buf + 16);
    if (h->version == JOURNAL_VERSION) {
        if (XXH3_64bits(buf, JOURNAL_HDR - 8) != le_rd64(buf + 40)) {
            *why = "segment header checksum mismatch";
            return -1;
        }
        h->first_seq = le_rd64(buf + 24);
        h->salt = le_rd64(buf + 32);
        if (h->first_seq == 0) {
            *why = "segment header names sequence number 0";
            return -1;
        }
    }
    if (h->flags & ~(uint32_t)JOURNAL_F_ENDS_EARLY) {
        *why = "unknown segment header flags (written by a newer unreadd?)";
        return -1;
    }
    return 0;
}

/* Appends a record header (filled by rec_end), clock_ms and a request
 * frame header for opcode. 0, or -1 (no memory; the caller cuts b back). */
static int rec_begin(struct ur_buf *b, uint64_t clock_ms, uint16_t opcode)
{
    size_t hdr_off;

    if (ur_buf_reserve(b, JOURNAL_REC_HDR + 8) != 0)
        return -1;
    b->len += JOURNAL_REC_HDR;
    le_wr64(b->data + b->len, clock_ms);
    b->len += 8;
    return ur_frame_req_begin(b, opcode, 0, &hdr_off);
}

void journal_rec_seal(char *rec, uint32_t n, uint64_t salt, uint64_t seq)
{
    uint64_t h;

    le_wr64(rec, seq);
    le_wr32(rec + 8, n);
    h = XXH3_64bits_withSeed(rec, 12, salt);
    le_wr32(rec + 12, (uint32_t)h);
    le_wr64(rec + 16, XXH3_64bits_withSeed(rec + JOURNAL_REC_HDR, n, h));
}

/* Completes the record at start, which runs to the end of b. */
static void rec_end(struct ur_buf *b, size_t start, uint16_t argc,
                    uint64_t salt, uint64_t seq)
{
    size_t payload = b->len - start - JOURNAL_REC_HDR;

    ur_frame_req_end(b, start + JOURNAL_REC_HDR + 8, argc);
    journal_rec_seal(b->data + start, (uint32_t)payload, salt, seq);
}

int journal_rec_append(struct ur_buf *b, uint64_t salt, uint64_t seq,
                       uint64_t clock_ms, uint16_t opcode, uint32_t argc,
                       const struct ur_arg *argv)
{
    size_t start = b->len, payload;

    if (argc > JOURNAL_MAX_ARGS) {
        errno = E2BIG;
        return -1;
    }
    payload = 8 + UR_FRAME_HDR + ur_frame_args_len(argc, argv);
    if (payload > JOURNAL_REC_MAX) {
        errno = E2BIG;
        return -1;
    }
    /* One reservation for the whole record: the encoders then only check. */
    if (ur_buf_reserve(b, JOURNAL_REC_HDR + payload) != 0 ||
        rec_begin(b, clock_ms, opcode) != 0 ||
        ur_frame_put_args(b, argc, argv) != 0) {
        b->len = start;
        errno = ENOMEM;
        return -1;
    }
    rec_end(b, start, (uint16_t)argc, salt, seq);
    return 0;
}

int journal_rec_append_payload(struct ur_buf *b, uint64_t salt, uint64_t seq,
                               const char *payload, uint32_t n)
{
    if (n < JOURNAL_REC_MIN || n > JOURNAL_REC_MAX) {
        errno = E2BIG;
        return -1;
    }
    if (ur_buf_reserve(b, JOURNAL_REC_HDR + (size_t)n) != 0) {
        errno = ENOMEM;
        return -1;
    }
    memcpy(b->data + b->len + JOURNAL_REC_HDR, payload, n);
    journal_rec_seal(b->data + b->len, n, salt, seq);
    b->len += JOURNAL_REC_HDR + (size_t)n;
    return 0;
}

void journal_item_seal(char *hdr, const char *payload, uint32_t n, uint64_t seq)
{
    uint64_t h;

    le_wr64(hdr, seq);
    le_wr32(hdr + 8, n);
    h = XXH3_64bits_withSeed(hdr, 12, 0);
    le_wr32(hdr + 12, (uint32_t)h);
    le_wr64(hdr + 16, XXH3_64bits_withSeed(payload, n, h));
}

int journal_item_next(const char *buf, size_t len, uint64_t want, size_t *used,
                      struct journal_rec *rec, const char **why)
{
    uint64_t hh, seq;
    uint32_t n;

    if (len < JOURNAL_REC_HDR)
        return 0;
    seq = le_rd64(buf);
    n = le_rd32(buf + 8);
    hh = XXH3_64bits_withSeed(buf, 12, 0);
    if ((uint32_t)hh != le_rd32(buf + 12)) {
        *why = "record header check mismatch";
        return -1;
    }
    if (n != 0 && (n < JOURNAL_REC_MIN || n > JOURNAL_REC_MAX)) {
        *why = "record length out of range";
        return -1;
    }
    if (n != 0 && seq != want) {
        *why = "record at another offset than expected";
        return -1;
    }
    if (len - JOURNAL_REC_HDR < n)
        return 0;
    if (XXH3_64bits_withSeed(buf + JOURNAL_REC_HDR, n, hh) !=
        le_rd64(buf + 16)) {
        *why = "record payload checksum mismatch";
        return -1;
    }
    rec->seq = seq;
    rec->clock_ms = n != 0 ? le_rd64(buf + JOURNAL_REC_HDR) : 0;
    rec->frame = n != 0 ? buf + JOURNAL_REC_HDR + 8 : NULL;
    rec->frame_len = n != 0 ? n - 8 : 0;
    *used = JOURNAL_REC_HDR + (size_t)n;
    return 1;
}

bool journal_rec_is_history(const struct journal_rec *rec)
{
    struct ur_frame_hdr h;

    if (rec->frame == NULL || rec->frame_len < UR_FRAME_HDR)
        return false;
    ur_frame_hdr_decode(rec->frame, &h);
    return h.op == JOURNAL_OP_HISTORY;
}

static bool hex40(const struct ur_arg *a)
{
    if (a->kind != UR_ARG_STR || a->len != 40)
        return false;
    for (uint32_t i = 0; i < 40; i++)
        if (!((a->str[i] >= '0' && a->str[i] <= '9') ||
              (a->str[i] >= 'a' && a->str[i] <= 'f')))
            return false;
    return true;
}

int journal_history_args(const struct ur_frame_req *req, const char **replid,
                         const char **replid2, uint64_t *offset2,
                         uint64_t *offset, const char **why)
{
    const struct ur_arg *a = req->argv;

    if (req->op != JOURNAL_OP_HISTORY || req->argc != JOURNAL_HISTORY_ARGS ||
        !hex40(&a[0]) || !hex40(&a[1]) || a[2].kind != UR_ARG_INT ||
        a[3].kind != UR_ARG_INT) {
        *why = "malformed history record";
        return -1;
    }
    *replid = a[0].str;
    *replid2 = a[1].str;
    *offset2 = a[2].num;
    *offset = a[3].num;
    return 0;
}

int journal_batch_begin(struct ur_buf *b, uint64_t clock_ms)
{
    size_t start = b->len;

    if (rec_begin(b, clock_ms, UR_FRAME_OP_BATCH) == 0)
        return 0;
    b->len = start;
    errno = ENOMEM;
    return -1;
}

int journal_batch_put(struct ur_buf *b, size_t off, uint16_t opcode,
                      uint32_t argc, const struct ur_arg *argv)
{
    size_t payload = b->len - off - JOURNAL_REC_HDR;

    if (argc > JOURNAL_MAX_ARGS ||
        payload + UR_FRAME_SUB_HDR + ur_frame_args_len(argc, argv) >
            JOURNAL_REC_MAX) {
        errno = E2BIG;
        return -1;
    }
    if (ur_frame_put_sub(b, opcode, (uint16_t)argc, argv) != 0) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

void journal_batch_end(struct ur_buf *b, size_t off, uint32_t nsub,
                       uint64_t salt, uint64_t seq)
{
    rec_end(b, off, (uint16_t)nsub, salt, seq);
}

/* ---- scan --------------------------------------------------------------- */

/* What is wrong with the bytes at a record's place. */
enum rec_fault {
    REC_SOUND,
    REC_SHORT,    /* fewer bytes left than a record header */
    REC_HEAD,     /* header check fails, or a length out of range */
    REC_PAST_EOF, /* a sound header whose payload runs past the end */
    REC_SUM,      /* payload checksum mismatch */
    REC_SEQ       /* a sound record with another sequence number */
};

struct rec_view {
    uint64_t seq;
    uint32_t n;  /* payload length */
    size_t size; /* header + payload */
};

/* Looks at the record at off of a segment with header h (want: the
 * sequence number it must have, ignored for version 1). */
static enum rec_fault rec_look(const struct journal_hdr *h, const char *buf,
                               size_t len, size_t off, uint64_t want,
                               struct rec_view *v)
{
    const char *p = buf + off;
    size_t left = len - off;
    uint64_t hh;

    memset(v, 0, sizeof(*v));
    if (h->version == JOURNAL_VERSION_1) {
        if (left < JOURNAL_REC_HDR_V1)
            return REC_SHORT;
        v->n = le_rd32(p);
        v->size = JOURNAL_REC_HDR_V1 + (size_t)v->n;
        if (v->n < JOURNAL_REC_MIN || v->n > JOURNAL_REC_MAX)
            return REC_HEAD;
        if (left - JOURNAL_REC_HDR_V1 < v->n)
            return REC_PAST_EOF;
        if (XXH3_64bits(p + JOURNAL_REC_HDR_V1, v->n) != le_rd64(p + 4))
            return REC_SUM;
        return REC_SOUND;
    }
    if (left < JOURNAL_REC_HDR)
        return REC_SHORT;
    v->seq = le_rd64(p);
    v->n = le_rd32(p + 8);
    v->size = JOURNAL_REC_HDR + (size_t)v->n;
    if (v->n < JOURNAL_REC_MIN || v->n > JOURNAL_REC_MAX)
        return REC_HEAD;
    hh = XXH3_64bits_withSeed(p, 12, h->salt);
    if ((uint32_t)hh != le_rd32(p + 12))
        return REC_HEAD;
    if (left - JOURNAL_REC_HDR < v->n)
        return v->seq == want ? REC_PAST_EOF : REC_SEQ;
    if (XXH3_64bits_withSeed(p + JOURNAL_REC_HDR, v->n, hh) != le_rd64(p + 16))
        return REC_SUM;
    return v->seq == want ? REC_SOUND : REC_SEQ;
}

/* A record that would be sound wherever it sits: its checks hold, its
 * sequence number aside. Version 1 records have only their payload
 * checksum, which costs the length it claims: *budget bounds the bytes
 * hashed so that a crafted file cannot make a scan quadratic. */
static bool sound_anywhere(const struct journal_hdr *h, const char *buf,
                           size_t len, size_t off, uint64_t *budget,
                           struct rec_view *v)
{
    size_t left = len - off;
    size_t rh =
        h->version == JOURNAL_VERSION_1 ? JOURNAL_REC_HDR_V1 : JOURNAL_REC_HDR;
    uint32_t n;

    if (left < rh + JOURNAL_REC_MIN)
        return false;
    n = le_rd32(buf + off + (h->version == JOURNAL_VERSION_1 ? 0 : 8));
    if (n < JOURNAL_REC_MIN || n > left - rh)
        return false;
    if (h->version == JOURNAL_VERSION_1) {
        if (*budget < n) {
            *budget = 0;
            return false;
        }
        *budget -= n;
    }
    return rec_look(h, buf, len, off, le_rd64(buf + off), v) == REC_SOUND;
}

/* Looks for sound records after the damage at off: the first one's place
 * and sequence number, and how many there are in all, following each run
 * of records in sequence and looking again after it. When the version 1
 * budget runs out, what follows cannot be ruled out: found_unsure. */
static void find_after(const char *buf, size_t len, size_t off,
                       struct journal_scan *s)
{
    uint64_t budget = 16 * (uint64_t)len + (1u << 20);
    struct rec_view v;
    size_t q = off + 1;

    while (q < len) {
        if (!sound_anywhere(&s->hdr, buf, len, q, &budget, &v)) {
            if (budget == 0) {
                s->found_unsure = true;
                if (s->found_off == 0)
                    s->found_off = q;
                return;
            }
            q++;
            continue;
        }
        if (s->found_off == 0) {
            s->found_off = q;
            s->found_seq = v.seq;
        }
        for (uint64_t want = v.seq; q < len; want++) {
            if (rec_look(&s->hdr, buf, len, q, want, &v) != REC_SOUND)
                break;
            s->found_records++;
            q += v.size;
        }
    }
}

static bool all_zero(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != 0)
            return false;
    return true;
}

/* buf[0..len), shorter than a header, is the start of one: the segment
 * was being created when the process died (its header is written and
 * synced before any record). */
static bool header_cut_short(const char *buf, size_t len)
{
    static const char v2[12] = "URJRNL\0\0\2\0\0";
    static const char v1[12] = "URJRNL\0\0\1\0\0";

    if (len == 0)
        return true;
    if (len >= 12) {
        uint32_t ver = le_rd32(buf + 8);
        return memcmp(buf, v2, 8) == 0 &&
               ((ver == JOURNAL_VERSION && len < JOURNAL_HDR) ||
                (ver == JOURNAL_VERSION_1 && len < JOURNAL_HDR_V1));
    }
    return memcmp(buf, v2, len) == 0 || memcmp(buf, v1, len) == 0;
}

/* Version 1 records have no header check: a record whose payload runs
 * past the end of the file, yet is whole (its checksum holds) when its
 * length is taken from the file's end, was complete, and what is damaged
 * is its length field. */
static bool v1_length_damaged(const char *buf, size_t len, size_t off)
{
    const char *p = buf + off;

    return XXH3_64bits(p + JOURNAL_REC_HDR_V1,
                       len - off - JOURNAL_REC_HDR_V1) == le_rd64(p + 4);
}

static const char *fault_why(enum rec_fault f, bool v1)
{
    switch (f) {
    case REC_SHORT:
        return "record header cut short at the end of the file";
    case REC_HEAD:
        return v1 ? "bad record length"
                  : "record header damaged (bad length or sequence number)";
    case REC_PAST_EOF:
        return "record payload cut short at the end of the file";
    case REC_SUM:
        return "record checksum mismatch (payload damaged)";
    case REC_SEQ:
        return "record out of sequence (a record missing, repeated or "
               "moved)";
    default:
        return "sound record";
    }
}

void journal_scan(const char *buf, size_t len, const struct journal_link *prev,
                  bool last, struct journal_scan *s)
{
    bool have_prev = prev != NULL && prev->next_seq != 0, v1, torn;
    enum rec_fault f = REC_SOUND;
    struct rec_view v = {0, 0, 0};
    const char *why;
    uint64_t seq;
    size_t off;

    memset(s, 0, sizeof(*s));
    if (journal_hdr_check(buf, len, &s->hdr, &why) != 0) {
        s->state = JOURNAL_CORRUPT;
        s->why = why;
        if (header_cut_short(buf, len)) {
            s->state = last ? JOURNAL_TORN : JOURNAL_CORRUPT;
            s->why = last ? "segment header cut short: the segment was being "
                            "created and holds no record"
                          : "segment header cut short, yet a later segment "
                            "follows";
        }
        return;
    }
    s->hdr_ok = true;
    s->link.gap_ok = (s->hdr.flags & JOURNAL_F_ENDS_EARLY) != 0;
    v1 = s->hdr.version == JOURNAL_VERSION_1;
    /* Version 1 has no sequence numbers on disk: count on from the
     * segment before. */
    seq = v1 ? (have_prev ? prev->next_seq : 1) : s->hdr.first_seq;
    if (!v1 && have_prev && seq != prev->next_seq) {
        if (seq > prev->next_seq && prev->gap_ok) {
            s->gap = seq - prev->next_seq;
        } else {
            s->state = JOURNAL_CORRUPT;
            s->bad_off = 24; /* the header's first sequence number */
            s->end = s->hdr.len;
            s->next_seq = prev->next_seq;
            s->bad_seq = seq;
            s->why = seq > prev->next_seq
                         ? "records missing between segments: this one "
                           "starts after the sequence number the one before "
                           "ends at"
                         : "segments overlap: this one starts before the "
                           "sequence number the one before ends at";
            return;
        }
    }
    for (off = s->hdr.len; off < len; off += v.size, seq++) {
        f = rec_look(&s->hdr, buf, len, off, seq, &v);
        if (f != REC_SOUND)
            break;
        s->records++;
    }
    s->end = off;
    s->next_seq = s->link.next_seq = seq;
    if (off == len) {
        s->state = JOURNAL_CLEAN;
        return;
    }
    s->bad_off = off;
    s->bad_seq = v.seq;
    why = fault_why(f, v1);
    if (v1 && f == REC_PAST_EOF && v1_length_damaged(buf, len, off)) {
        f = REC_HEAD;
        why = "record length damaged (the record is whole to the end of the "
              "file)";
    }
    /* A record out of sequence is itself sound: it counts as found. */
    find_after(buf, len, f == REC_SEQ ? off - 1 : off, s);
    /* An incomplete record, or a tail the file system extended the file
     * with and never wrote, with nothing sound after it. */
    torn = s->found_off == 0 && (f == REC_SHORT || f == REC_PAST_EOF ||
                                 all_zero(buf + off, len - off));
    if (torn && last) {
        s->state = JOURNAL_TORN;
        s->why = f == REC_SHORT || f == REC_PAST_EOF
                     ? why
                     : "zero bytes to the end of the file (space the file "
                       "system added, never written)";
        return;
    }
    s->state = JOURNAL_CORRUPT;
    s->why = torn ? "the segment ends inside a record, yet a later segment "
                    "follows (a segment is complete before the next begins)"
                  : why;
}

void journal_place(const struct journal_scan *s, size_t off, uint64_t rec,
                   uint64_t seq, char *out, size_t cap)
{
    if (!s->hdr_ok || off < s->hdr.len)
        snprintf(out, cap, "offset %zu (segment header)", off);
    else if (s->hdr.version == JOURNAL_VERSION_1)
        snprintf(out, cap, "offset %zu, record %llu", off,
                 (unsigned long long)rec);
    else
        snprintf(out, cap, "offset %zu, record %llu (seq %llu)", off,
                 (unsigned long long)rec, (unsigned long long)seq);
}

bool journal_rec_next(const struct journal_scan *s, const char *buf,
                      size_t *off, struct journal_rec *rec)
{
    const char *p = buf + *off;
    size_t rh;
    uint32_t n;

    if (*off >= s->end)
        return false;
    if (s->hdr.version == JOURNAL_VERSION_1) {
        rh = JOURNAL_REC_HDR_V1;
        n = le_rd32(p);
        rec->seq = 0;
    } else {
        rh = JOURNAL_REC_HDR;
        n = le_rd32(p + 8);
        rec->seq = le_rd64(p);
    }
    rec->clock_ms = le_rd64(p + rh);
    rec->frame = p + rh + 8;
    rec->frame_len = n - 8;
    *off += rh + n;
    return true;
}

/* Makes *args hold at least n entries. */
static int args_grow(struct ur_arg **args, uint32_t *cap, uint32_t n)
{
    struct ur_arg *a;

    if (n <= *cap)
        return 0;
    a = realloc(*args, (size_t)n * sizeof(**args));
    if (a == NULL)
        return -1;
    *args = a;
    *cap = n;
    return 0;
}

int journal_rec_request(const struct journal_rec *rec, struct ur_arg **args,
                        uint32_t *cap, struct ur_frame_req *req,
                        const char **why)
{
    struct ur_limits lim = {UR_MAX_FRAME_CEILING, JOURNAL_MAX_ARGS, 0};
    size_t used = 0, hint = 0;
    struct ur_frame_hdr h;
    bool batch;

    /* The payload holds a whole header (JOURNAL_REC_MIN). A plain
     * request's argc is bounded by the body before anything is allocated
     * for it; a batch's sub-requests are counted by the parse, which keeps
     * no argument. */
    ur_frame_hdr_decode(rec->frame, &h);
    batch = h.op == UR_FRAME_OP_BATCH;
    *why = "record is not one well-formed request frame";
    if (!batch) {
        if ((uint64_t)h.argc * 5 > rec->frame_len - UR_FRAME_HDR)
            return -1;
        if (args_grow(args, cap, h.argc) != 0)
            goto nomem;
        lim.max_args = *cap;
    }
    if (ur_frame_parse_request(rec->frame, rec->frame_len, &lim, *args, req,
                               &used, &hint) != UR_PARSE_OK ||
        used != rec->frame_len || req->flags != 0)
        return -1;
    if (batch) {
        if (args_grow(args, cap, req->sub_argc_max) != 0)
            goto nomem;
        req->argv = *args;
    }
    return 0;

nomem:
    *why = "out of memory";
    return -1;
}

/* One command of a record: known, batchable when in a batch, with an
 * argument count its op allows. */
static int check_cmd(uint16_t code, uint32_t argc, bool in_batch,
                     uint64_t *per_op, const char **why)
{
    const struct ur_op *op = ur_op_by_code(code);

    if (code == JOURNAL_OP_HISTORY && !in_batch) {
        if (argc == JOURNAL_HISTORY_ARGS)
            return 0;
        *why = "malformed history record";
        return -1;
    }
    if (op == NULL) {
        *why = code == UR_FRAME_OP_BATCH ? "a batch inside a batch"
                                         : "unknown opcode";
        return -1;
    }
    if (in_batch && (op->flags & OPF_NOBATCH)) {
        *why = "a command that cannot be batched inside a batch";
        return -1;
    }
    if (argc < op->min_args ||
        (op->max_args != UR_VARARGS && argc > op->max_args)) {
        *why = "wrong number of arguments for its command";
        return -1;
    }
    if (per_op != NULL)
        per_op[op->index]++;
    return 0;
}

int journal_req_check(const struct ur_frame_req *req, uint32_t cap,
                      uint64_t *per_op, const char **why)
{
    struct ur_batch_reader rd;
    struct ur_frame_sub sub;
    uint32_t n = 0;

    if (req->op != UR_FRAME_OP_BATCH)
        return check_cmd(req->op, req->argc, false, per_op, why);
    if (req->nsub == 0) {
        *why = "an empty batch (the server journals none)";
        return -1;
    }
    ur_batch_reader_init(&rd, req->body, req->body_len, req->nsub);
    while (ur_batch_next(&rd, req->argv, cap, &sub)) {
        if (check_cmd(sub.op, sub.argc, true, per_op, why) != 0)
            return -1;
        n++;
    }
    if (n != req->nsub) {
        *why = "a malformed command inside a batch";
        return -1;
    }
    return 0;
}

/* ---- segment writer ---------------------------------------------------- */

/*
 * A fresh salt for a segment. It seeds every record check of the segment,
 * so a record is sound only in the segment it was written to, and bytes a
 * client sent (a string argument) can never pass for a record when a scan
 * looks for sound records after damage: they cannot know the salt. From
 * getrandom, or when that fails, from the clock and the process.
 */
static uint64_t new_salt(uint64_t seg)
{
    static uint64_t counter;
    struct {
        struct timespec ts;
        pid_t pid;
        uint64_t seg, n;
    } mix;
    uint64_t v;

    if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v))
        return v;
    memset(&mix, 0, sizeof(mix));
    clock_gettime(CLOCK_REALTIME, &mix.ts);
    mix.pid = getpid();
    mix.seg = seg;
    mix.n = ++counter;
    return XXH3_64bits(&mix, sizeof(mix));
}

void journal_init(struct journal *j, const char *dir, uint64_t first_seg,
                  uint64_t seg)
{
    memset(j, 0, sizeof(*j));
    j->dir = dir;
    j->fd = -1;
    j->seg = seg;
    j->first_seg = first_seg;
    j->salt = new_salt(seg);
    j->base_seq = 1;
    ur_buf_init(&j->buf);
}

void journal_deinit(struct journal *j)
{
    if (j->fd >= 0)
        close(j->fd);
    j->fd = -1;
    ur_buf_deinit(&j->buf);
}

int journal_path(const struct journal *j, char *out, size_t cap, uint64_t seg)
{
    char name[32];

    snprintf(name, sizeof(name), "journal.%" PRIu64, seg);
    return fs_path(out, cap, j->dir, name);
}

/* Creates the current segment's file with its header, synced with the
 * directory entry, so that a crash never leaves a segment with a torn
 * header behind records of a later one. */
static int create_segment(struct journal *j)
{
    /* Its first record is the first one not yet written. */
    struct journal_hdr h = {JOURNAL_VERSION,          0,       j->seg,
                            j->base_seq + j->written, j->salt, JOURNAL_HDR};
    char path[4096], hdr[JOURNAL_HDR];
    int fd, saved;

    if (journal_path(j, path, sizeof(path), j->seg) != 0)
        return -1;
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    journal_hdr_encode(hdr, &h);
    if (fs_pwrite_all(fd, hdr, sizeof(hdr), 0) != 0 || fdatasync(fd) != 0 ||
        fs_fsync_dir(j->dir) != 0)
        goto error;
    j->fd = fd;
    j->seg_len = JOURNAL_HDR;
    j->tail_dirty = false;
    return 0;

error:
    saved = errno;
    close(fd);
    unlink(path);
    errno = saved;
    return -1;
}

int journal_write(struct journal *j)
{
    if (j->buf.len == 0)
        return 0;
    if (j->fd < 0 && create_segment(j) != 0)
        goto error;
    if (j->tail_dirty) {
        if (ftruncate(j->fd, (off_t)j->seg_len) != 0)
            goto error;
        j->tail_dirty = false;
    }
    if (fs_pwrite_all(j->fd, j->buf.data, j->buf.len, j->seg_len) != 0) {
        int saved = errno;
        j->tail_dirty = ftruncate(j->fd, (off_t)j->seg_len) != 0;
        errno = saved;
        goto error;
    }
    j->seg_len += j->buf.len;
    j->buf.len = 0;
    ur_buf_shrink(&j->buf, BUF_KEEP);
    j->written = j->appended;
    j->err = 0;
    return 0;

error:
    j->err = errno;
    return -1;
}

int journal_sync(struct journal *j)
{
    uint64_t dur;
    int err;

    if (j->synced == j->written || j->fd < 0)
        return 0;
    err = fs_datasync(j->fd, &dur) == 0 ? 0 : errno;
    return journal_sync_end(j, j->written, err, dur);
}

int journal_sync_begin(const struct journal *j, uint64_t *upto)
{
    int fd;

    if (j->fd < 0) {
        errno = ENOENT;
        return -1;
    }
    fd = fcntl(j->fd, F_DUPFD_CLOEXEC, 0);
    if (fd >= 0)
        *upto = j->written;
    return fd;
}

int journal_sync_end(struct journal *j, uint64_t upto, int err, uint64_t dur_us)
{
    j->sync_us = dur_us;
    if (err != 0) {
        j->err = errno = err;
        return -1;
    }
    j->syncs++;
    if (upto > j->synced)
        j->synced = upto;
    return 0;
}

int journal_rotate(struct journal *j, uint64_t *ended)
{
    if (journal_write(j) != 0 || journal_sync(j) != 0)
        return -1;
    if (j->fd < 0) {
        /* The current segment has no file: nothing to end. */
        *ended = j->seg - 1;
        return 0;
    }
    close(j->fd);
    j->fd = -1;
    *ended = j->seg++;
    j->seg_len = 0;
    j->salt = new_salt(j->seg);
    return 0;
}

void journal_abandon(struct journal *j)
{
    if (j->fd < 0)
        return; /* no file: nothing was written to this number */
    close(j->fd);
    j->fd = -1;
    j->seg++;
    j->seg_len = 0;
    j->tail_dirty = false;
}

int journal_create(struct journal *j)
{
    if (j->fd >= 0 || create_segment(j) == 0)
        return 0;
    j->err = errno;
    return -1;
}

void journal_restart(struct journal *j, uint64_t seg)
{
    if (j->fd >= 0)
        close(j->fd);
    j->fd = -1;
    j->seg = j->first_seg = seg;
    j->seg_len = 0;
    j->tail_dirty = false;
    j->salt = new_salt(seg);
    j->buf.len = 0;
    j->written = j->synced = j->appended;
    j->err = 0;
}

void journal_drop_through(struct journal *j, uint64_t upto)
{
    char path[4096];

    for (; j->first_seg <= upto && j->first_seg < j->seg; j->first_seg++) {
        if (journal_path(j, path, sizeof(path), j->first_seg) == 0)
            unlink(path);
    }
}

uint64_t journal_bytes(const struct journal *j)
{
    uint64_t total = j->buf.len;
    char path[4096];
    struct stat st;

    for (uint64_t s = j->first_seg; s <= j->seg; s++) {
        if (journal_path(j, path, sizeof(path), s) == 0 && stat(path, &st) == 0)
            total += (uint64_t)st.st_size;
    }
    return total;
}
