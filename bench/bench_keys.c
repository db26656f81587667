/*
 * bench_keys.c - see bench_keys.h.
 *
 * Rejection-inversion samples the continuous hat function h(x) = x^-s by
 * inverting its integral H, rounds to the nearest rank k, and accepts k
 * when the rounding stayed under the hat (the squeeze test accepts most
 * draws without evaluating H again). helper1/helper2 keep log1p(x)/x and
 * expm1(x)/x exact near x = 0, which is s = 1.
 */
#include "bench_keys.h"

#include <math.h>

void bench_rng_seed(struct bench_rng *r, uint64_t seed)
{
    r->s = seed;
}

uint64_t bench_rng_next(struct bench_rng *r)
{
    uint64_t x = (r->s += 0x9e3779b97f4a7c15ULL);

    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint64_t bench_rng_below(struct bench_rng *r, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)bench_rng_next(r) * n) >> 64);
}

double bench_rng_unit(struct bench_rng *r)
{
    return (double)(bench_rng_next(r) >> 11) * 0x1.0p-53;
}

static double helper1(double x)
{
    if (fabs(x) > 1e-8)
        return log1p(x) / x;
    return 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x));
}

static double helper2(double x)
{
    if (fabs(x) > 1e-8)
        return expm1(x) / x;
    return 1 + x * 0.5 * (1 + x * (1.0 / 3) * (1 + 0.25 * x));
}

/* H(x) = (x^(1-s) - 1) / (1 - s), or log(x) when s = 1. */
static double h_integral(double s, double x)
{
    double lx = log(x);

    return helper2((1 - s) * lx) * lx;
}

static double h(double s, double x)
{
    return exp(-s * log(x));
}

static double h_integral_inverse(double s, double x)
{
    double t = x * (1 - s);

    if (t < -1)
        t = -1; /* rounding near the end of the domain */
    return exp(helper1(t) * x);
}

int bench_keys_init(struct bench_keys *k, uint64_t n, double s)
{
    if (n == 0)
        return -1;
    k->n = n;
    k->zipf = s > 0;
    k->s = s;
    if (k->zipf) {
        k->h_x1 = h_integral(s, 1.5) - 1;
        k->h_n = h_integral(s, (double)n + 0.5);
        k->squeeze = 2 - h_integral_inverse(s, h_integral(s, 2.5) - h(s, 2.0));
    }
    return 0;
}

uint64_t bench_keys_next(const struct bench_keys *k, struct bench_rng *r)
{
    if (!k->zipf)
        return bench_rng_below(r, k->n);
    for (;;) {
        double u = k->h_n + bench_rng_unit(r) * (k->h_x1 - k->h_n);
        double x = h_integral_inverse(k->s, u);
        double rank = floor(x + 0.5);

        if (rank < 1)
            rank = 1;
        else if (rank > (double)k->n)
            rank = (double)k->n;
        if (rank - x <= k->squeeze ||
            u >= h_integral(k->s, rank + 0.5) - h(k->s, rank))
            return (uint64_t)rank - 1;
    }
}
