/*
 * test_journal_corpus.c - the corruption corpus (issue 15): a small
 * journal written by the real writer (single commands and MULTI/EXEC
 * records, over two segments) and a small snapshot, damaged every way a
 * disk, a crash or an operator can: every single-byte flip, every bit of
 * every record's length, every truncation point, record swaps, duplicates
 * and deletions, records cut across the segment boundary, a zero-filled
 * tail. Each case goes through the server's own loader (replay_open on a
 * real directory) and must either load exactly the acknowledged data
 * (the records whole before a torn tail, which is what a crash at that
 * byte leaves) or be refused with the file and the offset: no silent
 * short load. Then `unreadd --check --fix` runs on the same bytes and must
 * remove no sound record. Every snapshot flip and truncation is refused.
 *
 * Whole records cut off the end of the last segment at a record boundary
 * cannot be told from a crash before they were written (docs/
 * PERSISTENCE.md 3.1): those cases are counted apart, and must load
 * exactly the records left.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "cnt.h"
#include "conv.h"
#include "exec.h"
#include "fsutil.h"
#include "journal.h"
#include "log.h"
#include "persist.h"
#include "replay.h"
#include "snapshot.h"
#include "t.h"

#define MAXREC 64

static char dir[64];
static struct server srv;
static struct session sess = {.id = 1, .proto = REPLY_RESP};

/* Outcome tallies, printed at the end. */
static struct {
    unsigned cases, loaded_all, loaded_torn, refused, cut_at_end;
    unsigned silent_short, bad_message, fix_removed, fix_changed;
    unsigned snap_cases, snap_loaded;
} tally;

static const char *file(const char *name)
{
    static char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return path;
}

static void clear_dir(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[384];

    while (d != NULL && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d != NULL)
        closedir(d);
}

static void write_file(const char *name, const char *p, size_t n)
{
    int fd = open(file(name), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && (n == 0 || write(fd, p, n) == (ssize_t)n));
    close(fd);
}

static void read_file(const char *name, struct ur_buf *b)
{
    struct fs_map m;

    b->len = 0;
    CHECK(fs_map_open(&m, file(name)) == 0);
    if (m.len > 0)
        CHECK(ur_buf_append(b, m.data, m.len) == 0);
    fs_map_close(&m);
}

/* ---- the server ---------------------------------------------------------- */

static int start(char *err, size_t errlen)
{
    memset(&srv, 0, sizeof(srv));
    config_init(&srv.cfg);
    snprintf(srv.cfg.dir, sizeof(srv.cfg.dir), "%s", dir);
    CHECK(db_init(&srv.db) == 0);
    return replay_open(&srv, err, errlen);
}

static void stop(void)
{
    replay_close(&srv);
    db_deinit(&srv.db);
}

static void run(const char *line)
{
    static struct ur_buf out;
    char copy[256];
    struct ur_arg argv[16];
    struct reply r;
    uint32_t argc = 0;

    snprintf(copy, sizeof(copy), "%s", line);
    for (char *p = strtok(copy, " "); p && argc < 16; p = strtok(NULL, " "))
        argv[argc++] = (struct ur_arg){UR_ARG_STR, (uint32_t)strlen(p), p, 0};
    out.len = 0;
    reply_begin(&r, &out, REPLY_RESP, 0);
    exec_text(&srv, &sess, argc, argv, &r);
    reply_end(&r);
    CHECK(out.len > 0 && out.data[0] != '-');
}

/* The state the corpus's commands touch, summed up. */
static uint64_t sig(void)
{
    uint64_t h = 1;

    for (uint64_t uid = 1; uid <= 4; uid++) {
        for (unsigned t = 0; t < 4; t++)
            h = h * 1000003 + cnt_get(srv.db.cnt, uid, t);
        for (uint64_t cid = 1; cid <= 3; cid++)
            h = h * 1000003 + conv_get(srv.db.conv, uid, cid);
    }
    return h;
}

/*
 * Writes are chosen so that any record missing, repeated or moved
 * changes the state: SETs and INCRs on the same counters, a MULTI that
 * moves several at once.
 */
