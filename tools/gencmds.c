/*
 * gencmds - writes the reference part of docs/COMMANDS.md from the command
 * table (protocol/ops.def) and the error codes (UR_ERRORS in proto.h), so
 * the docs cannot drift from what the server parses.
 *
 *   gencmds FILE          rewrite the part between the markers (creating
 *                         FILE with an introduction if it does not exist)
 *   gencmds --check FILE  exit 1 if that part is not what would be written
 *
 * Everything outside the markers belongs to people and is kept byte for
 * byte. The file is replaced atomically (temp file + rename).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "ops.h"
#include "proto.h"

#define MARK_BEGIN "<!-- BEGIN GENERATED: do not edit, run make docs -->"
#define MARK_END "<!-- END GENERATED -->"

static const char intro[] =
    "# unreadd commands\n"
    "\n"
    "Every command of unreadd, for both protocols. The reference below is\n"
    "generated from the command table (`protocol/ops.def`) by `make docs`:\n"
    "edit the table, not the generated part. `make check-docs` fails when\n"
    "this file is out of date. The text outside the generated part is kept\n"
    "as written.\n"
    "\n"
    "## Calling a command\n"
    "\n"
    "- **Text (RESP2)**: any Redis client (`redis-cli -p 7460 CNT.INCR 1 "
    "0`)\n"
    "  or a plain line in `telnet`/`nc` (`CNT.INCR 1 0`, words split on "
    "blanks,\n"
    "  `\"a b\"` or `'a b'` for one argument with blanks, no escapes).\n"
    "  Command names are case-insensitive; integers are decimal, without "
    "sign or\n"
    "  leading zeros.\n"
    "- **Binary**: the opcode below goes in the request header, integers "
    "as\n"
    "  u64 arguments (kind 0x01), strings as kind 0x02; see "
    "`docs/PROTOCOL.md`.\n"
    "\n"
    "Arity counts the arguments after the command name. `N+` means at "
    "least N,\n"
    "up to `max-args`.\n"
    "\n"
    "## Replies\n"
    "\n"
    "- integer: `:N` in text, value 0x01 (u64) in binary;\n"
    "- array: `*N` then N values, value 0x03 in binary. A *flat array* "
    "alternates\n"
    "  keys and values: `[cid, unread, cid, unread, ...]`;\n"
    "- bulk string `$N`, status `+OK`, nil `$-1` (0x02, 0x05, 0x04).\n"
    "\n"
    "## Errors\n"
    "\n"
    "In text an error is one line `-PREFIX message`; in binary the reply "
    "status\n"
    "is the error code and the body one error value (code, message). The "
    "codes\n"
    "are listed under *Error codes* below. The common ones:\n"
    "\n"
    "| Situation | Text | Binary status |\n"
    "|---|---|---|\n"
    "| unknown command or opcode | `-ERR unknown command 'X'` | 3 UNKNOWN "
    "|\n"
    "| wrong number of arguments | `-ERR wrong number of arguments for "
    "'CNT.INCR'` | 2 ARITY |\n"
    "| argument not a number, out of range, unknown type name | `-ERR value "
    "is not an integer or out of range` | 4 BADARG |\n"
    "| authentication required | `-NOAUTH Authentication required` | 5 "
    "NOAUTH |\n"
    "| a frame, line or count over the limits | `-ERR ...`, then the "
    "connection is closed | 9 TOOBIG |\n"
    "| bytes that are not the protocol | `-ERR Protocol error ...`, then "
    "the connection is closed | 11 PROTO |\n"
    "\n";

static struct ur_buf out;

static void die(const char *what)
{
    fprintf(stderr, "gencmds: %s\n", what);
    exit(2);
}

static void put(const char *s, size_t n)
{
    if (ur_buf_append(&out, s, n) != 0)
        die("out of memory");
}

static void putf(const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(tmp))
        die("line too long");
    put(tmp, (size_t)n);
}

/* The heading of the opcodes 0xNN00-0xNNFF: a family's title from
 * families.def, or one of the groups of commands that are no family. */
