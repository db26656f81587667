/*
 * dot.c - DOT over two containers:
 *
 *   dots   (denseid) dot id -> dense index 0..65535, and per index the push
 *          time plus one (0: never pushed), 8 bytes.
 *   clicks (listmap) uid -> the user's clicks, one 8-byte entry per dot:
 *
 *            63        48 47                      1  0
 *           [ dot index  |  click time (47 bits)   | 1 ]
 *
 * A user who clicked one dot costs one map slot (~20 bytes); with n dots,
 * one slot plus 8 + 8n bytes: ~11 bytes per (user, dot) at ten dots.
 */
#include "dot.h"

#include "db.h"
#include "denseid.h"
#include "listmap.h"
#include "mem.h"

/* denseid_intern's errors pass through as DOT_* errors, and listmap's
 * -1 is DOT_ENOMEM. */
_Static_assert((int)DOT_ENOMEM == (int)DENSEID_ENOMEM &&
                   (int)DOT_EFULL == (int)DENSEID_EFULL,
               "DOT and denseid error codes");

struct dot_store {
    struct denseid *dots; /* value: uint64_t push time + 1, 0 = never */
    struct listmap *clicks;
    struct mem_acct mem; /* both */
};

static inline uint64_t *push_ref(const struct dot_store *s, uint32_t idx)
{
    return denseid_val(s->dots, idx);
}

struct dot_store *dot_create(void)
{
    struct dot_store *s = mem_zalloc(NULL, sizeof(*s));

    if (s == NULL)
        return NULL;
    mem_acct_init(&s->mem, NULL);
    s->dots = denseid_create(&s->mem, sizeof(uint64_t), DOT_MAX_DOTS);
    s->clicks = listmap_create(&s->mem, DOT_INDEX_BITS);
    if (s->dots == NULL || s->clicks == NULL) {
        dot_destroy(s);
        return NULL;
    }
    return s;
}

void dot_destroy(struct dot_store *s)
{
    if (s == NULL)
        return;
    denseid_destroy(s->dots);
    listmap_destroy(s->clicks);
    mem_free(NULL, s, sizeof(*s));
}

int dot_push(struct dot_store *s, uint64_t dot, uint64_t ts, uint64_t *push)
{
    uint32_t idx;
    uint64_t *p;
    int rc;

    if (ts > DOT_TS_MAX)
        return DOT_ERANGE;
    rc = denseid_intern(s->dots, dot, &idx);
    if (rc != 0)
        return rc;
    p = push_ref(s, idx);
    if (*p < ts + 1)
        *p = ts + 1;
    *push = *p - 1;
    return 0;
}

int dot_click(struct dot_store *s, uint64_t uid, uint64_t dot, uint64_t ts)
{
    uint32_t idx;
    uint64_t *e;
    bool known = denseid_find(s->dots, dot, &idx);
    int rc;

    if (ts > DOT_TS_MAX)
        return DOT_ERANGE;
    rc = known ? 0 : denseid_intern(s->dots, dot, &idx);
    if (rc != 0)
        return rc;
    e = listmap_find(s->clicks, uid, idx);
    if (e == NULL) {
        if (listmap_add(s->clicks, uid, dot_click_make(idx, ts)) == 0)
            return 0;
        /* Fixed: the dot created for this click used to stay behind. */
        if (!known)
            denseid_unintern(s->dots, dot);
        return DOT_ENOMEM;
    }
    if (dot_click_ts(*e) < ts)
        *e = dot_click_make(idx, ts);
    return 0;
}

bool dot_shown(const struct dot_store *s, uint64_t uid, uint64_t dot)
{
    return dot_shown_after(s, uid, dot, 0);
}

/* push (stored + 1, 0: never) shows over a click at ts and the floor. */
static inline bool shows(uint64_t push, uint64_t ts, uint64_t floor)
{
    return push != 0 && ts < push - 1 && (floor == 0 || floor < push - 1);
}

