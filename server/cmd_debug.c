/*
 * cmd_debug.c - DEBUG subcommands: checks and test hooks.
 */
#include "userrec.h"
#include "cmds.h"
#include "log.h"

/* Largest clock move: a century, far from the int64 offset's limit. */
#define ADVANCE_MAX_S (100ULL * 366 * 86400)

/*
 * DEBUG ADVANCE-CLOCK seconds: a test hook. Moves the server clock (every
 * default ts, the activity days, expiry) forward. The offset itself is not
 * journaled and is gone after a restart; what runs under it is journaled with
 * the time it ran at, so replay is still exact.
 */
static void advance_clock(struct exec_ctx *x)
{
    uint64_t s;

    if (!arg_u64(x, 1, "seconds", &s))
        return;
    if (s > ADVANCE_MAX_S) {
        reply_err(x->r, UR_E_BADARG, "seconds must be at most %llu",
                  ADVANCE_MAX_S);
        return;
    }
    x->srv->clock_offset_ms += (int64_t)(s * 1000);
    if (x->srv->clock_offset_ms > (int64_t)(ADVANCE_MAX_S * 1000))
        x->srv->clock_offset_ms = (int64_t)(ADVANCE_MAX_S * 1000);
    log_warn("DEBUG ADVANCE-CLOCK: the server clock is now %lld s ahead",
             (long long)(x->srv->clock_offset_ms / 1000));
    reply_int(x->r, (uint64_t)(x->srv->clock_offset_ms / 1000));
}

/* DIGEST-VALUE key ...: per key, 40 hex digits that are the same on two
 * servers holding the same state for the id (its user record's digest;
 * 40 zeros when it holds nothing), as Redis's: redis-cli --cluster
 * compares them after a BUSYKEY to know whether a move may REPLACE. */
static void digest_value(struct exec_ctx *x)
{
    uint64_t id;

    for (uint32_t i = 1; i < x->argc; i++)
        if (!arg_u64(x, i, "key", &id))
            return;
    reply_arr(x->r, x->argc - 1);
    for (uint32_t i = 1; i < x->argc; i++) {
        char hex[USERREC_DIGEST + 1];

        arg_u64(x, i, "key", &id);
        if (userrec_digest(&x->srv->db, id, hex) < 0) {
            reply_oom(x);
            return;
        }
        reply_str(x->r, hex, USERREC_DIGEST);
    }
}

/* DEBUG runs only where enable-debug-command allows it (no by default;
 * local: loopback clients), as in Redis 7: AUDIT blocks the server, and
 * the hooks change what the server believes. */
void cmd_DEBUG(struct exec_ctx *x)
{
    if (!config_allows(x->srv->cfg.enable_debug_command,
                       session_local(x->sess))) {
        reply_err(x->r, UR_E_ERR,
                  "DEBUG command not allowed. If the enable-debug-command "
                  "option is set to \"local\", you can run it from a local "
                  "connection, otherwise you need to set this option in the "
                  "configuration file, and then restart the server.");
        return;
    }
    if (arg_is(x, 0, "AUDIT") && x->argc == 1) {
        size_t bad = db_audit(&x->srv->db);
        if (bad != 0)
            log_warn("DEBUG AUDIT: %zu mismatches", bad);
        reply_int(x->r, bad);
        return;
    }
    if (arg_is(x, 0, "ADVANCE-CLOCK") && x->argc == 2) {
        advance_clock(x);
        return;
    }
    if (arg_is(x, 0, "DIGEST-VALUE")) {
        digest_value(x);
        return;
    }
    char text[65];
    reply_err(x->r, UR_E_BADARG,
              "unknown DEBUG subcommand '%s' (try AUDIT, ADVANCE-CLOCK "
              "seconds, DIGEST-VALUE key ...)",
              arg_text(x, 0, text, sizeof(text)));
}
