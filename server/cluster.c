/*
 * cluster.c - see cluster.h: the node table, slot ownership and its
 * epochs, the config file, and the routing question.
 *
 * The table: nodes[0] is myself; the others in the order they were
 * learned, a forgotten one leaving a free entry (indices held in owner[]
 * and in links stay valid). owner[slot] is the index of the node this
 * node believes serves the slot; each node's nslots counts its entries.
 *
 * The rules, Redis Cluster's where it has one:
 *   - a master's record claims slots at its config epoch; for each
 *     claimed slot, a claim with a higher epoch than the current owner's
 *     (or of an unowned slot) wins it; a record no longer claiming a slot
 *     this table gives it releases it (its sender is the one writer of
 *     its own claims, and records are ordered by their version);
 *   - current_epoch is the highest epoch seen anywhere; a promotion or a
 *     BUMPEPOCH takes current_epoch + 1;
 *   - two masters with one config epoch: the one with the smaller id
 *     bumps its own (Redis's clusterHandleConfigEpochCollision);
 *   - a master whose every slot another master took becomes its replica.
 *
 * The config file is Redis's nodes.conf: one CLUSTER NODES line per node
 * (myself flagged) and a `vars` line; written whole to a temporary file,
 * fsynced, renamed over the old one, the directory fsynced.
 */
#include "cluster.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <unistd.h>

#include "cluster_copy.h"
#include "cluster_keys.h"
#include "cluster_link.h"
#include "cmds.h"
#include "fsutil.h"
#include "log.h"
#include "repl.h"

/* A node learned from a record (not MEET) waits at most this long for
 * the start-up exchange before the cluster serves anyway. */
#define START_WAIT_MAX_MS 5000u
/* FORGET keeps a node out of the table this long, as Redis does. */
#define FORGET_MS 60000u

static uint64_t mono_ms(void)
{
    return server_mono_ms();
}

static void new_id(char id[CLUSTER_ID_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[CLUSTER_ID_LEN / 2];

    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
        uint64_t x =
            server_now_ms() ^ ((uint64_t)getpid() << 32) ^ server_mono_ns();
        for (size_t i = 0; i < sizeof(raw); i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            raw[i] = (unsigned char)(x >> 56);
        }
    }
    for (size_t i = 0; i < sizeof(raw); i++) {
        id[2 * i] = hex[raw[i] >> 4];
        id[2 * i + 1] = hex[raw[i] & 15];
    }
    id[CLUSTER_ID_LEN] = '\0';
}

static bool id_valid(const char *id, size_t len)
{
    if (len != CLUSTER_ID_LEN)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
            return false;
    return true;
}

static struct cluster_node *myself(struct cluster *c)
{
    return &c->nodes[0];
}

uint32_t cluster_node_by_id(const struct cluster *c, const char *id, size_t len)
{
    if (len != CLUSTER_ID_LEN)
        return CLUSTER_NONE;
    for (uint32_t i = 0; i < c->nnodes; i++)
        if (c->nodes[i].used && !(c->nodes[i].flags & CN_HANDSHAKE) &&
            memcmp(c->nodes[i].id, id, CLUSTER_ID_LEN) == 0)
            return i;
    return CLUSTER_NONE;
}

static uint32_t node_by_addr(const struct cluster *c, const char *ip,
                             uint32_t port)
{
    for (uint32_t i = 0; i < c->nnodes; i++)
        if (c->nodes[i].used && c->nodes[i].port == port &&
            strcmp(c->nodes[i].ip, ip) == 0)
            return i;
    return CLUSTER_NONE;
}

bool cluster_myself_master(const struct cluster *c)
{
    return (c->nodes[0].flags & CN_MASTER) != 0;
}

uint32_t cluster_data_owner(const struct cluster *c)
{
    if (cluster_myself_master(c))
        return 0;
    return cluster_node_by_id(c, c->nodes[0].master_id,
                              strlen(c->nodes[0].master_id));
}

const struct cluster_node *cluster_slot_owner(const struct cluster *c,
                                              unsigned slot)
{
    uint16_t o = c->owner[slot & (UR_SLOTS - 1)];

    return o == CLUSTER_NONE ? NULL : &c->nodes[o];
}

/* A free entry (or a new one) for a node; CLUSTER_NONE when full. */
static uint32_t node_alloc(struct cluster *c)
{
    struct cluster_node *grown;

    for (uint32_t i = 1; i < c->nnodes; i++)
        if (!c->nodes[i].used) {
            memset(&c->nodes[i], 0, sizeof(c->nodes[i]));
            c->nodes[i].used = true;
            return i;
        }
    if (c->nnodes >= CLUSTER_MAX_NODES)
        return CLUSTER_NONE;
    grown = realloc(c->nodes, (c->nnodes + 1) * sizeof(*grown));
    if (grown == NULL)
        return CLUSTER_NONE;
    c->nodes = grown;
    memset(&c->nodes[c->nnodes], 0, sizeof(c->nodes[0]));
    c->nodes[c->nnodes].used = true;
    return c->nnodes++;
}

uint32_t cluster_known_nodes(const struct cluster *c)
{
    uint32_t n = 0;

    for (uint32_t i = 0; i < c->nnodes; i++)
        n += c->nodes[i].used;
    return n;
}

/* Masters owning at least one slot (CLUSTER INFO cluster_size). */
static uint32_t cluster_size(const struct cluster *c)
{
    uint32_t n = 0;

    for (uint32_t i = 0; i < c->nnodes; i++)
        n += c->nodes[i].used && c->nodes[i].nslots > 0;
    return n;
}

/* ---- slots and the state -------------------------------------------- */

static void set_migrating(struct cluster *c, unsigned slot, uint32_t node);
static void set_importing(struct cluster *c, unsigned slot, uint32_t node);
static void mark_dirty(struct cluster *c);
static void mark_dirty_sync(struct cluster *c);

static void slot_set(struct cluster *c, unsigned slot, uint32_t node)
{
    uint16_t old = c->owner[slot];

    if (old == node)
        return;
    if (old != CLUSTER_NONE)
        c->nodes[old].nslots--;
    else
        c->assigned++;
    if (node != CLUSTER_NONE)
        c->nodes[node].nslots++;
    else
        c->assigned--;
    c->owner[slot] = (uint16_t)node;
    /* A slot that became mine is no longer imported; one that left me no
     * longer migrates (Redis's SETSLOT NODE and its UPDATE rules). */
    if (node == 0 && c->importing[slot] != CLUSTER_NONE)
        set_importing(c, slot, CLUSTER_NONE);
    if (old == 0 && c->migrating[slot] != CLUSTER_NONE)
        set_migrating(c, slot, CLUSTER_NONE);
}

/* ---- migration states ------------------------------------------------- */

static bool slot_open(const struct cluster *c, unsigned slot)
{
    return c->migrating[slot] != CLUSTER_NONE ||
           c->importing[slot] != CLUSTER_NONE;
}

static void set_migrating(struct cluster *c, unsigned slot, uint32_t node)
{
    bool was = slot_open(c, slot);

    c->migrating[slot] = (uint16_t)node;
    c->nopen = c->nopen - was + slot_open(c, slot);
}

static void set_importing(struct cluster *c, unsigned slot, uint32_t node)
{
    bool was = slot_open(c, slot);

    c->importing[slot] = (uint16_t)node;
    c->nopen = c->nopen - was + slot_open(c, slot);
}

static void states_clear(struct cluster *c)
{
    for (unsigned s = 0; s < UR_SLOTS && c->nopen > 0; s++) {
        set_migrating(c, s, CLUSTER_NONE);
        set_importing(c, s, CLUSTER_NONE);
    }
}

/* Node idx leaves the table: the states naming it go, as Redis's
 * clusterDelNode drops them, and so do its marks. */
static void node_free(struct cluster *c, uint32_t idx)
{
    for (unsigned s = 0; s < UR_SLOTS && c->nopen > 0; s++) {
        if (c->migrating[s] == idx)
            set_migrating(c, s, CLUSTER_NONE);
        if (c->importing[s] == idx)
            set_importing(c, s, CLUSTER_NONE);
    }
    free(c->nodes[idx].marks);
    memset(&c->nodes[idx], 0, sizeof(c->nodes[idx]));
}

/* Appends myself's states as CLUSTER NODES shows them: " [5->-id]" for a
 * slot migrating to node id, " [5-<-id]" for one imported from it. */
static void marks_text(const struct cluster *c, struct ur_buf *b)
{
    char tmp[64 + CLUSTER_ID_LEN];
    uint32_t seen = 0;
    int n;

    for (unsigned s = 0; s < UR_SLOTS && seen < c->nopen; s++) {
        seen += slot_open(c, s);
        if (c->migrating[s] != CLUSTER_NONE) {
            n = snprintf(tmp, sizeof(tmp), "%s[%u->-%s]", b->len ? " " : "", s,
                         c->nodes[c->migrating[s]].id);
            (void)ur_buf_append(b, tmp, (size_t)n);
        }
        if (c->importing[s] != CLUSTER_NONE) {
            n = snprintf(tmp, sizeof(tmp), "%s[%u-<-%s]", b->len ? " " : "", s,
                         c->nodes[c->importing[s]].id);
            (void)ur_buf_append(b, tmp, (size_t)n);
        }
    }
}

/* One mark "[5->-id]" or "[5-<-id]" (brackets included): its slot, kind
 * (true: migrating) and id; false when it is not one. */
static bool parse_mark(const char *t, size_t n, unsigned *slot, bool *migr,
                       const char **id)
{
    uint64_t v;
    size_t k = 1;

    if (n < 2 || t[0] != '[' || t[n - 1] != ']')
        return false;
    while (k < n && t[k] >= '0' && t[k] <= '9')
        k++;
    if (k == 1 || !ur_parse_u64(t + 1, k - 1, &v) || v >= UR_SLOTS ||
        n - k != 3 + CLUSTER_ID_LEN + 1)
        return false;
    if (memcmp(t + k, "->-", 3) == 0)
        *migr = true;
    else if (memcmp(t + k, "-<-", 3) == 0)
        *migr = false;
    else
        return false;
    if (!id_valid(t + k + 3, CLUSTER_ID_LEN))
        return false;
    *slot = (unsigned)v;
    *id = t + k + 3;
    return true;
}

/* The marks among a slots text's words (space-separated), malloc'ed, or
 * NULL when there are none. */
static char *marks_of(const char *s, size_t n)
{
    struct ur_buf b = {0};
    char *out;

    for (size_t pos = 0; pos < n;) {
        size_t w = 0;

        while (pos < n && s[pos] == ' ')
            pos++;
        while (pos + w < n && s[pos + w] != ' ')
            w++;
        if (w > 0 && s[pos] == '[') {
            if (b.len > 0)
                (void)ur_buf_append(&b, " ", 1);
            (void)ur_buf_append(&b, s + pos, w);
        }
        pos += w;
    }
    if (b.len == 0) {
        ur_buf_deinit(&b);
        return NULL;
    }
    out = malloc(b.len + 1);
    if (out != NULL) {
        memcpy(out, b.data, b.len);
        out[b.len] = '\0';
    }
    ur_buf_deinit(&b);
    return out;
}

