/*
 * test_bench.c - unread-bench's pieces without a server: the histogram's
 * buckets and percentiles, the key distributions, the request encodings of
 * every workload row for each target, and reply classification.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_hist.h"
#include "bench_keys.h"
#include "bench_wire.h"
#include "bench_workload.h"
#include "frame.h"
#include "ops.h"
#include "resp.h"
#include "t.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Buckets tile 0..2^64-1 in order, and each is at most 1/64 of its
 * values wide. */
static void test_hist_buckets(void)
{
    bool ok = true;

    for (unsigned i = 0; i + 1 < BH_BUCKETS && ok; i++) {
        uint64_t hi = bench_hist_highest(i);
        uint64_t lo = i == 0 ? 0 : bench_hist_highest(i - 1) + 1;
        ok = bench_hist_index(lo) == i && bench_hist_index(hi) == i &&
             bench_hist_index(hi + 1) == i + 1 && hi - lo <= lo / 64;
    }
    CHECK(ok);
    CHECK_EQ_U64(bench_hist_highest(BH_BUCKETS - 1), UINT64_MAX);
    CHECK_EQ_U64(bench_hist_index(UINT64_MAX), BH_BUCKETS - 1);
    CHECK_EQ_U64(bench_hist_index(127), 127);
    CHECK_EQ_U64(bench_hist_index(128), 128);
}

/* Percentiles against the exact order statistics of random samples. */
static void test_hist_quantiles(void)
{
    enum { N = 100000 };
    static struct bench_hist h, a, b;
    static uint64_t v[N];
    struct bench_rng r;
    const double qs[] = {0.5, 0.9, 0.99, 0.999, 1.0};
    bool ok = true;

    bench_rng_seed(&r, 7);
    bench_hist_init(&h);
    bench_hist_init(&a);
    bench_hist_init(&b);
    for (int i = 0; i < N; i++) {
        /* log-uniform over 1 ns .. 10 ms */
        v[i] = (uint64_t)exp(bench_rng_unit(&r) * log(1e7));
        bench_hist_record(&h, v[i]);
        bench_hist_record(i % 2 ? &a : &b, v[i]);
    }
    qsort(v, N, sizeof(v[0]), cmp_u64);
    bench_hist_merge(&a, &b);
    for (size_t k = 0; k < sizeof(qs) / sizeof(qs[0]); k++) {
        uint64_t exact = v[(size_t)(qs[k] * N + 0.5) - 1];
        uint64_t got = bench_hist_quantile(&h, qs[k]);
        ok = ok && got >= exact && got - exact <= exact / 64 &&
             bench_hist_quantile(&a, qs[k]) == got;
    }
    CHECK(ok);
    CHECK_EQ_U64(h.max, v[N - 1]);
    CHECK_EQ_U64(bench_hist_quantile(&h, 1.0), v[N - 1]);
    CHECK_EQ_U64(a.count, N);
    bench_hist_init(&h);
    CHECK_EQ_U64(bench_hist_quantile(&h, 0.99), 0);
}

static void test_keys_uniform(void)
{
    struct bench_keys k;
    struct bench_rng r;
    unsigned seen[10] = {0};
    bool ok = true;

    CHECK(bench_keys_init(&k, 0, 0) == -1);
    CHECK(bench_keys_init(&k, 10, 0) == 0);
    bench_rng_seed(&r, 1);
    for (int i = 0; i < 100000; i++) {
        uint64_t key = bench_keys_next(&k, &r);
        ok = ok && key < 10;
        if (key < 10)
            seen[key]++;
    }
    CHECK(ok);
    for (int i = 0; i < 10; i++)
        CHECK(seen[i] > 9500 && seen[i] < 10500);
}

/* Zipf frequencies against k^-s / H(n, s). */
static void test_keys_zipf(void)
{
    const double ss[] = {0.5, 0.99, 1.0, 1.5};
    enum { N = 50, DRAWS = 400000 };

    for (size_t j = 0; j < sizeof(ss) / sizeof(ss[0]); j++) {
        static unsigned seen[N];
        struct bench_keys k;
        struct bench_rng r;
        double hn = 0;
        bool ok = true;

        memset(seen, 0, sizeof(seen));
        bench_keys_init(&k, N, ss[j]);
        bench_rng_seed(&r, 3);
        for (int i = 0; i < DRAWS; i++) {
            uint64_t key = bench_keys_next(&k, &r);
            ok = ok && key < N;
            if (key < N)
                seen[key]++;
        }
        for (int i = 1; i <= N; i++)
            hn += pow(i, -ss[j]);
        for (int i = 0; i < 5 && ok; i++) {
            double want = DRAWS * pow(i + 1, -ss[j]) / hn;
            ok = fabs(seen[i] - want) < 5 * sqrt(want) + 1;
        }
        CHECK(ok);
    }
}

