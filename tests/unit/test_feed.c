/*
 * test_feed.c - FEED: follow from the current count, unfollow, reset,
 * unposts that floor and never make unread negative, the cap, the follow
 * limit, saturation, many authors and followees, and a long randomized run
 * against a plain array model.
 */
#include "feed.h"
#include "t.h"

#include <stdbool.h>
#include <stdlib.h>

#define NO_CAP UINT64_MAX /* feed_unread without a cap: the exact sum */

static uint32_t post(struct feed_store *s, uint64_t author, uint64_t n)
{
    uint32_t count = 0;

    CHECK_EQ_U64(feed_post(s, author, n, &count), 0);
    return count;
}

static void test_empty(void)
{
    struct feed_store *s = feed_create();

    CHECK(s != NULL);
    CHECK_EQ_U64(feed_unread(s, 1, NO_CAP), 0);
    CHECK(!feed_unfollow(s, 1, 2));
    feed_reset(s, 1);
    CHECK_EQ_U64(feed_unpost(s, 2, 5), 0);
    /* An unpost of an unknown author does not create it. */
    CHECK_EQ_U64(feed_authors(s), 0);
    CHECK_EQ_U64(feed_entries(s), 0);
    CHECK_EQ_U64(feed_users(s), 0);
    CHECK_EQ_U64(feed_audit(s), 0);
    feed_destroy(s);
    feed_destroy(NULL);
}

static void test_follow_takes_current_count(void)
{
    struct feed_store *s = feed_create();

    CHECK_EQ_U64(post(s, 100, 1), 1);
    CHECK_EQ_U64(post(s, 100, 4), 5);
    CHECK_EQ_U64(post(s, 200, 0), 0);
    /* No retroactive unread: the 5 earlier posts do not count. */
    CHECK_EQ_U64(feed_follow(s, 1, 100, 10), 1);
    CHECK_EQ_U64(feed_unread(s, 1, NO_CAP), 0);
    CHECK_EQ_U64(post(s, 100, 2), 7);
    CHECK_EQ_U64(feed_unread(s, 1, NO_CAP), 2);
    /* Following again keeps the old snapshot. */
    CHECK_EQ_U64(feed_follow(s, 1, 100, 10), 0);
    CHECK_EQ_U64(feed_unread(s, 1, NO_CAP), 2);
    /* A second followee, then a third never seen before. */
    CHECK_EQ_U64(feed_follow(s, 1, 200, 10), 1);
    CHECK_EQ_U64(feed_follow(s, 1, 300, 10), 1);
    CHECK_EQ_U64(post(s, 200, 3), 3);
    CHECK_EQ_U64(post(s, 300, 1), 1);
    CHECK_EQ_U64(post(s, 400, 9), 9); /* not followed */
    CHECK_EQ_U64(feed_unread(s, 1, NO_CAP), 6);
    CHECK_EQ_U64(feed_unread(s, 2, NO_CAP), 0); /* follows nobody */
    /* Reset: everything seen. */
    feed_reset(s, 1);
    CHECK_EQ_U64(feed_unread(s, 1, NO_CAP), 0);
    CHECK_EQ_U64(post(s, 300, 1), 2);
    CHECK_EQ_U64(feed_unread(s, 1, NO_CAP), 1);
    /* Unfollow: that author's posts stop counting. */
    CHECK(feed_unfollow(s, 1, 300));
    CHECK(!feed_unfollow(s, 1, 300));
    CHECK(!feed_unfollow(s, 1, 400));
    CHECK_EQ_U64(feed_unread(s, 1, NO_CAP), 0);
    CHECK_EQ_U64(feed_entries(s), 2);
    CHECK_EQ_U64(feed_authors(s), 4);
    CHECK_EQ_U64(feed_audit(s), 0);
    feed_destroy(s);
}

static void test_unpost_never_negative(void)
{
    struct feed_store *s = feed_create();

    post(s, 1, 10);
    post(s, 2, 10);
    CHECK_EQ_U64(feed_follow(s, 9, 1, 10), 1);
    CHECK_EQ_U64(feed_follow(s, 9, 2, 10), 1);
    post(s, 2, 4);
    CHECK_EQ_U64(feed_unread(s, 9, NO_CAP), 4);
    /* Author 1 deletes posts the user had seen: its term is 0, and it
     * takes nothing away from author 2's. */
    CHECK_EQ_U64(feed_unpost(s, 1, 3), 7);
    CHECK_EQ_U64(feed_unread(s, 9, NO_CAP), 4);
    /* Its next posts fill the gap before they count. */
    post(s, 1, 3);
    CHECK_EQ_U64(feed_unread(s, 9, NO_CAP), 4);
    post(s, 1, 1);
    CHECK_EQ_U64(feed_unread(s, 9, NO_CAP), 5);
    /* Unposts floor at 0. */
    CHECK_EQ_U64(feed_unpost(s, 2, 1000), 0);
    CHECK_EQ_U64(feed_unpost(s, 2, 1), 0);
    CHECK_EQ_U64(feed_unread(s, 9, NO_CAP), 1);
    /* An unpost of unread posts lowers unread. */
    CHECK_EQ_U64(feed_unpost(s, 1, 1), 10);
    CHECK_EQ_U64(feed_unread(s, 9, NO_CAP), 0);
    CHECK_EQ_U64(feed_audit(s), 0);
    feed_destroy(s);
}