/* myself's states become the ones text lists (NULL: none); marks naming a
 * node this table does not know are left out, and logged. -1 when a word
 * is not a mark (nothing changed then). */
static int apply_marks(struct cluster *c, const char *text)
{
    size_t n = text ? strlen(text) : 0;
    unsigned slot;
    bool migr;
    const char *id;

    for (size_t pos = 0; pos < n;) {
        size_t w = 0;

        while (pos < n && text[pos] == ' ')
            pos++;
        while (pos + w < n && text[pos + w] != ' ')
            w++;
        if (w > 0 && !parse_mark(text + pos, w, &slot, &migr, &id))
            return -1;
        pos += w;
    }
    states_clear(c);
    for (size_t pos = 0; pos < n;) {
        size_t w = 0;
        uint32_t idx;

        while (pos < n && text[pos] == ' ')
            pos++;
        while (pos + w < n && text[pos + w] != ' ')
            w++;
        if (w == 0)
            break;
        (void)parse_mark(text + pos, w, &slot, &migr, &id);
        pos += w;
        idx = cluster_node_by_id(c, id, CLUSTER_ID_LEN);
        if (idx == CLUSTER_NONE || idx == 0) {
            log_warn("cluster: slot %u %s node %.40s, which this node does "
                     "not know: state dropped",
                     slot, migr ? "migrating to" : "importing from", id);
            continue;
        }
        if (migr)
            set_migrating(c, slot, idx);
        else
            set_importing(c, slot, idx);
    }
    return 0;
}

/* Node `to`, a replica of node old_id, is a master now (sentinel promoted
 * it): the moves this node had with old_id go on with it (it carries its
 * old master's states), so that an ASK names a node that serves. */
static void follow_promotion(struct cluster *c, const char *old_id, uint32_t to)
{
    uint32_t m = cluster_node_by_id(c, old_id, strlen(old_id));
    uint32_t n = 0;

    if (m == CLUSTER_NONE || m == 0 || c->nopen == 0)
        return;
    for (unsigned s = 0; s < UR_SLOTS; s++) {
        if (c->migrating[s] == m) {
            set_migrating(c, s, to);
            n++;
        }
        if (c->importing[s] == m) {
            set_importing(c, s, to);
            n++;
        }
    }
    if (n > 0) {
        log_info("cluster: %u slot moves with %s go on with %s, its promoted "
                 "replica",
                 n, c->nodes[m].id, c->nodes[to].id);
        mark_dirty_sync(c);
    }
}

/* A replica's states are its master's (from its record): applied when
 * that record arrives and when the node starts to follow a master. */
static void follow_marks(struct cluster *c)
{
    uint32_t m;

    if (cluster_myself_master(c))
        return;
    m = cluster_node_by_id(c, c->nodes[0].master_id,
                           strlen(c->nodes[0].master_id));
    if (apply_marks(c, m != CLUSTER_NONE ? c->nodes[m].marks : NULL) == 0)
        mark_dirty(c);
}

/* cluster_state: ok when every slot has an owner (or full coverage is not
 * required) and the start-up exchange has ended. */
static bool state_now(const struct cluster *c)
{
    return c->started && (c->assigned == UR_SLOTS ||
                          !c->srv->cfg.cluster_require_full_coverage);
}

/* Logs a change of the state (CONFIG SET of cluster-require-full-coverage
 * changes it too: the cron sees it). */
static void state_update(struct cluster *c)
{
    bool ok = state_now(c);

    if (ok != c->state_ok)
        log_info("cluster state changed: %s", ok ? "ok" : "fail");
    c->state_ok = ok;
}

/* ---- the config file ------------------------------------------------- */

/* Appends node i's CLUSTER NODES line (no newline). */
static void node_line(const struct cluster *c, uint32_t i, bool file,
                      struct ur_buf *b);

/* Writes the file whole; with sync, fsynced with its directory (without:
 * a crash of the process keeps it, one of the machine may not, as Redis's
 * clusterSaveConfig without do_fsync). */
static int save_config(struct cluster *c, bool sync)
{
    struct ur_buf b = {0};
    char tmp[sizeof(c->path) + 16], prev[sizeof(c->path) + 16], vars[160];
    int fd = -1, saved;

    for (uint32_t i = 0; i < c->nnodes; i++) {
        if (!c->nodes[i].used || (c->nodes[i].flags & CN_HANDSHAKE))
            continue;
        node_line(c, i, true, &b);
        if (ur_buf_append(&b, "\n", 1) != 0)
            goto error;
    }
    snprintf(vars, sizeof(vars),
             "vars currentEpoch %llu lastVoteEpoch 0 recordVersion %llu\n",
             (unsigned long long)c->current_epoch,
             (unsigned long long)c->nodes[0].version);
    if (ur_buf_append(&b, vars, strlen(vars)) != 0)
        goto error;
    snprintf(tmp, sizeof(tmp), "%s.tmp", c->path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || fs_write_all(fd, b.data, b.len) != 0 ||
        (sync && fsync(fd) != 0))
        goto error;
    if (close(fd) != 0) {
        fd = -1;
        goto error;
    }
    fd = -1;
    /* Unsynced, the old file steps aside first: ext4 flushes a file that
     * is renamed over another (auto_da_alloc), which would cost what the
     * fsync saves. A crash between the two renames leaves only the
     * previous file, which load_config reads. */
    snprintf(prev, sizeof(prev), "%s.prev", c->path);
    if (!sync && ((unlink(prev) != 0 && errno != ENOENT) ||
                  (rename(c->path, prev) != 0 && errno != ENOENT)))
        goto error;
    if (rename(tmp, c->path) != 0 ||
        (sync && fs_fsync_dir(c->srv->cfg.dir) != 0))
        goto error;
    ur_buf_deinit(&b);
    if (sync)
        c->dirty_sync = false;
    c->dirty = c->dirty_sync; /* the cron's next save makes it durable */
    return 0;
error:
    saved = errno;
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    ur_buf_deinit(&b);
    errno = saved;
    return -1;
}

int cluster_save_config(struct cluster *c)
{
    return save_config(c, true);
}

/* The file is written by the cron (a burst of changes, one write), or at
 * once by SAVECONFIG and before a reply that depends on it. */
static void mark_dirty(struct cluster *c)
{
    c->dirty = true;
}

/* A change of this node's own record, its moves or its table's members:
 * the next save is fsynced. Others' records (mark_dirty) are written
 * without: a restarted node hears them again in its start-up exchange,
 * and a move touches every node's table many times a second. */
static void mark_dirty_sync(struct cluster *c)
{
    c->dirty = c->dirty_sync = true;
}

/* Parses "first-last" or "slot" into a range; false when it is not one. */
static bool parse_range(const char *s, size_t n, unsigned *first,
                        unsigned *last)
{
    const char *dash = memchr(s, '-', n);
    uint64_t a, b;

    if (dash == NULL) {
        if (!ur_parse_u64(s, n, &a) || a >= UR_SLOTS)
            return false;
        *first = *last = (unsigned)a;
        return true;
    }
    if (!ur_parse_u64(s, (size_t)(dash - s), &a) ||
        !ur_parse_u64(dash + 1, n - (size_t)(dash - s) - 1, &b) ||
        a >= UR_SLOTS || b >= UR_SLOTS || a > b)
        return false;
    *first = (unsigned)a;
    *last = (unsigned)b;
    return true;
}

/* Splits "ip:port@cport[,hostname]". */
static bool parse_addr(const char *s, char *ip, size_t ipcap, uint32_t *port,
                       uint32_t *cport)
{
    const char *at = strchr(s, '@'), *colon;
    uint64_t p, cp;
    char num[16];
    size_t n;

    if (at == NULL)
        return false;
    colon = at;
    while (colon > s && colon[-1] != ':')
        colon--;
    if (colon == s)
        return false;
    n = (size_t)(colon - 1 - s);
    if (n >= ipcap)
        return false;
    memcpy(ip, s, n);
    ip[n] = '\0';
    n = (size_t)(at - colon);
    if (n == 0 || n >= sizeof(num))
        return false;
    memcpy(num, colon, n);
    num[n] = '\0';
    if (!ur_parse_u64(num, n, &p) || p > 65535)
        return false;
    n = strcspn(at + 1, ",");
    if (n == 0 || n >= sizeof(num))
        return false;
    memcpy(num, at + 1, n);
    num[n] = '\0';
    if (!ur_parse_u64(num, n, &cp) || cp > 65535)
        return false;
    *port = (uint32_t)p;
    *cport = (uint32_t)cp;
    return true;
}

/* One line of the config file into the table. 0, or -1 with a message. */
static int load_line(struct cluster *c, char *line, bool *seen_myself,
                     struct ur_buf *marks, char *err, size_t errlen)
{
    char *tok[32], *save = NULL, *t;
    size_t ntok = 0;
    struct cluster_node *n;
    uint32_t idx;
    uint64_t v;

