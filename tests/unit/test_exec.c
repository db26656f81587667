/*
 * test_exec.c - the executor and the handlers on a scratch db, with no
 * socket: request in, reply bytes out, for both protocols.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cnt.h"
#include "exec.h"
#include "frame.h"
#include "t.h"

static struct server srv;
static struct session sess = {.id = 1, .proto = REPLY_RESP};
static struct ur_buf out;

/* Runs one text command (words split on spaces) and returns the reply. */
static const char *text(const char *line)
{
    static char copy[512];
    struct ur_arg argv[32];
    uint32_t argc = 0;
    snprintf(copy, sizeof(copy), "%s", line);
    for (char *p = strtok(copy, " "); p && argc < 32; p = strtok(NULL, " "))
        argv[argc++] = (struct ur_arg){UR_ARG_STR, (uint32_t)strlen(p), p, 0};
    struct reply r;
    out.len = 0;
    reply_begin(&r, &out, REPLY_RESP, 0);
    exec_text(&srv, &sess, argc, argv, &r);
    reply_end(&r);
    ur_buf_append(&out, "", 1);
    return out.data;
}

static bool starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void test_cnt_text(void)
{
    CHECK(strcmp(text("CNT.INCR 42 mention"), "*2\r\n:1\r\n:1\r\n") == 0);
    CHECK(strcmp(text("cnt.incr 42 like 5"), "*2\r\n:5\r\n:6\r\n") == 0);
    CHECK(strcmp(text("CNT.GETALL 42"), "*4\r\n:0\r\n:1\r\n:2\r\n:5\r\n") == 0);
    CHECK(strcmp(text("CNT.DECR 42 2 9"), "*2\r\n:0\r\n:1\r\n") == 0);
    CHECK(strcmp(text("CNT.SET 42 63 7"), "*2\r\n:7\r\n:8\r\n") == 0);
    CHECK(strcmp(text("CNT.GET 42 63"), ":7\r\n") == 0);
    CHECK(strcmp(text("CNT.TOTAL 42"), ":8\r\n") == 0);
    CHECK(strcmp(text("CNT.CLEAR 42 mention"), ":7\r\n") == 0);
    CHECK(strcmp(text("CNT.CLEAR 42"), ":0\r\n") == 0);
    CHECK(strcmp(text("CNT.GETALL 42"), "*0\r\n") == 0);
    CHECK_EQ_U64(cnt_entries(srv.db.cnt), 0);
    CHECK(strcmp(text("CNT.INCR 9223372036854775807 system 0"),
                 "*2\r\n:0\r\n:0\r\n") == 0);
    /* Leading zeros (redis-benchmark's __rand_int__) name the same user;
     * past the shared integer range is refused. */
    CHECK(strcmp(text("CNT.INCR 0000000042 1 0002"), "*2\r\n:2\r\n:2\r\n") ==
          0);
    CHECK(strcmp(text("CNT.GET 42 1"), ":2\r\n") == 0);
    CHECK(starts(text("CNT.INCR 9223372036854775808 0"),
                 "-ERR uid must be at most 9223372036854775807"));
    CHECK(starts(text("CNT.INCR 18446744073709551615 0"),
                 "-ERR uid must be at most"));
    text("CNT.CLEAR 42");
}

/* exec_text's last-name cache: a name one byte off the cached one, the
 * same name in another case, names longer than the cache holds, and
 * unknown names between known ones each get their own answer. */
static void test_name_cache(void)
{
    CHECK(strcmp(text("CNT.INCR 9001 0"), "*2\r\n:1\r\n:1\r\n") == 0);
    CHECK(strcmp(text("CNT.INCR 9001 0"), "*2\r\n:2\r\n:2\r\n") == 0);
    CHECK(starts(text("CNT.INCX 9001 0"), "-ERR unknown command 'CNT.INCX'"));
    CHECK(strcmp(text("CNT.INCR 9001 0"), "*2\r\n:3\r\n:3\r\n") == 0);
    CHECK(strcmp(text("CNT.DECR 9001 0"), "*2\r\n:2\r\n:2\r\n") == 0);
    CHECK(strcmp(text("cnt.decr 9001 0"), "*2\r\n:1\r\n:1\r\n") == 0);
    CHECK(strcmp(text("CNT.GET 9001 0"), ":1\r\n") == 0);
    CHECK(starts(text("CNT.GETX 9001 0"), "-ERR unknown command"));
    CHECK(starts(text("CNT.GE 9001 0"), "-ERR unknown command"));
    CHECK(strcmp(text("CNT.GET 9001 0"), ":1\r\n") == 0);
    /* Longer than the cache's 16 bytes: looked up every time. */
    CHECK(starts(text("CONV.MENTIONSXXXXXXX 9001"), "-ERR unknown command"));
    CHECK(strcmp(text("CONV.MENTIONS 9001"), ":0\r\n") == 0);
    CHECK(starts(text("CONV.MENTIONSXXXXXXX 9001"), "-ERR unknown command"));
    CHECK(strcmp(text("CNT.GET 9001 0"), ":1\r\n") == 0);
}

