/*
 * test_denseid.c - denseid: indices given in order and kept, zeroed values
 * that survive growth across chunks, the max, bytes that follow the count.
 */
#include "denseid.h"
#include "t.h"

#include <stdlib.h>

static uint64_t id_of(uint32_t i)
{
    /* A bijection, so ids never repeat; 0 and UINT64_MAX included. */
    uint64_t x = (uint64_t)i * 0x9e3779b97f4a7c15ULL;

    return i == 1 ? UINT64_MAX : x ^ (x >> 29);
}

static void test_basic(void)
{
    struct denseid *d = denseid_create(NULL, sizeof(uint32_t), 100);
    uint32_t idx = 99;

    CHECK(d != NULL);
    CHECK(denseid_create(NULL, 0, 10) == NULL);
    CHECK(denseid_create(NULL, 65, 10) == NULL);
    CHECK(!denseid_find(d, 5, &idx));
    CHECK_EQ_U64(denseid_count(d), 0);
    CHECK_EQ_U64(denseid_intern(d, 5, &idx), 0);
    CHECK_EQ_U64(idx, 0);
    CHECK_EQ_U64(denseid_intern(d, 0, &idx), 0);
    CHECK_EQ_U64(idx, 1);
    CHECK_EQ_U64(denseid_intern(d, 5, &idx), 0);
    CHECK_EQ_U64(idx, 0);
    CHECK(denseid_find(d, 0, &idx));
    CHECK_EQ_U64(idx, 1);
    CHECK_EQ_U64(denseid_id(d, 0), 5);
    CHECK_EQ_U64(*(uint32_t *)denseid_val(d, 1), 0);
    CHECK_EQ_U64(denseid_count(d), 2);
    CHECK_EQ_U64(denseid_audit(d), 0);
    denseid_destroy(d);
    denseid_destroy(NULL);
}

/* Many ids: every chunk boundary, values written as they come and read
 * back after all the growth; the max refuses exactly the one past it. */
static void test_growth_and_max(void)
{
    const uint32_t n = 3 * DENSEID_CHUNK + 17;
    struct denseid *d = denseid_create(NULL, sizeof(uint64_t), n);
    size_t bytes = denseid_bytes(d), bad = 0;
    uint32_t idx;

    for (uint32_t i = 0; i < n; i++) {
        bad += denseid_intern(d, id_of(i), &idx) != 0 || idx != i;
        bad += *(uint64_t *)denseid_val(d, i) != 0;
        *(uint64_t *)denseid_val(d, i) = id_of(i) + 1;
    }
    CHECK_EQ_U64(bad, 0);
    CHECK(denseid_bytes(d) > bytes + n * 16);
    CHECK_EQ_U64(denseid_intern(d, id_of(n), &idx), DENSEID_EFULL);
    CHECK(!denseid_find(d, id_of(n), &idx));
    CHECK_EQ_U64(denseid_intern(d, id_of(7), &idx), 0); /* known: fine */
    CHECK_EQ_U64(idx, 7);
    for (uint32_t i = 0; i < n; i++) {
        bad += !denseid_find(d, id_of(i), &idx) || idx != i;
        bad += denseid_id(d, i) != id_of(i);
        bad += *(uint64_t *)denseid_val(d, i) != id_of(i) + 1;
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(denseid_count(d), n);
    CHECK_EQ_U64(denseid_audit(d), 0);
    denseid_destroy(d);
}

int main(void)
{
    T_RUN(test_basic);
    T_RUN(test_growth_and_max);
    T_END();
}
