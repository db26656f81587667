/*
 * cmds.h - one handler per op of protocol/ops.def, named cmd_<id>. The
 * declarations and the dispatch table in exec.c derive from the op table;
 * the definitions live in cmd_<family>.c.
 */
#ifndef UR_CMDS_H
#define UR_CMDS_H

#include "exec.h"
#include "wmap.h"

#define OP(id, name, code, min, max, flags, syn, rep, cost, sum)               \
    void cmd_##id(struct exec_ctx *x);
#include "ops.def"
#undef OP

/*
 * USER.INFO (cmd_user.c) asks each family of families.def for its lines
 * with cmd_<f>_user_info, defined beside the family's handlers: one line
 * per entry held (user_line, while user_line_room allows: at most 100 per
 * family), then user_lines_more and the family's summary line.
 */
struct user_lines;
void user_line(struct user_lines *L, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Whether the current family may show one more entry line. */
bool user_line_room(struct user_lines *L);
/* "... N more" after a family whose entry lines were cut; ends the
 * family's entry lines. */
void user_lines_more(struct user_lines *L, const char *fam, size_t total);

/*
 * USER.BADGE and USER.MBADGE (cmd_user.c) ask each family of families.def
 * for its part of a user's badge with cmd_<f>_badge, defined beside the
 * family's handlers: false when the family has no part (RCPT: receipts
 * are about messages a user sent, not its unread), else true with *part
 * the user's unread in the family as its own total read counts it (muted
 * conversations and groups excluded), exact when it is at most limit and
 * any value above limit otherwise (the family may stop counting there).
 * With part NULL it only says whether the family has a part, computing
 * nothing. A read: changes nothing (BC registers no one). A family added
 * to the table without it fails the link.
 *
 * cmd_<f>_badge_hint starts loading into the cache what cmd_<f>_badge
 * will read for uid, in the stages of db_prefetch_user (0 to
 * DB_PREFETCH_STAGES - 1, each a little after the one before), so that
 * USER.MBADGE overlaps the misses of many users. It keeps what each stage
 * found in *bp for the next (a family whose store has a probe: the user's
 * hash, its segment, its slot's value; others leave *bp alone), and
 * cmd_<f>_badge reads the part from *bp: every stage, in order, runs on
 * the same *bp for uid before cmd_<f>_badge reads it, with no change to
 * the store between (bp may be NULL only with part NULL). Changes nothing;
 * a family without a part does nothing.
 */
union badge_probe {
    struct u64map_probe u; /* CNT, GRP, FEED */
    struct wmap_probe w;   /* CONV */
};
/*
 * Badge channels (badges.h) ask each family, with cmd_<f>_badge_key,
 * which one key a write op of the family changes: for a user op
 * (OPF_USER) the key whose figure the badge message lists (CNT: the type,
 * CONV: the cid, GRP: the gid, BC: the channel, DOT: the dot); for a
 * global op (OPF_GLOBAL) the object whose channel "<f>:<id>" it publishes
 * on (BC.PUBLISH: ch, GRP.POST: gid, DOT.PUSH: dot, FEED.POST/UNPOST:
 * author). false when the op has no single key (CNT.CLEAR of several
 * types, GRP.JOIN of several groups, FEED's user ops, RCPT). argv is not
 * validated yet (notify_arg_*): a malformed key is no key.
 * cmd_<f>_badge_value answers the figure of key for uid as the family's
 * own read shows it, registering no one; with head, the head of global
 * object key (uid unused). Reads only; never called for a family whose
 * notify_key never answers true.
 */
#define FAMILY(f, ID, lo, hi, unit, expiry, prefetch, title)                   \
    void cmd_##f##_user_info(struct user_lines *L, const struct server *srv,   \
                             uint64_t uid);                                    \
    bool cmd_##f##_badge(const struct server *srv, uint64_t uid,               \
                         uint64_t limit, uint64_t *part,                       \
                         const union badge_probe *bp);                         \
    void cmd_##f##_badge_hint(const struct server *srv, uint64_t uid,          \
                              int stage, union badge_probe *bp);               \
    bool cmd_##f##_badge_key(const struct server *srv, const struct ur_op *op, \
                             uint32_t argc, const struct ur_arg *argv,         \
                             uint64_t *key);                                   \
    uint64_t cmd_##f##_badge_value(const struct server *srv, bool head,        \
                                   uint64_t uid, uint64_t key);
#include "families.def"
#undef FAMILY

/* cmd_user.c, for badges.c: family fam's part of uid's badge under
 * USER.BADGE's rule (false: the family has no part). */
bool badge_part(const struct server *srv, unsigned fam, uint64_t uid,
                uint64_t *part);
/*
 * The same over several families, in the stages USER.MBADGE pipelines
 * its users with, for a caller that overlaps many users' misses (the
 * badge channels' flush): badge_families lists the families with a part
 * (families.def order) in fams, returns how many; badge_hint_stage runs
 * stage `stage` of every family of fams[0..n) for uid, the probe of
 * fams[i] in bp[i] (stages 0 to DB_PREFETCH_STAGES - 1, in order, on the
 * same bp, the stores unchanged until badge_of); badge_of then answers
 * uid's badge over those families, each one's part in part[i].
 */
unsigned badge_families(const struct server *srv, unsigned *fams);
void badge_hint_stage(const struct server *srv, uint64_t uid, int stage,
                      const unsigned *fams, unsigned n, union badge_probe *bp);
uint64_t badge_of(const struct server *srv, uint64_t uid, const unsigned *fams,
                  unsigned n, const union badge_probe *bp, uint64_t *part);

/*
 * Family reads that take [WITHEXPIRY] (docs/OPERATIONS.md, "Users and
 * expiry"). arg_withexpiry: argument i, when present, must be the keyword
 * (*with = true); false after replying the error. reply_count: v, or with
 * the option the array [v, expired]: when uid expired from family fam
 * (ms) if no write of it has rebuilt the family since, else 0.
 */
bool arg_withexpiry(struct exec_ctx *x, uint32_t i, bool *with);
void reply_count(struct exec_ctx *x, unsigned fam, uint64_t uid, uint64_t v,
                 bool with);

/* cmd_client.c: checks / sets argument i as the session's client name
 * (CLIENT SETNAME, HELLO SETNAME); false after replying the error. */
bool client_name_ok(struct exec_ctx *x, uint32_t i);
bool client_set_name(struct exec_ctx *x, uint32_t i);

/* cmd_scan.c: DBSIZE's figure, users held by the user-keyed families. */
uint64_t scan_users_held(const struct db *db);
/* Calls fn for each user of the families USER.SCAN walks (cnt conv grp
 * dot feed; a user once per family it is in), for the cluster's key
 * index (cluster_keys.h). O(users). 0, or -1 when out of memory. */
int scan_each_user(const struct db *db, void (*fn)(uint64_t uid, void *ctx),
                   void *ctx);

#endif
