/*
 * slot.h - Redis Cluster's key space: 16384 hash slots, a key's slot the
 * CRC16 (XMODEM: polynomial 0x1021, initial value 0, no reflection, no
 * final xor; CRC16("123456789") = 0x31C3) of its bytes modulo 16384, or of
 * the bytes between the first '{' and the first '}' after it when that
 * hash tag is not empty, exactly as Redis's keyHashSlot does, so that
 * every Redis Cluster client computes the same slot as the server.
 *
 * unreadd's keys are decimal ids (ops.h ur_op_key_first): a uid sent as
 * a binary integer hashes as its canonical decimal text, the bytes a text
 * client would send. Pure functions, no state: shared by the server, the
 * client library, the bench and the fuzzers.
 */
#ifndef UR_SLOT_H
#define UR_SLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define UR_SLOTS 16384u

/* CRC16-XMODEM of buf[0..len), and its table (for the unit test). */
extern const uint16_t ur_crc16_table[256];
uint16_t ur_crc16(const char *buf, size_t len);

/* The slot of the key buf[0..len) (hash tags as Redis). */
unsigned ur_key_slot(const char *buf, size_t len);

/* The slot of the decimal text of v. */
unsigned ur_u64_slot(uint64_t v);

/*
 * The slot of a key argument: its bytes for a string, its decimal text for
 * a binary integer.
 */
static inline unsigned ur_arg_slot(const struct ur_arg *a)
{
    return a->kind == UR_ARG_INT ? ur_u64_slot(a->num)
                                 : ur_key_slot(a->str, a->len);
}

/*
 * Whether a string argument is a canonical decimal id (digits only, no
 * leading zero unless it is "0", at most 19 digits and at most
 * UR_INT_MAX): the text a client hashes must be the one every other
 * client would send for the same id. Binary integers are always
 * canonical.
 */
bool ur_arg_canonical(const struct ur_arg *a);

#endif
