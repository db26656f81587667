/*
 * test_bc.c - BC: registration at the head, counting later publishes only,
 * reading, channels independent of each other, the entry and byte counts,
 * and a randomized run against a model of plain arrays.
 */
#include "bc.h"
#include "mem.h"
#include "t.h"

#include <stdbool.h>
#include <string.h>

static uint64_t publish(struct bc_store *s, uint64_t ch)
{
    uint64_t head = 0;

    CHECK_EQ_U64(bc_publish(s, ch, &head), 0);
    return head;
}

/* BC.UNREAD; *registered says whether the user was new to the channel. */
static uint64_t unread(struct bc_store *s, uint64_t uid, uint64_t ch,
                       bool *registered)
{
    uint64_t u = UINT64_MAX;
    bool reg;

    CHECK_EQ_U64(bc_unread(s, uid, ch, &u, &reg), 0);
    if (registered != NULL)
        *registered = reg;
    return u;
}

static void test_new_user_counts_later_publishes(void)
{
    struct bc_store *s = bc_create();
    bool reg = false;

    CHECK(s != NULL);
    CHECK_EQ_U64(publish(s, 1), 1);
    CHECK_EQ_U64(publish(s, 1), 2);
    CHECK_EQ_U64(unread(s, 7, 1, &reg), 0); /* registered at the head */
    CHECK(reg);
    CHECK_EQ_U64(unread(s, 7, 1, &reg), 0);
    CHECK(!reg);
    CHECK_EQ_U64(publish(s, 1), 3);
    CHECK_EQ_U64(publish(s, 1), 4);
    CHECK_EQ_U64(unread(s, 7, 1, &reg), 2);
    CHECK(!reg);
    /* Another user arriving now starts from here. */
    CHECK_EQ_U64(unread(s, 8, 1, &reg), 0);
    CHECK(reg);
    CHECK_EQ_U64(bc_entries(s), 2);
    CHECK_EQ_U64(bc_audit(s), 0);
    bc_destroy(s);
    bc_destroy(NULL);
}

static void test_read_resets(void)
{
    struct bc_store *s = bc_create();

    unread(s, 7, 1, NULL);
    publish(s, 1);
    publish(s, 1);
    CHECK_EQ_U64(unread(s, 7, 1, NULL), 2);
    CHECK_EQ_U64(bc_read(s, 7, 1), 0);
    CHECK_EQ_U64(unread(s, 7, 1, NULL), 0);
    publish(s, 1);
    CHECK_EQ_U64(unread(s, 7, 1, NULL), 1);
    /* READ registers a new user too. */
    CHECK_EQ_U64(bc_read(s, 9, 1), 0);
    CHECK_EQ_U64(bc_entries(s), 2);
    publish(s, 1);
    CHECK_EQ_U64(unread(s, 9, 1, NULL), 1);
    CHECK_EQ_U64(bc_audit(s), 0);
    bc_destroy(s);
}

static void test_channels_are_independent(void)
{
    struct bc_store *s = bc_create();
    size_t empty = bc_bytes(s);

    /* A channel nobody published to: registered at 0, the first publish
     * counts. */
    CHECK_EQ_U64(unread(s, 7, 2, NULL), 0);
    CHECK_EQ_U64(publish(s, 2), 1);
    CHECK_EQ_U64(unread(s, 7, 2, NULL), 1);
    CHECK_EQ_U64(publish(s, 3), 1);
    CHECK_EQ_U64(publish(s, UINT64_MAX), 1);
    CHECK_EQ_U64(publish(s, 0), 1);
    CHECK_EQ_U64(unread(s, 7, 2, NULL), 1);
    CHECK_EQ_U64(unread(s, 7, 3, NULL), 0);
    publish(s, 3);
    CHECK_EQ_U64(unread(s, 7, 3, NULL), 1);
    CHECK_EQ_U64(unread(s, 7, 2, NULL), 1);
    bc_read(s, 7, 3);
    CHECK_EQ_U64(unread(s, 7, 2, NULL), 1);
    CHECK_EQ_U64(unread(s, UINT64_MAX, 0, NULL), 0);
    CHECK_EQ_U64(bc_entries(s), 3);
    CHECK(bc_bytes(s) > empty);
    CHECK_EQ_U64(bc_audit(s), 0);
    bc_destroy(s);
}