static void test_cap(void)
{
    struct feed_store *s = feed_create();

    for (uint64_t a = 1; a <= 300; a++)
        CHECK_EQ_U64(feed_follow(s, 5, a, 5000), 1);
    for (uint64_t a = 1; a <= 99; a++)
        post(s, a, 1);
    /* Exact up to the cap... */
    CHECK_EQ_U64(feed_unread(s, 5, 99), 99);
    CHECK_EQ_U64(feed_unread(s, 5, 98), 99);
    CHECK_EQ_U64(feed_unread(s, 5, 0), 1);
    /* ... cap + 1 beyond it, however far beyond. */
    post(s, 300, 1);
    CHECK_EQ_U64(feed_unread(s, 5, 99), 100);
    CHECK_EQ_U64(feed_unread(s, 5, NO_CAP), 100);
    post(s, 150, 1u << 30);
    CHECK_EQ_U64(feed_unread(s, 5, 99), 100);
    CHECK_EQ_U64(feed_unread(s, 5, 1000000), 1000001);
    CHECK_EQ_U64(feed_unread(s, 5, NO_CAP), 100 + (1u << 30));
    feed_destroy(s);
}

static void test_follow_limit(void)
{
    struct feed_store *s = feed_create();

    for (uint64_t a = 1; a <= 3; a++)
        CHECK_EQ_U64(feed_follow(s, 1, a, 3), 1);
    CHECK_EQ_U64(feed_follow(s, 1, 4, 3), FEED_ELIMIT);
    /* A refused follow creates nothing, and re-following is still fine. */
    CHECK_EQ_U64(feed_authors(s), 3);
    CHECK_EQ_U64(feed_entries(s), 3);
    CHECK_EQ_U64(feed_follow(s, 1, 2, 3), 0);
    /* The limit is per user, and taken from the caller each time. */
    CHECK_EQ_U64(feed_follow(s, 2, 4, 3), 1);
    CHECK_EQ_U64(feed_follow(s, 1, 4, 4), 1);
    CHECK_EQ_U64(feed_follow(s, 1, 5, 2), FEED_ELIMIT);
    CHECK(feed_unfollow(s, 1, 1));
    CHECK(feed_unfollow(s, 1, 2));
    CHECK(feed_unfollow(s, 1, 3));
    CHECK_EQ_U64(feed_follow(s, 1, 5, 2), 1);
    CHECK_EQ_U64(feed_follow(s, 1, 6, 0), FEED_ELIMIT);
    CHECK_EQ_U64(feed_audit(s), 0);
    feed_destroy(s);
}

static void test_saturation(void)
{
    struct feed_store *s = feed_create();

    CHECK_EQ_U64(post(s, 1, FEED_COUNT_MAX - 1), FEED_COUNT_MAX - 1);
    CHECK_EQ_U64(post(s, 1, 5), FEED_COUNT_MAX);
    CHECK_EQ_U64(post(s, 1, UINT64_MAX), FEED_COUNT_MAX);
    CHECK_EQ_U64(feed_follow(s, 2, 3, 10), 1);
    CHECK_EQ_U64(post(s, 3, UINT64_MAX), FEED_COUNT_MAX);
    CHECK_EQ_U64(feed_follow(s, 2, 4, 10), 1);
    CHECK_EQ_U64(post(s, 4, FEED_COUNT_MAX), FEED_COUNT_MAX);
    /* Two saturated terms: the sum does not wrap. */
    CHECK_EQ_U64(feed_unread(s, 2, NO_CAP), 2 * (uint64_t)FEED_COUNT_MAX);
    CHECK_EQ_U64(feed_unpost(s, 1, UINT64_MAX), 0);
    feed_destroy(s);
}

/* Thousands of authors (several denseid chunks) and followees per user
 * (long records), in random orders. */
