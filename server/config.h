/*
 * config.h - server configuration: one table of keys (name, kind, default,
 * bounds, help) from which defaults, the config file, `--key value` command
 * line options and CONFIG GET are all derived.
 */
#ifndef UR_CONFIG_H
#define UR_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "persist.h" /* enum journal_fsync */

#define CONFIG_MAX_TYPES 64
#define CONFIG_MAX_SOURCES 8 /* CONV_SOURCES */
#define CONFIG_STR_MAX 256

struct config {
    char bind[CONFIG_STR_MAX];
    uint32_t port;
    char dir[CONFIG_STR_MAX];
    int loglevel; /* enum log_level */
    uint32_t max_frame;
    uint32_t max_args;
    uint32_t max_inline;
    /* counter-types: the names, by position (mention = 0, ...) */
    char counter_types[CONFIG_STR_MAX];
    unsigned ntypes;
    char type_names[CONFIG_MAX_TYPES][32];
    uint32_t unread_cap; /* unread-cap: capped results show cap+1 */
    /* conv-sources: CONV's message source names, by position */
    char conv_sources[CONFIG_STR_MAX];
    unsigned nsources;
    char source_names[CONFIG_MAX_SOURCES][32];

    /* persistence (docs/PERSISTENCE.md) */
    uint32_t save_seconds; /* snapshot this often when changed; 0: never */
    bool journal;          /* journal: yes/no */
    int journal_fsync;     /* enum journal_fsync */

    uint32_t grp_max_groups;    /* grp-max-groups: memberships per user */
    uint32_t feed_max_follows;  /* feed-max-follows: followees per user */
    uint32_t rcpt_max_age_days; /* rcpt-max-age-days: receipt retention */
    uint32_t rcpt_max_members;  /* rcpt-max-members: mapids per group */
    /* family keys, in families.def order */

    /* users, expiry and operations (docs/OPERATIONS.md) */
    uint32_t inactive_days; /* inactive-days: expire after; 0: never */
    /* expire-families: bit FAM_x set for each family expiry forgets */
    char expire_families_text[CONFIG_STR_MAX];
    uint32_t expire_families;
    int enable_debug_command; /* enum config_allow: DEBUG (docs/OPERATIONS.md
                                 "Security") */
    uint64_t maxmemory;       /* bytes of used_memory; 0: no limit */
    uint32_t metrics_port;    /* Prometheus /metrics; 0: off */
    char metrics_bind[CONFIG_STR_MAX];

    /* limits and authentication (docs/OPERATIONS.md "Security") */
    uint32_t maxclients; /* connections at once */
    uint32_t timeout;    /* seconds idle, or without completing a request,
                            before closing; 0: never */
    uint64_t client_output_limit;     /* bytes of replies held; 0: no limit */
    uint64_t client_input_limit;      /* bytes of unfinished requests, all
                                         clients together; 0: no limit */
    uint32_t client_output_timeout;   /* seconds without write progress */
    char requirepass[CONFIG_STR_MAX]; /* "" (default): no AUTH needed */
    bool protected_mode;              /* protected-mode: see net.c */
    int enable_protected_configs;     /* enum config_allow: CONFIG SET of the
                                         keys config_is_protected names */
    /* ACL users (server/acl.h) */
    char aclfile[CONFIG_STR_MAX]; /* "": the users are config lines */
    uint32_t acllog_max_len;      /* ACL LOG entries kept */
    bool acl_pubsub_default;      /* a new user's channels: allchannels */

    /* pub/sub (docs/OPERATIONS.md "Pub/sub and badge channels") */
    uint64_t pubsub_output_limit; /* a subscriber's unsent bytes; 0: none */
    uint64_t pubsub_output_soft;  /* ... held for soft-seconds; 0: none */
    uint32_t pubsub_output_soft_seconds;
    bool notify_badges; /* publish badge changes (badges.h) */

    /* introspection (docs/OPERATIONS.md "Redis tools") */
    char logfile[CONFIG_STR_MAX]; /* "" (default): stderr */
    int64_t slowlog_slower_than;  /* microseconds; negative: off */
    uint32_t slowlog_max_len;     /* entries kept */
    uint32_t latency_threshold;   /* ms; 0: the latency monitor is off */

