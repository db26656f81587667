/*
 * cmd_user.c - USER.* handlers (docs/OPERATIONS.md, "Users and expiry") and
 * FLUSHALL: what is held about a user, erasing a user, the journaled form of an
 * expiry, erasing everything.
 *
 * USER.INFO answers one line per entry held, readable in redis-cli: an
 * operator asking "why does this badge say 7?" reads the parts the badge
 * is the sum of. Lines per family are capped (INFO_FAMILY_LINES), the
 * family's summary line always comes.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cmds.h"
#include "u32map.h"
#include "users.h"

/* Entry lines shown per family; the summary tells how many there are. */
#define INFO_FAMILY_LINES 100

/* The lines of a USER.INFO reply, in a deferred array. */
struct user_lines {
    struct exec_ctx *x;
    uint32_t n;      /* lines emitted */
    uint32_t family; /* entry lines of the current family so far */
};

void user_line(struct user_lines *L, const char *fmt, ...)
{
    char buf[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    reply_cstr(L->x->r, buf);
    L->n++;
}

bool user_line_room(struct user_lines *L)
{
    return L->family++ < INFO_FAMILY_LINES;
}

void user_lines_more(struct user_lines *L, const char *fam, size_t total)
{
    if (total > INFO_FAMILY_LINES)
        user_line(L, "%s: ... %zu more not shown", fam,
                  total - INFO_FAMILY_LINES);
    L->family = 0;
}

static void info_active(struct user_lines *L, const struct server *srv,
                        uint64_t uid)
{
    uint32_t day, today = users_day(server_clock_ms(srv));
    char date[32];
    struct tm tm;
    time_t t;

    if (!db_active_day(&srv->db, uid, &day)) {
        user_line(L,
                  "active: not tracked (no command of a family in "
                  "expire-families (%s) has named this user as its reader "
                  "since it was last expired or erased)",
                  srv->cfg.expire_families_text);
        return;
    }
    t = (time_t)((uint64_t)day * (USERS_DAY_MS / 1000));
    gmtime_r(&t, &tm);
    strftime(date, sizeof(date), "%Y-%m-%d", &tm);
    user_line(L,
              "active: last on %s (UTC), %ld days ago; inactive-days %u, "
              "expire-families %s",
              date, (long)today - (long)day, srv->cfg.inactive_days,
              srv->cfg.expire_families_text);
}

void cmd_USER_INFO(struct exec_ctx *x)
{
    struct user_lines L = {x, 0, 0};
    uint64_t uid;
    size_t mark;

    if (!arg_u64(x, 0, "uid", &uid))
        return;
    mark = reply_arr_defer(x->r);
#define FAMILY(f, ID, lo, hi, unit, expiry, prefetch, title)                   \
    cmd_##f##_user_info(&L, x->srv, uid);
#include "families.def"
#undef FAMILY
    info_active(&L, x->srv, uid);
    reply_arr_finish(x->r, mark, L.n);
}

/* The user reads as new afterwards: its expiry record goes too. */
void cmd_USER_DEL(struct exec_ctx *x)
{
    uint64_t removed[FAM_COUNT] = {0};
    uint64_t uid;

    if (!arg_u64(x, 0, "uid", &uid))
        return;
    db_expiry_forget(&x->srv->db, uid);
    reply_int(x->r,
              db_forget_user(&x->srv->db, uid, (1u << FAM_COUNT) - 1, removed));
}

/* Argument i names a family expiry may forget: *bit = 1 << FAM_x. */
static bool arg_family(struct exec_ctx *x, uint32_t i, uint32_t *bit)
{
    char text[65];

    char names[128] = "";
    size_t used = 0;

    for (unsigned f = 0; f < FAM_COUNT; f++) {
        if (!(db_families[f].flags & FAMF_EXPIRABLE))
            continue;
        if (arg_is(x, i, db_families[f].name)) {
            *bit = 1u << f;
            return true;
        }
        used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s",
                                 used ? " " : "", db_families[f].name);
    }
    reply_err(x->r, UR_E_BADARG, "'%s' is not a family expiry forgets (%s)",
              arg_text(x, i, text, sizeof(text)), names);
    return false;
}

