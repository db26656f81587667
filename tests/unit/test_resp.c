/*
 * test_resp.c - the RESP2 codec: multibulk and inline requests (good,
 * partial, malformed, oversized), reply encoders byte for byte, and the reply
 * parser.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resp.h"
#include "t.h"

#define MAX_ARGS 16

static const struct ur_limits lim = {
    .max_frame = 1024, .max_args = MAX_ARGS, .max_inline = 64};

static struct ur_arg args[MAX_ARGS + 1];

static enum ur_parse req_n(const char *s, size_t n, uint32_t *argc,
                           size_t *consumed, size_t *hint)
{
    return ur_resp_parse_request(s, n, &lim, args, argc, consumed, hint);
}

static enum ur_parse req(const char *s, uint32_t *argc, size_t *consumed)
{
    size_t hint;

    return req_n(s, strlen(s), argc, consumed, &hint);
}

static bool arg_is(uint32_t i, const char *s)
{
    return args[i].kind == UR_ARG_STR && args[i].len == strlen(s) &&
           memcmp(args[i].str, s, args[i].len) == 0;
}

static bool buf_is(const struct ur_buf *b, const char *s, size_t n)
{
    return b->len == n && memcmp(b->data, s, n) == 0;
}

#define BUF_IS(b, lit) buf_is((b), (lit), sizeof(lit) - 1)

static void test_multibulk_ok(void)
{
    const char *m = "*3\r\n$8\r\nCNT.INCR\r\n$2\r\n42\r\n$0\r\n\r\n";
    uint32_t argc;
    size_t consumed, hint;

    CHECK(req(m, &argc, &consumed) == UR_PARSE_OK);
    CHECK_EQ_U64(argc, 3);
    CHECK_EQ_U64(consumed, strlen(m));
    CHECK(arg_is(0, "CNT.INCR") && arg_is(1, "42") && arg_is(2, ""));
    CHECK(args[0].str == m + 8); /* zero-copy */

    /* Binary-safe payloads: CR, LF, NUL inside a bulk. */
    CHECK(req_n("*1\r\n$4\r\n\r\n\0*\r\n", 14, &argc, &consumed, &hint) ==
          UR_PARSE_OK);
    CHECK(argc == 1 && args[0].len == 4 &&
          memcmp(args[0].str, "\r\n\0*", 4) == 0);

    /* max_args + 1 strings (name included) is the most accepted. */
    {
        struct ur_buf b;
        const char *v[MAX_ARGS + 2];
        size_t l[MAX_ARGS + 2];
        int i;

        for (i = 0; i < MAX_ARGS + 2; i++) {
            v[i] = "x";
            l[i] = 1;
        }
        ur_buf_init(&b);
        CHECK(ur_resp_put_request(&b, MAX_ARGS + 1, v, l) == 0);
        CHECK(req_n(b.data, b.len, &argc, &consumed, &hint) == UR_PARSE_OK);
        CHECK(argc == MAX_ARGS + 1 && consumed == b.len);
        b.len = 0;
        CHECK(ur_resp_put_request(&b, MAX_ARGS + 2, v, l) == 0);
        CHECK(req_n(b.data, 5, &argc, &consumed, &hint) == UR_PARSE_TOO_BIG);
        ur_buf_deinit(&b);
    }
}

/* The hint is a true lower bound: never past the end of the request. */
static void check_all_prefixes(const char *s, size_t n)
{
    uint32_t argc;
    size_t k, consumed, hint;
    int bad = 0;

    for (k = 0; k < n; k++) {
        hint = 0;
        if (req_n(s, k, &argc, &consumed, &hint) != UR_PARSE_NEED_MORE ||
            hint < k + 1 || hint > n) {
            fprintf(stderr, "prefix %zu of %zu: hint %zu\n", k, n, hint);
            bad++;
        }
    }
    CHECK_EQ_U64(bad, 0);
    CHECK(req_n(s, n, &argc, &consumed, &hint) == UR_PARSE_OK);
    CHECK_EQ_U64(consumed, n);
}

static void test_prefixes(void)
{
    const char *m = "*3\r\n$8\r\nCNT.INCR\r\n$2\r\n42\r\n$10\r\n0123456789\r\n";

    check_all_prefixes(m, strlen(m));
    check_all_prefixes("PING\r\n", 6);
    check_all_prefixes("CNT.GET 1 2\n", 12);
    check_all_prefixes("\n", 1);
}

