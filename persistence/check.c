/*
 * check.c - see check.h. A snapshot is checked by loading it into a
 * scratch db through the server's own loader, so "OK" here means the
 * server will load it. A journal segment is classified by the loader's own
 * journal_scan and its records checked against the op table, without
 * replaying them (that would need the snapshot's state).
 *
 * Repairs never remove a sound record unless told so by an option named
 * for it, and keep what they remove: the bytes cut go to a side file
 * first (fsync'd), then the header is marked, then the file is cut.
 */
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "journal.h"
#include "ops.h"
#include "proto.h"
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

/* ---- remedies, in words ------------------------------------------------ */

/* The segment file beside path: journal.<N+delta> in the same directory,
 * or a description when path is not named journal.<N>. */
static void sibling(const char *path, int delta, char *out, size_t cap)
{
    const char *dot = strrchr(path, '.');
    uint64_t n;

    if (dot == NULL || !ur_parse_u64(dot + 1, strlen(dot + 1), &n) ||
        (delta < 0 && n == 0)) {
        snprintf(out, cap, "the segment %s it", delta < 0 ? "before" : "after");
        return;
    }
    snprintf(out, cap, "%.*s.%" PRIu64, (int)(dot - path), path,
             delta < 0 ? n - 1 : n + 1);
}

void check_remedies(const char *path, size_t len, const struct journal_scan *s,
                    bool last, char *out, size_t cap)
{
    char prev[4200], rest[256];

    if (!s->hdr_ok) {
        snprintf(out, cap,
                 "The segment header is damaged, so no record of the file can "
                 "be checked, and no --check option repairs it. Restore the "
                 "data directory from a backup, or move %s%s out of the "
                 "directory, losing every record in %s",
                 path, last ? "" : " and every later segment",
                 last ? "it" : "them");
        return;
    }
    if (s->bad_off < s->hdr.len) {
        sibling(path, -1, prev, sizeof(prev));
        if (s->bad_seq > s->next_seq)
            snprintf(out, cap,
                     "Records %" PRIu64 " to %" PRIu64 " are missing: whole "
                     "records were cut off the end of %s. `unreadd --check "
                     "%s --drop-damaged` marks that segment as ending early "
                     "so that the server loads on after the gap (the missing "
                     "records stay lost); or restore the data directory from "
                     "a backup",
                     s->next_seq, s->bad_seq - 1, prev, prev);
        else
            snprintf(out, cap,
                     "This segment repeats sequence numbers %s ends with; no "
                     "--check option repairs overlapping segments: restore "
                     "the data directory from a backup",
                     prev);
        return;
    }
    if (s->found_off == s->bad_off)
        snprintf(rest, sizeof(rest),
                 "the %" PRIu64 " sound records from there, the first of "
                 "them out of sequence",
                 s->found_records);
    else if (s->found_unsure)
        snprintf(rest, sizeof(rest),
                 "the damaged record and everything "
                 "after it, which may hold sound records");
    else if (s->found_records > 0)
        snprintf(rest, sizeof(rest),
                 "the damaged record and the %" PRIu64 " sound record%s after "
                 "it",
                 s->found_records, s->found_records == 1 ? "" : "s");
    else
        snprintf(rest, sizeof(rest), "the damaged record");
    snprintf(out, cap,
             "`unreadd --check %s --fix` refuses here: %s. `unreadd --check "
             "%s --drop-damaged` cuts the file at offset %zu, removing %s "
             "(%zu bytes, kept in %s.removed-<time>)%s; or restore the data "
             "directory from a backup",
             path,
             s->found_off != 0 ? "sound records follow the damage, so it is "
                                 "not a torn tail"
             : !last ? "a later segment follows, so this record was complete "
                       "once"
                     : "a damaged record is not a torn tail",
             path, s->bad_off, rest, len - s->bad_off, path,
             last ? "" : "; the later segments then load after the gap");
}

