/*
 * test_families.c - families.def against the other tables: every family
 * has a snapshot section, its opcode range holds exactly its commands,
 * and the loops generated from the table see every store. A family added
 * to families.def without its store functions or USER.INFO lines fails
 * the build (the generated loops call them); without its section, or with
 * a range that does not match ops.def, it fails here.
 */
#include <stdio.h>
#include <string.h>

#include "db.h"
#include "exec.h"
#include "ops.h"
#include "t.h"

static const char *const section_names[] = {
#define SECTION(id, name, save, load) name,
#include "sections.def"
#undef SECTION
};
#define NSECTIONS (sizeof(section_names) / sizeof(section_names[0]))

static void test_every_family_has_a_section(void)
{
    for (unsigned f = 0; f < FAM_COUNT; f++) {
        bool found = false;

        for (size_t k = 0; k < NSECTIONS; k++)
            found |= strcmp(section_names[k], db_families[f].name) == 0;
        if (!found)
            fprintf(stderr, "family %s has no row in sections.def\n",
                    db_families[f].name);
        CHECK(found);
    }
}

/* Whether op's name is "<ID>.<something>". */
static bool named_in(const struct ur_op *op, const struct family_desc *fd)
{
    size_t n = strlen(fd->upper);

    return strncmp(op->name, fd->upper, n) == 0 && op->name[n] == '.';
}

static void test_ranges_match_ops(void)
{
    for (unsigned f = 0; f < FAM_COUNT; f++) {
        const struct family_desc *fd = &db_families[f];
        unsigned ops = 0;

        CHECK(fd->lo <= fd->hi);
        CHECK(fd->lo >= 0x0100 && fd->hi < 0x0F00);
        CHECK(strlen(fd->name) > 0 && strlen(fd->unit) > 0);
        CHECK(strncmp(fd->title, fd->upper, strlen(fd->upper)) == 0);
        for (unsigned g = f + 1; g < FAM_COUNT; g++) {
            CHECK(fd->hi < db_families[g].lo || db_families[g].hi < fd->lo);
            CHECK(strcmp(fd->name, db_families[g].name) != 0);
        }
        for (size_t i = 0; i < UR_OP_COUNT; i++) {
            const struct ur_op *op = &ur_ops[i];
            bool in = op->code >= fd->lo && op->code <= fd->hi;

            if (in != named_in(op, fd))
                fprintf(stderr, "%s (0x%04x) and family %s (0x%04x-0x%04x)\n",
                        op->name, op->code, fd->name, fd->lo, fd->hi);
            CHECK(in == named_in(op, fd));
            if (in) {
                ops++;
                CHECK_EQ_U64(db_family_of_opcode(op->code), f);
            }
        }
        CHECK(ops > 0); /* a family serves commands */
    }
    CHECK_EQ_U64(db_family_of_opcode(UR_OP_PING), FAM_COUNT);
    CHECK_EQ_U64(db_family_of_opcode(0xFF01), FAM_COUNT);
}

static void test_names(void)
{
    for (unsigned f = 0; f < FAM_COUNT; f++) {
        const char *n = db_families[f].name;
        char upper[16];
        size_t i;

        CHECK_EQ_U64(db_family_by_name(n, strlen(n)), f);
        for (i = 0; n[i] && i + 1 < sizeof(upper); i++)
            upper[i] = (char)(n[i] - 'a' + 'A');
        upper[i] = '\0';
        CHECK(strcmp(upper, db_families[f].upper) == 0);
        CHECK_EQ_U64(db_family_by_name(upper, strlen(upper)), f);
    }
    CHECK(db_family_by_name("activity", 8) == -1);
    CHECK(db_family_by_name("cn", 2) == -1);
}

