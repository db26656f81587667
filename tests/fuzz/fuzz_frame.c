/*
 * fuzz_frame.c - libFuzzer target for the binary codec: the input is fed to
 * the request parser and to the reply parser, each looping over pipelined
 * frames as the server and the client do, and every reply accepted is walked
 * with the value reader.
 *
 * Besides "no crash, no out-of-bounds read", it checks the contracts the
 * callers rely on: consumed within the input, a NEED_MORE hint beyond the
 * input, a frame's result not depending on bytes after it, prefixes of a
 * good frame asking for more (never INVALID) with a hint not past its end,
 * and a request re-encoded by the encoders giving the same bytes; a batch
 * frame (op 0xFF01) read back sub-request by sub-request and re-encoded.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Iprotocol \
 *       tests/fuzz/fuzz_frame.c protocol/(all .c) -o fuzz_frame
 *   ./fuzz_frame tests/fuzz/corpus/frame
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct ur_limits lim = {
    .max_frame = 1 << 16, .max_args = MAX_ARGS, .max_inline = 1024};

#define ASSERT(c)                                                              \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

static volatile uint64_t sink;

/*
 * A batch frame: no plain arguments, nsub sub-requests that the reader
 * yields in full (each argument inside the frame), none with more than
 * sub_argc_max arguments; each is re-encoded into b.
 */
static void reencode_batch(struct ur_buf *b, const char *p, size_t c,
                           const struct ur_frame_req *req)
{
    static struct ur_arg sub_args[MAX_ARGS];
    struct ur_batch_reader rd;
    struct ur_frame_sub sub;
    uint32_t n = 0, most = 0, i;

    ASSERT(req->argc == 0 && req->nsub <= lim.max_args);
    ASSERT(req->body == p + UR_FRAME_HDR && req->body_len == c - UR_FRAME_HDR);
    ur_batch_reader_init(&rd, req->body, req->body_len, req->nsub);
    while (ur_batch_next(&rd, sub_args, req->sub_argc_max, &sub)) {
        for (i = 0; i < sub.argc; i++)
            ASSERT(sub_args[i].kind == UR_ARG_INT ||
                   (sub_args[i].str >= req->body &&
                    sub_args[i].str + sub_args[i].len <= p + c));
        ASSERT(ur_frame_put_sub(b, sub.op, (uint16_t)sub.argc, sub_args) == 0);
        most = sub.argc > most ? sub.argc : most;
        n++;
    }
    ASSERT(n == req->nsub && rd.p == rd.end && most == req->sub_argc_max);
}

static void check_request(const char *p, size_t c,
                          const struct ur_frame_req *req,
                          const struct ur_arg *args)
{
    struct ur_arg again[MAX_ARGS];
    struct ur_frame_req r2;
    struct ur_buf b;
    size_t consumed, hint, off;
    uint32_t i;

    /* The same frame alone: same result; every shorter prefix: NEED_MORE. */
    ASSERT(ur_frame_parse_request(p, c, &lim, again, &r2, &consumed, &hint) ==
           UR_PARSE_OK);
    ASSERT(consumed == c && r2.argc == req->argc);
    ASSERT(ur_frame_parse_request(p, c - 1, &lim, again, &r2, &consumed,
                                  &hint) == UR_PARSE_NEED_MORE);
    ASSERT(hint > c - 1 && hint <= c);
    ASSERT(ur_frame_parse_request(p, c / 2, &lim, again, &r2, &consumed,
                                  &hint) == UR_PARSE_NEED_MORE);
    ASSERT(hint > c / 2 && hint <= c);

    /* A glance (ur_frame_peek, the server's prefetch hint) agrees with the
     * parse: the frame's length, its op, its first u64 argument; a prefix
     * is not a whole frame. */
    {
        uint16_t op = 0;
        uint64_t first = 0;
        bool has = false;

        ASSERT(ur_frame_peek(p, c, &op, &first, &has) == c);
        ASSERT(op == req->op);
        ASSERT(has == (req->op != UR_FRAME_OP_BATCH && req->argc > 0 &&
                       args[0].kind == UR_ARG_INT));
        ASSERT(!has || first == args[0].num);
        ASSERT(ur_frame_peek(p, c - 1, &op, &first, &has) == 0 && !has);
    }

    /* Re-encoding gives the same bytes (the reserved flags aside). */
    ur_buf_init(&b);
    ASSERT(ur_frame_req_begin(&b, req->op, req->id, &off) == 0);
    if (req->op == UR_FRAME_OP_BATCH)
        reencode_batch(&b, p, c, req);
    for (i = 0; i < req->argc; i++) {
        const struct ur_arg *a = &args[i];

        ASSERT(a->kind == UR_ARG_INT || a->kind == UR_ARG_STR);
        if (a->kind == UR_ARG_INT) {
            ASSERT(ur_frame_put_arg_int(&b, a->num) == 0);
            sink += a->num;
        } else {
            ASSERT(a->str >= p + UR_FRAME_HDR && a->str + a->len <= p + c);
            if (a->len > 0)
                sink += (uint8_t)a->str[0] + (uint8_t)a->str[a->len - 1];
            ASSERT(ur_frame_put_arg_str(&b, a->str, a->len) == 0);
        }
    }
    ur_frame_req_end(
        &b, off,
        (uint16_t)(req->op == UR_FRAME_OP_BATCH ? req->nsub : req->argc));
    ASSERT(b.len == c);
    ASSERT(memcmp(b.data, p, 14) == 0);
    ASSERT(memcmp(b.data + UR_FRAME_HDR, p + UR_FRAME_HDR, c - UR_FRAME_HDR) ==
           0);
    ur_buf_deinit(&b);
}