static const char *family_title(uint32_t fam)
{
#define FAMILY(f, ID, lo, hi, unit, expiry, prefetch, title)                   \
    if (fam == (uint32_t)(lo) >> 8)                                            \
        return title;
#include "families.def"
#undef FAMILY
    switch (fam) {
    case 0x00:
        return "Admin and connection";
    case 0x08:
        return "USER: per-user operations";
    case 0x0F:
        return "DEBUG and test hooks";
    case 0xFF:
        return "Framing";
    }
    return NULL;
}

static void put_family_title(uint32_t fam)
{
    const char *t = family_title(fam);

    if (t != NULL)
        putf("%s", t);
    else
        putf("Opcodes 0x%02X00-0x%02XFF", fam, fam);
}

/* GitHub's heading anchor: lower case, blanks to '-', punctuation dropped. */
static void put_anchor(const char *name)
{
    const char *c;

    for (c = name; *c; c++) {
        char ch = *c;

        if (ch >= 'A' && ch <= 'Z')
            ch = (char)(ch - 'A' + 'a');
        if (ch == ' ')
            ch = '-';
        if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' ||
            ch == '_')
            put(&ch, 1);
    }
}

static void put_arity(const struct ur_op *op)
{
    if (op->max_args == UR_VARARGS)
        putf("%u+", (unsigned)op->min_args);
    else if (op->min_args == op->max_args)
        putf("%u", (unsigned)op->min_args);
    else
        putf("%u..%u", (unsigned)op->min_args, (unsigned)op->max_args);
}

static void put_flags(uint32_t flags)
{
    static const struct {
        uint32_t bit;
        const char *name;
    } names[] = {{OPF_READ, "read"},       {OPF_WRITE, "write"},
                 {OPF_ADMIN, "admin"},     {OPF_USER, "user"},
                 {OPF_NOAUTH, "noauth"},   {OPF_FAST, "fast"},
                 {OPF_NOBATCH, "nobatch"}, {OPF_FREES, "frees"},
                 {OPF_UIDS, "uids"},       {OPF_SUBOK, "subok"}};
    const char *sep = "";
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (flags & names[i].bit) {
            putf("%s%s", sep, names[i].name);
            sep = ", ";
        }
    }
}

static void generate(void)
{
    uint32_t fam = 0x100, code;
    size_t i;

    put(MARK_BEGIN "\n\n", sizeof(MARK_BEGIN) + 1);
    putf("## Command index\n\n%u commands.\n\n", (unsigned)UR_OP_COUNT);
    putf("| Command | Opcode | Arity | Flags |\n|---|---|---|---|\n");
    for (i = 0; i < UR_OP_COUNT; i++) {
        const struct ur_op *op = &ur_ops[i];

        putf("| [%s](#", op->name);
        put_anchor(op->name);
        putf(") | `0x%04X` | ", (unsigned)op->code);
        put_arity(op);
        putf(" | ");
        put_flags(op->flags);
        putf(" |\n");
    }

    putf("\n## Error codes\n\n");
    putf("Binary reply status and error value code; text error prefix.\n\n");
    putf("| Code | Name | Text prefix |\n|---|---|---|\n");
    for (code = 0; code < UR_E__COUNT; code++)
        if (code == UR_E_ERR || strcmp(ur_err_name(code), "ERR") != 0)
            putf("| %u | %s | `%s` |\n", (unsigned)code, ur_err_name(code),
                 ur_err_prefix(code)); /* a code not (yet) given: none */

    for (i = 0; i < UR_OP_COUNT; i++) {
        const struct ur_op *op = &ur_ops[i];

        if ((uint32_t)(op->code >> 8) != fam) {
            fam = op->code >> 8;
            putf("\n## ");
            put_family_title(fam);
            putf("\n");
        }
        putf("\n### %s\n\n", op->name);
        putf("```\n%s%s%s\n```\n\n", op->name, op->syntax[0] ? " " : "",
             op->syntax);
        putf("%s\n\n", op->summary);
        putf("- Reply: %s\n", op->reply);
        putf("- Complexity: %s\n", op->cost);
        putf("- Opcode: `0x%04X`\n", (unsigned)op->code);
        putf("- Arity: ");
        put_arity(op);
        putf("\n- Flags: ");
        put_flags(op->flags);
        putf("\n");
    }
    put("\n" MARK_END "\n", sizeof(MARK_END) + 1);
}

