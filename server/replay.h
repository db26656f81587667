/*
 * replay.h - start-up recovery: runs journal records back through the
 * executor, with the server clock pinned to each record's time, so that
 * the state after replay is the state the commands left when they first
 * ran. Replay is a client of the executor (as Redis's AOF loading is a
 * fake client): persistence only reads the files and hands the records
 * over (persist_load_next), it never calls the executor.
 *
 * Replay goes through exec_binary like any request (a batch record through
 * batch_exec), with a session of its own and a scratch reply buffer;
 * srv->loading is set meanwhile, so nothing replayed is journaled again
 * or refused. A record whose command now fails (an error reply; for a batch,
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
 * Start-up recovery: opens persistence on srv->cfg's data directory
 * (persist_open: the lock, the snapshot into srv->db, which must be
 * empty), replays every journal record through the executor, and opens
 * the journal for writing; sets srv->persist. 0, or -1 with a message in
 * err naming the file and offset of what is wrong (corruption, an
 * unreadable file, a missing segment, a record that fails, the directory
 * in use by another unreadd): the server must not start.
 */
int replay_open(struct server *srv, char *err, size_t errlen);

/* Closes persistence (persist_close); srv->persist becomes NULL. */
void replay_close(struct server *srv);

#endif
