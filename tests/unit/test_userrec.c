/*
 * test_userrec.c - the user record (persistence/userrec.h): a user with
 * state in each family alone, and in all of them, survives DUMP then
 * RESTORE into another db exactly (what USER.INFO answers, and the record
 * a second dump makes); every cut and every flipped bit is refused with
 * nothing changed; well-sealed records with impossible contents are
 * refused too; delete leaves nothing of the id.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "exec.h"
#include "le.h"
#include "mem.h"
#include "rcpt.h"
#include "t.h"
#include "userrec.h"

static struct server src, dst;
static struct session sess = {.id = 1, .proto = REPLY_RESP, .authed = true};
static struct ur_buf out;

/* Runs one text command (words split on spaces) on s; the reply. */
static const char *run(struct server *s, const char *line)
{
    static char copy[512];
    struct ur_arg argv[32];
    uint32_t argc = 0;
    struct reply r;

    snprintf(copy, sizeof(copy), "%s", line);
    for (char *p = strtok(copy, " "); p && argc < 32; p = strtok(NULL, " "))
        argv[argc++] = (struct ur_arg){UR_ARG_STR, (uint32_t)strlen(p), p, 0};
    out.len = 0;
    reply_begin(&r, &out, REPLY_RESP, 0);
    exec_text(s, &sess, argc, argv, &r);
    reply_end(&r);
    ur_buf_append(&out, "", 1);
    return out.data;
}

static char *info(struct server *s, uint64_t uid)
{
    char line[64];

    snprintf(line, sizeof(line), "USER.INFO %llu", (unsigned long long)uid);
    return strdup(run(s, line));
}

/* Commands giving uid (%u) state in one family; NULL ends. */
static const char *const fam_cmds[][4] = {
    {"CNT.INCR %u 1 3", "CNT.INCR %u 5 7 ID 99", NULL},
    {"CONV.SEQ %u 70 10", "CONV.SEQ %u 71 12 MENTION", "CONV.READ %u 71 3",
     NULL},
    {"GRP.JOIN %u 900", "GRP.MUTE %u 900 1", NULL},
    {"BC.READ %u 33", NULL},
    {"DOT.CLICK %u 44", NULL},
    {"FEED.FOLLOW %u 55", NULL},
    {"RCPT.JOIN %u %u", "RCPT.SEND %u 1000 %u", NULL},
};
#define NFAM (sizeof(fam_cmds) / sizeof(fam_cmds[0]))

static void seed(struct server *s, unsigned fam, unsigned uid)
{
    char line[128];

    for (unsigned i = 0; fam_cmds[fam][i] != NULL; i++) {
        snprintf(line, sizeof(line), fam_cmds[fam][i], uid, uid);
        CHECK(run(s, line)[0] != '-');
        if (out.data[0] == '-')
            fprintf(stderr, "%s: %s", line, out.data);
    }
}

/* A copy of uid's record on src. */
static char *dump(struct server *s, uint64_t uid, size_t *n)
{
    const char *p;
    char *c;

    if (userrec_dump(&s->db, uid, &p, n) != 0)
        return NULL;
    c = malloc(*n);
    memcpy(c, p, *n);
    return c;
}

static void round_trip(uint64_t uid)
{
    char err[256], *a, *b, *rec, *again;
    size_t n, m;

    rec = dump(&src, uid, &n);
    CHECK(rec != NULL);
    if (rec == NULL)
        return;
    CHECK(!userrec_exists(&dst.db, uid));
    CHECK(userrec_restore(&dst.db, uid, rec, n, false, err, sizeof(err)) ==
          USERREC_OK);
    a = info(&src, uid);
    b = info(&dst, uid);
    CHECK(strcmp(a, b) == 0);
    if (strcmp(a, b) != 0)
        fprintf(stderr, "src:\n%s\ndst:\n%s\n", a, b);
    again = dump(&dst, uid, &m);
    CHECK(again != NULL && m == n && memcmp(again, rec, n) == 0);
    CHECK(userrec_restore(&dst.db, uid, rec, n, false, err, sizeof(err)) ==
          USERREC_BUSY);
    CHECK(userrec_restore(&dst.db, uid, rec, n, true, err, sizeof(err)) ==
          USERREC_OK);
    CHECK_EQ_U64(db_audit(&dst.db), 0);
    free(a);
    free(b);
    free(again);
    free(rec);
}

