/*
 * users.c - see users.h.
 */
#include "users.h"

#include <string.h>
#include <time.h>

#include "days.h"
#include "exec.h"
#include "u32map.h"

/* Activity entries looked at per table walk step: bounds the stack and
 * the work between two looks at the clock. */
#define EXPIRE_BATCH 32

/* Whether op belongs to a family named by expire-families. */
static bool op_expires(const struct server *srv, const struct ur_op *op)
{
    unsigned fam = db_family_of_opcode(op->code);

    return fam < FAM_COUNT && (srv->cfg.expire_families & (1u << fam));
}

/* Refreshes the day kept by holder h (uid's day there: tag) to day. */
static bool refresh_held(struct server *srv, const struct db_day_holder *h,
                         uint64_t uid, uint16_t tag, uint32_t day)
{
    if (tag >= db_day_tag(day))
        return false;
    /* Best effort: a bucket that cannot widen its days (u32map.h) keeps
     * the old one. */
    return h->set(&srv->db, uid, db_day_tag(day)) > 0;
}

bool users_mark_active(struct server *srv, const struct ur_op *op,
                       uint32_t argc, const struct ur_arg *argv, bool changed)
{
    const struct db_day_holder *own, *held;
    uint32_t day;
    uint16_t tag = 0;
    uint64_t uid;
    unsigned fam;
    bool in_own;

    if ((op->flags & (OPF_USER | OPF_ADMIN)) != OPF_USER || argc == 0)
        return false;
    if (argv[0].kind == UR_ARG_INT)
        uid = argv[0].num;
    else if (ur_parse_uint(argv[0].str, argv[0].len, UR_INT_MAX, &uid) !=
             UR_NUM_OK)
        return false;
    fam = db_family_of_opcode(op->code);
    if (changed && fam < FAM_COUNT && srv->db.expired_pending[fam] != 0)
        db_expiry_rebuilt(&srv->db, uid, fam);
    day = users_day(server_clock_ms(srv));
    /* A family that keeps days (days.h) keeps the day of a user with a
     * record in it while the user's commands are that family's, or of no
     * family (USER.BADGE). Its store is asked first: the command just used
     * it, so the lookup is in cache, and a day kept there is in no other
     * place. */
    own = db_day_holder_of(fam);
    in_own = own != NULL && own->get(&srv->db, uid, &tag);
    if (in_own && tag != 0)
        return refresh_held(srv, own, uid, tag, day);
    if (u32map_get_tag(srv->db.active, uid, &tag))
        /* Best effort, as refresh_held: a bucket that cannot widen its
         * tags keeps the old day. */
        return tag < db_day_tag(day) &&
               u32map_set_tag(srv->db.active, uid, db_day_tag(day)) == 0;
    held = db_day_held(&srv->db, uid, own, &tag);
    if (held == NULL) {
        /* Not tracked yet: only a family of expire-families starts it. */
        if (!op_expires(srv, op))
            return false;
        if (in_own)
            return own->set(&srv->db, uid, db_day_tag(day)) > 0;
        return u32map_put_tagged(srv->db.active, uid, 0, db_day_tag(day)) == 0;
    }
    if (fam == FAM_COUNT)
        return refresh_held(srv, held, uid, tag, day);
    /* Active in another family: its day moves to the table, so that its
     * next commands cost one lookup, as any user's there (and a user of
     * two holding families does not carry it back and forth). Best
     * effort: if the table cannot grow, the day stays where it is. */
    if (u32map_put_tagged(srv->db.active, uid, 0,
                          tag > db_day_tag(day) ? tag : db_day_tag(day)) == 0)
        held->set(&srv->db, uid, 0);
    else if (tag < db_day_tag(day))
        held->set(&srv->db, uid, db_day_tag(day));
    return tag < day;
}

/* ---- The expiry sweep --------------------------------------------------- */

