/*
 * persist.c - see persist.h; the file formats are in journal.c and
 * snapshot.c, the guarantees in docs/PERSISTENCE.md.
 *
 * Files in cfg.dir:
 *   unreadd.lock          flock'd by the server (and, inherited, by a
 *                         saving child): one process per directory
 *   snapshot.urs          the last complete snapshot
 *   snapshot.tmp.<pid>    a snapshot being written (stale ones are removed
 *                         at start)
 *   journal.<N>           journal segments, N = 1, 2, ...; the snapshot's
 *                         header names the last segment it covers
 *
 * A snapshot is cut between two commands: the journal buffer is written to
 * segment N, which ends there, and later records go to N+1. The snapshot
 * of the memory at that point covers exactly segments <= N, which are
 * removed once it is safely renamed into place.
 */
#include "persist.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bgsync.h"
#include "check.h"
#include "fsutil.h"
#include "journal.h"
#include "log.h"
#include "snapshot.h"

/* A failed automatic save is retried this soon, not save-seconds later. */
#define SAVE_RETRY_MS 5000
/* How long start-up waits for the directory lock (a killed server's saving
 * child may still hold it for a moment). */
#define LOCK_WAIT_MS 2000
#define EVERYSEC_MS 1000
/* While the journal is untrusted, a failed resync is tried again this
 * often. */
#define RESYNC_RETRY_MS 1000
/* Nice value of the saving child. */
#define SAVE_NICE 19

/* The segments found at start-up, and where the loader is in them. */
struct segs {
    uint64_t *v;
    size_t n, cap;
};

struct loader {
    struct segs s;            /* journal.<N> on disk, ascending */
    size_t i;                 /* the next of them to open */
    uint64_t snap_seg;        /* the snapshot covers segments <= this */
    uint64_t next;            /* the segment number expected next */
    uint64_t first;           /* the first segment replayed, or 0 */
    bool mapped;              /* a segment is open: */
    struct fs_map m;          /* ... its bytes */
    char path[4096];          /* ... its name */
    bool last;                /* ... it is the last segment */
    struct journal_scan scan; /* ... what its bytes are */
    size_t off;               /* ... the next record's offset */
    size_t rec_off;           /* ... the offset of the record returned last */
    uint64_t rec_no;          /* ... that record's number in the segment */
    uint64_t rec_seq;         /* ... and its sequence number */
    struct journal_link link; /* where the next segment must go on */
    bool torn;                /* the last segment ends in a torn tail: */
    size_t torn_off;          /* ... cut it here */
    size_t torn_len;          /* ... from this length */
    const char *torn_why;
    char torn_path[4096];
};

struct persist {
    struct db *db;
    char dir[4096];
    int lock_fd;
    struct journal j;
    bool journal_on;
    int fsync_mode;        /* enum journal_fsync */
    uint32_t save_seconds; /* 0: no automatic snapshot */
    struct loader ld;      /* start-up: between persist_open and _done */
    size_t staged;         /* j.buf.len before the running command's record */
    bool journaled;        /* ... a record was staged */
    bool broken;           /* the journal cannot be written: writes refused */
    const char *broken_op;
    char refusal[640]; /* persist_refusal's text */
    /*
     * Distrust (docs/PERSISTENCE.md, "Faults"): an fdatasync of the
     * journal failed, or a segment, the snapshot or the directory vanished
     * or was replaced under the server. The files may not hold what was
     * acknowledged and no retry on them is believed (a second fdatasync on
     * the same file succeeds once the kernel has dropped the pages it
     * could not write). Until a snapshot of the memory, which holds every
     * change, and a fresh segment are on disk ("resync"), the journal is
     * not written and writes are refused.
     */
    bool untrusted;
    char untrust_why[512];
    uint64_t resync_try_ms; /* last resync attempt (0: none yet) */
    uint64_t resync_upto;   /* records the resync snapshot covers */
    bool resync_saved;      /* ... it is on disk; the segment is not yet */
    bool child_resync;      /* the background save running is a resync */
    uint64_t resyncs;       /* resyncs completed */
    uint64_t sync_failures; /* fdatasyncs of the journal that failed */
    struct log_rate resync_log;
    /* Identity of the files, to notice them removed or replaced. */
    dev_t dir_dev;
    ino_t dir_ino;
    bool snap_known; /* snapshot.urs is ours: loaded or written */
    dev_t snap_dev;
    ino_t snap_ino;
    bool in_batch;      /* between persist_batch_begin and _end */
    size_t batch_rec;   /* ... offset of its record in j.buf */
    uint32_t batch_n;   /* ... commands recorded in it */
    uint64_t dirty;     /* changes since the last successful snapshot */
    pid_t child;        /* background save in progress, or 0 */
    uint64_t child_seg; /* ... the segments it covers */
    uint64_t child_dirty;
    uint64_t child_start_ms;
    uint64_t fork_us;      /* how long the last fork blocked the server */
    uint64_t forks;        /* BGSAVE children forked */
    uint64_t saves;        /* snapshots written (SAVE and BGSAVE) */
    uint64_t last_save_ms; /* last successful snapshot (wall clock), or 0 */
    uint64_t last_try_ms;  /* last snapshot attempt */
    uint64_t last_save_dur_ms;
    uint64_t last_save_bytes;
    bool last_save_ok;
    uint64_t last_sync_ms; /* last fdatasync that synced something */
    uint64_t last_sync_try_ms;
    struct bgsync bg;      /* everysec: the thread that fdatasyncs */
    bool bg_busy;          /* ... a request submitted, not yet collected */
    enum bgsync_op bg_op;  /* ... which */
    uint64_t wb_asked;     /* ... records written when the last was asked */
    uint64_t sync_asked;   /* ... the records the last fdatasync covers */
    bool sync_late;        /* ... one is due, the last still runs */
    uint64_t sync_delayed; /* ... times a due one had to wait for it */
    uint64_t loaded_records;
    uint64_t load_ms;
    /*
     * Replication (docs/PERSISTENCE.md, "Replication"): the data's origin
     * (which history, how many of its stream bytes), advanced by every
     * committed record; records are made while the journal or the stream
     * wants them; the last committed record, until taken; what the
     * background saves mean to replication.
     */
    struct snap_origin origin;
    bool stream;
    bool take_ready;
    size_t take_off, take_len;
    uint64_t saves_ended;            /* background saves ended (either way) */
    struct snap_origin child_origin; /* ... the running one's, at its cut */
    bool want_saved;                 /* open the next saved snapshot */
    int saved_fd;                    /* ... opened, not yet taken; -1 */
    struct snap_origin saved_origin;
    uint64_t saved_no;    /* ... the save that wrote it (saves_ended) */
    bool history_pending; /* a fork inside a batch: recorded at its end */
};

static int history_record(struct persist *p);

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A fresh replication id: 40 hex digits from getrandom (or, failing
 * that, from the clock and the process). */
