/*
 * sections.h - the save and load functions named by sections.def, one pair
 * per family, defined in persistence/sec_<family>.c.
 */
#ifndef UR_SECTIONS_H
#define UR_SECTIONS_H

#include "snapshot.h"

#define SECTION(id, name, save, load)                                          \
    int save(const struct db *db, struct snap_writer *w);                      \
    int load(struct db *db, struct snap_reader *r);
#include "sections.def"
#undef SECTION

/*
 * One user's records (one group's, for RCPT) in its section's raw format,
 * for the user record of persistence/userrec.c: the section's load reads
 * them back. Nothing is written for a user the family does not hold.
 * 0, or -1 when a write failed.
 */
int sec_cnt_save_user(const struct db *db, struct snap_writer *w, uint64_t uid);
int sec_conv_save_user(const struct db *db, struct snap_writer *w,
                       uint64_t uid);
int sec_notice_save_user(const struct db *db, struct snap_writer *w,
                         uint64_t uid);
/* The format item, then group gid; 1 when gid is not held (the format
 * item alone was written). */
int sec_rcpt_save_group(const struct db *db, struct snap_writer *w,
                        uint64_t gid);

#endif