static void test_loops_see_every_store(void)
{
    struct db_usage u[DB_USAGE_ROWS];
    uint64_t removed[FAM_COUNT] = {0};
    struct db db;
    unsigned n;

    CHECK(db_init(&db) == 0);
    n = db_usage(&db, u);
    CHECK_EQ_U64(n, DB_USAGE_ROWS);
    for (unsigned f = 0; f < FAM_COUNT; f++) {
        CHECK(strcmp(u[f].family, db_families[f].name) == 0);
        CHECK(strcmp(u[f].unit, db_families[f].unit) == 0);
        CHECK_EQ_U64(u[f].entries, 0);
    }
    CHECK(strcmp(u[FAM_COUNT].family, "activity") == 0);
    CHECK_EQ_U64(db_audit(&db), 0);
    CHECK_EQ_U64(db_forget_user(&db, 42, (1u << FAM_COUNT) - 1, removed), 0);
    for (unsigned f = 0; f < FAM_COUNT; f++)
        db_prefetch_user(&db, f, 42, 1); /* a hint: nothing to see */
    db_deinit(&db);
}

/* USER.INFO shows every family's summary line, in families.def order. */
static void test_user_info_lists_every_family(void)
{
    static struct server srv;
    struct session sess = {.id = 1, .proto = REPLY_RESP, .authed = true};
    struct ur_arg argv[1] = {{UR_ARG_INT, 0, NULL, 7}};
    struct ur_buf out;
    struct reply r;
    const char *at;

    config_init(&srv.cfg);
    CHECK(db_init(&srv.db) == 0);
    ur_buf_init(&out);
    reply_begin(&r, &out, REPLY_RESP, 0);
    exec_op(&srv, &sess, &ur_ops[UR_OPI_USER_INFO], 1, argv, &r);
    reply_end(&r);
    ur_buf_append(&out, "", 1);
    at = out.data;
    for (unsigned f = 0; f < FAM_COUNT; f++) {
        char want[32];
        const char *hit;

        snprintf(want, sizeof(want), "\r\n%s: ", db_families[f].name);
        hit = strstr(at, want);
        if (hit == NULL)
            fprintf(stderr,
                    "USER.INFO has no '%s:' line after the "
                    "previous family's\n",
                    db_families[f].name);
        CHECK(hit != NULL);
        if (hit != NULL)
            at = hit;
    }
    ur_buf_deinit(&out);
    db_deinit(&srv.db);
}

/* USER.BADGE names every family of the table that has a part, in
 * families.def order, and refuses by name the ones without (RCPT). */
static void test_badge_lists_every_family(void)
{
    static struct server srv;
    struct session sess = {.id = 1, .proto = REPLY_RESP, .authed = true};
    struct ur_arg argv[2] = {{UR_ARG_INT, 0, NULL, 7}};
    struct ur_buf out;
    struct reply r;
    unsigned parts = 0;

    config_init(&srv.cfg);
    CHECK(db_init(&srv.db) == 0);
    ur_buf_init(&out);
    reply_begin(&r, &out, REPLY_RESP, 0);
    exec_op(&srv, &sess, &ur_ops[UR_OPI_USER_BADGE], 1, argv, &r);
    reply_end(&r);
    ur_buf_append(&out, "", 1);
    for (unsigned f = 0; f < FAM_COUNT; f++) {
        struct ur_buf one;
        char want[32];
        bool listed;

        snprintf(want, sizeof(want), "\r\n%s\r\n", db_families[f].name);
        listed = strstr(out.data, want) != NULL;
        argv[1] =
            (struct ur_arg){UR_ARG_STR, (uint32_t)strlen(db_families[f].name),
                            db_families[f].name, 0};
        ur_buf_init(&one);
        reply_begin(&r, &one, REPLY_RESP, 0);
        exec_op(&srv, &sess, &ur_ops[UR_OPI_USER_BADGE], 2, argv, &r);
        reply_end(&r);
        /* listed by default exactly when it can be asked for by name */
        CHECK(listed == (r.status == UR_E_OK));
        if (!listed)
            fprintf(stderr, "family %s: no badge part\n", db_families[f].name);
        parts += listed;
        ur_buf_deinit(&one);
    }
    CHECK_EQ_U64(parts, FAM_COUNT - 1); /* every family but RCPT */
    ur_buf_deinit(&out);
    db_deinit(&srv.db);
}

int main(void)
{
    T_RUN(test_every_family_has_a_section);
    T_RUN(test_ranges_match_ops);
    T_RUN(test_names);
    T_RUN(test_loops_see_every_store);
    T_RUN(test_user_info_lists_every_family);
    T_RUN(test_badge_lists_every_family);
    T_END();
}
