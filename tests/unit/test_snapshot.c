/*
 * test_snapshot.c - the snapshot container and the CNT section: round
 * trips against a naive model, and every kind of damage (truncation at
 * every offset, every byte flipped, wrong version, crafted sections whose
 * checksums are right but whose data is not) refused with an offset,
 * never a crash.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "cnt.h"
#include "le.h"
#include "snap_craft.h"
#include "snapshot.h"
#include "t.h"

#define CREATED_MS 1234567

/* Loads buf into a fresh db; returns snapshot_load's result, err filled. */
static int load(const char *buf, size_t len, struct db *db,
                struct snap_meta *meta, char *err, size_t errlen)
{
    CHECK(db_init(db) == 0);
    return snapshot_load(buf, len, db, meta, err, errlen);
}

/* A db of users 0..4999 with random counters: 0 to 6 types, values from
 * 1 to UINT32_MAX, so every inline form and records appear. */
static void fill(struct db *db, unsigned seed)
{
    uint32_t v;
    uint64_t total;

    srand(seed);
    CHECK(db_init(db) == 0);
    for (uint64_t uid = 0; uid < 5000; uid++) {
        unsigned n = (unsigned)rand() % 7;
        for (unsigned i = 0; i < n; i++) {
            uint32_t val = (uint32_t)rand();
            if (rand() % 4 == 0)
                val %= 100;
            if (rand() % 50 == 0)
                val = UINT32_MAX;
            cnt_set(db->cnt, uid * 7919, (unsigned)rand() % 64, val, &v,
                    &total);
        }
    }
}

static void test_round_trip(void)
{
    struct db a, b;
    struct snap_meta meta;
    char *buf, err[256];
    size_t len;

    fill(&a, 1);
    len = snap_image(&a, CREATED_MS, 42, &buf);
    CHECK(len > 0);
    CHECK(load(buf, len, &b, &meta, err, sizeof(err)) == 0);
    CHECK_EQ_U64(meta.segment, 42);
    CHECK_EQ_U64(meta.created_ms, CREATED_MS);
    CHECK_EQ_U64(meta.version, SNAP_VERSION);
    CHECK(meta.nsections >= 1 && strcmp(meta.sec[0].name, "cnt") == 0);
    CHECK(cnt_entries(b.cnt) > 3000);
    /* compare by scanning a's uids (uid * 7919 for uid < 5000) */
    bool same = cnt_entries(a.cnt) == cnt_entries(b.cnt);
    for (uint64_t uid = 0; uid < 5000 && same; uid++) {
        uint8_t t1[CNT_TYPES], t2[CNT_TYPES];
        uint32_t v1[CNT_TYPES], v2[CNT_TYPES];
        unsigned n1 = cnt_getall(a.cnt, uid * 7919, t1, v1);
        unsigned n2 = cnt_getall(b.cnt, uid * 7919, t2, v2);
        same = n1 == n2 && memcmp(t1, t2, n1) == 0 &&
               memcmp(v1, v2, n1 * sizeof(uint32_t)) == 0;
    }
    CHECK(same);
    CHECK_EQ_U64(cnt_audit(b.cnt), 0);
    db_deinit(&a);
    db_deinit(&b);
    free(buf);
}

static void test_empty(void)
{
    struct db a, b;
    struct snap_meta meta;
    char *buf, err[256];
    size_t len;

    CHECK(db_init(&a) == 0);
    len = snap_image(&a, CREATED_MS, 0, &buf);
    CHECK(len > 0);
    CHECK(load(buf, len, &b, &meta, err, sizeof(err)) == 0);
    CHECK_EQ_U64(cnt_entries(b.cnt), 0);
    /* an empty store costs its section header and a near-empty frame */
    CHECK(len <=
          SNAP_HDR + SNAP_TRAILER + meta.nsections * (SNAP_SEC_HDR + 32));
    db_deinit(&a);
    db_deinit(&b);
    free(buf);
}

