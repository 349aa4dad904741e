#!/usr/bin/env bash
# scripts/test.sh - the whole test suite on a fresh Debian 12 machine:
# installs what is missing, builds, starts a private RabbitMQ node on
# DLQ_TEST_PORT (default 5699, never a broker you already run), runs the
# unit and integration tests, and prints one total line; then the
# integration programs that do not read an SQLite file run again with
# their archives in PostgreSQL (make check-postgres-archive; its own
# total line). The test node is reset (its data deleted) at every run. A
# private PostgreSQL server (scripts/postgres.sh, on DLQ_TEST_PG_PORT,
# default 5698) is made for the run and deleted after it.
# `make SAN=address,undefined test` runs the same under sanitizers.
# IT=worker,alerts runs only those integration programs;
# DLQ_TEST_POSTGRES_PASS=0 leaves the PostgreSQL pass out.
#
# scripts/test.sh stress [RUNS] (make test-stress) runs the integration
# tests RUNS times (default 1) with both cores kept busy by two spinning
# processes and each commit of the worker delayed by
# DLQ_FAULT_COMMIT_DELAY_MS (default 40): a test that waits for a count
# and then reads "the newest" loses that race here, and fails.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-all}
case $mode in
all|stress) ;;
*) echo "usage: scripts/test.sh [stress [RUNS]]" >&2; exit 2 ;;
esac

scripts/deps.sh test
port=${DLQ_TEST_PORT:-5699}
make -s -j"$(nproc)" all tests
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
pg_port=${DLQ_TEST_PG_PORT:-5698}
DLQ_TEST_PG_URL=$(scripts/postgres.sh start "$pg_port")
export DLQ_TEST_PG_URL
cleanup() { scripts/postgres.sh stop "$pg_port"; }
trap cleanup EXIT

if [ "$mode" = all ]; then
	rc=0
	make -s check || rc=1
	# the archive-agnostic programs again, on PostgreSQL archives
	# (DLQ_TEST_POSTGRES_PASS=0 leaves this pass out)
	if [ "${DLQ_TEST_POSTGRES_PASS:-1}" != 0 ]; then
		echo "== the same on PostgreSQL archives"
		make -s check-postgres-archive || rc=1
	fi
	exit "$rc"
fi

runs=${2:-1}
export DLQ_FAULT_COMMIT_DELAY_MS=${DLQ_FAULT_COMMIT_DELAY_MS:-40}
hogs=()
trap 'kill "${hogs[@]}" 2>/dev/null; cleanup' EXIT
for i in 1 2; do
	sh -c 'while :; do :; done' &
	hogs+=($!)
done
bad=0
for ((r = 1; r <= runs; r++)); do
	echo "== stress run $r of $runs (commit delay ${DLQ_FAULT_COMMIT_DELAY_MS} ms, 2 spinning processes)"
	make -s check-integration || bad=$((bad + 1))
done
echo "stress: $runs runs, $bad failed"
[ "$bad" -eq 0 ]
