/*
 * test_rcpt.c - RCPT store: who is a recipient (join after send, quit
 * before and after send, the sender), reads and collapse, READUPTO, lists
 * and paging, resends, retention with explicit times, limits, shared quit
 * snapshots, and a long randomized run against a model made of plain
 * arrays.
 */
#include "rcpt.h"
#define T_RNG_SEED 0x2545f4914f6cdd1dULL
#include "t.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define DAY_MS (86400000ULL)
#define T0 (1700000000000ULL) /* a send time, ms */
#define NO_HORIZON 0          /* nothing expires */

/* Collects listed uids. */
struct uids {
    uint32_t n;
    uint64_t v[512];
};

static void collect(uint64_t uid, void *ctx)
{
    struct uids *u = ctx;

    if (u->n < 512)
        u->v[u->n++] = uid;
}

/* The list as a string "1 2 3" for compact checks, or "ENOMSG". */
static const char *list(struct rcpt_store *s, uint64_t gid, uint64_t msgid,
                        bool want_read, uint32_t offset, uint32_t count)
{
    static char buf[4096];
    struct uids u = {0, {0}};
    uint32_t n = 12345;
    size_t len = 0;

    if (rcpt_list(s, gid, msgid, NO_HORIZON, want_read, offset, count, collect,
                  &u, &n) != RCPT_OK)
        return "ENOMSG";
    if (n != u.n)
        return "COUNT MISMATCH";
    buf[0] = '\0';
    for (uint32_t i = 0; i < u.n; i++)
        len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%llu",
                                i ? " " : "", (unsigned long long)u.v[i]);
    return buf;
}

static bool count_is(struct rcpt_store *s, uint64_t gid, uint64_t msgid,
                     uint32_t read, uint32_t unread)
{
    uint32_t r = 0, u = 0;

    return rcpt_count(s, gid, msgid, NO_HORIZON, &r, &u) == RCPT_OK &&
           r == read && u == unread;
}

static uint32_t send(struct rcpt_store *s, uint64_t gid, uint64_t msgid,
                     uint64_t sender)
{
    uint32_t n = 999999;

    CHECK_EQ_U64(rcpt_send(s, gid, msgid, sender, T0, NO_HORIZON, &n), RCPT_OK);
    return n;
}

static uint32_t join(struct rcpt_store *s, uint64_t gid, uint64_t uid)
{
    uint32_t m = 999999;

    CHECK_EQ_U64(rcpt_join(s, gid, uid, 100000, &m), RCPT_OK);
    return m;
}

static void test_empty(void)
{
    struct rcpt_store *s = rcpt_create();
    uint32_t r, u;

    CHECK(s != NULL);
    CHECK_EQ_U64(rcpt_count(s, 1, 1, NO_HORIZON, &r, &u), RCPT_ENOMSG);
    CHECK(strcmp(list(s, 1, 1, true, 0, 10), "ENOMSG") == 0);
    CHECK_EQ_U64(rcpt_read(s, 1, 2, 1, NO_HORIZON), 0);
    CHECK_EQ_U64(rcpt_read_upto(s, 1, 2, UINT64_MAX, NO_HORIZON), 0);
    CHECK(!rcpt_quit(s, 1, 2));
    CHECK_EQ_U64(rcpt_expire(s, 1, UINT64_MAX, 10), 0);
    CHECK_EQ_U64(rcpt_expire_step(s, UINT64_MAX, 10), 0);
    CHECK_EQ_U64(rcpt_groups(s), 0);
    CHECK_EQ_U64(rcpt_entries(s), 0);
    CHECK_EQ_U64(rcpt_audit(s), 0);
    rcpt_destroy(s);
    rcpt_destroy(NULL);
}

static void test_mapids(void)
{
    struct rcpt_store *s = rcpt_create();

    CHECK_EQ_U64(join(s, 7, 100), 0);
    CHECK_EQ_U64(join(s, 7, 200), 1);
    CHECK_EQ_U64(join(s, 7, 100), 0); /* already a member */
    CHECK_EQ_U64(join(s, 8, 200), 0); /* mapids are per group */
    CHECK(rcpt_quit(s, 7, 100));
    CHECK(!rcpt_quit(s, 7, 100)); /* already quit */
    CHECK(!rcpt_quit(s, 7, 300)); /* never joined */
    CHECK_EQ_U64(join(s, 7, 300), 2);
    CHECK_EQ_U64(join(s, 7, 100), 0); /* rejoin keeps the mapid */
    CHECK(rcpt_quit(s, 7, 100));
    CHECK_EQ_U64(rcpt_groups(s), 2);
    CHECK_EQ_U64(rcpt_audit(s), 0);
    rcpt_destroy(s);
}

static void test_recipients(void)
{
    struct rcpt_store *s = rcpt_create();

    for (uint64_t u = 1; u <= 5; u++)
        join(s, 1, u);
    CHECK(rcpt_quit(s, 1, 5));          /* quit before send: not a recipient */
    CHECK_EQ_U64(send(s, 1, 10, 1), 3); /* 5 members - 1 quit - sender */
    join(s, 1, 6);                      /* join after send: not one */
    CHECK(rcpt_quit(s, 1, 4));          /* quit after send: still a recipient */
    CHECK(count_is(s, 1, 10, 0, 3));
    CHECK(strcmp(list(s, 1, 10, false, 0, 100), "2 3 4") == 0);
    CHECK(strcmp(list(s, 1, 10, true, 0, 100), "") == 0);

    CHECK_EQ_U64(rcpt_read(s, 1, 1, 10, NO_HORIZON), 0);  /* the sender */
    CHECK_EQ_U64(rcpt_read(s, 1, 5, 10, NO_HORIZON), 0);  /* quit before */
    CHECK_EQ_U64(rcpt_read(s, 1, 6, 10, NO_HORIZON), 0);  /* joined after */
    CHECK_EQ_U64(rcpt_read(s, 1, 99, 10, NO_HORIZON), 0); /* stranger */
    CHECK_EQ_U64(rcpt_read(s, 1, 2, 11, NO_HORIZON), 0);  /* no message */
    CHECK_EQ_U64(rcpt_read(s, 1, 2, 10, NO_HORIZON), 1);
    CHECK_EQ_U64(rcpt_read(s, 1, 2, 10, NO_HORIZON), 0); /* twice: once */
    CHECK_EQ_U64(rcpt_read(s, 1, 4, 10, NO_HORIZON), 1); /* quit, reads */
    CHECK(count_is(s, 1, 10, 2, 1));
    CHECK(strcmp(list(s, 1, 10, true, 0, 100), "2 4") == 0);
    CHECK(strcmp(list(s, 1, 10, false, 0, 100), "3") == 0);
    CHECK_EQ_U64(rcpt_audit(s), 0);

    /* The last reader collapses the message; everything still answers. */
    CHECK_EQ_U64(rcpt_read(s, 1, 3, 10, NO_HORIZON), 1);
    CHECK(count_is(s, 1, 10, 3, 0));
    CHECK_EQ_U64(rcpt_read(s, 1, 3, 10, NO_HORIZON), 0);
    CHECK(strcmp(list(s, 1, 10, true, 0, 100), "2 3 4") == 0);
    CHECK(strcmp(list(s, 1, 10, false, 0, 100), "") == 0);

    /* A sender who is not a member; a group nobody joined. */
    CHECK_EQ_U64(send(s, 1, 11, 777), 4); /* 1, 2, 3, 6 */
    CHECK(strcmp(list(s, 1, 11, false, 0, 100), "1 2 3 6") == 0);
    CHECK_EQ_U64(send(s, 2, 1, 1), 0);
    CHECK(count_is(s, 2, 1, 0, 0));
    CHECK_EQ_U64(rcpt_audit(s), 0);
    rcpt_destroy(s);
}

