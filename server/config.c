/*
 * config.c - see config.h. Each key is a row of keys[]: adding a key means
 * a field in struct config, a row here, and a line in docs/OPERATIONS.md.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "db.h"
#include "fsutil.h"
#include "log.h"
#include "proto.h"

enum key_kind {
    K_STR,
    K_U32,
    K_LOGLEVEL,
    K_TYPES,
    K_SOURCES, /* conv-sources: names like counter-types, see set_names */
    K_YESNO,
    K_FSYNC,
    K_FAMILIES, /* family names (expire-families), see set_families */
    K_BYTES,    /* u64 byte count with an optional k/kb/m/mb/g/gb suffix */
    K_SECRET,   /* a string that may be empty; CONFIG GET does not show it */
    K_I64,      /* signed; negative means "off" (slowlog-log-slower-than) */
    K_STR0,     /* a string that may be empty (logfile: "" is stderr) */
    K_HOSTPORT, /* "" or "host port" (replicaof) */
    K_TLSAUTH,  /* tls-auth-clients: yes, no, optional */
    K_ALLOW,    /* no, yes or local (enum config_allow) */
    K_CHANDEF   /* acl-pubsub-default: resetchannels or allchannels */
};

/* K_TLSAUTH values, indexed by enum config_tls_auth. */
static const char *const tls_auth_names[] = {"no", "yes", "optional"};

/* K_ALLOW values, indexed by enum config_allow. */
static const char *const allow_names[] = {"no", "yes", "local"};

/* K_FSYNC values, indexed by enum journal_fsync. */
static const char *const fsync_names[] = {"no", "everysec", "always"};

/* R: CONFIG SET may change the key while the server runs (the rest are
 * read once at start: set them in the config file and restart).
 * P: protected, as Redis 7's PROTECTED_CONFIG: a path the server writes
 * or reads, which CONFIG SET changes only where enable-protected-configs
 * allows it (cmd_admin.c asks config_is_protected); a client that could
 * set it could make the server write or read files anywhere. */
#define R 1u
#define P 2u

struct key {
    const char *name;
    enum key_kind kind;
    size_t off;
    const char *dflt;
    uint32_t min, max; /* K_U32 */
    unsigned flags;    /* R, P */
};

#define F(field) offsetof(struct config, field)

