#!/usr/bin/env bash
# scripts/run.sh - run dlq-worker in the foreground on embedded defaults.
# Installs what is missing, builds, and when nothing answers at
# RABBITMQ_URL on this machine starts a private RabbitMQ node there.
# Arguments are passed to dlq-worker (e.g. -c config/dlq-worker.conf).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh
make -s all

url=${RABBITMQ_URL:-}
if [ -z "$url" ] && [ -n "${RABBITMQ_URL_FILE:-}" ]; then
	url=$(cat "$RABBITMQ_URL_FILE" 2>/dev/null || true)	# a secret file
fi
url=${url:-amqp://guest:guest@localhost:5672/}
hostport=${url#*://}
hostport=${hostport#*@}
hostport=${hostport%%/*}
host=${hostport%%:*}
port=5672
[ "$host" != "$hostport" ] && port=${hostport##*:}
case "$url" in amqps://*) [ "$host" = "$hostport" ] && port=5671 ;; esac

answers() { timeout 1 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; }

# A private node comes with the management API on the port + 10000
# (15672 for 5672, RabbitMQ's usual pair).
mgmt_port=$((port + 10000))
if ! answers "$host" "$port"; then
	case "$host" in
	localhost|127.0.0.1) BROKER_MANAGEMENT_PORT=$mgmt_port \
	    scripts/broker.sh start "$port" ;;
	*) echo "run: nothing answers at $host:$port; the worker will retry" >&2 ;;
	esac
fi
# On embedded defaults (no arguments), a local broker's management API,
# when one answers there, gives `dlqctl stats` the share of traffic.
case "$host" in localhost|127.0.0.1)
	if [ $# -eq 0 ] && [ -z "${RABBITMQ_MANAGEMENT_URL:-}" ] &&
	    answers 127.0.0.1 "$mgmt_port"; then
		export RABBITMQ_MANAGEMENT_URL="http://127.0.0.1:$mgmt_port/"
	fi ;;
esac
exec build/dlq-worker "$@"
