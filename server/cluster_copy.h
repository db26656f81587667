/*
 * cluster_copy.h - global objects in cluster mode (docs/OPERATIONS.md
 * "Cluster", "What a global write promises").
 *
 * A BC channel's head, a GRP group's head (its kept timestamps and
 * recalls), a DOT push time and a FEED author's count are read by the
 * users of every shard, so every node holds them all. The object's id is
 * its key: the primary owning that slot runs the write (BC.PUBLISH,
 * GRP.POST, GRP.RECALL, DOT.PUSH, FEED.POST, FEED.UNPOST), then queues a
 * copy of the new value on its link to every other primary
 * (cluster_link.h), which applies it as the command GLOBALCOPY: through
 * the executor, so it is journaled, replicated and snapshotted as any
 * write. USER.DEL is copied too (RCPT keeps users in groups of every
 * shard).
 *
 * A copy carries its version, the owner's config epoch and its stream
 * offset at the write; a receiver keeps, per slot, the version of the
 * last copy it applied and ignores an older one, and takes a copy only
 * from the node it believes owns the slot. Heads, push times and recalls
 * only grow, so a copy late or twice changes nothing; FEED's count is set,
 * and the version orders it. Copies a link could not deliver (its queue
 * over cluster-link-sendbuf-limit, a restart of the owner, a node that
 * became a primary) are replaced by a full sync: every object of the
 * owner's slots sent again, a chunk per cron tick.
 */
#ifndef UR_CLUSTER_COPY_H
#define UR_CLUSTER_COPY_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "exec.h"

/* After op ran here with argv and succeeded (exec.c, not while loading):
 * a global write on a slot this node owns is copied to every other
 * primary. */
void ccopy_written(struct server *srv, const struct ur_op *op, uint32_t argc,
                   const struct ur_arg *argv);

/* GLOBALCOPY (cmd_cluster.c): applies the copy in x, or answers why not. */
void ccopy_apply(struct exec_ctx *x);

/* Full syncs: of everything this node owns to every other primary, or to
 * one node. */
void ccopy_sync_all(struct cluster *c);
void ccopy_sync_to(struct cluster *c, uint32_t node);

/* Cron: the running full syncs queue their next chunk. */
void ccopy_cron(struct cluster *c);
/* A link goes: its full sync, if any, stops. */
void ccopy_link_gone(struct cluster *c, struct cluster_link *l);
void ccopy_teardown(struct cluster *c);

#endif
