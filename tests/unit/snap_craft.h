/*
 * snap_craft.h - builds a snapshot file around raw section bytes, every
 * length and checksum right, so that tests and the fuzzer reach a family's
 * loader with data only its own checks can refuse; and reads the snapshot a
 * db writes back into memory, for round trips. Test code only.
 */
#ifndef UR_SNAP_CRAFT_H
#define UR_SNAP_CRAFT_H

#include <lz4frame.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "fsutil.h"
#include "le.h"
#include "snapshot.h"

/* One section `id` holding raw[0..rawlen); *out is malloc'd; returns the
 * file length, 0 on allocation failure. */
static inline size_t snap_craft(uint32_t id, const void *raw, size_t rawlen,
                                char **out)
{
    size_t zcap = LZ4F_compressFrameBound(rawlen, NULL);
    char *b = calloc(1, SNAP_HDR + SNAP_SEC_HDR + zcap + SNAP_TRAILER);
    XXH3_state_t *h = XXH3_createState();
    size_t z = 0, off;
    char *s;

    if (b == NULL || h == NULL)
        goto fail;
    XXH3_64bits_reset(h);
    memcpy(b, SNAP_MAGIC, 8);
    le_wr32(b + 8, SNAP_VERSION);
    le_wr64(b + 24, 5);
    le_wr64(b + 32, XXH3_64bits(b, 32));
    XXH3_64bits_update(h, b, SNAP_HDR);
    s = b + SNAP_HDR;
    z = LZ4F_compressFrame(s + SNAP_SEC_HDR, zcap, raw, rawlen, NULL);
    if (LZ4F_isError(z))
        goto fail;
    le_wr32(s, id);
    le_wr64(s + 8, z);
    le_wr64(s + 16, rawlen);
    le_wr64(s + 24, XXH3_64bits(raw, rawlen));
    XXH3_64bits_update(h, s, SNAP_SEC_HDR);
    off = SNAP_HDR + SNAP_SEC_HDR + z;
    le_wr32(b + off + 4, 1);
    le_wr64(b + off + 8, off + SNAP_TRAILER);
    le_wr64(b + off + 16, XXH3_64bits_digest(h));
    memcpy(b + off + 24, SNAP_END_MAGIC, 8);
    XXH3_freeState(h);
    *out = b;
    return off + SNAP_TRAILER;

fail:
    XXH3_freeState(h);
    free(b);
    return 0;
}

/* The snapshot file db writes (created_ms and segment recorded as given),
 * read back into *out (malloc'd): the bytes a loader sees on a start.
 * Returns the file length, 0 on any failure (*out is then NULL). */
static inline size_t snap_image(const struct db *db, uint64_t created_ms,
                                uint64_t segment, char **out)
{
    char path[] = "/tmp/snap_image.XXXXXX";
    int fd = mkstemp(path);
    uint64_t bytes = 0;
    struct fs_map m;
    size_t len = 0;
    int rc;

    *out = NULL;
    if (fd < 0)
        return 0;
    rc = snapshot_write(fd, db, created_ms, segment, NULL, &bytes);
    close(fd);
    if (rc == 0 && fs_map_open(&m, path) == 0) {
        if (m.len == bytes && (*out = malloc(m.len)) != NULL) {
            memcpy(*out, m.data, m.len);
            len = m.len;
        }
        fs_map_close(&m);
    }
    unlink(path);
    return len;
}

#endif