void check_remedies_replay(const char *path, size_t off, uint64_t rec,
                           uint64_t records, bool last, char *out, size_t cap)
{
    uint64_t after = records > rec ? records - rec : 0;

    snprintf(out, cap,
             "Record %" PRIu64 " is sound but the server cannot run it. If a "
             "setting its command depends on (counter-types, a limit) was "
             "changed, restore it and start again. Otherwise `unreadd --check "
             "%s --truncate-at %zu` cuts the file there, removing that record "
             "and the %" PRIu64 " after it in this segment (kept in "
             "%s.removed-<time>)%s; or restore the data directory from a "
             "backup",
             rec, path, off, after, path,
             last ? "" : "; the later segments then load after the gap");
}

/* ---- the segments beside a file ---------------------------------------- */

struct seg_place {
    char dir[4096];
    uint64_t n; /* from the name journal.<N>; 0: not so named */
};

static void seg_place(const char *path, struct seg_place *sp)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash != NULL ? slash + 1 : path;

    if (slash == NULL)
        snprintf(sp->dir, sizeof(sp->dir), ".");
    else if (slash == path)
        snprintf(sp->dir, sizeof(sp->dir), "/");
    else
        snprintf(sp->dir, sizeof(sp->dir), "%.*s", (int)(slash - path), path);
    sp->n = 0;
    if (strncmp(base, "journal.", 8) != 0 ||
        !ur_parse_u64(base + 8, strlen(base + 8), &sp->n))
        sp->n = 0;
}

/* Maps journal.<n> beside the file when it exists: 1, 0 when it does not,
 * -1 when it cannot be read. */
static int seg_map(const struct seg_place *sp, uint64_t n, struct fs_map *m,
                   char *path, size_t cap)
{
    char name[32];
    struct stat st;

    snprintf(name, sizeof(name), "journal.%" PRIu64, n);
    if (n == 0 || fs_path(path, cap, sp->dir, name) != 0 ||
        stat(path, &st) != 0)
        return 0;
    return fs_map_open(m, path) == 0 ? 1 : -1;
}

/* Where the run of segments before sp->n ends, by scanning them in order
 * from the first one on disk, as the server's loader does. *link stays
 * unknown (next_seq 0) when there is none or one of them is damaged. */
static void prev_link(const struct seg_place *sp, struct journal_link *link)
{
    char path[4200];
    struct journal_scan s;
    struct fs_map m;
    uint64_t lo = sp->n;

    memset(link, 0, sizeof(*link));
    while (lo > 1 && seg_map(sp, lo - 1, &m, path, sizeof(path)) == 1) {
        fs_map_close(&m);
        lo--;
    }
    for (uint64_t k = lo; k < sp->n; k++) {
        if (seg_map(sp, k, &m, path, sizeof(path)) != 1) {
            memset(link, 0, sizeof(*link));
            return;
        }
        journal_scan(m.data, m.len, link, false, &s);
        fs_map_close(&m);
        if (s.state != JOURNAL_CLEAN) {
            printf("  note: %s before it is damaged (check it first): this "
                   "segment's first sequence number is not checked\n",
                   path);
            memset(link, 0, sizeof(*link));
            return;
        }
        *link = s.link;
    }
}

/* ---- repairs ------------------------------------------------------------ */

/* Cuts path at offset at, keeping the bytes removed in a side file when
 * there are any, and with mark sets the segment header's ends-early flag.
 * The map stays valid only up to `at` afterwards. 0, or -1 (said why). */