    /* The fixed fields (and a vars line's pairs); slots are read one by
     * one after them, however many. */
    for (t = strtok_r(line, " \t", &save); t != NULL;
         t = ntok < 8 || strcmp(tok[0], "vars") == 0
                 ? strtok_r(NULL, " \t", &save)
                 : NULL) {
        if (ntok == sizeof(tok) / sizeof(tok[0])) {
            snprintf(err, errlen, "too many fields");
            return -1;
        }
        tok[ntok++] = t;
    }
    if (ntok == 0)
        return 0;
    if (strcmp(tok[0], "vars") == 0) {
        for (size_t i = 1; i + 1 < ntok; i += 2) {
            if (!ur_parse_u64(tok[i + 1], strlen(tok[i + 1]), &v)) {
                snprintf(err, errlen, "bad value of %s", tok[i]);
                return -1;
            }
            if (strcmp(tok[i], "currentEpoch") == 0)
                c->current_epoch = v;
            else if (strcmp(tok[i], "recordVersion") == 0)
                c->nodes[0].version = v;
        }
        return 0;
    }
    if (ntok < 8) {
        snprintf(err, errlen, "a node line has %zu fields, at least 8 wanted",
                 ntok);
        return -1;
    }
    if (!id_valid(tok[0], strlen(tok[0]))) {
        snprintf(err, errlen, "bad node id '%.48s'", tok[0]);
        return -1;
    }
    if (strstr(tok[2], "myself") != NULL) {
        if (*seen_myself) {
            snprintf(err, errlen, "two nodes flagged myself");
            return -1;
        }
        *seen_myself = true;
        idx = 0;
    } else {
        if (cluster_node_by_id(c, tok[0], CLUSTER_ID_LEN) != CLUSTER_NONE) {
            snprintf(err, errlen, "node %s listed twice", tok[0]);
            return -1;
        }
        idx = node_alloc(c);
        if (idx == CLUSTER_NONE) {
            snprintf(err, errlen, "too many nodes");
            return -1;
        }
    }
    n = &c->nodes[idx];
    n->used = true;
    memcpy(n->id, tok[0], CLUSTER_ID_LEN + 1);
    if (!parse_addr(tok[1], n->ip, sizeof(n->ip), &n->port, &n->cport)) {
        snprintf(err, errlen, "bad address '%.64s'", tok[1]);
        return -1;
    }
    n->flags = (idx == 0 ? CN_MYSELF : 0) |
               (strstr(tok[2], "slave") != NULL ? CN_REPLICA : CN_MASTER);
    if (n->ip[0] == '\0' && idx != 0)
        n->flags |= CN_NOADDR;
    if (strcmp(tok[3], "-") != 0) {
        if (!id_valid(tok[3], strlen(tok[3]))) {
            snprintf(err, errlen, "bad master id '%.48s'", tok[3]);
            return -1;
        }
        memcpy(n->master_id, tok[3], CLUSTER_ID_LEN + 1);
    }
    if (!ur_parse_u64(tok[6], strlen(tok[6]), &n->config_epoch)) {
        snprintf(err, errlen, "bad config epoch '%.24s'", tok[6]);
        return -1;
    }
    for (t = strtok_r(NULL, " \t", &save); t != NULL;
         t = strtok_r(NULL, " \t", &save)) {
        unsigned first, last, slot;
        const char *id;
        bool migr;

        if (t[0] == '[') {
            /* a migration mark: myself's, applied once every node is
             * known (cluster_config_parse) */
            if (!parse_mark(t, strlen(t), &slot, &migr, &id)) {
                snprintf(err, errlen, "bad migration mark '%.64s'", t);
                return -1;
            }
            if (idx == 0) {
                if (marks->len > 0)
                    (void)ur_buf_append(marks, " ", 1);
                (void)ur_buf_append(marks, t, strlen(t));
            }
            continue;
        }
        if (!parse_range(t, strlen(t), &first, &last)) {
            snprintf(err, errlen, "bad slot range '%.24s'", t);
            return -1;
        }
        for (unsigned s = first; s <= last; s++)
            slot_set(c, s, idx);
    }
    return 0;
}

int cluster_config_parse(struct cluster *c, const char *data, size_t len,
                         const char *name, char *err, size_t errlen)
{
    bool seen_myself = false;
    size_t pos = 0, lineno = 0;
    /* A line holds at most every slot as a word of its own, and marks. */
    size_t cap = 64 * 1024 + (size_t)UR_SLOTS * 8;
    char *line = malloc(cap), why[256];
    struct ur_buf marks = {0};

    if (line == NULL) {
        snprintf(err, errlen, "%s: out of memory", name);
        return -1;
    }
    while (pos < len) {
        const char *nl = memchr(data + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (data + pos)) : len - pos;

        lineno++;
        if (n >= cap) {
            snprintf(err, errlen, "%s line %zu: too long", name, lineno);
            goto error;
        }
        memcpy(line, data + pos, n);
        line[n] = '\0';
        pos += n + (nl != NULL);
        if (memchr(line, '\0', n) != NULL) {
            snprintf(err, errlen, "%s line %zu: a NUL byte", name, lineno);
            goto error;
        }
        if (load_line(c, line, &seen_myself, &marks, why, sizeof(why)) != 0) {
            snprintf(err, errlen, "%s line %zu: %s", name, lineno, why);
            goto error;
        }
    }
    if (!seen_myself) {
        snprintf(err, errlen, "%s: no node is flagged myself", name);
        goto error;
    }
    if (marks.len > 0) {
        (void)ur_buf_append(&marks, "", 1);
        if (marks.data == NULL || apply_marks(c, marks.data) != 0) {
            snprintf(err, errlen, "%s: bad migration marks", name);
            goto error;
        }
    }
    free(line);
    ur_buf_deinit(&marks);
    for (uint32_t i = 0; i < c->nnodes; i++)
        if (c->nodes[i].used && c->current_epoch < c->nodes[i].config_epoch)
            c->current_epoch = c->nodes[i].config_epoch;
    return 0;
error:
    free(line);
    ur_buf_deinit(&marks);
    return -1;
}

/* Reads the config file; 1 when there is none (a new node). */
static int load_config(struct cluster *c, char *err, size_t errlen)
{
    struct fs_map m;
    char prev[sizeof(c->path) + 16];
    int rc;

    snprintf(prev, sizeof(prev), "%s.prev", c->path);
    if (fs_map_open(&m, c->path) != 0 &&
        (errno != ENOENT || fs_map_open(&m, prev) != 0)) {
        if (errno == ENOENT)
            return 1;
        snprintf(err, errlen, "cannot read %s: %s", c->path, strerror(errno));
        return -1;
    }
    if (m.len == 0) {
        fs_map_close(&m);
        return 1;
    }
    rc = cluster_config_parse(c, m.data, m.len, c->path, err, errlen);
    fs_map_close(&m);
    return rc;
}

/* ---- set up ----------------------------------------------------------- */

/* myself's address as others should dial it. */
static void myself_addr(struct cluster *c)
{
    const struct config *cfg = &c->srv->cfg;
    struct cluster_node *me = myself(c);
    struct in_addr a4;
    struct in6_addr a6;

    /* with tls-cluster yes the nodes and clients dial the TLS port (the
     * links are TLS: cluster_link.c), as Redis announces it */
    me->port = cfg->cluster_announce_port ? cfg->cluster_announce_port
               : cfg->tls_cluster         ? cfg->tls_port
                                          : cfg->port;
    me->cport = cfg->cluster_announce_bus_port ? cfg->cluster_announce_bus_port
                                               : me->port + 10000;
    if (me->cport > 65535)
        me->cport = 0;
    char first[64];

    snprintf(first, sizeof(first), "%.*s", (int)strcspn(cfg->bind, " "),
             cfg->bind);
    if (cfg->cluster_announce_ip[0] != '\0') {
        snprintf(me->ip, sizeof(me->ip), "%.63s", cfg->cluster_announce_ip);
    } else if (me->ip[0] == '\0' &&
               ((inet_pton(AF_INET, first, &a4) == 1 &&
                 a4.s_addr != htonl(INADDR_ANY)) ||
                (inet_pton(AF_INET6, first, &a6) == 1 &&
                 memcmp(&a6, &in6addr_any, sizeof(a6)) != 0))) {
        /* A specific bind address is the one to dial; 0.0.0.0 is learned
         * from the first node that reaches this one. */
        memcpy(me->ip, first, sizeof(me->ip));
    }
}

void cluster_config_fix(struct config *cfg)
{
    if (!cfg->cluster_enabled || cfg->max_args >= CLUSTER_MIN_ARGS)
        return;
    log_info("cluster mode: max-args raised from %u to %u, so that CLUSTER "
             "ADDSLOTS of every slot fits in one command",
             cfg->max_args, (unsigned)CLUSTER_MIN_ARGS);
    cfg->max_args = CLUSTER_MIN_ARGS;
}

struct cluster *cluster_create(struct server *srv)
{
    struct cluster *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return NULL;
    c->srv = srv;
    c->nodes = calloc(1, sizeof(*c->nodes));
    c->received = calloc(UR_SLOTS, sizeof(*c->received));
    if (c->nodes == NULL || c->received == NULL) {
        free(c->nodes);
        free(c->received);
        free(c);
        return NULL;
    }
    c->keys = ckeys_create();
    if (c->keys == NULL) {
        free(c->nodes);
        free(c->received);
        free(c);
        return NULL;
    }
    c->nnodes = 1;
    c->nodes[0].used = true;
    c->nodes[0].flags = CN_MYSELF | CN_MASTER;
    for (unsigned s = 0; s < UR_SLOTS; s++)
        c->owner[s] = c->migrating[s] = c->importing[s] = CLUSTER_NONE;
    return c;
}

void cluster_destroy(struct cluster *c)
{
    if (c == NULL)
        return;
    for (uint32_t i = 1; i < c->nnodes; i++)
        if (c->nodes[i].link != NULL)
            clink_destroy(c->nodes[i].link);
    for (uint32_t i = 0; i < c->nnodes; i++)
        free(c->nodes[i].marks);
    ckeys_destroy(c->keys);
    free(c->nodes);
    free(c->received);
    free(c);
}

int cluster_setup(struct server *srv, struct event_base *base, char *err,
                  size_t errlen)
{
    struct cluster *c;
    int rc;

    if (!srv->cfg.cluster_enabled)
        return 0;
    c = cluster_create(srv);
    if (c == NULL)
        goto nomem;
    c->base = base;
    if (fs_path(c->path, sizeof(c->path), srv->cfg.dir,
                srv->cfg.cluster_config_file) != 0) {
        snprintf(err, errlen, "cluster-config-file: path too long");
        goto error;
    }
    rc = load_config(c, err, errlen);
    if (rc < 0)
        goto error;
    if (rc == 1) {
        new_id(c->nodes[0].id);
        c->nodes[0].flags = CN_MYSELF | CN_MASTER;
        log_info("cluster: no %s, a new node %s", c->path, c->nodes[0].id);
    } else {
        log_info("cluster: node %s, %u nodes known, %u slots assigned (%s)",
                 c->nodes[0].id, cluster_known_nodes(c), c->assigned, c->path);
    }
    myself_addr(c);
    c->nodes[0].flags |= CN_MYSELF;
    if (c->nodes[0].version < server_now_ms())
        c->nodes[0].version = server_now_ms();
    c->start_ms = mono_ms();
    srv->cluster = c;
    for (uint32_t i = 1; i < c->nnodes; i++)
        if (c->nodes[i].used && !(c->nodes[i].flags & CN_NOADDR))
            c->nodes[i].link = clink_create(c, i);
    c->started = cluster_known_nodes(c) == 1;
    state_update(c);
    if (cluster_save_config(c) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", c->path, strerror(errno));
        srv->cluster = NULL;
        goto error;
    }
    /* Whatever copies were on their way when it stopped are lost: the
     * objects it owns go to every primary again. */
    ccopy_sync_all(c);
    return 0;
nomem:
    snprintf(err, errlen, "cluster: out of memory");
error:
    cluster_destroy(c);
    return -1;
}

void cluster_teardown(struct server *srv)
{
    struct cluster *c = srv->cluster;

    if (c == NULL)
        return;
    if (c->dirty && cluster_save_config(c) != 0)
        log_warn("cluster: cannot write %s: %s", c->path, strerror(errno));
    ccopy_teardown(c);
    cluster_destroy(c);
    srv->cluster = NULL;
}

