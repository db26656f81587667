/*
 * cluster_keys.h - the ids each slot holds (CLUSTER GETKEYSINSLOT,
 * COUNTKEYSINSLOT, SETSLOT NODE's "still hold keys" check), so that a
 * move asks O(ids in the slot), not a walk of every user per call.
 *
 * An id is a key this node holds state under: a user with per-user state
 * in any family, an expiry record or an activity day, or an RCPT group
 * (the group's state has the group id as its key). Global objects (a BC
 * channel's head, a GRP group's head, a DOT push time, a FEED author's
 * count) are not listed: every primary holds them, and the copying duty
 * passes with the slot (cluster_copy.h).
 *
 * The index is a superset, made exact where it is read: each slot keeps
 * an open-addressing set of ids (8 bytes an id over a load of at most
 * 7/8: 14.4 bytes an id measured at 1M users, heads included); the
 * executor adds the keys of every command that changed state
 * (cluster_keys_note), and a read (cluster_keys_in_slot) checks each id
 * against the stores (cluster_key_held), dropping the ids that no longer
 * hold anything (USER.DEL, expiry, a user moved away, FLUSHALL). So
 * deletions need no hook, and a missed deletion costs one probe later,
 * never a wrong answer.
 *
 * It exists only while slots move: built from the stores (one walk of
 * every user) at its first read, kept up to date while it is read or a
 * slot is open here, and dropped CKEYS_IDLE_MS after the last read once
 * no slot is open (cluster_keys_cron). A node that moves no slot pays
 * neither its memory nor more of the executor's hook than a pointer
 * test; a replica's full sync drops it.
 */
#ifndef UR_CLUSTER_KEYS_H
#define UR_CLUSTER_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops.h"
#include "proto.h"

struct server;
struct ckeys;

#define CKEYS_IDLE_MS 60000u

/* An empty index, not built, or NULL on no memory; destroy accepts NULL. */
struct ckeys *ckeys_create(void);
void ckeys_destroy(struct ckeys *k);
/* Adds id under its slot (nothing when present): 0, or -1 on no memory
 * (nothing changed). */
int ckeys_add(struct ckeys *k, uint64_t id);
/* Removes id; false when it was not listed. */
bool ckeys_del(struct ckeys *k, uint64_t id);
bool ckeys_has(const struct ckeys *k, uint64_t id);
/* Ids listed (a superset of those held) and bytes the index holds. */
size_t ckeys_entries(const struct ckeys *k);
size_t ckeys_bytes(const struct ckeys *k);
/* Drops it: built again at its next read. */
void ckeys_invalidate(struct ckeys *k);
/* Whether it is built (ckeys_add, has and del do nothing while not). */
bool ckeys_built(const struct ckeys *k);

/* From the cluster's cron: drops an index no move has used for
 * CKEYS_IDLE_MS. */
void cluster_keys_cron(struct server *srv);

/* Whether this node holds state under id (see above): what a user record
 * would carry (persistence/userrec.h userrec_exists). */
bool cluster_key_held(const struct server *srv, uint64_t id);

/* The executor's hook after a command that changed state ran well: its
 * keys (ops.h ur_op_key_first) are listed, unless op is a global
 * object's write. A failed allocation marks the index for a rebuild. */
void cluster_keys_note(struct server *srv, const struct ur_op *op,
                       uint32_t argc, const struct ur_arg *argv);

/*
 * The ids held in slot, ascending, at most max of them, in *out
 * (malloc'ed, the caller frees; NULL when none) and *n; ids listed that
 * hold nothing are dropped on the way. With out NULL only counts. The
 * index is built first when marked. 0, or -1 on no memory.
 */
int cluster_keys_in_slot(struct server *srv, unsigned slot, uint64_t max,
                         uint64_t **out, size_t *n);

/* The data is replaced whole (a replica's full sync): the index is built
 * again before its next read. Nothing with cluster mode off. */
void cluster_keys_replaced(struct server *srv);

/* Builds the index from the stores. 0, or -1 on no memory (then it is
 * not built, to be tried again at its next read). */
int cluster_keys_rebuild(struct server *srv);

#endif
