/*
 * log.h - timestamped, levelled log lines on stderr:
 *   2026-11-21 05:40:00.123 [4242] INFO ready on 127.0.0.1:7460
 */
#ifndef UR_LOG_H
#define UR_LOG_H

#include <stdbool.h>
#include <stdint.h>

enum log_level { LOG_DEBUG = 0, LOG_INFO = 1, LOG_WARN = 2, LOG_ERROR = 3 };

/* Lines below this level are dropped. Default LOG_INFO. */
void log_set_level(enum log_level level);
/* Parses "debug", "info", "warning"/"warn", "error"; -1 if unknown. */
int log_level_parse(const char *name);
const char *log_level_name(enum log_level level);

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
