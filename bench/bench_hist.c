/*
 * bench_hist.c - see bench_hist.h.
 *
 * A value v >= 128 with its highest set bit at m lies in [2^m, 2^(m+1));
 * shifting it right by m - 6 leaves 64..127, whose low six bits pick one of
 * the 64 buckets of that power of two.
 */
#include "bench_hist.h"

#include <math.h>
#include <string.h>

void bench_hist_init(struct bench_hist *h)
{
    memset(h, 0, sizeof(*h));
}

unsigned bench_hist_index(uint64_t v)
{
    unsigned m, shift;

    if (v < BH_EXACT)
        return (unsigned)v;
    m = 63u - (unsigned)__builtin_clzll(v);
    shift = m - (BH_SUB_BITS - 1);
    return BH_EXACT + (m - BH_SUB_BITS) * BH_HALF + (unsigned)(v >> shift) -
           BH_HALF;
}

uint64_t bench_hist_highest(unsigned index)
{
    unsigned k, shift;
    uint64_t low;

    if (index < BH_EXACT)
        return index;
    k = index - BH_EXACT;
    shift = k / BH_HALF + 1;
    low = (uint64_t)(k % BH_HALF + BH_HALF) << shift;
    return low + ((uint64_t)1 << shift) - 1;
}

void bench_hist_record(struct bench_hist *h, uint64_t v)
{
    h->bucket[bench_hist_index(v)]++;
    h->count++;
    h->sum += v;
    if (v > h->max)
        h->max = v;
}

void bench_hist_merge(struct bench_hist *dst, const struct bench_hist *src)
{
    for (unsigned i = 0; i < BH_BUCKETS; i++)
        dst->bucket[i] += src->bucket[i];
    dst->count += src->count;
    dst->sum += src->sum;
    if (src->max > dst->max)
        dst->max = src->max;
}

uint64_t bench_hist_quantile(const struct bench_hist *h, double q)
{
    uint64_t rank, seen = 0;

    if (h->count == 0)
        return 0;
    rank = (uint64_t)ceil(q * (double)h->count);
    if (rank < 1)
        rank = 1;
    if (rank > h->count)
        rank = h->count;
    for (unsigned i = 0; i < BH_BUCKETS; i++) {
        seen += h->bucket[i];
        if (seen >= rank) {
            uint64_t v = bench_hist_highest(i);
            return v < h->max ? v : h->max;
        }
    }
    return h->max;
}