static void test_list_paging(void)
{
    struct rcpt_store *s = rcpt_create();
    char want[2048];
    size_t len = 0;

    /* 300 members: bitmaps of 5 words; every third has read. */
    for (uint64_t u = 0; u < 300; u++)
        join(s, 3, 1000 + u);
    CHECK_EQ_U64(send(s, 3, 1, 1000), 299);
    for (uint64_t u = 1; u < 300; u += 3)
        CHECK_EQ_U64(rcpt_read(s, 3, 1000 + u, 1, NO_HORIZON), 1);
    CHECK(count_is(s, 3, 1, 100, 199));
    /* READ list, page by page, equals the whole list. */
    for (uint64_t u = 1; u < 300; u += 3)
        len += (size_t)snprintf(want + len, sizeof(want) - len, "%s%llu",
                                len ? " " : "", 1000 + (unsigned long long)u);
    CHECK(strcmp(list(s, 3, 1, true, 0, UINT32_MAX), want) == 0);
    CHECK(strcmp(list(s, 3, 1, true, 0, 3), "1001 1004 1007") == 0);
    CHECK(strcmp(list(s, 3, 1, true, 21, 2), "1064 1067") == 0);
    CHECK(strcmp(list(s, 3, 1, true, 99, 10), "1298") == 0);
    CHECK(strcmp(list(s, 3, 1, true, 100, 10), "") == 0);
    CHECK(strcmp(list(s, 3, 1, true, 5000, 10), "") == 0);
    CHECK(strcmp(list(s, 3, 1, true, 0, 0), "") == 0);
    /* UNREAD excludes the sender (1000). */
    CHECK(strcmp(list(s, 3, 1, false, 0, 4), "1002 1003 1005 1006") == 0);
    CHECK(strcmp(list(s, 3, 1, false, 198, 5), "1299") == 0);
    rcpt_destroy(s);
}

static void test_read_upto(void)
{
    struct rcpt_store *s = rcpt_create();

    join(s, 1, 1);
    join(s, 1, 2);
    join(s, 1, 3);
    /* msgids out of order: kept by msgid, not by arrival. */
    CHECK_EQ_U64(send(s, 1, 50, 1), 2);
    CHECK_EQ_U64(send(s, 1, 20, 1), 2);
    CHECK_EQ_U64(send(s, 1, 40, 2), 2);
    CHECK_EQ_U64(send(s, 1, 60, 1), 2);
    CHECK_EQ_U64(rcpt_read_upto(s, 1, 2, 45, NO_HORIZON), 1); /* 20; 40 own */
    CHECK(count_is(s, 1, 20, 1, 1));
    CHECK(count_is(s, 1, 50, 0, 2));
    CHECK_EQ_U64(rcpt_read_upto(s, 1, 3, 50, NO_HORIZON), 3); /* 20 40 50 */
    CHECK(count_is(s, 1, 20, 2, 0));                          /* collapsed */
    CHECK_EQ_U64(rcpt_read_upto(s, 1, 3, 50, NO_HORIZON), 0);
    CHECK_EQ_U64(rcpt_read_upto(s, 1, 2, UINT64_MAX, NO_HORIZON), 2);
    CHECK(count_is(s, 1, 50, 2, 0));
    CHECK(count_is(s, 1, 60, 1, 1));
    CHECK_EQ_U64(rcpt_read_upto(s, 1, 9, UINT64_MAX, NO_HORIZON), 0);
    CHECK_EQ_U64(rcpt_read_upto(s, 1, 3, 0, NO_HORIZON), 0);
    CHECK_EQ_U64(rcpt_audit(s), 0);
    rcpt_destroy(s);
}

static void test_resend(void)
{
    struct rcpt_store *s = rcpt_create();
    uint32_t n = 0;

    join(s, 1, 1);
    join(s, 1, 2);
    join(s, 1, 3);
    CHECK_EQ_U64(send(s, 1, 5, 1), 2);
    CHECK_EQ_U64(rcpt_read(s, 1, 2, 5, NO_HORIZON), 1);
    join(s, 1, 4);
    /* The same send again: the same answer, nothing reset. */
    CHECK_EQ_U64(send(s, 1, 5, 1), 2);
    CHECK(count_is(s, 1, 5, 1, 1));
    CHECK_EQ_U64(rcpt_send(s, 1, 5, 2, T0, NO_HORIZON, &n), RCPT_EEXIST);
    CHECK_EQ_U64(rcpt_send(s, 1, 5, 4, T0, NO_HORIZON, &n), RCPT_EEXIST);
    /* Non-members are indistinguishable as senders. */
    CHECK_EQ_U64(send(s, 1, 6, 900), 4);
    CHECK_EQ_U64(send(s, 1, 6, 901), 4);
    CHECK_EQ_U64(rcpt_entries(s), 2);
    CHECK_EQ_U64(rcpt_audit(s), 0);
    rcpt_destroy(s);
}

static void test_limits(void)
{
    struct rcpt_store *s = rcpt_create();
    uint32_t m = 0, n = 0;

    CHECK_EQ_U64(rcpt_join(s, 1, 10, 2, &m), RCPT_OK);
    CHECK_EQ_U64(rcpt_join(s, 1, 11, 2, &m), RCPT_OK);
    CHECK_EQ_U64(rcpt_join(s, 1, 12, 2, &m), RCPT_ELIMIT);
    CHECK(rcpt_quit(s, 1, 10));
    /* Quitting frees no mapid; a rejoin never hits the limit. */
    CHECK_EQ_U64(rcpt_join(s, 1, 12, 2, &m), RCPT_ELIMIT);
    CHECK_EQ_U64(rcpt_join(s, 1, 10, 2, &m), RCPT_OK);
    CHECK_EQ_U64(m, 0);
    /* A refused first join leaves no group behind. */
    CHECK_EQ_U64(rcpt_join(s, 2, 10, 0, &m), RCPT_ELIMIT);
    CHECK_EQ_U64(rcpt_groups(s), 1);
    /* A send older than the horizon is refused, nothing stored. */
    CHECK_EQ_U64(rcpt_send(s, 3, 1, 10, T0, T0 + 1, &n), RCPT_EEXPIRED);
    CHECK_EQ_U64(rcpt_groups(s), 1);
    CHECK_EQ_U64(rcpt_audit(s), 0);
    rcpt_destroy(s);
}

