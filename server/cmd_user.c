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

    if (!u32map_get(srv->db.active, uid, &day)) {
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

void cmd_USER_DEL(struct exec_ctx *x)
{
    uint64_t removed[FAM_COUNT] = {0};
    uint64_t uid;

    if (!arg_u64(x, 0, "uid", &uid))
        return;
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
    reply_int(x->r, db_forget_user(&x->srv->db, uid, mask, e->entries));
    e->users++;
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
    x->srv->expiry.cursor = 0;
    reply_status(x->r, "OK");
}
