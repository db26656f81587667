/*
 * faultfs.c - an LD_PRELOAD shim that makes file writes and syncs fail on
 * demand, so the fault suites (tests/faults/) can give a running unreadd
 * a full disk or a failing fsync without root, a tmpfs or a real broken
 * disk. Built by the Makefile as $(BUILD)/faultfs.so; the Python side is
 * tests/faults/_rig.py.
 *
 * Environment:
 *   FAULTFS_CTL    a control file, mapped shared: the test rewrites it while
 *                  the server runs and the next call sees the new rules.
 *                  Without it the shim passes every call through.
 *   FAULTFS_LOG    optional: one line per injected fault is appended here.
 *   FAULTFS_TRACK  optional: a path substring (e.g. "journal."): writes to
 *                  matching files are tracked, for `lose` below and for
 *                  FAULTFS_SYNCED.
 *   FAULTFS_SNDBUF optional: SO_SNDBUF set on every accepted connection
 *                  (bytes), so that a slow reader congests the server's
 *                  side at once, as across a real network, instead of
 *                  behind the megabytes loopback autotuning allows.
 *   FAULTFS_SYNCED optional: after each successful fsync/fdatasync of a
 *                  tracked file, "<path> <size>\n" is appended here, the
 *                  size the file had when the sync began: what a power
 *                  loss would leave of it (tests/faults/_rig.py
 *                  power_loss() cuts the files back to it).
 *
 * The control file (text, at most CTL_MAX bytes, NUL-padded) is read only
 * when complete, i.e. when its last line repeats the generation:
 *
 *   <generation>
 *   <op> <path-substring> <errno-name> [count=N] [skip=N] [partial] [lose]
 *   ...
 *   end <generation>
 *
 * A call matches a rule when its op matches and the file's path (for a
 * descriptor: /proc/self/fd/N, which ends in " (deleted)" for an unlinked
 * file) contains the substring; regular files only, never sockets or
 * pipes. The first matching rule decides: skip=N lets its first N matches
 * through, count=N fails N of them and then lets the rest through (no
 * count: fails every one), each counted per process and reset when the
 * generation line changes. Ops:
 *   write      write, pwrite, pwrite64, writev, pwritev
 *   fsync      fsync          fdatasync  fdatasync
 *   sync       fsync and fdatasync
 *   sfr        sync_file_range
 *   create     open/open64/openat with O_CREAT
 * partial (write): the call writes half its bytes for real and returns that
 *   count, as a filling disk does; the caller's next call fails.
 * lose (fsync, fdatasync, sync): the failed sync also throws away what the
 *   file received since its last successful sync (the range is zeroed),
 *   as the kernel may drop dirty pages after a writeback error
 *   ("fsyncgate"). Writes to matching files are tracked for this from the
 *   first call, whatever the rules.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define CTL_MAX 4096
#define RULES_MAX 16
#define FILES_MAX 256
#define ZERO_CHUNK 65536

enum op {
    OP_WRITE = 1,
    OP_FSYNC = 2,
    OP_FDATASYNC = 4,
    OP_SFR = 8,
    OP_CREATE = 16,
};

struct rule {
    unsigned ops;
    char pat[256];
    int err;
    long count; /* -1: every time */
    long skip;
    bool partial, lose;
    long seen; /* matches so far (this process, this generation) */
};

/* A regular file written since its last successful sync. */
struct file {
    dev_t dev;
    ino_t ino;
    bool used;
    off_t dirty_from;
    bool dirty;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static const char *ctl_map;
static const char *track; /* FAULTFS_TRACK, or NULL */
static int log_fd = -1;
static int synced_fd = -1;
static bool inited;
static bool active; /* a control file or tracking: else pass through */
static char gen[64];
static struct rule rules[RULES_MAX];
static unsigned nrules;
static struct file files[FILES_MAX];

static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_sfr)(int, off_t, off_t, unsigned);
static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_accept)(int, struct sockaddr *, socklen_t *);
static int (*real_accept4)(int, struct sockaddr *, socklen_t *, int);
static int sndbuf;

static const struct {
    const char *name;
    int err;
} errnames[] = {
    {"ENOSPC", ENOSPC}, {"EIO", EIO},       {"EDQUOT", EDQUOT},
    {"EFBIG", EFBIG},   {"EROFS", EROFS},   {"ENOMEM", ENOMEM},
    {"EACCES", EACCES}, {"ENOENT", ENOENT}, {"EBADF", EBADF},
};

