/*
 * metrics.c - see metrics.h. Every metric is one family line set: a HELP
 * and a TYPE line, then its samples. Names follow Prometheus conventions:
 * unreadd_ prefix, _total for counters, base units (bytes, seconds).
 */
#include "metrics.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "log.h"
#include "persist.h"
#include "tls.h"

/* Limits on what a scraper may send: a GET needs little. */
#define HTTP_MAX_HEADERS 8192
#define HTTP_MAX_BODY 1024
#define HTTP_TIMEOUT_S 10

/* The listener rests this long after an accept failed (EMFILE, ...):
 * evhttp's own listener has no error callback and would retry at once,
 * at full CPU, logging each failure. */
#define ACCEPT_REST_MS 100

static struct evhttp *http;
static struct evconnlistener *http_listener;
static struct event *rest_ev;
static struct log_rate accept_log;
static struct server *msrv;

uint64_t metrics_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, resident = 0;

    if (f == NULL)
        return 0;
    if (fscanf(f, "%lu %lu", &size, &resident) != 2)
        resident = 0;
    fclose(f);
    return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* HELP and TYPE of a metric. */
static void family(struct evbuffer *b, const char *name, const char *type,
                   const char *help)
{
    evbuffer_add_printf(b, "# HELP unreadd_%s %s\n# TYPE unreadd_%s %s\n", name,
                        help, name, type);
}

/* A metric of one unlabelled sample. */
static void one(struct evbuffer *b, const char *name, const char *type,
                const char *help, double v)
{
    family(b, name, type, help);
    evbuffer_add_printf(b, "unreadd_%s %.15g\n", name, v);
}

static void server_metrics(struct evbuffer *b, const struct server *srv)
{
    family(b, "info", "gauge", "Version of the server (value 1).");
    evbuffer_add_printf(b, "unreadd_info{version=\"%s\"} 1\n", UNREADD_VERSION);
    one(b, "uptime_seconds", "gauge", "Seconds since the server started.",
        (double)(server_now_ms() - srv->start_ms) / 1000.0);
    one(b, "connected_clients", "gauge", "Client connections open now.",
        srv->clients);
    one(b, "connections_received_total", "counter",
        "Client connections accepted.", (double)srv->stats.connections);
    one(b, "rejected_connections_total", "counter",
        "Client connections refused (maxclients).",
        (double)srv->stats.rejected_conns);
    one(b, "commands_processed_total", "counter",
        "Commands executed, errors included.", (double)srv->stats.commands);
    one(b, "errors_total", "counter", "Error replies.",
        (double)srv->stats.errors);
    one(b, "protocol_errors_total", "counter",
        "Connections closed because their framing was lost.",
        (double)srv->stats.proto_errors);
    one(b, "accept_errors_total", "counter",
        "accept() failures (out of descriptors, ...), both ports.",
        (double)srv->stats.accept_errors);
    one(b, "client_input_bytes", "gauge",
        "Input buffers of unfinished requests, all clients "
        "(client-input-limit).",
        (double)srv->client_in_bytes);
    one(b, "client_input_limit_disconnections_total", "counter",
        "Connections closed at client-input-limit.",
        (double)srv->stats.input_limit_closes);
    one(b, "request_timeouts_total", "counter",
        "Connections closed for not completing a request within timeout.",
        (double)srv->stats.request_timeouts);
    one(b, "auth_failures_total", "counter", "AUTH with a wrong password.",
        (double)srv->stats.auth_failures);
    family(b, "acl_access_denied_total", "counter",
           "Refusals by ACL (INFO stats acl_access_denied_*): failed "
           "logins, commands, keys, channels.");
    evbuffer_add_printf(
        b,
        "unreadd_acl_access_denied_total{reason=\"auth\"} %llu\n"
        "unreadd_acl_access_denied_total{reason=\"cmd\"} %llu\n"
        "unreadd_acl_access_denied_total{reason=\"key\"} %llu\n"
        "unreadd_acl_access_denied_total{reason=\"channel\"} %llu\n",
        (unsigned long long)srv->stats.acl_denied_auth,
        (unsigned long long)srv->stats.acl_denied_cmd,
        (unsigned long long)srv->stats.acl_denied_key,
        (unsigned long long)srv->stats.acl_denied_channel);
}

/* Per command, like INFO commandstats: only commands called at least
 * once. */
static void command_metrics(struct evbuffer *b, const struct server *srv)
{
    family(b, "command_calls_total", "counter", "Calls per command.");
    for (unsigned i = 0; i < UR_OP_COUNT; i++)
        if (srv->stats.calls[i] != 0)
            evbuffer_add_printf(b,
                                "unreadd_command_calls_total{cmd=\"%s\"} "
                                "%llu\n",
                                ur_ops[i].name,
                                (unsigned long long)srv->stats.calls[i]);
    family(b, "command_errors_total", "counter", "Error replies per command.");
    for (unsigned i = 0; i < UR_OP_COUNT; i++)
        if (srv->stats.calls[i] != 0)
            evbuffer_add_printf(
                b, "unreadd_command_errors_total{cmd=\"%s\"} %llu\n",
                ur_ops[i].name, (unsigned long long)srv->stats.op_errors[i]);
}

