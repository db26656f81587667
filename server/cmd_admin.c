/*
 * cmd_admin.c - connection and administration handlers (docs/COMMANDS.md,
 * "Admin and connection"): PING, ECHO, HELLO, HELP, QUIT, INFO, CONFIG (SAVE
 * and friends: cmd_persist.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "cmds.h"
#include "frame.h"
#include "metrics.h"
#include "persist.h"
#include "u32map.h"

/* Argument i back as a bulk string, whichever form it came in. */
static void reply_arg(struct exec_ctx *x, uint32_t i)
{
    char num[24];
    const struct ur_arg *a = &x->argv[i];
    if (a->kind == UR_ARG_STR)
        reply_str(x->r, a->str, a->len);
    else
        reply_str(x->r, num, ur_fmt_u64(num, a->num));
}

void cmd_PING(struct exec_ctx *x)
{
    if (x->argc == 0)
        reply_status(x->r, "PONG");
    else
        reply_arg(x, 0);
}

void cmd_ECHO(struct exec_ctx *x)
{
    reply_arg(x, 0);
}

/* HELLO [protover [AUTH [default] password]]: protover is the RESP
 * version on text connections (2) and the frame version on binary ones
 * (1); AUTH authenticates before the handshake (auth.h), so a client
 * connects in one round trip on either protocol. */
void cmd_HELLO(struct exec_ctx *x)
{
    uint64_t want = x->sess->proto == REPLY_BIN ? UR_FRAME_VERSION : 2;
    uint64_t ver = want;
    if (x->argc >= 1) {
        if (!arg_u64(x, 0, "protover", &ver))
            return;
        if (ver != want) {
            reply_err(x->r, UR_E_NOPROTO,
                      "unsupported protocol version %llu (only %llu)",
                      (unsigned long long)ver, (unsigned long long)want);
            return;
        }
    }
    if (x->argc >= 2) {
        if (x->argc < 3 || !arg_is(x, 1, "AUTH")) {
            reply_err(x->r, UR_E_BADARG,
                      "syntax: HELLO [protover [AUTH [default] password]]");
            return;
        }
        if (!auth_login(x, 2))
            return;
    }
    reply_arr(x->r, 10);
    reply_cstr(x->r, "server");
    reply_cstr(x->r, "unreadd");
    reply_cstr(x->r, "version");
    reply_cstr(x->r, UNREADD_VERSION);
    reply_cstr(x->r, "proto");
    reply_int(x->r, ver);
    reply_cstr(x->r, "id");
    reply_int(x->r, x->sess->id);
    reply_cstr(x->r, "mode");
    reply_cstr(x->r, "standalone");
}

static void help_one(struct exec_ctx *x, const struct ur_op *op)
{
    char line[512];
    reply_arr(x->r, 5);
    snprintf(line, sizeof(line), "%s%s%s", op->name, op->syntax[0] ? " " : "",
             op->syntax);
    reply_cstr(x->r, line);
    reply_cstr(x->r, op->summary);
    snprintf(line, sizeof(line), "reply: %s", op->reply);
    reply_cstr(x->r, line);
    snprintf(line, sizeof(line), "complexity: %s", op->cost);
    reply_cstr(x->r, line);
    snprintf(line, sizeof(line), "opcode: 0x%04x", op->code);
    reply_cstr(x->r, line);
}

void cmd_HELP(struct exec_ctx *x)
{
    if (x->argc == 1) {
        const struct ur_arg *a = &x->argv[0];
        const struct ur_op *op =
            a->kind == UR_ARG_STR ? ur_op_by_name(a->str, a->len) : NULL;
        if (op == NULL) {
            char text[65];
            reply_err(x->r, UR_E_UNKNOWN, "unknown command '%s'",
                      arg_text(x, 0, text, sizeof(text)));
            return;
        }
        help_one(x, op);
        return;
    }
    reply_arr(x->r, UR_OP_COUNT);
    for (unsigned i = 0; i < UR_OP_COUNT; i++) {
        const struct ur_op *op = &ur_ops[i];
        char line[512];
        snprintf(line, sizeof(line), "%s%s%s - %s", op->name,
                 op->syntax[0] ? " " : "", op->syntax, op->summary);
        reply_cstr(x->r, line);
    }
}

