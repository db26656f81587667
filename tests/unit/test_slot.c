/*
 * test_slot.c - slot.c: CRC16 and key slots as Redis computes them (the
 * expected slots were read from a Redis 7 node's CLUSTER KEYSLOT), and
 * the canonical-id rule of cluster mode.
 */
#include <string.h>

#include "proto.h"
#include "slot.h"
#include "t.h"

static unsigned slot_of(const char *s)
{
    return ur_key_slot(s, strlen(s));
}

static void test_table_is_the_polynomial(void)
{
    for (unsigned i = 0; i < 256; i++) {
        uint16_t crc = (uint16_t)(i << 8);
        for (int b = 0; b < 8; b++)
            crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
        CHECK_EQ_U64(ur_crc16_table[i], crc);
    }
    CHECK_EQ_U64(ur_crc16("123456789", 9), 0x31C3);
}

static void test_slots_as_redis(void)
{
    static const struct {
        const char *key;
        unsigned slot;
    } v[] = {
        {"123456789", 12739},
        {"foo", 12182},
        {"42", 8000},
        {"0", 13907},
        {"1", 9842},
        {"9223372036854775807", 13677},
        {"{user1000}.following", 3443},
        {"{user1000}.followers", 3443},
        {"foo{}{bar}", 8363},
        {"foo{{bar}}zap", 4015},
        {"foo{bar}{zap}", 5061},
        {"{}", 15257},
        {"", 0},
        {"a{b", 13340},
        {"x}y{z}", 8157},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        CHECK_EQ_U64(slot_of(v[i].key), v[i].slot);
}

static void test_integers_hash_as_their_text(void)
{
    struct ur_arg a = {.kind = UR_ARG_INT, .num = 42};

    CHECK_EQ_U64(ur_arg_slot(&a), 8000);
    CHECK_EQ_U64(ur_u64_slot(9223372036854775807ull), 13677);
    CHECK_EQ_U64(ur_u64_slot(0), 13907);
    for (uint64_t n = 0; n < 100000; n += 7) {
        char text[24];
        size_t len = ur_fmt_u64(text, n * 2654435761u);
        CHECK_EQ_U64(ur_u64_slot(n * 2654435761u), ur_key_slot(text, len));
    }
}

static struct ur_arg str(const char *s)
{
    return (struct ur_arg){
        .kind = UR_ARG_STR, .len = (uint32_t)strlen(s), .str = s};
}

static void test_canonical_ids(void)
{
    static const char *good[] = {"0", "7", "42", "9223372036854775807"};
    static const char *bad[] = {"",
                                "007",
                                "00",
                                "+1",
                                "-1",
                                " 1",
                                "1 ",
                                "1a",
                                "9223372036854775808",
                                "18446744073709551615"};
    struct ur_arg a;

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        a = str(good[i]);
        CHECK(ur_arg_canonical(&a));
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        a = str(bad[i]);
        CHECK(!ur_arg_canonical(&a));
    }
    a = (struct ur_arg){.kind = UR_ARG_INT, .num = 5};
    CHECK(ur_arg_canonical(&a));
}

int main(void)
{
    T_RUN(test_table_is_the_polynomial);
    T_RUN(test_slots_as_redis);
    T_RUN(test_integers_hash_as_their_text);
    T_RUN(test_canonical_ids);
    T_END();
}
