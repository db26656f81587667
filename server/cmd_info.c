/*
 * cmd_info.c - INFO: the server's state as `key:value` lines under
 * `# Section` headers, with Redis's field names wherever the meaning is
 * the same (redis_version, role, connected_clients, used_memory*, rdb_*
 * for snapshots, aof_* for the journal, instantaneous_ops_per_sec,
 * cmdstat_*, errorstat_*, db0), so that Redis tooling (redis_exporter,
 * redis-cli --stat, dashboards) reads it; unreadd's own fields follow
 * Redis's in each section. docs/OPERATIONS.md lists every field.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cluster.h"
#include "cmds.h"
#include "metrics.h"
#include "persist.h"
#include "repl.h"
#include "tls.h"
#include "u32map.h"

/* INFO text is built in a scratch buffer, then sent as one bulk string. */
struct info {
    struct ur_buf b;
    bool oom;
};

static void add(struct info *in, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void add(struct info *in, const char *fmt, ...)
{
    char line[1024];
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

typedef unsigned long long ull;

/* Redis's bytesToHuman: 1.50K, 2.00M, ... */
static const char *human(char *buf, size_t cap, double n)
{
    static const char units[] = "BKMGTP";
    int u = 0;

    while (n >= 1024 && u < 5) {
        n /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, cap, "%lluB", (ull)n);
    else
        snprintf(buf, cap, "%.2f%c", n, units[u]);
    return buf;
}

static void sec_server(struct info *in, const struct server *srv)
{
    struct utsname un;
    char exe[256] = "";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    uint64_t now = server_now_ms();
    uint64_t up = (now - srv->start_ms) / 1000;

    if (n > 0)
        exe[n] = '\0';
    if (uname(&un) != 0)
        memset(&un, 0, sizeof(un));
    add(in,
        "# Server\r\nredis_version:%s\r\nunreadd_version:%s\r\n"
        "redis_git_sha1:00000000\r\nredis_git_dirty:0\r\nredis_build_id:0\r\n"
        "redis_mode:standalone\r\nos:%s %s %s\r\narch_bits:%d\r\n"
        "monotonic_clock:POSIX clock_gettime\r\nmultiplexing_api:%s\r\n"
        "atomicvar_api:c11-builtin\r\ngcc_version:%d.%d.%d\r\n",
        UNREADD_REDIS_COMPAT, UNREADD_VERSION, un.sysname, un.release,
        un.machine, (int)(sizeof(void *) * 8),
        srv->mux_api ? srv->mux_api : "libevent",
#ifdef __GNUC__
        __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__
#else
        0, 0, 0
#endif
    );
    add(in,
        "process_id:%d\r\nprocess_supervised:no\r\nrun_id:%s\r\n"
        "tcp_port:%u\r\ntls_port:%u\r\nserver_time_usec:%llu\r\n"
        "uptime_in_seconds:%llu\r\n"
        "uptime_in_days:%llu\r\nhz:10\r\nconfigured_hz:10\r\n"
        "lru_clock:%llu\r\nexecutable:%s\r\nconfig_file:%s\r\n"
        "io_threads_active:0\r\nbind:%s\r\n\r\n",
        (int)getpid(), srv->run_id, srv->cfg.port, srv->cfg.tls_port,
        (ull)now * 1000, (ull)up, (ull)(up / 86400),
        (ull)((now / 1000) & ((1u << 24) - 1)), exe, srv->cfg.config_file,
        srv->cfg.bind);
}

static void sec_clients(struct info *in, const struct server *srv)
{
    const struct config *cfg = &srv->cfg;
    size_t max_in = 0, max_out = 0;
    uint32_t monitors = srv->clist.monitors;

    for (const struct client *cl = srv->clist.head; cl; cl = cl->next) {
        struct client_bufs bf = {0};

        if (cl->io != NULL && cl->io->bufs != NULL)
            cl->io->bufs(cl, &bf);
        if (bf.qbuf_cap > max_in)
            max_in = bf.qbuf_cap;
        if (bf.obuf > max_out)
            max_out = bf.obuf;
    }
    add(in,
        "# Clients\r\nconnected_clients:%u\r\ncluster_connections:0\r\n"
        "maxclients:%u\r\nclient_recent_max_input_buffer:%zu\r\n"
        "client_recent_max_output_buffer:%zu\r\nblocked_clients:0\r\n"
        "tracking_clients:0\r\nclients_in_timeout_table:0\r\n"
        "text_clients:%u\r\nbinary_clients:%u\r\ntls_clients:%u\r\n"
        "monitor_clients:%u\r\npubsub_clients:%u\r\nclients_paused:%d\r\n",
        srv->clients, cfg->maxclients, max_in, max_out, srv->text_clients,
        srv->bin_clients, srv->tls_clients, monitors, srv->pubsub.sub_clients,
        srv->pause_end_ms != 0 && srv->pause_end_ms > server_mono_ms());
    add(in,
        "max_frame:%u\r\nmax_args:%u\r\nmax_inline:%u\r\n"
        "client_output_limit:%llu\r\nclient_output_timeout:%u\r\n"
        "client_input_limit:%llu\r\ntimeout:%u\r\nrequirepass:%s\r\n",
        cfg->max_frame, cfg->max_args, cfg->max_inline,
        (ull)cfg->client_output_limit, cfg->client_output_timeout,
        (ull)cfg->client_input_limit, cfg->timeout,
        cfg->requirepass[0] ? "yes" : "no");
    add(in,
        "paused_clients:%u\r\nclient_output_bytes:%llu\r\n"
        "client_input_bytes:%llu\r\nrejected_connections:%llu\r\n"
        "accept_errors:%llu\r\nclient_output_limit_disconnections:%llu\r\n"
        "client_input_limit_disconnections:%llu\r\n"
        "client_output_timeouts:%llu\r\nidle_timeouts:%llu\r\n"
        "request_timeouts:%llu\r\nauth_failures:%llu\r\n"
        "auth_delayed_clients:%u\r\npubsub_limit_disconnections:%llu\r\n"
        "pubsub_output_limit:%llu\r\npubsub_output_soft_limit:%llu\r\n"
        "pubsub_output_soft_seconds:%u\r\n\r\n",
        srv->paused_clients, (ull)srv->client_out_bytes,
        (ull)srv->client_in_bytes, (ull)srv->stats.rejected_conns,
        (ull)srv->stats.accept_errors, (ull)srv->stats.output_limit_closes,
        (ull)srv->stats.input_limit_closes, (ull)srv->stats.output_timeouts,
        (ull)srv->stats.idle_timeouts, (ull)srv->stats.request_timeouts,
        (ull)srv->stats.auth_failures, srv->auth_delayed_clients,
        (ull)srv->pubsub.limit_closes, (ull)cfg->pubsub_output_limit,
        (ull)cfg->pubsub_output_soft, cfg->pubsub_output_soft_seconds);
}

static void sec_memory(struct info *in, struct server *srv)
{
    struct db_usage u[DB_USAGE_ROWS];
    unsigned n = db_usage(&srv->db, u);
    size_t used = db_bytes(&srv->db);
    uint64_t rss = metrics_rss_bytes();
    struct sysinfo si;
    uint64_t total =
        sysinfo(&si) == 0 ? (uint64_t)si.totalram * si.mem_unit : 0;
    size_t startup = srv->mem_startup < used ? srv->mem_startup : used;
    char h1[32], h2[32], h3[32], h4[32], h5[32];
    struct repl_info ri;

    repl_info(srv, &ri);
    if (used > srv->mem_peak)
        srv->mem_peak = used;
    add(in,
        "# Memory\r\nused_memory:%zu\r\nused_memory_human:%s\r\n"
        "used_memory_rss:%llu\r\nused_memory_rss_human:%s\r\n"
        "used_memory_peak:%zu\r\nused_memory_peak_human:%s\r\n"
        "used_memory_peak_perc:%.2f%%\r\nused_memory_overhead:%llu\r\n"
        "used_memory_startup:%zu\r\nused_memory_dataset:%zu\r\n"
        "used_memory_dataset_perc:%.2f%%\r\n",
        used, human(h1, sizeof(h1), (double)used), (ull)rss,
        human(h2, sizeof(h2), (double)rss), srv->mem_peak,
        human(h3, sizeof(h3), (double)srv->mem_peak),
        srv->mem_peak ? 100.0 * (double)used / (double)srv->mem_peak : 100.0,
        (ull)(startup + srv->client_out_bytes), startup, used - startup,
        used ? 100.0 * (double)(used - startup) / (double)used : 0.0);
    add(in,
        "total_system_memory:%llu\r\ntotal_system_memory_human:%s\r\n"
        "used_memory_lua:0\r\nused_memory_scripts:0\r\nmaxmemory:%llu\r\n"
        "maxmemory_human:%s\r\nmaxmemory_policy:noeviction\r\n"
        "mem_fragmentation_ratio:%.2f\r\nmem_fragmentation_bytes:%lld\r\n"
        "mem_not_counted_for_evict:0\r\nmem_replication_backlog:%zu\r\n"
        "mem_clients_slaves:0\r\nmem_clients_normal:%llu\r\n"
        "mem_aof_buffer:0\r\nmem_allocator:libc\r\nactive_defrag_running:0\r\n"
        "lazyfree_pending_objects:0\r\nmaxmemory_reached:%d\r\n",
        (ull)total, human(h4, sizeof(h4), (double)total),
        (ull)srv->cfg.maxmemory,
        human(h5, sizeof(h5), (double)srv->cfg.maxmemory),
        used ? (double)rss / (double)used : 0.0,
        (long long)rss - (long long)used, ri.backlog_bytes,
        (ull)srv->client_out_bytes,
        srv->cfg.maxmemory != 0 && used >= srv->cfg.maxmemory);
    for (unsigned i = 0; i < n; i++)
        add(in, "%s_%ss:%zu\r\n%s_bytes:%zu\r\n%s_bytes_per_%s:%.2f\r\n",
            u[i].family, u[i].unit, u[i].entries, u[i].family, u[i].bytes,
            u[i].family, u[i].unit,
            u[i].entries ? (double)u[i].bytes / (double)u[i].entries : 0.0);
    add(in, "\r\n");
}

static void sec_persistence(struct info *in, const struct server *srv)
{
    struct persist_info pi;

    if (srv->persist == NULL)
        return;
    persist_info(srv->persist, &pi);
    add(in,
        "# Persistence\r\nloading:0\r\nasync_loading:0\r\n"
        "current_cow_peak:0\r\ncurrent_cow_size:0\r\n"
        "current_cow_size_age:0\r\ncurrent_fork_perc:0.00\r\n"
        "current_save_keys_processed:0\r\ncurrent_save_keys_total:0\r\n"
        "rdb_changes_since_last_save:%llu\r\nrdb_bgsave_in_progress:%d\r\n"
        "rdb_last_save_time:%llu\r\nrdb_last_bgsave_status:%s\r\n"
        "rdb_last_bgsave_time_sec:%lld\r\nrdb_current_bgsave_time_sec:-1\r\n"
        "rdb_saves:%llu\r\nrdb_last_cow_size:0\r\n"
        "rdb_last_load_keys_expired:0\r\nrdb_last_load_keys_loaded:0\r\n",
        (ull)pi.changes_since_save, pi.bgsave_in_progress,
        (ull)(pi.last_save_ms / 1000), pi.last_save_ok ? "ok" : "err",
        pi.last_save_ms ? (long long)(pi.last_save_duration_ms / 1000) : -1LL,
        (ull)pi.saves);
    add(in,
        "aof_enabled:%d\r\naof_rewrite_in_progress:0\r\n"
        "aof_rewrite_scheduled:0\r\naof_last_rewrite_time_sec:-1\r\n"
        "aof_current_rewrite_time_sec:-1\r\naof_last_bgrewrite_status:ok\r\n"
        "aof_rewrites:0\r\naof_rewrites_consecutive_failures:0\r\n"
        "aof_last_write_status:%s\r\naof_last_cow_size:0\r\n"
        "module_fork_in_progress:0\r\nmodule_fork_last_cow_size:0\r\n",
        pi.journal_on, pi.journal_ok ? "ok" : "err");
    if (pi.journal_on)
        add(in,
            "aof_current_size:%llu\r\naof_base_size:0\r\n"
            "aof_pending_rewrite:0\r\naof_buffer_length:%llu\r\n"
            "aof_pending_bio_fsync:%d\r\naof_delayed_fsync:%llu\r\n",
            (ull)pi.journal_bytes, (ull)pi.journal_pending,
            pi.fsync_in_progress, (ull)pi.fsync_delayed);
    add(in,
        "loading_time_ms:%llu\r\nloaded_journal_records:%llu\r\n"
        "changes_since_last_save:%llu\r\nbgsave_in_progress:%d\r\n"
        "last_save_time:%llu\r\nlast_save_status:%s\r\n"
        "last_save_duration_ms:%llu\r\nlast_save_bytes:%llu\r\n"
        "latest_fork_usec:%llu\r\n",
        (ull)pi.load_ms, (ull)pi.loaded_records, (ull)pi.changes_since_save,
        pi.bgsave_in_progress, (ull)pi.last_save_ms / 1000,
        pi.last_save_ok ? "ok" : "err", (ull)pi.last_save_duration_ms,
        (ull)pi.last_save_bytes, (ull)pi.fork_us);
    add(in,
        "journal_enabled:%d\r\njournal_fsync:%s\r\njournal_status:%s\r\n"
        "journal_error:%s\r\njournal_bytes:%llu\r\njournal_segment:%llu\r\n"
        "journal_pending_bytes:%llu\r\nlast_fsync_time_ms:%llu\r\n"
        "journal_last_fsync_us:%llu\r\njournal_fsyncs:%llu\r\n"
        "journal_fsync_in_progress:%d\r\njournal_fsync_delayed:%llu\r\n"
        "journal_fsync_failures:%llu\r\njournal_resyncs:%llu\r\n\r\n",
        pi.journal_on, pi.journal_fsync,
        pi.journal_untrusted ? "untrusted"
        : pi.journal_ok      ? "ok"
                             : "broken",
        pi.journal_error, (ull)pi.journal_bytes, (ull)pi.journal_segment,
        (ull)pi.journal_pending, (ull)pi.last_fsync_ms, (ull)pi.last_fsync_us,
        (ull)pi.fsyncs, pi.fsync_in_progress, (ull)pi.fsync_delayed,
        (ull)pi.sync_failures, (ull)pi.resyncs);
}

static void sec_stats(struct info *in, const struct server *srv)
{
    const struct stats *st = &srv->stats;
    struct persist_info pi = {0};
    struct repl_info ri;
    struct tls_info ti;

    repl_info(srv, &ri);
    if (srv->persist != NULL)
        persist_info(srv->persist, &pi);
    add(in,
        "# Stats\r\ntotal_connections_received:%llu\r\n"
        "total_commands_processed:%llu\r\ninstantaneous_ops_per_sec:%llu\r\n"
        "total_net_input_bytes:%llu\r\ntotal_net_output_bytes:%llu\r\n"
        "total_net_repl_input_bytes:%llu\r\n"
        "total_net_repl_output_bytes:%llu\r\n"
        "instantaneous_input_kbps:%.2f\r\ninstantaneous_output_kbps:%.2f\r\n"
        "instantaneous_input_repl_kbps:0.00\r\n"
        "instantaneous_output_repl_kbps:0.00\r\nrejected_connections:%llu\r\n"
        "sync_full:%llu\r\nsync_partial_ok:%llu\r\nsync_partial_err:%llu\r\n",
        (ull)st->connections, (ull)st->commands,
        (ull)server_inst(srv, INST_OPS), (ull)st->net_in_bytes,
        (ull)st->net_out_bytes, (ull)ri.repl_in_bytes, (ull)ri.repl_out_bytes,
        (double)server_inst(srv, INST_NET_IN) / 1024.0,
        (double)server_inst(srv, INST_NET_OUT) / 1024.0,
        (ull)st->rejected_conns, (ull)ri.sync_full, (ull)ri.sync_partial_ok,
        (ull)ri.sync_partial_err);
    add(in,
        "expired_keys:%llu\r\nexpired_stale_perc:0.00\r\n"
        "expired_time_cap_reached_count:0\r\n"
        "expire_cycle_cpu_milliseconds:%llu\r\nevicted_keys:0\r\n"
        "evicted_clients:0\r\ntotal_eviction_exceeded_time:0\r\n"
        "current_eviction_exceeded_time:0\r\nkeyspace_hits:0\r\n"
        "keyspace_misses:0\r\npubsub_channels:%llu\r\npubsub_patterns:%llu\r\n"
        "pubsubshard_channels:0\r\nlatest_fork_usec:%llu\r\n"
        "total_forks:%llu\r\nmigrate_cached_sockets:0\r\n"
        "slave_expires_tracked_keys:0\r\nactive_defrag_hits:0\r\n"
        "active_defrag_misses:0\r\nactive_defrag_key_hits:0\r\n"
        "active_defrag_key_misses:0\r\ntotal_active_defrag_time:0\r\n"
        "current_active_defrag_time:0\r\ntracking_total_keys:0\r\n"
        "tracking_total_items:0\r\ntracking_total_prefixes:0\r\n",
        (ull)srv->expiry.users, (ull)(srv->expiry.cycle_us / 1000),
        (ull)pubsub_numchannels(&srv->pubsub), (ull)pubsub_numpat(&srv->pubsub),
        (ull)pi.fork_us, (ull)pi.forks);
    add(in,
        "pubsub_published:%llu\r\npubsub_delivered:%llu\r\n"
        "pubsub_dropped:%llu\r\npubsub_subscriptions:%llu\r\n"
        "pubsub_bytes:%zu\r\nnotify_badges:%s\r\nnotify_messages:%llu\r\n"
        "notify_probes:%llu\r\n",
        (ull)srv->pubsub.published, (ull)srv->pubsub.delivered,
        (ull)srv->pubsub.dropped, (ull)srv->pubsub.subscriptions,
        pubsub_bytes(&srv->pubsub), srv->cfg.notify_badges ? "yes" : "no",
        (ull)srv->badges.messages, (ull)srv->badges.probes);
    add(in,
        "unexpected_error_replies:0\r\ntotal_error_replies:%llu\r\n"
        "dump_payload_sanitizations:0\r\ntotal_reads_processed:%llu\r\n"
        "total_writes_processed:%llu\r\nio_threaded_reads_processed:0\r\n"
        "io_threaded_writes_processed:0\r\nreply_buffer_shrinks:0\r\n"
        "reply_buffer_expands:0\r\ntotal_errors:%llu\r\n"
        "protocol_errors:%llu\r\nacl_access_denied_auth:%llu\r\n"
        "acl_access_denied_cmd:%llu\r\nacl_access_denied_key:%llu\r\n"
        "acl_access_denied_channel:%llu\r\n",
        (ull)st->errors, (ull)st->reads, (ull)st->writes, (ull)st->errors,
        (ull)st->proto_errors, (ull)st->acl_denied_auth,
        (ull)st->acl_denied_cmd, (ull)st->acl_denied_key,
        (ull)st->acl_denied_channel);
    tls_get_info(&ti);
    add(in,
        "tls_handshakes:%llu\r\ntls_handshake_failures:%llu\r\n"
        "tls_handshake_timeouts:%llu\r\ntls_sessions_resumed:%llu\r\n"
        "tls_certificate_loads:%llu\r\ntls_certificate_not_after:%lld\r\n"
        "\r\n",
        (ull)st->tls_handshakes, (ull)st->tls_handshake_failures,
        (ull)st->tls_handshake_timeouts, (ull)ti.session_hits, (ull)ti.loads,
        (long long)ti.cert_not_after);
}

struct slave_lines {
    struct info *in;
    unsigned n;
};

static void slave_line(const struct repl_replica *rr, void *ctx)
{
    struct slave_lines *sl = ctx;

    add(sl->in, "slave%u:ip=%s,port=%u,state=%s,offset=%llu,lag=%llu\r\n",
        sl->n++, rr->ip, rr->port, rr->state, (ull)rr->offset, (ull)rr->lag_s);
}

/* Redis's fields, in Redis's order (sentinel reads role, master_host,
 * master_port, master_link_status, master_link_down_since_seconds,
 * slave_priority, slave_repl_offset, replica_announced and the slaveN
 * lines), then unreadd's. */
static void sec_replication(struct info *in, const struct server *srv)
{
    struct snap_origin o;
    struct repl_info ri;
    struct slave_lines sl = {in, 0};

    repl_info(srv, &ri);
    memset(&o, 0, sizeof(o));
    if (srv->persist != NULL)
        persist_origin(srv->persist, &o);
    else
        memset(o.replid, '0', SNAP_REPLID);
    if (!o.has2)
        memset(o.replid2, '0', SNAP_REPLID);
    add(in, "# Replication\r\nrole:%s\r\n", ri.replica ? "slave" : "master");
    if (ri.replica) {
        add(in,
            "master_host:%s\r\nmaster_port:%u\r\nmaster_link_status:%s\r\n"
            "master_last_io_seconds_ago:%lld\r\nmaster_sync_in_progress:%d\r\n"
            "slave_read_repl_offset:%llu\r\nslave_repl_offset:%llu\r\n",
            ri.host, ri.port, ri.state == RS_CONNECTED ? "up" : "down",
            (long long)ri.last_io_s, ri.state == RS_SYNC, (ull)o.offset,
            (ull)o.offset);
        if (ri.state == RS_SYNC)
            add(in,
                "master_sync_total_bytes:%llu\r\n"
                "master_sync_read_bytes:%llu\r\n"
                "master_sync_left_bytes:%llu\r\n"
                "master_sync_perc:%.2f\r\n"
                "master_sync_last_io_seconds_ago:%lld\r\n",
                (ull)ri.sync_total, (ull)ri.sync_read,
                (ull)(ri.sync_total - ri.sync_read),
                ri.sync_total
                    ? 100.0 * (double)ri.sync_read / (double)ri.sync_total
                    : 0.0,
                (long long)ri.sync_last_io_s);
        if (ri.state != RS_CONNECTED)
            add(in, "master_link_down_since_seconds:%lld\r\n",
                (long long)ri.down_since_s);
        add(in,
            "slave_priority:%u\r\nslave_read_only:1\r\n"
            "replica_announced:%d\r\n",
            srv->cfg.replica_priority, srv->cfg.replica_announced);
    }
    add(in, "connected_slaves:%u\r\n", ri.replicas);
    if (!ri.replica && srv->cfg.min_replicas_to_write != 0)
        add(in, "min_slaves_good_slaves:%u\r\n", ri.good_replicas);
    repl_replicas(srv, slave_line, &sl);
    add(in,
        "master_failover_state:no-failover\r\nmaster_replid:%s\r\n"
        "master_replid2:%s\r\nmaster_repl_offset:%llu\r\n"
        "second_repl_offset:%lld\r\nrepl_backlog_active:%d\r\n"
        "repl_backlog_size:%llu\r\nrepl_backlog_first_byte_offset:%llu\r\n"
        "repl_backlog_histlen:%llu\r\n",
        o.replid, o.replid2, (ull)o.offset,
        o.has2 ? (long long)o.offset2 + 1 : -1LL, ri.backlog_active,
        (ull)srv->cfg.repl_backlog_size, (ull)ri.backlog_first,
        (ull)ri.backlog_histlen);
    add(in,
        "repl_backlog_bytes:%zu\r\nrepl_sync_full:%llu\r\n"
        "repl_sync_partial_ok:%llu\r\nrepl_sync_partial_err:%llu\r\n"
        "repl_apply_errors:%llu\r\n",
        ri.backlog_bytes, (ull)ri.sync_full, (ull)ri.sync_partial_ok,
        (ull)ri.sync_partial_err, (ull)ri.apply_errors);
    if (ri.replica)
        add(in, "master_repl_offset_seen:%llu\r\n", (ull)ri.primary_offset);
    add(in, "\r\n");
}

static double tv_sec(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static void sec_cpu(struct info *in)
{
    struct rusage self = {0}, kids = {0}, thr = {0};

    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &kids);
    getrusage(RUSAGE_THREAD, &thr);
    add(in,
        "# CPU\r\nused_cpu_sys:%.6f\r\nused_cpu_user:%.6f\r\n"
        "used_cpu_sys_children:%.6f\r\nused_cpu_user_children:%.6f\r\n"
        "used_cpu_sys_main_thread:%.6f\r\nused_cpu_user_main_thread:%.6f\r\n"
        "\r\n",
        tv_sec(self.ru_stime), tv_sec(self.ru_utime), tv_sec(kids.ru_stime),
        tv_sec(kids.ru_utime), tv_sec(thr.ru_stime), tv_sec(thr.ru_utime));
}

static void sec_commandstats(struct info *in, const struct server *srv)
{
    const struct stats *st = &srv->stats;

    add(in, "# Commandstats\r\n");
    for (unsigned i = 0; i < UR_OP_COUNT; i++) {
        char name[64];
        size_t k = 0;

        if (st->calls[i] == 0)
            continue;
        for (const char *p = ur_ops[i].name; *p && k + 1 < sizeof(name); p++)
            name[k++] = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
        name[k] = '\0';
        /* Redis: calls counts the commands that ran, rejected_calls
         * those refused before running, failed_calls those that ran and
         * answered an error. errors (unreadd's) is their sum. */
        uint64_t ran = st->calls[i] - st->op_rejected[i];
        add(in,
            "cmdstat_%s:calls=%llu,usec=%llu,usec_per_call=%.2f,"
            "rejected_calls=%llu,failed_calls=%llu,errors=%llu\r\n",
            name, (ull)ran, (ull)st->op_usec[i],
            ran ? (double)st->op_usec[i] / (double)ran : 0.0,
            (ull)st->op_rejected[i],
            (ull)(st->op_errors[i] - st->op_rejected[i]),
            (ull)st->op_errors[i]);
    }
    add(in, "\r\n");
}

static void sec_errorstats(struct info *in, const struct server *srv)
{
    /* Counted per code; Redis counts per prefix word: codes sharing a
     * prefix (ERR) add up. */
    add(in, "# Errorstats\r\n");
    for (unsigned c = 1; c < UR_E__COUNT; c++) {
        const char *prefix = ur_err_prefix(c);
        uint64_t n = 0;
        bool first = true;

        for (unsigned d = 1; d < UR_E__COUNT; d++) {
            if (strcmp(ur_err_prefix(d), prefix) != 0)
                continue;
            if (d < c)
                first = false;
            n += srv->stats.err_by_code[d];
        }
        if (first && n > 0)
            add(in, "errorstat_%s:count=%llu\r\n", prefix, (ull)n);
    }
    add(in, "\r\n");
}

/* Redis's cluster_enabled, then (cluster mode) the node's state and one
 * line per link to another node (cluster.h). */
static void sec_cluster(struct info *in, const struct server *srv)
{
    add(in, "# Cluster\r\n");
    if (srv->cluster == NULL)
        add(in, "cluster_enabled:0\r\n");
    else if (!in->oom)
        cluster_info_lines(srv->cluster, &in->b);
    add(in, "\r\n");
}

static void sec_keyspace(struct info *in, const struct server *srv)
{
    struct db_usage u[DB_USAGE_ROWS];
    unsigned n = db_usage(&srv->db, u);
    uint64_t keys = scan_users_held(&srv->db);

    /* db0's keys: DBSIZE's users. Then one line per family, keyspace-like:
     * its entries (in its unit) and bytes. */
    add(in, "# Keyspace\r\n");
    if (keys > 0)
        add(in, "db0:keys=%llu,expires=0,avg_ttl=0\r\n", (ull)keys);
    for (unsigned i = 0; i < n; i++)
        if (u[i].entries > 0)
            add(in, "%s:%ss=%zu,bytes=%zu\r\n", u[i].family, u[i].unit,
                u[i].entries, u[i].bytes);
    add(in, "\r\n");
}

/* # Expiry: inactive-user expiry (server/users.h, docs/OPERATIONS.md). */
static void sec_expiry(struct info *in, const struct server *srv)
{
    const struct expiry *e = &srv->expiry;

    add(in,
        "# Expiry\r\ninactive_days:%u\r\nexpire_families:%s\r\n"
        "active_users:%zu\r\nexpired_users:%llu\r\n",
        srv->cfg.inactive_days, srv->cfg.expire_families_text,
        db_active_users(&srv->db), (ull)e->users);
    for (unsigned f = 0; f < FAM_COUNT; f++)
        if (f != FAM_RCPT)
            add(in, "expired_%s_entries:%llu\r\n", db_families[f].name,
                (ull)e->entries[f]);
    add(in,
        "sweep_in_progress:%d\r\nsweeps:%llu\r\nscanned:%llu\r\n"
        "last_sweep_time:%llu\r\nlast_sweep_duration_ms:%llu\r\n"
        "last_sweep_expired:%llu\r\nsweep_cycles:%llu\r\n"
        "sweep_cycle_time_us:%llu\r\nsweep_cycle_max_us:%llu\r\n\r\n",
        e->running, (ull)e->sweeps, (ull)e->scanned,
        (ull)e->last_sweep_ms / 1000, (ull)e->last_sweep_duration_ms,
        (ull)e->last_sweep_expired, (ull)e->cycles, (ull)e->cycle_us,
        (ull)e->cycle_max_us);
}

enum {
    S_SERVER,
    S_CLIENTS,
    S_MEMORY,
    S_PERSISTENCE,
    S_STATS,
    S_REPLICATION,
    S_CPU,
    S_MODULES,
    S_ERRORSTATS,
    S_CLUSTER,
    S_KEYSPACE,
    S_EXPIRY,
    S_COMMANDSTATS,
    S__COUNT
};

static const char *const sec_names[S__COUNT] = {
    "server",      "clients", "memory",      "persistence", "stats",
    "replication", "cpu",     "modules",     "errorstats",  "cluster",
    "keyspace",    "expiry",  "commandstats"};

void cmd_INFO(struct exec_ctx *x)
{
    struct server *srv = x->srv;
    bool want[S__COUNT] = {false};
    struct info in = {{0}, false};

    if (x->argc == 0)
        memset(want, 1, sizeof(want));
    for (uint32_t i = 0; i < x->argc; i++) {
        char name[32];

        arg_text(x, i, name, sizeof(name));
        if (strcasecmp(name, "all") == 0 || strcasecmp(name, "default") == 0 ||
            strcasecmp(name, "everything") == 0) {
            memset(want, 1, sizeof(want));
            continue;
        }
        for (unsigned s = 0; s < S__COUNT; s++)
            if (strcasecmp(name, sec_names[s]) == 0)
                want[s] = true;
    }
    if (want[S_SERVER])
        sec_server(&in, srv);
    if (want[S_CLIENTS])
        sec_clients(&in, srv);
    if (want[S_MEMORY])
        sec_memory(&in, srv);
    if (want[S_PERSISTENCE])
        sec_persistence(&in, srv);
    if (want[S_STATS])
        sec_stats(&in, srv);
    if (want[S_REPLICATION])
        sec_replication(&in, srv);
    if (want[S_CPU])
        sec_cpu(&in);
    if (want[S_MODULES])
        add(&in, "# Modules\r\n\r\n");
    if (want[S_ERRORSTATS])
        sec_errorstats(&in, srv);
    if (want[S_CLUSTER])
        sec_cluster(&in, srv);
    if (want[S_KEYSPACE])
        sec_keyspace(&in, srv);
    if (want[S_EXPIRY])
        sec_expiry(&in, srv);
    if (want[S_COMMANDSTATS])
        sec_commandstats(&in, srv);

    if (in.oom) {
        reply_oom(x);
    } else {
        /* Drop the blank line after the last section, as Redis does. */
        size_t len = in.b.len >= 2 ? in.b.len - 2 : in.b.len;
        reply_str(x->r, in.b.data ? in.b.data : "", len);
    }
    ur_buf_deinit(&in.b);
}
