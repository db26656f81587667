/*
 * hash.c - see hash.h.
 */
#include "hash.h"

static uint64_t seed = 0x9e3779b97f4a7c15ULL;

void hash_setup(uint64_t s)
{
    seed = s;
}

uint64_t hash_seed(enum hash_kind kind)
{
    return kind == HASH_U64MAP ? seed : hash_u64(kind, seed);
}
