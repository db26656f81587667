/*
 * persist.h - persistence of the server's data (SPEC 6, docs/PERSISTENCE.md):
 * start-up recovery, the journal of executed writes, snapshots (foreground
 * and forked), their triggers, and what INFO shows of them.
 *
 * Who calls what:
 *   main.c   persist_setup before the network, persist_cron every 100 ms,
 *            persist_shutdown and persist_teardown at the end.
 *   exec.c   persist_cmd_begin / persist_cmd_end around every command.
 *   batch.c  persist_batch_begin / persist_batch_end around a batch.
 *   net.c    persist_flush once per loop turn before any reply is written,
 *            and holds back a connection's replies until the journal
 *            records of its writes are durable (persist_appended and
 *            persist_durable).
 *   handlers SAVE, BGSAVE, LASTSAVE, SHUTDOWN, INFO persistence.
 * Nothing here knows about sockets or libevent.
 */
#ifndef UR_PERSIST_H
#define UR_PERSIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops.h"
#include "proto.h"
#include "reply.h"
#include "server.h"

#define PERSIST_SNAPSHOT "snapshot.urs" /* in cfg.dir */
#define PERSIST_LOCK "unreadd.lock"

struct persist;

/*
 * Locks cfg.dir, loads the snapshot, replays the journal segments after it
 * into srv->db (which must be empty), logs what it did and opens the
 * journal for writing; sets srv->persist. 0, or -1 with a message in err
 * (corruption, an unreadable file, a missing segment, the directory in use
 * by another unreadd): the server must not start.
 */
int persist_setup(struct server *srv, char *err, size_t errlen);
/* Ends the fsync thread (after its sync in flight), closes files and
 * frees; srv->persist becomes NULL. */
void persist_teardown(struct server *srv);

/*
 * Executor hooks, around one command. begin returns false after replying
 * an error (-MISCONF: a write while the journal cannot be written; -OOM or
 * -ERR: the journal record cannot be built), and the command must not run.
 * Otherwise, for every command but pure admin ones, it pins the server
 * clock (to the loop turn's time: one clock read per turn) and stages the
 * command's journal record. end(changed) commits the
 * record when the command changed state, drops it otherwise, and unpins.
 * Replay runs commands through the same path and is not journaled again.
 */
bool persist_cmd_begin(struct persist *p, const struct ur_op *op, uint32_t argc,
                       const struct ur_arg *argv, struct reply *r);
void persist_cmd_end(struct persist *p, const struct ur_op *op, bool changed);

/*
 * Around an atomic batch (server/batch.h), whose commands still pass
 * through cmd_begin/end one by one: their records become sub-requests of
 * one batch record, committed by batch_end when at least one of them
 * changed state, so the journal holds all of the batch or none of it.
 * begin returns false after replying an error, and the batch must not
 * run: -MISCONF when it holds a write (`writes`) and the journal cannot be
 * written, -OOM when the record cannot be started. No snapshot can be cut
 * in between (SAVE and friends are not allowed in batches).
 */
bool persist_batch_begin(struct persist *p, bool writes, struct reply *r);
void persist_batch_end(struct persist *p);

/*
 * Ends a loop turn: the next command reads the clock afresh. Writes the
 * records of this loop turn to the journal (and fdatasyncs with
 * journal-fsync always: one sync for the whole turn). On a write failure
 * the journal is "broken": the records stay buffered, new writes are
 * refused, and each later call retries. A failed fdatasync with
 * journal-fsync always ends the process (exit 1): replies already sent
 * cannot be taken back.
 */
void persist_flush(struct persist *p);

/* Records committed since start, and how many of them are durable: written
 * to the file (fdatasync'd too with journal-fsync always). A reply that
 * acknowledges record k may leave only once durable >= k. */
uint64_t persist_appended(const struct persist *p);
uint64_t persist_durable(const struct persist *p);

/* Every 100 ms: journal retry, the everysec fdatasync (asked of a thread:
 * persistence/bgsync.h) and its result, reaping a finished background
 * save, the save-seconds trigger. */
void persist_cron(struct persist *p);

/* SAVE and BGSAVE: 0, or -1 with a message for the client in err. */
int persist_save(struct persist *p, char *err, size_t errlen);
int persist_bgsave(struct persist *p, char *err, size_t errlen);

/*
 * The end of the process: stops a background save, writes and syncs the
 * journal, and with save writes a final snapshot. 0, or -1 when the final
 * snapshot failed (logged; the journal still holds every change).
 */
int persist_shutdown(struct persist *p, bool save);

/* INFO persistence. */
struct persist_info {
    bool bgsave_in_progress;
    uint64_t changes_since_save;
    uint64_t last_save_ms; /* wall clock; 0: never */
    bool last_save_ok;
    uint64_t last_save_duration_ms;
    uint64_t last_save_bytes;
    bool journal_on;
    const char *journal_fsync; /* always, everysec, no */
    bool journal_ok;
    const char *journal_error; /* "" when ok */
    uint64_t journal_bytes;
    uint64_t journal_segment;
    uint64_t journal_pending; /* bytes appended, not yet written */
    uint64_t last_fsync_ms;   /* wall clock of the last fdatasync; 0 never */
    uint64_t last_fsync_us;   /* ... how long it took */
    uint64_t fsyncs;          /* fdatasyncs of journal records done */
    bool fsync_in_progress;   /* everysec: the thread's, not yet collected */
    uint64_t fsync_delayed;   /* everysec: syncs due while the last ran */
    uint64_t loaded_records;  /* journal records replayed at start */
    uint64_t load_ms;         /* time taken by start-up recovery */
    uint64_t fork_us;         /* the last BGSAVE's fork, blocking */
};
void persist_info(const struct persist *p, struct persist_info *out);

#endif
