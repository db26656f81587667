/*
 * test_bgsync.c - the background fsync thread: both requests run and
 * close their descriptor, one slot (a second submit is refused until the
 * result is collected), errors come back, stop finishes the request in
 * flight, and stopping a never started or stopped struct is harmless.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bgsync.h"
#include "t.h"

static char path[64];

/* A scratch file with a few dirty bytes; returns its descriptor. */
static int scratch_file(void)
{
    int fd;

    snprintf(path, sizeof(path), "/tmp/test_bgsync.XXXXXX");
    fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(write(fd, "unread", 6) == 6);
    return fd;
}

static bool closed(int fd)
{
    return fcntl(fd, F_GETFD) < 0 && errno == EBADF;
}

/* Polls for the result for up to 10 s, as the server's cron does. */
static bool wait_result(struct bgsync *s, struct bgsync_result *out)
{
    const struct timespec pause = {0, 1000000};

    for (int i = 0; i < 10000; i++) {
        if (bgsync_collect(s, out))
            return true;
        nanosleep(&pause, NULL);
    }
    return false;
}

static void test_requests(void)
{
    static const enum bgsync_op ops[] = {BGSYNC_DATASYNC, BGSYNC_WRITEBACK};
    struct bgsync s = {0};
    struct bgsync_result res;
    int fd = scratch_file();

    CHECK(bgsync_start(&s) == 0);
    CHECK(!bgsync_collect(&s, &res));
    for (unsigned i = 0; i < 2; i++) {
        int dup = fcntl(fd, F_DUPFD_CLOEXEC, 0);

        CHECK(bgsync_submit(&s, dup, ops[i], 40 + i) == 0);
        /* One slot: refused until collected, and the fd stays ours. */
        CHECK(bgsync_submit(&s, fd, ops[i], 99) == -1 && errno == EBUSY);
        CHECK(wait_result(&s, &res));
        CHECK(res.op == ops[i]);
        CHECK_EQ_U64(res.tag, 40 + i);
        CHECK_EQ_U64(res.err, 0);
        CHECK(closed(dup));
        CHECK(!closed(fd));
        CHECK(!bgsync_collect(&s, &res));
    }
    bgsync_stop(&s);
    bgsync_stop(&s);
    close(fd);
    unlink(path);
}

/* A descriptor that cannot be synced: the errno comes back. */
static void test_errors(void)
{
    struct bgsync s = {0};
    struct bgsync_result res;
    int p[2];

    CHECK(bgsync_start(&s) == 0);
    CHECK(pipe(p) == 0);
    CHECK(bgsync_submit(&s, p[0], BGSYNC_DATASYNC, 1) == 0);
    CHECK(wait_result(&s, &res));
    CHECK(res.op == BGSYNC_DATASYNC && res.err == EINVAL);
    CHECK(bgsync_submit(&s, p[1], BGSYNC_WRITEBACK, 2) == 0);
    CHECK(wait_result(&s, &res));
    CHECK(res.op == BGSYNC_WRITEBACK && res.err == ESPIPE);
    CHECK(closed(p[0]) && closed(p[1]));
    bgsync_stop(&s);
}

/* Stop right after a submit: the request still runs (its fd is closed)
 * before the thread ends. Stopping what never started is harmless. */
static void test_stop_finishes_request(void)
{
    struct bgsync s = {0}, never = {0};
    int fd = scratch_file();

    CHECK(bgsync_start(&s) == 0);
    CHECK(bgsync_submit(&s, fd, BGSYNC_DATASYNC, 7) == 0);
    bgsync_stop(&s);
    CHECK(closed(fd));
    CHECK(!s.running);
    bgsync_stop(&never);
    unlink(path);
}

int main(void)
{
    T_RUN(test_requests);
    T_RUN(test_errors);
    T_RUN(test_stop_finishes_request);
    T_END();
}
