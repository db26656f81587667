/*
 * fuzz_snapshot.c - libFuzzer target for the snapshot loader.
 *
 * The first byte picks the mode:
 *   even  the rest is a snapshot file as read from disk: the container's
 *         checks (magic, version, lengths, LZ4, checksums, trailer) must
 *         refuse whatever is wrong without a crash or an out-of-bounds read;
 *   odd   the rest is the raw bytes of one section (id from the second
 *         byte, among the known ones and one unknown), wrapped in a valid
 *         container with right checksums, so the family's own loader sees
 *         the bytes: it must refuse bad data by itself.
 * A load that succeeds must leave stores that pass DEBUG AUDIT; every
 * load, good or bad, must free what it allocated (the db is thrown away as
 * the server throws it away on a refused start).
 *
 *   make fuzz && build-fuzz/fuzz_snapshot tests/fuzz/corpus/snapshot
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/snap_craft.h"
#include "snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ASSERT(c)                                                              \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

static void load_one(const char *buf, size_t len)
{
    struct snap_meta meta;
    struct db db;
    char err[512];

    ASSERT(db_init(&db) == 0);
    if (snapshot_load(buf, len, &db, &meta, err, sizeof(err)) == 0) {
        ASSERT(db_audit(&db) == 0);
        ASSERT(meta.bytes == len);
    } else {
        ASSERT(err[0] != '\0' && meta.bad_off <= len);
    }
    db_deinit(&db);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *file = NULL;
    size_t len;
    uint32_t id;

    if (size < 2)
        return 0;
    if ((data[0] & 1) == 0) {
        /* A private copy: the loader must not depend on bytes past len. */
        file = malloc(size - 1 ? size - 1 : 1);
        ASSERT(file != NULL);
        memcpy(file, data + 1, size - 1);
        load_one(file, size - 1);
        free(file);
        return 0;
    }
    id = snapshot_section_name(data[1]) != NULL ? data[1] : 1;
    if (data[1] == 0xFF)
        id = 0xFFFF; /* unknown */
    len = snap_craft(id, data + 2, size - 2, &file);
    ASSERT(len > 0);
    load_one(file, len);
    free(file);
    return 0;
}
