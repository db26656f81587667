/*
 * clients.c - see clients.h.
 */
#include "clients.h"
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>

#include "acl.h"
#include "batch.h"
#include "exec.h"
#include "pubsub.h"
#include "server.h"

void clients_add(struct server *srv, struct client *cl, uint64_t now_ms)
{
    cl->ctime_ms = cl->last_ms = now_ms;
    cl->last_op = -1;
    cl->prev = NULL;
    cl->next = srv->clist.head;
    if (cl->next != NULL)
        cl->next->prev = cl;
    srv->clist.head = cl;
}

void clients_remove(struct server *srv, struct client *cl)
{
    if (cl->prev != NULL)
        cl->prev->next = cl->next;
    else if (srv->clist.head == cl)
        srv->clist.head = cl->next;
    if (cl->next != NULL)
        cl->next->prev = cl->prev;
    cl->prev = cl->next = NULL;
    pubsub_client_gone(srv, cl);
    if (cl->flags & CLIENT_MONITOR)
        srv->clist.monitors--;
    cl->flags = 0;
    acl_session_end(cl->sess);
    free(cl->name);
    free(cl->lib_name);
    free(cl->lib_ver);
    cl->name = cl->lib_name = cl->lib_ver = NULL;
}

struct client *clients_find(struct server *srv, uint64_t id)
{
    for (struct client *cl = srv->clist.head; cl != NULL; cl = cl->next)
        if (cl->sess->id == id)
            return cl;
    return NULL;
}

int clients_set_str(char **field, const char *s, size_t n)
{
    char *copy = NULL;

    if (n > 0) {
        copy = malloc(n + 1);
        if (copy == NULL)
            return -1;
        memcpy(copy, s, n);
        copy[n] = '\0';
    }
    free(*field);
    *field = copy;
    return 0;
}

static void lower_name(char *dst, size_t cap, const char *name)
{
    size_t k = 0;

    for (; name[k] != '\0' && k + 1 < cap; k++)
        dst[k] =
            (char)(name[k] >= 'A' && name[k] <= 'Z' ? name[k] + 32 : name[k]);
    dst[k] = '\0';
}

int clients_describe(const struct server *srv, const struct client *cl,
                     uint64_t now_ms, struct ur_buf *b)
{
    struct client_bufs bf = {0};
    const struct session *s = cl->sess;
    char flags[8], cmd[64], events[3];
    char line[1024];
    size_t k = 0;
    int n;

    if (cl->io != NULL && cl->io->bufs != NULL)
        cl->io->bufs(cl, &bf);
    if (cl->flags & CLIENT_MONITOR)
        flags[k++] = 'O';
    if (cl->flags & CLIENT_REPLICA)
        flags[k++] = 'S';
    if (cl->flags & CLIENT_MASTER)
        flags[k++] = 'M';
    if (s->subs != 0)
        flags[k++] = 'P';
    if (s->multi != NULL)
        flags[k++] = 'x';
    if (k == 0)
        flags[k++] = 'N';
    flags[k] = '\0';
    k = 0;
    if (bf.reading)
        events[k++] = 'r';
    if (bf.writing)
        events[k++] = 'w';
    events[k] = '\0';
    if (cl->last_op >= 0)
        lower_name(cmd, sizeof(cmd), ur_ops[cl->last_op].name);
    else
        strcpy(cmd, "NULL");
    n = snprintf(
        line, sizeof(line),
        "id=%llu addr=%s laddr=%s fd=%d name=%s age=%llu idle=%llu "
        "flags=%s db=0 sub=%u psub=%u ssub=0 multi=%d qbuf=%zu "
        "qbuf-free=%zu argv-mem=0 multi-mem=0 rbs=%zu rbp=%zu "
        "obl=0 oll=0 omem=%zu tot-mem=%zu events=%s cmd=%s "
        "user=%s redir=-1 resp=%d lib-name=%s lib-ver=%s "
        "proto=%s",
        (unsigned long long)s->id, cl->addr, cl->laddr, cl->fd,
        cl->name ? cl->name : "",
        (unsigned long long)((now_ms - cl->ctime_ms) / 1000),
        (unsigned long long)((now_ms - cl->last_ms) / 1000), flags,
        pubsub_client_count(cl, false), pubsub_client_count(cl, true),
        s->multi != NULL ? 0 : -1, bf.qbuf, bf.qbuf_cap - bf.qbuf, bf.qbuf_cap,
        bf.qbuf, bf.obuf_cap, bf.qbuf_cap + bf.obuf_cap, events, cmd,
        acl_session_user(s), s->proto == REPLY_RESP3 ? 3 : 2,
        cl->lib_name ? cl->lib_name : "", cl->lib_ver ? cl->lib_ver : "",
        s->proto == REPLY_BIN ? "binary" : "resp");
    (void)srv;
    if (n < 0)
        return -1;
    if ((size_t)n >= sizeof(line))
        n = (int)sizeof(line) - 1;
    return ur_buf_append(b, line, (size_t)n);
}

void clients_push_begin(struct client *cl, struct reply *r)
{
    reply_begin_push(r, cl->io->push_out(cl),
                     (enum reply_proto)cl->sess->proto);
}

