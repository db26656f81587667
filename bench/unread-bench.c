/*
 * unread-bench.c - the load generator of unreadd, and of Redis doing the
 * same work, for side-by-side figures (bench/compare.py, `make bench`).
 *
 *   unread-bench [-t binary|text|redis] [-w WORKLOAD] [-c CONNS] [-P DEPTH]
 *                [-d SECONDS | -n REQUESTS | --load] [-r KEYS] [--zipf S]
 *                [--cluster host:port,...] [--json] ...   (--help for all)
 *
 * Set-up, run, check, report: the Redis script of the workload is loaded
 * (SCRIPT LOAD, or FUNCTION LOAD for FCALL); with --preload every key gets
 * the workload's load step first; the run itself is bench_run.c; --audit
 * then asks unreadd (through libunread, each shard of a --cluster) to
 * recompute every total. Error
 * replies are counted during the run and make the exit status 2, so a
 * benchmark that measured errors instead of work cannot pass silently.
 * With --tls every connection (set-up, run, audit) is TLS (bench_tls.h);
 * --handshakes measures connects + full handshakes per second instead of
 * a workload (bench/tls.py).
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench_run.h"
#include "bench_tls.h"
#include "slot.h"
#include "unread.h"

#define EXIT_BAD_REPLIES 2
#define PRELOAD_DEPTH 64 /* pipeline depth of --preload */
#define SETUP_TIMEOUT_MS 10000

struct opts {
    struct bench_plan plan;
    const char *workload;
    bool port_set;
    bool preload;
    bool audit;
    bool json;
    bool slots; /* --slots */
    bool tls;   /* --tls */
    const char *cacert, *cert, *key;
    bool handshakes; /* --handshakes */
};

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: unread-bench [options]\n"
        "  -t, --target T       binary: unreadd, binary protocol (default)\n"
        "                       text: unreadd over RESP; redis: Redis\n"
        "  -h, --host HOST      server address (127.0.0.1)\n"
        "  -p, --port PORT      server port (7460; 6379 for redis)\n"
        "      --cluster LIST   unreadd shards host:port,host:port,...:\n"
        "                       requests placed as libunread places them\n"
        "      --slots          --cluster LIST is a cluster-mode cluster's\n"
        "                       masters: requests go by slot (CLUSTER SLOTS)\n"
        "      --tls            every connection over TLS (full handshakes)\n"
        "      --cacert FILE    verify the server against this CA (PEM)\n"
        "      --cert FILE      --key FILE: this client's certificate\n"
        "      --server-pid PID the server's CPU time in the measured window\n"
        "                       too (/proc/PID/stat; the same machine)\n"
        "      --handshakes     instead of a workload: -T threads, each\n"
        "                       connect + handshake + PING + close in a\n"
        "                       loop for -d seconds (plaintext without --tls)\n"
        "  -w, --workload NAME  what to send (cnt-get); see --list\n"
        "  -c, --connections N  connections (50)\n"
        "  -P, --pipeline N     requests in flight per connection (1)\n"
        "  -T, --threads N      client threads (one per core)\n"
        "  -d, --duration S     measured seconds (5)\n"
        "      --warmup S       seconds run first, not measured (0)\n"
        "  -n, --requests N     N operations instead of a duration\n"
        "  -r, --keys N         key space: ids 0..N-1 (100000)\n"
        "      --zipf S         Zipf keys with exponent S (default uniform)\n"
        "      --types N        counter types in play, 1..%d (2)\n"
        "      --per-user N     DOT, FEED: entries (keys) per user, 1..%d\n"
        "                       (DOT 4, FEED 200)\n"
        "      --preload        the load step of every key, then the run\n"
        "      --load           only the load step of every key\n"
        "      --audit          then DEBUG AUDIT on unreadd (must be 0)\n"
        "      --seed N         random seed (1)\n"
        "  -j, --json           one JSON object on stdout\n"
        "      --list           the workloads and their Redis equivalents\n"
        "Exit status 1 on a usage or connection failure, 2 when a reply\n"
        "was an error or of the wrong kind or the audit found mismatches.\n",
        BENCH_TYPES_MAX, BENCH_PER_USER_MAX);
}