/* Many chunks of raw bytes and LZ4 blocks: 300k users. */
static void test_large(void)
{
    struct db a, b;
    struct snap_meta meta;
    char *buf, err[256];
    uint32_t v;
    uint64_t total;
    size_t len;

    CHECK(db_init(&a) == 0);
    for (uint64_t uid = 1; uid <= 300000; uid++) {
        cnt_set(a.cnt, uid, 0, (uint32_t)(uid % 1000) + 1, &v, &total);
        cnt_set(a.cnt, uid, 3, 7, &v, &total);
    }
    len = snap_image(&a, CREATED_MS, 9, &buf);
    CHECK(len > 0);
    CHECK(load(buf, len, &b, &meta, err, sizeof(err)) == 0);
    CHECK_EQ_U64(cnt_entries(b.cnt), 300000);
    /* uid, n, two (type, varint) pairs: 13 bytes, 14 for values >= 128 */
    uint64_t raw = 0;
    for (uint64_t uid = 1; uid <= 300000; uid++)
        raw += (uid % 1000) + 1 < 128 ? 13 : 14;
    CHECK_EQ_U64(meta.sec[0].rawlen, raw);
    CHECK(meta.sec[0].zlen < raw);
    CHECK_EQ_U64(cnt_get(b.cnt, 299999, 0), 299999 % 1000 + 1);
    CHECK_EQ_U64(cnt_total(b.cnt, 123456), 123456 % 1000 + 1 + 7);
    CHECK_EQ_U64(cnt_audit(b.cnt), 0);
    db_deinit(&a);
    db_deinit(&b);
    free(buf);
}

/* A small snapshot: 40 users. */
static size_t small(char **buf)
{
    struct db a;
    uint32_t v;
    uint64_t total;
    size_t len;

    CHECK(db_init(&a) == 0);
    for (uint64_t uid = 1; uid <= 40; uid++)
        cnt_set(a.cnt, uid, uid % 5, (uint32_t)uid * 1000, &v, &total);
    len = snap_image(&a, CREATED_MS, 3, buf);
    CHECK(len > 0);
    db_deinit(&a);
    return len;
}

static void test_truncated_everywhere(void)
{
    struct db b;
    struct snap_meta meta;
    char *buf, err[256];
    size_t len = small(&buf);
    unsigned refused = 0;

    for (size_t cut = 0; cut < len; cut++) {
        char *copy = malloc(cut ? cut : 1);
        memcpy(copy, buf, cut);
        if (load(copy, cut, &b, &meta, err, sizeof(err)) != 0 &&
            strncmp(err, "offset ", 7) == 0)
            refused++;
        db_deinit(&b);
        free(copy);
    }
    CHECK_EQ_U64(refused, len);
    CHECK(load(buf, 10, &b, &meta, err, sizeof(err)) != 0);
    CHECK(strstr(err, "truncated") != NULL);
    db_deinit(&b);
    CHECK(load(buf, len - 1, &b, &meta, err, sizeof(err)) != 0);
    db_deinit(&b);
    free(buf);
}

static void test_flipped_everywhere(void)
{
    struct db b;
    struct snap_meta meta;
    char *buf, err[256];
    size_t len = small(&buf);
    unsigned refused = 0;

    for (size_t i = 0; i < len; i++) {
        for (unsigned bit = 0; bit < 8; bit += 3) {
            buf[i] ^= (char)(1 << bit);
            refused += load(buf, len, &b, &meta, err, sizeof(err)) != 0;
            db_deinit(&b);
            buf[i] ^= (char)(1 << bit);
        }
    }
    CHECK_EQ_U64(refused, len * 3);
    /* trailing garbage */
    char *more = malloc(len + 1);
    memcpy(more, buf, len);
    more[len] = 0;
    CHECK(load(more, len + 1, &b, &meta, err, sizeof(err)) != 0);
    db_deinit(&b);
    free(more);
    free(buf);
}