static const struct key keys[] = {
    {"bind", K_STR, F(bind), "127.0.0.1", 0, 0, 0},
    /* 0: no plaintext listener (tls-port alone) */
    {"port", K_U32, F(port), "7460", 0, 65535, 0},
    /* Read once at start (persistence keeps its files there), and
     * protected besides. */
    {"dir", K_STR, F(dir), "./data", 0, 0, P},
    {"loglevel", K_LOGLEVEL, F(loglevel), "info", 0, 0, R},
    {"max-frame", K_U32, F(max_frame), "1048576", 64, UR_MAX_FRAME_CEILING, R},
    {"max-args", K_U32, F(max_args), "4096", 8, 1u << 20, 0},
    {"max-inline", K_U32, F(max_inline), "65536", 64, 16u << 20, R},
    {"counter-types", K_TYPES, F(counter_types),
     "mention comment like dm system", 0, 0, 0},
    {"unread-cap", K_U32, F(unread_cap), "99", 1, 1000000, 0},
    /* names of CONV's message sources 0..7 (CONV.SEQ ... SOURCE name) */
    {"conv-sources", K_SOURCES, F(conv_sources), "", 0, 0, 0},
    /* persistence */
    {"save-seconds", K_U32, F(save_seconds), "300", 0, 31536000, R},
    {"journal", K_YESNO, F(journal), "yes", 0, 0, 0},
    {"journal-fsync", K_FSYNC, F(journal_fsync), "everysec", 0, 0, 0},
    /* JOIN's insert and TOTAL/LIST's walk are O(groups of the user). */
    {"grp-max-groups", K_U32, F(grp_max_groups), "10000", 1, 100000, R},
    /* FOLLOW's memmove and UNREAD's walk are O(follows): bounded here. */
    {"feed-max-follows", K_U32, F(feed_max_follows), "5000", 1, 100000, R},
    /* RCPT: retention of receipts; mapids per group (never reused), which
     * sizes every bitmap of the group */
    {"rcpt-max-age-days", K_U32, F(rcpt_max_age_days), "7", 1, 3650, R},
    {"rcpt-max-members", K_U32, F(rcpt_max_members), "100000", 1, 16777216, R},
    /* family keys, in families.def order */
    /* users, expiry and operations (docs/OPERATIONS.md) */
    {"inactive-days", K_U32, F(inactive_days), "30", 0, 36500, R},
    {"expire-families", K_FAMILIES, F(expire_families_text), "bc dot grp feed",
     0, 0, 0},
    /* DEBUG: no, yes, or only for loopback clients (local) */
    {"enable-debug-command", K_ALLOW, F(enable_debug_command), "no", 0, 0, 0},
    {"maxmemory", K_BYTES, F(maxmemory), "0", 0, 0, R},
    {"metrics-port", K_U32, F(metrics_port), "0", 0, 65535, 0},
    {"metrics-bind", K_STR, F(metrics_bind), "127.0.0.1", 0, 0, 0},
    /* limits and authentication (docs/OPERATIONS.md "Security") */
    {"maxclients", K_U32, F(maxclients), "10000", 1, 1000000, R},
    {"timeout", K_U32, F(timeout), "0", 0, 31536000, R},
    {"client-output-limit", K_BYTES, F(client_output_limit), "64mb", 0, 0, R},
    {"client-input-limit", K_BYTES, F(client_input_limit), "256mb", 0, 0, R},
    {"client-output-timeout", K_U32, F(client_output_timeout), "60", 0,
     31536000, R},
    {"requirepass", K_SECRET, F(requirepass), "", 0, 0, R},
    /* no password for the default user: only loopback clients (net.c) */
    {"protected-mode", K_YESNO, F(protected_mode), "yes", 0, 0, R},
    {"enable-protected-configs", K_ALLOW, F(enable_protected_configs), "no", 0,
     0, 0},
    /* ACL users (server/acl.h): the file ACL LOAD and ACL SAVE use (a
     * path: protected), the refusals ACL LOG keeps, the channels of a
     * new user (Redis 7's default: none) */
    {"aclfile", K_STR0, F(aclfile), "", 0, 0, R | P},
    {"acllog-max-len", K_U32, F(acllog_max_len), "128", 0, 1000000, R},
    {"acl-pubsub-default", K_CHANDEF, F(acl_pubsub_default), "resetchannels", 0,
     0, R},
    /* pub/sub (docs/OPERATIONS.md "Pub/sub and badge channels"): a
     * subscriber's unsent output, as Redis's client-output-buffer-limit
     * pubsub 32mb 8mb 60 (also settable under that name) */
    {"pubsub-output-limit", K_BYTES, F(pubsub_output_limit), "32mb", 0, 0, R},
    {"pubsub-output-soft-limit", K_BYTES, F(pubsub_output_soft), "8mb", 0, 0,
     R},
    {"pubsub-output-soft-seconds", K_U32, F(pubsub_output_soft_seconds), "60",
     0, 86400, R},
    /* publish badge changes on badge:<uid> and global heads (badges.h) */
    {"notify-badges", K_YESNO, F(notify_badges), "no", 0, 0, R},
    /* introspection (docs/OPERATIONS.md "Redis tools") */
    /* At run time only where enable-protected-configs allows it: a
     * client could make the server create files anywhere it may write. */
    {"logfile", K_STR0, F(logfile), "", 0, 0, R | P},
    {"slowlog-log-slower-than", K_I64, F(slowlog_slower_than), "10000", 0, 0,
     R},
    {"slowlog-max-len", K_U32, F(slowlog_max_len), "128", 0, 1000000, R},
    {"latency-monitor-threshold", K_U32, F(latency_threshold), "0", 0, 86400000,
     R},
    /* replication (docs/OPERATIONS.md "Replicas and failover"): replicaof
     * changes with REPLICAOF, not CONFIG SET */
    {"replicaof", K_HOSTPORT, F(replicaof), "", 0, 0, 0},
    {"masterauth", K_SECRET, F(masterauth), "", 0, 0, R},
    {"masteruser", K_STR0, F(masteruser), "", 0, 0, R},
    {"repl-backlog-size", K_BYTES, F(repl_backlog_size), "1mb", 0, 0, R},
    {"repl-buffer-limit", K_BYTES, F(repl_buffer_limit), "256mb", 0, 0, R},
    {"repl-timeout", K_U32, F(repl_timeout), "60", 1, 3600, R},
    {"repl-ping-replica-period", K_U32, F(repl_ping_period), "1", 1, 3600, R},
    {"replica-serve-stale-data", K_YESNO, F(replica_serve_stale_data), "yes", 0,
     0, R},
    {"replica-priority", K_U32, F(replica_priority), "100", 0, 1000000, R},
    {"replica-announced", K_YESNO, F(replica_announced), "yes", 0, 0, R},
    {"replica-announce-ip", K_STR0, F(replica_announce_ip), "", 0, 0, R},
    {"replica-announce-port", K_U32, F(replica_announce_port), "0", 0, 65535,
     R},
    {"min-replicas-to-write", K_U32, F(min_replicas_to_write), "0", 0, 1000, R},
    {"min-replicas-max-lag", K_U32, F(min_replicas_max_lag), "10", 0, 3600, R},
    /* cluster mode (docs/OPERATIONS.md "Cluster") */
    {"cluster-enabled", K_YESNO, F(cluster_enabled), "no", 0, 0, 0},
    {"cluster-config-file", K_STR, F(cluster_config_file), "nodes.conf", 0, 0,
     P},
    {"cluster-announce-ip", K_STR0, F(cluster_announce_ip), "", 0, 0, R},
    {"cluster-announce-port", K_U32, F(cluster_announce_port), "0", 0, 65535,
     R},
    {"cluster-announce-bus-port", K_U32, F(cluster_announce_bus_port), "0", 0,
     65535, R},
    {"cluster-require-full-coverage", K_YESNO, F(cluster_require_full_coverage),
     "yes", 0, 0, R},
    {"cluster-allow-reads-when-down", K_YESNO, F(cluster_allow_reads_when_down),
     "no", 0, 0, R},
    {"cluster-node-timeout", K_U32, F(cluster_node_timeout), "15000", 100,
     3600000, R},
    {"cluster-link-sendbuf-limit", K_BYTES, F(cluster_link_sendbuf_limit),
     "64mb", 0, 0, R},
    /* TLS (docs/OPERATIONS.md "TLS"), Redis's names and defaults. A
     * CONFIG SET of any tls- key rebuilds the contexts (tls.h): the
     * certificate files are read again, for rotation. */
    {"tls-port", K_U32, F(tls_port), "0", 0, 65535, 0},
    {"tls-cert-file", K_STR0, F(tls_cert_file), "", 0, 0, R | P},
    {"tls-key-file", K_STR0, F(tls_key_file), "", 0, 0, R | P},
    {"tls-key-file-pass", K_SECRET, F(tls_key_file_pass), "", 0, 0, R},
    {"tls-client-cert-file", K_STR0, F(tls_client_cert_file), "", 0, 0, R | P},
    {"tls-client-key-file", K_STR0, F(tls_client_key_file), "", 0, 0, R | P},
    {"tls-client-key-file-pass", K_SECRET, F(tls_client_key_file_pass), "", 0,
     0, R},
    {"tls-dh-params-file", K_STR0, F(tls_dh_params_file), "", 0, 0, R | P},
    {"tls-ca-cert-file", K_STR0, F(tls_ca_cert_file), "", 0, 0, R | P},
    {"tls-ca-cert-dir", K_STR0, F(tls_ca_cert_dir), "", 0, 0, R | P},
    {"tls-auth-clients", K_TLSAUTH, F(tls_auth_clients), "yes", 0, 0, R},
    {"tls-protocols", K_STR0, F(tls_protocols), "", 0, 0, R},
    {"tls-ciphers", K_STR0, F(tls_ciphers), "", 0, 0, R},
    {"tls-ciphersuites", K_STR0, F(tls_ciphersuites), "", 0, 0, R},
    {"tls-prefer-server-ciphers", K_YESNO, F(tls_prefer_server_ciphers), "no",
     0, 0, R},
    {"tls-session-caching", K_YESNO, F(tls_session_caching), "yes", 0, 0, R},
    {"tls-session-cache-size", K_U32, F(tls_session_cache_size), "20480", 0,
     100000000, R},
    {"tls-session-cache-timeout", K_U32, F(tls_session_cache_timeout), "300", 0,
     31536000, R},
    {"tls-replication", K_YESNO, F(tls_replication), "no", 0, 0, R},
    {"tls-cluster", K_YESNO, F(tls_cluster), "no", 0, 0, 0},
    /* unreadd's own: Redis has no metrics port */
    {"metrics-tls", K_YESNO, F(metrics_tls), "no", 0, 0, 0},
    {"tls-handshake-timeout", K_U32, F(tls_handshake_timeout), "10", 1, 3600,
     R},
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static const struct key *key_find(const char *name)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (strcasecmp(keys[i].name, name) == 0)
            return &keys[i];
    return NULL;
}

