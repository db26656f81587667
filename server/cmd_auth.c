/*
 * cmd_auth.c - AUTH [username] password (auth.h; docs/OPERATIONS.md,
 * "Security").
 */
#include "auth.h"
#include "cmds.h"

void cmd_AUTH(struct exec_ctx *x)
{
    if (auth_login(x, 0))
        reply_status(x->r, "OK");
}
