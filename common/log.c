/*
 * log.c - see log.h. One fprintf per line so lines from the parent and a
 * forked child do not interleave mid-line.
 */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static enum log_level min_level = LOG_INFO;
static FILE *log_file; /* NULL: stderr */
static char log_path[512];

static const char *const level_names[] = {"DEBUG", "INFO", "WARN", "ERROR"};

void log_set_level(enum log_level level)
{
    min_level = level;
}

int log_level_parse(const char *name)
{
    if (strcasecmp(name, "debug") == 0)
        return LOG_DEBUG;
    if (strcasecmp(name, "info") == 0)
        return LOG_INFO;
    if (strcasecmp(name, "warning") == 0 || strcasecmp(name, "warn") == 0)
        return LOG_WARN;
    if (strcasecmp(name, "error") == 0)
        return LOG_ERROR;
    return -1;
}

const char *log_level_name(enum log_level level)
{
    return level_names[level];
}

int log_open(const char *path, char *err, size_t errlen)
{
    FILE *f = NULL;

    if (path[0] != '\0') {
        if (strlen(path) >= sizeof(log_path)) {
            snprintf(err, errlen, "logfile %s: path too long", path);
            return -1;
        }
        f = fopen(path, "a");
        if (f == NULL) {
            snprintf(err, errlen, "cannot open logfile %s: %s", path,
                     strerror(errno));
            return -1;
        }
        setvbuf(f, NULL, _IOLBF, 0);
    }
    if (log_file != NULL)
        fclose(log_file);
    log_file = f;
    snprintf(log_path, sizeof(log_path), "%s", path);
    return 0;
}

int log_reopen(char *err, size_t errlen)
{
    char path[sizeof(log_path)];

    memcpy(path, log_path, sizeof(path));
    return log_open(path, err, errlen);
}

int log_to_file(void)
{
    return log_file != NULL;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    if (level < min_level)
        return;

    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);

    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char when[32];
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
    fprintf(log_file != NULL ? log_file : stderr, "%s.%03dZ [%d] %s %s\n", when,
            (int)(tv.tv_usec / 1000), (int)getpid(), level_names[level], msg);
}

bool log_rate_ok(struct log_rate *r, uint64_t now_ms, uint64_t *suppressed)
{
    if (r->started && now_ms - r->last_ms < 1000) {
        r->suppressed++;
        return false;
    }
    *suppressed = r->suppressed;
    r->suppressed = 0;
    r->last_ms = now_ms;
    r->started = true;
    return true;
}