/* A list of names by position: counter-types, conv-sources. */
struct name_list {
    const char *key;   /* for messages */
    unsigned max;      /* names at most */
    char (*names)[32]; /* out: room for max */
    unsigned *n;       /* out */
    char *text;        /* out: the canonical text, CONFIG_STR_MAX */
};

/* Splits value into names: each [a-z0-9_-]+, unique, not a decimal number
 * (numbers are the ids), at most nl->max. */
static int set_names(const struct name_list *nl, const char *value, char *err,
                     size_t errlen)
{
    char names[CONFIG_MAX_TYPES][32];
    unsigned n = 0;
    const char *p = value;

    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (*p == '\0')
            break;
        const char *w = p;
        while (*p != '\0' && *p != ' ' && *p != '\t' && *p != ',')
            p++;
        size_t len = (size_t)(p - w);
        if (n == nl->max) {
            snprintf(err, errlen, "%s: at most %u names", nl->key, nl->max);
            return -1;
        }
        if (len >= sizeof(names[0])) {
            snprintf(err, errlen, "%s: name longer than %zu", nl->key,
                     sizeof(names[0]) - 1);
            return -1;
        }
        uint64_t num;
        if (ur_parse_u64(w, len, &num)) {
            snprintf(err, errlen, "%s: '%.*s' is a number", nl->key, (int)len,
                     w);
            return -1;
        }
        for (size_t i = 0; i < len; i++) {
            unsigned char c = (unsigned char)w[i];
            if (!isalnum(c) && c != '_' && c != '-') {
                snprintf(err, errlen, "%s: bad name '%.*s'", nl->key, (int)len,
                         w);
                return -1;
            }
            names[n][i] = (char)tolower(c);
        }
        names[n][len] = '\0';
        for (unsigned j = 0; j < n; j++) {
            if (strcmp(names[j], names[n]) == 0) {
                snprintf(err, errlen, "%s: '%s' twice", nl->key, names[n]);
                return -1;
            }
        }
        n++;
    }

    memcpy(nl->names, names, n * sizeof(names[0]));
    *nl->n = n;
    /* Keep the canonical text for CONFIG GET. */
    char *out = nl->text;
    size_t room = CONFIG_STR_MAX;
    out[0] = '\0';
    for (unsigned i = 0; i < n; i++) {
        size_t used = strlen(out);
        snprintf(out + used, room - used, "%s%s", i ? " " : "", names[i]);
    }
    return 0;
}

/* The families expire-families may name, for messages: "cnt conv ...". */
static void expirable_names(char *out, size_t cap)
{
    size_t used = 0;

    out[0] = '\0';
    for (unsigned f = 0; f < FAM_COUNT && used < cap; f++)
        if (db_families[f].flags & FAMF_EXPIRABLE)
            used += (size_t)snprintf(out + used, cap - used, "%s%s",
                                     used ? " " : "", db_families[f].name);
}

/* expire-families: names of families separated by spaces or commas, or
 * "none" (or nothing). A family families.def marks KEPT (rcpt) is
 * refused: receipts expire by message age (rcpt-max-age-days), and its
 * mapids must outlive their readers. The canonical text lists the
 * families in families.def order. */
static int set_families(struct config *cfg, const char *value, char *err,
                        size_t errlen)
{
    uint32_t mask = 0;
    const char *p = value;
    char names[128];

    for (;;) {
        size_t len;
        int f;

        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (*p == '\0')
            break;
        len = strcspn(p, " \t,");
        f = db_family_by_name(p, len);
        if (f >= 0 && !(db_families[f].flags & FAMF_EXPIRABLE)) {
            snprintf(err, errlen,
                     "expire-families: %s cannot expire by user activity "
                     "(its data expires by age: %s-max-age-days)",
                     db_families[f].name, db_families[f].name);
            return -1;
        }
        if (f < 0 && !(len == 4 && strncasecmp(p, "none", 4) == 0)) {
            expirable_names(names, sizeof(names));
            snprintf(err, errlen,
                     "expire-families: '%.*s' is not one of %s (or none)",
                     (int)(len > 32 ? 32 : len), p, names);
            return -1;
        }
        if (f >= 0)
            mask |= 1u << f;
        p += len;
    }
    cfg->expire_families = mask;
    cfg->expire_families_text[0] = '\0';
    for (unsigned f = 0; f < FAM_COUNT; f++) {
        size_t used = strlen(cfg->expire_families_text);

        if (mask & (1u << f))
            snprintf(cfg->expire_families_text + used,
                     sizeof(cfg->expire_families_text) - used, "%s%s",
                     used ? " " : "", db_families[f].name);
    }
    if (mask == 0)
        strcpy(cfg->expire_families_text, "none");
    return 0;
}

/* A byte count: digits, then optionally k, kb, m, mb, g or gb (powers of
 * 1024, case-insensitive), as Redis's maxmemory reads it. */
static int set_bytes(uint64_t *out, const char *name, const char *value,
                     char *err, size_t errlen)
{
    static const char *const units[] = {"", "k", "kb", "m", "mb", "g", "gb"};
    static const unsigned shifts[] = {0, 10, 10, 20, 20, 30, 30};
    size_t digits = strspn(value, "0123456789");
    uint64_t v;

    if (digits > 0 && ur_parse_u64(value, digits, &v)) {
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
            if (strcasecmp(value + digits, units[i]) == 0 &&
                v <= (UINT64_MAX >> shifts[i])) {
                *out = v << shifts[i];
                return 0;
            }
        }
    }
    snprintf(err, errlen,
             "%s: '%s' is not a byte count (e.g. 0, 1048576, 512mb, 4gb)", name,
             value);
    return -1;
}

static int set_alias(struct config *cfg, const char *key, const char *value,
                     char *err, size_t errlen);

/* A `user` line (acl.h), handed over to whoever reads them. */
static int set_user(struct config *cfg, const char *where, const char *line,
                    char *err, size_t errlen)
{
    if (cfg->on_user == NULL) {
        snprintf(err, errlen, "%s: user lines are not read here", where);
        return -1;
    }
    return cfg->on_user(cfg->on_user_ctx, where, line, err, errlen);
}

/* Whether a host name or address can be written back as the first word
 * of "host port" (replicaof): printable, no blank, quote or backslash. */
static bool host_ok(const char *h, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)h[i];
        if (c <= ' ' || c >= 0x7f || c == '"' || c == '\'' || c == '\\')
            return false;
    }
    return n > 0;
}

