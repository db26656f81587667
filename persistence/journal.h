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
#define JOURNAL_VERSION 2          /* the format written */
#define JOURNAL_VERSION_1 1        /* still read (docs/PERSISTENCE.md 3.1) */
/* Version 2 header: magic, u32 version, u32 flags, u64 segment, u64 first
 * sequence number, u64 salt, u64 XXH3 of the 40 bytes before it. */
#define JOURNAL_HDR 48
#define JOURNAL_HDR_V1 24 /* magic, u32 version, u32 flags, u64 segment */
/* Version 2 record header: u64 sequence number, u32 payload length, u32
 * header check, u64 payload checksum. */
#define JOURNAL_REC_HDR 24
#define JOURNAL_REC_HDR_V1 12 /* u32 payload length, u64 XXH3 */
/* Payload: u64 clock ms, then one binary request frame. */
#define JOURNAL_REC_MIN (8 + UR_FRAME_HDR)
#define JOURNAL_REC_MAX (8 + UR_FRAME_HDR + UR_MAX_FRAME_CEILING)
#define JOURNAL_MAX_ARGS 0xFFFF /* a frame's argc is a u16 */
/* Header flag: records were removed from the end of this segment by an
 * operator (`unreadd --check --drop-damaged` or `--truncate-at`), so the
 * next segment may start at a later sequence number. */
#define JOURNAL_F_ENDS_EARLY 1u

/*
 * A history record: not a command but a change of the data's replication
 * history (persist.h persist_history_fork, docs/PERSISTENCE.md
 * "Replication"), journaled so that a restart knows which history the
 * records after it belong to. Its frame has this opcode, which is never
 * on the wire (frame.h reserves 0xFF00-0xFFFF), and four arguments: the
 * new replication id and the one before it (40 hex digits each), the
 * offset up to which the two histories agree, and the stream offset it
 * was written at (the same number: a check). It changes no data and is
 * not part of the replication stream: replay skips it.
 */
#define JOURNAL_OP_HISTORY 0xFF02
#define JOURNAL_HISTORY_ARGS 4

/* ---- codec ------------------------------------------------------------ */

/* A segment header, decoded. len: its size in the file (JOURNAL_HDR, or
 * JOURNAL_HDR_V1 for a version 1 segment, which has no first_seq and salt:
 * both 0). */
struct journal_hdr {
    uint32_t version;
    uint32_t flags;
    uint64_t seg;
    uint64_t first_seq; /* sequence number of the segment's first record */
    uint64_t salt;      /* seeds every record check of the segment */
    size_t len;
};

/* The JOURNAL_HDR bytes of a version 2 header (h->version and h->len are
 * ignored). */
void journal_hdr_encode(char *out, const struct journal_hdr *h);

/* Decodes and checks the header at buf[0..len), version 2 or 1: 0 with *h,
 * or -1 with *why (short, bad magic, unknown version or flags, checksum). */
int journal_hdr_check(const char *buf, size_t len, struct journal_hdr *h,
                      const char **why);

/*
 * Appends one record with sequence number seq, its checks seeded by the
 * segment's salt: clock_ms and the request (opcode, argv[0..argc),
 * command name excluded) as a binary request frame with id 0. String
 * arguments stay bytes, integers stay integers. 0, or -1 with the buffer
 * unchanged and errno ENOMEM, or E2BIG when the request cannot be framed
 * (more than JOURNAL_MAX_ARGS arguments, or a body over the frame ceiling).
 */
int journal_rec_append(struct ur_buf *b, uint64_t salt, uint64_t seq,
                       uint64_t clock_ms, uint16_t opcode, uint32_t argc,
                       const struct ur_arg *argv);

/*
 * Writes the JOURNAL_REC_HDR bytes at rec for the n payload bytes that
 * follow them: the sequence number, the length, the header check (the low
 * half of an XXH3 of those 12 bytes seeded with the segment's salt) and
 * the payload checksum (an XXH3 of the payload seeded with that whole
 * hash, which binds the payload to its header). The encoders above call
 * it; tests and the fuzzer seal bytes of their own with it.
 */
void journal_rec_seal(char *rec, uint32_t n, uint64_t salt, uint64_t seq);

