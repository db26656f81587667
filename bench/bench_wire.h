/*
 * bench_wire.h - how unread-bench speaks to a server: one command
 * description (struct bench_cmd) encoded for the target's protocol with the
 * project's own codecs (protocol/frame.h for binary, protocol/resp.h for
 * RESP), and replies parsed and judged against what the command expects.
 *
 * Targets:
 *   binary  unreadd, binary frames (integers as u64 arguments)
 *   text    unreadd, RESP multibulk (integers as decimal strings)
 *   redis   Redis, RESP multibulk
 * The first two share the unreadd dialect (commands named by opcode from
 * ops.def); the third has its own commands (HGET, EVALSHA, ...).
 */
#ifndef BENCH_WIRE_H
#define BENCH_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "buf.h"
#include "proto.h"

enum bench_target { BENCH_BINARY, BENCH_TEXT, BENCH_REDIS };
enum bench_dialect { BENCH_UNREADD, BENCH_REDIS_CMDS };

#define BENCH_MAX_ARGS 104 /* arguments of one command, name excluded */

enum bench_arg_kind {
    BARG_INT, /* num */
    BARG_STR, /* str, len */
    BARG_KEY  /* str (a prefix such as "u:") followed by num in decimal */
};

struct bench_arg {
    uint8_t kind;
    uint32_t len;
    const char *str; /* static or owned by the caller for the run */
    uint64_t num;
};

/*
 * Reply kinds a command accepts, as a mask of 1 << enum ur_val_kind (a RESP
 * reply is mapped to the same kinds: ':' INT, '$' STR or NIL, '*' ARR, '+'
 * STATUS, '-' ERR). A reply of another kind counts as an error, so a
 * workload that silently got the wrong answer shape is caught.
 */
#define BX(kind) (1u << (kind))
#define BX_INT BX(UR_VAL_INT)
#define BX_ARR BX(UR_VAL_ARR)
#define BX_BULK (BX(UR_VAL_STR) | BX(UR_VAL_NIL))
#define BX_STATUS BX(UR_VAL_STATUS)

struct bench_cmd {
    uint16_t op;      /* unreadd dialect: wire opcode (UR_OP_*) */
    const char *name; /* Redis dialect: command name */
    uint8_t expect;   /* BX_* mask */
    uint8_t argc;
    struct bench_arg argv[BENCH_MAX_ARGS];
};

/* Builders used by the workload rows (bench_<family>.c). Arguments beyond
 * BENCH_MAX_ARGS are a programming error in a row and abort. */
void bench_cmd_unreadd(struct bench_cmd *c, uint16_t op, uint8_t expect);
void bench_cmd_redis(struct bench_cmd *c, const char *name, uint8_t expect);
/* Redis: FCALL function nkeys; the keys and then the arguments follow. */
void bench_cmd_fcall(struct bench_cmd *c, const char *function, unsigned nkeys,
                     uint8_t expect);
void bench_arg_int(struct bench_cmd *c, uint64_t v);
void bench_arg_str(struct bench_cmd *c, const char *s);
void bench_arg_key(struct bench_cmd *c, const char *prefix, uint64_t id);

enum bench_dialect bench_dialect_of(enum bench_target t);
/* "binary", "text", "redis"; parse returns -1 for an unknown name. */
const char *bench_target_name(enum bench_target t);
int bench_target_parse(const char *s, enum bench_target *t);

/*
 * Appends one request to b. id is the binary frame's request id (ignored
 * by RESP). 0, or -1 on allocation failure or a command that the target
 * cannot carry (an unreadd opcode not in the table, a missing name).
 */
int bench_encode(struct ur_buf *b, enum bench_target t,
                 const struct bench_cmd *c, uint32_t id);

/* One parsed reply. */
struct bench_reply {
    size_t consumed;  /* bytes of the reply */
    uint32_t id;      /* binary: the echoed request id; RESP: 0 */
    uint8_t kind;     /* enum ur_val_kind of the top-level value */
    const char *text; /* STR, STATUS, ERR: the bytes (into the buffer) */
    size_t text_len;
};

/*
 * Parses one complete reply from buf[0..len) (any size up to max-frame).
 * OK fills *r; NEED_MORE, INVALID and TOO_BIG as the codecs say.
 */
enum ur_parse bench_parse_reply(enum bench_target t, const char *buf,
                                size_t len, struct bench_reply *r);

/*
 * One blocking round trip on a connected socket (over ssl when not NULL,
 * bench_tls.h), for set-up steps (Redis SCRIPT LOAD): sends c, waits for its
 * reply within timeout_ms, copies a bulk or status reply's bytes into
 * out[0..outlen) NUL-terminated. 0, or -1 with a message in err (an error
 * reply's text included).
 */
int bench_call(int fd, SSL *ssl, enum bench_target t, const struct bench_cmd *c,
               int timeout_ms, char *out, size_t outlen, char *err,
               size_t errlen);

/* A blocking TCP connection with TCP_NODELAY; -1 with a message in err. */
int bench_dial(const char *host, uint16_t port, char *err, size_t errlen);

#endif
