/*
 * test_limits.c - hardening below the network: the password compare, the
 * AUTH gate of the executor (AUTH, HELLO ... AUTH, NOAUTH for the rest,
 * replay's session exempt), and the RESP parser's bound on a whole
 * multibulk request. The network's limits (output, maxclients, timeouts,
 * unauthenticated sizes) are tested against a real server:
 * tests/integration/test_hardening.py.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "exec.h"
#include "frame.h"
#include "resp.h"
#include "t.h"

static struct server srv;
static struct ur_buf out;

/* Runs one text command (words split on spaces) in sess; the reply. */
static const char *run(struct session *sess, const char *line)
{
    static char copy[512];
    struct ur_arg argv[16];
    uint32_t argc = 0;
    struct reply r;

    snprintf(copy, sizeof(copy), "%s", line);
    for (char *p = strtok(copy, " "); p && argc < 16; p = strtok(NULL, " "))
        argv[argc++] = (struct ur_arg){UR_ARG_STR, (uint32_t)strlen(p), p, 0};
    out.len = 0;
    reply_begin(&r, &out, sess->proto, 7);
    exec_text(&srv, sess, argc, argv, &r);
    reply_end(&r);
    ur_buf_append(&out, "", 1);
    out.len--;
    return out.data;
}

static bool starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void set_pass(const char *pw)
{
    char err[256];
    CHECK(config_set(&srv.cfg, "requirepass", pw, err, sizeof(err)) == 0);
}

static void test_auth_equal(void)
{
    char secret[CONFIG_STR_MAX] = "s3cret";
    char full[CONFIG_STR_MAX];

    CHECK(auth_equal(secret, "s3cret", 6));
    CHECK(!auth_equal(secret, "s3cre", 5));
    CHECK(!auth_equal(secret, "s3cret!", 7));
    CHECK(!auth_equal(secret, "s3creT", 6));
    CHECK(!auth_equal(secret, "", 0));
    /* a NUL cannot stand for the padding */
    CHECK(!auth_equal(secret, "s3cret\0", 7));
    CHECK(!auth_equal(secret, "s3cret\0\0\0", 9));
    /* the longest secret, and inputs longer than any secret */
    memset(full, 'x', sizeof(full) - 1);
    full[sizeof(full) - 1] = '\0';
    CHECK(auth_equal(full, full, sizeof(full) - 1));
    CHECK(!auth_equal(full, full, sizeof(full)));
    {
        char big[2 * CONFIG_STR_MAX];
        memset(big, 'x', sizeof(big));
        CHECK(!auth_equal(full, big, sizeof(big)));
    }
    /* an empty secret matches only the empty input */
    memset(secret, 0, sizeof(secret));
    CHECK(auth_equal(secret, "", 0));
    CHECK(!auth_equal(secret, "a", 1));
}

static void test_gate_text(void)
{
    struct session s = {.id = 1, .proto = REPLY_RESP};

    set_pass("pw1");
    CHECK(strcmp(run(&s, "PING"), "+PONG\r\n") == 0);
    CHECK(starts(run(&s, "HELLO"), "*14\r\n"));
    CHECK(starts(run(&s, "CNT.INCR 1 0"), "-NOAUTH Authentication required."));
    CHECK(starts(run(&s, "INFO"), "-NOAUTH"));
    CHECK(starts(run(&s, "HELP"), "-NOAUTH"));
    CHECK(starts(run(&s, "CONFIG GET requirepass"), "-NOAUTH"));
    /* the gate comes before arity: nothing is learnt of a command */
    CHECK(starts(run(&s, "CNT.INCR"), "-NOAUTH"));
    CHECK(starts(run(&s, "AUTH pw2"), "-WRONGPASS"));
    CHECK(starts(run(&s, "AUTH pw"), "-WRONGPASS"));
    CHECK(starts(run(&s, "AUTH pw1x"), "-WRONGPASS"));
    CHECK(starts(run(&s, "AUTH alice pw1"), "-WRONGPASS"));
    CHECK(starts(run(&s, "AUTH"), "-ERR wrong number of arguments"));
    CHECK(!s.authed);
    CHECK_EQ_U64(srv.stats.auth_failures, 4);
    CHECK(strcmp(run(&s, "AUTH default pw1"), "+OK\r\n") == 0);
    CHECK(s.authed);
    CHECK(strcmp(run(&s, "CNT.INCR 1 0"), "*2\r\n:1\r\n:1\r\n") == 0);
    /* the password is not shown */
    CHECK(strcmp(run(&s, "CONFIG GET requirepass"),
                 "*2\r\n$11\r\nrequirepass\r\n$5\r\n(set)\r\n") == 0);
    /* a wrong AUTH later keeps the session authenticated (as Redis) */
    CHECK(starts(run(&s, "AUTH nope"), "-WRONGPASS"));
    CHECK(s.authed);
    CHECK(strcmp(run(&s, "QUIT"), "+OK\r\n") == 0);
}

/* The status of a binary reply to line, or -1 if it is not one frame. */
static int bin_status(struct session *sess, const char *line)
{
    struct ur_frame_hdr h;
    size_t used, hint;
    const char *reply = run(sess, line);

    if (ur_frame_parse_reply(reply, out.len, 1u << 20, &h, &used, &hint) !=
            UR_PARSE_OK ||
        used != out.len || h.id != 7)
        return -1;
    return h.op;
}

