/*
 * server.c - the data of the process (struct db) and the clock.
 */
#include "server.h"

#include <stddef.h>
#include <sys/time.h>

#include "bc.h"
#include "cnt.h"
#include "conv.h"
#include "dot.h"
#include "feed.h"
#include "grp.h"
#include "rcpt.h"
#include "u32map.h"

int db_init(struct db *db)
{
    *db = (struct db){0};
    db->cnt = cnt_create();
    if (db->cnt == NULL)
        goto error;
    db->conv = conv_create();
    if (db->conv == NULL)
        goto error;
    db->grp = grp_create();
    if (db->grp == NULL)
        goto error;
    db->bc = bc_create();
    if (db->bc == NULL)
        goto error;
    db->dot = dot_create();
    if (db->dot == NULL)
        goto error;
    db->feed = feed_create();
    if (db->feed == NULL)
        goto error;
    db->rcpt = rcpt_create();
    if (db->rcpt == NULL)
        goto error;
    /* one store per family, in SPEC order */
    db->active = u32map_create();
    if (db->active == NULL)
        goto error;
    return 0;

error:
    db_deinit(db);
    return -1;
}

/* Safe on a partly initialised db: every destroy accepts NULL. */
void db_deinit(struct db *db)
{
    cnt_destroy(db->cnt);
    conv_destroy(db->conv);
    grp_destroy(db->grp);
    bc_destroy(db->bc);
    dot_destroy(db->dot);
    feed_destroy(db->feed);
    rcpt_destroy(db->rcpt);
    /* one store per family, in SPEC order */
    u32map_destroy(db->active);
    *db = (struct db){0};
}

unsigned db_usage(const struct db *db, struct db_usage *out)
{
    unsigned n = 0;
    out[n++] = (struct db_usage){"cnt", "user", cnt_users(db->cnt),
                                 cnt_bytes(db->cnt)};
    out[n++] = (struct db_usage){"conv", "conversation", conv_count(db->conv),
                                 conv_bytes(db->conv)};
    out[n++] = (struct db_usage){"grp", "membership", grp_memberships(db->grp),
                                 grp_bytes(db->grp)};
    out[n++] = (struct db_usage){"bc", "subscription", bc_entries(db->bc),
                                 bc_bytes(db->bc)};
    out[n++] = (struct db_usage){"dot", "click", dot_clicks(db->dot),
                                 dot_bytes(db->dot)};
    out[n++] = (struct db_usage){"feed", "follow", feed_edges(db->feed),
                                 feed_bytes(db->feed)};
    out[n++] = (struct db_usage){"rcpt", "message", rcpt_messages(db->rcpt),
                                 rcpt_bytes(db->rcpt)};
    /* one row per family, in SPEC order */
    out[n++] = (struct db_usage){"activity", "user", u32map_count(db->active),
                                 u32map_bytes(db->active)};
    return n;
}

size_t db_audit(const struct db *db)
{
    size_t bad = 0;
    bad += cnt_audit(db->cnt);
    /* user totals recomputed from their conversations */
    bad += conv_audit(db->conv);
    bad += grp_audit(db->grp);
    bad += bc_audit(db->bc);
    bad += dot_audit(db->dot);
    bad += feed_audit(db->feed);
    /* read and recipient counts vs bitmap popcounts, uid <-> mapid maps */
    bad += rcpt_audit(db->rcpt);
    /* one line per family, in SPEC order */
    bad += u32map_audit(db->active);
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
    if (srv->clock_pinned)
        return srv->clock_pin_ms;
    return (uint64_t)((int64_t)server_now_ms() + srv->clock_offset_ms);
}

uint64_t server_now_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}
