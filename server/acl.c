/*
 * acl.c - see acl.h. The users, their rules and the check; the ACL
 * command itself is cmd_acl.c.
 */
#include "acl.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "clients.h"
#include "config.h"
#include "fsutil.h"
#include "log.h"
#include "pubsub.h"

/* acl-pubsub-default: the channels of a new (or reset) user. As Redis's
 * server.acl_pubsub_default, one value for the process. */
static bool chan_default_all;

/* ---- categories ------------------------------------------------------ */

/*
 * Redis's categories, with unreadd's commands where a Redis user expects
 * them (ACL CAT lists Redis's empty ones too, so that rules written for
 * Redis, -@scripting or +@string, still read), then one per family.
 */
enum {
    CAT_KEYSPACE,
    CAT_READ,
    CAT_WRITE,
    CAT_SET,
    CAT_SORTEDSET,
    CAT_LIST,
    CAT_HASH,
    CAT_STRING,
    CAT_BITMAP,
    CAT_HYPERLOGLOG,
    CAT_GEO,
    CAT_STREAM,
    CAT_PUBSUB,
    CAT_ADMIN,
    CAT_FAST,
    CAT_SLOW,
    CAT_BLOCKING,
    CAT_DANGEROUS,
    CAT_CONNECTION,
    CAT_TRANSACTION,
    CAT_SCRIPTING,
    CAT_FAMILY /* + FAM_x; then one more for USER.* */
};
#define CAT_USER (CAT_FAMILY + FAM_COUNT)
#define CAT_COUNT (CAT_USER + 1)

static const char *const cat_names[CAT_FAMILY] = {
    "keyspace", "read",     "write",     "set",        "sortedset",
    "list",     "hash",     "string",    "bitmap",     "hyperloglog",
    "geo",      "stream",   "pubsub",    "admin",      "fast",
    "slow",     "blocking", "dangerous", "connection", "transaction",
    "scripting"};

static const char *cat_name(unsigned c)
{
    if (c < CAT_FAMILY)
        return cat_names[c];
    if (c < CAT_USER)
        return db_families[c - CAT_FAMILY].name;
    return "user";
}

static bool is_pubsub_op(const struct ur_op *op)
{
    return op->code >= UR_OP_SUBSCRIBE && op->code <= UR_OP_PUBSUB;
}

/* The categories of op, a bit per CAT_x. Derived from the flags and the
 * opcode ranges of ops.def; the lists below are the admin commands a
 * Redis user finds in @admin, @dangerous and @connection. */
static uint64_t op_cats(const struct ur_op *op)
{
    uint64_t m = 0;
    unsigned fam = db_family_of_opcode(op->code);

    if (op->flags & OPF_READ)
        m |= 1ull << CAT_READ;
    if (op->flags & OPF_WRITE)
        m |= 1ull << CAT_WRITE;
    m |= 1ull << (op->flags & OPF_FAST ? CAT_FAST : CAT_SLOW);
    if (fam < FAM_COUNT)
        m |= 1ull << (CAT_FAMILY + fam);
    if ((op->code >> 8) == 0x08) /* USER.*: DEL, EXPIRE, SCAN, ... */
        m |= 1ull << CAT_USER | 1ull << CAT_KEYSPACE;
    if (is_pubsub_op(op))
        m |= 1ull << CAT_PUBSUB;
    switch (op->code) {
    case UR_OP_PING:
    case UR_OP_HELLO:
    case UR_OP_AUTH:
    case UR_OP_QUIT:
    case UR_OP_ECHO:
    case UR_OP_SELECT:
    case UR_OP_RESET:
    case UR_OP_HELP:
    case UR_OP_COMMAND:
    case UR_OP_READONLY:
    case UR_OP_READWRITE:
    case UR_OP_ASKING:
        m |= 1ull << CAT_CONNECTION;
        break;
    case UR_OP_CLIENT:
        m |= 1ull << CAT_CONNECTION | 1ull << CAT_ADMIN | 1ull << CAT_DANGEROUS;
        break;
    case UR_OP_MULTI:
    case UR_OP_EXEC:
    case UR_OP_DISCARD:
        m |= 1ull << CAT_TRANSACTION;
        break;
    case UR_OP_WAIT:
        m |= 1ull << CAT_BLOCKING | 1ull << CAT_CONNECTION;
        break;
    case UR_OP_DBSIZE:
        m |= 1ull << CAT_KEYSPACE;
        break;
    case UR_OP_FLUSHALL:
        m |= 1ull << CAT_KEYSPACE | 1ull << CAT_DANGEROUS;
        break;
    case UR_OP_INFO:
        m |= 1ull << CAT_DANGEROUS;
        break;
    case UR_OP_CONFIG:
    case UR_OP_SAVE:
    case UR_OP_BGSAVE:
    case UR_OP_LASTSAVE:
    case UR_OP_SHUTDOWN:
    case UR_OP_SLOWLOG:
    case UR_OP_LATENCY:
    case UR_OP_MONITOR:
    case UR_OP_REPLICAOF:
    case UR_OP_SLAVEOF:
    case UR_OP_ROLE:
    case UR_OP_REPLCONF:
    case UR_OP_PSYNC:
    case UR_OP_CLUSTER:
    case UR_OP_GLOBALCOPY:
    case UR_OP_DEBUG:
    case UR_OP_ACL:
        m |= 1ull << CAT_ADMIN | 1ull << CAT_DANGEROUS;
        break;
    default:
        break;
    }
    return m;
}

unsigned acl_op_categories(const struct ur_op *op, const char **out)
{
    static char names[CAT_COUNT][40];
    uint64_t m = op_cats(op);
    unsigned n = 0;

    for (unsigned c = 0; c < CAT_COUNT && n < 16; c++) {
        if (!(m >> c & 1))
            continue;
        if (names[c][0] == '\0')
            snprintf(names[c], sizeof(names[c]), "@%s", cat_name(c));
        out[n++] = names[c];
    }
    return n;
}

/* The categories of bit i of a user's bitmap. */
static uint64_t bit_cats(unsigned i)
{
    return i < UR_OP_COUNT ? op_cats(&ur_ops[i]) : 1ull << CAT_SLOW;
}

static bool is_safe_acl_sub(const char *s, size_t n)
{
    return (n == 6 && strncasecmp(s, "WHOAMI", 6) == 0) ||
           (n == 3 && strncasecmp(s, "CAT", 3) == 0) ||
           (n == 7 && strncasecmp(s, "GENPASS", 7) == 0) ||
           (n == 4 && strncasecmp(s, "HELP", 4) == 0);
}

/* The bit that decides op with subcommand s[0..n) (NULL: none). */
static unsigned op_bit(const struct ur_op *op, const char *s, size_t n)
{
    if (op->code == UR_OP_ACL && s != NULL && is_safe_acl_sub(s, n))
        return ACL_BIT_ACL_SAFE;
    return op->index;
}

static int cat_find(const char *s, size_t n)
{
    for (unsigned c = 0; c < CAT_COUNT; c++) {
        const char *name = cat_name(c);
        if (strlen(name) == n && strncasecmp(name, s, n) == 0)
            return (int)c;
    }
    return -1;
}

/* ---- users ------------------------------------------------------------ */

static inline bool bit_get(const uint64_t *w, unsigned i)
{
    return (w[i >> 6] >> (i & 63)) & 1;
}

static inline void bit_put(uint64_t *w, unsigned i, bool on)
{
    if (on)
        w[i >> 6] |= 1ull << (i & 63);
    else
        w[i >> 6] &= ~(1ull << (i & 63));
}

struct acl_user *acl_user_new(const char *name, size_t len)
{
    struct acl_user *u = calloc(1, sizeof(*u));

    if (u == NULL)
        return NULL;
    u->name = malloc(len + 1);
    u->rules = strdup("");
    if (u->name == NULL || u->rules == NULL) {
        free(u->name);
        free(u->rules);
        free(u);
        return NULL;
    }
    memcpy(u->name, name, len);
    u->name[len] = '\0';
    u->refs = 1;
    u->allchannels = chan_default_all;
    return u;
}

static void patterns_free(struct acl_pattern *p, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        free(p[i].s);
    free(p);
}

/* Frees what u holds but its name and refcount. */
static void user_clear(struct acl_user *u)
{
    free(u->pass);
    patterns_free(u->keys, u->nkeys);
    patterns_free(u->chans, u->nchans);
    for (uint32_t i = 0; i < u->nsubs; i++)
        free(u->subs[i].name);
    free(u->subs);
    free(u->rules);
    u->pass = NULL;
    u->keys = u->chans = NULL;
    u->subs = NULL;
    u->rules = NULL;
    u->npass = u->nkeys = u->nchans = u->nsubs = 0;
}