static void test_errors(void)
{
    CHECK(starts(text("NOPE 1"), "-ERR unknown command 'NOPE'"));
    CHECK(starts(text("CNT.INCR 1"), "-ERR wrong number of arguments"));
    CHECK(starts(text("CNT.GET 1 2 3"), "-ERR wrong number of arguments"));
    CHECK(starts(text("CNT.INCR x 0"), "-ERR uid must be"));
    CHECK(starts(text("CNT.INCR -1 0"), "-ERR uid must be"));
    CHECK(starts(text("CNT.INCR 18446744073709551616 0"), "-ERR uid must be"));
    CHECK(starts(text("CNT.INCR 1 64"), "-ERR unknown counter type '64'"));
    CHECK(starts(text("CNT.INCR 1 bogus"), "-ERR unknown counter type"));
    CHECK(starts(text("CNT.INCR 1 0 1.5"), "-ERR delta must be"));
    CHECK(starts(text("CNT.SET 1 0 4294967296"), "-ERR value must be at most"));
    /* a bad type anywhere in CLEAR clears nothing */
    text("CNT.INCR 5 0 3");
    CHECK(starts(text("CNT.CLEAR 5 0 bogus"), "-ERR unknown counter type"));
    CHECK(strcmp(text("CNT.GET 5 0"), ":3\r\n") == 0);
    CHECK(starts(text("HELLO 4"), "-NOPROTO"));
    CHECK(starts(text("CONFIG SET port"), "-ERR wrong number of arguments"));
    CHECK(starts(text("CONFIG SET port 1"), "-ERR CONFIG SET failed"));
    CHECK(starts(text("CONFIG NOPE"), "-ERR unknown CONFIG subcommand"));
    CHECK(starts(text("HELP NOPE"), "-ERR unknown command"));
}

static void test_saturation(void)
{
    CHECK(strcmp(text("CNT.SET 9 1 4294967295"),
                 "*2\r\n:4294967295\r\n:4294967295\r\n") == 0);
    CHECK(strcmp(text("CNT.INCR 9 1 10"),
                 "*2\r\n:4294967295\r\n:4294967295\r\n") == 0);
    CHECK(strcmp(text("CNT.INCR 9 2 10"), "*2\r\n:10\r\n:4294967305\r\n") == 0);
    CHECK(strcmp(text("CNT.DECR 9 2 9223372036854775807"),
                 "*2\r\n:0\r\n:4294967295\r\n") == 0);
}

static void test_admin(void)
{
    CHECK(strcmp(text("PING"), "+PONG\r\n") == 0);
    CHECK(strcmp(text("ping hi"), "$2\r\nhi\r\n") == 0);
    CHECK(starts(text("HELLO"), "*14\r\n$6\r\nserver\r\n$7\r\nunreadd\r\n"));
    CHECK(strstr(text("HELLO 2"), ":2\r\n") != NULL);
    CHECK(strcmp(text("CONFIG GET port"),
                 "*2\r\n$4\r\nport\r\n$4\r\n7460\r\n") == 0);
    CHECK(starts(text("CONFIG GET max-*"), "*6\r\n"));
    CHECK(strcmp(text("CONFIG GET nothing"), "*0\r\n") == 0);
    CHECK(starts(text("HELP CNT.INCR"),
                 "*5\r\n$34\r\nCNT.INCR uid type [delta] [ID nid]"));
    CHECK(strstr(text("HELP"), "CNT.CLEAR uid [type ...]") != NULL);
    const char *info = text("INFO");
    CHECK(strstr(info, "# Server") && strstr(info, "# Memory") &&
          strstr(info, "cnt_users:") && strstr(info, "cmdstat_cnt.incr:"));
    CHECK(strstr(text("INFO stats"), "# Server") == NULL);
    CHECK(strcmp(text("QUIT"), "+OK\r\n") == 0);
}

