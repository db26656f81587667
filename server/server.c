/*
 * server.c - the server's clock.
 */
#include "server.h"

#include <stddef.h>
#include <sys/time.h>

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

uint64_t server_now_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}