void acl_user_unref(struct acl_user *u)
{
    if (u == NULL || --u->refs != 0)
        return;
    user_clear(u);
    free(u->name);
    free(u);
}

static int patterns_copy(struct acl_pattern **dst,
                         const struct acl_pattern *src, uint32_t n)
{
    *dst = NULL;
    if (n == 0)
        return 0;
    *dst = calloc(n, sizeof(**dst));
    if (*dst == NULL)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        (*dst)[i] = src[i];
        (*dst)[i].s = malloc(src[i].len + 1);
        if ((*dst)[i].s == NULL) {
            patterns_free(*dst, i);
            *dst = NULL;
            return -1;
        }
        memcpy((*dst)[i].s, src[i].s, src[i].len + 1);
    }
    return 0;
}

/* A deep copy of u (refs 1), for rules applied all or nothing. */
static struct acl_user *user_clone(const struct acl_user *u)
{
    struct acl_user *c = acl_user_new(u->name, strlen(u->name));
    bool ok;

    if (c == NULL)
        return NULL;
    free(c->rules);
    *c = (struct acl_user){.name = c->name,
                           .refs = 1,
                           .on = u->on,
                           .nopass = u->nopass,
                           .allkeys = u->allkeys,
                           .allchannels = u->allchannels};
    memcpy(c->cmds, u->cmds, sizeof(c->cmds));
    memcpy(c->fast, u->fast, sizeof(c->fast));
    c->rules = strdup(u->rules);
    ok = c->rules != NULL;
    if (ok && u->npass != 0) {
        c->pass = malloc(u->npass * sizeof(*c->pass));
        ok = c->pass != NULL;
        if (ok) {
            memcpy(c->pass, u->pass, u->npass * sizeof(*c->pass));
            c->npass = u->npass;
        }
    }
    if (ok && (ok = patterns_copy(&c->keys, u->keys, u->nkeys) == 0))
        c->nkeys = u->nkeys;
    if (ok && (ok = patterns_copy(&c->chans, u->chans, u->nchans) == 0))
        c->nchans = u->nchans;
    if (ok && u->nsubs != 0) {
        c->subs = calloc(u->nsubs, sizeof(*c->subs));
        ok = c->subs != NULL;
        for (uint32_t i = 0; ok && i < u->nsubs; i++) {
            c->subs[i] = u->subs[i];
            c->subs[i].name = strdup(u->subs[i].name);
            ok = c->subs[i].name != NULL;
            c->nsubs = i + 1;
            if (!ok)
                c->nsubs = i;
        }
    }
    if (!ok) {
        acl_user_unref(c);
        return NULL;
    }
    return c;
}

/* Moves src's rights into dst (which keeps its name, refcount and
 * sessions) and frees src. */
static void user_move(struct acl_user *dst, struct acl_user *src)
{
    char *name = dst->name;
    uint32_t refs = dst->refs;

    user_clear(dst);
    *dst = *src;
    dst->name = name;
    dst->refs = refs;
    dst->dead = false;
    free(src->name);
    free(src);
}

/* ---- rules ------------------------------------------------------------ */

static int fail(char *err, size_t errlen, const char *msg)
{
    snprintf(err, errlen, "%s", msg);
    return -1;
}

static void sha256(const char *s, size_t n, uint8_t out[32])
{
    SHA256((const unsigned char *)s, n, out);
}

static int hex_hash(const char *s, size_t n, uint8_t out[32])
{
    if (n != 64)
        return -1;
    for (size_t i = 0; i < 64; i++) {
        char c = s[i];
        int v = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                       : -1;
        if (v < 0)
            return -1;
        if (i % 2 == 0)
            out[i / 2] = (uint8_t)(v << 4);
        else
            out[i / 2] |= (uint8_t)v;
    }
    return 0;
}

static int pass_add(struct acl_user *u, const uint8_t h[32], char *err,
                    size_t errlen)
{
    uint8_t(*p)[32];

    for (uint32_t i = 0; i < u->npass; i++)
        if (memcmp(u->pass[i], h, 32) == 0)
            return 0;
    if (u->npass >= ACL_PASS_MAX)
        return fail(err, errlen, "too many passwords for one user");
    p = realloc(u->pass, (u->npass + 1) * sizeof(*p));
    if (p == NULL)
        return fail(err, errlen, "out of memory");
    u->pass = p;
    memcpy(u->pass[u->npass++], h, 32);
    u->nopass = false;
    return 0;
}

static int pass_del(struct acl_user *u, const uint8_t h[32], char *err,
                    size_t errlen)
{
    for (uint32_t i = 0; i < u->npass; i++) {
        if (memcmp(u->pass[i], h, 32) != 0)
            continue;
        memmove(u->pass[i], u->pass[i + 1],
                (u->npass - i - 1) * sizeof(*u->pass));
        u->npass--;
        return 0;
    }
    return fail(err, errlen,
                "The password you are trying to remove from the user does "
                "not exist");
}

static int pattern_add(struct acl_pattern **list, uint32_t *n, const char *s,
                       size_t len, uint8_t perm, char *err, size_t errlen)
{
    struct acl_pattern *p;

    for (uint32_t i = 0; i < *n; i++) {
        if ((*list)[i].len == len && memcmp((*list)[i].s, s, len) == 0) {
            (*list)[i].perm |= perm;
            return 0;
        }
    }
    if (*n >= ACL_PATTERNS_MAX)
        return fail(err, errlen, "too many patterns for one user");
    p = realloc(*list, (*n + 1) * sizeof(*p));
    if (p == NULL)
        return fail(err, errlen, "out of memory");
    *list = p;
    p[*n].s = malloc(len + 1);
    if (p[*n].s == NULL)
        return fail(err, errlen, "out of memory");
    memcpy(p[*n].s, s, len);
    p[*n].s[len] = '\0';
    p[*n].len = (uint32_t)len;
    p[*n].perm = perm;
    (*n)++;
    return 0;
}

static bool has_space(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] == ' ' || s[i] == '\0' || (unsigned char)s[i] < 0x20)
            return true;
    return false;
}

/* Drops the subcommand rules of op (a rule on the whole command or on a
 * category holding it decides for all its subcommands again). */
static void subs_drop(struct acl_user *u, unsigned op)
{
    uint32_t k = 0;

    for (uint32_t i = 0; i < u->nsubs; i++) {
        if (u->subs[i].op == op)
            free(u->subs[i].name);
        else
            u->subs[k++] = u->subs[i];
    }
    u->nsubs = k;
}

/* Drops the subcommand rules of ACL's @slow-only subcommands, decided
 * by the ACL_BIT_ACL_SAFE bit that a category rule just set. */
static void subs_drop_safe(struct acl_user *u)
{
    uint32_t k = 0;

    for (uint32_t i = 0; i < u->nsubs; i++) {
        if (ur_ops[u->subs[i].op].code == UR_OP_ACL &&
            is_safe_acl_sub(u->subs[i].name, strlen(u->subs[i].name)))
            free(u->subs[i].name);
        else
            u->subs[k++] = u->subs[i];
    }
    u->nsubs = k;
}

/* The rule text as ACL LIST shows it: the rules of commands since the
 * last +@all / -@all, each target once (a later rule on the same
 * target decides all of it, so the earlier one is dropped). */
static int rules_note(struct acl_user *u, const char *rule, size_t len)
{
    size_t cur = strlen(u->rules), k = 0;
    char *out;
    const char *p = u->rules;

    if ((len == 5 && strncasecmp(rule + 1, "@all", 4) == 0)) {
        out = malloc(6);
        if (out == NULL)
            return -1;
        out[0] = rule[0];
        memcpy(out + 1, "@all", 5);
        free(u->rules);
        u->rules = out;
        return 0;
    }
    out = malloc(cur + len + 2);
    if (out == NULL)
        return -1;
    while (*p != '\0') {
        const char *e = strchr(p, ' ');
        size_t n = e != NULL ? (size_t)(e - p) : strlen(p);

        if (!(n == len && strncasecmp(p + 1, rule + 1, len - 1) == 0)) {
            if (k != 0)
                out[k++] = ' ';
            memcpy(out + k, p, n);
            k += n;
        }
        p += n;
        while (*p == ' ')
            p++;
    }
    if (k != 0)
        out[k++] = ' ';
    for (size_t i = 0; i < len; i++)
        out[k++] = (char)tolower((unsigned char)rule[i]);
    out[k] = '\0';
    free(u->rules);
    u->rules = out;
    return 0;
}