/* The workload's op for one key, encoded for target t into b. */
static unsigned encode_op(const char *name, enum bench_target t, uint64_t key,
                          unsigned types, struct ur_buf *b)
{
    const struct bench_workload *w = bench_workload_find(name);
    struct bench_ctx x = {bench_dialect_of(t), types, 0, {0}};
    struct bench_cmd cmds[BENCH_OP_MAX];
    struct bench_rng r;
    unsigned n;

    memset(x.sha, 'a', BENCH_SHA_LEN);
    bench_rng_seed(&r, 1);
    n = w->op(&x, key, &r, cmds);
    for (unsigned i = 0; i < n; i++)
        if (bench_encode(b, t, &cmds[i], i + 1) != 0)
            return 0;
    return n;
}

static bool buf_is(const struct ur_buf *b, const char *s)
{
    return b->len == strlen(s) && memcmp(b->data, s, b->len) == 0;
}

static void test_encode_cnt(void)
{
    static const struct ur_limits lim = {1 << 20, 64, 1 << 16};
    struct ur_arg args[64];
    struct ur_frame_req req;
    struct ur_buf b;
    size_t used, hint;

    ur_buf_init(&b);
    CHECK(encode_op("cnt-get", BENCH_REDIS, 42, 1, &b) == 1);
    CHECK(buf_is(&b, "*3\r\n$4\r\nHGET\r\n$4\r\nu:42\r\n$1\r\n0\r\n"));
    b.len = 0;
    CHECK(encode_op("cnt-get", BENCH_TEXT, 42, 1, &b) == 1);
    CHECK(buf_is(&b, "*3\r\n$7\r\nCNT.GET\r\n$2\r\n42\r\n$1\r\n0\r\n"));
    b.len = 0;
    CHECK(encode_op("cnt-incr", BENCH_REDIS, 7, 1, &b) == 1);
    CHECK(buf_is(&b, "*5\r\n$7\r\nEVALSHA\r\n$40\r\n"
                     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n"
                     "$1\r\n1\r\n$3\r\nu:7\r\n$1\r\n0\r\n"));
    b.len = 0;
    CHECK(encode_op("cnt-incr", BENCH_BINARY, 7, 1, &b) == 1);
    CHECK(ur_frame_parse_request(b.data, b.len, &lim, args, &req, &used,
                                 &hint) == UR_PARSE_OK);
    CHECK(used == b.len && req.op == UR_OP_CNT_INCR && req.id == 1);
    CHECK(req.argc == 2 && args[0].kind == UR_ARG_INT && args[0].num == 7 &&
          args[1].kind == UR_ARG_INT && args[1].num == 0);
    ur_buf_deinit(&b);
}

/* Every row builds every target's requests, and they parse as requests. */
static void test_every_row_encodes(void)
{
    static const char *const names[] = {
        "cnt-incr",   "cnt-get",    "cnt-mix",   "conv-seq", "conv-read",
        "conv-mix",   "grp-unread", "grp-total", "grp-mix",  "grp-post",
        "bc-publish", "bc-unread",  "bc-read"};
    static const struct ur_limits lim = {1 << 20, 64, 1 << 16};
    struct ur_arg args[65];
    bool ok = true;

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        for (int t = BENCH_BINARY; t <= BENCH_REDIS; t++) {
            for (uint64_t key = 0; key < 50; key++) {
                struct ur_buf b;
                size_t used, hint;
                struct ur_frame_req req;
                uint32_t argc;

                ur_buf_init(&b);
                ok = ok &&
                     encode_op(names[i], (enum bench_target)t, key, 4, &b) == 1;
                if (t == BENCH_BINARY)
                    ok = ok &&
                         ur_frame_parse_request(b.data, b.len, &lim, args, &req,
                                                &used, &hint) == UR_PARSE_OK;
                else
                    ok = ok &&
                         ur_resp_parse_request(b.data, b.len, &lim, args, &argc,
                                               &used, &hint) == UR_PARSE_OK;
                ok = ok && used == b.len;
                ur_buf_deinit(&b);
            }
        }
    }
    CHECK(ok);
    CHECK(bench_workload_find("cnt-mix") != NULL);
    CHECK(bench_workload_find("nope") == NULL);
}

