/*
 * test_frame.c - the binary protocol codec: exact bytes, round trips,
 * incremental input, limits and malformed frames, for requests and replies.
 */
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "t.h"

#define MAX_ARGS 16

static const struct ur_limits lim = {
    .max_frame = 1024, .max_args = MAX_ARGS, .max_inline = 1024};

static struct ur_arg args[MAX_ARGS];

/* A header built by hand, for frames the encoders would never produce. */
static void mk_hdr(char *p, uint8_t magic, uint8_t ver, uint16_t op,
                   uint32_t id, uint32_t len, uint16_t argc)
{
    p[0] = (char)magic;
    p[1] = (char)ver;
    p[2] = (char)(op & 0xFF);
    p[3] = (char)(op >> 8);
    p[4] = (char)(id & 0xFF);
    p[5] = (char)(id >> 8);
    p[6] = (char)(id >> 16);
    p[7] = (char)(id >> 24);
    p[8] = (char)(len & 0xFF);
    p[9] = (char)(len >> 8);
    p[10] = (char)(len >> 16);
    p[11] = (char)(len >> 24);
    p[12] = (char)(argc & 0xFF);
    p[13] = (char)(argc >> 8);
    p[14] = 0;
    p[15] = 0;
}

static enum ur_parse preq(const char *buf, size_t len, struct ur_frame_req *req,
                          size_t *consumed, size_t *hint)
{
    return ur_frame_parse_request(buf, len, &lim, args, req, consumed, hint);
}

/* CNT.INCR id 7: int 42, str "ab". */
static void build_sample(struct ur_buf *b)
{
    size_t off;

    CHECK(ur_frame_req_begin(b, 0x0101, 7, &off) == 0);
    CHECK(ur_frame_put_arg_int(b, 42) == 0);
    CHECK(ur_frame_put_arg_str(b, "ab", 2) == 0);
    ur_frame_req_end(b, off, 2);
}

static void test_request_bytes(void)
{
    static const unsigned char want[] = {
        0xB7, 0x01, 0x01, 0x01, 0x07, 0x00, 0x00, 0x00,    /* magic ver op id */
        0x10, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,    /* len argc flags */
        0x01, 0x2A, 0,    0,    0,    0,    0,    0,    0, /* int 42 */
        0x02, 0x02, 0x00, 0x00, 0x00, 'a',  'b'};          /* str "ab" */
    struct ur_buf b;
    struct ur_frame_hdr h;

    ur_buf_init(&b);
    build_sample(&b);
    CHECK_EQ_U64(b.len, sizeof(want));
    CHECK(b.len == sizeof(want) && memcmp(b.data, want, sizeof(want)) == 0);

    ur_frame_hdr_decode(b.data, &h);
    CHECK(h.magic == 0xB7 && h.version == 1 && h.op == 0x0101);
    CHECK(h.id == 7 && h.len == 16 && h.argc == 2 && h.flags == 0);
    ur_buf_deinit(&b);
}

static void test_request_round_trip(void)
{
    struct ur_buf b;
    struct ur_frame_req req;
    size_t off, consumed = 0, hint = 0;
    char bin[256];
    int i;

    for (i = 0; i < 256; i++)
        bin[i] = (char)i;
    ur_buf_init(&b);
    CHECK(ur_frame_req_begin(&b, 0xABCD, 0xDEADBEEF, &off) == 0);
    CHECK(ur_frame_put_arg_int(&b, 0) == 0);
    CHECK(ur_frame_put_arg_int(&b, UINT64_MAX) == 0);
    CHECK(ur_frame_put_arg_str(&b, "", 0) == 0);
    CHECK(ur_frame_put_arg_str(&b, bin, sizeof(bin)) == 0);
    CHECK(ur_frame_put_arg_int(&b, 0x0102030405060708ull) == 0);
    ur_frame_req_end(&b, off, 5);

    CHECK(preq(b.data, b.len, &req, &consumed, &hint) == UR_PARSE_OK);
    CHECK_EQ_U64(consumed, b.len);
    CHECK_EQ_U64(req.op, 0xABCD);
    CHECK_EQ_U64(req.id, 0xDEADBEEF);
    CHECK_EQ_U64(req.argc, 5);
    CHECK(req.argv == args);
    CHECK(args[0].kind == UR_ARG_INT && args[0].num == 0);
    CHECK(args[1].kind == UR_ARG_INT && args[1].num == UINT64_MAX);
    CHECK(args[2].kind == UR_ARG_STR && args[2].len == 0);
    CHECK(args[3].kind == UR_ARG_STR && args[3].len == 256 &&
          memcmp(args[3].str, bin, 256) == 0);
    /* zero-copy: strings point into the input */
    CHECK(args[3].str > b.data && args[3].str < b.data + b.len);
    CHECK(args[4].kind == UR_ARG_INT && args[4].num == 0x0102030405060708ull);

    /* No arguments at all. */
    b.len = 0;
    CHECK(ur_frame_req_begin(&b, UR_FRAME_MAGIC, 1, &off) == 0);
    ur_frame_req_end(&b, off, 0);
    CHECK_EQ_U64(b.len, 16);
    CHECK(preq(b.data, b.len, &req, &consumed, &hint) == UR_PARSE_OK);
    CHECK(req.argc == 0 && consumed == 16 && req.op == UR_FRAME_MAGIC);
    ur_buf_deinit(&b);
}

