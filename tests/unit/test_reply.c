/*
 * test_reply.c - the reply writer in each protocol (RESP2, RESP3,
 * binary) byte for byte, the integer argument parser, SLOWLOG and the
 * latency monitor's data, and CONFIG REWRITE.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "frame.h"
#include "reply.h"
#include "resp.h"
#include "slowlog.h"
#include "t.h"

static struct ur_buf out;

static void begin(struct reply *r, enum reply_proto p)
{
    out.len = 0;
    reply_begin(r, &out, p, 9);
}

/* The RESP bytes written, NUL-terminated. */
static const char *text(struct reply *r)
{
    reply_end(r);
    ur_buf_reserve(&out, 1);
    out.data[out.len] = '\0';
    return out.data;
}

static bool body_is(struct reply *r, const void *want, size_t n)
{
    reply_end(r);
    return out.len == UR_FRAME_HDR + n &&
           memcmp(out.data + UR_FRAME_HDR, want, n) == 0;
}

static void test_integers(void)
{
    struct reply r;

    begin(&r, REPLY_RESP);
    reply_int(&r, 9223372036854775807ull);
    CHECK(strcmp(text(&r), ":9223372036854775807\r\n") == 0);
    /* Past INT64_MAX: a bulk string in RESP2, a big number in RESP3, the
     * u64 as it is in binary. */
    begin(&r, REPLY_RESP);
    reply_int(&r, 9223372036854775808ull);
    CHECK(strcmp(text(&r), "$19\r\n9223372036854775808\r\n") == 0);
    begin(&r, REPLY_RESP3);
    reply_int(&r, 18446744073709551615ull);
    CHECK(strcmp(text(&r), "(18446744073709551615\r\n") == 0);
    begin(&r, REPLY_BIN);
    reply_int(&r, 18446744073709551615ull);
    CHECK(body_is(&r, "\x01\xff\xff\xff\xff\xff\xff\xff\xff", 9));
    begin(&r, REPLY_RESP);
    reply_i64(&r, -3);
    CHECK(strcmp(text(&r), ":-3\r\n") == 0);
    begin(&r, REPLY_RESP3);
    reply_i64(&r, INT64_MIN);
    CHECK(strcmp(text(&r), ":-9223372036854775808\r\n") == 0);
    begin(&r, REPLY_BIN);
    reply_i64(&r, -2);
    CHECK(body_is(&r, "\x07\xfe\xff\xff\xff\xff\xff\xff\xff", 9));
}

/* reply_pair's one-reservation path (RESP, both values in Redis's range)
 * writes what an array of two reply_ints writes, byte for byte, in every
 * protocol and on each side of INT64_MAX; and it grows a full buffer. */
static void test_pair(void)
{
    static const uint64_t vals[] = {0,
                                    1,
                                    9,
                                    10,
                                    99,
                                    100,
                                    4294967295u,
                                    9999999999999999999ull / 10,
                                    9223372036854775807ull,
                                    9223372036854775808ull,
                                    18446744073709551615ull};
    static const enum reply_proto protos[] = {REPLY_RESP, REPLY_RESP3,
                                              REPLY_BIN};
    const size_t nv = sizeof(vals) / sizeof(vals[0]);
    struct ur_buf want, tiny;
    struct reply r;
    size_t full;
    int bad = 0;

    ur_buf_init(&want);
    for (size_t p = 0; p < 3; p++) {
        for (size_t i = 0; i < nv; i++) {
            for (size_t j = 0; j < nv; j++) {
                want.len = 0;
                reply_begin(&r, &want, protos[p], 9);
                reply_arr(&r, 2);
                reply_int(&r, vals[i]);
                reply_int(&r, vals[j]);
                reply_end(&r);
                begin(&r, protos[p]);
                reply_pair(&r, vals[i], vals[j]);
                reply_end(&r);
                if (out.len != want.len ||
                    memcmp(out.data, want.data, want.len) != 0)
                    bad++;
            }
        }
    }
    CHECK_EQ_U64(bad, 0);
    begin(&r, REPLY_RESP);
    reply_pair(&r, 3, 1234567);
    CHECK(strcmp(text(&r), "*2\r\n:3\r\n:1234567\r\n") == 0);
    /* Appended after what the buffer holds, the buffer full to the byte. */
    ur_buf_init(&tiny);
    CHECK(ur_buf_reserve(&tiny, 1) == 0);
    memset(tiny.data, 'x', tiny.cap);
    tiny.len = full = tiny.cap;
    reply_begin(&r, &tiny, REPLY_RESP3, 0);
    reply_pair(&r, 18, 9223372036854775807ull);
    reply_end(&r);
    CHECK(!r.oom && tiny.len == full + 31 &&
          memcmp(tiny.data + full, "*2\r\n:18\r\n:9223372036854775807\r\n",
                 31) == 0);
    ur_buf_deinit(&tiny);
    ur_buf_deinit(&want);
}

