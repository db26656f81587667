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

#include "db.h"
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
    K_SECRET    /* a string that may be empty; CONFIG GET does not show it */
};

/* K_FSYNC values, indexed by enum journal_fsync. */
static const char *const fsync_names[] = {"no", "everysec", "always"};

struct key {
    const char *name;
    enum key_kind kind;
    size_t off;
    const char *dflt;
    uint32_t min, max; /* K_U32 */
};

#define F(field) offsetof(struct config, field)

static const struct key keys[] = {
    {"bind", K_STR, F(bind), "127.0.0.1", 0, 0},
    {"port", K_U32, F(port), "7460", 1, 65535},
    {"dir", K_STR, F(dir), "./data", 0, 0},
    {"loglevel", K_LOGLEVEL, F(loglevel), "info", 0, 0},
    {"max-frame", K_U32, F(max_frame), "1048576", 64, UR_MAX_FRAME_CEILING},
    {"max-args", K_U32, F(max_args), "4096", 8, 1u << 20},
    {"max-inline", K_U32, F(max_inline), "65536", 64, 16u << 20},
    {"counter-types", K_TYPES, F(counter_types),
     "mention comment like dm system", 0, 0},
    {"unread-cap", K_U32, F(unread_cap), "99", 1, 1000000},
    /* names of CONV's message sources 0..7 (CONV.SEQ ... SOURCE name) */
    {"conv-sources", K_SOURCES, F(conv_sources), "", 0, 0},
    /* persistence */
    {"save-seconds", K_U32, F(save_seconds), "300", 0, 31536000},
    {"journal", K_YESNO, F(journal), "yes", 0, 0},
    {"journal-fsync", K_FSYNC, F(journal_fsync), "everysec", 0, 0},
    /* JOIN's insert and TOTAL/LIST's walk are O(groups of the user). */
    {"grp-max-groups", K_U32, F(grp_max_groups), "10000", 1, 100000},
    /* FOLLOW's memmove and UNREAD's walk are O(follows): bounded here. */
    {"feed-max-follows", K_U32, F(feed_max_follows), "5000", 1, 100000},
    /* RCPT: retention of receipts; mapids per group (never reused), which
     * sizes every bitmap of the group */
    {"rcpt-max-age-days", K_U32, F(rcpt_max_age_days), "7", 1, 3650},
    {"rcpt-max-members", K_U32, F(rcpt_max_members), "100000", 1, 16777216},
    /* family keys, in families.def order */
    /* users, expiry and operations (docs/OPERATIONS.md) */
    {"inactive-days", K_U32, F(inactive_days), "30", 0, 36500},
    {"expire-families", K_FAMILIES, F(expire_families_text), "bc dot grp feed",
     0, 0},
    {"enable-debug-command", K_YESNO, F(enable_debug_command), "no", 0, 0},
    {"maxmemory", K_BYTES, F(maxmemory), "0", 0, 0},
    {"metrics-port", K_U32, F(metrics_port), "0", 0, 65535},
    {"metrics-bind", K_STR, F(metrics_bind), "127.0.0.1", 0, 0},
    /* limits and authentication (docs/OPERATIONS.md "Security") */
    {"maxclients", K_U32, F(maxclients), "10000", 1, 1000000},
    {"timeout", K_U32, F(timeout), "0", 0, 31536000},
    {"client-output-limit", K_BYTES, F(client_output_limit), "64mb", 0, 0},
    {"client-input-limit", K_BYTES, F(client_input_limit), "256mb", 0, 0},
    {"client-output-timeout", K_U32, F(client_output_timeout), "60", 0,
     31536000},
    {"requirepass", K_SECRET, F(requirepass), "", 0, 0},
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

int config_set(struct config *cfg, const char *key, const char *value,
               char *err, size_t errlen)
{
    const struct key *k = key_find(key);
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

int config_load_file(struct config *cfg, const char *path, char *err,
                     size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, errlen, "cannot open config file %s: %s", path,
                 strerror(errno));
        return -1;
    }
    char line[1024];
    unsigned lineno = 0;
    int rc = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        lineno++;
        char *s = trim(line);
        if (*s == '\0' || *s == '#')
            continue;
        char *v = s;
        while (*v != '\0' && *v != ' ' && *v != '\t')
            v++;
        if (*v != '\0')
            *v++ = '\0';
        v = trim(v);
        /* Allow "value" in quotes, as Redis configs do. */
        size_t vl = strlen(v);
        if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') {
            v[vl - 1] = '\0';
            v++;
        }
        char why[256];
        if (config_set(cfg, s, v, why, sizeof(why)) != 0) {
            snprintf(err, errlen, "%s:%u: %s", path, lineno, why);
            rc = -1;
            break;
        }
    }
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

void config_match(const struct config *cfg, const char *pattern, size_t patlen,
                  config_visit_fn fn, void *ctx)
{
    for (size_t i = 0; i < NKEYS; i++) {
        const struct key *k = &keys[i];
        if (!glob_match(pattern, patlen, k->name))
            continue;
        const char *field = (const char *)cfg + k->off;
        char num[24];
        const char *value = field;
        if (k->kind == K_U32) {
            num[ur_fmt_u64(num, *(const uint32_t *)(const void *)field)] = '\0';
            value = num;
        } else if (k->kind == K_LOGLEVEL) {
            int level = *(const int *)(const void *)field;
            value = level == LOG_WARN ? "warning" : log_level_name(level);
            /* lower-case for symmetry with the accepted values */
            size_t n = strlen(value);
            for (size_t j = 0; j < n && j < sizeof(num) - 1; j++)
                num[j] = (char)tolower((unsigned char)value[j]);
            num[n < sizeof(num) - 1 ? n : sizeof(num) - 1] = '\0';
            value = num;
        } else if (k->kind == K_YESNO) {
            value = *(const bool *)(const void *)field ? "yes" : "no";
        } else if (k->kind == K_FSYNC) {
            value = fsync_names[*(const int *)(const void *)field];
        } else if (k->kind == K_BYTES) {
            num[ur_fmt_u64(num, *(const uint64_t *)(const void *)field)] = '\0';
            value = num;
        } else if (k->kind == K_SECRET) {
            value = field[0] != '\0' ? "(set)" : "";
        }
        fn(k->name, value, ctx);
    }
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

int config_type_by_name(const struct config *cfg, const char *name, size_t len)
{
    for (unsigned i = 0; i < cfg->ntypes; i++) {
        if (strlen(cfg->type_names[i]) == len &&
            strncasecmp(cfg->type_names[i], name, len) == 0)
            return (int)i;
    }
    return -1;
}