static void test_hello_auth(void)
{
    struct session s = {.id = 2, .proto = REPLY_RESP};

    set_pass("pw1");
    CHECK(starts(run(&s, "HELLO 2 AUTH"), "-ERR syntax error in HELLO"));
    CHECK(starts(run(&s, "HELLO 2 LOGIN pw1"), "-ERR syntax error in HELLO"));
    CHECK(starts(run(&s, "HELLO 2 AUTH default pw1 extra"),
                 "-ERR syntax error in HELLO"));
    CHECK(starts(run(&s, "HELLO 2 AUTH default pw1 a b c"),
                 "-ERR wrong number of arguments"));
    CHECK(starts(run(&s, "HELLO 4 AUTH pw1"), "-NOPROTO"));
    CHECK(!s.authed);
    CHECK(starts(run(&s, "HELLO 2 AUTH bad"), "-WRONGPASS"));
    CHECK(!s.authed);
    CHECK(starts(run(&s, "HELLO 2 AUTH default pw1"), "*14\r\n"));
    CHECK(s.authed);

    /* binary: HELLO 1 AUTH password */
    struct session b = {.id = 3, .proto = REPLY_BIN};
    CHECK_EQ_U64(bin_status(&b, "CNT.GET 1 0"), UR_E_NOAUTH);
    CHECK_EQ_U64(bin_status(&b, "HELLO 1 AUTH pw1"), UR_E_OK);
    CHECK(b.authed);
}

static void test_no_password(void)
{
    struct session s = {.id = 4, .proto = REPLY_RESP};

    set_pass("");
    CHECK(!session_needs_auth(&srv, &s));
    CHECK(strcmp(run(&s, "CNT.GET 1 0"), ":1\r\n") == 0);
    CHECK(starts(run(&s, "AUTH x"),
                 "-ERR AUTH <password> called without any password"));
    CHECK(starts(run(&s, "HELLO 2 AUTH x"), "-ERR AUTH <password>"));
    CHECK(strcmp(run(&s, "CONFIG GET requirepass"),
                 "*2\r\n$11\r\nrequirepass\r\n$0\r\n\r\n") == 0);
}

static void test_config_limits(void)
{
    struct config c;
    char err[256];

    config_init(&c);
    CHECK_EQ_U64(c.maxclients, 10000);
    CHECK_EQ_U64(c.timeout, 0);
    CHECK_EQ_U64(c.client_output_limit, 64u << 20);
    CHECK_EQ_U64(c.client_output_timeout, 60);
    CHECK(c.requirepass[0] == '\0');
    CHECK(config_set(&c, "maxclients", "0", err, sizeof(err)) != 0);
    CHECK(config_set(&c, "client-output-limit", "1gb", err, sizeof(err)) == 0);
    CHECK_EQ_U64(c.client_output_limit, 1ull << 30);
    {
        char long_pw[CONFIG_STR_MAX + 1];
        memset(long_pw, 'p', CONFIG_STR_MAX);
        long_pw[CONFIG_STR_MAX] = '\0';
        CHECK(config_set(&c, "requirepass", long_pw, err, sizeof(err)) != 0);
        long_pw[CONFIG_STR_MAX - 1] = '\0';
        CHECK(config_set(&c, "requirepass", long_pw, err, sizeof(err)) == 0);
    }
    /* a shorter password after a longer one leaves no bytes behind */
    CHECK(config_set(&c, "requirepass", "ab", err, sizeof(err)) == 0);
    CHECK(auth_equal(c.requirepass, "ab", 2));
}

static enum ur_parse req(const char *s, size_t *consumed, size_t *hint)
{
    static const struct ur_limits lim = {100, 8, 64};
    static struct ur_arg args[9];
    uint32_t argc;
    return ur_resp_parse_request(s, strlen(s), &lim, args, &argc, consumed,
                                 hint);
}

/* The bulks of one multibulk request together fit max-frame. */
static void test_multibulk_total(void)
{
    size_t consumed, hint;
    char buf[512];

    /* 60 + 40 = 100: fits; 60 + 41: too big, as soon as $41 is read */
    snprintf(buf, sizeof(buf), "*2\r\n$60\r\n%060d\r\n$40\r\n%040d\r\n", 0, 0);
    CHECK(req(buf, &consumed, &hint) == UR_PARSE_OK);
    CHECK(req("*2\r\n$60\r\n", &consumed, &hint) == UR_PARSE_NEED_MORE);
    snprintf(buf, sizeof(buf), "*2\r\n$60\r\n%060d\r\n$41\r\n", 0);
    CHECK(req(buf, &consumed, &hint) == UR_PARSE_TOO_BIG);
    /* eight bulks of 13 bytes are 104: refused at the eighth header */
    snprintf(buf, sizeof(buf), "*8\r\n");
    for (int i = 0; i < 7; i++)
        strcat(buf, "$13\r\n0123456789abc\r\n");
    CHECK(req(buf, &consumed, &hint) == UR_PARSE_NEED_MORE);
    strcat(buf, "$13\r\n");
    CHECK(req(buf, &consumed, &hint) == UR_PARSE_TOO_BIG);
    /* a single bulk still up to max-frame */
    snprintf(buf, sizeof(buf), "*1\r\n$100\r\n%0100d\r\n", 0);
    CHECK(req(buf, &consumed, &hint) == UR_PARSE_OK);
    CHECK(req("*1\r\n$101\r\n", &consumed, &hint) == UR_PARSE_TOO_BIG);
}

int main(void)
{
    config_init(&srv.cfg);
    if (db_init(&srv.db) != 0)
        return 1;
    T_RUN(test_auth_equal);
    T_RUN(test_gate_text);
    T_RUN(test_hello_auth);
    T_RUN(test_no_password);
    T_RUN(test_config_limits);
    T_RUN(test_multibulk_total);
    db_deinit(&srv.db);
    slowlog_deinit(&srv.slowlog);
    ur_buf_deinit(&out);
    T_END();
}
