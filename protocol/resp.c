/*
 * resp.c - the RESP2 codec. Requests arrive as multibulk (every client
 * library) or inline lines (telnet, nc); replies are composed here for the
 * server and parsed for the benchmark and tests.
 *
 * The request parser is the hot path of the text protocol. It is restartable
 * from the first byte (no state between calls: the caller keeps the bytes and
 * calls again once *hint bytes are buffered), never allocates, and touches
 * each header byte once and each bulk payload not at all beyond its CRLF.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "resp.h"

/*
 * Longest "<digits>\r\n" accepted after '*', '$' or ':'. A header line is
 * refused (INVALID) as soon as this many bytes arrive without its CR, so a
 * peer cannot make the parser wait on an endless number.
 */
#define NUM_LINE_MAX 32

/* "$0\r\n\r\n": the fewest bytes one more multibulk argument can take. */
#define BULK_MIN 6

static inline size_t hint_of(uint64_t need)
{
    return need > SIZE_MAX ? SIZE_MAX : (size_t)need;
}

/*
 * Reads "<digits>\r\n" from p[0..avail): strict digits, no sign, no leading
 * zero, exact CRLF. OK: *v the value (saturated at UINT64_MAX, so a huge
 * number is reported as over the caller's limit, not wrapped) and *used the
 * bytes including CRLF. NEED_MORE: a valid prefix. INVALID: anything else.
 */
static enum ur_parse read_count(const char *p, size_t avail, uint64_t *v,
                                size_t *used)
{
    const unsigned char *u = (const unsigned char *)p;
    size_t lim = avail < NUM_LINE_MAX ? avail : NUM_LINE_MAX;
    uint64_t n = 0;
    size_t i;

    for (i = 0; i < lim; i++) {
        uint32_t d = (uint32_t)u[i] - '0';

        if (d <= 9) {
            if (i == 1 && u[0] == '0')
                return UR_PARSE_INVALID;
            n = n > (UINT64_MAX - 9) / 10 ? UINT64_MAX : n * 10 + d;
            continue;
        }
        if (u[i] != '\r' || i == 0)
            return UR_PARSE_INVALID;
        if (i + 1 == avail)
            return UR_PARSE_NEED_MORE;
        if (u[i + 1] != '\n')
            return UR_PARSE_INVALID;
        *v = n;
        *used = i + 2;
        return UR_PARSE_OK;
    }
    return avail >= NUM_LINE_MAX ? UR_PARSE_INVALID : UR_PARSE_NEED_MORE;
}

/*
 * The usual header, a count or length of one or two digits with its CRLF
 * all there, read without read_count's loop. false: anything else (longer,
 * partial, malformed), which read_count then decides.
 */
static inline bool short_count(const char *p, size_t avail, uint64_t *v,
                               size_t *used)
{
    const unsigned char *u = (const unsigned char *)p;
    uint32_t d0, d1;

    if (avail < 3 || (d0 = (uint32_t)u[0] - '0') > 9)
        return false;
    if (u[1] == '\r' && u[2] == '\n') {
        *v = d0;
        *used = 3;
        return true;
    }
    if (avail < 4 || d0 == 0 || (d1 = (uint32_t)u[1] - '0') > 9 ||
        u[2] != '\r' || u[3] != '\n')
        return false;
    *v = d0 * 10 + d1;
    *used = 4;
    return true;
}

static enum ur_parse parse_multibulk(const char *buf, size_t len,
                                     const struct ur_limits *lim,
                                     struct ur_arg *args, uint32_t *argc,
                                     size_t *consumed, size_t *hint)
{
    enum ur_parse st;
    uint64_t n, blen, payload = 0;
    size_t pos, used;
    uint32_t i;

    if (!short_count(buf + 1, len - 1, &n, &used)) {
        st = read_count(buf + 1, len - 1, &n, &used);
        if (st == UR_PARSE_NEED_MORE)
            goto need_more;
        if (st != UR_PARSE_OK)
            return st;
    }
    if (n < 1)
        return UR_PARSE_INVALID;
    if (n > (uint64_t)lim->max_args + 1)
        return UR_PARSE_TOO_BIG;
    pos = 1 + used;

    for (i = 0; i < n; i++) {
        if (pos == len) {
            *hint = hint_of((uint64_t)pos + BULK_MIN + (n - i - 1) * BULK_MIN);
            return UR_PARSE_NEED_MORE;
        }
        if (buf[pos] != '$')
            return UR_PARSE_INVALID;
        if (!short_count(buf + pos + 1, len - pos - 1, &blen, &used)) {
            st = read_count(buf + pos + 1, len - pos - 1, &blen, &used);
            if (st == UR_PARSE_NEED_MORE)
                goto need_more;
            if (st != UR_PARSE_OK)
                return st;
        }
        /* The bulks together, like a binary frame's body, fit max_frame:
         * else max_args bulks of max_frame bytes each could be buffered. */
        if (blen > lim->max_frame - payload)
            return UR_PARSE_TOO_BIG;
        payload += blen;
        pos += 1 + used;
        if (len - pos < blen + 2) {
            if (len - pos > blen && buf[pos + blen] != '\r')
                return UR_PARSE_INVALID;
            *hint = hint_of((uint64_t)pos + blen + 2 + (n - i - 1) * BULK_MIN);
            return UR_PARSE_NEED_MORE;
        }
        if (buf[pos + blen] != '\r' || buf[pos + blen + 1] != '\n')
            return UR_PARSE_INVALID;
        args[i].kind = UR_ARG_STR;
        args[i].len = (uint32_t)blen;
        args[i].str = buf + pos;
        args[i].num = 0;
        pos += blen + 2;
    }
    *argc = (uint32_t)n;
    *consumed = pos;
    return UR_PARSE_OK;

need_more:
    *hint = len + 1;
    return UR_PARSE_NEED_MORE;
}