/* +cmd, -cmd, +@cat, -@cat, +cmd|sub, -cmd|sub. */
static int command_rule(struct acl_user *u, const char *rule, size_t len,
                        char *err, size_t errlen)
{
    bool add = rule[0] == '+';
    const char *name = rule + 1;
    size_t n = len - 1;
    const char *bar = memchr(name, '|', n);

    if (n >= 1 && name[0] == '@') {
        int c;

        if (n == 4 && strncasecmp(name, "@all", 4) == 0) {
            memset(u->cmds, add ? 0xff : 0, sizeof(u->cmds));
            for (unsigned i = ACL_BITS; i < ACL_WORDS * 64; i++)
                bit_put(u->cmds, i, false);
            for (uint32_t i = 0; i < u->nsubs; i++)
                free(u->subs[i].name);
            u->nsubs = 0;
        } else if ((c = cat_find(name + 1, n - 1)) >= 0) {
            for (unsigned i = 0; i < ACL_BITS; i++) {
                if (!(bit_cats(i) >> c & 1))
                    continue;
                bit_put(u->cmds, i, add);
                if (i < UR_OP_COUNT)
                    subs_drop(u, i);
                else
                    subs_drop_safe(u);
            }
        } else {
            return fail(err, errlen, "Unknown command or category name in ACL");
        }
    } else if (bar != NULL) {
        const struct ur_op *op = ur_op_by_name(name, (size_t)(bar - name));
        const char *sub = bar + 1;
        size_t sn = n - (size_t)(sub - name);
        struct acl_sub *s;
        bool found = false;

        if (op == NULL)
            return fail(err, errlen, "Unknown command or category name in ACL");
        if (sn == 0 || memchr(sub, '|', sn) != NULL || has_space(sub, sn))
            return fail(err, errlen, "Syntax error");
        /* An entry is an exception to the command's bit: allowed while
         * the command is denied, denied while it is allowed. */
        for (uint32_t i = 0; i < u->nsubs; i++) {
            if (u->subs[i].op == op->index && strlen(u->subs[i].name) == sn &&
                strncasecmp(u->subs[i].name, sub, sn) == 0) {
                found = true;
                if (bit_get(u->cmds, op_bit(op, sub, sn)) == add) {
                    free(u->subs[i].name);
                    u->subs[i] = u->subs[--u->nsubs];
                }
                break;
            }
        }
        if (!found && bit_get(u->cmds, op_bit(op, sub, sn)) != add) {
            if (u->nsubs >= ACL_PATTERNS_MAX)
                return fail(err, errlen, "too many subcommand rules");
            s = realloc(u->subs, (u->nsubs + 1) * sizeof(*s));
            if (s == NULL)
                return fail(err, errlen, "out of memory");
            u->subs = s;
            s[u->nsubs].op = op->index;
            s[u->nsubs].name = malloc(sn + 1);
            if (s[u->nsubs].name == NULL)
                return fail(err, errlen, "out of memory");
            for (size_t i = 0; i < sn; i++)
                s[u->nsubs].name[i] = (char)tolower((unsigned char)sub[i]);
            s[u->nsubs].name[sn] = '\0';
            u->nsubs++;
        }
        /* not in the rules text: the exceptions left are shown after it
         * (describe_all_cmds), each decided since the last rule on its
         * command */
        return 0;
    } else {
        const struct ur_op *op = ur_op_by_name(name, n);

        if (op == NULL)
            return fail(err, errlen, "Unknown command or category name in ACL");
        bit_put(u->cmds, op->index, add);
        if (op->code == UR_OP_ACL)
            bit_put(u->cmds, ACL_BIT_ACL_SAFE, add);
        subs_drop(u, op->index);
    }
    if (rules_note(u, rule, len) != 0)
        return fail(err, errlen, "out of memory");
    return 0;
}

static bool word_is(const char *s, size_t n, const char *w)
{
    return strlen(w) == n && strncasecmp(s, w, n) == 0;
}

static void reset_keys(struct acl_user *u)
{
    patterns_free(u->keys, u->nkeys);
    u->keys = NULL;
    u->nkeys = 0;
    u->allkeys = false;
}

static void reset_chans(struct acl_user *u)
{
    patterns_free(u->chans, u->nchans);
    u->chans = NULL;
    u->nchans = 0;
    u->allchannels = false;
}

/* u->fast from its rights: see acl.h. */
static void fast_update(struct acl_user *u)
{
    memset(u->fast, 0, sizeof(u->fast));
    if (u->dead)
        return;
    for (unsigned i = 0; i < UR_OP_COUNT; i++) {
        const struct ur_op *op = &ur_ops[i];

        if (op->flags & OPF_NOAUTH) {
            bit_put(u->fast, i, true);
            continue;
        }
        if (!bit_get(u->cmds, i) || op->code == UR_OP_ACL ||
            (!u->allkeys && ur_op_key_first(op) != 0) ||
            (!u->allchannels && is_pubsub_op(op)))
            continue;
        bit_put(u->fast, i, true);
    }
    for (uint32_t i = 0; i < u->nsubs; i++)
        if (!(ur_ops[u->subs[i].op].flags & OPF_NOAUTH))
            bit_put(u->fast, u->subs[i].op, false);
}

static int user_rule(struct acl_user *u, const char *rule, size_t len,
                     char *err, size_t errlen);

int acl_user_rule(struct acl_user *u, const char *rule, size_t len, char *err,
                  size_t errlen)
{
    int rc = user_rule(u, rule, len, err, errlen);

    fast_update(u);
    return rc;
}

static int user_rule(struct acl_user *u, const char *rule, size_t len,
                     char *err, size_t errlen)
{
    uint8_t h[32];

    if (len == 0)
        return fail(err, errlen, "Syntax error");
    if (word_is(rule, len, "on")) {
        u->on = true;
    } else if (word_is(rule, len, "off")) {
        u->on = false;
    } else if (word_is(rule, len, "nopass")) {
        free(u->pass);
        u->pass = NULL;
        u->npass = 0;
        u->nopass = true;
    } else if (word_is(rule, len, "resetpass")) {
        free(u->pass);
        u->pass = NULL;
        u->npass = 0;
        u->nopass = false;
    } else if (rule[0] == '>' || rule[0] == '<') {
        sha256(rule + 1, len - 1, h);
        return rule[0] == '>' ? pass_add(u, h, err, errlen)
                              : pass_del(u, h, err, errlen);
    } else if (rule[0] == '#' || rule[0] == '!') {
        if (hex_hash(rule + 1, len - 1, h) != 0)
            return fail(err, errlen,
                        "The password hash must be exactly 64 characters and "
                        "contain only lowercase hexadecimal characters");
        return rule[0] == '#' ? pass_add(u, h, err, errlen)
                              : pass_del(u, h, err, errlen);
    } else if (rule[0] == '~' || rule[0] == '%') {
        uint8_t perm = ACL_KEY_RW;
        const char *p = rule + 1;
        size_t n = len - 1;

        if (rule[0] == '%') {
            const char *t = memchr(rule, '~', len);
            perm = 0;
            for (const char *c = rule + 1; t != NULL && c < t; c++) {
                if (*c == 'R' || *c == 'r')
                    perm |= ACL_KEY_R;
                else if (*c == 'W' || *c == 'w')
                    perm |= ACL_KEY_W;
                else
                    return fail(err, errlen, "Syntax error");
            }
            if (t == NULL || perm == 0)
                return fail(err, errlen, "Syntax error");
            p = t + 1;
            n = len - (size_t)(p - rule);
        }
        if (u->allkeys)
            return fail(err, errlen,
                        "Adding a pattern after the * pattern (or the "
                        "'allkeys' flag) is not valid and does not have any "
                        "effect. Try 'resetkeys' to start with an empty list "
                        "of patterns");
        if (n == 1 && p[0] == '*' && perm == ACL_KEY_RW) {
            reset_keys(u);
            u->allkeys = true;
            return 0;
        }
        if (has_space(p, n))
            return fail(err, errlen, "Syntax error");
        return pattern_add(&u->keys, &u->nkeys, p, n, perm, err, errlen);
    } else if (word_is(rule, len, "allkeys")) {
        reset_keys(u);
        u->allkeys = true;
    } else if (word_is(rule, len, "resetkeys")) {
        reset_keys(u);
    } else if (rule[0] == '&') {
        if (u->allchannels)
            return fail(err, errlen,
                        "Adding a pattern after the * pattern (or the "
                        "'allchannels' flag) is not valid and does not have "
                        "any effect. Try 'resetchannels' to start with an "
                        "empty list of channels");
        if (len == 2 && rule[1] == '*') {
            reset_chans(u);
            u->allchannels = true;
            return 0;
        }
        if (has_space(rule + 1, len - 1))
            return fail(err, errlen, "Syntax error");
        return pattern_add(&u->chans, &u->nchans, rule + 1, len - 1, 0, err,
                           errlen);
    } else if (word_is(rule, len, "allchannels")) {
        reset_chans(u);
        u->allchannels = true;
    } else if (word_is(rule, len, "resetchannels")) {
        reset_chans(u);
    } else if (word_is(rule, len, "allcommands")) {
        return command_rule(u, "+@all", 5, err, errlen);
    } else if (word_is(rule, len, "nocommands")) {
        return command_rule(u, "-@all", 5, err, errlen);
    } else if (rule[0] == '+' || rule[0] == '-') {
        return command_rule(u, rule, len, err, errlen);
    } else if (word_is(rule, len, "reset")) {
        free(u->pass);
        u->pass = NULL;
        u->npass = 0;
        u->nopass = false;
        u->on = false;
        reset_keys(u);
        reset_chans(u);
        u->allchannels = chan_default_all;
        return command_rule(u, "-@all", 5, err, errlen);
    } else if (word_is(rule, len, "sanitize-payload") ||
               word_is(rule, len, "skip-sanitize-payload") ||
               word_is(rule, len, "clearselectors")) {
        /* Redis's, accepted so that its ACL files read: unreadd has no
         * RESTORE payloads to sanitize and no selectors */
    } else if (rule[0] == '(') {
        return fail(err, errlen,
                    "Selectors are not supported: give the rules to the "
                    "user itself");
    } else {
        return fail(err, errlen, "Syntax error");
    }
    return 0;
}

