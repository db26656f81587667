/*
 * sec_rcpt.c - the RCPT section of the snapshot (sections.def, id 7).
 *
 * Raw bytes, format 2 (written since read receipts keep watermarks): a
 * format item (u8 0, u8 2), then items, each a u8 tag then its fields, in
 * the store's walk order (rcpt_scan); items 2, 5, 6 and 7 belong to the
 * group item before them, 7 ends it.
 *   1 group     u64 gid, varint nmap (<= 2^24), then nmap times, in mapid
 *               order: u64 uid, u8 quit (1: has quit, else 0); an erased
 *               user's mapid has uid 2^64 - 1 (RCPT_UID_ANON) and quit 1
 *   2 quit set  varint nwords (<= (nmap + 63) / 64), nwords u64, the last
 *               non-zero, no bit at or past nmap: the quit set the
 *               messages after it were sent under, until the next one
 *   5 message   u64 msgid, u32 ts (seconds since the epoch), varint nmemb
 *               minus the previous message's of the group (nmemb <= nmap),
 *               varint (sender mapid + 1) * 2 + d (mapid + 1 = 0: not a
 *               member; <= nmemb), d = 1 when the sender, a live member,
 *               sent it while its watermark was below it
 *   6 message   the same, then (nmemb + 7) / 8 bytes: bit m (byte m / 8,
 *               bit m % 8) set when recipient m read it out of order
 *   7 marks     varint ngaps; nmap times, in mapid order: varint w + 1
 *               (0: parked), and unless parked varint qfrom + 1 (0: none);
 *               then ngaps times: varint mapid minus the previous gap's,
 *               varint from, varint to - from
 * Positions (w, qfrom, gaps) count the group's messages in this section:
 * 0 is its first, its message count is "after the last". rcpt.h says what
 * the marks mean; the store refuses marks that would count a message for a
 * member who is not its recipient. Messages come in send order, so the
 * loaded store drops them for retention in the same order, and a quit set
 * is shared again by the messages that follow it. Counts are not saved:
 * the store derives them. A message without out-of-order reads takes 15
 * bytes before compression (a sender mapid past 127 adds one or two), a
 * member's marks 2 to 8.
 *
 * Format 1 (written before; its first byte is a group item's tag 1): items
 * 1 and 2 as above, and per message
 *   3 message   the fields of 5, but the sender as varint sender mapid + 1;
 *               read by every recipient
 *   4 message   the same, then (nmemb + 63) / 64 u64: bit m set when mapid
 *               m has read it or is not a recipient (quit at send, the
 *               sender), and every bit past nmemb; someone unread
 * and no marks. It loads into the same store: the watermarks are derived
 * message by message (a member's watermark stays with the first message
 * it received and did not read; its later reads become out-of-order
 * reads, its own messages done by their mark, its quits after it gaps),
 * so a format-1 file
 * gives the same counts and lists.
 */
#include <stdlib.h>
#include <string.h>

#include "rcpt.h"
#include "sections.h"

enum {
    ITEM_FORMAT = 0,
    ITEM_GROUP = 1,
    ITEM_QUIT = 2,
    ITEM_V1_READ = 3,
    ITEM_V1_OPEN = 4,
    ITEM_MSG = 5,
    ITEM_MSG_READS = 6,
    ITEM_MARKS = 7
};

#define FORMAT 2

/* Groups per rcpt_scan call; a failed write is noticed between calls. */
#define SCAN_BATCH 64

/* ---- Saving ---------------------------------------------------------------
 */

struct save {
    struct snap_writer *w;
    uint32_t nmemb;    /* the group's previous message's */
    uint32_t prev_gap; /* the previous gap's mapid */
};

static void save_group(uint64_t gid, uint32_t nmap, void *ctx)
{
    struct save *sv = ctx;

    snap_put_u8(sv->w, ITEM_GROUP);
    snap_put_u64(sv->w, gid);
    snap_put_varint(sv->w, nmap);
    sv->nmemb = 0;
}

