/*
 * unread_server.c - each server's circuit breaker as both faces use it
 * (unread_core.h, "Servers"): whether a request may go, and what its
 * outcome does to the circuit. The breaker's arithmetic is
 * unread_shard.c's; the policy - which failures count, what a refusal
 * says - is here, once.
 */
#include <stdio.h>

#include "unread_cluster.h"
#include "unread_core.h"

bool uc_unreachable(int rc)
{
    return rc == UNREAD_ECONNECT || rc == UNREAD_ETIMEOUT || rc == UNREAD_EIO ||
           rc == UNREAD_ECLOSED || rc == UNREAD_EPROTO || rc == UNREAD_EUNAVAIL;
}

int uc_server_admit(struct uc_core *k, uint32_t s)
{
    struct uc_server *sv = &k->srv[s];
    int64_t now;

    if (!k->opt.degraded)
        return 0;
    now = uc_now_ms();
    if (uc_breaker_admit(&sv->brk, &k->brk_cfg, now))
        return 0;
    snprintf(sv->conn.err, sizeof(sv->conn.err),
             "%s: circuit open after %u failures (probe in %lld ms)",
             k->addr[s].name, (unsigned)sv->brk.failures,
             (long long)uc_breaker_wait(&sv->brk, &k->brk_cfg, now));
    return UNREAD_EUNAVAIL;
}

void uc_server_down(struct uc_core *k, uint32_t s, int rc)
{
    struct uc_server *sv = &k->srv[s];

    uc_conn_drop(&sv->conn);
    if (k->cl != NULL)
        k->cl->stale = true; /* a node lost: a failover may be under way */
    if (k->opt.degraded && uc_unreachable(rc))
        uc_breaker_done(&sv->brk, &k->brk_cfg, false, uc_now_ms());
}

void uc_server_answered(struct uc_core *k, uint32_t s)
{
    if (k->opt.degraded)
        uc_breaker_done(&k->srv[s].brk, &k->brk_cfg, true, uc_now_ms());
}
