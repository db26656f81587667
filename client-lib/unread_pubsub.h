/*
 * unread_pubsub.h - libunread's subscriptions, shared by both faces
 * (unread.h, "Pub/sub"; docs/CLIENT.md). The handle's subscriptions are
 * its own state, kept in a table of channels (hashed) and patterns, each
 * with its callback: the library keeps the servers in line with it, and
 * makes every subscription again on a connection that replaces a lost
 * one.
 *
 * Where a subscription lives in a cluster: `badge:<uid>` (canonical
 * decimal) on the uid's server, any other channel on the first server (the
 * global writes run on every server and each publishes on its own channel:
 * one server's copy is enough), a pattern on every server; a pattern
 * message is delivered from the channel's own server only, so each
 * message arrives once. The synchronous handle subscribes on a connection
 * of its own per server (its calls are never mixed with pushes); the
 * asynchronous one on its request connections. Internal; not installed.
 */
#ifndef UNREAD_PUBSUB_H
#define UNREAD_PUBSUB_H

#include <stdbool.h>
#include <stdint.h>

#include "unread.h"
#include "unread_conn.h"

struct uc_core;
struct unread_async;

/* Channels (or patterns) per (P)SUBSCRIBE frame when subscribing again:
 * within the smallest max-args a server accepts. */
#define UC_PS_CHUNK 8

/* The server a channel's messages come from. */
uint32_t uc_ps_home(const struct uc_core *k, const char *ch, size_t len);

/* Whether server s carries a subscription (it must be kept connected). */
bool uc_ps_wants(const struct uc_core *k, uint32_t s);

/* Calls send once per frame that makes every subscription server s
 * carries: (P)SUBSCRIBE with at most UC_PS_CHUNK names. Stops at the
 * first non-zero return and returns it; 0 when all were sent. */
int uc_ps_frames(struct uc_core *k, uint32_t s,
                 int (*send)(void *ctx, uint16_t op, unsigned argc,
                             const struct unread_arg *argv),
                 void *ctx);

/* The push frame body[0..len) from server s: a message of a subscription
 * goes to its callback (handle: the sync or async handle owning k), any
 * other push is ignored. true when a callback ran. */
bool uc_ps_dispatch(struct uc_core *k, void *handle, uint32_t s,
                    const char *body, uint32_t len);

/* Frees k's pub/sub state (from uc_core_deinit). */
void uc_ps_free(struct uc_core *k);

/* The asynchronous face (unread_async.c): queues a pub/sub request for
 * server s, its answer checked and dropped. A server that is down is
 * connected instead, which makes every subscription it carries (the new
 * one too). 0, or why the server cannot take it now (it is tried again
 * later while it carries a subscription). */
int ua_ps_send(struct unread_async *a, uint32_t s, uint16_t op, unsigned argc,
               const struct unread_arg *argv);

#endif
