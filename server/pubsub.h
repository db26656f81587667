/*
 * pubsub.h - publish/subscribe as Redis has it (docs/COMMANDS.md,
 * "Pub/sub"): channels and glob patterns, the subscriptions of each
 * client, and delivery of a message to every subscriber.
 *
 * Channels are byte strings; a client subscribes to channels
 * (SUBSCRIBE) or patterns (PSUBSCRIBE, Redis's glob: * ? [a-z] [^x] \x,
 * case-sensitive). pubsub_publish hands the message to each subscriber
 * of the channel and of each pattern that matches it, as a push: on RESP
 * ["message", channel, payload] (an array on RESP2, a push type on RESP3),
 * ["pmessage", pattern, channel, payload]; on the binary protocol the same
 * array in a push frame (docs/PROTOCOL.md). Each message is encoded once
 * per protocol and copied to every subscriber's output (clients.h
 * client_io), which bounds it (client-output-limit and the pubsub limits:
 * server/net.c).
 *
 * Numbered channels: `<prefix><id>` with a prefix registered at setup
 * (pubsub_prefix: "badge:", "bc:", ...) and id in canonical decimal. For
 * them the module also keeps, per prefix, a u64 map of the ids with an
 * exact subscriber and the number of patterns that might match some
 * channel of the prefix, so that "is anyone listening to badge:<uid>?"
 * costs one map lookup and no string work, and nothing at all while no
 * one subscribes to anything (badges.h, the badge channels, relies on it).
 *
 * Nothing here is journaled or replicated: pub/sub is not data. The
 * server's own publishers (badges.c; the replication code, which relays
 * PUBLISH and sentinel's __sentinel__:hello) call pubsub_publish; clients'
 * commands are in cmd_pubsub.c.
 *
 * Subscriptions are not stored in the client: struct client carries a
 * pointer (cl->ps) to this module's record of it, and its session the
 * count (sess->subs: RESP2's subscribed mode is subs > 0).
 * pubsub_client_gone must run before a client is freed (clients_remove
 * calls it).
 */
#ifndef UR_PUBSUB_H
#define UR_PUBSUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

struct server;
struct client;
struct ps_chan;
struct ps_client;
struct u64map;

/* Prefixes of numbered channels, at most. */
#define PUBSUB_PREFIXES 12
#define PUBSUB_PREFIX_MAX 15

struct ps_table {
    struct ps_chan **slots; /* chains, NULL when empty */
    size_t mask;            /* slots - 1 (a power of two), 0: none yet */
    size_t count;
};

struct ps_prefix {
    char name[PUBSUB_PREFIX_MAX + 1];
    uint8_t len;
    struct u64map *ids; /* id -> (struct ps_chan *) with an exact subscriber */
    uint32_t patterns;  /* patterns that might match a channel of it */
};

struct pubsub {
    struct ps_table chans;    /* channels with at least one subscriber */
    struct ps_table pats;     /* patterns with at least one subscriber */
    struct ps_chan **patlist; /* the same patterns, for publish's walk */
    uint32_t npatlist, patcap;
    struct ps_prefix prefix[PUBSUB_PREFIXES];
    unsigned nprefix;
    uint64_t seed;          /* channel-name hash seed (random per process) */
    uint64_t epoch;         /* channel records created and freed */
    struct ur_buf enc[4];   /* a message's encodings, by enum reply_proto */
    uint64_t published;     /* PUBLISH and server publishes, since start */
    uint64_t delivered;     /* messages handed to subscribers */
    uint64_t dropped;       /* ... not, for want of memory */
    uint64_t limit_closes;  /* subscribers closed over their output limits */
    uint32_t sub_clients;   /* clients with at least one subscription */
    uint64_t subscriptions; /* channel + pattern subscriptions, all clients */
};

/* Sets up an empty registry. 0, or -1 (no memory). */
int pubsub_setup(struct pubsub *ps, uint64_t seed);
/* Frees it (every client must be gone). */
void pubsub_teardown(struct pubsub *ps);

/*
 * Registers a prefix of numbered channels ("badge:"): its index (for
 * pubsub_watched), or -1 when the table is full or no memory. Only before
 * any subscription. Registering the same prefix again returns its index.
 */
int pubsub_prefix(struct pubsub *ps, const char *prefix);

/*
 * Whether a message on channel <prefix idx><id> would reach anyone: an
 * exact subscriber, or a pattern that might match (conservatively: a
 * pattern that could match some channel starting with the prefix). One
 * u64 map lookup at most; none while nobody subscribes to any channel of
 * the prefix.
 */
bool pubsub_watched(const struct pubsub *ps, unsigned idx, uint64_t id);

/*
 * pubsub_watched that also gives the exact channel's record (*chan, NULL
 * when only patterns might hear it): the same one lookup. The record
 * stays valid while pubsub_epoch is unchanged: the epoch moves whenever a
 * channel record is created or freed, so a publisher that noted both when
 * a write ran (badges.c) publishes through the record at the end of the
 * turn without looking the channel up again, and looks it up when the
 * epoch moved.
 */