static void memory_metrics(struct evbuffer *b, const struct server *srv)
{
    struct db_usage u[DB_USAGE_ROWS];
    unsigned n = db_usage(&srv->db, u);
    size_t used = db_bytes(&srv->db);

    one(b, "memory_used_bytes", "gauge",
        "Bytes held by the stores (INFO used_memory; what maxmemory "
        "limits).",
        (double)used);
    one(b, "memory_rss_bytes", "gauge", "Resident set size of the process.",
        (double)metrics_rss_bytes());
    one(b, "maxmemory_bytes", "gauge", "The maxmemory setting (0: none).",
        (double)srv->cfg.maxmemory);
    one(b, "maxmemory_reached", "gauge",
        "1 while writes are refused for maxmemory.",
        srv->cfg.maxmemory != 0 && used >= srv->cfg.maxmemory);
    family(b, "family_bytes", "gauge", "Bytes held per family.");
    for (unsigned i = 0; i < n; i++)
        evbuffer_add_printf(b, "unreadd_family_bytes{family=\"%s\"} %zu\n",
                            u[i].family, u[i].bytes);
    family(b, "family_entries", "gauge",
           "Entries held per family (unit: what an entry is).");
    for (unsigned i = 0; i < n; i++)
        evbuffer_add_printf(
            b, "unreadd_family_entries{family=\"%s\",unit=\"%s\"} %zu\n",
            u[i].family, u[i].unit, u[i].entries);
}

static void persistence_metrics(struct evbuffer *b, const struct persist *p)
{
    struct persist_info pi;

    persist_info(p, &pi);
    one(b, "changes_since_last_save", "gauge", "Changes not yet in a snapshot.",
        (double)pi.changes_since_save);
    one(b, "last_save_timestamp_seconds", "gauge",
        "Unix time of the last successful snapshot (0: none).",
        (double)pi.last_save_ms / 1000.0);
    one(b, "last_save_ok", "gauge", "1 when the last snapshot attempt worked.",
        pi.last_save_ok);
    one(b, "bgsave_in_progress", "gauge", "1 while a background save runs.",
        pi.bgsave_in_progress);
    one(b, "journal_enabled", "gauge", "1 when the journal is on.",
        pi.journal_on);
    one(b, "journal_ok", "gauge",
        "0 while the journal cannot be written or is not trusted (writes "
        "answer -MISCONF).",
        pi.journal_ok);
    one(b, "journal_untrusted", "gauge",
        "1 after an fdatasync failed or a data file vanished, until a new "
        "snapshot and journal segment are written.",
        pi.journal_untrusted);
    one(b, "journal_fsync_failures_total", "counter",
        "Journal fdatasyncs that failed (never retried and trusted).",
        (double)pi.sync_failures);
    one(b, "journal_resyncs_total", "counter",
        "Snapshots and fresh segments written to trust the journal again.",
        (double)pi.resyncs);
    one(b, "journal_bytes", "gauge", "Bytes in the journal segments.",
        (double)pi.journal_bytes);
    one(b, "last_fsync_timestamp_seconds", "gauge",
        "Unix time of the last journal fdatasync (0: none).",
        (double)pi.last_fsync_ms / 1000.0);
    one(b, "journal_last_fsync_seconds", "gauge",
        "How long the last journal fdatasync took.",
        (double)pi.last_fsync_us / 1e6);
    one(b, "journal_fsyncs_total", "counter", "Journal fdatasyncs done.",
        (double)pi.fsyncs);
    one(b, "journal_fsync_in_progress", "gauge",
        "everysec: 1 while the sync thread's fdatasync runs.",
        pi.fsync_in_progress);
    one(b, "journal_fsync_delayed_total", "counter",
        "everysec: syncs that came due while the previous one still ran "
        "(a slow disk).",
        (double)pi.fsync_delayed);
}

