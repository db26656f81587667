/*
 * acl.h - ACL users, as Redis 6+ has them (docs/OPERATIONS.md "Security",
 * docs/COMMANDS.md ACL): named users with passwords (SHA-256), a command
 * bitmap indexed by the op's position in the table, key patterns over the
 * command's keys as COMMAND reports them (ops.h ur_op_key_first: the uid,
 * gid, channel, ... as decimal text) and channel patterns for pub/sub; the
 * categories (@read, @write, @admin, ..., one per family) derive from the
 * op table; ACL LOG keeps the refusals and failed logins.
 *
 * The executor asks one question before it runs a command, acl_refuses,
 * after the AUTH gate and the arity check. It is a flag test while the
 * only user is a default user allowed everything (srv->acl_check false:
 * the server runs as before ACL existed), a bit test of the session's
 * user's bitmap otherwise, plus a pattern walk for keyed commands of a
 * user without allkeys.
 *
 * The default user keeps requirepass working: requirepass set is the
 * default user's only password, requirepass "" is nopass. A session
 * points to its user (NULL: default); users are refcounted, and a user
 * deleted (ACL DELUSER, ACL LOAD without it) has its connections closed,
 * as Redis does.
 */
#ifndef UR_ACL_H
#define UR_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exec.h"

/* A bit per op of the table, and one more: ACL's subcommands that Redis
 * puts in @slow alone (WHOAMI, CAT, GENPASS, HELP), so that a user
 * without @admin still asks who it is. */
#define ACL_BIT_ACL_SAFE UR_OP_COUNT
#define ACL_BITS (UR_OP_COUNT + 1)
#define ACL_WORDS ((ACL_BITS + 63) / 64)
#define ACL_NAME_MAX 128      /* bytes of a user name */
#define ACL_PASS_MAX 64       /* passwords per user */
#define ACL_PATTERNS_MAX 1024 /* key or channel patterns per user */

/* Key pattern permissions: ~pat is both, %R~pat reads, %W~pat writes. */
enum acl_key_perm { ACL_KEY_R = 1, ACL_KEY_W = 2, ACL_KEY_RW = 3 };

struct acl_pattern {
    char *s;
    uint32_t len;
    uint8_t perm; /* enum acl_key_perm (keys); 0 for channels */
};

/* A subcommand that is an exception to its command's bit: allowed while
 * the command is denied (+config|get), or denied while it is allowed. */
struct acl_sub {
    uint16_t op; /* the op's index */
    char *name;  /* lower case */
};

struct acl_user {
    char *name;
    uint32_t refs; /* the table's (while listed) + one per session */
    bool on;
    bool nopass;
    bool allkeys;     /* ~* or allkeys */
    bool allchannels; /* &* or allchannels */
    bool dead;        /* deleted: refuses everything, freed at refs 0 */
    uint32_t npass;
    uint8_t (*pass)[32]; /* SHA-256 of each password */
    uint64_t cmds[ACL_WORDS];
    /* the ops this user runs with no further look (their bit set, no
     * key pattern or channel pattern to match, no subcommand rule, not
     * ACL itself): acl_refuses' one bit test. Kept by every rule. */
    uint64_t fast[ACL_WORDS];
    struct acl_pattern *keys;
    uint32_t nkeys;
    struct acl_pattern *chans;
    uint32_t nchans;
    struct acl_sub *subs;
    uint32_t nsubs;
    char *rules; /* the command rules in order, as ACL LIST shows them */
};

/* acl_user_may's verdicts. */
enum acl_verdict {
    ACL_ALLOW = 0,
    ACL_DENY_CMD,
    ACL_DENY_KEY,
    ACL_DENY_CHANNEL
};

struct acl_log_entry;

struct acl {
    struct acl_user **users; /* sorted by name; "default" always there */
    uint32_t nusers, cap;
    struct acl_user *dflt;
    struct acl_log_entry *log; /* newest first */
    uint32_t nlog;
    uint64_t log_next_id;
    uint32_t config_users; /* users defined by `user` lines / --user */
};

/* The server's ACL, with the default user alone (on, nopass, everything).
 * NULL when out of memory. */
struct acl *acl_create(void);
void acl_destroy(struct acl *acl);

/*
 * config.h's on_user hook: a `user NAME RULES...` line of the config file
 * (ctx: the struct acl). 0, or -1 with a message in err naming where.
 */
int acl_config_user(void *ctx, const char *where, const char *line, char *err,
                    size_t errlen);

/*
 * At start, after the configuration is read: requirepass becomes the
 * default user's password, the aclfile is loaded (refused with the user
 * lines of the config file, as Redis), srv's flags are set. 0, or -1
 * with a message naming the file and line.
 */
int acl_setup(struct server *srv, char *err, size_t errlen);

/* CONFIG SET requirepass (or any key acl_config_key says is the ACL's)
 * changed the configuration: the default user follows. */
void acl_config_changed(struct server *srv, const char *key);

/* The slow part of acl_refuses. */
bool acl_check_op(struct server *srv, struct session *sess,
                  const struct ur_op *op, uint32_t argc,
                  const struct ur_arg *argv, struct reply *r);

/*
 * Whether the session's user may not run op with these arguments: true
 * after replying -NOPERM (and logging it in ACL LOG). Costs a flag test
 * when ACL is not in use.
 */
static inline bool acl_refuses(struct server *srv, struct session *sess,
                               const struct ur_op *op, uint32_t argc,
                               const struct ur_arg *argv, struct reply *r)
{
    const struct acl_user *u;

    if (!srv->acl_check)
        return false;
    u = sess->acl_user != NULL ? sess->acl_user : srv->acl->dflt;
    if ((u->fast[op->index >> 6] >> (op->index & 63)) & 1)
        return false;
    return acl_check_op(srv, sess, op, argc, argv, r);
}