void cmd_QUIT(struct exec_ctx *x)
{
    reply_status(x->r, "OK");
    x->r->close_after = true;
}

/* INFO text is built in a scratch buffer, then sent as one bulk string. */
struct info {
    struct ur_buf b;
    bool oom;
};

static void info_add(struct info *in, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void info_add(struct info *in, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(line))
        n = sizeof(line) - 1;
    if (ur_buf_append(&in->b, line, (size_t)n) != 0)
        in->oom = true;
}

static bool want(const char *section, const char *name)
{
    return section == NULL || strcmp(section, name) == 0;
}

static void info_persistence(struct info *in, const struct persist *p)
{
    struct persist_info pi;

    persist_info(p, &pi);
    info_add(
        in,
        "# Persistence\r\nloading_time_ms:%llu\r\n"
        "loaded_journal_records:%llu\r\nchanges_since_last_save:%llu\r\n"
        "bgsave_in_progress:%d\r\nlast_save_time:%llu\r\n"
        "last_save_status:%s\r\nlast_save_duration_ms:%llu\r\n"
        "last_save_bytes:%llu\r\nlatest_fork_usec:%llu\r\n",
        (unsigned long long)pi.load_ms, (unsigned long long)pi.loaded_records,
        (unsigned long long)pi.changes_since_save, pi.bgsave_in_progress,
        (unsigned long long)pi.last_save_ms / 1000,
        pi.last_save_ok ? "ok" : "err",
        (unsigned long long)pi.last_save_duration_ms,
        (unsigned long long)pi.last_save_bytes, (unsigned long long)pi.fork_us);
    info_add(
        in,
        "journal_enabled:%d\r\njournal_fsync:%s\r\njournal_status:%s\r\n"
        "journal_error:%s\r\njournal_bytes:%llu\r\n"
        "journal_segment:%llu\r\njournal_pending_bytes:%llu\r\n"
        "last_fsync_time_ms:%llu\r\njournal_last_fsync_us:%llu\r\n"
        "journal_fsyncs:%llu\r\njournal_fsync_in_progress:%d\r\n"
        "journal_fsync_delayed:%llu\r\njournal_fsync_failures:%llu\r\n"
        "journal_resyncs:%llu\r\n\r\n",
        pi.journal_on, pi.journal_fsync,
        pi.journal_untrusted ? "untrusted"
        : pi.journal_ok      ? "ok"
                             : "broken",
        pi.journal_error, (unsigned long long)pi.journal_bytes,
        (unsigned long long)pi.journal_segment,
        (unsigned long long)pi.journal_pending,
        (unsigned long long)pi.last_fsync_ms,
        (unsigned long long)pi.last_fsync_us, (unsigned long long)pi.fsyncs,
        pi.fsync_in_progress, (unsigned long long)pi.fsync_delayed,
        (unsigned long long)pi.sync_failures, (unsigned long long)pi.resyncs);
}

/* The rest of # Clients: the connection limits and what they refused
 * (docs/OPERATIONS.md "Security"). */