static void writes(unsigned part)
{
    char line[96];

    for (unsigned i = 0; i < 6; i++) {
        unsigned uid = 1 + (i + part) % 4;
        if (i % 3 == 0)
            snprintf(line, sizeof(line), "CNT.SET %u %u %u", uid, i % 4,
                     10 + i + 7 * part);
        else if (i % 3 == 1)
            snprintf(line, sizeof(line), "CNT.INCR %u %u %u", uid, i % 4,
                     i + 1);
        else
            snprintf(line, sizeof(line), "CONV.SEQ %u %u %u", uid, 1 + i % 3,
                     5 + i + part);
        run(line);
    }
    run("MULTI");
    run("CNT.INCR 1 0 3");
    run("CNT.SET 2 1 44");
    run("CONV.INCR 3 2 2");
    run("EXEC");
    run(part ? "CNT.CLEAR 1 0" : "CNT.DECR 2 1 4");
}

/* ---- the original journal ------------------------------------------------ */

/* A segment's bytes and its record boundaries (rec[0] = header end,
 * rec[n] = file end). */
struct seg {
    struct ur_buf b;
    size_t rec[MAXREC + 1];
    unsigned n;
};

static void bounds(struct seg *s)
{
    struct journal_scan sc;
    struct journal_rec r;
    size_t off;

    journal_scan(s->b.data, s->b.len, NULL, true, &sc);
    CHECK(sc.state == JOURNAL_CLEAN);
    s->n = 0;
    off = s->rec[0] = sc.hdr.len;
    while (s->n < MAXREC && journal_rec_next(&sc, s->b.data, &off, &r))
        s->rec[++s->n] = off;
}

static struct seg seg1, seg2;             /* the two segments */
static uint64_t want_sig[2 * MAXREC + 1]; /* state after the first k records */
static unsigned total;                    /* records in both */

/* Loads the case files now in dir: 0 with the state and the records
 * replayed, or -1 with the error. */
static int load(uint64_t *s, uint64_t *records, char *err, size_t errlen)
{
    struct persist_info pi;
    int rc = start(err, errlen);

    if (rc == 0) {
        *s = sig();
        persist_info(srv.persist, &pi);
        *records = pi.loaded_records;
    }
    stop();
    return rc;
}

static void build(void)
{
    char err[4096];
    uint64_t s = 0, n = 0;

    clear_dir();
    CHECK(start(err, sizeof(err)) == 0);
    writes(0);
    persist_flush(srv.persist);
    stop();
    CHECK(start(err, sizeof(err)) == 0); /* the next writes: segment 2 */
    writes(1);
    persist_flush(srv.persist);
    stop();
    ur_buf_init(&seg1.b);
    ur_buf_init(&seg2.b);
    read_file("journal.1", &seg1.b);
    read_file("journal.2", &seg2.b);
    bounds(&seg1);
    bounds(&seg2);
    total = seg1.n + seg2.n;
    CHECK(seg1.n >= 6 && seg2.n >= 6);
    /* the reference: the state after each prefix of the records, loaded */
    for (unsigned k = 0; k <= total; k++) {
        clear_dir();
        if (k <= seg1.n) {
            write_file("journal.1", seg1.b.data, seg1.rec[k]);
        } else {
            write_file("journal.1", seg1.b.data, seg1.b.len);
            write_file("journal.2", seg2.b.data, seg2.rec[k - seg1.n]);
        }
        CHECK(load(&s, &n, err, sizeof(err)) == 0);
        CHECK_EQ_U64(n, k);
        want_sig[k] = s;
    }
    /* every record changes the state */
    for (unsigned k = 1; k <= total; k++)
        CHECK(want_sig[k] != want_sig[k - 1]);
}

/* ---- one case ------------------------------------------------------------ */

/* Sound records a scan of a file finds anywhere in it. */
static uint64_t sound_in(const char *name, const struct journal_link *prev,
                         bool last)
{
    struct journal_scan sc;
    struct fs_map m;
    uint64_t n;

    if (fs_map_open(&m, file(name)) != 0)
        return 0;
    journal_scan(m.data, m.len, prev, last, &sc);
    n = sc.records + sc.found_records;
    fs_map_close(&m);
    return n;
}

/* `unreadd --check FILE --fix`, its report silenced. */
static void check_fix(const char *name)
{
    char path[256];
    char *argv[] = {path, "--fix", NULL};
    int saved = dup(1), null = open("/dev/null", O_WRONLY);

    snprintf(path, sizeof(path), "%s", file(name));
    fflush(stdout);
    dup2(null, 1);
    check_main(2, argv);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    close(null);
}

enum expect {
    WHOLE,       /* a byte changed: all or refused */
    PREFIX,      /* a crash-like cut: the whole records before it, or refused */
    UNDETECTABLE /* whole records cut off the end of the last segment */
};

