/*
 * test_dot.c - DOT: the show rule (click < push), monotonic times, several
 * dots per user, the limits (ts range, number of dots), a long randomized
 * run against a plain array model, one over every size class of the click
 * records (growth from class to class and out of line, users leaving and
 * their records reused, reloading through dot_put_user, the activity days
 * in the map's tags), and every allocation of a click failing in turn.
 */
#include "dot.h"
#include "mem.h"
#include "t.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static void test_empty(void)
{
    struct dot_store *s = dot_create();

    CHECK(s != NULL);
    CHECK(!dot_shown(s, 1, 1));
    CHECK_EQ_U64(dot_entries(s), 0);
    CHECK_EQ_U64(dot_users(s), 0);
    CHECK_EQ_U64(dot_dots(s), 0);
    CHECK_EQ_U64(dot_audit(s), 0);
    dot_destroy(s);
    dot_destroy(NULL);
}

static void test_show_rule(void)
{
    struct dot_store *s = dot_create();
    uint64_t push = 0;

    /* A dot never pushed shows to nobody, clicked or not. */
    CHECK(!dot_shown(s, 7, 100));
    CHECK_EQ_U64(dot_click(s, 8, 100, 50), 0);
    CHECK(!dot_shown(s, 8, 100));
    CHECK(!dot_shown(s, 7, 100));

    /* Never clicked + pushed: shows. */
    CHECK_EQ_U64(dot_push(s, 100, 1000, &push), 0);
    CHECK_EQ_U64(push, 1000);
    CHECK(dot_shown(s, 7, 100));
    CHECK(dot_shown(s, 8, 100)); /* clicked at 50, before the push */

    /* Click after the push: hidden; at the push time itself too. */
    CHECK_EQ_U64(dot_click(s, 7, 100, 1001), 0);
    CHECK(!dot_shown(s, 7, 100));
    CHECK_EQ_U64(dot_click(s, 8, 100, 1000), 0);
    CHECK(!dot_shown(s, 8, 100));

    /* Push again: shows again. */
    CHECK_EQ_U64(dot_push(s, 100, 2000, &push), 0);
    CHECK_EQ_U64(push, 2000);
    CHECK(dot_shown(s, 7, 100));
    CHECK(dot_shown(s, 8, 100));

    /* A click in the future (explicit ts) hides it until a later push. */
    CHECK_EQ_U64(dot_click(s, 7, 100, 5000), 0);
    CHECK(!dot_shown(s, 7, 100));
    CHECK_EQ_U64(dot_push(s, 100, 4000, &push), 0);
    CHECK(!dot_shown(s, 7, 100));
    CHECK_EQ_U64(dot_push(s, 100, 5001, &push), 0);
    CHECK(dot_shown(s, 7, 100));
    CHECK_EQ_U64(dot_entries(s), 2);
    CHECK_EQ_U64(dot_users(s), 2);
    CHECK_EQ_U64(dot_dots(s), 1);
    CHECK_EQ_U64(dot_audit(s), 0);
    dot_destroy(s);
}

static void test_times_only_move_forward(void)
{
    struct dot_store *s = dot_create();
    uint64_t push = 0;

    CHECK_EQ_U64(dot_push(s, 1, 300, &push), 0);
    /* An older push (a stale retry, a replay) does not move it back. */
    CHECK_EQ_U64(dot_push(s, 1, 100, &push), 0);
    CHECK_EQ_U64(push, 300);
    CHECK_EQ_U64(dot_click(s, 9, 1, 200), 0);
    CHECK(dot_shown(s, 9, 1)); /* 200 < 300 */
    /* A stale click does not bring back a dot already dismissed. */
    CHECK_EQ_U64(dot_click(s, 9, 1, 400), 0);
    CHECK_EQ_U64(dot_click(s, 9, 1, 250), 0);
    CHECK_EQ_U64(dot_push(s, 1, 350, &push), 0);
    CHECK_EQ_U64(push, 350);
    CHECK(!dot_shown(s, 9, 1)); /* click 400 >= push 350 */
    /* ts 0 is a time like any other. */
    CHECK_EQ_U64(dot_push(s, 2, 0, &push), 0);
    CHECK_EQ_U64(push, 0);
    CHECK(dot_shown(s, 9, 2));
    CHECK_EQ_U64(dot_click(s, 9, 2, 0), 0);
    CHECK(!dot_shown(s, 9, 2));
    CHECK_EQ_U64(dot_audit(s), 0);
    dot_destroy(s);
}

