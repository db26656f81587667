/*
 * hash.h - the one keyed hash of the stores' maps, and its seed.
 *
 * hash_u64 is a bijection of 64-bit values for every seed: each step (xor
 * with a constant, xor with a shift of 33 >= 32 bits, multiplication by an
 * odd constant, addition) has an inverse, and hash_u64_inv applies them in
 * reverse order. Distinct keys never share a hash, which the maps rely on:
 * u64map and u32map keep entries in hash order and use the hash of the
 * next entry as their scan cursor, and u64map, u32map and wmap store the hash
 * in place of the key and recover the key with hash_u64_inv.
 *
 * It is murmur3's 64-bit finalizer with the seed mixed in twice (before
 * the first round and between the two), so that ids chosen by clients
 * cannot be made to pile up in one segment or bucket without the seed.
 * Hardening, not cryptography.
 *
 * The seed: one per process, set once at start-up (main.c: hash_setup with
 * a random value) before any map is created; tests and fuzzers keep the
 * constant default, so their maps are the same on every run. Each map
 * copies hash_seed(kind) when created and keeps hashing with that copy.
 *
 * Each kind of map hashes with a seed of its own, derived from the
 * process's: the same key then has unrelated hashes in a u64map and in a
 * u32map, so that walking one map and changing another in the order of the
 * walk (the expiry sweep walks the activity table, a u32map, and deletes
 * each user from the families' u64maps) never works through a map in its
 * own hash order. That order is the worst case of u64map's segments
 * (measured: deleting 100k keys in hash order takes seconds, in any other
 * order milliseconds).
 */
#ifndef UR_HASH_H
#define UR_HASH_H

#include <stdint.h>

enum hash_kind {
    HASH_U64MAP, /* the process's seed itself */
    HASH_U32MAP,
    HASH_WMAP,
    HASH_RCPT_INDEX /* rcpt.c's msgid index */
};

/* Sets the process's seed, for maps created from now on. Not
 * thread-safe. */
void hash_setup(uint64_t seed);
/* The seed of a map of this kind created now: derived from the last
 * hash_setup's (else a constant). */
uint64_t hash_seed(enum hash_kind kind);

static inline uint64_t hash_seed_rot(uint64_t seed)
{
    return (seed << 32) | (seed >> 32);
}

static inline uint64_t hash_u64(uint64_t key, uint64_t seed)
{
    uint64_t z = key ^ seed;

    z = (z ^ (z >> 33)) * 0xff51afd7ed558ccdULL;
    z += hash_seed_rot(seed);
    z = (z ^ (z >> 33)) * 0xc4ceb9fe1a85ec53ULL;
    return z ^ (z >> 33);
}

static inline uint64_t hash_u64_inv(uint64_t h, uint64_t seed)
{
    uint64_t z = h ^ (h >> 33);

    z *= 0x9cb4b2f8129337dbULL; /* inverse of 0xc4ceb9fe1a85ec53 mod 2^64 */
    z ^= z >> 33;
    z -= hash_seed_rot(seed);
    z *= 0x4f74430c22a54005ULL; /* inverse of 0xff51afd7ed558ccd */
    z ^= z >> 33;
    return z ^ seed;
}

#endif