/*
 * Runs one case: files a (journal.1) and b (journal.2, NULL: none).
 * expect_k: the records the acknowledged data holds (WHOLE: all of them;
 * PREFIX and UNDETECTABLE: those left whole).
 */
static void one_case(const char *a, size_t alen, const char *b, size_t blen,
                     enum expect e, unsigned expect_k, const char *what,
                     size_t at)
{
    char err[4096];
    struct ur_buf before1, before2, after;
    uint64_t s = 0, n = 0, sound1, sound2;
    int rc;

    tally.cases++;
    clear_dir();
    write_file("journal.1", a, alen);
    if (b != NULL)
        write_file("journal.2", b, blen);
    rc = load(&s, &n, err, sizeof(err));
    if (rc == 0) {
        if (s == want_sig[expect_k] && n == expect_k) {
            if (e == UNDETECTABLE)
                tally.cut_at_end++;
            else if (expect_k == total)
                tally.loaded_all++;
            else
                tally.loaded_torn++;
        } else {
            tally.silent_short++;
            fprintf(stderr,
                    "SILENT SHORT LOAD: %s at %zu: %llu records, want %u\n",
                    what, at, (unsigned long long)n, expect_k);
        }
    } else {
        tally.refused++;
        /* refused naming a file of the directory and an offset */
        if (strstr(err, dir) == NULL || strstr(err, "offset ") == NULL) {
            tally.bad_message++;
            fprintf(stderr, "REFUSED WITHOUT A PLACE: %s at %zu: %s\n", what,
                    at, err);
        }
        if (e == UNDETECTABLE)
            fprintf(stderr, "note: %s at %zu refused: %s\n", what, at, err);
    }

    /* --fix on the same bytes: never a sound record removed */
    clear_dir();
    write_file("journal.1", a, alen);
    if (b != NULL)
        write_file("journal.2", b, blen);
    ur_buf_init(&before1);
    ur_buf_init(&before2);
    ur_buf_init(&after);
    read_file("journal.1", &before1);
    sound1 = sound_in("journal.1", NULL, b == NULL);
    sound2 = 0;
    if (b != NULL) {
        read_file("journal.2", &before2);
        sound2 = sound_in("journal.2", NULL, true);
    }
    check_fix("journal.1");
    if (b != NULL)
        check_fix("journal.2");
    if (sound_in("journal.1", NULL, b == NULL) != sound1 ||
        (b != NULL && sound_in("journal.2", NULL, true) != sound2)) {
        tally.fix_removed++;
        fprintf(stderr, "--fix REMOVED A SOUND RECORD: %s at %zu\n", what, at);
    }
    /* where the loader refused, --fix refuses too: nothing changed */
    for (int k = 1; rc != 0 && k <= (b != NULL ? 2 : 1); k++) {
        const struct ur_buf *before = k == 1 ? &before1 : &before2;
        struct stat st;

        if (stat(file(k == 1 ? "journal.1" : "journal.2"), &st) != 0) {
            tally.fix_changed++;
            continue;
        }
        read_file(k == 1 ? "journal.1" : "journal.2", &after);
        if (after.len != before->len ||
            (after.len > 0 && memcmp(after.data, before->data, after.len))) {
            tally.fix_changed++;
            fprintf(stderr, "--fix CHANGED A REFUSED FILE: %s at %zu\n", what,
                    at);
        }
    }
    ur_buf_deinit(&before1);
    ur_buf_deinit(&before2);
    ur_buf_deinit(&after);
}

/* A case on segment 2 (the last), segment 1 whole. */
static void case2(const struct ur_buf *b2, enum expect e, unsigned k,
                  const char *what, size_t at)
{
    one_case(seg1.b.data, seg1.b.len, b2->data, b2->len, e, k, what, at);
}

/* A case on segment 1 (not the last), segment 2 whole. */
static void case1(const struct ur_buf *b1, enum expect e, unsigned k,
                  const char *what, size_t at)
{
    one_case(b1->data, b1->len, seg2.b.data, seg2.b.len, e, k, what, at);
}

/* Segment s with records in the given order (indexes into s's records). */
static void reorder(const struct seg *s, const unsigned *order, unsigned n,
                    struct ur_buf *out)
{
    out->len = 0;
    ur_buf_append(out, s->b.data, s->rec[0]);
    for (unsigned i = 0; i < n; i++)
        ur_buf_append(out, s->b.data + s->rec[order[i]],
                      s->rec[order[i] + 1] - s->rec[order[i]]);
}

/* ---- the corpus ---------------------------------------------------------- */

