/*
 * cmd_persist.c - SAVE, BGSAVE, LASTSAVE, SHUTDOWN (docs/COMMANDS.md,
 * docs/PERSISTENCE.md): thin handlers over persistence/persist.h.
 */
#include "cmds.h"
#include "persist.h"

/* The persistence of the server, or NULL after replying an error (an
 * executor run without one: unit tests). */
static struct persist *need_persist(struct exec_ctx *x)
{
    if (x->srv->persist == NULL)
        reply_err(x->r, UR_E_ERR, "persistence is not set up");
    return x->srv->persist;
}

void cmd_SAVE(struct exec_ctx *x)
{
    struct persist *p = need_persist(x);
    char err[512];

    if (p == NULL)
        return;
    if (persist_save(p, err, sizeof(err)) != 0)
        reply_err(x->r, UR_E_ERR, "%s", err);
    else
        reply_status(x->r, "OK");
}

void cmd_BGSAVE(struct exec_ctx *x)
{
    struct persist *p = need_persist(x);
    char err[512];

    if (p == NULL)
        return;
    if (persist_bgsave(p, err, sizeof(err)) != 0)
        reply_err(x->r, UR_E_ERR, "%s", err);
    else
        reply_status(x->r, "Background saving started");
}

void cmd_LASTSAVE(struct exec_ctx *x)
{
    struct persist *p = need_persist(x);
    struct persist_info in;

    if (p == NULL)
        return;
    persist_info(p, &in);
    reply_int(x->r, in.last_save_ms / 1000);
}

/* The loop ends after this turn's replies are written (net.c); commands
 * run after this one in the same turn still reach the journal. */
void cmd_SHUTDOWN(struct exec_ctx *x)
{
    struct persist *p = need_persist(x);
    bool save = true;
    char text[65];

    if (p == NULL)
        return;
    if (x->argc == 1) {
        if (arg_is(x, 0, "NOSAVE")) {
            save = false;
        } else if (!arg_is(x, 0, "SAVE")) {
            reply_err(x->r, UR_E_BADARG,
                      "unknown SHUTDOWN option '%s' (SAVE or NOSAVE)",
                      arg_text(x, 0, text, sizeof(text)));
            return;
        }
    }
    if (persist_shutdown(p, save) != 0) {
        reply_err(x->r, UR_E_ERR,
                  "the final snapshot failed (see the server log): not "
                  "shutting down; SHUTDOWN NOSAVE stops anyway");
        return;
    }
    x->srv->shutdown_asap = true;
    reply_status(x->r, "OK");
    x->r->close_after = true;
}