/* Every proper prefix needs more, and says exactly how much. */
static void test_request_prefixes(void)
{
    struct ur_buf b;
    struct ur_frame_req req;
    size_t k, consumed, hint;
    enum ur_parse st;

    ur_buf_init(&b);
    build_sample(&b);
    for (k = 0; k < b.len; k++) {
        hint = 0;
        st = preq(b.data, k, &req, &consumed, &hint);
        CHECK(st == UR_PARSE_NEED_MORE);
        CHECK(hint >= k + 1);
        CHECK_EQ_U64(hint, k < UR_FRAME_HDR ? UR_FRAME_HDR : b.len);
    }
    ur_buf_deinit(&b);
}

/*
 * A stream of pipelined frames arriving one byte at a time, parsed the way
 * the server does: only when the hint is reached, then as many frames as the
 * buffer holds.
 */
static void test_request_bytewise_pipeline(void)
{
    struct ur_buf in, stream;
    struct ur_frame_req req;
    size_t i, off, consumed, hint = 1, attempts = 0;
    uint32_t next = 0;
    const uint32_t nreq = 50;

    ur_buf_init(&in);
    ur_buf_init(&stream);
    for (i = 0; i < nreq; i++) {
        CHECK(ur_frame_req_begin(&stream, 0x0100 + (uint16_t)i, (uint32_t)i,
                                 &off) == 0);
        CHECK(ur_frame_put_arg_int(&stream, i * 1000) == 0);
        CHECK(ur_frame_put_arg_str(&stream, "payload", i % 8) == 0);
        ur_frame_req_end(&stream, off, 2);
    }
    for (i = 0; i < stream.len; i++) {
        CHECK(ur_buf_append(&in, stream.data + i, 1) == 0);
        if (in.len < hint)
            continue;
        for (;;) {
            enum ur_parse st = preq(in.data, in.len, &req, &consumed, &hint);

            attempts++;
            if (st == UR_PARSE_NEED_MORE)
                break;
            CHECK(st == UR_PARSE_OK);
            if (st != UR_PARSE_OK)
                goto out;
            CHECK_EQ_U64(req.id, next);
            CHECK_EQ_U64(req.op, 0x0100 + next);
            CHECK(req.argc == 2 && args[0].num == next * 1000ull);
            CHECK(args[1].len == next % 8 &&
                  memcmp(args[1].str, "payload", next % 8) == 0);
            next++;
            ur_buf_consume(&in, consumed);
            hint = 1;
        }
    }
out:
    CHECK_EQ_U64(next, nreq);
    CHECK_EQ_U64(in.len, 0);
    /* The hint keeps the parser from running on every byte. */
    CHECK(attempts <= 3 * nreq + 1);
    ur_buf_deinit(&in);
    ur_buf_deinit(&stream);
}

static void test_request_pipeline_one_buffer(void)
{
    struct ur_buf b;
    struct ur_frame_req req;
    size_t off, pos = 0, consumed, hint;
    int i, n = 0;

    ur_buf_init(&b);
    for (i = 0; i < 3; i++) {
        CHECK(ur_frame_req_begin(&b, 0x0104, 100 + (uint32_t)i, &off) == 0);
        CHECK(ur_frame_put_arg_int(&b, (uint64_t)i) == 0);
        ur_frame_req_end(&b, off, 1);
    }
    /* plus half of a fourth */
    CHECK(ur_frame_req_begin(&b, 0x0104, 103, &off) == 0);
    b.len -= 8;
    while (preq(b.data + pos, b.len - pos, &req, &consumed, &hint) ==
           UR_PARSE_OK) {
        CHECK_EQ_U64(req.id, 100 + n);
        CHECK(req.argc == 1 && args[0].num == (uint64_t)n);
        pos += consumed;
        n++;
    }
    CHECK_EQ_U64(n, 3);
    CHECK_EQ_U64(hint, UR_FRAME_HDR);
    ur_buf_deinit(&b);
}

/* ur_frame_peek: length, op and first u64 of whole frames only; a string
 * or no first argument gives no key; junk and partial frames give 0. */
static void test_request_peek(void)
{
    struct ur_buf b;
    size_t off, first_len, pos = 0, n;
    uint16_t op;
    uint64_t key;
    bool has;

    ur_buf_init(&b);
    CHECK(ur_frame_req_begin(&b, 0x0104, 1, &off) == 0);
    CHECK(ur_frame_put_arg_int(&b, 42) == 0);
    CHECK(ur_frame_put_arg_str(&b, "mention", 7) == 0);
    ur_frame_req_end(&b, off, 2);
    first_len = b.len;
    CHECK(ur_frame_req_begin(&b, 0x0105, 2, &off) == 0);
    CHECK(ur_frame_put_arg_str(&b, "42", 2) == 0);
    ur_frame_req_end(&b, off, 1);
    CHECK(ur_frame_req_begin(&b, 0x0001, 3, &off) == 0);
    ur_frame_req_end(&b, off, 0);

    n = ur_frame_peek(b.data, b.len, &op, &key, &has);
    CHECK_EQ_U64(n, first_len);
    CHECK(op == 0x0104 && has && key == 42);
    pos += n;
    n = ur_frame_peek(b.data + pos, b.len - pos, &op, &key, &has);
    CHECK(n > 0 && op == 0x0105 && !has);
    pos += n;
    n = ur_frame_peek(b.data + pos, b.len - pos, &op, &key, &has);
    CHECK(n == UR_FRAME_HDR && op == 0x0001 && !has);
    CHECK_EQ_U64(pos + n, b.len);
    for (size_t cut = 0; cut < first_len; cut++)
        CHECK(ur_frame_peek(b.data, cut, &op, &key, &has) == 0 && !has);
    CHECK(ur_frame_peek("*1\r\n$4\r\nPING\r\n", 14, &op, &key, &has) == 0);
    ur_buf_deinit(&b);
}