static void flips(void)
{
    struct ur_buf m;

    ur_buf_init(&m);
    /* every byte of both segments, all bits flipped */
    for (int which = 1; which <= 2; which++) {
        const struct seg *s = which == 1 ? &seg1 : &seg2;
        for (size_t i = 0; i < s->b.len; i++) {
            m.len = 0;
            ur_buf_append(&m, s->b.data, s->b.len);
            m.data[i] ^= (char)0xFF;
            if (which == 1)
                case1(&m, WHOLE, total, "flip in journal.1", i);
            else
                case2(&m, WHOLE, total, "flip in journal.2", i);
        }
    }
    /* every bit of every record's length (issue 15 point 2), and of its
     * sequence number, in the last segment */
    for (unsigned r = 0; r < seg2.n; r++) {
        for (unsigned bit = 0; bit < 96; bit++) {
            size_t at = seg2.rec[r] + bit / 8;
            m.len = 0;
            ur_buf_append(&m, seg2.b.data, seg2.b.len);
            m.data[at] ^= (char)(1 << (bit % 8));
            case2(&m, WHOLE, total, "seq/length bit in journal.2", at);
        }
    }
    ur_buf_deinit(&m);
}

static void truncations(void)
{
    struct ur_buf m;

    ur_buf_init(&m);
    /* the last segment, every length: the whole records before the cut */
    for (size_t cut = 0; cut < seg2.b.len; cut++) {
        unsigned whole = 0;
        while (whole < seg2.n && seg2.rec[whole + 1] <= cut)
            whole++;
        m.len = 0;
        ur_buf_append(&m, seg2.b.data, cut);
        case2(&m,
              cut >= seg2.rec[0] && cut == seg2.rec[whole] ? UNDETECTABLE
                                                           : PREFIX,
              seg1.n + whole, "truncated journal.2", cut);
    }
    /* the first segment, every length, a later one after it: refused */
    for (size_t cut = 0; cut < seg1.b.len; cut++) {
        m.len = 0;
        ur_buf_append(&m, seg1.b.data, cut);
        case1(&m, WHOLE, total, "truncated journal.1", cut);
    }
    /* a tail of zeros the file system added: torn, all loads */
    m.len = 0;
    ur_buf_append(&m, seg2.b.data, seg2.b.len);
    for (int i = 0; i < 100; i++)
        ur_buf_append(&m, "", 1);
    case2(&m, PREFIX, total, "zero tail on journal.2", seg2.b.len);
    ur_buf_deinit(&m);
}

static void moves(void)
{
    unsigned order[MAXREC];
    struct ur_buf m;

    ur_buf_init(&m);
    for (int which = 1; which <= 2; which++) {
        const struct seg *s = which == 1 ? &seg1 : &seg2;
        unsigned n = s->n;
        /* swaps of every pair */
        for (unsigned i = 0; i < n; i++) {
            for (unsigned j = i + 1; j < n; j++) {
                for (unsigned k = 0; k < n; k++)
                    order[k] = k;
                order[i] = j;
                order[j] = i;
                reorder(s, order, n, &m);
                if (which == 1)
                    case1(&m, WHOLE, total, "swap in journal.1", i * 100 + j);
                else
                    case2(&m, WHOLE, total, "swap in journal.2", i * 100 + j);
            }
        }
        /* each record repeated right after itself, and at the end */
        for (unsigned i = 0; i < n; i++) {
            for (int where = 0; where < 2; where++) {
                unsigned k = 0;
                for (unsigned x = 0; x < n; x++) {
                    order[k++] = x;
                    if (where == 0 && x == i)
                        order[k++] = i;
                }
                if (where == 1)
                    order[k++] = i;
                reorder(s, order, k, &m);
                if (which == 1)
                    case1(&m, WHOLE, total, "duplicate in journal.1", i);
                else
                    case2(&m, WHOLE, total, "duplicate in journal.2", i);
            }
        }
        /* each record deleted */
        for (unsigned i = 0; i < n; i++) {
            unsigned k = 0;
            for (unsigned x = 0; x < n; x++)
                if (x != i)
                    order[k++] = x;
            reorder(s, order, k, &m);
            if (which == 1)
                case1(&m, WHOLE, total, "delete in journal.1", i);
            else if (i + 1 < n)
                case2(&m, WHOLE, total, "delete in journal.2", i);
            else
                case2(&m, UNDETECTABLE, total - 1,
                      "last record deleted from journal.2", i);
        }
    }
    /* across the boundary: journal.1's last record moved to the start of
     * journal.2 (both files otherwise whole) */
    struct ur_buf m2;
    ur_buf_init(&m2);
    m.len = 0;
    ur_buf_append(&m, seg1.b.data, seg1.rec[seg1.n - 1]);
    m2.len = 0;
    ur_buf_append(&m2, seg2.b.data, seg2.rec[0]);
    ur_buf_append(&m2, seg1.b.data + seg1.rec[seg1.n - 1],
                  seg1.b.len - seg1.rec[seg1.n - 1]);
    ur_buf_append(&m2, seg2.b.data + seg2.rec[0], seg2.b.len - seg2.rec[0]);
    one_case(m.data, m.len, m2.data, m2.len, WHOLE, total,
             "record moved across segments", 0);
    /* journal.2's first record repeated at the end of journal.1 */
    m.len = 0;
    ur_buf_append(&m, seg1.b.data, seg1.b.len);
    ur_buf_append(&m, seg2.b.data + seg2.rec[0], seg2.rec[1] - seg2.rec[0]);
    one_case(m.data, m.len, seg2.b.data, seg2.b.len, WHOLE, total,
             "record of journal.2 repeated in journal.1", 0);
    ur_buf_deinit(&m2);
    ur_buf_deinit(&m);
}