/*
 * Appends a record whose payload (clock ms, then a request frame) is the
 * n bytes at payload, copied as they are: a record received from a
 * primary (docs/PERSISTENCE.md "Replication") keeps its bytes in the
 * replica's journal, sealed again with the segment's salt and seq. 0, or
 * -1 with errno ENOMEM (b unchanged) or E2BIG (n outside JOURNAL_REC_MIN..
 * JOURNAL_REC_MAX).
 */
int journal_rec_append_payload(struct ur_buf *b, uint64_t salt, uint64_t seq,
                               const char *payload, uint32_t n);

struct journal_rec;
struct ur_frame_req;

/* The JOURNAL_REC_HDR bytes of a replication stream record (below) whose
 * n-byte payload is elsewhere: salt 0, seq its stream offset. n 0: a
 * heartbeat. */
void journal_item_seal(char *hdr, const char *payload, uint32_t n,
                       uint64_t seq);

/*
 * One record of a replication stream at buf[0..len), sealed with salt 0
 * and its stream offset as sequence number (docs/PERSISTENCE.md
 * "Replication"): 1 with *used its bytes and, for a record, *rec (its
 * frame points into buf); an empty payload is a heartbeat (rec->frame
 * NULL, rec->seq the sender's offset). 0 when buf holds less than a whole
 * record, or -1 with *why: a header or payload check fails, a length out
 * of range, or another sequence number than want (heartbeats carry any).
 */
int journal_item_next(const char *buf, size_t len, uint64_t want, size_t *used,
                      struct journal_rec *rec, const char **why);

/* Whether a record's frame is a history record (JOURNAL_OP_HISTORY), and
 * the arguments of a parsed one: 0 with the ids (40 bytes each, not
 * terminated) and offsets, or -1 with *why (not four arguments of the
 * right kinds). */
bool journal_rec_is_history(const struct journal_rec *rec);
int journal_history_args(const struct ur_frame_req *req, const char **replid,
                         const char **replid2, uint64_t *offset2,
                         uint64_t *offset, const char **why);

/*
 * A batch record: one atomic batch (server/batch.h), built while it runs.
 * begin appends a record header, clock_ms and a batch frame header
 * (opcode UR_FRAME_OP_BATCH, id 0) at b->len, the record's offset; put
 * appends one sub-request to the record at off (a command of the batch
 * that changed state); end fills in the lengths, the sub-request count
 * (1..65535), the sequence number and the checks. A batch with nothing to
 * record is dropped by cutting b back to off. begin and put return 0, or
 * -1 with b unchanged and errno ENOMEM, or for put E2BIG (more than
 * JOURNAL_MAX_ARGS arguments, or a record over JOURNAL_REC_MAX).
 */
int journal_batch_begin(struct ur_buf *b, uint64_t clock_ms);
int journal_batch_put(struct ur_buf *b, size_t off, uint16_t opcode,
                      uint32_t argc, const struct ur_arg *argv);
void journal_batch_end(struct ur_buf *b, size_t off, uint32_t nsub,
                       uint64_t salt, uint64_t seq);

/*
 * What a segment's bytes say, decided by journal_scan over the whole file
 * (the server's loader, `unreadd --check` and the fuzzer share it):
 *   CLEAN    sound records to the end of the file;
 *   TORN     sound records, then an incomplete last record and nothing
 *            sound after it (or a header cut short, or a tail of zero
 *            bytes): what a crash in the middle of a write leaves. Only
 *            in the last segment; the bytes from `end` are cut;
 *   CORRUPT  anything else: damage at bad_off.
 */
enum journal_state { JOURNAL_CLEAN, JOURNAL_TORN, JOURNAL_CORRUPT };

/* Where the next segment must continue, carried from one segment's scan to
 * the next one's. next_seq 0: unknown (no segment before it on disk). */
struct journal_link {
    uint64_t next_seq; /* the sequence number its first record must have */
    bool gap_ok;       /* ... or later: the segment before ends early */
};

