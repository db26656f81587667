/*
 * check.h - `unreadd --check FILE [--fix] [--drop-damaged | --truncate-at
 * OFFSET]`: verifies a snapshot or a journal segment without starting a
 * server and says what it found. The file kind is told by its magic (then
 * by its name).
 *
 * A journal segment is classified by journal_scan, as the server's loader
 * does, with the segments beside it in its directory (the one before says
 * where its sequence numbers start, the one after whether it is the last),
 * and every sound record is checked against the op table. Repairs:
 *   --fix               cuts a torn tail (an incomplete last record, what
 *                       a crash leaves; the server cuts it too), and
 *                       refuses anything else, naming file, offset, record
 *                       and what is wrong;
 *   --drop-damaged      cuts the segment at its first damage, removing the
 *                       damaged record and every record after it in the
 *                       file (kept in FILE.removed-<time>), and marks the
 *                       segment as ending early so that later segments
 *                       load after the gap;
 *   --truncate-at OFF   the same at a record boundary the operator names
 *                       (a record the server cannot run, say).
 */
#ifndef UR_CHECK_H
#define UR_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "journal.h"

/* argv: FILE and the options above. Exit status: 0 the file is sound (or
 * was repaired), 1 it is damaged (or the repair was refused), 2 usage or
 * I/O error. Reports go to stdout. */
int check_main(int argc, char **argv);

/*
 * What each remedy does about damage a scan (s->state JOURNAL_CORRUPT) of
 * the segment file at path (len bytes) found, in words for the operator:
 * what --fix does here and what the explicit options would remove. last:
 * no segment follows it. The server's start-up error and --check say the
 * same.
 */
void check_remedies(const char *path, size_t len, const struct journal_scan *s,
                    bool last, char *out, size_t cap);

/* The same for sound record rec (from 1) at off, of the records sound
 * records of the segment at path, whose command the server could not run
 * (or parse). */
void check_remedies_replay(const char *path, size_t off, uint64_t rec,
                           uint64_t records, bool last, char *out, size_t cap);

#endif
