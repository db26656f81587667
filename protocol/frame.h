/*
 * frame.h - the binary protocol codec (docs/PROTOCOL.md), pure: buffers in,
 * status out, no I/O. Used by the server (parse requests, encode replies),
 * the client library (encode requests, parse replies), the benchmark and the
 * fuzzers.
 *
 * Every frame starts with a 16-byte little-endian header:
 *   0  u8  magic   0xB7
 *   1  u8  version 1
 *   2  u16 op      request: opcode; reply: status (0 = OK, else enum ur_err)
 *   4  u32 id      request id, echoed in the reply
 *   8  u32 len     body bytes after the header (<= max-frame)
 *  12  u16 argc    request: argument count; reply: 0
 *  14  u16 flags   requests: reserved, 0; replies: 0, or UR_FRAME_FLAG_PUSH
 *                  on a push frame (below)
 * Request body: argc arguments, each
 *   0x01 u64                 integer
 *   0x02 u32 len, len bytes  byte string
 * Reply body: exactly one value (enum ur_val_kind):
 *   0x01 u64 | 0x02 u32 len, bytes | 0x03 u32 count, count values | 0x04 |
 *   0x05 u32 len, bytes (status text) | 0x06 u16 code, u32 len, bytes (error)
 *   | 0x07 i64 (signed integer)
 * A reply whose status is not 0 carries one 0x06 value with the same code;
 * a reply with status 0 does not have a 0x06 value at the top (an array may
 * hold 0x06 elements). Receivers ignore the reserved fields. Revision 1.1:
 * value 0x07 is an i64, and a frame with id 0 and flag UR_FRAME_FLAG_PUSH
 * is a push frame, a message not answering any request.
 *
 * The atomic batch frame (op UR_FRAME_OP_BATCH) is a request whose argc
 * counts sub-requests and whose body holds them, each
 *   u16 opcode, u16 argc, argc arguments (as above)
 * Its reply is one frame: status 0 and an array with one value per
 * sub-request (its reply, or a 0x06 error), or an error when the batch was
 * refused as a whole (server/batch.h).
 */
#ifndef UR_FRAME_H
#define UR_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "proto.h"

#define UR_FRAME_MAGIC 0xB7
#define UR_FRAME_VERSION 1
#define UR_FRAME_HDR 16
#define UR_FRAME_OP_BATCH 0xFF01 /* the atomic batch frame */
#define UR_FRAME_SUB_HDR 4       /* a batch sub-request: u16 op, u16 argc */

struct ur_limits {
    uint32_t max_frame;  /* body bytes of a frame; bulk bytes in RESP */
    uint32_t max_args;   /* arguments per command, name excluded */
    uint32_t max_inline; /* bytes of an inline (telnet) command line */
};

struct ur_frame_hdr {
    uint8_t magic;
    uint8_t version;
    uint16_t op; /* opcode in requests, status in replies */
    uint32_t id;
    uint32_t len;
    uint16_t argc;
    uint16_t flags;
};

/*
 * A parsed request. argv points into the caller's array, whose strings
 * point into the input buffer.
 * A batch frame (op UR_FRAME_OP_BATCH) has argc 0: its nsub sub-requests
 * are in body[0..body_len), checked whole, and are read one at a time with
 * ur_batch_next, into an array of at least sub_argc_max arguments (the
 * largest argc among them). These fields are 0 for other frames.
 */
struct ur_frame_req {
    uint16_t op;
    uint32_t id;
    uint16_t flags;
    uint32_t argc;
    struct ur_arg *argv;
    uint32_t nsub;
    uint32_t sub_argc_max;
    const char *body;
    size_t body_len;
};

/* Decodes the 16 header bytes at p (no checks). */
void ur_frame_hdr_decode(const char *p, struct ur_frame_hdr *h);

/*
 * A glance at the request frame at buf[0..len) without parsing it: its
 * total length when the whole frame is there (0 otherwise, or when buf
 * does not start with the magic), its opcode in *op, and in *first its
 * first argument when that is a u64 (*has_first; never for a batch
 * frame, whose body holds sub-requests). Nothing else is
 * checked: a hint for prefetching what the request will touch, never a
 * reason to run it (ur_frame_parse_request decides that).
 */
size_t ur_frame_peek(const char *buf, size_t len, uint16_t *op, uint64_t *first,
                     bool *has_first);

/*
 * Parses one request frame from buf[0..len).
 *   OK        *req filled (argv = args, which must hold lim->max_args
 *             entries); *consumed = bytes of the frame.
 *   NEED_MORE *hint = total bytes needed before the next attempt can
 *             succeed (at least len + 1).
 *   INVALID   bad magic or version, an argument overrunning the body, an
 *             unknown argument kind, or bytes left over in the body.
 *   TOO_BIG   len > lim->max_frame or argc > lim->max_args: decided from
 *             the header alone, before the body arrives.
 * On INVALID/TOO_BIG, req->id holds the header's id when the header was
 * complete (so the error reply can echo it), else 0.
 * A batch frame is checked whole once its body is in: INVALID also when a
 * sub-request runs past the body or its arguments are malformed, TOO_BIG
 * when one has more than lim->max_args arguments (header argc, the count
 * of sub-requests, is bounded by lim->max_args like any argc).
 */
enum ur_parse ur_frame_parse_request(const char *buf, size_t len,
                                     const struct ur_limits *lim,
                                     struct ur_arg *args,
                                     struct ur_frame_req *req, size_t *consumed,
                                     size_t *hint);

