/*
 * fuzz_resp.c - libFuzzer target for the RESP2 codec: the input is fed to
 * the request parser (multibulk and inline) and to the reply parser, each
 * looping over pipelined units as the server and the benchmark do.
 *
 * Besides "no crash, no out-of-bounds read", it checks the contracts the
 * callers rely on: consumed within the input, arguments inside the consumed
 * bytes, a NEED_MORE hint beyond the input, a request's result not depending
 * on bytes after it, prefixes of a good request asking for more (never
 * INVALID) with a hint not past its end, and a multibulk request re-encoded
 * by ur_resp_put_request giving the same bytes.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Iprotocol \
 *       tests/fuzz/fuzz_resp.c protocol/(all .c) -o fuzz_resp
 *   ./fuzz_resp tests/fuzz/corpus/resp
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "resp.h"

#define MAX_ARGS 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct ur_limits lim = {
    .max_frame = 4096, .max_args = MAX_ARGS, .max_inline = 512};

#define ASSERT(c)                                                              \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

static void check_request(const char *p, size_t c, const struct ur_arg *args,
                          uint32_t argc)
{
    static struct ur_arg again[MAX_ARGS + 1];
    const char *v[MAX_ARGS + 1];
    size_t l[MAX_ARGS + 1];
    size_t consumed, hint, k;
    uint32_t i, n2;
    struct ur_buf b;

    for (i = 0; i < argc; i++) {
        ASSERT(args[i].kind == UR_ARG_STR);
        ASSERT(args[i].str >= p && args[i].str + args[i].len <= p + c);
        v[i] = args[i].str;
        l[i] = args[i].len;
    }
    ASSERT(ur_resp_parse_request(p, c, &lim, again, &n2, &consumed, &hint) ==
           UR_PARSE_OK);
    ASSERT(consumed == c && n2 == argc);
    for (k = c - 1;; k /= 2) {
        ASSERT(ur_resp_parse_request(p, k, &lim, again, &n2, &consumed,
                                     &hint) == UR_PARSE_NEED_MORE);
        ASSERT(hint > k && hint <= c);
        if (k == 0)
            break;
    }
    if (p[0] == '*') {
        ur_buf_init(&b);
        ASSERT(ur_resp_put_request(&b, argc, v, l) == 0);
        ASSERT(b.len == c && memcmp(b.data, p, c) == 0);
        ur_buf_deinit(&b);
    } else {
        for (i = 0; i < argc; i++)
            ASSERT(memchr(v[i], '\n', l[i]) == NULL);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct ur_arg args[MAX_ARGS + 1];
    const char *buf = (const char *)data;
    size_t pos, consumed, hint;
    enum ur_parse st;
    uint32_t argc;

    for (pos = 0;;) {
        st = ur_resp_parse_request(buf + pos, size - pos, &lim, args, &argc,
                                   &consumed, &hint);
        if (st != UR_PARSE_OK)
            break;
        ASSERT(consumed >= 1 && consumed <= size - pos);
        ASSERT(argc <= lim.max_args + 1);
        check_request(buf + pos, consumed, args, argc);
        pos += consumed;
    }
    if (st == UR_PARSE_NEED_MORE)
        ASSERT(hint > size - pos);

    for (pos = 0;;) {
        char type = 0;
        int64_t num = 0;
        size_t c2;

        st = ur_resp_parse_reply(buf + pos, size - pos, 4096, &consumed, &type,
                                 &num);
        if (st != UR_PARSE_OK)
            break;
        ASSERT(consumed >= 3 && consumed <= size - pos);
        ASSERT(type == buf[pos] && strchr("+-:$*%~>_#,(=", type) != NULL);
        ASSERT(ur_resp_parse_reply(buf + pos, consumed - 1, 4096, &c2, &type,
                                   &num) == UR_PARSE_NEED_MORE);
        pos += consumed;
    }
    return 0;
}