/* Each family alone, then all of them in one user. */
static void test_round_trip_per_family(void)
{
    for (unsigned f = 0; f < NFAM; f++) {
        seed(&src, f, 100 + f);
        round_trip(100 + f);
    }
    for (unsigned f = 0; f < NFAM; f++)
        seed(&src, f, 200);
    round_trip(200);
    /* an expired user's record travels */
    run(&src, "CNT.INCR 300 1 1");
    run(&src, "USER.EXPIRE 300 cnt");
    run(&src, "DOT.CLICK 300 44");
    round_trip(300);
    {
        char a[512];

        snprintf(a, sizeof(a), "%s", run(&src, "USER.STATUS 300"));
        CHECK(strcmp(a, run(&dst, "USER.STATUS 300")) == 0);
    }
    /* nothing held: no record */
    {
        const char *p;
        size_t n;

        CHECK(userrec_dump(&src.db, 999999, &p, &n) == 1);
    }
}

static void test_cut_and_flipped(void)
{
    char err[256], *rec;
    size_t n;
    size_t flips = 0;

    rec = dump(&src, 200, &n);
    CHECK(rec != NULL);
    if (rec == NULL)
        return;
    for (size_t k = 0; k < n; k++) {
        CHECK(userrec_restore(&dst.db, 201, rec, k, false, err, sizeof(err)) ==
              USERREC_CORRUPT);
        CHECK(err[0] != '\0');
    }
    for (size_t i = 0; i < n; i++)
        for (unsigned bit = 0; bit < 8; bit++) {
            rec[i] ^= (char)(1u << bit);
            flips += userrec_restore(&dst.db, 200, rec, n, true, err,
                                     sizeof(err)) == USERREC_CORRUPT;
            rec[i] ^= (char)(1u << bit);
        }
    CHECK_EQ_U64(flips, n * 8);
    CHECK(!userrec_exists(&dst.db, 201));
    CHECK_EQ_U64(db_audit(&dst.db), 0);
    free(rec);
}

/* The checksum made right again after an edit. */
static void seal(char *rec, size_t n)
{
    le_wr64(rec + n - USERREC_TRAILER, XXH3_64bits(rec, n - USERREC_TRAILER));
}

static void test_sealed_but_wrong(void)
{
    char err[256], *rec;
    size_t n;

    run(&src, "CNT.INCR 400 2 5");
    rec = dump(&src, 400, &n);
    CHECK(rec != NULL);
    if (rec == NULL)
        return;
    /* header 20, part kind 1 (cnt) and len: the cnt record's uid at 25 */
    CHECK(rec[20] == UREC_CNT);
    le_wr64(rec + 25, 401);
    le_wr64(rec + 8, 401);
    seal(rec, n);
    CHECK(userrec_restore(&dst.db, 401, rec, n, false, err, sizeof(err)) ==
          USERREC_OK);
    CHECK(strstr(run(&dst, "CNT.GET 401 2"), ":5") != NULL);
    /* the header's id and the part's disagree */
    le_wr64(rec + 8, 402);
    seal(rec, n);
    CHECK(userrec_restore(&dst.db, 402, rec, n, false, err, sizeof(err)) ==
          USERREC_CORRUPT);
    CHECK(strstr(err, "another id") != NULL);
    /* an unknown part kind, an unknown version */
    le_wr64(rec + 8, 401);
    rec[20] = 42;
    seal(rec, n);
    CHECK(userrec_restore(&dst.db, 401, rec, n, true, err, sizeof(err)) ==
          USERREC_CORRUPT);
    rec[20] = UREC_CNT;
    rec[4] = 2;
    seal(rec, n);
    CHECK(userrec_restore(&dst.db, 401, rec, n, true, err, sizeof(err)) ==
          USERREC_CORRUPT);
    rec[4] = USERREC_VERSION;
    /* a zero counter value (the loader's own check) */
    rec[n - USERREC_TRAILER - 1] = 0;
    seal(rec, n);
    CHECK(userrec_restore(&dst.db, 401, rec, n, true, err, sizeof(err)) ==
          USERREC_CORRUPT);
    /* refused records changed nothing */
    CHECK(strstr(run(&dst, "CNT.GET 401 2"), ":5") != NULL);
    CHECK(!userrec_exists(&dst.db, 402));
    free(rec);
}

