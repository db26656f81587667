/*
 * test_pubsub.c - the pub/sub registry (server/pubsub.c) without a
 * network: Redis's glob, the "might match a prefix" test that keeps
 * pattern matching off the write path, subscriptions from both sides,
 * numbered channels, and delivery to fake clients in each protocol.
 */
#include <stdlib.h>
#include <string.h>

#include "clients.h"
#include "exec.h"
#include "pubsub.h"
#include "server.h"
#include "t.h"

static struct server srv;

static bool glob(const char *p, const char *s)
{
    return pubsub_glob(p, strlen(p), s, strlen(s));
}

static bool gprefix(const char *p, const char *prefix)
{
    return pubsub_glob_prefix(p, strlen(p), prefix, strlen(prefix));
}

static void test_glob(void)
{
    CHECK(glob("*", ""));
    CHECK(glob("*", "anything"));
    CHECK(glob("a*", "a"));
    CHECK(glob("a*c", "abbbc"));
    CHECK(!glob("a*c", "abbbd"));
    CHECK(glob("h?llo", "hello"));
    CHECK(!glob("h?llo", "hllo"));
    CHECK(glob("h[ae]llo", "hallo"));
    CHECK(!glob("h[ae]llo", "hillo"));
    CHECK(glob("h[^e]llo", "hallo"));
    CHECK(!glob("h[^e]llo", "hello"));
    CHECK(glob("h[a-b]llo", "hbllo"));
    CHECK(glob("h[b-a]llo", "hallo")); /* Redis swaps a reversed range */
    CHECK(!glob("h[a-b]llo", "hcllo"));
    CHECK(glob("a\\*b", "a*b"));
    CHECK(!glob("a\\*b", "axb"));
    CHECK(glob("[\\]]", "]"));
    CHECK(!glob("abc", "ABC")); /* case-sensitive */
    CHECK(glob("badge:*", "badge:42"));
    CHECK(!glob("badge:?", "badge:42"));
    CHECK(glob("*:*:*", "a:b:c"));
    CHECK(!glob("", "x"));
    CHECK(glob("", ""));
    /* Binary bytes. */
    CHECK(pubsub_glob("a?c", 3, "a\0c", 3));
    /* A pattern that explodes a naive recursive matcher stays linear in
     * its tries. */
    {
        char s[4001], p[] = "*a*a*a*a*a*a*a*a*a*a*a*b";

        memset(s, 'a', 4000);
        s[4000] = '\0';
        CHECK(!glob(p, s));
    }
}

static void test_glob_prefix(void)
{
    CHECK(gprefix("badge:*", "badge:"));
    CHECK(gprefix("*", "badge:"));
    CHECK(gprefix("b*", "badge:"));
    CHECK(gprefix("*:1", "badge:"));
    CHECK(gprefix("badge:1?", "badge:"));
    CHECK(gprefix("[a-c]adge:*", "badge:"));
    CHECK(gprefix("badge:", "badge:")); /* needs digits after: still "yes" */
    CHECK(gprefix("b?dge*", "badge:"));
    CHECK(gprefix("**badge**", "badge:"));
    CHECK(!gprefix("bad", "badge:"));
    CHECK(!gprefix("x*", "badge:"));
    CHECK(!gprefix("badge", "badge:"));
    CHECK(!gprefix("bc:*", "badge:"));
    CHECK(!gprefix("[^b]*", "badge:"));
    CHECK(gprefix("bc:*", "bc:"));
    CHECK(!gprefix("grp:*", "bc:"));
    {
        /* A long pattern (heap state). */
        char p[300];

        memset(p, '?', sizeof(p) - 2);
        p[sizeof(p) - 2] = '*';
        p[sizeof(p) - 1] = '\0';
        CHECK(gprefix(p, "badge:"));
    }
}

/* ---- fake clients ------------------------------------------------------ */

struct fake {
    struct session sess;
    struct client cl;
    struct ur_buf out;
    unsigned pushes;
};

static struct ur_buf *fake_out(struct client *cl)
{
    struct fake *f =
        (struct fake *)(void *)((char *)cl - offsetof(struct fake, cl));
    return &f->out;
}

static bool fake_done(struct client *cl)
{
    struct fake *f =
        (struct fake *)(void *)((char *)cl - offsetof(struct fake, cl));
    f->pushes++;
    return true;
}

static const struct client_io fake_io = {NULL, NULL, fake_out, fake_done};

static void fake_init(struct fake *f, uint64_t id, enum reply_proto proto)
{
    memset(f, 0, sizeof(*f));
    f->sess.id = id;
    f->sess.proto = (uint8_t)proto;
    f->sess.client = &f->cl;
    f->cl.sess = &f->sess;
    f->cl.io = &fake_io;
    clients_add(&srv, &f->cl, 0);
}

static void fake_deinit(struct fake *f)
{
    clients_remove(&srv, &f->cl);
    ur_buf_deinit(&f->out);
}

static bool out_is(struct fake *f, const char *want, size_t n)
{
    bool ok = f->out.len == n && memcmp(f->out.data, want, n) == 0;

    f->out.len = 0;
    return ok;
}

static int sub(struct fake *f, const char *name, bool pattern)
{
    return pubsub_subscribe(&srv, &f->cl, name, strlen(name), pattern);
}

static uint64_t pub(const char *ch, const char *msg)
{
    return pubsub_publish(&srv, ch, strlen(ch), msg, strlen(msg));
}

