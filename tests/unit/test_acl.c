/*
 * test_acl.c - the ACL rule parser and check (server/acl.h): every rule
 * form, Redis's messages for bad ones, all-or-nothing files with their
 * line numbers, the description ACL LIST shows reading back to the same
 * rights, and the verdicts over keys and channels.
 */
#include <stdlib.h>
#include <string.h>

#include "acl.h"
#include "t.h"

static int rule(struct acl_user *u, const char *r, char *err, size_t cap)
{
    return acl_user_rule(u, r, strlen(r), err, cap);
}

/* Applies a space-separated list of rules; 0 or the first failure. */
static int rules(struct acl_user *u, const char *list)
{
    char buf[1024], err[256];
    char *save = NULL;

    snprintf(buf, sizeof(buf), "%s", list);
    for (char *w = strtok_r(buf, " ", &save); w != NULL;
         w = strtok_r(NULL, " ", &save))
        if (rule(u, w, err, sizeof(err)) != 0)
            return -1;
    return 0;
}

static struct ur_arg S(const char *s) {
    return (struct ur_arg){.kind = UR_ARG_STR, .str = s, .len = strlen(s)};
}

static struct ur_arg
I(uint64_t v) {
    return (struct ur_arg){.kind = UR_ARG_INT, .num = v};
}

static int
may(const struct acl_user *u, const char *name, const struct ur_arg *argv,
    uint32_t argc)
{
    const struct ur_op *op = ur_op_by_name(name, strlen(name));
    const char *what;
    size_t wlen;

    CHECK(op != NULL);
    if (op == NULL)
        return -1;
    return acl_user_may(u, op, argc, argv, &what, &wlen);
}

static void test_new_user_has_nothing(void)
{
    struct acl_user *u = acl_user_new("u", 1);
    struct ur_arg a[2] = {I(1), I(0)};
    char *d = acl_user_describe(u);

    CHECK(!u->on && !u->nopass && u->npass == 0 && !u->allkeys);
    CHECK(strcmp(d, "user u off resetkeys resetchannels -@all") == 0);
    CHECK(may(u, "CNT.GET", a, 2) == ACL_DENY_CMD);
    CHECK(may(u, "ECHO", (struct ur_arg[]){S("x")}, 1) == ACL_DENY_CMD);
    /* what runs before AUTH runs for every user, as Redis's no-auth
     * commands */
    CHECK(may(u, "PING", NULL, 0) == ACL_ALLOW);
    CHECK(may(u, "HELLO", NULL, 0) == ACL_ALLOW);
    CHECK(may(u, "AUTH", (struct ur_arg[]){S("u"), S("p")}, 2) == ACL_ALLOW);
    free(d);
    acl_user_unref(u);
}

static void test_passwords(void)
{
    struct acl_user *u = acl_user_new("u", 1);
    char err[256];
    static const char h[] =
        "#5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8";

    CHECK(rule(u, ">password", err, sizeof(err)) == 0);
    CHECK(u->npass == 1 && !u->nopass);
    /* the same password twice is one; its hash is sha256 */
    CHECK(rule(u, h, err, sizeof(err)) == 0 && u->npass == 1);
    CHECK(rule(u, ">other", err, sizeof(err)) == 0 && u->npass == 2);
    CHECK(rule(u, "<password", err, sizeof(err)) == 0 && u->npass == 1);
    CHECK(rule(u, "<password", err, sizeof(err)) == -1);
    CHECK(strstr(err, "does not exist") != NULL);
    CHECK(rule(u,
               "!5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef7"
               "21d1542d8",
               err, sizeof(err)) == -1);
    CHECK(rule(u, "#abc", err, sizeof(err)) == -1);
    CHECK(strstr(err, "exactly 64 characters") != NULL);
    CHECK(rule(u,
               "#5E884898DA28047151D0E56F8DC6292773603D0D6AABBDD62A11EF72"
               "1D1542D8",
               err, sizeof(err)) == -1);
    CHECK(rule(u, "nopass", err, sizeof(err)) == 0);
    CHECK(u->nopass && u->npass == 0);
    CHECK(rule(u, ">x", err, sizeof(err)) == 0 && !u->nopass);
    CHECK(rule(u, "resetpass", err, sizeof(err)) == 0);
    CHECK(!u->nopass && u->npass == 0);
    /* an empty password is a password (Redis: ">" sets "") */
    CHECK(rule(u, ">", err, sizeof(err)) == 0 && u->npass == 1);
    acl_user_unref(u);
}

