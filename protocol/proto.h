/*
 * proto.h - types shared by every codec, the server, the client library,
 * the benchmark and the fuzzers: parse status, request arguments, reply
 * value kinds, error codes and the hard limits.
 *
 * Nothing here does I/O or knows about the store.
 */
#ifndef UR_PROTO_H
#define UR_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Hard ceilings. Configurable limits (max-frame, ...) may only be lower. */
#define UR_MAX_FRAME_DEFAULT (1u << 20) /* max-frame: 1 MiB */
#define UR_MAX_FRAME_CEILING (64u << 20)
#define UR_MAX_ARGS_DEFAULT 4096 /* arguments per command, name excluded */
#define UR_MAX_INLINE_DEFAULT (64u << 10) /* inline command line */
#define UR_MAX_DEPTH 8                    /* nesting of reply arrays */

/* Result of every parser in protocol/. */
enum ur_parse {
    UR_PARSE_OK = 0,    /* one complete unit parsed; *consumed set */
    UR_PARSE_NEED_MORE, /* prefix of a valid unit; read more bytes */
    UR_PARSE_INVALID,   /* not the protocol; framing is lost */
    UR_PARSE_TOO_BIG    /* a declared length or count exceeds a limit */
};

const char *ur_parse_name(enum ur_parse st);

/*
 * One request argument. The binary protocol carries integers as fixed-width
 * u64 (kind UR_ARG_INT) or byte strings; RESP carries only strings. Handlers
 * never look at the kind directly: they use the exec.h accessors, which
 * accept either form (a string must be a canonical decimal).
 * str points into the parser's input buffer and is valid only until that
 * buffer is consumed. It is not NUL-terminated.
 */
enum ur_arg_kind { UR_ARG_INT = 1, UR_ARG_STR = 2 };

struct ur_arg {
    uint8_t kind;
    uint32_t len;    /* UR_ARG_STR: byte length */
    const char *str; /* UR_ARG_STR: bytes (not terminated) */
    uint64_t num;    /* UR_ARG_INT: the value */
};

/* Reply value kinds, as tagged on the binary wire (docs/PROTOCOL.md). */
enum ur_val_kind {
    UR_VAL_INT = 0x01,    /* u64 */
    UR_VAL_STR = 0x02,    /* bulk bytes */
    UR_VAL_ARR = 0x03,    /* array of values */
    UR_VAL_NIL = 0x04,    /* absent */
    UR_VAL_STATUS = 0x05, /* short status text, e.g. OK, PONG */
    UR_VAL_ERR = 0x06,    /* error: code + message */
    UR_VAL_SINT = 0x07    /* i64, two's complement: a value that may be
                             negative (COMMAND's arity); binary v1.1 */
};

/*
 * The integer range every protocol shares: ids, counts, timestamps and
 * every other integer argument are 0..UR_INT_MAX (Redis's integer range,
 * so a RESP integer reply echoing one never overflows a signed 64-bit
 * client). The binary wire keeps u64 fields; values past this are refused.
 */
#define UR_INT_MAX INT64_MAX

/*
 * Error codes: the binary reply status and the text error prefix.
 * X(id, code, prefix). Defined once; see ur_err_prefix().
 */
