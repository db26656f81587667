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

#include "check.h"
#include "config.h"
#include "hash.h"
#include "log.h"
#include "metrics.h"
#include "net.h"
#include "persist.h"
#include "replay.h"
#include "server.h"
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

static void on_cron(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what, (void)arg;
    server_turn_end(&server);
    persist_cron(server.persist);
}

static void on_expire(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what, (void)arg;
    server_turn_end(&server); /* its expiries see the time now */
    bool busy = users_expire_cycle(&server, EXPIRE_BUDGET_US);
    const struct timeval tv = {0, (busy ? EXPIRE_BUSY_MS : CRON_MS) * 1000};

    event_add(expire_ev, &tv);
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
    return 0;
}

int main(int argc, char **argv)
{
    char err[2048];
    struct event_base *base = NULL;
    struct event *sigint = NULL, *sigterm = NULL, *cron = NULL;
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
    if (config_from_args(&server.cfg, argc, argv, err, sizeof(err)) != 0) {
        fprintf(stderr, "unreadd: %s\n", err);
        return 1;
    }
    log_set_level((enum log_level)server.cfg.loglevel);
    signal(SIGPIPE, SIG_IGN);
    /* A file over RLIMIT_FSIZE fails its write (EFBIG) like a full disk. */
    signal(SIGXFSZ, SIG_IGN);

    if (ensure_dir(server.cfg.dir) != 0)
        return 1;
    /* A secret hash seed, so clients cannot choose ids that collide. */
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof(seed), 0) != (ssize_t)sizeof(seed))
        seed = server_now_ms() ^ ((uint64_t)getpid() << 32);
    hash_setup(seed);
    if (db_init(&server.db) != 0) {
        log_error("out of memory");
        return 1;
    }
    server.start_ms = server_now_ms();
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
    if (metrics_setup(&server, base, err, sizeof(err)) != 0 ||
        net_setup(&server, base, err, sizeof(err)) != 0) {
        log_error("%s", err);
        goto out;
    }
    log_info("unreadd %s ready on %s:%u (pid %d, dir %s)", UNREADD_VERSION,
             server.cfg.bind, server.cfg.port, (int)getpid(), server.cfg.dir);

    event_base_dispatch(base);
    net_teardown();
    /* SHUTDOWN saved already (or was told not to); a signal saves now. */
    status = persist_shutdown(server.persist, !server.shutdown_asap) ? 1 : 0;
    log_info("bye");

out:
    metrics_teardown();
    replay_close(&server);
    if (cron)
        event_free(cron);
    if (expire_ev)
        event_free(expire_ev);
    if (sigint)
        event_free(sigint);
    if (sigterm)
        event_free(sigterm);
    if (base)
        event_base_free(base);
    db_deinit(&server.db);
    return status;
}