static void test_subscriptions_and_delivery(void)
{
    struct fake a, b, c;
    int badge = pubsub_prefix(&srv.pubsub, "badge:");

    CHECK(badge >= 0);
    fake_init(&a, 1, REPLY_RESP);
    fake_init(&b, 2, REPLY_RESP3);
    fake_init(&c, 3, REPLY_BIN);
    CHECK(pubsub_idle(&srv.pubsub));
    CHECK(!pubsub_watched(&srv.pubsub, (unsigned)badge, 42));
    /* Registering a prefix once anything is subscribed is refused. */
    CHECK_EQ_U64(sub(&a, "news", false), 1);
    CHECK(pubsub_prefix(&srv.pubsub, "late:") < 0);
    CHECK_EQ_U64(sub(&a, "news", false), 0); /* already */
    CHECK_EQ_U64(a.sess.subs, 1);
    CHECK_EQ_U64(sub(&b, "news", false), 1);
    CHECK_EQ_U64(sub(&c, "n*", true), 1);
    CHECK_EQ_U64(pubsub_numsub(&srv.pubsub, "news", 4), 2);
    CHECK_EQ_U64(pubsub_numpat(&srv.pubsub), 1);
    CHECK_EQ_U64(srv.pubsub.sub_clients, 3);

    CHECK_EQ_U64(pub("news", "hi"), 3);
    CHECK(out_is(&a, "*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$2\r\nhi\r\n", 35));
    CHECK(out_is(&b, ">3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$2\r\nhi\r\n", 35));
    /* Binary: a push frame (id 0, flag 1) holding the pmessage array. */
    CHECK(c.out.len > 16 && (unsigned char)c.out.data[0] == 0xB7);
    CHECK(c.out.data[4] == 0 && c.out.data[14] == 1);
    CHECK(c.out.len > 16 && c.out.data[16] == 0x03 && c.out.data[17] == 4);
    c.out.len = 0;
    CHECK_EQ_U64(pub("nope", "x"), 1); /* the pattern */
    CHECK_EQ_U64(pub("other", "x"), 0);
    c.out.len = 0;

    /* Numbered channels: an exact one, then a pattern that might match. */
    CHECK(!pubsub_watched(&srv.pubsub, (unsigned)badge, 42));
    CHECK_EQ_U64(sub(&a, "badge:42", false), 1);
    CHECK_EQ_U64(sub(&a, "badge:042", false), 1); /* not canonical */
    CHECK(pubsub_watched(&srv.pubsub, (unsigned)badge, 42));
    CHECK(!pubsub_watched(&srv.pubsub, (unsigned)badge, 43));
    CHECK_EQ_U64(sub(&b, "b*", true), 1);
    CHECK(pubsub_watched(&srv.pubsub, (unsigned)badge, 43));
    CHECK_EQ_U64(pubsub_unsubscribe(&srv, &b.cl, "b*", 2, true), 1);
    CHECK_EQ_U64(pubsub_unsubscribe(&srv, &b.cl, "b*", 2, true), 0);
    CHECK(!pubsub_watched(&srv.pubsub, (unsigned)badge, 43));
    CHECK_EQ_U64(pubsub_unsubscribe(&srv, &a.cl, "badge:42", 8, false), 1);
    CHECK(!pubsub_watched(&srv.pubsub, (unsigned)badge, 42));

    /* Many clients on one channel, many channels on one client: leaving
     * from either side keeps both lists whole. */
    {
        struct fake many[50];
        char name[32];

        for (int i = 0; i < 50; i++) {
            fake_init(&many[i], 100 + (uint64_t)i, REPLY_RESP);
            CHECK_EQ_U64(sub(&many[i], "big", false), 1);
        }
        for (int i = 0; i < 300; i++) {
            snprintf(name, sizeof(name), "ch%d", i);
            CHECK_EQ_U64(sub(&a, name, false), 1);
        }
        CHECK_EQ_U64(pubsub_numchannels(&srv.pubsub), 303);
        for (int i = 0; i < 50; i += 2)
            fake_deinit(&many[i]);
        CHECK_EQ_U64(pub("big", "m"), 25);
        for (int i = 1; i < 50; i += 2) {
            CHECK_EQ_U64(many[i].pushes, 1);
            fake_deinit(&many[i]);
        }
        CHECK_EQ_U64(pubsub_numsub(&srv.pubsub, "big", 3), 0);
        for (int i = 0; i < 300; i += 3) {
            snprintf(name, sizeof(name), "ch%d", i);
            CHECK_EQ_U64(
                pubsub_unsubscribe(&srv, &a.cl, name, strlen(name), false), 1);
        }
        CHECK_EQ_U64(pubsub_client_count(&a.cl, false), 2 + 200);
        CHECK_EQ_U64(pub("ch1", "x"), 1); /* a only: n* does not match */
    }
    fake_deinit(&a);
    fake_deinit(&b);
    fake_deinit(&c);
    CHECK(pubsub_idle(&srv.pubsub));
    CHECK_EQ_U64(srv.pubsub.subscriptions, 0);
    CHECK_EQ_U64(srv.pubsub.sub_clients, 0);
    CHECK_EQ_U64(pubsub_numchannels(&srv.pubsub), 0);
}

int main(void)
{
    config_init(&srv.cfg);
    if (pubsub_setup(&srv.pubsub, 12345) != 0)
        return 1;
    T_RUN(test_glob);
    T_RUN(test_glob_prefix);
    T_RUN(test_subscriptions_and_delivery);
    pubsub_teardown(&srv.pubsub);
    T_END();
}
