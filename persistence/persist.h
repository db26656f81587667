/*
 * persist.h - persistence of the data (docs/PERSISTENCE.md): start-up
 * recovery, the journal of executed writes, snapshots (foreground and
 * forked), their triggers, and what INFO shows of them.
 *
 * Persistence listens; it never calls up. The server tells it what to do:
 *   replay.c  persist_open (lock the directory, load the snapshot), then
 *             pulls the journal's records with persist_load_next and runs
 *             each through the executor itself, then persist_load_done
 *             (cut a torn tail, open the journal for writing).
 *   exec.c    asks persist_refusal before a write (the -MISCONF text is
 *             the executor's), stages each command's record with
 *             persist_stage before it runs and persist_feed after it ran,
 *             batches with persist_batch_begin/_end. The executor owns the
 *             clock: the time a record carries is the one the command ran
 *             at.
 *   net.c     persist_flush once per loop turn before any reply is
 *             written, and holds back a connection's replies until the
 *             journal records of its writes are durable (persist_appended
 *             and persist_durable).
 *   main.c    persist_cron every 100 ms, persist_shutdown and
 *             persist_close at the end.
 *   handlers  SAVE, BGSAVE, LASTSAVE, SHUTDOWN, INFO persistence.
 * It knows the stores (struct db) and the journal's codec, nothing of the
 * executor, the network or the server's configuration.
 */
#ifndef UR_PERSIST_H
#define UR_PERSIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "journal.h"
#include "ops.h"
#include "proto.h"
#include "snapshot.h"

#define PERSIST_SNAPSHOT "snapshot.urs" /* in the data directory */
#define PERSIST_LOCK "unreadd.lock"

/* journal-fsync: when the journal reaches the disk (docs/PERSISTENCE.md). */
enum journal_fsync { FSYNC_NO = 0, FSYNC_EVERYSEC = 1, FSYNC_ALWAYS = 2 };

/* What persistence is told of the server's configuration. */
struct persist_config {
    const char *dir;       /* data directory; must outlive the handle */
    bool journal;          /* journal yes/no */
    int fsync_mode;        /* enum journal_fsync */
    uint32_t save_seconds; /* snapshot this often when changed; 0: never */
};

struct persist;

/* ---- start-up ------------------------------------------------------------ */

/*
 * Locks cfg->dir and loads its snapshot, if any, into db (which must be
 * empty); the journal's records are then pulled with persist_load_next.
 * The handle, or NULL with a message in err (an unreadable or corrupt
 * snapshot, the directory in use by another unreadd): the server must not
 * start.
 */
struct persist *persist_open(const struct persist_config *cfg, struct db *db,
                             char *err, size_t errlen);

/*
 * The next journal record to replay, segment after segment: 1 with *rec
 * (its frame points into a mapping valid until the next call), 0 when
 * every record has been read, or -1 with a message in err naming the file
 * and offset (a corrupt record, a missing segment, an unreadable file).
 * A torn last record of the last segment ends the records: it is cut by
 * persist_load_done.
 */
int persist_load_next(struct persist *p, struct journal_rec *rec, char *err,
                      size_t errlen);

/* The refusal to start when the record persist_load_next returned last
 * cannot be replayed (why: the executor's error), naming its file and
 * offset and the repair command, in err. */
void persist_load_refuse(const struct persist *p, const char *why, char *err,
                         size_t errlen);

/*
 * Ends start-up: cuts a torn tail (logged), removes the segments the
 * snapshot covers, opens the journal for writing after the last segment
 * and starts the everysec fsync thread. 0, or -1 with a message in err.
 */
int persist_load_done(struct persist *p, char *err, size_t errlen);

/* Ends the fsync thread (after its sync in flight), closes files and
 * frees. Accepts NULL. */
void persist_close(struct persist *p);

/* ---- the journal at run time --------------------------------------------- */

/* NULL when writes may run and be acknowledged; otherwise why not (the
 * journal cannot be written, and what failed), for the -MISCONF reply. */
const char *persist_refusal(const struct persist *p);

/*
 * Stages the journal record of a command about to run at clock_ms: the
 * request as received (opcode, argv[0..argc)) and that time. 0, or -1
 * with errno ENOMEM or E2BIG (too many arguments or bytes for a record)
 * and nothing staged: the command must not run. Inside a batch the record
 * is a sub-request of the batch's record.
 */
int persist_stage(struct persist *p, uint64_t clock_ms, const struct ur_op *op,
                  uint32_t argc, const struct ur_arg *argv);

/* After the staged command ran: keeps its record when it changed state
 * (one more change since the last snapshot), drops it otherwise. */
void persist_feed(struct persist *p, bool changed);

/*
 * Around an atomic batch (server/batch.h), whose commands are staged and
 * fed one by one: their records become sub-requests of one batch record at
 * clock_ms, committed by batch_end when at least one of them changed
 * state, so the journal holds all of the batch or none of it. begin
 * returns 0, or -1 (ENOMEM: the batch must not run). No snapshot can be
 * cut in between (SAVE and friends are not allowed in batches).
 */