/* The start-up exchange ends when every linked node answered or could
 * not be reached, or after START_WAIT_MAX_MS. */
static void start_check(struct cluster *c)
{
    if (c->started)
        return;
    for (uint32_t i = 1; i < c->nnodes; i++) {
        const struct cluster_node *n = &c->nodes[i];

        if (n->used && n->link != NULL && !clink_settled(n->link) &&
            mono_ms() - c->start_ms < START_WAIT_MAX_MS)
            return;
    }
    c->started = true;
    log_info("cluster: start-up exchange done (%u nodes known)",
             cluster_known_nodes(c));
    state_update(c);
}

void cluster_cron(struct server *srv)
{
    struct cluster *c = srv->cluster;
    uint64_t now = mono_ms();

    if (c == NULL)
        return;
    for (uint32_t i = 1; i < c->nnodes; i++) {
        struct cluster_node *n = &c->nodes[i];

        if (!n->used || n->link == NULL)
            continue;
        clink_cron(n->link, now);
        if ((n->flags & CN_HANDSHAKE) && clink_meet_failed(n->link)) {
            /* A MEET's address that never answered: it goes. */
            clink_destroy(n->link);
            node_free(c, i);
        }
    }
    start_check(c);
    state_update(c);
    ccopy_cron(c);
    cluster_keys_cron(srv);
    if (c->dirty && save_config(c, c->dirty_sync) != 0)
        log_warn("cluster: cannot write %s: %s (retried)", c->path,
                 strerror(errno));
}

void cluster_flush(struct server *srv)
{
    struct cluster *c = srv->cluster;

    if (c == NULL)
        return;
    for (uint32_t i = 1; i < c->nnodes; i++)
        if (c->nodes[i].used && c->nodes[i].link != NULL)
            clink_flush(c->nodes[i].link);
}

/* ---- records ---------------------------------------------------------- */

void cluster_changed(struct cluster *c)
{
    uint64_t now = server_now_ms();

    c->nodes[0].version =
        c->nodes[0].version < now ? now : c->nodes[0].version + 1;
    mark_dirty_sync(c);
    state_update(c);
    for (uint32_t i = 1; i < c->nnodes; i++)
        if (c->nodes[i].used && c->nodes[i].link != NULL)
            clink_push_record(c->nodes[i].link);
}

/* Another master with my config epoch: the smaller id takes a new one. */
static void epoch_collision(struct cluster *c, const struct cluster_node *n)
{
    struct cluster_node *me = myself(c);

    if (!(n->flags & CN_MASTER) || !(me->flags & CN_MASTER) ||
        n->config_epoch != me->config_epoch || me->config_epoch == 0 ||
        memcmp(n->id, me->id, CLUSTER_ID_LEN) <= 0)
        return;
    me->config_epoch = ++c->current_epoch;
    log_info("cluster: config epoch collision with %s: mine is now %llu", n->id,
             (unsigned long long)me->config_epoch);
    cluster_changed(c);
}

/* myself lost every slot to node `to`: it becomes its replica, as Redis
 * makes a master whose slots all moved to another. */
static void follow_new_owner(struct cluster *c, uint32_t to)
{
    struct cluster_node *me = myself(c), *n = &c->nodes[to];
    char err[256];

    log_warn("cluster: node %s (%s:%u) took every slot of this node at "
             "epoch %llu: this node becomes its replica",
             n->id, n->ip, n->port, (unsigned long long)n->config_epoch);
    me->flags = (me->flags & ~CN_MASTER) | CN_REPLICA;
    memcpy(me->master_id, n->id, CLUSTER_ID_LEN + 1);
    follow_marks(c);
    if (repl_set_replica_of(c->srv, n->ip, n->port, err, sizeof(err)) < 0)
        log_warn("cluster: cannot replicate %s:%u: %s", n->ip, n->port, err);
    cluster_changed(c);
}

int cluster_merge_record(struct cluster *c, const struct cluster_record *rec,
                         struct cluster_link *via, char *err, size_t errlen)
{
    struct cluster_node *n, *me = myself(c);
    uint32_t idx, owned_before = me->nslots, took_mine = CLUSTER_NONE;
    bool was_master, changed_role, first, unplanned = false;
    static bool claim[UR_SLOTS];

    if (!id_valid(rec->id, rec->id_len) || rec->port == 0 ||
        rec->port > 65535 || rec->ip_len >= sizeof(n->ip) ||
        (rec->master_id_len != 0 &&
         !id_valid(rec->master_id, rec->master_id_len))) {
        snprintf(err, errlen, "malformed node record");
        return -1;
    }
    for (size_t i = 0; i < rec->nranges; i++)
        if (rec->ranges[2 * i] > rec->ranges[2 * i + 1] ||
            rec->ranges[2 * i + 1] >= UR_SLOTS) {
            snprintf(err, errlen, "malformed slot range in a node record");
            return -1;
        }
    if (memcmp(rec->id, me->id, CLUSTER_ID_LEN) == 0) {
        snprintf(err, errlen, "a record of this node itself");
        return -1;
    }
    if (rec->current_epoch > c->current_epoch)
        c->current_epoch = rec->current_epoch;
    if (rec->config_epoch > c->current_epoch)
        c->current_epoch = rec->config_epoch;

    idx = cluster_node_by_id(c, rec->id, rec->id_len);
    if (idx == CLUSTER_NONE && via != NULL)
        idx = clink_node(via); /* a node met by address: now we know it */
    if (idx == CLUSTER_NONE) {
        for (size_t k = 0; k < sizeof(c->forgotten) / sizeof(c->forgotten[0]);
             k++)
            if (c->forgotten[k].until_ms > mono_ms() &&
                memcmp(c->forgotten[k].id, rec->id, CLUSTER_ID_LEN) == 0)
                return 0; /* FORGET holds it out */
        idx = node_alloc(c);
        if (idx == CLUSTER_NONE) {
            snprintf(err, errlen, "the node table is full");
            return -1;
        }
        log_info("cluster: learned node %.40s (%.*s:%u)", rec->id,
                 (int)rec->ip_len, rec->ip, rec->port);
    } else if (c->nodes[idx].version >= rec->version &&
               !(c->nodes[idx].flags & CN_HANDSHAKE)) {
        c->nodes[idx].pong_ms = server_now_ms();
        return 0; /* an old record, or one held already */
    }
    n = &c->nodes[idx];
    me = myself(c); /* node_alloc may have moved the table */
    first = n->version == 0 || (n->flags & CN_HANDSHAKE);
    was_master = (n->flags & CN_MASTER) != 0;
    if (!was_master && !first && rec->master && n->master_id[0] != '\0')
        follow_promotion(c, n->master_id, idx);
    memcpy(n->id, rec->id, CLUSTER_ID_LEN);
    n->id[CLUSTER_ID_LEN] = '\0';
    if (rec->ip_len > 0) {
        memcpy(n->ip, rec->ip, rec->ip_len);
        n->ip[rec->ip_len] = '\0';
    }
    n->port = rec->port;
    n->cport = rec->cport;
    n->flags = rec->master ? CN_MASTER : CN_REPLICA;
    if (n->ip[0] == '\0')
        n->flags |= CN_NOADDR;
    if (rec->master_id_len == CLUSTER_ID_LEN && !rec->master) {
        memcpy(n->master_id, rec->master_id, CLUSTER_ID_LEN);
        n->master_id[CLUSTER_ID_LEN] = '\0';
    } else {
        n->master_id[0] = '\0';
    }
    n->config_epoch = rec->config_epoch;
    n->version = rec->version;
    n->pong_ms = server_now_ms();
    free(n->marks);
    n->marks = rec->master && rec->slots_text != NULL
                   ? marks_of(rec->slots_text, rec->slots_text_len)
                   : NULL;
    changed_role = was_master != rec->master;
    if (n->link == NULL && !(n->flags & CN_NOADDR))
        n->link = clink_create(c, idx);
    else if (n->link != NULL)
        clink_address_changed(n->link);

    /* Its claims, by the config-epoch rule; what it no longer claims it
     * has given up. */
    memset(claim, 0, sizeof(claim));
    if (rec->master)
        for (size_t i = 0; i < rec->nranges; i++)
            for (unsigned s = rec->ranges[2 * i]; s <= rec->ranges[2 * i + 1];
                 s++)
                claim[s] = true;
    for (unsigned s = 0; s < UR_SLOTS; s++) {
        uint16_t o = c->owner[s];

        if (claim[s]) {
            if (o == idx)
                continue;
            if (o == CLUSTER_NONE ||
                c->nodes[o].config_epoch < rec->config_epoch) {
                if (o == 0) {
                    took_mine = idx;
                    /* a slot this node was moving to it: the move's
                     * end, not a failover's */
                    unplanned |= c->migrating[s] != idx;
                }
                slot_set(c, s, idx);
            }
        } else if (o == idx) {
            slot_set(c, s, CLUSTER_NONE);
        }
    }
    mark_dirty(c);
    state_update(c);
    if (took_mine != CLUSTER_NONE) {
        log_warn("cluster: node %.40s claims slots of this node at a higher "
                 "config epoch (%llu > %llu): they are its now",
                 rec->id, (unsigned long long)rec->config_epoch,
                 (unsigned long long)me->config_epoch);
        if (owned_before > 0 && me->nslots == 0 && (me->flags & CN_MASTER) &&
            unplanned)
            follow_new_owner(c, took_mine);
        else
            cluster_changed(c);
    }
    /* A replica's states are its master's. */
    if (!cluster_myself_master(c) && strcmp(me->master_id, n->id) == 0)
        follow_marks(c);
    epoch_collision(c, n);
    /* A node that became a primary must get every object this node owns
     * (copies sent to its old primary may not have reached it). */
    if (rec->master && (first || changed_role) && cluster_myself_master(c))
        ccopy_sync_to(c, idx);
    return 0;
}

void cluster_learn(struct cluster *c, const char *id, size_t id_len,
                   const char *ip, size_t ip_len, uint32_t port, uint32_t cport)
{
    uint32_t idx;
    struct cluster_node *n;

    if (!id_valid(id, id_len) || ip_len == 0 || ip_len >= sizeof(n->ip) ||
        port == 0 || port > 65535 ||
        memcmp(id, c->nodes[0].id, CLUSTER_ID_LEN) == 0 ||
        cluster_node_by_id(c, id, id_len) != CLUSTER_NONE)
        return;
    for (size_t k = 0; k < sizeof(c->forgotten) / sizeof(c->forgotten[0]); k++)
        if (c->forgotten[k].until_ms > mono_ms() &&
            memcmp(c->forgotten[k].id, id, CLUSTER_ID_LEN) == 0)
            return;
    idx = node_alloc(c);
    if (idx == CLUSTER_NONE)
        return;
    n = &c->nodes[idx];
    memcpy(n->id, id, CLUSTER_ID_LEN);
    memcpy(n->ip, ip, ip_len);
    n->ip[ip_len] = '\0';
    n->port = port;
    n->cport = cport;
    /* What it is comes with its own record, which the link asks for:
     * until then a master without slots, version 0. */
    n->flags = CN_MASTER;
    log_info("cluster: introduced to node %.40s (%s:%u)", n->id, n->ip, port);
    n->link = clink_create(c, idx);
    mark_dirty(c);
    /* It changes what this node knows: the others hear of the newcomer. */
    cluster_changed(c);
}