static void test_request_header_errors(void)
{
    struct ur_frame_req req;
    size_t consumed, hint;
    char f[64];

    /* Wrong magic: refused at the first byte. */
    CHECK(preq("*", 1, &req, &consumed, &hint) == UR_PARSE_INVALID);
    CHECK(preq("PING\r\n", 6, &req, &consumed, &hint) == UR_PARSE_INVALID);
    CHECK(preq("\0", 1, &req, &consumed, &hint) == UR_PARSE_INVALID);
    CHECK(req.id == 0);
    /* Wrong version: refused at the second byte. */
    CHECK(preq("\xB7\x02", 2, &req, &consumed, &hint) == UR_PARSE_INVALID);
    CHECK(preq("\xB7\x00", 2, &req, &consumed, &hint) == UR_PARSE_INVALID);
    CHECK(preq("\xB7", 1, &req, &consumed, &hint) == UR_PARSE_NEED_MORE);
    CHECK(hint == UR_FRAME_HDR);
    CHECK(preq("", 0, &req, &consumed, &hint) == UR_PARSE_NEED_MORE);
    CHECK(hint == UR_FRAME_HDR);

    /* Sizes over the limits: decided from the header alone. */
    mk_hdr(f, 0xB7, 1, 0x0101, 77, 1u << 31, 1);
    CHECK(preq(f, 16, &req, &consumed, &hint) == UR_PARSE_TOO_BIG);
    CHECK_EQ_U64(req.id, 77);
    mk_hdr(f, 0xB7, 1, 0x0101, 78, 0xFFFFFFFFu, 1);
    CHECK(preq(f, 16, &req, &consumed, &hint) == UR_PARSE_TOO_BIG);
    CHECK_EQ_U64(req.id, 78);
    mk_hdr(f, 0xB7, 1, 0x0101, 79, lim.max_frame + 1, 1);
    CHECK(preq(f, 16, &req, &consumed, &hint) == UR_PARSE_TOO_BIG);
    mk_hdr(f, 0xB7, 1, 0x0101, 80, lim.max_frame, 1);
    CHECK(preq(f, 16, &req, &consumed, &hint) == UR_PARSE_NEED_MORE);
    CHECK_EQ_U64(hint, 16 + lim.max_frame);
    mk_hdr(f, 0xB7, 1, 0x0101, 81, 1000, MAX_ARGS + 1);
    CHECK(preq(f, 16, &req, &consumed, &hint) == UR_PARSE_TOO_BIG);
    CHECK_EQ_U64(req.id, 81);
    mk_hdr(f, 0xB7, 1, 0x0101, 82, 1000, 0xFFFF);
    CHECK(preq(f, 16, &req, &consumed, &hint) == UR_PARSE_TOO_BIG);
    mk_hdr(f, 0xB7, 1, 0x0101, 83, 1000, MAX_ARGS);
    CHECK(preq(f, 16, &req, &consumed, &hint) == UR_PARSE_NEED_MORE);

    /* More arguments than the body could hold (5 bytes each at least). */
    mk_hdr(f, 0xB7, 1, 0x0101, 84, 9, 2);
    CHECK(preq(f, 16, &req, &consumed, &hint) == UR_PARSE_INVALID);
    CHECK_EQ_U64(req.id, 84);
    mk_hdr(f, 0xB7, 1, 0x0101, 85, 0, 1);
    CHECK(preq(f, 16, &req, &consumed, &hint) == UR_PARSE_INVALID);
}

