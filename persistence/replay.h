/*
 * replay.h - runs journal records back through the executor, with the
 * server clock pinned to each record's time, so that the state after
 * replay is the state the commands left when they first ran.
 *
 * Replay goes through exec_binary like any request (a batch record through
 * batch_exec), with a session of its own and a scratch reply buffer;
 * srv->persist must be NULL meanwhile, so nothing replayed is journaled
 * again. A record whose command now fails (an error reply; for a batch,
 * any of its commands) stops the replay: the data would silently diverge
 * from what clients were told (a changed counter-types or limit, say).
 */
#ifndef UR_REPLAY_H
#define UR_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server.h"

struct replay_result {
    uint64_t records; /* replayed */
    size_t good_len;  /* bytes of whole records (from the buffer's start) */
    bool torn;        /* the buffer ended inside a record (last segment) */
    bool removed;     /* replay_segment removed a header-less last file */
    size_t bad_off;   /* on failure: offset of the bad record */
};

/*
 * Replays the records in buf[0..len) (a segment's bytes after its header).
 * A torn final record is accepted only when last_segment: then res->torn
 * and res->good_len say where to cut. 0, or -1 with a message in err and
 * res->bad_off (bad length or checksum, a record that is not a request
 * frame, a command that fails, a torn record in a segment that is not the
 * last). Offsets are relative to buf.
 */
int replay_buf(struct server *srv, const char *buf, size_t len,
               bool last_segment, struct replay_result *res, char *err,
               size_t errlen);

/*
 * Replays the segment file at path, whose header must name segment seg,
 * cutting a torn tail (with a warning) when last_segment. A last segment
 * too short to hold its header holds no record and is removed. 0, or -1
 * with a message naming the file and offset in err.
 */
int replay_segment(struct server *srv, const char *path, uint64_t seg,
                   bool last_segment, struct replay_result *res, char *err,
                   size_t errlen);

#endif
