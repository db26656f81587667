/*
 * fuzz_userrec.c - libFuzzer target for the user record's parser
 * (persistence/userrec.h): RESTORE's payload, from a client or another
 * node.
 *
 * The input is a record, restored as id 7 into a db that holds a few
 * global objects (groups 900 and 901, channel 33, dot 44, author 55) and
 * a user 7 already (so REPLACE's path runs too): whatever the bytes,
 * there must be no crash or out-of-bounds read; a refused record must
 * leave the db as it was (user 7's record unchanged); an accepted one must
 * leave stores that pass DEBUG AUDIT, dump again into a record that is
 * accepted, and delete to nothing. Inputs with a bad checksum stop at the
 * first check: the first byte of the input, when 0xFF, asks for the rest
 * to be sealed (its last 8 bytes replaced with the right XXH3) so the
 * parts' parsers see the bytes.
 *
 *   make fuzz && build-fuzz/fuzz_userrec tests/fuzz/corpus/userrec
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "bc.h"
#include "cnt.h"
#include "dot.h"
#include "feed.h"
#include "grp.h"
#include "le.h"
#include "userrec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ASSERT(c)                                                              \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

static void globals(struct db *db)
{
    uint64_t seq, head, push, u;
    uint32_t v;
    bool reg;

    ASSERT(grp_post(db->grp, 900, 1700000000000ull, 10, &seq) == GRP_OK);
    ASSERT(grp_post(db->grp, 900, 1700000000001ull, 10, &seq) == GRP_OK);
    ASSERT(grp_join(db->grp, 8, 901, 100, &u) == GRP_OK);
    ASSERT(bc_publish(db->bc, 33, &head) == 0);
    ASSERT(bc_unread(db->bc, 8, 33, &u, &reg) == 0);
    ASSERT(dot_push(db->dot, 44, 1700000000000ull, &push) == 0);
    ASSERT(feed_post(db->feed, 55, 3, &v) == 0);
    ASSERT(cnt_incr(db->cnt, 7, 1, 5, &v, &u) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct db db;
    char err[256], *rec, *before = NULL, *again;
    const char *p;
    size_t n, blen = 0, m;
    bool seal;

    if (size < 1)
        return 0;
    seal = data[0] == 0xFF;
    n = size - 1;
    rec = malloc(n ? n : 1); /* private: no bytes past n to lean on */
    ASSERT(rec != NULL);
    memcpy(rec, data + 1, n);
    if (seal && n >= USERREC_TRAILER)
        le_wr64(rec + n - USERREC_TRAILER,
                XXH3_64bits(rec, n - USERREC_TRAILER));
    ASSERT(db_init(&db) == 0);
    globals(&db);
    if (userrec_dump(&db, 7, &p, &blen) == 0) {
        before = malloc(blen);
        ASSERT(before != NULL);
        memcpy(before, p, blen);
    }
    for (int replace = 0; replace < 2; replace++) {
        enum userrec_rc rc =
            userrec_restore(&db, 7, rec, n, replace, err, sizeof(err));

        ASSERT(rc != USERREC_NOMEM);
        if (rc != USERREC_OK) {
            ASSERT(err[0] != '\0');
            ASSERT(before == NULL || (userrec_dump(&db, 7, &p, &m) == 0 &&
                                      m == blen && memcmp(p, before, m) == 0));
            continue;
        }
        ASSERT(db_audit(&db) == 0);
        ASSERT(userrec_dump(&db, 7, &p, &m) == 0);
        again = malloc(m);
        ASSERT(again != NULL);
        memcpy(again, p, m);
        ASSERT(userrec_restore(&db, 7, again, m, true, err, sizeof(err)) ==
               USERREC_OK);
        free(again);
        userrec_delete(&db, 7);
        ASSERT(!userrec_exists(&db, 7));
        ASSERT(db_audit(&db) == 0);
        break;
    }
    free(before);
    free(rec);
    db_deinit(&db);
    userrec_teardown();
    return 0;
}