static void test_many(void)
{
    struct feed_store *s = feed_create();
    static uint64_t authors[10000];
    uint64_t want = 0;

    for (unsigned i = 0; i < 10000; i++) {
        authors[i] = t_rng();
        post(s, authors[i], i % 7);
    }
    for (unsigned k = 0; k < 2000; k++)
        CHECK_EQ_U64(feed_follow(s, 77, authors[(k * 7919) % 10000], 5000), 1);
    for (unsigned k = 0; k < 2000; k++) {
        unsigned i = (k * 7919) % 10000;

        post(s, authors[i], i % 3);
        want += i % 3;
    }
    CHECK_EQ_U64(feed_unread(s, 77, NO_CAP), want);
    CHECK_EQ_U64(feed_entries(s), 2000);
    CHECK_EQ_U64(feed_authors(s), 10000);
    CHECK_EQ_U64(feed_audit(s), 0);
    for (unsigned k = 0; k < 2000; k += 2)
        CHECK(feed_unfollow(s, 77, authors[(k * 7919) % 10000]));
    CHECK_EQ_U64(feed_entries(s), 1000);
    CHECK_EQ_U64(feed_audit(s), 0);
    feed_destroy(s);
}

/*
 * The model: count[a], and per (user, author) a follow flag and snapshot.
 * Few authors and users, so that follows, unfollows, posts and unposts
 * keep colliding; caps from 0 to none.
 */
#define M_USERS 24
#define M_AUTHORS 40
#define M_MAX 12 /* feed-max-follows of the run */

struct model {
    uint32_t count[M_AUTHORS];
    bool follows[M_USERS][M_AUTHORS];
    uint32_t snap[M_USERS][M_AUTHORS];
    size_t edges;
};

static uint64_t model_unread(const struct model *m, unsigned u, uint64_t cap)
{
    uint64_t sum = 0;

    for (unsigned a = 0; a < M_AUTHORS; a++)
        if (m->follows[u][a] && m->count[a] > m->snap[u][a])
            sum += m->count[a] - m->snap[u][a];
    return sum > cap ? cap + 1 : sum;
}

static unsigned model_follows(const struct model *m, unsigned u)
{
    unsigned n = 0;

    for (unsigned a = 0; a < M_AUTHORS; a++)
        n += m->follows[u][a];
    return n;
}

/* One random operation on both; the number of disagreements. */
static size_t random_op(struct feed_store *s, struct model *m,
                        const uint64_t *uids, const uint64_t *authors,
                        bool *known)
{
    unsigned u = (unsigned)(t_rng() % M_USERS);
    /* User u picks among the first 1 + 2u authors only, so that the lists
     * of low users keep passing through 0, 1 and 2 entries. */
    unsigned a =
        (unsigned)(t_rng() % (u < M_AUTHORS / 2 ? 1 + 2 * u : M_AUTHORS));
    uint64_t r = t_rng() % 100, n = t_rng() % 4 ? t_rng() % 4 : t_rng() % 100;
    uint32_t count;
    int rc;

    if (r < 25) {
        if (feed_post(s, authors[a], n, &count) != 0)
            return 1;
        known[a] = true;
        m->count[a] += (uint32_t)n;
        return count != m->count[a];
    }
    if (r < 35) {
        m->count[a] = n >= m->count[a] ? 0 : m->count[a] - (uint32_t)n;
        return feed_unpost(s, authors[a], n) != m->count[a];
    }
    if (r < 55) {
        rc = feed_follow(s, uids[u], authors[a], M_MAX);
        if (m->follows[u][a])
            return rc != 0;
        if (model_follows(m, u) >= M_MAX)
            return rc != FEED_ELIMIT;
        known[a] = true;
        m->follows[u][a] = true;
        m->snap[u][a] = m->count[a];
        m->edges++;
        return rc != 1;
    }
    if (r < 65) {
        bool was = m->follows[u][a];

        m->follows[u][a] = false;
        m->edges -= was;
        return feed_unfollow(s, uids[u], authors[a]) != was;
    }
    if (r < 70) {
        feed_reset(s, uids[u]);
        for (unsigned i = 0; i < M_AUTHORS; i++)
            m->snap[u][i] = m->count[i];
        return 0;
    }
    uint64_t cap = r < 85 ? t_rng() % 30 : NO_CAP;
    return feed_unread(s, uids[u], cap) != model_unread(m, u, cap);
}

