# unreadd - top-level build. `make` builds everything into build/;
# `make run` starts the server on its defaults; `make test` runs every test.
# Sanitizer builds go to build-asan/ and build-ubsan/.

BUILD    ?= build
CC       ?= cc
OPT      ?= -O2
SAN      ?=
PKGS     := libevent libxxhash liblz4 openssl

WARN     := -Wall -Wextra -Wshadow -Wmissing-prototypes -Werror
CFLAGS   ?= $(OPT) -g
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE -fPIC -pthread $(WARN) $(CFLAGS) $(SAN) \
             -Iprotocol -Icommon -Iserver -Iserver/store -Ipersistence \
             -Iclient-lib \
             $(shell pkg-config --cflags $(PKGS) 2>/dev/null) -MMD -MP
# -pthread: persistence/bgsync.c (the journal's everysec fsync thread).
# openssl: TLS, in the server (server/tls.c) and in libunread.
LIBS      = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm -pthread
# The server's objects also need libevent's OpenSSL bufferevents (the
# metrics port over TLS, server/metrics.c).
CORE_LIBS = $(LIBS) $(shell pkg-config --libs libevent_openssl 2>/dev/null)
LDFLAGS  ?=

PROTO_SRC  := $(wildcard protocol/*.c)
COMMON_SRC := $(wildcard common/*.c)
STORE_SRC  := $(wildcard server/store/*.c)
SERVER_SRC := $(wildcard server/*.c)
PERSIST_SRC:= $(wildcard persistence/*.c)
CLIENT_SRC := $(filter-out client-lib/unread-cli.c,$(wildcard client-lib/unread*.c))
CLI_SRC    := client-lib/unread-cli.c
UNIT_SRC   := $(wildcard tests/unit/test_*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

PROTO_OBJ  := $(call obj,$(PROTO_SRC))
COMMON_OBJ := $(call obj,$(COMMON_SRC))
STORE_OBJ  := $(call obj,$(STORE_SRC))
SERVER_OBJ := $(call obj,$(SERVER_SRC))
PERSIST_OBJ:= $(call obj,$(PERSIST_SRC))
CLIENT_OBJ := $(call obj,$(CLIENT_SRC))
CORE_OBJ   := $(filter-out $(BUILD)/obj/server/main.o \
                $(BUILD)/obj/server/notify.o,$(SERVER_OBJ)) \
              $(STORE_OBJ) $(PERSIST_OBJ) $(COMMON_OBJ) $(PROTO_OBJ)
UNIT_BIN   := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
STORE_BENCH:= $(patsubst bench/%.c,$(BUILD)/%,$(wildcard bench/store_*.c))

# libunread's ABI (docs/CLIENT.md, "ABI"): SONAME libunread.so.MAJOR, the
# real name libunread.so.MAJOR.MINOR.PATCH from unread.h's version macros,
# and only the unread_* symbols exported (client-lib/libunread.map).
UNREAD_VER := $(shell sed -n 's/^\#define UNREAD_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)/\2/p' client-lib/unread.h | paste -sd.)
UNREAD_MAJOR := $(firstword $(subst ., ,$(UNREAD_VER)))
SONAME := libunread.so.$(UNREAD_MAJOR)

BINS := $(BUILD)/unreadd $(BUILD)/unread-cli $(BUILD)/libunread.a \
        $(BUILD)/libunread.so

.SECONDARY:

.PHONY: all deps run test unit asan ubsan fuzz fuzz-run fmt check-fmt docs \
        check-docs clean

all: deps-quiet $(BINS) $(UNIT_BIN) $(BUILD)/gencmds $(STORE_BENCH)

# Missing Debian packages: installed when root, else named and fatal.
# deps-quiet (the build packages) is an order-only prerequisite of every
# compile, so under `make -jN` no compile starts before the headers are
# there; deps (the test packages) comes after it, so that the two never
# run apt-get at once. DEPS_SH: the script (tests/integration/test_make.py
# puts a slow stand-in there to check that order).
DEPS_SH ?= sh tools/deps.sh
deps: deps-quiet
	@$(DEPS_SH) build test
deps-quiet:
	@$(DEPS_SH) build

$(BUILD)/obj/%.o: %.c | deps-quiet
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

# sd_notify (Type=notify readiness) links libsystemd into unreadd alone,
# when its development files are there (tools/deps.sh build installs them).
# Asked when the compile and the link run (recursive variables), not when
# the Makefile is read: on a fresh machine deps-quiet installs them first.
SYSTEMD_CFLAGS = $(shell pkg-config --exists libsystemd 2>/dev/null && \
    echo -DUNREADD_SYSTEMD $$(pkg-config --cflags libsystemd))
SYSTEMD_LIBS = $(shell pkg-config --libs libsystemd 2>/dev/null)
$(BUILD)/obj/server/notify.o: ALL_CFLAGS += $(SYSTEMD_CFLAGS)
$(BUILD)/unreadd: $(BUILD)/obj/server/main.o $(BUILD)/obj/server/notify.o \
                  $(CORE_OBJ)
	$(CC) $(SAN) $(LDFLAGS) -o $@ $^ $(CORE_LIBS) $(SYSTEMD_LIBS)

$(BUILD)/libunread.a: $(CLIENT_OBJ) $(PROTO_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libunread.so.$(UNREAD_VER): $(CLIENT_OBJ) $(PROTO_OBJ) \
                                     client-lib/libunread.map
	$(CC) $(SAN) -shared $(LDFLAGS) -Wl,-soname,$(SONAME) \
	    -Wl,--version-script=client-lib/libunread.map -o $@ \
	    $(CLIENT_OBJ) $(PROTO_OBJ) -lxxhash -lssl -lcrypto
$(BUILD)/$(SONAME): $(BUILD)/libunread.so.$(UNREAD_VER)
	ln -sf libunread.so.$(UNREAD_VER) $@
$(BUILD)/libunread.so: $(BUILD)/$(SONAME)
	ln -sf $(SONAME) $@

# unread-cli's line editing and history: libedit (Debian libedit-dev).
$(BUILD)/obj/client-lib/unread-cli.o: ALL_CFLAGS += \
    $(shell pkg-config --cflags libedit 2>/dev/null)
$(BUILD)/unread-cli: $(call obj,$(CLI_SRC)) $(BUILD)/libunread.a
	$(CC) $(SAN) $(LDFLAGS) -o $@ $^ $(LIBS) \
	    $(shell pkg-config --libs libedit 2>/dev/null || echo -ledit)

# The example service of docs/CLIENT.md, built so it cannot rot.
all: $(BUILD)/badge_service
$(BUILD)/badge_service: $(call obj,client-lib/examples/badge_service.c) \
                        $(BUILD)/libunread.a
	$(CC) $(SAN) $(LDFLAGS) -o $@ $^ $(LIBS)

# The asynchronous example (docs/CLIENT.md): libunread's async handle on
# libevent through the header-only adapter client-lib/unread_libevent.h.
all: $(BUILD)/async_badge
$(BUILD)/async_badge: $(call obj,client-lib/examples/async_badge.c) \
                      $(BUILD)/libunread.a
	$(CC) $(SAN) $(LDFLAGS) -o $@ $^ $(LIBS)

# The pub/sub gateway example (docs/CLIENT.md, "Pub/sub"), the test
# driver of libunread's subscriptions (tests/integration/test_client_pubsub.py)
# and of its cluster mode (test_client_cluster.py).
all: $(BUILD)/badge_gateway $(BUILD)/pubsub_client $(BUILD)/cluster_client
# The gateway as deployed (issue 34): a few connections holding many
# users' badge subscriptions (bench-pubsub's gateway row through
# libunread; tests/integration/test_push_gateway.py).
all: $(BUILD)/push_gateway
$(BUILD)/push_gateway: $(call obj,client-lib/examples/push_gateway.c) \
                       $(BUILD)/libunread.a
	$(CC) $(SAN) $(LDFLAGS) -o $@ $^ $(LIBS)
$(BUILD)/cluster_client: $(call obj,tests/integration/cluster_client.c) \
                         $(BUILD)/libunread.a
	$(CC) $(SAN) $(LDFLAGS) -o $@ $^ $(LIBS)
# The libunread writer of the resharding tests (test_reshard.py).
all: $(BUILD)/reshard-writer
$(BUILD)/reshard-writer: $(call obj,tests/integration/reshard_writer.c) \
                         $(BUILD)/libunread.a
	$(CC) $(SAN) $(LDFLAGS) -o $@ $^ $(LIBS)
$(BUILD)/badge_gateway: $(call obj,client-lib/examples/badge_gateway.c) \
                        $(BUILD)/libunread.a
	$(CC) $(SAN) $(LDFLAGS) -o $@ $^ $(LIBS)
$(BUILD)/pubsub_client: $(call obj,tests/integration/pubsub_client.c) \
                        $(BUILD)/libunread.a
	$(CC) $(SAN) $(LDFLAGS) -o $@ $^ $(LIBS)

# The fault-injection shim of the fault suites (tests/faults/faultfs.c),
# LD_PRELOADed into the server: never sanitized (the sanitizer runtime
# must come first in a sanitized server; the suites say so in
# ASAN_OPTIONS).
all: $(BUILD)/faultfs.so
$(BUILD)/faultfs.so: tests/faults/faultfs.c | deps-quiet
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -fPIC -shared -pthread $(WARN) $(OPT) -g \
	    -o $@ $< -ldl

# The libunread writer of the failover suites (tests/faults/failover.py:
# follows the primary through redis-sentinel; cluster_failover.py: a
# cluster-mode handle).
all: $(BUILD)/failover-writer
$(BUILD)/failover-writer: $(call obj,tests/faults/failover_writer.c) \
                          $(BUILD)/libunread.a
	$(CC) $(SAN) $(LDFLAGS) -o $@ $^ $(LIBS)

# Unit tests link the module under test with everything below the network.
$(BUILD)/tests/test_client: $(BUILD)/obj/tests/unit/test_client.o $(BUILD)/libunread.a
	@mkdir -p $(dir $@)
	$(CC) $(SAN) $(LDFLAGS) -o $@ $^ $(LIBS)
$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(CORE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(SAN) $(LDFLAGS) -o $@ $^ $(CORE_LIBS)

# Store-level figures (bench/store_*.c): memory and speed of the stores
# alone, no server involved.
$(BUILD)/store_%: $(BUILD)/obj/bench/store_%.o $(STORE_OBJ)
	$(CC) $(SAN) $(LDFLAGS) -o $@ $^ $(LIBS)
# The snapshot figures need the persistence container and struct db too.
$(BUILD)/store_snapshot: $(BUILD)/obj/bench/store_snapshot.o $(CORE_OBJ)
	$(CC) $(SAN) $(LDFLAGS) -o $@ $^ $(CORE_LIBS)

$(BUILD)/gencmds: $(BUILD)/obj/tools/gencmds.o $(PROTO_OBJ)
	$(CC) $(SAN) $(LDFLAGS) -o $@ $^ $(LIBS)

# unread-bench: the load generator (bench/unread-bench.c, bench/bench_*.c)
# over the protocol codecs and libunread. `make bench` runs it against
# unreadd and Redis side by side; `make bench-memory` compares memory for the
# same data (bench/compare.py; docs/PERFORMANCE.md).
BENCH_SRC := bench/unread-bench.c $(wildcard bench/bench_*.c)
BENCH_OBJ := $(call obj,$(filter-out bench/unread-bench.c,$(BENCH_SRC)))
all: $(BUILD)/unread-bench
$(BUILD)/unread-bench: $(call obj,$(BENCH_SRC)) $(BUILD)/libunread.a
	$(CC) $(SAN) $(LDFLAGS) -pthread -o $@ $^ $(LIBS)
# pubsub-bench: subscribers at scale, badge channels and PUBLISH fan-out,
# over RESP against unreadd or Redis (bench/pubsub.py, `make bench-pubsub`).
all: $(BUILD)/pubsub-bench
$(BUILD)/pubsub-bench: $(call obj,bench/pubsub-bench.c bench/bench_hist.c)
	$(CC) $(SAN) $(LDFLAGS) -o $@ $^
# loopback-bound: the kernel's cost of one small send per message to many
# loopback connections, no server (bench/pubsub.py prints it beside the
# badge row: the machine's bound at the hour of the run).
all: $(BUILD)/loopback-bound
$(BUILD)/loopback-bound: $(call obj,bench/loopback-bound.c)
	$(CC) $(SAN) $(LDFLAGS) -o $@ $^
$(BUILD)/obj/tests/unit/test_bench.o: ALL_CFLAGS += -Ibench
$(BUILD)/tests/test_bench: $(BUILD)/obj/tests/unit/test_bench.o $(BENCH_OBJ) \
                           $(BUILD)/libunread.a
	@mkdir -p $(dir $@)
	$(CC) $(SAN) $(LDFLAGS) -pthread -o $@ $^ $(LIBS)

# client-bench: libunread's sync and async faces side by side from one
# thread (docs/PERFORMANCE.md, "Client library").
all: $(BUILD)/client-bench
$(BUILD)/client-bench: $(call obj,bench/client_bench.c) $(BUILD)/libunread.a
	$(CC) $(SAN) $(LDFLAGS) -o $@ $^ $(LIBS)

# BENCH_ARGS: more compare.py options, e.g. "--seconds 10 --reps 5".
BENCH_ARGS ?=
.PHONY: bench bench-memory bench-shards bench-pubsub
bench: deps-quiet $(BUILD)/unread-bench $(BUILD)/unreadd
	@sh tools/deps.sh bench
	@python3 bench/compare.py --build $(BUILD) --results auto $(BENCH_ARGS)
bench-memory: deps-quiet $(BUILD)/unread-bench $(BUILD)/unreadd
	@sh tools/deps.sh bench
	@python3 bench/compare.py --build $(BUILD) --memory --results auto \
	    $(BENCH_ARGS)
# unreadd direct and as 1, 2, 3 shards through libunread's placement
# (bench/shards.py; no Redis needed). SHARDS_ARGS: e.g. "--reps 5".
SHARDS_ARGS ?=
bench-shards: deps-quiet $(BUILD)/unread-bench $(BUILD)/unreadd
	@python3 bench/shards.py --build $(BUILD) $(SHARDS_ARGS)
# Issue 19's goals: notify-badges' cost to writes, badge messages to
# 10,000 subscribers, PUBLISH fan-out beside Redis (bench/pubsub.py).
# PUBSUB_ARGS: e.g. "--reps 5 --subscribers 2000".
bench-pubsub: deps-quiet $(BUILD)/unread-bench $(BUILD)/pubsub-bench \
              $(BUILD)/loopback-bound $(BUILD)/unreadd
	@sh tools/deps.sh bench
	@python3 bench/pubsub.py --build $(BUILD) --results auto $(PUBSUB_ARGS)

# Replication: the primary's CPU per write with 0, 1, 2 replicas beside
# Redis's (issue 34), issue 20's goals: throughput with 2 replicas, a
# replica's lag under cnt-incr P16, full sync of 10M users, partial resync
# after a 5 s cut (bench/repl.py). REPL_ARGS: e.g. "--users 1000000
# --only cost,lag".
.PHONY: bench-repl
bench-repl: deps-quiet $(BUILD)/unread-bench $(BUILD)/unreadd
	@sh tools/deps.sh bench
	@python3 bench/repl.py --build $(BUILD) --results auto $(REPL_ARGS)

# Every bench results file (bench/results/) behind docs/PERFORMANCE.md:
# `make bench bench-memory bench-pubsub bench-repl && make perf-report`.
# perf-report rewrites the page's tables from the newest results file of
# each kind and draws docs/img/perf-*.png (bench/report.py, Debian's
# python3 and python3-matplotlib); check-perf checks that the page's
# tables are those of the files they cite (what the suite's
# test_perf_page.py does).
.PHONY: perf-report check-perf
perf-report:
	@sh tools/deps.sh bench
	@/usr/bin/python3 bench/report.py
check-perf:
	@python3 bench/report.py --check

# Issue 31's goals: routing's cost (a one-node cluster against cluster
# mode off, alternating) and how soon a global write is visible on every
# shard under load (bench/cluster.py). CLUSTER_ARGS: e.g. "--reps 6".
CLUSTER_ARGS ?=
.PHONY: bench-cluster
bench-cluster: deps-quiet $(BUILD)/unread-bench $(BUILD)/unreadd
	@sh tools/deps.sh bench test
	@UNREADD_BUILD=$(BUILD) python3 bench/cluster.py --build $(BUILD) \
	    $(CLUSTER_ARGS)

# Everything the README's tour uses (unread-cli too), then the server.
run: deps-quiet $(BUILD)/unreadd $(BUILD)/unread-cli
	$(BUILD)/unreadd --dir ./data

test: deps all
	@python3 tests/run.py --build $(BUILD)

# The suite on a loaded machine (issue 34): LOADED_RUNS (10) runs of the
# whole suite, each beside a CPU hog on one core; "k of N runs passed".
LOADED_RUNS ?= 10
.PHONY: test-loaded
test-loaded: deps all
	@sh tools/test-loaded.sh $(BUILD) $(LOADED_RUNS)

unit: all
	@python3 tests/run.py --build $(BUILD) --unit-only

# Every fault suite (tests/faults/*.py: kill -9, journal write and fsync
# failures, ...) in full; `make test` runs each with a few trials.
.PHONY: test-faults
test-faults: deps all
	@python3 tests/run.py --build $(BUILD) --faults-only

# The failover suite in full (issue 20): FAILOVER_TRIALS (20) kill -9s of
# the primary under three redis-sentinels, writers through libunread and
# redis-py; `make test` runs 2 trials, `make test-faults` 5.
.PHONY: test-failover
test-failover: deps all
	@UNREADD_BUILD=$(BUILD) FAILOVER_TRIALS=$${FAILOVER_TRIALS:-20} \
	    python3 tests/faults/failover.py

# Failover inside a cluster (issue 31): CLUSTER_FAILOVER_TRIALS (10)
# kill -9s of a shard's primary under three redis-sentinels watching every
# shard, writers through redis-py's RedisCluster (and libunread's cluster
# mode: build/failover-writer --cluster, sync and async); `make test` runs
# 1 trial.
.PHONY: test-cluster-failover
test-cluster-failover: deps all
	@UNREADD_BUILD=$(BUILD) \
	    CLUSTER_FAILOVER_TRIALS=$${CLUSTER_FAILOVER_TRIALS:-10} \
	    python3 tests/faults/cluster_failover.py

# Online resharding in full (issue 32): 1M users, 3 primaries with
# replicas and sentinels, a 4th added and rebalanced under writers; the
# move alone, the source primary killed mid-move, the target killed
# mid-move (fix + rebalance finish them). RESHARD_USERS, RESHARD_VARIANTS
# (plain,source,target) to narrow; `make test` runs the reduced run
# (tests/integration/test_reshard.py).
.PHONY: test-reshard-full
test-reshard-full: deps all
	@UNREADD_BUILD=$(BUILD) python3 tests/faults/_reshard_full.py

asan:
	$(MAKE) BUILD=build-asan OPT=-O1 \
	    SAN="-fsanitize=address -fno-omit-frame-pointer" test

ubsan:
	$(MAKE) BUILD=build-ubsan OPT=-O1 \
	    SAN="-fsanitize=undefined -fno-sanitize-recover=all" test

# libFuzzer targets (clang): one per parser and loader, with seed corpora
# in tests/fuzz/corpus/<name>. `make fuzz-run` runs each for FUZZ_SECONDS,
# writing new inputs to a scratch dir so the repo corpus stays small.
FUZZ_NAMES   := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BIN     := $(patsubst %,build-fuzz/fuzz_%,$(FUZZ_NAMES))
FUZZ_SECONDS ?= 30
FUZZ_FLAGS   := -g -O1 -fsanitize=fuzzer,address,undefined -std=c11 \
                -D_GNU_SOURCE -Iprotocol -Icommon -Iserver -Iserver/store
fuzz: $(FUZZ_BIN)
	@sh tools/deps.sh fuzz
build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(PROTO_SRC) $(STORE_SRC)
	@sh tools/deps.sh fuzz
	@mkdir -p build-fuzz
	clang $(FUZZ_FLAGS) -o $@ $< $(PROTO_SRC) $(STORE_SRC)
# The snapshot and journal loaders load into a db and replay through the
# executor, and fuzz_exec runs the executor itself: they link persistence/
# and the server, less the network.
FUZZ_SERVER_SRC := $(PERSIST_SRC) $(COMMON_SRC) \
                   $(filter-out server/main.c server/net.c,$(SERVER_SRC))
build-fuzz/fuzz_snapshot build-fuzz/fuzz_journal build-fuzz/fuzz_exec \
build-fuzz/fuzz_cluster build-fuzz/fuzz_tls build-fuzz/fuzz_userrec: \
        build-fuzz/fuzz_%: \
        tests/fuzz/fuzz_%.c $(PROTO_SRC) $(STORE_SRC) $(FUZZ_SERVER_SRC)
	@sh tools/deps.sh fuzz
	@mkdir -p build-fuzz
	clang $(FUZZ_FLAGS) -Ipersistence -o $@ $< $(PROTO_SRC) $(STORE_SRC) \
	    $(FUZZ_SERVER_SRC) $(CORE_LIBS)
# A crash, leak or failed check fails that target (its log's tail is
# shown, the input left as build-fuzz/<name>-crash-*: add it to the corpus
# with the fix) and the run, after every target ran; the last line counts
# the targets that passed and failed.
fuzz-run: fuzz
	@pass=0; fail=0; for n in $(FUZZ_NAMES); do \
	    tmp=$$(mktemp -d); \
	    echo "fuzz $$n: $(FUZZ_SECONDS)s"; \
	    if build-fuzz/fuzz_$$n -max_total_time=$(FUZZ_SECONDS) \
	        -artifact_prefix=build-fuzz/$$n- $$tmp tests/fuzz/corpus/$$n \
	        2>build-fuzz/$$n.log; then \
	        pass=$$((pass + 1)); tail -1 build-fuzz/$$n.log; \
	    else \
	        fail=$$((fail + 1)); tail -30 build-fuzz/$$n.log; \
	    fi; \
	    rm -rf $$tmp; \
	done; \
	echo "$$pass passed, $$fail failed"; [ $$fail -eq 0 ]

# The integration tests named by VALGRIND_TESTS (patterns of run.py -k)
# against unreadd under valgrind: harness.py starts the server through
# UNREADD_WRAPPER, and a memory error or a definite leak makes it exit 99,
# which fails the test.
VALGRIND_TESTS ?= test_resp.py test_binary.py test_cnt.py \
                  test_hardening.py::test_auth
VALGRIND := valgrind --quiet --error-exitcode=99 --leak-check=full \
            --errors-for-leak-kinds=definite
.PHONY: valgrind
valgrind: all
	@command -v valgrind >/dev/null || { echo "valgrind: not installed"; \
	    exit 1; }
	@for t in $(VALGRIND_TESTS); do \
	    UNREADD_WRAPPER="$(VALGRIND)" UNREADD_TEST_IO_TIMEOUT=60 \
	        python3 tests/run.py --build $(BUILD) -k $$t || exit 1; \
	done

FMT_FILES = $(shell git ls-files '*.c' '*.h' 2>/dev/null)
fmt:
	clang-format -i $(FMT_FILES)
check-fmt:
	@clang-format --dry-run -Werror $(FMT_FILES) && echo "format: clean"

# docs/COMMANDS.md: the reference part is generated from protocol/ops.def.
docs: $(BUILD)/gencmds
	$(BUILD)/gencmds docs/COMMANDS.md
check-docs: $(BUILD)/gencmds
	@$(BUILD)/gencmds --check docs/COMMANDS.md

clean:
	rm -rf build build-asan build-ubsan build-fuzz build-pkg

# `make install` (PREFIX, DESTDIR as usual): the binaries, libunread
# (static, and shared with its SONAME and links) with its headers and
# pkg-config file, and in $(DOCDIR) an example unreadd.conf and the systemd
# unit (docs/OPERATIONS.md; its ExecStart names $(BINDIR)). `make
# uninstall` removes exactly those files. The Debian packages (debian/,
# `make deb`) install the same files under /usr, the configuration in
# /etc/unreadd and the unit in systemd's directory.
PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
LIBDIR  ?= $(PREFIX)/lib
INCDIR  ?= $(PREFIX)/include
DOCDIR  ?= $(PREFIX)/share/doc/unreadd
PKG_VERSION := $(UNREAD_VER)
INSTALL_BINS := unreadd unread-cli unread-bench
INSTALL_HDRS := unread.h unread_libevent.h
.PHONY: install install-files uninstall
install: all
	$(MAKE) install-files
# install-files: the copying alone, of files built already (debian/rules).
install-files:
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig \
	    $(DESTDIR)$(INCDIR) $(DESTDIR)$(DOCDIR)
	install -m 755 $(addprefix $(BUILD)/,$(INSTALL_BINS)) $(DESTDIR)$(BINDIR)
	install -m 644 $(BUILD)/libunread.a $(DESTDIR)$(LIBDIR)
	install -m 755 $(BUILD)/libunread.so.$(UNREAD_VER) $(DESTDIR)$(LIBDIR)
	ln -sf libunread.so.$(UNREAD_VER) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libunread.so
	install -m 644 $(addprefix client-lib/,$(INSTALL_HDRS)) $(DESTDIR)$(INCDIR)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	    -e 's|@INCDIR@|$(INCDIR)|' -e 's|@VERSION@|$(PKG_VERSION)|' \
	    client-lib/unread.pc.in >$(DESTDIR)$(LIBDIR)/pkgconfig/unread.pc
	install -m 644 docs/unreadd.conf $(DESTDIR)$(DOCDIR)
	sed -e 's|/usr/bin/unreadd|$(BINDIR)/unreadd|' docs/unreadd.service \
	    >$(DESTDIR)$(DOCDIR)/unreadd.service
uninstall:
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(INSTALL_BINS)) \
	    $(DESTDIR)$(LIBDIR)/libunread.a \
	    $(DESTDIR)$(LIBDIR)/libunread.so.$(UNREAD_VER) \
	    $(DESTDIR)$(LIBDIR)/$(SONAME) $(DESTDIR)$(LIBDIR)/libunread.so \
	    $(addprefix $(DESTDIR)$(INCDIR)/,$(INSTALL_HDRS)) \
	    $(DESTDIR)$(LIBDIR)/pkgconfig/unread.pc \
	    $(DESTDIR)$(DOCDIR)/unreadd.conf $(DESTDIR)$(DOCDIR)/unreadd.service
	-rmdir $(DESTDIR)$(DOCDIR) 2>/dev/null

# Debian packages (debian/): unreadd, libunread1, libunread-dev and
# unread-tools, built by dpkg-buildpackage in a copy of the tree (the
# files git knows, committed or not) under $(DEBDIR), which receives the
# .deb files. `make check-deb` then checks them (tests/package.sh:
# contents, exported symbols, the unit, a program built against the
# installed library running the async example). Its own CI step.
DEBDIR ?= build-pkg
.PHONY: deb check-deb
deb:
	@sh tools/deps.sh build deb
	rm -rf $(DEBDIR)
	mkdir -p $(DEBDIR)/src
	git ls-files -co --exclude-standard -z | \
	    xargs -0 tar cf - | tar xf - -C $(DEBDIR)/src
	cd $(DEBDIR)/src && dpkg-buildpackage -us -uc -b
	@ls $(DEBDIR)/*.deb
check-deb: deb
	sh tests/package.sh $(DEBDIR)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
