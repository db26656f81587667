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
 * Two shapes: few authors and users, so that follows, unfollows, posts
 * and unposts keep colliding and lists pass through 0, 1 and 2 followees;
 * and hundreds of followees per user (lists of many blocks that split,
 * merge, widen and narrow), with bulk follows. Caps from 0 to none.
 */
struct model {
    unsigned users, authors, max; /* max: feed-max-follows of the run */
    uint32_t *count;              /* [authors] */
    bool *follows;                /* [users * authors] */
    uint32_t *snap;               /* [users * authors] */
    uint64_t *uids, *ids;         /* [users], [authors] */
    bool *known;                  /* [authors] */
    size_t edges;
};

static void model_init(struct model *m, unsigned users, unsigned authors,
                       unsigned max)
{
    m->users = users;
    m->authors = authors;
    m->max = max;
    m->count = calloc(authors, sizeof(*m->count));
    m->follows = calloc((size_t)users * authors, sizeof(*m->follows));
    m->snap = calloc((size_t)users * authors, sizeof(*m->snap));
    m->uids = calloc(users, sizeof(*m->uids));
    m->ids = calloc(authors, sizeof(*m->ids));
    m->known = calloc(authors, sizeof(*m->known));
    if (!m->count || !m->follows || !m->snap || !m->uids || !m->ids ||
        !m->known)
        abort();
    for (unsigned i = 0; i < users; i++)
        m->uids[i] = i < 2 ? i * UINT64_MAX : t_rng();
    for (unsigned i = 0; i < authors; i++)
        m->ids[i] = i < 2 ? i * UINT64_MAX : t_rng();
    m->edges = 0;
}

static void model_free(struct model *m)
{
    free(m->count);
    free(m->follows);
    free(m->snap);
    free(m->uids);
    free(m->ids);
    free(m->known);
}

static bool *fol(const struct model *m, unsigned u, unsigned a)
{
    return &m->follows[(size_t)u * m->authors + a];
}

static uint32_t *snp(const struct model *m, unsigned u, unsigned a)
{
    return &m->snap[(size_t)u * m->authors + a];
}

static uint64_t model_unread(const struct model *m, unsigned u, uint64_t cap)
{
    uint64_t sum = 0;

    for (unsigned a = 0; a < m->authors; a++)
        if (*fol(m, u, a) && m->count[a] > *snp(m, u, a))
            sum += m->count[a] - *snp(m, u, a);
    return sum > cap ? cap + 1 : sum;
}

static unsigned model_follows(const struct model *m, unsigned u)
{
    unsigned n = 0;

    for (unsigned a = 0; a < m->authors; a++)
        n += *fol(m, u, a);
    return n;
}

/* uid u's follows as USER.INFO lists them, against the model: the
 * disagreements. */
struct info_check {
    const struct model *m;
    unsigned u, n;
    size_t bad;
};

static void info_visit(uint64_t author, uint32_t count, uint32_t snapshot,
                       void *ctx)
{
    struct info_check *ic = ctx;
    unsigned a = 0;

    while (a < ic->m->authors && ic->m->ids[a] != author)
        a++;
    ic->bad += a == ic->m->authors || !*fol(ic->m, ic->u, a) ||
               ic->m->count[a] != count || *snp(ic->m, ic->u, a) != snapshot;
    ic->n++;
}

/* Bulk FEED.FOLLOW of up to 40 authors (repeats allowed) for user u. */
static size_t bulk_follow(struct feed_store *s, struct model *m, unsigned u,
                          unsigned pick)
{
    uint64_t authors[40];
    unsigned idx[40], n = 1 + (unsigned)(t_rng() % 40), fresh = 0;
    bool seen[2048] = {false};
    int rc;

    for (unsigned i = 0; i < n; i++) {
        idx[i] = (unsigned)(t_rng() % pick);
        authors[i] = m->ids[idx[i]];
        if (!seen[idx[i]] && !*fol(m, u, idx[i]))
            fresh++;
        seen[idx[i]] = true;
    }
    rc = feed_follow_many(s, m->uids[u], authors, n, m->max);
    if (model_follows(m, u) + fresh > m->max)
        return rc != FEED_ELIMIT;
    for (unsigned i = 0; i < n; i++) {
        unsigned a = idx[i];

        m->known[a] = true;
        if (!*fol(m, u, a)) {
            *fol(m, u, a) = true;
            *snp(m, u, a) = m->count[a];
            m->edges++;
        }
    }
    return rc != (int)fresh;
}