static void test_request_body_errors(void)
{
    struct ur_frame_req req;
    size_t consumed, hint;
    char f[64];

    memset(f, 0, sizeof(f));
    /* Unknown argument kinds. */
    mk_hdr(f, 0xB7, 1, 0x0101, 1, 9, 1);
    f[16] = 0x00;
    CHECK(preq(f, 25, &req, &consumed, &hint) == UR_PARSE_INVALID);
    f[16] = 0x03;
    CHECK(preq(f, 25, &req, &consumed, &hint) == UR_PARSE_INVALID);
    f[16] = (char)0xFF;
    CHECK(preq(f, 25, &req, &consumed, &hint) == UR_PARSE_INVALID);
    f[16] = 0x01;
    CHECK(preq(f, 25, &req, &consumed, &hint) == UR_PARSE_OK);

    /* Trailing bytes in the body. */
    mk_hdr(f, 0xB7, 1, 0x0101, 1, 10, 1);
    CHECK(preq(f, 26, &req, &consumed, &hint) == UR_PARSE_INVALID);
    mk_hdr(f, 0xB7, 1, 0x0101, 1, 5, 0);
    CHECK(preq(f, 21, &req, &consumed, &hint) == UR_PARSE_INVALID);

    /* An integer cut by the end of the body. */
    mk_hdr(f, 0xB7, 1, 0x0101, 1, 8, 1);
    f[16] = 0x01;
    CHECK(preq(f, 24, &req, &consumed, &hint) == UR_PARSE_INVALID);

    /* A string longer than the body: 2^31 and 0xFFFFFFFF and by one. */
    mk_hdr(f, 0xB7, 1, 0x0101, 1, 8, 1);
    f[16] = 0x02;
    f[17] = 0;
    f[18] = 0;
    f[19] = 0;
    f[20] = (char)0x80;
    CHECK(preq(f, 24, &req, &consumed, &hint) == UR_PARSE_INVALID);
    memset(f + 17, 0xFF, 4);
    CHECK(preq(f, 24, &req, &consumed, &hint) == UR_PARSE_INVALID);
    f[17] = 4;
    f[18] = f[19] = f[20] = 0;
    CHECK(preq(f, 24, &req, &consumed, &hint) == UR_PARSE_INVALID);
    f[17] = 3;
    CHECK(preq(f, 24, &req, &consumed, &hint) == UR_PARSE_OK);
    CHECK(args[0].len == 3 && args[0].str == f + 21);
    f[17] = 2;
    CHECK(preq(f, 24, &req, &consumed, &hint) == UR_PARSE_INVALID);

    /* A string length cut by the end of the body. */
    mk_hdr(f, 0xB7, 1, 0x0101, 1, 5, 1);
    memcpy(f + 16, "\x01\x00\x00\x00\x00", 5);
    CHECK(preq(f, 21, &req, &consumed, &hint) == UR_PARSE_INVALID);
    f[16] = 0x02;
    CHECK(preq(f, 21, &req, &consumed, &hint) == UR_PARSE_OK);
    CHECK(args[0].kind == UR_ARG_STR && args[0].len == 0);
}

static uint64_t rnd64(void)
{
    return ((uint64_t)rand() << 42) ^ ((uint64_t)rand() << 21) ^
           (uint64_t)rand();
}

static void test_request_random(void)
{
    struct ur_buf b;
    struct ur_frame_req req;
    struct ur_arg want[MAX_ARGS];
    char pool[512];
    size_t off, consumed, hint;
    int round, i, bad = 0;

    for (i = 0; i < (int)sizeof(pool); i++)
        pool[i] = (char)rand();
    ur_buf_init(&b);
    srand(42);
    for (round = 0; round < 2000; round++) {
        uint16_t op = (uint16_t)rand();
        uint32_t id = (uint32_t)rnd64();
        uint16_t argc = (uint16_t)(rand() % (MAX_ARGS + 1));

        if (op == UR_FRAME_OP_BATCH) /* its body is not arguments */
            op = 0;
        b.len = 0;
        CHECK(ur_frame_req_begin(&b, op, id, &off) == 0);
        for (i = 0; i < argc; i++) {
            if (rand() % 2) {
                want[i].kind = UR_ARG_INT;
                want[i].num = rnd64() >> (rand() % 64);
                CHECK(ur_frame_put_arg_int(&b, want[i].num) == 0);
            } else {
                want[i].kind = UR_ARG_STR;
                want[i].len = (uint32_t)(rand() % 40);
                want[i].str = pool + rand() % 400;
                CHECK(ur_frame_put_arg_str(&b, want[i].str, want[i].len) == 0);
            }
        }
        ur_frame_req_end(&b, off, argc);
        if (preq(b.data, b.len, &req, &consumed, &hint) != UR_PARSE_OK ||
            consumed != b.len || req.op != op || req.id != id ||
            req.argc != argc) {
            bad++;
            continue;
        }
        for (i = 0; i < argc; i++) {
            if (args[i].kind != want[i].kind)
                bad++;
            else if (want[i].kind == UR_ARG_INT && args[i].num != want[i].num)
                bad++;
            else if (want[i].kind == UR_ARG_STR &&
                     (args[i].len != want[i].len ||
                      memcmp(args[i].str, want[i].str, want[i].len) != 0))
                bad++;
        }
        /* any cut is a prefix that asks for more than it has */
        if (b.len > 1) {
            size_t cut = (size_t)rand() % b.len;

            if (preq(b.data, cut, &req, &consumed, &hint) !=
                    UR_PARSE_NEED_MORE ||
                hint <= cut)
                bad++;
        }
    }
    CHECK_EQ_U64(bad, 0);
    ur_buf_deinit(&b);
}

/* ---- replies ------------------------------------------------------------ */

static enum ur_parse prep(const struct ur_buf *b, struct ur_frame_hdr *h,
                          size_t *consumed)
{
    size_t hint;

    return ur_frame_parse_reply(b->data, b->len, lim.max_frame, h, consumed,
                                &hint);
}

