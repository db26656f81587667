/*
 * unread_int.h - libunread's internal seam between the core and the typed
 * calls of each family (unread_<family>.c). A typed call is written once,
 * as an encode/decode pair (a prep_<name> function filling a struct
 * uc_call, below), and UC_FACES makes its synchronous unread_<name> and
 * asynchronous unread_async_<name> from it. The pipeline queue helpers
 * (uc_pipe_ints) are the synchronous handle's. Not installed; not part of
 * the API.
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
 * INT, the configured default (a split request: the merged array, the
 * unreachable users' elements the default). A decoder whose reply is not
 * one integer fills its outputs itself on UNREAD_DEGRADED (arrays: count
 * 0; pairs such as [read, unread]: the default in each).
 */
int uc_roundtrip(struct unread *c, uint16_t op, unsigned argc,
                 const struct unread_arg *argv, struct ur_frame_hdr *h,
                 const char **body);

/*
 * A read of many users (OPF_UIDS, every argument a uid) whose reply holds
 * one integer per uid: uids[0..n) in requests of at most UR_UIDS_MAX, each
 * split by server and merged back in order (unread.c), into out[0..n).
 * 0; UNREAD_DEGRADED when some uids could not be read and hold the
 * default; else the first failure (out then partly written).
 */
int uc_call_uids(struct unread *c, uint16_t op, const uint64_t *uids, size_t n,
                 uint64_t *out);

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

/* Chat-state calls (unread_conv.c), for CONV and GRP: one chat state into
 * (struct unread_chat_state *)out[0] (degraded: every field the default,
 * muted 0); q->n integers ([total, chats, ...]) into the uint64_t
 * outputs out[0..n) (degraded: the default in each); a page of LIST ...
 * STATE CURSOR [RECENT]. */
struct uc_core;
struct uc_call;
int uc_dec_state(struct uc_core *k, const struct uc_call *q, int rc,
                 struct ur_val_reader *rd);
int uc_dec_ints(struct uc_core *k, const struct uc_call *q, int rc,
                struct ur_val_reader *rd);
int uc_q_list_page(struct uc_core *k, struct uc_call *q, uint16_t op,
                   uint64_t uid, int order, uint64_t cursor, unsigned count,
                   struct unread_list_entry *out, unsigned *n, uint64_t *next);

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

/* ---- Typed calls for both faces ---------------------------------------- */
/*
 * A typed call is written once, as an encode/decode pair: a prep function
 * fills a struct uc_call (the request, and how its reply becomes the
 * caller's outputs), and UC_FACES makes both public functions from it:
 * unread_<name>(c, ...) runs it at once (uc_sync), unread_async_<name>(a,
 * ..., cb, priv) queues it and decodes when the reply comes (uc_async).
 */
struct uc_core;
struct uc_call;
struct unread_async;

/*
 * Turns the answer into the caller's outputs. rc is 0, UNREAD_DEGRADED
 * (rd then reads the degraded reply: one INT, the default, or the merged
 * array of a split request), or a server error when q->errors. Returns
 * the call's result: rc, or UNREAD_EPROTO from uc_bad_reply (the face then
 * drops the connection: nothing later on it is trusted).
 */
typedef int uc_decode_fn(struct uc_core *k, const struct uc_call *q, int rc,
                         struct ur_val_reader *rd);

#define UC_CALL_INLINE 8
#define UC_CALL_OUTS 3

struct uc_call {
    uint16_t op;
    unsigned argc;
    struct unread_arg *argv; /* inl, or allocated (the face frees it) */
    struct unread_arg inl[UC_CALL_INLINE];
    uc_decode_fn *decode;    /* NULL: only the result counts */
    bool errors;             /* decode server errors too (reply trees) */
    void *out[UC_CALL_OUTS]; /* the caller's outputs */
    uint64_t n;              /* a count decode needs (items, max, flags) */
    bool many;               /* a many-users call: uids[0..n) into out[0], */
    const uint64_t *uids;    /* sent in requests of at most UR_UIDS_MAX */
};

/* The request op with integer arguments v[0..argc), or with argv[0..argc)
 * (copied): 0, or UNREAD_ENOMEM / UNREAD_EUSAGE (message recorded). */
int uc_q_ints(struct uc_core *k, struct uc_call *q, uint16_t op, unsigned argc,
              const uint64_t *v);
int uc_q_args(struct uc_core *k, struct uc_call *q, uint16_t op, unsigned argc,
              const struct unread_arg *argv);

/* The request op with argc arguments for the caller to fill in
 * q->argv[0..argc): 0, or UNREAD_ENOMEM / UNREAD_EUSAGE. */
