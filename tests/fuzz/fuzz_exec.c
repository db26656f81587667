/*
 * fuzz_exec.c - libFuzzer target for the command path: the op table, the
 * executor's arity and AUTH checks, every handler's argument validation
 * and the stores behind them, on a scratch db (no persistence, no network).
 *
 * The input is a request stream, read twice as a connection would be: as
 * RESP (multibulk and inline lines) and as binary frames, each up to its
 * first framing error as the server does. Every request that parses runs
 * through exec_text / exec_binary into a scratch buffer, which must then
 * hold exactly one well-formed reply (for a frame, with the request's id
 * and a status matching its value); batch frames and MULTI/EXEC run as the
 * server runs them. After the input, db_audit (DEBUG AUDIT) must find no
 * mismatch.
 *
 * Each input is a whole session on a fresh db, so that a crash artifact
 * reproduces by itself and coverage does not depend on earlier inputs;
 * the db is freed after it, which bounds memory and lets LeakSanitizer
 * see a store that loses memory. The clock is pinned and moves one second
 * per request: runs repeat exactly and time-dependent paths (receipt
 * ages, unread-since) are reached. requirepass is set and the session
 * authenticated, so AUTH and HELLO ... AUTH are exercised without every
 * other command answering NOAUTH.
 *
 *   make fuzz && build-fuzz/fuzz_exec tests/fuzz/corpus/exec
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "exec.h"
#include "frame.h"
#include "resp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 64
#define CLOCK_START 1700000000000ull /* 2023-11-14, ms */

#define ASSERT(c)                                                              \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

static const struct ur_limits lim = {
    .max_frame = 1 << 16, .max_args = MAX_ARGS, .max_inline = 4096};

static struct server srv;
static struct ur_arg args[MAX_ARGS + 1];
static struct ur_buf out;

static void server_fresh(void)
{
    char err[256];

    srv = (struct server){0};
    config_init(&srv.cfg);
    srv.cfg.max_args = MAX_ARGS;
    srv.cfg.max_frame = lim.max_frame;
    ASSERT(config_set(&srv.cfg, "requirepass", "fuzz", err, sizeof(err)) == 0);
    ASSERT(db_init(&srv.db) == 0);
    srv.clock_pinned = true;
    srv.clock_pin_ms = CLOCK_START;
}

/* The reply buffer holds one RESP reply, nothing more. */
static void check_resp_reply(void)
{
    size_t consumed = 0;
    int64_t num;
    char type;

    ASSERT(ur_resp_parse_reply(out.data, out.len, UR_MAX_FRAME_CEILING,
                               &consumed, &type, &num) == UR_PARSE_OK);
    ASSERT(consumed == out.len);
}

/* The reply buffer holds one reply frame to request id, whose status is
 * that of its value (frame.h). */
static void check_bin_reply(uint32_t id, const struct reply *r)
{
    struct ur_frame_hdr h;
    struct ur_val_reader rd;
    struct ur_val v;
    size_t consumed = 0, hint;

    ASSERT(ur_frame_parse_reply(out.data, out.len, UR_MAX_FRAME_CEILING, &h,
                                &consumed, &hint) == UR_PARSE_OK);
    ASSERT(consumed == out.len && h.id == id && h.op == r->status);
    ur_val_reader_init(&rd, out.data + UR_FRAME_HDR, h.len);
    ASSERT(ur_val_next(&rd, &v));
    ASSERT((h.op == 0) == (v.kind != UR_VAL_ERR));
    ASSERT(h.op == 0 || v.code == h.op);
}

static void run_resp(const char *buf, size_t len)
{
    struct session sess = {.id = 1, .proto = REPLY_RESP, .authed = true};
    size_t off = 0;

    while (off < len && !srv.shutdown_asap) {
        size_t used = 0, hint = 0;
        uint32_t argc = 0;
        struct reply r;

        if (ur_resp_parse_request(buf + off, len - off, &lim, args, &argc,
                                  &used, &hint) != UR_PARSE_OK)
            break;
        off += used;
        if (argc == 0)
            continue;
        out.len = 0;
        srv.clock_pin_ms += 1000;
        reply_begin(&r, &out, (enum reply_proto)sess.proto, 0);
        exec_text(&srv, &sess, argc, args, &r);
        reply_end(&r);
        check_resp_reply();
    }
    batch_multi_end(&sess); /* the connection closes */
}

static void run_bin(const char *buf, size_t len)
{
    struct session sess = {.id = 2, .proto = REPLY_BIN, .authed = true};
    size_t off = 0;

    while (off < len && !srv.shutdown_asap) {
        struct ur_frame_req req;
        size_t used = 0, hint = 0;
        struct reply r;

        if (ur_frame_parse_request(buf + off, len - off, &lim, args, &req,
                                   &used, &hint) != UR_PARSE_OK)
            break;
        off += used;
        out.len = 0;
        srv.clock_pin_ms += 1000;
        reply_begin(&r, &out, REPLY_BIN, req.id);
        if (req.op == UR_FRAME_OP_BATCH)
            batch_exec(&srv, &sess, &req, &r);
        else
            exec_binary(&srv, &sess, req.op, req.argc, req.argv, &r);
        reply_end(&r);
        check_bin_reply(req.id, &r);
    }
    batch_multi_end(&sess);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A private copy: nothing may read past the input. */
    char *buf = malloc(size ? size : 1);

    ASSERT(buf != NULL);
    memcpy(buf, data, size);
    server_fresh();
    run_resp(buf, size);
    run_bin(buf, size);
    ASSERT(db_audit(&srv.db) == 0);
    db_deinit(&srv.db);
    slowlog_deinit(&srv.slowlog);
    ur_buf_deinit(&out);
    free(buf);
    return 0;
}