static void test_aggregates(void)
{
    struct reply r;

    begin(&r, REPLY_RESP);
    reply_map(&r, 1);
    reply_cstr(&r, "a");
    reply_int(&r, 1);
    CHECK(strcmp(text(&r), "*2\r\n$1\r\na\r\n:1\r\n") == 0);
    begin(&r, REPLY_RESP3);
    reply_map(&r, 1);
    reply_cstr(&r, "a");
    reply_int(&r, 1);
    CHECK(strcmp(text(&r), "%1\r\n$1\r\na\r\n:1\r\n") == 0);
    begin(&r, REPLY_BIN);
    reply_map(&r, 1);
    reply_int(&r, 1);
    reply_int(&r, 2);
    CHECK(body_is(&r,
                  "\x03\x02\x00\x00\x00\x01\x01\0\0\0\0\0\0\0\x01\x02\0\0\0"
                  "\0\0\0\0",
                  23));
    begin(&r, REPLY_RESP3);
    reply_set(&r, 2);
    reply_status(&r, "a");
    reply_push(&r, 0);
    CHECK(strcmp(text(&r), "~2\r\n+a\r\n>0\r\n") == 0);
    begin(&r, REPLY_RESP);
    reply_set(&r, 1);
    reply_push(&r, 0);
    CHECK(strcmp(text(&r), "*1\r\n*0\r\n") == 0);
    /* Deferred maps. */
    for (int p = REPLY_RESP; p <= REPLY_RESP3; p += 2) {
        begin(&r, (enum reply_proto)p);
        size_t mark = reply_arr_defer(&r);
        reply_cstr(&r, "k");
        reply_cstr(&r, "v");
        reply_map_finish(&r, mark, 1);
        CHECK(strcmp(text(&r), p == REPLY_RESP3
                                   ? "%1\r\n$1\r\nk\r\n$1\r\nv\r\n"
                                   : "*2\r\n$1\r\nk\r\n$1\r\nv\r\n") == 0);
    }
}

static void test_scalars(void)
{
    struct reply r;

    begin(&r, REPLY_RESP);
    reply_nil(&r);
    reply_bool(&r, true);
    reply_double(&r, 1.5);
    CHECK(strcmp(text(&r), "$-1\r\n:1\r\n$3\r\n1.5\r\n") == 0);
    begin(&r, REPLY_RESP3);
    reply_nil(&r);
    reply_bool(&r, false);
    reply_double(&r, 1.5);
    reply_double(&r, -1.0 / 0.0);
    CHECK(strcmp(text(&r), "_\r\n#f\r\n,1.5\r\n,-inf\r\n") == 0);
    begin(&r, REPLY_RESP3);
    reply_fmt(&r, "%0300d", 7);
    CHECK(strncmp(text(&r), "$300\r\n000", 9) == 0 && out.len == 300 + 8);
}

/* The shared reply parser (bench, tests, fuzzers) reads RESP3 too. */
static bool parses(const char *s, char want_type, int64_t want_num)
{
    size_t consumed = 0;
    int64_t num = 0;
    char type = 0;

    return ur_resp_parse_reply(s, strlen(s), 1024, &consumed, &type, &num) ==
               UR_PARSE_OK &&
           consumed == strlen(s) && type == want_type && num == want_num;
}

static bool refused(const char *s)
{
    size_t consumed;
    int64_t num;
    char type;

    return ur_resp_parse_reply(s, strlen(s), 1024, &consumed, &type, &num) ==
           UR_PARSE_INVALID;
}

static void test_resp3_parse(void)
{
    CHECK(parses("%1\r\n$1\r\na\r\n:1\r\n", '%', 1));
    CHECK(parses("~2\r\n+a\r\n#t\r\n", '~', 2));
    CHECK(parses(">2\r\n_\r\n,1.5\r\n", '>', 2));
    CHECK(parses("(18446744073709551615\r\n", '(', 0));
    CHECK(parses("=7\r\ntxt:abc\r\n", '=', 7));
    CHECK(parses("%0\r\n", '%', 0));
    CHECK(refused("_x\r\n"));
    CHECK(refused("#x\r\n"));
    CHECK(refused(",\r\n"));
    CHECK(refused("%-1\r\n"));
    CHECK(refused("|1\r\n+a\r\n+b\r\n+c\r\n"));
    size_t consumed;
    int64_t num;
    char type;
    /* A map of 1 needs two values. */
    CHECK(ur_resp_parse_reply("%1\r\n:1\r\n", 8, 1024, &consumed, &type,
                              &num) == UR_PARSE_NEED_MORE);
}