static void save_member(uint64_t uid, bool quit, void *ctx)
{
    struct save *sv = ctx;

    snap_put_u64(sv->w, uid);
    snap_put_u8(sv->w, quit);
}

static void save_epoch(uint32_t nwords, const uint64_t *quit, void *ctx)
{
    struct save *sv = ctx;

    snap_put_u8(sv->w, ITEM_QUIT);
    snap_put_varint(sv->w, nwords);
    for (uint32_t i = 0; i < nwords; i++)
        snap_put_u64(sv->w, quit[i]);
}

static void save_msg(const struct rcpt_msg_info *m, void *ctx)
{
    struct save *sv = ctx;

    snap_put_u8(sv->w, m->reads != NULL ? ITEM_MSG_READS : ITEM_MSG);
    snap_put_u64(sv->w, m->msgid);
    snap_put_u32(sv->w, m->ts);
    snap_put_varint(sv->w, m->nmemb - sv->nmemb);
    snap_put_varint(sv->w, (m->sender == RCPT_NOSENDER ? 0 : m->sender + 1ull)
                                   << 1 |
                               m->sender_done);
    if (m->reads != NULL)
        snap_put(sv->w, m->reads, RCPT_BYTES(m->nmemb));
    sv->nmemb = m->nmemb;
}

static void save_marks(uint32_t ngaps, void *ctx)
{
    struct save *sv = ctx;

    snap_put_u8(sv->w, ITEM_MARKS);
    snap_put_varint(sv->w, ngaps);
    sv->prev_gap = 0;
}

static void save_mark(uint32_t w, uint32_t qfrom, void *ctx)
{
    struct save *sv = ctx;

    snap_put_varint(sv->w, w == RCPT_PARKED ? 0 : w + 1ull);
    if (w != RCPT_PARKED)
        snap_put_varint(sv->w, qfrom == RCPT_NOPOS ? 0 : qfrom + 1ull);
}

static void save_gap(const struct rcpt_gap *gp, void *ctx)
{
    struct save *sv = ctx;

    snap_put_varint(sv->w, gp->mapid - sv->prev_gap);
    snap_put_varint(sv->w, gp->from);
    snap_put_varint(sv->w, gp->to - gp->from);
    sv->prev_gap = gp->mapid;
}

int sec_rcpt_save(const struct db *db, struct snap_writer *w)
{
    static const struct rcpt_walk walk = {save_group, save_member, save_epoch,
                                          save_msg,   save_marks,  save_mark,
                                          save_gap};
    struct save sv = {w, 0, 0};
    uint64_t cursor = 0;

    snap_put_u8(w, ITEM_FORMAT);
    snap_put_u8(w, FORMAT);
    do {
        rcpt_scan(db->rcpt, &cursor, SCAN_BATCH, &walk, &sv);
        if (snap_put_failed(w))
            return -1;
    } while (cursor != 0);
    return 0;
}

int sec_rcpt_save_group(const struct db *db, struct snap_writer *w,
                        uint64_t gid)
{
    static const struct rcpt_walk walk = {save_group, save_member, save_epoch,
                                          save_msg,   save_marks,  save_mark,
                                          save_gap};
    struct save sv = {w, 0, 0};

    snap_put_u8(w, ITEM_FORMAT);
    snap_put_u8(w, FORMAT);
    if (!rcpt_walk_group(db->rcpt, gid, &walk, &sv))
        return 1;
    return snap_put_failed(w) ? -1 : 0;
}

/* ---- Loading --------------------------------------------------------------
 */

/* Format 1's messages carry who read them; the marks are derived as they
 * come (see the top). Arrays sized by the group's loaded members. */
struct v1 {
    uint64_t *caught;  /* has read every message it received so far */
    uint64_t *run;     /* behind, in a run of messages it does not receive */
    uint64_t *quitset; /* the current quit set, qwords words */
    uint32_t qwords;
    uint32_t born;  /* mapids below had joined by the last message */
    uint32_t *from; /* where its run started */
    uint8_t *reads; /* the message's out-of-order reads: whole words */
};