static void init_locked(void)
{
    const char *ctl = getenv("FAULTFS_CTL");
    const char *logp = getenv("FAULTFS_LOG");

    if (inited)
        return;
    inited = true;
    real_write = dlsym(RTLD_NEXT, "write");
    real_pwrite = dlsym(RTLD_NEXT, "pwrite");
    real_writev = dlsym(RTLD_NEXT, "writev");
    real_pwritev = dlsym(RTLD_NEXT, "pwritev");
    real_fsync = dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    real_sfr = dlsym(RTLD_NEXT, "sync_file_range");
    real_open = dlsym(RTLD_NEXT, "open");
    real_open64 = dlsym(RTLD_NEXT, "open64");
    real_openat = dlsym(RTLD_NEXT, "openat");
    real_accept = dlsym(RTLD_NEXT, "accept");
    real_accept4 = dlsym(RTLD_NEXT, "accept4");
    if (getenv("FAULTFS_SNDBUF") != NULL)
        sndbuf = atoi(getenv("FAULTFS_SNDBUF"));
    if (ctl != NULL && ctl[0] != '\0') {
        int fd = real_open(ctl, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            void *m = mmap(NULL, CTL_MAX, PROT_READ, MAP_SHARED, fd, 0);
            if (m != MAP_FAILED)
                ctl_map = m;
            close(fd);
        }
    }
    if (logp != NULL && logp[0] != '\0')
        log_fd =
            real_open(logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    logp = getenv("FAULTFS_SYNCED");
    if (logp != NULL && logp[0] != '\0')
        synced_fd =
            real_open(logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    track = getenv("FAULTFS_TRACK");
    if (track != NULL && track[0] == '\0')
        track = NULL;
    active = ctl_map != NULL || track != NULL;
}

static void init(void)
{
    pthread_mutex_lock(&mu);
    init_locked();
    pthread_mutex_unlock(&mu);
}

static unsigned op_parse(const char *s)
{
    if (strcmp(s, "write") == 0)
        return OP_WRITE;
    if (strcmp(s, "fsync") == 0)
        return OP_FSYNC;
    if (strcmp(s, "fdatasync") == 0)
        return OP_FDATASYNC;
    if (strcmp(s, "sync") == 0)
        return OP_FSYNC | OP_FDATASYNC;
    if (strcmp(s, "sfr") == 0)
        return OP_SFR;
    if (strcmp(s, "create") == 0)
        return OP_CREATE;
    return 0;
}

static int err_parse(const char *s)
{
    for (size_t i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++)
        if (strcmp(s, errnames[i].name) == 0)
            return errnames[i].err;
    return atoi(s);
}

/* Re-reads the control file when its generation changed and it is
 * complete (its last line "end <generation>" repeats the first: a file
 * caught half-rewritten is ignored until the next call). */
static void rules_refresh_locked(void)
{
    char buf[CTL_MAX + 1], want[80], *save = NULL, *line, *nl;
    struct rule nr[RULES_MAX];
    unsigned n = 0;

    if (ctl_map == NULL)
        return;
    memcpy(buf, ctl_map, CTL_MAX);
    buf[CTL_MAX] = '\0';
    nl = strchr(buf, '\n');
    if (nl == NULL || nl - buf > 60)
        return;
    *nl = '\0';
    if (strcmp(buf, gen) == 0)
        return;
    snprintf(want, sizeof(want), "\nend %.60s\n", buf);
    *nl = '\n';
    if (strstr(buf, want) == NULL)
        return; /* being rewritten: keep the last rules */
    line = strtok_r(buf, "\n", &save);
    snprintf(gen, sizeof(gen), "%s", line);
    while ((line = strtok_r(NULL, "\n", &save)) != NULL && n < RULES_MAX) {
        char *f[8], *s2 = NULL, *w;
        unsigned nf = 0;
        struct rule r;

        if (strncmp(line, "end ", 4) == 0)
            break;
        for (w = strtok_r(line, " \t", &s2); w != NULL && nf < 8;
             w = strtok_r(NULL, " \t", &s2))
            f[nf++] = w;
        if (nf < 3)
            continue;
        memset(&r, 0, sizeof(r));
        r.ops = op_parse(f[0]);
        snprintf(r.pat, sizeof(r.pat), "%s", f[1]);
        r.err = err_parse(f[2]);
        r.count = -1;
        for (unsigned i = 3; i < nf; i++) {
            if (strncmp(f[i], "count=", 6) == 0)
                r.count = atol(f[i] + 6);
            else if (strncmp(f[i], "skip=", 5) == 0)
                r.skip = atol(f[i] + 5);
            else if (strcmp(f[i], "partial") == 0)
                r.partial = true;
            else if (strcmp(f[i], "lose") == 0)
                r.lose = true;
        }
        if (r.ops != 0 && r.err != 0)
            nr[n++] = r;
    }
    memcpy(rules, nr, sizeof(nr[0]) * n);
    nrules = n;
}

static bool fd_path(int fd, char *out, size_t cap)
{
    char link[64];
    ssize_t n;

    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    n = readlink(link, out, cap - 1);
    if (n < 0)
        return false;
    out[n] = '\0';
    return true;
}

static void log_fault(const char *what, const char *path, int err)
{
    char line[600];
    int n;

    if (log_fd < 0)
        return;
    n = snprintf(line, sizeof(line), "%d %s %s %s\n", (int)getpid(), what, path,
                 strerror(err));
    if (n > 0)
        real_write(log_fd, line,
                   (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

/* The rule that fails this call, if any (its counters advanced). */
static struct rule *decide_locked(unsigned op, const char *path)
{
    for (unsigned i = 0; i < nrules; i++) {
        struct rule *r = &rules[i];

        if (!(r->ops & op) || strstr(path, r->pat) == NULL)
            continue;
        r->seen++;
        if (r->seen <= r->skip)
            return NULL;
        if (r->count >= 0 && r->seen > r->skip + r->count)
            return NULL;
        return r;
    }
    return NULL;
}

/* The tracking slot of fd's file when it is a regular file whose path
 * contains FAULTFS_TRACK (NULL otherwise); *path gets the path of any
 * regular file ("" for sockets, pipes, ...), *regular whether it is one. */
static struct file *file_of_locked(int fd, char *path, size_t cap)
{
    struct stat st;
    struct file *slot = NULL;

    path[0] = '\0';
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return NULL;
    if (!fd_path(fd, path, cap))
        return NULL;
    for (unsigned i = 0; i < FILES_MAX; i++) {
        struct file *f = &files[i];
        if (f->used && f->dev == st.st_dev && f->ino == st.st_ino)
            return f;
        if (slot == NULL && (!f->used || !f->dirty))
            slot = f; /* free, or clean: reusable */
    }
    if (track == NULL || strstr(path, track) == NULL || slot == NULL)
        return NULL;
    memset(slot, 0, sizeof(*slot));
    slot->used = true;
    slot->dev = st.st_dev;
    slot->ino = st.st_ino;
    return slot;
}

static void note_write_locked(struct file *f, off_t off)
{
    if (f == NULL || off < 0)
        return;
    if (!f->dirty || off < f->dirty_from)
        f->dirty_from = off;
    f->dirty = true;
}

/* A failed sync with `lose`: zero what was written since the last good
 * sync, as if the kernel had dropped those pages. */
static void lose_locked(int fd, struct file *f)
{
    static const char zeros[ZERO_CHUNK];
    struct stat st;
    off_t at;

    if (f == NULL || !f->dirty || fstat(fd, &st) != 0)
        return;
    for (at = f->dirty_from; at < st.st_size;) {
        size_t n = (size_t)(st.st_size - at) < sizeof(zeros)
                       ? (size_t)(st.st_size - at)
                       : sizeof(zeros);
        ssize_t w = real_pwrite(fd, zeros, n, at);
        if (w <= 0)
            break;
        at += w;
    }
    real_fdatasync(fd);
    f->dirty = false;
}

/* Common front of every descriptor call: NULL to pass through, or the
 * rule that fails it. off is the write's offset, or -1 for the current
 * position (write, writev), or -2 for a sync. */
static struct rule *check_fd(int fd, unsigned op, off_t off, struct file **fp,
                             char *path, size_t cap)
{
    struct rule *r = NULL;

    *fp = NULL;
    pthread_mutex_lock(&mu);
    rules_refresh_locked();
    *fp = file_of_locked(fd, path, cap);
    if (path[0] != '\0') {
        r = decide_locked(op, path);
        if (r == NULL && op == OP_WRITE && *fp != NULL)
            note_write_locked(*fp, off == -1 ? lseek(fd, 0, SEEK_CUR) : off);
    }
    pthread_mutex_unlock(&mu);
    return r;
}

/* A write the rule fails: nothing written, or with `partial` half of it.
 * off: the offset of a pwrite, or -1 for the current position. */
static ssize_t fail_write(int fd, const void *buf, size_t n, off_t off,
                          struct rule *r, const char *path, struct file *f)
{
    if (r->partial && n >= 2) {
        off_t at = off >= 0 ? off : lseek(fd, 0, SEEK_CUR);
        ssize_t w = off >= 0 ? real_pwrite(fd, buf, n / 2, off)
                             : real_write(fd, buf, n / 2);
        pthread_mutex_lock(&mu);
        note_write_locked(f, at);
        pthread_mutex_unlock(&mu);
        log_fault("write-partial", path, r->err);
        return w;
    }
    log_fault("write", path, r->err);
    errno = r->err;
    return -1;
}

ssize_t write(int fd, const void *buf, size_t n)
{
    char path[4096];
    struct file *f;
    struct rule *r;

    if (!inited)
        init();
    if (!active)
        return real_write(fd, buf, n);
    r = check_fd(fd, OP_WRITE, -1, &f, path, sizeof(path));
    if (r != NULL)
        return fail_write(fd, buf, n, -1, r, path, f);
    return real_write(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    char path[4096];
    struct file *f;
    struct rule *r;

    if (!inited)
        init();
    if (!active)
        return real_pwrite(fd, buf, n, off);
    r = check_fd(fd, OP_WRITE, off, &f, path, sizeof(path));
    if (r != NULL)
        return fail_write(fd, buf, n, off, r, path, f);
    return real_pwrite(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    return pwrite(fd, buf, n, off);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    char path[4096];
    struct file *f;
    struct rule *r;

    if (!inited)
        init();
    if (!active)
        return real_writev(fd, iov, cnt);
    r = check_fd(fd, OP_WRITE, -1, &f, path, sizeof(path));
    if (r != NULL) {
        log_fault("writev", path, r->err);
        errno = r->err;
        return -1;
    }
    return real_writev(fd, iov, cnt);
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    char path[4096];
    struct file *f;
    struct rule *r;

    if (!inited)
        init();
    if (!active)
        return real_pwritev(fd, iov, cnt, off);
    r = check_fd(fd, OP_WRITE, off, &f, path, sizeof(path));
    if (r != NULL) {
        log_fault("pwritev", path, r->err);
        errno = r->err;
        return -1;
    }
    return real_pwritev(fd, iov, cnt, off);
}

static int sync_common(int fd, unsigned op, int (*real)(int), const char *name)
{
    char path[4096];
    struct file *f;
    struct rule *r;
    struct stat st;
    int rc;

    if (!active)
        return real(fd);
    r = check_fd(fd, op, -2, &f, path, sizeof(path));
    if (r != NULL) {
        pthread_mutex_lock(&mu);
        if (r->lose)
            lose_locked(fd, f);
        pthread_mutex_unlock(&mu);
        log_fault(name, path, r->err);
        errno = r->err;
        return -1;
    }
    if (f == NULL || fstat(fd, &st) != 0)
        return real(fd);
    rc = real(fd);
    if (rc == 0) {
        pthread_mutex_lock(&mu);
        f->dirty = false;
        pthread_mutex_unlock(&mu);
        if (synced_fd >= 0 && strstr(path, " (deleted)") == NULL) {
            char line[4200];
            int n = snprintf(line, sizeof(line), "%s %lld\n", path,
                             (long long)st.st_size);
            if (n > 0 && (size_t)n < sizeof(line))
                real_write(synced_fd, line, (size_t)n);
        }
    }
    return rc;
}

int fsync(int fd)
{
    if (!inited)
        init();
    return sync_common(fd, OP_FSYNC, real_fsync, "fsync");
}

int fdatasync(int fd)
{
    if (!inited)
        init();
    return sync_common(fd, OP_FDATASYNC, real_fdatasync, "fdatasync");
}

int sync_file_range(int fd, off_t off, off_t n, unsigned flags)
{
    char path[4096];
    struct file *f;
    struct rule *r;

    if (!inited)
        init();
    if (ctl_map == NULL)
        return real_sfr(fd, off, n, flags);
    r = check_fd(fd, OP_SFR, -2, &f, path, sizeof(path));
    if (r != NULL) {
        log_fault("sync_file_range", path, r->err);
        errno = r->err;
        return -1;
    }
    return real_sfr(fd, off, n, flags);
}

/* open with O_CREAT: the rule's pattern is matched against the path as
 * given. */
static bool create_fails(const char *path, int flags)
{
    struct rule *r;

    if (!inited)
        init();
    if (ctl_map == NULL || !(flags & O_CREAT) || path == NULL)
        return false;
    pthread_mutex_lock(&mu);
    rules_refresh_locked();
    r = decide_locked(OP_CREATE, path);
    pthread_mutex_unlock(&mu);
    if (r == NULL)
        return false;
    log_fault("create", path, r->err);
    errno = r->err;
    return true;
}

int open(const char *path, int flags, ...)
{
    mode_t mode = 0;

    if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    if (create_fails(path, flags))
        return -1;
    return real_open(path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
    mode_t mode = 0;

    if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    if (create_fails(path, flags))
        return -1;
    return real_open64(path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...)
{
    mode_t mode = 0;

    if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    if (create_fails(path, flags))
        return -1;
    return real_openat(dirfd, path, flags, mode);
}

static int accepted(int fd)
{
    if (fd >= 0 && sndbuf > 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
    return fd;
}

int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
    if (!inited)
        init();
    return accepted(real_accept(fd, addr, len));
}

int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
    if (!inited)
        init();
    return accepted(real_accept4(fd, addr, len, flags));
}
