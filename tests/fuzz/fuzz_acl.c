/*
 * fuzz_acl.c - libFuzzer target for the ACL rule parser (server/acl.h):
 * the input is an ACL file (user lines of rules). Refused, nothing may be
 * left; accepted, every user's description (ACL LIST, ACL SAVE) must read
 * back to the same line and the same command bitmap, and the check must
 * answer for every op of the table with the input's tail as arguments.
 * Every allocation is freed with the table.
 *
 *   make fuzz && build-fuzz/fuzz_acl tests/fuzz/corpus/acl
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ASSERT(c)                                                              \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

static void check_user(const struct acl_user *u, const uint8_t *data,
                       size_t size)
{
    char *line = acl_user_describe(u), *text, err[512];
    struct acl *back = NULL;
    const struct acl_user *v;
    size_t n;
    struct ur_arg args[3];
    const char *what;
    size_t wlen;

    ASSERT(line != NULL);
    n = strlen(line);
    text = malloc(n + 2);
    ASSERT(text != NULL);
    memcpy(text, line, n);
    text[n] = '\n';
    text[n + 1] = '\0';
    ASSERT(acl_parse_file(text, n + 1, "back", &back, err, sizeof(err)) >= 0);
    v = acl_user_find(back, u->name, strlen(u->name));
    ASSERT(v != NULL);
    {
        char *again = acl_user_describe(v);
        ASSERT(again != NULL && strcmp(again, line) == 0);
        free(again);
    }
    ASSERT(memcmp(u->cmds, v->cmds, sizeof(u->cmds)) == 0);
    ASSERT(u->on == v->on && u->nopass == v->nopass && u->npass == v->npass);
    /* the check over every op, with bytes of the input as arguments */
    for (unsigned i = 0; i < 3; i++) {
        size_t k = size > i * 7 ? (size - i * 7 > 7 ? 7 : size - i * 7) : 0;
        args[i] = (struct ur_arg){.kind = UR_ARG_STR,
                                  .str = (const char *)data + (size - k),
                                  .len = k};
    }
    for (unsigned i = 0; i < UR_OP_COUNT; i++) {
        int r = acl_user_may(u, &ur_ops[i], 3, args, &what, &wlen);
        ASSERT(r >= ACL_ALLOW && r <= ACL_DENY_CHANNEL);
        /* the executor's one-bit fast path never allows what the full
         * check refuses */
        if ((u->fast[i >> 6] >> (i & 63)) & 1)
            ASSERT(r == ACL_ALLOW);
        ASSERT(acl_user_may(v, &ur_ops[i], 3, args, &what, &wlen) == r);
    }
    acl_destroy(back);
    free(text);
    free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct acl *a = NULL;
    char err[512];

    if (size > 1 << 16)
        return 0;
    if (acl_parse_file((const char *)data, size, "fuzz", &a, err, sizeof(err)) <
        0) {
        ASSERT(a == NULL && err[0] != '\0');
        return 0;
    }
    ASSERT(a != NULL && a->dflt != NULL);
    for (uint32_t i = 0; i < a->nusers; i++)
        check_user(a->users[i], data, size);
    acl_destroy(a);
    return 0;
}
