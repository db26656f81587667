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

#endif