static void test_multibulk_malformed(void)
{
    static const char *invalid[] = {
        "*-1\r\n",
        "*-",
        "*abc\r\n",
        "*a",
        "*0\r\n",
        "*00\r\n",
        "*01\r\n$1\r\nx\r\n",
        "*\r\n",
        "*1\n$1\r\nx\r\n",
        "*1\r\r",
        "*1\rx",
        "*1 \r\n",
        "*+1\r\n",
        "*1\r\n$-5\r\n",
        "*1\r\n$-1\r\n",
        "*1\r\n$-",
        "*1\r\n$\r\n",
        "*1\r\n$01\r\nx\r\n",
        "*1\r\n$3\n",
        "*1\r\n$3\r\nabcX\n",
        "*1\r\n$3\r\nabcX",
        "*1\r\n$3\r\nabc\rX",
        "*1\r\n$3\r\nabc\n\r",
        "*1\r\nX",
        "*1\r\n:1\r\n",
        "*2\r\n$1\r\na\r\n*1\r\n",
        "*2\r\n$1\r\na\r\nPING\r\n",
        "*1x",
        /* the one- and two-digit headers' shortcut, and past it */
        "*1\r\n$1\rX",
        "*1\r\n$1\n\r",
        "*1\r\n$12\rX",
        "*1\r\n$12\n",
        "*1\r\n$1X\r\n",
        "*1\r\n$00\r\n",
        "*1\r\n$012\r\n",
        "*1\r\n$123\rX",
        "*1\r\n$1:\r\n",
        "*1\r\n$/\r\n",
        "*1\r\n$ 1\r\n",
        "*1\rX",
        "*12\rX",
        "*1/\r\n",
        "*:\r\n",
        "*1\r\n$2\r\nab\r\r",
        /* header lines are bounded: 32 digits without a CR */
        "*11111111111111111111111111111111",
        "*1\r\n$11111111111111111111111111111111",
    };
    uint32_t argc;
    size_t i, consumed;

    for (i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
        enum ur_parse st = req(invalid[i], &argc, &consumed);

        if (st != UR_PARSE_INVALID)
            fprintf(stderr, "case %zu: %s\n", i, ur_parse_name(st));
        CHECK(st == UR_PARSE_INVALID);
    }
}

static void test_multibulk_too_big(void)
{
    static const char *too_big[] = {
        "*18\r\n",                      /* max_args + 2 */
        "*4294967296\r\n",              /* 2^32 */
        "*2147483648\r\n",              /* 2^31 */
        "*99999999999999999999999\r\n", /* would overflow u64 */
        "*1\r\n$1025\r\n",              /* max_frame + 1 */
        "*1\r\n$2147483648\r\n",
        "*1\r\n$4294967295\r\n",
        "*1\r\n$18446744073709551616\r\n",
    };
    uint32_t argc;
    size_t i, consumed;

    for (i = 0; i < sizeof(too_big) / sizeof(too_big[0]); i++) {
        enum ur_parse st = req(too_big[i], &argc, &consumed);

        if (st != UR_PARSE_TOO_BIG)
            fprintf(stderr, "case %zu: %s\n", i, ur_parse_name(st));
        CHECK(st == UR_PARSE_TOO_BIG);
    }
    /* decided as soon as the header line is complete, not before */
    CHECK(req("*18\r", &argc, &consumed) == UR_PARSE_NEED_MORE);
    /* the largest bulk is fine and its size is hinted at once */
    {
        size_t hint;

        CHECK(req_n("*1\r\n$1024\r\n", 11, &argc, &consumed, &hint) ==
              UR_PARSE_NEED_MORE);
        CHECK_EQ_U64(hint, 11 + 1024 + 2);
    }
}

/*
 * Counts and lengths of one, two and three digits (the first two read by
 * a shortcut, the third by the loop) on their edges: each request parses
 * whole and every prefix of it asks for more; a bulk's length one off
 * either way is refused.
 */