static void test_push_frame(void)
{
    struct reply r;
    struct ur_frame_hdr h;

    out.len = 0;
    reply_begin_push(&r, &out, REPLY_BIN);
    reply_str(&r, "x", 1);
    reply_end(&r);
    ur_frame_hdr_decode(out.data, &h);
    CHECK(h.magic == UR_FRAME_MAGIC && h.id == 0 && h.op == 0);
    CHECK(h.flags == UR_FRAME_FLAG_PUSH && h.len == 6);
    out.len = 0;
    reply_begin_push(&r, &out, REPLY_RESP3);
    reply_push(&r, 1);
    reply_str(&r, "x", 1);
    CHECK(strcmp(text(&r), ">1\r\n$1\r\nx\r\n") == 0);
}

static void test_parse_uint(void)
{
    uint64_t v = 0;

    CHECK(ur_parse_uint("0", 1, UR_INT_MAX, &v) == UR_NUM_OK && v == 0);
    CHECK(ur_parse_uint("000000123456", 12, UR_INT_MAX, &v) == UR_NUM_OK &&
          v == 123456);
    CHECK(ur_parse_uint("9223372036854775807", 19, UR_INT_MAX, &v) ==
              UR_NUM_OK &&
          v == UR_INT_MAX);
    CHECK(ur_parse_uint("9223372036854775808", 19, UR_INT_MAX, &v) ==
          UR_NUM_RANGE);
    CHECK(ur_parse_uint("99999999999999999999999", 23, UINT64_MAX, &v) ==
          UR_NUM_RANGE);
    CHECK(ur_parse_uint("18446744073709551615", 20, UINT64_MAX, &v) ==
              UR_NUM_OK &&
          v == UINT64_MAX);
    CHECK(ur_parse_uint("18446744073709551616", 20, UINT64_MAX, &v) ==
          UR_NUM_RANGE);
    CHECK(ur_parse_uint("", 0, UR_INT_MAX, &v) == UR_NUM_SYNTAX);
    CHECK(ur_parse_uint("-1", 2, UR_INT_MAX, &v) == UR_NUM_SYNTAX);
    CHECK(ur_parse_uint("+1", 2, UR_INT_MAX, &v) == UR_NUM_SYNTAX);
    CHECK(ur_parse_uint("1 ", 2, UR_INT_MAX, &v) == UR_NUM_SYNTAX);
    CHECK(ur_parse_uint("00000000000000000000000000000009", 32, 9, &v) ==
              UR_NUM_OK &&
          v == 9);
}

/* The old one-loop ur_parse_uint, kept as the reference the fast path
 * (at most 19 significant digits) and the careful loop are checked
 * against. */
static enum ur_num ref_parse_uint(const char *s, size_t len, uint64_t max,
                                  uint64_t *res)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    uint64_t v = 0;
    bool over = false;

    if (len == 0)
        return UR_NUM_SYNTAX;
    while (i + 1 < len && u[i] == '0')
        i++;
    for (; i < len; i++) {
        uint32_t d = (uint32_t)u[i] - '0';

        if (d > 9)
            return UR_NUM_SYNTAX;
        if (v > (UINT64_MAX - d) / 10)
            over = true;
        else
            v = v * 10 + d;
    }
    if (over || v > max)
        return UR_NUM_RANGE;
    *res = v;
    return UR_NUM_OK;
}

/* Both paths at their edges, then random digit strings (leading zeros,
 * 0..26 significant digits, now and then a junk byte) against the
 * reference. */
