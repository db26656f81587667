/*
 * auth.h - requirepass (docs/COMMANDS.md, "Admin and connection"): the password
 * check that AUTH and HELLO ... AUTH share. The gate that refuses other
 * commands before it succeeds is in the executor (exec.c); the tighter limits
 * on requests read before it succeeds are in net.c.
 */
#ifndef UR_AUTH_H
#define UR_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exec.h"

/*
 * Authenticates x's session with its arguments first.. : "[default]
 * password" or "username password": the ACL user's (acl.h), or without
 * ACL (unit tests) requirepass with the user name default. true with the
 * session authenticated, else false after replying the error: no
 * password configured, an unknown or disabled user or a wrong password
 * (WRONGPASS, counted in INFO and ACL LOG).
 */
bool auth_login(struct exec_ctx *x, uint32_t first);

/*
 * Whether s[0..n) is the secret, a NUL-padded CONFIG_STR_MAX-byte array
 * holding a string. Reads every byte of the secret whatever the input, so
 * the time taken tells nothing of its content or its length.
 */
bool auth_equal(const char *secret, const char *s, size_t n);

#endif
