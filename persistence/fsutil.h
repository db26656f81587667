/*
 * fsutil.h - the few file operations persistence needs, with the error
 * handling written once: whole writes, directory fsync, read-only maps of
 * whole files. Every function returns 0, or -1 with errno set.
 */
#ifndef UR_FSUTIL_H
#define UR_FSUTIL_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

/* Writes all n bytes at the file offset (pwrite), retrying short writes and
 * EINTR. On failure some prefix may have been written. */
int fs_pwrite_all(int fd, const void *p, size_t n, uint64_t off);

/* Writes all n bytes at the current offset (write), as above. */
int fs_write_all(int fd, const void *p, size_t n);

/* fsync of a directory, so that files created, renamed or removed in it
 * survive a crash. */
int fs_fsync_dir(const char *dir);

/* The end of a whole-file rewrite: f (written to tmp) flushed, fsynced
 * and closed, tmp renamed over path and path's directory fsynced. On a
 * failure err says which step, tmp is removed and -1 returned; f is
 * closed either way. */
int fs_commit_tmp(FILE *f, const char *tmp, const char *path, char *err,
                  size_t errlen);

/* fdatasync of fd, timed: *dur_us is how long the disk took (INFO shows
 * it), also when it failed. */
int fs_datasync(int fd, uint64_t *dur_us);

/* A whole regular file mapped read-only (data NULL for an empty file).
 * Opening a directory or anything but a regular file fails with EISDIR or
 * EINVAL, so it is never mistaken for an empty file. */
struct fs_map {
    const char *data;
    size_t len;
};
int fs_map_open(struct fs_map *m, const char *path);
void fs_map_close(struct fs_map *m);

/* fsync of the file at path (opened read-only). */
int fs_fsync_file(const char *path);

/* Cuts the file at path to len bytes and fsyncs it. */
int fs_truncate(const char *path, uint64_t len);

/* dir/name into out (cap bytes); -1 with ENAMETOOLONG when it does not fit. */
int fs_path(char *out, size_t cap, const char *dir, const char *name);

#endif