static void test_retention(void)
{
    struct rcpt_store *s = rcpt_create();
    uint64_t h0 = T0 - 7 * DAY_MS; /* the horizon at T0 */
    uint32_t n = 0, r, u;

    join(s, 1, 1);
    join(s, 1, 2);
    for (uint64_t i = 0; i < 300; i++)
        CHECK_EQ_U64(rcpt_send(s, 1, i, 1, T0 + i * 1000, h0, &n), RCPT_OK);
    CHECK_EQ_U64(rcpt_entries(s), 300);
    /* At T0 + 7 days + 100.5 s, messages sent before T0 + 100.5 s (kept to
     * the second, rounded up: 0..100) are gone from every answer. */
    uint64_t h = T0 + 100500;
    CHECK_EQ_U64(rcpt_count(s, 1, 100, h, &r, &u), RCPT_ENOMSG);
    CHECK_EQ_U64(rcpt_count(s, 1, 101, h, &r, &u), RCPT_OK);
    CHECK_EQ_U64(rcpt_read(s, 1, 2, 50, h), 0);
    CHECK_EQ_U64(rcpt_read_upto(s, 1, 2, 150, h), 50); /* 101..150 */
    {
        uint32_t k = 0;

        CHECK_EQ_U64(rcpt_list(s, 1, 5, h, true, 0, 10, collect, NULL, &k),
                     RCPT_ENOMSG);
    }
    /* Dropping is bounded per call, oldest first. */
    CHECK_EQ_U64(rcpt_expire(s, 1, h, 40), 40);
    CHECK_EQ_U64(rcpt_entries(s), 260);
    CHECK_EQ_U64(rcpt_audit(s), 0);
    CHECK_EQ_U64(rcpt_expire(s, 1, h, 1000), 61);
    CHECK_EQ_U64(rcpt_expire(s, 1, h, 1000), 0);
    CHECK_EQ_U64(rcpt_entries(s), 199);
    CHECK_EQ_U64(rcpt_audit(s), 0);
    /* A msgid sent again after it expired is a new message. */
    CHECK_EQ_U64(rcpt_send(s, 1, 200, 2, T0 + 400000, h, &n), RCPT_EEXIST);
    CHECK_EQ_U64(rcpt_send(s, 1, 5, 2, T0 + 400000, h, &n), RCPT_OK);
    CHECK_EQ_U64(n, 1);
    CHECK(count_is(s, 1, 5, 0, 1));
    /* Sends drop expired messages of their own group as they go. */
    for (uint64_t i = 1000; i < 1100; i++)
        rcpt_send(s, 1, i, 1, T0 + 400000, T0 + 350000, &n);
    CHECK_EQ_U64(rcpt_entries(s), 101);
    CHECK_EQ_U64(rcpt_audit(s), 0);
    /* A quiet group is cleaned by the walk over groups; one nobody joined
     * disappears with its last message. */
    rcpt_send(s, 2, 1, 1, T0, h0, &n);
    rcpt_send(s, 3, 1, 1, T0, h0, &n);
    CHECK_EQ_U64(rcpt_groups(s), 3);
    for (int i = 0; i < 10; i++)
        rcpt_expire_step(s, UINT64_MAX, 1000);
    CHECK_EQ_U64(rcpt_entries(s), 0);
    CHECK_EQ_U64(rcpt_groups(s), 1); /* group 1 keeps its members */
    CHECK_EQ_U64(rcpt_audit(s), 0);
    rcpt_destroy(s);
}

/* A ts older than the messages before it (a client-given ts): it expires
 * on time although it is not at the front, and its msgid can be sent
 * again meanwhile. */
static void test_retention_out_of_order(void)
{
    struct rcpt_store *s = rcpt_create();
    uint32_t n = 0, r, u;

    join(s, 1, 1);
    join(s, 1, 2);
    CHECK_EQ_U64(rcpt_send(s, 1, 10, 1, T0 + 10000, T0 - DAY_MS, &n), 0);
    CHECK_EQ_U64(rcpt_send(s, 1, 20, 1, T0, T0 - DAY_MS, &n), 0);
    CHECK_EQ_U64(rcpt_count(s, 1, 20, T0 + 5000, &r, &u), RCPT_ENOMSG);
    CHECK_EQ_U64(rcpt_count(s, 1, 10, T0 + 5000, &r, &u), RCPT_OK);
    CHECK_EQ_U64(rcpt_expire(s, 1, T0 + 5000, 10), 0); /* 10 is in front */
    CHECK_EQ_U64(rcpt_send(s, 1, 20, 2, T0 + 20000, T0 + 5000, &n), 0);
    CHECK_EQ_U64(n, 1);
    CHECK(count_is(s, 1, 20, 0, 1));
    CHECK_EQ_U64(rcpt_entries(s), 2);
    CHECK_EQ_U64(rcpt_audit(s), 0);
    /* The replaced record goes with the front, the new one stays. */
    CHECK_EQ_U64(rcpt_expire(s, 1, T0 + 10000 + 1, 10), 2);
    CHECK_EQ_U64(rcpt_entries(s), 1);
    CHECK(count_is(s, 1, 20, 0, 1));
    CHECK_EQ_U64(rcpt_audit(s), 0);
    rcpt_destroy(s);
}

/*
 * Messages sent under one membership share one quit snapshot, and read
 * messages keep no bitmap: 1000 fully read messages in a 200-member group
 * with quits cost about a record and an index slot each.
 */
static void test_sharing_and_collapse(void)
{
    struct rcpt_store *s = rcpt_create();
    size_t before, after;

    for (uint64_t u = 0; u < 200; u++)
        join(s, 1, u);
    for (uint64_t u = 0; u < 200; u += 10)
        rcpt_quit(s, 1, u);
    before = rcpt_bytes(s);
    for (uint64_t i = 0; i < 1000; i++) {
        send(s, 1, i, 1);
        for (uint64_t u = 0; u < 200; u++)
            rcpt_read(s, 1, u, i, NO_HORIZON);
    }
    after = rcpt_bytes(s);
    CHECK(count_is(s, 1, 999, 179, 0));
    CHECK((after - before) / 1000 <= 36);
    /* A quit between sends takes one new snapshot, shared again after. */
    rcpt_quit(s, 1, 1);
    before = rcpt_bytes(s);
    for (uint64_t i = 1000; i < 1100; i++) {
        send(s, 1, i, 2);
        for (uint64_t u = 0; u < 200; u++)
            rcpt_read(s, 1, u, i, NO_HORIZON);
    }
    CHECK(count_is(s, 1, 1050, 178, 0));
    CHECK((rcpt_bytes(s) - before) / 100 <= 40);
    CHECK_EQ_U64(rcpt_audit(s), 0);
    rcpt_destroy(s);
}

/*
 * The index moves to a bigger (or smaller) table a few records per change:
 * every message must stay findable in the middle of such moves, through
 * growth from 8 slots to tens of thousands and back down with retention.
 */
