#!/usr/bin/env bash
# scripts/bench.sh - make bench: install, build, start (or reuse) the
# private broker, run bench/bench.c. Results print and go to
# build/benchmarks.md (docs/benchmarks.md holds a commented run).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh
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
DLQ_BIN=build build/bench