static void test_binary(void)
{
    struct ur_arg argv[3] = {{UR_ARG_INT, 0, NULL, 77},
                             {UR_ARG_STR, 7, "comment", 0},
                             {UR_ARG_INT, 0, NULL, 4}};
    struct reply r;
    struct session bs = {.id = 2, .proto = REPLY_BIN};
    out.len = 0;
    reply_begin(&r, &out, REPLY_BIN, 99);
    exec_binary(&srv, &bs, UR_OP_CNT_INCR, 3, argv, &r);
    reply_end(&r);

    struct ur_frame_hdr h;
    size_t used, hint;
    CHECK(ur_frame_parse_reply(out.data, out.len, 1u << 20, &h, &used, &hint) ==
          UR_PARSE_OK);
    CHECK_EQ_U64(h.id, 99);
    CHECK_EQ_U64(h.op, 0);
    CHECK_EQ_U64(used, out.len);
    struct ur_val_reader vr;
    struct ur_val v;
    ur_val_reader_init(&vr, out.data + UR_FRAME_HDR, h.len);
    CHECK(ur_val_next(&vr, &v) && v.kind == UR_VAL_ARR && v.count == 2);
    CHECK(ur_val_next(&vr, &v) && v.kind == UR_VAL_INT && v.num == 4);
    CHECK(ur_val_next(&vr, &v) && v.kind == UR_VAL_INT && v.num == 4);
    CHECK(!ur_val_next(&vr, &v));

    /* unknown opcode: status UNKNOWN, an ERR value, same id */
    out.len = 0;
    reply_begin(&r, &out, REPLY_BIN, 5);
    exec_binary(&srv, &bs, 0x01ff, 0, NULL, &r);
    reply_end(&r);
    CHECK(ur_frame_parse_reply(out.data, out.len, 1u << 20, &h, &used, &hint) ==
          UR_PARSE_OK);
    CHECK_EQ_U64(h.op, UR_E_UNKNOWN);
    CHECK_EQ_U64(h.id, 5);
    ur_val_reader_init(&vr, out.data + UR_FRAME_HDR, h.len);
    CHECK(ur_val_next(&vr, &v) && v.kind == UR_VAL_ERR &&
          v.code == UR_E_UNKNOWN);

    /* arity */
    out.len = 0;
    reply_begin(&r, &out, REPLY_BIN, 6);
    exec_binary(&srv, &bs, UR_OP_CNT_GET, 1, argv, &r);
    reply_end(&r);
    CHECK(ur_frame_parse_reply(out.data, out.len, 1u << 20, &h, &used, &hint) ==
          UR_PARSE_OK);
    CHECK_EQ_U64(h.op, UR_E_ARITY);
}

static void count_key(const char *name, const char *value, void *ctx)
{
    (void)name, (void)value;
    (*(uint32_t *)ctx) += 2;
}

static void test_deferred_array(void)
{
    /* CONFIG GET * uses a deferred array in both protocols */
    uint32_t want = 0;
    char hdr[16];
    config_match(&srv.cfg, "*", 1, count_key, &want);
    snprintf(hdr, sizeof(hdr), "*%u\r\n", want);
    CHECK(want >= 18);
    CHECK(starts(text("CONFIG GET *"), hdr));
    struct ur_arg argv[2] = {{UR_ARG_STR, 3, "GET", 0},
                             {UR_ARG_STR, 1, "*", 0}};
    struct reply r;
    struct session bs = {.id = 3, .proto = REPLY_BIN};
    out.len = 0;
    reply_begin(&r, &out, REPLY_BIN, 1);
    exec_binary(&srv, &bs, UR_OP_CONFIG, 2, argv, &r);
    reply_end(&r);
    struct ur_frame_hdr h;
    size_t used, hint;
    CHECK(ur_frame_parse_reply(out.data, out.len, 1u << 20, &h, &used, &hint) ==
          UR_PARSE_OK);
    struct ur_val_reader vr;
    struct ur_val v;
    ur_val_reader_init(&vr, out.data + UR_FRAME_HDR, h.len);
    CHECK(ur_val_next(&vr, &v) && v.kind == UR_VAL_ARR && v.count == want);
}

static void test_debug(void)
{
    text("CNT.INCR 1 0 5");
    CHECK(strcmp(text("DEBUG AUDIT"), ":0\r\n") == 0);
    CHECK(strcmp(text("debug audit"), ":0\r\n") == 0);
    CHECK(starts(text("DEBUG NOPE"), "-ERR unknown DEBUG subcommand 'NOPE'"));
    CHECK(starts(text("DEBUG AUDIT 1"), "-ERR unknown DEBUG subcommand"));
    CHECK(starts(text("DEBUG"), "-ERR wrong number of arguments"));
}

static void test_stats(void)
{
    uint64_t before = srv.stats.errors;
    text("CNT.GET");
    CHECK_EQ_U64(srv.stats.errors, before + 1);
    CHECK(srv.stats.calls[UR_OPI_CNT_INCR] > 0);
}

int main(void)
{
    config_init(&srv.cfg);
    srv.cfg.enable_debug_command = CONFIG_ALLOW_YES; /* test_debug */
    if (db_init(&srv.db) != 0)
        return 1;
    ur_buf_init(&out);
    T_RUN(test_cnt_text);
    T_RUN(test_name_cache);
    T_RUN(test_errors);
    T_RUN(test_saturation);
    T_RUN(test_admin);
    T_RUN(test_binary);
    T_RUN(test_deferred_array);
    T_RUN(test_debug);
    T_RUN(test_stats);
    ur_buf_deinit(&out);
    db_deinit(&srv.db);
    slowlog_deinit(&srv.slowlog);
    T_END();
}