bool clients_push_end(struct client *cl, struct reply *r)
{
    reply_end(r);
    return cl->io->push_done(cl);
}

void clients_reset(struct server *srv, struct session *sess)
{
    struct client *cl = sess->client;

    batch_multi_end(sess);
    acl_session_end(sess);
    sess->authed = false;
    sess->authed = !session_needs_auth(srv, sess);
    if (cl == NULL)
        return;
    pubsub_client_gone(srv, cl);
    if (cl->flags & CLIENT_MONITOR) {
        cl->flags &= ~(uint32_t)CLIENT_MONITOR;
        srv->clist.monitors--;
    }
    clients_set_str(&cl->name, NULL, 0);
}

bool clients_monitor(struct server *srv, struct session *sess)
{
    struct client *cl = sess->client;

    if (cl == NULL || cl->io == NULL || cl->io->push_out == NULL)
        return false;
    if (!(cl->flags & CLIENT_MONITOR)) {
        cl->flags |= CLIENT_MONITOR;
        srv->clist.monitors++;
    }
    return true;
}

/* Appends argument text quoted as Redis's MONITOR does (sdscatrepr):
 * printable bytes as they are, \" \\ \n \r \t, the rest as \xHH. */
static int put_repr(struct ur_buf *b, const char *s, size_t n)
{
    if (ur_buf_append(b, " \"", 2) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[5];
        size_t len = 2;

        esc[0] = '\\';
        switch (c) {
        case '"':
        case '\\':
            esc[1] = (char)c;
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        case '\t':
            esc[1] = 't';
            break;
        default:
            if (c >= 0x20 && c < 0x7f) {
                esc[0] = (char)c;
                len = 1;
            } else {
                snprintf(esc, sizeof(esc), "\\x%02x", c);
                len = 4;
            }
        }
        if (ur_buf_append(b, esc, len) != 0)
            return -1;
    }
    return ur_buf_append(b, "\"", 1);
}

static bool word(const struct ur_arg *a, const char *w)
{
    return a->kind == UR_ARG_STR && a->len == strlen(w) &&
           strncasecmp(a->str, w, a->len) == 0;
}

bool clients_arg_secret(const struct ur_op *op, uint32_t argc,
                        const struct ur_arg *argv, uint32_t i)
{
    if (op->code == UR_OP_AUTH)
        return true;
    if (op->code == UR_OP_HELLO) {
        for (uint32_t a = 1; a < i && a < argc; a++)
            if (word(&argv[a], "AUTH"))
                return i == a + 1 || (i == a + 2 && !word(&argv[i], "SETNAME"));
        return false;
    }
    if (op->code == UR_OP_ACL)
        return acl_arg_secret(argc, argv, i);
    if (op->code == UR_OP_CONFIG && i >= 2 && i % 2 == 0 &&
        word(&argv[0], "SET"))
        return argv[i - 1].kind == UR_ARG_STR &&
               config_is_secret(argv[i - 1].str, argv[i - 1].len);
    return false;
}

void clients_monitor_feed(struct server *srv, const struct session *sess,
                          const struct ur_op *op, uint32_t argc,
                          const struct ur_arg *argv)
{
    const struct client *from = sess->client;
    struct ur_buf line = {0};
    struct timeval tv;
    char head[128], name[64];
    struct client *cl, *next;
    bool oom = false;
    int n;

    if (from == NULL || srv->clist.monitors == 0)
        return;
    gettimeofday(&tv, NULL);
    lower_name(name, sizeof(name), op->name);
    n = snprintf(head, sizeof(head), "%lld.%06ld [0 %s]", (long long)tv.tv_sec,
                 (long)tv.tv_usec, from->addr);
    oom |= ur_buf_append(&line, head, (size_t)n) != 0;
    oom |= put_repr(&line, name, strlen(name)) != 0;
    for (uint32_t i = 0; i < argc && !oom; i++) {
        char num[24];

        if (clients_arg_secret(op, argc, argv, i))
            oom |= put_repr(&line, "(redacted)", 10) != 0;
        else if (argv[i].kind == UR_ARG_INT)
            oom |= put_repr(&line, num, ur_fmt_u64(num, argv[i].num)) != 0;
        else
            oom |= put_repr(&line, argv[i].str, argv[i].len) != 0;
    }
    if (oom) {
        ur_buf_deinit(&line);
        return;
    }
    for (cl = srv->clist.head; cl != NULL; cl = next) {
        struct reply r;

        next = cl->next; /* a push may close cl */
        if (!(cl->flags & CLIENT_MONITOR) || cl == from)
            continue;
        clients_push_begin(cl, &r);
        if (cl->sess->proto == REPLY_BIN) {
            reply_str(&r, line.data, line.len);
        } else {
            /* A status line, as Redis sends it on either RESP version. */
            char save = '\0';
            if (ur_buf_reserve(&line, 1) == 0) {
                save = line.data[line.len];
                line.data[line.len] = '\0';
                reply_status(&r, line.data);
                line.data[line.len] = save;
            }
        }
        clients_push_end(cl, &r);
    }
    ur_buf_deinit(&line);
}
