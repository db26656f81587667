/*
 * bench_workload.c - the registry of workload rows (see bench_workload.h).
 */
#include "bench_workload.h"

#include <string.h>
#include <time.h>

/* One line per family, in families.def order, then USER's. */
static const struct bench_workload *const families[] = {
#define FAMILY(f, ID, lo, hi, unit, expiry, prefetch, title)                   \
    bench_##f##_workloads,
#include "families.def"
#undef FAMILY
    bench_user_workloads,
};

#define NFAMILIES (sizeof(families) / sizeof(families[0]))

const struct bench_workload *bench_workload_find(const char *name)
{
    for (size_t f = 0; f < NFAMILIES; f++)
        for (const struct bench_workload *w = families[f]; w->name; w++)
            if (strcmp(w->name, name) == 0)
                return w;
    return NULL;
}

void bench_workload_list(FILE *f)
{
    for (size_t i = 0; i < NFAMILIES; i++) {
        for (const struct bench_workload *w = families[i]; w->name; w++) {
            fprintf(f, "%s\n  unreadd: %s\n  redis:   %s\n", w->name,
                    w->unreadd, w->redis);
            /* a family's function library once, at its first row */
            if (w->script && w != families[i] && w->script == w[-1].script)
                fprintf(f, "  script:  as above\n");
            else if (w->script)
                fprintf(f, "  script:  %s\n", w->script);
        }
    }
}

uint32_t bench_load_value(uint64_t key, unsigned type)
{
    return 1 + (uint32_t)((key * 31 + type) % 9);
}

uint64_t bench_clock_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}