static void test_commands_and_categories(void)
{
    struct acl_user *u = acl_user_new("u", 1);
    struct ur_arg a[3] = {I(1), I(0), I(5)};
    char err[256];

    CHECK(rules(u, "on allkeys +@cnt -cnt.set") == 0);
    CHECK(may(u, "CNT.INCR", a, 2) == ACL_ALLOW);
    CHECK(may(u, "CNT.SET", a, 3) == ACL_DENY_CMD);
    CHECK(may(u, "CONV.GET", a, 2) == ACL_DENY_CMD);
    CHECK(strcmp(u->rules, "+@cnt -cnt.set") == 0);
    /* +@read: every OPF_READ op, no write */
    CHECK(rules(u, "nocommands +@read") == 0);
    CHECK(strcmp(u->rules, "-@all +@read") == 0);
    CHECK(may(u, "CONV.GET", a, 2) == ACL_ALLOW);
    CHECK(may(u, "CNT.INCR", a, 2) == ACL_DENY_CMD);
    CHECK(rules(u, "allcommands -@write -@dangerous") == 0);
    CHECK(may(u, "CNT.GET", a, 2) == ACL_ALLOW);
    CHECK(may(u, "FLUSHALL", NULL, 0) == ACL_DENY_CMD);
    CHECK(may(u, "CONFIG", (struct ur_arg[]){S("GET"), S("x")}, 2) ==
          ACL_DENY_CMD);
    /* a subcommand exception, both ways */
    CHECK(rules(u, "+config|get") == 0);
    CHECK(may(u, "CONFIG", (struct ur_arg[]){S("get"), S("x")}, 2) ==
          ACL_ALLOW);
    CHECK(may(u, "CONFIG", (struct ur_arg[]){S("SET"), S("x"), S("y")}, 3) ==
          ACL_DENY_CMD);
    CHECK(rules(u, "+client -client|kill") == 0);
    CHECK(may(u, "CLIENT", (struct ur_arg[]){S("ID")}, 1) == ACL_ALLOW);
    CHECK(may(u, "CLIENT", (struct ur_arg[]){S("KILL"), S("a:1")}, 2) ==
          ACL_DENY_CMD);
    /* +client again drops the exception */
    CHECK(rules(u, "+client") == 0);
    CHECK(may(u, "CLIENT", (struct ur_arg[]){S("KILL"), S("a:1")}, 2) ==
          ACL_ALLOW);
    /* ACL WHOAMI is @slow only, as Redis: -@admin keeps it */
    CHECK(rules(u, "allcommands -@admin") == 0);
    CHECK(may(u, "ACL", (struct ur_arg[]){S("WHOAMI")}, 1) == ACL_ALLOW);
    CHECK(may(u, "ACL", (struct ur_arg[]){S("SETUSER"), S("x")}, 2) ==
          ACL_DENY_CMD);
    /* bad rules */
    CHECK(rule(u, "+nosuch", err, sizeof(err)) == -1);
    CHECK(strcmp(err, "Unknown command or category name in ACL") == 0);
    CHECK(rule(u, "-@nosuch", err, sizeof(err)) == -1);
    CHECK(rule(u, "+", err, sizeof(err)) == -1);
    CHECK(rule(u, "+cnt.get|", err, sizeof(err)) == -1);
    CHECK(rule(u, "+cnt.get|a|b", err, sizeof(err)) == -1);
    CHECK(rule(u, "", err, sizeof(err)) == -1);
    CHECK(rule(u, "whatever", err, sizeof(err)) == -1);
    CHECK(strcmp(err, "Syntax error") == 0);
    /* Redis's empty categories and its no-op flags read */
    CHECK(rules(u, "-@scripting +@string sanitize-payload clearselectors") ==
          0);
    acl_user_unref(u);
}

