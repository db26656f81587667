/*
 * reply.h - the reply writer. Handlers describe a reply (an integer, an
 * array of ..., an error) and this module encodes it in the protocol of the
 * connection that asked: RESP2 text or a binary reply frame. Handlers never
 * know which.
 *
 * Contract: between reply_begin and reply_end a handler emits exactly one
 * top-level value (an array counts as one; its elements follow), or one
 * error instead of it. An error may only be emitted before any value.
 */
#ifndef UR_REPLY_H
#define UR_REPLY_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* RESP is RESP2 (every text connection starts so); HELLO 3 makes it
 * RESP3, HELLO 2 back. */
enum reply_proto { REPLY_RESP = 1, REPLY_BIN = 2, REPLY_RESP3 = 3 };

struct reply {
    struct ur_buf *out;
    uint8_t proto;    /* enum reply_proto */
    uint16_t status;  /* enum ur_err of the reply, 0 = OK */
    uint32_t id;      /* binary request id */
    size_t hdr_off;   /* binary: offset of the frame header in out */
    size_t start;     /* out->len when the reply began */
    bool oom;         /* an allocation failed: reply_end sends an error */
    bool close_after; /* connection closes after this reply (QUIT, ...) */
    bool defer;       /* no reply now (WAIT blocks; PSYNC hands the
                         connection over to replication): the handler wrote
                         nothing, reply_end takes back the frame header,
                         and the connection answers later or never */
};

/* Starts a reply to request `id` (binary; ignored for RESP) in out. */
void reply_begin(struct reply *r, struct ur_buf *out, enum reply_proto proto,
                 uint32_t id);
/* Starts a push message (MONITOR, pub/sub) in out: RESP as it is, a push
 * frame on the binary protocol (frame.h). The message is one value, made
 * with reply_push (or any other call) and finished with reply_end. */
void reply_begin_push(struct reply *r, struct ur_buf *out,
                      enum reply_proto proto);
/* Finishes the frame. If an allocation failed, rewinds to start and
 * replaces the reply with an error (best effort). */
void reply_end(struct reply *r);

/*
 * One element of an array that parent is building (a batch's reply: one
 * element per command): sub writes into the same buffer, in the same
 * protocol, without a frame of its own. Its error becomes an error
 * element and leaves parent's status alone; end_elem carries its
 * allocation failure and close_after over to parent.
 */
void reply_begin_elem(struct reply *sub, struct reply *parent);
void reply_end_elem(struct reply *sub, struct reply *parent);

/*
 * Values. Every protocol encodes each kind (docs/PROTOCOL.md):
 *                RESP2            RESP3            binary
 *   int          :v (*)           :v (*)           0x01 u64
 *   i64          :v               :v               0x07 i64
 *   str          $n bytes         $n bytes         0x02
 *   arr(n)       *n               *n               0x03 n
 *   map(n pairs) *2n, flattened   %n               0x03 2n, flattened
 *   set(n)       *n               ~n               0x03 n
 *   push(n)      *n               >n               0x03 n (push frame)
 *   nil          $-1              _                0x04
 *   bool         :1 / :0          #t / #f          0x01 1 / 0
 *   double       $ "%.17g"        ,v               0x02 "%.17g"
 * (*) an integer above INT64_MAX, which no Redis client reads as an
 * integer, is a bulk string of its digits in RESP2 and a big number
 * (RESP3 "(") in RESP3. Arguments are capped at INT64_MAX (proto.h
 * UR_INT_MAX), so only a saturated total can be that large.
 */
void reply_int(struct reply *r, uint64_t v);
void reply_i64(struct reply *r, int64_t v);
void reply_str(struct reply *r, const char *s, size_t n);
void reply_cstr(struct reply *r, const char *s);
void reply_arr(struct reply *r, uint32_t count);
void reply_map(struct reply *r, uint32_t pairs);
void reply_set(struct reply *r, uint32_t count);
void reply_push(struct reply *r, uint32_t count);
void reply_nil(struct reply *r);
void reply_bool(struct reply *r, bool v);
void reply_double(struct reply *r, double v);
/* A string made with printf. */
void reply_fmt(struct reply *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A short status line: OK, PONG. No CR/LF. */
void reply_status(struct reply *r, const char *s);
/* [a, b]: the shape of every "value and total" reply. */
void reply_pair(struct reply *r, uint64_t a, uint64_t b);

/* An error reply with code (enum ur_err); the text protocol prefixes the
 * code's word (ERR, NOAUTH, ...). */
void reply_err(struct reply *r, uint16_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void reply_verr(struct reply *r, uint16_t code, const char *fmt, va_list ap);

/*
 * Arrays whose length is known only after the elements: reply_arr_defer
 * returns a mark, the elements follow, reply_arr_finish writes the count.
 */
size_t reply_arr_defer(struct reply *r);
void reply_arr_finish(struct reply *r, size_t mark, uint32_t count);
/* The same for a map of `pairs` key-value pairs (defer as for arrays). */
void reply_map_finish(struct reply *r, size_t mark, uint32_t pairs);
/* Whether the reply is RESP3 (a map is a map there, not a flat array). */
static inline bool reply_resp3(const struct reply *r)
{
    return r->proto == REPLY_RESP3;
}

#endif
