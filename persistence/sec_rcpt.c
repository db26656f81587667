/*
 * sec_rcpt.c - the RCPT section of the snapshot (sections.def, id 7).
 *
 * Raw bytes: items, each a u8 tag then its fields, in the store's walk
 * order (rcpt_scan); items 2 to 4 belong to the group item before them.
 *   1 group     u64 gid, varint nmap (<= 2^24), then nmap times, in mapid
 *               order: u64 uid, u8 quit (1: has quit, else 0); an erased
 *               user's mapid has uid 2^64 - 1 (RCPT_UID_ANON) and quit 1
 *   2 quit set  varint nwords (<= (nmap + 63) / 64), nwords u64, the last
 *               non-zero, no bit at or past nmap: the quit set the
 *               messages after it were sent under, until the next one
 *   3 message   u64 msgid, u32 ts (seconds since the epoch), varint nmemb
 *               minus the previous message's of the group (nmemb <= nmap),
 *               varint sender mapid + 1 (0: not a member; <= nmemb); read
 *               by every recipient
 *   4 message   the same, then (nmemb + 63) / 64 u64: bit m set when
 *               mapid m has read it or is not a recipient (quit at send,
 *               the sender), and every bit past nmemb; someone unread
 * Messages come in send order, so the loaded store drops them for
 * retention in the same order, and a quit set is shared again by the
 * messages that follow it. Recipient and unread counts are not saved: the
 * store derives them from the quit sets and bitmaps, so a file cannot
 * hand it counts that disagree. A message read by everyone takes 15 bytes
 * before compression (a sender mapid past 127 adds one or two), one still
 * unread 8 more per 64 mapids.
 */
#include <stdlib.h>

#include "rcpt.h"
#include "sections.h"

enum { ITEM_GROUP = 1, ITEM_QUIT = 2, ITEM_READ = 3, ITEM_OPEN = 4 };

/* Groups per rcpt_scan call; a failed write is noticed between calls. */
#define SCAN_BATCH 64

struct save {
    struct snap_writer *w;
    uint32_t nmemb; /* the group's previous message's */
};

static void put_words(struct snap_writer *w, uint32_t n, const uint64_t *v)
{
    for (uint32_t i = 0; i < n; i++)
        snap_put_u64(w, v[i]);
}

static void save_group(uint64_t gid, uint32_t nmap, const uint64_t *uids,
                       const uint64_t *quit, void *ctx)
{
    struct save *sv = ctx;

    snap_put_u8(sv->w, ITEM_GROUP);
    snap_put_u64(sv->w, gid);
    snap_put_varint(sv->w, nmap);
    for (uint32_t m = 0; m < nmap; m++) {
        snap_put_u64(sv->w, uids[m]);
        snap_put_u8(sv->w, quit[m / 64] >> (m % 64) & 1);
    }
    sv->nmemb = 0;
}

static void save_epoch(uint32_t nwords, const uint64_t *quit, void *ctx)
{
    struct save *sv = ctx;

    snap_put_u8(sv->w, ITEM_QUIT);
    snap_put_varint(sv->w, nwords);
    put_words(sv->w, nwords, quit);
}

static void save_msg(const struct rcpt_msg_info *m, void *ctx)
{
    struct save *sv = ctx;

    snap_put_u8(sv->w, m->bits != NULL ? ITEM_OPEN : ITEM_READ);
    snap_put_u64(sv->w, m->msgid);
    snap_put_u32(sv->w, m->ts);
    snap_put_varint(sv->w, m->nmemb - sv->nmemb);
    snap_put_varint(sv->w, m->sender == RCPT_NOSENDER ? 0 : m->sender + 1ull);
    if (m->bits != NULL)
        put_words(sv->w, RCPT_WORDS(m->nmemb), m->bits);
    sv->nmemb = m->nmemb;
}

int sec_rcpt_save(const struct db *db, struct snap_writer *w)
{
    static const struct rcpt_walk walk = {save_group, save_epoch, save_msg};
    struct save sv = {w, 0};
    uint64_t cursor = 0;

    do {
        rcpt_scan(db->rcpt, &cursor, SCAN_BATCH, &walk, &sv);
        if (snap_put_failed(w))
            return -1;
    } while (cursor != 0);
    return 0;
}

/* The group being loaded, and a bitmap buffer sized to its mapids (the
 * members already loaded, never a count read from the file). */
struct load {
    struct rcpt_store *s;
    struct snap_reader *r;
    bool in_group;
    bool filled; /* the group has a member or a message */
    uint64_t gid;
    uint32_t nmap;  /* its mapids */
    uint32_t nmemb; /* its previous message's */
    uint64_t *words;
    uint32_t cap;
};

static const char *why(int rc)
{
    switch (rc) {
    case RCPT_EEXIST:
        return "listed twice";
    case RCPT_ELIMIT:
        return "over the store's limit";
    case RCPT_ENOMEM:
        return "out of memory";
    default:
        return "inconsistent with its group";
    }
}