static void test_keys(void)
{
    struct acl_user *u = acl_user_new("u", 1);
    char err[256];

    CHECK(rules(u, "on +@all ~1* %R~2* %W~3* %RW~4?") == 0);
    CHECK(may(u, "CNT.INCR", (struct ur_arg[]){I(10), I(0)}, 2) == ACL_ALLOW);
    CHECK(may(u, "CNT.INCR", (struct ur_arg[]){S("10"), I(0)}, 2) == ACL_ALLOW);
    CHECK(may(u, "CNT.INCR", (struct ur_arg[]){I(20), I(0)}, 2) ==
          ACL_DENY_KEY);
    CHECK(may(u, "CNT.GET", (struct ur_arg[]){I(20), I(0)}, 2) == ACL_ALLOW);
    CHECK(may(u, "CNT.INCR", (struct ur_arg[]){I(30), I(0)}, 2) == ACL_ALLOW);
    CHECK(may(u, "CNT.GET", (struct ur_arg[]){I(30), I(0)}, 2) == ACL_DENY_KEY);
    CHECK(may(u, "CNT.GET", (struct ur_arg[]){I(41), I(0)}, 2) == ACL_ALLOW);
    CHECK(may(u, "CNT.GET", (struct ur_arg[]){I(411), I(0)}, 2) ==
          ACL_DENY_KEY);
    /* every uid of USER.MBADGE */
    CHECK(may(u, "USER.MBADGE", (struct ur_arg[]){I(1), I(12), I(13)}, 3) ==
          ACL_ALLOW);
    CHECK(may(u, "USER.MBADGE", (struct ur_arg[]){I(1), I(12), I(99)}, 3) ==
          ACL_DENY_KEY);
    /* no keys: never refused by patterns */
    CHECK(may(u, "PING", NULL, 0) == ACL_ALLOW);
    CHECK(rule(u, "allkeys", err, sizeof(err)) == 0 && u->nkeys == 0);
    CHECK(rule(u, "~x", err, sizeof(err)) == -1);
    CHECK(strstr(err, "'resetkeys'") != NULL);
    CHECK(rule(u, "resetkeys", err, sizeof(err)) == 0 && !u->allkeys);
    CHECK(rule(u, "~*", err, sizeof(err)) == 0 && u->allkeys);
    CHECK(rule(u, "resetkeys", err, sizeof(err)) == 0);
    CHECK(rule(u, "%~x", err, sizeof(err)) == -1);
    CHECK(rule(u, "%Q~x", err, sizeof(err)) == -1);
    CHECK(rule(u, "%R", err, sizeof(err)) == -1);
    CHECK(may(u, "CNT.GET", (struct ur_arg[]){I(1), I(0)}, 2) == ACL_DENY_KEY);
    acl_user_unref(u);
}

static void test_channels(void)
{
    struct acl_user *u = acl_user_new("u", 1);
    char err[256];

    CHECK(rules(u, "on +@all resetchannels &news.* &badge:7") == 0);
    CHECK(may(u, "PUBLISH", (struct ur_arg[]){S("news.x"), S("m")}, 2) ==
          ACL_ALLOW);
    CHECK(may(u, "PUBLISH", (struct ur_arg[]){S("x"), S("m")}, 2) ==
          ACL_DENY_CHANNEL);
    CHECK(may(u, "SUBSCRIBE", (struct ur_arg[]){S("badge:7"), S("news.")}, 2) ==
          ACL_ALLOW);
    CHECK(may(u, "SUBSCRIBE", (struct ur_arg[]){S("badge:7"), S("badge:8")},
              2) == ACL_DENY_CHANNEL);
    CHECK(may(u, "PSUBSCRIBE", (struct ur_arg[]){S("news.*")}, 1) == ACL_ALLOW);
    CHECK(may(u, "PSUBSCRIBE", (struct ur_arg[]){S("news.a*")}, 1) ==
          ACL_DENY_CHANNEL);
    CHECK(may(u, "UNSUBSCRIBE", (struct ur_arg[]){S("zzz")}, 1) == ACL_ALLOW);
    CHECK(rule(u, "allchannels", err, sizeof(err)) == 0);
    CHECK(rule(u, "&x", err, sizeof(err)) == -1);
    CHECK(may(u, "PUBLISH", (struct ur_arg[]){S("x"), S("m")}, 2) == ACL_ALLOW);
    acl_user_unref(u);
}

static void test_reset(void)
{
    struct acl_user *u = acl_user_new("u", 1);
    char *d;

    CHECK(rules(u, "on >p ~* &* +@all reset") == 0);
    d = acl_user_describe(u);
    CHECK(strcmp(d, "user u off resetkeys resetchannels -@all") == 0);
    free(d);
    acl_user_unref(u);
}

