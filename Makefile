# Makefile - dlq-monitor: dlq-worker, dlqctl, their tests and benchmarks.
#
#   make            build build/dlq-worker and build/dlqctl
#   make run        install what is missing, start a local broker if none
#                   answers, run the worker on embedded defaults
#   make test       install what is missing, start a private test broker,
#                   run the unit and integration tests
#   make SAN=address,undefined test   the same under sanitizers
#   make test-stress  the integration tests under CPU load with a slowed
#                   worker, to find tests that race it
#
# Every library comes through pkg-config. With SAN set, objects and
# binaries go to their own directory so the two builds never mix.

SHELL := /bin/bash
comma := ,
SAN ?=
B ?= build$(if $(SAN),/san-$(subst $(comma),-,$(SAN)))

CC ?= cc
# What both binaries link; the worker adds the archive (SQLite, or
# PostgreSQL through libpq) and its HTTP listener; dlqctl reaches the
# archive only through the worker.
CORE_PKGS := librabbitmq libcurl libcjson libconfig libssl libcrypto
WORKER_PKGS := sqlite3 libpq libmicrohttpd
PKGS := $(CORE_PKGS) $(WORKER_PKGS)
OPT ?= -O2 -g
WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wformat=2 -Wno-format-nonliteral
SANFLAGS := $(if $(SAN),-fsanitize=$(SAN) -fno-omit-frame-pointer -fno-sanitize-recover=all)
# gcc leaves float-to-integer overflow out of "undefined"; we want it
SANFLAGS += $(if $(findstring undefined,$(SAN)),-fsanitize=float-cast-overflow)
CPPFLAGS += -D_GNU_SOURCE
CFLAGS += -std=c11 $(OPT) $(WARN) $(SANFLAGS) -pthread -MMD -MP \
	$(shell pkg-config --cflags $(PKGS) 2>/dev/null)
CORE_LIBS := $(shell pkg-config --libs $(CORE_PKGS) 2>/dev/null) -lm -pthread
WORKER_LIBS := $(shell pkg-config --libs $(WORKER_PKGS) 2>/dev/null) $(CORE_LIBS)
LDLIBS += $(WORKER_LIBS)
LDFLAGS += $(SANFLAGS)
CHECK_LIBS = $(shell pkg-config --libs check 2>/dev/null)

# Who owns what (HACKING.md): internal/core is shared by both binaries,
# internal/worker is dlq-worker's, internal/dlqctl is dlqctl's. A file
# sees the headers of its own folder and of core only, so the compiler
# refuses a worker header in dlqctl (scripts/layout.sh checks the same,
# and that no two modules include each other).
CORE_INC := -iquote internal/core
WORKER_INC := $(CORE_INC) -iquote internal/worker \
	-iquote internal/worker/sqlite -iquote internal/worker/postgres \
	-iquote internal/worker/console
CTL_INC := $(CORE_INC) -iquote internal/dlqctl
ALL_INC := $(WORKER_INC) -iquote internal/dlqctl

