/*
 * slowlog.c - see slowlog.h.
 */
#include "slowlog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void entry_free(struct slowlog_entry *e)
{
    free(e->argv);
    memset(e, 0, sizeof(*e));
}

/* One argument as the entry keeps it: its text (an integer formatted),
 * cut at SLOWLOG_ARG_BYTES with "... (N more bytes)" as Redis does. */
static size_t arg_form(const struct ur_arg *a, char *num, const char **s,
                       char *tail, size_t *tail_len)
{
    size_t n;

    if (a->kind == UR_ARG_INT) {
        n = ur_fmt_u64(num, a->num);
        *s = num;
    } else {
        n = a->len;
        *s = a->str;
    }
    *tail_len = 0;
    if (n > SLOWLOG_ARG_BYTES) {
        *tail_len = (size_t)snprintf(tail, 48, "... (%zu more bytes)",
                                     n - SLOWLOG_ARG_BYTES);
        n = SLOWLOG_ARG_BYTES;
    }
    return n;
}

void slowlog_add(struct slowlog *sl, uint32_t max_len, uint64_t time_s,
                 uint64_t usec, const char *name, uint32_t argc,
                 const struct ur_arg *argv, const char *addr,
                 const char *client_name)
{
    /* Strings kept: the name, then arguments; past SLOWLOG_ARGS the last
     * one says how many more there were (as Redis: 32 strings at most). */
    uint32_t shown = argc + 1 > SLOWLOG_ARGS ? SLOWLOG_ARGS - 2 : argc;
    uint32_t total = shown + 1 + (shown < argc ? 1 : 0);
    char more[48], num[24], tail[48];
    size_t bytes = strlen(name) + 1;
    struct slowlog_entry e = {0};
    size_t more_len = 0, tl;
    const char *s;
    char *p;

    if (max_len == 0)
        return;
    if (sl->cap != max_len) {
        slowlog_trim(sl, max_len);
        if (sl->cap != max_len) {
            /* Re-lay the ring at the new capacity, newest first. */
            struct slowlog_entry *ring = calloc(max_len, sizeof(*ring));
            uint32_t keep = sl->len < max_len ? sl->len : max_len;

            if (ring == NULL)
                return;
            for (uint32_t i = 0; i < keep; i++)
                ring[keep - 1 - i] = *slowlog_get(sl, i);
            free(sl->ring);
            sl->ring = ring;
            sl->cap = max_len;
            sl->len = keep;
            sl->head = keep % max_len;
        }
    }
    for (uint32_t i = 0; i < shown; i++)
        bytes += arg_form(&argv[i], num, &s, tail, &tl) + tl + 1;
    if (shown < argc) {
        more_len = (size_t)snprintf(more, sizeof(more),
                                    "... (%u more arguments)", argc - shown);
        bytes += more_len + 1;
    }
    e.argv = malloc(total * (sizeof(char *) + sizeof(uint32_t)) + bytes);
    if (e.argv == NULL)
        return;
    e.lens = (uint32_t *)(void *)(e.argv + total);
    p = (char *)(e.lens + total);
    e.argc = total;
#define KEEP(idx, src, n, extra, extra_n)                                      \
    do {                                                                       \
        e.argv[idx] = p;                                                       \
        memcpy(p, src, n);                                                     \
        if ((extra_n) > 0)                                                     \
            memcpy(p + (n), extra, extra_n);                                   \
        e.lens[idx] = (uint32_t)((n) + (extra_n));                             \
        p += (n) + (extra_n);                                                  \
        *p++ = '\0';                                                           \
    } while (0)
    KEEP(0, name, strlen(name), "", (size_t)0);
    for (uint32_t i = 0; i < shown; i++) {
        size_t n = arg_form(&argv[i], num, &s, tail, &tl);
        KEEP(i + 1, s, n, tail, tl);
    }
    if (shown < argc)
        KEEP(total - 1, more, more_len, "", (size_t)0);
#undef KEEP
    e.id = sl->next_id++;
    e.time_s = time_s;
    e.usec = usec;
    snprintf(e.addr, sizeof(e.addr), "%s", addr);
    snprintf(e.name, sizeof(e.name), "%s", client_name);
    if (sl->len == sl->cap)
        entry_free(&sl->ring[sl->head]);
    else
        sl->len++;
    sl->ring[sl->head] = e;
    sl->head = (sl->head + 1) % sl->cap;
}

const struct slowlog_entry *slowlog_get(const struct slowlog *sl, uint32_t i)
{
    return &sl->ring[(sl->head + sl->cap - 1 - i) % sl->cap];
}

void slowlog_trim(struct slowlog *sl, uint32_t max_len)
{
    while (sl->len > max_len) {
        /* The oldest entry is at head - len. */
        uint32_t old = (sl->head + sl->cap - sl->len) % sl->cap;
        entry_free(&sl->ring[old]);
        sl->len--;
    }
}

void slowlog_reset(struct slowlog *sl)
{
    slowlog_trim(sl, 0);
    sl->head = 0;
}

void slowlog_deinit(struct slowlog *sl)
{
    slowlog_reset(sl);
    free(sl->ring);
    sl->ring = NULL;
    sl->cap = 0;
}

static const char *const latency_names[] = {
#define LAT_NAME(id, name) name,
    LATENCY_EVENTS(LAT_NAME)
#undef LAT_NAME
};

const char *latency_event_name(unsigned ev)
{
    return ev < LAT__COUNT ? latency_names[ev] : NULL;
}

int latency_event_by_name(const char *name, size_t len)
{
    for (unsigned i = 0; i < LAT__COUNT; i++)
        if (strlen(latency_names[i]) == len &&
            strncasecmp(latency_names[i], name, len) == 0)
            return (int)i;
    return -1;
}

void latency_add(struct latency *l, unsigned ev, uint64_t time_s, uint64_t ms,
                 uint64_t threshold_ms)
{
    struct latency_series *s;
    uint32_t v = ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;

    if (ev >= LAT__COUNT || threshold_ms == 0 || ms < threshold_ms)
        return;
    s = &l->ev[ev];
    s->latest_time_s = (uint32_t)time_s;
    s->latest_ms = v;
    if (v > s->max_ms)
        s->max_ms = v;
    if (s->len > 0) {
        struct latency_sample *last =
            &s->hist[(s->head + LATENCY_HISTORY - 1) % LATENCY_HISTORY];
        if (last->time_s == (uint32_t)time_s) {
            if (v > last->ms)
                last->ms = v;
            return;
        }
    }
    s->hist[s->head] = (struct latency_sample){(uint32_t)time_s, v};
    s->head = (s->head + 1) % LATENCY_HISTORY;
    if (s->len < LATENCY_HISTORY)
        s->len++;
}

unsigned latency_reset(struct latency *l, int ev)
{
    unsigned n = 0;

    for (unsigned i = 0; i < LAT__COUNT; i++) {
        if (ev >= 0 && (unsigned)ev != i)
            continue;
        if (l->ev[i].len > 0)
            n++;
        memset(&l->ev[i], 0, sizeof(l->ev[i]));
    }
    return n;
}
