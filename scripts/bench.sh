#!/usr/bin/env bash
# scripts/bench.sh - make bench: install, build, start (or reuse) the
# private broker and a private PostgreSQL server (on the broker's port
# + 99), run bench/bench.c. Results print and go to
# build/benchmarks.md (docs/benchmarks.md holds a commented run).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh bench
port=${DLQ_TEST_PORT:-5699}
make -s all build/bench
# The test node runs the management plugin (stats collected every
# second); the figures are of a node without it, as they always were.
if grep -q rabbitmq_management \
    "/var/tmp/dlq-monitor-rabbitmq-${port}/enabled_plugins" 2>/dev/null; then
	scripts/broker.sh stop "$port"
fi
unset BROKER_MANAGEMENT_PORT
scripts/broker.sh start "$port"
export DLQ_TEST_AMQP_URL="amqp://guest:guest@localhost:${port}/"
# scenario 9's PostgreSQL server: private, made for the run, deleted after
pg_port=$((port + 99))
DLQ_BENCH_PG_URL=$(scripts/postgres.sh start "$pg_port")
export DLQ_BENCH_PG_URL
trap 'scripts/postgres.sh stop "$pg_port"' EXIT
DLQ_BIN=build build/bench
