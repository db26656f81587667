/*
 * test_config.c - defaults, validation, the config file, command-line
 * options and CONFIG GET matching.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "t.h"

static void test_defaults(void)
{
    struct config c;
    config_init(&c);
    CHECK_EQ_U64(c.port, 7460);
    CHECK(strcmp(c.bind, "127.0.0.1") == 0);
    CHECK(strcmp(c.dir, "./data") == 0);
    CHECK_EQ_U64(c.max_frame, 1048576);
    CHECK_EQ_U64(c.ntypes, 5);
    CHECK(strcmp(c.type_names[0], "mention") == 0);
    CHECK(strcmp(c.type_names[4], "system") == 0);
    CHECK_EQ_U64(config_type_by_name(&c, "DM", 2), 3);
    CHECK(config_type_by_name(&c, "dmx", 3) == -1);
    CHECK_EQ_U64(c.loglevel, LOG_INFO);
}

static void test_set(void)
{
    struct config c;
    char err[256];
    config_init(&c);
    CHECK(config_set(&c, "port", "7000", err, sizeof(err)) == 0);
    CHECK_EQ_U64(c.port, 7000);
    /* 0: no plaintext listener (TLS alone, on tls-port) */
    CHECK(config_set(&c, "port", "0", err, sizeof(err)) == 0);
    CHECK_EQ_U64(c.port, 0);
    CHECK(config_set(&c, "port", "65536", err, sizeof(err)) == -1);
    CHECK(config_set(&c, "port", "70a", err, sizeof(err)) == -1);
    CHECK(strstr(err, "port") != NULL);
    CHECK(config_set(&c, "nope", "1", err, sizeof(err)) == -1);
    CHECK(strstr(err, "unknown config key 'nope'") != NULL);
    CHECK(config_set(&c, "loglevel", "loud", err, sizeof(err)) == -1);
    CHECK(config_set(&c, "loglevel", "debug", err, sizeof(err)) == 0);
    CHECK(config_set(&c, "counter-types", "a b a", err, sizeof(err)) == -1);
    CHECK(config_set(&c, "counter-types", "a 12", err, sizeof(err)) == -1);
    CHECK(config_set(&c, "counter-types", "a b!c", err, sizeof(err)) == -1);
    CHECK_EQ_U64(c.ntypes, 5); /* failed sets change nothing */
    CHECK(config_set(&c, "counter-types", "Reply,Follow  gift", err,
                     sizeof(err)) == 0);
    CHECK_EQ_U64(c.ntypes, 3);
    CHECK(strcmp(c.counter_types, "reply follow gift") == 0);
    CHECK_EQ_U64(config_type_by_name(&c, "gift", 4), 2);
}

static void test_file_and_args(void)
{
    char path[] = "/tmp/unreadd-test-config-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    const char *text = "# comment\n\nport 7111\n  dir \"/tmp/x y\"\n"
                       "counter-types a b c\n";
    CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);

    struct config c;
    char err[256];
    config_init(&c);
    char *argv[] = {"unreadd", "--port", "7222", "--config", path, NULL};
    CHECK(config_from_args(&c, 5, argv, err, sizeof(err)) == 0);
    CHECK_EQ_U64(c.port, 7222); /* the command line wins over the file */
    CHECK(strcmp(c.dir, "/tmp/x y") == 0);
    CHECK_EQ_U64(c.ntypes, 3);

    char *bad[] = {"unreadd", "--port", NULL};
    CHECK(config_from_args(&c, 2, bad, err, sizeof(err)) == -1);
    char *stray[] = {"unreadd", "port", "1", NULL};
    CHECK(config_from_args(&c, 3, stray, err, sizeof(err)) == -1);

    FILE *f = fopen(path, "w");
    fputs("port 1\nbogus-key 3\n", f);
    fclose(f);
    CHECK(config_load_file(&c, path, err, sizeof(err)) == -1);
    CHECK(strstr(err, ":2:") != NULL);
    unlink(path);
    CHECK(config_load_file(&c, path, err, sizeof(err)) == -1);
}

static void count(const char *name, const char *value, void *ctx)
{
    (void)name, (void)value;
    (*(int *)ctx)++;
}

static void test_match(void)
{
    struct config c;
    config_init(&c);
    int n = 0;
    config_match(&c, "*", 1, count, &n);
    CHECK(n >= 8);
    n = 0;
    config_match(&c, "MAX-*", 5, count, &n);
    CHECK_EQ_U64(n, 3);
    n = 0;
    config_match(&c, "p?rt", 4, count, &n);
    CHECK_EQ_U64(n, 1);
    n = 0;
    config_match(&c, "port*x", 6, count, &n);
    CHECK_EQ_U64(n, 0);
}

/* Every byte but NUL, in every position, comes back from config_quote
 * through config_split as it was; so do the awkward values of CONFIG
 * SET's injection cases, as whole files. */
