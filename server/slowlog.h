/*
 * slowlog.h - SLOWLOG and the latency monitor (LATENCY), as Redis has
 * them: plain data, filled by the executor (a command's duration), by
 * main.c's cron (fork and journal fsync figures) and by the expiry timer;
 * read by cmd_introspect.c. No I/O.
 *
 * SLOWLOG keeps the last slowlog-max-len commands that took at least
 * slowlog-log-slower-than microseconds (negative: none; 0: every
 * command): id, unix time, duration, arguments (at most SLOWLOG_ARGS, each
 * cut at SLOWLOG_ARG_BYTES, as Redis cuts them), the client's address and
 * name.
 *
 * LATENCY keeps, per event, the latest and the largest sample and the last
 * LATENCY_HISTORY samples (one per second at most: a second keeps its
 * largest), when a sample reaches latency-monitor-threshold milliseconds
 * (0: the monitor is off, Redis's default).
 */
#ifndef UR_SLOWLOG_H
#define UR_SLOWLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define SLOWLOG_ARGS 32
#define SLOWLOG_ARG_BYTES 128

struct slowlog_entry {
    uint64_t id;
    uint64_t time_s; /* unix seconds */
    uint64_t usec;
    uint32_t argc;  /* strings in argv (the name included) */
    char **argv;    /* one allocation: pointers, then the bytes */
    uint32_t *lens; /* ... inside the same allocation */
    char addr[64];
    char name[64];
};

struct slowlog {
    struct slowlog_entry *ring; /* cap entries; newest at (head - 1) */
    uint32_t cap, len, head;
    uint64_t next_id;
};

/* Adds a command (name, then argc arguments) that took usec, trimming the
 * log to max_len entries. Best effort: an allocation failure drops it. */
void slowlog_add(struct slowlog *sl, uint32_t max_len, uint64_t time_s,
                 uint64_t usec, const char *name, uint32_t argc,
                 const struct ur_arg *argv, const char *addr,
                 const char *client_name);
/* Entry i, newest first (i < len). */
const struct slowlog_entry *slowlog_get(const struct slowlog *sl, uint32_t i);
void slowlog_reset(struct slowlog *sl);
/* Frees everything (reset, and the ring). */
void slowlog_deinit(struct slowlog *sl);
/* Keeps at most max_len entries (slowlog-max-len lowered at run time). */
void slowlog_trim(struct slowlog *sl, uint32_t max_len);

/* The events the latency monitor knows (Redis's names where they mean
 * the same: fork, expire-cycle, command). */
#define LATENCY_EVENTS(X)                                                      \
    X(COMMAND, "command")     /* a command, non-O(1) ones included */          \
    X(FORK, "fork")           /* BGSAVE's fork, the loop blocked */            \
    X(FSYNC, "journal-fsync") /* one fdatasync of the journal */               \
    X(EXPIRE, "expire-cycle") /* one slice of the inactive-user sweep */

enum latency_event {
#define LAT_ENUM(id, name) LAT_##id,
    LATENCY_EVENTS(LAT_ENUM)
#undef LAT_ENUM
        LAT__COUNT
};

#define LATENCY_HISTORY 160

struct latency_sample {
    uint32_t time_s;
    uint32_t ms;
};

struct latency_series {
    uint32_t latest_time_s, latest_ms, max_ms;
    uint32_t len, head; /* ring of the last LATENCY_HISTORY samples */
    struct latency_sample hist[LATENCY_HISTORY];
};

struct latency {
    struct latency_series ev[LAT__COUNT];
};

const char *latency_event_name(unsigned ev);
/* -1 when name is no event's name (case-insensitive). */
int latency_event_by_name(const char *name, size_t len);
/* Records ms for ev at time_s when threshold_ms > 0 and ms >= it. */
void latency_add(struct latency *l, unsigned ev, uint64_t time_s, uint64_t ms,
                 uint64_t threshold_ms);
/* Clears one event, or every event when ev < 0; returns how many had
 * samples. */
unsigned latency_reset(struct latency *l, int ev);

#endif