static void info_limits(struct info *in, const struct server *srv)
{
    const struct config *cfg = &srv->cfg;

    info_add(in,
             "max_frame:%u\r\nmax_args:%u\r\nmax_inline:%u\r\n"
             "client_output_limit:%llu\r\nclient_output_timeout:%u\r\n"
             "client_input_limit:%llu\r\ntimeout:%u\r\nrequirepass:%s\r\n",
             cfg->max_frame, cfg->max_args, cfg->max_inline,
             (unsigned long long)cfg->client_output_limit,
             cfg->client_output_timeout,
             (unsigned long long)cfg->client_input_limit, cfg->timeout,
             cfg->requirepass[0] ? "yes" : "no");
    info_add(in,
             "maxclients:%u\r\npaused_clients:%u\r\n"
             "client_output_bytes:%llu\r\nclient_input_bytes:%llu\r\n"
             "rejected_connections:%llu\r\naccept_errors:%llu\r\n"
             "client_output_limit_disconnections:%llu\r\n"
             "client_input_limit_disconnections:%llu\r\n"
             "client_output_timeouts:%llu\r\nidle_timeouts:%llu\r\n"
             "request_timeouts:%llu\r\nauth_failures:%llu\r\n"
             "auth_delayed_clients:%u\r\n\r\n",
             srv->cfg.maxclients, srv->paused_clients,
             (unsigned long long)srv->client_out_bytes,
             (unsigned long long)srv->client_in_bytes,
             (unsigned long long)srv->stats.rejected_conns,
             (unsigned long long)srv->stats.accept_errors,
             (unsigned long long)srv->stats.output_limit_closes,
             (unsigned long long)srv->stats.input_limit_closes,
             (unsigned long long)srv->stats.output_timeouts,
             (unsigned long long)srv->stats.idle_timeouts,
             (unsigned long long)srv->stats.request_timeouts,
             (unsigned long long)srv->stats.auth_failures,
             srv->auth_delayed_clients);
}

/* # Expiry: inactive-user expiry (server/users.h, docs/OPERATIONS.md). */
static void info_expiry(struct info *in, const struct server *srv)
{
    const struct expiry *e = &srv->expiry;

    info_add(in,
             "# Expiry\r\ninactive_days:%u\r\nexpire_families:%s\r\n"
             "active_users:%zu\r\nexpired_users:%llu\r\n",
             srv->cfg.inactive_days, srv->cfg.expire_families_text,
             u32map_count(srv->db.active), (unsigned long long)e->users);
    for (unsigned f = 0; f < FAM_COUNT; f++)
        if (f != FAM_RCPT)
            info_add(in, "expired_%s_entries:%llu\r\n", db_families[f].name,
                     (unsigned long long)e->entries[f]);
    info_add(in,
             "sweep_in_progress:%d\r\nsweeps:%llu\r\nscanned:%llu\r\n"
             "last_sweep_time:%llu\r\nlast_sweep_duration_ms:%llu\r\n"
             "last_sweep_expired:%llu\r\nsweep_cycles:%llu\r\n"
             "sweep_cycle_time_us:%llu\r\nsweep_cycle_max_us:%llu\r\n\r\n",
             e->running, (unsigned long long)e->sweeps,
             (unsigned long long)e->scanned,
             (unsigned long long)e->last_sweep_ms / 1000,
             (unsigned long long)e->last_sweep_duration_ms,
             (unsigned long long)e->last_sweep_expired,
             (unsigned long long)e->cycles, (unsigned long long)e->cycle_us,
             (unsigned long long)e->cycle_max_us);
}