/* What ACL LIST shows reads back, through a file, to the same line. */
static void test_describe_reads_back(void)
{
    static const char *const lists[] = {
        "on >a >b ~1* %R~2* &ch:* +@read -cnt.get +config|get",
        "off nopass allkeys allchannels +@all -@dangerous -flushall",
        "on #5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8 "
        "-@all +cnt.incr +client -client|kill",
        "on resetchannels allkeys +@all -acl +acl|whoami"};

    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        struct acl_user *u = acl_user_new("x", 1);
        struct acl *a = NULL;
        char *d, *d2, text[2048], err[512];

        CHECK(rules(u, lists[i]) == 0);
        d = acl_user_describe(u);
        snprintf(text, sizeof(text), "%s\n", d);
        CHECK(acl_parse_file(text, strlen(text), "f", &a, err, sizeof(err)) ==
              0);
        if (a == NULL) {
            fprintf(stderr, "%s\n", err);
            free(d);
            acl_user_unref(u);
            continue;
        }
        d2 = acl_user_describe(acl_user_find(a, "x", 1));
        CHECK(strcmp(d, d2) == 0);
        if (strcmp(d, d2) != 0)
            fprintf(stderr, "%s\n%s\n", d, d2);
        CHECK(memcmp(u->cmds, acl_user_find(a, "x", 1)->cmds,
                     sizeof(u->cmds)) == 0);
        free(d);
        free(d2);
        acl_destroy(a);
        acl_user_unref(u);
    }
}

static void test_file_errors(void)
{
    struct acl *a = NULL;
    char err[512];
    static const char good[] = "# c\n\nuser a on >x ~* +@all\r\n"
                               "  user default on nopass +@read ~*\n";

    CHECK(acl_parse_file(good, strlen(good), "g.acl", &a, err, sizeof(err)) ==
          1); /* 1: the file defines default */
    CHECK(a != NULL && a->nusers == 2);
    CHECK(a != NULL && acl_user_find(a, "a", 1)->on);
    acl_destroy(a);
    CHECK(acl_parse_file("user a\nuser b +zz\n", 18, "b.acl", &a, err,
                         sizeof(err)) == -1);
    CHECK(a == NULL);
    CHECK(strcmp(err, "b.acl:2: Error in applying operation '+zz': Unknown "
                      "command or category name in ACL") == 0);
    CHECK(acl_parse_file("\n\nfoo bar\n", 9, "c", &a, err, sizeof(err)) == -1);
    CHECK(strcmp(err, "c:3: line should start with user keyword") == 0);
    CHECK(acl_parse_file("user a\nuser a\n", 14, "d", &a, err, sizeof(err)) ==
          -1);
    CHECK(strcmp(err, "d:2: Duplicate user 'a' found") == 0);
    CHECK(acl_parse_file("user\n", 5, "e", &a, err, sizeof(err)) == -1);
    CHECK(strstr(err, "e:1:") == err);
    CHECK(acl_parse_file("user \"a\n", 8, "f", &a, err, sizeof(err)) == -1);
    CHECK(strcmp(err, "f:1: unbalanced quotes") == 0);
    CHECK(acl_parse_file("user a\0b\n", 9, "g", &a, err, sizeof(err)) == -1);
    CHECK(acl_parse_file("", 0, "h", &a, err, sizeof(err)) == 0);
    CHECK(a != NULL && a->nusers == 1 && a->dflt->nopass);
    acl_destroy(a);
}

static void test_categories_from_the_table(void)
{
    const char *w[16];
    bool any_family = false;

    for (unsigned i = 0; i < UR_OP_COUNT; i++) {
        const struct ur_op *op = &ur_ops[i];
        unsigned n = acl_op_categories(op, w);
        bool fast = false, slow = false;

        for (unsigned j = 0; j < n; j++) {
            fast |= strcmp(w[j], "@fast") == 0;
            slow |= strcmp(w[j], "@slow") == 0;
            any_family |= strcmp(w[j], "@cnt") == 0;
        }
        CHECK(fast != slow); /* every op is exactly one */
    }
    CHECK(any_family);
}

int main(void)
{
    T_RUN(test_new_user_has_nothing);
    T_RUN(test_passwords);
    T_RUN(test_commands_and_categories);
    T_RUN(test_keys);
    T_RUN(test_channels);
    T_RUN(test_reset);
    T_RUN(test_describe_reads_back);
    T_RUN(test_file_errors);
    T_RUN(test_categories_from_the_table);
    T_END();
}
