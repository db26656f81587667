/*
 * packmap.c - see packmap.h. A map value with bit 0 set is a one-pair list
 * (the pair itself); otherwise it points to a record of n >= 2 pairs. That
 * form is canonical (packmap_audit checks it).
 *
 * A change rewrites one block (two when a delete merges neighbours), never
 * the whole list, except packmap_set_all and packmap_add_many, which are
 * O(n) anyway. The new block is encoded in a buffer, then spliced into
 * the record: records have exact sizes, and a change moves
 * the bytes after its block, so a realloc per change adds little.
 *
 * Splits: a block that grows past PACKMAP_BLOCK splits in halves, except
 * at either end of the list, where the new pair starts a block of its own:
 * lists built by appends (followees named in index order) keep full
 * blocks. Merges: a delete that leaves a block under a quarter full merges
 * it with a neighbour when both fit in three quarters of a block (room for
 * inserts before the next split) taking no more bytes than the two did, so
 * lists that shrink do not keep a block per pair left.
 */
#include "packmap.h"

#include "u64map.h"

#include <string.h>

#define HDR 8  /* u32 n, u32 nb */
#define IDX 8  /* per block: u32 first, u32 off */
#define BHDR 7 /* per block: u32 base, u8 k - 1, u8 wo, u8 wv */
#define PAD 8  /* after the blocks: an 8-byte load at any pair */

_Static_assert(PACKMAP_BLOCK >= 2 && PACKMAP_BLOCK <= 256, "k - 1 is one byte");
_Static_assert((uint64_t)PACKMAP_MAX_PAIRS * 8 +
                       PACKMAP_MAX_PAIRS / PACKMAP_BLOCK * (BHDR + IDX) <
                   UINT32_MAX,
               "block offsets are u32");

const uint8_t packmap_zero8[8];

struct pm_idx {
    uint32_t first; /* the block's first key */
    uint32_t off;   /* where its bytes start, from the end of the index */
};

struct pm_rec {
    uint32_t n;  /* pairs, >= 2 */
    uint32_t nb; /* blocks, >= 1 */
    struct pm_idx idx[];
    /* then the blocks */
};

_Static_assert(sizeof(struct pm_rec) == HDR && sizeof(struct pm_idx) == IDX,
               "record layout");

struct packmap {
    struct u64map *map;
    struct mem_acct mem; /* the map and the records */
    size_t entries;
};

/* A block's layout: its first key (at most its first pair's), base
 * (at most its smallest value), pairs, widths and bytes per pair. */
struct pm_layout {
    uint32_t first, base, k;
    unsigned wo, wv, size;
};

/* ---- Values, records and blocks ----------------------------------------- */

static inline bool is_inline(uint64_t w)
{
    return w & 1;
}

static inline uint64_t inline_make(uint32_t key, uint32_t val)
{
    return (uint64_t)key << (64 - PACKMAP_KEY_BITS) | (uint64_t)val << 1 | 1;
}

static inline uint32_t inline_key(uint64_t w)
{
    return (uint32_t)(w >> (64 - PACKMAP_KEY_BITS));
}

static inline uint32_t inline_val(uint64_t w)
{
    return (uint32_t)(w >> 1);
}

static inline struct pm_rec *rec_of(uint64_t w)
{
    return (struct pm_rec *)(uintptr_t)w;
}

static inline uint8_t *rec_data(const struct pm_rec *r)
{
    return (uint8_t *)&r->idx[r->nb];
}

static inline uint64_t mask(unsigned bits)
{
    return bits ? UINT64_MAX >> (64 - bits) : 0;
}

static inline unsigned bits_for(uint32_t x)
{
    return x ? 32 - (unsigned)__builtin_clz(x) : 0;
}

/* Bytes per pair of a block with these widths. */
static inline unsigned pair_size(unsigned wo, unsigned wv)
{
    return (wo + wv + 7) / 8;
}

/* Bytes of the block starting at p. */
static inline size_t blk_len(const uint8_t *p)
{
    return BHDR + ((size_t)p[4] + 1) * pair_size(p[5], p[6]);
}

static inline uint32_t blk_k(const struct pm_rec *r, uint32_t j)
{
    return (uint32_t)rec_data(r)[r->idx[j].off + 4] + 1;
}

static size_t rec_dlen(const struct pm_rec *r)
{
    uint32_t off = r->idx[r->nb - 1].off;

    return off + blk_len(rec_data(r) + off);
}

static inline size_t rec_bytes(uint32_t nb, size_t dlen)
{
    return HDR + (size_t)nb * IDX + dlen + PAD;
}

static size_t rec_size(const struct pm_rec *r)
{
    return rec_bytes(r->nb, rec_dlen(r));
}