static bool parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    uint64_t v;

    if (!ur_parse_u64(s, strlen(s), &v) || v < min || v > max)
        return false;
    *out = v;
    return true;
}

/* A non-negative decimal of at most a day (seconds, or an exponent). */
static bool parse_real(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);

    if (end == s || *end != '\0' || !(v >= 0) || v > 86400)
        return false;
    *out = v;
    return true;
}

enum {
    OPT_WARMUP = 256,
    OPT_ZIPF,
    OPT_TYPES,
    OPT_PER_USER,
    OPT_PRELOAD,
    OPT_LOAD,
    OPT_AUDIT,
    OPT_SEED,
    OPT_LIST,
    OPT_CLUSTER,
    OPT_SLOTS,
    OPT_TLS,
    OPT_CACERT,
    OPT_CERT,
    OPT_KEY,
    OPT_HANDSHAKES,
    OPT_SERVER_PID,
    OPT_HELP
};

static const struct option longopts[] = {
    {"target", required_argument, NULL, 't'},
    {"host", required_argument, NULL, 'h'},
    {"port", required_argument, NULL, 'p'},
    {"cluster", required_argument, NULL, OPT_CLUSTER},
    {"slots", no_argument, NULL, OPT_SLOTS},
    {"tls", no_argument, NULL, OPT_TLS},
    {"cacert", required_argument, NULL, OPT_CACERT},
    {"cert", required_argument, NULL, OPT_CERT},
    {"key", required_argument, NULL, OPT_KEY},
    {"handshakes", no_argument, NULL, OPT_HANDSHAKES},
    {"server-pid", required_argument, NULL, OPT_SERVER_PID},
    {"workload", required_argument, NULL, 'w'},
    {"connections", required_argument, NULL, 'c'},
    {"pipeline", required_argument, NULL, 'P'},
    {"threads", required_argument, NULL, 'T'},
    {"duration", required_argument, NULL, 'd'},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"requests", required_argument, NULL, 'n'},
    {"keys", required_argument, NULL, 'r'},
    {"zipf", required_argument, NULL, OPT_ZIPF},
    {"types", required_argument, NULL, OPT_TYPES},
    {"per-user", required_argument, NULL, OPT_PER_USER},
    {"preload", no_argument, NULL, OPT_PRELOAD},
    {"load", no_argument, NULL, OPT_LOAD},
    {"audit", no_argument, NULL, OPT_AUDIT},
    {"seed", required_argument, NULL, OPT_SEED},
    {"json", no_argument, NULL, 'j'},
    {"list", no_argument, NULL, OPT_LIST},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

/* 1..max into *out. */
static bool parse_unsigned(const char *s, unsigned max, unsigned *out)
{
    uint64_t v;

    if (!parse_u64(s, 1, max, &v))
        return false;
    *out = (unsigned)v;
    return true;
}

