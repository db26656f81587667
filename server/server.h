/*
 * server.h - the state of the one server process: configuration, the data
 * (one store per family), counters. Handlers reach it through their
 * exec_ctx; only main.c and net.c own the process-level parts.
 */
#ifndef UR_SERVER_H
#define UR_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "bc.h"
#include "clients.h"
#include "config.h"
#include "db.h"
#include "days.h"
#include "badges.h"
#include "ops.h"
#include "pubsub.h"
#include "slowlog.h"

#define UNREADD_VERSION "0.1.0"
/* INFO's redis_version and HELLO's version: the Redis release whose
 * protocol and introspection commands unreadd answers like, for tools that
 * decide what to send from it (redis_exporter, redis-cli). */
#define UNREADD_REDIS_COMPAT "7.0.0"

struct stats {
    uint64_t connections;  /* accepted since start */
    uint64_t commands;     /* executed (including those answered with errors) */
    uint64_t errors;       /* error replies */
    uint64_t proto_errors; /* framing lost: connection closed */
    /* limits and authentication (net.c, auth.c) */
    uint64_t rejected_conns;      /* refused: maxclients reached */
    uint64_t output_limit_closes; /* closed: replies over client-output-limit */
    uint64_t output_timeouts;     /* closed: client-output-timeout */
    uint64_t idle_timeouts;       /* closed: timeout, idle */
    uint64_t request_timeouts;    /* closed: timeout, a request unfinished */
    uint64_t input_limit_closes;  /* closed: over client-input-limit */
    uint64_t accept_errors;       /* accept failed (EMFILE, ...), both ports */
    uint64_t auth_failures;       /* AUTH with a wrong password */
    /* ACL refusals, as ACL LOG records them (acl.c acl_log_add): Redis's
     * acl_access_denied_auth / _cmd / _key / _channel */
    uint64_t acl_denied_auth;
    uint64_t acl_denied_cmd;
    uint64_t acl_denied_key;
    uint64_t acl_denied_channel;
    uint64_t calls[UR_OP_COUNT];
    uint64_t op_errors[UR_OP_COUNT];
    uint64_t op_usec[UR_OP_COUNT];     /* time spent running each op */
    uint64_t op_rejected[UR_OP_COUNT]; /* refused before running (NOAUTH,
                                          arity, OOM, MISCONF) */
    uint64_t err_by_code[UR_E__COUNT]; /* error replies per code */
    uint64_t net_in_bytes;             /* read from clients */
    uint64_t net_out_bytes;            /* written to clients */
    uint64_t reads, writes; /* read(2) / write(2) calls that moved bytes */
    /* TLS (net.c, tls.h) */
    uint64_t tls_handshakes;         /* completed on the TLS port */
    uint64_t tls_handshake_failures; /* refused: bad certificate, ... */
    uint64_t tls_handshake_timeouts; /* not done in tls-handshake-timeout */
};

/* instantaneous_*: samples of a counter every 100 ms (server_sample, from
 * main.c's cron), averaged over the last STATS_SAMPLES, as Redis does. */
#define STATS_SAMPLES 16
struct inst_metric {
    uint64_t last_value;
    uint64_t last_ms;
    uint64_t samples[STATS_SAMPLES]; /* per second */
    unsigned idx;
};
enum { INST_OPS, INST_NET_IN, INST_NET_OUT, INST_COUNT };

/* Inactive-user expiry (server/users.c): the sweep's state and figures,
 * for INFO and /metrics. */
struct expiry {
    bool running;                /* a sweep is in progress */
    struct db_day_cursor cursor; /* its position in the days (days.h) */
    uint32_t sweep_day;          /* the day the last sweep started */
    uint64_t sweep_start_ms;
    uint64_t scanned;            /* activity entries looked at, since start */
    uint64_t users;              /* users expired */
    uint64_t entries[FAM_COUNT]; /* entries removed by expiry, per family */
    uint64_t sweeps;             /* sweeps completed */
    uint64_t last_sweep_ms;      /* when the last one ended; 0: never */
    uint64_t last_sweep_duration_ms; /* from its start to its end */
    uint64_t last_sweep_expired;     /* users it expired */
    uint64_t sweep_expired;          /* ... the running one, so far */
    uint64_t cycles;                 /* timer runs that did work */
    uint64_t cycle_us;               /* time spent in them */
    uint64_t cycle_max_us; /* the longest one: the pause it can cause */
};

