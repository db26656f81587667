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

enum reply_proto { REPLY_RESP = 1, REPLY_BIN = 2 };

struct reply {
    struct ur_buf *out;
    uint8_t proto;    /* enum reply_proto */
    uint16_t status;  /* enum ur_err of the reply, 0 = OK */
    uint32_t id;      /* binary request id */
    size_t hdr_off;   /* binary: offset of the frame header in out */
    size_t start;     /* out->len when the reply began */
    bool oom;         /* an allocation failed: reply_end sends an error */
    bool close_after; /* connection closes after this reply (QUIT, ...) */
};

/* Starts a reply to request `id` (binary; ignored for RESP) in out. */
void reply_begin(struct reply *r, struct ur_buf *out, enum reply_proto proto,
                 uint32_t id);
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

void reply_int(struct reply *r, uint64_t v);
void reply_str(struct reply *r, const char *s, size_t n);
void reply_cstr(struct reply *r, const char *s);
void reply_arr(struct reply *r, uint32_t count);
void reply_nil(struct reply *r);
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

#endif