/* One option into o; false when its value is bad. */
static bool set_opt(struct opts *o, int ch, const char *arg, uint64_t *keys,
                    double *zipf)
{
    struct bench_plan *p = &o->plan;
    unsigned port;

    switch (ch) {
    case 't':
        return bench_target_parse(arg, &p->target) == 0;
    case 'h':
        p->host = arg;
        return true;
    case 'p':
        o->port_set = true;
        if (!parse_unsigned(arg, 65535, &port))
            return false;
        p->port = (uint16_t)port;
        return true;
    case OPT_CLUSTER:
        p->cluster = arg;
        return true;
    case OPT_SLOTS:
        o->slots = true;
        return true;
    case OPT_TLS:
        o->tls = true;
        return true;
    case OPT_CACERT:
        o->cacert = arg;
        return true;
    case OPT_CERT:
        o->cert = arg;
        return true;
    case OPT_KEY:
        o->key = arg;
        return true;
    case OPT_HANDSHAKES:
        o->handshakes = true;
        return true;
    case OPT_SERVER_PID: {
        unsigned pid;

        if (!parse_unsigned(arg, 1u << 30, &pid))
            return false;
        p->server_pid = (int)pid;
        return true;
    }
    case 'w':
        o->workload = arg;
        return true;
    case 'c':
        return parse_unsigned(arg, 10000, &p->conns);
    case 'P':
        return parse_unsigned(arg, 100000, &p->pipeline);
    case 'T':
        return parse_unsigned(arg, 1024, &p->threads);
    case 'd':
        return parse_real(arg, &p->seconds) && p->seconds > 0;
    case OPT_WARMUP:
        return parse_real(arg, &p->warmup);
    case 'n':
        return parse_u64(arg, 1, UINT64_MAX, &p->requests);
    case 'r':
        return parse_u64(arg, 1, UINT64_MAX, keys);
    case OPT_ZIPF:
        return parse_real(arg, zipf) && *zipf > 0 && *zipf <= 10;
    case OPT_TYPES:
        return parse_unsigned(arg, BENCH_TYPES_MAX, &p->ctx.types);
    case OPT_PER_USER:
        return parse_unsigned(arg, BENCH_PER_USER_MAX, &p->ctx.per_user);
    case OPT_SEED:
        return parse_u64(arg, 0, UINT64_MAX, &p->seed);
    case OPT_PRELOAD:
        o->preload = true;
        return true;
    case OPT_LOAD:
        p->load = true;
        return true;
    case OPT_AUDIT:
        o->audit = true;
        return true;
    case 'j':
        o->json = true;
        return true;
    }
    return false;
}

/* Fills o from the command line; exits on --help, --list and bad usage. */
static void parse_args(struct opts *o, int argc, char **argv)
{
    struct bench_plan *p = &o->plan;
    uint64_t keys = 100000;
    double zipf = 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int ch;

    memset(o, 0, sizeof(*o));
    p->target = BENCH_BINARY;
    p->host = "127.0.0.1";
    p->port = UNREAD_DEFAULT_PORT;
    p->conns = 50;
    p->pipeline = 1;
    p->seconds = 5;
    p->seed = 1;
    p->ctx.types = 2;
    o->workload = "cnt-get";
    while ((ch = getopt_long(argc, argv, "t:h:p:w:c:P:T:d:n:r:j", longopts,
                             NULL)) != -1) {
        if (ch == OPT_HELP || ch == OPT_LIST) {
            if (ch == OPT_HELP)
                usage(stdout);
            else
                bench_workload_list(stdout);
            exit(0);
        }
        if (ch == '?' || !set_opt(o, ch, optarg, &keys, &zipf)) {
            if (ch != '?')
                fprintf(stderr, "unread-bench: bad value '%s' for -%c\n",
                        optarg, ch < 256 ? ch : '-');
            usage(stderr);
            exit(1);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "unread-bench: unexpected argument '%s'\n",
                argv[optind]);
        exit(1);
    }
    p->wl = bench_workload_find(o->workload);
    if (p->wl == NULL) {
        fprintf(stderr, "unread-bench: no workload '%s' (--list)\n",
                o->workload);
        exit(1);
    }
    if (p->target == BENCH_REDIS && p->cluster != NULL) {
        fprintf(stderr, "unread-bench: --cluster drives unreadd shards, "
                        "not Redis\n");
        exit(1);
    }
    if ((o->cacert || o->cert || o->key) && !o->tls) {
        fprintf(stderr, "unread-bench: --cacert, --cert, --key need --tls\n");
        exit(1);
    }
    if ((o->cert == NULL) != (o->key == NULL)) {
        fprintf(stderr, "unread-bench: --cert and --key go together\n");
        exit(1);
    }
    if (o->tls && p->cluster != NULL) {
        fprintf(stderr, "unread-bench: --tls is for one server, not "
                        "--cluster\n");
        exit(1);
    }
    if (p->target == BENCH_REDIS && !o->port_set)
        p->port = 6379;
    if (p->threads == 0)
        p->threads = cores > 0 ? (unsigned)cores : 1;
    if (p->threads > p->conns)
        p->threads = p->conns;
    p->ctx.dialect = bench_dialect_of(p->target);
    bench_keys_init(&p->keys, keys, zipf);
}

