/*
 * metrics.h - Prometheus text exposition (format 0.0.4) at GET /metrics on
 * metrics-bind:metrics-port (off while metrics-port is 0), served by
 * libevent's HTTP server on the server's own event loop: a scrape reads
 * the same counters as INFO, between two commands, never concurrently.
 * The metrics are listed in docs/OPERATIONS.md.
 */
#ifndef UR_METRICS_H
#define UR_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "server.h"

struct event_base;

/* Listens when cfg.metrics_port is set (a no-op otherwise). 0, or -1 with
 * a message in err. */
int metrics_setup(struct server *srv, struct event_base *base, char *err,
                  size_t errlen);
void metrics_teardown(void);

/* Resident set size of the process in bytes (0 when unknown), for INFO
 * memory and the metrics. */
uint64_t metrics_rss_bytes(void);

#endif