/*
 * Request encoding (client side). begin writes a header with argc 0 and
 * returns its offset; each put_arg appends an argument; end patches len and
 * argc. All return 0, or -1 on allocation failure.
 */
int ur_frame_req_begin(struct ur_buf *b, uint16_t op, uint32_t id,
                       size_t *hdr_off);
int ur_frame_put_arg_int(struct ur_buf *b, uint64_t v);
int ur_frame_put_arg_str(struct ur_buf *b, const char *s, size_t n);
void ur_frame_req_end(struct ur_buf *b, size_t hdr_off, uint16_t argc);

/*
 * Batch bodies. put_sub_hdr appends a sub-request's header (its argc
 * arguments follow, with put_arg_*); put_sub appends a whole sub-request,
 * put_args only arguments, integers as integers and strings as strings.
 * A batch frame is req_begin(UR_FRAME_OP_BATCH), the body, and req_end
 * with the count of sub-requests. 0, or -1 on allocation failure with
 * nothing appended.
 */
int ur_frame_put_sub_hdr(struct ur_buf *b, uint16_t op, uint16_t argc);
int ur_frame_put_sub(struct ur_buf *b, uint16_t op, uint16_t argc,
                     const struct ur_arg *argv);
int ur_frame_put_args(struct ur_buf *b, uint32_t argc,
                      const struct ur_arg *argv);
/* Bytes that put_args appends for these arguments. */
size_t ur_frame_args_len(uint32_t argc, const struct ur_arg *argv);

/* One sub-request of a batch; argv is the caller's array. */
struct ur_frame_sub {
    uint16_t op;
    uint32_t argc;
    struct ur_arg *argv;
};

struct ur_batch_reader {
    const char *p;
    const char *end;
    uint32_t left; /* sub-requests not read yet */
};

/* Starts reading nsub sub-requests from body[0..len): a batch frame's
 * (req->body, body_len, nsub) or a body built with ur_frame_put_sub. */
void ur_batch_reader_init(struct ur_batch_reader *r, const char *body,
                          size_t len, uint32_t nsub);
/* The next sub-request, its arguments parsed into args[0..cap): true, or
 * false after the last one, and on a sub-request that is malformed or has
 * more than cap arguments (never the case for a checked body and
 * cap >= sub_argc_max). Strings point into the body. */
bool ur_batch_next(struct ur_batch_reader *r, struct ur_arg *args, uint32_t cap,
                   struct ur_frame_sub *sub);

/*
 * Reply encoding (server side): begin, exactly one top-level value (an array
 * counts as one, with its elements), end with the status. 0 or -1 (ENOMEM).
 */
int ur_frame_reply_begin(struct ur_buf *b, uint32_t id, size_t *hdr_off);
void ur_frame_reply_end(struct ur_buf *b, size_t hdr_off, uint16_t status);
int ur_frame_put_int(struct ur_buf *b, uint64_t v);
int ur_frame_put_str(struct ur_buf *b, const char *s, size_t n);
int ur_frame_put_arr(struct ur_buf *b, uint32_t count);
int ur_frame_put_nil(struct ur_buf *b);
int ur_frame_put_status(struct ur_buf *b, const char *s, size_t n);
int ur_frame_put_sint(struct ur_buf *b, int64_t v);
/*
 * A push frame (binary v1.1): a message the server sends on its own
 * (MONITOR lines, and pub/sub messages), not a reply to a request. Its
 * header has id 0, status 0 and flag UR_FRAME_FLAG_PUSH; its body is one
 * value, as a reply's. begin/end as for replies.
 */
#define UR_FRAME_FLAG_PUSH 0x0001
int ur_frame_push_begin(struct ur_buf *b, size_t *hdr_off);
int ur_frame_put_err(struct ur_buf *b, uint16_t code, const char *msg,
                     size_t n);

/*
 * Reply parsing (client side). Checks the header and that the body holds
 * exactly one well-formed value, arrays nested at most UR_MAX_DEPTH deep,
 * no counts larger than the body could hold.
 *   OK        *h filled; the body is buf[UR_FRAME_HDR .. UR_FRAME_HDR+h->len);
 *             *consumed = UR_FRAME_HDR + h->len.
 *   NEED_MORE *hint as for requests.
 *   INVALID / TOO_BIG as for requests (max_frame limits the body).
 */
enum ur_parse ur_frame_parse_reply(const char *buf, size_t len,
                                   uint32_t max_frame, struct ur_frame_hdr *h,
                                   size_t *consumed, size_t *hint);

/* One value read from a validated reply body. For UR_VAL_ARR, `count`
 * elements follow and are read by further calls. */
struct ur_val {
    uint8_t kind;    /* enum ur_val_kind */
    uint16_t code;   /* UR_VAL_ERR */
    uint32_t count;  /* UR_VAL_ARR */
    uint32_t len;    /* STR, STATUS, ERR: byte length */
    const char *str; /* STR, STATUS, ERR: bytes (not terminated) */
    uint64_t num;    /* UR_VAL_INT */
};

struct ur_val_reader {
    const char *p;
    const char *end;
};

/* Starts reading the body of a reply parsed by ur_frame_parse_reply. */
void ur_val_reader_init(struct ur_val_reader *r, const char *body, size_t len);
/* Reads the next value in pre-order. true, or false at the end or on a
 * malformed body (never the case after ur_frame_parse_reply said OK). */
bool ur_val_next(struct ur_val_reader *r, struct ur_val *v);

#endif