int config_set(struct config *cfg, const char *key, const char *value,
               char *err, size_t errlen)
{
    const struct key *k = key_find(key);
    if (k == NULL && strcasecmp(key, "user") == 0) {
        char why[512];

        if (set_user(cfg, "--user", value, why, sizeof(why)) == 0)
            return 0;
        snprintf(err, errlen, "--user: %s", why);
        return -1;
    }
    if (k == NULL && set_alias(cfg, key, value, err, errlen) != 1)
        return err[0] != '\0' ? -1 : 0;
    if (k == NULL) {
        snprintf(err, errlen, "unknown config key '%s'", key);
        return -1;
    }
    char *field = (char *)cfg + k->off;

    switch (k->kind) {
    case K_STR:
        if (strlen(value) >= CONFIG_STR_MAX || value[0] == '\0') {
            snprintf(err, errlen, "%s: value empty or too long", k->name);
            return -1;
        }
        strcpy(field, value);
        return 0;
    case K_U32: {
        uint64_t v;
        if (!ur_parse_u64(value, strlen(value), &v) || v < k->min ||
            v > k->max) {
            snprintf(err, errlen, "%s: '%s' is not an integer in %u..%u",
                     k->name, value, k->min, k->max);
            return -1;
        }
        *(uint32_t *)(void *)field = (uint32_t)v;
        return 0;
    }
    case K_LOGLEVEL: {
        int level = log_level_parse(value);
        if (level < 0) {
            snprintf(err, errlen,
                     "%s: '%s' is not one of debug, info, warning, error",
                     k->name, value);
            return -1;
        }
        *(int *)(void *)field = level;
        return 0;
    }
    case K_TYPES: {
        struct name_list nl = {k->name, CONFIG_MAX_TYPES, cfg->type_names,
                               &cfg->ntypes, cfg->counter_types};
        return set_names(&nl, value, err, errlen);
    }
    case K_SOURCES: {
        struct name_list nl = {k->name, CONFIG_MAX_SOURCES, cfg->source_names,
                               &cfg->nsources, cfg->conv_sources};
        return set_names(&nl, value, err, errlen);
    }
    case K_YESNO:
        if (strcasecmp(value, "yes") != 0 && strcasecmp(value, "no") != 0) {
            snprintf(err, errlen, "%s: '%s' is not yes or no", k->name, value);
            return -1;
        }
        *(bool *)(void *)field = strcasecmp(value, "yes") == 0;
        return 0;
    case K_FSYNC:
        for (int i = 0; i < 3; i++) {
            if (strcasecmp(value, fsync_names[i]) == 0) {
                *(int *)(void *)field = i;
                return 0;
            }
        }
        snprintf(err, errlen, "%s: '%s' is not one of always, everysec, no",
                 k->name, value);
        return -1;
    case K_FAMILIES:
        return set_families(cfg, value, err, errlen);
    case K_BYTES:
        return set_bytes((uint64_t *)(void *)field, k->name, value, err,
                         errlen);
    case K_I64: {
        uint64_t v;
        bool neg = value[0] == '-';
        if (ur_parse_uint(value + neg, strlen(value + neg), INT64_MAX, &v) !=
            UR_NUM_OK) {
            snprintf(err, errlen, "%s: '%s' is not an integer", k->name, value);
            return -1;
        }
        *(int64_t *)(void *)field = neg ? -(int64_t)v : (int64_t)v;
        return 0;
    }
    case K_HOSTPORT: {
        char host[CONFIG_STR_MAX];
        uint64_t port;
        size_t hl = strcspn(value, " \t");
        const char *pv = value + hl;

        while (*pv == ' ' || *pv == '\t')
            pv++;
        if (value[0] == '\0' || strcasecmp(value, "no one") == 0) {
            memset(field, 0, CONFIG_STR_MAX);
            return 0;
        }
        if (hl == 0 || hl >= sizeof(host) - 8 || !host_ok(value, hl) ||
            !ur_parse_u64(pv, strlen(pv), &port) || port == 0 || port > 65535) {
            snprintf(err, errlen,
                     "%s: '%s' is not \"host port\" (or \"\": none)", k->name,
                     value);
            return -1;
        }
        memcpy(host, value, hl);
        host[hl] = ' ';
        hl++;
        hl += ur_fmt_u64(host + hl, port);
        memset(field, 0, CONFIG_STR_MAX);
        memcpy(field, host, hl);
        return 0;
    }
    case K_TLSAUTH:
        for (int i = 0; i < 3; i++) {
            if (strcasecmp(value, tls_auth_names[i]) == 0) {
                *(int *)(void *)field = i;
                return 0;
            }
        }
        snprintf(err, errlen, "%s: '%s' is not one of yes, no, optional",
                 k->name, value);
        return -1;
    case K_ALLOW:
        for (int i = 0; i < 3; i++) {
            if (strcasecmp(value, allow_names[i]) == 0) {
                *(int *)(void *)field = i;
                return 0;
            }
        }
        snprintf(err, errlen, "%s: '%s' is not one of no, yes, local", k->name,
                 value);
        return -1;
    case K_CHANDEF:
        if (strcasecmp(value, "allchannels") != 0 &&
            strcasecmp(value, "resetchannels") != 0) {
            snprintf(err, errlen,
                     "%s: '%s' is not allchannels or resetchannels", k->name,
                     value);
            return -1;
        }
        *(bool *)(void *)field = strcasecmp(value, "allchannels") == 0;
        return 0;
    case K_STR0:
    case K_SECRET:
        if (strlen(value) >= CONFIG_STR_MAX) {
            snprintf(err, errlen, "%s: longer than %d bytes", k->name,
                     CONFIG_STR_MAX - 1);
            return -1;
        }
        memset(field, 0, CONFIG_STR_MAX);
        strcpy(field, value);
        return 0;
    }
    return -1;
}

void config_init(struct config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    char err[256];
    for (size_t i = 0; i < NKEYS; i++) {
        int rc = config_set(cfg, keys[i].name, keys[i].dflt, err, sizeof(err));
        (void)rc; /* defaults are valid by construction (unit-tested) */
    }
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    char *end = s + strlen(s);
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' ||
                       end[-1] == '\r'))
        *--end = '\0';
    return s;
}