static void test_parse_uint_paths(void)
{
    static const char one[] = "0123456789/:a \xff";
    static const char junk[] = " -+x/:\r\n\0\xff";
    const uint64_t maxes[] = {UINT64_MAX, UR_INT_MAX, 9, 0, 4294967295u};
    uint64_t v = 7;
    int mismatches = 0;

    CHECK(ur_parse_uint("9999999999999999999", 19, UINT64_MAX, &v) ==
              UR_NUM_OK &&
          v == 9999999999999999999ull);
    CHECK(ur_parse_uint("00009999999999999999999", 23, UINT64_MAX, &v) ==
              UR_NUM_OK &&
          v == 9999999999999999999ull);
    CHECK(ur_parse_uint("0000", 4, 0, &v) == UR_NUM_OK && v == 0);
    CHECK(ur_parse_uint("99999999999999999999x", 21, UINT64_MAX, &v) ==
          UR_NUM_SYNTAX);
    CHECK(ur_parse_uint("999999999x999999999", 19, UINT64_MAX, &v) ==
          UR_NUM_SYNTAX);
    CHECK(ur_parse_uint("10", 2, 9, &v) == UR_NUM_RANGE);
    v = 7;
    CHECK(ur_parse_uint("12a", 3, UINT64_MAX, &v) == UR_NUM_SYNTAX && v == 7);
    /* One byte, every max that matters. */
    for (size_t i = 0; i < sizeof(one) - 1; i++) {
        for (uint64_t max = 0; max <= 10; max++) {
            uint64_t a = 99, b = 98;
            enum ur_num sa = ur_parse_uint(&one[i], 1, max, &a);
            enum ur_num sb = ref_parse_uint(&one[i], 1, max, &b);

            if (sa != sb || (sa == UR_NUM_OK && a != b))
                mismatches++;
        }
    }
    for (int k = 0; k < 200000; k++) {
        char s[64];
        size_t zeros = t_rng() % 4 == 0 ? t_rng() % 8 : 0;
        size_t digits = t_rng() % 27, len = 0;
        uint64_t max = maxes[t_rng() % 5];
        uint64_t a = 1, b = 2;
        enum ur_num sa, sb;

        while (len < zeros)
            s[len++] = '0';
        for (size_t i = 0; i < digits; i++)
            s[len++] = (char)('0' + (i == 0 ? 1 + t_rng() % 9 : t_rng() % 10));
        if (len > 0 && t_rng() % 8 == 0)
            s[t_rng() % len] = junk[t_rng() % (sizeof(junk) - 1)];
        sa = ur_parse_uint(s, len, max, &a);
        sb = ref_parse_uint(s, len, max, &b);
        if (sa != sb || (sa == UR_NUM_OK && a != b))
            mismatches++;
        /* The out-of-line path alone (the inline one answers one digit). */
        sa = ur_parse_uint_any(s, len, max, &a);
        if (sa != sb || (sa == UR_NUM_OK && a != b))
            mismatches++;
    }
    CHECK_EQ_U64(mismatches, 0);
}

static void test_slowlog(void)
{
    struct slowlog sl = {0};
    struct ur_arg a[40];
    char big[300];

    memset(big, 'x', sizeof(big));
    for (int i = 0; i < 40; i++)
        a[i] = (struct ur_arg){.kind = UR_ARG_INT, .num = (uint64_t)i};
    slowlog_add(&sl, 3, 100, 5, "CNT.GET", 2, a, "1.2.3.4:5", "n");
    CHECK(sl.len == 1);
    const struct slowlog_entry *e = slowlog_get(&sl, 0);
    CHECK(e->argc == 3 && strcmp(e->argv[0], "CNT.GET") == 0 &&
          strcmp(e->argv[2], "1") == 0 && e->usec == 5);
    CHECK(strcmp(e->addr, "1.2.3.4:5") == 0 && strcmp(e->name, "n") == 0);
    slowlog_add(&sl, 3, 100, 6, "DOT.CHECK", 40, a, "", "");
    e = slowlog_get(&sl, 0);
    CHECK(e->argc == 32 && strcmp(e->argv[31], "... (10 more arguments)") == 0);
    a[0] = (struct ur_arg){.kind = UR_ARG_STR, .len = 300, .str = big};
    slowlog_add(&sl, 3, 100, 7, "ECHO", 1, a, "", "");
    e = slowlog_get(&sl, 0);
    CHECK(e->lens[1] == 128 + strlen("... (172 more bytes)"));
    slowlog_add(&sl, 3, 100, 8, "PING", 0, a, "", "");
    CHECK(sl.len == 3 && slowlog_get(&sl, 0)->usec == 8 &&
          slowlog_get(&sl, 2)->usec == 6);
    CHECK(slowlog_get(&sl, 0)->id == 3);
    /* A smaller max keeps the newest. */
    slowlog_add(&sl, 2, 100, 9, "PING", 0, a, "", "");
    CHECK(sl.len == 2 && slowlog_get(&sl, 0)->usec == 9 &&
          slowlog_get(&sl, 1)->usec == 8);
    slowlog_reset(&sl);
    CHECK(sl.len == 0);
    slowlog_deinit(&sl);
}

