/*
 * cmd_cluster.c - CLUSTER, READONLY, READWRITE, ASKING and GLOBALCOPY
 * (docs/COMMANDS.md "Cluster"). The work is cluster.c's and
 * cluster_copy.c's; these turn arguments into its calls and its state
 * into replies, with Redis's messages.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "cluster_copy.h"
#include "cluster_keys.h"
#include "cluster_link.h"
#include "cmds.h"

static const char *const help_lines[] = {
    "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ADDSLOTS <slot> [<slot> ...]",
    "    Assign slots to current node.",
    "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Assign slots which are between <start-slot> and <end-slot> to "
    "current node.",
    "BUMPEPOCH",
    "    Advance the cluster config epoch.",
    "COUNT-FAILURE-REPORTS <node-id>",
    "    Return number of failure reports for <node-id> (always 0: "
    "redis-sentinel detects failures).",
    "COUNTKEYSINSLOT <slot>",
    "    Return the number of keys (users) in <slot>.",
    "DELSLOTS <slot> [<slot> ...]",
    "    Delete slots information from current node.",
    "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Delete slots information which are between <start-slot> and "
    "<end-slot> from current node.",
    "FLUSHSLOTS",
    "    Delete current node own slots information.",
    "FORGET <node-id>",
    "    Remove a node from the cluster.",
    "GETKEYSINSLOT <slot> <count>",
    "    Return key names (uids) stored by current node in a slot.",
    "INFO",
    "    Return information about the cluster.",
    "KEYSLOT <key>",
    "    Return the hash slot for <key>.",
    "LINKS",
    "    Return information about this node's links to the others.",
    "MEET <ip> <port> [<bus-port>]",
    "    Connect nodes into a working cluster.",
    "MYID",
    "    Return the node id.",
    "NODES",
    "    Return cluster configuration seen by node. Output format:",
    "    <id> <ip:port@bus-port> <flags> <master> <pings> <pongs> <epoch> "
    "<link> <slot> ...",
    "REPLICATE <node-id>",
    "    Configure current node as replica to <node-id>.",
    "RESET [HARD|SOFT]",
    "    Reset current node (default: soft).",
    "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE "
    "<node-id>)",
    "    Set slot state.",
    "SET-CONFIG-EPOCH <epoch>",
    "    Set config epoch of current node.",
    "SAVECONFIG",
    "    Force saving cluster configuration on disk.",
    "SHARDS",
    "    Return information about slot range mappings and the nodes "
    "associated with them.",
    "SLOTS",
    "    Return information about slots range mappings. Each range is made "
    "of:",
    "    start, end, master and replicas IP addresses, ports and ids",
    "REPLICAS <node-id>",
    "    Return <node-id> replicas.",
    "HELP",
    "    Print this help.",
};

/* A slot argument: 0..16383; false after Redis's error. */
static bool arg_slot(struct exec_ctx *x, uint32_t i, uint16_t *slot)
{
    uint64_t v;

    if (x->argv[i].kind == UR_ARG_INT)
        v = x->argv[i].num;
    else if (!ur_parse_u64(x->argv[i].str, x->argv[i].len, &v))
        v = UR_SLOTS;
    if (v >= UR_SLOTS) {
        reply_err(x->r, UR_E_ERR, "Invalid or out of range slot");
        return false;
    }
    *slot = (uint16_t)v;
    return true;
}

/* Slots from argument `from` on: singles, or ranges (pairs). The array
 * is malloc'ed; NULL after replying. */