static void test_header_widths(void)
{
    static const uint32_t lens[] = {0, 1, 9, 10, 11, 42, 99, 100, 101, 999};
    static char payload[1000];
    char hdr[32];
    struct ur_buf b;
    uint32_t argc;
    size_t consumed, hint;

    memset(payload, 'p', sizeof(payload));
    ur_buf_init(&b);
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        for (uint32_t n = 1; n <= MAX_ARGS + 1; n += 4) {
            const char *v[MAX_ARGS + 1];
            size_t l[MAX_ARGS + 1];

            for (uint32_t k = 0; k < n; k++) {
                v[k] = payload;
                l[k] = k == n - 1 ? lens[i] : 1; /* under max_frame */
            }
            b.len = 0;
            CHECK(ur_resp_put_request(&b, n, v, l) == 0);
            check_all_prefixes(b.data, b.len);
            CHECK(req_n(b.data, b.len, &argc, &consumed, &hint) ==
                      UR_PARSE_OK &&
                  argc == n && args[n - 1].len == lens[i] &&
                  args[n - 1].str + lens[i] + 2 == b.data + b.len);
        }
        /* The length says one byte less, then one more, than follows. */
        b.len = 0;
        CHECK(ur_buf_append(&b, hdr,
                            (size_t)snprintf(hdr, sizeof(hdr), "*1\r\n$%u\r\n",
                                             lens[i] + 1)) == 0);
        CHECK(ur_buf_append(&b, payload, lens[i]) == 0);
        CHECK(ur_buf_append(&b, "\r\n\r\n", 4) == 0);
        CHECK(req_n(b.data, b.len, &argc, &consumed, &hint) ==
              UR_PARSE_INVALID);
        if (lens[i] > 0) {
            b.len = 0;
            CHECK(ur_buf_append(&b, hdr,
                                (size_t)snprintf(hdr, sizeof(hdr),
                                                 "*1\r\n$%u\r\n",
                                                 lens[i] - 1)) == 0);
            CHECK(ur_buf_append(&b, payload, lens[i]) == 0);
            CHECK(ur_buf_append(&b, "\r\n", 2) == 0);
            CHECK(req_n(b.data, b.len, &argc, &consumed, &hint) ==
                  UR_PARSE_INVALID);
        }
    }
    ur_buf_deinit(&b);
}

static void test_inline(void)
{
    uint32_t argc = 99;
    size_t consumed, hint;

    CHECK(req("PING\n", &argc, &consumed) == UR_PARSE_OK);
    CHECK(argc == 1 && consumed == 5 && arg_is(0, "PING"));
    CHECK(req("PING\r\n", &argc, &consumed) == UR_PARSE_OK);
    CHECK(argc == 1 && consumed == 6 && arg_is(0, "PING"));
    CHECK(req(" \tCNT.INCR   1\t2  \r\n", &argc, &consumed) == UR_PARSE_OK);
    CHECK(argc == 3 && arg_is(0, "CNT.INCR") && arg_is(1, "1") &&
          arg_is(2, "2"));
    CHECK_EQ_U64(consumed, 20);

    /* Empty lines are consumed and reported as no command. */
    CHECK(req("\n", &argc, &consumed) == UR_PARSE_OK);
    CHECK(argc == 0 && consumed == 1);
    CHECK(req("\r\n", &argc, &consumed) == UR_PARSE_OK);
    CHECK(argc == 0 && consumed == 2);
    CHECK(req("  \t \r\nPING\r\n", &argc, &consumed) == UR_PARSE_OK);
    CHECK(argc == 0 && consumed == 6);

    /* Incomplete lines wait. */
    CHECK(req_n("PING", 4, &argc, &consumed, &hint) == UR_PARSE_NEED_MORE);
    CHECK_EQ_U64(hint, 5);
    CHECK(req_n("PING\r", 5, &argc, &consumed, &hint) == UR_PARSE_NEED_MORE);
    CHECK(req_n("", 0, &argc, &consumed, &hint) == UR_PARSE_NEED_MORE);
    CHECK_EQ_U64(hint, 1);

    /* Only the first line is parsed. */
    CHECK(req("a b\nc d e\n", &argc, &consumed) == UR_PARSE_OK);
    CHECK(argc == 2 && consumed == 4);
    /* A CR inside a line is an ordinary byte, only the last one is cut. */
    CHECK(req("a\rb\r\r\n", &argc, &consumed) == UR_PARSE_OK);
    CHECK(argc == 1 && arg_is(0, "a\rb\r"));
}