CORE_SRC := $(wildcard internal/core/*.c)
WORKER_SRC := $(wildcard internal/worker/*.c internal/worker/sqlite/*.c \
	internal/worker/postgres/*.c internal/worker/console/*.c)
# The console's page, script and style, built into the worker.
CONSOLE_WEB := $(wildcard internal/worker/console/web/*)
CTL_SRC := $(wildcard internal/dlqctl/*.c)
LIB_SRC := $(CORE_SRC) $(WORKER_SRC) $(CTL_SRC)
CORE_OBJ := $(CORE_SRC:%.c=$(B)/obj/%.o) $(B)/obj/gen/topology_default.o
WORKER_OBJ := $(WORKER_SRC:%.c=$(B)/obj/%.o) $(B)/obj/gen/console_assets.o
CTL_OBJ := $(CTL_SRC:%.c=$(B)/obj/%.o)
DLQCTL_MAIN := $(patsubst %.c,$(B)/obj/%.o,$(wildcard cmd/dlqctl/*.c))
UNIT_SRC := $(wildcard tests/unit/check_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
IT_SRC := $(wildcard tests/integration/check_*.c)
IT_BIN := $(IT_SRC:tests/integration/%.c=$(B)/tests/it_%)
# IT=worker,alerts: only those integration programs (check_worker, ...).
IT_RUN := $(if $(IT),$(foreach p,$(subst $(comma), ,$(IT)),$(B)/tests/it_check_$(p)),$(IT_BIN))
IT_HARNESS := $(B)/obj/tests/integration/harness.o \
	$(B)/obj/tests/integration/receiver.o
# The integration tests run binaries of their own, $(B)/test/, whose
# fault-injection hooks (DLQ_FAULT_*) are compiled in; those users run
# have none.
TB := $(B)/test
LIBS := $(B)/libdlq-worker.a $(B)/libdlq-ctl.a $(B)/libdlq-core.a

.PHONY: all run test test-stress check check-unit check-integration \
	check-valgrind check-layout check-man tests deps bench fuzz fuzz-merge \
	install clean
all: $(B)/dlq-worker $(B)/dlqctl

$(B)/obj/internal/core/%.o $(B)/obj/gen/%.o: INC := $(CORE_INC)
$(B)/obj/internal/worker/%.o $(B)/obj-hooks/internal/worker/%.o \
    $(B)/obj/cmd/worker/%.o: INC := $(WORKER_INC)
$(B)/obj/internal/dlqctl/%.o $(B)/obj-hooks/internal/dlqctl/%.o \
    $(B)/obj/cmd/dlqctl/%.o: INC := $(CTL_INC)
$(B)/obj/tests/%.o: INC := $(ALL_INC)

$(B)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(INC) $(CFLAGS) -c -o $@ $<

# The default topology is built into the binaries from topology/line.conf.
$(B)/gen/topology_default.c: topology/line.conf
	@mkdir -p $(@D)
	{ echo '#include "topology.h"'; \
	  echo 'const char dlq_topology_default_text[] = {'; \
	  od -An -v -tx1 $< | sed 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '0x00 };'; } > $@

$(B)/obj-hooks/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(INC) -DDLQ_TEST_HOOKS $(CFLAGS) -c -o $@ $<

$(B)/gen/console_assets.c: scripts/embed-assets.sh $(CONSOLE_WEB)
	@mkdir -p $(@D)
	scripts/embed-assets.sh $@ $(CONSOLE_WEB)

$(B)/obj/gen/console_assets.o: $(B)/gen/console_assets.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(WORKER_INC) $(CFLAGS) -c -o $@ $<

$(B)/obj/gen/topology_default.o: $(B)/gen/topology_default.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(INC) $(CFLAGS) -c -o $@ $<

$(B)/libdlq-core.a: $(CORE_OBJ)
$(B)/libdlq-worker.a: $(WORKER_OBJ)
$(B)/libdlq-ctl.a: $(CTL_OBJ)
$(TB)/libdlq-worker.a: $(filter-out $(B)/obj/internal/worker/monitor.o,$(WORKER_OBJ)) \
	$(B)/obj-hooks/internal/worker/monitor.o
$(TB)/libdlq-ctl.a: $(filter-out $(B)/obj/internal/dlqctl/replaylive.o,$(CTL_OBJ)) \
	$(B)/obj-hooks/internal/dlqctl/replaylive.o
$(B)/libdlq-%.a:
	rm -f $@
	$(AR) rcs $@ $^

$(TB)/libdlq-%.a:
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

$(B)/dlq-worker: $(B)/obj/cmd/worker/main.o $(B)/libdlq-worker.a $(B)/libdlq-core.a
	$(CC) $(LDFLAGS) -o $@ $^ $(WORKER_LIBS)

$(B)/dlqctl: $(DLQCTL_MAIN) $(B)/libdlq-ctl.a $(B)/libdlq-core.a
	$(CC) $(LDFLAGS) -o $@ $^ $(CORE_LIBS)

$(TB)/dlq-worker: $(B)/obj/cmd/worker/main.o $(TB)/libdlq-worker.a $(B)/libdlq-core.a
	$(CC) $(LDFLAGS) -o $@ $^ $(WORKER_LIBS)

$(TB)/dlqctl: $(DLQCTL_MAIN) $(TB)/libdlq-ctl.a $(B)/libdlq-core.a
	$(CC) $(LDFLAGS) -o $@ $^ $(CORE_LIBS)

$(B)/tests/check_%: $(B)/obj/tests/unit/check_%.o $(LIBS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

$(B)/tests/it_%: $(B)/obj/tests/integration/%.o $(IT_HARNESS) $(LIBS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

tests: $(UNIT_BIN) $(IT_BIN) $(TB)/dlq-worker $(TB)/dlqctl

# Pure code; no broker needed. scripts/check.sh runs every program even
# after one fails, then names the failed tests and the programs that
# crashed or did not run.
check-unit: $(UNIT_BIN)
	@scripts/check.sh $(UNIT_BIN)

# Needs DLQ_TEST_AMQP_URL (scripts/test.sh sets it up).
# Sanitized programs run several times slower: their tests get three
# times Check's timeouts (a timeout is a hang, not a speed goal).
CK_MULT := $(if $(SAN),3,1)

check-integration: all tests
	@CK_TIMEOUT_MULTIPLIER=$(CK_MULT) DLQ_BIN=$(TB) scripts/check.sh $(IT_RUN)

# The integration programs that drive the worker through dlqctl, its
# logs and the broker (not through an SQLite file) run again with every
# archive in PostgreSQL (DLQ_TEST_ARCHIVE=postgres: a database per rig on
# the test server); their tests of the SQLite file itself are tagged
# `sqlite` and left out, and so is the console's browser test (`browser`:
# the page reaches the archive only through the API tested here). Needs
# DLQ_TEST_PG_URL too (scripts/test.sh).
IT_PG := alerts archive cli console control ops redrive replay termtext \
	topology worker
IT_PG_BIN := $(IT_PG:%=$(B)/tests/it_check_%)
check-postgres-archive: all tests
	@CK_TIMEOUT_MULTIPLIER=$(CK_MULT) DLQ_BIN=$(TB) \
	    DLQ_TEST_ARCHIVE=postgres CK_EXCLUDE_TAGS="sqlite browser" \
	    scripts/check.sh $(filter $(IT_RUN),$(IT_PG_BIN))

# The tree's shape (scripts/layout.sh): who includes whom, no circles,
# SQLite only in its backend. Checked once, not per sanitizer.
check-layout:
	@scripts/layout.sh

# The man pages, linted: any groff warning fails.
MAN_PAGES := $(wildcard man/*.[1-8])
check-man:
	@out=$$(groff -man -ww -z $(MAN_PAGES) 2>&1); \
	if [ -n "$$out" ]; then echo "$$out" >&2; exit 1; fi

check: $(if $(SAN),,check-layout check-man) all tests
	@CK_TIMEOUT_MULTIPLIER=$(CK_MULT) DLQ_BIN=$(TB) \
	    scripts/check.sh $(UNIT_BIN) $(IT_RUN)

# Unit tests in one process each under valgrind: any leak or error fails.
check-valgrind: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== valgrind $$t"; \
	  CK_FORK=no valgrind -q --leak-check=full --show-leak-kinds=definite,indirect \
	    --errors-for-leak-kinds=definite,indirect --error-exitcode=1 $$t; done

deps:
	scripts/deps.sh

$(B)/bench: bench/bench.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LDLIBS)

# libFuzzer targets (clang, ASan + UBSan) for the dead-letter decoder,
# the control request parser and the console's door (authentication,
# forms, query and body parsing), FUZZ_SECONDS each, from the seed corpus in
# tests/fuzz/corpus (new inputs stay in build/fuzz; crashes fail the run
# and leave build/fuzz/crash-*: turn each into a regression test).
FUZZ_SECONDS ?= 60
FZ := build/fuzz
FUZZ_CC ?= clang
FUZZ_FLAGS := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
	-fno-sanitize-recover=all -pthread $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
FUZZ_OBJ := $(LIB_SRC:%.c=$(FZ)/obj/%.o) $(FZ)/obj/topology_default.o \
	$(FZ)/obj/console_assets.o

$(FZ)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CPPFLAGS) $(ALL_INC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(FZ)/obj/topology_default.o: $(B)/gen/topology_default.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CPPFLAGS) $(CORE_INC) $(FUZZ_FLAGS) -c -o $@ $<

$(FZ)/obj/console_assets.o: $(B)/gen/console_assets.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CPPFLAGS) $(WORKER_INC) $(FUZZ_FLAGS) -c -o $@ $<

$(FZ)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_OBJ)
	$(FUZZ_CC) $(CPPFLAGS) $(ALL_INC) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)

# The targets run at once, each one's last lines printed when all are
# done; any failing fails the run. Their objects are kept between runs.
.SECONDARY: $(FUZZ_OBJ)
FUZZ_TARGETS := deadletter control console
fuzz: $(FUZZ_TARGETS:%=$(FZ)/fuzz_%)
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FZ)/corpus-$$t; \
	  ( $(FZ)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
	    -artifact_prefix=$(FZ)/crash-$$t- -print_final_stats=1 \
	    $(FZ)/corpus-$$t tests/fuzz/corpus/$$t > $(FZ)/$$t.log 2>&1; \
	    echo $$? > $(FZ)/$$t.rc ) & \
	done; wait; rc=0; \
	for t in $(FUZZ_TARGETS); do \
	  echo "== fuzz $$t for $(FUZZ_SECONDS) s"; \
	  tail -n 12 $(FZ)/$$t.log; \
	  [ "$$(cat $(FZ)/$$t.rc)" = 0 ] || rc=1; \
	done; exit $$rc

# The inputs a fuzz run found that reach new code, merged into the seed
# corpus (tests/fuzz/corpus, committed): each run of make fuzz and of CI
# starts from them.
fuzz-merge: $(FUZZ_TARGETS:%=$(FZ)/fuzz_%)
	@for t in $(FUZZ_TARGETS); do \
	  [ -d $(FZ)/corpus-$$t ] || continue; \
	  before=$$(ls tests/fuzz/corpus/$$t | wc -l); \
	  $(FZ)/fuzz_$$t -merge=1 -max_len=65536 tests/fuzz/corpus/$$t \
	    $(FZ)/corpus-$$t > $(FZ)/merge-$$t.log 2>&1 || exit 1; \
	  echo "fuzz-merge $$t: $$before -> $$(ls tests/fuzz/corpus/$$t | wc -l) inputs"; \
	done

# Prints figures side by side with baselines; never fails on timing.
bench:
	scripts/bench.sh

run:
	scripts/run.sh

test:
	scripts/test.sh

# The integration suite with both cores busy and every commit of the
# worker delayed: a test that races the worker loses here (once: RUNS=N)
test-stress:
	scripts/test.sh stress $(RUNS)

# Binaries and man pages, under DESTDIR/PREFIX (a package's staging
# directory, or / for /usr/local).
PREFIX ?= /usr/local
install: all
	install -D -m 0755 $(B)/dlq-worker $(DESTDIR)$(PREFIX)/bin/dlq-worker
	install -D -m 0755 $(B)/dlqctl $(DESTDIR)$(PREFIX)/bin/dlqctl
	for m in $(MAN_PAGES); do \
	  install -D -m 0644 $$m \
	    $(DESTDIR)$(PREFIX)/share/man/man$${m##*.}/$${m##*/}; \
	done

clean:
	rm -rf build

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)
