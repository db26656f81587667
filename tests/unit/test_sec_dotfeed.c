/*
 * test_sec_dotfeed.c - the DOT and FEED sections of the snapshot: random
 * stores survive a round trip exactly (tables, every user's entries, what
 * commands answer), and crafted sections whose checksums are right but
 * whose content is not are refused with a message, never loaded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "dot.h"
#include "feed.h"
#include "snap_craft.h"
#include "snapshot.h"
#include "t.h"

#define USERS 2000
#define DOTS 300
#define AUTHORS 3000

/* Random DOT and FEED data: users with 0 to 40 clicks (all forms), some
 * dots never pushed, authors with any count, users with up to 300
 * follows, snapshots below and above the counts. */
static void fill(struct db *db)
{
    uint64_t push;
    uint32_t count;

    CHECK(db_init(db) == 0);
    for (unsigned d = 0; d < DOTS; d++)
        if (d % 5 != 0)
            CHECK(dot_push(db->dot, t_rng(), t_rng() % DOT_TS_MAX, &push) == 0);
    for (unsigned u = 0; u < USERS; u++) {
        unsigned n = (unsigned)(t_rng() % (u % 3 ? 4 : 40));

        for (unsigned k = 0; k < n; k++)
            CHECK(dot_click(db->dot, u * 7919, t_rng() % (DOTS + 50),
                            u % 7 ? t_rng() % 1000 : DOT_TS_MAX) == 0);
    }
    for (unsigned a = 0; a < AUTHORS; a++)
        CHECK(feed_post(db->feed, a * 31, a % 4 ? t_rng() % 100 : UINT64_MAX,
                        &count) == 0);
    for (unsigned u = 0; u < USERS; u++) {
        unsigned n = (unsigned)(t_rng() % (u % 5 ? 3 : 300));

        for (unsigned k = 0; k < n; k++) {
            CHECK(feed_follow(db->feed, u, t_rng() % AUTHORS * 31, 1000) >= 0);
            CHECK(feed_post(db->feed, t_rng() % AUTHORS * 31, 1, &count) == 0);
        }
        if (u % 11 == 0)
            feed_unpost(db->feed, u % AUTHORS * 31, 1000);
    }
}

/* An order-independent digest of every (uid, entries) a walk visits. */
static void digest_visit(uint64_t uid, uint32_t n, const uint64_t *e, void *ctx)
{
    uint64_t *sum = ctx;

    *sum += XXH3_64bits_withSeed(e, n * sizeof(*e), uid);
}

static uint64_t dot_digest(const struct dot_store *s)
{
    uint64_t sum = 0, cursor = 0, dot, push;

    do
        dot_scan(s, &cursor, 100, digest_visit, &sum);
    while (cursor != 0);
    for (uint32_t i = 0; i < dot_dots(s); i++) {
        dot_dot_at(s, i, &dot, &push);
        sum += XXH3_64bits_withSeed(&push, sizeof(push), dot ^ i);
    }
    return sum;
}

/* The same for a FEED walk: each user's (author, snapshot) edges in
 * order. */
static void feed_digest_visit(uint64_t uid, uint32_t n, struct feed_edges *e,
                              void *ctx)
{
    uint64_t *sum = ctx, h = uid;
    uint32_t edge[2];

    for (uint32_t i = 0; i < n; i++) {
        feed_edges_next(e, &edge[0], &edge[1]);
        h = XXH3_64bits_withSeed(edge, sizeof(edge), h);
    }
    *sum += h;
}

static uint64_t feed_digest(const struct feed_store *s)
{
    uint64_t sum = 0, cursor = 0, author;
    uint32_t count;

    do
        feed_scan(s, &cursor, 100, feed_digest_visit, &sum);
    while (cursor != 0);
    for (uint32_t i = 0; i < feed_authors(s); i++) {
        feed_author_at(s, i, &author, &count);
        sum += XXH3_64bits_withSeed(&count, sizeof(count), author ^ i);
    }
    return sum;
}