static void test_inline_limits(void)
{
    char line[256];
    uint32_t argc;
    size_t consumed, hint;
    int i;

    /* max_inline bytes before the newline: accepted. */
    memset(line, 'a', sizeof(line));
    line[lim.max_inline] = '\n';
    CHECK(req_n(line, lim.max_inline + 1, &argc, &consumed, &hint) ==
          UR_PARSE_OK);
    CHECK(argc == 1 && args[0].len == lim.max_inline);
    /* without a newline yet: still waiting at max_inline bytes... */
    CHECK(req_n(line, lim.max_inline, &argc, &consumed, &hint) ==
          UR_PARSE_NEED_MORE);
    /* ...refused one byte later, without waiting for the newline */
    line[lim.max_inline] = 'a';
    CHECK(req_n(line, lim.max_inline + 1, &argc, &consumed, &hint) ==
          UR_PARSE_TOO_BIG);
    line[lim.max_inline + 1] = '\n';
    CHECK(req_n(line, lim.max_inline + 2, &argc, &consumed, &hint) ==
          UR_PARSE_TOO_BIG);
    CHECK(req_n(line, sizeof(line), &argc, &consumed, &hint) ==
          UR_PARSE_TOO_BIG);

    /* max_args + 1 words: accepted; one more: TOO_BIG. */
    for (i = 0; i < MAX_ARGS + 1; i++) {
        line[2 * i] = 'w';
        line[2 * i + 1] = ' ';
    }
    line[2 * (MAX_ARGS + 1)] = '\n';
    CHECK(req_n(line, 2 * (MAX_ARGS + 1) + 1, &argc, &consumed, &hint) ==
          UR_PARSE_OK);
    CHECK_EQ_U64(argc, MAX_ARGS + 1);
    line[2 * (MAX_ARGS + 1)] = 'w';
    line[2 * (MAX_ARGS + 1) + 1] = '\n';
    CHECK(req_n(line, 2 * (MAX_ARGS + 1) + 2, &argc, &consumed, &hint) ==
          UR_PARSE_TOO_BIG);
}

static void test_inline_quotes(void)
{
    uint32_t argc;
    size_t consumed;

    CHECK(req("SET \"a b\" c\r\n", &argc, &consumed) == UR_PARSE_OK);
    CHECK(argc == 3 && arg_is(0, "SET") && arg_is(1, "a b") && arg_is(2, "c"));
    CHECK(req("x \"\" ''\n", &argc, &consumed) == UR_PARSE_OK);
    CHECK(argc == 3 && arg_is(1, "") && arg_is(2, ""));
    CHECK(req("x 'it \"is\"' \"it's\"\n", &argc, &consumed) == UR_PARSE_OK);
    CHECK(argc == 3 && arg_is(1, "it \"is\"") && arg_is(2, "it's"));
    CHECK(req("x \"a\tb\"\t\"c\"\n", &argc, &consumed) == UR_PARSE_OK);
    CHECK(argc == 3 && arg_is(1, "a\tb") && arg_is(2, "c"));
    /* No escapes: a backslash is an ordinary byte. */
    CHECK(req("x \"a\\\" b\n", &argc, &consumed) == UR_PARSE_OK);
    CHECK(argc == 3 && arg_is(1, "a\\") && arg_is(2, "b"));
    /* A quote inside a word is ordinary. */
    CHECK(req("x a\"b c'd\n", &argc, &consumed) == UR_PARSE_OK);
    CHECK(argc == 3 && arg_is(1, "a\"b") && arg_is(2, "c'd"));

    CHECK(req("x \"abc\n", &argc, &consumed) == UR_PARSE_INVALID);
    CHECK(req("x 'abc\"\n", &argc, &consumed) == UR_PARSE_INVALID);
    CHECK(req("x \"a b\"c\n", &argc, &consumed) == UR_PARSE_INVALID);
    CHECK(req("\"\n", &argc, &consumed) == UR_PARSE_INVALID);
    /* the quote search stops at the end of the line */
    CHECK(req("x \"a\n\"\n", &argc, &consumed) == UR_PARSE_INVALID);
}

/* Mixed multibulk and inline requests, one byte at a time, parsed only when
 * the hint is reached. */