/* Many users in one channel: the tables grow through their splits, and
 * the store's running counts match. */
static void test_many_users(void)
{
    struct bc_store *s = bc_create();
    size_t bad = 0;

    for (uint64_t u = 0; u < 100000; u++) {
        bool reg;
        uint64_t v;

        bad += bc_unread(s, u * 0x9e3779b97f4a7c15ULL, 5, &v, &reg) != 0;
        bad += !reg || v != 0;
        if (u % 1000 == 0)
            publish(s, 5);
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(bc_entries(s), 100000);
    CHECK_EQ_U64(unread(s, 0, 5, NULL), 100);
    CHECK_EQ_U64(unread(s, 99999 * 0x9e3779b97f4a7c15ULL, 5, NULL), 0);
    /* One channel per user: within the 16-byte goal. */
    CHECK(bc_bytes(s) < 16 * bc_entries(s));
    CHECK_EQ_U64(bc_audit(s), 0);
    bc_destroy(s);
}

/* Loading refuses what cannot be a channel or an offset. */
static void test_restore(void)
{
    struct bc_store *s = bc_create();

    CHECK_EQ_U64(bc_restore_channel(s, 5, 10), 0);
    CHECK_EQ_U64(bc_restore_channel(s, 5, 10), 1);
    CHECK_EQ_U64(bc_restore_channel(s, 6, 0), 0);
    CHECK_EQ_U64(bc_restore_user(s, 5, 1, 4), 0);
    CHECK_EQ_U64(bc_restore_user(s, 5, 1, 4), 1);  /* twice */
    CHECK_EQ_U64(bc_restore_user(s, 7, 1, 0), 1);  /* no channel */
    CHECK_EQ_U64(bc_restore_user(s, 5, 2, 11), 1); /* over the head */
    CHECK_EQ_U64(bc_restore_user(s, 5, 2, 10), 0);
    CHECK_EQ_U64(bc_entries(s), 2);
    CHECK_EQ_U64(unread(s, 1, 5, NULL), 4);
    CHECK_EQ_U64(unread(s, 2, 5, NULL), 10);
    CHECK_EQ_U64(publish(s, 5), 11);
    CHECK_EQ_U64(unread(s, 1, 5, NULL), 5);
    CHECK_EQ_U64(bc_audit(s), 0);
    bc_destroy(s);
}

/* ---- randomized, against plain arrays ------------------------------- */

#define M_CHANS 5
#define M_USERS 40

static void test_random_vs_model(void)
{
    struct bc_store *s = bc_create();
    uint64_t head[M_CHANS], off[M_USERS][M_CHANS], chs[M_CHANS], uids[M_USERS];
    bool known[M_USERS][M_CHANS];
    size_t bad = 0, entries = 0;

    memset(head, 0, sizeof(head));
    memset(known, 0, sizeof(known));
    for (unsigned c = 0; c < M_CHANS; c++)
        chs[c] = t_rng();
    for (unsigned u = 0; u < M_USERS; u++)
        uids[u] = t_rng();
    for (int round = 0; round < 50000; round++) {
        unsigned c = (unsigned)(t_rng() % M_CHANS);
        unsigned u = (unsigned)(t_rng() % M_USERS);
        unsigned op = (unsigned)(t_rng() % 10);
        uint64_t got = 0;
        bool reg;

        if (op < 3) {
            bad += bc_publish(s, chs[c], &got) != 0;
            bad += got != ++head[c];
        } else if (op < 8) {
            bad += bc_unread(s, uids[u], chs[c], &got, &reg) != 0;
            bad += reg != !known[u][c];
            if (!known[u][c]) {
                known[u][c] = true;
                off[u][c] = head[c];
                entries++;
            }
            bad += got != head[c] - off[u][c];
        } else if (op < 9) {
            bad += bc_read(s, uids[u], chs[c]) != 0;
            entries += !known[u][c];
            known[u][c] = true;
            off[u][c] = head[c];
        } else if (t_rng() % 16 == 0) { /* expiry or USER.DEL of the user */
            size_t had = 0;

            for (unsigned k = 0; k < M_CHANS; k++) {
                had += known[u][k];
                known[u][k] = false;
            }
            bad += bc_forget_user(s, uids[u]) != had;
            entries -= had;
        }
        if (round % 5000 == 0)
            bad += bc_audit(s);
    }
    bad += bc_entries(s) != entries;
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(bc_audit(s), 0);
    bc_destroy(s);
}

struct chans {
    size_t n;
    uint64_t unread;
};

static void user_visit(uint64_t ch, uint64_t head, uint64_t u, void *ctx)
{
    struct chans *c = ctx;

    (void)ch, (void)head;
    c->n++;
    c->unread += u;
}

/* USER.INFO's view of a user, and forgetting it: it reads as new (is
 * registered at the head again), other users keep their offsets. */
static void test_user_info_and_del(void)
{
    struct bc_store *s = bc_create();
    struct chans c = {0, 0};
    bool reg;

    publish(s, 1);
    unread(s, 7, 1, NULL);
    unread(s, 8, 1, NULL);
    unread(s, 7, 2, NULL);
    publish(s, 1);
    publish(s, 2);
    publish(s, 3); /* a channel user 7 never asked about */
    CHECK_EQ_U64(bc_user_info(s, 7, user_visit, &c), 2);
    CHECK_EQ_U64(c.n, 2);
    CHECK_EQ_U64(c.unread, 2);
    CHECK_EQ_U64(bc_forget_user(s, 7), 2);
    CHECK_EQ_U64(bc_forget_user(s, 7), 0);
    CHECK_EQ_U64(bc_entries(s), 1);
    CHECK_EQ_U64(unread(s, 7, 1, &reg), 0);
    CHECK(reg);
    CHECK_EQ_U64(unread(s, 8, 1, &reg), 1);
    CHECK_EQ_U64(bc_audit(s), 0);
    bc_destroy(s);
}

/* BC.READ uid ch upto: forward only, never past the head; a new user is
 * registered at the head first. bc_user_unread sums the channels the user
 * is in without registering it anywhere. */
static void test_read_upto_and_user_sum(void)
{
    struct bc_store *s = bc_create();
    uint64_t head, u;
    bool reg;

    CHECK_EQ_U64(bc_unread(s, 1, 10, &u, &reg), 0); /* registered at 0 */
    for (int i = 0; i < 5; i++)
        CHECK_EQ_U64(bc_publish(s, 10, &head), 0);
    CHECK_EQ_U64(bc_read_upto(s, 1, 10, 2, &u), 0);
    CHECK_EQ_U64(u, 3);
    CHECK_EQ_U64(bc_read_upto(s, 1, 10, 1, &u), 0); /* never back */
    CHECK_EQ_U64(u, 3);
    CHECK_EQ_U64(bc_read_upto(s, 1, 10, 99, &u), 0); /* not past the head */
    CHECK_EQ_U64(u, 0);
    CHECK_EQ_U64(bc_publish(s, 10, &head), 0);
    CHECK_EQ_U64(bc_unread(s, 1, 10, &u, &reg), 0);
    CHECK_EQ_U64(u, 1);
    CHECK_EQ_U64(bc_read_upto(s, 2, 10, 3, &u), 0); /* new: at the head */
    CHECK_EQ_U64(u, 0);
    CHECK_EQ_U64(bc_unread(s, 2, 10, &u, &reg), 0);
    CHECK(!reg);
    CHECK_EQ_U64(bc_unread(s, 1, 20, &u, &reg), 0);
    for (int i = 0; i < 4; i++)
        CHECK_EQ_U64(bc_publish(s, 20, &head), 0);
    CHECK_EQ_U64(bc_user_unread(s, 1, 100), 5);
    CHECK(bc_user_unread(s, 1, 2) > 2);
    CHECK_EQ_U64(bc_user_unread(s, 3, 100), 0);
    CHECK_EQ_U64(bc_entries(s), 3); /* user 3 was not registered */
    CHECK_EQ_U64(bc_audit(s), 0);
    bc_destroy(s);
}

static void day_visit(uint64_t uid, uint16_t day, void *ctx)
{
    uint64_t *seen = ctx;

    seen[uid] += day;
}

/* Days of activity kept in the entries: one day per user across its
 * channels, a new entry taking it, the count of users with one, a walk
 * that reports each user once, forgetting. */
static void test_user_days(void)
{
    struct bc_store *s = bc_create();
    struct bc_day_cursor cur = {0, 0, false};
    uint64_t u, seen[8] = {0};
    uint16_t day = 9;
    bool reg;

    CHECK(!bc_user_day(s, 1, &day));
    CHECK(!bc_set_user_day(s, 1, 5)); /* in no channel */
    CHECK_EQ_U64(bc_tracked_users(s), 0);
    CHECK_EQ_U64(bc_unread(s, 1, 10, &u, &reg), 0);
    CHECK(bc_user_day(s, 1, &day));
    CHECK_EQ_U64(day, 0);
    CHECK(bc_set_user_day(s, 1, 300));
    CHECK_EQ_U64(bc_tracked_users(s), 1);
    CHECK_EQ_U64(bc_read(s, 1, 20), 0); /* a second channel: same day */
    CHECK_EQ_U64(bc_unread(s, 2, 30, &u, &reg), 0);
    CHECK_EQ_U64(bc_unread(s, 3, 20, &u, &reg), 0);
    CHECK(bc_set_user_day(s, 3, 7));
    CHECK(bc_set_user_day(s, 3, 8));
    CHECK_EQ_U64(bc_tracked_users(s), 2);
    CHECK_EQ_U64(bc_audit(s), 0);
    /* Past the remembered entry: a lookup in each channel. */
    CHECK(bc_user_day(s, 1, &day));
    CHECK_EQ_U64(day, 300);
    CHECK(bc_user_day(s, 2, &day));
    CHECK_EQ_U64(day, 0);
    do
        bc_scan_days(s, &cur, 1, day_visit, seen);
    while (!cur.done);
    CHECK_EQ_U64(seen[1], 300); /* once, not once per channel */
    CHECK_EQ_U64(seen[2], 0);
    CHECK_EQ_U64(seen[3], 8);
    CHECK(bc_set_user_day(s, 1, 0));
    CHECK_EQ_U64(bc_tracked_users(s), 1);
    CHECK_EQ_U64(bc_forget_user(s, 3), 1);
    CHECK_EQ_U64(bc_tracked_users(s), 0);
    CHECK(!bc_user_day(s, 3, &day));
    CHECK_EQ_U64(bc_audit(s), 0);
    bc_destroy(s);
}

/* The filter of users behind bc_user_day: rebuilt larger as users come
 * (several times here), it never answers "absent" for a user in a
 * channel, forgets the users gone at its rebuilds and starts again when
 * the store empties. */
static void test_user_filter(void)
{
    struct bc_store *s = bc_create();
    size_t bad = 0, found = 0;
    uint16_t day;
    uint64_t u;
    bool reg;

    for (uint64_t i = 1; i <= 60000; i++) {
        bad += bc_unread(s, i * 7919, 1 + i % 3, &u, &reg) != 0;
        if (i % 5 == 0)
            bad += bc_read(s, i * 7919, 9) != 0;
        if (i % 7 == 0)
            bad += bc_forget_user(s, (i - 3) * 7919) == 0 && (i - 3) % 7 != 0;
    }
    CHECK_EQ_U64(bad, 0);
    for (uint64_t i = 1; i <= 60000; i++) {
        bool in = bc_user_day(s, i * 7919, &day);

        bad += in != ((i + 3) % 7 != 0 || i > 59997);
        found += bc_user_day(s, i * 7919 + 1, &day);
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(found, 0);
    CHECK_EQ_U64(bc_audit(s), 0);
    for (uint64_t i = 1; i <= 60000; i++)
        bc_forget_user(s, i * 7919);
    CHECK_EQ_U64(bc_entries(s), 0);
    CHECK(!bc_user_day(s, 7919, &day));
    CHECK_EQ_U64(bc_audit(s), 0);
    bc_destroy(s);
}

/* Each allocation of a first registration failing in turn: the command
 * fails and changes nothing, or succeeds; a filter that could not be made
 * is rebuilt at later registrations, and no user is ever reported absent. */
static void test_user_filter_alloc_failures(void)
{
    struct bc_store *first = bc_create();
    uint64_t points = mem_allocs(), u0;
    bool reg0;

    CHECK_EQ_U64(bc_unread(first, 1, 1, &u0, &reg0), 0);
    points = mem_allocs() - points; /* the filter's first among them */
    bc_destroy(first);
    CHECK(points >= 4);
    for (uint64_t n = 1; n <= points; n++) {
        struct bc_store *s = bc_create();
        size_t bad = 0;
        uint16_t day;
        uint64_t u;
        bool reg;
        int rc;

        mem_fail_after(n, false);
        rc = bc_unread(s, 1, 1, &u, &reg);
        mem_fail_after(0, false);
        bad += rc == 0 ? !bc_user_day(s, 1, &day) : bc_entries(s) != 0;
        for (uint64_t i = 2; i < 3000; i++)
            bad += bc_unread(s, i, 1 + i % 2, &u, &reg) != 0;
        for (uint64_t i = 2; i < 3000; i++)
            bad += !bc_user_day(s, i, &day);
        CHECK_EQ_U64(bad, 0);
        CHECK_EQ_U64(bc_audit(s), 0);
        bc_destroy(s);
    }
}

/*
 * Days far apart (a user back after a year beside today's users): a day
 * outside its bucket's window of 1-byte days makes the bucket's days 2
 * bytes. That can fail to allocate: each allocation failing in turn, the
 * user's day is then unchanged in every channel (the channels already
 * set get the old day back), else set in all; day 0 and the day the user
 * has never fail.
 */
static void test_day_spread_failures(void)
{
    struct bc_store *s = bc_create();
    uint64_t u, points = 0, failed = 0;
    uint16_t day;
    bool reg;
    size_t bad = 0;
    int rc;

    for (uint64_t i = 1; i <= 3000; i++) {
        for (uint64_t ch = 1; ch <= 3; ch++)
            bad += bc_unread(s, i, ch, &u, &reg) != 0;
        bad += bc_set_user_day(s, i, 20000) != 1;
    }
    CHECK_EQ_U64(bad, 0);
    for (uint64_t n = 1;; n++) {
        uint64_t uid = 1 + n * 37 % 3000;
        uint64_t a0 = mem_allocs();

        mem_fail_after(n, false);
        rc = bc_set_user_day(s, uid, 19000);
        mem_fail_after(0, false);
        bad += !bc_user_day(s, uid, &day);
        bad += rc == 1 ? day != 19000 : rc != -1 || day != 20000;
        CHECK_EQ_U64(bc_audit(s), 0);
        /* back to today: fits whatever the buckets became */
        mem_fail_after(1, true);
        bad += bc_set_user_day(s, uid, 20000) != 1;
        bad += bc_set_user_day(s, uid, 20000) != 1;
        bad += bc_set_user_day(s, uid, 0) != 1;
        bad += bc_set_user_day(s, uid, 20000) != 1;
        mem_fail_after(0, false);
        points = mem_allocs() - a0;
        failed += rc == -1;
        if (rc == 1)
            break;
    }
    CHECK_EQ_U64(bad, 0);
    CHECK(points >= 3); /* a widening in each of the 3 channels */
    CHECK(failed >= 3);
    CHECK_EQ_U64(bc_tracked_users(s), 3000);
    CHECK_EQ_U64(bc_audit(s), 0);
    /* a new channel of an old user takes its day, 2 bytes or not */
    bad += bc_set_user_day(s, 5, 100) != 1;
    bad += bc_read(s, 5, 4) != 0;
    bad += !bc_user_day(s, 5, &day) || day != 100;
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(bc_audit(s), 0);
    bc_destroy(s);
}

int main(void)
{
    T_RUN(test_day_spread_failures);
    T_RUN(test_user_filter_alloc_failures);
    T_RUN(test_user_filter);
    T_RUN(test_user_days);
    T_RUN(test_new_user_counts_later_publishes);
    T_RUN(test_read_resets);
    T_RUN(test_channels_are_independent);
    T_RUN(test_many_users);
    T_RUN(test_restore);
    T_RUN(test_user_info_and_del);
    T_RUN(test_random_vs_model);
    T_RUN(test_read_upto_and_user_sum);
    T_END();
}