/*
 * Redis: loads the workload's script. A function library ("#!lua
 * name=...", its functions run with FCALL) goes in with FUNCTION LOAD
 * REPLACE, so that a Redis holding an older copy takes this one; a plain
 * script with SCRIPT LOAD, its SHA kept for EVALSHA.
 */
static int load_script(struct bench_plan *p, char *err, size_t errlen)
{
    struct bench_cmd c;
    char library_name[64];
    bool library;
    SSL *ssl = NULL;
    int fd, rc;

    if (p->target != BENCH_REDIS || p->wl->script == NULL)
        return 0;
    fd = bench_dial(p->host, p->port, err, errlen);
    if (fd < 0)
        return -1;
    if (bench_tls_on() && (ssl = bench_tls_connect(fd, err, errlen)) == NULL) {
        close(fd);
        return -1;
    }
    library = strncmp(p->wl->script, "#!lua", 5) == 0;
    bench_cmd_redis(&c, library ? "FUNCTION" : "SCRIPT", BX_BULK);
    bench_arg_str(&c, "LOAD");
    if (library)
        bench_arg_str(&c, "REPLACE");
    bench_arg_str(&c, p->wl->script);
    if (library)
        rc = bench_call(fd, ssl, p->target, &c, SETUP_TIMEOUT_MS, library_name,
                        sizeof(library_name), err, errlen);
    else
        rc = bench_call(fd, ssl, p->target, &c, SETUP_TIMEOUT_MS, p->ctx.sha,
                        sizeof(p->ctx.sha), err, errlen);
    bench_tls_close(ssl);
    close(fd);
    if (rc == 0 && !library && strlen(p->ctx.sha) != BENCH_SHA_LEN) {
        snprintf(err, errlen, "SCRIPT LOAD answered '%s'", p->ctx.sha);
        rc = -1;
    }
    return rc;
}

/* The load step for every key, deep-pipelined; its errors are fatal. */
static int preload(const struct bench_plan *run, struct bench_result *res,
                   char *err, size_t errlen)
{
    struct bench_plan p = *run;

    p.load = true;
    p.requests = 0;
    if (p.pipeline < PRELOAD_DEPTH)
        p.pipeline = PRELOAD_DEPTH;
    if (bench_run(&p, res, err, errlen) != 0)
        return -1;
    if (res->errors > 0) {
        snprintf(err, errlen, "preload: %" PRIu64 " error replies; first: %s",
                 res->errors, res->first_error);
        return -1;
    }
    return 0;
}

/* DEBUG AUDIT of server i of u: its mismatches added to *bad. */
static int audit_shard(struct unread *u, size_t i, uint64_t *bad, char *err,
                       size_t errlen)
{
    struct unread_arg a = unread_arg_str("AUDIT", 5);
    struct unread_reply *r = NULL;
    int rc = -1;

    if (unread_command_shard(u, i, "DEBUG", 0, 1, &a, &r) != 0)
        snprintf(err, errlen, "DEBUG AUDIT of %s: %s", unread_shard_name(u, i),
                 unread_errstr(u));
    else if (r->kind != UNREAD_REPLY_INT)
        snprintf(err, errlen, "DEBUG AUDIT: not an integer reply");
    else
        rc = 0;
    if (rc == 0)
        *bad += r->integer;
    unread_reply_free(r);
    return rc;
}

/* DEBUG AUDIT through libunread (whatever the target's protocol) of the
 * server, or of every shard: the number of mismatches into *bad. */