/* Counts into srv->expiry whether run by the sweep, replayed from the
 * journal, or sent by a client: every one is an expiry. */
void cmd_USER_EXPIRE(struct exec_ctx *x)
{
    struct expiry *e = &x->srv->expiry;
    uint32_t mask = 0, bit;
    uint64_t uid;

    if (!arg_u64(x, 0, "uid", &uid))
        return;
    for (uint32_t i = 1; i < x->argc; i++) {
        if (!arg_family(x, i, &bit))
            return;
        mask |= bit;
    }
    /* The record first: it is the one allocation, and expiry never fails
     * silently. Its time is the command's, which replay pins again. */
    if (db_expiry_note(&x->srv->db, uid, server_clock_ms(x->srv), mask) != 0) {
        reply_oom(x);
        return;
    }
    reply_int(x->r, db_forget_user(&x->srv->db, uid, mask, e->entries));
    e->users++;
}

/* ---- Expiry seen by reads ------------------------------------------------ */

bool arg_withexpiry(struct exec_ctx *x, uint32_t i, bool *with)
{
    char text[65];

    *with = false;
    if (i >= x->argc)
        return true;
    if (arg_is(x, i, "WITHEXPIRY")) {
        *with = true;
        return true;
    }
    reply_err(x->r, UR_E_BADARG, "unexpected argument '%s' (only WITHEXPIRY)",
              arg_text(x, i, text, sizeof(text)));
    return false;
}

void reply_count(struct exec_ctx *x, unsigned fam, uint64_t uid, uint64_t v,
                 bool with)
{
    if (!with) {
        reply_int(x->r, v);
        return;
    }
    reply_pair(x->r, v, db_expiry_pending(&x->srv->db, uid, fam));
}

/* USER.STATUS uid: active, expired or unknown, with the families expiry
 * forgot that no write has rebuilt since. */
void cmd_USER_STATUS(struct exec_ctx *x)
{
    const struct db *db = &x->srv->db;
    struct db_expiry e = {0, 0, 0};
    bool active, expired;
    uint32_t day = 0, n = 0;
    uint64_t uid;

    if (!arg_u64(x, 0, "uid", &uid))
        return;
    active = db_active_day(db, uid, &day);
    expired = db_expiry_get(db, uid, &e);
    for (unsigned f = 0; f < FAM_COUNT; f++)
        n += e.pending >> f & 1;
    reply_arr(x->r, 3 + n);
    reply_cstr(x->r, active ? "active" : expired ? "expired" : "unknown");
    reply_int(x->r, active ? (uint64_t)day * USERS_DAY_MS : 0);
    reply_int(x->r, e.ms);
    for (unsigned f = 0; f < FAM_COUNT; f++)
        if (e.pending >> f & 1)
            reply_cstr(x->r, db_families[f].name);
}

/* ---- Badges ---------------------------------------------------------------
 * One rule for the badge and every part: exact up to unread-cap, cap + 1
 * above it. Each family counts up to the cap (cmd_<f>_badge's limit), so
 * a part is its own total read under that rule; the badge is the sum of
 * the parts under the same rule, which is exact whenever every part is (a
 * part above the cap makes the sum so too). Parts are at most cap + 1,
 * six of them at most 6 000 006: no sum can overflow. */

typedef bool (*badge_fn)(const struct server *srv, uint64_t uid, uint64_t limit,
                         uint64_t *part, const union badge_probe *bp);
typedef void (*badge_hint_fn)(const struct server *srv, uint64_t uid, int stage,
                              union badge_probe *bp);