bool dot_shown_after(const struct dot_store *s, uint64_t uid, uint64_t dot,
                     uint64_t floor)
{
    uint64_t push, click;
    uint32_t idx;

    if (!denseid_find(s->dots, dot, &idx))
        return false;
    push = *push_ref(s, idx);
    if (push == 0)
        return false;
    if (!listmap_lookup(s->clicks, uid, idx, &click))
        return floor == 0 || floor < push - 1; /* never clicked */
    return shows(push, dot_click_ts(click), floor);
}

uint32_t dot_user_shown(const struct dot_store *s, uint64_t uid, uint64_t floor)
{
    const uint64_t *e;
    uint64_t one;
    uint32_t n = listmap_get(s->clicks, uid, &e, &one), k = 0;

    for (uint32_t i = 0; i < n; i++)
        k +=
            shows(*push_ref(s, dot_click_dot(e[i])), dot_click_ts(e[i]), floor);
    return k;
}

uint64_t dot_push_time(const struct dot_store *s, uint64_t dot)
{
    uint32_t idx;
    uint64_t p;

    if (!denseid_find(s->dots, dot, &idx))
        return DOT_NEVER;
    p = *push_ref(s, idx);
    return p == 0 ? DOT_NEVER : p - 1;
}

void dot_dot_at(const struct dot_store *s, uint32_t i, uint64_t *dot,
                uint64_t *push)
{
    uint64_t p = *push_ref(s, i);

    *dot = denseid_id(s->dots, i);
    *push = p == 0 ? DOT_NEVER : p - 1;
}

int dot_put_dot(struct dot_store *s, uint64_t dot, uint64_t push)
{
    uint32_t idx;
    int rc;

    if (push != DOT_NEVER && push > DOT_TS_MAX)
        return DOT_ERANGE;
    if (denseid_find(s->dots, dot, &idx))
        return 1;
    rc = denseid_intern(s->dots, dot, &idx);
    if (rc == 0 && push != DOT_NEVER)
        *push_ref(s, idx) = push + 1;
    return rc;
}

size_t dot_scan(const struct dot_store *s, uint64_t *cursor, size_t max,
                dot_visit_fn fn, void *ctx)
{
    return listmap_scan(s->clicks, cursor, max, fn, ctx);
}

int dot_put_user(struct dot_store *s, uint64_t uid, uint32_t n,
                 const uint64_t *clicks)
{
    return listmap_put(s->clicks, uid, clicks, n);
}

size_t dot_entries(const struct dot_store *s)
{
    return listmap_entries(s->clicks);
}

size_t dot_users(const struct dot_store *s)
{
    return listmap_users(s->clicks);
}

size_t dot_dots(const struct dot_store *s)
{
    return denseid_count(s->dots);
}

size_t dot_bytes(const struct dot_store *s)
{
    return sizeof(*s) + s->mem.bytes;
}

static size_t check_entry(uint64_t entry, const void *ctx)
{
    const struct dot_store *s = ctx;

    return dot_click_dot(entry) >= denseid_count(s->dots);
}

size_t dot_audit(const struct dot_store *s)
{
    size_t bad = denseid_audit(s->dots);

    bad += denseid_bytes(s->dots) + listmap_bytes(s->clicks) != s->mem.bytes;
    for (uint32_t i = 0; i < denseid_count(s->dots); i++)
        bad += *push_ref(s, i) > DOT_TS_MAX + 1;
    return bad + listmap_audit(s->clicks, check_entry, s);
}

size_t dot_forget_user(struct dot_store *s, uint64_t uid)
{
    return listmap_del_user(s->clicks, uid);
}

uint32_t dot_user_info(const struct dot_store *s, uint64_t uid, dot_user_fn fn,
                       void *ctx)
{
    const uint64_t *e;
    uint64_t one;
    uint32_t n = listmap_get(s->clicks, uid, &e, &one);

    for (uint32_t i = 0; i < n; i++) {
        uint64_t dot, push;

        dot_dot_at(s, dot_click_dot(e[i]), &dot, &push);
        fn(dot, dot_click_ts(e[i]), push,
           push != DOT_NEVER && dot_click_ts(e[i]) < push, ctx);
    }
    return n;
}

void dot_prefetch_user(const struct dot_store *s, uint64_t uid, int stage)
{
    listmap_prefetch(s->clicks, uid, stage);
}
