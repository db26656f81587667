/*
 * ops.c - the command table as data, and the two lookups every request goes
 * through: by name (text protocol) and by opcode (binary protocol).
 *
 * Both lookups use small index tables built once, on first use, from
 * ur_ops[]: an open-addressing hash of the upper-cased names and a two-level
 * table (family = opcode high byte, then low byte). The build is guarded by a
 * C11 atomic so that a multi-threaded client library may call the lookups
 * from any thread; on the hot path the guard is one acquire load.
 */
#include <stdatomic.h>
#include <string.h>

#include "ops.h"

const struct ur_op ur_ops[UR_OP_COUNT] = {
#define OP(id, nm, opc, mn, mx, fl, syn, rep, cst, sum)                        \
    [UR_OPI_##id] = {.name = nm,                                               \
                     .code = opc,                                              \
                     .index = UR_OPI_##id,                                     \
                     .min_args = mn,                                           \
                     .max_args = mx,                                           \
                     .flags = fl,                                              \
                     .syntax = syn,                                            \
                     .reply = rep,                                             \
                     .cost = cst,                                              \
                     .summary = sum},
#include "ops.def"
#undef OP
};

/*
 * A switch over every opcode: the compiler rejects two ops with the same
 * opcode ("duplicate case value"), so that mistake in ops.def cannot build.
 * Used once, while building the opcode table.
 */
static int op_index_of_code(uint16_t code)
{
    switch (code) {
#define OP(id, nm, opc, mn, mx, fl, syn, rep, cst, sum)                        \
    case opc:                                                                  \
        return UR_OPI_##id;
#include "ops.def"
#undef OP
    default:
        return -1;
    }
}

/* Names longer than this are not commands; they are rejected before any
 * hashing, which also bounds the work an attacker-chosen name costs. */
#define NAME_MAX_LEN 32
#define NAME_WORDS (NAME_MAX_LEN / 8)

/* Power of two, at least twice the number of ops: short probe chains. */
#define NAME_SLOTS 512
_Static_assert(UR_OP_COUNT * 2 <= NAME_SLOTS, "grow NAME_SLOTS");
_Static_assert(UR_OP_COUNT < 0xFFFF, "op index must fit in u16 slots");

/* Families that may hold ops (opcode high bytes in use), at most. */
#define CODE_FAMILIES 32

/* A name slot keeps the hash and length so that a probe compares the name
 * only on a likely match. */
struct name_slot {
    uint32_t hash;
    uint16_t op; /* op index + 1; 0 empty */
    uint16_t len;
};

static struct name_slot name_slot[NAME_SLOTS];
static uint64_t name_key[UR_OP_COUNT][NAME_WORDS]; /* see name_hash */
static uint8_t code_family[256];                   /* block + 1; 0 none */
static uint16_t code_block[CODE_FAMILIES][256];    /* op index + 1; 0 none */
static atomic_int tables_state; /* 0 not built, 1 building, 2 ready */

#define ONES 0x0101010101010101ull

/*
 * Upper-cases the ASCII letters of 8 bytes at once: a byte b < 0x80 is a
 * lower-case letter when b + (0x80 - 'a') has its top bit set and
 * b + (0x80 - 'z' - 1) has not; bytes >= 0x80 are left alone.
 */
static inline uint64_t upper8(uint64_t w)
{
    uint64_t x = w & (ONES * 0x7F);
    uint64_t lower =
        ((x + ONES * (0x80 - 'a')) ^ (x + ONES * (0x80 - 'z' - 1))) & ~w &
        (ONES * 0x80);

    return w ^ (lower >> 2);
}

/*
 * Turns a name (1..NAME_MAX_LEN bytes) into its key, (len + 7) / 8 words of
 * upper-cased bytes, the last one zero-padded, and hashes the key a word at a
 * time: a command name costs one or two loads and multiplications, with no
 * per-byte work and no library call. Keys are only compared with keys made
 * here for the same length, so the byte order inside a word does not matter.
 */
static inline uint32_t name_hash(const char *name, size_t len,
                                 uint64_t key[NAME_WORDS])
{
    const unsigned char *u = (const unsigned char *)name;
    uint64_t h = len, w;
    size_t i, k;

    for (i = 0, k = 0; i < len; i += 8, k++) {
        if (len - i >= 8) {
            memcpy(&w, u + i, 8);
        } else {
            size_t j;

            w = 0;
            for (j = 0; j < len - i; j++)
                w |= (uint64_t)u[i + j] << (8 * j);
        }
        key[k] = w = upper8(w);
        h = (h ^ w) * 0x9E3779B97F4A7C15ull;
    }
    return (uint32_t)(h >> 32);
}

static void tables_build(void)
{
    uint32_t nfam = 0;
    size_t i;

    for (i = 0; i < UR_OP_COUNT; i++) {
        const struct ur_op *op = &ur_ops[i];
        size_t len = strlen(op->name);
        uint32_t slot, fam, lo;

        /* Names too long or duplicated are left out of the hash; the ops
         * unit test looks every name up and fails on them. */
        if (len > 0 && len <= NAME_MAX_LEN) {
            uint32_t h = name_hash(op->name, len, name_key[i]);

            slot = h & (NAME_SLOTS - 1);
            while (name_slot[slot].op != 0)
                slot = (slot + 1) & (NAME_SLOTS - 1);
            name_slot[slot].hash = h;
            name_slot[slot].op = (uint16_t)(i + 1);
            name_slot[slot].len = (uint16_t)len;
        }

        if (op_index_of_code(op->code) != (int)i)
            continue;
        fam = op->code >> 8;
        lo = op->code & 0xFF;
        if (code_family[fam] == 0) {
            if (nfam == CODE_FAMILIES)
                continue;
            code_family[fam] = (uint8_t)++nfam;
        }
        code_block[code_family[fam] - 1][lo] = (uint16_t)(i + 1);
    }
}

static void tables_ensure(void)
{
    int expected = 0;

    if (atomic_load_explicit(&tables_state, memory_order_acquire) == 2)
        return;
    if (atomic_compare_exchange_strong(&tables_state, &expected, 1)) {
        tables_build();
        atomic_store_explicit(&tables_state, 2, memory_order_release);
        return;
    }
    while (atomic_load_explicit(&tables_state, memory_order_acquire) != 2)
        ;
}

const struct ur_op *ur_op_by_name(const char *name, size_t len)
{
    uint64_t key[NAME_WORDS];
    uint32_t h, slot;

    if (len == 0 || len > NAME_MAX_LEN)
        return NULL;
    tables_ensure();
    h = name_hash(name, len, key);
    slot = h & (NAME_SLOTS - 1);
    for (;;) {
        const struct name_slot *s = &name_slot[slot];

        if (s->op == 0)
            return NULL;
        if (s->hash == h && s->len == len) {
            const uint64_t *k = name_key[s->op - 1];
            size_t i;

            for (i = 0; i < (len + 7) / 8 && k[i] == key[i]; i++)
                ;
            if (i == (len + 7) / 8)
                return &ur_ops[s->op - 1];
        }
        slot = (slot + 1) & (NAME_SLOTS - 1);
    }
}

const struct ur_op *ur_op_by_code(uint16_t code)
{
    uint8_t fam;
    uint16_t v;

    tables_ensure();
    fam = code_family[code >> 8];
    if (fam == 0)
        return NULL;
    v = code_block[fam - 1][code & 0xFF];
    return v ? &ur_ops[v - 1] : NULL;
}
