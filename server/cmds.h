/*
 * cmds.h - one handler per op of protocol/ops.def, named cmd_<id>. The
 * declarations and the dispatch table in exec.c derive from the op table;
 * the definitions live in cmd_<family>.c.
 */
#ifndef UR_CMDS_H
#define UR_CMDS_H

#include "exec.h"

#define OP(id, name, code, min, max, flags, syn, rep, cost, sum)               \
    void cmd_##id(struct exec_ctx *x);
#include "ops.def"
#undef OP

/*
 * USER.INFO (cmd_user.c) asks each family of families.def for its lines
 * with cmd_<f>_user_info, defined beside the family's handlers: one line
 * per entry held (user_line, while user_line_room allows: at most 100 per
 * family), then user_lines_more and the family's summary line.
 */
struct user_lines;
void user_line(struct user_lines *L, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Whether the current family may show one more entry line. */
bool user_line_room(struct user_lines *L);
/* "... N more" after a family whose entry lines were cut; ends the
 * family's entry lines. */
void user_lines_more(struct user_lines *L, const char *fam, size_t total);

#define FAMILY(f, ID, lo, hi, unit, expiry, prefetch, title)                   \
    void cmd_##f##_user_info(struct user_lines *L, const struct server *srv,   \
                             uint64_t uid);
#include "families.def"
#undef FAMILY

#endif