/* The load step: a CNT.SET per type for unreadd, one HSET for Redis (key
 * 2 holds 9 and 1). */
static void test_load_step(void)
{
    const struct bench_workload *w = bench_workload_find("cnt-get");
    struct bench_ctx u = {BENCH_UNREADD, 3, 0, {0}},
                     r = {BENCH_REDIS_CMDS, 2, 0, {0}};
    struct bench_cmd cmds[BENCH_OP_MAX];
    struct ur_buf b;

    CHECK(bench_load_value(2, 0) == 9 && bench_load_value(2, 1) == 1);
    CHECK(w->load(&u, 2, cmds) == 3);
    CHECK(cmds[2].op == UR_OP_CNT_SET && cmds[2].argv[0].num == 2 &&
          cmds[2].argv[1].num == 2 &&
          cmds[2].argv[2].num == bench_load_value(2, 2));
    CHECK(w->load(&r, 2, cmds) == 1);
    ur_buf_init(&b);
    CHECK(bench_encode(&b, BENCH_REDIS, &cmds[0], 1) == 0);
    CHECK(buf_is(&b, "*8\r\n$4\r\nHSET\r\n$3\r\nu:2\r\n$1\r\n0\r\n$1\r\n9\r\n"
                     "$1\r\n1\r\n$1\r\n1\r\n$5\r\ntotal\r\n$2\r\n10\r\n"));
    ur_buf_deinit(&b);
}

/* Redis functions: FCALL name nkeys keys... args... (bc-unread, channel 0). */
static void test_encode_fcall(void)
{
    struct ur_buf b;

    ur_buf_init(&b);
    CHECK(encode_op("bc-unread", BENCH_REDIS, 42, 1, &b) == 1);
    CHECK(buf_is(&b, "*6\r\n$5\r\nFCALL\r\n$9\r\nbc_unread\r\n$1\r\n2\r\n"
                     "$4\r\nbh:0\r\n$4\r\nbo:0\r\n$2\r\n42\r\n"));
    b.len = 0;
    CHECK(encode_op("grp-total", BENCH_TEXT, 42, 1, &b) == 1);
    CHECK(buf_is(&b, "*2\r\n$9\r\nGRP.TOTAL\r\n$2\r\n42\r\n"));
    ur_buf_deinit(&b);
}

/*
 * CONV: the load step leaves max at the process's base seq and v unread
 * (READ to base - v, then SEQ base; Redis: the same three fields and the
 * total), and conv-seq's seqs for one conversation then strictly increase
 * past the base, the same counter serving both dialects.
 */
static void test_conv_seqs(void)
{
    const struct bench_workload *w = bench_workload_find("conv-seq");
    struct bench_ctx u = {BENCH_UNREADD, 1, 0, {0}},
                     r = {BENCH_REDIS_CMDS, 1, 0, {0}};
    struct bench_cmd cmds[BENCH_OP_MAX];
    static struct bench_cmd load[BENCH_LOAD_MAX];
    struct bench_rng rng;
    uint64_t prev, v = bench_load_value(9, 0);
    bool ok = true;

    CHECK(w->load(&u, 9, load) == 2);
    CHECK(load[0].op == UR_OP_CONV_READ && load[1].op == UR_OP_CONV_SEQ);
    CHECK_EQ_U64(load[1].argv[2].num - load[0].argv[2].num, v);
    prev = load[1].argv[2].num;
    CHECK(w->load(&r, 9, load) == 2);
    CHECK(strcmp(load[0].name, "HSET") == 0 && load[0].argc == 7);
    CHECK_EQ_U64(load[0].argv[2].num, v);
    CHECK_EQ_U64(load[0].argv[4].num, prev);
    CHECK_EQ_U64(load[0].argv[6].num, prev - v);
    CHECK(load[1].argv[1].len == 5 && load[1].argv[2].num == v);
    bench_rng_seed(&rng, 1);
    for (int i = 0; i < 100; i++) {
        bool redis = i % 2;
        uint64_t seq;

        ok = ok && w->op(redis ? &r : &u, 9, &rng, cmds) == 1;
        seq = cmds[0].argv[redis ? 4 : 2].num;
        ok = ok && seq > prev;
        prev = seq;
    }
    CHECK(ok);
}

/* GRP: users 100b.. share groups 8b..; the load step joins the user to
 * its `types` groups, then posts to its group uid mod types now. */
