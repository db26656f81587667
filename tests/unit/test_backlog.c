/*
 * test_backlog.c - the replication backlog (server/backlog.h) against a
 * plain byte array, and the replication stream's records (journal.h
 * journal_item_seal, journal_item_next): what a replica accepts, what it
 * refuses.
 */
#include <stdlib.h>
#include <string.h>

#include "backlog.h"
#include "journal.h"
#include "t.h"

/* Reads everything from c to the end into out; returns the count. */
static size_t drain(const struct backlog *b, struct backlog_cursor *c,
                    char *out, size_t cap)
{
    size_t got = 0;

    for (;;) {
        const char *p;
        size_t k = backlog_peek(b, c, &p);

        if (k == 0 || got + k > cap)
            break;
        /* a few bytes at a time, to land cursors mid-block */
        size_t some = 1000 + (size_t)(t_rng() % 1000);

        if (k > some)
            k = some;
        memcpy(out + got, p, k);
        backlog_skip(c, k);
        got += k;
    }
    return got;
}

static void test_model(void)
{
    const size_t cap = 40 * BACKLOG_BLOCK;
    char *model = malloc(cap), *out = malloc(cap), *in = malloc(cap);
    struct backlog b;
    struct backlog_cursor c, r;
    uint64_t base = 1000, len = 0, read_at = base;

    for (size_t i = 0; i < cap; i++)
        in[i] = (char)t_rng();
    backlog_init(&b, base);
    CHECK(!backlog_seek(&b, base - 1, &c));
    CHECK(backlog_seek(&b, base, &c));
    CHECK(backlog_peek(&b, &c, &(const char *){NULL}) == 0);
    while (len < cap - 70000) {
        size_t n1 = (size_t)(t_rng() % 3000), n2 = (size_t)(t_rng() % 40000);

        if (t_rng() % 50 == 0)
            n2 = BACKLOG_BLOCK + 17; /* over a whole block at once */
        if (len + n1 + n2 > cap)
            break;
        CHECK(backlog_append(&b, in + len, n1, in + len + n1, n2) == 0);
        memcpy(model + len, in + len, n1 + n2);
        len += n1 + n2;
        CHECK_EQ_U64(b.end, base + len);
        /* a reader from a random point holds exactly the model's bytes */
        if (t_rng() % 4 == 0) {
            uint64_t at = b.start + t_rng() % (b.end - b.start + 1);
            size_t got;

            CHECK(backlog_seek(&b, at, &r));
            got = drain(&b, &r, out, cap);
            CHECK_EQ_U64(got, b.end - at);
            CHECK(memcmp(out, model + (at - base), got) == 0);
        }
        /* a reader that follows, its cursor kept across appends */
        if (read_at == base)
            CHECK(backlog_seek(&b, read_at, &c));
        {
            size_t got = drain(&b, &c, out, cap);
            CHECK(memcmp(out, model + (read_at - base), got) == 0);
            read_at += got;
        }
        /* trimming never passes what is asked to keep */
        if (t_rng() % 3 == 0) {
            uint64_t keep = b.start + t_rng() % (b.end - b.start + 1);
            backlog_trim(&b, keep);
            CHECK(b.start <= keep);
            CHECK(b.head != NULL && b.start == b.head->start);
            CHECK(!backlog_seek(&b, b.start - 1, &r) || b.start == base);
            CHECK(backlog_seek(&b, keep, &c));
            read_at = keep;
        }
        CHECK(backlog_histlen(&b) == b.end - b.start);
        CHECK(backlog_bytes(&b) == b.blocks * sizeof(struct backlog_block));
    }
    CHECK(!backlog_seek(&b, b.end + 1, &c));
    backlog_deinit(&b);
    CHECK(b.head == NULL && b.blocks == 0);
    free(model);
    free(out);
    free(in);
}

static void test_item(void)
{
    char payload[64], buf[256], hb[JOURNAL_REC_HDR];
    struct journal_rec rec;
    const char *why = "";
    size_t used = 0;

    /* A record: clock, then a frame header (its bytes are not parsed
     * here). */
    memset(payload, 0, sizeof(payload));
    payload[0] = 7;
    journal_item_seal(buf, payload, sizeof(payload), 500);
    memcpy(buf + JOURNAL_REC_HDR, payload, sizeof(payload));
    CHECK(journal_item_next(buf, JOURNAL_REC_HDR + sizeof(payload), 500, &used,
                            &rec, &why) == 1);
    CHECK_EQ_U64(used, JOURNAL_REC_HDR + sizeof(payload));
    CHECK(rec.seq == 500 && rec.clock_ms == 7 &&
          rec.frame == buf + JOURNAL_REC_HDR + 8 &&
          rec.frame_len == sizeof(payload) - 8);
    /* every prefix is "not yet" */
    for (size_t n = 0; n < JOURNAL_REC_HDR + sizeof(payload); n++)
        CHECK(journal_item_next(buf, n, 500, &used, &rec, &why) == 0);
    /* at another offset than the replica's: refused */
    CHECK(journal_item_next(buf, sizeof(buf), 501, &used, &rec, &why) == -1);
    /* any flipped bit: refused (never taken for another record) */
    for (size_t i = 0; i < JOURNAL_REC_HDR + sizeof(payload); i++) {
        for (int bit = 0; bit < 8; bit += 3) {
            buf[i] ^= (char)(1 << bit);
            CHECK(journal_item_next(buf, JOURNAL_REC_HDR + sizeof(payload), 500,
                                    &used, &rec, &why) != 1);
            buf[i] ^= (char)(1 << bit);
        }
    }
    /* a heartbeat: no payload, the sender's offset, at any point */
    journal_item_seal(hb, "", 0, 123456);
    CHECK(journal_item_next(hb, sizeof(hb), 9, &used, &rec, &why) == 1);
    CHECK(rec.frame == NULL && rec.seq == 123456 && used == sizeof(hb));
    /* a length under a record's least: refused */
    journal_item_seal(buf, payload, 3, 500);
    CHECK(journal_item_next(buf, sizeof(buf), 500, &used, &rec, &why) == -1);
}

int main(void)
{
    T_RUN(test_model);
    T_RUN(test_item);
    T_END();
}