/* The group being loaded, and buffers sized to its mapids (the members
 * already loaded, never a count read from the file). */
struct load {
    struct rcpt_store *s;
    struct snap_reader *r;
    int format;
    bool in_group;
    bool filled; /* the group has a member or a message */
    bool marked; /* format 2: its marks came */
    uint64_t gid;
    uint32_t nmap;  /* its mapids */
    uint32_t nmemb; /* its previous message's */
    uint32_t nmsgs; /* its messages so far */
    uint64_t *words;
    uint32_t cap;
    uint8_t *quit; /* nmap: has quit */
    uint32_t *w, *qfrom;
    struct rcpt_gap *gaps;
    uint32_t ngaps, gapcap;
    struct v1 v1;
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

static void group_buffers_free(struct load *l)
{
    free(l->quit);
    free(l->w);
    free(l->qfrom);
    free(l->v1.caught);
    free(l->v1.run);
    free(l->v1.quitset);
    free(l->v1.from);
    free(l->v1.reads);
    l->quit = NULL;
    l->w = l->qfrom = l->v1.from = NULL;
    l->v1.caught = l->v1.run = l->v1.quitset = NULL;
    l->v1.reads = NULL;
    l->ngaps = 0;
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

static int add_gap(struct load *l, uint32_t mapid, uint32_t from, uint32_t to)
{
    if (l->ngaps == l->gapcap) {
        uint32_t cap = l->gapcap ? l->gapcap * 2 : 16;
        struct rcpt_gap *g = realloc(l->gaps, cap * sizeof(*g));

        if (g == NULL)
            return snap_fail(l->r, "out of memory");
        l->gaps = g;
        l->gapcap = cap;
    }
    l->gaps[l->ngaps++] = (struct rcpt_gap){mapid, from, to};
    return 0;
}

static int gap_cmp(const void *a, const void *b)
{
    const struct rcpt_gap *x = a, *y = b;

    if (x->mapid != y->mapid)
        return x->mapid < y->mapid ? -1 : 1;
    return (x->from > y->from) - (x->from < y->from);
}

static int set_marks(struct load *l)
{
    int rc = rcpt_restore_marks(l->s, l->gid, l->nmap, l->w, l->qfrom, l->ngaps,
                                l->gaps);

    if (rc != RCPT_OK)
        return snap_fail(l->r, "group %llu marks: %s",
                         (unsigned long long)l->gid, why(rc));
    return 0;
}

/* Format 1: the marks derived from the group's messages. */
static int v1_marks(struct load *l)
{
    const struct v1 *v = &l->v1;
    uint32_t n = l->nmsgs;

    for (uint32_t m = 0; m < l->nmap; m++) {
        bool caught = m >= v->born || (v->caught[m / 64] >> (m % 64) & 1);
        bool run = m < v->born && (v->run[m / 64] >> (m % 64) & 1);

        l->qfrom[m] = RCPT_NOPOS;
        if (caught) {
            l->w[m] = l->quit[m] ? RCPT_PARKED : n;
        } else if (run && l->quit[m]) {
            l->qfrom[m] = v->from[m];
        } else if (run) {
            if (add_gap(l, m, v->from[m], n) != 0)
                return -1;
        } else if (l->quit[m]) {
            l->qfrom[m] = n;
        }
    }
    if (l->ngaps > 1)
        qsort(l->gaps, l->ngaps, sizeof(*l->gaps), gap_cmp);
    return set_marks(l);
}

/* The group before the next one, or the section's end, must hold
 * something (the store never keeps an empty group) and, in format 2, its
 * marks. */
static int end_group(struct load *l)
{
    int rc = 0;

    if (!l->in_group)
        return 0;
    if (!l->filled)
        rc = snap_fail(l->r, "group %llu holds nothing",
                       (unsigned long long)l->gid);
    else if (l->format == 1)
        rc = v1_marks(l);
    else if (!l->marked)
        rc = snap_fail(l->r, "group %llu has no marks",
                       (unsigned long long)l->gid);
    group_buffers_free(l);
    l->in_group = false;
    return rc;
}

/* Buffers for the group's nmap members. */
static int group_buffers(struct load *l)
{
    uint32_t n = l->nmap ? l->nmap : 1, nw = RCPT_WORDS(n);

    l->w = calloc(n, sizeof(*l->w));
    l->qfrom = calloc(n, sizeof(*l->qfrom));
    if (l->w == NULL || l->qfrom == NULL)
        return snap_fail(l->r, "out of memory");
    if (l->format == 1) {
        l->v1 = (struct v1){calloc(nw, 8), calloc(nw, 8), calloc(nw, 8), 0, 0,
                            calloc(n, 4),  calloc(nw, 8)};
        if (l->v1.caught == NULL || l->v1.run == NULL ||
            l->v1.quitset == NULL || l->v1.from == NULL || l->v1.reads == NULL)
            return snap_fail(l->r, "out of memory");
    }
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
    l->marked = false;
    l->gid = gid;
    l->nmap = l->nmemb = l->nmsgs = 0;
    for (uint64_t m = 0; m < nmap; m++, l->nmap++) {
        if (snap_get_u64(l->r, &uid) != 0 || snap_get_u8(l->r, &quit) != 0)
            return -1;
        rc = quit > 1 ? 1 : rcpt_restore_member(l->s, gid, uid, quit);
        if (rc != RCPT_OK)
            return snap_fail(l->r, "group %llu member %llu: %s",
                             (unsigned long long)gid, (unsigned long long)uid,
                             why(rc));
        if ((l->nmap & (l->nmap - 1)) == 0 || l->quit == NULL) {
            /* grows with the members decoded, never ahead of them */
            uint8_t *q = realloc(l->quit, l->nmap ? l->nmap * 2 : 1);

            if (q == NULL)
                return snap_fail(l->r, "out of memory");
            l->quit = q;
        }
        l->quit[l->nmap] = quit;
    }
    if (l->quit == NULL && (l->quit = malloc(1)) == NULL)
        return snap_fail(l->r, "out of memory");
    return group_buffers(l);
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
    if (l->format == 1) {
        memset(l->v1.quitset, 0, RCPT_WORDS(l->nmap ? l->nmap : 1) * 8);
        memcpy(l->v1.quitset, l->words, n * 8);
        l->v1.qwords = (uint32_t)n;
    }
    return 0;
}

/*
 * Format 1's message mi (bits: its "read or not a recipient" words, NULL
 * when everyone read it) as the store keeps it: who reads in order moves
 * on, who falls behind stays; a behind member's later reads and own
 * messages are done out of order, the messages it does not receive
 * because it had quit make gaps. Fills l->v1.reads; 1
 * when the bits miss a non-recipient or a padding bit or leave nobody
 * unread, -1 on allocation failure.
 */
static int v1_message(struct load *l, struct rcpt_msg_info *mi,
                      const uint64_t *bits)
{
    struct v1 *v = &l->v1;
    uint32_t n = l->nmsgs, nmemb = mi->nmemb;
    uint64_t unread = 0, any = 0;

    for (uint32_t m = v->born; m < nmemb; m++)
        v->caught[m / 64] |= UINT64_C(1) << (m % 64);
    if (nmemb > v->born)
        v->born = nmemb;
    memset(v->reads, 0, RCPT_WORDS(nmemb) * 8);
    for (uint32_t wd = 0; wd < RCPT_WORDS(nmemb); wd++) {
        uint64_t mask =
            wd == nmemb / 64 ? (UINT64_C(1) << (nmemb % 64)) - 1 : ~UINT64_C(0);
        uint64_t quit = wd < v->qwords ? v->quitset[wd] & mask : 0;
        uint64_t snd = 0, nr, rd, c, fb, done, qb;

        if (mi->sender != RCPT_NOSENDER && mi->sender / 64 == wd)
            snd = UINT64_C(1) << (mi->sender % 64) & mask & ~quit;
        nr = quit | snd;
        if (bits != NULL && (~bits[wd] & (nr | ~mask)) != 0)
            return 1;
        rd = bits != NULL ? bits[wd] & mask & ~nr : mask & ~nr;
        unread |= mask & ~nr & ~rd;
        c = v->caught[wd] & mask;
        /* caught up, a recipient, unread: its watermark stays here */
        fb = c & ~nr & ~rd;
        for (uint64_t x = fb; x != 0; x &= x - 1)
            l->w[wd * 64 + (uint32_t)__builtin_ctzll(x)] = n;
        v->caught[wd] &= ~fb;
        /* behind: its reads are out of order, its own message done by the
         * record's mark; a run of messages it does not receive (it had
         * quit) is a gap */
        done = rd & ~c;
        any |= done;
        mi->sender_done |= (snd & ~c) != 0;
        for (uint32_t k = 0; k < 8; k++)
            v->reads[wd * 8 + k] |= (uint8_t)(done >> (8 * k));
        qb = quit & ~c;
        for (uint64_t x = qb & ~v->run[wd]; x != 0; x &= x - 1)
            v->from[wd * 64 + (uint32_t)__builtin_ctzll(x)] = n;
        for (uint64_t x = v->run[wd] & ~qb & mask; x != 0; x &= x - 1) {
            uint32_t m = wd * 64 + (uint32_t)__builtin_ctzll(x);

            if (add_gap(l, m, v->from[m], n) != 0)
                return -1;
        }
        v->run[wd] = qb;
    }
    if (bits != NULL && unread == 0)
        return 1;
    return any != 0 ? 2 : 0;
}

/* Room for n words in l->words, never NULL afterwards. */
static int words_room(struct load *l, uint32_t n)
{
    if (n > l->cap || l->words == NULL) {
        uint32_t cap = n > 64 ? n : 64;
        uint64_t *w = realloc(l->words, cap * sizeof(*w));

        if (w == NULL)
            return snap_fail(l->r, "out of memory");
        l->words = w;
        l->cap = cap;
    }
    return 0;
}

static int load_msg(struct load *l, uint8_t tag)
{
    struct rcpt_msg_info mi = {0, 0, 0, 0, false, NULL};
    uint64_t d, sender;
    int rc;

    if (snap_get_u64(l->r, &mi.msgid) != 0 || snap_get_u32(l->r, &mi.ts) != 0 ||
        snap_get_varint(l->r, l->nmap - l->nmemb, &d) != 0 ||
        snap_get_varint(l->r,
                        l->format == 1 ? l->nmemb + d : (l->nmemb + d) * 2 + 1,
                        &sender) != 0)
        return -1;
    mi.nmemb = l->nmemb + (uint32_t)d;
    if (l->format == 2) {
        mi.sender_done = sender & 1;
        sender >>= 1;
    }
    mi.sender = sender == 0 ? RCPT_NOSENDER : (uint32_t)sender - 1;
    if (tag == ITEM_V1_OPEN && read_words(l, RCPT_WORDS(mi.nmemb)) != 0)
        return -1;
    if (tag == ITEM_MSG_READS) {
        if (words_room(l, RCPT_WORDS(mi.nmemb)) != 0 ||
            snap_get(l->r, l->words, RCPT_BYTES(mi.nmemb)) != 0)
            return -1;
        mi.reads = (const uint8_t *)l->words;
    }
    if (l->format == 1) {
        rc = v1_message(l, &mi, tag == ITEM_V1_OPEN ? l->words : NULL);
        if (rc == -1)
            return -1;
        mi.reads = rc == 2 ? l->v1.reads : NULL;
        rc = rc == 1 ? 1 : rcpt_restore_msg(l->s, l->gid, &mi);
    } else {
        rc = rcpt_restore_msg(l->s, l->gid, &mi);
    }
    if (rc != RCPT_OK)
        return snap_fail(l->r, "group %llu message %llu: %s",
                         (unsigned long long)l->gid,
                         (unsigned long long)mi.msgid, why(rc));
    l->nmemb = mi.nmemb;
    l->nmsgs++;
    l->filled = true;
    return 0;
}

/* Format 2's marks item: every member's, then the gaps. */
static int load_marks(struct load *l)
{
    uint32_t n = l->nmsgs, prev = 0;
    uint64_t ngaps, v, q, mapid, from, len;

    if (snap_get_varint(l->r, UINT32_MAX, &ngaps) != 0)
        return -1;
    for (uint32_t m = 0; m < l->nmap; m++) {
        if (snap_get_varint(l->r, n + 1ull, &v) != 0)
            return -1;
        l->w[m] = v == 0 ? RCPT_PARKED : (uint32_t)v - 1;
        l->qfrom[m] = RCPT_NOPOS;
        if (v == 0)
            continue;
        if (snap_get_varint(l->r, n + 1ull, &q) != 0)
            return -1;
        l->qfrom[m] = q == 0 ? RCPT_NOPOS : (uint32_t)q - 1;
    }
    /* gaps as they decode: the count is only a count */
    for (uint64_t i = 0; i < ngaps; i++) {
        if (snap_get_varint(l->r, l->nmap - prev - 1ull, &mapid) != 0 ||
            snap_get_varint(l->r, n, &from) != 0 ||
            snap_get_varint(l->r, n - from, &len) != 0 ||
            add_gap(l, prev + (uint32_t)mapid, (uint32_t)from,
                    (uint32_t)(from + len)) != 0)
            return -1;
        prev += (uint32_t)mapid;
    }
    l->marked = true;
    return set_marks(l);
}

static int load_item(struct load *l, uint8_t tag)
{
    bool v1 = tag == ITEM_V1_READ || tag == ITEM_V1_OPEN;
    bool v2 = tag == ITEM_MSG || tag == ITEM_MSG_READS || tag == ITEM_MARKS;

    if (tag == ITEM_GROUP)
        return end_group(l) != 0 ? -1 : load_group(l);
    if (tag < ITEM_GROUP || tag > ITEM_MARKS || (l->format == 1 && v2) ||
        (l->format == 2 && v1))
        return snap_fail(l->r, "unknown item %u in format %d", tag, l->format);
    if (!l->in_group)
        return snap_fail(l->r, "item %u before any group", tag);
    if (l->marked)
        return snap_fail(l->r, "item %u after group %llu's marks", tag,
                         (unsigned long long)l->gid);
    if (tag == ITEM_QUIT)
        return load_epoch(l);
    if (tag == ITEM_MARKS)
        return load_marks(l);
    return load_msg(l, tag);
}

int sec_rcpt_load(struct db *db, struct snap_reader *r)
{
    struct load l;
    uint8_t tag, version;
    int rc = 0;

    memset(&l, 0, sizeof(l));
    l.s = db->rcpt;
    l.r = r;
    l.format = 1;
    for (bool first = true; rc == 0 && snap_more(r); first = false) {
        if (snap_get_u8(r, &tag) != 0) {
            rc = -1;
        } else if (tag == ITEM_FORMAT && first) {
            /* the format item opens a format-2 section */
            if (snap_get_u8(r, &version) != 0)
                rc = -1;
            else if (version != FORMAT)
                rc = snap_fail(r, "format %u (this unreadd reads 1 and 2)",
                               version);
            l.format = FORMAT;
        } else {
            rc = load_item(&l, tag);
        }
    }
    if (rc == 0)
        rc = end_group(&l);
    group_buffers_free(&l);
    free(l.words);
    free(l.gaps);
    return rc;
}