static uint16_t *slot_args(struct exec_ctx *x, uint32_t from, bool ranges,
                           size_t *n)
{
    uint32_t nargs = x->argc - from;
    size_t cap = ranges ? UR_SLOTS : nargs, k = 0;
    uint16_t *s;

    if (nargs == 0 || (ranges && nargs % 2 != 0)) {
        reply_err(x->r, UR_E_ARITY,
                  "wrong number of arguments for 'cluster|%s' command",
                  ranges ? "addslotsrange" : "addslots");
        return NULL;
    }
    s = malloc(cap * sizeof(*s) + 1);
    if (s == NULL) {
        reply_oom(x);
        return NULL;
    }
    for (uint32_t i = from; i < x->argc; i += ranges ? 2 : 1) {
        uint16_t a, b;

        if (!arg_slot(x, i, &a) || (ranges && !arg_slot(x, i + 1, &b))) {
            free(s);
            return NULL;
        }
        if (!ranges) {
            s[k++] = a;
            continue;
        }
        if (a > b) {
            reply_err(x->r, UR_E_ERR,
                      "start slot number %u is greater than end slot number %u",
                      a, b);
            free(s);
            return NULL;
        }
        for (unsigned q = a; q <= b; q++) {
            if (k == cap) {
                reply_err(x->r, UR_E_ERR, "Slot %u specified multiple times",
                          q);
                free(s);
                return NULL;
            }
            s[k++] = (uint16_t)q;
        }
    }
    *n = k;
    return s;
}

/* The node-id argument i; CLUSTER_NONE after replying "Unknown node". */
static uint32_t arg_node(struct exec_ctx *x, uint32_t i)
{
    char text[48];
    const struct ur_arg *a = &x->argv[i];
    uint32_t idx = a->kind == UR_ARG_STR
                       ? cluster_node_by_id(x->srv->cluster, a->str, a->len)
                       : CLUSTER_NONE;

    if (idx == CLUSTER_NONE)
        reply_err(x->r, UR_E_ERR, "Unknown node %s",
                  arg_text(x, i, text, sizeof(text)));
    return idx;
}

/* CLUSTER PEER id ip port cport role master config-epoch current-epoch
 * version dialed-ip slots known: a node's record (cluster.h). */
static void peer(struct exec_ctx *x, struct cluster *c)
{
    static uint16_t ranges[2 * UR_SLOTS];
    struct cluster_record rec;
    uint64_t port, cport, cfg, cur, ver;
    const struct ur_arg *a = x->argv;
    char err[128];

    if (x->argc != 13) {
        reply_err(x->r, UR_E_ARITY,
                  "wrong number of arguments for 'cluster|peer' command");
        return;
    }
    for (uint32_t i = 1; i < 13; i++) {
        bool num = i == 3 || i == 4 || (i >= 7 && i <= 9);
        if (!num && a[i].kind != UR_ARG_STR) {
            reply_err(x->r, UR_E_BADARG, "CLUSTER PEER: malformed record");
            return;
        }
    }
    if (!arg_u64(x, 3, "port", &port) || !arg_u64(x, 4, "cport", &cport) ||
        !arg_u64(x, 7, "config epoch", &cfg) ||
        !arg_u64(x, 8, "current epoch", &cur) ||
        !arg_u64(x, 9, "version", &ver))
        return;
    memset(&rec, 0, sizeof(rec));
    rec.id = a[1].str;
    rec.id_len = a[1].len;
    rec.ip = a[2].str;
    rec.ip_len = a[2].len;
    rec.port = port > 65535 ? 0 : (uint32_t)port;
    rec.cport = cport > 65535 ? 0 : (uint32_t)cport;
    rec.master = arg_is(x, 5, "master");
    if (!rec.master && !arg_is(x, 5, "slave")) {
        reply_err(x->r, UR_E_BADARG,
                  "CLUSTER PEER: role must be master or slave");
        return;
    }
    rec.master_id = a[6].str;
    rec.master_id_len = a[6].len;
    rec.config_epoch = cfg;
    rec.current_epoch = cur;
    rec.version = ver;
    rec.ranges = ranges;
    if (cluster_parse_ranges(a[11].str, a[11].len, ranges, 2 * UR_SLOTS,
                             &rec.nranges) != 0) {
        reply_err(x->r, UR_E_BADARG, "CLUSTER PEER: malformed slot ranges");
        return;
    }
    rec.slots_text = a[11].str;
    rec.slots_text_len = a[11].len;
    if (rec.ip_len == 0 && x->sess->client != NULL) {
        /* No address of its own yet: the one it connects from. */
        const char *addr = x->sess->client->addr, *colon = strrchr(addr, ':');
        if (colon != NULL) {
            rec.ip = addr;
            rec.ip_len = (size_t)(colon - addr);
        }
    }
    if (cluster_merge_record(c, &rec, NULL, err, sizeof(err)) != 0) {
        reply_err(x->r, UR_E_BADARG, "CLUSTER PEER: %s", err);
        return;
    }
    cluster_learn_my_ip(c, a[10].str, a[10].len);
    cluster_learn_list(c, a[12].str, a[12].len);
    cluster_reply_record(c, x->r);
}