int config_split(char *line, size_t len, char **words, size_t *lens, int max)
{
    size_t i = 0;
    int n = 0;

    for (;;) {
        char *o, *start;
        bool dq = false, sq = false, done = false;

        while (i < len && (isspace((unsigned char)line[i]) || line[i] == 0))
            i++;
        if (i >= len)
            return n;
        if (n == max)
            return -2;
        o = start = line + i;
        while (!done) {
            unsigned char c = i < len ? (unsigned char)line[i] : 0;

            if (dq) {
                if (i >= len)
                    return -1;
                if (c == '\\' && i + 3 < len && line[i + 1] == 'x' &&
                    isxdigit((unsigned char)line[i + 2]) &&
                    isxdigit((unsigned char)line[i + 3])) {
                    char hex[3] = {line[i + 2], line[i + 3], 0};
                    *o++ = (char)strtoul(hex, NULL, 16);
                    i += 4;
                } else if (c == '\\' && i + 1 < len) {
                    char e = line[i + 1];
                    *o++ = e == 'n'   ? '\n'
                           : e == 'r' ? '\r'
                           : e == 't' ? '\t'
                           : e == 'b' ? '\b'
                           : e == 'a' ? '\a'
                                      : e;
                    i += 2;
                } else if (c == '"') {
                    /* the closing quote ends the word */
                    if (i + 1 < len && !isspace((unsigned char)line[i + 1]))
                        return -1;
                    i++;
                    done = true;
                } else {
                    *o++ = (char)c;
                    i++;
                }
            } else if (sq) {
                if (i >= len)
                    return -1;
                if (c == '\\' && i + 1 < len && line[i + 1] == '\'') {
                    *o++ = '\'';
                    i += 2;
                } else if (c == '\'') {
                    if (i + 1 < len && !isspace((unsigned char)line[i + 1]))
                        return -1;
                    i++;
                    done = true;
                } else {
                    *o++ = (char)c;
                    i++;
                }
            } else if (i >= len || isspace(c) || c == 0) {
                if (i < len)
                    i++; /* the blank after the word */
                done = true;
            } else if (c == '"') {
                dq = true;
                i++;
            } else if (c == '\'') {
                sq = true;
                i++;
            } else {
                *o++ = (char)c;
                i++;
            }
        }
        /* The output never passes the input: o < line + i, or both are at
         * the end, where line[len] is the terminator. */
        lens[n] = (size_t)(o - start);
        words[n++] = start;
        *o = '\0';
    }
}

/*
 * A value as the config file holds it: one quoted word ("..." or '...',
 * with config_split's escapes), or, unquoted, the rest of the line as it
 * is (so `counter-types a b c` keeps its blanks). The word is unescaped in
 * place; *out points at the value. 0, or -1 with a message.
 */
static int file_value(char *v, char **out, char *why, size_t cap)
{
    char *w[1];
    size_t l[1];
    int n;

    *out = v;
    if (v[0] != '"' && v[0] != '\'')
        return 0;
    n = config_split(v, strlen(v), w, l, 1);
    if (n != 1) {
        snprintf(why, cap, "%s",
                 n == -1 ? "unbalanced quotes"
                         : "one value expected (quote all of it)");
        return -1;
    }
    if (memchr(w[0], '\0', l[0]) != NULL) {
        snprintf(why, cap, "a value cannot hold a NUL byte");
        return -1;
    }
    *out = w[0];
    return 0;
}

/* Longest line the config file may have: far above any value written
 * back (4 bytes per byte of a CONFIG_STR_MAX value at most), and room for
 * long `user` lines. */
#define LINE_MAX_BYTES (64u << 10)

int config_load_file(struct config *cfg, const char *path, char *err,
                     size_t errlen)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    unsigned lineno = 0;
    int rc = 0;

    if (f == NULL) {
        snprintf(err, errlen, "cannot open config file %s: %s", path,
                 strerror(errno));
        return -1;
    }
    while ((got = getline(&line, &cap, f)) >= 0) {
        char why[512], where[CONFIG_STR_MAX + 16];
        char *s, *v, *value;

        lineno++;
        snprintf(where, sizeof(where), "%s:%u", path, lineno);
        if ((size_t)got > LINE_MAX_BYTES ||
            memchr(line, '\0', (size_t)got) != NULL) {
            snprintf(err, errlen,
                     "%s: line longer than %u bytes or with a "
                     "NUL byte",
                     where, LINE_MAX_BYTES);
            rc = -1;
            break;
        }
        s = trim(line);
        if (*s == '\0' || *s == '#')
            continue;
        v = s;
        while (*v != '\0' && *v != ' ' && *v != '\t')
            v++;
        if (*v != '\0')
            *v++ = '\0';
        v = trim(v);
        if (strcasecmp(s, "user") == 0) {
            rc = set_user(cfg, where, v, why, sizeof(why));
        } else {
            rc = file_value(v, &value, why, sizeof(why));
            if (rc == 0)
                rc = config_set(cfg, s, value, why, sizeof(why));
        }
        if (rc != 0) {
            snprintf(err, errlen, "%s: %s", where, why);
            break;
        }
    }
    free(line);
    fclose(f);
    if (rc == 0 && strlen(path) < sizeof(cfg->config_file))
        strcpy(cfg->config_file, path);
    return rc;
}

int config_from_args(struct config *cfg, int argc, char **argv, char *err,
                     size_t errlen)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--config") == 0) {
            if (i + 1 >= argc) {
                snprintf(err, errlen, "--config needs a file");
                return -1;
            }
            if (config_load_file(cfg, argv[i + 1], err, errlen) != 0)
                return -1;
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0) {
            snprintf(err, errlen, "unexpected argument '%s'", a);
            return -1;
        }
        if (i + 1 >= argc) {
            snprintf(err, errlen, "%s needs a value", a);
            return -1;
        }
        if (strcmp(a, "--config") != 0 &&
            config_set(cfg, a + 2, argv[i + 1], err, errlen) != 0)
            return -1;
        i++;
    }
    return 0;
}

/* Glob match, case-insensitive, * and ? only. */
static bool glob_match(const char *p, size_t plen, const char *s)
{
    size_t pi = 0, si = 0, star_p = (size_t)-1, star_s = 0;
    size_t slen = strlen(s);
    while (si < slen) {
        if (pi < plen && (p[pi] == '?' || tolower((unsigned char)p[pi]) ==
                                              tolower((unsigned char)s[si]))) {
            pi++;
            si++;
        } else if (pi < plen && p[pi] == '*') {
            star_p = pi++;
            star_s = si;
        } else if (star_p != (size_t)-1) {
            pi = star_p + 1;
            si = ++star_s;
        } else {
            return false;
        }
    }
    while (pi < plen && p[pi] == '*')
        pi++;
    return pi == plen;
}

/* Key k's current value as text into buf (cap >= 32 for numbers; strings
 * point into cfg). reveal: a secret's real value (CONFIG REWRITE), else
 * "(set)" or "". */