static void test_wrong_version(void)
{
    struct db b;
    struct snap_meta meta;
    char *buf, err[256];
    size_t len = small(&buf);

    le_wr32(buf + 8, SNAP_VERSION + 1);
    le_wr64(buf + 32, XXH3_64bits(buf, 32));
    CHECK(load(buf, len, &b, &meta, err, sizeof(err)) != 0);
    CHECK(strstr(err, "unknown format version 2") != NULL);
    CHECK_EQ_U64(meta.bad_off, 8);
    db_deinit(&b);
    memcpy(buf, "URJRNL\0\0", 8);
    CHECK(load(buf, len, &b, &meta, err, sizeof(err)) != 0);
    CHECK(strstr(err, "bad magic") != NULL);
    db_deinit(&b);
    free(buf);
}

/* Loads a crafted CNT section; 0 or -1, the message in err. */
static int load_raw(uint32_t id, const void *raw, size_t rawlen, char *err,
                    size_t errlen, struct db *db)
{
    struct snap_meta meta;
    char *buf = NULL;
    size_t len = snap_craft(id, raw, rawlen, &buf);
    int rc;

    CHECK(len > 0);
    rc = load(buf, len, db, &meta, err, errlen);
    free(buf);
    return rc;
}

static void test_cnt_section_content(void)
{
    struct db b;
    char err[256];
    /* uid 9, two types: 1 -> 5, 3 -> 300 (varint 0xAC 0x02) */
    const unsigned char good[] = {9, 0, 0, 0, 0, 0, 0, 0, 2, 1, 5, 3, 0xAC, 2};
    unsigned char bad[sizeof(good) * 2];

    CHECK(load_raw(1, good, sizeof(good), err, sizeof(err), &b) == 0);
    CHECK_EQ_U64(cnt_get(b.cnt, 9, 3), 300);
    CHECK_EQ_U64(cnt_total(b.cnt, 9), 305);
    db_deinit(&b);

    memcpy(bad, good, sizeof(good));
    bad[8] = 0; /* n = 0 */
    CHECK(load_raw(1, bad, sizeof(good), err, sizeof(err), &b) != 0);
    CHECK(strstr(err, "counter types") != NULL);
    db_deinit(&b);

    memcpy(bad, good, sizeof(good));
    bad[11] = 64; /* type out of range */
    CHECK(load_raw(1, bad, sizeof(good), err, sizeof(err), &b) != 0);
    CHECK(strstr(err, "bad or unordered type") != NULL);
    db_deinit(&b);

    memcpy(bad, good, sizeof(good));
    bad[11] = 1; /* repeated type */
    CHECK(load_raw(1, bad, sizeof(good), err, sizeof(err), &b) != 0);
    db_deinit(&b);

    memcpy(bad, good, sizeof(good));
    bad[10] = 0; /* zero value */
    CHECK(load_raw(1, bad, sizeof(good), err, sizeof(err), &b) != 0);
    CHECK(strstr(err, "zero value") != NULL);
    db_deinit(&b);

    /* value above UINT32_MAX: 5-byte varint of 2^32 */
    const unsigned char big[] = {9, 0, 0,    0,    0,    0,    0,   0,
                                 1, 1, 0x80, 0x80, 0x80, 0x80, 0x10};
    CHECK(load_raw(1, big, sizeof(big), err, sizeof(err), &b) != 0);
    CHECK(strstr(err, "varint") != NULL);
    db_deinit(&b);

    /* overlong varint: 5 as 0x85 0x00 */
    const unsigned char lng[] = {9, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0x85, 0};
    CHECK(load_raw(1, lng, sizeof(lng), err, sizeof(err), &b) != 0);
    db_deinit(&b);

    /* the same user twice */
    memcpy(bad, good, sizeof(good));
    memcpy(bad + sizeof(good), good, sizeof(good));
    CHECK(load_raw(1, bad, sizeof(bad), err, sizeof(err), &b) != 0);
    CHECK(strstr(err, "listed twice") != NULL);
    db_deinit(&b);

    /* a record cut in the middle */
    CHECK(load_raw(1, good, sizeof(good) - 1, err, sizeof(err), &b) != 0);
    CHECK(strstr(err, "inside a record") != NULL);
    CHECK(strstr(err, "section cnt") != NULL);
    db_deinit(&b);

    /* an unknown section */
    CHECK(load_raw(999, good, sizeof(good), err, sizeof(err), &b) != 0);
    CHECK(strstr(err, "unknown section id 999") != NULL);
    db_deinit(&b);
}