struct server {
    struct config cfg;
    struct db db;
    struct stats stats;
    uint64_t start_ms;             /* wall clock at start */
    uint32_t clients;              /* connected now */
    uint32_t text_clients;         /* ... that chose RESP */
    uint32_t bin_clients;          /* ... that chose the binary protocol */
    uint32_t tls_clients;          /* ... over TLS (handshaking included) */
    uint32_t paused_clients;       /* ... not read while their replies wait */
    uint64_t client_out_bytes;     /* reply bytes waiting, every connection */
    uint64_t client_in_bytes;      /* input buffers of unfinished requests */
    uint32_t auth_delayed_clients; /* ... not read after a failed AUTH */
    uint64_t next_client_id;
    int64_t clock_offset_ms; /* added to the wall clock (DEBUG clock hooks) */
    /* Persistence (persistence/persist.h): NULL when none is set up (unit
     * tests of the executor, fuzzers). */
    struct persist *persist;
    /* Start-up replay of the journal runs (server/replay.h): nothing is
     * journaled again or refused, the clock is each record's. */
    bool loading;
    /* The command clock (Redis's commandTimeSnapshot): while
     * clock_pinned, server_clock_ms answers clock_pin_ms, so one command,
     * or its replay, sees one time. The executor pins it around every
     * command to the loop turn's time (turn_wall_ms, read once per turn). */
    bool clock_pinned;
    uint64_t clock_pin_ms;
    bool turn_clock_ok;
    uint64_t turn_wall_ms;
    bool shutdown_asap; /* SHUTDOWN ran: the loop ends after this turn */
    struct expiry expiry;
    /* Redis-style introspection (docs/OPERATIONS.md): clients, per-command
     * timing, SLOWLOG and LATENCY, CLIENT PAUSE. */
    struct client_list clist;
    uint64_t cmd_ns; /* monotonic ns at which the next command starts */
    bool cmd_clock;  /* cmd_ns is set (net.c, while it runs requests) */
    struct slowlog slowlog;
    struct latency latency;
    uint64_t pause_end_ms; /* CLIENT PAUSE until this monotonic ms; 0: none */
    bool pause_all;        /* ... every command, not only writes */
    struct inst_metric inst[INST_COUNT];
    char run_id[41];     /* random, hex: INFO run_id */
    const char *mux_api; /* libevent's backend: INFO multiplexing_api */
    size_t mem_peak;     /* the largest used_memory seen (INFO, cron) */
    size_t mem_startup;  /* used_memory when the server started */
    /* Persistence as the cron saw it last (main.c observe_persist). */
    uint64_t total_forks, seen_fsyncs;
    /* Set by net.c (NULL without a network): CLIENT PAUSE / UNPAUSE
     * changed pause_end_ms; CONFIG SET changed a key net.c reads once. */
    void (*on_pause)(struct server *srv);
    void (*on_config)(struct server *srv, const char *key);
    /* Set by main.c: CONFIG SET named a tls- key; next is the
     * configuration it would make. 0 when the TLS contexts were rebuilt
     * from it (or TLS is off), else -1 with a message: the CONFIG SET
     * is refused (tls.h). */
    int (*on_tls_config)(struct server *srv, const struct config *next,
                         char *err, size_t errlen);
    /* Set by net.c: a WAIT that blocked sess ends with value (repl.c). */
    void (*on_unblock)(struct server *srv, struct session *sess,
                       uint64_t value);
    /* Replication (server/repl.h): NULL without a network (replay at
     * start, unit tests, fuzzers). readonly_data: the data follows a
     * primary (this is a replica): clients change nothing, reads mark no
     * user active; only the primary's records (srv->loading) write. */
    struct repl *repl;
    bool readonly_data;
    uint64_t stat_reset_ms; /* CONFIG RESETSTAT (or start), wall clock */
    /* Pub/sub (pubsub.h) and the badge channels (badges.h). on_badges
     * (net.c): the first entry of a dirty set appeared, so the end of the
     * turn must publish it even when no client's request made the turn
     * (the expiry sweep's timer). */
    struct pubsub pubsub;
    struct badges badges;
    void (*on_badges)(struct server *srv);
    /* Cluster mode (cluster.h): NULL when cluster-enabled is no. A batch
     * or transaction routed as a whole runs its commands with
     * cluster_routed set, so that none is routed again. */
    struct cluster *cluster;
    bool cluster_routed;
    /* Set by net.c: a blocked session (CLUSTER MEET) is answered with a
     * status (code 0: text is the status line) or an error. */
    void (*on_unblock_status)(struct server *srv, struct session *sess,
                              uint16_t code, const char *text);
    /* ACL users (acl.h): NULL where none is set up (unit tests and
     * fuzzers of the executor: requirepass alone then). acl_check: a
     * command must be checked (a user besides a default allowed
     * everything); acl_locked: a connection must AUTH (the default user
     * is off or has a password). */
    struct acl *acl;
    bool acl_check;
    bool acl_locked;
};

/* Monotonic clock, nanoseconds and milliseconds. */
uint64_t server_mono_ns(void);
static inline uint64_t server_mono_ms(void)
{
    return server_mono_ns() / 1000000u;
}

/* One 100 ms sample of the instantaneous metrics (main.c's cron). */
void server_sample(struct server *srv);
/* A metric's average rate per second over the last samples. */
uint64_t server_inst(const struct server *srv, int which);

/* Wall clock, milliseconds since the epoch. */
uint64_t server_now_ms(void);

/* The server's clock: the wall clock plus srv->clock_offset_ms, or the
 * pinned time while a command runs or is replayed. Every default
 * timestamp (an omitted ts) comes from here. */
uint64_t server_clock_ms(const struct server *srv);

/*
 * The time of a command starting now: the wall clock read once per loop
 * turn, plus the DEBUG offset. Every command of a turn sees the same
 * millisecond: one clock read per turn instead of one per command (a few
 * percent of a pipelined server's time), for at most a turn's staleness.
 * server_turn_end starts a new turn (net.c's flush, main.c's timers).
 */
uint64_t server_turn_clock(struct server *srv);
void server_turn_end(struct server *srv);

#endif