#define UR_ERRORS(X)                                                           \
    X(OK, 0, "OK")                                                             \
    X(ERR, 1, "ERR")              /* generic failure */                        \
    X(ARITY, 2, "ERR")            /* wrong number of arguments */              \
    X(UNKNOWN, 3, "ERR")          /* unknown command or opcode */              \
    X(BADARG, 4, "ERR")           /* not a number, out of range, bad name */   \
    X(NOAUTH, 5, "NOAUTH")        /* authentication required */                \
    X(OOM, 6, "OOM")              /* maxmemory reached */                      \
    X(MISCONF, 7, "MISCONF")      /* journal cannot be written */              \
    X(NOPROTO, 8, "NOPROTO")      /* unsupported protocol version */           \
    X(TOOBIG, 9, "ERR")           /* frame, argument count or line too big */  \
    X(LIMIT, 10, "ERR")           /* a configured per-entity limit */          \
    X(PROTO, 11, "ERR")           /* framing lost; connection is closed */     \
    X(WRONGPASS, 12, "WRONGPASS") /* AUTH with a bad password */               \
    X(EXECABORT, 13, "EXECABORT") /* EXEC of a MULTI with a refused command */ \
    X(READONLY, 14, "READONLY")   /* a write sent to a replica */              \
    X(NOREPLICAS, 15, "NOREPLICAS") /* fewer good replicas than                \
                                       min-replicas-to-write */                \
    X(MASTERDOWN, 16, "MASTERDOWN") /* a replica's link is down and            \
                                       replica-serve-stale-data is no */       \
    /* Cluster mode (docs/PROTOCOL.md "Cluster"): the message is Redis's */    \
    X(MOVED, 17, "MOVED")             /* "slot ip:port": ask that node */      \
    X(ASK, 18, "ASK")                 /* "slot ip:port": that node, once */    \
    X(CROSSSLOT, 19, "CROSSSLOT")     /* keys of several slots */              \
    X(CLUSTERDOWN, 20, "CLUSTERDOWN") /* a slot is not served */               \
    X(TRYAGAIN, 21, "TRYAGAIN")       /* a slot moves: retry soon */           \
    /* 22: NOPERM, taken by the ACLs */                                        \
    X(BUSYKEY, 23, "BUSYKEY") /* RESTORE of an id holding state */             \
    X(IOERR, 24, "IOERR")     /* MIGRATE: the target cannot be reached */

enum ur_err {
#define UR_ERR_ENUM(id, code, prefix) UR_E_##id = code,
    UR_ERRORS(UR_ERR_ENUM)
#undef UR_ERR_ENUM
        UR_E__COUNT
};

/* Text prefix for an error code ("ERR", "NOAUTH", ...); "ERR" if unknown. */
const char *ur_err_prefix(uint32_t code);
/* Symbolic name of an error code ("ARITY", ...); "ERR" if unknown. */
const char *ur_err_name(uint32_t code);

/*
 * Strict decimal u64: digits only, no sign, no space, no leading zeros
 * (except "0" itself), at most 20 digits, no overflow. Returns true and sets
 * *out on success.
 */
bool ur_parse_u64(const char *s, size_t len, uint64_t *out);

/*
 * A decimal integer argument: digits only (no sign, no space), leading
 * zeros allowed ("000123" is 123: redis-benchmark's __rand_int__), value
 * at most max. UR_NUM_OK with *out set; UR_NUM_SYNTAX when s is not a
 * decimal; UR_NUM_RANGE when it is one but larger than max.
 */
enum ur_num { UR_NUM_OK = 0, UR_NUM_SYNTAX = 1, UR_NUM_RANGE = 2 };
enum ur_num ur_parse_uint_any(const char *s, size_t len, uint64_t max,
                              uint64_t *out);

/* ur_parse_uint_any, with the one-digit arguments (counter types, deltas
 * of 1, flags) answered inline: several per request on the text path. */
static inline enum ur_num ur_parse_uint(const char *s, size_t len, uint64_t max,
                                        uint64_t *out)
{
    if (len == 1) {
        uint32_t d = (uint32_t)(unsigned char)s[0] - '0';

        if (d > 9)
            return UR_NUM_SYNTAX;
        if (d > max)
            return UR_NUM_RANGE;
        *out = d;
        return UR_NUM_OK;
    }
    return ur_parse_uint_any(s, len, max, out);
}

/* Writes v in decimal to buf (at least 21 bytes), NUL-terminated; returns
 * the length (without the NUL). */
size_t ur_fmt_u64(char *buf, uint64_t v);

#endif
