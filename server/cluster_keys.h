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
 * 7/8); the executor adds the keys of every command that changed state
 * (cluster_keys_note), and a read (ckeys_list) checks each id against the
 * stores (cluster_key_held), dropping the ids that no longer hold
 * anything (USER.DEL, expiry, a user moved away, FLUSHALL). So deletions
 * need no hook, and a missed deletion costs one probe later, never a
 * wrong answer. The whole index is built from the stores once after
 * loading, and again after a replica adopts its primary's snapshot.
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

/* An empty index, or NULL on no memory; destroy accepts NULL. */
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
/* Empties it and marks it to be built again before its next read. */
void ckeys_invalidate(struct ckeys *k);

/* Whether this node holds state under id (see above): the stores' own
 * answer, O(1) per family (RCPT: one group lookup). */
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

/* Builds the index from the stores (after loading). 0, or -1 on no memory
 * (then it stays marked, to be tried again at its next read). */
int cluster_keys_rebuild(struct server *srv);

#endif