static void test_index_migration(void)
{
    struct rcpt_store *s = rcpt_create();
    uint32_t n = 0;
    bool all = true;

    join(s, 1, 1);
    join(s, 1, 2);
    for (uint64_t i = 0; i < 20000; i++) {
        rcpt_send(s, 1, i * 13 + 5, 1, T0 + i * 1000, NO_HORIZON, &n);
        all = all && count_is(s, 1, (t_rng() % (i + 1)) * 13 + 5, 0, 1);
    }
    CHECK(all);
    CHECK_EQ_U64(rcpt_audit(s), 0);
    for (uint64_t i = 0; i < 19990; i++) {
        uint64_t j = i + 1 + t_rng() % (19999 - i);
        uint32_t r, u;

        rcpt_expire(s, 1, T0 + (i + 1) * 1000, 1);
        all = all && count_is(s, 1, j * 13 + 5, 0, 1) &&
              rcpt_count(s, 1, i * 13 + 5, NO_HORIZON, &r, &u) == RCPT_ENOMSG;
    }
    CHECK(all);
    CHECK_EQ_U64(rcpt_entries(s), 10);
    /* Shrunk back: two chunks of 128 records at most, small tables. */
    CHECK(rcpt_bytes(s) < 2 * 128 * 24 + 2048);
    CHECK_EQ_U64(rcpt_audit(s), 0);
    rcpt_destroy(s);
}

/*
 * Watermarks: reads in order cost no bitmap; a read out of order does,
 * until the reader's watermark passes it; a member who quits having read
 * everything is parked, one who quits behind keeps its unread messages,
 * also when retention drops past its quit and it reads up to a message
 * already gone; a sender behind its own watermark is not counted for its
 * own message.
 */
static void test_watermarks(void)
{
    struct rcpt_store *s = rcpt_create();
    uint64_t h0 = T0 - 7 * DAY_MS;
    size_t before;
    uint32_t n = 0;

    for (uint64_t u = 1; u <= 4; u++)
        join(s, 1, u);
    for (uint64_t i = 1; i <= 10; i++)
        CHECK_EQ_U64(rcpt_send(s, 1, i, 1, T0 + i * 1000, h0, &n), RCPT_OK);
    before = rcpt_bytes(s);
    /* 2 reads 1..10 in order: no bitmap */
    for (uint64_t i = 1; i <= 10; i++)
        CHECK_EQ_U64(rcpt_read(s, 1, 2, i, h0), 1);
    CHECK_EQ_U64(rcpt_bytes(s), before);
    CHECK(count_is(s, 1, 10, 1, 2));
    /* 3 reads 5 and 7 out of order: a bitmap each, gone once it reads
     * up to 8 (READUPTO counts 1..4, 6 and 8 only) */
    CHECK_EQ_U64(rcpt_read(s, 1, 3, 5, h0), 1);
    CHECK_EQ_U64(rcpt_read(s, 1, 3, 7, h0), 1);
    CHECK(rcpt_bytes(s) > before);
    CHECK(count_is(s, 1, 5, 2, 1) && count_is(s, 1, 6, 1, 2));
    CHECK(strcmp(list(s, 1, 7, true, 0, 10), "2 3") == 0);
    CHECK_EQ_U64(rcpt_read_upto(s, 1, 3, 8, h0), 6);
    CHECK_EQ_U64(rcpt_bytes(s), before);
    CHECK(count_is(s, 1, 8, 2, 1) && count_is(s, 1, 9, 1, 2));
    /* 4 quits behind (read nothing), 2 quits having read everything */
    CHECK(rcpt_quit(s, 1, 4));
    CHECK(rcpt_quit(s, 1, 2));
    CHECK_EQ_U64(rcpt_send(s, 1, 11, 3, T0 + 11000, h0, &n), RCPT_OK);
    CHECK_EQ_U64(n, 1);              /* 1 */
    CHECK(count_is(s, 1, 10, 1, 2)); /* 4 still owes 1..10 */
    CHECK(strcmp(list(s, 1, 10, false, 0, 10), "3 4") == 0);
    CHECK_EQ_U64(rcpt_audit(s), 0);
    /* a sender behind its watermark (1 read nothing): not its recipient */
    CHECK(count_is(s, 1, 11, 0, 1));
    CHECK_EQ_U64(rcpt_read(s, 1, 1, 11, h0), 1);
    CHECK_EQ_U64(rcpt_read_upto(s, 1, 1, 11, h0), 0); /* its own: none */
    CHECK_EQ_U64(rcpt_audit(s), 0);
    /* Retention drops 1..11; 4, behind and quit, reads up to 3 (gone):
     * nothing, and it stays consistent; then it rejoins and receives 12. */
    CHECK_EQ_U64(rcpt_expire(s, 1, T0 + 20000, 100), 11);
    CHECK_EQ_U64(rcpt_read_upto(s, 1, 4, 3, T0 + 20000), 0);
    CHECK_EQ_U64(rcpt_audit(s), 0);
    CHECK_EQ_U64(join(s, 1, 4), 3);
    CHECK_EQ_U64(rcpt_send(s, 1, 12, 1, T0 + 30000, T0 + 20000, &n), RCPT_OK);
    CHECK_EQ_U64(n, 2); /* 3 and 4 */
    CHECK_EQ_U64(rcpt_read_upto(s, 1, 4, 12, T0 + 20000), 1);
    CHECK(count_is(s, 1, 12, 1, 1));
    CHECK_EQ_U64(rcpt_audit(s), 0);
    rcpt_destroy(s);
}

/* A member that quit behind, after retention dropped past its quit and
 * with expired messages still at the front, reads up to one already gone:
 * its marks stay consistent (it is done with everything now), and a
 * rejoin makes it a recipient again. */
static void test_quit_behind_expired(void)
{
    struct rcpt_store *s = rcpt_create();
    uint64_t h0 = T0 - 7 * DAY_MS, h1 = T0 + 20000;
    uint32_t n = 0;

    join(s, 1, 1);
    join(s, 1, 2);
    for (uint64_t i = 1; i <= 11; i++) {
        CHECK_EQ_U64(rcpt_send(s, 1, i, 1, T0 + i * 1000, h0, &n), RCPT_OK);
        if (i == 5)
            CHECK(rcpt_quit(s, 1, 2)); /* read nothing: behind */
    }
    CHECK(count_is(s, 1, 5, 0, 1) && count_is(s, 1, 6, 0, 0));
    CHECK_EQ_U64(rcpt_expire(s, 1, T0 + 8500, 100), 8); /* 1..8 */
    CHECK_EQ_U64(rcpt_read_upto(s, 1, 2, 3, h1), 0);
    CHECK_EQ_U64(rcpt_audit(s), 0);
    CHECK_EQ_U64(rcpt_read_upto(s, 1, 2, 11, h1), 0);
    CHECK_EQ_U64(rcpt_audit(s), 0);
    CHECK_EQ_U64(join(s, 1, 2), 1);
    CHECK_EQ_U64(rcpt_send(s, 1, 12, 1, T0 + 30000, h1, &n), RCPT_OK);
    CHECK_EQ_U64(n, 1);
    CHECK(count_is(s, 1, 12, 0, 1));
    CHECK_EQ_U64(rcpt_audit(s), 0);
    rcpt_destroy(s);
}

