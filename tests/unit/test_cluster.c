/*
 * test_cluster.c - cluster.c's table alone: nodes.conf parsing, the
 * config-epoch rule when records arrive, the routing question's answers.
 * No event loop: links are made but never connect.
 */
#include <stdio.h>
#include <string.h>

#include "cluster.h"
#include "exec.h"
#include "reply.h"
#include "server.h"
#include "t.h"

static struct server srv;

#define ID_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define ID_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define ID_C "cccccccccccccccccccccccccccccccccccccccc"
#define ID_0 "0000000000000000000000000000000000000000"

static struct cluster *fresh(const char *conf)
{
    struct cluster *c;
    char err[256] = "";

    config_init(&srv.cfg);
    srv.cfg.cluster_enabled = true;
    c = cluster_create(&srv);
    CHECK(c != NULL);
    if (conf != NULL && cluster_config_parse(c, conf, strlen(conf), "test", err,
                                             sizeof(err)) != 0) {
        fprintf(stderr, "parse: %s\n", err);
        CHECK(0);
    }
    c->started = true;
    srv.cluster = c;
    return c;
}

static void done(struct cluster *c)
{
    srv.cluster = NULL;
    cluster_destroy(c);
}

static const char conf3[] =
    ID_A " 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-5460\n" ID_B
         " 127.0.0.1:7002@17002 master - 0 0 2 connected 5461-10922\n" ID_C
         " 127.0.0.1:7003@17003 master - 0 0 3 connected 10923-16383\n"
         "vars currentEpoch 3 lastVoteEpoch 0\n";

static void test_parse(void)
{
    struct cluster *c = fresh(conf3);
    char err[256];
    static const char *const bad[] = {
        /* no myself */
        ID_B " 127.0.0.1:7002@17002 master - 0 0 2 connected\n",
        /* a bad id, address, epoch, slot */
        "xyz 127.0.0.1:7001@17001 myself,master - 0 0 1 connected\n",
        ID_A " 127.0.0.1:7001 myself,master - 0 0 1 connected\n",
        ID_A " 127.0.0.1:7001@17001 myself,master - 0 0 x connected\n",
        ID_A " 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 16384\n",
        ID_A " 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 9-3\n",
        /* too few fields, twice myself */
        ID_A " 127.0.0.1:7001@17001 myself,master\n",
        ID_A " 127.0.0.1:7001@17001 myself,master - 0 0 1 connected\n" ID_B
             " 127.0.0.1:7002@17002 myself,master - 0 0 2 connected\n",
    };

    CHECK_EQ_U64(cluster_known_nodes(c), 3);
    CHECK_EQ_U64(c->assigned, 16384);
    CHECK_EQ_U64(c->current_epoch, 3);
    CHECK(strcmp(c->nodes[0].id, ID_A) == 0);
    CHECK_EQ_U64(c->nodes[0].nslots, 5461);
    CHECK(strcmp(cluster_slot_owner(c, 8000)->id, ID_B) == 0);
    CHECK_EQ_U64(cluster_slot_owner(c, 16383)->port, 7003);
    done(c);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        config_init(&srv.cfg);
        c = cluster_create(&srv);
        CHECK(cluster_config_parse(c, bad[i], strlen(bad[i]), "f", err,
                                   sizeof(err)) != 0);
        CHECK(strncmp(err, "f", 1) == 0);
        cluster_destroy(c);
    }
    /* The line is named. */
    config_init(&srv.cfg);
    c = cluster_create(&srv);
    {
        const char two[] = ID_A " 127.0.0.1:7001@17001 myself,master - 0 0 1 "
                                "connected\nnonsense\n";
        CHECK(cluster_config_parse(c, two, strlen(two), "nodes.conf", err,
                                   sizeof(err)) != 0);
        CHECK(strstr(err, "line 2") != NULL);
    }
    cluster_destroy(c);
}

static struct cluster_record rec(const char *id, uint32_t port, bool master,
                                 uint64_t epoch, uint64_t version,
                                 const uint16_t *ranges, size_t n)
{
    struct cluster_record r = {0};

    r.id = id;
    r.id_len = strlen(id);
    r.ip = "127.0.0.1";
    r.ip_len = 9;
    r.port = port;
    r.cport = port + 10000;
    r.master = master;
    r.config_epoch = epoch;
    r.current_epoch = epoch;
    r.version = version;
    r.ranges = ranges;
    r.nranges = n;
    return r;
}

