/*
 * badges.h - badge channels (docs/COMMANDS.md, "Badge channels"): with
 * notify-badges yes, a write that changes what a user sees publishes the
 * user's new badge on `badge:<uid>`, and a global write that moves a head
 * publishes it on its family's channel (`bc:<ch>`, `grp:<gid>`,
 * `dot:<id>`, `feed:<author>`), through pubsub.h, so that apps, gateways
 * and second devices learn of a change without polling.
 *
 * The executor probes around each write (badges_before, badges_after)
 * while notify-badges is yes and someone subscribes to something: it
 * knows the command's user (OPF_USER's first argument; USER.DEL and
 * USER.EXPIRE: every family) or its global object (the family's
 * cmd_<f>_badge_key, cmds.h). A probe reads the figures a subscriber sees
 * before and after the write - the family's badge part (capped, as
 * USER.BADGE) and the figure of the key written (CNT.GET of the type,
 * CONV.GET of the conversation, ...) or the object's head - and only a
 * change marks the user or the object dirty. Nothing is published from
 * inside a command: the turn's dirty set is published once, at the end of
 * the event-loop turn (badges_flush, from net.c's flush), so several
 * writes of one turn, a batch and a MULTI each make one message per user
 * or object, and no message goes out before the writer's reply has been
 * written or before the journal records of the writes it reports are
 * durable (persist_durable: written, and fsync'd with journal-fsync
 * always).
 *
 * Cost: while nobody subscribes to anything, the gate is a few loads and
 * the probes do not run; while someone does, a write pays one map lookup
 * (pubsub_watched: is anyone on badge:<uid>, or on a pattern that might
 * match badge:*?) and, only for a watched user or object, the reads of
 * the probe. Pattern matching stays off the write path: a pattern counts
 * as "might match" once, when it is subscribed.
 *
 * Message formats (payloads of pub/sub messages, ASCII, space-separated
 * name/value pairs):
 *   badge:<uid>     "badge <B> <family> <part> ... <family>.<key> <value> ..."
 *                   B: the badge over every family (USER.BADGE's first
 *                   element); then the parts that changed in the turn, in
 *                   families.def order, then the figures of the keys
 *                   written (at most BADGES_KEYS): cnt.<type> CNT.GET,
 *                   conv.<cid> CONV.GET, grp.<gid> GRP.UNREAD, bc.<ch> the
 *                   unread in the channel, dot.<dot> 1 shows / 0.
 *   <family>:<id>   "head <H>": BC's head, GRP's head seq, DOT's push
 *                   time, FEED's post count, after the turn.
 */
#ifndef UR_BADGES_H
#define UR_BADGES_H

#include <stdbool.h>
#include <stdint.h>

#include "db.h"
#include "ops.h"
#include "proto.h"
#include "pubsub.h"

struct server;

/* Keys listed per message at most; further keys changed in the same turn
 * are left out (their family's part is still there). */
#define BADGES_KEYS 8

struct badges_entry;
struct badges_snap;

struct badges {
    bool ready;                  /* badges_setup ran */
    unsigned badge;              /* pubsub prefix index of "badge:" */
    unsigned fam[FAM_COUNT];     /* ... of "<family>:" */
    uint8_t name_len[FAM_COUNT]; /* strlen(db_families[f].name) */
    struct badges_entry *e;      /* the turn's dirty users and objects */
    uint32_t n, cap;
    uint32_t *index; /* open addressing over e: entry + 1, 0 free */
    uint32_t index_mask;
    struct badges_snap *snap; /* FLUSHALL's "before" */
    uint32_t nsnap;
    uint64_t messages; /* published since start */
    uint64_t probes;   /* writes probed (someone was watching) */
};

/* The executor's record of one write between before and after. */
struct badges_probe {
    uint8_t kind; /* enum in badges.c; 0: nothing to watch */
    unsigned fam;
    bool has_key;
    uint64_t id; /* the user, or the global object */
    uint64_t key;
    uint64_t value;             /* the key's figure, or the head, before */
    uint64_t part[FAM_COUNT];   /* badge parts before */
    const struct ps_chan *chan; /* the channel's record, at pubsub epoch */
    uint64_t epoch;
};

/* Registers the channel prefixes with pubsub (after pubsub_setup, before
 * any client). 0, or -1. */
int badges_setup(struct server *srv);
void badges_teardown(struct server *srv);

void badges_before(struct server *srv, const struct ur_op *op, uint32_t argc,
                   const struct ur_arg *argv, struct badges_probe *p);
void badges_after(struct server *srv, struct badges_probe *p);

/* Whether dirty entries wait for a flush. */
static inline bool badges_pending(const struct badges *n)
{
    return n->n != 0;
}

/*
 * End of the turn (net.c, after the replies were written): publishes the
 * dirty set, once the journal holds every record appended so far durably;
 * otherwise keeps it and returns false (call again later).
 */
bool badges_flush(struct server *srv);

/* Lenient argument readers for cmd_<f>_badge_key (the handler validates
 * for real): a u64 (integer, or canonical decimal text), a counter type
 * (0..63 or a counter-types name). false when malformed. */
bool badges_arg_u64(const struct ur_arg *a, uint64_t *out);
bool badges_arg_ctype(const struct server *srv, const struct ur_arg *a,
                      uint64_t *out);

#endif