/*
 * AUTH / HELLO AUTH: logs sess in as user name[0..nlen) (NULL: default)
 * with password pass[0..plen). true with the session authenticated as
 * that user; false after replying WRONGPASS (logged in ACL LOG, counted
 * in INFO).
 */
bool acl_login(struct server *srv, struct session *sess, const char *name,
               size_t nlen, const char *pass, size_t plen, struct reply *r);

/* The connection of sess is gone: its user reference is dropped. */
void acl_session_end(struct session *sess);

/* to runs as from's user (a reference taken): a connection handed over
 * to another session, the replica's link on the primary (repl.c). */
void acl_session_copy(struct session *to, const struct session *from);

/* sess's user name (CLIENT LIST user=, ACL WHOAMI). */
const char *acl_session_user(const struct session *sess);

/* The user by name, or NULL. */
struct acl_user *acl_user_find(const struct acl *acl, const char *name,
                               size_t len);

/*
 * Applies one rule (on, >pass, +@read, ~pat, ...) to u. 0, or -1 with
 * Redis's message for it in err. Pure: touches u only.
 */
int acl_user_rule(struct acl_user *u, const char *rule, size_t len, char *err,
                  size_t errlen);

/* A new user with no rights (off, no password, no command, no key, no
 * channel): Redis's state of a user ACL SETUSER creates. NULL: no memory. */
struct acl_user *acl_user_new(const char *name, size_t len);
void acl_user_unref(struct acl_user *u);

/* "user NAME flags passwords keys channels commands" as ACL LIST shows
 * it and ACL LOAD reads it back; malloc'd, NULL when out of memory. */
char *acl_user_describe(const struct acl_user *u);

/* ACL GETUSER's parts of u, as Redis 7 shows them: keys ("~*", "~a
 * %R~b", or "" for none), channels ("&*", "&a &b", ""), commands
 * ("-@all +@read ..."). malloc'd; NULL when out of memory. */
enum { ACL_PART_KEYS, ACL_PART_CHANNELS, ACL_PART_COMMANDS };
char *acl_user_part(const struct acl_user *u, int part);
/* Password i of u as 64 hex digits. */
void acl_pass_hex(const struct acl_user *u, uint32_t i, char out[65]);

/*
 * Parses an ACL file's text (lines "user NAME RULES...", '#' comments and
 * blank lines) into a new user table. 0 with *out set, or -1 with
 * "FILE:LINE: what" in err.
 */
int acl_parse_file(const char *text, size_t len, const char *file,
                   struct acl **out, char *err, size_t errlen);

/*
 * Whether u may run op with these arguments: ACL_ALLOW, or what denies
 * it, with the key or channel refused in *what (*wlen bytes; valid until
 * the next call). The check of the executor and of ACL DRYRUN.
 */
int acl_user_may(const struct acl_user *u, const struct ur_op *op,
                 uint32_t argc, const struct ur_arg *argv, const char **what,
                 size_t *wlen);

/* ACL LOG: adds (or folds into an equal entry of the last 60 s) a
 * refusal; reason is "command", "key", "channel" or "auth" (a string
 * constant); object what was refused; username who. */
void acl_log_add(struct server *srv, const struct session *sess,
                 const char *reason, const char *object, size_t olen,
                 const char *username);
/* Keeps the newest max entries. */
void acl_log_trim(struct acl *acl, uint32_t max);
void acl_log_reset(struct acl *acl);
/* ACL LOG [count]: the newest count entries, with Redis's fields. */
void acl_log_reply(const struct server *srv, struct reply *r, uint64_t count);

/*
 * ACL SETUSER name rules...: applies the rules to a copy of the user (a
 * new user: no rights) and keeps it only when every rule applied. 0, or
 * -1 with Redis's message naming the rule. The user's connections
 * subscribed to a channel or pattern it no longer has are closed (self's
 * after its reply r; both may be NULL), as Redis 7.
 */
int acl_setuser(struct server *srv, const char *name, size_t nlen,
                const struct ur_arg *rules, uint32_t n,
                const struct session *self, struct reply *r, char *err,
                size_t errlen);
/* ACL DELUSER of one name: 1 when it existed (its connections are
 * closed; self's after its reply r), else 0. */
int acl_deluser(struct server *srv, const char *name, size_t nlen,
                const struct session *self, struct reply *r);
/* ACL LOAD: the aclfile replaces every user, or nothing changes. 0, or
 * -1 with "FILE:LINE: what". The connections of a user gone are closed,
 * and those subscribed to a channel their user no longer has. */
int acl_load(struct server *srv, const struct session *self, struct reply *r,
             char *err, size_t errlen);
/* ACL SAVE: the users into the aclfile (temp file, fsync, rename, fsync
 * of its directory). The aclfile, here and for ACL LOAD and at start, is
 * dir/aclfile when relative, as Redis (chdir()ed to dir) reads it. */
int acl_save(const struct server *srv, char *err, size_t errlen);

/* The op's categories' names ("@read", ...), at most 16, as COMMAND INFO
 * shows them and +@category grants them. */
unsigned acl_op_categories(const struct ur_op *op, const char **out);

/* The `user` lines CONFIG REWRITE writes into the config file when the
 * users are not in an aclfile ("user NAME RULES\n" each); malloc'd, or
 * NULL to keep the file's (an aclfile is set). */
char *acl_config_lines(const struct server *srv);

/* Whether argument i of ACL is a secret (>pass, <pass, #hash, !hash of
 * SETUSER): MONITOR and SLOWLOG show it as (redacted). */
bool acl_arg_secret(uint32_t argc, const struct ur_arg *argv, uint32_t i);

#endif
