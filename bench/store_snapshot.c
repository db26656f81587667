/*
 * store_snapshot.c - snapshot figures (docs/PERFORMANCE.md): N users with
 * two counters each (types 0 and 3, small values, as a badge service
 * holds them), written to a snapshot file and loaded back, no server
 * involved.
 *
 *   build/store_snapshot [users=10000000] [dir=/tmp]
 *
 * Prints the file size, the write time (snapshot_write, then fsync on its
 * own line), the load time (snapshot_load from a read-only map, i.e. what
 * start-up does) and users per second. The page cache is warm for the
 * load: the figure is CPU, not disk.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cnt.h"
#include "hash.h"
#include "fsutil.h"
#include "snapshot.h"
#include "store_util.h"
#include "u64map.h"

/* Seconds between two su_clock_ns() readings. */
static double secs(uint64_t from, uint64_t to)
{
    return (double)(to - from) / 1e9;
}

int main(int argc, char **argv)
{
    uint64_t users = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000;
    const char *dir = argc > 2 ? argv[2] : "/tmp";
    char path[4096], err[512];
    struct snap_meta meta;
    struct fs_map m;
    struct db db;
    uint64_t total, bytes, t0, t1, t2;
    uint32_t v;
    int fd;

    if (db_init(&db) != 0)
        return 1;
    /* uids spread like real ids: a multiplicative walk of the u64 space */
    for (uint64_t i = 1; i <= users; i++) {
        uint64_t uid = i * 0x9E3779B97F4A7C15ull;
        cnt_set(db.cnt, uid, 0, (uint32_t)(i % 97) + 1, &v, &total);
        cnt_set(db.cnt, uid, 3, (uint32_t)(i % 13) + 1, &v, &total);
    }
    printf("users: %llu, store: %zu bytes\n", (unsigned long long)users,
           cnt_bytes(db.cnt));

    snprintf(path, sizeof(path), "%s/store_snapshot.%d.urs", dir,
             (int)getpid());
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    t0 = su_clock_ns();
    if (snapshot_write(fd, &db, 0, 0, NULL, &bytes) != 0) {
        perror("snapshot_write");
        return 1;
    }
    t1 = su_clock_ns();
    fsync(fd);
    t2 = su_clock_ns();
    close(fd);
    printf("snapshot: %llu bytes (%.2f bytes/user)\n",
           (unsigned long long)bytes, (double)bytes / (double)users);
    printf("write: %.3f s (%.2f M users/s), fsync: %.3f s\n", secs(t0, t1),
           (double)users / secs(t0, t1) / 1e6, secs(t1, t2));
    db_deinit(&db);

    /* A restarted server hashes with a new random seed. Loading with the
     * writer's own seed would insert in the maps' hash order, u64map's
     * worst case (every insert lands at the end of one segment). */
    hash_setup(0x5EED5EED5EED5EEDull);
    if (db_init(&db) != 0 || fs_map_open(&m, path) != 0)
        return 1;
    t0 = su_clock_ns();
    if (snapshot_load(m.data, m.len, &db, &meta, err, sizeof(err)) != 0) {
        fprintf(stderr, "load: %s\n", err);
        return 1;
    }
    t1 = su_clock_ns();
    printf("load: %.3f s (%.2f M users/s), %zu users\n", secs(t0, t1),
           (double)users / secs(t0, t1) / 1e6, cnt_entries(db.cnt));
    fs_map_close(&m);
    unlink(path);
    db_deinit(&db);
    return 0;
}