static void test_reply_scalars(void)
{
    struct ur_buf b;
    struct ur_frame_hdr h;
    struct ur_val_reader r;
    struct ur_val v;
    size_t off, consumed;

    ur_buf_init(&b);

    CHECK(ur_frame_reply_begin(&b, 9, &off) == 0);
    CHECK(ur_frame_put_int(&b, 12345678901234ull) == 0);
    ur_frame_reply_end(&b, off, 0);
    CHECK_EQ_U64(b.len, 16 + 9);
    CHECK(prep(&b, &h, &consumed) == UR_PARSE_OK);
    CHECK(consumed == b.len && h.id == 9 && h.op == 0 && h.len == 9);
    ur_val_reader_init(&r, b.data + 16, h.len);
    CHECK(ur_val_next(&r, &v) && v.kind == UR_VAL_INT &&
          v.num == 12345678901234ull);
    CHECK(!ur_val_next(&r, &v));

    b.len = 0;
    CHECK(ur_frame_reply_begin(&b, 10, &off) == 0);
    CHECK(ur_frame_put_status(&b, "PONG", 4) == 0);
    ur_frame_reply_end(&b, off, 0);
    CHECK(prep(&b, &h, &consumed) == UR_PARSE_OK);
    ur_val_reader_init(&r, b.data + 16, h.len);
    CHECK(ur_val_next(&r, &v) && v.kind == UR_VAL_STATUS && v.len == 4 &&
          memcmp(v.str, "PONG", 4) == 0);

    b.len = 0;
    CHECK(ur_frame_reply_begin(&b, 11, &off) == 0);
    CHECK(ur_frame_put_nil(&b) == 0);
    ur_frame_reply_end(&b, off, 0);
    CHECK(prep(&b, &h, &consumed) == UR_PARSE_OK && h.len == 1);
    ur_val_reader_init(&r, b.data + 16, h.len);
    CHECK(ur_val_next(&r, &v) && v.kind == UR_VAL_NIL);

    b.len = 0;
    CHECK(ur_frame_reply_begin(&b, 12, &off) == 0);
    CHECK(ur_frame_put_err(&b, UR_E_ARITY, "wrong number", 12) == 0);
    ur_frame_reply_end(&b, off, UR_E_ARITY);
    CHECK(prep(&b, &h, &consumed) == UR_PARSE_OK && h.op == UR_E_ARITY);
    ur_val_reader_init(&r, b.data + 16, h.len);
    CHECK(ur_val_next(&r, &v) && v.kind == UR_VAL_ERR && v.code == UR_E_ARITY &&
          v.len == 12 && memcmp(v.str, "wrong number", 12) == 0);

    b.len = 0;
    CHECK(ur_frame_reply_begin(&b, 13, &off) == 0);
    CHECK(ur_frame_put_str(&b, "", 0) == 0);
    ur_frame_reply_end(&b, off, 0);
    CHECK(prep(&b, &h, &consumed) == UR_PARSE_OK);
    ur_val_reader_init(&r, b.data + 16, h.len);
    CHECK(ur_val_next(&r, &v) && v.kind == UR_VAL_STR && v.len == 0);
    ur_buf_deinit(&b);
}

/* [1, [2, "x", []], nil, [[[3]]]] */
static void test_reply_nested(void)
{
    static const uint8_t kinds[] = {
        UR_VAL_ARR, UR_VAL_INT, UR_VAL_ARR, UR_VAL_INT, UR_VAL_STR, UR_VAL_ARR,
        UR_VAL_NIL, UR_VAL_ARR, UR_VAL_ARR, UR_VAL_ARR, UR_VAL_INT};
    struct ur_buf b;
    struct ur_frame_hdr h;
    struct ur_val_reader r;
    struct ur_val v;
    size_t off, consumed, hint, k, n = 0;

    ur_buf_init(&b);
    CHECK(ur_frame_reply_begin(&b, 5, &off) == 0);
    CHECK(ur_frame_put_arr(&b, 4) == 0);
    CHECK(ur_frame_put_int(&b, 1) == 0);
    CHECK(ur_frame_put_arr(&b, 3) == 0);
    CHECK(ur_frame_put_int(&b, 2) == 0);
    CHECK(ur_frame_put_str(&b, "x", 1) == 0);
    CHECK(ur_frame_put_arr(&b, 0) == 0);
    CHECK(ur_frame_put_nil(&b) == 0);
    CHECK(ur_frame_put_arr(&b, 1) == 0);
    CHECK(ur_frame_put_arr(&b, 1) == 0);
    CHECK(ur_frame_put_arr(&b, 1) == 0);
    CHECK(ur_frame_put_int(&b, 3) == 0);
    ur_frame_reply_end(&b, off, 0);
    CHECK(prep(&b, &h, &consumed) == UR_PARSE_OK && consumed == b.len);

    ur_val_reader_init(&r, b.data + 16, h.len);
    while (ur_val_next(&r, &v)) {
        CHECK(n < sizeof(kinds) && v.kind == kinds[n]);
        n++;
    }
    CHECK_EQ_U64(n, sizeof(kinds));

    for (k = 0; k < b.len; k++) {
        enum ur_parse st = ur_frame_parse_reply(b.data, k, lim.max_frame, &h,
                                                &consumed, &hint);
        CHECK(st == UR_PARSE_NEED_MORE);
        CHECK_EQ_U64(hint, k < 16 ? 16 : b.len);
    }

    /* The element count says 4 but the body ends after 3: cut the last
     * subtree by rewriting the top count to 5. */
    b.data[16 + 1] = 5;
    CHECK(prep(&b, &h, &consumed) == UR_PARSE_INVALID);
    b.data[16 + 1] = 3; /* now bytes are left over */
    CHECK(prep(&b, &h, &consumed) == UR_PARSE_INVALID);
    ur_buf_deinit(&b);
}

