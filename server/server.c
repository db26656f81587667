/*
 * server.c - the data of the process (struct db) and the clock.
 */
#include "server.h"

#include <stddef.h>
#include <sys/time.h>

#include "cnt.h"

int db_init(struct db *db)
{
    db->cnt = cnt_create();
    if (db->cnt == NULL)
        return -1;
    return 0;
}

void db_deinit(struct db *db)
{
    cnt_destroy(db->cnt);
    db->cnt = NULL;
}

size_t db_bytes(const struct db *db)
{
    return cnt_bytes(db->cnt);
}

uint64_t server_now_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}