static void test_bytewise_pipeline(void)
{
    static const char stream[] = "*2\r\n$3\r\nGET\r\n$1\r\n1\r\n"
                                 "PING\r\n"
                                 "\r\n"
                                 "*1\r\n$4\r\nPING\r\n"
                                 "CNT.INCR 1 2 3\n"
                                 "*3\r\n$3\r\nSET\r\n$3\r\na\r\n\r\n$0\r\n\r\n";
    static const uint32_t want_argc[] = {2, 1, 0, 1, 4, 3};
    struct ur_buf in;
    uint32_t argc, n = 0;
    size_t i, consumed, hint = 1;

    ur_buf_init(&in);
    for (i = 0; i < sizeof(stream) - 1; i++) {
        CHECK(ur_buf_append(&in, stream + i, 1) == 0);
        if (in.len < hint)
            continue;
        for (;;) {
            enum ur_parse st = req_n(in.data, in.len, &argc, &consumed, &hint);

            if (st == UR_PARSE_NEED_MORE)
                break;
            CHECK(st == UR_PARSE_OK);
            if (st != UR_PARSE_OK)
                goto out;
            CHECK(n < 6 && argc == want_argc[n]);
            if (n == 5)
                CHECK(arg_is(1, "a\r\n") && arg_is(2, ""));
            n++;
            ur_buf_consume(&in, consumed);
        }
    }
out:
    CHECK_EQ_U64(n, 6);
    CHECK_EQ_U64(in.len, 0);
    ur_buf_deinit(&in);
}

static void test_random_round_trip(void)
{
    struct ur_buf b;
    const char *v[MAX_ARGS + 1];
    size_t l[MAX_ARGS + 1];
    char pool[600];
    int round, i, bad = 0;

    srand(7);
    for (i = 0; i < (int)sizeof(pool); i++)
        pool[i] = (char)(rand() % 4 == 0 ? "\r\n*$"[rand() % 4] : rand());
    ur_buf_init(&b);
    for (round = 0; round < 2000; round++) {
        uint32_t n = 1 + (uint32_t)rand() % (MAX_ARGS + 1), argc;
        size_t consumed, hint, cut, total = 0;

        for (i = 0; i < (int)n; i++) {
            l[i] = (size_t)(rand() % 3 == 0 ? rand() % 200 : rand() % 5);
            if (total + l[i] > lim.max_frame) /* the bulks together fit */
                l[i] = 0;
            total += l[i];
            v[i] = pool + rand() % 400;
        }
        b.len = 0;
        CHECK(ur_resp_put_request(&b, n, v, l) == 0);
        if (req_n(b.data, b.len, &argc, &consumed, &hint) != UR_PARSE_OK ||
            argc != n || consumed != b.len) {
            bad++;
            continue;
        }
        for (i = 0; i < (int)n; i++)
            if (args[i].len != l[i] || memcmp(args[i].str, v[i], l[i]) != 0)
                bad++;
        cut = (size_t)rand() % b.len;
        if (req_n(b.data, cut, &argc, &consumed, &hint) != UR_PARSE_NEED_MORE ||
            hint <= cut || hint > b.len)
            bad++;
    }
    CHECK_EQ_U64(bad, 0);
    ur_buf_deinit(&b);
}