static void test_uncovered(void)
{
    struct db a;

    CHECK(db_init(&a) == 0);
    CHECK(snapshot_section_name(1) != NULL);
    CHECK(snapshot_section_name(0) == NULL);
    db_deinit(&a);
}

/* The origin section: written and read back; absent without one; a
 * replication id that is not 40 hex digits or a bad flag refused. */
static void test_origin(void)
{
    char path[] = "/tmp/unreadd-snap-origin-XXXXXX", err[256], raw[97];
    struct snap_origin o = {.offset = 123456789, .offset2 = 42, .has2 = true};
    struct snap_meta meta;
    struct fs_map m;
    struct db a, b;
    uint64_t bytes;
    char *buf;
    size_t len;
    int fd;

    memset(o.replid, 'a', SNAP_REPLID);
    memcpy(o.replid, "0123456789abcdef", 16);
    memset(o.replid2, 'f', SNAP_REPLID);
    fill(&a, 3);
    fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(snapshot_write(fd, &a, CREATED_MS, 7, &o, &bytes) == 0);
    close(fd);
    CHECK(fs_map_open(&m, path) == 0);
    CHECK(load(m.data, m.len, &b, &meta, err, sizeof(err)) == 0);
    CHECK(meta.has_origin);
    CHECK(strcmp(meta.origin.replid, o.replid) == 0);
    CHECK(strcmp(meta.origin.replid2, o.replid2) == 0);
    CHECK_EQ_U64(meta.origin.offset, o.offset);
    CHECK_EQ_U64(meta.origin.offset2, o.offset2);
    CHECK(meta.origin.has2);
    fs_map_close(&m);
    unlink(path);
    db_deinit(&b);
    /* without one */
    len = snap_image(&a, CREATED_MS, 7, &buf);
    CHECK(load(buf, len, &b, &meta, err, sizeof(err)) == 0);
    CHECK(!meta.has_origin);
    free(buf);
    db_deinit(&b);
    db_deinit(&a);
    /* crafted: good, then bad ids, a bad flag, a short section */
    memcpy(raw, o.replid, 40);
    memcpy(raw + 40, o.replid2, 40);
    memset(raw + 80, 0, 17);
    len = snap_craft(11, raw, sizeof(raw), &buf);
    CHECK(load(buf, len, &b, &meta, err, sizeof(err)) == 0 && meta.has_origin &&
          !meta.origin.has2);
    free(buf);
    db_deinit(&b);
    raw[5] = 'G';
    len = snap_craft(11, raw, sizeof(raw), &buf);
    CHECK(load(buf, len, &b, &meta, err, sizeof(err)) != 0);
    free(buf);
    db_deinit(&b);
    raw[5] = '5';
    raw[96] = 2;
    len = snap_craft(11, raw, sizeof(raw), &buf);
    CHECK(load(buf, len, &b, &meta, err, sizeof(err)) != 0);
    free(buf);
    db_deinit(&b);
    len = snap_craft(11, raw, 90, &buf);
    CHECK(load(buf, len, &b, &meta, err, sizeof(err)) != 0);
    free(buf);
    db_deinit(&b);
}

int main(void)
{
    T_RUN(test_round_trip);
    T_RUN(test_empty);
    T_RUN(test_large);
    T_RUN(test_truncated_everywhere);
    T_RUN(test_flipped_everywhere);
    T_RUN(test_wrong_version);
    T_RUN(test_cnt_section_content);
    T_RUN(test_uncovered);
    T_RUN(test_origin);
    T_END();
}
