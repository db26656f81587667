/*
 * fuzz_cluster.c - libFuzzer target for cluster mode's parsers: the node
 * table's file (nodes.conf) and what a peer's record carries (its slot
 * ranges and its known nodes, as text).
 *
 * The first byte picks the mode:
 *   even  the rest is a nodes.conf: parsed into a fresh table; refused or
 *         accepted, the table's counts must agree with its slots;
 *   odd   the rest is a record's texts: up to the first newline the slot
 *         ranges (cluster_parse_ranges: every range in order and below
 *         16384), after it the known list (cluster_learn_list: nodes
 *         learned only with valid ids, addresses and ports).
 * Every allocation is freed with the table.
 *
 *   make fuzz && build-fuzz/fuzz_cluster tests/fuzz/corpus/cluster
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ASSERT(c)                                                              \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

static struct server srv;

static void check_counts(const struct cluster *c)
{
    uint32_t assigned = 0, per[CLUSTER_MAX_NODES] = {0};

    ASSERT(c->nnodes <= CLUSTER_MAX_NODES);
    for (unsigned s = 0; s < UR_SLOTS; s++) {
        if (c->owner[s] == CLUSTER_NONE)
            continue;
        ASSERT(c->owner[s] < c->nnodes && c->nodes[c->owner[s]].used);
        per[c->owner[s]]++;
        assigned++;
    }
    ASSERT(assigned == c->assigned);
    for (uint32_t i = 0; i < c->nnodes; i++)
        ASSERT(!c->nodes[i].used || per[i] == c->nodes[i].nslots);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cluster *c;
    char err[256];

    if (size == 0)
        return 0;
    config_init(&srv.cfg);
    srv.cfg.cluster_enabled = true;
    c = cluster_create(&srv);
    ASSERT(c != NULL);
    if ((data[0] & 1) == 0) {
        (void)cluster_config_parse(c, (const char *)data + 1, size - 1, "fuzz",
                                   err, sizeof(err));
        check_counts(c);
    } else {
        static uint16_t ranges[2 * UR_SLOTS];
        const char *s = (const char *)data + 1;
        size_t n = size - 1, nranges = 0;
        const char *nl = memchr(s, '\n', n);
        size_t first = nl ? (size_t)(nl - s) : n;

        if (cluster_parse_ranges(s, first, ranges, 2 * UR_SLOTS, &nranges) == 0)
            for (size_t i = 0; i < nranges; i++)
                ASSERT(ranges[2 * i] <= ranges[2 * i + 1] &&
                       ranges[2 * i + 1] < UR_SLOTS);
        if (nl != NULL) {
            strcpy(c->nodes[0].id, "ffffffffffffffffffffffffffffffffffffffff");
            cluster_learn_list(c, nl + 1, n - first - 1);
            for (uint32_t i = 1; i < c->nnodes; i++)
                ASSERT(!c->nodes[i].used ||
                       (strlen(c->nodes[i].id) == CLUSTER_ID_LEN &&
                        c->nodes[i].port > 0 && c->nodes[i].port <= 65535));
        }
        check_counts(c);
    }
    cluster_destroy(c);
    return 0;
}