static const char *key_text(const struct config *cfg, const struct key *k,
                            char *buf, size_t cap, bool reveal)
{
    const char *field = (const char *)cfg + k->off;

    switch (k->kind) {
    case K_U32:
        buf[ur_fmt_u64(buf, *(const uint32_t *)(const void *)field)] = '\0';
        return buf;
    case K_LOGLEVEL: {
        int level = *(const int *)(const void *)field;
        const char *v = level == LOG_WARN ? "warning" : log_level_name(level);
        size_t n = strlen(v);
        /* lower-case for symmetry with the accepted values */
        for (size_t j = 0; j < n && j < cap - 1; j++)
            buf[j] = (char)tolower((unsigned char)v[j]);
        buf[n < cap - 1 ? n : cap - 1] = '\0';
        return buf;
    }
    case K_YESNO:
        return *(const bool *)(const void *)field ? "yes" : "no";
    case K_ALLOW:
        return allow_names[*(const int *)(const void *)field];
    case K_CHANDEF:
        return *(const bool *)(const void *)field ? "allchannels"
                                                  : "resetchannels";
    case K_FSYNC:
        return fsync_names[*(const int *)(const void *)field];
    case K_BYTES:
        buf[ur_fmt_u64(buf, *(const uint64_t *)(const void *)field)] = '\0';
        return buf;
    case K_I64:
        snprintf(buf, cap, "%lld",
                 (long long)*(const int64_t *)(const void *)field);
        return buf;
    case K_SECRET:
        return reveal ? field : field[0] != '\0' ? "(set)" : "";
    case K_TLSAUTH:
        return tls_auth_names[*(const int *)(const void *)field];
    default:
        return field;
    }
}

/*
 * Redis's names for the same settings, so that Redis tools find them
 * (redis-benchmark reads save and appendonly; exporters read them too):
 *   save         "<save-seconds> 1" ("" when 0): a snapshot every
 *                save-seconds when at least one change happened.
 *                Setting it takes the smallest seconds of its pairs.
 *   appendonly   journal         appendfsync  journal-fsync
 *   databases    1 (one database, SELECT 0), read-only
 *   client-output-buffer-limit
 *                "normal <client-output-limit> 0 0 replica 0 0 0 pubsub
 *                <pubsub-output-limit> <pubsub-output-soft-limit>
 *                <pubsub-output-soft-seconds>"; setting it takes
 *                "class hard soft seconds" groups for normal (soft and
 *                seconds 0: unreadd has no soft limit there) and pubsub
 */
struct alias {
    const char *name;
    const char *target; /* NULL: computed here */
};

static const struct alias aliases[] = {
    {"save", NULL},
    {"appendonly", "journal"},
    {"appendfsync", "journal-fsync"},
    {"databases", NULL},
    {"slaveof", "replicaof"},
    {"slave-serve-stale-data", "replica-serve-stale-data"},
    {"slave-priority", "replica-priority"},
    {"slave-announced", "replica-announced"},
    {"slave-announce-ip", "replica-announce-ip"},
    {"slave-announce-port", "replica-announce-port"},
    {"repl-ping-slave-period", "repl-ping-replica-period"},
    {"min-slaves-to-write", "min-replicas-to-write"},
    {"min-slaves-max-lag", "min-replicas-max-lag"},
    {"replica-read-only", NULL},
    {"slave-read-only", NULL},
    {"client-output-buffer-limit", NULL},
};
#define NALIASES (sizeof(aliases) / sizeof(aliases[0]))

static const struct alias *alias_find(const char *name)
{
    for (size_t i = 0; i < NALIASES; i++)
        if (strcasecmp(aliases[i].name, name) == 0)
            return &aliases[i];
    return NULL;
}

static const char *alias_text(const struct config *cfg, const struct alias *a,
                              char *buf, size_t cap)
{
    if (a->target != NULL)
        return key_text(cfg, key_find(a->target), buf, cap, false);
    if (strcmp(a->name, "databases") == 0)
        return "1";
    if (strstr(a->name, "read-only") != NULL)
        return "yes";
    if (strcmp(a->name, "client-output-buffer-limit") == 0) {
        snprintf(buf, cap, "normal %llu 0 0 replica 0 0 0 pubsub %llu %llu %u",
                 (unsigned long long)cfg->client_output_limit,
                 (unsigned long long)cfg->pubsub_output_limit,
                 (unsigned long long)cfg->pubsub_output_soft,
                 cfg->pubsub_output_soft_seconds);
        return buf;
    }
    if (cfg->save_seconds == 0)
        return "";
    snprintf(buf, cap, "%u 1", cfg->save_seconds);
    return buf;
}

void config_match(const struct config *cfg, const char *pattern, size_t patlen,
                  config_visit_fn fn, void *ctx)
{
    char buf[160];

    for (size_t i = 0; i < NKEYS; i++) {
        const struct key *k = &keys[i];
        if (glob_match(pattern, patlen, k->name))
            fn(k->name, key_text(cfg, k, buf, sizeof(buf), false), ctx);
    }
    for (size_t i = 0; i < NALIASES; i++)
        if (glob_match(pattern, patlen, aliases[i].name))
            fn(aliases[i].name, alias_text(cfg, &aliases[i], buf, sizeof(buf)),
               ctx);
}

/* save "S1 C1 S2 C2 ...": the smallest S (see aliases); "" is 0. */
static int set_save(struct config *cfg, const char *value, char *err,
                    size_t errlen)
{
    uint64_t best = 0, v;
    unsigned words = 0;
    const char *p = value;

    for (;;) {
        size_t len;

        while (*p == ' ')
            p++;
        if (*p == '\0')
            break;
        len = strcspn(p, " ");
        if (ur_parse_uint(p, len, 31536000, &v) != UR_NUM_OK) {
            snprintf(err, errlen,
                     "save: '%s' is not pairs of seconds and changes", value);
            return -1;
        }
        if (words % 2 == 0 && (best == 0 || v < best))
            best = v;
        words++;
        p += len;
    }
    if (words % 2 != 0) {
        snprintf(err, errlen, "save: '%s' is not pairs of seconds and changes",
                 value);
        return -1;
    }
    cfg->save_seconds = (uint32_t)best;
    return 0;
}

/* client-output-buffer-limit "class hard soft seconds ...": all groups
 * checked before any is applied. */
