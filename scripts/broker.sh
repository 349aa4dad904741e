#!/usr/bin/env bash
# scripts/broker.sh - a private RabbitMQ node for development and tests.
#
#   scripts/broker.sh start [PORT]   start unless something answers on PORT
#   scripts/broker.sh stop  [PORT]   stop it cleanly
#   scripts/broker.sh kill  [PORT]   kill -9 the node (fault tests)
#   scripts/broker.sh pause [PORT]   SIGSTOP it: its connections stay
#                                    open and silent (fault tests)
#   scripts/broker.sh resume [PORT]  SIGCONT it
#   scripts/broker.sh reset [PORT]   stop it, delete its data, start afresh
#   scripts/broker.sh ctl   PORT ARGS...   rabbitmqctl against the node
#   scripts/broker.sh ca    [PORT]   path of the CA file of its TLS listener
#
# BROKER_MANAGEMENT_PORT=P (at start or reset) also enables the management
# plugin, its HTTP API on 127.0.0.1:P, with statistics collected every
# second instead of every 5 (what `dlqctl stats` reads a queue's traffic
# from: rabbitmq.management_url).
# BROKER_TLS_PORT=P (at start or reset) also opens an amqps:// listener on
# 127.0.0.1:P, with a certificate for localhost and 127.0.0.1 signed by a
# CA made for the node (`ca` prints its file's path; next to it
# elsewhere.pem and .key are a certificate for another host name,
# dlq-worker.pem and .key a client certificate the node accepts; its CN
# names the user for the EXTERNAL mechanism), and with the management
# plugin its API over https too, on its port + 1000.
#
# The node has its own name, ports and directories (owned by the rabbitmq
# user, as Debian's broker runs as that user), so it never disturbs a
# broker already running on the machine. Default PORT: 5672.
set -euo pipefail

cmd=${1:-}
port=${2:-5672}
# the node also takes PORT + 20000 (distribution), + 10000 (management)
# and + 1000 (TLS)
case "$port" in
''|*[!0-9]*|0*) port=0 ;;
esac
if [ "${#port}" -gt 5 ] || [ "$port" -lt 1 ] || [ "$port" -gt 45535 ]; then
	echo "broker.sh: PORT must be a number from 1 to 45535, not '${2:-}'" >&2
	exit 2
fi
node="dlqmon${port}@localhost"
base="/var/tmp/dlq-monitor-rabbitmq-${port}"

env_vars=(
	HOME=/var/lib/rabbitmq
	RABBITMQ_NODENAME="$node"
	RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
	RABBITMQ_NODE_PORT="$port"
	RABBITMQ_DIST_PORT=$((port + 20000))
	RABBITMQ_MNESIA_BASE="$base/mnesia"
	RABBITMQ_LOG_BASE="$base/log"
	RABBITMQ_PID_FILE="$base/rabbitmq.pid"
	RABBITMQ_ENABLED_PLUGINS_FILE="$base/enabled_plugins"
	RABBITMQ_CONFIG_FILE="$base/rabbitmq"
	RABBITMQ_ADVANCED_CONFIG_FILE="$base/advanced.config"
)

as_rabbitmq() {
	if [ "$(id -un)" = rabbitmq ]; then
		env "${env_vars[@]}" "$@"
	else
		${SUDO:-} runuser -u rabbitmq -- env "${env_vars[@]}" "$@"
	fi
}

port_open() {	# $1: the port, the node's AMQP port by default
	timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/${1:-$port}" 2>/dev/null
}

wait_port() {	# $1: open|closed, $2: seconds
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		if [ "$1" = open ] && port_open; then return 0; fi
		if [ "$1" = closed ] && ! port_open; then return 0; fi
		sleep 0.1
	done
	return 1
}