bool pubsub_watched_chan(const struct pubsub *ps, unsigned idx, uint64_t id,
                         const struct ps_chan **chan);
static inline uint64_t pubsub_epoch(const struct pubsub *ps)
{
    return ps->epoch;
}
/* The exact channel <prefix idx><id>'s record, or NULL. */
const struct ps_chan *pubsub_chan(const struct pubsub *ps, unsigned idx,
                                  uint64_t id);
/*
 * Prefetches what publishing through chan will touch, one pointer level
 * per stage (0: the record, 1: its subscriber array, 2: the first
 * subscription, 3: its client), each stage reading what the previous one
 * fetched: call stage k for a record a few publishes before stage k + 1.
 * chan must be valid (see pubsub_epoch); NULL does nothing.
 */
void pubsub_prefetch(const struct ps_chan *chan, int stage);

/* Whether anyone subscribes to anything: the one test of the write path
 * while pub/sub is unused. */
static inline bool pubsub_idle(const struct pubsub *ps)
{
    return ps->chans.count == 0 && ps->npatlist == 0;
}

/* Whether anyone might hear a channel of prefix idx (pubsub_watched for
 * some id). */
bool pubsub_prefix_watched(const struct pubsub *ps, unsigned idx);

/* Visits the ids of prefix idx with an exact subscriber (not those only
 * patterns hear), in no order; fn must not subscribe or unsubscribe. */
typedef void (*pubsub_id_fn)(uint64_t id, void *ctx);
void pubsub_prefix_scan(const struct pubsub *ps, unsigned idx, pubsub_id_fn fn,
                        void *ctx);

/*
 * cl subscribes to channel (pattern false) or pattern name[0..n): 1 when
 * new, 0 when it already was, -1 when out of memory (nothing changed).
 * The client's counts (cl->sess->subs) follow.
 */
int pubsub_subscribe(struct server *srv, struct client *cl, const char *name,
                     size_t n, bool pattern);
/* cl leaves channel or pattern name[0..n): 1 when it was subscribed, else
 * 0. */
int pubsub_unsubscribe(struct server *srv, struct client *cl, const char *name,
                       size_t n, bool pattern);

/* cl's channel (pattern false) or pattern subscriptions. */
uint32_t pubsub_client_count(const struct client *cl, bool pattern);
/* cl's i-th channel or pattern (i < pubsub_client_count), its bytes in
 * *n: for UNSUBSCRIBE without arguments, newest first from the end. */
const char *pubsub_client_name(const struct client *cl, bool pattern,
                               uint32_t i, size_t *n);

/* Drops every subscription of cl (it disconnects, or RESET). */
void pubsub_client_gone(struct server *srv, struct client *cl);

/*
 * Publishes msg[0..mlen) on channel ch[0..n): a push to every subscriber
 * of the channel and of every pattern matching it, in their protocols.
 * Returns how many pushes were made (Redis's PUBLISH reply). Never pushes
 * into the reply being built by the running command: net.c appends a push
 * for the running connection after its reply (client_io). A subscriber
 * over its output limits is closed after the turn's writes, not during
 * the walk.
 */
uint64_t pubsub_publish(struct server *srv, const char *ch, size_t n,
                        const char *msg, size_t mlen);
/* pubsub_publish on a channel whose exact record the caller already has
 * (pubsub_watched_chan, pubsub_chan; NULL: no exact subscriber). */
uint64_t pubsub_publish_chan(struct server *srv, const struct ps_chan *chan,
                             const char *ch, size_t n, const char *msg,
                             size_t mlen);

/* Subscribers of channel ch[0..n) (PUBSUB NUMSUB: patterns not counted). */
uint64_t pubsub_numsub(const struct pubsub *ps, const char *ch, size_t n);
/* Distinct patterns with a subscriber (PUBSUB NUMPAT). */
static inline uint64_t pubsub_numpat(const struct pubsub *ps)
{
    return ps->npatlist;
}
/* Channels with a subscriber (INFO pubsub_channels). */
static inline uint64_t pubsub_numchannels(const struct pubsub *ps)
{
    return ps->chans.count;
}

/* Visits every channel with a subscriber whose name matches the glob
 * pattern (NULL: every one), in no order (PUBSUB CHANNELS). */
typedef void (*pubsub_visit_fn)(const char *name, size_t n, void *ctx);
void pubsub_channels(const struct pubsub *ps, const char *pattern, size_t plen,
                     pubsub_visit_fn fn, void *ctx);

/* Redis's glob (stringmatchlen, case-sensitive): whether s[0..slen)
 * matches pattern p[0..plen). O(plen * slen) at worst, no recursion. */
bool pubsub_glob(const char *p, size_t plen, const char *s, size_t slen);

/* Whether some string that starts with prefix[0..n) matches pattern
 * p[0..plen) (conservative: true when unsure). */
bool pubsub_glob_prefix(const char *p, size_t plen, const char *prefix,
                        size_t n);

/* Bytes the registry holds (INFO). */
size_t pubsub_bytes(const struct pubsub *ps);

#endif