static void test_epoch_rule(void)
{
    struct cluster *c = fresh(conf3);
    char err[128];
    static const uint16_t b_all[] = {5461, 10922, 0, 99};
    static const uint16_t b_less[] = {5461, 10000};
    struct cluster_record r;

    /* B claims 0-99 at epoch 2 (A owns them at 1): B wins them. */
    r = rec(ID_B, 7002, true, 2, 10, b_all, 2);
    CHECK(cluster_merge_record(c, &r, NULL, err, sizeof(err)) == 0);
    CHECK(strcmp(cluster_slot_owner(c, 50)->id, ID_B) == 0);
    CHECK_EQ_U64(c->nodes[0].nslots, 5461 - 100);
    /* An older record (version 9) changes nothing. */
    r = rec(ID_B, 7002, true, 2, 9, b_less, 1);
    CHECK(cluster_merge_record(c, &r, NULL, err, sizeof(err)) == 0);
    CHECK(strcmp(cluster_slot_owner(c, 50)->id, ID_B) == 0);
    /* A newer one that no longer claims 10001-10922 and 0-99 releases
     * them (nobody serves them now). */
    r = rec(ID_B, 7002, true, 2, 11, b_less, 1);
    CHECK(cluster_merge_record(c, &r, NULL, err, sizeof(err)) == 0);
    CHECK(cluster_slot_owner(c, 50) == NULL);
    CHECK(cluster_slot_owner(c, 10500) == NULL);
    CHECK_EQ_U64(c->assigned, 16384 - 100 - 922);
    /* C claims B's slots at a lower epoch than B's: B keeps them. */
    {
        static const uint16_t c_grab[] = {5461, 5470, 10923, 16383};
        r = rec(ID_C, 7003, true, 1, 20, c_grab, 2);
        CHECK(cluster_merge_record(c, &r, NULL, err, sizeof(err)) == 0);
        CHECK(strcmp(cluster_slot_owner(c, 5465)->id, ID_B) == 0);
    }
    /* Malformed records. */
    {
        static const uint16_t bad[] = {9, 3};
        r = rec(ID_B, 7002, true, 2, 30, bad, 1);
        CHECK(cluster_merge_record(c, &r, NULL, err, sizeof(err)) != 0);
        r = rec("short", 7002, true, 2, 30, NULL, 0);
        CHECK(cluster_merge_record(c, &r, NULL, err, sizeof(err)) != 0);
        r = rec(ID_A, 7001, true, 2, 30, NULL, 0); /* myself */
        CHECK(cluster_merge_record(c, &r, NULL, err, sizeof(err)) != 0);
    }
    done(c);
}

static void test_losing_every_slot_makes_a_replica(void)
{
    struct cluster *c = fresh(conf3);
    char err[128];
    static const uint16_t all_a[] = {0, 5460};
    struct cluster_record r = rec(ID_0, 7009, true, 7, 1, all_a, 1);

    /* A promoted replica, a new node to this table, claims every slot of
     * A at epoch 7: A gives them up and follows it. */
    CHECK(cluster_merge_record(c, &r, NULL, err, sizeof(err)) == 0);
    CHECK_EQ_U64(c->nodes[0].nslots, 0);
    CHECK(!cluster_myself_master(c));
    CHECK(strcmp(c->nodes[0].master_id, ID_0) == 0);
    CHECK(strcmp(cluster_slot_owner(c, 0)->id, ID_0) == 0);
    CHECK_EQ_U64(c->current_epoch, 7);
    done(c);
}

static void test_epoch_collision(void)
{
    /* Myself A (smaller id than B) with B's epoch: A bumps its own. */
    static const char conf[] =
        ID_A " 127.0.0.1:7001@17001 myself,master - 0 0 2 connected 0-10\n"
             "vars currentEpoch 2 lastVoteEpoch 0\n";
    struct cluster *c = fresh(conf);
    static const uint16_t b_r[] = {11, 20};
    struct cluster_record r = rec(ID_B, 7002, true, 2, 1, b_r, 1);
    char err[128];

    CHECK(cluster_merge_record(c, &r, NULL, err, sizeof(err)) == 0);
    CHECK_EQ_U64(c->nodes[0].config_epoch, 3);
    CHECK_EQ_U64(c->current_epoch, 3);
    done(c);
}