int uc_q_alloc(struct uc_core *k, struct uc_call *q, uint16_t op,
               unsigned argc);

/* Records the message for the failure a prep or decode function is about
 * to return; returns rc (unread_core.h). */
int uc_err(struct uc_core *k, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A reply of the wrong shape to op (from k->last_srv): UNREAD_EPROTO. */
int uc_bad_reply(struct uc_core *k, uint16_t op);

/* What degraded reads answer (unread_opts.default_value). */
uint64_t uc_core_default(const struct uc_core *k);

/* Decoders of the common shapes: one INT into (uint64_t *)out[0]; one INT
 * that fits a u32 into (uint32_t *)out[0] (saturated when degraded); an
 * INT that must be 0; [u32, u64] into out[0], out[1]; [count, expired]
 * (WITHEXPIRY) into two uint64_t; a reply tree into (struct unread_reply
 * **)out[0] (q->errors set by uc_q_tree); one INT per uid into
 * (uint64_t *)out[0] (uc_q_uids). */
int uc_dec_u64(struct uc_core *k, const struct uc_call *q, int rc,
               struct ur_val_reader *rd);
int uc_dec_u32(struct uc_core *k, const struct uc_call *q, int rc,
               struct ur_val_reader *rd);
int uc_dec_zero(struct uc_core *k, const struct uc_call *q, int rc,
                struct ur_val_reader *rd);
int uc_dec_pair32(struct uc_core *k, const struct uc_call *q, int rc,
                  struct ur_val_reader *rd);
int uc_dec_count_ex(struct uc_core *k, const struct uc_call *q, int rc,
                    struct ur_val_reader *rd);
int uc_dec_tree(struct uc_core *k, const struct uc_call *q, int rc,
                struct ur_val_reader *rd);
/* An INT that is 0 or 1 into (int *)out[0]. */
int uc_dec_flag(struct uc_core *k, const struct uc_call *q, int rc,
                struct ur_val_reader *rd);
/* op first rest[0..n) (1 <= n < 65535), one INT into (uint64_t *)out. */
int uc_q_int_list(struct uc_core *k, struct uc_call *q, uint16_t op,
                  uint64_t first, const uint64_t *rest, size_t n,
                  uint64_t *out);
/* q->n integers, one per uid, into (uint64_t *)out[0]; a degraded answer
 * that is one INT (the request's one server was unreachable) gives the
 * default to every uid. */
int uc_dec_uids(struct uc_core *k, const struct uc_call *q, int rc,
                struct ur_val_reader *rd);

/* A reply tree for out (set to NULL now); a many-users read of uids[0..n)
 * into out[0..n); a read with WITHEXPIRY after integer args. */
void uc_q_tree(struct uc_call *q, struct unread_reply **out);
int uc_q_uids(struct uc_core *k, struct uc_call *q, uint16_t op,
              const uint64_t *uids, size_t n, uint64_t *out);
int uc_q_count_ex(struct uc_core *k, struct uc_call *q, uint16_t op,
                  unsigned argc, const uint64_t *args, uint64_t *count,
                  uint64_t *expired);

/* The two faces: run q now on c, or queue it on a (cb called once when it
 * is answered; unread.h, "Asynchronous handle"). Both free q's argv. */
int uc_sync(struct unread *c, struct uc_call *q);
struct uc_core *uc_async_core(struct unread_async *a);
int uc_async(struct unread_async *a, struct uc_call *q,
             void (*cb)(struct unread_async *, int, void *), void *priv);

#define UC_UNPAREN(...) __VA_ARGS__
/*
 * Both public functions of a typed call from its prep function
 * prep_<name>(k, q, args...): params is the synchronous parameter list
 * after the handle, args the names in it.
 */
#define UC_FACES(name, params, args)                                           \
    int unread_##name(struct unread *c, UC_UNPAREN params)                     \
    {                                                                          \
        struct uc_call q;                                                      \
        int rc =                                                               \
            prep_##name((struct uc_core *)(void *)c, &q, UC_UNPAREN args);     \
        return rc != 0 ? rc : uc_sync(c, &q);                                  \
    }                                                                          \
    int unread_async_##name(struct unread_async *a, UC_UNPAREN params,         \
                            unread_async_cb *cb, void *priv)                   \
    {                                                                          \
        struct uc_call q;                                                      \
        int rc = prep_##name(uc_async_core(a), &q, UC_UNPAREN args);           \
        return rc != 0 ? rc : uc_async(a, &q, cb, priv);                       \
    }

#endif