static void blk_open(struct packmap_blk *b, const struct pm_rec *r, uint32_t j)
{
    const uint8_t *p = rec_data(r) + r->idx[j].off;

    memcpy(&b->base, p, sizeof(b->base));
    b->k = (uint32_t)p[4] + 1;
    b->wo = p[5];
    b->size = pair_size(p[5], p[6]);
    b->mo = mask(p[5]);
    b->mv = mask(p[6]);
    b->first = r->idx[j].first;
    b->bits = p + BHDR;
}

/* Block j's pairs into keys[] and vals[]; their number. */
static uint32_t blk_decode(const struct pm_rec *r, uint32_t j, uint32_t *keys,
                           uint32_t *vals)
{
    struct packmap_blk b;

    blk_open(&b, r, j);
    for (uint32_t i = 0; i < b.k; i++)
        packmap_blk_pair(&b, i, &keys[i], &vals[i]);
    return b.k;
}

/* The block that holds key if any pair does: the last whose first key is
 * <= key (block 0 when there is none). */
static uint32_t find_blk(const struct pm_rec *r, uint32_t key)
{
    uint32_t lo = 0, hi = r->nb;

    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;

        if (r->idx[mid].first <= key)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* The first pair of block b whose key is >= key (b->k: none). */
static uint32_t blk_lower(const struct packmap_blk *b, uint32_t key)
{
    uint32_t lo = 0, hi = b->k, k, v;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;

        packmap_blk_pair(b, mid, &k, &v);
        if (k < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The narrowest layout of the k >= 1 pairs (keys ascending). */
static void plan(const uint32_t *keys, const uint32_t *vals, uint32_t k,
                 struct pm_layout *l)
{
    uint32_t lo = vals[0], hi = vals[0];

    for (uint32_t i = 1; i < k; i++) {
        lo = vals[i] < lo ? vals[i] : lo;
        hi = vals[i] > hi ? vals[i] : hi;
    }
    l->first = keys[0];
    l->base = lo;
    l->k = k;
    l->wo = bits_for(keys[k - 1] - keys[0]);
    l->wv = bits_for(hi - lo);
    l->size = pair_size(l->wo, l->wv);
}

static inline size_t layout_bytes(const struct pm_layout *l)
{
    return BHDR + (size_t)l->k * l->size;
}

static void head_write(uint8_t *dst, const struct pm_layout *l)
{
    memcpy(dst, &l->base, sizeof(l->base));
    dst[4] = (uint8_t)(l->k - 1);
    dst[5] = (uint8_t)l->wo;
    dst[6] = (uint8_t)l->wv;
}

static inline void st_le64(uint8_t *p, uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    memcpy(p, &v, sizeof(v));
}

/*
 * Writes the block of the pairs laid out as l at dst (layout_bytes). The
 * pairs go to a buffer first, each one 8-byte store whose bytes past the
 * pair the next store overwrites, then the block's bytes to dst: nothing
 * after the block is touched. (ORing into bytes just stored instead would
 * wait on store forwarding at every pair.)
 */
static void blk_write(uint8_t *dst, const struct pm_layout *l,
                      const uint32_t *keys, const uint32_t *vals)
{
    uint8_t buf[PACKMAP_BLOCK * 8 + 8], *o = buf;

    head_write(dst, l);
    for (uint32_t i = 0; i < l->k; i++, o += l->size)
        st_le64(o, (keys[i] - l->first) | (uint64_t)(vals[i] - l->base)
                                              << l->wo);
    memcpy(dst + BHDR, buf, (size_t)l->k * l->size);
}

static void rec_free(struct packmap *m, struct pm_rec *r)
{
    mem_free(&m->mem, r, rec_size(r));
}

/*
 * A record of the n >= 2 pairs (keys strictly ascending) in full blocks,
 * or NULL on allocation failure. Two passes over the pairs: the sizes,
 * then the bytes.
 */
static struct pm_rec *rec_build(struct packmap *m, uint32_t n,
                                const uint32_t *keys, const uint32_t *vals)
{
    uint32_t nb = (n + PACKMAP_BLOCK - 1) / PACKMAP_BLOCK;
    struct pm_layout l;
    struct pm_rec *r;
    size_t dlen = 0;
    uint8_t *data;

    for (uint32_t at = 0; at < n; at += PACKMAP_BLOCK) {
        uint32_t k = n - at < PACKMAP_BLOCK ? n - at : PACKMAP_BLOCK;

        plan(keys + at, vals + at, k, &l);
        dlen += layout_bytes(&l);
    }
    r = mem_alloc(&m->mem, rec_bytes(nb, dlen));
    if (r == NULL)
        return NULL;
    r->n = n;
    r->nb = nb;
    data = rec_data(r);
    memset(data + dlen, 0, PAD);
    dlen = 0;
    for (uint32_t j = 0, at = 0; j < nb; j++, at += PACKMAP_BLOCK) {
        uint32_t k = n - at < PACKMAP_BLOCK ? n - at : PACKMAP_BLOCK;

        plan(keys + at, vals + at, k, &l);
        r->idx[j].first = l.first;
        r->idx[j].off = (uint32_t)dlen;
        blk_write(data + dlen, &l, keys + at, vals + at);
        dlen += layout_bytes(&l);
    }
    return r;
}

/* ---- Splicing blocks ------------------------------------------------------
 * A change encodes the 0, 1 or 2 blocks that replace the ones it touches
 * in buffers, then splices them into the record. */

/* A block encoded, ready to be put in place. The 8 spare bytes take the
 * last pair's 8-byte store. */
struct pm_enc {
    uint8_t bytes[BHDR + PACKMAP_BLOCK * 8 + 8];
    size_t len;
    uint32_t first;
};

/* The k >= 1 pairs (keys ascending) as one block in e. */
static void enc_pairs(struct pm_enc *e, const uint32_t *keys,
                      const uint32_t *vals, uint32_t k)
{
    struct pm_layout l;

    plan(keys, vals, k, &l);
    blk_write(e->bytes, &l, keys, vals);
    e->len = layout_bytes(&l);
    e->first = l.first;
}

/*
 * Replaces blocks [j, j + mold) of the record at *ref with the np blocks
 * of e, the record then holding n >= 2 pairs. 0, or -1 on allocation
 * failure with nothing changed. Never allocates when neither the blocks
 * nor the bytes grow (deletes): everything after the change moves left in
 * place, then the block shrinks. With as many blocks and more bytes (an
 * insert), the record grows in place (realloc) and the bytes after the
 * change move right. Otherwise (a split) the record is copied into a new
 * one.
 */
static int splice(struct packmap *m, uint64_t *ref, uint32_t j, uint32_t mold,
                  const struct pm_enc *e, uint32_t np, uint32_t n)
{
    struct pm_rec *r = rec_of(*ref), *r2;
    uint32_t nb = r->nb, nb2 = nb - mold + np, after = nb - j - mold;
    uint8_t *data = rec_data(r), *data2;
    size_t dlen = rec_dlen(r), size = rec_bytes(nb, dlen), bytes = 0;
    size_t lo = r->idx[j].off, hi = j + mold < nb ? r->idx[j + mold].off : dlen;
    size_t dlen2, size2;
    uint32_t shift;

    for (uint32_t p = 0; p < np; p++)
        bytes += e[p].len;
    dlen2 = dlen - (hi - lo) + bytes;
    size2 = rec_bytes(nb2, dlen2);
    shift = (uint32_t)(bytes - (hi - lo)); /* mod 2^32 */
    if (nb2 <= nb && size2 <= size) {
        /* The index first: the bytes move into its freed entries. */
        memmove(&r->idx[j + np], &r->idx[j + mold], after * IDX);
        r->nb = nb2;
        data2 = rec_data(r);
        memmove(data2, data, lo);
        memmove(data2 + lo + bytes, data + hi, dlen - hi + PAD);
        /* A shrink: never fails (mem.h); the block keeps the bytes. */
        r2 = size2 < size ? mem_realloc(&m->mem, r, size, size2) : r;
        data2 = rec_data(r2);
    } else if (nb2 == nb) {
        r2 = mem_realloc(&m->mem, r, size, size2);
        if (r2 == NULL)
            return -1;
        data2 = rec_data(r2);
        memmove(data2 + lo + bytes, data2 + hi, dlen - hi + PAD);
    } else {
        r2 = mem_alloc(&m->mem, size2);
        if (r2 == NULL)
            return -1;
        r2->nb = nb2;
        data2 = rec_data(r2);
        memcpy(r2->idx, r->idx, j * IDX);
        memcpy(&r2->idx[j + np], &r->idx[j + mold], after * IDX);
        memcpy(data2, data, lo);
        memcpy(data2 + lo + bytes, data + hi, dlen - hi + PAD);
        rec_free(m, r);
    }
    for (uint32_t p = 0; p < np; p++, j++) {
        r2->idx[j].first = e[p].first;
        r2->idx[j].off = (uint32_t)lo;
        memcpy(data2 + lo, e[p].bytes, e[p].len);
        lo += e[p].len;
    }
    for (; j < nb2; j++)
        r2->idx[j].off += shift;
    r2->n = n;
    *ref = (uint64_t)(uintptr_t)r2;
    return 0;
}

/* ---- Changing one block ---------------------------------------------------
 * An insert or a delete that keeps a block whole does not decode it into
 * arrays: it works out the block's new layout from its header, its last
 * key and (when the smallest or largest value may change) one pass over
 * its values, then recodes the pairs straight into the new layout, one
 * pass. Splits and merges go through arrays (enc_pairs). */

static inline unsigned blk_wv(const struct packmap_blk *b)
{
    return (unsigned)__builtin_popcountll(b->mv);
}

static inline uint32_t pair_key(const struct packmap_blk *b, uint32_t i)
{
    uint32_t key, val;

    packmap_blk_pair(b, i, &key, &val);
    return key;
}

/* The largest value of the block. */
static uint32_t blk_max(const struct packmap_blk *b)
{
    const uint8_t *p = b->bits;
    uint32_t h = 0;

    for (uint32_t i = 0; i < b->k; i++, p += b->size) {
        uint32_t d = (uint32_t)((packmap_le64(p) >> b->wo) & b->mv);

        h = d > h ? d : h;
    }
    return b->base + h;
}

static void enc_head(struct pm_enc *e, const struct pm_layout *l)
{
    head_write(e->bytes, l);
    e->first = l->first;
    e->len = layout_bytes(l);
}

/* Pairs [from, to) of b at o in layout l; the end. */
static uint8_t *recode(uint8_t *o, const struct packmap_blk *b, uint32_t from,
                       uint32_t to, const struct pm_layout *l)
{
    const uint8_t *p = b->bits + (size_t)from * b->size;
    uint32_t dk = b->first - l->first, dv = b->base - l->base; /* mod 2^32 */

    if (from >= to)
        return o;
    if (dk == 0 && dv == 0 && l->wo == b->wo && l->size == b->size) {
        memcpy(o, p, (size_t)(to - from) * b->size);
        return o + (size_t)(to - from) * b->size;
    }
    for (uint32_t i = from; i < to; i++, p += b->size, o += l->size) {
        uint64_t v = packmap_le64(p);
        uint32_t off = (uint32_t)(v & b->mo) + dk;
        uint32_t d = (uint32_t)((v >> b->wo) & b->mv) + dv;

        st_le64(o, off | (uint64_t)d << l->wo);
    }
    return o;
}

/* Whether (key, val) fits in block b's layout. */
static inline bool blk_fits(const struct packmap_blk *b, uint32_t key,
                            uint32_t val)
{
    return key >= b->first && key - b->first <= b->mo && val >= b->base &&
           val - b->base <= b->mv;
}

/*
 * Block b with (key, val), which does not fit its layout, inserted at pair
 * at (b->k < PACKMAP_BLOCK), in the narrowest layout that holds the
 * block's keys and values with the new pair's.
 */
static void enc_insert(struct pm_enc *e, const struct packmap_blk *b,
                       uint32_t at, uint32_t key, uint32_t val)
{
    uint32_t first = pair_key(b, 0), last = pair_key(b, b->k - 1);
    struct pm_layout l = {b->first, b->base, b->k + 1, 0, blk_wv(b), 0};
    uint8_t *o;

    l.first = key < first ? key : first;
    l.wo = bits_for((key > last ? key : last) - l.first);
    if (val >= b->base) {
        /* The largest value stays below base + 2^wv. */
        l.wv = bits_for(val - b->base);
        l.wv = l.wv > blk_wv(b) ? l.wv : blk_wv(b);
    } else {
        l.base = val;
        l.wv = bits_for(blk_max(b) - val);
    }
    l.size = pair_size(l.wo, l.wv);
    enc_head(e, &l);
    o = recode(e->bytes + BHDR, b, 0, at, &l);
    st_le64(o, (key - l.first) | (uint64_t)(val - l.base) << l.wo);
    recode(o + l.size, b, at, b->k, &l);
}

/*
 * (key, val), which fits block j's layout b, inserted at pair at of the
 * record at *ref, in place: the record grows by one pair and the bytes
 * after it move right. 0, or -1 on allocation failure (nothing changed).
 */
static int pair_insert(struct packmap *m, uint64_t *ref, uint32_t j,
                       const struct packmap_blk *b, uint32_t at, uint32_t key,
                       uint32_t val)
{
    struct pm_rec *r = rec_of(*ref);
    size_t dlen = rec_dlen(r), size = rec_bytes(r->nb, dlen);
    size_t pos = r->idx[j].off + BHDR + (size_t)at * b->size;
    uint8_t pair[8], *data;

    r = mem_realloc(&m->mem, r, size, size + b->size);
    if (r == NULL)
        return -1;
    data = rec_data(r);
    memmove(data + pos + b->size, data + pos, dlen - pos + PAD);
    st_le64(pair, (key - b->first) | (uint64_t)(val - b->base) << b->wo);
    memcpy(data + pos, pair, b->size);
    data[r->idx[j].off + 4]++; /* k - 1 */
    for (uint32_t t = j + 1; t < r->nb; t++)
        r->idx[t].off += b->size;
    r->n++;
    *ref = (uint64_t)(uintptr_t)r;
    return 0;
}

/* Pair at of block j (b, k >= 2) removed from the record at *ref, in
 * place: the bytes after it move left, the record shrinks. Never fails. */
static void pair_remove(struct packmap *m, uint64_t *ref, uint32_t j,
                        const struct packmap_blk *b, uint32_t at)
{
    struct pm_rec *r = rec_of(*ref);
    size_t dlen = rec_dlen(r), size = rec_bytes(r->nb, dlen);
    size_t pos = r->idx[j].off + BHDR + (size_t)at * b->size;
    uint8_t *data = rec_data(r);

    memmove(data + pos, data + pos + b->size, dlen - pos - b->size + PAD);
    data[r->idx[j].off + 4]--; /* k - 1 */
    for (uint32_t t = j + 1; t < r->nb; t++)
        r->idx[t].off -= b->size;
    r->n--;
    /* A shrink: never fails (mem.h). */
    r = mem_realloc(&m->mem, r, size, size - b->size);
    *ref = (uint64_t)(uintptr_t)r;
}

/* ---- The map ------------------------------------------------------------- */

struct u64map *packmap_user_map(const struct packmap *m)
{
    return m->map;
}

struct packmap *packmap_create(struct mem_acct *owner)
{
    struct packmap *m = mem_zalloc(owner, sizeof(*m));

    if (m == NULL)
        return NULL;
    mem_acct_init(&m->mem, owner);
    m->map = u64map_create(&m->mem);
    if (m->map == NULL) {
        mem_free(owner, m, sizeof(*m));
        return NULL;
    }
    return m;
}

static void free_one(void *rec, void *ctx)
{
    rec_free(ctx, rec);
}

void packmap_destroy(struct packmap *m)
{
    if (m == NULL)
        return;
    u64map_each_rec(m->map, free_one, m);
    u64map_destroy(m->map);
    mem_free(m->mem.up, m, sizeof(*m));
}

void packmap_prefetch(const struct packmap *m, uint64_t uid, int stage)
{
    u64map_prefetch_rec(m->map, uid, stage);
}

uint32_t packmap_count(const struct packmap *m, uint64_t uid)
{
    uint64_t w = u64map_get(m->map, uid);

    return w == 0 ? 0 : is_inline(w) ? 1 : rec_of(w)->n;
}

bool packmap_lookup(const struct packmap *m, uint64_t uid, uint32_t key,
                    uint32_t *val)
{
    uint64_t w = u64map_get(m->map, uid);
    struct packmap_blk b;
    uint32_t i, k;

    if (w == 0)
        return false;
    if (is_inline(w)) {
        *val = inline_val(w);
        return inline_key(w) == key;
    }
    blk_open(&b, rec_of(w), find_blk(rec_of(w), key));
    i = blk_lower(&b, key);
    if (i == b.k)
        return false;
    packmap_blk_pair(&b, i, &k, val);
    return k == key;
}

int packmap_add(struct packmap *m, uint64_t uid, uint32_t key, uint32_t val)
{
    uint32_t keys[PACKMAP_BLOCK + 1], vals[PACKMAP_BLOCK + 1], j, k, at, cut;
    uint64_t *ref = u64map_ref(m->map, uid);
    struct pm_enc e[2];
    struct packmap_blk b;
    struct pm_rec *r;

    if (ref == NULL) {
        if (u64map_put(m->map, uid, inline_make(key, val)) != 0)
            return -1;
        m->entries++;
        return 0;
    }
    if (is_inline(*ref)) {
        if (inline_key(*ref) == key)
            return 1;
        at = key < inline_key(*ref); /* the old pair's place */
        keys[at] = inline_key(*ref);
        vals[at] = inline_val(*ref);
        keys[1 - at] = key;
        vals[1 - at] = val;
        r = rec_build(m, 2, keys, vals);
        if (r == NULL)
            return -1;
        *ref = (uint64_t)(uintptr_t)r;
        m->entries++;
        return 0;
    }
    r = rec_of(*ref);
    j = find_blk(r, key);
    blk_open(&b, r, j);
    at = blk_lower(&b, key);
    if (at < b.k && pair_key(&b, at) == key)
        return 1;
    if (b.k < PACKMAP_BLOCK) {
        if (blk_fits(&b, key, val)) {
            if (pair_insert(m, ref, j, &b, at, key, val) != 0)
                return -1;
        } else {
            enc_insert(&e[0], &b, at, key, val);
            if (splice(m, ref, j, 1, e, 1, r->n + 1) != 0)
                return -1;
        }
        m->entries++;
        return 0;
    }
    /* A split: in halves, but a new first or last pair of the list starts
     * a block of its own. */
    k = blk_decode(r, j, keys, vals);
    memmove(&keys[at + 1], &keys[at], (k - at) * sizeof(keys[0]));
    memmove(&vals[at + 1], &vals[at], (k - at) * sizeof(vals[0]));
    keys[at] = key;
    vals[at] = val;
    k++;
    cut = j == r->nb - 1 && at == k - 1 ? k - 1 : j == 0 && at == 0 ? 1 : k / 2;
    enc_pairs(&e[0], keys, vals, cut);
    enc_pairs(&e[1], keys + cut, vals + cut, k - cut);
    if (splice(m, ref, j, 1, e, 2, r->n + 1) != 0)
        return -1;
    m->entries++;
    return 0;
}

/*
 * Block j of r without pair at (k - 1 < PACKMAP_BLOCK / 4 pairs left)
 * merged with a neighbour into e, when both fit in three quarters of a
 * block (room for inserts before the next split) and the one block takes
 * no more bytes than the two (rest: the bytes of block j without the
 * pair); the first block of the two, or UINT32_MAX.
 */
static uint32_t try_merge(const struct pm_rec *r, uint32_t j, uint32_t at,
                          size_t rest, struct pm_enc *e)
{
    uint32_t keys[PACKMAP_BLOCK], vals[PACKMAP_BLOCK], k = blk_k(r, j) - 1;

    for (int side = 1; side >= -1; side -= 2) {
        uint32_t nj = j + (uint32_t)side, first = side > 0 ? j : nj, nk;

        if ((side < 0 && j == 0) || (side > 0 && j + 1 == r->nb))
            continue;
        nk = blk_k(r, nj);
        if (k + nk > PACKMAP_BLOCK * 3 / 4)
            continue;
        blk_decode(r, first, keys, vals);
        blk_decode(r, first + 1, keys + blk_k(r, first),
                   vals + blk_k(r, first));
        at += side > 0 ? 0 : nk;
        memmove(&keys[at], &keys[at + 1], (k + nk - at) * sizeof(keys[0]));
        memmove(&vals[at], &vals[at + 1], (k + nk - at) * sizeof(vals[0]));
        enc_pairs(e, keys, vals, k + nk);
        if (e->len <= rest + blk_len(rec_data(r) + r->idx[nj].off) + IDX)
            return first;
        at -= side > 0 ? 0 : nk;
    }
    return UINT32_MAX;
}

bool packmap_del(struct packmap *m, uint64_t uid, uint32_t key)
{
    uint64_t *ref = u64map_ref(m->map, uid);
    struct packmap_blk b;
    struct pm_enc e; /* merged */
    struct pm_rec *r;
    uint32_t j, at, other, val;

    if (ref == NULL)
        return false;
    if (is_inline(*ref)) {
        if (inline_key(*ref) != key)
            return false;
        u64map_del(m->map, uid);
        m->entries--;
        return true;
    }
    r = rec_of(*ref);
    j = find_blk(r, key);
    blk_open(&b, r, j);
    at = blk_lower(&b, key);
    if (at == b.k || pair_key(&b, at) != key)
        return false;
    m->entries--;
    if (r->n == 2) {
        /* One pair left: inline again. */
        if (b.k == 1)
            blk_open(&b, r, 1 - j);
        packmap_blk_pair(&b, b.k == 1 ? 0 : 1 - at, &other, &val);
        rec_free(m, r);
        *ref = inline_make(other, val);
        return true;
    }
    /* Never allocates: fewer blocks and no more bytes (packmap.h). */
    if (b.k == 1) {
        splice(m, ref, j, 1, NULL, 0, r->n - 1);
        return true;
    }
    /* A block down to a quarter merges with a neighbour when that takes
     * no more bytes; else, and for larger blocks, the pair's bytes go. */
    if (b.k - 1 < PACKMAP_BLOCK / 4) {
        other = try_merge(r, j, at, BHDR + (size_t)(b.k - 1) * b.size, &e);
        if (other != UINT32_MAX) {
            splice(m, ref, other, 2, &e, 1, r->n - 1);
            return true;
        }
    }
    pair_remove(m, ref, j, &b, at);
    return true;
}

/* Sizes (pass 0) or writes into r2 (pass 1) the blocks of r with fn's
 * values; the data bytes. */
static size_t set_all_pass(const struct pm_rec *r, struct pm_rec *r2,
                           packmap_val_fn fn, void *ctx)
{
    uint32_t keys[PACKMAP_BLOCK], vals[PACKMAP_BLOCK], k;
    struct pm_layout l;
    size_t dlen = 0;

    for (uint32_t j = 0; j < r->nb; j++) {
        k = blk_decode(r, j, keys, vals);
        for (uint32_t i = 0; i < k; i++)
            vals[i] = fn(keys[i], ctx);
        plan(keys, vals, k, &l);
        if (r2 != NULL) {
            r2->idx[j].first = l.first;
            r2->idx[j].off = (uint32_t)dlen;
            blk_write(rec_data(r2) + dlen, &l, keys, vals);
        }
        dlen += layout_bytes(&l);
    }
    return dlen;
}

int packmap_set_all(struct packmap *m, uint64_t uid, packmap_val_fn fn,
                    void *ctx)
{
    uint64_t *ref = u64map_ref(m->map, uid);
    struct pm_rec *r, *r2;
    size_t dlen;

    if (ref == NULL)
        return 0;
    if (is_inline(*ref)) {
        *ref = inline_make(inline_key(*ref), fn(inline_key(*ref), ctx));
        return 0;
    }
    r = rec_of(*ref);
    dlen = set_all_pass(r, NULL, fn, ctx);
    r2 = mem_alloc(&m->mem, rec_bytes(r->nb, dlen));
    if (r2 == NULL)
        return -1;
    r2->n = r->n;
    r2->nb = r->nb;
    memset(rec_data(r2) + dlen, 0, PAD);
    set_all_pass(r, r2, fn, ctx);
    rec_free(m, r);
    *ref = (uint64_t)(uintptr_t)r2;
    return 0;
}

/* Sets uid's list to the n >= 1 pairs, replacing *ref's (ref NULL: uid has
 * none). 0 or -1 (nothing changed). */
static int set_list(struct packmap *m, uint64_t uid, uint64_t *ref, uint32_t n,
                    const uint32_t *keys, const uint32_t *vals)
{
    struct pm_rec *r = NULL;
    uint64_t w = inline_make(keys[0], vals[0]);

    if (n > 1) {
        r = rec_build(m, n, keys, vals);
        if (r == NULL)
            return -1;
        w = (uint64_t)(uintptr_t)r;
    }
    if (ref == NULL) {
        if (u64map_put(m->map, uid, w) != 0) {
            if (r != NULL)
                rec_free(m, r);
            return -1;
        }
        return 0;
    }
    if (!is_inline(*ref))
        rec_free(m, rec_of(*ref));
    *ref = w;
    return 0;
}

int packmap_add_many(struct packmap *m, uint64_t uid, uint32_t n,
                     const uint32_t *keys, const uint32_t *vals)
{
    struct packmap_iter it;
    uint32_t had = packmap_iter_init(m, uid, &it), total = had + n;
    uint32_t i = 0, t = 0, k = 0, v = 0;
    size_t bytes = (size_t)total * sizeof(uint32_t);
    uint32_t *mk = mem_alloc(NULL, bytes), *mv = mem_alloc(NULL, bytes);
    bool old = packmap_next(&it, &k, &v);
    int rc = -1;

    if (mk == NULL || mv == NULL)
        goto out;
    /* Merge the list with the new pairs. */
    while (old || i < n) {
        if (old && (i == n || k < keys[i])) {
            mk[t] = k;
            mv[t++] = v;
            old = packmap_next(&it, &k, &v);
        } else {
            mk[t] = keys[i];
            mv[t++] = vals[i++];
        }
    }
    rc = set_list(m, uid, had ? u64map_ref(m->map, uid) : NULL, total, mk, mv);
    if (rc == 0)
        m->entries += n;
out:
    mem_free(NULL, mk, mk ? bytes : 0);
    mem_free(NULL, mv, mv ? bytes : 0);
    return rc;
}

int packmap_put(struct packmap *m, uint64_t uid, uint32_t n,
                const uint32_t *keys, const uint32_t *vals)
{
    if (u64map_get(m->map, uid) != 0)
        return 1;
    if (set_list(m, uid, NULL, n, keys, vals) != 0)
        return -1;
    m->entries += n;
    return 0;
}

uint32_t packmap_del_user(struct packmap *m, uint64_t uid)
{
    uint64_t w = u64map_get(m->map, uid);
    uint32_t n = 1;

    if (w == 0)
        return 0;
    if (!is_inline(w)) {
        n = rec_of(w)->n;
        rec_free(m, rec_of(w));
    }
    u64map_del(m->map, uid);
    m->entries -= n;
    return n;
}

size_t packmap_entries(const struct packmap *m)
{
    return m->entries;
}

size_t packmap_users(const struct packmap *m)
{
    return u64map_count(m->map);
}

size_t packmap_bytes(const struct packmap *m)
{
    return sizeof(*m) + m->mem.bytes;
}

/* ---- Reading --------------------------------------------------------------
 */

/* A cursor at the first block of the list whose map value is w; its pair
 * count. */
static uint32_t iter_at(uint64_t w, struct packmap_iter *it)
{
    it->i = 0;
    it->j = 0;
    it->rec = NULL;
    if (w == 0 || is_inline(w)) {
        it->b = (struct packmap_blk){
            packmap_zero8, inline_key(w), inline_val(w), w != 0, 0, 0, 0, 0};
        return w != 0;
    }
    it->rec = (const uint8_t *)rec_of(w);
    blk_open(&it->b, rec_of(w), 0);
    return rec_of(w)->n;
}

uint32_t packmap_iter_init(const struct packmap *m, uint64_t uid,
                           struct packmap_iter *it)
{
    return iter_at(u64map_get(m->map, uid), it);
}

void packmap_probe(const struct packmap *m, uint64_t uid, int stage,
                   struct u64map_probe *p)
{
    u64map_probe_rec(m->map, uid, stage, p);
}

uint32_t packmap_iter_probed(const struct u64map_probe *p,
                             struct packmap_iter *it)
{
    return iter_at(p->val, it);
}

bool packmap_iter_next_blk(struct packmap_iter *it)
{
    const struct pm_rec *r = (const struct pm_rec *)it->rec;

    if (r == NULL || it->j + 1 >= r->nb)
        return false;
    blk_open(&it->b, r, ++it->j);
    it->i = 0;
    return true;
}

struct scan_ctx {
    packmap_visit_fn fn;
    void *ctx;
};

static void scan_visit(uint64_t uid, uint64_t w, void *ctx)
{
    struct scan_ctx *sc = ctx;
    struct packmap_iter it;
    uint32_t n = iter_at(w, &it);

    sc->fn(uid, n, &it, sc->ctx);
}

size_t packmap_scan(const struct packmap *m, uint64_t *cursor, size_t max,
                    packmap_visit_fn fn, void *ctx)
{
    struct scan_ctx sc = {fn, ctx};

    return u64map_scan(m->map, cursor, max, scan_visit, &sc);
}

/* ---- Audit ----------------------------------------------------------------
 */

struct audit_ctx {
    packmap_check_fn check;
    const void *ctx;
    size_t bad, entries, recs; /* recs: bytes of the records */
};

/* Block j of r: its pairs in order and within the index, each within
 * its fields (nothing above them, no key or value past its range); the
 * violations. *pairs counts its pairs, *last is its last key. */
static size_t audit_blk(struct audit_ctx *ac, const struct pm_rec *r,
                        uint32_t j, uint32_t *pairs, uint32_t *last)
{
    const uint8_t *p = rec_data(r) + r->idx[j].off;
    struct packmap_blk b;
    uint64_t key, val, prev = 0;
    size_t bad = 0;

    if (p[5] > 31 || p[6] > 32)
        return 1; /* not readable */
    blk_open(&b, r, j);
    for (uint32_t i = 0; i < b.k; i++) {
        uint64_t v = packmap_le64(b.bits + (size_t)i * b.size);

        key = b.first + (v & b.mo);
        val = b.base + ((v >> b.wo) & b.mv);
        /* The pair's own bytes, above its two fields (at most 63 bits):
         * zero. */
        bad += (v & mask(8 * b.size)) >> (b.wo + blk_wv(&b)) != 0;
        bad += i > 0 && key <= prev;
        bad += key > PACKMAP_KEY_MAX || val > UINT32_MAX;
        bad += j + 1 < r->nb && key >= r->idx[j + 1].first;
        bad += ac->check((uint32_t)key, (uint32_t)val, ac->ctx);
        prev = key;
    }
    bad += b.k > PACKMAP_BLOCK;
    *pairs += b.k;
    *last = (uint32_t)prev;
    return bad;
}

static void audit_visit(uint64_t uid, uint64_t w, void *ctx)
{
    struct audit_ctx *ac = ctx;
    const struct pm_rec *r = rec_of(w);
    uint32_t pairs = 0, last = 0;
    size_t off = 0;

    (void)uid;
    if (is_inline(w)) {
        ac->bad += ac->check(inline_key(w), inline_val(w), ac->ctx);
        ac->entries++;
        return;
    }
    ac->bad += r->n < 2 || r->nb < 1 || r->nb > r->n;
    if (r->nb < 1)
        return;
    for (uint32_t j = 0; j < r->nb; j++) {
        ac->bad += r->idx[j].off != off;
        off = r->idx[j].off;
        ac->bad += j > 0 && r->idx[j].first <= last;
        ac->bad += audit_blk(ac, r, j, &pairs, &last);
        off += blk_len(rec_data(r) + off);
    }
    ac->bad += pairs != r->n;
    ac->entries += r->n;
    ac->recs += rec_size(r);
}

size_t packmap_audit(const struct packmap *m, packmap_check_fn check,
                     const void *ctx)
{
    struct audit_ctx ac = {check, ctx, 0, 0, 0};
    uint64_t cursor = 0;

    do
        u64map_scan(m->map, &cursor, SIZE_MAX, audit_visit, &ac);
    while (cursor != 0);
    return ac.bad + u64map_audit(m->map) + (ac.entries != m->entries) +
           (ac.recs + u64map_bytes(m->map) != m->mem.bytes);
}