# A certificate signed by the node's CA: $1 its file stem and CN, $2 its names.
sign() {
	local d="$base/tls"
	openssl req -newkey rsa:2048 -nodes -subj "/CN=$1" \
	    -keyout "$d/$1.key" -out "$d/$1.csr" 2>/dev/null
	printf 'subjectAltName = %s\n' "$2" > "$d/$1.ext"
	openssl x509 -req -in "$d/$1.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" \
	    -CAcreateserial -days 30 -extfile "$d/$1.ext" \
	    -out "$d/$1.pem" 2>/dev/null
	rm -f "$d/$1.csr" "$d/$1.ext"
}

# A CA, the node's certificate (for localhost and 127.0.0.1), one for
# another host, elsewhere.example (for a stand-in TLS server in the
# tests), and a client certificate, dlq-worker (the node asks clients
# for one and checks it when given; the two test keys are readable by
# all), made once per node data directory (a restart keeps them; a reset
# makes new ones).
make_certificates() {
	local d="$base/tls"
	[ -f "$d/dlq-worker.pem" ] && return 0
	command -v openssl >/dev/null || {
		echo "broker: openssl is not installed (run scripts/deps.sh test)" >&2
		exit 1
	}
	mkdir -p "$d"
	openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=dlq-monitor test CA" \
	    -keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null
	sign server "DNS:localhost, IP:127.0.0.1"
	sign elsewhere "DNS:elsewhere.example"
	sign dlq-worker "DNS:dlq-worker"
	chmod 0644 "$d/ca.pem" "$d/server.pem" "$d/elsewhere.pem" "$d/elsewhere.key" \
	    "$d/dlq-worker.pem" "$d/dlq-worker.key"
	chmod 0600 "$d/ca.key" "$d/server.key"
}

start() {
	local i plugins=()
	if port_open; then
		echo "broker: something already answers on port $port" >&2
		return 0
	fi
	command -v runuser >/dev/null && id rabbitmq >/dev/null 2>&1 || {
		echo "broker: rabbitmq-server is not installed (run scripts/deps.sh)" >&2
		exit 1
	}
	mkdir -p "$base/mnesia" "$base/log"
	# A small node: tests and development only.
	cat > "$base/rabbitmq.conf" <<CONF
listeners.tcp.default = $port
loopback_users.guest = true
vm_memory_high_watermark.relative = 0.4
disk_free_limit.absolute = 50MB
log.file.level = warning
CONF
	if [ -n "${BROKER_MANAGEMENT_PORT:-}" ]; then
		plugins+=(rabbitmq_management)
		cat >> "$base/rabbitmq.conf" <<CONF
management.tcp.ip = 127.0.0.1
management.tcp.port = $BROKER_MANAGEMENT_PORT
collect_statistics_interval = 1000
CONF
	fi
	if [ -n "${BROKER_TLS_PORT:-}" ]; then
		make_certificates
		# EXTERNAL: a client certificate's CN names the user
		plugins+=(rabbitmq_auth_mechanism_ssl)
		cat >> "$base/rabbitmq.conf" <<CONF
listeners.ssl.1 = 127.0.0.1:$BROKER_TLS_PORT
ssl_options.cacertfile = $base/tls/ca.pem
ssl_options.certfile = $base/tls/server.pem
ssl_options.keyfile = $base/tls/server.key
ssl_options.verify = verify_peer
ssl_options.fail_if_no_peer_cert = false
auth_mechanisms.1 = PLAIN
auth_mechanisms.2 = AMQPLAIN
auth_mechanisms.3 = EXTERNAL
ssl_cert_login_from = common_name
CONF
		if [ -n "${BROKER_MANAGEMENT_PORT:-}" ]; then
			cat >> "$base/rabbitmq.conf" <<CONF
management.ssl.ip = 127.0.0.1
management.ssl.port = $((BROKER_MANAGEMENT_PORT + 1000))
management.ssl.cacertfile = $base/tls/ca.pem
management.ssl.certfile = $base/tls/server.pem
management.ssl.keyfile = $base/tls/server.key
CONF
		fi
	fi
	echo "[$(IFS=,; echo "${plugins[*]}")]." > "$base/enabled_plugins"
	# At-least-once dead-lettering (quorum queues) sends a dead letter that
	# no queue confirmed again after this long (3 min by default); 2 s
	# keeps the test of it short.
	echo '[{rabbit, [{dead_letter_worker_publisher_confirm_timeout, 2000}]}].' \
	    > "$base/advanced.config"
	chown -R rabbitmq:rabbitmq "$base"
	echo "broker: starting node $node on port $port (data in $base)" >&2
	# runuser's PAM session resets the open-files limit to 1024; a node
	# needs one handle per queue it recovers (the test node collects a
	# few hundred over a day of runs when kept between them)
	as_rabbitmq bash -c 'ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
	    exec setsid /usr/lib/rabbitmq/bin/rabbitmq-server' \
	    > "$base/log/startup.log" 2>&1 < /dev/null &
	if ! wait_port open 90; then
		echo "broker: node did not open port $port within 90 s; log:" >&2
		tail -n 30 "$base/log/startup.log" >&2 || true
		exit 1
	fi
	echo "broker: ready on amqp://guest:guest@localhost:$port/" >&2
	if [ -n "${BROKER_TLS_PORT:-}" ]; then
		echo "broker: TLS on amqps://guest:guest@localhost:$BROKER_TLS_PORT/ (CA: $base/tls/ca.pem)" >&2
	fi
	if [ -n "${BROKER_MANAGEMENT_PORT:-}" ]; then
		for ((i = 0; i < 300; i++)); do
			port_open "$BROKER_MANAGEMENT_PORT" && break
			sleep 0.1
		done
		echo "broker: management API on http://127.0.0.1:$BROKER_MANAGEMENT_PORT/" >&2
		if [ -n "${BROKER_TLS_PORT:-}" ]; then
			for ((i = 0; i < 100; i++)); do
				port_open $((BROKER_MANAGEMENT_PORT + 1000)) && break
				sleep 0.1
			done
			echo "broker: and on https://localhost:$((BROKER_MANAGEMENT_PORT + 1000))/" >&2
		fi
	fi
}