static void expiry_metrics(struct evbuffer *b, const struct server *srv)
{
    const struct expiry *e = &srv->expiry;

    one(b, "expired_users_total", "counter", "Users expired for inactivity.",
        (double)e->users);
    family(b, "expired_entries_total", "counter",
           "Entries removed by expiry, per family.");
    for (unsigned f = 0; f < FAM_COUNT; f++)
        if (f != FAM_RCPT)
            evbuffer_add_printf(
                b, "unreadd_expired_entries_total{family=\"%s\"} %llu\n",
                db_families[f].name, (unsigned long long)e->entries[f]);
    one(b, "expiry_sweeps_total", "counter",
        "Sweeps of the activity table completed.", (double)e->sweeps);
    one(b, "expiry_sweep_running", "gauge", "1 while a sweep is in progress.",
        e->running);
    one(b, "expiry_scanned_total", "counter",
        "Activity entries looked at by sweeps.", (double)e->scanned);
    one(b, "expiry_last_sweep_duration_seconds", "gauge",
        "Wall time of the last completed sweep.",
        (double)e->last_sweep_duration_ms / 1000.0);
    one(b, "expiry_cycle_max_seconds", "gauge",
        "Longest single expiry slice: the longest pause expiry caused.",
        (double)e->cycle_max_us / 1e6);
    one(b, "expiry_cycle_seconds_total", "counter",
        "Time spent in expiry slices.", (double)e->cycle_us / 1e6);
}

static void on_metrics(struct evhttp_request *req, void *arg)
{
    const struct server *srv = arg;
    struct evbuffer *b = evbuffer_new();

    if (b == NULL) {
        evhttp_send_error(req, HTTP_SERVUNAVAIL, "out of memory");
        return;
    }
    server_metrics(b, srv);
    command_metrics(b, srv);
    memory_metrics(b, srv);
    if (srv->persist != NULL)
        persistence_metrics(b, srv->persist);
    expiry_metrics(b, srv);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "text/plain; version=0.0.4; charset=utf-8");
    evhttp_send_reply(req, HTTP_OK, "OK", b);
    evbuffer_free(b);
}

static void on_other(struct evhttp_request *req, void *arg)
{
    (void)arg;
    evhttp_send_error(req, HTTP_NOTFOUND, "only /metrics is served here");
}

static uint64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* accept failed for want of a resource: rest, log at most once a second
 * (as net.c does for the main port). */
static void on_accept_error(struct evconnlistener *l, void *arg)
{
    const struct timeval rest = {0, ACCEPT_REST_MS * 1000};
    uint64_t quiet;
    int err = errno;

    (void)arg;
    msrv->stats.accept_errors++;
    if (log_rate_ok(&accept_log, mono_ms(), &quiet))
        log_warn("metrics: accept on port %u: %s; not accepting for %d ms "
                 "at a time until it succeeds (%llu more failures since the "
                 "last line)",
                 msrv->cfg.metrics_port, strerror(err), ACCEPT_REST_MS,
                 (unsigned long long)quiet);
    evconnlistener_disable(l);
    evtimer_add(rest_ev, &rest);
}

static void on_rest(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what, (void)arg;
    evconnlistener_enable(http_listener);
}

int metrics_setup(struct server *srv, struct event_base *base, char *err,
                  size_t errlen)
{
    const struct config *cfg = &srv->cfg;
    struct evhttp_bound_socket *bound;

    if (cfg->metrics_port == 0)
        return 0;
    msrv = srv;
    if (cfg->metrics_tls && !tls_ready()) {
        snprintf(err, errlen,
                 "metrics-tls yes needs the TLS settings "
                 "(tls-cert-file, tls-key-file)");
        return -1;
    }
    http = evhttp_new(base);
    if (http == NULL) {
        snprintf(err, errlen, "metrics: cannot create the HTTP server");
        return -1;
    }
    if (cfg->metrics_tls)
        evhttp_set_bevcb(http, tls_http_bev, NULL); /* tls.h */
    evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
    evhttp_set_max_headers_size(http, HTTP_MAX_HEADERS);
    evhttp_set_max_body_size(http, HTTP_MAX_BODY);
    evhttp_set_timeout(http, HTTP_TIMEOUT_S);
    rest_ev = evtimer_new(base, on_rest, NULL);
    if (rest_ev == NULL ||
        evhttp_set_cb(http, "/metrics", on_metrics, srv) != 0 ||
        (bound = evhttp_bind_socket_with_handle(
             http, cfg->metrics_bind, (uint16_t)cfg->metrics_port)) == NULL) {
        snprintf(err, errlen, "metrics: cannot listen on %s:%u",
                 cfg->metrics_bind, cfg->metrics_port);
        metrics_teardown();
        return -1;
    }
    http_listener = evhttp_bound_socket_get_listener(bound);
    evconnlistener_set_error_cb(http_listener, on_accept_error);
    evhttp_set_gencb(http, on_other, NULL);
    log_info("metrics on %s://%s:%u/metrics",
             cfg->metrics_tls ? "https" : "http", cfg->metrics_bind,
             cfg->metrics_port);
    return 0;
}

void metrics_teardown(void)
{
    if (http != NULL)
        evhttp_free(http);
    http = NULL;
    http_listener = NULL;
    if (rest_ev != NULL)
        event_free(rest_ev);
    rest_ev = NULL;
}
