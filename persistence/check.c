/*
 * check.c - see check.h. A snapshot is checked by loading it into a
 * scratch db through the server's own loader, so "OK" here means the
 * server will load it. A journal is checked record by record (lengths,
 * checksums, request frames, known opcodes) without replaying it, which
 * would need the snapshot's state.
 */
#include "check.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fsutil.h"
#include "journal.h"
#include "ops.h"
#include "snapshot.h"

static const char *fmt_ms(uint64_t ms, char *buf, size_t cap)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    if (gmtime_r(&t, &tm) == NULL ||
        strftime(buf, cap, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
        snprintf(buf, cap, "%llu ms", (unsigned long long)ms);
    return buf;
}

static int check_snapshot(const struct fs_map *m, const char *path, bool fix)
{
    struct snap_meta meta;
    struct db_usage u[DB_USAGE_ROWS];
    struct db db;
    char err[512], when[64];
    int rc;

    if (db_init(&db) != 0) {
        printf("%s: out of memory\n", path);
        return 2;
    }
    rc = snapshot_load(m->data, m->len, &db, &meta, err, sizeof(err));
    printf("%s: snapshot, format version %u, %zu bytes\n", path, meta.version,
           m->len);
    if (rc == 0) {
        printf("  created %s, covers journal segments <= %llu\n",
               fmt_ms(meta.created_ms, when, sizeof(when)),
               (unsigned long long)meta.segment);
        for (unsigned i = 0; i < meta.nsections; i++)
            printf("  section %-5s at offset %llu: %llu bytes compressed, "
                   "%llu raw\n",
                   meta.sec[i].name, (unsigned long long)meta.sec[i].off,
                   (unsigned long long)meta.sec[i].zlen,
                   (unsigned long long)meta.sec[i].rawlen);
        unsigned n = db_usage(&db, u);
        for (unsigned i = 0; i < n; i++)
            printf("  %s: %zu %ss\n", u[i].family, u[i].entries, u[i].unit);
        printf("OK\n");
    } else {
        printf("BAD at offset %llu: %s\n", (unsigned long long)meta.bad_off,
               err);
        if (fix)
            printf("a snapshot cannot be repaired: restore a copy. Moving it "
                   "away starts the server from the journal alone, which "
                   "it refuses when segments the snapshot covered were "
                   "already removed\n");
    }
    db_deinit(&db);
    return rc == 0 ? 0 : 1;
}

/* Walks every record; *bad_off = the first bad one's offset (or len). */
static int walk_journal(const struct fs_map *m, uint64_t *records,
                        size_t *bad_off, const char **why, uint64_t clock[2])
{
    struct ur_arg *args = NULL;
    uint32_t cap = 0;
    size_t off = JOURNAL_HDR;
    int rc = -1;

    for (;;) {
        struct journal_rec rec;
        struct ur_frame_req req;
        enum journal_next st;

        *bad_off = off;
        st = journal_rec_next(m->data, m->len, &off, &rec, why);
        if (st == JOURNAL_END) {
            rc = 0;
            break;
        }
        if (st != JOURNAL_REC ||
            journal_rec_request(&rec, &args, &cap, &req, why) != 0)
            break;
        if (ur_op_by_code(req.op) == NULL) {
            *why = "unknown opcode";
            break;
        }
        if (*records == 0)
            clock[0] = rec.clock_ms;
        clock[1] = rec.clock_ms;
        (*records)++;
    }
    free(args);
    return rc;
}

static int check_journal(const struct fs_map *m, const char *path, bool fix)
{
    uint64_t seg, records = 0, clock[2] = {0, 0};
    const char *why = "";
    char t0[64], t1[64];
    size_t bad_off;

    if (journal_hdr_check(m->data, m->len, &seg, &why) != 0) {
        printf("%s: BAD at offset 0: %s\n", path, why);
        if (fix)
            printf("cannot fix: without its header no record of the file "
                   "can be trusted; removing the file drops the whole "
                   "segment (%zu bytes)\n",
                   m->len);
        return 1;
    }
    int rc = walk_journal(m, &records, &bad_off, &why, clock);
    printf("%s: journal segment %llu, format version %d, %zu bytes\n", path,
           (unsigned long long)seg, JOURNAL_VERSION, m->len);
    if (records > 0)
        printf("  %llu sound records, run from %s to %s\n",
               (unsigned long long)records, fmt_ms(clock[0], t0, sizeof(t0)),
               fmt_ms(clock[1], t1, sizeof(t1)));
    else
        printf("  no sound record\n");
    if (rc == 0) {
        printf("OK\n");
        return 0;
    }
    printf("BAD at offset %zu: %s\n", bad_off, why);
    printf("cutting there loses the %zu bytes from offset %zu to the end "
           "(every record after it)\n",
           m->len - bad_off, bad_off);
    if (!fix) {
        printf("run `unreadd --check %s --fix` to cut it\n", path);
        return 1;
    }
    if (fs_truncate(path, bad_off) != 0) {
        printf("cannot cut %s: %s\n", path, strerror(errno));
        return 2;
    }
    printf("FIXED: cut at offset %zu\n", bad_off);
    return 0;
}

int check_main(int argc, char **argv)
{
    const char *path = NULL, *base;
    bool fix = false;
    struct fs_map m;
    int rc;

    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--fix") == 0)
            fix = true;
        else if (path == NULL)
            path = argv[i];
        else
            path = "";
    }
    if (path == NULL || path[0] == '\0') {
        fprintf(stderr, "usage: unreadd --check FILE [--fix]\n");
        return 2;
    }
    if (fs_map_open(&m, path) != 0) {
        printf("%s: cannot read: %s\n", path, strerror(errno));
        return 2;
    }
    base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    if (m.len >= 8 && memcmp(m.data, SNAP_MAGIC, 8) == 0) {
        rc = check_snapshot(&m, path, fix);
    } else if ((m.len >= 8 && memcmp(m.data, JOURNAL_MAGIC, 8) == 0) ||
               strncmp(base, "journal.", 8) == 0) {
        /* --fix cuts the file under the map: nothing past the cut is
         * read after it. */
        rc = check_journal(&m, path, fix);
    } else {
        printf("%s: neither a snapshot nor a journal segment (unknown "
               "magic)\n",
               path);
        rc = 2;
    }
    fs_map_close(&m);
    return rc;
}
