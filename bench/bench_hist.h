/*
 * bench_hist.h - the latency histogram of unread-bench, HDR-style:
 * log-linear buckets. Values below 128 have a bucket each; above, every
 * power of two is split into 64 equal buckets, so a value is known to within
 * 1/64 (1.6%) of itself anywhere in 0..2^64, in one fixed array. Recording
 * is a few instructions with no allocation; each thread keeps its own
 * histogram and they are merged after the run.
 */
#ifndef BENCH_HIST_H
#define BENCH_HIST_H

#include <stdint.h>

#define BH_SUB_BITS 7
#define BH_EXACT (1u << BH_SUB_BITS) /* 0..127: one bucket per value */
#define BH_HALF (BH_EXACT / 2)       /* buckets per power of two above */
#define BH_BUCKETS (BH_EXACT + (64 - BH_SUB_BITS) * BH_HALF)

struct bench_hist {
    uint64_t count;
    uint64_t max;
    uint64_t sum; /* for the mean; wraps only past 584 years of ns */
    uint64_t bucket[BH_BUCKETS];
};

void bench_hist_init(struct bench_hist *h);
void bench_hist_record(struct bench_hist *h, uint64_t v);
/* Adds src's counts to dst. */
void bench_hist_merge(struct bench_hist *dst, const struct bench_hist *src);

/*
 * The value at quantile q (0 < q <= 1): the highest value of the bucket
 * holding the ceil(q * count)-th smallest recording, capped at the exact
 * maximum, so a percentile is never reported below the truth by more than
 * the bucket width nor above the largest value seen. 0 when empty.
 */
uint64_t bench_hist_quantile(const struct bench_hist *h, double q);

/* Bucket arithmetic, exposed for the unit test. */
unsigned bench_hist_index(uint64_t v);
uint64_t bench_hist_highest(unsigned index);

#endif