/* Reads the whole file into b. 0, 1 if it does not exist, -1 on error. */
static int read_all(const char *path, struct ur_buf *b)
{
    char chunk[8192];
    FILE *f = fopen(path, "rb");
    size_t n;

    if (f == NULL)
        return errno == ENOENT ? 1 : -1;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if (ur_buf_append(b, chunk, n) != 0) {
            fclose(f);
            return -1;
        }
    }
    if (ferror(f)) {
        fclose(f);
        return -1;
    }
    fclose(f);
    return 0;
}

/* Finds s as a whole line in [p, p+len); returns its offset or -1. */
static long find_line(const char *p, size_t len, const char *s, size_t from)
{
    size_t n = strlen(s), i;

    for (i = from; i + n <= len; i++) {
        if ((i == 0 || p[i - 1] == '\n') && memcmp(p + i, s, n) == 0 &&
            (i + n == len || p[i + n] == '\n' ||
             (p[i + n] == '\r' && i + n + 1 < len && p[i + n + 1] == '\n')))
            return (long)i;
    }
    return -1;
}

/*
 * Builds the new file into `out`: what precedes the begin marker, the
 * generated part, what follows the end marker's line. Without markers the
 * generated part goes at the end (after the intro when the file is new).
 */
static void compose(const struct ur_buf *old, bool exists)
{
    long b = -1, e = -1;
    size_t after = 0;

    if (exists) {
        b = find_line(old->data, old->len, MARK_BEGIN, 0);
        if (b >= 0)
            e = find_line(old->data, old->len, MARK_END, (size_t)b);
        if (b >= 0 && e < 0)
            die("begin marker without end marker");
    }
    if (!exists) {
        put(intro, sizeof(intro) - 1);
    } else if (b < 0) {
        put(old->data, old->len);
        if (old->len > 0 && old->data[old->len - 1] != '\n')
            put("\n", 1);
        put("\n", 1);
    } else {
        put(old->data, (size_t)b);
        after = (size_t)e;
        while (after < old->len && old->data[after] != '\n')
            after++;
        if (after < old->len)
            after++;
    }
    generate();
    if (exists && b >= 0)
        put(old->data + after, old->len - after);
}

static int write_atomic(const char *path)
{
    char tmp[4096];
    FILE *f;

    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
        return -1;
    f = fopen(tmp, "wb");
    if (f == NULL)
        return -1;
    if (fwrite(out.data, 1, out.len, f) != out.len)
        goto error;
    if (fclose(f) != 0) {
        f = NULL;
        goto error;
    }
    if (rename(tmp, path) != 0) {
        f = NULL;
        goto error;
    }
    return 0;

error:
    if (f != NULL)
        fclose(f);
    remove(tmp);
    return -1;
}

int main(int argc, char **argv)
{
    struct ur_buf old;
    const char *path;
    bool check = false;
    int st, rc = 2;

    if (argc == 3 && strcmp(argv[1], "--check") == 0) {
        check = true;
        path = argv[2];
    } else if (argc == 2 && argv[1][0] != '-') {
        path = argv[1];
    } else {
        fprintf(stderr, "usage: gencmds [--check] FILE\n");
        return 2;
    }

    ur_buf_init(&old);
    ur_buf_init(&out);
    st = read_all(path, &old);
    if (st < 0) {
        perror(path);
        goto out;
    }
    if (check && st == 1) {
        fprintf(stderr, "%s: missing; run `make docs`\n", path);
        rc = 1;
        goto out;
    }
    compose(&old, st == 0);

    if (st == 0 && out.len == old.len &&
        memcmp(out.data, old.data, out.len) == 0) {
        rc = 0; /* up to date: nothing to write, time stamp kept */
    } else if (check) {
        fprintf(stderr,
                "%s: the generated command reference is out of date "
                "with protocol/ops.def; run `make docs`\n",
                path);
        rc = 1;
    } else if (write_atomic(path) != 0) {
        perror(path);
    } else {
        rc = 0;
    }

out:
    ur_buf_deinit(&old);
    ur_buf_deinit(&out);
    return rc;
}
