/*
 * fuzz_journal.c - libFuzzer target for the journal classifier and replay.
 *
 * The first byte picks the mode:
 *   bit 0 clear  the rest is a segment file's bytes (version 2 or 1).
 *                journal_scan classifies it (bit 1 set: a later segment
 *                follows, so nothing may be called a torn tail; bits 2-7
 *                pick a cut point). Checked: the scan never reads outside
 *                the buffer, its results agree with each other (a clean
 *                segment ends at the end, only a last one is torn, the
 *                sound prefix scans clean alone), a cut of a clean segment
 *                keeps exactly the records whole before the cut and is
 *                damage only when sound bytes follow; every sound record
 *                goes through journal_req_check, and the segment is
 *                replayed as the server does at start-up, leaving stores
 *                that pass DEBUG AUDIT;
 *   bit 0 set    the rest is a list of payloads, each a u16 length and
 *                that many bytes, turned into a version 2 segment of
 *                records with right sequence numbers and checks: the
 *                payloads reach the request-frame parser and, when they
 *                parse, the executor and every family's handlers, which
 *                must refuse bad arguments without crashing.
 *
 *   make fuzz && build-fuzz/fuzz_journal tests/fuzz/corpus/journal
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "journal.h"
#include "replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ASSERT(c)                                                              \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

#define SALT 0x0123456789abcdefULL

static struct server srv;

static void replay_into_fresh_db(const char *buf, size_t len, bool last)
{
    struct replay_result res;
    char err[512];

    config_init(&srv.cfg);
    ASSERT(db_init(&srv.db) == 0);
    if (replay_buf(&srv, buf, len, NULL, last, &res, err, sizeof(err)) == 0) {
        ASSERT(res.scan.state != JOURNAL_CORRUPT);
        ASSERT(res.records == res.scan.records);
    } else {
        ASSERT(err[0] != '\0' && res.bad_off <= len);
    }
    ASSERT(!srv.clock_pinned);
    ASSERT(db_audit(&srv.db) == 0);
    db_deinit(&srv.db);
}

/* Every sound record parses or is refused, and the op table's check
 * neither crashes nor accepts an unparsed record. */
static void check_records(const char *buf, const struct journal_scan *s)
{
    struct ur_arg *args = NULL;
    struct journal_rec rec;
    struct ur_frame_req req;
    uint32_t cap = 0;
    const char *why;
    size_t off = s->hdr.len;
    uint64_t n = 0;

    while (journal_rec_next(s, buf, &off, &rec)) {
        n++;
        if (journal_rec_request(&rec, &args, &cap, &req, &why) == 0)
            (void)journal_req_check(&req, cap, NULL, &why);
    }
    ASSERT(n == s->records && off == s->end);
    free(args);
}

static void segment(const char *buf, size_t len, uint8_t mode)
{
    bool last = !(mode & 2);
    struct journal_scan s, t;

    journal_scan(buf, len, NULL, last, &s);
    ASSERT(s.end <= len && s.bad_off <= len);
    ASSERT(s.state != JOURNAL_CLEAN || s.end == len);
    ASSERT(s.state != JOURNAL_TORN || last);
    ASSERT(s.state == JOURNAL_CLEAN || s.why != NULL);
    ASSERT(s.found_off == 0 || s.found_off >= s.bad_off);
    if (!s.hdr_ok) {
        ASSERT(s.state != JOURNAL_CLEAN && s.records == 0);
        replay_into_fresh_db(buf, len, last);
        return;
    }
    check_records(buf, &s);
    /* the sound prefix is a clean segment of the same records */
    journal_scan(buf, s.end, NULL, last, &t);
    if (s.bad_off >= s.hdr.len)
        ASSERT(t.state == JOURNAL_CLEAN && t.records == s.records);
    /* a cut of a clean segment: the records whole before it, and damage
     * only when sound bytes follow (records crafted inside another's
     * payload, which the salt keeps a client from writing) */
    if (s.state == JOURNAL_CLEAN && len > 0) {
        size_t cut = (size_t)((uint64_t)len * (mode >> 2) / 64);
        struct journal_rec rec;
        uint64_t whole = 0;
        size_t off = s.hdr.len, prev = off;

        while (journal_rec_next(&s, buf, &off, &rec) && off <= cut) {
            whole++;
            prev = off;
        }
        journal_scan(buf, cut, NULL, true, &t);
        if (cut >= s.hdr.len) {
            ASSERT(t.records == whole && t.end == prev);
            ASSERT(t.state != JOURNAL_CORRUPT || t.found_off != 0);
        } else {
            ASSERT(t.state == JOURNAL_TORN && !t.hdr_ok);
        }
    }
    replay_into_fresh_db(buf, len, last);
}

/* Odd mode: [u16 n][n bytes]... -> a version 2 segment of sound records. */
static void checksummed(const uint8_t *p, size_t size)
{
    struct journal_hdr h = {JOURNAL_VERSION, 0, 1, 1, SALT, JOURNAL_HDR};
    char raw[JOURNAL_HDR];
    struct journal_scan s;
    struct ur_buf b;
    uint64_t seq = 1;

    ur_buf_init(&b);
    journal_hdr_encode(raw, &h);
    ASSERT(ur_buf_append(&b, raw, sizeof(raw)) == 0);
    while (size >= 2) {
        size_t n = (size_t)p[0] | (size_t)p[1] << 8;
        size_t start = b.len;
        char hdr[JOURNAL_REC_HDR];

        p += 2;
        size -= 2;
        if (n > size)
            n = size;
        if (n < JOURNAL_REC_MIN)
            n = size < JOURNAL_REC_MIN ? size : JOURNAL_REC_MIN;
        if (n < JOURNAL_REC_MIN)
            break;
        memset(hdr, 0, sizeof(hdr));
        ASSERT(ur_buf_append(&b, hdr, sizeof(hdr)) == 0);
        ASSERT(ur_buf_append(&b, p, n) == 0);
        journal_rec_seal(b.data + start, (uint32_t)n, SALT, seq);
        seq++;
        p += n;
        size -= n;
    }
    journal_scan(b.data, b.len, NULL, true, &s);
    ASSERT(s.state == JOURNAL_CLEAN && s.records == seq - 1);
    replay_into_fresh_db(b.data, b.len, true);
    ur_buf_deinit(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy;

    if (size < 1)
        return 0;
    if (data[0] & 1) {
        checksummed(data + 1, size - 1);
        return 0;
    }
    /* a copy of exactly the segment's size, so that ASan sees any read
     * past its end */
    copy = malloc(size - 1 ? size - 1 : 1);
    ASSERT(copy != NULL);
    memcpy(copy, data + 1, size - 1);
    segment(copy, size - 1, data[0]);
    free(copy);
    return 0;
}
