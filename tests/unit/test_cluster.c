/*
 * test_cluster.c - cluster.c's table alone: nodes.conf parsing, the
 * config-epoch rule when records arrive, the routing question's answers.
 * No event loop: links are made but never connect.
 */
#include <stdio.h>
#include <string.h>

#include "cluster.h"
#include "cluster_keys.h"
#include "db.h"
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

/* The per-slot id sets against a plain reference: adds, deletes (the
 * backward shift of linear probing), lookups, counts. */
static void test_key_index(void)
{
    struct cluster *c = fresh(conf3);
    struct ckeys *k = c->keys;
    static bool ref[4096];
    size_t n = 0;

    CHECK(db_init(&srv.db) == 0);
    CHECK(!ckeys_built(k));
    CHECK(ckeys_add(k, 5) == 0 && !ckeys_has(k, 5)); /* not built: no-op */
    CHECK(cluster_keys_rebuild(&srv) == 0);          /* empty db */
    CHECK(ckeys_built(k));
    for (int i = 0; i < 200000; i++) {
        uint64_t id = t_rng() % 4096;

        if (t_rng() % 3 != 0) {
            CHECK(ckeys_add(k, id) == 0);
            n += !ref[id];
            ref[id] = true;
        } else {
            CHECK(ckeys_del(k, id) == ref[id]);
            n -= ref[id];
            ref[id] = false;
        }
    }
    CHECK_EQ_U64(ckeys_entries(k), n);
    for (uint64_t id = 0; id < 4096; id++)
        CHECK(ckeys_has(k, id) == ref[id]);
    CHECK(ckeys_bytes(k) > 16384 * 16);
    ckeys_invalidate(k);
    CHECK(!ckeys_built(k) && ckeys_entries(k) == 0);
    CHECK(!ckeys_has(k, 1));
    db_deinit(&srv.db);
    done(c);
}

#define MARKS                                                                  \
    ID_A " 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-5460 "       \
         "[100->-" ID_B "] [6000-<-" ID_B "]\n" ID_B                           \
         " 127.0.0.1:7002@17002 master - 0 0 2 connected 5461-10922\n" ID_C    \
         " 127.0.0.1:7003@17003 master - 0 0 3 connected 10923-16383\n"        \
         "vars currentEpoch 3 lastVoteEpoch 0\n"

/* SETSLOT's states: Redis's errors, the marks in nodes.conf read back,
 * the routing of a slot in motion, and the end of a move. */
