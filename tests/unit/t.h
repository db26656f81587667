/*
 * t.h - the unit-test harness: CHECK counts an assertion's pass or prints
 * its failure, T_RUN runs one test function (a test: it passes when none of
 * its assertions failed), T_END prints the assertion totals, then the
 * tests' "N passed, N failed" line that tests/run.py adds up, and gives
 * the exit status. One test binary per module.
 */
#ifndef UR_T_H
#define UR_T_H

#include <stdint.h>
#include <stdio.h>

static int t_pass, t_fail;             /* assertions */
static int t_tests_pass, t_tests_fail; /* test functions (T_RUN) */
static int t_fail_in_tests;            /* assertions failed inside T_RUN */

/*
 * xorshift64* for randomized tests: the same sequence on every run. A test
 * file that wants another sequence defines T_RNG_SEED before including
 * this file.
 */
#ifndef T_RNG_SEED
#define T_RNG_SEED 0x9e3779b97f4a7c15ULL
#endif
static uint64_t t_rng_state = T_RNG_SEED;

static inline uint64_t t_rng(void)
{
    uint64_t x = t_rng_state;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    t_rng_state = x;
    return x * 0x2545f4914f6cdd1dULL;
}

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (cond) {                                                            \
            t_pass++;                                                          \
        } else {                                                               \
            t_fail++;                                                          \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);    \
        }                                                                      \
    } while (0)

#define CHECK_EQ_U64(a, b)                                                     \
    do {                                                                       \
        unsigned long long t_a = (unsigned long long)(a);                      \
        unsigned long long t_b = (unsigned long long)(b);                      \
        if (t_a == t_b) {                                                      \
            t_pass++;                                                          \
        } else {                                                               \
            t_fail++;                                                          \
            fprintf(stderr, "FAIL %s:%d: %s == %s (%llu != %llu)\n", __FILE__, \
                    __LINE__, #a, #b, t_a, t_b);                               \
        }                                                                      \
    } while (0)

#define T_RUN(fn)                                                              \
    do {                                                                       \
        int t_f0 = t_fail;                                                     \
        fn();                                                                  \
        fprintf(stderr, "%s %s\n", t_fail == t_f0 ? "ok  " : "FAIL", #fn);     \
        if (t_fail == t_f0)                                                    \
            t_tests_pass++;                                                    \
        else                                                                   \
            t_tests_fail++;                                                    \
        t_fail_in_tests += t_fail - t_f0;                                      \
    } while (0)

/* An assertion failed outside every T_RUN (in main) counts as one more
 * failed test. */
#define T_END()                                                                \
    do {                                                                       \
        int t_tf = t_tests_fail + (t_fail > t_fail_in_tests);                  \
        printf("%d assertions passed, %d failed\n", t_pass, t_fail);           \
        printf("%d passed, %d failed\n", t_tests_pass, t_tf);                  \
        return t_fail ? 1 : 0;                                                 \
    } while (0)

#endif
