/*
 * journal.h - the journal: every executed request that changed state, as
 * checksummed records in numbered segment files dir/journal.<N>
 * (docs/PERSISTENCE.md has the format byte by byte).
 *
 * Two halves:
 *   - the codec, pure (buffers in, status out): segment header, record
 *     encoding into a ur_buf, record reading from a buffer. The server's
 *     recovery, `unreadd --check` and the fuzzer share it.
 *   - the segment writer: an in-memory buffer of records appended during a
 *     loop turn, written to the current segment once per turn (group
 *     commit), with fdatasync on demand.
 */
#ifndef UR_JOURNAL_H
#define UR_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "frame.h"
#include "proto.h"

#define JOURNAL_MAGIC "URJRNL\0\0" /* 8 bytes */
#define JOURNAL_VERSION 1
#define JOURNAL_HDR 24     /* magic, u32 version, u32 flags, u64 segment */
#define JOURNAL_REC_HDR 12 /* u32 payload length, u64 XXH3 of the payload */
/* Payload: u64 clock ms, then one binary request frame. */
#define JOURNAL_REC_MIN (8 + UR_FRAME_HDR)
#define JOURNAL_REC_MAX (8 + UR_FRAME_HDR + UR_MAX_FRAME_CEILING)
#define JOURNAL_MAX_ARGS 0xFFFF /* a frame's argc is a u16 */

/* ---- codec ------------------------------------------------------------ */

/* The JOURNAL_HDR bytes opening segment seg. */
void journal_hdr_encode(char *out, uint64_t seg);

/* Checks the header at buf[0..len): 0 with *seg, or -1 with *why (bad
 * magic, unknown version, short header). */
int journal_hdr_check(const char *buf, size_t len, uint64_t *seg,
                      const char **why);

/*
 * Appends one record: clock_ms and the request (opcode, argv[0..argc),
 * command name excluded) as a binary request frame with id 0. String
 * arguments stay bytes, integers stay integers. 0, or -1 with the buffer
 * unchanged and errno ENOMEM, or E2BIG when the request cannot be framed
 * (more than JOURNAL_MAX_ARGS arguments, or a body over the frame ceiling).
 */
int journal_rec_append(struct ur_buf *b, uint64_t clock_ms, uint16_t opcode,
                       uint32_t argc, const struct ur_arg *argv);

/*
 * A batch record: one atomic batch (server/batch.h), built while it runs.
 * begin appends a record header, clock_ms and a batch frame header
 * (opcode UR_FRAME_OP_BATCH, id 0) at b->len, the record's offset; put
 * appends one sub-request to the record at off (a command of the batch
 * that changed state); end fills in the lengths, the sub-request count
 * (1..65535) and the checksum. A batch with nothing to record is dropped
 * by cutting b back to off. begin and put return 0, or -1 with b
 * unchanged and errno ENOMEM, or for put E2BIG (more than
 * JOURNAL_MAX_ARGS arguments, or a record over JOURNAL_REC_MAX).
 */
int journal_batch_begin(struct ur_buf *b, uint64_t clock_ms);
int journal_batch_put(struct ur_buf *b, size_t off, uint16_t opcode,
                      uint32_t argc, const struct ur_arg *argv);
void journal_batch_end(struct ur_buf *b, size_t off, uint32_t nsub);

enum journal_next {
    JOURNAL_REC,  /* a record; *off moved past it */
    JOURNAL_END,  /* *off == len: clean end */
    JOURNAL_TORN, /* the bytes left are a prefix of a record (short header
                     or payload): what a write cut by a crash leaves */
    JOURNAL_BAD   /* a bad length or checksum: corruption */
};

struct journal_rec {
    uint64_t clock_ms;
    const char *frame; /* the request frame, inside the input buffer */
    size_t frame_len;
};

/* Reads the record at *off of buf[0..len). On TORN and BAD, *off stays at
 * the record's start and *why says what is wrong. */
enum journal_next journal_rec_next(const char *buf, size_t len, size_t *off,
                                   struct journal_rec *rec, const char **why);