    /* replication (docs/OPERATIONS.md "Replicas and failover") */
    char replicaof[CONFIG_STR_MAX];  /* "host port"; "": a primary */
    char masterauth[CONFIG_STR_MAX]; /* AUTH to the primary; "": none */
    char masteruser[CONFIG_STR_MAX]; /* ... its user name; "": none */
    uint64_t repl_backlog_size;      /* stream bytes kept for resyncs */
    uint64_t repl_buffer_limit;      /* a replica further behind: cut */
    uint32_t repl_timeout;           /* seconds without word: link down */
    uint32_t repl_ping_period;       /* seconds between heartbeats */
    bool replica_serve_stale_data;   /* reads while the link is down */
    uint32_t replica_priority;       /* sentinel's choice; 0: never */
    bool replica_announced;          /* sentinel lists it */
    char replica_announce_ip[CONFIG_STR_MAX]; /* "": the peer address */
    uint32_t replica_announce_port;           /* 0: the port */
    uint32_t min_replicas_to_write;           /* 0: off */
    uint32_t min_replicas_max_lag;            /* seconds */

    /* cluster mode (docs/OPERATIONS.md "Cluster"; server/cluster.h) */
    bool cluster_enabled;                     /* read once at start */
    char cluster_config_file[CONFIG_STR_MAX]; /* the node table, in dir */
    char cluster_announce_ip[CONFIG_STR_MAX]; /* "": learned from MEET */
    uint32_t cluster_announce_port;           /* 0: port */
    uint32_t cluster_announce_bus_port;       /* 0: port + 10000 */
    bool cluster_require_full_coverage;       /* unassigned slot: all down */
    bool cluster_allow_reads_when_down;       /* ... but reads still run */
    uint32_t cluster_node_timeout;            /* ms: a peer link's replies */
    uint64_t cluster_link_sendbuf_limit;      /* a peer's queue; 0: none */
    /* TLS (docs/OPERATIONS.md "TLS", server/tls.h): Redis's keys */
    uint32_t tls_port; /* 0: no TLS listener */
    char tls_cert_file[CONFIG_STR_MAX];
    char tls_key_file[CONFIG_STR_MAX];
    char tls_key_file_pass[CONFIG_STR_MAX];
    char tls_client_cert_file[CONFIG_STR_MAX]; /* "": tls-cert-file */
    char tls_client_key_file[CONFIG_STR_MAX];
    char tls_client_key_file_pass[CONFIG_STR_MAX];
    char tls_dh_params_file[CONFIG_STR_MAX];
    char tls_ca_cert_file[CONFIG_STR_MAX];
    char tls_ca_cert_dir[CONFIG_STR_MAX];
    int tls_auth_clients;               /* enum config_tls_auth */
    char tls_protocols[CONFIG_STR_MAX]; /* "": TLSv1.2 TLSv1.3 */
    char tls_ciphers[CONFIG_STR_MAX];   /* "": OpenSSL's defaults */
    char tls_ciphersuites[CONFIG_STR_MAX];
    bool tls_prefer_server_ciphers;
    bool tls_session_caching;
    uint32_t tls_session_cache_size;
    uint32_t tls_session_cache_timeout; /* seconds */
    bool tls_replication;               /* replication links over TLS */
    bool tls_cluster;                   /* cluster links over TLS */
    bool metrics_tls;                   /* the metrics port over TLS */
    uint32_t tls_handshake_timeout;     /* seconds a handshake may take */

    char config_file[CONFIG_STR_MAX]; /* "" when none */

    /* `user` lines of the config file and `--user` options (the ACL,
     * server/acl.h), handed over with where they were ("FILE:LINE" or
     * "--user") and the text after the key, as written: 0, or -1 with a
     * message in err (the load then fails). NULL: a user line is an
     * error. Set by the caller after config_init. */
    int (*on_user)(void *ctx, const char *where, const char *line, char *err,
                   size_t errlen);
    void *on_user_ctx;
};

/* tls-auth-clients: no, yes (a certificate required), optional (checked
 * when one is shown). */
enum config_tls_auth {
    TLS_AUTH_NO = 0,
    TLS_AUTH_YES = 1,
    TLS_AUTH_OPTIONAL = 2
};

/* What enable-debug-command and enable-protected-configs allow, as in
 * Redis 7: nothing, everything, or what a loopback client asks. */
enum config_allow { CONFIG_ALLOW_NO = 0, CONFIG_ALLOW_YES, CONFIG_ALLOW_LOCAL };

static inline bool config_allows(int mode, bool local)
{
    return mode == CONFIG_ALLOW_YES || (mode == CONFIG_ALLOW_LOCAL && local);
}

/* Fills every key with its default. */
void config_init(struct config *cfg);

