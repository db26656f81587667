/*
 * test_proto.c - proto.c (u64 codec, names) and buf.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "proto.h"
#include "t.h"

static bool parse(const char *s, uint64_t *v)
{
    return ur_parse_u64(s, strlen(s), v);
}

static void test_parse_u64_good(void)
{
    uint64_t v = 7;

    CHECK(parse("0", &v) && v == 0);
    CHECK(parse("1", &v) && v == 1);
    CHECK(parse("42", &v) && v == 42);
    CHECK(parse("4294967296", &v) && v == 4294967296ull);
    CHECK(parse("9999999999999999999", &v) && v == 9999999999999999999ull);
    CHECK(parse("10000000000000000000", &v) && v == 10000000000000000000ull);
    CHECK(parse("18446744073709551615", &v) && v == UINT64_MAX);
    CHECK(parse("18446744073709551614", &v) && v == UINT64_MAX - 1);
    /* The length bounds the parse, not a terminator. */
    CHECK(ur_parse_u64("123xyz", 3, &v) && v == 123);
}

static void test_parse_u64_bad(void)
{
    static const char *bad[] = {
        "",
        "01",
        "00",
        "007",
        "18446744073709551616",
        "18446744073709551620",
        "19000000000000000000",
        "99999999999999999999",
        "100000000000000000000",
        "000000000000000000001",
        "-1",
        "-0",
        "+1",
        " 1",
        "1 ",
        "1\n",
        "1a",
        "a1",
        "0x10",
        "1.0",
        "1e3",
        "１",
    };
    uint64_t v = 7;
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        v = 7;
        if (parse(bad[i], &v)) {
            fprintf(stderr, "accepted: \"%s\"\n", bad[i]);
            CHECK(!"bad number accepted");
        } else {
            CHECK(v == 7); /* *out untouched on failure */
        }
    }
    /* An embedded NUL is not a digit. */
    CHECK(!ur_parse_u64("1\0002", 3, &v));
}

static void test_fmt_u64(void)
{
    static const uint64_t vals[] = {0,
                                    1,
                                    9,
                                    10,
                                    11,
                                    99,
                                    100,
                                    101,
                                    999,
                                    1000,
                                    12345,
                                    4294967295ull,
                                    4294967296ull,
                                    9999999999999999999ull,
                                    10000000000000000000ull,
                                    UINT64_MAX};
    char buf[32], want[32];
    uint64_t v, p10 = 1;
    size_t i, n;
    int k;

    for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        n = ur_fmt_u64(buf, vals[i]);
        snprintf(want, sizeof(want), "%llu", (unsigned long long)vals[i]);
        CHECK_EQ_U64(n, strlen(want));
        CHECK(strcmp(buf, want) == 0);
    }
    /* Every power of ten and its neighbours: the digit-count edges. */
    for (k = 0; k < 20; k++, p10 *= 10) {
        uint64_t around[3] = {p10 - 1, p10, p10 + 1};
        int j;

        for (j = 0; j < 3; j++) {
            n = ur_fmt_u64(buf, around[j]);
            snprintf(want, sizeof(want), "%llu", (unsigned long long)around[j]);
            CHECK(n == strlen(want) && strcmp(buf, want) == 0);
        }
    }
    /* Every power of two and its neighbours: the edges of the digit
     * count's estimate from the bit length. */
    for (k = 0; k < 64; k++) {
        uint64_t p2 = 1ull << k;
        uint64_t around[3] = {p2 - 1, p2, p2 + 1};

        for (int j = 0; j < 3; j++) {
            n = ur_fmt_u64(buf, around[j]);
            snprintf(want, sizeof(want), "%llu", (unsigned long long)around[j]);
            CHECK(n == strlen(want) && strcmp(buf, want) == 0);
        }
    }
    /* Random values round-trip through the parser. */
    srand(1234);
    for (i = 0; i < 10000; i++) {
        uint64_t r = ((uint64_t)rand() << 42) ^ ((uint64_t)rand() << 21) ^
                     (uint64_t)rand();

        r >>= rand() % 64;
        n = ur_fmt_u64(buf, r);
        if (!ur_parse_u64(buf, n, &v) || v != r) {
            CHECK(!"fmt/parse round trip");
            break;
        }
    }
    CHECK(i == 10000);
}

static void test_names(void)
{
    CHECK(strcmp(ur_parse_name(UR_PARSE_OK), "OK") == 0);
    CHECK(strcmp(ur_parse_name(UR_PARSE_NEED_MORE), "NEED_MORE") == 0);
    CHECK(strcmp(ur_parse_name(UR_PARSE_INVALID), "INVALID") == 0);
    CHECK(strcmp(ur_parse_name(UR_PARSE_TOO_BIG), "TOO_BIG") == 0);

    CHECK(strcmp(ur_err_prefix(UR_E_ERR), "ERR") == 0);
    CHECK(strcmp(ur_err_prefix(UR_E_ARITY), "ERR") == 0);
    CHECK(strcmp(ur_err_prefix(UR_E_NOAUTH), "NOAUTH") == 0);
    CHECK(strcmp(ur_err_prefix(UR_E_OOM), "OOM") == 0);
    CHECK(strcmp(ur_err_prefix(UR_E_MISCONF), "MISCONF") == 0);
    CHECK(strcmp(ur_err_prefix(UR_E_WRONGPASS), "WRONGPASS") == 0);
    CHECK(strcmp(ur_err_prefix(9999), "ERR") == 0);

    CHECK(strcmp(ur_err_name(UR_E_OK), "OK") == 0);
    CHECK(strcmp(ur_err_name(UR_E_ARITY), "ARITY") == 0);
    CHECK(strcmp(ur_err_name(UR_E_UNKNOWN), "UNKNOWN") == 0);
    CHECK(strcmp(ur_err_name(UR_E_PROTO), "PROTO") == 0);
    CHECK(strcmp(ur_err_name(UR_E__COUNT), "ERR") == 0);
    CHECK(strcmp(ur_err_name(UINT32_MAX), "ERR") == 0);
}