static void test_quote_roundtrip(void)
{
    static const char *const odd[] = {"x\nenable-debug-command yes",
                                      "a\r\nb",
                                      "\"",
                                      "\\",
                                      "\\\"",
                                      "'",
                                      "#x",
                                      " lead",
                                      "trail ",
                                      "",
                                      "tab\there",
                                      "\x01\x7f\xff",
                                      "\"quoted\"",
                                      "plain"};
    char val[300], text[1300], *w[2];
    size_t l[2], n;

    for (int c = 1; c < 256; c++) {
        for (int pos = 0; pos < 3; pos++) {
            memcpy(val, "ab", 3);
            memmove(val + pos + 1, val + pos, 3 - (size_t)pos);
            val[pos] = (char)c;
            n = config_quote(val, 3, text, sizeof(text));
            CHECK(n < sizeof(text) && n <= 4 * 3 + 2);
            CHECK(config_split(text, n, w, l, 2) == 1);
            CHECK(l[0] == 3 && memcmp(w[0], val, 3) == 0);
        }
    }
    for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
        n = config_quote(odd[i], strlen(odd[i]), text, sizeof(text));
        CHECK(config_split(text, n, w, l, 2) == 1);
        CHECK(l[0] == strlen(odd[i]) && memcmp(w[0], odd[i], l[0]) == 0);
    }
    /* Redis's sdssplitargs forms, and what it refuses */
    char a[] = "user  alice on \">a b\" '~x\\'y' \"\\x41\\q\"";
    char *ws[8];
    size_t ls[8];
    CHECK(config_split(a, strlen(a), ws, ls, 8) == 6);
    CHECK(strcmp(ws[3], ">a b") == 0 && strcmp(ws[4], "~x'y") == 0);
    CHECK(strcmp(ws[5], "Aq") == 0);
    char b1[] = "\"open", b2[] = "\"a\"b", b3[] = "'x", b4[] = "a b c";
    CHECK(config_split(b1, strlen(b1), ws, ls, 8) == -1);
    CHECK(config_split(b2, strlen(b2), ws, ls, 8) == -1);
    CHECK(config_split(b3, strlen(b3), ws, ls, 8) == -1);
    CHECK(config_split(b4, strlen(b4), ws, ls, 2) == -2);
    char nul[] = "\"a\\x00b\"";
    CHECK(config_split(nul, strlen(nul), ws, ls, 2) == 1 && ls[0] == 3 &&
          ws[0][1] == '\0');

    /* A file of such values loads them back exactly; NUL is refused */
    char path[] = "/tmp/unreadd-test-quote-XXXXXX";
    int fd = mkstemp(path);
    char err[256];
    struct config c;
    FILE *f;

    CHECK(fd >= 0);
    close(fd);
    f = fopen(path, "w");
    n = config_quote(odd[0], strlen(odd[0]), text, sizeof(text));
    fprintf(f, "replica-announce-ip %s\nmasteruser '\\'x'\n", text);
    fclose(f);
    config_init(&c);
    CHECK(config_load_file(&c, path, err, sizeof(err)) == 0);
    CHECK(strcmp(c.replica_announce_ip, odd[0]) == 0);
    CHECK(strcmp(c.masteruser, "'x") == 0);
    CHECK(c.enable_debug_command == CONFIG_ALLOW_NO);
    f = fopen(path, "w");
    fputs("masteruser \"a\\x00\"\n", f);
    fclose(f);
    CHECK(config_load_file(&c, path, err, sizeof(err)) == -1);
    CHECK(strstr(err, ":1: a value cannot hold a NUL byte") != NULL);
    f = fopen(path, "w");
    fputs("masteruser \"a\n", f);
    fclose(f);
    CHECK(config_load_file(&c, path, err, sizeof(err)) == -1);
    CHECK(strstr(err, "unbalanced quotes") != NULL);
    /* a user line without anyone to read it */
    f = fopen(path, "w");
    fputs("user alice on\n", f);
    fclose(f);
    CHECK(config_load_file(&c, path, err, sizeof(err)) == -1);
    CHECK(strstr(err, ":1:") != NULL);
    unlink(path);
    /* replicaof's host is written back unquoted: it must not need quotes */
    CHECK(config_set(&c, "replicaof", "a\"b 7000", err, sizeof(err)) == -1);
    CHECK(config_set(&c, "replicaof", "x\ny 7000", err, sizeof(err)) == -1);
    CHECK(config_set(&c, "replicaof", "10.0.0.1 7000", err, sizeof(err)) == 0);
    /* the three-valued keys */
    CHECK(config_set(&c, "enable-debug-command", "local", err, sizeof(err)) ==
              0 &&
          c.enable_debug_command == CONFIG_ALLOW_LOCAL);
    CHECK(config_set(&c, "enable-protected-configs", "maybe", err,
                     sizeof(err)) == -1);
    CHECK(config_allows(CONFIG_ALLOW_LOCAL, true) &&
          !config_allows(CONFIG_ALLOW_LOCAL, false) &&
          config_allows(CONFIG_ALLOW_YES, false) &&
          !config_allows(CONFIG_ALLOW_NO, true));
    CHECK(config_is_protected("dir") && config_is_protected("logfile") &&
          config_is_protected("tls-cert-file") &&
          !config_is_protected("maxmemory"));
    CHECK(config_is_secret("masterauth", 10) &&
          config_is_secret("REQUIREPASS", 11) &&
          !config_is_secret("masteruser", 10));
}

int main(void)
{
    T_RUN(test_quote_roundtrip);
    T_RUN(test_defaults);
    T_RUN(test_set);
    T_RUN(test_file_and_args);
    T_RUN(test_match);
    T_END();
}
