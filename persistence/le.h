/*
 * le.h - little-endian loads and stores at any alignment, for the file
 * formats of persistence/ (the same byte-by-byte form as protocol/frame.c:
 * defined behaviour on every host, single loads on little-endian ones).
 */
#ifndef UR_LE_H
#define UR_LE_H

#include <stdint.h>

static inline uint32_t le_rd32(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 |
           (uint32_t)u[3] << 24;
}

static inline uint64_t le_rd64(const char *p)
{
    return (uint64_t)le_rd32(p) | (uint64_t)le_rd32(p + 4) << 32;
}

static inline void le_wr32(char *p, uint32_t v)
{
    p[0] = (char)(v & 0xFF);
    p[1] = (char)((v >> 8) & 0xFF);
    p[2] = (char)((v >> 16) & 0xFF);
    p[3] = (char)(v >> 24);
}

static inline void le_wr64(char *p, uint64_t v)
{
    le_wr32(p, (uint32_t)v);
    le_wr32(p + 4, (uint32_t)(v >> 32));
}

#endif