static int cut_file(const char *path, const struct fs_map *m,
                    const struct journal_scan *s, size_t at, bool mark)
{
    char side[4300], when[32], hdr[JOURNAL_HDR];
    struct seg_place sp;
    time_t now = time(NULL);
    struct tm tm;
    int fd = -1;

    seg_place(path, &sp);
    if (at < m->len) {
        gmtime_r(&now, &tm);
        strftime(when, sizeof(when), "%Y%m%dT%H%M%SZ", &tm);
        for (int i = 1; fd < 0 && i < 100; i++) {
            if (i == 1)
                snprintf(side, sizeof(side), "%s.removed-%s", path, when);
            else
                snprintf(side, sizeof(side), "%s.removed-%s-%d", path, when, i);
            fd = open(side, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
            if (fd < 0 && errno != EEXIST)
                break;
        }
        if (fd < 0 || fs_write_all(fd, m->data + at, m->len - at) != 0 ||
            fsync(fd) != 0 || fs_fsync_dir(sp.dir) != 0) {
            printf("cannot keep the removed bytes in %s: %s; nothing "
                   "changed\n",
                   side, strerror(errno));
            if (fd >= 0) {
                close(fd);
                unlink(side);
            }
            return -1;
        }
        close(fd);
        printf("kept the %zu bytes removed (offset %zu to the end) in %s\n",
               m->len - at, at, side);
    }
    if (mark && !(s->hdr.flags & JOURNAL_F_ENDS_EARLY)) {
        struct journal_hdr h = s->hdr;

        h.flags |= JOURNAL_F_ENDS_EARLY;
        memcpy(hdr, m->data, s->hdr.len);
        if (h.version == JOURNAL_VERSION)
            journal_hdr_encode(hdr, &h);
        else
            hdr[12] = (char)(hdr[12] | JOURNAL_F_ENDS_EARLY);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || fs_pwrite_all(fd, hdr, s->hdr.len, 0) != 0 ||
            fdatasync(fd) != 0) {
            printf("cannot mark %s as ending early: %s\n", path,
                   strerror(errno));
            if (fd >= 0)
                close(fd);
            return -1;
        }
        close(fd);
    }
    if (at < m->len && fs_truncate(path, at) != 0) {
        printf("cannot cut %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- the journal report ------------------------------------------------- */

struct opts {
    bool fix;          /* --fix: a torn tail only */
    bool drop;         /* --drop-damaged */
    bool truncate;     /* --truncate-at */
    uint64_t trunc_at; /* ... its offset */
};

/* What the sound records hold: each command by name, batches apart. The
 * first record the op table refuses is damage: *bad set. */
struct content {
    uint64_t per_op[UR_OP_COUNT];
    uint64_t singles, batches, batch_cmds;
    uint64_t histories; /* history records (journal.h): no command */
    uint64_t clock[2];
    uint64_t first_seq, last_seq;
    uint64_t sound;   /* records that passed */
    bool bad;         /* a record the op table refuses */
    size_t bad_off;   /* ... its offset */
    const char *why;  /* ... what is wrong */
    uint64_t bad_seq; /* ... its sequence number */
    size_t *bounds;   /* offsets of the sound records, then their end */
    size_t nbounds;
};

static int walk_content(const struct fs_map *m, const struct journal_scan *s,
                        struct content *c)
{
    struct ur_arg *args = NULL;
    struct journal_rec rec;
    uint32_t cap = 0;
    size_t off = s->hdr.len, at;

    memset(c, 0, sizeof(*c));
    c->bounds = malloc(((size_t)s->records + 1) * sizeof(*c->bounds));
    if (c->bounds == NULL)
        return -1;
    for (at = off; journal_rec_next(s, m->data, &off, &rec); at = off) {
        struct ur_frame_req req;
        const char *why;

        if (journal_rec_request(&rec, &args, &cap, &req, &why) != 0 ||
            journal_req_check(&req, cap, c->per_op, &why) != 0) {
            c->bad = true;
            c->bad_off = at;
            c->why = why;
            c->bad_seq = rec.seq;
            break;
        }
        c->bounds[c->nbounds++] = at;
        if (req.op == UR_FRAME_OP_BATCH) {
            c->batches++;
            c->batch_cmds += req.nsub;
        } else if (req.op == JOURNAL_OP_HISTORY) {
            c->histories++;
        } else {
            c->singles++;
        }
        if (c->sound == 0) {
            c->clock[0] = rec.clock_ms;
            c->first_seq = rec.seq;
        }
        c->clock[1] = rec.clock_ms;
        c->last_seq = rec.seq;
        c->sound++;
    }
    c->bounds[c->nbounds] = c->bad ? c->bad_off : s->end;
    free(args);
    return 0;
}

static void print_content(const struct journal_scan *s, const struct content *c)
{
    char t0[64], t1[64];
    bool any = false;

    if (c->sound == 0) {
        printf("  no sound record\n");
        return;
    }
    if (s->hdr.version == JOURNAL_VERSION)
        printf("  %" PRIu64 " sound records, seq %" PRIu64 " to %" PRIu64
               ", run from %s to %s\n",
               c->sound, c->first_seq, c->last_seq,
               fmt_ms(c->clock[0], t0, sizeof(t0)),
               fmt_ms(c->clock[1], t1, sizeof(t1)));
    else
        printf("  %" PRIu64 " sound records, run from %s to %s\n", c->sound,
               fmt_ms(c->clock[0], t0, sizeof(t0)),
               fmt_ms(c->clock[1], t1, sizeof(t1)));
    printf("  %" PRIu64 " single commands, %" PRIu64
           " batch records (MULTI/EXEC or binary batches) holding %" PRIu64
           " commands\n",
           c->singles, c->batches, c->batch_cmds);
    if (c->histories != 0)
        printf("  %" PRIu64 " history records (the replication id changed: "
               "docs/PERSISTENCE.md, Replication)\n",
               c->histories);
    printf("  commands:");
    for (unsigned i = 0; i < UR_OP_COUNT; i++) {
        if (c->per_op[i] == 0)
            continue;
        printf(" %s %" PRIu64, ur_ops[i].name, c->per_op[i]);
        any = true;
    }
    printf("%s\n", any ? "" : " none");
}

static void print_place(const struct journal_scan *s, size_t off, uint64_t rec,
                        uint64_t seq)
{
    char at[96];

    journal_place(s, off, rec, seq, at, sizeof(at));
    fputs(at, stdout);
}

/* --truncate-at: the offset must be a record boundary of the sound part
 * (or where it ends). */
static bool boundary(const struct content *c, uint64_t at)
{
    for (size_t i = 0; i <= c->nbounds; i++)
        if (c->bounds[i] == at)
            return true;
    return false;
}

static int truncate_at(const char *path, const struct fs_map *m,
                       const struct journal_scan *s, const struct content *c,
                       uint64_t at)
{
    uint64_t removed = 0;

    if (!s->hdr_ok || !boundary(c, at)) {
        printf("REFUSED: offset %" PRIu64 " is not where a sound record of "
               "%s begins or where they end; nothing changed\n",
               at, path);
        return 1;
    }
    for (size_t i = 0; i < c->nbounds; i++)
        removed += c->bounds[i] >= at;
    if (cut_file(path, m, s, (size_t)at, true) != 0)
        return 2;
    printf("FIXED: cut %s at offset %" PRIu64 ", removing %" PRIu64
           " sound records and %zu bytes in all; the segment is marked as "
           "ending early\n",
           path, at, removed, m->len - (size_t)at);
    return 0;
}

static int check_journal(const struct fs_map *m, const char *path,
                         const struct opts *o)
{
    struct journal_link prev = {0, false};
    struct journal_hdr nh;
    struct journal_scan s;
    struct seg_place sp;
    struct content c;
    struct fs_map nm;
    char next_path[4200], remedy[2048];
    bool last = true, nh_ok = false, gap_after = false, overlap = false;
    size_t bad_off;
    int rc;

    seg_place(path, &sp);
    if (sp.n > 1)
        prev_link(&sp, &prev);
    if (sp.n > 0) {
        rc = seg_map(&sp, sp.n + 1, &nm, next_path, sizeof(next_path));
        if (rc != 0) {
            last = false;
            const char *why;
            nh_ok =
                rc == 1 && journal_hdr_check(nm.data, nm.len, &nh, &why) == 0;
            if (rc == 1)
                fs_map_close(&nm);
        }
    }
    journal_scan(m->data, m->len, &prev, last, &s);
    if (s.hdr_ok) {
        printf("%s: journal segment %" PRIu64 ", format version %u, %zu "
               "bytes\n",
               path, s.hdr.seg, s.hdr.version, m->len);
        if (s.hdr.version == JOURNAL_VERSION)
            printf("  first sequence number %" PRIu64 "%s\n", s.hdr.first_seq,
                   prev.next_seq != 0 ? ", after the segment before it"
                                      : " (no segment before it on disk)");
        else
            printf("  format version 1: no sequence numbers, so moved or "
                   "missing whole records cannot be told\n");
        if (s.hdr.flags & JOURNAL_F_ENDS_EARLY)
            printf("  marked as ending early by an operator's repair\n");
        if (s.gap > 0)
            printf("  starts %" PRIu64 " records after the segment before "
                   "it ends (accepted: that one is marked as ending early)\n",
                   s.gap);
    } else {
        printf("%s: journal segment, %zu bytes\n", path, m->len);
    }
    if (walk_content(m, &s, &c) != 0) {
        printf("out of memory\n");
        return 2;
    }
    print_content(&s, &c);

    if (s.state == JOURNAL_CLEAN && !c.bad && nh_ok &&
        nh.version == JOURNAL_VERSION && nh.first_seq != s.link.next_seq) {
        gap_after = nh.first_seq > s.link.next_seq && !s.link.gap_ok;
        overlap = nh.first_seq < s.link.next_seq;
    }

    if (c.bad) {
        /* A sound record the op table refuses: damage all the same. */
        printf("DAMAGED at ");
        print_place(&s, c.bad_off, c.sound + 1, c.bad_seq);
        printf(": %s\n", c.why);
        check_remedies_replay(path, c.bad_off, c.sound + 1, s.records, last,
                              remedy, sizeof(remedy));
        bad_off = c.bad_off;
    } else if (s.state == JOURNAL_CORRUPT) {
        printf("DAMAGED at ");
        print_place(&s, s.bad_off, s.records + 1,
                    s.bad_off < s.end ? s.bad_seq : s.next_seq);
        printf(": %s\n", s.why);
        if (s.bad_off < s.hdr.len && s.hdr_ok)
            printf("  it starts at seq %" PRIu64 "; the segment before ends "
                   "before seq %" PRIu64 "\n",
                   s.bad_seq, s.next_seq);
        else if (s.found_unsure)
            printf("  sound records after it cannot be ruled out (format "
                   "version 1)\n");
        else if (s.found_off != 0)
            printf("  %" PRIu64 " sound records follow, the first at offset "
                   "%zu: this is not a torn tail\n",
                   s.found_records, s.found_off);
        check_remedies(path, m->len, &s, last, remedy, sizeof(remedy));
        bad_off = s.bad_off;
    } else if (s.state == JOURNAL_TORN) {
        printf("TORN TAIL at ");
        print_place(&s, s.end, s.records + 1, s.next_seq);
        printf(": %s (%zu bytes): a write cut short by a crash, never "
               "acknowledged; the server cuts it at start-up too\n",
               s.why, m->len - s.end);
        if (!o->fix && !o->drop && !o->truncate) {
            printf("run `unreadd --check %s --fix` to cut it\n", path);
            goto done_damaged;
        }
        if (o->truncate && o->trunc_at != s.end)
            goto truncate;
        if (!s.hdr_ok) {
            if (unlink(path) != 0 || fs_fsync_dir(sp.dir) != 0) {
                printf("cannot remove %s: %s\n", path, strerror(errno));
                free(c.bounds);
                return 2;
            }
            printf("FIXED: removed %s (a segment whose header was never "
                   "completed holds no record)\n",
                   path);
        } else {
            if (fs_truncate(path, s.end) != 0) {
                printf("cannot cut %s: %s\n", path, strerror(errno));
                free(c.bounds);
                return 2;
            }
            printf("FIXED: cut the torn tail at offset %zu; no sound record "
                   "removed\n",
                   s.end);
        }
        free(c.bounds);
        return 0;
    } else if (gap_after || overlap) {
        printf("DAMAGED after the last record: %s starts at seq %" PRIu64
               ", but this segment ends before seq %" PRIu64 "\n",
               next_path, nh.first_seq, s.link.next_seq);
        if (gap_after)
            printf("records %" PRIu64 " to %" PRIu64 " are missing: whole "
                   "records were cut off the end of this segment. "
                   "`unreadd --check %s --drop-damaged` marks it as ending "
                   "early so that the server loads on after the gap (it "
                   "removes nothing; the missing records stay lost)\n",
                   s.link.next_seq, nh.first_seq - 1, path);
        else
            printf("the segments overlap; no --check option repairs that: "
                   "restore the data directory from a backup\n");
        if (o->truncate)
            goto truncate;
        if (o->drop && gap_after) {
            if (cut_file(path, m, &s, m->len, true) != 0) {
                free(c.bounds);
                return 2;
            }
            printf("FIXED: marked %s as ending early; no record removed\n",
                   path);
            free(c.bounds);
            return 0;
        }
        if (o->fix || o->drop)
            printf("REFUSED: --fix cuts only a torn tail; nothing changed\n");
        goto done_damaged;
    } else {
        if (o->truncate)
            goto truncate;
        printf("OK\n");
        if (o->fix || o->drop)
            printf("nothing to repair; nothing changed\n");
        free(c.bounds);
        return 0;
    }

    /* Damage (c.bad or CORRUPT): remedy holds the words. */
    printf("%s\n", remedy);
    if (o->truncate)
        goto truncate;
    if (o->drop) {
        if (!s.hdr_ok || bad_off < s.hdr.len) {
            printf("REFUSED: --drop-damaged cuts damaged records; it cannot "
                   "repair this; nothing changed\n");
            goto done_damaged;
        }
        if (cut_file(path, m, &s, bad_off, true) != 0) {
            free(c.bounds);
            return 2;
        }
        printf("FIXED: cut %s at offset %zu, removing %zu bytes with %" PRIu64
               " records whose checks hold among them; the segment is marked "
               "as ending early\n",
               path, bad_off, m->len - bad_off,
               (c.bad ? s.records - c.sound : 0) + s.found_records);
        free(c.bounds);
        return 0;
    }
    if (o->fix)
        printf("REFUSED: --fix cuts only a torn tail, and this is damage: "
               "%s at offset %zu, record %" PRIu64 ": %s; nothing changed\n",
               path, bad_off, c.bad ? c.sound + 1 : s.records + 1,
               c.bad ? c.why : s.why);
    goto done_damaged;

truncate:
    rc = truncate_at(path, m, &s, &c, o->trunc_at);
    free(c.bounds);
    return rc;

done_damaged:
    free(c.bounds);
    return 1;
}

int check_main(int argc, char **argv)
{
    const char *path = NULL, *base;
    struct opts o = {false, false, false, 0};
    struct fs_map m;
    int rc;

    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--fix") == 0) {
            o.fix = true;
        } else if (strcmp(argv[i], "--drop-damaged") == 0) {
            o.drop = true;
        } else if (strcmp(argv[i], "--truncate-at") == 0 && i + 1 < argc &&
                   ur_parse_u64(argv[i + 1], strlen(argv[i + 1]),
                                &o.trunc_at)) {
            o.truncate = true;
            i++;
        } else if (path == NULL && argv[i][0] != '-') {
            path = argv[i];
        } else {
            path = "";
        }
    }
    if (path == NULL || path[0] == '\0' || (o.drop && o.truncate)) {
        fprintf(stderr, "usage: unreadd --check FILE [--fix] "
                        "[--drop-damaged | --truncate-at OFFSET]\n");
        return 2;
    }
    if (fs_map_open(&m, path) != 0) {
        printf("%s: cannot read: %s\n", path, strerror(errno));
        return 2;
    }
    base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    if (m.len >= 8 && memcmp(m.data, SNAP_MAGIC, 8) == 0) {
        rc = check_snapshot(&m, path, o.fix || o.drop || o.truncate);
    } else if ((m.len >= 8 && memcmp(m.data, JOURNAL_MAGIC, 8) == 0) ||
               strncmp(base, "journal.", 8) == 0) {
        /* A repair cuts the file under the map: nothing past the cut is
         * read after it. */
        rc = check_journal(&m, path, &o);
    } else {
        printf("%s: neither a snapshot nor a journal segment (unknown "
               "magic)\n",
               path);
        rc = 2;
    }
    fs_map_close(&m);
    return rc;
}