/* REPLACE whose apply runs out of memory: the old state is put back
 * (each allocation failing once in turn), and a plain RESTORE so refused
 * leaves nothing. */
static void test_replace_out_of_memory(void)
{
    char err[256], *rec, *old, *now;
    size_t n, on, nn;
    uint64_t k;
    int oom = 0;

    for (unsigned f = 0; f < NFAM; f++)
        seed(&src, f, 600);
    rec = dump(&src, 600, &n);
    run(&dst, "CNT.INCR 600 9 9");
    run(&dst, "CONV.SEQ 600 5 5");
    old = dump(&dst, 600, &on);
    CHECK(rec != NULL && old != NULL);
    if (rec == NULL || old == NULL)
        return;
    for (k = 1; k < 10000; k++) {
        enum userrec_rc rc;

        mem_fail_after(k, false);
        rc = userrec_restore(&dst.db, 600, rec, n, true, err, sizeof(err));
        mem_fail_after(0, false);
        if (rc == USERREC_OK)
            break;
        CHECK(rc == USERREC_NOMEM);
        oom++;
        now = dump(&dst, 600, &nn);
        CHECK(now != NULL && nn == on && memcmp(now, old, on) == 0);
        free(now);
        CHECK_EQ_U64(db_audit(&dst.db), 0);
    }
    CHECK(oom > 0);
    now = dump(&dst, 600, &nn);
    CHECK(now != NULL && nn == n && memcmp(now, rec, n) == 0);
    free(now);
    userrec_delete(&dst.db, 600);
    for (k = 1; k < 10000; k++) {
        enum userrec_rc rc;

        mem_fail_after(k, false);
        rc = userrec_restore(&dst.db, 600, rec, n, false, err, sizeof(err));
        mem_fail_after(0, false);
        if (rc == USERREC_OK)
            break;
        CHECK(rc == USERREC_NOMEM && !userrec_exists(&dst.db, 600));
    }
    CHECK_EQ_U64(db_audit(&dst.db), 0);
    free(old);
    free(rec);
}

static void test_delete(void)
{
    for (unsigned f = 0; f < NFAM; f++)
        seed(&src, f, 500);
    CHECK(userrec_exists(&src.db, 500));
    CHECK(userrec_delete(&src.db, 500) > 0);
    CHECK(!userrec_exists(&src.db, 500));
    CHECK(!rcpt_group_held(src.db.rcpt, 500));
    CHECK_EQ_U64(db_audit(&src.db), 0);
}

int main(void)
{
    struct server *both[2] = {&src, &dst};

    for (int i = 0; i < 2; i++) {
        config_init(&both[i]->cfg);
        if (db_init(&both[i]->db) != 0)
            return 1;
    }
    ur_buf_init(&out);
    T_RUN(test_round_trip_per_family);
    T_RUN(test_cut_and_flipped);
    T_RUN(test_sealed_but_wrong);
    T_RUN(test_replace_out_of_memory);
    T_RUN(test_delete);
    userrec_teardown();
    ur_buf_deinit(&out);
    for (int i = 0; i < 2; i++) {
        db_deinit(&both[i]->db);
        slowlog_deinit(&both[i]->slowlog);
    }
    T_END();
}