static int audit(const struct opts *b, uint64_t *bad, char *err, size_t errlen)
{
    const struct bench_plan *p = &b->plan;
    struct unread_opts *o;
    struct unread *u;
    char name[300];
    int rc = 0;

    if (b->tls) { /* the one server, through libunread's TLS */
        o = unread_opts_new();
        snprintf(name, sizeof(name), "%s:%u", p->host, p->port);
        if (o == NULL || unread_opts_set_tls(o, true) != 0 ||
            unread_opts_set_tls_ca(o, b->cacert, NULL) != 0 ||
            unread_opts_set_tls_verify(o, b->cacert != NULL) != 0 ||
            (b->cert != NULL &&
             unread_opts_set_tls_cert(o, b->cert, b->key) != 0)) {
            snprintf(err, errlen, "libunread TLS options refused");
            unread_opts_free(o);
            return -1;
        }
        unread_opts_set_timeouts(o, SETUP_TIMEOUT_MS, SETUP_TIMEOUT_MS, 1000);
        u = unread_connect_cluster(name, o, err, errlen);
        unread_opts_free(o);
    } else if (p->cluster != NULL) {
        o = unread_opts_new();
        if (o != NULL)
            unread_opts_set_timeouts(o, SETUP_TIMEOUT_MS, SETUP_TIMEOUT_MS,
                                     1000);
        u = o != NULL ? unread_connect_cluster(p->cluster, o, err, errlen)
                      : NULL;
        unread_opts_free(o);
    } else
        u = unread_connect(p->host, p->port, SETUP_TIMEOUT_MS, err, errlen);
    if (u == NULL)
        return -1;
    *bad = 0;
    for (size_t i = 0; i < unread_shards(u) && rc == 0; i++)
        rc = audit_shard(u, i, bad, err, errlen);
    unread_close(u);
    return rc;
}

static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;

        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

static double us(uint64_t ns)
{
    return (double)ns / 1e3;
}

static void report_json(const struct opts *o, const struct bench_result *r,
                        long cores, int64_t audit_bad)
{
    const struct bench_plan *p = &o->plan;
    const struct bench_hist *h = &r->hist;

    printf("{\"workload\":");
    json_str(p->wl->name);
    printf(",\"target\":\"%s\",\"host\":", bench_target_name(p->target));
    json_str(p->host);
    printf(",\"cluster\":");
    if (p->cluster != NULL)
        json_str(p->cluster);
    else
        printf("null");
    printf(",\"port\":%u,\"connections\":%u,\"pipeline\":%u,\"threads\":%u,"
           "\"keys\":%" PRIu64 ",\"zipf\":%g,\"types\":%u,\"per_user\":%u,"
           "\"mode\":\"%s\","
           "\"seconds\":%.3f,\"ops\":%" PRIu64 ",\"ops_per_sec\":%.1f,"
           "\"errors\":%" PRIu64 ",\"first_error\":",
           p->port, p->conns, p->pipeline, p->threads, p->keys.n,
           p->keys.zipf ? p->keys.s : 0.0, p->ctx.types, p->ctx.per_user,
           p->load       ? "load"
           : p->requests ? "requests"
                         : "duration",
           r->wall_s, r->ops, r->wall_s > 0 ? (double)r->ops / r->wall_s : 0.0,
           r->errors);
    if (r->errors > 0)
        json_str(r->first_error);
    else
        printf("null");
    printf(",\"latency_us\":{\"p50\":%.1f,\"p99\":%.1f,\"p999\":%.1f,"
           "\"max\":%.1f,\"mean\":%.1f},\"client_cpu_s\":%.3f,"
           "\"client_cpu_cores\":%.3f,\"client_cpu_share\":%.4f,"
           "\"cores\":%ld,\"server_cpu_s\":%.4f,\"audit_mismatches\":",
           us(bench_hist_quantile(h, 0.50)), us(bench_hist_quantile(h, 0.99)),
           us(bench_hist_quantile(h, 0.999)), us(h->max),
           h->count ? us(h->sum / h->count) : 0.0, r->cpu_s,
           r->wall_s > 0 ? r->cpu_s / r->wall_s : 0.0,
           r->wall_s > 0 ? r->cpu_s / (r->wall_s * (double)cores) : 0.0, cores,
           r->server_cpu_s);
    if (audit_bad >= 0)
        printf("%" PRId64, audit_bad);
    else
        printf("null");
    printf(",\"tls\":");
    if (o->tls)
        json_str(bench_tls_negotiated());
    else
        printf("null");
    printf("}\n");
}