struct journal_scan {
    enum journal_state state;
    bool hdr_ok;            /* hdr is valid */
    struct journal_hdr hdr; /* the segment header */
    size_t end;             /* the sound records end here */
    uint64_t records;       /* sound records in [hdr.len, end) */
    uint64_t next_seq;      /* sequence number of the record after them */
    /* TORN and CORRUPT: */
    size_t bad_off;   /* where it is wrong: end, or a header field */
    const char *why;  /* what is wrong there */
    uint64_t bad_seq; /* the sequence number found there (next_seq is the
                         one expected), when its header could be read */
    uint64_t gap;     /* CLEAN/TORN: records missing before the first one,
                         accepted because the segment before ends early */
    /* CORRUPT: sound records found after the damage, if any. */
    size_t found_off;         /* the first one's offset; 0: none */
    uint64_t found_seq;       /* ... its sequence number */
    uint64_t found_records;   /* how many in all, to the end of the file */
    bool found_unsure;        /* a version 1 scan gave up looking at
                                 found_off: sound records there and after it
                                 are not ruled out */
    struct journal_link link; /* for the segment after this one */
};

/*
 * Classifies a whole segment file buf[0..len). prev: where the segment
 * before it ended (NULL or next_seq 0: none on disk). last: no segment
 * follows it, so an incomplete final record is a torn tail; otherwise the
 * same bytes are damage (a segment is complete before the next begins).
 * A record is sound when its header check, its sequence number (the one
 * after the previous record's) and its payload checksum all hold. Before
 * calling a bad record a torn tail, the scan looks at everything after
 * it: a sound record there makes it corruption. Never reads outside buf.
 */
void journal_scan(const char *buf, size_t len, const struct journal_link *prev,
                  bool last, struct journal_scan *s);

/* "offset O, record R (seq S)" into out (cap bytes): a place in a scanned
 * segment as every report names it ("(segment header)" before the first
 * record; no seq in version 1). */
void journal_place(const struct journal_scan *s, size_t off, uint64_t rec,
                   uint64_t seq, char *out, size_t cap);

struct journal_rec {
    uint64_t seq;
    uint64_t clock_ms;
    const char *frame; /* the request frame, inside the input buffer */
    size_t frame_len;
};

/* The sound record at *off of a scanned segment (s->hdr.len <= *off <
 * s->end, on a record boundary): true with *rec, *off moved past it;
 * false at s->end. */
bool journal_rec_next(const struct journal_scan *s, const char *buf,
                      size_t *off, struct journal_rec *rec);

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

/*
 * Checks a parsed record (journal_rec_request, args of *cap entries) as
 * the op table describes the commands the server journals: a known
 * opcode with an argument count in its range, or a batch of such
 * commands, none that cannot be batched. Counts each command in
 * per_op[op->index] when per_op is not NULL (UR_OP_COUNT entries).
 * 0, or -1 with *why. The server's replay finds the same faults by running
 * the record; this is for the reader that cannot run it.
 */
int journal_req_check(const struct ur_frame_req *req, uint32_t cap,
                      uint64_t *per_op, const char **why);

/* ---- segment writer ---------------------------------------------------- */

struct journal {
    const char *dir;
    int fd;             /* current segment; -1 when not (yet) created */
    uint64_t seg;       /* current segment number */
    uint64_t seg_len;   /* bytes of it known good */
    uint64_t salt;      /* the current segment's (random) */
    uint64_t base_seq;  /* sequence number of the first record appended
                           since start: the record after those replayed */
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
 * seg-1 are on disk already (first_seg == seg: none). Sequence numbers
 * start at 1: the loader sets base_seq to continue those on disk. */
void journal_init(struct journal *j, const char *dir, uint64_t first_seg,
                  uint64_t seg);

/* The sequence number of the next record appended. Its encoders take it
 * and j->salt; the record counts once committed (appended++). */
static inline uint64_t journal_seq_next(const struct journal *j)
{
    return j->base_seq + j->appended;
}

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

/*
 * The data was replaced (a full sync from a primary, whose snapshot
 * covers segments <= seg - 1): closes the current segment and starts
 * again at seg with no segment on disk before it (the caller removed
 * them). Records not yet written are dropped, counted as written and
 * synced (they belonged to the data that is gone); sequence numbers go on.
 */
void journal_restart(struct journal *j, uint64_t seg);

/* Removes the segments first_seg..upto (covered by a snapshot). */
void journal_drop_through(struct journal *j, uint64_t upto);

/* Bytes of every segment on disk plus the buffer. */
uint64_t journal_bytes(const struct journal *j);

#endif