static void test_random_vs_model(void)
{
    static struct model m;
    uint64_t uids[M_USERS], authors[M_AUTHORS];
    bool known[M_AUTHORS] = {false};
    struct feed_store *s = feed_create();
    size_t bad = 0, nknown = 0;

    for (unsigned i = 0; i < M_USERS; i++)
        uids[i] = i < 2 ? i * UINT64_MAX : t_rng();
    for (unsigned i = 0; i < M_AUTHORS; i++)
        authors[i] = i < 2 ? i * UINT64_MAX : t_rng();
    for (unsigned step = 0; step < 300000; step++) {
        bad += random_op(s, &m, uids, authors, known);
        if (step % 50000 == 0)
            bad += feed_audit(s);
    }
    CHECK_EQ_U64(bad, 0);
    for (unsigned u = 0; u < M_USERS; u++)
        bad += feed_unread(s, uids[u], NO_CAP) != model_unread(&m, u, NO_CAP);
    for (unsigned a = 0; a < M_AUTHORS; a++)
        nknown += known[a];
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(feed_entries(s), m.edges);
    CHECK_EQ_U64(feed_authors(s), nknown);
    CHECK_EQ_U64(feed_audit(s), 0);
    feed_destroy(s);
}

struct follows {
    unsigned n;
    uint64_t fresh; /* sum of count - snapshot */
};

static void user_visit(uint64_t author, uint32_t count, uint32_t snapshot,
                       void *ctx)
{
    struct follows *f = ctx;

    (void)author;
    f->n++;
    f->fresh += count - snapshot;
}

/* USER.INFO's view of a user adds up to FEED.UNREAD; forgetting the user
 * drops its follows, not the authors' counts nor other users' follows. */
static void test_user_info_and_del(void)
{
    struct feed_store *s = feed_create();
    struct follows f = {0, 0};

    post(s, 10, 4);
    for (uint64_t a = 10; a < 13; a++) {
        CHECK_EQ_U64(feed_follow(s, 1, a, 100), 1);
        CHECK_EQ_U64(feed_follow(s, 2, a, 100), 1);
    }
    post(s, 10, 2);
    post(s, 12, 5);
    CHECK_EQ_U64(feed_user_info(s, 1, user_visit, &f), 3);
    CHECK_EQ_U64(f.n, 3);
    CHECK_EQ_U64(f.fresh, 7);
    CHECK_EQ_U64(feed_unread(s, 1, NO_CAP), 7);
    CHECK_EQ_U64(feed_forget_user(s, 1), 3);
    CHECK_EQ_U64(feed_forget_user(s, 1), 0);
    CHECK_EQ_U64(feed_unread(s, 1, NO_CAP), 0);
    CHECK_EQ_U64(feed_unread(s, 2, NO_CAP), 7);
    CHECK_EQ_U64(feed_entries(s), 3);
    CHECK_EQ_U64(feed_authors(s), 3);
    /* A forgotten user follows afresh: earlier posts are not new. */
    CHECK_EQ_U64(feed_follow(s, 1, 10, 100), 1);
    CHECK_EQ_U64(feed_unread(s, 1, NO_CAP), 0);
    CHECK_EQ_U64(feed_audit(s), 0);
    feed_destroy(s);
}

/* FEED.FOLLOW with many authors: each from its current count, repeats and
 * followees once; past max_follows nothing changes. */
static void test_follow_many(void)
{
    struct feed_store *s = feed_create();
    uint64_t authors[] = {1, 2, 1, 3};
    uint32_t count;

    CHECK_EQ_U64(feed_post(s, 1, 5, &count), 0);
    CHECK_EQ_U64(feed_follow(s, 9, 2, 10), 1);
    CHECK_EQ_U64(feed_post(s, 2, 4, &count), 0);
    CHECK_EQ_U64(feed_follow_many(s, 9, authors, 4, 2), FEED_ELIMIT);
    CHECK(!feed_follows(s, 9, 1));
    CHECK_EQ_U64(feed_follow_many(s, 9, authors, 4, 3), 2);
    CHECK(feed_follows(s, 9, 1) && feed_follows(s, 9, 3));
    CHECK_EQ_U64(feed_unread(s, 9, 100), 4); /* author 2's posts only */
    CHECK_EQ_U64(feed_follow_many(s, 9, authors, 4, 3), 0);
    CHECK_EQ_U64(feed_entries(s), 3);
    CHECK_EQ_U64(feed_audit(s), 0);
    feed_destroy(s);
}

int main(void)
{
    T_RUN(test_empty);
    T_RUN(test_follow_takes_current_count);
    T_RUN(test_unpost_never_negative);
    T_RUN(test_cap);
    T_RUN(test_follow_limit);
    T_RUN(test_saturation);
    T_RUN(test_many);
    T_RUN(test_user_info_and_del);
    T_RUN(test_random_vs_model);
    T_RUN(test_follow_many);
    T_END();
}