static void test_reply_depth(void)
{
    struct ur_buf b;
    struct ur_frame_hdr h;
    size_t off, consumed;
    int d;

    ur_buf_init(&b);
    for (d = UR_MAX_DEPTH - 1; d <= UR_MAX_DEPTH + 1; d++) {
        int i;

        b.len = 0;
        CHECK(ur_frame_reply_begin(&b, 1, &off) == 0);
        for (i = 0; i < d; i++)
            CHECK(ur_frame_put_arr(&b, 1) == 0);
        CHECK(ur_frame_put_int(&b, 1) == 0);
        ur_frame_reply_end(&b, off, 0);
        CHECK(prep(&b, &h, &consumed) ==
              (d <= UR_MAX_DEPTH ? UR_PARSE_OK : UR_PARSE_INVALID));

        /* an empty array as the innermost value counts as a level too */
        b.len = 0;
        CHECK(ur_frame_reply_begin(&b, 1, &off) == 0);
        for (i = 0; i < d; i++)
            CHECK(ur_frame_put_arr(&b, i + 1 < d ? 1 : 0) == 0);
        ur_frame_reply_end(&b, off, 0);
        CHECK(prep(&b, &h, &consumed) ==
              (d <= UR_MAX_DEPTH ? UR_PARSE_OK : UR_PARSE_INVALID));
    }
    ur_buf_deinit(&b);
}

static void test_reply_errors(void)
{
    struct ur_buf b;
    struct ur_frame_hdr h;
    size_t off, consumed, hint;
    char f[64];

    ur_buf_init(&b);
    /* A nonzero status without an error value. */
    CHECK(ur_frame_reply_begin(&b, 1, &off) == 0);
    CHECK(ur_frame_put_int(&b, 1) == 0);
    ur_frame_reply_end(&b, off, UR_E_ERR);
    CHECK(prep(&b, &h, &consumed) == UR_PARSE_INVALID);
    /* An error value whose code differs from the status. */
    b.len = 0;
    CHECK(ur_frame_reply_begin(&b, 1, &off) == 0);
    CHECK(ur_frame_put_err(&b, UR_E_OOM, "x", 1) == 0);
    ur_frame_reply_end(&b, off, UR_E_ERR);
    CHECK(prep(&b, &h, &consumed) == UR_PARSE_INVALID);
    /* An error value under status 0. */
    ur_frame_reply_end(&b, off, 0);
    CHECK(prep(&b, &h, &consumed) == UR_PARSE_INVALID);
    ur_frame_reply_end(&b, off, UR_E_OOM);
    CHECK(prep(&b, &h, &consumed) == UR_PARSE_OK);
    /* Errors inside an array (batch results) are fine under status 0. */
    b.len = 0;
    CHECK(ur_frame_reply_begin(&b, 1, &off) == 0);
    CHECK(ur_frame_put_arr(&b, 2) == 0);
    CHECK(ur_frame_put_int(&b, 1) == 0);
    CHECK(ur_frame_put_err(&b, UR_E_BADARG, "bad", 3) == 0);
    ur_frame_reply_end(&b, off, 0);
    CHECK(prep(&b, &h, &consumed) == UR_PARSE_OK);

    /* Empty body, unknown kind, huge counts and lengths. */
    memset(f, 0, sizeof(f));
    mk_hdr(f, 0xB7, 1, 0, 1, 0, 0);
    CHECK(ur_frame_parse_reply(f, 16, 1024, &h, &consumed, &hint) ==
          UR_PARSE_INVALID);
    mk_hdr(f, 0xB7, 1, 0, 1, 1, 0);
    f[16] = 0x07;
    CHECK(ur_frame_parse_reply(f, 17, 1024, &h, &consumed, &hint) ==
          UR_PARSE_INVALID);
    f[16] = 0x00;
    CHECK(ur_frame_parse_reply(f, 17, 1024, &h, &consumed, &hint) ==
          UR_PARSE_INVALID);
    mk_hdr(f, 0xB7, 1, 0, 1, 5, 0);
    memcpy(f + 16, "\x03\xFF\xFF\xFF\xFF", 5); /* array of 2^32-1 */
    CHECK(ur_frame_parse_reply(f, 21, 1024, &h, &consumed, &hint) ==
          UR_PARSE_INVALID);
    memcpy(f + 16, "\x02\x00\x00\x00\x80", 5); /* string of 2^31 */
    CHECK(ur_frame_parse_reply(f, 21, 1024, &h, &consumed, &hint) ==
          UR_PARSE_INVALID);
    mk_hdr(f, 0xB7, 1, 0, 1, 0xFFFFFFFFu, 0);
    CHECK(ur_frame_parse_reply(f, 16, 1024, &h, &consumed, &hint) ==
          UR_PARSE_TOO_BIG);
    mk_hdr(f, 0xB7, 1, 0, 1, 1u << 31, 0);
    CHECK(ur_frame_parse_reply(f, 16, 1024, &h, &consumed, &hint) ==
          UR_PARSE_TOO_BIG);
    CHECK(ur_frame_parse_reply("x", 1, 1024, &h, &consumed, &hint) ==
          UR_PARSE_INVALID);
    CHECK(ur_frame_parse_reply("\xB7\x09", 2, 1024, &h, &consumed, &hint) ==
          UR_PARSE_INVALID);
    /* A malformed body read directly: the reader stops. */
    {
        struct ur_val_reader r;
        struct ur_val v;

        ur_val_reader_init(&r, "\x02\x05\x00\x00\x00ab", 7);
        CHECK(!ur_val_next(&r, &v));
        ur_val_reader_init(&r, "\x06\x01", 2);
        CHECK(!ur_val_next(&r, &v));
        ur_val_reader_init(&r, "\x01\x01\x02", 3);
        CHECK(!ur_val_next(&r, &v));
    }
    ur_buf_deinit(&b);
}

