/*
 * net.h - the network room: the listener, connections, the choice of
 * protocol by a connection's first byte, framing, and writing replies once
 * per event-loop turn. Requests go to the executor (exec.h); this module
 * never interprets a command.
 */
#ifndef UR_NET_H
#define UR_NET_H

#include <stddef.h>

#include "server.h"

struct event_base;

/* Binds and listens on cfg.bind:cfg.port. 0, or -1 with a message. */
int net_setup(struct server *srv, struct event_base *base, char *err,
              size_t errlen);
/* Closes the listener and every connection (pending output is dropped). */
void net_teardown(void);

#endif
