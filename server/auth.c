/*
 * auth.c - see auth.h.
 */
#include "auth.h"

#include "acl.h"
#include "config.h"

bool auth_equal(const char *secret, const char *s, size_t n)
{
    unsigned diff = n >= CONFIG_STR_MAX;

    /* The secret holds no NUL before its padding, so refusing a NUL in s
     * makes "equal over the padded width" mean "equal strings". */
    for (size_t i = 0; i < CONFIG_STR_MAX; i++) {
        unsigned char b = i < n ? (unsigned char)s[i] : 0;
        diff |= (unsigned char)secret[i] ^ b;
        diff |= i < n && b == 0;
    }
    return diff == 0;
}

bool auth_login(struct exec_ctx *x, uint32_t first)
{
    struct server *srv = x->srv;
    uint32_t pw = x->argc - 1;
    const struct ur_arg *a = &x->argv[pw];
    char num[24];
    const char *s = a->str;
    size_t n = a->len;

    if (a->kind == UR_ARG_INT) {
        n = ur_fmt_u64(num, a->num);
        s = num;
    }
    if (srv->acl != NULL) {
        const struct ur_arg *u = pw > first ? &x->argv[first] : NULL;
        char unum[24];
        const char *us = NULL;
        size_t un = 0;

        if (u != NULL && u->kind == UR_ARG_INT) {
            un = ur_fmt_u64(unum, u->num);
            us = unum;
        } else if (u != NULL) {
            us = u->str;
            un = u->len;
        }
        return acl_login(srv, x->sess, us, un, s, n, x->r);
    }
    if (srv->cfg.requirepass[0] == '\0') {
        reply_err(x->r, UR_E_ERR,
                  "AUTH <password> called without any password configured "
                  "for the default user. Are you sure your configuration "
                  "is correct?");
        return false;
    }
    if ((pw > first && !arg_is(x, first, "default")) ||
        !auth_equal(srv->cfg.requirepass, s, n)) {
        srv->stats.auth_failures++;
        srv->stats.acl_denied_auth++; /* as acl_login counts it */
        x->sess->auth_failures++;
        reply_err(x->r, UR_E_WRONGPASS,
                  "invalid username-password pair or user is disabled.");
        return false;
    }
    x->sess->authed = true;
    return true;
}
