/*
 * cmd_debug.c - DEBUG subcommands: checks and test hooks.
 */
#include "cmds.h"
#include "log.h"

void cmd_DEBUG(struct exec_ctx *x)
{
    if (arg_is(x, 0, "AUDIT") && x->argc == 1) {
        size_t bad = db_audit(&x->srv->db);
        if (bad != 0)
            log_warn("DEBUG AUDIT: %zu mismatches", bad);
        reply_int(x->r, bad);
        return;
    }
    char text[65];
    reply_err(x->r, UR_E_BADARG, "unknown DEBUG subcommand '%s' (try AUDIT)",
              arg_text(x, 0, text, sizeof(text)));
}
