/*
 * migrate.h - MIGRATE's connection to a target (server/cmd_migrate.c): a
 * blocking TCP socket, each step bounded by the command's timeout, kept
 * per host:port for MIGRATE_KEEP_MS after its last use as Redis's
 * migrateGetSocket keeps its own, and closed on any error. The server
 * blocks while MIGRATE runs, as Redis does.
 */
#ifndef UR_MIGRATE_H
#define UR_MIGRATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MIGRATE_KEEP_MS 10000
#define MIGRATE_CONNS 16 /* targets kept at once */

struct migrate_conn;

/* The connection to host:port (host NUL-terminated; over TLS when tls),
 * connected within
 * timeout_ms when none is kept; *reused says it was kept. NULL with a
 * message in err. */
struct migrate_conn *migrate_connect(const char *host, int port, bool tls,
                                     uint64_t timeout_ms, bool *reused,
                                     char *err, size_t errlen);

/* Writes p[0..n) within timeout_ms. 0, or -1 (the connection is then
 * closed and must not be used). */
int migrate_write(struct migrate_conn *c, const char *p, size_t n,
                  uint64_t timeout_ms);

/* Reads one reply line (+, - or :, without its CRLF) into line (NUL-
 * terminated, cut at cap - 1) within timeout_ms. 0, or -1 (closed: a
 * timeout, an error, or a reply that is not a line). */
int migrate_read_line(struct migrate_conn *c, char *line, size_t cap,
                      uint64_t timeout_ms);

/* Drops the connection (after an error of the exchange). */
void migrate_close(struct migrate_conn *c);

/* Closes every kept connection (shutdown, tests). */
void migrate_teardown(void);

#endif
