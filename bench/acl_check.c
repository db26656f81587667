/*
 * acl_check.c - what the executor's ACL question costs (issue 33), in
 * nanoseconds per command, in process: acl_refuses (server/acl.h) on
 * CNT.INCR uid 0, with no ACL user (the flag test), then with 100 users
 * defined and the session's user restricted (+@all -@dangerous ~*: the
 * bit test), then with a key pattern to match (~1* ~2*: the glob). The
 * end-to-end figure is bench/acl.py's (make bench-acl).
 *
 *   build/acl-check [calls]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acl.h"

static struct server srv;
static struct client cl;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double run(struct session *sess, uint64_t calls)
{
    const struct ur_op *op = ur_op_by_name("CNT.INCR", 8);
    struct ur_arg argv[2] = {{.kind = UR_ARG_INT, .num = 12},
                             {.kind = UR_ARG_INT, .num = 0}};
    uint64_t refused = 0, t0 = now_ns();

    for (uint64_t i = 0; i < calls; i++) {
        argv[0].num = 10 + (i & 7);
        refused += acl_refuses(&srv, sess, op, 2, argv, NULL);
        __asm__ volatile("" ::: "memory");
    }
    if (refused != 0) {
        fprintf(stderr, "acl-check: %llu refused\n",
                (unsigned long long)refused);
        exit(1);
    }
    return (double)(now_ns() - t0) / (double)calls;
}

static void setuser(const char *name, const char *rules)
{
    char buf[512], *save = NULL, err[256];
    struct ur_arg a[32];
    uint32_t n = 0;

    snprintf(buf, sizeof(buf), "%s", rules);
    for (char *w = strtok_r(buf, " ", &save); w != NULL && n < 32;
         w = strtok_r(NULL, " ", &save))
        a[n++] =
            (struct ur_arg){.kind = UR_ARG_STR, .str = w, .len = strlen(w)};
    if (acl_setuser(&srv, name, strlen(name), a, n, NULL, NULL, err,
                    sizeof(err)) != 0) {
        fprintf(stderr, "acl-check: %s\n", err);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    uint64_t calls = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000000ull;
    struct session sess = {.client = &cl, .authed = true};
    char err[256];

    cl.sess = &sess;
    config_init(&srv.cfg);
    srv.acl = acl_create();
    if (srv.acl == NULL || acl_setup(&srv, err, sizeof(err)) != 0)
        return 1;
    printf("no ACL user (flag test):       %.2f ns/command\n",
           run(&sess, calls));
    for (int i = 0; i < 100; i++) {
        char name[16], rules[64];
        snprintf(name, sizeof(name), "svc%03d", i);
        snprintf(rules, sizeof(rules), "on >pw%d ~%d* -@all +@cnt", i, i);
        setuser(name, rules);
    }
    setuser("default", "+@all -@dangerous");
    printf("100 users, bitmap (bit test):  %.2f ns/command\n",
           run(&sess, calls));
    setuser("default", "resetkeys ~1* ~2*");
    printf("100 users, ~1* ~2* (glob):     %.2f ns/command\n",
           run(&sess, calls / 4));
    acl_destroy(srv.acl);
    return 0;
}