static void test_encoders(void)
{
    struct ur_buf b;
    const char *v[] = {"CNT.GET", "1", ""};
    size_t l[] = {7, 1, 0};

    ur_buf_init(&b);
    CHECK(ur_resp_put_int(&b, 0) == 0 && BUF_IS(&b, ":0\r\n"));
    b.len = 0;
    CHECK(ur_resp_put_int(&b, UINT64_MAX) == 0 &&
          BUF_IS(&b, ":18446744073709551615\r\n"));
    b.len = 0;
    CHECK(ur_resp_put_str(&b, "a\r\nb", 4) == 0 &&
          BUF_IS(&b, "$4\r\na\r\nb\r\n"));
    b.len = 0;
    CHECK(ur_resp_put_str(&b, "", 0) == 0 && BUF_IS(&b, "$0\r\n\r\n"));
    b.len = 0;
    CHECK(ur_resp_put_arr(&b, 2) == 0 && BUF_IS(&b, "*2\r\n"));
    b.len = 0;
    CHECK(ur_resp_put_arr(&b, 0) == 0 && BUF_IS(&b, "*0\r\n"));
    b.len = 0;
    CHECK(ur_resp_put_nil(&b) == 0 && BUF_IS(&b, "$-1\r\n"));
    b.len = 0;
    CHECK(ur_resp_put_status(&b, "OK", 2) == 0 && BUF_IS(&b, "+OK\r\n"));
    b.len = 0;
    CHECK(ur_resp_put_err(&b, "ERR", "unknown command 'X'", 19) == 0 &&
          BUF_IS(&b, "-ERR unknown command 'X'\r\n"));
    b.len = 0;
    CHECK(ur_resp_put_err(&b, "ERR", "bad\r\nline\n", 10) == 0 &&
          BUF_IS(&b, "-ERR bad  line \r\n"));
    b.len = 0;
    CHECK(ur_resp_put_err(&b, "NOAUTH", "", 0) == 0 &&
          BUF_IS(&b, "-NOAUTH\r\n"));
    b.len = 0;
    CHECK(ur_resp_put_request(&b, 3, v, l) == 0 &&
          BUF_IS(&b, "*3\r\n$7\r\nCNT.GET\r\n$1\r\n1\r\n$0\r\n\r\n"));
    /* encoders append */
    CHECK(ur_resp_put_int(&b, 5) == 0);
    CHECK(b.len > 4 && memcmp(b.data + b.len - 4, ":5\r\n", 4) == 0);
    ur_buf_deinit(&b);
}

static enum ur_parse rep(const char *s, size_t *consumed, char *type,
                         int64_t *num)
{
    return ur_resp_parse_reply(s, strlen(s), 1024, consumed, type, num);
}

static void test_reply_parse(void)
{
    static const char *ok[] = {
        "+OK\r\n",
        "+\r\n",
        "-ERR unknown command 'X'\r\n",
        ":0\r\n",
        ":-1\r\n",
        ":9223372036854775807\r\n",
        ":-9223372036854775808\r\n",
        "$0\r\n\r\n",
        "$-1\r\n",
        "$5\r\na\r\nbc\r\n",
        "*0\r\n",
        "*-1\r\n",
        "*2\r\n:1\r\n:2\r\n",
        "*3\r\n$1\r\nx\r\n*2\r\n+OK\r\n$-1\r\n*-1\r\n",
        "*2\r\n*1\r\n*0\r\n-ERR x\r\n",
    };
    char type;
    int64_t num;
    size_t i, k, consumed;

    for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        size_t n = strlen(ok[i]);
        int bad = 0;

        CHECK(rep(ok[i], &consumed, &type, &num) == UR_PARSE_OK);
        CHECK_EQ_U64(consumed, n);
        CHECK(type == ok[i][0]);
        for (k = 0; k < n; k++)
            if (ur_resp_parse_reply(ok[i], k, 1024, &consumed, &type, &num) !=
                UR_PARSE_NEED_MORE)
                bad++;
        CHECK_EQ_U64(bad, 0);
    }
    CHECK(rep(":-1\r\n", &consumed, &type, &num) == UR_PARSE_OK && num == -1);
    CHECK(rep(":42\r\n", &consumed, &type, &num) == UR_PARSE_OK && num == 42);
    CHECK(rep(":-9223372036854775808\r\n", &consumed, &type, &num) ==
              UR_PARSE_OK &&
          num == INT64_MIN);
    CHECK(rep("$-1\r\n", &consumed, &type, &num) == UR_PARSE_OK &&
          type == '$' && num == -1);
    CHECK(rep("*-1\r\n", &consumed, &type, &num) == UR_PARSE_OK &&
          type == '*' && num == -1);
    CHECK(rep("*2\r\n:7\r\n:8\r\n", &consumed, &type, &num) == UR_PARSE_OK &&
          type == '*' && num == 2);
    CHECK(rep("$3\r\nabc\r\n", &consumed, &type, &num) == UR_PARSE_OK &&
          num == 3);

    /* Pipelined replies: one at a time. */
    {
        const char *s = ":1\r\n+OK\r\n*1\r\n:2\r\n";
        size_t pos = 0, n = 0, len = strlen(s);

        while (ur_resp_parse_reply(s + pos, len - pos, 1024, &consumed, &type,
                                   &num) == UR_PARSE_OK) {
            pos += consumed;
            n++;
        }
        CHECK(n == 3 && pos == len);
    }
}

