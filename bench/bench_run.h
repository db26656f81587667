/*
 * bench_run.h - the load engine of unread-bench: many non-blocking
 * connections per thread, each kept `pipeline` requests deep, driven by
 * epoll. One thread per core is enough to drive 50 connections at depth 16
 * without the client becoming the bottleneck unnoticed: the result carries
 * the process's own CPU time, so the reader can tell.
 *
 * Closed loop: every reply received lets its connection send one more
 * request (replies read together are answered by one write). A request's
 * latency is from the write that carried it to the read that brought its
 * reply; client-side queueing is therefore included, as in redis-benchmark.
 *
 * Against a cluster (--cluster) a connection is one socket per shard and
 * keeps `pipeline` requests in flight over all of them: each request goes
 * where libunread would send it (unread_shard_of of its uid or gid; a
 * global write to every shard, counted once per shard; admin to the first),
 * so a deployment's clients are modelled with the library's placement.
 */
#ifndef BENCH_RUN_H
#define BENCH_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench_hist.h"
#include "bench_keys.h"
#include "bench_wire.h"
#include "bench_workload.h"

#define BENCH_ERR_TEXT 160

struct bench_plan {
    enum bench_target target;
    const char *host;
    uint16_t port;
    /* --cluster "host:port,...": unreadd shards placed by libunread's ring
     * (NULL: the one server host:port). Each connection is then one socket
     * per shard, its requests routed as a cluster handle routes them. */
    const char *cluster;
    /* --slots: the --cluster servers are a Redis-Cluster-mode cluster's
     * masters, slot_map[slot] the index (in the --cluster list) of the one
     * serving each slot (CLUSTER SLOTS): requests go by their key's slot,
     * a global write once, to its object's slot. NULL: the ring. */
    const uint16_t *slot_map;
    unsigned conns;    /* connections, spread over threads round-robin */
    unsigned threads;  /* 1..conns */
    unsigned pipeline; /* requests in flight per connection */
    /* Exactly one of three ways to end: */
    bool load;         /* the row's load step for keys 0..keys.n-1, once;
                          connection i takes the i-th of conns equal runs
                          of consecutive keys, in order */
    uint64_t requests; /* > 0: this many operations in total */
    double seconds;    /* else: measured for this long, after warmup */
    double warmup;     /* seconds run first and not measured */
    const struct bench_workload *wl;
    struct bench_ctx ctx;
    struct bench_keys keys;
    uint64_t seed; /* connection i draws from seed ^ i */
    /* --server-pid: a process on this machine (the server) whose CPU time
     * is sampled at the measured window's ends (0: none) */
    int server_pid;
};

struct bench_result {
    uint64_t ops;    /* replies received in the measured window */
    uint64_t errors; /* error replies and replies of the wrong kind, all run */
    char first_error[BENCH_ERR_TEXT]; /* the first one's text, or "" */
    double wall_s;                    /* the measured window */
    double cpu_s;           /* this process's user + system CPU in the window */
    double server_cpu_s;    /* server_pid's in the window (-1: not sampled) */
    struct bench_hist hist; /* latency in ns of the window's replies */
};

/*
 * Connects every connection, runs the plan and fills *res. Error replies
 * do not stop the run (they are counted); a connection failure, a reply
 * that cannot be parsed or answers the wrong request id, or a server that
 * stops answering (no reply for 10 s) do: -1 with a message in err.
 */
int bench_run(const struct bench_plan *p, struct bench_result *res, char *err,
              size_t errlen);

#endif