/* ---- describing ------------------------------------------------------- */

struct sb {
    char *s;
    size_t len, cap;
    bool oom;
};

static void sb_put(struct sb *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->len + n + 1) * 2;
        char *p = realloc(b->s, cap);
        if (p == NULL) {
            b->oom = true;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void sb_str(struct sb *b, const char *s)
{
    sb_put(b, s, strlen(s));
}

/* prefix + s[0..n) as one word that config_split (ACL LOAD, the config
 * file's user lines) reads back as it is: quoted when it holds a quote,
 * a backslash, '#' or a byte that is not printable. */
static void sb_word(struct sb *b, const char *prefix, const char *s, size_t n)
{
    size_t pn = strlen(prefix), cap = 4 * (pn + n) + 3;
    char *w = malloc(pn + n + 1), *q = malloc(cap);

    if (w == NULL || q == NULL) {
        b->oom = true;
    } else {
        memcpy(w, prefix, pn);
        memcpy(w + pn, s, n);
        sb_put(b, q, config_quote(w, pn + n, q, cap));
    }
    free(w);
    free(q);
}

/* The commands part of ACL LIST / GETUSER: the rules in order, after
 * -@all when they do not start with +@all or -@all. */
static void describe_cmds(struct sb *b, const struct acl_user *u)
{
    bool based = strncmp(u->rules, "+@all", 5) == 0 ||
                 strncmp(u->rules, "-@all", 5) == 0;

    if (!based)
        sb_str(b, u->rules[0] != '\0' ? "-@all " : "-@all");
    sb_str(b, u->rules);
}

static void hexs(char out[65], const uint8_t h[32])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = digits[h[i] >> 4];
        out[2 * i + 1] = digits[h[i] & 15];
    }
    out[64] = '\0';
}

/* The keys part: "~*", the patterns, or (full) "resetkeys" for none. */
static void describe_keys(struct sb *b, const struct acl_user *u, bool full)
{
    if (u->allkeys) {
        sb_str(b, "~*");
        return;
    }
    if (u->nkeys == 0 && full)
        sb_str(b, "resetkeys");
    for (uint32_t i = 0; i < u->nkeys; i++) {
        if (i != 0)
            sb_str(b, " ");
        sb_word(b,
                u->keys[i].perm == ACL_KEY_RW  ? "~"
                : u->keys[i].perm == ACL_KEY_R ? "%R~"
                                               : "%W~",
                u->keys[i].s, u->keys[i].len);
    }
}

/* The channels part: "&*", or (full) "resetchannels" then the
 * patterns. */
static void describe_chans(struct sb *b, const struct acl_user *u, bool full)
{
    if (u->allchannels) {
        sb_str(b, "&*");
        return;
    }
    if (full)
        sb_str(b, "resetchannels");
    for (uint32_t i = 0; i < u->nchans; i++) {
        if (full || i != 0)
            sb_str(b, " ");
        sb_word(b, "&", u->chans[i].s, u->chans[i].len);
    }
}

/* The commands part: the rules, then the subcommand exceptions. */
static void describe_all_cmds(struct sb *b, const struct acl_user *u)
{
    describe_cmds(b, u);
    for (uint32_t i = 0; i < u->nsubs; i++) {
        char name[64];
        size_t k = 0;
        const char *on = ur_ops[u->subs[i].op].name;

        for (; on[k] != '\0' && k + 1 < sizeof(name); k++)
            name[k] = (char)tolower((unsigned char)on[k]);
        name[k] = '\0';
        char head[80];

        snprintf(
            head, sizeof(head), "%c%s|",
            bit_get(u->cmds, op_bit(&ur_ops[u->subs[i].op], u->subs[i].name,
                                    strlen(u->subs[i].name)))
                ? '-'
                : '+',
            name);
        sb_str(b, " ");
        sb_word(b, head, u->subs[i].name, strlen(u->subs[i].name));
    }
}

static char *sb_done(struct sb *b)
{
    if (b->oom) {
        free(b->s);
        return NULL;
    }
    return b->s != NULL ? b->s : strdup("");
}

char *acl_user_part(const struct acl_user *u, int part)
{
    struct sb b = {0};

    if (part == ACL_PART_KEYS)
        describe_keys(&b, u, false);
    else if (part == ACL_PART_CHANNELS)
        describe_chans(&b, u, false);
    else
        describe_all_cmds(&b, u);
    return sb_done(&b);
}

char *acl_user_describe(const struct acl_user *u)
{
    struct sb b = {0};
    char hex[65];

    sb_str(&b, "user ");
    sb_word(&b, "", u->name, strlen(u->name));
    sb_str(&b, u->on ? " on" : " off");
    if (u->nopass)
        sb_str(&b, " nopass");
    for (uint32_t i = 0; i < u->npass; i++) {
        hexs(hex, u->pass[i]);
        sb_str(&b, " #");
        sb_str(&b, hex);
    }
    sb_str(&b, " ");
    describe_keys(&b, u, true);
    sb_str(&b, " ");
    describe_chans(&b, u, true);
    sb_str(&b, " ");
    describe_all_cmds(&b, u);
    return sb_done(&b);
}

void acl_pass_hex(const struct acl_user *u, uint32_t i, char out[65])
{
    hexs(out, u->pass[i]);
}

/* ---- the table -------------------------------------------------------- */

static struct acl_user *default_user(void)
{
    struct acl_user *u = acl_user_new("default", 7);
    char err[128];

    if (u == NULL)
        return NULL;
    if (acl_user_rule(u, "on", 2, err, sizeof(err)) != 0 ||
        acl_user_rule(u, "nopass", 6, err, sizeof(err)) != 0 ||
        acl_user_rule(u, "~*", 2, err, sizeof(err)) != 0 ||
        acl_user_rule(u, "resetchannels", 13, err, sizeof(err)) != 0 ||
        acl_user_rule(u, "&*", 2, err, sizeof(err)) != 0 ||
        acl_user_rule(u, "+@all", 5, err, sizeof(err)) != 0) {
        acl_user_unref(u);
        return NULL;
    }
    return u;
}

static int table_cmp(const struct acl_user *u, const char *name, size_t len)
{
    size_t n = strlen(u->name);
    int c = memcmp(u->name, name, n < len ? n : len);
    return c != 0 ? c : (n < len ? -1 : n > len);
}