/* ---- commands on the table ------------------------------------------- */

int cluster_add_slots(struct cluster *c, const uint16_t *slots, size_t n,
                      char *err, size_t errlen)
{
    static bool seen[UR_SLOTS];

    memset(seen, 0, sizeof(seen));
    for (size_t i = 0; i < n; i++) {
        if (c->owner[slots[i]] != CLUSTER_NONE) {
            snprintf(err, errlen, "Slot %u is already busy", slots[i]);
            return -1;
        }
        if (seen[slots[i]]) {
            snprintf(err, errlen, "Slot %u specified multiple times", slots[i]);
            return -1;
        }
        seen[slots[i]] = true;
    }
    if (!cluster_myself_master(c)) {
        snprintf(err, errlen, "a replica cannot own slots");
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        slot_set(c, slots[i], 0);
    cluster_changed(c);
    return 0;
}

int cluster_del_slots(struct cluster *c, const uint16_t *slots, size_t n,
                      char *err, size_t errlen)
{
    static bool seen[UR_SLOTS];

    memset(seen, 0, sizeof(seen));
    for (size_t i = 0; i < n; i++) {
        if (c->owner[slots[i]] == CLUSTER_NONE) {
            snprintf(err, errlen, "Slot %u is already unassigned", slots[i]);
            return -1;
        }
        if (seen[slots[i]]) {
            snprintf(err, errlen, "Slot %u specified multiple times", slots[i]);
            return -1;
        }
        seen[slots[i]] = true;
    }
    for (size_t i = 0; i < n; i++)
        slot_set(c, slots[i], CLUSTER_NONE);
    cluster_changed(c);
    return 0;
}

int cluster_setslot(struct cluster *c, unsigned slot, const char *action,
                    const char *id, size_t id_len, char *err, size_t errlen)
{
    struct cluster_node *me = myself(c);
    uint32_t n = CLUSTER_NONE;
    bool stable = strcasecmp(action, "STABLE") == 0;
    bool node = strcasecmp(action, "NODE") == 0;
    bool migr = strcasecmp(action, "MIGRATING") == 0;
    bool imp = strcasecmp(action, "IMPORTING") == 0;
    char text[CLUSTER_ID_LEN + 8];

    if (!(me->flags & CN_MASTER)) {
        snprintf(err, errlen, "Please use SETSLOT only with masters.");
        return -1;
    }
    if ((!stable && !node && !migr && !imp) || (stable != (id == NULL))) {
        snprintf(err, errlen,
                 "Invalid CLUSTER SETSLOT action or number of arguments. Try "
                 "CLUSTER HELP");
        return -1;
    }
    if (migr && c->owner[slot] != 0) {
        snprintf(err, errlen, "I'm not the owner of hash slot %u", slot);
        return -1;
    }
    if (imp && c->owner[slot] == 0) {
        snprintf(err, errlen, "I'm already the owner of hash slot %u", slot);
        return -1;
    }
    if (!stable) {
        snprintf(text, sizeof(text), "%.*s", (int)(id_len < 48 ? id_len : 48),
                 id);
        n = cluster_node_by_id(c, id, id_len);
        if (n == CLUSTER_NONE) {
            if (node)
                snprintf(err, errlen, "Unknown node %s", text);
            else
                snprintf(err, errlen, "I don't know about node %s", text);
            return -1;
        }
        if (!(c->nodes[n].flags & CN_MASTER)) {
            snprintf(err, errlen, "Target node is not a master");
            return -1;
        }
        if ((migr || imp) && n == 0) {
            snprintf(err, errlen, "Target node is this node itself");
            return -1;
        }
    }
    if (migr) {
        set_migrating(c, slot, n);
    } else if (imp) {
        set_importing(c, slot, n);
    } else if (stable) {
        set_migrating(c, slot, CLUSTER_NONE);
        set_importing(c, slot, CLUSTER_NONE);
    } else {
        size_t held = 0;
        bool was_importing = c->importing[slot] != CLUSTER_NONE;

        if (c->owner[slot] == 0 && n != 0 &&
            (cluster_keys_in_slot(c->srv, slot, 0, NULL, &held) != 0 ||
             held != 0)) {
            snprintf(err, errlen,
                     "Can't assign hashslot %u to a different node while I "
                     "still hold keys for this hash slot.",
                     slot);
            return -1;
        }
        if (c->owner[slot] != 0 && n != 0 &&
            c->importing[slot] == CLUSTER_NONE) {
            /* A third node's view (redis-cli tells every master): its own
             * record does not change, so nothing is pushed; the two
             * nodes of the move tell the others anyway. */
            slot_set(c, slot, n);
            mark_dirty(c);
            state_update(c);
            return 0;
        }
        /* slot_set drops the slot's migrating state when it leaves this
         * node, and its importing state when it becomes this node's. */
        slot_set(c, slot, n);
        if (n != 0 && c->migrating[slot] != CLUSTER_NONE)
            set_migrating(c, slot, CLUSTER_NONE);
        if (n == 0 && was_importing) {
            /* A manual move: a new epoch without consensus, so that this
             * claim wins over the old owner's everywhere (Redis's
             * clusterBumpConfigEpochWithoutConsensus). */
            uint64_t max = 0;

            for (uint32_t i = 1; i < c->nnodes; i++)
                if (c->nodes[i].used && c->nodes[i].config_epoch > max)
                    max = c->nodes[i].config_epoch;
            if (me->config_epoch == 0 || me->config_epoch <= max) {
                me->config_epoch = ++c->current_epoch;
                log_info("cluster: config epoch %llu after importing slot %u",
                         (unsigned long long)me->config_epoch, slot);
            }
        }
    }
    cluster_changed(c);
    /* Before the reply: a move's state must outlive a crash of this
     * process (redis-cli goes on to the next step on OK); without an
     * fsync per step, as Redis, or a reshard would wait on the disk for
     * every slot. The cron retries a failed write. */
    if (c->srv->cfg.dir[0] != '\0' && c->path[0] != '\0' &&
        save_config(c, false) != 0)
        log_warn("cluster: cannot write %s: %s (retried)", c->path,
                 strerror(errno));
    return 0;
}

int cluster_set_config_epoch(struct cluster *c, uint64_t epoch, char *err,
                             size_t errlen)
{
    if (cluster_known_nodes(c) > 1) {
        snprintf(err, errlen,
                 "The user can assign a config epoch only when "
                 "the node does not know any other node.");
        return -1;
    }
    if (c->nodes[0].config_epoch != 0) {
        snprintf(err, errlen, "Node config epoch is already non-zero");
        return -1;
    }
    c->nodes[0].config_epoch = epoch;
    if (c->current_epoch < epoch)
        c->current_epoch = epoch;
    log_info("cluster: config epoch set to %llu (SET-CONFIG-EPOCH)",
             (unsigned long long)epoch);
    cluster_changed(c);
    return 0;
}

uint64_t cluster_bump_epoch(struct cluster *c, bool *bumped)
{
    struct cluster_node *me = myself(c);
    uint64_t max = 0;

    for (uint32_t i = 1; i < c->nnodes; i++)
        if (c->nodes[i].used && c->nodes[i].config_epoch > max)
            max = c->nodes[i].config_epoch;
    *bumped = me->config_epoch == 0 || me->config_epoch != c->current_epoch ||
              max >= me->config_epoch;
    if (*bumped) {
        me->config_epoch = ++c->current_epoch;
        cluster_changed(c);
    }
    return me->config_epoch;
}

int cluster_forget(struct cluster *c, const char *id, size_t len, char *err,
                   size_t errlen)
{
    uint32_t idx = cluster_node_by_id(c, id, len);
    size_t k, oldest = 0;

    if (idx == CLUSTER_NONE) {
        snprintf(err, errlen, "Unknown node %.*s", (int)(len < 64 ? len : 64),
                 id);
        return -1;
    }
    if (idx == 0) {
        snprintf(err, errlen, "I tried hard but I can't forget myself...");
        return -1;
    }
    if (!cluster_myself_master(c) &&
        strcmp(c->nodes[0].master_id, c->nodes[idx].id) == 0) {
        snprintf(err, errlen, "Can't forget my master!");
        return -1;
    }
    for (k = 0; k < sizeof(c->forgotten) / sizeof(c->forgotten[0]); k++)
        if (c->forgotten[k].until_ms < c->forgotten[oldest].until_ms)
            oldest = k;
    memcpy(c->forgotten[oldest].id, c->nodes[idx].id, CLUSTER_ID_LEN + 1);
    c->forgotten[oldest].until_ms = mono_ms() + FORGET_MS;
    for (unsigned s = 0; s < UR_SLOTS; s++)
        if (c->owner[s] == idx)
            slot_set(c, s, CLUSTER_NONE);
    if (c->nodes[idx].link != NULL)
        clink_destroy(c->nodes[idx].link);
    log_info("cluster: forgot node %s (%s:%u)", c->nodes[idx].id,
             c->nodes[idx].ip, c->nodes[idx].port);
    node_free(c, idx);
    mark_dirty_sync(c);
    state_update(c);
    return 0;
}

int cluster_replicate(struct cluster *c, const char *id, size_t len, char *err,
                      size_t errlen)
{
    uint32_t idx = cluster_node_by_id(c, id, len);
    struct cluster_node *me = myself(c), *n;
    char why[256];

    if (idx == CLUSTER_NONE) {
        snprintf(err, errlen, "Unknown node %.*s", (int)(len < 64 ? len : 64),
                 id);
        return -1;
    }
    if (idx == 0) {
        snprintf(err, errlen, "Can't replicate myself");
        return -1;
    }
    n = &c->nodes[idx];
    if (!(n->flags & CN_MASTER)) {
        snprintf(err, errlen, "I can only replicate a master, not a replica.");
        return -1;
    }
    if ((me->flags & CN_MASTER) &&
        (me->nslots != 0 || scan_users_held(&c->srv->db) != 0)) {
        snprintf(err, errlen,
                 "To set a master the node must be empty and "
                 "without assigned slots.");
        return -1;
    }
    if (repl_set_replica_of(c->srv, n->ip, n->port, why, sizeof(why)) < 0) {
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    me->flags = (me->flags & ~CN_MASTER) | CN_REPLICA;
    memcpy(me->master_id, n->id, CLUSTER_ID_LEN + 1);
    me->config_epoch = 0;
    follow_marks(c);
    cluster_changed(c);
    return 0;
}

int cluster_reset(struct cluster *c, bool hard, char *err, size_t errlen)
{
    struct cluster_node *me = myself(c);

    if ((me->flags & CN_MASTER) && scan_users_held(&c->srv->db) != 0) {
        snprintf(err, errlen,
                 "CLUSTER RESET can't be called with master "
                 "nodes containing keys");
        return -1;
    }
    if (!(me->flags & CN_MASTER))
        repl_set_primary(c->srv);
    states_clear(c);
    for (uint32_t i = 1; i < c->nnodes; i++) {
        if (c->nodes[i].link != NULL)
            clink_destroy(c->nodes[i].link);
        node_free(c, i);
    }
    for (unsigned s = 0; s < UR_SLOTS; s++)
        slot_set(c, s, CLUSTER_NONE);
    c->nnodes = 1;
    me->flags = CN_MYSELF | CN_MASTER;
    me->master_id[0] = '\0';
    if (hard) {
        char old[CLUSTER_ID_LEN + 1];

        memcpy(old, me->id, sizeof(old));
        new_id(me->id);
        me->config_epoch = 0;
        c->current_epoch = 0;
        log_info("cluster: hard reset: node %s is now %s", old, me->id);
    } else {
        log_info("cluster: soft reset");
    }
    memset(c->received, 0, UR_SLOTS * sizeof(*c->received));
    cluster_changed(c);
    return 0;
}

/* ---- replication's hooks ---------------------------------------------- */

void cluster_promoted(struct server *srv)
{
    struct cluster *c = srv->cluster;
    struct cluster_node *me;
    uint32_t from, taken = 0;

    if (c == NULL)
        return;
    me = myself(c);
    if (me->flags & CN_MASTER)
        return;
    from = cluster_node_by_id(c, me->master_id, strlen(me->master_id));
    me->flags = (me->flags & ~CN_REPLICA) | CN_MASTER;
    me->master_id[0] = '\0';
    me->config_epoch = ++c->current_epoch;
    if (from != CLUSTER_NONE)
        for (unsigned s = 0; s < UR_SLOTS; s++)
            if (c->owner[s] == from) {
                slot_set(c, s, 0);
                taken++;
            }
    log_warn("cluster: promoted to master at config epoch %llu, taking %u "
             "slots of %s",
             (unsigned long long)me->config_epoch, taken,
             from != CLUSTER_NONE ? c->nodes[from].id : "(no known master)");
    cluster_changed(c);
    if (cluster_save_config(c) != 0)
        log_warn("cluster: cannot write %s: %s", c->path, strerror(errno));
    ccopy_sync_all(c);
}

void cluster_replica_of(struct server *srv, const char *host, uint32_t port)
{
    struct cluster *c = srv->cluster;
    struct cluster_node *me;
    uint32_t idx;

    if (c == NULL)
        return;
    me = myself(c);
    idx = node_by_addr(c, host, port);
    if (idx == CLUSTER_NONE || idx == 0) {
        log_warn("cluster: REPLICAOF %s:%u names no known node; the node "
                 "table keeps its master as it is",
                 host, port);
        return;
    }
    if (!(me->flags & CN_MASTER) &&
        strcmp(me->master_id, c->nodes[idx].id) == 0)
        return;
    for (unsigned s = 0; s < UR_SLOTS; s++)
        if (c->owner[s] == 0)
            slot_set(c, s, CLUSTER_NONE);
    me->flags = (me->flags & ~CN_MASTER) | CN_REPLICA;
    memcpy(me->master_id, c->nodes[idx].id, CLUSTER_ID_LEN + 1);
    log_info("cluster: replica of %s (%s:%u)", c->nodes[idx].id, host, port);
    follow_marks(c);
    cluster_changed(c);
}

/* ---- the routing question --------------------------------------------- */

static bool key_refused(struct server *srv, const struct ur_arg *a,
                        const char *where, struct reply *r)
{
    char text[32];
    size_t k = 0;

    (void)srv;
    if (ur_arg_canonical(a))
        return false;
    for (uint32_t i = 0; i < a->len && k + 1 < sizeof(text); i++) {
        unsigned char ch = (unsigned char)a->str[i];
        text[k++] = ch >= 0x20 && ch < 0x7f && ch != '\'' ? (char)ch : '?';
    }
    text[k] = '\0';
    reply_err(r, UR_E_BADARG,
              "%scluster mode: a key must be an id in canonical decimal (no "
              "sign, no leading zeros, 0..%lld), since clients hash the bytes "
              "they send; got '%s'",
              where, (long long)UR_INT_MAX, text);
    return true;
}

/* The slot of op's keys in argv, or -1 when it has none; -2 after replying
 * an error (a key not canonical, keys in several slots). */
static int op_slot(struct server *srv, const struct ur_op *op, uint32_t argc,
                   const struct ur_arg *argv, const char *where,
                   struct reply *r)
{
    unsigned first = ur_op_key_first(op), slot;
    uint32_t last;

    if (first == 0 || argc < first)
        return -1;
    last = ur_op_key_last(op) < 0 ? argc : first;
    if (key_refused(srv, &argv[first - 1], where, r))
        return -2;
    slot = ur_arg_slot(&argv[first - 1]);
    for (uint32_t i = first; i < last; i++) {
        if (key_refused(srv, &argv[i], where, r))
            return -2;
        if (ur_arg_slot(&argv[i]) != slot) {
            reply_err(r, UR_E_CROSSSLOT,
                      "Keys in request don't hash to the same slot");
            return -2;
        }
    }
    return (int)slot;
}

/* What the keys of a request in an open slot say: how many, how many this
 * node holds, and whether more than one distinct id is among them. */
struct key_count {
    uint32_t keys, held;
    uint64_t first;
    bool multi;
};

/* Whether slot is open here in a way that asks where its keys are: it
 * migrates from this master, or this master imports it. */
static bool slot_asks(const struct cluster *c, unsigned slot)
{
    return cluster_myself_master(c) &&
           ((c->owner[slot] == 0 && c->migrating[slot] != CLUSTER_NONE) ||
            (c->owner[slot] != 0 && c->importing[slot] != CLUSTER_NONE));
}

/* Adds op's keys in argv (canonical: op_slot checked them) to kc. */
static void count_keys(struct server *srv, const struct ur_op *op,
                       uint32_t argc, const struct ur_arg *argv,
                       struct key_count *kc)
{
    unsigned first = ur_op_key_first(op);
    uint32_t last = ur_op_key_last(op) < 0 ? argc : first;

    for (uint32_t i = first - 1; i < last && i < argc; i++) {
        uint64_t id;

        if (argv[i].kind == UR_ARG_INT)
            id = argv[i].num;
        else if (!ur_parse_u64(argv[i].str, argv[i].len, &id))
            continue;
        if (kc->keys == 0)
            kc->first = id;
        else if (id != kc->first)
            kc->multi = true;
        kc->keys++;
        kc->held += cluster_key_held(srv, id);
    }
}

/* Whether sess may run a command on slot here (writes: it may change
 * data; kc: its keys, for an open slot; asking: ASKING or RESTORE-ASKING);
 * false after replying MOVED, ASK, TRYAGAIN or CLUSTERDOWN. */
static bool slot_served(struct server *srv, struct session *sess, unsigned slot,
                        bool writes, const struct key_count *kc, bool asking,
                        struct reply *r)
{
    struct cluster *c = srv->cluster;
    uint16_t o = c->owner[slot];
    const struct cluster_node *n;

    if (o == CLUSTER_NONE) {
        reply_err(r, UR_E_CLUSTERDOWN, "Hash slot not served");
        return false;
    }
    if (!state_now(c)) {
        if (!srv->cfg.cluster_allow_reads_when_down) {
            reply_err(r, UR_E_CLUSTERDOWN, "The cluster is down");
            return false;
        }
        if (writes) {
            reply_err(r, UR_E_CLUSTERDOWN,
                      "The cluster is down and only accepts read commands");
            return false;
        }
    }
    if (o == 0) {
        /* Migrating: what it still holds is served here; what it does not
         * is the target's (once, with ASKING); a request split between
         * the two waits until the move of its ids ends. */
        if (kc != NULL && kc->held < kc->keys && slot_asks(c, slot)) {
            if (kc->held > 0) {
                reply_err(r, UR_E_TRYAGAIN,
                          "Multiple keys request during rehashing of slot");
            } else {
                n = &c->nodes[c->migrating[slot]];
                reply_err(r, UR_E_ASK, "%u %s:%u", slot, n->ip, n->port);
            }
            return false;
        }
        return true;
    }
    if (asking && kc != NULL && slot_asks(c, slot)) {
        if (kc->multi && kc->held < kc->keys) {
            reply_err(r, UR_E_TRYAGAIN,
                      "Multiple keys request during rehashing of slot");
            return false;
        }
        return true;
    }
    n = &c->nodes[o];
    if (!writes && sess->readonly && !(c->nodes[0].flags & CN_MASTER) &&
        strcmp(c->nodes[0].master_id, n->id) == 0)
        return true;
    reply_err(r, UR_E_MOVED, "%u %s:%u", slot, n->ip, n->port);
    return false;
}

bool cluster_refuse_slow(struct server *srv, struct session *sess,
                         const struct ur_op *op, uint32_t argc,
                         const struct ur_arg *argv, struct reply *r)
{
    struct cluster *c = srv->cluster;
    int slot = op_slot(srv, op, argc, argv, "", r);
    struct key_count kc = {0};
    bool open;

    if (slot == -2)
        return true;
    if (slot == -1)
        return false;
    /* A global object is not moved (every primary holds it): its writes
     * stay with the slot's owner, whose copies carry its epoch. */
    open = slot_asks(c, (unsigned)slot) && !(op->flags & OPF_GLOBAL);
    if (open)
        count_keys(srv, op, argc, argv, &kc);
    return !slot_served(srv, sess, (unsigned)slot, (op->flags & OPF_READ) == 0,
                        open ? &kc : NULL,
                        sess->asking || op->code == UR_OP_RESTORE_ASKING, r);
}

void cluster_batch_init(struct cluster_batch *b)
{
    memset(b, 0, sizeof(*b));
    b->slot = -1;
}

bool cluster_batch_add(struct server *srv, struct cluster_batch *b,
                       const struct ur_op *op, uint32_t argc,
                       const struct ur_arg *argv, const char *where,
                       struct reply *r)
{
    int slot = op_slot(srv, op, argc, argv, where, r);

    if (slot == -2)
        return false;
    b->writes |= (op->flags & OPF_READ) == 0 && ur_op_key_first(op) != 0;
    if (slot == -1)
        return true;
    if (b->slot >= 0 && b->slot != slot) {
        reply_err(r, UR_E_CROSSSLOT,
                  "Keys in request don't hash to the same slot");
        return false;
    }
    b->slot = slot;
    if (slot_asks(srv->cluster, (unsigned)slot) && !(op->flags & OPF_GLOBAL)) {
        struct key_count kc = {b->keys, b->held, b->first_key, b->multi};

        count_keys(srv, op, argc, argv, &kc);
        b->keys = kc.keys;
        b->held = kc.held;
        b->first_key = kc.first;
        b->multi = kc.multi;
    }
    return true;
}

bool cluster_batch_refuse(struct server *srv, struct session *sess,
                          const struct cluster_batch *b, struct reply *r)
{
    struct key_count kc = {b->keys, b->held, b->first_key, b->multi};

    if (b->slot < 0)
        return false;
    /* a batch is a multi-key request: its ids decide together */
    return !slot_served(srv, sess, (unsigned)b->slot, b->writes,
                        slot_asks(srv->cluster, (unsigned)b->slot) ? &kc : NULL,
                        sess->asking, r);
}

/* ---- what the commands show ------------------------------------------- */

/* The config epoch CLUSTER NODES shows: a replica shows its master's. */
static uint64_t shown_epoch(const struct cluster *c,
                            const struct cluster_node *n)
{
    uint32_t m;

    if (n->flags & CN_MASTER)
        return n->config_epoch;
    m = cluster_node_by_id(c, n->master_id, strlen(n->master_id));
    return m != CLUSTER_NONE ? c->nodes[m].config_epoch : n->config_epoch;
}

static void buf_printf(struct ur_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void buf_printf(struct ur_buf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n > 0)
        (void)ur_buf_append(
            b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* Calls fn for each run of consecutive slots node i owns. */
/* Four owner entries at a time (UR_SLOTS is a multiple of 4): whether
 * any of them is `want`, and whether all are (SWAR on a u64). */
static inline uint64_t owner_word(const struct cluster *c, unsigned s)
{
    uint64_t w;

    memcpy(&w, &c->owner[s], sizeof(w));
    return w;
}

static inline bool word_has(uint64_t w, uint64_t pat)
{
    uint64_t x = w ^ pat;

    return ((x - 0x0001000100010001ull) & ~x & 0x8000800080008000ull) != 0;
}

static void node_ranges(const struct cluster *c, uint32_t i,
                        void (*fn)(unsigned first, unsigned last, void *ctx),
                        void *ctx)
{
    uint64_t pat = 0x0001000100010001ull * (uint16_t)i;
    unsigned s = 0, e;

    /* Called for every node at each save and record: a table of 16384
     * entries is skipped a word at a time where node i has none. */
    while (s < UR_SLOTS) {
        while (s % 4 == 0 && s < UR_SLOTS && !word_has(owner_word(c, s), pat))
            s += 4;
        if (s >= UR_SLOTS)
            break;
        if (c->owner[s] != i) {
            s++;
            continue;
        }
        e = s;
        for (;;) {
            if ((e + 1) % 4 == 0 && e + 5 <= UR_SLOTS &&
                owner_word(c, e + 1) == pat)
                e += 4;
            else if (e + 1 < UR_SLOTS && c->owner[e + 1] == i)
                e++;
            else
                break;
        }
        fn(s, e, ctx);
        s = e + 1;
    }
}

static void range_text(unsigned first, unsigned last, void *ctx)
{
    if (first == last)
        buf_printf(ctx, " %u", first);
    else
        buf_printf(ctx, " %u-%u", first, last);
}

static void node_line(const struct cluster *c, uint32_t i, bool file,
                      struct ur_buf *b)
{
    const struct cluster_node *n = &c->nodes[i];
    char flags[64] = "";
    bool linked = i == 0 || (n->link != NULL && clink_up(n->link));

    if (n->flags & CN_MYSELF)
        strcat(flags, "myself,");
    if (n->flags & CN_HANDSHAKE)
        strcat(flags, "handshake,");
    else if (n->flags & CN_MASTER)
        strcat(flags, "master,");
    else
        strcat(flags, "slave,");
    if (n->flags & CN_NOADDR)
        strcat(flags, "noaddr,");
    flags[strlen(flags) - 1] = '\0';
    buf_printf(
        b, "%s %s:%u@%u %s %s %llu %llu %llu %s", n->id, n->ip, n->port,
        n->cport, flags, n->master_id[0] ? n->master_id : "-",
        file ? 0ull : (unsigned long long)n->ping_ms,
        file ? 0ull
             : (unsigned long long)(i == 0 ? server_now_ms() : n->pong_ms),
        (unsigned long long)shown_epoch(c, n),
        linked ? "connected" : "disconnected");
    node_ranges(c, i, range_text, b);
    /* myself's states, as Redis shows them (redis-cli --cluster check and
     * fix read them); a replica keeps its master's in the file only */
    if (i == 0 && c->nopen > 0 && (file || cluster_myself_master(c))) {
        (void)ur_buf_append(b, " ", 1);
        marks_text(c, b);
    }
}

void cluster_reply_nodes(const struct cluster *c, struct reply *r,
                         bool myself_only)
{
    struct ur_buf b = {0};

    for (uint32_t i = 0; i < c->nnodes; i++) {
        if (!c->nodes[i].used || (myself_only && i != 0))
            continue;
        node_line(c, i, false, &b);
        (void)ur_buf_append(&b, "\n", 1);
    }
    reply_str(r, b.data ? b.data : "", b.len);
    ur_buf_deinit(&b);
}

/* CLUSTER REPLICAS id: the lines of the node's replicas. */
void cluster_reply_replicas(const struct cluster *c, uint32_t m,
                            struct reply *r)
{
    uint32_t n = 0;

    for (uint32_t i = 0; i < c->nnodes; i++)
        n += c->nodes[i].used && !(c->nodes[i].flags & CN_MASTER) &&
             strcmp(c->nodes[i].master_id, c->nodes[m].id) == 0;
    reply_arr(r, n);
    for (uint32_t i = 0; i < c->nnodes; i++) {
        struct ur_buf b = {0};

        if (!c->nodes[i].used || (c->nodes[i].flags & CN_MASTER) ||
            strcmp(c->nodes[i].master_id, c->nodes[m].id) != 0)
            continue;
        node_line(c, i, false, &b);
        reply_str(r, b.data ? b.data : "", b.len);
        ur_buf_deinit(&b);
    }
}

static uint32_t replicas_of(const struct cluster *c, uint32_t m, uint32_t *out,
                            uint32_t cap)
{
    uint32_t n = 0;

    for (uint32_t i = 0; i < c->nnodes && n < cap; i++)
        if (c->nodes[i].used && !(c->nodes[i].flags & CN_MASTER) &&
            !(c->nodes[i].flags & CN_NOADDR) &&
            strcmp(c->nodes[i].master_id, c->nodes[m].id) == 0)
            out[n++] = i;
    return n;
}

static void slots_node(const struct cluster_node *n, struct reply *r)
{
    reply_arr(r, 4);
    reply_cstr(r, n->ip);
    reply_int(r, n->port);
    reply_str(r, n->id, CLUSTER_ID_LEN);
    reply_map(r, 0);
}

void cluster_reply_slots(const struct cluster *c, struct reply *r)
{
    size_t mark = reply_arr_defer(r);
    uint32_t ranges = 0, reps[64], nrep;

    for (unsigned s = 0; s < UR_SLOTS; s++) {
        uint16_t o = c->owner[s];
        unsigned e = s;

        if (o == CLUSTER_NONE)
            continue;
        while (e + 1 < UR_SLOTS && c->owner[e + 1] == o)
            e++;
        nrep = replicas_of(c, o, reps, 64);
        reply_arr(r, 3 + nrep);
        reply_int(r, s);
        reply_int(r, e);
        slots_node(&c->nodes[o], r);
        for (uint32_t k = 0; k < nrep; k++)
            slots_node(&c->nodes[reps[k]], r);
        ranges++;
        s = e;
    }
    reply_arr_finish(r, mark, ranges);
}

static void range_count(unsigned first, unsigned last, void *ctx)
{
    (void)first, (void)last;
    (*(uint32_t *)ctx)++;
}

static void range_reply(unsigned first, unsigned last, void *ctx)
{
    reply_int(ctx, first);
    reply_int(ctx, last);
}

static void shard_node(const struct cluster *c, uint32_t i, struct reply *r)
{
    const struct cluster_node *n = &c->nodes[i];
    bool up = i == 0 || (n->link != NULL && clink_up(n->link));

    reply_map(r, 7);
    reply_cstr(r, "id");
    reply_str(r, n->id, CLUSTER_ID_LEN);
    reply_cstr(r, "port");
    reply_int(r, n->port);
    reply_cstr(r, "ip");
    reply_cstr(r, n->ip);
    reply_cstr(r, "endpoint");
    reply_cstr(r, n->ip);
    reply_cstr(r, "role");
    reply_cstr(r, (n->flags & CN_MASTER) ? "master" : "replica");
    reply_cstr(r, "replication-offset");
    reply_int(r, i == 0 && c->srv->persist != NULL
                     ? persist_offset(c->srv->persist)
                     : 0);
    reply_cstr(r, "health");
    reply_cstr(r, up ? "online" : "failed");
}

void cluster_reply_shards(const struct cluster *c, struct reply *r)
{
    uint32_t masters = 0, reps[64], nrep, nranges;

    for (uint32_t i = 0; i < c->nnodes; i++)
        masters += c->nodes[i].used && (c->nodes[i].flags & CN_MASTER) &&
                   !(c->nodes[i].flags & CN_HANDSHAKE);
    reply_arr(r, masters);
    for (uint32_t i = 0; i < c->nnodes; i++) {
        if (!c->nodes[i].used || !(c->nodes[i].flags & CN_MASTER) ||
            (c->nodes[i].flags & CN_HANDSHAKE))
            continue;
        nranges = 0;
        node_ranges(c, i, range_count, &nranges);
        nrep = replicas_of(c, i, reps, 64);
        reply_map(r, 2);
        reply_cstr(r, "slots");
        reply_arr(r, 2 * nranges);
        node_ranges(c, i, range_reply, r);
        reply_cstr(r, "nodes");
        reply_arr(r, 1 + nrep);
        shard_node(c, i, r);
        for (uint32_t k = 0; k < nrep; k++)
            shard_node(c, reps[k], r);
    }
}

void cluster_reply_info(const struct cluster *c, struct reply *r)
{
    struct ur_buf b = {0};

    buf_printf(&b,
               "cluster_state:%s\r\ncluster_slots_assigned:%u\r\n"
               "cluster_slots_ok:%u\r\ncluster_slots_pfail:0\r\n"
               "cluster_slots_fail:0\r\ncluster_known_nodes:%u\r\n"
               "cluster_size:%u\r\ncluster_current_epoch:%llu\r\n"
               "cluster_my_epoch:%llu\r\n",
               state_now(c) ? "ok" : "fail", c->assigned, c->assigned,
               cluster_known_nodes(c), cluster_size(c),
               (unsigned long long)c->current_epoch,
               (unsigned long long)shown_epoch(c, &c->nodes[0]));
    buf_printf(&b,
               "cluster_stats_messages_sent:%llu\r\n"
               "cluster_stats_messages_received:%llu\r\n"
               "total_cluster_links_buffer_limit_exceeded:%llu\r\n",
               (unsigned long long)c->msgs_sent,
               (unsigned long long)c->msgs_received,
               (unsigned long long)c->links_buffer_limit_exceeded);
    reply_str(r, b.data, b.len);
    ur_buf_deinit(&b);
}

void cluster_info_lines(const struct cluster *c, struct ur_buf *out)
{
    uint32_t k = 0;

    buf_printf(
        out,
        "cluster_enabled:1\r\ncluster_state:%s\r\n"
        "cluster_node_id:%s\r\ncluster_role:%s\r\n"
        "cluster_slots_owned:%u\r\ncluster_known_nodes:%u\r\n"
        "cluster_copies_sent:%llu\r\ncluster_copies_applied:%llu\r\n"
        "cluster_copies_stale:%llu\r\ncluster_full_syncs:%llu\r\n"
        "cluster_slots_open:%u\r\ncluster_key_index_ids:%zu\r\n"
        "cluster_key_index_bytes:%zu\r\n",
        state_now(c) ? "ok" : "fail", c->nodes[0].id,
        cluster_myself_master(c) ? "master" : "replica", c->nodes[0].nslots,
        cluster_known_nodes(c), (unsigned long long)c->copies_sent,
        (unsigned long long)c->copies_applied,
        (unsigned long long)c->copies_stale, (unsigned long long)c->full_syncs,
        c->nopen, ckeys_entries(c->keys), ckeys_bytes(c->keys));
    for (uint32_t i = 1; i < c->nnodes; i++) {
        const struct cluster_node *n = &c->nodes[i];
        struct clink_info li;

        if (!n->used || n->link == NULL)
            continue;
        clink_info(n->link, &li);
        buf_printf(out,
                   "cluster_peer%u:id=%s,addr=%s:%u,role=%s,link=%s,"
                   "pending=%llu,pending_bytes=%llu,lag_ms=%llu,"
                   "sync=%s\r\n",
                   k++, n->id, n->ip, n->port,
                   (n->flags & CN_MASTER) ? "master" : "replica", li.state,
                   (unsigned long long)li.pending,
                   (unsigned long long)li.pending_bytes,
                   (unsigned long long)li.lag_ms,
                   li.syncing ? "running" : "no");
    }
}

/* ---- the record on the links ------------------------------------------ */

/*
 * On the links a record is 13 arguments (CLUSTER PEER's after its name) or
 * an array of 11 values (its reply, which lacks "PEER" and the dialed
 * address): id, ip, port, cport, role ("master" or "slave"), master id (""
 * for a master), config epoch, current epoch, version, [the address the
 * sender dialed, requests only,] the slots as text ("0-5460 5461"), the
 * nodes the sender knows as text ("id,ip,port,cport id,ip,port,cport").
 * Text keeps the argument count fixed whatever the table holds, well
 * under max-args.
 */
static void range_words(unsigned first, unsigned last, void *ctx)
{
    struct ur_buf *b = ctx;

    if (b->len > 0)
        (void)ur_buf_append(b, " ", 1);
    if (first == last)
        buf_printf(b, "%u", first);
    else
        buf_printf(b, "%u-%u", first, last);
}

static void record_texts(const struct cluster *c, struct ur_buf *ranges,
                         struct ur_buf *known)
{
    node_ranges(c, 0, range_words, ranges);
    /* a master's states ride with its slots: its replicas keep them */
    if (cluster_myself_master(c))
        marks_text(c, ranges);
    for (uint32_t i = 1; i < c->nnodes; i++) {
        const struct cluster_node *n = &c->nodes[i];

        if (!n->used || (n->flags & (CN_HANDSHAKE | CN_NOADDR)))
            continue;
        buf_printf(known, "%s%s,%s,%u,%u", known->len ? " " : "", n->id, n->ip,
                   n->port, n->cport);
    }
}

uint16_t cluster_put_record(const struct cluster *c, struct ur_buf *b,
                            const char *dialed_ip)
{
    const struct cluster_node *me = &c->nodes[0];
    struct ur_buf ranges = {0}, known = {0};
    bool master = (me->flags & CN_MASTER) != 0;

    record_texts(c, &ranges, &known);
    (void)ur_frame_put_arg_str(b, "PEER", 4);
    (void)ur_frame_put_arg_str(b, me->id, CLUSTER_ID_LEN);
    (void)ur_frame_put_arg_str(b, me->ip, strlen(me->ip));
    (void)ur_frame_put_arg_int(b, me->port);
    (void)ur_frame_put_arg_int(b, me->cport);
    (void)ur_frame_put_arg_str(b, master ? "master" : "slave", master ? 6 : 5);
    (void)ur_frame_put_arg_str(b, me->master_id, strlen(me->master_id));
    (void)ur_frame_put_arg_int(b, me->config_epoch);
    (void)ur_frame_put_arg_int(b, c->current_epoch);
    (void)ur_frame_put_arg_int(b, me->version);
    (void)ur_frame_put_arg_str(b, dialed_ip, strlen(dialed_ip));
    (void)ur_frame_put_arg_str(b, ranges.data ? ranges.data : "", ranges.len);
    (void)ur_frame_put_arg_str(b, known.data ? known.data : "", known.len);
    ur_buf_deinit(&ranges);
    ur_buf_deinit(&known);
    return 13;
}

void cluster_reply_record(const struct cluster *c, struct reply *r)
{
    const struct cluster_node *me = &c->nodes[0];
    struct ur_buf ranges = {0}, known = {0};

    record_texts(c, &ranges, &known);
    reply_arr(r, 11);
    reply_str(r, me->id, CLUSTER_ID_LEN);
    reply_cstr(r, me->ip);
    reply_int(r, me->port);
    reply_int(r, me->cport);
    reply_cstr(r, (me->flags & CN_MASTER) ? "master" : "slave");
    reply_cstr(r, me->master_id);
    reply_int(r, me->config_epoch);
    reply_int(r, c->current_epoch);
    reply_int(r, me->version);
    reply_str(r, ranges.data ? ranges.data : "", ranges.len);
    reply_str(r, known.data ? known.data : "", known.len);
    ur_buf_deinit(&ranges);
    ur_buf_deinit(&known);
}

int cluster_parse_ranges(const char *s, size_t n, uint16_t *out, size_t cap,
                         size_t *nranges)
{
    size_t pos = 0, k = 0;

    while (pos < n) {
        size_t w = 0;
        unsigned first, last;

        while (pos < n && s[pos] == ' ')
            pos++;
        while (pos + w < n && s[pos + w] != ' ')
            w++;
        if (w == 0)
            break;
        if (s[pos] == '[') { /* a migration mark (marks_of) */
            pos += w;
            continue;
        }
        if (k + 2 > cap || !parse_range(s + pos, w, &first, &last))
            return -1;
        out[k++] = (uint16_t)first;
        out[k++] = (uint16_t)last;
        pos += w;
    }
    *nranges = k / 2;
    return 0;
}

void cluster_learn_list(struct cluster *c, const char *s, size_t n)
{
    size_t pos = 0;

    while (pos < n) {
        const char *f[4];
        size_t flen[4], w = 0, k = 0, at;
        uint64_t port, cport;

        while (pos < n && s[pos] == ' ')
            pos++;
        while (pos + w < n && s[pos + w] != ' ')
            w++;
        if (w == 0)
            break;
        at = pos;
        for (k = 0; k < 4 && at <= pos + w; k++) {
            const char *comma = memchr(s + at, ',', pos + w - at);
            size_t len = comma ? (size_t)(comma - (s + at)) : pos + w - at;

            f[k] = s + at;
            flen[k] = len;
            at += len + 1;
        }
        pos += w;
        if (k != 4 || !ur_parse_u64(f[2], flen[2], &port) ||
            !ur_parse_u64(f[3], flen[3], &cport) || cport > 65535)
            continue;
        cluster_learn(c, f[0], flen[0], f[1], flen[1], (uint32_t)port,
                      (uint32_t)cport);
    }
}

void cluster_learn_my_ip(struct cluster *c, const char *ip, size_t len)
{
    struct cluster_node *me = &c->nodes[0];

    if (me->ip[0] != '\0' || len == 0 || len >= sizeof(me->ip) ||
        c->srv->cfg.cluster_announce_ip[0] != '\0')
        return;
    memcpy(me->ip, ip, len);
    me->ip[len] = '\0';
    log_info("cluster: this node's address is %s:%u (as a peer dialed it)",
             me->ip, me->port);
    cluster_changed(c);
}

/* ---- MEET ------------------------------------------------------------- */

int cluster_meet(struct cluster *c, struct session *sess, const char *ip,
                 uint32_t port, uint32_t cport, char *err, size_t errlen)
{
    struct in_addr a4;
    struct in6_addr a6;
    uint32_t idx;
    struct cluster_node *n;

    if ((inet_pton(AF_INET, ip, &a4) != 1 &&
         inet_pton(AF_INET6, ip, &a6) != 1) ||
        strlen(ip) >= sizeof(n->ip)) {
        snprintf(err, errlen, "Invalid node address specified: %s:%u", ip,
                 port);
        return -1;
    }
    if (port == 0 || port > 65535) {
        snprintf(err, errlen, "Invalid TCP base port specified: %u", port);
        return -1;
    }
    if ((strcmp(ip, c->nodes[0].ip) == 0 && port == c->nodes[0].port))
        return 1;
    idx = node_by_addr(c, ip, port);
    if (idx != CLUSTER_NONE && !(c->nodes[idx].flags & CN_HANDSHAKE) &&
        c->nodes[idx].link != NULL && clink_up(c->nodes[idx].link))
        return 1;
    if (idx == CLUSTER_NONE) {
        idx = node_alloc(c);
        if (idx == CLUSTER_NONE) {
            snprintf(err, errlen, "the node table is full");
            return -1;
        }
        n = &c->nodes[idx];
        new_id(n->id);
        snprintf(n->ip, sizeof(n->ip), "%s", ip);
        n->port = port;
        n->cport = cport ? cport : port + 10000;
        n->flags = CN_HANDSHAKE;
        n->link = clink_create(c, idx);
        if (n->link == NULL) {
            memset(n, 0, sizeof(*n));
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    if (clink_wait_meet(c->nodes[idx].link, sess) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

void cluster_meet_cancel(struct server *srv, const struct session *sess)
{
    struct cluster *c = srv->cluster;

    if (c == NULL)
        return;
    for (uint32_t i = 1; i < c->nnodes; i++)
        if (c->nodes[i].used && c->nodes[i].link != NULL)
            clink_meet_cancel(c->nodes[i].link, sess);
}
