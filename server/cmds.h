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

#endif
