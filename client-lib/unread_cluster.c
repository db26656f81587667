/*
 * unread_cluster.c - see unread_cluster.h. Pure over the core: no I/O;
 * the faces (unread_round.c, unread_async.c) send what it decides.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "unread_cluster.h"

int uc_cluster_init(struct uc_core *k)
{
    struct uc_cluster *cl = calloc(1, sizeof(*cl));

    if (cl == NULL)
        return -1;
    for (unsigned s = 0; s < UR_SLOTS; s++) {
        cl->map[s] = UC_NO_SERVER;
        cl->group_of[s] = UINT32_MAX;
    }
    cl->stale = true;
    cl->last_node = UC_FIRST_SERVER;
    k->cl = cl;
    return 0;
}

void uc_cluster_deinit(struct uc_core *k)
{
    free(k->cl);
    k->cl = NULL;
}

uint32_t uc_cluster_node(struct uc_core *k, const char *host, size_t hlen,
                         uint16_t port)
{
    struct uc_addr a;
    uint32_t s;

    for (s = 0; s < k->nsrv; s++)
        if (k->addr[s].port == port && strlen(k->addr[s].host) == hlen &&
            memcmp(k->addr[s].host, host, hlen) == 0)
            return s;
    if (k->nsrv >= UC_CLUSTER_CAP || uc_addr_make(&a, host, hlen, port) != 0)
        return UC_NO_SERVER;
    s = (uint32_t)k->nsrv;
    k->addr[s] = a;
    memset(&k->srv[s], 0, sizeof(k->srv[s]));
    uc_conn_init(&k->srv[s].conn, &k->addr[s]);
    k->srv[s].conn.password = k->opt.password;
    k->srv[s].conn.tls = k->tls;
    k->nsrv++;
    return s;
}

int uc_cluster_arg_slot(const struct unread_arg *a)
{
    if (a->kind == UNREAD_ARG_INT)
        return (int)ur_u64_slot(a->num);
    if (a->kind == UNREAD_ARG_STR && a->str != NULL)
        return (int)ur_key_slot(a->str, a->len);
    return -1;
}

uint32_t uc_cluster_slot_server(const struct uc_core *k, int slot)
{
    uint32_t s = slot < 0 ? UC_NO_SERVER : k->cl->map[slot];

    return s == UC_NO_SERVER ? UC_FIRST_SERVER : s;
}

uint32_t uc_cluster_route(const struct uc_core *k, uint16_t op, unsigned argc,
                          const struct unread_arg *argv)
{
    const struct ur_op *o = ur_op_by_code(op);
    unsigned first;
    uint32_t s;
    int slot;

    if (o == NULL)
        return UC_FIRST_SERVER;
    if (op == UR_OP_WAIT)
        return k->cl->last_node; /* about the writes sent last */
    first = ur_op_key_first(o);
    if (first == 0)
        return (o->flags & OPF_GLOBAL) && k->nsrv > 1 ? UC_ALL
                                                      : UC_FIRST_SERVER;
    if (argc < first)
        return UC_FIRST_SERVER; /* its arity error is the answer */
    slot = uc_cluster_arg_slot(&argv[first - 1]);
    if (ur_op_key_last(o) < 0)
        for (unsigned i = first; i < argc; i++)
            if (uc_cluster_arg_slot(&argv[i]) != slot)
                return UC_SPLIT; /* one request a slot */
    s = uc_cluster_slot_server(k, slot);
    k->cl->last_node = s;
    return s;
}

/* One node of a CLUSTER SLOTS range: [ip, port, id, ...]. */
static bool read_node(struct ur_val_reader *rd, struct ur_val *ip,
                      uint64_t *port)
{
    struct ur_val v;

    if (!ur_val_next(rd, &v) || v.kind != UR_VAL_ARR || v.count < 2)
        return false;
    for (uint32_t i = 0; i < v.count; i++) {
        struct ur_val e;

        if (!ur_val_next(rd, &e))
            return false;
        if (i == 0) {
            if (e.kind != UR_VAL_STR)
                return false;
            *ip = e;
        } else if (i == 1) {
            if (e.kind != UR_VAL_INT || e.num == 0 || e.num > 65535)
                return false;
            *port = e.num;
        } else if (e.kind == UR_VAL_ARR) {
            /* the networking metadata: a map, skipped */
            for (uint32_t j = 0; j < e.count; j++) {
                struct ur_val x;
                if (!ur_val_next(rd, &x) || x.kind == UR_VAL_ARR)
                    return false;
            }
        }
    }
    return true;
}