static void new_replid(char out[SNAP_REPLID + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char r[SNAP_REPLID / 2];

    if (getrandom(r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
        uint64_t t = now_ms() ^ ((uint64_t)getpid() << 32);
        for (size_t i = 0; i < sizeof(r); i++) {
            t = t * 6364136223846793005u + 1442695040888963407u;
            r[i] = (unsigned char)(t >> 56);
        }
    }
    for (size_t i = 0; i < sizeof(r); i++) {
        out[2 * i] = hex[r[i] >> 4];
        out[2 * i + 1] = hex[r[i] & 15];
    }
    out[SNAP_REPLID] = '\0';
}

static const char *fsync_name(int mode)
{
    return mode == FSYNC_ALWAYS     ? "always"
           : mode == FSYNC_EVERYSEC ? "everysec"
                                    : "no";
}

/* ---- start-up ----------------------------------------------------------- */

/* Remembers which directory and snapshot are ours (device, inode). */
static void note_identity(struct persist *p)
{
    char path[4096];
    struct stat st;

    if (stat(p->dir, &st) == 0) {
        p->dir_dev = st.st_dev;
        p->dir_ino = st.st_ino;
    }
    p->snap_known =
        fs_path(path, sizeof(path), p->dir, PERSIST_SNAPSHOT) == 0 &&
        stat(path, &st) == 0;
    if (p->snap_known) {
        p->snap_dev = st.st_dev;
        p->snap_ino = st.st_ino;
    }
}

static int lock_dir(struct persist *p, char *err, size_t errlen)
{
    char path[4096];
    unsigned waited = 0;

    p->lock_fd = -1;
    if (fs_path(path, sizeof(path), p->dir, PERSIST_LOCK) != 0)
        goto error;
    p->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (p->lock_fd < 0)
        goto error;
    while (flock(p->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK || waited >= LOCK_WAIT_MS)
            goto error;
        if (waited == 0)
            log_info("waiting for the lock on %s", path);
        usleep(50 * 1000);
        waited += 50;
    }
    return 0;

error:
    if (p->lock_fd >= 0 && errno == EWOULDBLOCK)
        snprintf(err, errlen,
                 "cannot lock data dir %s: another process holds %s (is "
                 "another unreadd using this dir?)",
                 p->dir, path);
    else
        snprintf(err, errlen,
                 "cannot %s %s: %s (the data dir must be writable by the "
                 "user unreadd runs as)",
                 p->lock_fd < 0 ? "create the lock file" : "lock", path,
                 strerror(errno));
    return -1;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Lists journal.<N> (N >= 1, canonical decimal) in ascending order and,
 * with clean (at start), removes snapshots left half-written by a crash
 * (a save's, or a full sync's from a primary). */
static int scan_dir(struct persist *p, struct segs *s, bool clean, char *err,
                    size_t errlen)
{
    DIR *d = opendir(p->dir);
    struct dirent *e;
    uint64_t n;

    if (d == NULL) {
        snprintf(err, errlen, "cannot list data dir %s: %s", p->dir,
                 strerror(errno));
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        char path[4096];

        if (strncmp(name, "journal.", 8) == 0 &&
            ur_parse_u64(name + 8, strlen(name + 8), &n) && n > 0) {
            if (s->n == s->cap) {
                size_t cap = s->cap ? 2 * s->cap : 16;
                uint64_t *v = realloc(s->v, cap * sizeof(*v));
                if (v == NULL) {
                    closedir(d);
                    snprintf(err, errlen, "out of memory");
                    return -1;
                }
                s->v = v;
                s->cap = cap;
            }
            s->v[s->n++] = n;
        } else if (clean && strncmp(name, "snapshot.tmp.", 13) == 0 &&
                   fs_path(path, sizeof(path), p->dir, name) == 0) {
            log_info("removing %s, left by an interrupted save", path);
            unlink(path);
        }
    }
    closedir(d);
    if (s->n > 1) /* s->v is NULL when the dir holds no segment */
        qsort(s->v, s->n, sizeof(*s->v), cmp_u64);
    return 0;
}

/* Loads dir/snapshot.urs when there is one; *seg = the journal segments it
 * covers (0 without a snapshot). */
static int load_snapshot(struct persist *p, uint64_t *seg, char *err,
                         size_t errlen)
{
    char path[4096], msg[512];
    struct snap_meta meta;
    struct fs_map m;
    uint64_t t0 = now_ms();
    int rc;

    *seg = 0;
    if (fs_path(path, sizeof(path), p->dir, PERSIST_SNAPSHOT) != 0 ||
        fs_map_open(&m, path) != 0) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    rc = snapshot_load(m.data, m.len, p->db, &meta, msg, sizeof(msg));
    fs_map_close(&m);
    if (rc != 0) {
        snprintf(err, errlen,
                 "snapshot %s: %s. Refusing to start: inspect it with "
                 "`unreadd --check %s`",
                 path, msg, path);
        return -1;
    }
    *seg = meta.segment;
    if (meta.has_origin)
        p->origin = meta.origin;
    p->last_save_ms = meta.created_ms;
    p->last_save_bytes = meta.bytes;
    log_info("snapshot %s loaded: %llu bytes, %u sections, covers journal "
             "segments <= %llu, in %llu ms",
             path, (unsigned long long)meta.bytes, meta.nsections,
             (unsigned long long)meta.segment,
             (unsigned long long)(now_ms() - t0));
    return 0;
}

/* "journal <what>. Refusing to start: ..." naming the repair commands for
 * the segment at path. */
static void refuse(char *err, size_t errlen, const char *what, const char *path)
{
    snprintf(err, errlen,
             "journal %s. Refusing to start: inspect it with "
             "`unreadd --check %s`",
             what, path);
}

static void ld_unmap(struct loader *L)
{
    if (L->mapped)
        fs_map_close(&L->m);
    L->mapped = false;
}

/*
 * Opens the next segment after the snapshot's, which must follow the last
 * one without a gap; removes those the snapshot covers. The segment is
 * classified whole by journal_scan (its sequence numbers going on from the
 * segment before): damage refuses the start, naming the place and what
 * each remedy would do; a torn tail of the last segment is noted for
 * persist_load_done to cut; a last segment whose header was cut short
 * holds no record (the crash came while it was created) and is removed.
 * On return L->mapped says whether one is open (false: none left). 0, or
 * -1 with a message in err.
 */
static int ld_open_next(struct persist *p, char *err, size_t errlen)
{
    struct loader *L = &p->ld;
    struct journal_scan *sc = &L->scan;
    struct journal_hdr h;
    const char *why;
    char msg[5000];

    while (!L->mapped && L->i < L->s.n) {
        uint64_t seg = L->s.v[L->i];

        L->last = ++L->i == L->s.n;
        if (journal_path(&p->j, L->path, sizeof(L->path), seg) != 0) {
            snprintf(err, errlen, "data dir path too long");
            return -1;
        }
        if (seg <= L->snap_seg) {
            log_info("removing %s: the snapshot covers it", L->path);
            unlink(L->path);
            continue;
        }
        if (seg != L->next) {
            snprintf(err, errlen,
                     "journal segment %s/journal.%llu is missing (%s "
                     "exists): the changes it held are lost. Refusing to "
                     "start",
                     p->dir, (unsigned long long)L->next, L->path);
            return -1;
        }
        if (fs_map_open(&L->m, L->path) != 0) {
            snprintf(msg, sizeof(msg), "cannot read %s: %s", L->path,
                     strerror(errno));
            refuse(err, errlen, msg, L->path);
            return -1;
        }
        L->mapped = true;
        if (journal_hdr_check(L->m.data, L->m.len, &h, &why) == 0 &&
            h.seg != seg) {
            snprintf(msg, sizeof(msg),
                     "%s: offset 16: the header names segment %llu", L->path,
                     (unsigned long long)h.seg);
            refuse(err, errlen, msg, L->path);
            return -1;
        }
        /* The whole segment classified before a record of it is replayed
         * (journal.h): only a torn tail of the last one goes on. */
        journal_scan(L->m.data, L->m.len, &L->link, L->last, sc);
        if (sc->state == JOURNAL_CORRUPT) {
            char at[96], remedy[2048];

            journal_place(sc, sc->bad_off, sc->records + 1,
                          sc->bad_off < sc->end ? sc->bad_seq : sc->next_seq,
                          at, sizeof(at));
            check_remedies(L->path, L->m.len, sc, L->last, remedy,
                           sizeof(remedy));
            snprintf(err, errlen, "journal %s: %s: %s. Refusing to start. %s",
                     L->path, at, sc->why, remedy);
            return -1;
        }
        if (sc->gap > 0)
            log_warn("journal %s: starts %llu records after the segment "
                     "before it ends, which an operator's repair marked as "
                     "ending early: those records are not replayed",
                     L->path, (unsigned long long)sc->gap);
        if (sc->state == JOURNAL_TORN && !sc->hdr_ok) {
            log_warn("journal %s: %zu bytes, %s; removing it", L->path,
                     L->m.len, sc->why);
            ld_unmap(L);
            if (unlink(L->path) != 0) {
                snprintf(err, errlen, "cannot remove %s: %s", L->path,
                         strerror(errno));
                return -1;
            }
            return 0;
        }
        if (sc->state == JOURNAL_TORN) {
            L->torn = true;
            L->torn_off = sc->end;
            L->torn_len = L->m.len;
            L->torn_why = sc->why;
            memcpy(L->torn_path, L->path, sizeof(L->path));
        }
        L->off = sc->hdr.len;
        L->rec_no = 0;
        L->link = sc->link;
        if (L->first == 0)
            L->first = seg;
        L->next++;
    }
    return 0;
}

/* A history record met while loading: the data's origin from there on
 * (persist_history_fork). */
static int load_history(struct persist *p, const struct journal_rec *rec,
                        char *err, size_t errlen)
{
    struct ur_arg *argv = NULL;
    uint32_t cap = 0;
    struct ur_frame_req req;
    const char *id, *id2, *why;
    uint64_t off2, off;

    if (journal_rec_request(rec, &argv, &cap, &req, &why) != 0 ||
        journal_history_args(&req, &id, &id2, &off2, &off, &why) != 0) {
        free(argv);
        persist_load_refuse(p, why, err, errlen);
        return -1;
    }
    if (off != p->origin.offset)
        log_warn("journal %s: history record at offset %llu of the stream, "
                 "the records before it add up to %llu",
                 p->ld.path, (unsigned long long)off,
                 (unsigned long long)p->origin.offset);
    memcpy(p->origin.replid, id, SNAP_REPLID);
    memcpy(p->origin.replid2, id2, SNAP_REPLID);
    p->origin.offset2 = off2;
    p->origin.has2 = true;
    free(argv);
    return 0;
}

int persist_load_next(struct persist *p, struct journal_rec *rec, char *err,
                      size_t errlen)
{
    struct loader *L = &p->ld;

    for (;;) {
        if (!L->mapped && ld_open_next(p, err, errlen) != 0)
            return -1;
        if (!L->mapped)
            return 0;
        L->rec_off = L->off;
        if (journal_rec_next(&L->scan, L->m.data, &L->off, rec)) {
            L->rec_no++;
            L->rec_seq = rec->seq;
            if (journal_rec_is_history(rec)) {
                if (load_history(p, rec, err, errlen) != 0)
                    return -1;
                continue;
            }
            p->loaded_records++;
            /* Every record counts in the stream offset as it would be
             * streamed: a version 2 header and its payload. */
            p->origin.offset += JOURNAL_REC_HDR + 8 + rec->frame_len;
            return 1;
        }
        if (!(L->torn && L->last) && fs_fsync_file(L->path) != 0) {
            /* What is replayed is acknowledged history, but the process
             * that wrote it may have died before its fdatasync (kill -9
             * under everysec), leaving it in the page cache only. Synced
             * before anything new is acknowledged on top of it, a power
             * cut can take no more than everysec's last second. (A torn
             * segment is synced by its cut, persist_load_done.) */
            snprintf(err, errlen,
                     "journal %s: fsync at start-up failed: %s. Refusing to "
                     "start: the records it holds may not be on disk",
                     L->path, strerror(errno));
            return -1;
        }
        ld_unmap(L);
    }
}

void persist_load_refuse(const struct persist *p, const char *why, char *err,
                         size_t errlen)
{
    const struct loader *L = &p->ld;
    char at[96], remedy[2048];

    journal_place(&L->scan, L->rec_off, L->rec_no, L->rec_seq, at, sizeof(at));
    check_remedies_replay(L->path, L->rec_off, L->rec_no, L->scan.records,
                          L->last, remedy, sizeof(remedy));
    snprintf(err, errlen, "journal %s: %s: %s. Refusing to start. %s", L->path,
             at, why, remedy);
}

/* everysec syncs from a thread, so the loop never waits for the disk
 * (persist_cron); always syncs in the loop, before the turn's replies. */
static int start_bgsync(struct persist *p, char *err, size_t errlen)
{
    if (!p->journal_on || p->fsync_mode != FSYNC_EVERYSEC ||
        bgsync_start(&p->bg) == 0)
        return 0;
    snprintf(err, errlen, "cannot start the journal's fsync thread: %s",
             strerror(errno));
    return -1;
}

struct persist *persist_open(const struct persist_config *cfg, struct db *db,
                             char *err, size_t errlen)
{
    struct persist *p = calloc(1, sizeof(*p));
    struct loader *L;

    if (p == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    L = &p->ld;
    p->db = db;
    snprintf(p->dir, sizeof(p->dir), "%s", cfg->dir);
    p->lock_fd = -1;
    p->saved_fd = -1;
    new_replid(p->origin.replid);
    memset(p->origin.replid2, '0', SNAP_REPLID);
    p->journal_on = cfg->journal;
    p->fsync_mode = cfg->fsync_mode;
    p->save_seconds = cfg->save_seconds;
    p->last_save_ok = true;
    p->load_ms = now_ms(); /* the start, until persist_load_done */
    journal_init(&p->j, p->dir, 1, 1);
    if (lock_dir(p, err, errlen) != 0 ||
        scan_dir(p, &L->s, true, err, errlen) != 0 ||
        load_snapshot(p, &L->snap_seg, err, errlen) != 0) {
        persist_close(p);
        return NULL;
    }
    note_identity(p);
    L->next = L->snap_seg + 1;
    return p;
}

int persist_load_done(struct persist *p, char *err, size_t errlen)
{
    struct loader *L = &p->ld;

    ld_unmap(L);
    if (L->torn) {
        log_warn("journal %s: torn last record at offset %zu (%zu bytes "
                 "cut: %s): a write cut short by a crash, never acknowledged",
                 L->torn_path, L->torn_off, L->torn_len - L->torn_off,
                 L->torn_why);
        if (fs_truncate(L->torn_path, L->torn_off) != 0) {
            snprintf(err, errlen, "cannot cut %s at offset %zu: %s",
                     L->torn_path, L->torn_off, strerror(errno));
            return -1;
        }
    }
    journal_init(&p->j, p->dir, L->first ? L->first : L->next, L->next);
    /* Sequence numbers go on from the last record replayed. */
    if (L->link.next_seq != 0)
        p->j.base_seq = L->link.next_seq;
    free(L->s.v);
    L->s = (struct segs){NULL, 0, 0};
    p->load_ms = now_ms() - p->load_ms;
    p->dirty = p->loaded_records;
    log_info("data loaded from %s in %llu ms: %llu journal records replayed; "
             "journal %s (fsync %s), next segment %llu",
             p->dir, (unsigned long long)p->load_ms,
             (unsigned long long)p->loaded_records,
             p->journal_on ? "on" : "off", fsync_name(p->fsync_mode),
             (unsigned long long)p->j.seg);
    if (start_bgsync(p, err, errlen) != 0)
        return -1;
    p->last_try_ms = p->last_sync_try_ms = now_ms();
    return 0;
}

void persist_close(struct persist *p)
{
    if (p == NULL)
        return;
    ld_unmap(&p->ld);
    free(p->ld.s.v);
    bgsync_stop(&p->bg);
    journal_deinit(&p->j);
    if (p->lock_fd >= 0)
        close(p->lock_fd);
    if (p->saved_fd >= 0)
        close(p->saved_fd);
    free(p);
}

/* ---- the journal at run time -------------------------------------------- */

const char *persist_refusal(const struct persist *p)
{
    return p->broken || p->untrusted ? p->refusal : NULL;
}

int persist_stage(struct persist *p, uint64_t clock_ms, const struct ur_op *op,
                  uint32_t argc, const struct ur_arg *argv)
{
    int rc;

    p->journaled = false;
    if (!p->journal_on && !p->stream)
        return 0;
    p->staged = p->j.buf.len;
    if (p->in_batch)
        rc = journal_batch_put(&p->j.buf, p->batch_rec, op->code, argc, argv);
    else
        rc = journal_rec_append(&p->j.buf, p->j.salt, journal_seq_next(&p->j),
                                clock_ms, op->code, argc, argv);
    p->journaled = rc == 0;
    return rc;
}

static void reverse(char *a, size_t n)
{
    for (size_t i = 0, j = n; i + 1 < j; i++, j--) {
        char t = a[i];
        a[i] = a[j - 1];
        a[j - 1] = t;
    }
}

/* The first record of a forked history is committed at j.buf[off..]: the
 * history record goes just before it (in place: a rotation by
 * reversals), taking its sequence number, and the record is sealed again
 * with the next one. A write torn between them keeps the history record,
 * never the record without it. */
static size_t history_before(struct persist *p, size_t off)
{
    size_t rec = p->j.buf.len - off, hist;
    uint64_t seq = journal_seq_next(&p->j);

    if (history_record(p) != 0 || !p->journal_on)
        return off;
    hist = p->j.buf.len - off - rec;
    reverse(p->j.buf.data + off, rec);
    reverse(p->j.buf.data + off + rec, hist);
    reverse(p->j.buf.data + off, rec + hist);
    journal_rec_seal(p->j.buf.data + off, (uint32_t)(hist - JOURNAL_REC_HDR),
                     p->j.salt, seq);
    journal_rec_seal(p->j.buf.data + off + hist,
                     (uint32_t)(rec - JOURNAL_REC_HDR), p->j.salt, seq + 1);
    return off + hist;
}

/* The record at j.buf[off..] (to the end) is committed: it counts in the
 * stream offset and waits to be taken by replication. */
static void committed(struct persist *p, size_t off)
{
    if (p->history_pending)
        off = history_before(p, off);
    p->take_off = off;
    p->take_len = p->j.buf.len - off;
    p->take_ready = true;
    p->origin.offset += p->take_len;
    p->j.appended++;
}

void persist_feed(struct persist *p, bool changed)
{
    if (changed)
        p->dirty++;
    if (!p->journaled)
        return;
    p->journaled = false;
    if (!changed)
        p->j.buf.len = p->staged;
    else if (p->in_batch)
        p->batch_n++;
    else
        committed(p, p->staged);
}

int persist_batch_begin(struct persist *p, uint64_t clock_ms)
{
    if (p->journal_on || p->stream) {
        p->batch_rec = p->j.buf.len;
        if (journal_batch_begin(&p->j.buf, clock_ms) != 0)
            return -1;
    }
    p->in_batch = true;
    p->batch_n = 0;
    return 0;
}

void persist_batch_end(struct persist *p)
{
    p->in_batch = false;
    if (!p->journal_on && !p->stream)
        return;

    if (p->batch_n == 0) {
        p->j.buf.len = p->batch_rec;
        return;
    }
    journal_batch_end(&p->j.buf, p->batch_rec, p->batch_n, p->j.salt,
                      journal_seq_next(&p->j));
    committed(p, p->batch_rec);
}

/* Appends the history record of the origin now (persist_history_fork).
 * 0, or -1 (no memory: the fork is not journaled, logged). */
static int history_record(struct persist *p)
{
    struct ur_arg argv[JOURNAL_HISTORY_ARGS] = {
        {.kind = UR_ARG_STR, .len = SNAP_REPLID, .str = p->origin.replid},
        {.kind = UR_ARG_STR, .len = SNAP_REPLID, .str = p->origin.replid2},
        {.kind = UR_ARG_INT, .num = p->origin.offset2},
        {.kind = UR_ARG_INT, .num = p->origin.offset}};

    p->history_pending = false;
    if (!p->journal_on)
        return 0;
    /* Called before a record is staged or appended, never while one is
     * being built (a batch's): it precedes the records of its history. */
    if (journal_rec_append(&p->j.buf, p->j.salt, journal_seq_next(&p->j),
                           now_ms(), JOURNAL_OP_HISTORY, JOURNAL_HISTORY_ARGS,
                           argv) != 0) {
        log_error("journal: no memory for the record of the replication "
                  "history %s: a restart before the next snapshot would "
                  "not know it",
                  p->origin.replid);
        return -1;
    }
    p->j.appended++;
    return 0;
}

static void journal_broken(struct persist *p, const char *op)
{
    if (p->untrusted)
        return; /* the stronger state says why already */
    if (!p->broken)
        log_error("journal %s/journal.%llu: %s failed: %s. Write commands "
                  "are refused (-MISCONF) until it succeeds again; replies "
                  "to writes already run wait for it",
                  p->dir, (unsigned long long)p->j.seg, op, strerror(p->j.err));
    p->broken = true;
    p->broken_op = op;
    snprintf(p->refusal, sizeof(p->refusal), "%s failed: %s", op,
             strerror(p->j.err));
}

/*
 * The files can no longer be trusted to hold what was acknowledged (why:
 * what happened, exactly): the current segment is given up unsynced, the
 * journal is not written, writes are refused and replies to writes already
 * run are held, until persist_cron's resync has written a snapshot and a
 * fresh segment. Logged once.
 */
static void untrust(struct persist *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void untrust(struct persist *p, const char *fmt, ...)
{
    va_list ap;

    journal_abandon(&p->j);
    if (p->untrusted)
        return;
    va_start(ap, fmt);
    vsnprintf(p->untrust_why, sizeof(p->untrust_why), fmt, ap);
    va_end(ap);
    log_error("%s. The journal is not trusted to hold what was acknowledged "
              "any more: write commands are refused (-MISCONF) and replies "
              "to writes already run wait, until a new snapshot and a fresh "
              "journal segment are written (tried at once, then every %d s)",
              p->untrust_why, RESYNC_RETRY_MS / 1000);
    snprintf(p->refusal, sizeof(p->refusal),
             "%s; not trusted until a new snapshot and journal segment are "
             "written",
             p->untrust_why);
    p->untrusted = true;
    p->resync_try_ms = 0;
    p->resync_saved = false;
}

/* An fdatasync of the journal failed (j.err): never retried and trusted
 * (PostgreSQL's "fsyncgate"). */
static void sync_failed(struct persist *p)
{
    p->sync_failures++;
    untrust(p,
            "journal %s/journal.%llu: fdatasync failed: %s. The kernel may "
            "have dropped what it could not write, and a later fdatasync of "
            "the file would not say so",
            p->dir, (unsigned long long)p->j.seg, strerror(p->j.err));
}

/* Whether the open segment was deleted (its inode has no name any more):
 * nothing may then be acknowledged into it. Untrusts when so. */
static bool segment_deleted(struct persist *p)
{
    struct stat st;

    if (p->j.fd < 0 || fstat(p->j.fd, &st) != 0 || st.st_nlink != 0)
        return false;
    untrust(p,
            "journal segment %s/journal.%llu was deleted while the server "
            "had it open (by rm, or with its directory): whatever is written "
            "to it would be gone at the next restart",
            p->dir, (unsigned long long)p->j.seg);
    return true;
}

/* fdatasync of the journal; 0 or -1 (j.err set). */
static int sync_journal(struct persist *p)
{
    uint64_t before = p->j.synced;

    p->last_sync_try_ms = now_ms();
    if (journal_sync(&p->j) != 0)
        return -1;
    if (p->j.synced != before)
        p->last_sync_ms = p->last_sync_try_ms;
    return 0;
}

/* With the journal off, records made for the stream are dropped once the
 * turn is over (replication took them at commit). */
static void drop_unjournaled(struct persist *p)
{
    p->j.buf.len = 0;
    p->j.written = p->j.synced = p->j.appended;
    p->take_ready = false;
}

void persist_flush(struct persist *p)
{
    if (!p->journal_on) {
        drop_unjournaled(p);
        return;
    }
    if (p->untrusted)
        return; /* the records wait for the resync */
    if (p->j.buf.len > 0 && segment_deleted(p))
        return;
    if (journal_write(&p->j) != 0) {
        journal_broken(p, "write");
        return;
    }
    if (p->fsync_mode == FSYNC_ALWAYS ||
        (p->broken && p->fsync_mode == FSYNC_EVERYSEC)) {
        if (sync_journal(p) != 0) {
            /* With always, the turn's replies wait (durable is synced):
             * the resync's snapshot makes their writes durable. */
            sync_failed(p);
            return;
        }
    }
    if (p->broken) {
        log_warn("journal %s/journal.%llu written again: write commands are "
                 "accepted again",
                 p->dir, (unsigned long long)p->j.seg);
        p->broken = false;
    }
}

uint64_t persist_appended(const struct persist *p)
{
    return p->j.appended;
}

uint64_t persist_durable(const struct persist *p)
{
    if (!p->journal_on)
        return p->j.appended;
    return p->fsync_mode == FSYNC_ALWAYS ? p->j.synced : p->j.written;
}

/* ---- snapshots ---------------------------------------------------------- */

/*
 * Ends the current journal segment so that a snapshot of the memory now
 * covers segments <= *seg. *resync: the snapshot is the untrusted
 * journal's resync (see untrust): then nothing more is written to the old
 * segments, and the records in the buffer, which the memory holds, are
 * dropped (never written, never acknowledged: the snapshot makes them
 * durable).
 */
static int cut(struct persist *p, uint64_t *seg, bool *resync, char *err,
               size_t errlen)
{
    *resync = false;
    if (!p->journal_on)
        drop_unjournaled(p); /* never written: no segment to end */
    if (p->journal_on && !p->untrusted && !segment_deleted(p)) {
        if (journal_write(&p->j) != 0) {
            journal_broken(p, "write");
            snprintf(err, errlen,
                     "the journal cannot be written (%s): no snapshot "
                     "can be cut",
                     strerror(p->j.err));
            return -1;
        }
        if (journal_sync(&p->j) != 0)
            sync_failed(p); /* this snapshot becomes the resync */
    }
    if (p->journal_on && p->untrusted) {
        journal_abandon(&p->j);
        *seg = p->j.seg - 1;
        p->j.buf.len = 0;
        p->resync_upto = p->j.appended;
        *resync = true;
        return 0;
    }
    if (journal_rotate(&p->j, seg) == 0)
        return 0;
    journal_broken(p, "write");
    snprintf(err, errlen,
             "the journal cannot be written (%s): no snapshot "
             "can be cut",
             strerror(p->j.err));
    return -1;
}

static void tmp_path(const struct persist *p, pid_t pid, char *out, size_t cap)
{
    char name[48];

    snprintf(name, sizeof(name), "snapshot.tmp.%d", (int)pid);
    if (fs_path(out, cap, p->dir, name) != 0)
        out[0] = '\0';
}

/* Writes the snapshot covering segments <= seg: temp file, fsync, rename,
 * fsync of the directory. 0, or -1 with err (the temp file removed). */
static int save_file(struct persist *p, uint64_t seg, char *err, size_t errlen)
{
    char tmp[4096], path[4096];
    uint64_t bytes;
    int fd, saved;

    tmp_path(p, getpid(), tmp, sizeof(tmp));
    if (tmp[0] == '\0' ||
        fs_path(path, sizeof(path), p->dir, PERSIST_SNAPSHOT) != 0) {
        snprintf(err, errlen, "data dir path too long");
        return -1;
    }
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        goto error;
    if (snapshot_write(fd, p->db, now_ms(), seg, &p->origin, &bytes) != 0 ||
        fsync(fd) != 0) {
        saved = errno;
        close(fd);
        errno = saved;
        goto error;
    }
    if (close(fd) != 0 || rename(tmp, path) != 0 || fs_fsync_dir(p->dir) != 0)
        goto error;
    return 0;

error:
    saved = errno;
    unlink(tmp);
    snprintf(err, errlen, "snapshot %s: %s", tmp, strerror(saved));
    return -1;
}

/*
 * The resync's snapshot is on disk: once the fresh segment is created too,
 * the records it covers count as written and synced (replies held for
 * them leave), and the journal is trusted again. When the segment cannot
 * be created, persist_cron tries again.
 */
static void resync_done(struct persist *p)
{
    uint64_t written = p->j.written;

    p->resync_saved = true;
    /* The snapshot holds the records up to resync_upto: the fresh
     * segment's header names the first one after them as its first
     * sequence number (journal v2), so the count of written records moves
     * there first, and back if the segment cannot be created. */
    if (p->j.written < p->resync_upto)
        p->j.written = p->resync_upto;
    if (journal_create(&p->j) != 0) {
        uint64_t quiet;

        p->j.written = written;
        if (log_rate_ok(&p->resync_log, now_ms(), &quiet))
            log_warn("resync: the snapshot is written but the fresh journal "
                     "segment %s/journal.%llu cannot be created: %s; "
                     "retrying",
                     p->dir, (unsigned long long)p->j.seg, strerror(p->j.err));
        return;
    }
    if (p->j.synced < p->resync_upto)
        p->j.synced = p->resync_upto;
    p->untrusted = false;
    p->resync_saved = false;
    p->broken = false;
    p->resyncs++;
    log_warn("journal trusted again: a new snapshot and a fresh segment "
             "%s/journal.%llu are on disk; write commands are accepted again",
             p->dir, (unsigned long long)p->j.seg);
}

/* Bookkeeping of a finished snapshot (either kind); resync: it was cut
 * for the untrusted journal. */
static void save_done(struct persist *p, bool ok, uint64_t start_ms,
                      uint64_t seg, uint64_t dirty_at_start, bool resync)
{
    uint64_t now = now_ms();
    char path[4096];
    struct stat st;

    p->last_save_ok = ok;
    p->last_save_dur_ms = now - start_ms;
    if (!ok)
        return;
    p->last_save_ms = now;
    p->saves++;
    p->dirty -= dirty_at_start < p->dirty ? dirty_at_start : p->dirty;
    if (fs_path(path, sizeof(path), p->dir, PERSIST_SNAPSHOT) == 0 &&
        stat(path, &st) == 0) {
        p->last_save_bytes = (uint64_t)st.st_size;
        p->snap_known = true;
        p->snap_dev = st.st_dev;
        p->snap_ino = st.st_ino;
    }
    journal_drop_through(&p->j, seg);
    log_info("snapshot saved: %llu bytes in %llu ms, covers journal "
             "segments <= %llu",
             (unsigned long long)p->last_save_bytes,
             (unsigned long long)p->last_save_dur_ms, (unsigned long long)seg);
    if (resync && p->untrusted)
        resync_done(p);
}

int persist_save(struct persist *p, char *err, size_t errlen)
{
    uint64_t start = now_ms(), dirty = p->dirty, seg = 0;
    bool resync = false;
    int rc;

    if (p->child != 0) {
        snprintf(err, errlen, "a background save is in progress");
        return -1;
    }
    p->last_try_ms = start;
    rc = cut(p, &seg, &resync, err, errlen);
    if (rc == 0)
        rc = save_file(p, seg, err, errlen);
    if (rc != 0)
        log_warn("save failed: %s", err);
    save_done(p, rc == 0, start, seg, dirty, resync);
    return rc;
}

/* The forked child: writes the snapshot from its copy of the memory and
 * exits. It dies with the parent, so it can never rename an old snapshot
 * over a newer one written by the next server on the directory (the
 * death signal follows the forking thread: the loop's, which lives as
 * long as the process). It has no fsync thread and touches no journal. */
static void child_run(struct persist *p, uint64_t seg, pid_t parent)
{
    char err[512];

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(1);
    /* The server and its clients come first: the save can take longer. */
    if (setpriority(PRIO_PROCESS, 0, SAVE_NICE) != 0)
        log_debug("background save: setpriority: %s", strerror(errno));
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    if (save_file(p, seg, err, sizeof(err)) != 0) {
        log_error("background save: %s", err);
        _exit(1);
    }
    _exit(0);
}

static uint64_t now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

int persist_bgsave(struct persist *p, char *err, size_t errlen)
{
    pid_t parent = getpid(), pid;
    uint64_t seg, t0;
    bool resync;

    if (p->child != 0) {
        snprintf(err, errlen, "a background save is already in progress");
        return -1;
    }
    p->last_try_ms = now_ms();
    if (cut(p, &seg, &resync, err, errlen) != 0) {
        p->last_save_ok = false;
        return -1;
    }
    t0 = now_us();
    pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        log_warn("background save: %s", err);
        p->last_save_ok = false;
        return -1;
    }
    if (pid == 0)
        child_run(p, seg, parent);
    p->fork_us = now_us() - t0;
    p->forks++;
    p->child = pid;
    p->child_origin = p->origin;
    p->child_resync = resync;
    p->child_seg = seg;
    p->child_dirty = p->dirty;
    p->child_start_ms = p->last_try_ms;
    log_info("background save started by pid %d (journal segments <= %llu, "
             "fork %llu us)",
             (int)pid, (unsigned long long)seg, (unsigned long long)p->fork_us);
    return 0;
}

/* A background save ended: when replication asked for it, the snapshot
 * it wrote is opened now, before any later save can replace the file
 * (only a child renames one, and the next child starts after this). */
static void saved_open(struct persist *p, bool ok)
{
    char path[4096];

    if (!p->want_saved)
        return;
    if (p->saved_fd >= 0)
        close(p->saved_fd);
    p->saved_fd = -1;
    if (!ok)
        return; /* still wanted: the next save's */
    p->want_saved = false;
    p->saved_no = p->saves_ended;
    if (fs_path(path, sizeof(path), p->dir, PERSIST_SNAPSHOT) == 0)
        p->saved_fd = open(path, O_RDONLY | O_CLOEXEC);
    if (p->saved_fd < 0)
        log_warn("cannot open the snapshot just saved for replication: %s",
                 strerror(errno));
    p->saved_origin = p->child_origin;
}

/* Collects a finished background save, if any. */
static void reap(struct persist *p)
{
    char tmp[4096];
    int st = 0;
    pid_t r;
    bool ok;

    if (p->child == 0)
        return;
    r = waitpid(p->child, &st, WNOHANG);
    if (r == 0 || (r < 0 && errno == EINTR))
        return;
    ok = r == p->child && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (!ok) {
        log_warn("background save by pid %d failed (%s %d); the next "
                 "attempt follows",
                 (int)p->child, WIFSIGNALED(st) ? "signal" : "exit status",
                 WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
        tmp_path(p, p->child, tmp, sizeof(tmp));
        unlink(tmp);
    }
    p->child = 0;
    p->saves_ended++;
    saved_open(p, ok);
    save_done(p, ok, p->child_start_ms, p->child_seg, p->child_dirty,
              p->child_resync);
}

static void stop_child(struct persist *p)
{
    char tmp[4096];

    if (p->child == 0)
        return;
    p->saves_ended++;
    kill(p->child, SIGKILL);
    while (waitpid(p->child, NULL, 0) < 0 && errno == EINTR)
        ;
    tmp_path(p, p->child, tmp, sizeof(tmp));
    unlink(tmp);
    log_info("background save by pid %d stopped", (int)p->child);
    p->child = 0;
}

static void autosave(struct persist *p, uint64_t now)
{
    uint64_t every = (uint64_t)p->save_seconds * 1000;
    char err[512];

    if (every == 0 || p->child != 0 || p->dirty == 0)
        return;
    if (!p->last_save_ok && every > SAVE_RETRY_MS)
        every = SAVE_RETRY_MS;
    if (now - p->last_try_ms < every)
        return;
    if (persist_bgsave(p, err, sizeof(err)) != 0)
        log_warn("automatic background save: %s", err);
}

/* Takes the result of the thread's request once it has finished. A
 * failed writeback needs nothing: the next fdatasync reports it. */
static void bg_collect(struct persist *p)
{
    struct bgsync_result res;

    if (!p->bg_busy || !bgsync_collect(&p->bg, &res))
        return;
    p->bg_busy = false;
    if (res.op != BGSYNC_DATASYNC)
        return;
    if (journal_sync_end(&p->j, res.tag, res.err, res.dur_us) != 0)
        sync_failed(p);
    else
        p->last_sync_ms = now_ms();
}

/* Hands op on the current segment to the thread. With no descriptor to
 * spare (EMFILE), an fdatasync runs in the loop this once. */
static void bg_submit(struct persist *p, enum bgsync_op op, uint64_t now)
{
    uint64_t upto;
    int fd = journal_sync_begin(&p->j, &upto);

    if (fd < 0) {
        if (op == BGSYNC_DATASYNC && sync_journal(p) != 0)
            sync_failed(p);
        return;
    }
    bgsync_submit(&p->bg, fd, op, upto); /* the slot is free: collected */
    p->bg_busy = true;
    p->bg_op = op;
    p->wb_asked = upto;
    if (op == BGSYNC_DATASYNC) {
        p->sync_asked = upto;
        p->sync_late = false;
        p->last_sync_try_ms = now;
    }
}

/*
 * everysec, every cron: once a second the thread fdatasyncs the segment
 * when records were written since the last fdatasync, and in between it
 * starts the writeback of what was written since the last request,
 * without waiting. The fdatasync then finds little left to write: it is
 * short, and so are the loop's writes to the segment that ext4 holds
 * while it commits (docs/PERFORMANCE.md, Persistence).
 *
 * An fdatasync due while the last still runs (a slow disk) is not queued
 * behind it: it waits, counted once in sync_delayed, and is asked at the
 * first cron after the last ends. Writes and replies go on meanwhile
 * (under everysec a reply waits for the write only), so the writes a
 * power loss can take are those of the last second plus the slow
 * fdatasync's duration (docs/PERSISTENCE.md section 4).
 */
static void everysec_sync(struct persist *p, uint64_t now)
{
    bool due;

    bg_collect(p);
    if (p->broken || p->untrusted || p->j.written == p->j.synced)
        return;
    due = now - p->last_sync_try_ms >= EVERYSEC_MS &&
          p->j.written != p->sync_asked;
    if (p->bg_busy) {
        if (due && p->bg_op == BGSYNC_DATASYNC && !p->sync_late) {
            p->sync_delayed++;
            p->sync_late = true;
        }
        return;
    }
    if (due)
        bg_submit(p, BGSYNC_DATASYNC, now);
    else if (p->j.written != p->wb_asked)
        bg_submit(p, BGSYNC_WRITEBACK, now);
}

/*
 * Notices the data directory, the open segment or the snapshot removed or
 * replaced under the server (another device or inode at the path, or an
 * inode without a name): the journal is then untrusted. Not while a
 * background save may rename its snapshot into place.
 */
static void check_files(struct persist *p)
{
    char path[4096];
    struct stat st, fst;

    if (!p->journal_on || p->untrusted)
        return;
    if (stat(p->dir, &st) != 0) {
        untrust(p,
                "data directory %s is gone (%s): it was removed or moved "
                "while the server ran",
                p->dir, strerror(errno));
        return;
    }
    if (st.st_dev != p->dir_dev || st.st_ino != p->dir_ino) {
        untrust(p,
                "data directory %s was replaced by another directory "
                "(inode %llu, the server's was %llu): the files the "
                "server wrote are not there",
                p->dir, (unsigned long long)st.st_ino,
                (unsigned long long)p->dir_ino);
        return;
    }
    if (p->j.fd >= 0 && fstat(p->j.fd, &fst) == 0) {
        if (segment_deleted(p))
            return;
        if (journal_path(&p->j, path, sizeof(path), p->j.seg) == 0 &&
            (stat(path, &st) != 0 || st.st_dev != fst.st_dev ||
             st.st_ino != fst.st_ino)) {
            untrust(p,
                    "journal segment %s was replaced by another file "
                    "while the server had it open: what the server "
                    "writes would not be loaded at the next restart",
                    path);
            return;
        }
    }
    if (!p->snap_known || p->child != 0 ||
        fs_path(path, sizeof(path), p->dir, PERSIST_SNAPSHOT) != 0)
        return;
    if (stat(path, &st) != 0)
        untrust(p,
                "snapshot %s was deleted (%s): the journal segments after "
                "it cannot be loaded without it",
                path, strerror(errno));
    else if (st.st_dev != p->snap_dev || st.st_ino != p->snap_ino)
        untrust(p,
                "snapshot %s was replaced by a file the server did not "
                "write: with the server's journal segments it would load "
                "the wrong data",
                path);
}

/*
 * Before a resync writes into the data directory: it must be ours. When
 * the path names another directory now (removed and created again,
 * replaced), the server takes that one's lock and makes it its own: its
 * memory holds every change, so its snapshot there is the complete data.
 * false (logged at most once a second) when there is no directory at the
 * path or another process holds its lock.
 */
static bool dir_ours(struct persist *p)
{
    char path[4096];
    struct stat st;
    uint64_t quiet;
    int fd;

    errno = 0;
    if (stat(p->dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        const char *why = errno == 0 ? "not a directory" : strerror(errno);
        if (log_rate_ok(&p->resync_log, now_ms(), &quiet))
            log_warn("resync: data directory %s: %s; create it (mkdir) and "
                     "the server writes its snapshot and journal there",
                     p->dir, why);
        return false;
    }
    if (st.st_dev == p->dir_dev && st.st_ino == p->dir_ino)
        return true;
    fd = fs_path(path, sizeof(path), p->dir, PERSIST_LOCK) == 0
             ? open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644)
             : -1;
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (log_rate_ok(&p->resync_log, now_ms(), &quiet))
            log_warn("resync: cannot lock the new data directory %s: %s",
                     p->dir, strerror(errno));
        if (fd >= 0)
            close(fd);
        return false;
    }
    if (p->lock_fd >= 0)
        close(p->lock_fd);
    p->lock_fd = fd;
    p->dir_dev = st.st_dev;
    p->dir_ino = st.st_ino;
    p->snap_known = false;
    log_warn("resync: data directory %s is a new directory: the server "
             "holds its lock now and writes its data there",
             p->dir);
    return true;
}

/* While the journal is untrusted: a background save of the memory (or,
 * once it is written, the fresh segment), tried at once, then every
 * RESYNC_RETRY_MS. */
static void resync_tick(struct persist *p, uint64_t now)
{
    char err[512];

    if (!p->untrusted || p->child != 0)
        return;
    if (p->resync_saved) {
        resync_done(p);
        return;
    }
    if (p->resync_try_ms != 0 && now - p->resync_try_ms < RESYNC_RETRY_MS)
        return;
    p->resync_try_ms = now;
    if (!dir_ours(p))
        return;
    if (persist_bgsave(p, err, sizeof(err)) != 0)
        log_warn("resync: %s", err);
}

void persist_cron(struct persist *p)
{
    uint64_t now = now_ms();

    persist_flush(p);
    reap(p);
    check_files(p);
    if (p->journal_on && p->fsync_mode == FSYNC_EVERYSEC)
        everysec_sync(p, now);
    resync_tick(p, now);
    autosave(p, now);
}

int persist_shutdown(struct persist *p, bool save)
{
    char err[512];

    stop_child(p);
    if (p->journal_on && !p->untrusted &&
        (journal_write(&p->j) != 0 || journal_sync(&p->j) != 0))
        log_error("journal: final write failed: %s", strerror(p->j.err));
    if (!save && p->untrusted) {
        log_error("shutting down with the journal untrusted (%s) and no "
                  "final snapshot: changes since may be missing at the next "
                  "start",
                  p->untrust_why);
        return -1;
    }
    if (!save)
        return 0;
    if (persist_save(p, err, sizeof(err)) != 0) {
        log_error("final snapshot failed: %s", err);
        return -1;
    }
    return 0;
}

void persist_info(const struct persist *p, struct persist_info *o)
{
    memset(o, 0, sizeof(*o));
    o->bgsave_in_progress = p->child != 0;
    o->changes_since_save = p->dirty;
    o->last_save_ms = p->last_save_ms;
    o->last_save_ok = p->last_save_ok;
    o->last_save_duration_ms = p->last_save_dur_ms;
    o->last_save_bytes = p->last_save_bytes;
    o->journal_on = p->journal_on;
    o->journal_fsync = fsync_name(p->fsync_mode);
    o->journal_ok = !p->broken && !p->untrusted;
    o->journal_untrusted = p->untrusted;
    o->journal_error = p->untrusted ? p->untrust_why
                       : p->broken  ? strerror(p->j.err)
                                    : "";
    o->sync_failures = p->sync_failures;
    o->resyncs = p->resyncs;
    o->journal_bytes = p->journal_on ? journal_bytes(&p->j) : 0;
    o->journal_segment = p->j.seg;
    o->journal_pending = p->j.buf.len;
    o->last_fsync_ms = p->last_sync_ms;
    o->last_fsync_us = p->j.sync_us;
    o->fsyncs = p->j.syncs;
    o->fsync_in_progress = p->bg_busy && p->bg_op == BGSYNC_DATASYNC;
    o->fsync_delayed = p->sync_delayed;
    o->loaded_records = p->loaded_records;
    o->load_ms = p->load_ms;
    o->fork_us = p->fork_us;
    o->forks = p->forks;
    o->saves = p->saves;
}

/* ---- replication -------------------------------------------------------- */

void persist_origin(const struct persist *p, struct snap_origin *out)
{
    *out = p->origin;
}

uint64_t persist_offset(const struct persist *p)
{
    return p->origin.offset;
}

int persist_history_fork(struct persist *p, const char *replid)
{
    memcpy(p->origin.replid2, p->origin.replid, SNAP_REPLID);
    p->origin.offset2 = p->origin.offset;
    p->origin.has2 = true;
    if (replid != NULL)
        memcpy(p->origin.replid, replid, SNAP_REPLID);
    else
        new_replid(p->origin.replid);
    p->origin.replid[SNAP_REPLID] = '\0';
    /* Journaled before the next record: until one is made under the new
     * id, a restart that does not know it loses nothing. */
    p->history_pending = true;
    return 0;
}

void persist_set_stream(struct persist *p, bool on)
{
    p->stream = on;
}

bool persist_take_record(struct persist *p, const char **payload, uint32_t *n,
                         uint64_t *at)
{
    if (!p->take_ready)
        return false;
    p->take_ready = false;
    *payload = p->j.buf.data + p->take_off + JOURNAL_REC_HDR;
    *n = (uint32_t)(p->take_len - JOURNAL_REC_HDR);
    *at = p->origin.offset - p->take_len;
    return true;
}

int persist_append_payload(struct persist *p, const char *payload, uint32_t n)
{
    size_t at = p->j.buf.len;

    p->dirty++;
    if (!p->journal_on && !p->stream) {
        p->origin.offset += JOURNAL_REC_HDR + (uint64_t)n;
        return 0;
    }
    if (journal_rec_append_payload(&p->j.buf, p->j.salt,
                                   journal_seq_next(&p->j), payload, n) != 0)
        return -1;
    committed(p, at);
    return 0;
}

void persist_save_state(const struct persist *p, struct persist_save_state *s)
{
    s->running = p->child != 0;
    s->running_offset = p->child != 0 ? p->child_origin.offset : 0;
    s->ended = p->saves_ended;
}

void persist_want_snapshot(struct persist *p)
{
    p->want_saved = true;
}

int persist_saved_snapshot(struct persist *p, struct snap_origin *origin,
                           uint64_t *save_no)
{
    int fd = p->saved_fd;

    p->saved_fd = -1;
    if (fd >= 0) {
        *origin = p->saved_origin;
        *save_no = p->saved_no;
    }
    return fd;
}

/* Removes every journal segment in the directory. 0, or -1 with errno. */
static int remove_segments(struct persist *p)
{
    struct segs s = {NULL, 0, 0};
    char path[4096], err[512];
    int rc = 0;

    if (scan_dir(p, &s, false, err, sizeof(err)) != 0) {
        errno = EIO;
        return -1;
    }
    for (size_t i = 0; i < s.n && rc == 0; i++)
        if (journal_path(&p->j, path, sizeof(path), s.v[i]) != 0 ||
            (unlink(path) != 0 && errno != ENOENT))
            rc = -1;
    free(s.v);
    if (rc == 0 && fs_fsync_dir(p->dir) != 0)
        rc = -1;
    return rc;
}

/* The db emptied; a failure to allocate the empty stores is fatal (the
 * server would have no data to serve at all). */
static void db_reset(struct db *db)
{
    db_deinit(db);
    if (db_init(db) != 0) {
        log_error("out of memory emptying the data for a full sync");
        abort();
    }
}

int persist_adopt(struct persist *p, const char *path, char *err, size_t errlen)
{
    char dst[4096], msg[512];
    struct snap_meta meta;
    struct fs_map m;
    uint64_t t0 = now_ms();
    int rc;

    stop_child(p);
    if (fs_map_open(&m, path) != 0) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    db_reset(p->db);
    rc = snapshot_load(m.data, m.len, p->db, &meta, msg, sizeof(msg));
    fs_map_close(&m);
    if (rc == 0 && !meta.has_origin) {
        snprintf(msg, sizeof(msg), "no origin section");
        rc = -1;
    }
    if (rc != 0) {
        db_reset(p->db);
        snprintf(err, errlen, "the primary's snapshot %s: %s", path, msg);
        return -1;
    }
    /* The files become the new data's: no segment of the old may follow
     * the new snapshot, so every one goes before it is renamed in. */
    if (fs_path(dst, sizeof(dst), p->dir, PERSIST_SNAPSHOT) != 0 ||
        remove_segments(p) != 0 || rename(path, dst) != 0 ||
        fs_fsync_dir(p->dir) != 0)
        untrust(p,
                "the snapshot received from the primary could not replace "
                "%s/" PERSIST_SNAPSHOT " and the old journal: %s",
                p->dir, strerror(errno));
    else
        p->untrusted = p->broken = p->resync_saved = false;
    journal_restart(&p->j, meta.segment + 1);
    p->origin = meta.origin;
    p->dirty = 0;
    p->take_ready = false;
    p->history_pending = false;
    p->last_save_ms = meta.created_ms;
    p->last_save_bytes = meta.bytes;
    p->last_save_ok = true;
    note_identity(p);
    log_info("snapshot from the primary loaded: %llu bytes in %llu ms, "
             "replication id %s, offset %llu",
             (unsigned long long)meta.bytes,
             (unsigned long long)(now_ms() - t0), p->origin.replid,
             (unsigned long long)p->origin.offset);
    return 0;
}