static inline bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/*
 * Inline: the line is found with memchr, then split in place. A word that
 * starts with a double or single quote runs to the next same quote, which
 * must end the line or be followed by a blank; there are no escapes, so every
 * argument stays a slice of the input (see resp.h).
 */
static enum ur_parse parse_inline(const char *buf, size_t len,
                                  const struct ur_limits *lim,
                                  struct ur_arg *args, uint32_t *argc,
                                  size_t *consumed, size_t *hint)
{
    uint64_t max_words = (uint64_t)lim->max_args + 1;
    size_t scan = len <= lim->max_inline ? len : (size_t)lim->max_inline + 1;
    const char *nl = memchr(buf, '\n', scan);
    const char *p = buf, *end;
    uint32_t n = 0;

    if (nl == NULL) {
        if (len > lim->max_inline)
            return UR_PARSE_TOO_BIG;
        *hint = len + 1;
        return UR_PARSE_NEED_MORE;
    }
    end = nl;
    if (end > buf && end[-1] == '\r')
        end--;

    for (;;) {
        const char *s;

        while (p < end && is_blank(*p))
            p++;
        if (p == end)
            break;
        if (n == max_words)
            return UR_PARSE_TOO_BIG;
        if (*p == '"' || *p == '\'') {
            const char *close = memchr(p + 1, *p, (size_t)(end - p - 1));

            if (close == NULL)
                return UR_PARSE_INVALID;
            if (close + 1 < end && !is_blank(close[1]))
                return UR_PARSE_INVALID;
            s = p + 1;
            p = close + 1;
            args[n].len = (uint32_t)(close - s);
        } else {
            s = p;
            while (p < end && !is_blank(*p))
                p++;
            args[n].len = (uint32_t)(p - s);
        }
        args[n].kind = UR_ARG_STR;
        args[n].str = s;
        args[n].num = 0;
        n++;
    }
    *argc = n;
    *consumed = (size_t)(nl - buf) + 1;
    return UR_PARSE_OK;
}

enum ur_parse ur_resp_parse_request(const char *buf, size_t len,
                                    const struct ur_limits *lim,
                                    struct ur_arg *args, uint32_t *argc,
                                    size_t *consumed, size_t *hint)
{
    *argc = 0;
    if (len == 0) {
        *hint = 1;
        return UR_PARSE_NEED_MORE;
    }
    if (buf[0] == '*')
        return parse_multibulk(buf, len, lim, args, argc, consumed, hint);
    return parse_inline(buf, len, lim, args, argc, consumed, hint);
}

/* ---- reply encoding ---------------------------------------------------- */

/* Appends <c><decimal v>\r\n. */
static int put_num_line(struct ur_buf *b, char c, uint64_t v)
{
    char *p;
    size_t n;

    if (ur_buf_reserve(b, 1 + 21 + 2) != 0)
        return -1;
    p = b->data + b->len;
    p[0] = c;
    n = ur_fmt_u64(p + 1, v);
    p[1 + n] = '\r';
    p[2 + n] = '\n';
    b->len += 3 + n;
    return 0;
}

int ur_resp_put_int(struct ur_buf *b, uint64_t v)
{
    return put_num_line(b, ':', v);
}

int ur_resp_put_str(struct ur_buf *b, const char *s, size_t n)
{
    char *p;

    if (n > SIZE_MAX - 32 || ur_buf_reserve(b, 1 + 21 + 2 + n + 2) != 0)
        return -1;
    (void)put_num_line(b, '$', n); /* room reserved: cannot fail */
    p = b->data + b->len;
    if (n > 0)
        memcpy(p, s, n);
    p[n] = '\r';
    p[n + 1] = '\n';
    b->len += n + 2;
    return 0;
}

