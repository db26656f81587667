/*
 * main.c - the process: configuration, then the data (loaded from the data
 * dir), then the event loop and the network, in that order; teardown in
 * reverse, with a final snapshot. `unreadd --check FILE [--fix]` checks a
 * data file instead of serving.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "acl.h"
#include "check.h"
#include "cluster.h"
#include "config.h"
#include "hash.h"
#include "log.h"
#include "metrics.h"
#include "net.h"
#include "notify.h"
#include "persist.h"
#include "repl.h"
#include "replay.h"
#include "server.h"
#include "tls.h"
#include "users.h"

/* Persistence housekeeping period (journal everysec sync, save triggers). */
#define CRON_MS 100
/* Inactive-user expiry (server/users.h): a slice of at most
 * EXPIRE_BUDGET_US every EXPIRE_BUSY_MS while a sweep runs (10% of the
 * loop at most, and no pause longer than a slice), else a look every
 * CRON_MS for a new day. */
#define EXPIRE_BUDGET_US 1000
#define EXPIRE_BUSY_MS 10

static struct server server;
static struct event *expire_ev;

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    struct event_base *base = arg;
    log_info("received %s, shutting down",
             sig == SIGINT ? "SIGINT" : "SIGTERM");
    event_base_loopbreak(base);
}

/*
 * SIGHUP: logrotate's "kill -HUP" after moving the log away, or a closed
 * terminal: reopens the logfile, or is ignored when logging to stderr.
 * SIGUSR1, SIGUSR2: ignored. None of them stops the server; each says so
 * in the log (docs/OPERATIONS.md, Signals).
 */
static void on_soft_signal(evutil_socket_t sig, short what, void *arg)
{
    char err[512];

    (void)what, (void)arg;
    if (sig == SIGHUP && log_to_file()) {
        if (log_reopen(err, sizeof(err)) != 0)
            log_error("SIGHUP: %s; still logging to the old file", err);
        else
            log_info("received SIGHUP, log file %s reopened",
                     server.cfg.logfile);
        return;
    }
    log_info("received %s, ignored (%s)",
             sig == SIGHUP    ? "SIGHUP"
             : sig == SIGUSR1 ? "SIGUSR1"
                              : "SIGUSR2",
             sig == SIGHUP ? "logging to stderr: nothing to reopen"
                           : "SIGTERM or SHUTDOWN stops the server");
}

/*
 * What the cron sees of persistence, for the latency monitor: a BGSAVE
 * forked (the "fork" event) and journal fsyncs (the "journal-fsync"
 * event: the last one's duration when any happened since the previous
 * look, so a burst within one period shows its last sync).
 */
static void observe_persist(struct server *srv)
{
    struct persist_info pi;
    uint64_t now_s = server_now_ms() / 1000;

    if (srv->persist == NULL)
        return;
    persist_info(srv->persist, &pi);
    if (pi.forks != srv->total_forks)
        latency_add(&srv->latency, LAT_FORK, now_s, pi.fork_us / 1000,
                    srv->cfg.latency_threshold);
    srv->total_forks = pi.forks;
    if (pi.fsyncs != srv->seen_fsyncs)
        latency_add(&srv->latency, LAT_FSYNC, now_s, pi.last_fsync_us / 1000,
                    srv->cfg.latency_threshold);
    srv->seen_fsyncs = pi.fsyncs;
}

static void on_cron(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what, (void)arg;
    server_turn_end(&server);
    persist_cron(server.persist);
    /* Right after persist_cron: a save it reaped is taken for the
     * replicas waiting for it before anything else can end. */
    repl_cron(&server);
    cluster_cron(&server);
    server_sample(&server);
    observe_persist(&server);
}

/* The sweep writes (USER.EXPIRE): it waits while CLIENT PAUSE holds
 * writes, as Redis pauses its expiry, and never runs on a replica (the
 * primary's sweep reaches it as records). */
static void on_expire(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what, (void)arg;
    server_turn_end(&server); /* its expiries see the time now */
    bool paused =
        server.pause_end_ms > server_mono_ms() || server.readonly_data;
    uint64_t t0 = server_mono_ns();
    bool busy = !paused && users_expire_cycle(&server, EXPIRE_BUDGET_US);
    const struct timeval tv = {0, (busy ? EXPIRE_BUSY_MS : CRON_MS) * 1000};

    if (busy)
        latency_add(&server.latency, LAT_EXPIRE, server_now_ms() / 1000,
                    (server_mono_ns() - t0) / 1000000,
                    server.cfg.latency_threshold);
    event_add(expire_ev, &tv);
}