/*
 * READUPTO by msgid when msgids arrive out of order: a message sent after
 * a larger msgid ("late") is read by a READUPTO covering it, wherever the
 * watermark stops; RCPT.READ of several msgids counts each once.
 */
static void test_late_msgids(void)
{
    struct rcpt_store *s = rcpt_create();
    uint64_t ids[5] = {30, 10, 30, 99, 20}, n = 0;

    join(s, 1, 1);
    join(s, 1, 2);
    for (uint64_t m = 10; m <= 50; m += 10)
        send(s, 1, m, 1);
    send(s, 1, 25, 1); /* late: below 50 */
    send(s, 1, 5, 1);  /* late */
    send(s, 1, 60, 1);
    CHECK_EQ_U64(rcpt_read_upto(s, 1, 2, 27, NO_HORIZON), 4); /* 10 20 25 5 */
    CHECK(count_is(s, 1, 25, 1, 0) && count_is(s, 1, 5, 1, 0));
    CHECK(count_is(s, 1, 30, 0, 1) && count_is(s, 1, 60, 0, 1));
    CHECK_EQ_U64(rcpt_audit(s), 0);
    CHECK_EQ_U64(rcpt_mark_read(s, 1, 2, ids, 5, NO_HORIZON, &n), RCPT_OK);
    CHECK_EQ_U64(n, 1); /* 30; 10 and 20 read, 99 none */
    CHECK_EQ_U64(rcpt_read_upto(s, 1, 2, UINT64_MAX, NO_HORIZON), 3);
    CHECK_EQ_U64(rcpt_audit(s), 0);
    rcpt_destroy(s);
}

/* ---- Randomized run against a model ------------------------------------ */

#define MG 3   /* groups */
#define MU 150 /* uids 0..MU-1 (3-word bitmaps) */
#define MM 400 /* msgids 0..MM-1 */
#define AGE_MS (600 * 1000ULL)

struct mmsg {
    bool exists;
    uint64_t ts_ms;
    uint32_t nmemb;      /* mapids at send */
    uint32_t sender_map; /* mapid at send, or UINT32_MAX */
    bool rcpt[MU];
    bool read[MU];
};

struct mgroup {
    int32_t mapid[MU];  /* -1: never joined */
    uint32_t order[MU]; /* mapid -> uid */
    bool quit[MU];
    uint32_t nmap;
    struct mmsg msg[MM];
};

static bool m_visible(const struct mmsg *m, uint64_t horizon)
{
    return m->exists && (m->ts_ms + 999) / 1000 * 1000 >= horizon;
}

static uint32_t m_sender_map(const struct mgroup *g, uint64_t uid,
                             uint32_t nmemb)
{
    return g->mapid[uid] >= 0 && (uint32_t)g->mapid[uid] < nmemb
               ? (uint32_t)g->mapid[uid]
               : UINT32_MAX;
}

static void m_counts(const struct mmsg *m, uint32_t *r, uint32_t *u)
{
    *r = *u = 0;
    for (int i = 0; i < MU; i++)
        if (m->rcpt[i])
            (*(m->read[i] ? r : u))++;
}

static void random_step(struct rcpt_store *s, struct mgroup *model,
                        uint64_t now)
{
    uint64_t horizon = now - AGE_MS;
    /* Group sizes differ: a small group collapses messages often, a large
     * one spans several bitmap words and meets the member limit. */
    static const uint32_t span[MG] = {MU, 8, 70};
    uint32_t gi = (uint32_t)(t_rng() % MG), op = (uint32_t)(t_rng() % 100);
    uint64_t uid = t_rng() % span[gi], msgid = t_rng() % MM;
    struct mgroup *g = &model[gi];
    uint64_t gid = 1000 + gi;

    if (op < 8) {
        uint32_t m = 0;
        int rc = rcpt_join(s, gid, uid, 120, &m);

        if (g->mapid[uid] < 0 && g->nmap >= 120) {
            CHECK_EQ_U64(rc, RCPT_ELIMIT);
            return;
        }
        if (g->mapid[uid] < 0) {
            g->mapid[uid] = (int32_t)g->nmap;
            g->order[g->nmap++] = (uint32_t)uid;
        }
        g->quit[uid] = false;
        CHECK_EQ_U64(rc, RCPT_OK);
        CHECK_EQ_U64(m, (uint32_t)g->mapid[uid]);
    } else if (op < 11) {
        bool was = g->mapid[uid] >= 0 && !g->quit[uid];

        if (g->mapid[uid] >= 0)
            g->quit[uid] = true;
        CHECK_EQ_U64(rcpt_quit(s, gid, uid), was);
    } else if (op < 25) {
        struct mmsg *m = &g->msg[msgid];
        uint32_t n = 0, want = 0;
        int rc = rcpt_send(s, gid, msgid, uid, now, horizon, &n);

        if (m_visible(m, horizon)) {
            uint32_t r, u;

            /* A resend: the same sender is the one whose mapid (below the
             * message's member count) matches. */
            m_counts(m, &r, &u);
            if (m_sender_map(g, uid, m->nmemb) != m->sender_map) {
                CHECK_EQ_U64(rc, RCPT_EEXIST);
            } else {
                CHECK_EQ_U64(rc, RCPT_OK);
                CHECK_EQ_U64(n, r + u);
            }
            return;
        }
        memset(m, 0, sizeof(*m));
        m->exists = true;
        m->ts_ms = now;
        m->nmemb = g->nmap;
        m->sender_map = m_sender_map(g, uid, g->nmap);
        for (uint32_t i = 0; i < MU; i++)
            if (g->mapid[i] >= 0 && !g->quit[i] && i != uid) {
                m->rcpt[i] = true;
                want++;
            }
        CHECK_EQ_U64(rc, RCPT_OK);
        CHECK_EQ_U64(n, want);
    } else if (op < 60) {
        struct mmsg *m = &g->msg[msgid];
        uint32_t want = 0;

        if (m_visible(m, horizon) && m->rcpt[uid] && !m->read[uid]) {
            m->read[uid] = true;
            want = 1;
        }
        CHECK_EQ_U64(rcpt_read(s, gid, uid, msgid, horizon), want);
    } else if (op < 63) {
        uint64_t want = 0;

        for (uint64_t i = 0; i <= msgid; i++) {
            struct mmsg *m = &g->msg[i];

            if (m_visible(m, horizon) && m->rcpt[uid] && !m->read[uid]) {
                m->read[uid] = true;
                want++;
            }
        }
        CHECK_EQ_U64(rcpt_read_upto(s, gid, uid, msgid, horizon), want);
    } else if (op < 80) {
        struct mmsg *m = &g->msg[msgid];
        uint32_t r = 0, u = 0, wr, wu;
        int rc = rcpt_count(s, gid, msgid, horizon, &r, &u);

        if (!m_visible(m, horizon)) {
            CHECK_EQ_U64(rc, RCPT_ENOMSG);
            return;
        }
        m_counts(m, &wr, &wu);
        CHECK_EQ_U64(rc, RCPT_OK);
        CHECK(r == wr && u == wu);
    } else if (op < 95) {
        struct mmsg *m = &g->msg[msgid];
        bool want_read = t_rng() & 1;
        uint32_t off = (uint32_t)(t_rng() % 8 == 0 ? 0 : t_rng() % 60);
        uint32_t cnt = (uint32_t)(t_rng() % 4 == 0 ? UINT32_MAX : t_rng() % 40);
        struct uids got = {0, {0}};
        uint32_t n = 0, seen = 0, k = 0;
        bool ok = true;
        int rc = rcpt_list(s, gid, msgid, horizon, want_read, off, cnt, collect,
                           &got, &n);

        if (!m_visible(m, horizon)) {
            CHECK_EQ_U64(rc, RCPT_ENOMSG);
            return;
        }
        CHECK_EQ_U64(rc, RCPT_OK);
        /* The model's list: recipients in mapid order, filtered. */
        for (uint32_t mp = 0; mp < g->nmap; mp++) {
            uint32_t u = g->order[mp];

            if (!m->rcpt[u] || m->read[u] != want_read)
                continue;
            if (seen++ < off || k >= cnt)
                continue;
            ok = ok && k < got.n && got.v[k] == u;
            k++;
        }
        CHECK(ok && k == n && n == got.n);
    } else {
        rcpt_expire_step(s, horizon, 1 + t_rng() % 8);
    }
}