int ur_resp_put_arr(struct ur_buf *b, uint32_t count)
{
    return put_num_line(b, '*', count);
}

int ur_resp_put_int_pair(struct ur_buf *b, uint64_t x, uint64_t y)
{
    char *p;

    /* ur_fmt_u64 writes up to 20 digits and a NUL: 21 bytes each. */
    if (ur_buf_reserve(b, 5 + 21 + 3 + 21 + 2) != 0)
        return -1;
    p = b->data + b->len;
    memcpy(p, "*2\r\n:", 5);
    p += 5;
    p += ur_fmt_u64(p, x);
    memcpy(p, "\r\n:", 3);
    p += 3;
    p += ur_fmt_u64(p, y);
    p[0] = '\r';
    p[1] = '\n';
    b->len = (size_t)(p + 2 - b->data);
    return 0;
}

int ur_resp_put_nil(struct ur_buf *b)
{
    return ur_buf_append(b, "$-1\r\n", 5);
}

int ur_resp_put_status(struct ur_buf *b, const char *s, size_t n)
{
    char *p;

    if (n > SIZE_MAX - 3 || ur_buf_reserve(b, n + 3) != 0)
        return -1;
    p = b->data + b->len;
    p[0] = '+';
    if (n > 0)
        memcpy(p + 1, s, n);
    p[n + 1] = '\r';
    p[n + 2] = '\n';
    b->len += n + 3;
    return 0;
}

/* An error line must stay one line whatever the message holds (it may quote
 * client input), so CR and LF become spaces. Without a message, no space
 * follows the prefix. */
int ur_resp_put_err(struct ur_buf *b, const char *prefix, const char *msg,
                    size_t n)
{
    size_t plen = strlen(prefix);
    size_t i, total;
    char *p;

    if (n > SIZE_MAX - plen - 4)
        return -1;
    total = 1 + plen + (n > 0 ? 1 + n : 0) + 2;
    if (ur_buf_reserve(b, total) != 0)
        return -1;
    p = b->data + b->len;
    *p++ = '-';
    memcpy(p, prefix, plen);
    p += plen;
    if (n > 0) {
        *p++ = ' ';
        memcpy(p, msg, n);
        for (i = 0; i < n; i++)
            if (p[i] == '\r' || p[i] == '\n')
                p[i] = ' ';
        p += n;
    }
    p[0] = '\r';
    p[1] = '\n';
    b->len += total;
    return 0;
}

int ur_resp_put_i64(struct ur_buf *b, int64_t v)
{
    char *p;
    size_t n;

    if (v >= 0)
        return put_num_line(b, ':', (uint64_t)v);
    if (ur_buf_reserve(b, 2 + 21 + 2) != 0)
        return -1;
    p = b->data + b->len;
    p[0] = ':';
    p[1] = '-';
    n = ur_fmt_u64(p + 2, 0 - (uint64_t)v);
    p[2 + n] = '\r';
    p[3 + n] = '\n';
    b->len += 4 + n;
    return 0;
}

int ur_resp_put_agg(struct ur_buf *b, char type, uint64_t n)
{
    return put_num_line(b, type, n);
}

int ur_resp_put_null3(struct ur_buf *b)
{
    return ur_buf_append(b, "_\r\n", 3);
}

int ur_resp_put_bool3(struct ur_buf *b, bool v)
{
    return ur_buf_append(b, v ? "#t\r\n" : "#f\r\n", 4);
}

int ur_resp_put_double3(struct ur_buf *b, double v)
{
    char line[48];
    int n;

    if (isnan(v))
        n = snprintf(line, sizeof(line), ",nan\r\n");
    else if (isinf(v))
        n = snprintf(line, sizeof(line), ",%sinf\r\n", v < 0 ? "-" : "");
    else
        n = snprintf(line, sizeof(line), ",%.17g\r\n", v);
    return ur_buf_append(b, line, (size_t)n);
}

int ur_resp_put_bignum3(struct ur_buf *b, uint64_t v)
{
    return put_num_line(b, '(', v);
}

int ur_resp_put_request(struct ur_buf *b, uint32_t argc,
                        const char *const *argv, const size_t *lens)
{
    size_t total = 1 + 21 + 2;
    size_t old = b->len;
    uint32_t i;

    for (i = 0; i < argc; i++) {
        if (lens[i] > SIZE_MAX - total - 32)
            return -1;
        total += 1 + 21 + 2 + lens[i] + 2;
    }
    if (ur_buf_reserve(b, total) != 0)
        return -1;
    /* Room for everything is reserved: none of these can fail. */
    if (ur_resp_put_arr(b, argc) != 0)
        goto error;
    for (i = 0; i < argc; i++)
        if (ur_resp_put_str(b, argv[i], lens[i]) != 0)
            goto error;
    return 0;

error:
    b->len = old;
    return -1;
}

/* ---- reply parsing ------------------------------------------------------ */

