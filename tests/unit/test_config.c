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

int main(void)
{
    T_RUN(test_defaults);
    T_RUN(test_set);
    T_RUN(test_file_and_args);
    T_RUN(test_match);
    T_END();
}