/* 60k random operations on 3 groups of up to 120 of 150 uids (a limit the
 * model hits), 400 msgids, time moving so that messages expire, checked
 * against the model reply by reply, with audits along the way. */
static void test_random_vs_model(void)
{
    struct rcpt_store *s = rcpt_create();
    struct mgroup *model = calloc(MG, sizeof(*model));
    uint64_t now = T0;

    for (int gi = 0; gi < MG; gi++)
        for (int u = 0; u < MU; u++)
            model[gi].mapid[u] = -1;
    for (int i = 0; i < 60000; i++) {
        now += t_rng() % 200; /* ~10 minutes of retention = ~6000 steps */
        random_step(s, model, now);
        if (i % 5000 == 4999)
            CHECK_EQ_U64(rcpt_audit(s), 0);
    }
    CHECK_EQ_U64(rcpt_audit(s), 0);
    free(model);
    rcpt_destroy(s);
}

/* ---- Randomized run of watermark shapes against a model ---------------- */

#define WG 3     /* groups */
#define WU 160   /* uids 0..WU-1 */
#define WMAP 140 /* member limit (mapids), 3 words */
#define WM 2400  /* msgids 0..WM-1 */

struct wmsg {
    bool exists;
    uint64_t ts_ms;
    uint32_t nmemb, sender; /* sender mapid or UINT32_MAX */
    bool rcpt[WMAP], read[WMAP];
};

struct wgroup {
    int32_t mapid[WU];  /* uid -> mapid, -1: none (never, or erased) */
    uint64_t uid[WMAP]; /* mapid -> uid, RCPT_UID_ANON once erased */
    bool quit[WMAP];
    uint32_t nmap;
    uint64_t next_msgid; /* in-order sends take this one */
    struct wmsg msg[WM];
};

static bool w_visible(const struct wmsg *m, uint64_t horizon)
{
    return m->exists && (m->ts_ms + 999) / 1000 * 1000 >= horizon;
}

/* A member of g picked at random (or a stranger now and then). */
static uint64_t w_pick_uid(const struct wgroup *g)
{
    if (g->nmap == 0 || t_rng() % 16 == 0)
        return t_rng() % WU;
    return g->uid[t_rng() % g->nmap];
}

static void w_send(struct rcpt_store *s, struct wgroup *g, uint64_t gid,
                   uint64_t msgid, uint64_t uid, uint64_t now, uint64_t h)
{
    struct wmsg *m = &g->msg[msgid];
    uint32_t n = 0, want = 0;
    int32_t sm = uid < WU ? g->mapid[uid] : -1;
    int rc = rcpt_send(s, gid, msgid, uid, now, h, &n);

    if (w_visible(m, h)) {
        uint32_t cnt = 0;

        for (uint32_t k = 0; k < WMAP; k++)
            cnt += m->rcpt[k];
        if ((sm >= 0 && (uint32_t)sm < m->nmemb ? (uint32_t)sm : UINT32_MAX) !=
            m->sender) {
            CHECK_EQ_U64(rc, RCPT_EEXIST);
        } else {
            CHECK_EQ_U64(rc, RCPT_OK);
            CHECK_EQ_U64(n, cnt);
        }
        return;
    }
    memset(m, 0, sizeof(*m));
    m->exists = true;
    m->ts_ms = now;
    m->nmemb = g->nmap;
    m->sender = sm >= 0 ? (uint32_t)sm : UINT32_MAX;
    for (uint32_t k = 0; k < g->nmap; k++)
        if (!g->quit[k] && k != m->sender) {
            m->rcpt[k] = true;
            want++;
        }
    CHECK_EQ_U64(rc, RCPT_OK);
    CHECK_EQ_U64(n, want);
}

/* Marks msgid read by mapid k in the model: 1 if newly. */
static uint32_t w_mark(struct wgroup *g, uint64_t msgid, int32_t k, uint64_t h)
{
    struct wmsg *m = &g->msg[msgid];

    if (k < 0 || !w_visible(m, h) || !m->rcpt[k] || m->read[k])
        return 0;
    m->read[k] = true;
    return 1;
}

static void w_check_msg(struct rcpt_store *s, const struct wgroup *g,
                        uint64_t gid, uint64_t msgid, uint64_t h)
{
    const struct wmsg *m = &g->msg[msgid];
    uint32_t r = 0, u = 0, wr = 0, wu = 0, n = 0, k = 0, off, cnt;
    bool want_read = t_rng() & 1, ok = true;
    struct uids got = {0, {0}};
    int rc = rcpt_count(s, gid, msgid, h, &r, &u);

    if (!w_visible(m, h)) {
        CHECK_EQ_U64(rc, RCPT_ENOMSG);
        return;
    }
    for (uint32_t i = 0; i < WMAP; i++)
        if (m->rcpt[i])
            (*(m->read[i] ? &wr : &wu))++;
    CHECK_EQ_U64(rc, RCPT_OK);
    CHECK(r == wr && u == wu);
    off = (uint32_t)(t_rng() % 4 == 0 ? 0 : t_rng() % 50);
    cnt = (uint32_t)(t_rng() % 4 == 0 ? UINT32_MAX : t_rng() % 40);
    CHECK_EQ_U64(
        rcpt_list(s, gid, msgid, h, want_read, off, cnt, collect, &got, &n),
        RCPT_OK);
    for (uint32_t mp = 0, seen = 0; mp < g->nmap; mp++) {
        if (!m->rcpt[mp] || m->read[mp] != want_read || seen++ < off ||
            k >= cnt)
            continue;
        ok = ok && k < got.n && got.v[k] == g->uid[mp];
        k++;
    }
    CHECK(ok && k == n && n == got.n);
}

