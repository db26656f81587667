/*
 * cmd_repl.c - the replication commands (docs/COMMANDS.md, "Replication"):
 * REPLICAOF (and SLAVEOF), ROLE, WAIT, and what a replica sends its
 * primary, REPLCONF and PSYNC. The work is repl.c's; these turn arguments
 * into its calls and its state into replies.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "cmds.h"
#include "persist.h"
#include "repl.h"

/* REPLICAOF host port | NO ONE */
void cmd_REPLICAOF(struct exec_ctx *x)
{
    char host[CONFIG_STR_MAX - 8], err[256];
    uint64_t port;
    int rc;

    if (arg_is(x, 0, "NO") && arg_is(x, 1, "ONE")) {
        repl_set_primary(x->srv);
        cluster_promoted(x->srv); /* takes the old primary's slots */
        reply_status(x->r, "OK");
        return;
    }
    arg_text(x, 0, host, sizeof(host));
    if (host[0] == '\0' || strchr(host, ' ') != NULL ||
        (x->argv[0].kind == UR_ARG_STR && x->argv[0].len >= sizeof(host))) {
        reply_err(x->r, UR_E_BADARG, "bad primary host name");
        return;
    }
    if (!arg_u64(x, 1, "port", &port))
        return;
    if (port == 0 || port > 65535) {
        reply_err(x->r, UR_E_BADARG, "Invalid master port");
        return;
    }
    rc = repl_set_replica_of(x->srv, host, (uint32_t)port, err, sizeof(err));
    if (rc >= 0)
        cluster_replica_of(x->srv, host, (uint32_t)port);
    if (rc < 0)
        reply_err(x->r, UR_E_ERR, "%s", err);
    else
        reply_status(x->r, rc == 1 ? "OK Already connected to specified master"
                                   : "OK");
}

void cmd_SLAVEOF(struct exec_ctx *x)
{
    cmd_REPLICAOF(x);
}

static void role_replica(const struct repl_replica *rr, void *ctx)
{
    struct reply *r = ctx;
    char num[24];

    reply_arr(r, 3);
    reply_cstr(r, rr->ip);
    reply_str(r, num, ur_fmt_u64(num, rr->port));
    reply_str(r, num, ur_fmt_u64(num, rr->offset));
}

void cmd_ROLE(struct exec_ctx *x)
{
    struct repl_info ri;
    uint64_t off = x->srv->persist ? persist_offset(x->srv->persist) : 0;

    repl_info(x->srv, &ri);
    if (ri.replica) {
        reply_arr(x->r, 5);
        reply_cstr(x->r, "slave");
        reply_cstr(x->r, ri.host);
        reply_int(x->r, ri.port);
        reply_cstr(x->r, ri.state == RS_CONNECT ? "connect"
                                                : repl_state_name(ri.state));
        reply_int(x->r, off);
        return;
    }
    reply_arr(x->r, 3);
    reply_cstr(x->r, "master");
    reply_int(x->r, off);
    reply_arr(x->r, ri.replicas);
    repl_replicas(x->srv, role_replica, x->r);
}

/* WAIT numreplicas timeout */
void cmd_WAIT(struct exec_ctx *x)
{
    uint64_t n, timeout, count;

    if (!arg_u64(x, 0, "numreplicas", &n) ||
        !arg_u64(x, 1, "timeout", &timeout))
        return;
    if (x->srv->readonly_data) {
        reply_err(x->r, UR_E_ERR,
                  "WAIT cannot be used with replica instances: a replica "
                  "takes no writes");
        return;
    }
    if (repl_wait(x->srv, x->sess, n > UINT32_MAX ? UINT32_MAX : (uint32_t)n,
                  timeout, &count))
        reply_int(x->r, count);
    else
        x->r->defer = true; /* repl.c answers through srv->on_unblock */
}

static struct repl_hs *handshake(struct exec_ctx *x)
{
    if (x->sess->repl_hs == NULL)
        x->sess->repl_hs = calloc(1, sizeof(*x->sess->repl_hs));
    if (x->sess->repl_hs == NULL)
        reply_oom(x);
    return x->sess->repl_hs;
}

/* REPLCONF option value [option value ...]: a replica's handshake. What
 * the stream carries back (ACK) goes to repl.c once the connection is a
 * replica's link; here it is accepted and ignored, as Redis does. */
void cmd_REPLCONF(struct exec_ctx *x)
{
    struct repl_hs *hs;
    char text[64];

    if (x->argc % 2 != 0) {
        reply_err(x->r, UR_E_BADARG, "syntax error: REPLCONF option value");
        return;
    }
    if ((hs = handshake(x)) == NULL)
        return;
    for (uint32_t i = 0; i < x->argc; i += 2) {
        uint64_t port;

        if (arg_is(x, i, "listening-port")) {
            if (!arg_u64(x, i + 1, "listening-port", &port))
                return;
            if (port > 65535) {
                reply_err(x->r, UR_E_BADARG, "listening-port out of range");
                return;
            }
            hs->port = (uint32_t)port;
        } else if (arg_is(x, i, "ip-address")) {
            arg_text(x, i + 1, hs->ip, sizeof(hs->ip));
        } else if (arg_is(x, i, "capa") || arg_is(x, i, "ack") ||
                   arg_is(x, i, "getack") || arg_is(x, i, "rdb-only") ||
                   arg_is(x, i, "rdb-filter-only")) {
            continue;
        } else {
            reply_err(x->r, UR_E_BADARG, "Unrecognized REPLCONF option: %s",
                      arg_text(x, i, text, sizeof(text)));
            return;
        }
    }
    reply_status(x->r, "OK");
}

static bool hex40(const struct ur_arg *a)
{
    if (a->kind != UR_ARG_STR || a->len != 40)
        return false;
    for (uint32_t i = 0; i < 40; i++)
        if (!((a->str[i] >= '0' && a->str[i] <= '9') ||
              (a->str[i] >= 'a' && a->str[i] <= 'f')))
            return false;
    return true;
}

/* PSYNC replicationid offset: the connection is handed over to repl.c,
 * which answers +FULLRESYNC or +CONTINUE (repl_take_replica). */
void cmd_PSYNC(struct exec_ctx *x)
{
    const struct ur_arg *id = &x->argv[0], *off = &x->argv[1];
    struct repl_info ri;
    struct repl_hs *hs;
    uint64_t from = 0;

    if (x->sess->client == NULL || x->sess->proto == REPLY_BIN ||
        x->srv->repl == NULL || x->srv->persist == NULL) {
        reply_err(x->r, UR_E_ERR,
                  "PSYNC is a replica's (over RESP, on the server's port)");
        return;
    }
    if (!(id->kind == UR_ARG_STR && id->len == 1 && id->str[0] == '?') &&
        !hex40(id)) {
        reply_err(x->r, UR_E_BADARG,
                  "replicationid must be ? or 40 hex digits");
        return;
    }
    if (!(off->kind == UR_ARG_STR && off->len == 2 &&
          memcmp(off->str, "-1", 2) == 0) &&
        !arg_u64(x, 1, "offset", &from))
        return;
    repl_info(x->srv, &ri);
    if (ri.replica && ri.state != RS_CONNECTED) {
        reply_err(x->r, UR_E_ERR,
                  "NOMASTERLINK Can't SYNC while not connected with my "
                  "master");
        return;
    }
    if ((hs = handshake(x)) == NULL)
        return;
    memcpy(hs->psync_id, id->str, id->len);
    hs->psync_id[id->len] = '\0';
    hs->psync_from = from;
    x->sess->handover = true;
    x->r->defer = true;
}