/*
 * Parses a record's request frame: 0 with *req filled, its argv in *args
 * (grown with realloc as needed, *cap entries; the caller frees it), or -1
 * with *why (not exactly one well-formed request frame, or no memory). A
 * batch record's frame leaves *args room for its largest sub-request
 * (req->sub_argc_max), as batch_exec needs.
 */
int journal_rec_request(const struct journal_rec *rec, struct ur_arg **args,
                        uint32_t *cap, struct ur_frame_req *req,
                        const char **why);

/* ---- segment writer ---------------------------------------------------- */

struct journal {
    const char *dir;
    int fd;             /* current segment; -1 when not (yet) created */
    uint64_t seg;       /* current segment number */
    uint64_t seg_len;   /* bytes of it known good */
    uint64_t first_seg; /* oldest segment on disk */
    bool tail_dirty;    /* a failed write may have left bytes past seg_len */
    struct ur_buf buf;  /* records appended, not yet written */
    uint64_t appended;  /* records appended since start */
    uint64_t written;   /* ... of which written to the file */
    uint64_t synced;    /* ... of which also fdatasync'd */
    uint64_t syncs;     /* fdatasyncs of records done */
    uint64_t sync_us;   /* ... how long the last one took */
    int err;            /* errno of the last failed write or sync, or 0 */
};

/* No file yet: the next write creates segment seg. Segments first_seg..
 * seg-1 are on disk already (first_seg == seg: none). */
void journal_init(struct journal *j, const char *dir, uint64_t first_seg,
                  uint64_t seg);
/* Closes the segment; records still in the buffer are dropped. */
void journal_deinit(struct journal *j);

/* Segment file name of seg in out (cap bytes). 0, or -1 (ENAMETOOLONG). */
int journal_path(const struct journal *j, char *out, size_t cap, uint64_t seg);

/*
 * Writes the buffer to the current segment (creating its file, header
 * synced, when needed). 0 with the buffer empty, or -1 with errno and
 * j->err set, the buffer kept, and the file cut back to its good length
 * (or marked to be cut before the next write).
 */
int journal_write(struct journal *j);

/* fdatasync of the current segment when records were written since the
 * last one. 0, or -1 with errno and j->err. */
int journal_sync(struct journal *j);

/*
 * The same fdatasync run elsewhere (a thread: bgsync.h). sync_begin
 * returns a close-on-exec duplicate of the current segment's descriptor
 * for the caller to sync (or start writing back) and close, and in *upto
 * the records an fdatasync of it covers: those written so far. The
 * duplicate stays valid when the segment is rotated and closed meanwhile
 * (rotation syncs it itself).
 * -1 with errno: no segment file yet (ENOENT), or the dup failed.
 * sync_end records how that sync went: err 0, or its errno, which it
 * returns as -1 with j->err set; dur_us is its duration.
 */
int journal_sync_begin(const struct journal *j, uint64_t *upto);
int journal_sync_end(struct journal *j, uint64_t upto, int err,
                     uint64_t dur_us);

/*
 * Ends the current segment and makes seg+1 current: the buffer is written
 * first, so segments <= the returned old number hold every record appended
 * so far. 0, or -1 (write failed: nothing changed). The new segment's file
 * is created by the next write.
 */
int journal_rotate(struct journal *j, uint64_t *ended);

/*
 * Gives up the current segment without syncing or writing it again (a
 * failed fdatasync, or a file deleted under the server, leaves it
 * untrusted): closes it, and makes seg+1 current, its file created by the
 * next write or journal_create. The buffer is kept. The old segment's
 * file stays on disk, as it is, until a snapshot covers it.
 */
void journal_abandon(struct journal *j);

/* Creates the current segment's file (header, fdatasync, directory fsync)
 * when it has none. 0, or -1 with errno and j->err set. */
int journal_create(struct journal *j);

/* Removes the segments first_seg..upto (covered by a snapshot). */
void journal_drop_through(struct journal *j, uint64_t upto);

/* Bytes of every segment on disk plus the buffer. */
uint64_t journal_bytes(const struct journal *j);

#endif
