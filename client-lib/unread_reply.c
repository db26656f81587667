/*
 * unread_reply.c - reply trees: a validated reply body copied into one
 * allocation the caller owns (struct unread_reply), and replies made on the
 * client side. No I/O, no handle.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "unread_int.h"

struct tree {
    struct ur_val_reader rd;
    struct unread_reply *pool; /* every node; arrays take runs of it */
    size_t next;               /* first free node */
    char *strs;                /* string bytes, after the nodes */
};

/* Bytes an error value's text takes: "PREFIX message". */
static size_t err_text_len(const struct ur_val *v)
{
    return strlen(ur_err_prefix(v->code)) + 1 + v->len;
}

static char *tree_str(struct tree *t, const char *s, size_t n)
{
    char *d = t->strs;

    if (n > 0)
        memcpy(d, s, n);
    d[n] = '\0';
    t->strs += n + 1;
    return d;
}

/* Fills node from the next value in pre-order; depth is bounded by the
 * frame parser (UR_MAX_DEPTH). */
static bool tree_fill(struct tree *t, struct unread_reply *node)
{
    struct ur_val v;
    const char *prefix;
    size_t i, plen;

    if (!ur_val_next(&t->rd, &v))
        return false;
    memset(node, 0, sizeof(*node));
    node->kind = v.kind;
    switch (v.kind) {
    case UR_VAL_INT:
    case UR_VAL_SINT:
        node->integer = v.num;
        break;
    case UR_VAL_STR:
    case UR_VAL_STATUS:
        node->str = tree_str(t, v.str, v.len);
        node->len = v.len;
        break;
    case UR_VAL_ERR:
        prefix = ur_err_prefix(v.code);
        plen = strlen(prefix);
        node->code = v.code;
        node->len = err_text_len(&v);
        node->str = t->strs;
        memcpy(t->strs, prefix, plen);
        t->strs[plen] = ' ';
        t->strs += plen + 1;
        tree_str(t, v.str, v.len);
        break;
    case UR_VAL_NIL:
        break;
    case UR_VAL_ARR:
        node->n = v.count;
        if (v.count == 0)
            break;
        node->elem = t->pool + t->next;
        t->next += v.count;
        for (i = 0; i < node->n; i++)
            if (!tree_fill(t, &node->elem[i]))
                return false;
        break;
    default:
        return false;
    }
    return true;
}

/* Two passes over the body: count, then fill. Nodes come first in the
 * allocation (each array's elements contiguous), then the strings. */
int uc_tree_build(const char *body, size_t len, struct unread_reply **out)
{
    struct tree t;
    struct ur_val v;
    struct unread_reply *root = NULL;
    size_t nodes = 0, bytes = 0;

    ur_val_reader_init(&t.rd, body, len);
    while (ur_val_next(&t.rd, &v)) {
        nodes++;
        if (v.kind == UR_VAL_STR || v.kind == UR_VAL_STATUS)
            bytes += (size_t)v.len + 1;
        else if (v.kind == UR_VAL_ERR)
            bytes += err_text_len(&v) + 1;
    }
    /* A body of at most 64 MiB cannot overflow this on 64-bit hosts. */
    if (nodes == 0 || nodes > (SIZE_MAX - bytes) / sizeof(*root))
        return UNREAD_EPROTO;
    root = malloc(nodes * sizeof(*root) + bytes);
    if (root == NULL)
        return UNREAD_ENOMEM;
    ur_val_reader_init(&t.rd, body, len);
    t.pool = root;
    t.next = 1;
    t.strs = (char *)(root + nodes);
    if (!tree_fill(&t, root)) {
        free(root);
        return UNREAD_EPROTO;
    }
    *out = root;
    return 0;
}

void unread_reply_free(struct unread_reply *r)
{
    free(r);
}

struct unread_reply *uc_reply_error(int code, const char *text)
{
    size_t n = strlen(text);
    struct unread_reply *r = malloc(sizeof(*r) + n + 1);

    if (r == NULL)
        return NULL;
    memset(r, 0, sizeof(*r));
    r->kind = UNREAD_REPLY_ERROR;
    r->code = code;
    r->str = (char *)(r + 1);
    memcpy(r->str, text, n + 1);
    r->len = n;
    return r;
}
