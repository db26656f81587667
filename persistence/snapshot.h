/*
 * snapshot.h - the snapshot container (docs/PERSISTENCE.md, byte by byte):
 * a versioned header, one section per family, each an LZ4 frame of the
 * family's raw bytes with an XXH3 checksum, and a trailer that proves the
 * file is whole.
 *
 * The container knows nothing of the families: each adds one row to
 * sections.def, naming a save function that writes its store as raw bytes
 * through snap_put* and a load function that reads them back through
 * snap_get*. Raw bytes stream through fixed 64 KiB buffers both ways, so
 * neither writing nor loading ever holds a store's serialised form in
 * memory.
 *
 * The loader takes the file as one buffer (a read-only map of it, or the
 * fuzzer's input), checks every length against the bytes present before
 * using it and allocates nothing a length field asks for: bad bytes give an
 * error naming the offset, never a crash.
 */
#ifndef UR_SNAPSHOT_H
#define UR_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"

#define SNAP_MAGIC "URSNAP\0\0" /* 8 bytes */
#define SNAP_END_MAGIC "URSNEND\0"
#define SNAP_VERSION 1
#define SNAP_HDR 40     /* magic, version, flags, created, segment, XXH3 */
#define SNAP_SEC_HDR 32 /* id, flags, compressed len, raw len, XXH3(raw) */
#define SNAP_TRAILER 32 /* id 0, sections, file len, XXH3(headers), magic */
#define SNAP_MAX_SECTIONS 64

/* ---- what a family's save and load functions use ---------------------- */

struct snap_writer;
struct snap_reader;

/* Append raw bytes to the current section. 0, or -1 after the first write
 * error (errno kept in the writer; later calls do nothing and fail). */
int snap_put(struct snap_writer *w, const void *p, size_t n);
int snap_put_u8(struct snap_writer *w, uint8_t v);
int snap_put_u32(struct snap_writer *w, uint32_t v);
int snap_put_u64(struct snap_writer *w, uint64_t v);
/* LEB128, 1 byte for values < 128, at most 10. */
int snap_put_varint(struct snap_writer *w, uint64_t v);
/* Whether a write failed: save functions whose walk calls snap_put* from
 * a callback check it between walk steps. */
bool snap_put_failed(const struct snap_writer *w);

/* Reads exactly n raw bytes of the current section. 0, or -1 when the
 * section ends first or its data is corrupt (the reader has failed). */
int snap_get(struct snap_reader *r, void *p, size_t n);
int snap_get_u8(struct snap_reader *r, uint8_t *v);
int snap_get_u32(struct snap_reader *r, uint32_t *v);
int snap_get_u64(struct snap_reader *r, uint64_t *v);
/* A LEB128 value of at most max (overlong or larger: failure). */
int snap_get_varint(struct snap_reader *r, uint64_t max, uint64_t *v);
/* Whether raw bytes remain in the section: loaders read records while it
 * says so. false also once the reader has failed. */
bool snap_more(struct snap_reader *r);
/* Marks the reader failed with a message (prefixed with the section and
 * raw offset); returns -1 for the loader to return. */
int snap_fail(struct snap_reader *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * The same calls over memory (persistence/userrec.c: one user's records
 * in each section's format): raw bytes only, no LZ4 frame, no checksum
 * (the user record has its own).
 *
 * snap_mem_writer: a writer appending to a buffer of its own; NULL on no
 * memory. snap_mem_bytes: what it holds, which the caller may patch in
 * place (valid until the next put);
 * snap_mem_truncate: back to len bytes (len <= what it holds), the error
 * cleared when len is 0; snap_mem_free accepts NULL.
 *
 * snap_mem_load: runs load (a section's) on buf[0..len) as the raw bytes
 * of section name, into db. 0, or -1 with the loader's message in err
 * (raw offsets count from buf).
 */
struct snap_writer *snap_mem_writer(void);
char *snap_mem_bytes(struct snap_writer *w, size_t *len);
void snap_mem_truncate(struct snap_writer *w, size_t len);
void snap_mem_free(struct snap_writer *w);
int snap_mem_load(const char *buf, size_t len, const char *name,
                  int (*load)(struct db *db, struct snap_reader *r),
                  struct db *db, char *err, size_t errlen);

/* ---- the container ------------------------------------------------------ */

struct snap_section_info {
    uint32_t id;
    const char *name; /* from sections.def */
    uint64_t off;     /* file offset of the section header */
    uint64_t zlen;    /* compressed bytes */
    uint64_t rawlen;
};

/*
 * The replication origin of a snapshot's data (persist.h, docs/
 * PERSISTENCE.md "Replication"): the replication history it belongs to
 * (replid, 40 hex digits), how many bytes of that history's stream it
 * holds (offset), and the history it forked from and shares up to offset2
 * (has2). Section 11 ("origin") of the file.
 */
#define SNAP_REPLID 40
struct snap_origin {
    char replid[SNAP_REPLID + 1];
    char replid2[SNAP_REPLID + 1];
    uint64_t offset;
    uint64_t offset2;
    bool has2;
};

struct snap_meta {
    uint32_t version;
    uint64_t created_ms;
    uint64_t segment; /* journal segments <= this are covered */
    uint64_t bytes;   /* file length */
    unsigned nsections;
    struct snap_section_info sec[SNAP_MAX_SECTIONS];
    uint64_t bad_off; /* on failure: file offset of the first bad part */
    bool has_origin;  /* the file has an origin section (older ones not) */
    struct snap_origin origin;
};

/*
 * Writes a whole snapshot of db to fd at its current offset (a new, empty
 * file): created_ms and the journal segment it covers go to the header,
 * origin (NULL: none, an empty section) to the origin section. *bytes =
 * the file length. 0, or -1 with errno (the file then holds garbage and
 * must be removed). The caller fsyncs and renames.
 */
int snapshot_write(int fd, const struct db *db, uint64_t created_ms,
                   uint64_t segment, const struct snap_origin *origin,
                   uint64_t *bytes);

/*
 * Loads the snapshot in buf[0..len) into db, which must be empty (fresh
 * from db_init). 0 with *meta filled; -1 with a message in err naming the
 * offset (meta->bad_off) and the problem: bad magic, unknown version, a
 * checksum mismatch, a truncated file, an unknown or repeated section, a
 * section whose data its family refuses. On failure db holds part of the
 * data: the caller throws it away.
 */
int snapshot_load(const char *buf, size_t len, struct db *db,
                  struct snap_meta *meta, char *err, size_t errlen);

/* The name of section id from sections.def, or NULL. */
const char *snapshot_section_name(uint32_t id);

#endif