static uint64_t now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* The users of one walk step that are due: inactive for more than `days`
 * whole days. A day after today (the clock was moved back) is not due. */
struct pick {
    uint32_t today, days;
    unsigned n;
    uint64_t uid[EXPIRE_BATCH];
};

static void pick_visit(uint64_t uid, uint32_t day, void *ctx)
{
    struct pick *p = ctx;

    if (day < p->today && p->today - day > p->days)
        p->uid[p->n++] = uid;
}

/* Runs USER.EXPIRE uid <expire-families> through the executor, so that it
 * is journaled like a client's write. true when it ran. */
static bool expire_one(struct server *srv, uint64_t uid, struct ur_buf *out)
{
    struct session sess = {.id = 0, .proto = REPLY_RESP, .authed = true};
    struct ur_arg argv[1 + FAM_COUNT];
    uint32_t argc = 0;
    struct reply r;

    argv[argc++] = (struct ur_arg){.kind = UR_ARG_INT, .num = uid};
    for (unsigned f = 0; f < FAM_COUNT; f++) {
        const char *name = db_families[f].name;

        if (srv->cfg.expire_families & (1u << f))
            argv[argc++] = (struct ur_arg){
                .kind = UR_ARG_STR, .len = (uint32_t)strlen(name), .str = name};
    }
    out->len = 0;
    reply_begin(&r, out, REPLY_RESP, 0);
    exec_op(srv, &sess, &ur_ops[UR_OPI_USER_EXPIRE], argc, argv, &r);
    reply_end(&r);
    return r.status == UR_E_OK;
}

static void sweep_start(struct expiry *e, uint32_t today, uint64_t now_ms)
{
    e->running = true;
    e->cursor = (struct db_day_cursor){0};
    e->sweep_day = today;
    e->sweep_start_ms = now_ms;
    e->sweep_expired = 0;
}

static void sweep_end(struct expiry *e, uint64_t now_ms)
{
    e->running = false;
    e->sweeps++;
    e->last_sweep_ms = now_ms;
    e->last_sweep_duration_ms = now_ms - e->sweep_start_ms;
    e->last_sweep_expired = e->sweep_expired;
}

/* One walk step and its expiries. false when an expiry was refused. */
static bool sweep_step(struct server *srv, uint32_t today, struct ur_buf *out)
{
    struct expiry *e = &srv->expiry;
    struct pick p = {today, srv->cfg.inactive_days, 0, {0}};

    /* The walk's callback may not change the stores: pick, then expire.
     * The activity table first, then the days the families keep: each
     * tracked user once (days.h). */
    e->scanned +=
        db_scan_days(&srv->db, &e->cursor, EXPIRE_BATCH, pick_visit, &p);
    for (unsigned i = 0; i < p.n; i++) {
        if (!expire_one(srv, p.uid[i], out))
            return false;
        e->sweep_expired++;
    }
    return true;
}

bool users_expire_cycle(struct server *srv, uint64_t budget_us)
{
    struct expiry *e = &srv->expiry;
    uint64_t now_ms = server_clock_ms(srv), t0, dt;
    uint32_t today = users_day(now_ms);
    struct ur_buf out;

    if (srv->cfg.inactive_days == 0 || srv->cfg.expire_families == 0)
        return false;
    if (!e->running) {
        if (e->sweep_day == today)
            return false;
        sweep_start(e, today, now_ms);
    }
    ur_buf_init(&out);
    t0 = now_us();
    do {
        if (!sweep_step(srv, today, &out)) {
            e->running = false;
            e->sweep_day = 0; /* start again at the next slice */
            break;
        }
        if (e->cursor.done) {
            sweep_end(e, now_ms);
            break;
        }
    } while (now_us() - t0 < budget_us);
    dt = now_us() - t0;
    ur_buf_deinit(&out);
    e->cycles++;
    e->cycle_us += dt;
    if (dt > e->cycle_max_us)
        e->cycle_max_us = dt;
    return e->running;
}
