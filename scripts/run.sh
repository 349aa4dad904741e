#!/usr/bin/env bash
# scripts/run.sh - run dlq-worker in the foreground on embedded defaults.
# Installs what is missing, builds, and when nothing answers at
# RABBITMQ_URL on this machine starts a private RabbitMQ node there.
# Arguments are passed to dlq-worker (e.g. -c config/dlq-worker.conf).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh
make -s all

url=${RABBITMQ_URL:-amqp://guest:guest@localhost:5672/}
hostport=${url#*://}
hostport=${hostport#*@}
hostport=${hostport%%/*}
host=${hostport%%:*}
port=5672
[ "$host" != "$hostport" ] && port=${hostport##*:}
case "$url" in amqps://*) [ "$host" = "$hostport" ] && port=5671 ;; esac

if ! timeout 1 bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null; then
	case "$host" in
	localhost|127.0.0.1) scripts/broker.sh start "$port" ;;
	*) echo "run: nothing answers at $host:$port; the worker will retry" >&2 ;;
	esac
fi
exec build/dlq-worker "$@"
