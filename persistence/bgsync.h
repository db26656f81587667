/*
 * bgsync.h - one background thread that fdatasyncs a descriptor on
 * request, so that the event loop never waits for an fdatasync: the
 * journal's `journal-fsync everysec` (Redis's bio.c does the same for its
 * AOF). It also starts writeback on request without waiting for it, so
 * that the next fdatasync finds little left to write.
 *
 * One request at a time, a mailbox of one slot: the loop submits a
 * descriptor of its own (a dup: the thread closes it when done, so the
 * loop may close and replace its own meanwhile), collects the result
 * later from a timer, and may submit the next only after collecting it.
 * The thread touches nothing but the descriptor and the slot, and holds
 * the lock only to move the slot from one state to the next, never during
 * the fdatasync: the loop never waits for a request, only bgsync_stop
 * does. The thread blocks every signal, so handlers run in the loop's
 * thread as in a single-threaded server, and it never logs nor
 * allocates, so a child forked by the loop (BGSAVE) cannot inherit a
 * stdio or malloc lock it held.
 *
 * A zeroed struct bgsync is "not started": bgsync_stop on it is harmless.
 */
#ifndef UR_BGSYNC_H
#define UR_BGSYNC_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

enum bgsync_op {
    BGSYNC_WRITEBACK, /* start writing the dirty pages, don't wait:
                         sync_file_range(SYNC_FILE_RANGE_WRITE) */
    BGSYNC_DATASYNC   /* fdatasync */
};

struct bgsync_result {
    enum bgsync_op op; /* as submitted */
    uint64_t tag;      /* as submitted */
    int err;           /* 0, or the errno of the failed call */
    uint64_t dur_us;   /* how long it took */
};

enum bgsync_state {
    BGSYNC_IDLE,   /* the slot is free */
    BGSYNC_QUEUED, /* a request submitted, not finished (maybe running) */
    BGSYNC_DONE    /* finished: res waits to be collected */
};

struct bgsync {
    pthread_t thread;
    bool running;         /* started and not yet stopped (loop only) */
    pthread_mutex_t lock; /* guards the fields below */
    pthread_cond_t wake;  /* signalled on a request and on stop */
    bool stopping;
    enum bgsync_state state;
    int fd; /* the request's descriptor, while QUEUED */
    struct bgsync_result res;
};

/* Starts the thread. 0, or -1 with errno (nothing to stop then). */
int bgsync_start(struct bgsync *s);

/*
 * Hands op on fd (closed by the thread when done) and tag to the thread.
 * 0, or -1 with errno EBUSY, fd still the caller's, when the slot is not
 * free: a request is in flight or its result not yet collected.
 */
int bgsync_submit(struct bgsync *s, int fd, enum bgsync_op op, uint64_t tag);

/* True, with *out, when a request has finished since the last collect;
 * the slot is then free. Never waits for the disk. */
bool bgsync_collect(struct bgsync *s, struct bgsync_result *out);

/*
 * Lets the request in flight finish (waiting for the disk: its descriptor
 * is synced and closed, its result dropped), joins the thread and frees
 * its resources. Harmless on a stopped or never started struct.
 */
void bgsync_stop(struct bgsync *s);

#endif