static void test_many_dots_per_user(void)
{
    struct dot_store *s = dot_create();
    uint64_t push, dots[300];

    /* Dots named in an order unrelated to their index; clicks in another. */
    for (unsigned i = 0; i < 300; i++) {
        dots[i] = t_rng();
        CHECK_EQ_U64(dot_push(s, dots[i], 1000 + i, &push), 0);
    }
    for (unsigned k = 0; k < 300; k++) {
        unsigned i = (k * 7919) % 300;

        if (i % 3 == 0)
            continue;
        /* Every other one clicked after its push, the rest before. */
        CHECK_EQ_U64(dot_click(s, 42, dots[i], i % 2 ? 2000 : 500), 0);
        CHECK_EQ_U64(dot_audit(s), 0);
    }
    for (unsigned i = 0; i < 300; i++)
        CHECK_EQ_U64(dot_shown(s, 42, dots[i]), i % 3 == 0 || i % 2 == 0);
    CHECK_EQ_U64(dot_entries(s), 200);
    CHECK_EQ_U64(dot_users(s), 1);
    CHECK_EQ_U64(dot_audit(s), 0);
    dot_destroy(s);
}

static void test_limits(void)
{
    struct dot_store *s = dot_create();
    uint64_t push;

    CHECK_EQ_U64(dot_push(s, 1, DOT_TS_MAX, &push), 0);
    CHECK_EQ_U64(push, DOT_TS_MAX);
    CHECK_EQ_U64(dot_click(s, 1, 1, DOT_TS_MAX - 1), 0);
    CHECK(dot_shown(s, 1, 1));
    CHECK_EQ_U64(dot_click(s, 1, 1, DOT_TS_MAX), 0);
    CHECK(!dot_shown(s, 1, 1));
    /* Out of range: refused, nothing stored, no dot created. */
    CHECK_EQ_U64(dot_push(s, 2, DOT_TS_MAX + 1, &push), DOT_ERANGE);
    CHECK_EQ_U64(dot_click(s, 2, 3, UINT64_MAX), DOT_ERANGE);
    CHECK_EQ_U64(dot_dots(s), 1);
    CHECK_EQ_U64(dot_entries(s), 1);

    /* The dot index is full at DOT_MAX_DOTS ids; known dots still work. */
    for (uint64_t d = 2; d <= DOT_MAX_DOTS; d++)
        CHECK_EQ_U64(dot_click(s, d % 5, d, d), 0);
    CHECK_EQ_U64(dot_dots(s), DOT_MAX_DOTS);
    CHECK_EQ_U64(dot_push(s, DOT_MAX_DOTS + 1, 5, &push), DOT_EFULL);
    CHECK_EQ_U64(dot_click(s, 1, DOT_MAX_DOTS + 1, 5), DOT_EFULL);
    CHECK_EQ_U64(dot_push(s, DOT_MAX_DOTS, 1u << 20, &push), 0);
    CHECK(dot_shown(s, DOT_MAX_DOTS % 5, DOT_MAX_DOTS));
    CHECK(!dot_shown(s, 1, DOT_MAX_DOTS + 1));
    CHECK_EQ_U64(dot_entries(s), DOT_MAX_DOTS);
    CHECK_EQ_U64(dot_audit(s), 0);
    dot_destroy(s);
}

/*
 * The model: push[d] and click[u][d] as times plus one, 0 for never. Ids
 * are random 64-bit; times cluster so that pushes and clicks interleave,
 * with explicit ts both before and after the latest push.
 */
#define M_USERS 48
#define M_DOTS 40