/* Position of name in the sorted table, or where it would go. */
static uint32_t table_pos(const struct acl *acl, const char *name, size_t len,
                          bool *found)
{
    uint32_t lo = 0, hi = acl->nusers;

    *found = false;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        int c = table_cmp(acl->users[mid], name, len);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

struct acl_user *acl_user_find(const struct acl *acl, const char *name,
                               size_t len)
{
    bool found;
    uint32_t i = table_pos(acl, name, len, &found);
    return found ? acl->users[i] : NULL;
}

/* Adds u (the table takes its reference). 0, or -1 out of memory. */
static int table_add(struct acl *acl, struct acl_user *u)
{
    bool found;
    uint32_t i = table_pos(acl, u->name, strlen(u->name), &found);

    if (acl->nusers == acl->cap) {
        uint32_t cap = acl->cap ? acl->cap * 2 : 8;
        struct acl_user **p = realloc(acl->users, cap * sizeof(*p));
        if (p == NULL)
            return -1;
        acl->users = p;
        acl->cap = cap;
    }
    memmove(acl->users + i + 1, acl->users + i,
            (acl->nusers - i) * sizeof(*acl->users));
    acl->users[i] = u;
    acl->nusers++;
    if (strcmp(u->name, "default") == 0)
        acl->dflt = u;
    return 0;
}

static void table_del(struct acl *acl, uint32_t i)
{
    memmove(acl->users + i, acl->users + i + 1,
            (acl->nusers - i - 1) * sizeof(*acl->users));
    acl->nusers--;
}

struct acl *acl_create(void)
{
    struct acl *acl = calloc(1, sizeof(*acl));
    struct acl_user *d = default_user();

    if (acl == NULL || d == NULL || table_add(acl, d) != 0) {
        acl_user_unref(d);
        free(acl);
        return NULL;
    }
    return acl;
}

struct acl_log_entry {
    struct acl_log_entry *next;
    uint64_t count, id;
    const char *reason, *context;
    char *object, *username, *cinfo;
    uint64_t created_ms, updated_ms;
};

static void log_free(struct acl_log_entry *e)
{
    free(e->object);
    free(e->username);
    free(e->cinfo);
    free(e);
}

static void log_clear(struct acl *acl)
{
    while (acl->log != NULL) {
        struct acl_log_entry *e = acl->log;
        acl->log = e->next;
        log_free(e);
    }
    acl->nlog = 0;
}

void acl_destroy(struct acl *acl)
{
    if (acl == NULL)
        return;
    for (uint32_t i = 0; i < acl->nusers; i++) {
        acl->users[i]->dead = true;
        acl_user_unref(acl->users[i]);
    }
    free(acl->users);
    log_clear(acl);
    free(acl);
}

/* Whether u may run everything on everything: the check is then moot. */
static bool all_rights(const struct acl_user *u)
{
    for (unsigned i = 0; i < ACL_BITS; i++)
        if (!bit_get(u->cmds, i))
            return false;
    return u->nsubs == 0 && u->allkeys && u->allchannels;
}

/* srv's flags after any change of the users. */
static void refresh(struct server *srv)
{
    struct acl *acl = srv->acl;

    srv->acl_check = acl->nusers > 1 || !all_rights(acl->dflt);
    srv->acl_locked = !(acl->dflt->on && acl->dflt->nopass);
}

/* ---- sessions --------------------------------------------------------- */

static struct acl_user *session_user(const struct server *srv,
                                     const struct session *sess)
{
    return sess->acl_user != NULL ? sess->acl_user : srv->acl->dflt;
}

const char *acl_session_user(const struct session *sess)
{
    return sess->acl_user != NULL ? sess->acl_user->name : "default";
}

void acl_session_end(struct session *sess)
{
    struct acl_user *u = sess->acl_user;

    sess->acl_user = NULL;
    acl_user_unref(u);
}

void acl_session_copy(struct session *to, const struct session *from)
{
    acl_session_end(to);
    to->acl_user = from->acl_user;
    if (to->acl_user != NULL)
        to->acl_user->refs++;
}

/* Closes every connection logged in as u: at once, or after its reply
 * for the one whose command runs (self, replying into r). */
static void kill_sessions(struct server *srv, const struct acl_user *u,
                          const struct session *self, struct reply *r)
{
    struct client *cl, *next;

    for (cl = srv->clist.head; cl != NULL; cl = next) {
        next = cl->next;
        if (cl->sess->acl_user != u)
            continue;
        if (cl->sess == self && r != NULL)
            r->close_after = true;
        else
            cl->io->kill(cl);
    }
}

static void kill_user(struct server *srv, struct acl_user *u,
                      const struct session *self, struct reply *r)
{
    u->dead = true;
    fast_update(u);
    kill_sessions(srv, u, self, r);
}

/* ---- ACL LOG ---------------------------------------------------------- */

/* Entries within this many ms of an equal one are folded into it. */
#define LOG_FOLD_MS 60000

void acl_log_add(struct server *srv, const struct session *sess,
                 const char *reason, const char *object, size_t olen,
                 const char *username)
{
    struct acl *acl = srv->acl;
    const char *context = sess->multi != NULL ? "multi" : "toplevel";
    uint64_t now = server_now_ms();
    struct ur_buf info = {0};
    struct acl_log_entry *e;

    /* INFO's counts, kept whatever the log's length, as Redis */
    switch (reason[0]) {
    case 'a':
        srv->stats.acl_denied_auth++;
        break;
    case 'k':
        srv->stats.acl_denied_key++;
        break;
    case 'c':
        if (reason[1] == 'h')
            srv->stats.acl_denied_channel++;
        else
            srv->stats.acl_denied_cmd++;
        break;
    default:
        break;
    }
    if (srv->cfg.acllog_max_len == 0)
        return;
    if (sess->client != NULL)
        (void)clients_describe(srv, sess->client, server_mono_ms(), &info);
    for (e = acl->log; e != NULL; e = e->next) {
        if (e->reason == reason && e->context == context &&
            strlen(e->object) == olen && memcmp(e->object, object, olen) == 0 &&
            strcmp(e->username, username) == 0 &&
            now - e->updated_ms < LOG_FOLD_MS) {
            char *ci = strndup(info.data ? info.data : "", info.len);
            if (ci != NULL) {
                free(e->cinfo);
                e->cinfo = ci;
            }
            e->count++;
            e->updated_ms = now;
            ur_buf_deinit(&info);
            return;
        }
    }
    e = calloc(1, sizeof(*e));
    if (e == NULL) {
        ur_buf_deinit(&info);
        return;
    }
    e->object = strndup(object, olen);
    e->username = strdup(username);
    e->cinfo = strndup(info.data ? info.data : "", info.len);
    ur_buf_deinit(&info);
    if (e->object == NULL || e->username == NULL || e->cinfo == NULL) {
        log_free(e);
        return;
    }
    e->count = 1;
    e->id = acl->log_next_id++;
    e->reason = reason;
    e->context = context;
    e->created_ms = e->updated_ms = now;
    e->next = acl->log;
    acl->log = e;
    acl->nlog++;
    acl_log_trim(acl, srv->cfg.acllog_max_len);
}

void acl_log_trim(struct acl *acl, uint32_t max)
{
    struct acl_log_entry **pp = &acl->log;

    for (uint32_t i = 0; *pp != NULL && i < max; i++)
        pp = &(*pp)->next;
    while (*pp != NULL) {
        struct acl_log_entry *e = *pp;
        *pp = e->next;
        log_free(e);
        acl->nlog--;
    }
}

void acl_log_reset(struct acl *acl)
{
    log_clear(acl);
}

void acl_log_reply(const struct server *srv, struct reply *r, uint64_t count)
{
    const struct acl *acl = srv->acl;
    uint64_t now = server_now_ms();
    uint32_t n = 0;

    for (const struct acl_log_entry *e = acl->log; e != NULL && n < count;
         e = e->next)
        n++;
    reply_arr(r, n);
    n = 0;
    for (const struct acl_log_entry *e = acl->log; e != NULL && n < count;
         e = e->next, n++) {
        reply_map(r, 10);
        reply_cstr(r, "count");
        reply_int(r, e->count);
        reply_cstr(r, "reason");
        reply_cstr(r, e->reason);
        reply_cstr(r, "context");
        reply_cstr(r, e->context);
        reply_cstr(r, "object");
        reply_cstr(r, e->object);
        reply_cstr(r, "username");
        reply_cstr(r, e->username);
        reply_cstr(r, "age-seconds");
        reply_double(r, (double)(now - e->updated_ms) / 1000.0);
        reply_cstr(r, "client-info");
        reply_cstr(r, e->cinfo);
        reply_cstr(r, "entry-id");
        reply_int(r, e->id);
        reply_cstr(r, "timestamp-created");
        reply_int(r, e->created_ms);
        reply_cstr(r, "timestamp-last-updated");
        reply_int(r, e->updated_ms);
    }
}

/* ---- the check -------------------------------------------------------- */

static const char *arg_str(const struct ur_arg *a, char num[24], size_t *n)
{
    if (a->kind == UR_ARG_INT) {
        *n = ur_fmt_u64(num, a->num);
        return num;
    }
    *n = a->len;
    return a->str;
}

static bool key_ok(const struct acl_user *u, const char *k, size_t n,
                   uint8_t need)
{
    uint8_t have = 0;

    for (uint32_t i = 0; i < u->nkeys; i++) {
        if ((u->keys[i].perm & need & ~have) == 0)
            continue;
        if (pubsub_glob(u->keys[i].s, u->keys[i].len, k, n))
            have |= u->keys[i].perm;
        if ((have & need) == need)
            return true;
    }
    return false;
}

/* A channel (or, pattern true, a PSUBSCRIBE pattern, which must be one
 * of the user's patterns literally, as Redis). */
static bool chan_ok(const struct acl_user *u, const char *c, size_t n,
                    bool pattern)
{
    if (u->allchannels)
        return true;
    for (uint32_t i = 0; i < u->nchans; i++) {
        const struct acl_pattern *p = &u->chans[i];
        if (pattern ? (p->len == n && memcmp(p->s, c, n) == 0)
                    : pubsub_glob(p->s, p->len, c, n))
            return true;
    }
    return false;
}

/* Whether every channel and pattern cl is subscribed to is still one of
 * u's: a channel matched by a pattern of u, a pattern literally u's, as
 * SUBSCRIBE and PSUBSCRIBE check them. */
static bool subs_allowed(const struct acl_user *u, const struct client *cl)
{
    for (int k = 0; k < 2; k++) {
        uint32_t n = pubsub_client_count(cl, k == 1);

        for (uint32_t i = 0; i < n; i++) {
            size_t len;
            const char *c = pubsub_client_name(cl, k == 1, i, &len);
            if (!chan_ok(u, c, len, k == 1))
                return false;
        }
    }
    return true;
}

/*
 * u's channels changed (ACL SETUSER, ACL LOAD): its connections
 * subscribed to a channel or pattern it no longer has are closed, the
 * others stay, as Redis 7's ACLKillPubsubClientsIfNeeded. self (running
 * the command, replying into r) is closed after its reply.
 */
static void kill_pubsub_sessions(struct server *srv, const struct acl_user *u,
                                 const struct session *self, struct reply *r)
{
    struct client *cl, *next;

    if (u->allchannels || u->dead)
        return;
    for (cl = srv->clist.head; cl != NULL; cl = next) {
        next = cl->next;
        if (session_user(srv, cl->sess) != u || subs_allowed(u, cl))
            continue;
        log_info("ACL: closing client id=%llu of user %s: its channels "
                 "changed",
                 (unsigned long long)cl->sess->id, u->name);
        if (cl->sess == self && r != NULL)
            r->close_after = true;
        else
            cl->io->kill(cl);
    }
}

/* The ops whose first argument is a subcommand, named cmd|sub in
 * messages and ACL LOG as Redis names them. */
static bool has_subcommands(const struct ur_op *op)
{
    switch (op->code) {
    case UR_OP_CONFIG:
    case UR_OP_CLIENT:
    case UR_OP_ACL:
    case UR_OP_SLOWLOG:
    case UR_OP_LATENCY:
    case UR_OP_CLUSTER:
    case UR_OP_COMMAND:
    case UR_OP_PUBSUB:
    case UR_OP_DEBUG:
        return true;
    default:
        return false;
    }
}

static bool sub_listed(const struct acl_user *u, const struct ur_op *op,
                       uint32_t argc, const struct ur_arg *argv)
{
    if (argc == 0 || argv[0].kind != UR_ARG_STR)
        return false;
    for (uint32_t i = 0; i < u->nsubs; i++)
        if (u->subs[i].op == op->index &&
            strlen(u->subs[i].name) == argv[0].len &&
            strncasecmp(u->subs[i].name, argv[0].str, argv[0].len) == 0)
            return true;
    return false;
}

/* Redis's name of a command in messages and ACL LOG: lower case, with
 * the subcommand after '|' when it has one. */
static void cmd_name(char *out, size_t cap, const struct ur_op *op,
                     uint32_t argc, const struct ur_arg *argv, bool sub)
{
    size_t k = 0;

    for (const char *p = op->name; *p != '\0' && k + 1 < cap; p++)
        out[k++] = (char)tolower((unsigned char)*p);
    if (sub && argc > 0 && argv[0].kind == UR_ARG_STR && k + 2 < cap) {
        out[k++] = '|';
        for (size_t i = 0; i < argv[0].len && k + 1 < cap && i < 32; i++) {
            unsigned char c = (unsigned char)argv[0].str[i];
            out[k++] = c > 0x20 && c < 0x7f ? (char)tolower(c) : '?';
        }
    }
    out[k] = '\0';
}

int acl_user_may(const struct acl_user *u, const struct ur_op *op,
                 uint32_t argc, const struct ur_arg *argv, const char **what,
                 size_t *wlen)
{
    static char num[24];
    bool bit = bit_get(u->cmds, op->index);
    unsigned first;

    if (op->code == UR_OP_ACL && argc > 0 && argv[0].kind == UR_ARG_STR)
        bit = bit_get(u->cmds, op_bit(op, argv[0].str, argv[0].len));

    /* The commands that run before AUTH (AUTH, HELLO, PING, QUIT,
     * RESET) run for every user, as Redis exempts its no-auth ones: a
     * client logs in (again) and says hello whatever its rights. */
    if (op->flags & OPF_NOAUTH)
        return ACL_ALLOW;
    if (u->dead)
        return ACL_DENY_CMD;
    if (u->nsubs != 0 && sub_listed(u, op, argc, argv))
        bit = !bit;
    if (!bit)
        return ACL_DENY_CMD;
    first = ur_op_key_first(op);
    if (!u->allkeys && first != 0 && first <= argc) {
        uint8_t need = (op->flags & OPF_WRITE ? ACL_KEY_W : 0) |
                       (op->flags & OPF_READ ? ACL_KEY_R : 0);
        uint32_t last = ur_op_key_last(op) < 0 ? argc : 1;

        if (need == 0)
            need = ACL_KEY_RW;
        for (uint32_t i = first - 1; i < last && i < argc; i++) {
            const char *k = arg_str(&argv[i], num, wlen);
            if (!key_ok(u, k, *wlen, need)) {
                *what = k;
                return ACL_DENY_KEY;
            }
        }
    }
    if (!u->allchannels && is_pubsub_op(op)) {
        uint32_t from = 0, to = 0;
        bool pattern = op->code == UR_OP_PSUBSCRIBE;

        if (op->code == UR_OP_SUBSCRIBE || op->code == UR_OP_PSUBSCRIBE)
            to = argc;
        else if (op->code == UR_OP_PUBLISH)
            to = argc > 0 ? 1 : 0;
        for (uint32_t i = from; i < to; i++) {
            const char *c = arg_str(&argv[i], num, wlen);
            if (!chan_ok(u, c, *wlen, pattern)) {
                *what = c;
                return ACL_DENY_CHANNEL;
            }
        }
    }
    return ACL_ALLOW;
}

bool acl_check_op(struct server *srv, struct session *sess,
                  const struct ur_op *op, uint32_t argc,
                  const struct ur_arg *argv, struct reply *r)
{
    const struct acl_user *u;
    const char *what = NULL;
    size_t wlen = 0;
    char name[64];
    int verdict;

    if (srv->loading || sess->client == NULL || srv->acl == NULL)
        return false; /* replay, expiry, the primary's stream: the server's */
    u = session_user(srv, sess);
    verdict = acl_user_may(u, op, argc, argv, &what, &wlen);
    if (verdict == ACL_ALLOW)
        return false;
    switch (verdict) {
    case ACL_DENY_CMD:
        cmd_name(name, sizeof(name), op, argc, argv, has_subcommands(op));
        acl_log_add(srv, sess, "command", name, strlen(name), u->name);
        reply_err(r, UR_E_NOPERM,
                  "this user has no permissions to run the '%s' command", name);
        break;
    case ACL_DENY_KEY:
        acl_log_add(srv, sess, "key", what, wlen, u->name);
        reply_err(r, UR_E_NOPERM,
                  "this user has no permissions to access one of the keys "
                  "used as arguments");
        break;
    default:
        acl_log_add(srv, sess, "channel", what, wlen, u->name);
        reply_err(r, UR_E_NOPERM,
                  "this user has no permissions to access one of the "
                  "channels used as arguments");
        break;
    }
    return true;
}

/* ---- login ------------------------------------------------------------ */

static bool pass_matches(const struct acl_user *u, const char *pass,
                         size_t plen)
{
    uint8_t h[32];
    bool ok = false;

    if (u->nopass)
        return true;
    sha256(pass, plen, h);
    /* every stored hash compared in full: the time tells nothing of
     * which one matched */
    for (uint32_t i = 0; i < u->npass; i++)
        ok |= CRYPTO_memcmp(u->pass[i], h, 32) == 0;
    return ok;
}

bool acl_login(struct server *srv, struct session *sess, const char *name,
               size_t nlen, const char *pass, size_t plen, struct reply *r)
{
    struct acl *acl = srv->acl;
    struct acl_user *u;

    if (name == NULL) {
        name = "default";
        nlen = 7;
        if (acl->dflt->nopass) {
            reply_err(r, UR_E_ERR,
                      "AUTH <password> called without any password "
                      "configured for the default user. Are you sure your "
                      "configuration is correct?");
            return false;
        }
    }
    u = acl_user_find(acl, name, nlen);
    if (u == NULL || !u->on || !pass_matches(u, pass, plen)) {
        char uname[ACL_NAME_MAX + 1];
        size_t k = 0;

        for (; k < nlen && k < ACL_NAME_MAX; k++)
            uname[k] = name[k] >= 0x20 && name[k] < 0x7f ? name[k] : '?';
        uname[k] = '\0';
        srv->stats.auth_failures++;
        sess->auth_failures++;
        acl_log_add(srv, sess, "auth", "AUTH", 4, uname);
        reply_err(r, UR_E_WRONGPASS,
                  "invalid username-password pair or user is disabled.");
        return false;
    }
    acl_session_end(sess);
    if (u != acl->dflt) {
        u->refs++;
        sess->acl_user = u;
    }
    sess->authed = true;
    return true;
}

/* ---- files and the configuration -------------------------------------- */

#define LINE_WORDS 4096

/* Applies the words of one definition (name first) to the table: a
 * duplicate name is an error when dup_err. 0 or -1 with err. */
static int define(struct acl *acl, char **w, size_t *lens, int n, bool dup_err,
                  char *err, size_t errlen)
{
    struct acl_user *u, *old;
    char why[256];

    if (n < 1)
        return fail(err, errlen, "a user line needs a user name");
    if (lens[0] == 0 || lens[0] > ACL_NAME_MAX || has_space(w[0], lens[0])) {
        snprintf(err, errlen,
                 "bad user name (1 to %d bytes, no spaces or control "
                 "characters)",
                 ACL_NAME_MAX);
        return -1;
    }
    old = acl_user_find(acl, w[0], lens[0]);
    if (old != NULL && dup_err && strcmp(old->name, "default") != 0) {
        snprintf(err, errlen, "Duplicate user '%s' found", old->name);
        return -1;
    }
    /* a `user default ...` line starts from a blank user, as any other */
    u = acl_user_new(w[0], lens[0]);
    if (u == NULL)
        return fail(err, errlen, "out of memory");
    for (int i = 1; i < n; i++) {
        if (acl_user_rule(u, w[i], lens[i], why, sizeof(why)) != 0) {
            snprintf(err, errlen, "Error in applying operation '%.*s': %s",
                     (int)(lens[i] > 64 ? 64 : lens[i]), w[i], why);
            acl_user_unref(u);
            return -1;
        }
    }
    if (old != NULL) {
        user_move(old, u);
        return 0;
    }
    if (table_add(acl, u) != 0) {
        acl_user_unref(u);
        return fail(err, errlen, "out of memory");
    }
    return 0;
}

int acl_config_user(void *ctx, const char *where, const char *line, char *err,
                    size_t errlen)
{
    struct acl *acl = ctx;
    size_t len = strlen(line);
    char *copy = malloc(len + 1);
    char **w = malloc(LINE_WORDS * sizeof(*w));
    size_t *lens = malloc(LINE_WORDS * sizeof(*lens));
    char why[512];
    int n, rc = -1;

    if (copy == NULL || w == NULL || lens == NULL) {
        snprintf(err, errlen, "%s: out of memory", where);
        goto out;
    }
    memcpy(copy, line, len + 1);
    n = config_split(copy, len, w, lens, LINE_WORDS);
    if (n < 0) {
        snprintf(err, errlen, "%s: %s", where,
                 n == -1 ? "unbalanced quotes" : "too many rules");
        goto out;
    }
    if (define(acl, w, lens, n, true, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "%s: Error in user declaration '%.*s': %s", where,
                 n > 0 ? (int)(lens[0] > 64 ? 64 : lens[0]) : 0,
                 n > 0 ? w[0] : "", why);
        goto out;
    }
    acl->config_users++;
    rc = 0;
out:
    free(copy);
    free(w);
    free(lens);
    return rc;
}

int acl_parse_file(const char *text, size_t len, const char *file,
                   struct acl **out, char *err, size_t errlen)
{
    struct acl *acl = acl_create();
    char **w = malloc(LINE_WORDS * sizeof(*w));
    size_t *lens = malloc(LINE_WORDS * sizeof(*lens));
    char *buf = malloc(len + 1);
    bool seen_default = false;
    size_t at = 0;
    unsigned lineno = 0;
    char why[512];

    *out = NULL;
    if (acl == NULL || w == NULL || lens == NULL || buf == NULL) {
        snprintf(err, errlen, "%s: out of memory", file);
        goto error;
    }
    memcpy(buf, text, len);
    buf[len] = '\0';
    while (at < len) {
        char *line = buf + at;
        char *nl = memchr(line, '\n', len - at);
        size_t n = nl != NULL ? (size_t)(nl - line) : len - at;
        int nw;

        at += n + 1;
        lineno++;
        if (n > 0 && line[n - 1] == '\r')
            n--;
        line[n] = '\0';
        while (*line == ' ' || *line == '\t') {
            line++;
            n--;
        }
        if (n == 0 || line[0] == '#')
            continue;
        if (memchr(line, '\0', n) != NULL) {
            snprintf(err, errlen, "%s:%u: a NUL byte in the line", file,
                     lineno);
            goto error;
        }
        nw = config_split(line, n, w, lens, LINE_WORDS);
        if (nw < 0) {
            snprintf(err, errlen, "%s:%u: %s", file, lineno,
                     nw == -1 ? "unbalanced quotes" : "too many rules");
            goto error;
        }
        if (nw == 0)
            continue;
        if (!(lens[0] == 4 && memcmp(w[0], "user", 4) == 0)) {
            snprintf(err, errlen, "%s:%u: line should start with user keyword",
                     file, lineno);
            goto error;
        }
        if (nw >= 2 && lens[1] == 7 && memcmp(w[1], "default", 7) == 0) {
            if (seen_default) {
                snprintf(err, errlen, "%s:%u: Duplicate user 'default' found",
                         file, lineno);
                goto error;
            }
            seen_default = true;
        }
        if (define(acl, w + 1, lens + 1, nw - 1, true, why, sizeof(why)) != 0) {
            snprintf(err, errlen, "%s:%u: %s", file, lineno, why);
            goto error;
        }
    }
    free(w);
    free(lens);
    free(buf);
    *out = acl;
    return seen_default ? 1 : 0;
error:
    acl_destroy(acl);
    free(w);
    free(lens);
    free(buf);
    return -1;
}

/*
 * The aclfile's path: as configured when absolute, else under dir. Redis
 * chdir()s to dir while it reads its configuration, so its relative
 * aclfile is dir's; unreadd never changes its working directory and
 * resolves it here instead, for the start, ACL LOAD and ACL SAVE alike.
 * 0, or -1 with a message when it does not fit.
 */
static int aclfile_path(const struct server *srv, char *out, size_t cap,
                        char *err, size_t errlen)
{
    const char *f = srv->cfg.aclfile;
    int rc;

    if (f[0] == '/') {
        rc = snprintf(out, cap, "%s", f) < (int)cap ? 0 : -1;
    } else {
        rc = fs_path(out, cap, srv->cfg.dir, f);
    }
    if (rc != 0)
        snprintf(err, errlen, "aclfile %s: the path is too long", f);
    return rc;
}

static char *read_all(const char *path, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, n = 0;

    if (f == NULL) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    for (;;) {
        if (n + 4096 > cap) {
            char *p = realloc(buf, cap = cap * 2 + 8192);
            if (p == NULL || cap > (64u << 20)) {
                free(p != NULL ? p : buf);
                fclose(f);
                snprintf(err, errlen, "%s: too large or out of memory", path);
                return NULL;
            }
            buf = p;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        fclose(f);
        free(buf);
        return NULL;
    }
    fclose(f);
    *len = n;
    return buf;
}

/* The default user as requirepass makes it. */
static void apply_requirepass(struct acl_user *d, const char *pass)
{
    char err[128];

    (void)acl_user_rule(d, "resetpass", 9, err, sizeof(err));
    if (pass[0] != '\0') {
        uint8_t h[32];
        sha256(pass, strlen(pass), h);
        (void)pass_add(d, h, err, sizeof(err));
    } else {
        d->nopass = true;
    }
}

/*
 * Replaces srv's users with fresh's: a user of both keeps its object
 * (and its sessions) with the new rights; one that is gone is closed
 * out. fresh is consumed.
 */
static void replace_users(struct server *srv, struct acl *fresh,
                          const struct session *self, struct reply *r)
{
    struct acl *acl = srv->acl;

    for (uint32_t i = 0; i < acl->nusers; i++) {
        struct acl_user *u = acl->users[i];
        bool found;
        uint32_t j = table_pos(fresh, u->name, strlen(u->name), &found);

        if (found) {
            user_move(u, fresh->users[j]);
            fresh->users[j] = u;
        } else {
            kill_user(srv, u, self, r);
            acl_user_unref(u);
        }
    }
    free(acl->users);
    acl->users = fresh->users;
    acl->nusers = fresh->nusers;
    acl->cap = fresh->cap;
    for (uint32_t i = 0; i < acl->nusers; i++)
        if (strcmp(acl->users[i]->name, "default") == 0)
            acl->dflt = acl->users[i];
    fresh->users = NULL;
    fresh->nusers = 0;
    acl_destroy(fresh);
    for (uint32_t i = 0; i < acl->nusers; i++)
        kill_pubsub_sessions(srv, acl->users[i], self, r);
}

int acl_load(struct server *srv, const struct session *self, struct reply *r,
             char *err, size_t errlen)
{
    struct acl *fresh;
    size_t len = 0;
    char path[CONFIG_STR_MAX * 2], *text;
    int rc;

    if (aclfile_path(srv, path, sizeof(path), err, errlen) != 0 ||
        (text = read_all(path, &len, err, errlen)) == NULL)
        return -1;
    rc = acl_parse_file(text, len, path, &fresh, err, errlen);
    free(text);
    if (rc < 0)
        return -1;
    if (rc == 0) /* no default user in the file: requirepass decides */
        apply_requirepass(fresh->dflt, srv->cfg.requirepass);
    replace_users(srv, fresh, self, r);
    refresh(srv);
    return 0;
}

int acl_save(const struct server *srv, char *err, size_t errlen)
{
    const struct acl *acl = srv->acl;
    char path[CONFIG_STR_MAX * 2], tmp[CONFIG_STR_MAX * 2 + 32];
    FILE *f;
    int fd;

    if (aclfile_path(srv, path, sizeof(path), err, errlen) != 0)
        return -1;
    snprintf(tmp, sizeof(tmp), "%s.tmp-%d", path, (int)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || (f = fdopen(fd, "w")) == NULL) {
        snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    for (uint32_t i = 0; i < acl->nusers; i++) {
        char *line = acl_user_describe(acl->users[i]);
        if (line == NULL || fprintf(f, "%s\n", line) < 0) {
            free(line);
            snprintf(err, errlen, "cannot write %s", tmp);
            fclose(f);
            unlink(tmp);
            return -1;
        }
        free(line);
    }
    return fs_commit_tmp(f, tmp, path, err, errlen);
}

int acl_setup(struct server *srv, char *err, size_t errlen)
{
    struct acl *acl = srv->acl;

    chan_default_all = srv->cfg.acl_pubsub_default;
    if (srv->cfg.aclfile[0] != '\0' && acl->config_users > 0) {
        snprintf(err, errlen,
                 "Configuring unreadd with users defined in the config file "
                 "(user lines, --user) and at the same time an aclfile is "
                 "invalid: use one or the other");
        return -1;
    }
    if (srv->cfg.requirepass[0] != '\0')
        apply_requirepass(acl->dflt, srv->cfg.requirepass);
    if (srv->cfg.aclfile[0] != '\0' && acl_load(srv, NULL, NULL, err, errlen))
        return -1;
    refresh(srv);
    return 0;
}

void acl_config_changed(struct server *srv, const char *key)
{
    if (srv->acl == NULL)
        return;
    if (strcmp(key, "requirepass") == 0) {
        apply_requirepass(srv->acl->dflt, srv->cfg.requirepass);
        refresh(srv);
    } else if (strcmp(key, "acl-pubsub-default") == 0) {
        chan_default_all = srv->cfg.acl_pubsub_default;
    } else if (strcmp(key, "acllog-max-len") == 0) {
        acl_log_trim(srv->acl, srv->cfg.acllog_max_len);
    }
}

int acl_setuser(struct server *srv, const char *name, size_t nlen,
                const struct ur_arg *rules, uint32_t n,
                const struct session *self, struct reply *r, char *err,
                size_t errlen)
{
    struct acl *acl = srv->acl;
    struct acl_user *old = acl_user_find(acl, name, nlen), *u;
    char why[256], num[24];

    if (nlen == 0 || nlen > ACL_NAME_MAX || has_space(name, nlen))
        return fail(err, errlen,
                    "Usernames can't contain spaces or null "
                    "characters (and are 1 to 128 bytes)");
    u = old != NULL ? user_clone(old) : acl_user_new(name, nlen);
    if (u == NULL)
        return fail(err, errlen, "out of memory");
    for (uint32_t i = 0; i < n; i++) {
        size_t len;
        const char *s = arg_str(&rules[i], num, &len);

        if (acl_user_rule(u, s, len, why, sizeof(why)) != 0) {
            char shown[160];
            size_t k = 0;

            /* a password is never echoed */
            if (s[0] == '>' || s[0] == '<')
                len = 1;
            for (; k < len && k + 1 < sizeof(shown); k++)
                shown[k] = s[k] >= 0x20 && s[k] < 0x7f ? s[k] : '?';
            shown[k] = '\0';
            snprintf(err, errlen, "Error in ACL SETUSER modifier '%s': %s",
                     shown, why);
            acl_user_unref(u);
            return -1;
        }
    }
    if (old != NULL) {
        user_move(old, u);
        kill_pubsub_sessions(srv, old, self, r);
    } else if (table_add(acl, u) != 0) {
        acl_user_unref(u);
        return fail(err, errlen, "out of memory");
    }
    refresh(srv);
    return 0;
}

int acl_deluser(struct server *srv, const char *name, size_t nlen,
                const struct session *self, struct reply *r)
{
    struct acl *acl = srv->acl;
    bool found;
    uint32_t i = table_pos(acl, name, nlen, &found);
    struct acl_user *u;

    if (!found)
        return 0;
    u = acl->users[i];
    table_del(acl, i);
    kill_user(srv, u, self, r);
    acl_user_unref(u);
    refresh(srv);
    return 1;
}

static bool default_is_requirepass(const struct acl_user *u, const char *pass)
{
    uint8_t h[32];

    if (!all_rights(u) || !u->on)
        return false;
    if (pass[0] == '\0')
        return u->nopass && u->npass == 0;
    sha256(pass, strlen(pass), h);
    return !u->nopass && u->npass == 1 && memcmp(u->pass[0], h, 32) == 0;
}

char *acl_config_lines(const struct server *srv)
{
    const struct acl *acl = srv->acl;
    struct sb b = {0};

    if (acl == NULL || srv->cfg.aclfile[0] != '\0')
        return NULL;
    sb_str(&b, "");
    for (uint32_t i = 0; i < acl->nusers; i++) {
        const struct acl_user *u = acl->users[i];
        char *line;

        /* the default user as requirepass makes it stays requirepass's */
        if (u == acl->dflt && default_is_requirepass(u, srv->cfg.requirepass))
            continue;
        line = acl_user_describe(u);
        if (line == NULL) {
            free(b.s);
            return NULL;
        }
        sb_str(&b, line);
        sb_str(&b, "\n");
        free(line);
    }
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

bool acl_arg_secret(uint32_t argc, const struct ur_arg *argv, uint32_t i)
{
    const struct ur_arg *a = &argv[i];

    if (argc < 2 || i < 2 || argv[0].kind != UR_ARG_STR || argv[0].len != 7 ||
        strncasecmp(argv[0].str, "SETUSER", 7) != 0 || a->kind != UR_ARG_STR ||
        a->len == 0)
        return false;
    return a->str[0] == '>' || a->str[0] == '<' || a->str[0] == '#' ||
           a->str[0] == '!';
}
