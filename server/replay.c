/*
 * replay.c - see replay.h.
 */
#include "replay.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "exec.h"
#include "journal.h"
#include "persist.h"

/* The first error reply of a command that failed on replay, as one
 * printable line (the replay session speaks RESP: "-ERR ...\r\n", on a
 * line of its own inside a batch's array). */
static void reply_line(const struct ur_buf *out, char *line, size_t cap)
{
    size_t k = 0, i = 0;

    while (i < out->len && out->data[i] != '-') {
        const char *nl = memchr(out->data + i, '\n', out->len - i);
        i = nl != NULL ? (size_t)(nl - out->data) + 1 : out->len;
    }
    for (i++; i < out->len && k + 1 < cap; i++) {
        unsigned char c = (unsigned char)out->data[i];
        if (c == '\r')
            break;
        line[k++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    line[k] = '\0';
}

/* Runs one record's request with the clock pinned to its time. 0, or -1
 * with the command's error in err. */
static int replay_one(struct server *srv, const struct journal_rec *rec,
                      const struct ur_frame_req *req, struct ur_buf *out,
                      char *err, size_t errlen)
{
    struct session sess = {.id = 0, .proto = REPLY_RESP, .authed = true};
    const struct ur_op *op = ur_op_by_code(req->op);
    const char *what = op != NULL ? op->name : "unknown opcode";
    uint32_t failed = 0;
    struct reply r;
    char line[160];

    out->len = 0;
    srv->loading = true;
    srv->clock_pinned = true;
    srv->clock_pin_ms = rec->clock_ms;
    reply_begin(&r, out, REPLY_RESP, 0);
    if (req->op == UR_FRAME_OP_BATCH) {
        failed = batch_exec(srv, &sess, req, &r);
        what = "a batch";
    } else {
        exec_binary(srv, &sess, req->op, req->argc, req->argv, &r);
    }
    reply_end(&r);
    srv->clock_pinned = false;
    srv->loading = false;
    if (r.status == UR_E_OK && failed == 0)
        return 0;
    reply_line(out, line, sizeof(line));
    snprintf(err, errlen,
             "%s failed on replay: %s (was a setting such as "
             "counter-types or a limit changed?)",
             what, line);
    return -1;
}

int replay_buf(struct server *srv, const char *buf, size_t len,
               const struct journal_link *prev, bool last_segment,
               struct replay_result *res, char *err, size_t errlen)
{
    struct journal_scan *sc = &res->scan;
    struct ur_arg *args = NULL;
    struct journal_rec rec;
    struct ur_buf out;
    uint32_t cap = 0;
    char at[96];
    size_t off;
    int rc = -1;

    memset(res, 0, sizeof(*res));
    journal_scan(buf, len, prev, last_segment, sc);
    if (sc->state == JOURNAL_CORRUPT) {
        res->bad_off = sc->bad_off;
        res->bad_rec = sc->records + 1;
        journal_place(sc, sc->bad_off, res->bad_rec, sc->next_seq, at,
                      sizeof(at));
        snprintf(err, errlen, "%s: %s", at, sc->why);
        return -1;
    }
    ur_buf_init(&out);
    off = sc->hdr_ok ? sc->hdr.len : 0;
    for (;;) {
        struct ur_frame_req req;
        const char *why = "";
        char msg[256];

        res->bad_off = off;
        res->bad_rec = res->records + 1;
        if (!journal_rec_next(sc, buf, &off, &rec))
            break;
        if (journal_rec_is_history(&rec)) {
            res->records++; /* no data (persistence reads it), but counted:
                               record numbers are the scan's */
            continue;
        }
        journal_place(sc, res->bad_off, res->bad_rec, rec.seq, at, sizeof(at));
        if (journal_rec_request(&rec, &args, &cap, &req, &why) != 0) {
            snprintf(err, errlen, "%s: %s", at, why);
            res->cmd_failed = true;
            goto out;
        }
        if (replay_one(srv, &rec, &req, &out, msg, sizeof(msg)) != 0) {
            snprintf(err, errlen, "%s: %s", at, msg);
            res->cmd_failed = true;
            goto out;
        }
        res->records++;
    }
    rc = 0;

out:
    free(args);
    ur_buf_deinit(&out);
    return rc;
}

int replay_record(struct server *srv, const struct journal_rec *rec,
                  struct ur_arg **args, uint32_t *cap, struct ur_buf *out,
                  char *err, size_t errlen)
{
    struct ur_frame_req req;
    const char *why = "";

    if (journal_rec_is_history(rec) ||
        journal_rec_request(rec, args, cap, &req, &why) != 0) {
        snprintf(err, errlen, "%s",
                 why[0] ? why : "a history record in the stream");
        return -1;
    }
    return replay_one(srv, rec, &req, out, err, errlen);
}

int replay_open(struct server *srv, char *err, size_t errlen)
{
    const struct persist_config pc = {srv->cfg.dir, srv->cfg.journal,
                                      srv->cfg.journal_fsync,
                                      srv->cfg.save_seconds};
    struct ur_arg *args = NULL;
    struct ur_buf out;
    uint32_t cap = 0;
    struct persist *p;
    int rc;

    srv->persist = NULL;
    p = persist_open(&pc, &srv->db, err, errlen);
    if (p == NULL)
        return -1;
    ur_buf_init(&out);
    for (;;) {
        struct journal_rec rec;
        struct ur_frame_req req;
        const char *why = "";
        char msg[256];

        rc = persist_load_next(p, &rec, err, errlen);
        if (rc <= 0)
            break;
        if (journal_rec_request(&rec, &args, &cap, &req, &why) != 0) {
            persist_load_refuse(p, why, err, errlen);
            rc = -1;
            break;
        }
        if (replay_one(srv, &rec, &req, &out, msg, sizeof(msg)) != 0) {
            persist_load_refuse(p, msg, err, errlen);
            rc = -1;
            break;
        }
    }
    free(args);
    ur_buf_deinit(&out);
    if (rc == 0)
        rc = persist_load_done(p, err, errlen);
    if (rc != 0) {
        persist_close(p);
        return -1;
    }
    srv->persist = p;
    return 0;
}

void replay_close(struct server *srv)
{
    persist_close(srv->persist);
    srv->persist = NULL;
}