int persist_batch_begin(struct persist *p, uint64_t clock_ms);
void persist_batch_end(struct persist *p);

/*
 * Ends a loop turn: writes the records of this loop turn to the journal (and
 * fdatasyncs with journal-fsync always: one sync for the whole turn). On a
 * write failure the journal is "broken": the records stay buffered, new writes
 * are refused, and each later call retries. A failed fdatasync (here or on
 * the everysec thread), or the open segment found deleted, makes it
 * "untrusted" instead: nothing is retried on those files; writes are refused
 * and the journal not written until persist_cron has written a snapshot of
 * the memory and a fresh segment (then the records the snapshot covers
 * count as durable). The directory, the segment or the snapshot replaced
 * under the server does the same (noticed by persist_cron).
 */
void persist_flush(struct persist *p);

/* Records committed since start, and how many of them are durable: written
 * to the file (fdatasync'd too with journal-fsync always). A reply that
 * acknowledges record k may leave only once durable >= k. */
uint64_t persist_appended(const struct persist *p);
uint64_t persist_durable(const struct persist *p);

/* Every 100 ms: journal retry, reaping a finished background save, the
 * check that the data directory, the segment and the snapshot are still
 * the server's, the everysec fdatasync (asked of a thread:
 * persistence/bgsync.h) and its result, the resync of an untrusted
 * journal, the save-seconds trigger. */
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
    bool journal_ok;           /* neither broken nor untrusted */
    bool journal_untrusted;    /* waiting for a resync (persist_refusal) */
    const char *journal_error; /* "" when ok */
    uint64_t sync_failures;    /* fdatasyncs of the journal that failed */
    uint64_t resyncs;          /* snapshot + fresh segment after distrust */
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
    uint64_t forks;           /* BGSAVE children forked since start */
    uint64_t saves;           /* snapshots written since start */
};
void persist_info(const struct persist *p, struct persist_info *out);

/* ---- replication (docs/PERSISTENCE.md, "Replication") -------------------
 *
 * The data has an origin (snapshot.h): the replication history it is at
 * and how many bytes of that history's stream it holds. The stream is the
 * sequence of committed records; each counts JOURNAL_REC_HDR plus its
 * payload, whether or not the journal is on. A snapshot carries the
 * origin at its cut; replay adds its records to it; a history record in
 * the journal (journal.h) carries every change of replication id. The
 * server's replication (server/repl.h) takes each committed record and
 * streams it; a replica appends the records it receives.
 */

void persist_origin(const struct persist *p, struct snap_origin *out);
uint64_t persist_offset(const struct persist *p);

/*
 * Forks the history: the current id and offset become replid2 and
 * offset2, replid (40 hex digits, or NULL: a new random one) the id from
 * here on (a promotion, a start as primary, a primary that changed id).
 * Journaled as a history record just before the next record (until one
 * is made under the new id, a restart that forgot it loses nothing). 0.
 */
int persist_history_fork(struct persist *p, const char *replid);

/* Makes records of committed commands even with the journal off (they are
 * then dropped at the end of the turn): replication needs them. */
void persist_set_stream(struct persist *p, bool on);

/*
 * The record committed last (by persist_feed or persist_batch_end), once:
 * true with its payload (clock ms and request frame, valid until the
 * next record is staged or the turn is flushed), its length and the
 * stream offset it starts at; false when none was committed since.
 */
bool persist_take_record(struct persist *p, const char **payload, uint32_t *n,
                         uint64_t *at);

/*
 * A replica applied a record received from its primary (payload: clock ms
 * and request frame, n bytes): it is committed as the executor's would be
 * (journal, offset, persist_take_record). 0, or -1 with errno (ENOMEM,
 * E2BIG): nothing changed.
 */
int persist_append_payload(struct persist *p, const char *payload, uint32_t n);

/* Background saves as a full sync sees them. */
struct persist_save_state {
    bool running;            /* a background save runs */
    uint64_t running_offset; /* ... its snapshot holds the stream to here */
    uint64_t ended;          /* background saves ended since start */
};
void persist_save_state(const struct persist *p, struct persist_save_state *s);

/*
 * A full sync waits for a background save: persist_want_snapshot asks
 * that the snapshot the running (or next) one writes be opened as soon as
 * it ends, before any later save can replace it; persist_saved_snapshot
 * hands that descriptor over (the caller closes it) with the origin it
 * holds and which save wrote it (*save_no: the count of ended saves when
 * it ended), or returns -1 (none: the save failed, or nothing was asked).
 */
void persist_want_snapshot(struct persist *p);
int persist_saved_snapshot(struct persist *p, struct snap_origin *origin,
                           uint64_t *save_no);

/*
 * A full sync on a replica: replaces the data with the snapshot at path
 * (received from the primary, in the data directory): the db is emptied
 * and loaded from it, every journal segment is removed, the file becomes
 * snapshot.urs and the journal starts again after it; the origin is the
 * snapshot's. 0, or -1 with a message in err and the db empty (the file
 * is left for the caller to remove). A background save is stopped first.
 */
int persist_adopt(struct persist *p, const char *path, char *err,
                  size_t errlen);

#endif
