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

#include "journal.h"
#include "server.h"

struct replay_result {
    uint64_t records;         /* replayed */
    struct journal_scan scan; /* what the segment's bytes are */
    size_t bad_off;   /* on failure: offset of the damage or of the record
                         whose command failed */
    uint64_t bad_rec; /* ... its record number in the segment, from 1 */
    bool cmd_failed;  /* ... a sound record whose command failed */
};

/*
 * Replays the segment file image buf[0..len) (header included), classified
 * by journal_scan (prev: where the segment before ended; last_segment: no
 * segment follows): the sound records run, and a torn tail is left for the
 * caller to cut (res->scan.state JOURNAL_TORN, res->scan.end). 0, or -1
 * with a message in err and res->bad_off, res->bad_rec: damage (anything
 * but a torn tail of the last segment, journal.h), a record that is not a
 * request frame, a command that fails. Offsets are the file's.
 */
int replay_buf(struct server *srv, const char *buf, size_t len,
               const struct journal_link *prev, bool last_segment,
               struct replay_result *res, char *err, size_t errlen);

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

/*
 * A replica applying its primary's stream (server/repl.h): runs one record
 * as replay runs a journal record (srv->loading set, the clock the
 * record's, nothing journaled by the executor: the caller commits the
 * record's bytes with persist_append_payload). *args, *cap: scratch
 * arguments, grown as needed, freed by the caller; out: scratch reply
 * buffer. 0, or -1 with the reason in err (not a request, or the command
 * failed: a setting differs from the primary's).
 */
int replay_record(struct server *srv, const struct journal_rec *rec,
                  struct ur_arg **args, uint32_t *cap, struct ur_buf *out,
                  char *err, size_t errlen);

/* Closes persistence (persist_close); srv->persist becomes NULL. */
void replay_close(struct server *srv);

#endif
