/*
 * test_dot.c - DOT: the show rule (click < push), monotonic times, several
 * dots per user, the limits (ts range, number of dots), and a long
 * randomized run against a plain array model.
 */
#include "dot.h"
#include "t.h"

#include <stdbool.h>
#include <stdlib.h>

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
    T_END();
}