static void test_grp_load(void)
{
    const struct bench_workload *w = bench_workload_find("grp-post");
    struct bench_ctx u = {BENCH_UNREADD, 3, 0, {0}};
    static struct bench_cmd load[BENCH_LOAD_MAX];
    uint64_t now = bench_clock_ms();
    struct ur_buf b;

    CHECK(w->load(&u, 250, load) == 4);
    for (unsigned i = 0; i < 3; i++)
        CHECK(load[i].op == UR_OP_GRP_JOIN && load[i].argv[0].num == 250 &&
              load[i].argv[1].num == 16 + i);
    CHECK(load[3].op == UR_OP_GRP_POST && load[3].argv[0].num == 17);
    CHECK(load[3].argv[1].num + 1000 > now && load[3].argv[1].num < now + 1000);
    u.dialect = BENCH_REDIS_CMDS;
    CHECK(w->load(&u, 250, load) == 4);
    ur_buf_init(&b);
    CHECK(bench_encode(&b, BENCH_REDIS, &load[1], 1) == 0);
    CHECK(buf_is(&b, "*6\r\n$5\r\nFCALL\r\n$8\r\ngrp_join\r\n$1\r\n2\r\n"
                     "$6\r\ngs:250\r\n$5\r\ngh:17\r\n$2\r\n17\r\n"));
    ur_buf_deinit(&b);
}

static uint8_t resp_kind(const char *s, size_t *consumed)
{
    struct bench_reply r;

    if (bench_parse_reply(BENCH_REDIS, s, strlen(s), &r) != UR_PARSE_OK)
        return 0;
    *consumed = r.consumed;
    return r.kind;
}

static void test_parse_replies(void)
{
    struct bench_reply r;
    struct ur_buf b;
    size_t off, n = 0;

    CHECK(resp_kind(":5\r\n", &n) == UR_VAL_INT && n == 4);
    CHECK(resp_kind("$1\r\n5\r\n", &n) == UR_VAL_STR && n == 7);
    CHECK(resp_kind("$-1\r\n", &n) == UR_VAL_NIL);
    CHECK(resp_kind("*2\r\n:1\r\n:2\r\n", &n) == UR_VAL_ARR && n == 12);
    CHECK(resp_kind("-ERR no\r\n", &n) == UR_VAL_ERR);
    CHECK(bench_parse_reply(BENCH_TEXT, "*2\r\n:1\r\n", 8, &r) ==
          UR_PARSE_NEED_MORE);
    CHECK(bench_parse_reply(BENCH_TEXT, "-ERR bad\r\n", 10, &r) ==
              UR_PARSE_OK &&
          r.text_len == 7 && memcmp(r.text, "ERR bad", 7) == 0);

    ur_buf_init(&b);
    CHECK(ur_frame_reply_begin(&b, 9, &off) == 0);
    CHECK(ur_frame_put_err(&b, UR_E_ARITY, "arity", 5) == 0);
    ur_frame_reply_end(&b, off, UR_E_ARITY);
    CHECK(bench_parse_reply(BENCH_BINARY, b.data, b.len, &r) == UR_PARSE_OK);
    CHECK(r.id == 9 && r.kind == UR_VAL_ERR && r.text_len == 5);
    CHECK(r.consumed == b.len);
    CHECK(bench_parse_reply(BENCH_BINARY, b.data, b.len - 1, &r) ==
          UR_PARSE_NEED_MORE);
    ur_buf_deinit(&b);
}

/* Encodes cmds[0..n) for t into b and parses each back as a request. */
static bool encode_parses(const struct bench_cmd *cmds, unsigned n,
                          enum bench_target t)
{
    static const struct ur_limits lim = {1 << 20, 64, 1 << 16};
    struct ur_arg args[65];
    struct ur_frame_req req;
    struct ur_buf b;
    size_t used, off = 0, hint;
    uint32_t argc;
    bool ok = n > 0;

    ur_buf_init(&b);
    for (unsigned i = 0; i < n && ok; i++)
        ok = bench_encode(&b, t, &cmds[i], i + 1) == 0;
    for (unsigned i = 0; i < n && ok; i++, off += used) {
        if (t == BENCH_BINARY)
            ok = ur_frame_parse_request(b.data + off, b.len - off, &lim, args,
                                        &req, &used, &hint) == UR_PARSE_OK;
        else
            ok = ur_resp_parse_request(b.data + off, b.len - off, &lim, args,
                                       &argc, &used, &hint) == UR_PARSE_OK;
    }
    ok = ok && off == b.len;
    ur_buf_deinit(&b);
    return ok;
}

/* Every DOT, FEED and RCPT row's ops and load steps encode for every
 * target (feed-follow is two requests; an RCPT group loads at its first
 * key only). */