static void test_reply_pipeline(void)
{
    struct ur_buf b;
    struct ur_frame_hdr h;
    size_t off, pos = 0, consumed, hint;
    uint32_t i, n = 0;

    ur_buf_init(&b);
    for (i = 0; i < 10; i++) {
        CHECK(ur_frame_reply_begin(&b, i, &off) == 0);
        if (i % 3 == 0) {
            CHECK(ur_frame_put_err(&b, UR_E_LIMIT, "limit", 5) == 0);
            ur_frame_reply_end(&b, off, UR_E_LIMIT);
        } else {
            CHECK(ur_frame_put_arr(&b, 2) == 0);
            CHECK(ur_frame_put_int(&b, i) == 0);
            CHECK(ur_frame_put_int(&b, i * 2) == 0);
            ur_frame_reply_end(&b, off, 0);
        }
    }
    while (ur_frame_parse_reply(b.data + pos, b.len - pos, 1024, &h, &consumed,
                                &hint) == UR_PARSE_OK) {
        CHECK_EQ_U64(h.id, n);
        CHECK_EQ_U64(h.op, n % 3 == 0 ? UR_E_LIMIT : 0);
        pos += consumed;
        n++;
    }
    CHECK_EQ_U64(n, 10);
    CHECK_EQ_U64(pos, b.len);
    ur_buf_deinit(&b);
}

/* ---- batch frames ---------------------------------------------------------
 */

/* A batch of three: CNT.INCR 42 "ab" (sub header and arguments one by
 * one), PING (no argument), CONV.SEQ 1 2 3 (ur_frame_put_sub). */
static void build_batch(struct ur_buf *b, uint32_t id)
{
    const struct ur_arg three[3] = {{UR_ARG_INT, 0, NULL, 1},
                                    {UR_ARG_INT, 0, NULL, 2},
                                    {UR_ARG_STR, 1, "3", 0}};
    size_t off;

    CHECK(ur_frame_req_begin(b, UR_FRAME_OP_BATCH, id, &off) == 0);
    CHECK(ur_frame_put_sub_hdr(b, 0x0101, 2) == 0);
    CHECK(ur_frame_put_arg_int(b, 42) == 0);
    CHECK(ur_frame_put_arg_str(b, "ab", 2) == 0);
    CHECK(ur_frame_put_sub_hdr(b, 0x0001, 0) == 0);
    CHECK(ur_frame_put_sub(b, 0x0202, 3, three) == 0);
    ur_frame_req_end(b, off, 3);
}

static void test_batch_bytes_and_round_trip(void)
{
    static const unsigned char want[] = {
        0xB7, 0x01, 0x01, 0xFF, 0x05, 0x00, 0x00, 0x00, /* op 0xFF01, id 5 */
        0x34, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, /* len 52, 3 subs */
        0x01, 0x01, 0x02, 0x00,                         /* CNT.INCR, 2 args */
        0x01, 0x2A, 0,    0,    0,    0,    0,    0,    0, /* int 42 */
        0x02, 0x02, 0x00, 0x00, 0x00, 'a',  'b',           /* str "ab" */
        0x01, 0x00, 0x00, 0x00,                            /* PING, no arg */
        0x02, 0x02, 0x03, 0x00, /* CONV.SEQ, 3 args */
        0x01, 0x01, 0,    0,    0,    0,    0,    0,    0, /* int 1 */
        0x01, 0x02, 0,    0,    0,    0,    0,    0,    0, /* int 2 */
        0x02, 0x01, 0x00, 0x00, 0x00, '3'};                /* str "3" */
    struct ur_buf b;
    struct ur_frame_req req;
    struct ur_batch_reader rd;
    struct ur_frame_sub sub;
    size_t used = 0, hint = 0;

    ur_buf_init(&b);
    build_batch(&b, 5);
    CHECK_EQ_U64(b.len, sizeof(want));
    CHECK(memcmp(b.data, want, sizeof(want)) == 0);
    CHECK(preq(b.data, b.len, &req, &used, &hint) == UR_PARSE_OK);
    CHECK_EQ_U64(used, b.len);
    CHECK(req.op == UR_FRAME_OP_BATCH && req.id == 5);
    /* a naive caller sees no arguments */
    CHECK(req.argc == 0 && req.argv == args);
    CHECK_EQ_U64(req.nsub, 3);
    CHECK_EQ_U64(req.sub_argc_max, 3);
    CHECK(req.body == b.data + UR_FRAME_HDR && req.body_len == 52);

    ur_batch_reader_init(&rd, req.body, req.body_len, req.nsub);
    CHECK(ur_batch_next(&rd, args, MAX_ARGS, &sub));
    CHECK(sub.op == 0x0101 && sub.argc == 2 && sub.argv == args);
    CHECK(args[0].kind == UR_ARG_INT && args[0].num == 42);
    CHECK(args[1].kind == UR_ARG_STR && args[1].len == 2 &&
          memcmp(args[1].str, "ab", 2) == 0);
    CHECK(ur_batch_next(&rd, args, MAX_ARGS, &sub));
    CHECK(sub.op == 0x0001 && sub.argc == 0);
    /* too little room for the next one's arguments: refused, not read */
    CHECK(!ur_batch_next(&rd, args, 2, &sub));
    CHECK(ur_batch_next(&rd, args, 3, &sub));
    CHECK(sub.op == 0x0202 && sub.argc == 3 && args[1].num == 2 &&
          args[2].kind == UR_ARG_STR && args[2].str[0] == '3');
    CHECK(!ur_batch_next(&rd, args, MAX_ARGS, &sub));
    CHECK(rd.p == rd.end);

    const struct ur_arg two[2] = {{UR_ARG_INT, 0, NULL, 9},
                                  {UR_ARG_STR, 3, "xyz", 0}};
    size_t before = b.len;
    CHECK(ur_frame_put_args(&b, 2, two) == 0);
    CHECK_EQ_U64(b.len - before, ur_frame_args_len(2, two));
    CHECK_EQ_U64(ur_frame_args_len(2, two), 9 + 5 + 3);

    /* every prefix asks for the whole frame */
    for (size_t n = 0; n < sizeof(want); n++) {
        hint = 0;
        CHECK(preq(b.data, n, &req, &used, &hint) == UR_PARSE_NEED_MORE);
        CHECK(hint > n && hint <= sizeof(want));
    }

    /* an empty batch */
    b.len = 0;
    size_t off;
    CHECK(ur_frame_req_begin(&b, UR_FRAME_OP_BATCH, 6, &off) == 0);
    ur_frame_req_end(&b, off, 0);
    CHECK(preq(b.data, b.len, &req, &used, &hint) == UR_PARSE_OK);
    CHECK(req.nsub == 0 && req.body_len == 0 && req.sub_argc_max == 0);
    ur_buf_deinit(&b);
}