int uc_cluster_learn(struct uc_core *k, const char *body, size_t len)
{
    uint32_t *map = malloc(UR_SLOTS * sizeof(*map));
    struct ur_val_reader rd;
    struct ur_val v, a, b, ip;
    uint64_t port;

    if (map == NULL)
        return uc_err(k, UNREAD_ENOMEM, "out of memory");
    for (unsigned s = 0; s < UR_SLOTS; s++)
        map[s] = UC_NO_SERVER;
    ur_val_reader_init(&rd, body, len);
    if (!ur_val_next(&rd, &v) || v.kind != UR_VAL_ARR)
        goto bad;
    for (uint32_t r = 0; r < v.count; r++) {
        struct ur_val range;
        uint32_t s;

        if (!ur_val_next(&rd, &range) || range.kind != UR_VAL_ARR ||
            range.count < 3 || !ur_val_next(&rd, &a) || a.kind != UR_VAL_INT ||
            !ur_val_next(&rd, &b) || b.kind != UR_VAL_INT || a.num > b.num ||
            b.num >= UR_SLOTS || !read_node(&rd, &ip, &port))
            goto bad;
        for (uint32_t i = 3; i < range.count; i++) {
            struct ur_val rip;
            uint64_t rport;

            if (!read_node(&rd, &rip, &rport)) /* replicas: not used */
                goto bad;
        }
        s = uc_cluster_node(k, ip.len > 0 ? ip.str : k->addr[0].host,
                            ip.len > 0 ? ip.len : strlen(k->addr[0].host),
                            (uint16_t)port);
        if (s == UC_NO_SERVER) {
            free(map);
            return uc_err(k, UNREAD_ENOMEM,
                          "cluster: more than %u nodes, or out of memory",
                          (unsigned)UC_CLUSTER_CAP);
        }
        for (uint64_t slot = a.num; slot <= b.num; slot++)
            map[slot] = s;
    }
    memcpy(k->cl->map, map, UR_SLOTS * sizeof(*map));
    free(map);
    k->cl->stale = false;
    k->cl->known = true;
    k->cl->refreshed_ms = uc_now_ms();
    return 0;
bad:
    free(map);
    return uc_err(k, UNREAD_EPROTO,
                  "cluster: protocol error: a malformed CLUSTER SLOTS reply");
}

bool uc_cluster_follow(struct uc_core *k, int rc, const char *body, size_t len,
                       uint32_t *to, bool *asking)
{
    struct ur_val_reader rd;
    struct ur_val v;
    const char *p, *end, *colon;
    uint64_t slot = 0, port = 0;
    uint32_t s;

    *asking = false;
    *to = UC_NO_SERVER;
    if (rc == UNREAD_ERR_TRYAGAIN || rc == UNREAD_ERR_CLUSTERDOWN) {
        k->cl->stale = true;
        return true;
    }
    ur_val_reader_init(&rd, body, len);
    if (!ur_val_next(&rd, &v) || v.kind != UR_VAL_ERR)
        return false;
    p = v.str;
    end = v.str + v.len;
    while (p < end && *p >= '0' && *p <= '9' && slot < UR_SLOTS)
        slot = slot * 10 + (uint64_t)(*p++ - '0');
    if (p == v.str || p >= end || *p != ' ' || slot >= UR_SLOTS)
        return false;
    p++;
    colon = end;
    while (colon > p && colon[-1] != ':')
        colon--;
    if (colon == p)
        return false;
    for (const char *q = colon; q < end; q++) {
        if (*q < '0' || *q > '9' || port > 65535)
            return false;
        port = port * 10 + (uint64_t)(*q - '0');
    }
    if (port == 0 || port > 65535)
        return false;
    s = uc_cluster_node(k, p, (size_t)(colon - 1 - p), (uint16_t)port);
    if (s == UC_NO_SERVER)
        return false;
    *to = s;
    k->cl->last_node = s; /* a WAIT after it goes there */
    *asking = rc == UNREAD_ERR_ASK;
    if (rc == UNREAD_ERR_MOVED) {
        k->cl->map[slot] = s;
        k->cl->stale = true; /* a failover or a move: others changed too */
    }
    k->cl->redirects++;
    snprintf(k->cl->last, sizeof(k->cl->last), "slot [%llu] located at %s",
             (unsigned long long)slot, k->addr[s].name);
    return true;
}