/* The reply of cluster_refuse to op with args, as RESP text ("" when it
 * would run here). */
static const char *ask(struct cluster *c, const char *name, uint32_t argc,
                       const struct ur_arg *argv)
{
    static struct ur_buf out;
    static char text[256];
    struct session sess = {.authed = true};
    struct reply r;
    bool refused;

    (void)c;
    out.len = 0;
    reply_begin(&r, &out, REPLY_RESP, 0);
    refused = cluster_refuse(&srv, &sess, ur_op_by_name(name, strlen(name)),
                             argc, argv, &r);
    reply_end(&r);
    if (!refused)
        return "";
    snprintf(text, sizeof(text), "%.*s", (int)out.len, out.data);
    return text;
}

static struct ur_arg num(uint64_t v)
{
    return (struct ur_arg){.kind = UR_ARG_INT, .num = v};
}

static struct ur_arg str(const char *s)
{
    return (struct ur_arg){
        .kind = UR_ARG_STR, .len = (uint32_t)strlen(s), .str = s};
}

static void test_routing(void)
{
    struct cluster *c = fresh(conf3);
    struct ur_arg a[3];
    uint64_t mine = 0, theirs = 0;

    /* 42 is slot 8000 (B's); find a uid of A's. */
    while (ur_u64_slot(mine) > 5460)
        mine++;
    while (ur_u64_slot(theirs) <= 10922)
        theirs++;
    a[0] = num(mine), a[1] = num(1);
    CHECK(strcmp(ask(c, "CNT.INCR", 2, a), "") == 0);
    a[0] = num(42);
    CHECK(strcmp(ask(c, "CNT.INCR", 2, a), "-MOVED 8000 127.0.0.1:7002\r\n") ==
          0);
    a[0] = str("42");
    CHECK(strcmp(ask(c, "CNT.GET", 2, a), "-MOVED 8000 127.0.0.1:7002\r\n") ==
          0);
    a[0] = str("042");
    CHECK(strncmp(ask(c, "CNT.GET", 2, a), "-ERR cluster mode", 17) == 0);
    /* Global writes by their object, RCPT by the group, admin: here. */
    a[0] = num(42);
    CHECK(strncmp(ask(c, "BC.PUBLISH", 1, a), "-MOVED 8000", 11) == 0);
    CHECK(strncmp(ask(c, "RCPT.COUNT", 2, a), "-MOVED 8000", 11) == 0);
    CHECK(strcmp(ask(c, "PING", 0, a), "") == 0);
    /* Many uids: one slot, or CROSSSLOT. */
    a[0] = num(mine), a[1] = num(theirs);
    CHECK(
        strcmp(ask(c, "USER.MBADGE", 2, a),
               "-CROSSSLOT Keys in request don't hash to the same slot\r\n") ==
        0);
    a[1] = num(mine);
    CHECK(strcmp(ask(c, "USER.MBADGE", 2, a), "") == 0);
    /* A slot with no node, then the cluster down for the rest. */
    {
        uint16_t s = 8000;
        char err[128];
        CHECK(cluster_del_slots(c, &s, 1, err, sizeof(err)) == 0);
        CHECK(cluster_del_slots(c, &s, 1, err, sizeof(err)) != 0);
        a[0] = num(42);
        CHECK(strcmp(ask(c, "CNT.GET", 2, a),
                     "-CLUSTERDOWN Hash slot not served\r\n") == 0);
        a[0] = num(mine);
        CHECK(strcmp(ask(c, "CNT.GET", 2, a),
                     "-CLUSTERDOWN The cluster is down\r\n") == 0);
        srv.cfg.cluster_require_full_coverage = false;
        CHECK(strcmp(ask(c, "CNT.GET", 2, a), "") == 0);
        CHECK(cluster_add_slots(c, &s, 1, err, sizeof(err)) == 0);
        CHECK(cluster_add_slots(c, &s, 1, err, sizeof(err)) != 0);
        CHECK(strstr(err, "busy") != NULL);
    }
    done(c);
}

int main(void)
{
    T_RUN(test_parse);
    T_RUN(test_epoch_rule);
    T_RUN(test_losing_every_slot_makes_a_replica);
    T_RUN(test_epoch_collision);
    T_RUN(test_routing);
    T_END();
}