static void test_buf_append_consume(void)
{
    struct ur_buf b;
    char big[1000];
    size_t i;

    ur_buf_init(&b);
    CHECK(b.data == NULL && b.len == 0 && b.cap == 0);
    CHECK(ur_buf_append(&b, "", 0) == 0 && b.len == 0);
    CHECK(ur_buf_append(&b, "hello", 5) == 0);
    CHECK(b.len == 5 && memcmp(b.data, "hello", 5) == 0);
    CHECK(ur_buf_append(&b, " world", 6) == 0);
    CHECK(b.len == 11 && memcmp(b.data, "hello world", 11) == 0);

    ur_buf_consume(&b, 6);
    CHECK(b.len == 5 && memcmp(b.data, "world", 5) == 0);
    ur_buf_consume(&b, 0);
    CHECK(b.len == 5 && memcmp(b.data, "world", 5) == 0);
    ur_buf_consume(&b, 5);
    CHECK(b.len == 0);

    for (i = 0; i < sizeof(big); i++)
        big[i] = (char)i;
    for (i = 0; i < 100; i++)
        CHECK(ur_buf_append(&b, big, sizeof(big)) == 0);
    CHECK_EQ_U64(b.len, 100 * sizeof(big));
    CHECK(b.cap >= b.len);
    ur_buf_consume(&b, 999 * 100 + 1);
    CHECK_EQ_U64(b.len, 99);
    CHECK((uint8_t)b.data[0] == (uint8_t)((999 * 100 + 1) % 1000));

    ur_buf_deinit(&b);
    CHECK(b.data == NULL && b.len == 0 && b.cap == 0);
    /* Reusable after deinit. */
    CHECK(ur_buf_append(&b, "x", 1) == 0 && b.len == 1 && b.data[0] == 'x');
    ur_buf_deinit(&b);
}

static void test_buf_growth(void)
{
    struct ur_buf b;
    size_t i, grows = 0, last = 0;

    ur_buf_init(&b);
    /* One byte at a time up to 1 MiB: geometric growth means few reallocs. */
    for (i = 0; i < (1u << 20); i++) {
        char c = (char)i;

        if (ur_buf_append(&b, &c, 1) != 0)
            break;
        if (b.cap != last) {
            CHECK(last == 0 || b.cap >= 2 * last);
            last = b.cap;
            grows++;
        }
    }
    CHECK_EQ_U64(i, 1u << 20);
    CHECK(grows <= 20);
    CHECK(ur_buf_reserve(&b, 0) == 0);
    CHECK(ur_buf_reserve(&b, SIZE_MAX) == -1); /* overflow: refused */
    CHECK_EQ_U64(b.len, 1u << 20);             /* and unchanged */
    CHECK(ur_buf_append(&b, "x", SIZE_MAX) == -1);
    CHECK_EQ_U64(b.len, 1u << 20);
    ur_buf_deinit(&b);
}

static void test_buf_reserve_shrink(void)
{
    struct ur_buf b;
    size_t cap;

    ur_buf_init(&b);
    CHECK(ur_buf_reserve(&b, 10000) == 0);
    CHECK(b.cap >= 10000 && b.len == 0);
    cap = b.cap;
    CHECK(ur_buf_reserve(&b, 100) == 0 && b.cap == cap); /* already room */
    CHECK(ur_buf_append(&b, "abc", 3) == 0);

    ur_buf_shrink(&b, 1024);
    CHECK_EQ_U64(b.cap, 1024);
    CHECK(b.len == 3 && memcmp(b.data, "abc", 3) == 0);
    ur_buf_shrink(&b, 4096); /* never grows */
    CHECK_EQ_U64(b.cap, 1024);
    ur_buf_shrink(&b, 0); /* keeps what is in use */
    CHECK_EQ_U64(b.cap, 3);
    CHECK(memcmp(b.data, "abc", 3) == 0);
    ur_buf_consume(&b, 3);
    ur_buf_shrink(&b, 0); /* empty: storage released */
    CHECK(b.cap == 0 && b.data == NULL);
    CHECK(ur_buf_append(&b, "z", 1) == 0 && b.data[0] == 'z');
    ur_buf_deinit(&b);
}

int main(void)
{
    T_RUN(test_parse_u64_good);
    T_RUN(test_parse_u64_bad);
    T_RUN(test_fmt_u64);
    T_RUN(test_names);
    T_RUN(test_buf_append_consume);
    T_RUN(test_buf_growth);
    T_RUN(test_buf_reserve_shrink);
    T_END();
}