/* Every byte of a small snapshot flipped, and every truncation: refused. */
static void snapshots(void)
{
    char err[4096];
    struct ur_buf snap, m;

    clear_dir();
    CHECK(start(err, sizeof(err)) == 0);
    writes(0);
    writes(1);
    CHECK(persist_save(srv.persist, err, sizeof(err)) == 0);
    stop();
    ur_buf_init(&snap);
    ur_buf_init(&m);
    read_file(PERSIST_SNAPSHOT, &snap);
    CHECK(snap.len > 0);
    for (size_t i = 0; i < 2 * snap.len; i++) {
        size_t at = i / 2;
        m.len = 0;
        ur_buf_append(&m, snap.data, snap.len);
        if (i % 2 == 0)
            m.data[at] ^= (char)0xFF; /* a flip */
        else
            m.len = at; /* a truncation */
        clear_dir();
        write_file(PERSIST_SNAPSHOT, m.data, m.len);
        tally.snap_cases++;
        if (start(err, sizeof(err)) == 0)
            tally.snap_loaded++;
        else if (strstr(err, "offset") == NULL)
            tally.bad_message++;
        stop();
    }
    ur_buf_deinit(&snap);
    ur_buf_deinit(&m);
}

static void test_corpus(void)
{
    flips();
    truncations();
    moves();
    snapshots();
    fprintf(stderr,
            "corpus: %u journal cases over %u records (%zu + %zu bytes): %u "
            "loaded all, %u loaded the records before a torn tail, %u "
            "refused with file and offset, %u whole records cut off the end "
            "of the last segment (undetectable, loaded what was left); %u "
            "silent short loads, %u refusals without a place; --fix removed "
            "a sound record %u times, changed a refused file %u times. "
            "Snapshot: %u cases, %u loaded\n",
            tally.cases, total, seg1.b.len, seg2.b.len, tally.loaded_all,
            tally.loaded_torn, tally.refused, tally.cut_at_end,
            tally.silent_short, tally.bad_message, tally.fix_removed,
            tally.fix_changed, tally.snap_cases, tally.snap_loaded);
    CHECK(tally.cases >= 500);
    CHECK(tally.refused > 0 && tally.loaded_torn > 0);
    CHECK_EQ_U64(tally.silent_short, 0);
    CHECK_EQ_U64(tally.bad_message, 0);
    CHECK_EQ_U64(tally.fix_removed, 0);
    CHECK_EQ_U64(tally.fix_changed, 0);
    CHECK(tally.snap_cases >= 500);
    CHECK_EQ_U64(tally.snap_loaded, 0);
}

int main(void)
{
    /* On a memory file system when there is one: the loader fsyncs every
     * torn tail it cuts, thousands of times here. */
    struct stat st;
    snprintf(dir, sizeof(dir), "%s/test_journal_corpus.XXXXXX",
             stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) &&
                     access("/dev/shm", W_OK) == 0
                 ? "/dev/shm"
                 : "/tmp");
    CHECK(mkdtemp(dir) != NULL);
    log_set_level(LOG_ERROR + 1);
    build();
    T_RUN(test_corpus);
    clear_dir();
    rmdir(dir);
    ur_buf_deinit(&seg1.b);
    ur_buf_deinit(&seg2.b);
    T_END();
}
