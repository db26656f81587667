/*
 * fuzz_journal.c - libFuzzer target for the journal reader and replay.
 *
 * The first byte picks the mode:
 *   even  the rest is a segment file's bytes: header check, then every
 *         record read and replayed as the server does at start-up (bad
 *         lengths and checksums refused, a torn tail reported, never an
 *         out-of-bounds read);
 *   odd   the rest is a list of payloads, each a u16 length and that many
 *         bytes, turned into records with right checksums: the payloads
 *         reach the request-frame parser and, when they parse, the
 *         executor and every family's handlers, which must refuse bad
 *         arguments without crashing and leave stores that pass DEBUG
 *         AUDIT.
 *
 *   make fuzz && build-fuzz/fuzz_journal tests/fuzz/corpus/journal
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "journal.h"
#include "le.h"
#include "replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ASSERT(c)                                                              \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

static struct server srv;

static void replay_into_fresh_db(const char *buf, size_t len)
{
    struct replay_result res;
    char err[512];

    config_init(&srv.cfg);
    ASSERT(db_init(&srv.db) == 0);
    if (replay_buf(&srv, buf, len, true, &res, err, sizeof(err)) == 0) {
        ASSERT(res.good_len <= len);
        ASSERT(res.torn || res.good_len == len);
    } else {
        ASSERT(res.bad_off < len && err[0] != '\0');
    }
    ASSERT(!srv.clock_pinned);
    ASSERT(db_audit(&srv.db) == 0);
    db_deinit(&srv.db);
}

/* Odd mode: [u16 n][n bytes]... -> records with right checksums. */
static void checksummed(const uint8_t *p, size_t size)
{
    struct ur_buf b;

    ur_buf_init(&b);
    while (size >= 2) {
        size_t n = (size_t)p[0] | (size_t)p[1] << 8;
        char hdr[JOURNAL_REC_HDR];

        p += 2;
        size -= 2;
        if (n > size)
            n = size;
        if (n < JOURNAL_REC_MIN)
            n = size < JOURNAL_REC_MIN ? size : JOURNAL_REC_MIN;
        le_wr32(hdr, (uint32_t)n);
        le_wr64(hdr + 4, XXH3_64bits(p, n));
        ASSERT(ur_buf_append(&b, hdr, sizeof(hdr)) == 0);
        ASSERT(ur_buf_append(&b, p, n) == 0);
        p += n;
        size -= n;
    }
    replay_into_fresh_db(b.data ? b.data : "", b.len);
    ur_buf_deinit(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t seg;
    const char *why;
    char *copy;

    if (size < 1)
        return 0;
    if (data[0] & 1) {
        checksummed(data + 1, size - 1);
        return 0;
    }
    copy = malloc(size);
    ASSERT(copy != NULL);
    memcpy(copy, data + 1, size - 1);
    if (journal_hdr_check(copy, size - 1, &seg, &why) == 0)
        replay_into_fresh_db(copy + JOURNAL_HDR, size - 1 - JOURNAL_HDR);
    else
        replay_into_fresh_db(copy, size - 1);
    free(copy);
    return 0;
}