static void test_reply_malformed(void)
{
    static const char *invalid[] = {
        "x\r\n",
        "\r\n",
        ":\r\n",
        ":abc\r\n",
        ":01\r\n",
        ":1\n",
        ":9223372036854775808\r\n",
        ":-9223372036854775809\r\n",
        ":--1\r\n",
        "$-2\r\n",
        "$3\r\nabcd\r\n",
        "$3\r\nab\r\n\r\n",
        "*-2\r\n",
        "*1\r\nx",
        "+O\nK\r\n",
        "+OK\n",
        "+OK\rX",
        "-ERR\n",
    };
    char type;
    int64_t num;
    size_t i, consumed;

    for (i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
        enum ur_parse st = rep(invalid[i], &consumed, &type, &num);

        if (st != UR_PARSE_INVALID)
            fprintf(stderr, "reply case %zu: %s\n", i, ur_parse_name(st));
        CHECK(st == UR_PARSE_INVALID);
    }

    /* Limits. */
    CHECK(rep("$1025\r\n", &consumed, &type, &num) == UR_PARSE_TOO_BIG);
    CHECK(rep("*1025\r\n", &consumed, &type, &num) == UR_PARSE_TOO_BIG);
    CHECK(rep("$4294967296\r\n", &consumed, &type, &num) == UR_PARSE_TOO_BIG);
    CHECK(rep("*1\r\n$99999999999999999999\r\n", &consumed, &type, &num) ==
          UR_PARSE_INVALID); /* not an int64 */
    /* A huge count with few bytes behind it just waits, cheaply. */
    CHECK(rep("*1024\r\n:1\r\n", &consumed, &type, &num) == UR_PARSE_NEED_MORE);
    {
        char line[2048];

        line[0] = '+';
        memset(line + 1, 'a', sizeof(line) - 1);
        CHECK(ur_resp_parse_reply(line, sizeof(line), 1024, &consumed, &type,
                                  &num) == UR_PARSE_TOO_BIG);
        CHECK(ur_resp_parse_reply(line, 1000, 1024, &consumed, &type, &num) ==
              UR_PARSE_NEED_MORE);
    }
}

static void test_reply_depth(void)
{
    char s[256];
    char type;
    int64_t num;
    size_t consumed, n;
    int d, i;

    for (d = UR_MAX_DEPTH - 1; d <= UR_MAX_DEPTH + 2; d++) {
        n = 0;
        for (i = 0; i < d; i++)
            n += (size_t)sprintf(s + n, "*1\r\n");
        n += (size_t)sprintf(s + n, ":1\r\n");
        CHECK(ur_resp_parse_reply(s, n, 1024, &consumed, &type, &num) ==
              (d <= UR_MAX_DEPTH ? UR_PARSE_OK : UR_PARSE_INVALID));
        /* an empty array innermost is a level too; a nil one is not */
        memcpy(s + n - 4, "*0\r\n", 4);
        CHECK(ur_resp_parse_reply(s, n, 1024, &consumed, &type, &num) ==
              (d + 1 <= UR_MAX_DEPTH ? UR_PARSE_OK : UR_PARSE_INVALID));
        n += 1;
        memcpy(s + n - 5, "*-1\r\n", 5);
        CHECK(ur_resp_parse_reply(s, n, 1024, &consumed, &type, &num) ==
              (d <= UR_MAX_DEPTH ? UR_PARSE_OK : UR_PARSE_INVALID));
    }
}

int main(void)
{
    T_RUN(test_multibulk_ok);
    T_RUN(test_prefixes);
    T_RUN(test_multibulk_malformed);
    T_RUN(test_multibulk_too_big);
    T_RUN(test_header_widths);
    T_RUN(test_inline);
    T_RUN(test_inline_limits);
    T_RUN(test_inline_quotes);
    T_RUN(test_bytewise_pipeline);
    T_RUN(test_random_round_trip);
    T_RUN(test_encoders);
    T_RUN(test_reply_parse);
    T_RUN(test_reply_malformed);
    T_RUN(test_reply_depth);
    T_END();
}