static const badge_fn badge_fns[FAM_COUNT] = {
#define FAMILY(f, ID, lo, hi, unit, expiry, prefetch, title)                   \
    [FAM_##ID] = cmd_##f##_badge,
#include "families.def"
#undef FAMILY
};

static const badge_hint_fn badge_hint_fns[FAM_COUNT] = {
#define FAMILY(f, ID, lo, hi, unit, expiry, prefetch, title)                   \
    [FAM_##ID] = cmd_##f##_badge_hint,
#include "families.def"
#undef FAMILY
};

static uint64_t cap_of(const struct server *srv, uint64_t v)
{
    uint64_t cap = srv->cfg.unread_cap;

    return v > cap ? cap + 1 : v;
}

void badge_hint_stage(const struct server *srv, uint64_t uid, int stage,
                      const unsigned *fams, unsigned n, union badge_probe *bp)
{
    for (unsigned i = 0; i < n; i++)
        badge_hint_fns[fams[i]](srv, uid, stage, &bp[i]);
}

/* Every hint stage of the families in fams[0..n) for uid, stage by stage,
 * so that the families' misses of one stage overlap (one user: USER.BADGE
 * and the badge channels' probes; USER.MBADGE pipelines its users), the
 * probe of fams[i] in bp[i]. */
static void badge_hint(const struct server *srv, uint64_t uid,
                       const unsigned *fams, unsigned n, union badge_probe *bp)
{
    for (int s = 0; s < DB_PREFETCH_STAGES; s++)
        badge_hint_stage(srv, uid, s, fams, n, bp);
}

/* The badge over the families in fams[0..n) (each with a part, its probe
 * in bp[i] after badge_hint), their parts in part[]. */
uint64_t badge_of(const struct server *srv, uint64_t uid, const unsigned *fams,
                  unsigned n, const union badge_probe *bp, uint64_t *part)
{
    uint64_t sum = 0, p;

    for (unsigned i = 0; i < n; i++) {
        badge_fns[fams[i]](srv, uid, srv->cfg.unread_cap, &p, &bp[i]);
        part[i] = cap_of(srv, p);
        sum += part[i];
    }
    return cap_of(srv, sum);
}

/* USER.MBADGE's badge alone, under the same rule: once the sum is past
 * the cap the badge is cap + 1 whatever the rest adds, so the families
 * after that are not read, and each family counts only up to the room
 * left (a part above it puts the sum past the cap: cmd_<f>_badge's limit
 * allows any value there). */
static uint64_t badge_only(const struct server *srv, uint64_t uid,
                           const unsigned *fams, unsigned n,
                           const union badge_probe *bp)
{
    uint64_t cap = srv->cfg.unread_cap, sum = 0, p;

    for (unsigned i = 0; i < n; i++) {
        badge_fns[fams[i]](srv, uid, cap - sum, &p, &bp[i]);
        if (p > cap - sum)
            return cap + 1;
        sum += p;
    }
    return sum;
}

/* The families with a part, in families.def order. */
unsigned badge_families(const struct server *srv, unsigned *fams)
{
    unsigned n = 0;

    for (unsigned f = 0; f < FAM_COUNT; f++)
        if (badge_fns[f](srv, 0, 0, NULL, NULL))
            fams[n++] = f;
    return n;
}

bool badge_part(const struct server *srv, unsigned fam, uint64_t uid,
                uint64_t *part)
{
    union badge_probe bp;
    uint64_t p;

    /* A family without a part hints nothing and answers false (cmds.h):
     * no separate has-a-part call. */
    badge_hint(srv, uid, &fam, 1, &bp);
    if (!badge_fns[fam](srv, uid, srv->cfg.unread_cap, &p, &bp))
        return false;
    *part = cap_of(srv, p);
    return true;
}

void cmd_USER_BADGE(struct exec_ctx *x)
{
    union badge_probe bp[FAM_COUNT];
    unsigned fams[FAM_COUNT], n = 0;
    uint64_t uid, part[FAM_COUNT], badge, expired = 0;
    uint32_t seen = 0;
    bool with = false;
    char text[65];

    if (!arg_u64(x, 0, "uid", &uid))
        return;
    for (uint32_t i = 1; i < x->argc; i++) {
        int f;

        if (arg_is(x, i, "WITHEXPIRY") && !with) {
            with = true;
            continue;
        }
        f = x->argv[i].kind == UR_ARG_STR
                ? db_family_by_name(x->argv[i].str, x->argv[i].len)
                : -1;
        if (f < 0) {
            reply_err(x->r, UR_E_BADARG,
                      "'%s' is not a family (cnt conv grp bc dot feed) or "
                      "WITHEXPIRY",
                      arg_text(x, i, text, sizeof(text)));
            return;
        }
        if (!badge_fns[f](x->srv, uid, 0, NULL, NULL)) {
            reply_err(x->r, UR_E_BADARG, "%s has no part in a badge",
                      db_families[f].name);
            return;
        }
        if (seen >> f & 1) {
            reply_err(x->r, UR_E_BADARG, "%s named twice", db_families[f].name);
            return;
        }
        seen |= 1u << f;
        fams[n++] = (unsigned)f;
    }
    if (n == 0)
        n = badge_families(x->srv, fams);
    badge_hint(x->srv, uid, fams, n, bp);
    badge = badge_of(x->srv, uid, fams, n, bp, part);
    for (unsigned i = 0; i < n && with; i++)
        if (expired == 0)
            expired = db_expiry_pending(&x->srv->db, uid, fams[i]);
    reply_arr(x->r, 1 + 2 * n + (with ? 2 : 0));
    reply_int(x->r, badge);
    for (unsigned i = 0; i < n; i++) {
        reply_cstr(x->r, db_families[fams[i]].name);
        reply_int(x->r, part[i]);
    }
    if (with) {
        reply_cstr(x->r, "expired");
        reply_int(x->r, expired);
    }
}

/*
 * Every uid is checked before the reply's first value goes out. A badge is
 * a handful of lookups in different tables, each a chain of cache misses
 * at scale (a map's segment header, the user's slot, the record it points
 * to, what the record points to): each family's hint (cmd_<f>_badge_hint)
 * walks such a chain one stage at a time in a software pipeline over the
 * users, stage s for the user (DB_PREFETCH_STAGES - s) * MBADGE_AHEAD
 * places ahead of the badge computed, so that every stage reads what the
 * one before loaded and the misses of several users overlap. Each user
 * in flight keeps its families' probes (what each stage found, for the
 * next and for the read) in a ring of MBADGE_RING users.
 */
#define MBADGE_AHEAD 2
/* A power of two above the users in flight. */
#define MBADGE_RING 16
_Static_assert(MBADGE_RING > DB_PREFETCH_STAGES * MBADGE_AHEAD &&
                   (MBADGE_RING & (MBADGE_RING - 1)) == 0,
               "MBADGE_RING holds every user in flight");

void cmd_USER_MBADGE(struct exec_ctx *x)
{
    const struct server *srv = x->srv;
    const int64_t lead = DB_PREFETCH_STAGES * MBADGE_AHEAD;
    union badge_probe bp[MBADGE_RING][FAM_COUNT];
    uint64_t uids[UR_UIDS_MAX];
    unsigned fams[FAM_COUNT], n;
    int64_t argc = x->argc;

    if (x->argc > UR_UIDS_MAX) { /* the executor's limit */
        reply_err(x->r, UR_E_BADARG, "at most %u uids", UR_UIDS_MAX);
        return;
    }
    for (uint32_t i = 0; i < x->argc; i++)
        if (!arg_u64(x, i, "uid", &uids[i]))
            return;
    n = badge_families(srv, fams);
    reply_arr(x->r, x->argc);
    for (int64_t i = -lead; i < argc; i++) {
        for (int s = 0; s < DB_PREFETCH_STAGES; s++) {
            int64_t j = i + (DB_PREFETCH_STAGES - s) * MBADGE_AHEAD;

            if (j >= 0 && j < argc)
                badge_hint_stage(srv, uids[j], s, fams, n, bp[j % MBADGE_RING]);
        }
        if (i >= 0)
            reply_int(x->r,
                      badge_only(srv, uids[i], fams, n, bp[i % MBADGE_RING]));
    }
}

/* The new stores come first, so that running out of memory changes
 * nothing. */
void cmd_FLUSHALL(struct exec_ctx *x)
{
    struct db fresh;

    if (db_init(&fresh) != 0) {
        reply_oom(x);
        return;
    }
    db_deinit(&x->srv->db);
    x->srv->db = fresh;
    x->srv->expiry.running = false;
    x->srv->expiry.cursor = (struct db_day_cursor){0};
    reply_status(x->r, "OK");
}
