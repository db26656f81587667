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
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "fsutil.h"
#include "le.h"

/* The record buffer keeps this much between turns: a busy server's turn
 * fits without a realloc, an idle one gives a burst's memory back. */
#define BUF_KEEP (1u << 20)

/* ---- codec ------------------------------------------------------------ */

void journal_hdr_encode(char *out, uint64_t seg)
{
    memcpy(out, JOURNAL_MAGIC, 8);
    le_wr32(out + 8, JOURNAL_VERSION);
    le_wr32(out + 12, 0);
    le_wr64(out + 16, seg);
}

int journal_hdr_check(const char *buf, size_t len, uint64_t *seg,
                      const char **why)
{
    if (len < JOURNAL_HDR) {
        *why = "file shorter than the 24-byte journal header";
        return -1;
    }
    if (memcmp(buf, JOURNAL_MAGIC, 8) != 0) {
        *why = "bad magic (not a journal segment)";
        return -1;
    }
    if (le_rd32(buf + 8) != JOURNAL_VERSION) {
        *why = "unknown journal format version";
        return -1;
    }
    *seg = le_rd64(buf + 16);
    return 0;
}

/* Appends a record header (patched by rec_end), clock_ms and a request
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

/* Completes the record at start, which runs to the end of b: the frame's
 * length and argc, the payload length and its checksum. */
static void rec_end(struct ur_buf *b, size_t start, uint16_t argc)
{
    size_t payload = b->len - start - JOURNAL_REC_HDR;

    ur_frame_req_end(b, start + JOURNAL_REC_HDR + 8, argc);
    le_wr32(b->data + start, (uint32_t)payload);
    le_wr64(b->data + start + 4,
            XXH3_64bits(b->data + start + JOURNAL_REC_HDR, payload));
}

int journal_rec_append(struct ur_buf *b, uint64_t clock_ms, uint16_t opcode,
                       uint32_t argc, const struct ur_arg *argv)
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
    rec_end(b, start, (uint16_t)argc);
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

void journal_batch_end(struct ur_buf *b, size_t off, uint32_t nsub)
{
    rec_end(b, off, (uint16_t)nsub);
}

enum journal_next journal_rec_next(const char *buf, size_t len, size_t *off,
                                   struct journal_rec *rec, const char **why)
{
    size_t left = len - *off;
    const char *p = buf + *off;
    uint32_t n;

    if (left == 0)
        return JOURNAL_END;
    if (left < JOURNAL_REC_HDR) {
        *why = "record header cut short at the end of the file";
        return JOURNAL_TORN;
    }
    n = le_rd32(p);
    if (n < JOURNAL_REC_MIN || n > JOURNAL_REC_MAX) {
        *why = "bad record length";
        return JOURNAL_BAD;
    }
    if (left - JOURNAL_REC_HDR < n) {
        *why = "record payload cut short at the end of the file";
        return JOURNAL_TORN;
    }
    if (XXH3_64bits(p + JOURNAL_REC_HDR, n) != le_rd64(p + 4)) {
        *why = "record checksum mismatch";
        return JOURNAL_BAD;
    }
    rec->clock_ms = le_rd64(p + JOURNAL_REC_HDR);
    rec->frame = p + JOURNAL_REC_HDR + 8;
    rec->frame_len = n - 8;
    *off += JOURNAL_REC_HDR + n;
    return JOURNAL_REC;
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

/* ---- segment writer ---------------------------------------------------- */

void journal_init(struct journal *j, const char *dir, uint64_t first_seg,
                  uint64_t seg)
{
    memset(j, 0, sizeof(*j));
    j->dir = dir;
    j->fd = -1;
    j->seg = seg;
    j->first_seg = first_seg;
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
    char path[4096], hdr[JOURNAL_HDR];
    int fd, saved;

    if (journal_path(j, path, sizeof(path), j->seg) != 0)
        return -1;
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    journal_hdr_encode(hdr, j->seg);
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