static void getkeys(struct exec_ctx *x, uint16_t slot, uint64_t max, bool count)
{
    uint64_t *uids = NULL;
    size_t n = 0;
    char num[24];

    if (cluster_keys_in_slot(x->srv, slot, max, count ? NULL : &uids, &n) !=
        0) {
        reply_oom(x);
        return;
    }
    if (count) {
        reply_int(x->r, n);
        return;
    }
    reply_arr(x->r, (uint32_t)n);
    for (size_t i = 0; i < n; i++)
        reply_str(x->r, num, ur_fmt_u64(num, uids[i]));
    free(uids);
}

static void links(struct exec_ctx *x, struct cluster *c)
{
    uint32_t n = 0;

    for (uint32_t i = 1; i < c->nnodes; i++)
        n += c->nodes[i].used && c->nodes[i].link != NULL;
    reply_arr(x->r, n);
    for (uint32_t i = 1; i < c->nnodes; i++) {
        struct clink_info li;

        if (!c->nodes[i].used || c->nodes[i].link == NULL)
            continue;
        clink_info(c->nodes[i].link, &li);
        reply_map(x->r, 6);
        reply_cstr(x->r, "direction");
        reply_cstr(x->r, "to");
        reply_cstr(x->r, "node");
        reply_str(x->r, c->nodes[i].id, CLUSTER_ID_LEN);
        reply_cstr(x->r, "state");
        reply_cstr(x->r, li.state);
        reply_cstr(x->r, "pending");
        reply_int(x->r, li.pending);
        reply_cstr(x->r, "send-buffer-used");
        reply_int(x->r, li.pending_bytes);
        reply_cstr(x->r, "lag-ms");
        reply_int(x->r, li.lag_ms);
    }
}

/* Runs FLUSHALL through the executor (journaled and replicated as a
 * client's): a replica reset leaves an empty master, as in Redis. */
static void flush_data(struct server *srv)
{
    struct session s = {.authed = true, .proto = REPLY_RESP};
    struct ur_buf out = {0};
    struct reply r;

    reply_begin(&r, &out, REPLY_RESP, 0);
    exec_op(srv, &s, ur_op_by_code(UR_OP_FLUSHALL), 0, NULL, &r);
    reply_end(&r);
    ur_buf_deinit(&out);
}