static void test_migration_states(void)
{
    struct cluster *c = fresh(MARKS);
    uint32_t b = cluster_node_by_id(c, ID_B, 40);
    char err[256];

    CHECK(db_init(&srv.db) == 0);
    CHECK_EQ_U64(c->migrating[100], b);
    CHECK_EQ_U64(c->importing[6000], b);
    CHECK_EQ_U64(c->nopen, 2);
    CHECK(cluster_setslot(c, 6000, "migrating", ID_B, 40, err, sizeof(err)) !=
          0);
    CHECK(strcmp(err, "I'm not the owner of hash slot 6000") == 0);
    CHECK(cluster_setslot(c, 1, "IMPORTING", ID_B, 40, err, sizeof(err)) != 0);
    CHECK(strcmp(err, "I'm already the owner of hash slot 1") == 0);
    CHECK(cluster_setslot(c, 1, "MIGRATING", ID_0, 40, err, sizeof(err)) != 0);
    CHECK(strcmp(err, "I don't know about node " ID_0) == 0);
    CHECK(cluster_setslot(c, 1, "NODE", ID_0, 40, err, sizeof(err)) != 0);
    CHECK(strcmp(err, "Unknown node " ID_0) == 0);
    CHECK(cluster_setslot(c, 1, "BOGUS", ID_B, 40, err, sizeof(err)) != 0);
    CHECK(strncmp(err, "Invalid CLUSTER SETSLOT action", 30) == 0);
    CHECK(cluster_setslot(c, 1, "STABLE", ID_B, 40, err, sizeof(err)) != 0);
    CHECK(cluster_setslot(c, 100, "STABLE", NULL, 0, err, sizeof(err)) == 0);
    CHECK_EQ_U64(c->migrating[100], CLUSTER_NONE);
    CHECK_EQ_U64(c->nopen, 1);
    /* NODE of an empty slot to B: it leaves, its state with it; the
     * import of 6000 ends when it becomes this node's, at a new epoch */
    CHECK(cluster_setslot(c, 100, "MIGRATING", ID_B, 40, err, sizeof(err)) ==
          0);
    CHECK(cluster_setslot(c, 100, "NODE", ID_B, 40, err, sizeof(err)) == 0);
    CHECK(strcmp(cluster_slot_owner(c, 100)->id, ID_B) == 0);
    CHECK_EQ_U64(c->migrating[100], CLUSTER_NONE);
    CHECK(cluster_setslot(c, 6000, "NODE", ID_A, 40, err, sizeof(err)) == 0);
    CHECK(cluster_slot_owner(c, 6000) == &c->nodes[0]);
    CHECK_EQ_U64(c->importing[6000], CLUSTER_NONE);
    CHECK_EQ_U64(c->nodes[0].config_epoch, 4);
    CHECK_EQ_U64(c->nopen, 0);
    /* bad marks in the file */
    {
        static const char *const bad[] = {
            ID_A " 127.0.0.1:7001@17001 myself,master - 0 0 1 connected "
                 "[100->-zz]\n",
            ID_A " 127.0.0.1:7001@17001 myself,master - 0 0 1 connected "
                 "[16384->-" ID_A "]\n",
            ID_A " 127.0.0.1:7001@17001 myself,master - 0 0 1 connected "
                 "[1-x-" ID_A "]\n",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            struct cluster *d = cluster_create(&srv);
            CHECK(cluster_config_parse(d, bad[i], strlen(bad[i]), "t", err,
                                       sizeof(err)) != 0);
            CHECK(strstr(err, "migration mark") != NULL);
            cluster_destroy(d);
        }
    }
    db_deinit(&srv.db);
    done(c);
}

/* A master whose last slots go to the node they were migrating to stays a
 * master (a reshard's end); the same takeover without a move makes it a
 * replica (test_losing_every_slot_makes_a_replica). */
static void test_reshard_end_keeps_master(void)
{
    struct cluster *c = fresh(conf3);
    char err[128];
    static const uint16_t b_more[] = {0, 10922};
    struct cluster_record r = rec(ID_B, 7002, true, 9, 50, b_more, 1);

    for (unsigned s = 0; s <= 5460; s++)
        CHECK(cluster_setslot(c, s, "MIGRATING", ID_B, 40, err, sizeof(err)) ==
              0);
    CHECK(cluster_merge_record(c, &r, NULL, err, sizeof(err)) == 0);
    CHECK_EQ_U64(c->nodes[0].nslots, 0);
    CHECK(cluster_myself_master(c));
    CHECK_EQ_U64(c->nopen, 0);
    done(c);
}

/* A replica takes its master's states from its record, and keeps them
 * when it is promoted. */