static void report_text(const struct opts *o, const struct bench_result *r,
                        long cores, int64_t audit_bad)
{
    const struct bench_plan *p = &o->plan;
    const struct bench_hist *h = &r->hist;
    double busy = r->wall_s > 0 ? r->cpu_s / r->wall_s : 0.0;

    printf("%s on %s ", p->wl->name, bench_target_name(p->target));
    if (p->cluster != NULL)
        printf("cluster %s", p->cluster);
    else
        printf("%s:%u", p->host, p->port);
    printf(": %u connections x pipeline %u, %u threads, %" PRIu64 " keys %s",
           p->conns, p->pipeline, p->threads, p->keys.n,
           p->keys.zipf ? "zipf" : "uniform");
    if (p->keys.zipf)
        printf(" %g", p->keys.s);
    if (p->load)
        printf(", load step of every key\n");
    else if (p->requests)
        printf(", %" PRIu64 " operations\n", p->requests);
    else
        printf(", %.1f s (+%.1f s warm-up)\n", p->seconds, p->warmup);
    printf("  throughput  %.0f requests/s (%" PRIu64 " in %.2f s)\n",
           r->wall_s > 0 ? (double)r->ops / r->wall_s : 0.0, r->ops, r->wall_s);
    printf("  latency us  p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f  mean "
           "%.1f\n",
           us(bench_hist_quantile(h, 0.50)), us(bench_hist_quantile(h, 0.99)),
           us(bench_hist_quantile(h, 0.999)), us(h->max),
           h->count ? us(h->sum / h->count) : 0.0);
    printf("  client cpu  %.2f s: %.2f cores busy, %.1f%% of %ld\n", r->cpu_s,
           busy, 100.0 * busy / (double)cores, cores);
    printf("  errors      %" PRIu64 "%s%s\n", r->errors,
           r->errors ? ", first: " : "", r->errors ? r->first_error : "");
    if (audit_bad >= 0)
        printf("  audit       %" PRId64 " mismatches\n", audit_bad);
}

/*
 * --slots: CLUSTER SLOTS of the first --cluster server, as the index in
 * the --cluster list of each slot's master; every slot must be served by
 * one of the listed servers. 0, or -1 with a message.
 */
