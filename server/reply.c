/*
 * reply.c - see reply.h. Each call appends straight into the connection's
 * output buffer in the connection's protocol; nothing is built twice.
 */
#include "reply.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "proto.h"
#include "resp.h"

/* Binary array header: tag + u32 count. Patched in place when deferred. */
#define BIN_ARR_HDR 5
/* RESP deferred array header room: "*" + up to 10 digits + CRLF. */
#define RESP_ARR_ROOM 13

static void check(struct reply *r, int rc)
{
    if (rc != 0)
        r->oom = true;
}

void reply_begin(struct reply *r, struct ur_buf *out, enum reply_proto proto,
                 uint32_t id)
{
    r->out = out;
    r->proto = (uint8_t)proto;
    r->status = 0;
    r->id = id;
    r->start = out->len;
    r->hdr_off = out->len;
    r->oom = false;
    r->close_after = false;
    r->defer = false;
    if (proto == REPLY_BIN)
        check(r, ur_frame_reply_begin(out, id, &r->hdr_off));
}

void reply_begin_push(struct reply *r, struct ur_buf *out,
                      enum reply_proto proto)
{
    reply_begin(r, out, proto == REPLY_BIN ? REPLY_RESP : proto, 0);
    if (proto == REPLY_BIN) {
        r->proto = REPLY_BIN;
        check(r, ur_frame_push_begin(out, &r->hdr_off));
    }
}

void reply_end(struct reply *r)
{
    if (r->defer) {
        r->out->len = r->start;
        return;
    }
    if (r->oom) {
        /* Out of memory while building: drop the partial reply and try a
         * short error instead; if even that fails the connection will be
         * closed by the caller noticing close_after. */
        r->out->len = r->start;
        r->oom = false;
        r->status = 0;
        if (r->proto == REPLY_BIN)
            check(r, ur_frame_reply_begin(r->out, r->id, &r->hdr_off));
        reply_err(r, UR_E_OOM, "out of memory building the reply");
        if (r->oom)
            r->close_after = true;
    }
    if (r->proto == REPLY_BIN && !r->oom)
        ur_frame_reply_end(r->out, r->hdr_off, r->status);
}

void reply_begin_elem(struct reply *sub, struct reply *parent)
{
    *sub = *parent;
    sub->status = 0;
    sub->start = parent->out->len;
    sub->oom = false;
    sub->close_after = false;
}

void reply_end_elem(struct reply *sub, struct reply *parent)
{
    if (sub->oom) {
        sub->out->len = sub->start;
        sub->oom = false;
        reply_err(sub, UR_E_OOM, "out of memory building the reply");
        parent->oom |= sub->oom;
    }
    parent->close_after |= sub->close_after;
}

void reply_int(struct reply *r, uint64_t v)
{
    if (r->proto == REPLY_BIN) {
        check(r, ur_frame_put_int(r->out, v));
    } else if (v <= (uint64_t)INT64_MAX) {
        check(r, ur_resp_put_int(r->out, v));
    } else if (r->proto == REPLY_RESP3) {
        check(r, ur_resp_put_bignum3(r->out, v));
    } else {
        char num[24];
        check(r, ur_resp_put_str(r->out, num, ur_fmt_u64(num, v)));
    }
}

void reply_i64(struct reply *r, int64_t v)
{
    check(r, r->proto == REPLY_BIN ? ur_frame_put_sint(r->out, v)
                                   : ur_resp_put_i64(r->out, v));
}

void reply_str(struct reply *r, const char *s, size_t n)
{
    check(r, r->proto == REPLY_BIN ? ur_frame_put_str(r->out, s, n)
                                   : ur_resp_put_str(r->out, s, n));
}

void reply_cstr(struct reply *r, const char *s)
{
    reply_str(r, s, strlen(s));
}

void reply_arr(struct reply *r, uint32_t count)
{
    check(r, r->proto == REPLY_BIN ? ur_frame_put_arr(r->out, count)
                                   : ur_resp_put_arr(r->out, count));
}

static void agg(struct reply *r, char type, uint32_t count)
{
    if (r->proto == REPLY_BIN)
        check(r, ur_frame_put_arr(r->out, count));
    else
        check(r, ur_resp_put_agg(r->out, r->proto == REPLY_RESP3 ? type : '*',
                                 count));
}

void reply_map(struct reply *r, uint32_t pairs)
{
    if (r->proto == REPLY_RESP3)
        agg(r, '%', pairs);
    else
        agg(r, '*', pairs * 2);
}

void reply_set(struct reply *r, uint32_t count)
{
    agg(r, '~', count);
}

