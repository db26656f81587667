/*
 * frame.c - the binary protocol codec. The wire format is in frame.h and
 * docs/PROTOCOL.md.
 *
 * Integers are assembled byte by byte (little-endian) rather than cast from
 * the buffer: frames start at any offset of a connection buffer, so loads are
 * unaligned, and the byte form is defined behaviour on every host; compilers
 * turn it into single loads and stores on little-endian machines.
 *
 * Receivers ignore the reserved header fields (request and reply flags, reply
 * argc): the request's flags are handed to the caller, who may refuse them.
 */
#include <string.h>

#include "frame.h"

/* Smallest argument: kind byte + u32 length of an empty string. */
#define ARG_MIN 5

static inline uint16_t rd16(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return (uint16_t)(u[0] | (uint16_t)(u[1] << 8));
}

static inline uint32_t rd32(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 |
           (uint32_t)u[3] << 24;
}

static inline uint64_t rd64(const char *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static inline void wr16(char *p, uint16_t v)
{
    p[0] = (char)(v & 0xFF);
    p[1] = (char)(v >> 8);
}

static inline void wr32(char *p, uint32_t v)
{
    p[0] = (char)(v & 0xFF);
    p[1] = (char)((v >> 8) & 0xFF);
    p[2] = (char)((v >> 16) & 0xFF);
    p[3] = (char)(v >> 24);
}

static inline void wr64(char *p, uint64_t v)
{
    wr32(p, (uint32_t)v);
    wr32(p + 4, (uint32_t)(v >> 32));
}

void ur_frame_hdr_decode(const char *p, struct ur_frame_hdr *h)
{
    h->magic = (uint8_t)p[0];
    h->version = (uint8_t)p[1];
    h->op = rd16(p + 2);
    h->id = rd32(p + 4);
    h->len = rd32(p + 8);
    h->argc = rd16(p + 12);
    h->flags = rd16(p + 14);
}

/*
 * The part of header checking shared by requests and replies: magic and
 * version are judged as soon as their byte is there, so a text client that
 * hits the binary port, or garbage, fails on its first byte instead of
 * waiting for a full header.
 */
static enum ur_parse hdr_check(const char *buf, size_t len,
                               struct ur_frame_hdr *h, size_t *hint)
{
    if (len >= 1 && (uint8_t)buf[0] != UR_FRAME_MAGIC)
        return UR_PARSE_INVALID;
    if (len >= 2 && (uint8_t)buf[1] != UR_FRAME_VERSION)
        return UR_PARSE_INVALID;
    if (len < UR_FRAME_HDR) {
        *hint = UR_FRAME_HDR;
        return UR_PARSE_NEED_MORE;
    }
    ur_frame_hdr_decode(buf, h);
    return UR_PARSE_OK;
}

size_t ur_frame_peek(const char *buf, size_t len, uint16_t *op, uint64_t *first,
                     bool *has_first)
{
    struct ur_frame_hdr h;
    size_t total;

    *has_first = false;
    if (len < UR_FRAME_HDR || (uint8_t)buf[0] != UR_FRAME_MAGIC)
        return 0;
    ur_frame_hdr_decode(buf, &h);
    total = (size_t)UR_FRAME_HDR + h.len;
    if (total > len)
        return 0;
    *op = h.op;
    if (h.op != UR_FRAME_OP_BATCH && h.argc > 0 && h.len >= 9 &&
        (uint8_t)buf[UR_FRAME_HDR] == UR_ARG_INT) {
        *first = rd64(buf + UR_FRAME_HDR + 1);
        *has_first = true;
    }
    return total;
}

/* Reads one argument at *pp into *a, advancing *pp; false if it overruns
 * end or its kind is unknown. */
static bool read_arg(const char **pp, const char *end, struct ur_arg *a)
{
    const char *p = *pp;

    if (end - p < 1)
        return false;
    switch ((uint8_t)*p++) {
    case UR_ARG_INT:
        if (end - p < 8)
            return false;
        a->kind = UR_ARG_INT;
        a->num = rd64(p);
        a->len = 0;
        a->str = NULL;
        p += 8;
        break;
    case UR_ARG_STR:
        if (end - p < 4)
            return false;
        a->kind = UR_ARG_STR;
        a->len = rd32(p);
        p += 4;
        if ((size_t)(end - p) < a->len)
            return false;
        a->str = p;
        a->num = 0;
        p += a->len;
        break;
    default:
        return false;
    }
    *pp = p;
    return true;
}

/*
 * The body of a batch frame whose header h is in buf: waits for the whole
 * body, then walks every sub-request once (each takes at least its 4-byte
 * header and each argument at least 5 bytes, so the walk is bounded by the
 * body length) without keeping the arguments: ur_batch_next parses them
 * again, one sub-request at a time, so the caller needs room for one
 * sub-request's arguments only.
 */
static enum ur_parse parse_batch(const char *buf, size_t len,
                                 const struct ur_limits *lim,
                                 const struct ur_frame_hdr *h,
                                 struct ur_frame_req *req, size_t *consumed,
                                 size_t *hint)
{
    size_t total = (size_t)UR_FRAME_HDR + h->len;
    const char *p, *end;
    struct ur_arg a;
    uint32_t i, j, max = 0;

    if ((uint64_t)h->argc * UR_FRAME_SUB_HDR > h->len)
        return UR_PARSE_INVALID;
    if (len < total) {
        *hint = total;
        return UR_PARSE_NEED_MORE;
    }
    p = buf + UR_FRAME_HDR;
    end = buf + total;
    for (i = 0; i < h->argc; i++) {
        uint16_t argc;

        if (end - p < UR_FRAME_SUB_HDR)
            return UR_PARSE_INVALID;
        argc = rd16(p + 2);
        p += UR_FRAME_SUB_HDR;
        if (argc > lim->max_args)
            return UR_PARSE_TOO_BIG;
        for (j = 0; j < argc; j++)
            if (!read_arg(&p, end, &a))
                return UR_PARSE_INVALID;
        if (argc > max)
            max = argc;
    }
    if (p != end)
        return UR_PARSE_INVALID;
    req->nsub = h->argc;
    req->sub_argc_max = max;
    req->body = buf + UR_FRAME_HDR;
    req->body_len = h->len;
    *consumed = total;
    return UR_PARSE_OK;
}

enum ur_parse ur_frame_parse_request(const char *buf, size_t len,
                                     const struct ur_limits *lim,
                                     struct ur_arg *args,
                                     struct ur_frame_req *req, size_t *consumed,
                                     size_t *hint)
{
    struct ur_frame_hdr h;
    enum ur_parse st;
    const char *p, *end;
    size_t total;
    uint32_t i;

    req->op = 0;
    req->id = 0;
    req->flags = 0;
    req->argc = 0;
    req->argv = args;
    req->nsub = 0;
    req->sub_argc_max = 0;
    req->body = NULL;
    req->body_len = 0;

    st = hdr_check(buf, len, &h, hint);
    if (st != UR_PARSE_OK)
        return st;
    req->id = h.id;
    req->op = h.op;
    req->flags = h.flags;
    if (h.len > lim->max_frame || h.argc > lim->max_args)
        return UR_PARSE_TOO_BIG;
    if (h.op == UR_FRAME_OP_BATCH)
        return parse_batch(buf, len, lim, &h, req, consumed, hint);
    /* Decidable from the header: the arguments cannot fit the body. */
    if ((uint64_t)h.argc * ARG_MIN > h.len)
        return UR_PARSE_INVALID;

    total = (size_t)UR_FRAME_HDR + h.len;
    if (len < total) {
        *hint = total;
        return UR_PARSE_NEED_MORE;
    }

    p = buf + UR_FRAME_HDR;
    end = buf + total;
    for (i = 0; i < h.argc; i++)
        if (!read_arg(&p, end, &args[i]))
            return UR_PARSE_INVALID;
    if (p != end)
        return UR_PARSE_INVALID;

    req->argc = h.argc;
    *consumed = total;
    return UR_PARSE_OK;
}

/* ---- encoding ---------------------------------------------------------- */

static int put_hdr(struct ur_buf *b, uint16_t op, uint32_t id, size_t *hdr_off)
{
    char *p;

    if (ur_buf_reserve(b, UR_FRAME_HDR) != 0)
        return -1;
    *hdr_off = b->len;
    p = b->data + b->len;
    p[0] = (char)UR_FRAME_MAGIC;
    p[1] = (char)UR_FRAME_VERSION;
    wr16(p + 2, op);
    wr32(p + 4, id);
    wr32(p + 8, 0);
    wr16(p + 12, 0);
    wr16(p + 14, 0);
    b->len += UR_FRAME_HDR;
    return 0;
}

/* Appends a tag byte, a u32 length and n bytes. Strings longer than a u32
 * cannot be framed and fail like an allocation. */
static int put_tagged(struct ur_buf *b, uint8_t tag, const char *s, size_t n)
{
    char *p;

    if (n > UINT32_MAX || ur_buf_reserve(b, 5 + n) != 0)
        return -1;
    p = b->data + b->len;
    p[0] = (char)tag;
    wr32(p + 1, (uint32_t)n);
    if (n > 0)
        memcpy(p + 5, s, n);
    b->len += 5 + n;
    return 0;
}

static int put_u64(struct ur_buf *b, uint8_t tag, uint64_t v)
{
    char *p;

    if (ur_buf_reserve(b, 9) != 0)
        return -1;
    p = b->data + b->len;
    p[0] = (char)tag;
    wr64(p + 1, v);
    b->len += 9;
    return 0;
}

/* Sets the body length of the frame begun at hdr_off to whatever was
 * appended since, and the u16 at `at` (argc or status) to v. */
static void patch_hdr(struct ur_buf *b, size_t hdr_off, size_t at, uint16_t v)
{
    char *p = b->data + hdr_off;

    wr32(p + 8, (uint32_t)(b->len - hdr_off - UR_FRAME_HDR));
    wr16(p + at, v);
}

int ur_frame_req_begin(struct ur_buf *b, uint16_t op, uint32_t id,
                       size_t *hdr_off)
{
    return put_hdr(b, op, id, hdr_off);
}

int ur_frame_put_arg_int(struct ur_buf *b, uint64_t v)
{
    return put_u64(b, UR_ARG_INT, v);
}

int ur_frame_put_arg_str(struct ur_buf *b, const char *s, size_t n)
{
    return put_tagged(b, UR_ARG_STR, s, n);
}

void ur_frame_req_end(struct ur_buf *b, size_t hdr_off, uint16_t argc)
{
    patch_hdr(b, hdr_off, 12, argc);
}

int ur_frame_put_sub_hdr(struct ur_buf *b, uint16_t op, uint16_t argc)
{
    if (ur_buf_reserve(b, UR_FRAME_SUB_HDR) != 0)
        return -1;
    wr16(b->data + b->len, op);
    wr16(b->data + b->len + 2, argc);
    b->len += UR_FRAME_SUB_HDR;
    return 0;
}

int ur_frame_put_args(struct ur_buf *b, uint32_t argc,
                      const struct ur_arg *argv)
{
    size_t mark = b->len;
    int rc = 0;

    for (uint32_t i = 0; i < argc && rc == 0; i++)
        rc = argv[i].kind == UR_ARG_INT
                 ? ur_frame_put_arg_int(b, argv[i].num)
                 : ur_frame_put_arg_str(b, argv[i].str, argv[i].len);
    if (rc != 0)
        b->len = mark;
    return rc;
}

size_t ur_frame_args_len(uint32_t argc, const struct ur_arg *argv)
{
    size_t n = 0;

    for (uint32_t i = 0; i < argc; i++)
        n += argv[i].kind == UR_ARG_INT ? 9 : ARG_MIN + (size_t)argv[i].len;
    return n;
}

int ur_frame_put_sub(struct ur_buf *b, uint16_t op, uint16_t argc,
                     const struct ur_arg *argv)
{
    size_t mark = b->len;

    if (ur_frame_put_sub_hdr(b, op, argc) != 0 ||
        ur_frame_put_args(b, argc, argv) != 0) {
        b->len = mark;
        return -1;
    }
    return 0;
}

void ur_batch_reader_init(struct ur_batch_reader *r, const char *body,
                          size_t len, uint32_t nsub)
{
    r->p = body;
    r->end = len > 0 ? body + len : body; /* an empty body may be NULL */
    r->left = nsub;
}

bool ur_batch_next(struct ur_batch_reader *r, struct ur_arg *args, uint32_t cap,
                   struct ur_frame_sub *sub)
{
    const char *p = r->p;
    uint32_t i;

    if (r->left == 0 || r->end - p < UR_FRAME_SUB_HDR)
        return false;
    sub->op = rd16(p);
    sub->argc = rd16(p + 2);
    sub->argv = args;
    if (sub->argc > cap)
        return false;
    p += UR_FRAME_SUB_HDR;
    for (i = 0; i < sub->argc; i++)
        if (!read_arg(&p, r->end, &args[i]))
            return false;
    r->p = p;
    r->left--;
    return true;
}

int ur_frame_reply_begin(struct ur_buf *b, uint32_t id, size_t *hdr_off)
{
    return put_hdr(b, 0, id, hdr_off);
}

void ur_frame_reply_end(struct ur_buf *b, size_t hdr_off, uint16_t status)
{
    patch_hdr(b, hdr_off, 2, status);
}

int ur_frame_push_begin(struct ur_buf *b, size_t *hdr_off)
{
    if (put_hdr(b, 0, 0, hdr_off) != 0)
        return -1;
    wr16(b->data + *hdr_off + 14, UR_FRAME_FLAG_PUSH);
    return 0;
}

int ur_frame_put_sint(struct ur_buf *b, int64_t v)
{
    return put_u64(b, UR_VAL_SINT, (uint64_t)v);
}

int ur_frame_put_int(struct ur_buf *b, uint64_t v)
{
    return put_u64(b, UR_VAL_INT, v);
}

int ur_frame_put_str(struct ur_buf *b, const char *s, size_t n)
{
    return put_tagged(b, UR_VAL_STR, s, n);
}

int ur_frame_put_arr(struct ur_buf *b, uint32_t count)
{
    char *p;

    if (ur_buf_reserve(b, 5) != 0)
        return -1;
    p = b->data + b->len;
    p[0] = (char)UR_VAL_ARR;
    wr32(p + 1, count);
    b->len += 5;
    return 0;
}

int ur_frame_put_nil(struct ur_buf *b)
{
    char tag = (char)UR_VAL_NIL;
    return ur_buf_append(b, &tag, 1);
}

int ur_frame_put_status(struct ur_buf *b, const char *s, size_t n)
{
    return put_tagged(b, UR_VAL_STATUS, s, n);
}

int ur_frame_put_err(struct ur_buf *b, uint16_t code, const char *msg, size_t n)
{
    char *p;

    if (n > UINT32_MAX || ur_buf_reserve(b, 7 + n) != 0)
        return -1;
    p = b->data + b->len;
    p[0] = (char)UR_VAL_ERR;
    wr16(p + 1, code);
    wr32(p + 3, (uint32_t)n);
    if (n > 0)
        memcpy(p + 7, msg, n);
    b->len += 7 + n;
    return 0;
}

/* ---- reply parsing ------------------------------------------------------ */

/* Reads a u32 length and that many bytes at p; NULL if they overrun end. */
static const char *read_bytes(const char *p, const char *end, struct ur_val *v)
{
    if (end - p < 4)
        return NULL;
    v->len = rd32(p);
    p += 4;
    if ((size_t)(end - p) < v->len)
        return NULL;
    v->str = p;
    return p + v->len;
}

/* Reads one value at *pp, advancing it; false if the value overruns end or
 * its kind is unknown. Array elements are not read. */
static bool read_val(const char **pp, const char *end, struct ur_val *v)
{
    const char *p = *pp;

    if (end - p < 1)
        return false;
    v->kind = (uint8_t)*p++;
    v->code = 0;
    v->count = 0;
    v->len = 0;
    v->str = NULL;
    v->num = 0;
    switch (v->kind) {
    case UR_VAL_INT:
    case UR_VAL_SINT:
        if (end - p < 8)
            return false;
        v->num = rd64(p);
        p += 8;
        break;
    case UR_VAL_ARR:
        if (end - p < 4)
            return false;
        v->count = rd32(p);
        p += 4;
        break;
    case UR_VAL_NIL:
        break;
    case UR_VAL_ERR:
        if (end - p < 2)
            return false;
        v->code = rd16(p);
        p = read_bytes(p + 2, end, v);
        break;
    case UR_VAL_STR:
    case UR_VAL_STATUS:
        p = read_bytes(p, end, v);
        break;
    default:
        return false;
    }
    if (p == NULL)
        return false;
    *pp = p;
    return true;
}

/*
 * Walks the value tree without recursion: need[d] is how many values are
 * still due at depth d (need[0] = the one top-level value). Every value takes
 * at least one byte, so a count larger than the bytes left is refused at
 * once, and the walk is bounded by the body length whatever the counts say.
 */
static bool body_check(const char *p, const char *end, uint16_t status)
{
    uint32_t need[UR_MAX_DEPTH + 1];
    uint32_t top = 0;
    struct ur_val v;
    bool first = true;

    need[0] = 1;
    for (;;) {
        while (need[top] == 0) {
            if (top == 0)
                return p == end;
            top--;
        }
        need[top]--;
        if (!read_val(&p, end, &v))
            return false;
        if (first) {
            /* status and top-level error go together, with one code */
            if (status != 0 && (v.kind != UR_VAL_ERR || v.code != status))
                return false;
            if (status == 0 && v.kind == UR_VAL_ERR)
                return false;
            first = false;
        }
        if (v.kind == UR_VAL_ARR) {
            if (top == UR_MAX_DEPTH || v.count > (size_t)(end - p))
                return false;
            if (v.count > 0)
                need[++top] = v.count;
        }
    }
}

enum ur_parse ur_frame_parse_reply(const char *buf, size_t len,
                                   uint32_t max_frame, struct ur_frame_hdr *h,
                                   size_t *consumed, size_t *hint)
{
    enum ur_parse st;
    size_t total;

    memset(h, 0, sizeof(*h));
    st = hdr_check(buf, len, h, hint);
    if (st != UR_PARSE_OK)
        return st;
    if (h->len > max_frame)
        return UR_PARSE_TOO_BIG;
    if (h->len == 0)
        return UR_PARSE_INVALID;
    total = (size_t)UR_FRAME_HDR + h->len;
    if (len < total) {
        *hint = total;
        return UR_PARSE_NEED_MORE;
    }
    if (!body_check(buf + UR_FRAME_HDR, buf + total, h->op))
        return UR_PARSE_INVALID;
    *consumed = total;
    return UR_PARSE_OK;
}

void ur_val_reader_init(struct ur_val_reader *r, const char *body, size_t len)
{
    r->p = body;
    r->end = body + len;
}

bool ur_val_next(struct ur_val_reader *r, struct ur_val *v)
{
    return read_val(&r->p, r->end, v);
}
