/*
 * resp.h - the RESP2 text codec, pure: buffers in, status out, no I/O.
 * The server parses requests (multibulk and inline) and encodes replies; the
 * benchmark and tests encode requests and parse replies (of unreadd and of
 * Redis).
 */
#ifndef UR_RESP_H
#define UR_RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "frame.h" /* struct ur_limits */
#include "proto.h"

/*
 * Parses one request from buf[0..len).
 * Multibulk (first byte '*'): "*<n>\r\n" then n times "$<len>\r\n<bytes>\r\n";
 * 1 <= n <= max_args + 1, the lens together at most max_frame (a request's
 * payload, as a binary frame's body), CRLF exactly.
 * Inline (anything else): one line ended by "\n" or "\r\n", split on spaces
 * and tabs; a line with no argument is consumed and reported as argc 0
 * (the caller skips it); at most max_inline bytes and max_args + 1 words.
 * A word starting with a double or single quote runs to the next same quote
 * (which must end the line or be followed by a blank), so "a b" is one
 * argument and "" an empty one. There are no escapes (a backslash is an
 * ordinary byte) so that every argument stays a slice of buf; a quote inside
 * a word is ordinary too. An unclosed quote is INVALID.
 *   OK        args[0..*argc) filled, args[0] is the command name (strings
 *             point into buf); *consumed = bytes used.
 *   NEED_MORE *hint = total bytes needed before the next attempt can
 *             succeed (at least len + 1).
 *   INVALID   a malformed multibulk header, length or terminator.
 *   TOO_BIG   n or the bulk lengths over the limits, or an inline line longer
 *             than max_inline (decided before the bytes arrive).
 * `args` must hold lim->max_args + 1 entries.
 */
enum ur_parse ur_resp_parse_request(const char *buf, size_t len,
                                    const struct ur_limits *lim,
                                    struct ur_arg *args, uint32_t *argc,
                                    size_t *consumed, size_t *hint);

/* Reply encoders (server). 0, or -1 on allocation failure. */
int ur_resp_put_int(struct ur_buf *b, uint64_t v);
int ur_resp_put_str(struct ur_buf *b, const char *s, size_t n);
int ur_resp_put_arr(struct ur_buf *b, uint32_t count);
/* "*2\r\n:<x>\r\n:<y>\r\n", a pair of integers (CNT.INCR's value and
 * total, ...) in one reservation; x and y are written as put_int does. */
int ur_resp_put_int_pair(struct ur_buf *b, uint64_t x, uint64_t y);
int ur_resp_put_nil(struct ur_buf *b);
/* "+<s>\r\n"; s must not contain CR or LF. */
int ur_resp_put_status(struct ur_buf *b, const char *s, size_t n);
/* "-<prefix> <msg>\r\n"; CR/LF in msg are replaced by spaces. */
int ur_resp_put_err(struct ur_buf *b, const char *prefix, const char *msg,
                    size_t n);

/*
 * RESP3 (HELLO 3) and the signed integer. put_int above writes v as an
 * integer whatever its size: the server's reply writer (server/reply.c)
 * decides what a value past INT64_MAX becomes (a RESP2 bulk string, a
 * RESP3 big number).
 *   put_i64      ":<v>" signed
 *   put_agg      "<type><n>": '*' array, '%' map (n pairs), '~' set,
 *                '>' push
 *   put_null3    "_"
 *   put_bool3    "#t" / "#f"
 *   put_double3  ",<v>" (",inf", ",-inf", ",nan")
 *   put_bignum3  "(<digits>"
 * Each line ends with CRLF. 0, or -1 on allocation failure.
 */
int ur_resp_put_i64(struct ur_buf *b, int64_t v);
int ur_resp_put_agg(struct ur_buf *b, char type, uint64_t n);
int ur_resp_put_null3(struct ur_buf *b);
int ur_resp_put_bool3(struct ur_buf *b, bool v);
int ur_resp_put_double3(struct ur_buf *b, double v);
int ur_resp_put_bignum3(struct ur_buf *b, uint64_t v);

/* Request encoder (bench, tests): a multibulk of argc strings. */
int ur_resp_put_request(struct ur_buf *b, uint32_t argc,
                        const char *const *argv, const size_t *lens);

/*
 * Parses one complete reply (any nesting up to UR_MAX_DEPTH) from
 * buf[0..len), RESP2 or RESP3. On OK, *consumed is its size, *type its
 * first byte ('+', '-', ':', '$', '*', and in RESP3 '%', '~', '>', '_',
 * '#', ',', '(', '=') and, when type is ':', *num the integer (for '*',
 * '%', '~', '>' the element or pair count, for '$' and '=' the length, -1
 * for a RESP2 nil). Bulk lengths and counts are capped by max_bulk
 * (TOO_BIG). RESP3 attributes ('|') are INVALID.
 */
enum ur_parse ur_resp_parse_reply(const char *buf, size_t len,
                                  uint32_t max_bulk, size_t *consumed,
                                  char *type, int64_t *num);

#endif