void cmd_CLUSTER(struct exec_ctx *x)
{
    struct cluster *c = x->srv->cluster;
    char err[256], text[64];
    uint64_t v;
    size_t n;
    uint32_t idx;
    uint16_t *slots;
    bool bumped;

    if (arg_is(x, 0, "HELP")) {
        size_t k = sizeof(help_lines) / sizeof(help_lines[0]);
        reply_arr(x->r, (uint32_t)k);
        for (size_t i = 0; i < k; i++)
            reply_status(x->r, help_lines[i]);
        return;
    }
    if (arg_is(x, 0, "KEYSLOT")) {
        if (x->argc != 2) {
            reply_err(x->r, UR_E_ARITY,
                      "wrong number of arguments for "
                      "'cluster|keyslot' command");
            return;
        }
        reply_int(x->r, ur_arg_slot(&x->argv[1]));
        return;
    }
    if (c == NULL) {
        reply_err(x->r, UR_E_ERR, "This instance has cluster support disabled");
        return;
    }
    if (arg_is(x, 0, "INFO") && x->argc == 1) {
        cluster_reply_info(c, x->r);
    } else if (arg_is(x, 0, "MYID") && x->argc == 1) {
        reply_str(x->r, c->nodes[0].id, CLUSTER_ID_LEN);
    } else if (arg_is(x, 0, "NODES") && x->argc == 1) {
        cluster_reply_nodes(c, x->r, false);
    } else if (arg_is(x, 0, "SLOTS") && x->argc == 1) {
        cluster_reply_slots(c, x->r);
    } else if (arg_is(x, 0, "SHARDS") && x->argc == 1) {
        cluster_reply_shards(c, x->r);
    } else if ((arg_is(x, 0, "REPLICAS") || arg_is(x, 0, "SLAVES")) &&
               x->argc == 2) {
        if ((idx = arg_node(x, 1)) == CLUSTER_NONE)
            return;
        if (!(c->nodes[idx].flags & CN_MASTER)) {
            reply_err(x->r, UR_E_ERR, "The specified node is not a master");
            return;
        }
        cluster_reply_replicas(c, idx, x->r);
    } else if (arg_is(x, 0, "COUNTKEYSINSLOT") && x->argc == 2) {
        if (x->argv[1].kind == UR_ARG_STR &&
            !ur_parse_u64(x->argv[1].str, x->argv[1].len, &v)) {
            reply_err(x->r, UR_E_ERR,
                      "value is not an integer or out of range");
            return;
        }
        v = x->argv[1].kind == UR_ARG_INT ? x->argv[1].num : v;
        if (v >= UR_SLOTS) {
            reply_err(x->r, UR_E_ERR, "Invalid slot");
            return;
        }
        getkeys(x, (uint16_t)v, 0, true);
    } else if (arg_is(x, 0, "GETKEYSINSLOT") && x->argc == 3) {
        uint64_t max;

        if (x->argv[1].kind == UR_ARG_INT)
            v = x->argv[1].num;
        else if (!ur_parse_u64(x->argv[1].str, x->argv[1].len, &v))
            v = UINT64_MAX;
        if (x->argv[2].kind == UR_ARG_INT)
            max = x->argv[2].num;
        else if (!ur_parse_u64(x->argv[2].str, x->argv[2].len, &max))
            max = UINT64_MAX;
        if (v >= UR_SLOTS || max == UINT64_MAX || max > UR_INT_MAX) {
            reply_err(x->r, UR_E_ERR, "Invalid slot or number of keys");
            return;
        }
        getkeys(x, (uint16_t)v, max, false);
    } else if (arg_is(x, 0, "MEET") && (x->argc == 3 || x->argc == 4)) {
        char ip[64];
        uint64_t port, cport = 0;
        int rc;

        arg_text(x, 1, ip, sizeof(ip));
        if (x->argv[2].kind == UR_ARG_INT)
            port = x->argv[2].num;
        else if (!ur_parse_u64(x->argv[2].str, x->argv[2].len, &port))
            port = 0;
        if (port == 0 || port > 65535) {
            reply_err(x->r, UR_E_ERR, "Invalid TCP base port specified: %s",
                      arg_text(x, 2, text, sizeof(text)));
            return;
        }
        if (x->argc == 4) {
            if (x->argv[3].kind == UR_ARG_INT)
                cport = x->argv[3].num;
            else if (!ur_parse_u64(x->argv[3].str, x->argv[3].len, &cport))
                cport = 0;
            if (cport == 0 || cport > 65535) {
                reply_err(x->r, UR_E_ERR, "Invalid TCP bus port specified: %s",
                          arg_text(x, 3, text, sizeof(text)));
                return;
            }
        }
        if (x->sess->client == NULL) {
            reply_err(x->r, UR_E_ERR, "CLUSTER MEET needs a client connection");
            return;
        }
        rc = cluster_meet(c, x->sess, ip, (uint32_t)port, (uint32_t)cport, err,
                          sizeof(err));
        if (rc < 0)
            reply_err(x->r, UR_E_ERR, "%s", err);
        else if (rc == 1)
            reply_status(x->r, "OK");
        else
            x->r->defer = true; /* the link answers (srv->on_unblock_status) */
    } else if ((arg_is(x, 0, "ADDSLOTS") || arg_is(x, 0, "ADDSLOTSRANGE")) &&
               x->argc >= 2) {
        if ((slots = slot_args(x, 1, arg_is(x, 0, "ADDSLOTSRANGE"), &n)) ==
            NULL)
            return;
        if (cluster_add_slots(c, slots, n, err, sizeof(err)) != 0)
            reply_err(x->r, UR_E_ERR, "%s", err);
        else
            reply_status(x->r, "OK");
        free(slots);
    } else if ((arg_is(x, 0, "DELSLOTS") || arg_is(x, 0, "DELSLOTSRANGE")) &&
               x->argc >= 2) {
        if ((slots = slot_args(x, 1, arg_is(x, 0, "DELSLOTSRANGE"), &n)) ==
            NULL)
            return;
        if (cluster_del_slots(c, slots, n, err, sizeof(err)) != 0)
            reply_err(x->r, UR_E_ERR, "%s", err);
        else
            reply_status(x->r, "OK");
        free(slots);
    } else if (arg_is(x, 0, "FLUSHSLOTS") && x->argc == 1) {
        if (scan_users_held(&x->srv->db) != 0) {
            reply_err(x->r, UR_E_ERR,
                      "DB must be empty to perform CLUSTER "
                      "FLUSHSLOTS.");
            return;
        }
        slots = malloc(UR_SLOTS * sizeof(*slots));
        if (slots == NULL) {
            reply_oom(x);
            return;
        }
        n = 0;
        for (unsigned s = 0; s < UR_SLOTS; s++)
            if (c->owner[s] == 0)
                slots[n++] = (uint16_t)s;
        if (n > 0)
            (void)cluster_del_slots(c, slots, n, err, sizeof(err));
        free(slots);
        reply_status(x->r, "OK");
    } else if (arg_is(x, 0, "SETSLOT") && (x->argc == 3 || x->argc == 4)) {
        uint16_t slot;
        char action[16];

        if (!arg_slot(x, 1, &slot))
            return;
        arg_text(x, 2, action, sizeof(action));
        if (x->argc == 4 && x->argv[3].kind != UR_ARG_STR) {
            reply_err(x->r, UR_E_ERR, "I don't know about node %s",
                      arg_text(x, 3, text, sizeof(text)));
            return;
        }
        if (cluster_setslot(
                c, slot, action, x->argc == 4 ? x->argv[3].str : NULL,
                x->argc == 4 ? x->argv[3].len : 0, err, sizeof(err)) != 0)
            reply_err(x->r, UR_E_ERR, "%s", err);
        else
            reply_status(x->r, "OK");
    } else if (arg_is(x, 0, "SETSLOT")) {
        reply_err(x->r, UR_E_ERR,
                  "Invalid CLUSTER SETSLOT action or number of arguments. "
                  "Try CLUSTER HELP");
    } else if (arg_is(x, 0, "SET-CONFIG-EPOCH") && x->argc == 2) {
        if (x->argv[1].kind == UR_ARG_INT)
            v = x->argv[1].num;
        else if (!ur_parse_u64(x->argv[1].str, x->argv[1].len, &v)) {
            reply_err(x->r, UR_E_ERR, "Invalid config epoch specified: %s",
                      arg_text(x, 1, text, sizeof(text)));
            return;
        }
        if (cluster_set_config_epoch(c, v, err, sizeof(err)) != 0)
            reply_err(x->r, UR_E_ERR, "%s", err);
        else
            reply_status(x->r, "OK");
    } else if (arg_is(x, 0, "BUMPEPOCH") && x->argc == 1) {
        v = cluster_bump_epoch(c, &bumped);
        snprintf(text, sizeof(text), "%s %llu", bumped ? "BUMPED" : "STILL",
                 (unsigned long long)v);
        reply_status(x->r, text);
    } else if (arg_is(x, 0, "REPLICATE") && x->argc == 2) {
        if (x->argv[1].kind != UR_ARG_STR ||
            cluster_replicate(c, x->argv[1].str, x->argv[1].len, err,
                              sizeof(err)) != 0)
            reply_err(x->r, UR_E_ERR, "%s",
                      x->argv[1].kind != UR_ARG_STR ? "Unknown node" : err);
        else
            reply_status(x->r, "OK");
    } else if (arg_is(x, 0, "FORGET") && x->argc == 2) {
        if (x->argv[1].kind != UR_ARG_STR ||
            cluster_forget(c, x->argv[1].str, x->argv[1].len, err,
                           sizeof(err)) != 0)
            reply_err(x->r, UR_E_ERR, "%s",
                      x->argv[1].kind != UR_ARG_STR ? "Unknown node" : err);
        else
            reply_status(x->r, "OK");
    } else if (arg_is(x, 0, "RESET") && x->argc <= 2) {
        bool hard = x->argc == 2 && arg_is(x, 1, "HARD");
        bool was_replica = !cluster_myself_master(c);

        if (x->argc == 2 && !hard && !arg_is(x, 1, "SOFT")) {
            reply_err(x->r, UR_E_ERR, "syntax error");
            return;
        }
        if (cluster_reset(c, hard, err, sizeof(err)) != 0) {
            reply_err(x->r, UR_E_ERR, "%s", err);
            return;
        }
        if (was_replica)
            flush_data(x->srv);
        reply_status(x->r, "OK");
    } else if (arg_is(x, 0, "SAVECONFIG") && x->argc == 1) {
        if (cluster_save_config(c) != 0)
            reply_err(x->r, UR_E_ERR,
                      "error saving the cluster node config: %s",
                      strerror(errno));
        else
            reply_status(x->r, "OK");
    } else if (arg_is(x, 0, "COUNT-FAILURE-REPORTS") && x->argc == 2) {
        if (arg_node(x, 1) != CLUSTER_NONE)
            reply_int(x->r, 0);
    } else if (arg_is(x, 0, "LINKS") && x->argc == 1) {
        links(x, c);
    } else if (arg_is(x, 0, "PEER")) {
        peer(x, c);
    } else {
        static const char *const known[] = {
            "INFO",          "MYID",
            "NODES",         "SLOTS",
            "SHARDS",        "REPLICAS",
            "SLAVES",        "COUNTKEYSINSLOT",
            "GETKEYSINSLOT", "MEET",
            "ADDSLOTS",      "ADDSLOTSRANGE",
            "DELSLOTS",      "DELSLOTSRANGE",
            "FLUSHSLOTS",    "SET-CONFIG-EPOCH",
            "BUMPEPOCH",     "REPLICATE",
            "FORGET",        "RESET",
            "SAVECONFIG",    "COUNT-FAILURE-REPORTS",
            "LINKS"};
        char lower[40];

        arg_text(x, 0, text, sizeof(text));
        for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
            if (arg_is(x, 0, known[i])) {
                size_t k = 0;
                for (; known[i][k] && k + 1 < sizeof(lower); k++)
                    lower[k] = (char)(known[i][k] | 0x20);
                lower[k] = '\0';
                reply_err(x->r, UR_E_ARITY,
                          "wrong number of arguments for 'cluster|%s' command",
                          lower);
                return;
            }
        reply_err(x->r, UR_E_ERR, "unknown subcommand '%s'. Try CLUSTER HELP.",
                  text);
    }
}

/* Outside cluster mode these answer as Redis does. */
void cmd_READONLY(struct exec_ctx *x)
{
    if (x->srv->cluster == NULL) {
        reply_err(x->r, UR_E_ERR, "This instance has cluster support disabled");
        return;
    }
    x->sess->readonly = true;
    reply_status(x->r, "OK");
}

void cmd_READWRITE(struct exec_ctx *x)
{
    if (x->srv->cluster == NULL) {
        reply_err(x->r, UR_E_ERR, "This instance has cluster support disabled");
        return;
    }
    x->sess->readonly = false;
    reply_status(x->r, "OK");
}

void cmd_ASKING(struct exec_ctx *x)
{
    if (x->srv->cluster == NULL) {
        reply_err(x->r, UR_E_ERR, "This instance has cluster support disabled");
        return;
    }
    x->sess->asking = true;
    reply_status(x->r, "OK");
}

void cmd_GLOBALCOPY(struct exec_ctx *x)
{
    ccopy_apply(x);
}
