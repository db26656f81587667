/*
 * cmd_slowlog.c - SLOWLOG and LATENCY (server/slowlog.h holds the data).
 */
#include <stdio.h>
#include <string.h>

#include "cmds.h"

void cmd_SLOWLOG(struct exec_ctx *x)
{
    struct slowlog *sl = &x->srv->slowlog;
    char text[65];

    if (arg_is(x, 0, "LEN") && x->argc == 1) {
        reply_int(x->r, sl->len);
    } else if (arg_is(x, 0, "RESET") && x->argc == 1) {
        slowlog_reset(sl);
        reply_status(x->r, "OK");
    } else if (arg_is(x, 0, "GET")) {
        uint64_t count = 10;

        if (x->argc == 2) {
            const struct ur_arg *a = &x->argv[1];
            if (a->kind == UR_ARG_STR && a->len == 2 &&
                memcmp(a->str, "-1", 2) == 0)
                count = UINT32_MAX;
            else if (!arg_u64(x, 1, "count", &count))
                return;
        }
        if (count > sl->len)
            count = sl->len;
        reply_arr(x->r, (uint32_t)count);
        for (uint32_t i = 0; i < count; i++) {
            const struct slowlog_entry *e = slowlog_get(sl, i);

            reply_arr(x->r, 6);
            reply_int(x->r, e->id);
            reply_int(x->r, e->time_s);
            reply_int(x->r, e->usec);
            reply_arr(x->r, e->argc);
            for (uint32_t k = 0; k < e->argc; k++)
                reply_str(x->r, e->argv[k], e->lens[k]);
            reply_cstr(x->r, e->addr);
            reply_cstr(x->r, e->name);
        }
    } else if (arg_is(x, 0, "HELP") && x->argc == 1) {
        reply_arr(x->r, 4);
        reply_status(x->r,
                     "SLOWLOG <subcommand> [<arg> ...]. Subcommands are:");
        reply_status(x->r, "GET [count]: the newest entries (10; -1: all).");
        reply_status(x->r, "LEN: the number of entries.");
        reply_status(x->r, "RESET: forgets every entry.");
    } else {
        reply_err(x->r, UR_E_BADARG,
                  "unknown subcommand or wrong number of arguments for "
                  "'%s'. Try SLOWLOG HELP.",
                  arg_text(x, 0, text, sizeof(text)));
    }
}

static int event_arg(struct exec_ctx *x, uint32_t i)
{
    const struct ur_arg *a = &x->argv[i];
    int ev = a->kind == UR_ARG_STR ? latency_event_by_name(a->str, a->len) : -1;

    return ev;
}

void cmd_LATENCY(struct exec_ctx *x)
{
    struct latency *l = &x->srv->latency;
    char text[65];

    if (arg_is(x, 0, "LATEST") && x->argc == 1) {
        uint32_t n = 0;
        size_t mark = reply_arr_defer(x->r);

        for (unsigned ev = 0; ev < LAT__COUNT; ev++) {
            const struct latency_series *s = &l->ev[ev];

            if (s->len == 0)
                continue;
            reply_arr(x->r, 4);
            reply_cstr(x->r, latency_event_name(ev));
            reply_int(x->r, s->latest_time_s);
            reply_int(x->r, s->latest_ms);
            reply_int(x->r, s->max_ms);
            n++;
        }
        reply_arr_finish(x->r, mark, n);
    } else if (arg_is(x, 0, "HISTORY") && x->argc == 2) {
        int ev = event_arg(x, 1);
        const struct latency_series *s;

        if (ev < 0) {
            reply_arr(x->r, 0); /* Redis: an unknown event has no samples */
            return;
        }
        s = &l->ev[ev];
        reply_arr(x->r, s->len);
        for (uint32_t i = 0; i < s->len; i++) {
            const struct latency_sample *h =
                &s->hist[(s->head + LATENCY_HISTORY - s->len + i) %
                         LATENCY_HISTORY];
            reply_arr(x->r, 2);
            reply_int(x->r, h->time_s);
            reply_int(x->r, h->ms);
        }
    } else if (arg_is(x, 0, "RESET")) {
        uint64_t n = 0;

        if (x->argc == 1)
            n = latency_reset(l, -1);
        for (uint32_t i = 1; i < x->argc; i++) {
            int ev = event_arg(x, i);
            if (ev >= 0)
                n += latency_reset(l, ev);
        }
        reply_int(x->r, n);
    } else if (arg_is(x, 0, "DOCTOR") && x->argc == 1) {
        char buf[512];
        int len;

        if (x->srv->cfg.latency_threshold == 0) {
            len = snprintf(buf, sizeof(buf),
                           "The latency monitor is off: set "
                           "latency-monitor-threshold (ms), e.g. CONFIG SET "
                           "latency-monitor-threshold 10.\n");
        } else {
            len = snprintf(buf, sizeof(buf),
                           "Threshold %u ms. Events over it: see LATENCY "
                           "LATEST; fork and journal-fsync point at the "
                           "disk and the snapshot size, expire-cycle at "
                           "the expiry sweep, command at SLOWLOG.\n",
                           x->srv->cfg.latency_threshold);
        }
        reply_str(x->r, buf, (size_t)len);
    } else if (arg_is(x, 0, "HELP") && x->argc == 1) {
        reply_arr(x->r, 5);
        reply_status(x->r,
                     "LATENCY <subcommand> [<arg> ...]. Subcommands are:");
        reply_status(x->r, "LATEST: the latest and largest sample per event.");
        reply_status(x->r, "HISTORY event: the event's samples (command, "
                           "fork, journal-fsync, expire-cycle).");
        reply_status(x->r, "RESET [event ...]: forgets the samples.");
        reply_status(x->r, "DOCTOR: a short report.");
    } else {
        reply_err(x->r, UR_E_BADARG,
                  "unknown subcommand or wrong number of arguments for "
                  "'%s'. Try LATENCY HELP.",
                  arg_text(x, 0, text, sizeof(text)));
    }
}