/* Reads "[-]<digits>\r\n" as read_count does, into a signed value. */
static enum ur_parse read_signed(const char *p, size_t avail, int64_t *v,
                                 size_t *used)
{
    bool neg = avail > 0 && p[0] == '-';
    enum ur_parse st;
    uint64_t m;

    st = read_count(p + neg, avail - neg, &m, used);
    if (st != UR_PARSE_OK)
        return st;
    if (m > (uint64_t)INT64_MAX + neg)
        return UR_PARSE_INVALID;
    *used += neg;
    *v = neg ? (int64_t)(0 - m) : (int64_t)m;
    return UR_PARSE_OK;
}

/*
 * Reads "<text>\r\n" at p[0..avail) for '+' and '-' lines: no CR or LF in the
 * text, at most max bytes of it (TOO_BIG past that, even before the CR).
 */
static enum ur_parse read_text_line(const char *p, size_t avail, uint32_t max,
                                    size_t *used)
{
    size_t scan = avail <= max ? avail : (size_t)max + 1;
    const char *cr = memchr(p, '\r', scan);

    if (cr == NULL) {
        if (avail > max)
            return UR_PARSE_TOO_BIG;
        if (memchr(p, '\n', avail) != NULL)
            return UR_PARSE_INVALID;
        return UR_PARSE_NEED_MORE;
    }
    if (memchr(p, '\n', (size_t)(cr - p)) != NULL)
        return UR_PARSE_INVALID;
    if ((size_t)(cr - p) + 1 == avail)
        return UR_PARSE_NEED_MORE;
    if (cr[1] != '\n')
        return UR_PARSE_INVALID;
    *used = (size_t)(cr - p) + 2;
    return UR_PARSE_OK;
}

/*
 * Walks the reply tree without recursion: need[d] counts the values still due
 * at depth d. Every value takes at least 3 bytes, so the walk ends (NEED_MORE)
 * as soon as the input runs out, whatever counts the headers claim.
 */
enum ur_parse ur_resp_parse_reply(const char *buf, size_t len,
                                  uint32_t max_bulk, size_t *consumed,
                                  char *type, int64_t *num)
{
    uint64_t need[UR_MAX_DEPTH + 1];
    uint32_t top = 0;
    size_t pos = 0, used;
    bool first = true;

    need[0] = 1;
    for (;;) {
        enum ur_parse st;
        int64_t v = 0;
        char c;

        while (need[top] == 0) {
            if (top == 0) {
                *consumed = pos;
                return UR_PARSE_OK;
            }
            top--;
        }
        need[top]--;
        if (pos == len)
            return UR_PARSE_NEED_MORE;
        c = buf[pos];
        switch (c) {
        case '+':
        case '-':
        case ',': /* RESP3 double */
        case '(': /* RESP3 big number */
        case '_': /* RESP3 null: an empty line */
        case '#': /* RESP3 boolean */
            st = read_text_line(buf + pos + 1, len - pos - 1, max_bulk, &used);
            if (st == UR_PARSE_OK &&
                ((c == '_' && used != 2) ||
                 (c == '#' && (used != 3 ||
                               (buf[pos + 1] != 't' && buf[pos + 1] != 'f'))) ||
                 ((c == ',' || c == '(') && used == 2)))
                return UR_PARSE_INVALID;
            break;
        case ':':
        case '$':
        case '*':
        case '=': /* RESP3 verbatim string */
        case '%': /* RESP3 map */
        case '~': /* RESP3 set */
        case '>': /* RESP3 push */
            st = read_signed(buf + pos + 1, len - pos - 1, &v, &used);
            break;
        default:
            return UR_PARSE_INVALID;
        }
        if (st != UR_PARSE_OK)
            return st;
        pos += 1 + used;
        if (c == '$' || c == '*' || c == '=' || c == '%' || c == '~' ||
            c == '>') {
            if (v < -1 || (v == -1 && c != '$' && c != '*'))
                return UR_PARSE_INVALID;
            if (v > (int64_t)max_bulk)
                return UR_PARSE_TOO_BIG;
        }
        if ((c == '$' || c == '=') && v >= 0) {
            uint64_t blen = (uint64_t)v;

            if (len - pos < blen + 2)
                return UR_PARSE_NEED_MORE;
            if (buf[pos + blen] != '\r' || buf[pos + blen + 1] != '\n')
                return UR_PARSE_INVALID;
            pos += blen + 2;
        }
        if ((c == '*' || c == '%' || c == '~' || c == '>') && v >= 0) {
            if (top == UR_MAX_DEPTH)
                return UR_PARSE_INVALID;
            if (v > 0)
                need[++top] = (uint64_t)v * (c == '%' ? 2 : 1);
        }
        if (first) {
            *type = c;
            *num = v;
            first = false;
        }
    }
}