static int set_obl(struct config *cfg, const char *value, char *err,
                   size_t errlen)
{
    struct config next = *cfg;
    char words[16][32];
    unsigned n = 0;
    const char *p = value;

    for (;;) {
        size_t len;

        while (*p == ' ')
            p++;
        if (*p == '\0')
            break;
        len = strcspn(p, " ");
        if (n == 16 || len >= sizeof(words[0]))
            goto syntax;
        memcpy(words[n], p, len);
        words[n++][len] = '\0';
        p += len;
    }
    if (n == 0 || n % 4 != 0)
        goto syntax;
    for (unsigned i = 0; i < n; i += 4) {
        uint64_t hard, soft, secs;

        if (set_bytes(&hard, "client-output-buffer-limit", words[i + 1], err,
                      errlen) != 0 ||
            set_bytes(&soft, "client-output-buffer-limit", words[i + 2], err,
                      errlen) != 0)
            return -1;
        if (ur_parse_uint(words[i + 3], strlen(words[i + 3]), 86400, &secs) !=
            UR_NUM_OK)
            goto syntax;
        if (strcasecmp(words[i], "pubsub") == 0) {
            next.pubsub_output_limit = hard;
            next.pubsub_output_soft = soft;
            next.pubsub_output_soft_seconds = (uint32_t)secs;
        } else if (strcasecmp(words[i], "normal") == 0 && soft == 0 &&
                   secs == 0) {
            next.client_output_limit = hard;
        } else {
            snprintf(err, errlen,
                     "client-output-buffer-limit: class '%s' with these "
                     "values is not supported (normal hard 0 0, pubsub hard "
                     "soft seconds)",
                     words[i]);
            return -1;
        }
    }
    *cfg = next;
    return 0;
syntax:
    snprintf(err, errlen,
             "client-output-buffer-limit: '%s' is not groups of "
             "'class hard soft seconds'",
             value);
    return -1;
}

/* 1 when key is no alias; else what setting it returned (err "" when
 * it worked). */
static int set_alias(struct config *cfg, const char *key, const char *value,
                     char *err, size_t errlen)
{
    const struct alias *a = alias_find(key);

    err[0] = '\0';
    if (a == NULL)
        return 1;
    if (a->target != NULL)
        return config_set(cfg, a->target, value, err, errlen);
    if (strcmp(a->name, "save") == 0)
        return set_save(cfg, value, err, errlen);
    if (strstr(a->name, "read-only") != NULL) {
        if (strcasecmp(value, "yes") == 0)
            return 0;
        snprintf(err, errlen,
                 "%s: unreadd's replicas are always read-only (yes)", a->name);
        return -1;
    }
    if (strcmp(a->name, "client-output-buffer-limit") == 0)
        return set_obl(cfg, value, err, errlen);
    if (strcmp(value, "1") != 0) {
        snprintf(err, errlen, "databases: unreadd has one database (1)");
        return -1;
    }
    return 0;
}

bool config_known(const char *key)
{
    return key_find(key) != NULL || alias_find(key) != NULL;
}

int config_set_runtime(struct config *cfg, const char *key, const char *value,
                       char *err, size_t errlen)
{
    const struct alias *a = alias_find(key);
    const struct key *k;

    if (a != NULL && a->target == NULL) {
        if (strcmp(a->name, "save") == 0)
            return set_save(cfg, value, err, errlen);
        if (strstr(a->name, "read-only") != NULL)
            return set_alias(cfg, a->name, value, err, errlen);
        if (strcmp(a->name, "client-output-buffer-limit") == 0)
            return set_obl(cfg, value, err, errlen);
        snprintf(err, errlen, "'%s' is read-only", a->name);
        return -1;
    }
    k = key_find(a != NULL ? a->target : key);
    if (k == NULL) {
        snprintf(err, errlen, "unknown config key '%s'", key);
        return -1;
    }
    if (!(k->flags & R)) {
        snprintf(err, errlen,
                 "'%s' cannot change while the server runs: set it in the "
                 "config file (or --%s) and restart",
                 k->name, k->name);
        return -1;
    }
    return config_set(cfg, k->name, value, err, errlen);
}

bool config_protected_change(const struct config *cfg, const char *key,
                             const char *value)
{
    const struct alias *a = alias_find(key);
    const struct key *k = key_find(a != NULL && a->target ? a->target : key);

    if (k == NULL || !(k->flags & P))
        return false;
    if (k->kind != K_STR && k->kind != K_STR0)
        return true;
    return strcmp((const char *)cfg + k->off, value) != 0;
}

bool config_is_secret(const char *key, size_t len)
{
    const struct alias *a;
    const struct key *k;
    char name[64];

    if (len >= sizeof(name))
        return false;
    memcpy(name, key, len);
    name[len] = '\0';
    a = alias_find(name);
    k = key_find(a != NULL && a->target != NULL ? a->target : name);
    return k != NULL && k->kind == K_SECRET;
}

bool config_is_runtime(const char *key)
{
    const struct alias *a = alias_find(key);
    const struct key *k;

    if (a != NULL && a->target == NULL)
        return strcmp(a->name, "save") == 0 ||
               strstr(a->name, "read-only") != NULL ||
               strcmp(a->name, "client-output-buffer-limit") == 0;
    k = key_find(a != NULL ? a->target : key);
    return k != NULL && (k->flags & R);
}

const char *config_canonical(const char *key)
{
    const struct alias *a = alias_find(key);
    const struct key *k = key_find(a != NULL && a->target ? a->target : key);

    if (a != NULL && a->target == NULL)
        return strcmp(a->name, "save") == 0 ? "save-seconds"
               : strcmp(a->name, "client-output-buffer-limit") == 0
                   ? "pubsub-output-limit"
                   : NULL;
    return k != NULL ? k->name : NULL;
}

/* Whether a value must be quoted for the loader (file_value) to read it
 * back: empty, or with a blank, a quote, a backslash, '#' or a byte that
 * is not printable ASCII. */
static bool needs_quotes(const char *v, size_t n)
{
    if (n == 0)
        return true;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c <= ' ' || c >= 0x7f || c == '"' || c == '\'' || c == '\\' ||
            c == '#')
            return true;
    }
    return false;
}

size_t config_quote(const char *v, size_t n, char *out, size_t cap)
{
    size_t k = 0;

#define PUT(c)                                                                 \
    do {                                                                       \
        if (k + 1 < cap)                                                       \
            out[k] = (char)(c);                                                \
        k++;                                                                   \
    } while (0)
    if (!needs_quotes(v, n)) {
        for (size_t i = 0; i < n; i++)
            PUT(v[i]);
    } else {
        PUT('"');
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)v[i];
            static const char hex[] = "0123456789abcdef";

            switch (c) {
            case '\\':
            case '"':
                PUT('\\');
                PUT(c);
                break;
            case '\n':
                PUT('\\');
                PUT('n');
                break;
            case '\r':
                PUT('\\');
                PUT('r');
                break;
            case '\t':
                PUT('\\');
                PUT('t');
                break;
            case '\a':
                PUT('\\');
                PUT('a');
                break;
            case '\b':
                PUT('\\');
                PUT('b');
                break;
            default:
                if (c >= 0x20 && c < 0x7f) {
                    PUT(c);
                } else {
                    PUT('\\');
                    PUT('x');
                    PUT(hex[c >> 4]);
                    PUT(hex[c & 15]);
                }
            }
        }
        PUT('"');
    }
#undef PUT
    if (cap > 0)
        out[k < cap ? k : cap - 1] = '\0';
    return k;
}