static void test_replica_carries_states(void)
{
    static const char conf[] = ID_A
        " 127.0.0.1:7001@17001 myself,slave " ID_B " 0 0 2 connected\n" ID_B
        " 127.0.0.1:7002@17002 master - 0 0 2 connected 0-10922\n" ID_C
        " 127.0.0.1:7003@17003 master - 0 0 3 connected 10923-16383\n"
        "vars currentEpoch 3 lastVoteEpoch 0\n";
    struct cluster *c = fresh(conf);
    static const uint16_t b_slots[] = {0, 10922};
    static const char text[] = "0-10922 [7->-" ID_C "] [11000-<-" ID_C "]";
    struct cluster_record r = rec(ID_B, 7002, true, 2, 60, b_slots, 1);
    uint32_t ci = cluster_node_by_id(c, ID_C, 40);
    char err[128];

    r.slots_text = text;
    r.slots_text_len = strlen(text);
    CHECK(cluster_merge_record(c, &r, NULL, err, sizeof(err)) == 0);
    CHECK_EQ_U64(c->migrating[7], ci);
    CHECK_EQ_U64(c->importing[11000], ci);
    /* a newer record without marks: the move ended or was cancelled */
    r = rec(ID_B, 7002, true, 2, 61, b_slots, 1);
    r.slots_text = "0-10922";
    r.slots_text_len = 7;
    CHECK(cluster_merge_record(c, &r, NULL, err, sizeof(err)) == 0);
    CHECK_EQ_U64(c->nopen, 0);
    r = rec(ID_B, 7002, true, 2, 62, b_slots, 1);
    r.slots_text = text;
    r.slots_text_len = strlen(text);
    CHECK(cluster_merge_record(c, &r, NULL, err, sizeof(err)) == 0);
    CHECK_EQ_U64(c->nopen, 2);
    done(c);
}

/* The slot ranges CLUSTER NODES prints (a word-at-a-time scan) against a
 * naive rendering, for random ownerships of three nodes. */
static void test_ranges_text(void)
{
    static uint8_t own[16384];
    static char conf[3][200000], want[3 * 200000 + 8];

    for (int round = 0; round < 40; round++) {
        struct cluster *c;
        struct ur_buf out = {0};
        struct reply r;
        char err[256];
        size_t k[3] = {0, 0, 0}, w = 0;
        const char *line;
        unsigned runlen = 1u << (round % 12);

        for (unsigned sl = 0; sl < 16384; sl++)
            own[sl] = (sl % runlen == 0) ? (uint8_t)(t_rng() % 3) : own[sl - 1];
        for (int n = 0; n < 3; n++) {
            static const char *const head[] = {
                ID_A " 127.0.0.1:7001@17001 myself,master - 0 0 1 connected",
                ID_B " 127.0.0.1:7002@17002 master - 0 0 2 connected",
                ID_C " 127.0.0.1:7003@17003 master - 0 0 3 connected"};
            k[n] = (size_t)sprintf(conf[n], "%s", head[n]);
            for (unsigned sl = 0; sl < 16384; sl++) {
                unsigned e = sl;
                if (own[sl] != n)
                    continue;
                while (e + 1 < 16384 && own[e + 1] == n)
                    e++;
                k[n] += (size_t)(sl == e ? sprintf(conf[n] + k[n], " %u", sl)
                                         : sprintf(conf[n] + k[n], " %u-%u", sl,
                                                   e));
                sl = e;
            }
        }
        w = (size_t)snprintf(want, sizeof(want), "%s\n%s\n%s\n", conf[0],
                             conf[1], conf[2]);
        c = cluster_create(&srv);
        CHECK(cluster_config_parse(c, want, w, "t", err, sizeof(err)) == 0);
        reply_begin(&r, &out, REPLY_RESP, 0);
        cluster_reply_nodes(c, &r, true);
        reply_end(&r);
        line = memchr(out.data, '\n', out.len);
        CHECK(line != NULL);
        /* the myself line's slots, after "connected" */
        line = strstr(line + 1, " connected");
        CHECK(line != NULL &&
              strncmp(line, strstr(conf[0], " connected"),
                      strlen(strstr(conf[0], " connected"))) == 0);
        ur_buf_deinit(&out);
        cluster_destroy(c);
    }
}

int main(void)
{
    T_RUN(test_parse);
    T_RUN(test_epoch_rule);
    T_RUN(test_losing_every_slot_makes_a_replica);
    T_RUN(test_epoch_collision);
    T_RUN(test_routing);
    T_RUN(test_key_index);
    T_RUN(test_migration_states);
    T_RUN(test_reshard_end_keeps_master);
    T_RUN(test_replica_carries_states);
    T_RUN(test_ranges_text);
    T_END();
}