/* One random operation on both; the number of disagreements. */
static size_t random_op(struct feed_store *s, struct model *m)
{
    unsigned u = (unsigned)(t_rng() % m->users);
    /* User u picks among the first 1 + 2u authors only (in the small
     * shape), so that the lists of low users keep passing through 0, 1
     * and 2 entries. */
    unsigned pick = u < m->authors / 2 && m->max < 20 ? 1 + 2 * u : m->authors;
    unsigned a = (unsigned)(t_rng() % pick);
    uint64_t r = t_rng() % 100, n = t_rng() % 4 ? t_rng() % 4 : t_rng() % 100;
    uint64_t uid = m->uids[u];
    uint32_t count;
    int rc;

    if (r < 25) {
        if (feed_post(s, m->ids[a], n, &count) != 0)
            return 1;
        m->known[a] = true;
        m->count[a] += (uint32_t)n;
        return count != m->count[a];
    }
    if (r < 35) {
        m->count[a] = n >= m->count[a] ? 0 : m->count[a] - (uint32_t)n;
        return feed_unpost(s, m->ids[a], n) != m->count[a];
    }
    if (r < 53) {
        rc = feed_follow(s, uid, m->ids[a], m->max);
        if (*fol(m, u, a))
            return rc != 0;
        if (model_follows(m, u) >= m->max)
            return rc != FEED_ELIMIT;
        m->known[a] = true;
        *fol(m, u, a) = true;
        *snp(m, u, a) = m->count[a];
        m->edges++;
        return rc != 1;
    }
    if (r < 55)
        return bulk_follow(s, m, u, pick);
    if (r < 65) {
        bool was = *fol(m, u, a);

        *fol(m, u, a) = false;
        m->edges -= was;
        return feed_unfollow(s, uid, m->ids[a]) != was ||
               feed_follows(s, uid, m->ids[a]);
    }
    if (r < 70) {
        if (feed_reset(s, uid) != 0)
            return 1;
        for (unsigned i = 0; i < m->authors; i++)
            *snp(m, u, i) = m->count[i];
        return 0;
    }
    if (r < 71 && (m->max < 20 || t_rng() % 20 == 0)) {
        /* (Rarely in the long shape: lists must get long.) */
        size_t had = model_follows(m, u);

        for (unsigned i = 0; i < m->authors; i++)
            *fol(m, u, i) = false;
        m->edges -= had;
        return feed_forget_user(s, uid) != had;
    }
    if (r < 73) {
        struct info_check ic = {m, u, 0, 0};

        return feed_user_info(s, uid, info_visit, &ic) != model_follows(m, u) ||
               ic.n != model_follows(m, u) || ic.bad != 0;
    }
    uint64_t cap = r < 85 ? t_rng() % 30 : NO_CAP;
    return feed_unread(s, uid, cap) != model_unread(m, u, cap);
}

static void model_run(unsigned users, unsigned authors, unsigned max,
                      unsigned steps)
{
    struct model m;
    struct feed_store *s = feed_create();
    size_t bad = 0, nknown = 0;

    model_init(&m, users, authors, max);
    for (unsigned step = 0; step < steps; step++) {
        bad += random_op(s, &m);
        if (step % 50000 == 0)
            bad += feed_audit(s);
    }
    CHECK_EQ_U64(bad, 0);
    for (unsigned u = 0; u < users; u++)
        bad += feed_unread(s, m.uids[u], NO_CAP) != model_unread(&m, u, NO_CAP);
    for (unsigned a = 0; a < authors; a++)
        nknown += m.known[a];
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(feed_entries(s), m.edges);
    CHECK_EQ_U64(feed_authors(s), nknown);
    CHECK_EQ_U64(feed_audit(s), 0);
    feed_destroy(s);
    model_free(&m);
}

static void test_random_vs_model(void)
{
    model_run(24, 40, 12, 300000);
}

/* Hundreds of followees per user: lists of several blocks. */
static void test_random_vs_model_long_lists(void)
{
    model_run(6, 1500, 700, 200000);
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
    T_RUN(test_random_vs_model_long_lists);
    T_RUN(test_follow_many);
    T_END();
}
