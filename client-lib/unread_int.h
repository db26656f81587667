/*
 * unread_int.h - libunread's internal seam between the connection core
 * (unread.c) and the typed calls of each family (unread_<family>.c). Not
 * installed; not part of the API.
 */
#ifndef UNREAD_INT_H
#define UNREAD_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "frame.h"
#include "ops.h"
#include "unread.h"

/*
 * One synchronous round trip, routed by the op table (docs/CLIENT.md): to
 * the server owning the first argument (uid or gid), to every server (a
 * global write: one reply, checked to agree for GRP.POST), or to the first
 * server. On 0 or a server error (> 0), *h and *body describe the reply
 * (valid until the next call); < 0: failed, and the connection is closed
 * unless the failure was a usage error.
 *
 * Degraded reads: with degraded mode on, a read (OPF_READ) whose server
 * cannot be reached returns UNREAD_DEGRADED (> 0) and *h, *body describe one
 * INT, the configured default, so uc_call_ints' reader yields it and
 * uc_call_int stores it. A typed call whose reply is not one integer fills
 * its outputs itself on UNREAD_DEGRADED (arrays: count 0; pairs such as
 * [read, unread]: the default in each) and returns UNREAD_DEGRADED.
 */
int uc_roundtrip(struct unread *c, uint16_t op, unsigned argc,
                 const struct unread_arg *argv, struct ur_frame_hdr *h,
                 const char **body);

/* Synchronous call of an op whose arguments are all integers (at most 65);
 * on 0, *rd reads the reply body. */
int uc_call_ints(struct unread *c, uint16_t op, unsigned argc,
                 const uint64_t *v, struct ur_val_reader *rd);

/* Synchronous call whose reply is one integer (on UNREAD_DEGRADED, *out
 * is the default). */
int uc_call_int(struct unread *c, uint16_t op, unsigned argc,
                const uint64_t *args, uint64_t *out);

/*
 * A read of many users (OPF_UIDS, every argument a uid) whose reply holds
 * one integer per uid: uids[0..n) in requests of at most UR_UIDS_MAX, each
 * split by server and merged back in order (unread.c), into out[0..n).
 * 0; UNREAD_DEGRADED when some uids could not be read and hold the
 * default; else the first failure (out then partly written).
 */
int uc_call_uids(struct unread *c, uint16_t op, const uint64_t *uids, size_t n,
                 uint64_t *out);

/* What degraded reads answer (unread_opts.default_value). */
uint64_t uc_default(const struct unread *c);

/* Synchronous call of op with arguments first, rest[0..n) (1 <= n <
 * 65535) whose reply is one integer (GRP.JOIN, FEED.FOLLOW with many). */
int uc_call_int_list(struct unread *c, uint16_t op, uint64_t first,
                     const uint64_t *rest, size_t n, uint64_t *out);

/* A family read with WITHEXPIRY after its integer arguments args[0..argc)
 * (at most 3): [count, expired]. On UNREAD_DEGRADED: the default and 0. */
int uc_call_count_ex(struct unread *c, uint16_t op, unsigned argc,
                     const uint64_t *args, uint64_t *count, uint64_t *expired);

/* Queues op with integer arguments v[0..argc) (at most 65) on the open
 * pipeline: unread_pipe_cmd's contract. */
int uc_pipe_ints(struct unread *c, uint16_t op, unsigned argc,
                 const uint64_t *v);

/* Reply readers: the next value is an integer / an array header. */
bool uc_rd_int(struct ur_val_reader *rd, uint64_t *v);
bool uc_rd_arr(struct ur_val_reader *rd, uint32_t *count);

/* The six fields of a chat state (CONV.STATE, GRP.STATE, a LIST ... STATE
 * entry after its id). */
bool uc_rd_state(struct ur_val_reader *rd, struct unread_chat_state *st);

/* A call whose reply is one chat state (on UNREAD_DEGRADED every field is
 * the default). */
int uc_call_state(struct unread *c, uint16_t op, unsigned argc,
                  const struct unread_arg *argv, struct unread_chat_state *st);

/* One page of CONV.LIST or GRP.LIST ... STATE CURSOR (unread_conv.c). */
int uc_list_page(struct unread *c, uint16_t op, uint64_t uid, int order,
                 uint64_t cursor, unsigned count, struct unread_list_entry *out,
                 unsigned *n, uint64_t *next);

/* Records the message unread_errstr gives for the failure a call is about
 * to return; returns rc. */
int uc_set_err(struct unread *c, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A typed call got a reply of the wrong shape: records the error, drops
 * the connection, returns UNREAD_EPROTO. */
int uc_shape_err(struct unread *c, uint16_t op);

/* Copies a reply body validated by the frame parser into one allocation
 * for the caller (unread_reply_free): 0, UNREAD_ENOMEM or UNREAD_EPROTO. */
int uc_tree_build(const char *body, size_t len, struct unread_reply **out);

/* An ERROR reply made on the client side; NULL when out of memory. */
struct unread_reply *uc_reply_error(int code, const char *text);

#endif