void reply_push(struct reply *r, uint32_t count)
{
    agg(r, '>', count);
}

void reply_nil(struct reply *r)
{
    if (r->proto == REPLY_BIN)
        check(r, ur_frame_put_nil(r->out));
    else if (r->proto == REPLY_RESP3)
        check(r, ur_resp_put_null3(r->out));
    else
        check(r, ur_resp_put_nil(r->out));
}

void reply_bool(struct reply *r, bool v)
{
    if (r->proto == REPLY_RESP3)
        check(r, ur_resp_put_bool3(r->out, v));
    else
        reply_int(r, v ? 1 : 0);
}

void reply_double(struct reply *r, double v)
{
    char num[40];
    int n;

    if (r->proto == REPLY_RESP3) {
        check(r, ur_resp_put_double3(r->out, v));
        return;
    }
    n = snprintf(num, sizeof(num), "%.17g", v);
    reply_str(r, num, (size_t)n);
}

void reply_fmt(struct reply *r, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0) {
        r->oom = true;
        return;
    }
    if ((size_t)n < sizeof(small)) {
        reply_str(r, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (big == NULL) {
        r->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    reply_str(r, big, (size_t)n);
    free(big);
}

void reply_status(struct reply *r, const char *s)
{
    size_t n = strlen(s);
    check(r, r->proto == REPLY_BIN ? ur_frame_put_status(r->out, s, n)
                                   : ur_resp_put_status(r->out, s, n));
}

void reply_pair(struct reply *r, uint64_t a, uint64_t b)
{
    if (r->proto != REPLY_BIN && a <= (uint64_t)INT64_MAX &&
        b <= (uint64_t)INT64_MAX) {
        /* Every CNT write's reply: one reservation, no per-value
         * dispatch. RESP2 and RESP3 spell it alike. */
        check(r, ur_resp_put_int_pair(r->out, a, b));
        return;
    }
    reply_arr(r, 2);
    reply_int(r, a);
    reply_int(r, b);
}

void reply_verr(struct reply *r, uint16_t code, const char *fmt, va_list ap)
{
    char msg[512];
    int n = vsnprintf(msg, sizeof(msg), fmt, ap);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof(msg))
        n = sizeof(msg) - 1;
    r->status = code;
    if (r->proto == REPLY_BIN)
        check(r, ur_frame_put_err(r->out, code, msg, (size_t)n));
    else
        check(r, ur_resp_put_err(r->out, ur_err_prefix(code), msg, (size_t)n));
}

void reply_err(struct reply *r, uint16_t code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    reply_verr(r, code, fmt, ap);
    va_end(ap);
}

size_t reply_arr_defer(struct reply *r)
{
    size_t mark = r->out->len;
    size_t room = r->proto == REPLY_BIN ? BIN_ARR_HDR : 0;
    if (room != 0) {
        if (ur_buf_reserve(r->out, room) != 0) {
            r->oom = true;
            return mark;
        }
        r->out->len += room;
    }
    return mark;
}

static void defer_finish(struct reply *r, size_t mark, char type,
                         uint32_t count);

void reply_arr_finish(struct reply *r, size_t mark, uint32_t count)
{
    defer_finish(r, mark, '*', count);
}

void reply_map_finish(struct reply *r, size_t mark, uint32_t pairs)
{
    if (r->proto == REPLY_RESP3)
        defer_finish(r, mark, '%', pairs);
    else
        defer_finish(r, mark, '*', pairs * 2);
}

static void defer_finish(struct reply *r, size_t mark, char type,
                         uint32_t count)
{
    if (r->oom)
        return;
    if (r->proto == REPLY_BIN) {
        /* Encode a header into the hole: put_arr appends, so encode at the
         * end and move the 5 bytes back. */
        size_t end = r->out->len;
        if (ur_frame_put_arr(r->out, count) != 0) {
            r->oom = true;
            return;
        }
        memcpy(r->out->data + mark, r->out->data + end, BIN_ARR_HDR);
        r->out->len = end;
        return;
    }
    /* RESP: the header's width depends on count; shift the elements. */
    char hdr[RESP_ARR_ROOM];
    int n = snprintf(hdr, sizeof(hdr), "%c%u\r\n", type, count);
    if (ur_buf_reserve(r->out, (size_t)n) != 0) {
        r->oom = true;
        return;
    }
    memmove(r->out->data + mark + n, r->out->data + mark, r->out->len - mark);
    memcpy(r->out->data + mark, hdr, (size_t)n);
    r->out->len += (size_t)n;
}