/*
 * One `name value` line, the value as the loader reads it back exactly
 * (config_quote), or "host port" as Redis writes it, two words (host_ok
 * made sure the host needs no quotes). The line is read back here before
 * it is written: -1 with a message when it would not give the value back.
 */
static int put_line(FILE *f, const char *name, const char *value, char *err,
                    size_t errlen)
{
    bool hostport =
        strcmp(name, "replicaof") == 0 || strcmp(name, "slaveof") == 0;
    char text[4 * CONFIG_STR_MAX + 8], back[sizeof(text)], why[64];
    size_t n = strlen(value), len;
    char *got;

    if (hostport && value[0] != '\0') {
        fprintf(f, "%s %s\n", name, value);
        return 0;
    }
    len = config_quote(value, n, text, sizeof(text));
    memcpy(back, text, len + 1);
    if (len >= sizeof(text) || file_value(back, &got, why, sizeof(why)) != 0 ||
        strcmp(got, value) != 0) {
        snprintf(err, errlen,
                 "the value of %s cannot be written back exactly: nothing "
                 "was written",
                 name);
        return -1;
    }
    fprintf(f, "%s %s\n", name, text);
    return 0;
}

#define REWRITE_MARK "# Generated by CONFIG REWRITE"

/*
 * CONFIG REWRITE, as Redis does it: every line of the old file stays
 * (comments, blank lines, unknown text) except the settings, each replaced
 * by its key's current value at its first occurrence and dropped at the
 * others; keys that are not in the file and differ from their default are
 * appended after REWRITE_MARK. Aliases in the file (save, appendonly, ...)
 * are rewritten under their own names; `user` lines, when users is not
 * NULL, are replaced by users at the first of them (appended after the
 * mark when there is none). Written to a temporary file, fsynced and
 * renamed over the old one; on any error the old file stays as it was.
 */
int config_rewrite(const struct config *cfg, const char *path,
                   const char *users, char *err, size_t errlen)
{
    bool seen[NKEYS] = {false}, seen_alias[NALIASES] = {false};
    bool marked = false, users_done = users == NULL || users[0] == '\0';
    char tmp[CONFIG_STR_MAX + 32], buf[160];
    FILE *in = fopen(path, "r"), *out;
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    struct config dflt;
    int rc = 0;

    if (in == NULL && errno != ENOENT) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    snprintf(tmp, sizeof(tmp), "%s.rewrite.tmp", path);
    out = fopen(tmp, "w");
    if (out == NULL) {
        snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
        if (in != NULL)
            fclose(in);
        return -1;
    }
    while (rc == 0 && in != NULL && (got = getline(&line, &cap, in)) > 0) {
        char word[64];
        const char *s = line;
        size_t n;

        while (*s == ' ' || *s == '\t')
            s++;
        n = strcspn(s, " \t\r\n");
        if (*s == '#' || n == 0 || n >= sizeof(word)) {
            if (strncmp(line, REWRITE_MARK, strlen(REWRITE_MARK)) == 0)
                marked = true;
            fwrite(line, 1, (size_t)got, out);
            if (line[got - 1] != '\n')
                fputc('\n', out);
            continue;
        }
        memcpy(word, s, n);
        word[n] = '\0';
        const struct key *k = key_find(word);
        const struct alias *a = k == NULL ? alias_find(word) : NULL;
        if (k != NULL) {
            size_t i = (size_t)(k - keys);
            if (!seen[i])
                rc = put_line(out, k->name,
                              key_text(cfg, k, buf, sizeof(buf), true), err,
                              errlen);
            seen[i] = true;
        } else if (a != NULL) {
            size_t i = (size_t)(a - aliases);
            if (!seen_alias[i])
                rc =
                    put_line(out, a->name, alias_text(cfg, a, buf, sizeof(buf)),
                             err, errlen);
            seen_alias[i] = true;
            if (a->target != NULL)
                seen[key_find(a->target) - keys] = true;
            else if (strcmp(a->name, "save") == 0)
                seen[key_find("save-seconds") - keys] = true;
        } else if (users != NULL && strcasecmp(word, "user") == 0) {
            if (!users_done)
                fputs(users, out);
            users_done = true;
        } else {
            fwrite(line, 1, (size_t)got, out); /* not ours: left as it is */
            if (line[got - 1] != '\n')
                fputc('\n', out);
        }
    }
    free(line);
    config_init(&dflt);
    for (size_t i = 0; rc == 0 && i < NKEYS; i++) {
        char dbuf[160];
        const char *v = key_text(cfg, &keys[i], buf, sizeof(buf), true);

        if (seen[i] ||
            strcmp(v, key_text(&dflt, &keys[i], dbuf, sizeof(dbuf), true)) == 0)
            continue;
        if (!marked)
            fprintf(out, "\n%s\n", REWRITE_MARK);
        marked = true;
        rc = put_line(out, keys[i].name, v, err, errlen);
    }
    if (rc == 0 && !users_done) {
        if (!marked)
            fprintf(out, "\n%s\n", REWRITE_MARK);
        fputs(users, out);
    }
    if (in != NULL)
        fclose(in);
    if (rc != 0) {
        fclose(out);
        unlink(tmp);
        return -1;
    }
    return fs_commit_tmp(out, tmp, path, err, errlen);
}

bool config_is_protected(const char *key)
{
    const struct alias *a = alias_find(key);
    const struct key *k = key_find(a != NULL && a->target ? a->target : key);

    return k != NULL && (k->flags & P);
}

int config_source_by_name(const struct config *cfg, const char *name,
                          size_t len)
{
    for (unsigned i = 0; i < cfg->nsources; i++) {
        if (strlen(cfg->source_names[i]) == len &&
            strncasecmp(cfg->source_names[i], name, len) == 0)
            return (int)i;
    }
    return -1;
}

int config_replicaof(const struct config *cfg, char *host, size_t cap,
                     uint32_t *port)
{
    const char *sp = strchr(cfg->replicaof, ' ');
    uint64_t p = 0;

    if (cfg->replicaof[0] == '\0' || sp == NULL ||
        (size_t)(sp - cfg->replicaof) >= cap ||
        !ur_parse_u64(sp + 1, strlen(sp + 1), &p))
        return 1;
    memcpy(host, cfg->replicaof, (size_t)(sp - cfg->replicaof));
    host[sp - cfg->replicaof] = '\0';
    *port = (uint32_t)p;
    return 0;
}

int config_type_by_name(const struct config *cfg, const char *name, size_t len)
{
    for (unsigned i = 0; i < cfg->ntypes; i++) {
        if (strlen(cfg->type_names[i]) == len &&
            strncasecmp(cfg->type_names[i], name, len) == 0)
            return (int)i;
    }
    return -1;
}