static void w_step(struct rcpt_store *s, struct wgroup *model, uint64_t now)
{
    uint64_t h = now - AGE_MS;
    uint32_t gi = (uint32_t)(t_rng() % WG), op = (uint32_t)(t_rng() % 100);
    static const uint32_t span[WG] = {6, 40, WU};
    struct wgroup *g = &model[gi];
    uint64_t gid = 2000 + gi, uid = w_pick_uid(g) % span[gi];
    int32_t k = g->mapid[uid];

    if (op < 5) { /* join, or rejoin */
        uint32_t m = 0;
        int rc = rcpt_join(s, gid, uid, WMAP, &m);

        if (k < 0 && g->nmap >= WMAP) {
            CHECK_EQ_U64(rc, RCPT_ELIMIT);
            return;
        }
        if (k < 0) {
            k = g->mapid[uid] = (int32_t)g->nmap;
            g->uid[g->nmap++] = uid;
        }
        g->quit[k] = false;
        CHECK_EQ_U64(rc, RCPT_OK);
        CHECK_EQ_U64(m, (uint32_t)k);
    } else if (op < 8) {
        bool was = k >= 0 && !g->quit[k];

        if (k >= 0)
            g->quit[k] = true;
        CHECK_EQ_U64(rcpt_quit(s, gid, uid), was);
    } else if (op < 9 && t_rng() % 4 == 0) { /* USER.DEL */
        size_t n = 0;

        for (uint32_t i = 0; i < WG; i++) {
            int32_t km = model[i].mapid[uid];

            if (km < 0)
                continue;
            model[i].uid[km] = RCPT_UID_ANON;
            model[i].quit[km] = true;
            model[i].mapid[uid] = -1;
            n++;
        }
        CHECK_EQ_U64(rcpt_forget_user(s, uid), n);
    } else if (op < 25) { /* send: mostly the next msgid, some late */
        uint64_t msgid = g->next_msgid;

        if (t_rng() % 8 == 0 && msgid > 0)
            msgid = t_rng() % msgid;
        else if (g->next_msgid + 3 < WM)
            g->next_msgid += 1 + t_rng() % 3;
        w_send(s, g, gid, msgid, uid, now, h);
    } else if (op < 50) { /* the reader's first unread message, in order */
        uint64_t msgid = 0;

        while (k >= 0 && msgid < WM &&
               !(w_visible(&g->msg[msgid], h) && g->msg[msgid].rcpt[k] &&
                 !g->msg[msgid].read[k]))
            msgid++;
        if (msgid == WM)
            msgid = t_rng() % WM;
        CHECK_EQ_U64(rcpt_read(s, gid, uid, msgid, h), w_mark(g, msgid, k, h));
    } else if (op < 62) { /* out of order, recent mostly */
        uint64_t msgid = t_rng() % (g->next_msgid + 1);

        CHECK_EQ_U64(rcpt_read(s, gid, uid, msgid, h), w_mark(g, msgid, k, h));
    } else if (op < 66) { /* several at once (repeats included) */
        uint64_t ids[4], n = 0, want = 0;

        for (int i = 0; i < 4; i++) {
            ids[i] = t_rng() % (g->next_msgid + 1);
            if (i == 3)
                ids[i] = ids[0];
            want += w_mark(g, ids[i], k, h);
        }
        CHECK_EQ_U64(rcpt_mark_read(s, gid, uid, ids, 4, h, &n), RCPT_OK);
        CHECK_EQ_U64(n, want);
    } else if (op < 76) { /* READUPTO, recent mostly */
        uint64_t upto = g->next_msgid - t_rng() % 40, want = 0;

        if (t_rng() % 8 == 0)
            upto = t_rng() % WM;
        for (uint64_t i = 0; i <= upto && i < WM; i++)
            want += w_mark(g, i, k, h);
        CHECK_EQ_U64(rcpt_read_upto(s, gid, uid, upto, h), want);
    } else if (op < 97) {
        uint64_t msgid =
            t_rng() % 2 ? t_rng() % (g->next_msgid + 1) : t_rng() % WM;

        w_check_msg(s, g, gid, msgid, h);
    } else {
        rcpt_expire_step(s, h, 1 + t_rng() % 8);
    }
}

/* What a walk shows of the read marks: the shapes the store is in. */
struct shapes {
    size_t msgs, reads, gaps, parked, open;
};

static void sh_group(uint64_t gid, uint32_t nmap, void *ctx)
{
    (void)gid, (void)nmap, (void)ctx;
}

static void sh_member(uint64_t uid, bool quit, void *ctx)
{
    (void)uid, (void)quit, (void)ctx;
}

static void sh_epoch(uint32_t nwords, const uint64_t *quit, void *ctx)
{
    (void)nwords, (void)quit, (void)ctx;
}

static void sh_msg(const struct rcpt_msg_info *m, void *ctx)
{
    struct shapes *sh = ctx;

    sh->msgs++;
    sh->reads += m->reads != NULL;
}

static void sh_marks(uint32_t ngaps, void *ctx)
{
    ((struct shapes *)ctx)->gaps += ngaps;
}

static void sh_mark(uint32_t w, uint32_t qfrom, void *ctx)
{
    struct shapes *sh = ctx;

    sh->parked += w == RCPT_PARKED;
    sh->open += qfrom != RCPT_NOPOS;
}

static void sh_gap(const struct rcpt_gap *gp, void *ctx)
{
    (void)gp, (void)ctx;
}

static struct shapes shapes_of(const struct rcpt_store *s)
{
    static const struct rcpt_walk walk = {sh_group, sh_member, sh_epoch, sh_msg,
                                          sh_marks, sh_mark,   sh_gap};
    struct shapes sh = {0, 0, 0, 0, 0};
    uint64_t cursor = 0;

    do
        rcpt_scan(s, &cursor, 16, &walk, &sh);
    while (cursor != 0);
    return sh;
}

/* 40k random operations on 3 groups (up to 6, 40 and 140 members of 160
 * uids) where msgids mostly grow, so that watermarks carry most reads and
 * out-of-order reads, late msgids, quits, rejoins, erased users and
 * retention meet them; every answer checked against the model, the store
 * audited every few steps. */