/* The sample batch with its body byte at `at` replaced by v, or its header
 * argc set to argc. */
static enum ur_parse batch_with(size_t at, int v, int argc, size_t cut)
{
    static struct ur_buf b;
    struct ur_frame_req req;
    size_t used, hint;

    b.len = 0;
    build_batch(&b, 1);
    if (v >= 0)
        b.data[UR_FRAME_HDR + at] = (char)v;
    if (argc >= 0)
        b.data[12] = (char)argc;
    if (cut > 0) {
        b.len -= cut;
        b.data[8] = (char)(b.len - UR_FRAME_HDR);
    }
    enum ur_parse st = preq(b.data, b.len, &req, &used, &hint);
    if (st == UR_PARSE_INVALID || st == UR_PARSE_TOO_BIG)
        CHECK_EQ_U64(req.id, 1);
    return st;
}

static void test_batch_errors(void)
{
    CHECK(batch_with(0, -1, -1, 0) == UR_PARSE_OK);
    /* a sub-request's argument of an unknown kind */
    CHECK(batch_with(4, 0x07, -1, 0) == UR_PARSE_INVALID);
    /* a sub-request claiming more arguments than the body holds */
    CHECK(batch_with(2, 3, -1, 0) == UR_PARSE_INVALID);
    /* fewer sub-requests announced than the body holds: bytes left over */
    CHECK(batch_with(0, -1, 2, 0) == UR_PARSE_INVALID);
    /* more announced than there are */
    CHECK(batch_with(0, -1, 4, 0) == UR_PARSE_INVALID);
    /* more than fit in the body at all: decided from the header */
    CHECK(batch_with(0, -1, 16, 0) == UR_PARSE_INVALID);
    /* the body cut inside the last argument */
    CHECK(batch_with(0, -1, -1, 3) == UR_PARSE_INVALID);
    /* a sub-request with more than max-args arguments */
    CHECK(batch_with(2, MAX_ARGS + 1, -1, 0) == UR_PARSE_TOO_BIG);
    /* more sub-requests than max-args: from the header alone */
    char hdr[UR_FRAME_HDR];
    struct ur_frame_req req;
    size_t used, hint;
    mk_hdr(hdr, UR_FRAME_MAGIC, 1, UR_FRAME_OP_BATCH, 3, 900, MAX_ARGS + 1);
    CHECK(preq(hdr, sizeof(hdr), &req, &used, &hint) == UR_PARSE_TOO_BIG);
    /* sub-request headers that cannot fit the body: from the header */
    mk_hdr(hdr, UR_FRAME_MAGIC, 1, UR_FRAME_OP_BATCH, 3, 7, 2);
    CHECK(preq(hdr, sizeof(hdr), &req, &used, &hint) == UR_PARSE_INVALID);
    /* the reader stops at a malformed body instead of overrunning it */
    struct ur_batch_reader rd;
    struct ur_frame_sub sub;
    const char junk[] = {0x01, 0x01, 0x02, 0x00, 0x01, 0x00};
    ur_batch_reader_init(&rd, junk, sizeof(junk), 5);
    CHECK(!ur_batch_next(&rd, args, MAX_ARGS, &sub));
    ur_batch_reader_init(&rd, NULL, 0, 1);
    CHECK(!ur_batch_next(&rd, args, MAX_ARGS, &sub));
}

int main(void)
{
    T_RUN(test_request_bytes);
    T_RUN(test_request_round_trip);
    T_RUN(test_request_prefixes);
    T_RUN(test_request_bytewise_pipeline);
    T_RUN(test_request_pipeline_one_buffer);
    T_RUN(test_request_peek);
    T_RUN(test_request_header_errors);
    T_RUN(test_request_body_errors);
    T_RUN(test_request_random);
    T_RUN(test_reply_scalars);
    T_RUN(test_reply_nested);
    T_RUN(test_reply_depth);
    T_RUN(test_reply_errors);
    T_RUN(test_reply_pipeline);
    T_RUN(test_batch_bytes_and_round_trip);
    T_RUN(test_batch_errors);
    T_END();
}
