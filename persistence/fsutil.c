/*
 * fsutil.c - see fsutil.h.
 */
#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int fs_pwrite_all(int fd, const void *p, size_t n, uint64_t off)
{
    const char *c = p;

    while (n > 0) {
        ssize_t w = pwrite(fd, c, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        if (w == 0) {
            errno = EIO;
            return -1;
        }
        c += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

int fs_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;

    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        if (w == 0) {
            errno = EIO;
            return -1;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

int fs_fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc, saved;

    if (fd < 0)
        return -1;
    rc = fsync(fd);
    saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

int fs_commit_tmp(FILE *f, const char *tmp, const char *path, char *err,
                  size_t errlen)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');

    if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
        fclose(f);
        unlink(tmp);
        return -1;
    }
    fclose(f);
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path,
                 strerror(errno));
        unlink(tmp);
        return -1;
    }
    /* the rename lasts once its directory is on disk */
    if (slash == NULL)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == path)
        snprintf(dir, sizeof(dir), "/");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    if (fs_fsync_dir(dir) != 0) {
        snprintf(err, errlen, "cannot fsync the directory of %s: %s", path,
                 strerror(errno));
        return -1;
    }
    return 0;
}

int fs_datasync(int fd, uint64_t *dur_us)
{
    struct timespec t0, t1;
    int rc;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = fdatasync(fd);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *dur_us = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000 +
              (uint64_t)(t1.tv_nsec / 1000) - (uint64_t)(t0.tv_nsec / 1000);
    return rc;
}

int fs_map_open(struct fs_map *m, const char *path)
{
    struct stat st;
    void *p;
    int fd, saved;

    m->data = NULL;
    m->len = 0;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0)
        goto error;
    if (!S_ISREG(st.st_mode)) {
        errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        goto error;
    }
    if (st.st_size > 0) {
        p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED)
            goto error;
        madvise(p, (size_t)st.st_size, MADV_SEQUENTIAL);
        m->data = p;
        m->len = (size_t)st.st_size;
    }
    close(fd);
    return 0;

error:
    saved = errno;
    close(fd);
    errno = saved;
    return -1;
}

void fs_map_close(struct fs_map *m)
{
    if (m->data != NULL)
        munmap((void *)m->data, m->len);
    m->data = NULL;
    m->len = 0;
}

int fs_fsync_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int rc, saved;

    if (fd < 0)
        return -1;
    rc = fsync(fd);
    saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

int fs_truncate(const char *path, uint64_t len)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    int rc = -1, saved;

    if (fd < 0)
        return -1;
    if (ftruncate(fd, (off_t)len) == 0 && fsync(fd) == 0)
        rc = 0;
    saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

int fs_path(char *out, size_t cap, const char *dir, const char *name)
{
    int n = snprintf(out, cap, "%s/%s", dir, name);

    if (n < 0 || (size_t)n >= cap) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}
