/*
 * proto.c - names of parse results and error codes, and the strict decimal
 * u64 codec that every text argument and every RESP header goes through.
 */
#include <string.h>

#include "proto.h"

const char *ur_parse_name(enum ur_parse st)
{
    switch (st) {
    case UR_PARSE_OK:
        return "OK";
    case UR_PARSE_NEED_MORE:
        return "NEED_MORE";
    case UR_PARSE_INVALID:
        return "INVALID";
    case UR_PARSE_TOO_BIG:
        return "TOO_BIG";
    }
    return "UNKNOWN";
}

/* Generated from UR_ERRORS so that a new code cannot be forgotten here. */
const char *ur_err_prefix(uint32_t code)
{
    switch (code) {
#define UR_ERR_PREFIX(id, num, prefix)                                         \
    case num:                                                                  \
        return prefix;
        UR_ERRORS(UR_ERR_PREFIX)
#undef UR_ERR_PREFIX
    }
    return "ERR";
}

const char *ur_err_name(uint32_t code)
{
    switch (code) {
#define UR_ERR_NAME(id, num, prefix)                                           \
    case num:                                                                  \
        return #id;
        UR_ERRORS(UR_ERR_NAME)
#undef UR_ERR_NAME
    }
    return "ERR";
}

/*
 * The first 19 digits cannot overflow (10^19 - 1 < 2^64), so only the 20th
 * digit needs a check. Leading zeros are refused so that every value has
 * exactly one spelling: text arguments and binary integers then compare and
 * journal the same way.
 */
bool ur_parse_u64(const char *s, size_t len, uint64_t *out)
{
    const unsigned char *u = (const unsigned char *)s;
    uint64_t v = 0;
    size_t i;

    if (len == 0 || len > 20)
        return false;
    if (u[0] == '0') {
        if (len != 1)
            return false;
        *out = 0;
        return true;
    }
    for (i = 0; i < len && i < 19; i++) {
        uint32_t d = (uint32_t)u[i] - '0';
        if (d > 9)
            return false;
        v = v * 10 + d;
    }
    if (len == 20) {
        uint32_t d = (uint32_t)u[19] - '0';
        if (d > 9)
            return false;
        /* UINT64_MAX = 18446744073709551615 */
        if (v > UINT64_MAX / 10 ||
            (v == UINT64_MAX / 10 && d > UINT64_MAX % 10))
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/*
 * Every integer argument of the text protocol comes through here, some
 * several times a request (the handler, the activity mark, the badge
 * probe), so the common case is kept short: once the leading zeros are
 * skipped, at most 19 digits cannot overflow (10^19 - 1 < 2^64) and need
 * no per-digit check. Longer ones take the careful loop, which keeps
 * scanning past an overflow so that a non-digit later still says SYNTAX.
 */
enum ur_num ur_parse_uint_any(const char *s, size_t len, uint64_t max,
                              uint64_t *out)
{
    const unsigned char *u = (const unsigned char *)s;
    const unsigned char *end = u + len;
    uint64_t v = 0;
    bool over = false;

    if (len == 0)
        return UR_NUM_SYNTAX;
    while (end - u > 1 && *u == '0')
        u++;
    if (end - u <= 19) {
        for (; u < end; u++) {
            uint32_t d = (uint32_t)*u - '0';

            if (d > 9)
                return UR_NUM_SYNTAX;
            v = v * 10 + d;
        }
        if (v > max)
            return UR_NUM_RANGE;
        *out = v;
        return UR_NUM_OK;
    }
    for (; u < end; u++) {
        uint32_t d = (uint32_t)*u - '0';

        if (d > 9)
            return UR_NUM_SYNTAX;
        if (v > (UINT64_MAX - d) / 10)
            over = true;
        else
            v = v * 10 + d;
    }
    if (over || v > max)
        return UR_NUM_RANGE;
    *out = v;
    return UR_NUM_OK;
}

static const char digit_pairs[201] = "00010203040506070809"
                                     "10111213141516171819"
                                     "20212223242526272829"
                                     "30313233343536373839"
                                     "40414243444546474849"
                                     "50515253545556575859"
                                     "60616263646566676869"
                                     "70717273747576777879"
                                     "80818283848586878889"
                                     "90919293949596979899";

static size_t u64_digits(uint64_t v)
{
    size_t n = 1;

    for (;;) {
        if (v < 10)
            return n;
        if (v < 100)
            return n + 1;
        if (v < 1000)
            return n + 2;
        if (v < 10000)
            return n + 3;
        v /= 10000;
        n += 4;
    }
}

/*
 * Two digits per division (a lookup in digit_pairs), written backwards from
 * the known length: every reply integer of both protocols' text side goes
 * through here. buf is NUL-terminated as a convenience (hence 21 bytes).
 */
size_t ur_fmt_u64(char *buf, uint64_t v)
{
    size_t n = u64_digits(v);
    size_t i = n;

    buf[n] = '\0';
    while (v >= 100) {
        uint32_t r = (uint32_t)(v % 100) * 2;
        v /= 100;
        buf[--i] = digit_pairs[r + 1];
        buf[--i] = digit_pairs[r];
    }
    if (v >= 10) {
        uint32_t r = (uint32_t)v * 2;
        buf[--i] = digit_pairs[r + 1];
        buf[--i] = digit_pairs[r];
    } else {
        buf[--i] = (char)('0' + v);
    }
    return n;
}
