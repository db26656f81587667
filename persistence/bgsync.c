/*
 * bgsync.c - see bgsync.h.
 */
#include "bgsync.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "fsutil.h"

/* Runs one request; 0 or an errno. A failed writeback is not lost: the
 * kernel keeps the error for the next fdatasync. */
static int run_request(int fd, enum bgsync_op op, uint64_t *dur_us)
{
    if (op == BGSYNC_DATASYNC)
        return fs_datasync(fd, dur_us) == 0 ? 0 : errno;
    *dur_us = 0;
    return sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE) == 0 ? 0 : errno;
}

/* The thread: waits for a request, runs it and closes its descriptor
 * outside the lock, posts the result; at stop, ends once nothing is
 * queued, so a submitted request is never dropped. */
static void *bgsync_main(void *arg)
{
    struct bgsync *s = arg;
    enum bgsync_op op;
    uint64_t dur;
    int fd, err;

    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (s->state != BGSYNC_QUEUED && !s->stopping)
            pthread_cond_wait(&s->wake, &s->lock);
        if (s->state != BGSYNC_QUEUED)
            break;
        fd = s->fd;
        op = s->res.op;
        pthread_mutex_unlock(&s->lock);
        err = run_request(fd, op, &dur);
        close(fd);
        pthread_mutex_lock(&s->lock);
        s->res.err = err;
        s->res.dur_us = dur;
        s->state = BGSYNC_DONE;
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

int bgsync_start(struct bgsync *s)
{
    sigset_t all, old;
    int rc;

    s->stopping = false;
    s->state = BGSYNC_IDLE;
    s->fd = -1;
    if ((rc = pthread_mutex_init(&s->lock, NULL)) != 0)
        goto error;
    if ((rc = pthread_cond_init(&s->wake, NULL)) != 0) {
        pthread_mutex_destroy(&s->lock);
        goto error;
    }
    /* The thread inherits the mask: every signal stays with the loop. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&s->thread, NULL, bgsync_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&s->wake);
        pthread_mutex_destroy(&s->lock);
        goto error;
    }
    /* `top -H` and /proc/<pid>/task/<tid>/comm show it by name. */
    pthread_setname_np(s->thread, "bgsync");
    s->running = true;
    return 0;

error:
    errno = rc;
    return -1;
}

int bgsync_submit(struct bgsync *s, int fd, enum bgsync_op op, uint64_t tag)
{
    int rc = 0;

    pthread_mutex_lock(&s->lock);
    if (s->state == BGSYNC_IDLE) {
        s->fd = fd;
        s->res.op = op;
        s->res.tag = tag;
        s->state = BGSYNC_QUEUED;
        pthread_cond_signal(&s->wake);
    } else {
        rc = -1;
    }
    pthread_mutex_unlock(&s->lock);
    if (rc != 0)
        errno = EBUSY;
    return rc;
}

bool bgsync_collect(struct bgsync *s, struct bgsync_result *out)
{
    bool done;

    pthread_mutex_lock(&s->lock);
    done = s->state == BGSYNC_DONE;
    if (done) {
        *out = s->res;
        s->state = BGSYNC_IDLE;
    }
    pthread_mutex_unlock(&s->lock);
    return done;
}

void bgsync_stop(struct bgsync *s)
{
    if (!s->running)
        return;
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    s->running = false;
}