static void test_latency(void)
{
    struct latency l = {0};

    latency_add(&l, LAT_FORK, 10, 5, 0); /* monitor off */
    CHECK(l.ev[LAT_FORK].len == 0);
    latency_add(&l, LAT_FORK, 10, 5, 10); /* under the threshold */
    CHECK(l.ev[LAT_FORK].len == 0);
    latency_add(&l, LAT_FORK, 10, 15, 10);
    latency_add(&l, LAT_FORK, 10, 30, 10); /* same second: its max */
    latency_add(&l, LAT_FORK, 11, 12, 10);
    const struct latency_series *s = &l.ev[LAT_FORK];
    CHECK(s->len == 2 && s->hist[0].ms == 30 && s->hist[1].ms == 12);
    CHECK(s->latest_ms == 12 && s->max_ms == 30 && s->latest_time_s == 11);
    for (uint32_t t = 0; t < LATENCY_HISTORY + 10; t++)
        latency_add(&l, LAT_EXPIRE, 100 + t, 20, 10);
    CHECK(l.ev[LAT_EXPIRE].len == LATENCY_HISTORY);
    CHECK(latency_event_by_name("journal-fsync", 13) == LAT_FSYNC);
    CHECK(latency_event_by_name("nope", 4) == -1);
    CHECK(latency_reset(&l, -1) == 2);
    CHECK(l.ev[LAT_FORK].len == 0 && l.ev[LAT_FORK].max_ms == 0);
}

static void test_config_rewrite(void)
{
    char path[] = "/tmp/unreadd-rewrite-XXXXXX";
    char err[256], buf[2048];
    struct config c;
    int fd = mkstemp(path);
    FILE *f;
    size_t n;

    CHECK(fd >= 0);
    const char *old = "# top comment\nmaxmemory 1mb\n\n  # indented\n"
                      "unread-cap 50\nmaxmemory 2mb\nappendonly yes\n"
                      "save 900 1 60 100\n";
    CHECK(write(fd, old, strlen(old)) == (ssize_t)strlen(old));
    close(fd);
    config_init(&c);
    CHECK(config_load_file(&c, path, err, sizeof(err)) == 0);
    CHECK(c.maxmemory == 2u << 20 && c.save_seconds == 60 && c.journal);
    CHECK(config_set(&c, "slowlog-max-len", "7", err, sizeof(err)) == 0);
    CHECK(config_set_runtime(&c, "port", "1", err, sizeof(err)) == -1);
    CHECK(strstr(err, "cannot change while the server runs") != NULL);
    CHECK(config_set_runtime(&c, "save", "120 5", err, sizeof(err)) == 0 &&
          c.save_seconds == 120);
    CHECK(config_set_runtime(&c, "databases", "2", err, sizeof(err)) == -1);
    CHECK(config_rewrite(&c, path, NULL, err, sizeof(err)) == 0);
    f = fopen(path, "r");
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    CHECK(strncmp(buf,
                  "# top comment\nmaxmemory 2097152\n\n  # indented\n"
                  "unread-cap 50\nappendonly yes\nsave \"120 1\"\n",
                  strlen("# top comment\nmaxmemory 2097152\n\n  # indented\n"
                         "unread-cap 50\nappendonly yes\nsave \"120 1\"\n")) ==
          0);
    CHECK(strstr(buf, "# Generated by CONFIG REWRITE\nslowlog-max-len 7\n") !=
          NULL);
    CHECK(strstr(buf, "save-seconds") == NULL); /* save stands for it */
    /* It reads back as it was. */
    struct config back;
    config_init(&back);
    CHECK(config_load_file(&back, path, err, sizeof(err)) == 0);
    CHECK(back.save_seconds == 120 && back.slowlog_max_len == 7 &&
          back.unread_cap == 50 && back.maxmemory == 2u << 20);
    unlink(path);
    CHECK(config_rewrite(&c, "/nonexistent-dir/x.conf", NULL, err,
                         sizeof(err)) == -1);
}

int main(void)
{
    T_RUN(test_integers);
    T_RUN(test_parse_uint_paths);
    T_RUN(test_pair);
    T_RUN(test_aggregates);
    T_RUN(test_scalars);
    T_RUN(test_push_frame);
    T_RUN(test_resp3_parse);
    T_RUN(test_parse_uint);
    T_RUN(test_slowlog);
    T_RUN(test_latency);
    T_RUN(test_config_rewrite);
    ur_buf_deinit(&out);
    T_END();
}