/* Reads n words (n <= RCPT_WORDS(l->nmap)) into l->words, never NULL
 * afterwards. */
static int read_words(struct load *l, uint32_t n)
{
    if (n > l->cap || l->words == NULL) {
        uint32_t cap = n > 64 ? n : 64;
        uint64_t *w = realloc(l->words, cap * sizeof(*w));

        if (w == NULL)
            return snap_fail(l->r, "out of memory");
        l->words = w;
        l->cap = cap;
    }
    for (uint32_t i = 0; i < n; i++)
        if (snap_get_u64(l->r, &l->words[i]) != 0)
            return -1;
    return 0;
}

/* The group before the next one, or the section's end, must hold
 * something: the store never keeps an empty group. */
static int end_group(struct load *l)
{
    if (l->in_group && !l->filled)
        return snap_fail(l->r, "group %llu holds nothing",
                         (unsigned long long)l->gid);
    return 0;
}

static int load_group(struct load *l)
{
    uint64_t gid, nmap, uid;
    uint8_t quit;
    int rc;

    if (snap_get_u64(l->r, &gid) != 0 ||
        snap_get_varint(l->r, RCPT_MAX_MEMBERS, &nmap) != 0)
        return -1;
    rc = rcpt_restore_group(l->s, gid);
    if (rc != RCPT_OK)
        return snap_fail(l->r, "group %llu: %s", (unsigned long long)gid,
                         why(rc));
    l->in_group = true;
    l->filled = nmap > 0;
    l->gid = gid;
    l->nmap = l->nmemb = 0;
    for (uint64_t m = 0; m < nmap; m++, l->nmap++) {
        if (snap_get_u64(l->r, &uid) != 0 || snap_get_u8(l->r, &quit) != 0)
            return -1;
        rc = quit > 1 ? 1 : rcpt_restore_member(l->s, gid, uid, quit);
        if (rc != RCPT_OK)
            return snap_fail(l->r, "group %llu member %llu: %s",
                             (unsigned long long)gid, (unsigned long long)uid,
                             why(rc));
    }
    return 0;
}

static int load_epoch(struct load *l)
{
    uint64_t n;
    int rc;

    if (snap_get_varint(l->r, RCPT_WORDS(l->nmap), &n) != 0 ||
        read_words(l, (uint32_t)n) != 0)
        return -1;
    rc = rcpt_restore_epoch(l->s, l->gid, (uint32_t)n, l->words);
    if (rc != RCPT_OK)
        return snap_fail(l->r, "group %llu quit set: %s",
                         (unsigned long long)l->gid, why(rc));
    return 0;
}

static int load_msg(struct load *l, bool open)
{
    struct rcpt_msg_info mi = {0, 0, 0, 0, NULL};
    uint64_t d, sender;
    int rc;

    if (snap_get_u64(l->r, &mi.msgid) != 0 || snap_get_u32(l->r, &mi.ts) != 0 ||
        snap_get_varint(l->r, l->nmap - l->nmemb, &d) != 0 ||
        snap_get_varint(l->r, l->nmemb + d, &sender) != 0)
        return -1;
    mi.nmemb = l->nmemb + (uint32_t)d;
    mi.sender = sender == 0 ? RCPT_NOSENDER : (uint32_t)sender - 1;
    if (open) {
        if (read_words(l, RCPT_WORDS(mi.nmemb)) != 0)
            return -1;
        mi.bits = l->words;
    }
    rc = rcpt_restore_msg(l->s, l->gid, &mi);
    if (rc != RCPT_OK)
        return snap_fail(l->r, "group %llu message %llu: %s",
                         (unsigned long long)l->gid,
                         (unsigned long long)mi.msgid, why(rc));
    l->nmemb = mi.nmemb;
    l->filled = true;
    return 0;
}

static int load_item(struct load *l, uint8_t tag)
{
    if (tag == ITEM_GROUP)
        return end_group(l) != 0 ? -1 : load_group(l);
    if (tag < ITEM_GROUP || tag > ITEM_OPEN)
        return snap_fail(l->r, "unknown item %u", tag);
    if (!l->in_group)
        return snap_fail(l->r, "item %u before any group", tag);
    return tag == ITEM_QUIT ? load_epoch(l) : load_msg(l, tag == ITEM_OPEN);
}

int sec_rcpt_load(struct db *db, struct snap_reader *r)
{
    struct load l = {db->rcpt, r, false, false, 0, 0, 0, NULL, 0};
    uint8_t tag;
    int rc = 0;

    while (rc == 0 && snap_more(r))
        rc = snap_get_u8(r, &tag) != 0 ? -1 : load_item(&l, tag);
    if (rc == 0)
        rc = end_group(&l);
    free(l.words);
    return rc;
}