/*
 * Sets one key from its text value. Returns 0, or -1 with a message in
 * err (unknown key, bad value, out of bounds).
 */
int config_set(struct config *cfg, const char *key, const char *value,
               char *err, size_t errlen);

/* Reads `key value` lines (`#` comments, blank lines) from path. 0 or -1
 * with a message naming the file and line in err. */
int config_load_file(struct config *cfg, const char *path, char *err,
                     size_t errlen);

/*
 * Parses argv: `--config FILE` first (loaded before any other option, so
 * command-line options win), then `--key value` for any key. Returns 0, 1
 * when argv asked for something else handled by the caller (none yet), or
 * -1 with a message in err.
 */
int config_from_args(struct config *cfg, int argc, char **argv, char *err,
                     size_t errlen);

/* Visits keys whose names match the glob pattern (* and ?, case-insensitive)
 * with their current value as text. */
typedef void (*config_visit_fn)(const char *name, const char *value, void *ctx);
void config_match(const struct config *cfg, const char *pattern, size_t patlen,
                  config_visit_fn fn, void *ctx);

/* CONV message source by name (case-insensitive); -1 when not
 * configured. */
int config_source_by_name(const struct config *cfg, const char *name,
                          size_t len);

/*
 * CONFIG SET: like config_set, for keys that may change while the server
 * runs (their table rows say so; the others get an error naming the key),
 * and for Redis's names of the same settings (save, appendonly,
 * appendfsync: see config.c). 0, or -1 with a message.
 */
int config_set_runtime(struct config *cfg, const char *key, const char *value,
                       char *err, size_t errlen);
/* Whether key (or alias) exists / may change at run time. */
bool config_known(const char *key);
bool config_is_runtime(const char *key);
/* Whether key (len bytes, any case, a Redis name too) holds a secret
 * (requirepass, masterauth, the TLS key passphrases): its value is never
 * shown (CONFIG GET, MONITOR, SLOWLOG). */
bool config_is_secret(const char *key, size_t len);
/* The table's name of key or alias (save -> save-seconds); NULL if none. */
const char *config_canonical(const char *key);
/* Whether key (or alias) is protected: a path the server writes or reads
 * (dir, logfile, aclfile, the TLS files, ...). */
bool config_is_protected(const char *key);
/* Whether CONFIG SET of key to value needs enable-protected-configs: a
 * protected key given another value than cfg's. The same value passes:
 * it changes nothing but a reload (TLS files rotated in place). */
bool config_protected_change(const struct config *cfg, const char *key,
                             const char *value);

/*
 * CONFIG REWRITE: rewrites the config file at path with the current
 * values, keeping its comments and layout (config.c). users: the `user`
 * lines to write ("user NAME RULES\n" each; "" none) in place of the
 * file's, or NULL to keep the file's as they are. Every value is written
 * so that the loader reads back exactly it (quoted and escaped as Redis's
 * sdscatrepr, when it has blanks, quotes, backslashes or bytes that are
 * not printable), or not at all: a value that would not read back is an
 * error and the file is left as it was. 0, or -1 with a message.
 */
int config_rewrite(const struct config *cfg, const char *path,
                   const char *users, char *err, size_t errlen);

/*
 * Splits line[0..len) (NUL at line[len]) into words in place, as Redis's
 * sdssplitargs: words are separated by blanks; "..." takes the escapes
 * \n \r \t \b \a \\ \" and \xHH, '...' takes \'; a closing quote must
 * end its word. Each word is unescaped over the line and NUL-terminated
 * there; its length (it may hold NUL bytes) in lens. Returns the number
 * of words (at most max), -1 for unbalanced quotes, -2 for more than max
 * words.
 */
int config_split(char *line, size_t len, char **words, size_t *lens, int max);

/* v[0..n) as one word config_split reads back as it is: unchanged, or
 * quoted with Redis's sdscatrepr escapes when it is empty or holds a
 * blank, a quote, a backslash, '#' or a byte that is not printable.
 * Writes at most cap-1 bytes and a NUL; returns the full length (which
 * is at most 4 * n + 2). */
size_t config_quote(const char *v, size_t n, char *out, size_t cap);

/* replicaof's value split: 0 with host (cap bytes) and port, 1 when it is
 * empty (a primary). */
int config_replicaof(const struct config *cfg, char *host, size_t cap,
                     uint32_t *port);

/* Counter type by name (case-insensitive); -1 when not configured. */
int config_type_by_name(const struct config *cfg, const char *name, size_t len);

#endif