static void test_random_vs_model(void)
{
    static uint64_t mpush[M_DOTS], mclick[M_USERS][M_DOTS];
    uint64_t uids[M_USERS], dots[M_DOTS], push;
    struct dot_store *s = dot_create();
    size_t bad = 0, clicks = 0;

    for (unsigned i = 0; i < M_USERS; i++)
        uids[i] = i < 2 ? i * UINT64_MAX : t_rng();
    for (unsigned i = 0; i < M_DOTS; i++)
        dots[i] = i < 2 ? i * UINT64_MAX : t_rng();
    for (unsigned step = 0; step < 300000; step++) {
        unsigned u = (unsigned)(t_rng() % M_USERS);
        unsigned d = (unsigned)(t_rng() % M_DOTS);
        uint64_t ts = t_rng() % 1000, r = t_rng() % 10;

        if (t_rng() % 500 == 0) { /* expiry or USER.DEL of the user */
            uint32_t had = 0;

            for (unsigned k = 0; k < M_DOTS; k++) {
                had += mclick[u][k] != 0;
                mclick[u][k] = 0;
            }
            bad += dot_forget_user(s, uids[u]) != had;
            clicks -= had;
            continue;
        }
        if (r < 2) {
            bad += dot_push(s, dots[d], ts, &push) != 0;
            if (mpush[d] < ts + 1)
                mpush[d] = ts + 1;
            bad += push != mpush[d] - 1;
        } else if (r < 5) {
            bad += dot_click(s, uids[u], dots[d], ts) != 0;
            clicks += mclick[u][d] == 0;
            if (mclick[u][d] < ts + 1)
                mclick[u][d] = ts + 1;
        } else {
            bool want = mpush[d] != 0 && mclick[u][d] < mpush[d];

            bad += dot_shown(s, uids[u], dots[d]) != want;
        }
        if (step % 50000 == 0)
            bad += dot_audit(s);
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(dot_entries(s), clicks);
    for (unsigned u = 0; u < M_USERS; u++)
        for (unsigned d = 0; d < M_DOTS; d++)
            bad += dot_shown(s, uids[u], dots[d]) !=
                   (mpush[d] != 0 && mclick[u][d] < mpush[d]);
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(dot_audit(s), 0);
    dot_destroy(s);
}

struct seen {
    unsigned n, shown;
    uint64_t click_sum;
};

static void user_visit(uint64_t dot, uint64_t click, uint64_t push, bool shown,
                       void *ctx)
{
    struct seen *sn = ctx;

    sn->n++;
    sn->shown += shown;
    sn->click_sum += click;
    CHECK(dot != 3 || push == DOT_NEVER);
}

/* What USER.INFO shows of a user, and forgetting it: the dots it had
 * dismissed show again, other users keep theirs. */
static void test_user_info_and_del(void)
{
    struct dot_store *s = dot_create();
    struct seen sn = {0, 0, 0};
    uint64_t push;

    CHECK_EQ_U64(dot_push(s, 1, 100, &push), 0);
    CHECK_EQ_U64(dot_push(s, 2, 100, &push), 0);
    CHECK_EQ_U64(dot_click(s, 7, 1, 150), 0); /* after the push: hidden */
    CHECK_EQ_U64(dot_click(s, 7, 2, 50), 0);  /* before: shows */
    CHECK_EQ_U64(dot_click(s, 7, 3, 60), 0);  /* never pushed */
    CHECK_EQ_U64(dot_click(s, 8, 1, 150), 0);
    CHECK_EQ_U64(dot_user_info(s, 7, user_visit, &sn), 3);
    CHECK_EQ_U64(sn.n, 3);
    CHECK_EQ_U64(sn.shown, 1);
    CHECK_EQ_U64(sn.click_sum, 260);
    CHECK(!dot_shown(s, 7, 1));
    CHECK_EQ_U64(dot_forget_user(s, 7), 3);
    CHECK_EQ_U64(dot_forget_user(s, 7), 0);
    CHECK(dot_shown(s, 7, 1));
    CHECK(!dot_shown(s, 8, 1));
    CHECK_EQ_U64(dot_entries(s), 1);
    CHECK_EQ_U64(dot_users(s), 1);
    CHECK_EQ_U64(dot_audit(s), 0);
    dot_destroy(s);
}

/* A floor (an expiry's time) reads every dot pushed up to it as clicked;
 * dots pushed later show as usual. dot_user_shown counts the user's
 * clicked dots that show again. */
static void test_floor_and_user_count(void)
{
    struct dot_store *s = dot_create();
    uint64_t push;

    CHECK_EQ_U64(dot_push(s, 1, 100, &push), 0);
    CHECK_EQ_U64(dot_push(s, 2, 200, &push), 0);
    CHECK_EQ_U64(dot_push(s, 3, 300, &push), 0);
    CHECK(dot_shown_after(s, 9, 1, 0));
    CHECK(!dot_shown_after(s, 9, 1, 150));
    CHECK(!dot_shown_after(s, 9, 2, 200)); /* pushed at the floor */
    CHECK(dot_shown_after(s, 9, 3, 250));
    CHECK(!dot_shown_after(s, 9, 4, 0)); /* never pushed */
    CHECK_EQ_U64(dot_click(s, 9, 3, 310), 0);
    CHECK(!dot_shown_after(s, 9, 3, 250));
    CHECK_EQ_U64(dot_click(s, 9, 1, 50), 0);
    CHECK_EQ_U64(dot_user_shown(s, 9, 0), 1);   /* dot 1 */
    CHECK_EQ_U64(dot_user_shown(s, 9, 120), 0); /* dot 1 under the floor */
    CHECK_EQ_U64(dot_push(s, 3, 400, &push), 0);
    CHECK_EQ_U64(dot_user_shown(s, 9, 120), 1); /* dot 3 again */
    CHECK_EQ_U64(dot_user_shown(s, 8, 0), 0);
    CHECK_EQ_U64(dot_audit(s), 0);
    dot_destroy(s);
}

/*
 * Every size class: users with up to ~200 clicks (each user aims at a size
 * of its own, so all classes and the out-of-line records are in use at
 * once), clicks in random order, users leaving (their records go back to
 * the free lists and come back for the next users), activity days set and
 * cleared, and now and then the whole store checked against the model:
 * every user's clicks through dot_user_info and dot_scan, a copy loaded
 * through dot_put_user, the days through dot_scan_days.
 */
#define C_USERS 96
#define C_DOTS 220

struct cmodel {
    uint64_t uid[C_USERS], dot[C_DOTS];
    uint64_t click[C_USERS][C_DOTS]; /* ts + 1, 0: none */
    uint16_t day[C_USERS];
    uint32_t aim[C_USERS]; /* the dots a user clicks among: its size */
    int32_t index[C_DOTS]; /* the store's number of dot i, -1: none yet */
};

static int user_of(const struct cmodel *m, uint64_t uid)
{
    for (int u = 0; u < C_USERS; u++)
        if (m->uid[u] == uid)
            return u;
    return -1;
}

static int dot_of_index(const struct cmodel *m, uint32_t idx)
{
    for (int d = 0; d < C_DOTS; d++)
        if (m->index[d] == (int32_t)idx)
            return d;
    return -1;
}

struct cscan {
    const struct cmodel *m;
    size_t users, bad;
};

/* A user of the walk: its clicks are the model's, ascending by number. */
static void cscan_visit(uint64_t uid, uint32_t n, const uint64_t *clicks,
                        void *ctx)
{
    struct cscan *cs = ctx;
    int u = user_of(cs->m, uid);
    uint32_t want = 0;

    cs->users++;
    if (u < 0) {
        cs->bad++;
        return;
    }
    for (int d = 0; d < C_DOTS; d++)
        want += cs->m->click[u][d] != 0;
    cs->bad += n != want;
    for (uint32_t i = 0; i < n; i++) {
        int d = dot_of_index(cs->m, dot_click_dot(clicks[i]));

        cs->bad += d < 0 || cs->m->click[u][d] != dot_click_ts(clicks[i]) + 1;
        cs->bad +=
            i > 0 && dot_click_dot(clicks[i]) <= dot_click_dot(clicks[i - 1]);
    }
}

struct cdays {
    const struct cmodel *m;
    size_t n, bad;
};

static void cdays_visit(uint64_t uid, uint16_t day, void *ctx)
{
    struct cdays *cd = ctx;
    int u = user_of(cd->m, uid);

    cd->n++;
    cd->bad += u < 0 || day == 0 || cd->m->day[u] != day;
}

/* The store against the model, and a copy of it through the loading
 * calls (as the snapshot's). */
static size_t ccheck(struct dot_store *s, const struct cmodel *m)
{
    struct cscan cs = {m, 0, 0};
    struct cdays cd = {m, 0, 0};
    struct dot_store *copy = dot_create();
    uint64_t cursor = 0, id, push;
    size_t bad = dot_audit(s), users = 0, tracked = 0;

    do
        dot_scan(s, &cursor, 7, cscan_visit, &cs);
    while (cursor != 0);
    do
        dot_scan_days(s, &cursor, 5, cdays_visit, &cd);
    while (cursor != 0);
    for (int u = 0; u < C_USERS; u++) {
        bool has = false;

        for (int d = 0; d < C_DOTS; d++)
            has |= m->click[u][d] != 0;
        users += has;
        tracked += m->day[u] != 0;
    }
    bad += cs.bad + (cs.users != users) + (dot_users(s) != users);
    bad += cd.bad + (cd.n != tracked) + (dot_tracked_users(s) != tracked);
    /* The copy: dots in number order, then each user's clicks. */
    for (uint32_t i = 0; i < dot_dots(s); i++) {
        dot_dot_at(s, i, &id, &push);
        bad += dot_put_dot(copy, id, push) != 0;
    }
    for (int u = 0; u < C_USERS; u++) {
        uint64_t clicks[C_DOTS];
        uint32_t n = 0;

        for (uint32_t i = 0; i < dot_dots(s); i++) {
            int d = dot_of_index(m, i);

            if (d >= 0 && m->click[u][d] != 0)
                clicks[n++] = dot_click_make(i, m->click[u][d] - 1);
        }
        if (n > 0)
            bad += dot_put_user(copy, m->uid[u], n, clicks) != 0;
    }
    bad += dot_audit(copy) + (dot_entries(copy) != dot_entries(s));
    /* Same records, same map: the same bytes. */
    bad += dot_bytes(copy) > dot_bytes(s);
    for (int u = 0; u < C_USERS; u++)
        for (int d = 0; d < C_DOTS; d++)
            bad += dot_shown(copy, m->uid[u], m->dot[d]) !=
                   dot_shown(s, m->uid[u], m->dot[d]);
    dot_destroy(copy);
    return bad;
}

static void test_size_classes_vs_model(void)
{
    static struct cmodel m;
    static const uint32_t aims[] = {1,  2,  3,  4,  5,  7,  9,   14,
                                    20, 30, 40, 60, 64, 70, 120, C_DOTS};
    struct dot_store *s = dot_create();
    uint64_t push;
    size_t bad = 0, clicks = 0, checks = 0;
    uint32_t ndots = 0;

    memset(&m, 0, sizeof(m));
    for (int d = 0; d < C_DOTS; d++) {
        m.dot[d] = t_rng();
        m.index[d] = -1;
    }
    for (int u = 0; u < C_USERS; u++) {
        m.uid[u] = t_rng();
        m.aim[u] = aims[u % (sizeof(aims) / sizeof(aims[0]))];
    }
    for (unsigned step = 0; step < 200000; step++) {
        int u = (int)(t_rng() % C_USERS);
        int d = (int)(t_rng() % m.aim[u]);
        uint64_t ts = t_rng() % 1000, r = t_rng() % 1000;

        /* The user's dots are its aim's first ones, shifted per user so
         * that the records differ. */
        d = (int)(((uint32_t)d + (uint32_t)u * 13) % C_DOTS);
        if (r < 3) { /* USER.DEL or expiry */
            uint32_t had = 0;

            for (int k = 0; k < C_DOTS; k++) {
                had += m.click[u][k] != 0;
                m.click[u][k] = 0;
            }
            bad += dot_forget_user(s, m.uid[u]) != had;
            m.day[u] = 0;
            clicks -= had;
        } else if (r < 20) { /* an activity day, or none */
            uint16_t day = (uint16_t)(t_rng() % 4 == 0 ? 0 : 1 + t_rng() % 900);
            bool has = false;

            for (int k = 0; k < C_DOTS; k++)
                has |= m.click[u][k] != 0;
            bad += dot_set_user_day(s, m.uid[u], day) != (has ? 1 : 0);
            if (has)
                m.day[u] = day;
        } else if (r < 60) {
            bad += dot_push(s, m.dot[d], ts, &push) != 0;
            if (m.index[d] < 0)
                m.index[d] = (int32_t)ndots++;
        } else {
            uint16_t day;

            bad += dot_click(s, m.uid[u], m.dot[d], ts) != 0;
            if (m.index[d] < 0)
                m.index[d] = (int32_t)ndots++;
            clicks += m.click[u][d] == 0;
            if (m.click[u][d] < ts + 1)
                m.click[u][d] = ts + 1;
            /* a click keeps the day the user has */
            bad += !dot_user_day(s, m.uid[u], &day) || day != m.day[u];
        }
        if (step % 20000 == 0) {
            bad += ccheck(s, &m);
            checks++;
        }
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(dot_entries(s), clicks);
    CHECK_EQ_U64(ccheck(s, &m), 0);
    CHECK_EQ_U64(checks, 10);
    /* Everyone leaves: the records' chunks go back, only the map and the
     * dot index stay. */
    for (int u = 0; u < C_USERS; u++)
        dot_forget_user(s, m.uid[u]);
    CHECK_EQ_U64(dot_entries(s), 0);
    CHECK_EQ_U64(dot_tracked_users(s), 0);
    CHECK_EQ_U64(dot_audit(s), 0);
    dot_destroy(s);
}

/* A user of every dot there can be: DOT_MAX_DOTS clicks, out of line. */
static void test_user_of_every_dot(void)
{
    struct dot_store *s = dot_create();
    uint64_t push;
    uint16_t day;

    for (uint64_t d = 0; d < DOT_MAX_DOTS; d++)
        CHECK_EQ_U64(dot_click(s, 7, d * 3, d + 10), 0);
    CHECK_EQ_U64(dot_click(s, 8, 6, 1), 0);
    CHECK_EQ_U64(dot_entries(s), DOT_MAX_DOTS + 1);
    CHECK_EQ_U64(dot_set_user_day(s, 7, 300), 1);
    CHECK_EQ_U64(dot_push(s, 3 * 100, 50, &push), 0);
    CHECK(!dot_shown(s, 7, 300)); /* clicked at 110 */
    CHECK_EQ_U64(dot_push(s, 3 * 100, 200, &push), 0);
    CHECK(dot_shown(s, 7, 300));
    CHECK_EQ_U64(dot_user_shown(s, 7, 0), 1);
    CHECK(dot_user_day(s, 7, &day) && day == 300);
    CHECK_EQ_U64(dot_audit(s), 0);
    CHECK_EQ_U64(dot_forget_user(s, 7), DOT_MAX_DOTS);
    CHECK_EQ_U64(dot_tracked_users(s), 0);
    CHECK_EQ_U64(dot_audit(s), 0);
    dot_destroy(s);
}

struct snap {
    size_t entries, users, tracked, dots;
    uint64_t sum; /* of every click, to see any change */
};

static void sum_visit(uint64_t uid, uint32_t n, const uint64_t *clicks,
                      void *ctx)
{
    uint64_t *sum = ctx;

    for (uint32_t i = 0; i < n; i++)
        *sum += (clicks[i] ^ uid) * (i + 1);
}

static struct snap snap_of(const struct dot_store *s)
{
    struct snap sn = {dot_entries(s), dot_users(s), dot_tracked_users(s),
                      dot_dots(s), 0};
    uint64_t cursor = 0;

    do
        dot_scan(s, &cursor, 64, sum_visit, &sn.sum);
    while (cursor != 0);
    return sn;
}

/*
 * Every allocation a click makes fails in turn (mem.h's hook), over a store
 * walked through every path: a new user (its class's first chunk and a new
 * one, the map), a record moving up a class, out of line, growing there,
 * a new dot. A failed click answers DOT_ENOMEM and changes nothing, and
 * leaks nothing: dot_audit holds the byte account to the records, chunks
 * and tables there are (the map and the dot index may keep room they grew
 * on the way, their own business, so the bytes are not compared).
 */
static void test_click_allocation_failures(void)
{
    struct dot_store *s = dot_create();
    size_t bad = 0, points = 0;
    uint64_t push;

    for (uint64_t d = 0; d < 450; d++) /* the rest are new to clicks */
        bad += dot_push(s, d, 500, &push) != 0;

    for (unsigned k = 0; k < 6000; k++) {
        /* users 0..2999 click 1 dot, user 3000+j clicks ~j/10 dots: every
         * class, up to out of line */
        uint64_t uid = k < 3000 ? k : 3000 + (k % 300);
        uint64_t dot = k < 3000 ? k % 7 : k / 300 + (k % 300) * 3;
        struct snap before = snap_of(s);
        int rc;

        for (uint64_t n = 1;; n++) {
            mem_fail_after(n, k % 2 == 0);
            rc = dot_click(s, uid, dot, 1000 + k);
            mem_fail_after(0, false);
            if (rc == 0)
                break;
            struct snap after = snap_of(s);

            points++;
            bad += rc != DOT_ENOMEM ||
                   memcmp(&before, &after, sizeof(before)) != 0;
            bad += dot_audit(s);
        }
        if (k % 500 == 0)
            bad += dot_audit(s);
    }
    CHECK_EQ_U64(bad, 0);
    CHECK(points > 100);
    CHECK_EQ_U64(dot_audit(s), 0);
    dot_destroy(s);
}

/* Days in the tags: a day far from its bucket's others widens the bucket's
 * tags (u32map.h), an allocation; when it fails the user keeps its day. */
static void test_day_allocation_failure(void)
{
    struct dot_store *s = dot_create();
    size_t bad = 0;
    uint16_t day;

    for (uint64_t u = 1; u <= 600; u++) {
        bad += dot_click(s, u, u % 3, 5) != 0;
        bad += dot_set_user_day(s, u, 10) != 1;
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(dot_set_user_day(s, 999, 10), 0); /* no clicks */
    CHECK(!dot_user_day(s, 999, &day));
    mem_fail_after(1, true);
    CHECK_EQ_U64(dot_set_user_day(s, 7, 20000), (uint64_t)-1);
    CHECK_EQ_U64(dot_set_user_day(s, 7, 0), 1); /* never allocates */
    CHECK_EQ_U64(dot_set_user_day(s, 7, 10), 1);
    mem_fail_after(0, false);
    CHECK(dot_user_day(s, 7, &day) && day == 10);
    CHECK_EQ_U64(dot_tracked_users(s), 600);
    CHECK_EQ_U64(dot_audit(s), 0);
    CHECK_EQ_U64(dot_set_user_day(s, 7, 20000), 1);
    CHECK(dot_user_day(s, 7, &day) && day == 20000);
    CHECK_EQ_U64(dot_set_user_day(s, 8, 0), 1);
    CHECK_EQ_U64(dot_tracked_users(s), 599);
    CHECK_EQ_U64(dot_forget_user(s, 7), 1);
    CHECK_EQ_U64(dot_tracked_users(s), 598);
    CHECK_EQ_U64(dot_audit(s), 0);
    dot_destroy(s);
}

int main(void)
{
    T_RUN(test_empty);
    T_RUN(test_show_rule);
    T_RUN(test_times_only_move_forward);
    T_RUN(test_many_dots_per_user);
    T_RUN(test_limits);
    T_RUN(test_user_info_and_del);
    T_RUN(test_random_vs_model);
    T_RUN(test_floor_and_user_count);
    T_RUN(test_size_classes_vs_model);
    T_RUN(test_user_of_every_dot);
    T_RUN(test_click_allocation_failures);
    T_RUN(test_day_allocation_failure);
    T_END();
}