# The node's Erlang VMs, found by their node name (a node still booting
# has not written its pid file yet).
node_pids() {
	local pid
	for pid in $(pgrep -f beam.smp || true); do
		tr '\0' '\n' 2>/dev/null < "/proc/$pid/environ" |
		    grep -qx "RABBITMQ_NODENAME=$node" && echo "$pid"
	done
	return 0
}

wait_gone() {	# $1: seconds; until the node's VMs have exited
	local i
	for ((i = 0; i < $1 * 10; i++)); do
		[ -z "$(node_pids)" ] && return 0
		sleep 0.1
	done
	return 1
}

# Returns once the VM has exited, not only its AMQP listener: a VM still
# shutting down holds the distribution port, and a start would fail.
stop() {
	port_open || return 0
	as_rabbitmq /usr/lib/rabbitmq/bin/rabbitmqctl -n "$node" stop \
	    >/dev/null 2>&1 || true
	wait_port closed 60 && wait_gone 60
}

kill9() {
	local pid
	for pid in $(node_pids); do
		kill -9 "$pid" 2>/dev/null || true
	done
	wait_port closed 30 && wait_gone 30
}

# $1: STOP or CONT, to every VM of the node.
signal_node() {
	local pid
	for pid in $(node_pids); do
		kill -"$1" "$pid" 2>/dev/null || true
	done
}

# Only ever the private node's own directory.
reset() {
	stop || true
	kill9		# a node still booting does not answer stop
	rm -rf "$base"
	start
}

case "$cmd" in
start) start ;;
reset) reset ;;
stop) stop ;;
kill) kill9 ;;
pause) signal_node STOP ;;
resume) signal_node CONT ;;
ca) echo "$base/tls/ca.pem" ;;
ctl) shift 2; as_rabbitmq /usr/lib/rabbitmq/bin/rabbitmqctl -n "$node" "$@" ;;
*) sed -n '2,28p' "$0" >&2; exit 2 ;;
esac
