/*
 * t.h - the unit-test harness: CHECK counts a pass or prints the failure,
 * T_RUN runs one test function, T_END prints "N passed, N failed" and gives
 * the exit status. One test binary per module.
 */
#ifndef UR_T_H
#define UR_T_H

#include <stdio.h>

static int t_pass, t_fail;

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
    } while (0)

#define T_END()                                                                \
    do {                                                                       \
        printf("%d passed, %d failed\n", t_pass, t_fail);                      \
        return t_fail ? 1 : 0;                                                 \
    } while (0)

#endif
