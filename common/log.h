/*
 * log.h - timestamped, levelled log lines, in UTC marked as such, on
 * stderr or in the `logfile`:
 *   2026-11-21T05:40:00.123Z [4242] INFO ready on 127.0.0.1:7460
 */
#ifndef UR_LOG_H
#define UR_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum log_level { LOG_DEBUG = 0, LOG_INFO = 1, LOG_WARN = 2, LOG_ERROR = 3 };

/* Lines below this level are dropped. Default LOG_INFO. */
void log_set_level(enum log_level level);
/* Parses "debug", "info", "warning"/"warn", "error"; -1 if unknown. */
int log_level_parse(const char *name);
const char *log_level_name(enum log_level level);

/*
 * Logs to path (appended, created 0644), or to stderr when path is "".
 * Also what SIGHUP does after logrotate moved the file away (log_reopen:
 * the same path again). 0, or -1 with a message in err: the old
 * destination is kept then.
 */
int log_open(const char *path, char *err, size_t errlen);
int log_reopen(char *err, size_t errlen);
/* Whether lines go to a file (not stderr). */
int log_to_file(void);

void log_msg(enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* At most one line a second about a condition that may recur in a tight
 * loop (accept failing at EMFILE, wrong AUTH guesses): the caller logs
 * only when log_rate_ok says so, mentioning *suppressed, the calls
 * refused since the last line. now_ms: any millisecond clock. */
struct log_rate {
    uint64_t last_ms;
    uint64_t suppressed;
    bool started;
};
bool log_rate_ok(struct log_rate *r, uint64_t now_ms, uint64_t *suppressed);

#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

#endif