/* srv->on_tls_config: CONFIG SET of a tls- key rebuilds the contexts
 * from the new values (tls.h), or refuses. */
static int tls_reconfigure(struct server *srv, const struct config *next,
                           char *err, size_t errlen)
{
    (void)srv;
    if (tls_configure(next, err, errlen) != 0)
        return -1;
    if (tls_wanted(next))
        log_info("TLS: certificates and settings loaded again");
    return 0;
}

static void print_key(const char *name, const char *value, void *ctx)
{
    (void)ctx;
    printf("  --%-22s %s\n", name, value[0] ? value : "\"\"");
}

/* --help: every configuration key with its default, from the key table
 * (docs/OPERATIONS.md explains each). */
static void usage(void)
{
    struct config dflt;

    config_init(&dflt);
    printf("Usage: unreadd [--config FILE] [--key value ...]\n"
           "       unreadd --check FILE [--fix] [--drop-damaged | "
           "--truncate-at OFFSET]\n"
           "       unreadd --help | --version\n\n"
           "Configuration keys (file: `key value` lines; command line: "
           "`--key value`,\nwhich wins over the file), with their "
           "defaults:\n");
    config_match(&dflt, "*", 1, print_key, NULL);
    printf("\nSee docs/OPERATIONS.md.\n");
}

