/*
 * snapshot.c - the snapshot container: see snapshot.h, and
 * docs/PERSISTENCE.md for the bytes.
 *
 * LZ4 frames carry a checksum of every compressed block as well as of the
 * content: a damaged byte in the compressed data can decode to the same
 * content (an offset into a run of equal bytes), and a file that is not
 * what was written should still be refused.
 *
 * A section's header holds lengths and a checksum known only once its data
 * is written, so the writer leaves 32 zero bytes, streams the LZ4 frame and
 * then patches the header in place (pwrite). The trailer's checksum covers
 * the file header and every section header, so a damaged length or id is
 * caught even where the data checks would not notice.
 */
#include "snapshot.h"

#include <errno.h>
#include <lz4frame.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "fsutil.h"
#include "le.h"
#include "sections.h"

#define RAW_CHUNK (64u << 10)

struct section {
    uint32_t id;
    const char *name;
    int (*save)(const struct db *db, struct snap_writer *w);
    int (*load)(struct db *db, struct snap_reader *r);
};

static const struct section sections[] = {
#define SECTION(id, name, save, load) {id, name, save, load},
#include "sections.def"
#undef SECTION
};

#define NSECTIONS (sizeof(sections) / sizeof(sections[0]))
_Static_assert(NSECTIONS <= SNAP_MAX_SECTIONS, "raise SNAP_MAX_SECTIONS");

const char *snapshot_section_name(uint32_t id)
{
    for (size_t i = 0; i < NSECTIONS; i++)
        if (sections[i].id == id)
            return sections[i].name;
    return NULL;
}

static const LZ4F_preferences_t lz4_prefs = {
    .frameInfo = {.blockSizeID = LZ4F_max64KB,
                  .contentChecksumFlag = LZ4F_contentChecksumEnabled,
                  .blockChecksumFlag = LZ4F_blockChecksumEnabled},
    .compressionLevel = 0,
};

/* ---- writing ------------------------------------------------------------ */

struct snap_writer {
    int fd;
    uint64_t off; /* bytes written to the file so far */
    int err;      /* first errno, 0 while healthy */
    LZ4F_cctx *cctx;
    char *raw; /* RAW_CHUNK bytes of the current section, not yet compressed */
    size_t raw_len;
    char *z; /* compressor output */
    size_t z_cap;
    XXH3_state_t *raw_hash; /* of the current section's raw bytes */
    XXH3_state_t *hdr_hash; /* of the file header and every section header */
    uint64_t sec_off;       /* file offset of the current section's header */
    uint64_t sec_raw;       /* raw bytes of the current section compressed */
    const struct snap_origin *origin; /* for sec_origin_save; NULL: none */
    /* snap_mem_writer's: raw holds everything put, raw_cap bytes */
    bool mem;
    size_t raw_cap;
};

static int w_fail(struct snap_writer *w, int err)
{
    if (w->err == 0)
        w->err = err;
    return -1;
}

static int w_write(struct snap_writer *w, const void *p, size_t n)
{
    if (w->err != 0)
        return -1;
    if (fs_write_all(w->fd, p, n) != 0)
        return w_fail(w, errno);
    w->off += n;
    return 0;
}

/* Compresses the pending raw bytes into the current frame. */
static int w_compress(struct snap_writer *w)
{
    size_t z;

    if (w->err != 0)
        return -1;
    if (w->raw_len == 0)
        return 0;
    XXH3_64bits_update(w->raw_hash, w->raw, w->raw_len);
    z = LZ4F_compressUpdate(w->cctx, w->z, w->z_cap, w->raw, w->raw_len, NULL);
    if (LZ4F_isError(z))
        return w_fail(w, EIO);
    w->sec_raw += w->raw_len;
    w->raw_len = 0;
    return w_write(w, w->z, z);
}

/* A memory writer's put: the buffer grows (doubling). */
static int mem_put(struct snap_writer *w, const void *p, size_t n)
{
    if (n > w->raw_cap - w->raw_len) {
        size_t cap = w->raw_cap;
        char *more;

        while (n > cap - w->raw_len)
            cap = cap > SIZE_MAX / 2 ? SIZE_MAX : 2 * cap;
        more = realloc(w->raw, cap);
        if (more == NULL)
            return w_fail(w, ENOMEM);
        w->raw = more;
        w->raw_cap = cap;
    }
    memcpy(w->raw + w->raw_len, p, n);
    w->raw_len += n;
    return 0;
}