void cmd_INFO(struct exec_ctx *x)
{
    struct server *srv = x->srv;
    char secbuf[32];
    const char *section = NULL;
    if (x->argc == 1) {
        arg_text(x, 0, secbuf, sizeof(secbuf));
        for (char *p = secbuf; *p; p++)
            *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
        if (strcmp(secbuf, "all") != 0 && strcmp(secbuf, "default") != 0 &&
            strcmp(secbuf, "everything") != 0)
            section = secbuf;
    }

    struct info in = {{0}, false};
    uint64_t now = server_now_ms();
    if (want(section, "server")) {
        info_add(&in,
                 "# Server\r\nunreadd_version:%s\r\nprocess_id:%d\r\n"
                 "tcp_port:%u\r\nbind:%s\r\nuptime_in_seconds:%llu\r\n"
                 "config_file:%s\r\n\r\n",
                 UNREADD_VERSION, (int)getpid(), srv->cfg.port, srv->cfg.bind,
                 (unsigned long long)((now - srv->start_ms) / 1000),
                 srv->cfg.config_file);
    }
    if (want(section, "clients")) {
        info_add(&in,
                 "# Clients\r\nconnected_clients:%u\r\ntext_clients:%u\r\n"
                 "binary_clients:%u\r\n",
                 srv->clients, srv->text_clients, srv->bin_clients);
        info_limits(&in, srv);
    }
    if (want(section, "memory")) {
        struct db_usage u[DB_USAGE_ROWS];
        unsigned n = db_usage(&srv->db, u);
        size_t used = db_bytes(&srv->db);
        info_add(&in,
                 "# Memory\r\nused_memory:%zu\r\nused_memory_rss:%llu\r\n"
                 "maxmemory:%llu\r\nmaxmemory_reached:%d\r\n",
                 used, (unsigned long long)metrics_rss_bytes(),
                 (unsigned long long)srv->cfg.maxmemory,
                 srv->cfg.maxmemory != 0 && used >= srv->cfg.maxmemory);
        for (unsigned i = 0; i < n; i++) {
            info_add(&in,
                     "%s_%ss:%zu\r\n%s_bytes:%zu\r\n"
                     "%s_bytes_per_%s:%.2f\r\n",
                     u[i].family, u[i].unit, u[i].entries, u[i].family,
                     u[i].bytes, u[i].family, u[i].unit,
                     u[i].entries ? (double)u[i].bytes / (double)u[i].entries
                                  : 0.0);
        }
        info_add(&in, "\r\n");
    }
    if (want(section, "persistence") && srv->persist != NULL)
        info_persistence(&in, srv->persist);
    if (want(section, "stats")) {
        info_add(&in,
                 "# Stats\r\ntotal_connections_received:%llu\r\n"
                 "total_commands_processed:%llu\r\ntotal_errors:%llu\r\n"
                 "protocol_errors:%llu\r\n\r\n",
                 (unsigned long long)srv->stats.connections,
                 (unsigned long long)srv->stats.commands,
                 (unsigned long long)srv->stats.errors,
                 (unsigned long long)srv->stats.proto_errors);
    }
    if (want(section, "expiry"))
        info_expiry(&in, srv);
    if (want(section, "commandstats")) {
        info_add(&in, "# Commandstats\r\n");
        for (unsigned i = 0; i < UR_OP_COUNT; i++) {
            if (srv->stats.calls[i] == 0)
                continue;
            char name[64];
            size_t k = 0;
            for (const char *p = ur_ops[i].name; *p && k + 1 < sizeof(name);
                 p++)
                name[k++] = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
            name[k] = '\0';
            info_add(&in, "cmdstat_%s:calls=%llu,errors=%llu\r\n", name,
                     (unsigned long long)srv->stats.calls[i],
                     (unsigned long long)srv->stats.op_errors[i]);
        }
        info_add(&in, "\r\n");
    }

    if (in.oom) {
        reply_oom(x);
    } else {
        /* Drop the blank line after the last section, as Redis does. */
        size_t len = in.b.len >= 2 ? in.b.len - 2 : in.b.len;
        reply_str(x->r, in.b.data ? in.b.data : "", len);
    }
    ur_buf_deinit(&in.b);
}

struct config_reply {
    struct reply *r;
    uint32_t n;
};

static void config_one(const char *name, const char *value, void *ctx)
{
    struct config_reply *cr = ctx;
    reply_cstr(cr->r, name);
    reply_cstr(cr->r, value);
    cr->n += 2;
}

void cmd_CONFIG(struct exec_ctx *x)
{
    if (!arg_is(x, 0, "GET")) {
        char text[65];
        reply_err(x->r, UR_E_BADARG,
                  "unknown CONFIG subcommand '%s' (only GET)",
                  arg_text(x, 0, text, sizeof(text)));
        return;
    }
    char pat[128];
    arg_text(x, 1, pat, sizeof(pat));
    struct config_reply cr = {x->r, 0};
    size_t mark = reply_arr_defer(x->r);
    config_match(&x->srv->cfg, pat, strlen(pat), config_one, &cr);
    reply_arr_finish(x->r, mark, cr.n);
}