static void test_random_watermarks(void)
{
    struct rcpt_store *s = rcpt_create();
    struct wgroup *model = calloc(WG, sizeof(*model));
    uint64_t now = T0;
    size_t bad = 0;
    struct shapes seen = {0, 0, 0, 0, 0};

    for (int gi = 0; gi < WG; gi++)
        for (int u = 0; u < WU; u++)
            model[gi].mapid[u] = -1;
    for (int i = 0; i < 40000; i++) {
        now += t_rng() % 120;
        w_step(s, model, now);
        if (i % 7 == 0)
            bad += rcpt_audit(s) != 0;
        if (i % 1000 == 999) {
            struct shapes sh = shapes_of(s);

            seen.reads += sh.reads > 0;
            seen.gaps += sh.gaps > 0;
            seen.parked += sh.parked > 0;
            seen.open += sh.open > 0;
            /* watermarks carry most reads: few bitmaps */
            seen.msgs += sh.reads * 2 < sh.msgs;
        }
    }
    CHECK_EQ_U64(bad, 0);
    /* every shape met, most of the time */
    CHECK(seen.reads > 20 && seen.gaps > 20 && seen.parked > 20 &&
          seen.open > 20 && seen.msgs > 20);
    CHECK_EQ_U64(rcpt_audit(s), 0);
    free(model);
    rcpt_destroy(s);
}

/* ---- Erasing a user (USER.DEL) ---------------------------------------- */

struct groups_seen {
    size_t n;
    uint32_t quit;
};

static void group_visit(uint64_t gid, uint32_t mapid, bool quit, void *ctx)
{
    struct groups_seen *g = ctx;

    (void)gid, (void)mapid;
    g->n++;
    g->quit += quit;
}

/* Copies a store through rcpt_scan and rcpt_restore_* (the snapshot's
 * path), counting failed restores. */
struct copy {
    struct rcpt_store *dst;
    uint64_t gid;
    size_t bad;
    uint32_t nmap, nmarks, ngaps, want_gaps;
    uint32_t w[512], qfrom[512];
    struct rcpt_gap gaps[512];
};

static void copy_group(uint64_t gid, uint32_t nmap, void *ctx)
{
    struct copy *c = ctx;

    c->gid = gid;
    c->nmap = nmap;
    c->nmarks = c->ngaps = 0;
    c->bad += rcpt_restore_group(c->dst, gid) != RCPT_OK || nmap > 512;
}

static void copy_member(uint64_t uid, bool quit, void *ctx)
{
    struct copy *c = ctx;

    c->bad += rcpt_restore_member(c->dst, c->gid, uid, quit) != RCPT_OK;
}

static void copy_epoch(uint32_t nwords, const uint64_t *quit, void *ctx)
{
    struct copy *c = ctx;

    c->bad += rcpt_restore_epoch(c->dst, c->gid, nwords, quit) != RCPT_OK;
}

static void copy_msg(const struct rcpt_msg_info *mi, void *ctx)
{
    struct copy *c = ctx;

    c->bad += rcpt_restore_msg(c->dst, c->gid, mi) != RCPT_OK;
}

/* The marks are set when the last of them (or of the gaps) came. */
static void copy_done(struct copy *c)
{
    if (c->nmarks == c->nmap && c->ngaps == c->want_gaps)
        c->bad += rcpt_restore_marks(c->dst, c->gid, c->nmap, c->w, c->qfrom,
                                     c->ngaps, c->gaps) != RCPT_OK;
}

static void copy_marks(uint32_t ngaps, void *ctx)
{
    struct copy *c = ctx;

    c->want_gaps = ngaps;
    c->bad += ngaps > 512;
    copy_done(c);
}

static void copy_mark(uint32_t w, uint32_t qfrom, void *ctx)
{
    struct copy *c = ctx;

    c->w[c->nmarks] = w;
    c->qfrom[c->nmarks++] = qfrom;
    copy_done(c);
}

static void copy_gap(const struct rcpt_gap *gp, void *ctx)
{
    struct copy *c = ctx;

    c->gaps[c->ngaps++] = *gp;
    copy_done(c);
}

/*
 * The erased user's receipts keep counting under an anonymous mapid that
 * no uid maps to, marked quit; the uid joins again as a new member;
 * RCPT_UID_ANON itself cannot join; a store with erased users survives the
 * snapshot path.
 */
static void test_forget_user(void)
{
    static const struct rcpt_walk walk = {copy_group, copy_member, copy_epoch,
                                          copy_msg,   copy_marks,  copy_mark,
                                          copy_gap};
    static struct copy c;
    struct rcpt_store *s = rcpt_create(), *t = rcpt_create();
    struct groups_seen g = {0, 0};
    uint64_t cursor = 0;
    uint32_t m;

    c.dst = t;
    for (uint64_t gid = 1; gid <= 2; gid++) {
        join(s, gid, 10);
        join(s, gid, 20);
        join(s, gid, 30);
    }
    CHECK_EQ_U64(send(s, 1, 100, 10), 2);
    CHECK_EQ_U64(rcpt_read(s, 1, 20, 100, NO_HORIZON), 1);
    CHECK_EQ_U64(rcpt_user_info(s, 20, group_visit, &g), 2);
    CHECK_EQ_U64(g.quit, 0);
    CHECK_EQ_U64(rcpt_forget_user(s, 20), 2);
    CHECK_EQ_U64(rcpt_forget_user(s, 20), 0);
    g = (struct groups_seen){0, 0};
    CHECK_EQ_U64(rcpt_user_info(s, 20, group_visit, &g), 0);
    CHECK(count_is(s, 1, 100, 1, 1)); /* the read stays counted */
    CHECK(strcmp(list(s, 1, 100, true, 0, 10), "18446744073709551615") == 0);
    CHECK_EQ_U64(rcpt_read(s, 1, 20, 100, NO_HORIZON), 0);
    CHECK_EQ_U64(send(s, 1, 101, 10), 1); /* the erased mapid quit */
    CHECK_EQ_U64(join(s, 1, 20), 3);      /* a new member */
    CHECK_EQ_U64(send(s, 1, 102, 10), 2);
    CHECK_EQ_U64(rcpt_join(s, 1, RCPT_UID_ANON, 100000, &m), RCPT_EANON);
    CHECK_EQ_U64(rcpt_audit(s), 0);
    do
        rcpt_scan(s, &cursor, 1, &walk, &c);
    while (cursor != 0);
    CHECK_EQ_U64(c.bad, 0);
    CHECK_EQ_U64(rcpt_audit(t), 0);
    CHECK(count_is(t, 1, 100, 1, 1));
    CHECK(count_is(t, 1, 102, 0, 2));
    CHECK_EQ_U64(join(t, 2, 20), 3);
    CHECK_EQ_U64(rcpt_restore_member(t, 2, RCPT_UID_ANON, false), 1);
    rcpt_destroy(s);
    rcpt_destroy(t);
}

int main(void)
{
    T_RUN(test_empty);
    T_RUN(test_mapids);
    T_RUN(test_recipients);
    T_RUN(test_list_paging);
    T_RUN(test_read_upto);
    T_RUN(test_resend);
    T_RUN(test_limits);
    T_RUN(test_retention);
    T_RUN(test_retention_out_of_order);
    T_RUN(test_sharing_and_collapse);
    T_RUN(test_index_migration);
    T_RUN(test_watermarks);
    T_RUN(test_quit_behind_expired);
    T_RUN(test_late_msgids);
    T_RUN(test_random_vs_model);
    T_RUN(test_random_watermarks);
    T_RUN(test_forget_user);
    T_END();
}