static int load_slots(struct bench_plan *p, char *err, size_t errlen)
{
    static uint16_t map[UR_SLOTS];
    struct unread_arg a = {UNREAD_ARG_STR, 0, "SLOTS", 5};
    struct unread_reply *r = NULL;
    struct unread_opts *o = unread_opts_new();
    struct unread *u = NULL;
    bool seen[UR_SLOTS] = {false};
    int rc = -1;

    if (o == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    unread_opts_set_timeouts(o, SETUP_TIMEOUT_MS, SETUP_TIMEOUT_MS, 1000);
    u = unread_connect_cluster(p->cluster, o, err, errlen);
    unread_opts_free(o);
    if (u == NULL)
        return -1;
    if (unread_command_shard(u, 0, "CLUSTER", 0, 1, &a, &r) != 0 ||
        r->kind != UNREAD_REPLY_ARRAY) {
        snprintf(err, errlen, "--slots: CLUSTER SLOTS of %s failed: %s",
                 unread_shard_name(u, 0), unread_errstr(u));
        goto out;
    }
    for (size_t i = 0; i < r->n; i++) {
        const struct unread_reply *e = &r->elem[i], *m;
        char name[300];
        size_t k;

        if (e->kind != UNREAD_REPLY_ARRAY || e->n < 3 ||
            e->elem[2].kind != UNREAD_REPLY_ARRAY || e->elem[2].n < 2) {
            snprintf(err, errlen, "--slots: a malformed CLUSTER SLOTS reply");
            goto out;
        }
        m = &e->elem[2];
        snprintf(name, sizeof(name), "%.*s:%llu", (int)m->elem[0].len,
                 m->elem[0].str, (unsigned long long)m->elem[1].integer);
        for (k = 0; k < unread_shards(u); k++)
            if (strcmp(unread_shard_name(u, k), name) == 0)
                break;
        if (k == unread_shards(u)) {
            snprintf(err, errlen,
                     "--slots: slots %llu-%llu are served by %.64s, not in "
                     "--cluster",
                     (unsigned long long)e->elem[0].integer,
                     (unsigned long long)e->elem[1].integer, name);
            goto out;
        }
        for (uint64_t s = e->elem[0].integer;
             s <= e->elem[1].integer && s < UR_SLOTS; s++) {
            map[s] = (uint16_t)k;
            seen[s] = true;
        }
    }
    for (unsigned s = 0; s < UR_SLOTS; s++)
        if (!seen[s]) {
            snprintf(err, errlen, "--slots: slot %u has no node", s);
            goto out;
        }
    p->slot_map = map;
    rc = 0;
out:
    unread_reply_free(r);
    unread_close(u);
    return rc;
}

/* --handshakes: its figures, as one JSON object with --json. */
static int handshakes(const struct opts *o, long cores)
{
    const struct bench_plan *p = &o->plan;
    uint64_t done = 0;
    double wall = 0, cpu0 = 0, cpu1;
    struct rusage ru;
    char err[256];
    int rc;

    getrusage(RUSAGE_SELF, &ru);
    cpu0 = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    rc = bench_tls_handshakes(p->host, p->port, p->threads, p->seconds, &done,
                              &wall, err, sizeof(err));
    getrusage(RUSAGE_SELF, &ru);
    cpu1 = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    if (rc != 0) {
        fprintf(stderr, "unread-bench: handshakes: %s\n", err);
        return 1;
    }
    if (o->json)
        printf("{\"mode\":\"handshakes\",\"tls\":%s,\"port\":%u,"
               "\"threads\":%u,\"handshakes\":%" PRIu64 ",\"seconds\":%.3f,"
               "\"per_sec\":%.1f,\"client_cpu_cores\":%.3f,\"cores\":%ld}\n",
               o->tls ? "true" : "false", p->port, p->threads, done, wall,
               wall > 0 ? (double)done / wall : 0.0,
               wall > 0 ? (cpu1 - cpu0) / wall : 0.0, cores);
    else
        printf("%s connects + PING on %s:%u, %u threads: %.0f/s (%" PRIu64
               " in %.2f s), client %.2f cores\n",
               o->tls ? "TLS handshakes" : "plaintext", p->host, p->port,
               p->threads, wall > 0 ? (double)done / wall : 0.0, done, wall,
               wall > 0 ? (cpu1 - cpu0) / wall : 0.0);
    return 0;
}

int main(int argc, char **argv)
{
    static struct bench_result res; /* holds a 30 KiB histogram */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    struct opts o;
    char err[256];
    int64_t audit_bad = -1;
    uint64_t bad;

    parse_args(&o, argc, argv);
    if (cores < 1)
        cores = 1;
    if (o.slots && (o.plan.cluster == NULL ||
                    load_slots(&o.plan, err, sizeof(err)) != 0)) {
        if (o.plan.cluster == NULL)
            snprintf(err, sizeof(err), "--slots needs --cluster");
        goto fail;
    }
    if (o.tls &&
        bench_tls_setup(o.cacert, o.cert, o.key, err, sizeof(err)) != 0)
        goto fail;
    if (o.handshakes)
        return handshakes(&o, cores);
    if (load_script(&o.plan, err, sizeof(err)) != 0)
        goto fail;
    if (o.preload && !o.plan.load && preload(&o.plan, &res, err, sizeof(err)))
        goto fail;
    if (bench_run(&o.plan, &res, err, sizeof(err)) != 0)
        goto fail;
    if (o.audit && o.plan.target != BENCH_REDIS) {
        if (audit(&o, &bad, err, sizeof(err)) != 0)
            goto fail;
        audit_bad = (int64_t)bad;
    }
    if (o.json)
        report_json(&o, &res, cores, audit_bad);
    else
        report_text(&o, &res, cores, audit_bad);
    if (res.errors > 0)
        fprintf(stderr,
                "unread-bench: FAILED: %" PRIu64 " bad replies, first: %s\n",
                res.errors, res.first_error);
    if (audit_bad > 0)
        fprintf(stderr,
                "unread-bench: FAILED: DEBUG AUDIT found %" PRId64
                " mismatches\n",
                audit_bad);
    if (res.errors > 0 || audit_bad > 0)
        return EXIT_BAD_REPLIES;
    return 0;

fail:
    fprintf(stderr, "unread-bench: %s\n", err);
    return 1;
}