/* The data directory exists (created if missing) and is a directory. */
static int ensure_dir(const char *dir)
{
    struct stat st;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        log_error("cannot create data dir %s: %s", dir, strerror(errno));
        return -1;
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        log_error("data dir %s is not a directory", dir);
        return -1;
    }
    if (access(dir, R_OK | W_OK | X_OK) != 0) {
        log_error("data dir %s is not writable by this user (uid %d): %s; "
                  "give it to that user or choose another --dir",
                  dir, (int)getuid(), strerror(errno));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    char err[2048];
    struct event_base *base = NULL;
    struct event *sigint = NULL, *sigterm = NULL, *cron = NULL;
    struct event *soft[3] = {NULL, NULL, NULL};
    static const int soft_sigs[3] = {SIGHUP, SIGUSR1, SIGUSR2};
    const struct timeval cron_tv = {0, CRON_MS * 1000};
    int status = 1;

    if (argc >= 2 && strcmp(argv[1], "--check") == 0)
        return check_main(argc - 2, argv + 2);
    if (argc == 2 && strcmp(argv[1], "--help") == 0) {
        usage();
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("unreadd %s\n", UNREADD_VERSION);
        return 0;
    }
    config_init(&server.cfg);
    /* ACL users before the configuration: its user lines define them */
    server.acl = acl_create();
    if (server.acl == NULL) {
        fprintf(stderr, "unreadd: out of memory\n");
        return 1;
    }
    server.cfg.on_user = acl_config_user;
    server.cfg.on_user_ctx = server.acl;
    if (config_from_args(&server.cfg, argc, argv, err, sizeof(err)) != 0 ||
        acl_setup(&server, err, sizeof(err)) != 0) {
        fprintf(stderr, "unreadd: %s\n", err);
        return 1;
    }
    log_set_level((enum log_level)server.cfg.loglevel);
    if (log_open(server.cfg.logfile, err, sizeof(err)) != 0) {
        fprintf(stderr, "unreadd: %s\n", err);
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    /* Not fatal while loading either; the loop's handlers take over. */
    signal(SIGHUP, SIG_IGN);
    signal(SIGUSR1, SIG_IGN);
    signal(SIGUSR2, SIG_IGN);
    /* A file over RLIMIT_FSIZE fails its write (EFBIG) like a full disk. */
    signal(SIGXFSZ, SIG_IGN);

    if (ensure_dir(server.cfg.dir) != 0)
        return 1;
    /* A secret hash seed, so clients cannot choose ids that collide. */
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof(seed), 0) != (ssize_t)sizeof(seed))
        seed = server_now_ms() ^ ((uint64_t)getpid() << 32);
    snprintf(server.run_id, sizeof(server.run_id), "%016llx%016llx%08x",
             (unsigned long long)seed,
             (unsigned long long)(server_now_ms() ^ (seed >> 7) ^
                                  ((uint64_t)getpid() << 40)),
             (unsigned)(seed >> 32) ^ (unsigned)getpid());
    hash_setup(seed);
    if (db_init(&server.db) != 0 ||
        pubsub_setup(&server.pubsub, seed * 0x9E3779B97F4A7C15ull + 1) != 0 ||
        badges_setup(&server) != 0) {
        log_error("out of memory");
        return 1;
    }
    server.start_ms = server.stat_reset_ms = server_now_ms();
    server.mem_startup = server.mem_peak = db_bytes(&server.db);
    if (replay_open(&server, err, sizeof(err)) != 0) {
        log_error("%s", err);
        goto out;
    }

    base = event_base_new();
    if (base == NULL) {
        log_error("cannot create the event loop");
        goto out;
    }
    sigint = evsignal_new(base, SIGINT, on_signal, base);
    sigterm = evsignal_new(base, SIGTERM, on_signal, base);
    cron = event_new(base, -1, EV_PERSIST, on_cron, NULL);
    expire_ev = evtimer_new(base, on_expire, NULL);
    if (sigint == NULL || sigterm == NULL || cron == NULL ||
        expire_ev == NULL || evsignal_add(sigint, NULL) ||
        evsignal_add(sigterm, NULL) || event_add(cron, &cron_tv) ||
        event_add(expire_ev, &cron_tv)) {
        log_error("cannot install signal handlers and timers");
        goto out;
    }
    for (int i = 0; i < 3; i++) {
        soft[i] = evsignal_new(base, soft_sigs[i], on_soft_signal, NULL);
        if (soft[i] == NULL || evsignal_add(soft[i], NULL) != 0) {
            log_error("cannot install signal handlers");
            goto out;
        }
    }
    server.mux_api = event_base_get_method(base);
    cluster_config_fix(&server.cfg);
    server.on_tls_config = tls_reconfigure;
    if (tls_configure(&server.cfg, err, sizeof(err)) != 0 ||
        metrics_setup(&server, base, err, sizeof(err)) != 0 ||
        net_setup(&server, base, err, sizeof(err)) != 0 ||
        repl_setup(&server, base, err, sizeof(err)) != 0 ||
        cluster_setup(&server, base, err, sizeof(err)) != 0) {
        log_error("%s", err);
        goto out;
    }
    if (server.cfg.tls_port != 0)
        log_info("TLS on %s:%u", server.cfg.bind, server.cfg.tls_port);
    log_info("unreadd %s ready on %s:%u (pid %d, dir %s)", UNREADD_VERSION,
             server.cfg.bind,
             server.cfg.port != 0 ? server.cfg.port : server.cfg.tls_port,
             (int)getpid(), server.cfg.dir);
    snprintf(err, sizeof(err), "serving on %s:%u", server.cfg.bind,
             server.cfg.port != 0 ? server.cfg.port : server.cfg.tls_port);
    notify_ready(err);

    event_base_dispatch(base);
    notify_stopping();
    cluster_teardown(&server);
    net_teardown();
    repl_teardown(&server);
    /* SHUTDOWN saved already (or was told not to); a signal saves now. */
    status = persist_shutdown(server.persist, !server.shutdown_asap) ? 1 : 0;
    log_info("bye");

out:
    cluster_teardown(&server);
    repl_teardown(&server);
    metrics_teardown();
    tls_teardown();
    replay_close(&server);
    if (cron)
        event_free(cron);
    if (expire_ev)
        event_free(expire_ev);
    if (sigint)
        event_free(sigint);
    if (sigterm)
        event_free(sigterm);
    for (int i = 0; i < 3; i++)
        if (soft[i])
            event_free(soft[i]);
    if (base)
        event_base_free(base);
    db_deinit(&server.db);
    acl_destroy(server.acl);
    badges_teardown(&server);
    pubsub_teardown(&server.pubsub);
    slowlog_deinit(&server.slowlog);
    {
        char lerr[16];
        log_open("", lerr, sizeof(lerr)); /* closes the logfile */
    }
    return status;
}
