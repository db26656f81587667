/*
 * bench_keys.h - the random numbers of unread-bench: a small fast PRNG per
 * connection and the key chooser (uniform, or Zipf over ranks).
 *
 * Keys are 0..n-1 and are used as ids (uid, gid, ...) as they are: the
 * servers hash ids, so a hot key being small is no locality advantage to
 * either. With Zipf, key k is the (k+1)-th most popular.
 */
#ifndef BENCH_KEYS_H
#define BENCH_KEYS_H

#include <stdbool.h>
#include <stdint.h>

/* splitmix64: one add and a mix per number, 2^64 period, good enough
 * statistically for choosing keys and op mixes. */
struct bench_rng {
    uint64_t s;
};

void bench_rng_seed(struct bench_rng *r, uint64_t seed);
uint64_t bench_rng_next(struct bench_rng *r);
/* Uniform in 0..n-1 (n >= 1), by multiply-shift: the bias is under n/2^64. */
uint64_t bench_rng_below(struct bench_rng *r, uint64_t n);
/* Uniform in [0, 1). */
double bench_rng_unit(struct bench_rng *r);

/*
 * Key chooser. Zipf uses rejection-inversion (Hormann and Derflinger 1996,
 * as in Apache Commons RNG): O(1) set-up and O(1) expected time per key for
 * any n and exponent, so a 100M keyspace costs nothing to prepare.
 */
struct bench_keys {
    uint64_t n;
    bool zipf;
    double s;       /* Zipf exponent (theta), > 0 */
    double h_x1;    /* H(1.5) - 1 */
    double h_n;     /* H(n + 0.5) */
    double squeeze; /* quick-accept bound */
};

/* s <= 0: uniform. Returns 0, or -1 when n is 0. */
int bench_keys_init(struct bench_keys *k, uint64_t n, double s);
uint64_t bench_keys_next(const struct bench_keys *k, struct bench_rng *r);

#endif