static void test_round_trip(void)
{
    struct db a, b;
    struct snap_meta meta;
    char *buf, err[256];
    size_t len, bad = 0;

    fill(&a);
    len = snap_image(&a, 1, 0, &buf);
    CHECK(len > 0);
    CHECK(db_init(&b) == 0);
    CHECK(snapshot_load(buf, len, &b, &meta, err, sizeof(err)) == 0);
    CHECK(dot_entries(a.dot) > USERS);
    CHECK(feed_entries(a.feed) > USERS);
    CHECK_EQ_U64(dot_entries(b.dot), dot_entries(a.dot));
    CHECK_EQ_U64(dot_dots(b.dot), dot_dots(a.dot));
    CHECK_EQ_U64(feed_entries(b.feed), feed_entries(a.feed));
    CHECK_EQ_U64(feed_authors(b.feed), feed_authors(a.feed));
    CHECK_EQ_U64(dot_digest(b.dot), dot_digest(a.dot));
    CHECK_EQ_U64(feed_digest(b.feed), feed_digest(a.feed));
    for (unsigned u = 0; u < USERS; u++) {
        bad += feed_unread(a.feed, u, UINT64_MAX) !=
               feed_unread(b.feed, u, UINT64_MAX);
        for (unsigned d = 0; d < 20; d++) {
            uint64_t dot = t_rng() % (DOTS + 50);

            bad += dot_shown(a.dot, u * 7919, dot) !=
                   dot_shown(b.dot, u * 7919, dot);
        }
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(db_audit(&b), 0);
    db_deinit(&a);
    db_deinit(&b);
    free(buf);
}

/* Loads section id made of raw[0..len) into a fresh db: true when it is
 * refused with a message containing want (NULL: accepted). */
static bool judged(uint32_t id, const unsigned char *raw, size_t len,
                   const char *want)
{
    struct db db;
    struct snap_meta meta;
    char *buf = NULL, err[256] = "";
    size_t n = snap_craft(id, raw, len, &buf);
    int rc;

    CHECK(db_init(&db) == 0);
    rc = snapshot_load(buf, n, &db, &meta, err, sizeof(err));
    if (want != NULL && (rc == 0 || strstr(err, want) == NULL))
        fprintf(stderr, "expected '%s', got rc %d '%s'\n", want, rc, err);
    if (rc == 0)
        CHECK_EQ_U64(db_audit(&db), 0);
    db_deinit(&db);
    free(buf);
    return want == NULL ? rc == 0 : rc != 0 && strstr(err, want) != NULL;
}

#define U64LE(x) (x), 0, 0, 0, 0, 0, 0, 0

static void test_dot_section_content(void)
{
    /* 2 dots: id 7 pushed at 9, id 8 never; user 5 clicked both. */
    const unsigned char good[] = {2, U64LE(7), 10, U64LE(8), 0, U64LE(5),
                                  2, 0,        3,  1,        4};
    unsigned char bad[sizeof(good) * 2];

    CHECK(judged(5, good, sizeof(good), NULL));
    CHECK(judged(5, good, 19, NULL)); /* the dots alone */
#define BAD(off, val, msg)                                                     \
    do {                                                                       \
        memcpy(bad, good, sizeof(good));                                       \
        bad[off] = (val);                                                      \
        CHECK(judged(5, bad, sizeof(good), msg));                              \
    } while (0)
    BAD(10, 7, "listed twice"); /* dot 7 twice */
    BAD(27, 0, "no clicks");    /* n = 0 */
    BAD(27, 3, "varint");       /* n > ndots */
    BAD(28, 2, "varint");       /* dot number >= ndots */
    BAD(30, 0, "out of order"); /* dot numbers 0, 0 */
    BAD(0, 0, "clicks but no dots");
#undef BAD
    /* push time + 1 at most DOT_TS_MAX + 1 = 2^47, not 2^47 + 1 */
    const unsigned char last[] = {1,    U64LE(7), 0x80, 0x80, 0x80,
                                  0x80, 0x80,     0x80, 0x20};
    const unsigned char late[] = {1,    U64LE(7), 0x81, 0x80, 0x80,
                                  0x80, 0x80,     0x80, 0x20};
    CHECK(judged(5, last, sizeof(last), NULL));
    CHECK(judged(5, late, sizeof(late), "varint"));
    /* the same user twice */
    memcpy(bad, good, sizeof(good));
    memcpy(bad + sizeof(good), good + 19, sizeof(good) - 19);
    CHECK(judged(5, bad, sizeof(good) * 2 - 19, "listed twice"));
    /* cut inside a record */
    CHECK(judged(5, good, sizeof(good) - 1, "inside a record"));
}

static void test_feed_section_content(void)
{
    /* 2 authors: 7 with 5 posts, 8 with 0; user 5 follows both. */
    const unsigned char good[] = {2, U64LE(7), 5, U64LE(8), 0, U64LE(5),
                                  2, 0,        3, 1,        0};
    unsigned char bad[sizeof(good) * 2];
    struct db db;
    struct snap_meta meta;
    char *buf = NULL, err[256];
    size_t n;

    CHECK(judged(6, good, sizeof(good), NULL));
    n = snap_craft(6, good, sizeof(good), &buf);
    CHECK(db_init(&db) == 0);
    CHECK(snapshot_load(buf, n, &db, &meta, err, sizeof(err)) == 0);
    CHECK_EQ_U64(feed_unread(db.feed, 5, UINT64_MAX), 2);
    CHECK_EQ_U64(feed_follow(db.feed, 5, 8, 5000), 0); /* already */
    db_deinit(&db);
    free(buf);
#define BAD(off, val, msg)                                                     \
    do {                                                                       \
        memcpy(bad, good, sizeof(good));                                       \
        bad[off] = (val);                                                      \
        CHECK(judged(6, bad, sizeof(good), msg));                              \
    } while (0)
    BAD(10, 7, "listed twice");
    BAD(27, 0, "no follows");
    BAD(27, 3, "varint");
    BAD(28, 2, "varint");
    BAD(30, 0, "out of order");
    BAD(0, 0, "follows but no authors");
#undef BAD
    /* a count past 2^32 - 1 */
    const unsigned char big[] = {1, U64LE(7), 0x80, 0x80, 0x80, 0x80, 0x10};
    CHECK(judged(6, big, sizeof(big), "varint"));
    memcpy(bad, good, sizeof(good));
    memcpy(bad + sizeof(good), good + 19, sizeof(good) - 19);
    CHECK(judged(6, bad, sizeof(good) * 2 - 19, "listed twice"));
    CHECK(judged(6, good, sizeof(good) - 1, "inside a record"));
}

int main(void)
{
    T_RUN(test_round_trip);
    T_RUN(test_dot_section_content);
    T_RUN(test_feed_section_content);
    T_END();
}