static void check_reply(const char *p, size_t c, const struct ur_frame_hdr *h)
{
    struct ur_frame_hdr h2;
    struct ur_val_reader r;
    struct ur_val v;
    size_t consumed, hint, n = 0;

    ASSERT(c == UR_FRAME_HDR + (size_t)h->len);
    ASSERT(ur_frame_parse_reply(p, c, lim.max_frame, &h2, &consumed, &hint) ==
           UR_PARSE_OK);
    ASSERT(ur_frame_parse_reply(p, c - 1, lim.max_frame, &h2, &consumed,
                                &hint) == UR_PARSE_NEED_MORE);
    ASSERT(hint > c - 1 && hint <= c);

    /* A validated body reads to its end, one value per byte at most. */
    ur_val_reader_init(&r, p + UR_FRAME_HDR, h->len);
    while (ur_val_next(&r, &v)) {
        ASSERT(v.kind >= UR_VAL_INT && v.kind <= UR_VAL_SINT);
        if (v.str != NULL && v.len > 0)
            sink += (uint8_t)v.str[v.len - 1];
        sink += v.num + v.count + v.code;
        n++;
    }
    ASSERT(r.p == r.end);
    ASSERT(n >= 1 && n <= h->len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct ur_arg args[MAX_ARGS];
    const char *buf = (const char *)data;
    size_t pos, consumed, hint;
    enum ur_parse st;

    /* Requests, as the server reads them. */
    for (pos = 0;;) {
        struct ur_frame_req req;

        st = ur_frame_parse_request(buf + pos, size - pos, &lim, args, &req,
                                    &consumed, &hint);
        if (st != UR_PARSE_OK)
            break;
        ASSERT(consumed >= UR_FRAME_HDR && consumed <= size - pos);
        ASSERT(req.argc <= lim.max_args && req.argv == args);
        check_request(buf + pos, consumed, &req, args);
        pos += consumed;
    }
    if (st == UR_PARSE_NEED_MORE)
        ASSERT(hint > size - pos);

    /* Replies, as the client reads them. */
    for (pos = 0;;) {
        struct ur_frame_hdr h;

        st = ur_frame_parse_reply(buf + pos, size - pos, lim.max_frame, &h,
                                  &consumed, &hint);
        if (st != UR_PARSE_OK)
            break;
        ASSERT(consumed > UR_FRAME_HDR && consumed <= size - pos);
        check_reply(buf + pos, consumed, &h);
        pos += consumed;
    }
    if (st == UR_PARSE_NEED_MORE)
        ASSERT(hint > size - pos);

    /* The reader on raw bytes, unvalidated: must stay in bounds. */
    {
        struct ur_val_reader r;
        struct ur_val v;

        ur_val_reader_init(&r, buf, size);
        while (ur_val_next(&r, &v))
            ASSERT(r.p <= r.end);
    }
    return 0;
}