static void test_dot_feed_rcpt_rows(void)
{
    static const char *const names[] = {
        "dot-click",   "dot-check", "dot-push",   "feed-unread", "feed-post",
        "feed-follow", "rcpt-read", "rcpt-count", "rcpt-mix"};
    static struct bench_cmd cmds[BENCH_LOAD_MAX];
    bool ok = true;

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const struct bench_workload *w = bench_workload_find(names[i]);

        CHECK(w != NULL && w->script != NULL);
        for (int t = BENCH_BINARY; w && t <= BENCH_REDIS; t++) {
            struct bench_ctx x = {
                bench_dialect_of((enum bench_target)t), 2, 0, {0}};
            struct bench_rng r;

            bench_rng_seed(&r, 3);
            for (uint64_t key = 0; key < 50; key++) {
                unsigned n = w->op(&x, key, &r, cmds);

                ok = ok && n == (strcmp(names[i], "feed-follow") ? 1u : 2u) &&
                     encode_parses(cmds, n, (enum bench_target)t);
                n = w->load(&x, key * 1000, cmds);
                ok = ok && encode_parses(cmds, n, (enum bench_target)t);
            }
            ok = ok && (strncmp(names[i], "rcpt", 4) != 0 ||
                        w->load(&x, 1, cmds) == 0);
        }
    }
    CHECK(ok);
}

/* An RCPT group's load: 200 joins, 1,000 sends, then each member reads up
 * to the newest message old enough (member 0: age 2, msgid 998; member
 * 199: age 50). Redis gets the same state directly: the map in HSETs of
 * 11 pairs, per message its hash and the bitmap of its first readers()
 * mapids, the sender's bit cleared. */
static void test_rcpt_load(void)
{
    const struct bench_workload *w = bench_workload_find("rcpt-count");
    struct bench_ctx u = {BENCH_UNREADD, 2, 0, {0}},
                     r = {BENCH_REDIS_CMDS, 2, 0, {0}};
    static struct bench_cmd c[BENCH_LOAD_MAX];
    unsigned n;

    n = w->load(&u, 3000, c); /* group 3 */
    CHECK_EQ_U64(n, 1400);
    CHECK(c[0].op == UR_OP_RCPT_JOIN && c[0].argv[0].num == 3 &&
          c[0].argv[1].num == 601);
    CHECK(c[200].op == UR_OP_RCPT_SEND && c[200].argv[1].num == 1 &&
          c[200].argv[2].num == 601 + 7);
    CHECK(c[1200].op == UR_OP_RCPT_READUPTO && c[1200].argv[1].num == 601 &&
          c[1200].argv[2].num == 998);
    CHECK(c[1399].op == UR_OP_RCPT_READUPTO && c[1399].argv[1].num == 800 &&
          c[1399].argv[2].num == 950);
    n = w->load(&r, 3000, c);
    CHECK(strcmp(c[0].name, "HSET") == 0 && c[0].argc == 23);
    CHECK(strcmp(c[18].name, "HSET") == 0 && c[18].argc == 1 + 2 * 2);
    /* msgid 990 (age 10): mapids 0..39 read it; its sender is 130. */
    for (unsigned i = 19; i < n; i++) {
        if (strcmp(c[i].name, "SET") == 0 &&
            c[i].argv[0].num == (3ull << 32 | 990)) {
            CHECK(c[i].argv[1].len == 5 &&
                  memcmp(c[i].argv[1].str, "\xff\xff\xff\xff\xff", 5) == 0);
            CHECK(strcmp(c[i + 1].name, "HSET") == 0); /* 130 >= 40 */
        }
        if (strcmp(c[i].name, "SETBIT") == 0)
            CHECK(c[i].argv[1].num ==
                  (c[i].argv[0].num & 0xffffffff) * 7 % 200);
    }
    CHECK(n > 19 + 1000 && n <= BENCH_LOAD_MAX);
}

int main(void)
{
    T_RUN(test_hist_buckets);
    T_RUN(test_hist_quantiles);
    T_RUN(test_keys_uniform);
    T_RUN(test_keys_zipf);
    T_RUN(test_encode_cnt);
    T_RUN(test_every_row_encodes);
    T_RUN(test_load_step);
    T_RUN(test_encode_fcall);
    T_RUN(test_conv_seqs);
    T_RUN(test_grp_load);
    T_RUN(test_parse_replies);
    T_RUN(test_dot_feed_rcpt_rows);
    T_RUN(test_rcpt_load);
    T_END();
}