int snap_put(struct snap_writer *w, const void *p, size_t n)
{
    const char *c = p;

    if (w->err != 0)
        return -1;
    if (w->mem)
        return mem_put(w, p, n);
    while (n > 0) {
        size_t k = RAW_CHUNK - w->raw_len;

        if (k > n)
            k = n;
        memcpy(w->raw + w->raw_len, c, k);
        w->raw_len += k;
        c += k;
        n -= k;
        if (w->raw_len == RAW_CHUNK && w_compress(w) != 0)
            return -1;
    }
    return 0;
}

int snap_put_u8(struct snap_writer *w, uint8_t v)
{
    return snap_put(w, &v, 1);
}

int snap_put_u32(struct snap_writer *w, uint32_t v)
{
    char b[4];

    le_wr32(b, v);
    return snap_put(w, b, sizeof(b));
}

int snap_put_u64(struct snap_writer *w, uint64_t v)
{
    char b[8];

    le_wr64(b, v);
    return snap_put(w, b, sizeof(b));
}

int snap_put_varint(struct snap_writer *w, uint64_t v)
{
    unsigned char b[10];
    size_t n = 0;

    while (v >= 0x80) {
        b[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    b[n++] = (unsigned char)v;
    return snap_put(w, b, n);
}

bool snap_put_failed(const struct snap_writer *w)
{
    return w->err != 0;
}

static int section_begin(struct snap_writer *w)
{
    char zero[SNAP_SEC_HDR] = {0};
    size_t z;

    w->sec_off = w->off;
    w->sec_raw = 0;
    XXH3_64bits_reset(w->raw_hash);
    if (w_write(w, zero, sizeof(zero)) != 0)
        return -1;
    z = LZ4F_compressBegin(w->cctx, w->z, w->z_cap, &lz4_prefs);
    if (LZ4F_isError(z))
        return w_fail(w, EIO);
    return w_write(w, w->z, z);
}

static int section_end(struct snap_writer *w, uint32_t id)
{
    char h[SNAP_SEC_HDR];
    size_t z;

    if (w_compress(w) != 0)
        return -1;
    z = LZ4F_compressEnd(w->cctx, w->z, w->z_cap, NULL);
    if (LZ4F_isError(z))
        return w_fail(w, EIO);
    if (w_write(w, w->z, z) != 0)
        return -1;
    le_wr32(h, id);
    le_wr32(h + 4, 0);
    le_wr64(h + 8, w->off - w->sec_off - SNAP_SEC_HDR);
    le_wr64(h + 16, w->sec_raw);
    le_wr64(h + 24, XXH3_64bits_digest(w->raw_hash));
    XXH3_64bits_update(w->hdr_hash, h, sizeof(h));
    if (fs_pwrite_all(w->fd, h, sizeof(h), w->sec_off) != 0)
        return w_fail(w, errno);
    return 0;
}

/*
 * Section 11, the origin (struct snap_origin): replid and replid2 as 40
 * bytes each, offset and offset2 as u64, has2 as a u8. Empty when the
 * writer has no origin. Defined here rather than in a sec_<family>.c: the
 * origin belongs to the file, not to a store.
 */
int sec_origin_save(const struct db *db, struct snap_writer *w)
{
    const struct snap_origin *o = w->origin;

    (void)db;
    if (o == NULL)
        return 0;
    if (snap_put(w, o->replid, SNAP_REPLID) != 0 ||
        snap_put(w, o->replid2, SNAP_REPLID) != 0 ||
        snap_put_u64(w, o->offset) != 0 || snap_put_u64(w, o->offset2) != 0)
        return -1;
    return snap_put_u8(w, o->has2 ? 1 : 0);
}

static int write_all_sections(struct snap_writer *w, const struct db *db,
                              uint64_t created_ms, uint64_t segment)
{
    char h[SNAP_HDR], t[SNAP_TRAILER];

    memcpy(h, SNAP_MAGIC, 8);
    le_wr32(h + 8, SNAP_VERSION);
    le_wr32(h + 12, 0);
    le_wr64(h + 16, created_ms);
    le_wr64(h + 24, segment);
    le_wr64(h + 32, XXH3_64bits(h, 32));
    XXH3_64bits_update(w->hdr_hash, h, sizeof(h));
    if (w_write(w, h, sizeof(h)) != 0)
        return -1;
    for (size_t i = 0; i < NSECTIONS; i++) {
        if (section_begin(w) != 0 || sections[i].save(db, w) != 0 ||
            section_end(w, sections[i].id) != 0)
            return w_fail(w, EIO);
    }
    le_wr32(t, 0);
    le_wr32(t + 4, (uint32_t)NSECTIONS);
    le_wr64(t + 8, w->off + SNAP_TRAILER);
    le_wr64(t + 16, XXH3_64bits_digest(w->hdr_hash));
    memcpy(t + 24, SNAP_END_MAGIC, 8);
    return w_write(w, t, sizeof(t));
}

int snapshot_write(int fd, const struct db *db, uint64_t created_ms,
                   uint64_t segment, const struct snap_origin *origin,
                   uint64_t *bytes)
{
    struct snap_writer w = {.fd = fd, .origin = origin};
    int rc = -1;

    w.z_cap = LZ4F_compressBound(RAW_CHUNK, &lz4_prefs) + LZ4F_HEADER_SIZE_MAX;
    w.raw = malloc(RAW_CHUNK);
    w.z = malloc(w.z_cap);
    w.raw_hash = XXH3_createState();
    w.hdr_hash = XXH3_createState();
    if (w.raw == NULL || w.z == NULL || w.raw_hash == NULL ||
        w.hdr_hash == NULL ||
        LZ4F_isError(LZ4F_createCompressionContext(&w.cctx, LZ4F_VERSION))) {
        w.err = ENOMEM;
        goto out;
    }
    XXH3_64bits_reset(w.hdr_hash);
    if (write_all_sections(&w, db, created_ms, segment) == 0) {
        *bytes = w.off;
        rc = 0;
    }

out:
    LZ4F_freeCompressionContext(w.cctx);
    XXH3_freeState(w.hdr_hash);
    XXH3_freeState(w.raw_hash);
    free(w.z);
    free(w.raw);
    if (rc != 0)
        errno = w.err ? w.err : EIO;
    return rc;
}

struct snap_writer *snap_mem_writer(void)
{
    struct snap_writer *w = calloc(1, sizeof(*w));

    if (w == NULL)
        return NULL;
    w->fd = -1;
    w->mem = true;
    w->raw_cap = 256;
    w->raw = malloc(w->raw_cap);
    if (w->raw == NULL) {
        free(w);
        return NULL;
    }
    return w;
}

char *snap_mem_bytes(struct snap_writer *w, size_t *len)
{
    *len = w->raw_len;
    return w->raw;
}

void snap_mem_truncate(struct snap_writer *w, size_t len)
{
    if (len < w->raw_len)
        w->raw_len = len;
    if (len == 0)
        w->err = 0;
}

void snap_mem_free(struct snap_writer *w)
{
    if (w == NULL)
        return;
    free(w->raw);
    free(w);
}

/* ---- reading ------------------------------------------------------------ */

struct snap_reader {
    const char *zp, *zend; /* compressed bytes of the section not yet fed */
    LZ4F_dctx *dctx;
    char *raw; /* RAW_CHUNK bytes: decompressed window */
    size_t raw_len, raw_pos;
    bool done;          /* the LZ4 frame ended */
    uint64_t raw_total; /* raw bytes decompressed so far */
    XXH3_state_t *hash; /* of the raw bytes */
    const char *name;   /* section, for messages */
    uint64_t sec_off;
    bool failed;
    char *err;
    size_t errlen;
    struct snap_meta *meta; /* sec_origin_load fills its origin */
};

int snap_fail(struct snap_reader *r, const char *fmt, ...)
{
    uint64_t at = r->raw_total - (r->raw_len - r->raw_pos);
    va_list ap;
    int n;

    if (r->failed)
        return -1;
    r->failed = true;
    n = snprintf(r->err, r->errlen, "offset %llu: section %s, raw byte %llu: ",
                 (unsigned long long)r->sec_off, r->name,
                 (unsigned long long)at);
    if (n >= 0 && (size_t)n < r->errlen) {
        va_start(ap, fmt);
        vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Decompresses the next raw bytes into the window. false at the end of the
 * frame or on failure (then r->failed). */
static bool r_refill(struct snap_reader *r)
{
    r->raw_pos = r->raw_len = 0;
    while (!r->done && !r->failed) {
        size_t dst = RAW_CHUNK, src = (size_t)(r->zend - r->zp);
        size_t rc = LZ4F_decompress(r->dctx, r->raw, &dst, r->zp, &src, NULL);

        if (LZ4F_isError(rc)) {
            snap_fail(r, "lz4: %s", LZ4F_getErrorName(rc));
            return false;
        }
        r->zp += src;
        if (rc == 0)
            r->done = true;
        if (dst > 0) {
            XXH3_64bits_update(r->hash, r->raw, dst);
            r->raw_len = dst;
            r->raw_total += dst;
            return true;
        }
        if (src == 0 && !r->done) {
            snap_fail(r, "compressed data cut short");
            return false;
        }
    }
    return false;
}

bool snap_more(struct snap_reader *r)
{
    if (r->failed)
        return false;
    return r->raw_pos < r->raw_len || r_refill(r);
}

int snap_get(struct snap_reader *r, void *p, size_t n)
{
    char *c = p;

    while (n > 0) {
        size_t k;

        if (r->raw_pos == r->raw_len && !r_refill(r))
            return r->failed ? -1
                             : snap_fail(r, "section ends inside a record");
        k = r->raw_len - r->raw_pos;
        if (k > n)
            k = n;
        memcpy(c, r->raw + r->raw_pos, k);
        r->raw_pos += k;
        c += k;
        n -= k;
    }
    return 0;
}

int snap_get_u8(struct snap_reader *r, uint8_t *v)
{
    return snap_get(r, v, 1);
}

int snap_get_u32(struct snap_reader *r, uint32_t *v)
{
    char b[4];

    if (snap_get(r, b, sizeof(b)) != 0)
        return -1;
    *v = le_rd32(b);
    return 0;
}

int snap_get_u64(struct snap_reader *r, uint64_t *v)
{
    char b[8];

    if (snap_get(r, b, sizeof(b)) != 0)
        return -1;
    *v = le_rd64(b);
    return 0;
}

int snap_get_varint(struct snap_reader *r, uint64_t max, uint64_t *v)
{
    uint64_t x = 0;

    for (unsigned shift = 0; shift < 64; shift += 7) {
        uint8_t b;

        if (snap_get_u8(r, &b) != 0)
            return -1;
        if (shift == 63 && b > 1)
            break;
        x |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            if (x > max || (b == 0 && shift > 0))
                break;
            *v = x;
            return 0;
        }
    }
    return snap_fail(r, "bad varint (overlong, or above %llu)",
                     (unsigned long long)max);
}

/* State of one load: the reader (reused by every section) and the result. */
struct loader {
    const char *buf;
    size_t len;
    struct snap_reader r;
    XXH3_state_t *hdr_hash;
    struct snap_meta *meta;
    char *err;
    size_t errlen;
};

static int fail_at(struct loader *L, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail_at(struct loader *L, uint64_t off, const char *fmt, ...)
{
    va_list ap;
    int n;

    L->meta->bad_off = off;
    n = snprintf(L->err, L->errlen, "offset %llu: ", (unsigned long long)off);
    if (n >= 0 && (size_t)n < L->errlen) {
        va_start(ap, fmt);
        vsnprintf(L->err + n, L->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static bool hex_id(const char *id)
{
    for (int i = 0; i < SNAP_REPLID; i++)
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
            return false;
    return true;
}

/* The origin section (sec_origin_save): empty, or one origin whose ids are
 * 40 lower-case hex digits. */
int sec_origin_load(struct db *db, struct snap_reader *r)
{
    struct snap_origin *o = &r->meta->origin;
    uint8_t has2;

    (void)db;
    if (!snap_more(r))
        return 0;
    if (snap_get(r, o->replid, SNAP_REPLID) != 0 ||
        snap_get(r, o->replid2, SNAP_REPLID) != 0 ||
        snap_get_u64(r, &o->offset) != 0 || snap_get_u64(r, &o->offset2) != 0 ||
        snap_get_u8(r, &has2) != 0)
        return -1;
    o->replid[SNAP_REPLID] = o->replid2[SNAP_REPLID] = '\0';
    if (!hex_id(o->replid) || !hex_id(o->replid2))
        return snap_fail(r, "replication id is not 40 hex digits");
    if (has2 > 1)
        return snap_fail(r, "bad flag %u", has2);
    o->has2 = has2 == 1;
    r->meta->has_origin = true;
    return 0;
}

static int check_header(struct loader *L)
{
    const char *h = L->buf;

    if (L->len < SNAP_HDR)
        return fail_at(L, 0,
                       "file shorter than the %d-byte header "
                       "(truncated)",
                       SNAP_HDR);
    if (memcmp(h, SNAP_MAGIC, 8) != 0)
        return fail_at(L, 0, "bad magic (not an unreadd snapshot)");
    L->meta->version = le_rd32(h + 8);
    if (L->meta->version != SNAP_VERSION)
        return fail_at(L, 8,
                       "unknown format version %u (this unreadd reads "
                       "version %d)",
                       L->meta->version, SNAP_VERSION);
    if (le_rd64(h + 32) != XXH3_64bits(h, 32))
        return fail_at(L, 32, "header checksum mismatch");
    if (le_rd32(h + 12) != 0)
        return fail_at(L, 12, "unknown header flags");
    L->meta->created_ms = le_rd64(h + 16);
    L->meta->segment = le_rd64(h + 24);
    XXH3_64bits_update(L->hdr_hash, h, SNAP_HDR);
    return 0;
}

/* Streams one section's frame through its family's loader, then checks
 * that the family read it all and that lengths and checksums agree. */
static int load_section(struct loader *L, const struct section *s, uint64_t off,
                        struct db *db)
{
    const char *h = L->buf + off;
    uint64_t zlen = le_rd64(h + 8), rawlen = le_rd64(h + 16);
    struct snap_reader *r = &L->r;

    LZ4F_resetDecompressionContext(r->dctx);
    XXH3_64bits_reset(r->hash);
    r->zp = h + SNAP_SEC_HDR;
    r->zend = r->zp + zlen;
    r->raw_len = r->raw_pos = 0;
    r->done = false;
    r->raw_total = 0;
    r->name = s->name;
    r->sec_off = off;
    if (s->load(db, r) != 0 || r->failed) {
        L->meta->bad_off = off;
        return r->failed ? -1 : fail_at(L, off, "section %s refused", s->name);
    }
    if (snap_more(r))
        return fail_at(L, off, "section %s: raw bytes left unread", s->name);
    if (r->failed) {
        L->meta->bad_off = off;
        return -1;
    }
    if (r->zp != r->zend)
        return fail_at(L, off, "section %s: bytes after its LZ4 frame",
                       s->name);
    if (r->raw_total != rawlen)
        return fail_at(L, off,
                       "section %s: raw length %llu, header says "
                       "%llu",
                       s->name, (unsigned long long)r->raw_total,
                       (unsigned long long)rawlen);
    if (XXH3_64bits_digest(r->hash) != le_rd64(h + 24))
        return fail_at(L, off, "section %s: checksum mismatch", s->name);
    return 0;
}

static int check_trailer(struct loader *L, uint64_t off)
{
    const char *t = L->buf + off;

    if (memcmp(t + 24, SNAP_END_MAGIC, 8) != 0)
        return fail_at(L, off, "bad trailer magic");
    if (le_rd32(t + 4) != L->meta->nsections)
        return fail_at(L, off, "trailer counts %u sections, file has %u",
                       le_rd32(t + 4), L->meta->nsections);
    if (le_rd64(t + 8) != L->len)
        return fail_at(L, off,
                       "trailer says the file has %llu bytes, it "
                       "has %zu",
                       (unsigned long long)le_rd64(t + 8), L->len);
    if (le_rd64(t + 16) != XXH3_64bits_digest(L->hdr_hash))
        return fail_at(L, off, "header checksum in the trailer mismatch");
    if (off + SNAP_TRAILER != L->len)
        return fail_at(L, off + SNAP_TRAILER, "bytes after the trailer");
    return 0;
}

static int load_all(struct loader *L, struct db *db)
{
    struct snap_meta *m = L->meta;
    uint64_t off = SNAP_HDR;
    uint32_t last = 0;

    if (check_header(L) != 0)
        return -1;
    for (;;) {
        const char *h = L->buf + off;
        const struct section *s = NULL;
        uint32_t id;

        if (L->len - off < SNAP_SEC_HDR)
            return fail_at(L, off,
                           "file ends without a trailer "
                           "(truncated)");
        id = le_rd32(h);
        if (id == 0)
            return check_trailer(L, off);
        for (size_t i = 0; i < NSECTIONS; i++)
            if (sections[i].id == id)
                s = &sections[i];
        if (s == NULL)
            return fail_at(L, off,
                           "unknown section id %u (written by a "
                           "newer unreadd?)",
                           id);
        if (id <= last)
            return fail_at(L, off, "section %u out of order or repeated", id);
        if (le_rd32(h + 4) != 0)
            return fail_at(L, off + 4, "unknown section flags");
        if (le_rd64(h + 8) > L->len - off - SNAP_SEC_HDR)
            return fail_at(L, off, "section %s cut short (truncated file)",
                           s->name);
        m->sec[m->nsections] = (struct snap_section_info){
            id, s->name, off, le_rd64(h + 8), le_rd64(h + 16)};
        m->nsections++;
        XXH3_64bits_update(L->hdr_hash, h, SNAP_SEC_HDR);
        if (load_section(L, s, off, db) != 0)
            return -1;
        off += SNAP_SEC_HDR + le_rd64(h + 8);
        last = id;
    }
}

int snapshot_load(const char *buf, size_t len, struct db *db,
                  struct snap_meta *meta, char *err, size_t errlen)
{
    struct loader L = {
        .buf = buf, .len = len, .meta = meta, .err = err, .errlen = errlen};
    int rc = -1;

    memset(meta, 0, sizeof(*meta));
    meta->bytes = len;
    L.r.err = err;
    L.r.errlen = errlen;
    L.r.meta = meta;
    L.r.raw = malloc(RAW_CHUNK);
    L.r.hash = XXH3_createState();
    L.hdr_hash = XXH3_createState();
    if (L.r.raw == NULL || L.r.hash == NULL || L.hdr_hash == NULL ||
        LZ4F_isError(
            LZ4F_createDecompressionContext(&L.r.dctx, LZ4F_VERSION))) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    XXH3_64bits_reset(L.hdr_hash);
    rc = load_all(&L, db);

out:
    LZ4F_freeDecompressionContext(L.r.dctx);
    XXH3_freeState(L.hdr_hash);
    XXH3_freeState(L.r.hash);
    free(L.r.raw);
    return rc;
}

int snap_mem_load(const char *buf, size_t len, const char *name,
                  int (*load)(struct db *db, struct snap_reader *r),
                  struct db *db, char *err, size_t errlen)
{
    struct snap_reader r = {0};

    /* The whole input is the window, already "decompressed": snap_get
     * only reads it (r_refill finds the frame done). */
    r.raw = (char *)(uintptr_t)buf;
    r.raw_len = len;
    r.raw_total = len;
    r.done = true;
    r.name = name;
    r.err = err;
    r.errlen = errlen;
    if (load(db, &r) != 0 || r.failed) {
        if (!r.failed)
            snprintf(err, errlen, "%s refused", name);
        return -1;
    }
    if (r.raw_pos != r.raw_len) {
        snprintf(err, errlen, "%s: raw bytes left unread", name);
        return -1;
    }
    return 0;
}
