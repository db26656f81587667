/*
 * check.h - `unreadd --check FILE [--fix]`: verifies a snapshot or a
 * journal segment without starting a server and says what it found; with
 * --fix, cuts a journal at its first bad record after saying how much is
 * lost. The file kind is told by its magic (then by its name).
 */
#ifndef UR_CHECK_H
#define UR_CHECK_H

/* argv: FILE [--fix]. Exit status: 0 the file is sound (or was fixed),
 * 1 it is damaged, 2 usage or I/O error. Reports go to stdout. */
int check_main(int argc, char **argv);

#endif
