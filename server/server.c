/*
 * server.c - the server's clock.
 */
#include "server.h"

#include <stddef.h>
#include <sys/time.h>
#include <time.h>

uint64_t server_clock_ms(const struct server *srv)
{
    if (srv->clock_pinned)
        return srv->clock_pin_ms;
    return (uint64_t)((int64_t)server_now_ms() + srv->clock_offset_ms);
}

uint64_t server_turn_clock(struct server *srv)
{
    if (!srv->turn_clock_ok) {
        srv->turn_wall_ms = server_now_ms();
        srv->turn_clock_ok = true;
    }
    return (uint64_t)((int64_t)srv->turn_wall_ms + srv->clock_offset_ms);
}

void server_turn_end(struct server *srv)
{
    srv->turn_clock_ok = false;
}

uint64_t server_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void server_sample(struct server *srv)
{
    const uint64_t values[INST_COUNT] = {
        srv->stats.commands, srv->stats.net_in_bytes, srv->stats.net_out_bytes};
    uint64_t now = server_mono_ms();

    for (int i = 0; i < INST_COUNT; i++) {
        struct inst_metric *m = &srv->inst[i];
        uint64_t dt = now - m->last_ms;

        if (m->last_ms != 0 && dt > 0 && values[i] >= m->last_value) {
            m->samples[m->idx] = (values[i] - m->last_value) * 1000 / dt;
            m->idx = (m->idx + 1) % STATS_SAMPLES;
        }
        m->last_ms = now;
        m->last_value = values[i];
    }
}

uint64_t server_inst(const struct server *srv, int which)
{
    uint64_t sum = 0;

    for (int i = 0; i < STATS_SAMPLES; i++)
        sum += srv->inst[which].samples[i];
    return sum / STATS_SAMPLES;
}

uint64_t server_now_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}
