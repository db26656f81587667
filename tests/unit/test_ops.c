/*
 * test_ops.c - the command table (ops.def) and its lookups. These checks
 * guard every edit of ops.def: a duplicate name, an opcode outside its
 * family's range or an impossible arity fails here, not in production.
 */
#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#include "ops.h"
#include "t.h"

/* Opcode high byte of a command's group, by its name's prefix: the
 * families' ranges from families.def, then the groups that are no family
 * (the ranges in the ops.def comment). */
static int family_of_prefix(const char *name)
{
    static const struct {
        const char *prefix;
        int family;
    } other[] = {{"USER.", 0x08}, {"DEBUG", 0x0F}};
    size_t i;

#define FAMILY(f, ID, lo, hi, unit, expiry, prefetch, title)                   \
    if (strncmp(name, #ID ".", strlen(#ID ".")) == 0)                          \
        return (lo) >> 8;
#include "families.def"
#undef FAMILY
    for (i = 0; i < sizeof(other) / sizeof(other[0]); i++)
        if (strncmp(name, other[i].prefix, strlen(other[i].prefix)) == 0)
            return other[i].family;
    return strchr(name, '.') ? -1 : 0x00;
}

/* Whether an opcode high byte is a family's (families.def). */
static bool is_family(int high)
{
#define FAMILY(f, ID, lo, hi, unit, expiry, prefetch, title)                   \
    if (high == (lo) >> 8)                                                     \
        return true;
#include "families.def"
#undef FAMILY
    return false;
}

static void test_table_shape(void)
{
    const uint32_t known = OPF_READ | OPF_WRITE | OPF_ADMIN | OPF_USER |
                           OPF_NOAUTH | OPF_FAST | OPF_GLOBAL | OPF_GID |
                           OPF_FREES | OPF_NOBATCH | OPF_UIDS | OPF_UIDS_MASK |
                           OPF_SUBOK;
    size_t i, j;

    CHECK(UR_OP_COUNT > 0);
    for (i = 0; i < UR_OP_COUNT; i++) {
        const struct ur_op *op = &ur_ops[i];
        const char *c;
        int fam;

        CHECK_EQ_U64(op->index, i);
        CHECK(op->name != NULL && op->name[0] != '\0');
        CHECK(strlen(op->name) <= 32);
        for (c = op->name; *c; c++)
            CHECK(isupper((unsigned char)*c) || isdigit((unsigned char)*c) ||
                  *c == '.' || *c == '_' || *c == '-'); /* RESTORE-ASKING */
        CHECK(op->min_args <= op->max_args);
        CHECK(op->max_args == UR_VARARGS || op->max_args < 256);
        CHECK((op->flags & ~known) == 0);
        CHECK((op->flags & (OPF_READ | OPF_WRITE | OPF_ADMIN)) != 0);
        CHECK((op->flags & (OPF_READ | OPF_WRITE)) != (OPF_READ | OPF_WRITE));
        if (op->flags & (OPF_USER | OPF_GID))
            CHECK(op->min_args >= 1); /* the uid or gid routed on */
        CHECK((op->flags & (OPF_USER | OPF_GID)) != (OPF_USER | OPF_GID));
        /* many uids: routed by each of them, never by one key, never to
         * every server; the uids' start is only meaningful with it */
        if (op->flags & OPF_UIDS) {
            CHECK((op->flags & (OPF_USER | OPF_GID | OPF_GLOBAL)) == 0);
            CHECK(op->min_args >= ur_op_uids_from(op->flags) + 1);
            CHECK(op->max_args == UR_VARARGS);
        } else {
            CHECK((op->flags & OPF_UIDS_MASK) == 0);
        }
        if (op->flags & (OPF_GLOBAL | OPF_FREES))
            CHECK(op->flags & OPF_WRITE);
        /* what cannot be batched controls, it changes no data */
        if (op->flags & OPF_NOBATCH)
            CHECK((op->flags & (OPF_ADMIN | OPF_WRITE)) == OPF_ADMIN);
        CHECK(op->syntax != NULL);
        CHECK(op->reply != NULL && op->reply[0] != '\0');
        CHECK(op->cost != NULL && strncmp(op->cost, "O(", 2) == 0);
        CHECK(op->summary != NULL && op->summary[0] != '\0');
        CHECK(op->summary[strlen(op->summary) - 1] == '.');

        fam = family_of_prefix(op->name);
        if (fam == 0x00) {
            /* undotted: admin/connection, debug hooks or framing */
            CHECK((op->code >> 8) == 0x00 || (op->code >> 8) == 0x0F ||
                  (op->code >> 8) == 0xFF);
        } else {
            if (fam < 0)
                fprintf(stderr, "%s: family not in ops.def ranges\n", op->name);
            CHECK(fam >= 0);
            CHECK_EQ_U64(op->code >> 8, (unsigned)fam);
        }
        /* The seven models serve applications; USER (0x08) also serves
         * operators: USER.INFO and USER.EXPIRE are admin, which keeps
         * them from marking the user active (server/users.h). */
        if (is_family(fam))
            CHECK((op->flags & OPF_ADMIN) == 0);

        for (j = i + 1; j < UR_OP_COUNT; j++) {
            CHECK(strcmp(op->name, ur_ops[j].name) != 0);
            CHECK(op->code != ur_ops[j].code);
        }
    }
}

/* Spot checks that the enums and the table agree with ops.def. */
static void test_enums(void)
{
    CHECK_EQ_U64(UR_OP_PING, 0x0001);
    CHECK_EQ_U64(UR_OP_CNT_INCR, 0x0101);
    CHECK(strcmp(ur_ops[UR_OPI_PING].name, "PING") == 0);
    CHECK(strcmp(ur_ops[UR_OPI_CNT_INCR].name, "CNT.INCR") == 0);
    CHECK_EQ_U64(ur_ops[UR_OPI_CNT_INCR].code, UR_OP_CNT_INCR);
    CHECK_EQ_U64(ur_ops[UR_OPI_CNT_INCR].min_args, 2);
    CHECK_EQ_U64(ur_ops[UR_OPI_CNT_INCR].max_args, 5);
    CHECK(ur_ops[UR_OPI_USER_MBADGE].flags & OPF_UIDS);
    CHECK_EQ_U64(ur_op_uids_from(ur_ops[UR_OPI_USER_MBADGE].flags), 0);
    CHECK_EQ_U64(ur_op_uids_from(OPF_UIDS_FROM(2)), 2);
    CHECK_EQ_U64(ur_ops[UR_OPI_CNT_CLEAR].max_args, UR_VARARGS);
    CHECK(ur_ops[UR_OPI_CNT_GET].flags & OPF_READ);
    CHECK(ur_ops[UR_OPI_CNT_INCR].flags & OPF_WRITE);
}

static void test_by_name(void)
{
    char lower[64], mixed[64];
    size_t i, k, n;

    for (i = 0; i < UR_OP_COUNT; i++) {
        const char *name = ur_ops[i].name;

        n = strlen(name);
        for (k = 0; k < n; k++) {
            lower[k] = (char)tolower((unsigned char)name[k]);
            mixed[k] = k % 2 ? lower[k] : name[k];
        }
        CHECK(ur_op_by_name(name, n) == &ur_ops[i]);
        CHECK(ur_op_by_name(lower, n) == &ur_ops[i]);
        CHECK(ur_op_by_name(mixed, n) == &ur_ops[i]);
        /* length is what counts, not a terminator */
        CHECK(ur_op_by_name(name, n - 1) == NULL ||
              strlen(ur_op_by_name(name, n - 1)->name) == n - 1);
        memcpy(lower, name, n);
        lower[n] = 'X';
        CHECK(ur_op_by_name(lower, n + 1) == NULL);
        lower[n] = '\0';
        CHECK(ur_op_by_name(lower, n + 1) == NULL);
    }

    CHECK(ur_op_by_name("", 0) == NULL);
    CHECK(ur_op_by_name("PINGX", 4) == &ur_ops[UR_OPI_PING]);
    CHECK(ur_op_by_name("PIN", 3) == NULL);
    CHECK(ur_op_by_name("NOSUCH", 6) == NULL);
    CHECK(ur_op_by_name("CNT_INCR", 8) == NULL);
    /* Only letters fold: '.' ^ 0x20 and friends are not the same name. */
    CHECK(ur_op_by_name("CNT\x0eINCR", 8) == NULL);
    CHECK(ur_op_by_name("cnt.incr", 8) == &ur_ops[UR_OPI_CNT_INCR]);
    CHECK(ur_op_by_name("CnT.iNcR", 8) == &ur_ops[UR_OPI_CNT_INCR]);
    /* Bytes >= 0x80 never fold onto letters (0xE9 & 0x7F is 'i'). */
    CHECK(ur_op_by_name("P\xc9NG", 4) == NULL);
    CHECK(ur_op_by_name("P\xe9NG", 4) == NULL);
    CHECK(ur_op_by_name("p\xe9ng", 4) == NULL);
    /* The ASCII neighbours of the letter range do not fold. */
    CHECK(ur_op_by_name("PING`", 5) == NULL);
    CHECK(ur_op_by_name("`ING", 4) == NULL);
    CHECK(ur_op_by_name("{ING", 4) == NULL);
    CHECK(ur_op_by_name("@ING", 4) == NULL);
    CHECK(ur_op_by_name("PING\0", 5) == NULL);
    CHECK(ur_op_by_name("PINGPINGPINGPINGPINGPINGPINGPINGPING", 36) == NULL);
}

static void test_by_code(void)
{
    uint32_t code, found = 0;

    for (code = 0; code <= 0xFFFF; code++) {
        const struct ur_op *op = ur_op_by_code((uint16_t)code);

        if (op != NULL) {
            CHECK_EQ_U64(op->code, code);
            found++;
        }
    }
    CHECK_EQ_U64(found, UR_OP_COUNT);
    CHECK(ur_op_by_code(0x0000) == NULL);
    CHECK(ur_op_by_code(0xFFFF) == NULL);
    CHECK(ur_op_by_code(UR_OP_PING) == &ur_ops[UR_OPI_PING]);
    CHECK(ur_op_by_code(UR_OP_CNT_GET) == &ur_ops[UR_OPI_CNT_GET]);
}

int main(void)
{
    T_RUN(test_table_shape);
    T_RUN(test_enums);
    T_RUN(test_by_name);
    T_RUN(test_by_code);
    T_END();
}
