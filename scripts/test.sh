#!/usr/bin/env bash
# scripts/test.sh - the whole test suite on a fresh Debian 12 machine:
# installs what is missing, builds, starts a private RabbitMQ node on
# DLQ_TEST_PORT (default 5699, never a broker you already run), runs the
# unit and integration tests, and prints one total line. The test node is
# reset (its data deleted) at every run.
# `make SAN=address,undefined test` runs the same under sanitizers.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh test
port=${DLQ_TEST_PORT:-5699}
make -s all tests
# A fresh node every run: tests leave durable queues behind, and a node
# holding thousands of them restarts slowly (the fault tests restart it).
# With the management API (port + 10000), where stats read a queue's
# traffic; the fault tests' restarts keep it through the environment.
# And TLS listeners (AMQP and management, each on its port + 1000) with a
# CA made for the node, for the amqps:// and https:// tests.
export BROKER_MANAGEMENT_PORT=$((port + 10000))
export BROKER_TLS_PORT=$((port + 1000))
scripts/broker.sh reset "$port"
export DLQ_TEST_AMQP_URL="amqp://guest:guest@localhost:${port}/"
export DLQ_TEST_MANAGEMENT_URL="http://127.0.0.1:${BROKER_MANAGEMENT_PORT}/"
export DLQ_TEST_AMQPS_URL="amqps://guest:guest@localhost:${BROKER_TLS_PORT}/"
export DLQ_TEST_MANAGEMENT_TLS_URL="https://localhost:$((BROKER_MANAGEMENT_PORT + 1000))/"
DLQ_TEST_TLS_CA=$(scripts/broker.sh ca "$port")
export DLQ_TEST_TLS_CA

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
make -s check 2>&1 | tee "$log" || status=$?
# Check prints "NN%: Checks: C, Failures: F, Errors: E" per program.
awk -F'[:,] *' '/Checks: [0-9]+, Failures/ {
	for (i = 1; i <= NF; i++) {
		if ($i == "Checks") c += $(i + 1)
		if ($i == "Failures" || $i == "Errors") f += $(i + 1)
	}
} END { printf "total: %d passed, %d failed\n", c - f, f }' "$log"
exit "$status"
