/*
 * server.c - the data of the process (struct db) and the clock.
 */
#include "server.h"

#include <stddef.h>
#include <sys/time.h>

#include "cnt.h"

int db_init(struct db *db)
{
    *db = (struct db){0};
    db->cnt = cnt_create();
    if (db->cnt == NULL)
        goto error;
    /* one store per family, in SPEC order */
    return 0;

error:
    db_deinit(db);
    return -1;
}

/* Safe on a partly initialised db: every destroy accepts NULL. */
void db_deinit(struct db *db)
{
    cnt_destroy(db->cnt);
    /* one store per family, in SPEC order */
    *db = (struct db){0};
}

unsigned db_usage(const struct db *db, struct db_usage *out)
{
    unsigned n = 0;
    out[n++] = (struct db_usage){"cnt", "user", cnt_users(db->cnt),
                                 cnt_bytes(db->cnt)};
    /* one row per family, in SPEC order */
    return n;
}

size_t db_audit(const struct db *db)
{
    size_t bad = 0;
    bad += cnt_audit(db->cnt);
    /* one line per family, in SPEC order */
    return bad;
}

size_t db_bytes(const struct db *db)
{
    struct db_usage u[DB_FAMILIES_MAX];
    unsigned n = db_usage(db, u);
    size_t bytes = 0;
    for (unsigned i = 0; i < n; i++)
        bytes += u[i].bytes;
    return bytes;
}

uint64_t server_clock_ms(const struct server *srv)
{
    return (uint64_t)((int64_t)server_now_ms() + srv->clock_offset_ms);
}

uint64_t server_now_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}
