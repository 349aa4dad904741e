#!/usr/bin/env bash
# scripts/postgres.sh start|stop|restart|freeze|thaw|url [PORT] - a
# private PostgreSQL server for the tests and the benchmark, never one you
# already run: its own data directory (/tmp/dlq-pg-PORT), listening on
# 127.0.0.1:PORT only (default 5698), password authentication
# (scram-sha-256) for user postgres, password DLQ_TEST_PG_PASSWORD
# (default dlq-test); run as user postgres when started by root.
#   start    makes it anew (old data deleted) and prints its URL
#   stop     stops it and deletes its data
#   restart  stops it (fast: sessions cut) and starts it on the same data
#   freeze   SIGSTOP to its processes (a server that does not answer)
#   thaw     SIGCONT to them
#   url      prints its URL
set -euo pipefail
cmd=${1:?usage: scripts/postgres.sh start|stop|restart|freeze|thaw|url [PORT]}
port=${2:-${DLQ_TEST_PG_PORT:-5698}}
pw=${DLQ_TEST_PG_PASSWORD:-dlq-test}
dir=/tmp/dlq-pg-$port
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$bin" ] || { echo "postgres.sh: no PostgreSQL server installed" \
    "(scripts/deps.sh test installs it)" >&2; exit 1; }
as=()
[ "$(id -u)" -ne 0 ] || as=(runuser -u postgres --)
url="postgresql://postgres:$pw@127.0.0.1:$port/postgres"

ctl() { "${as[@]}" "$bin/pg_ctl" -D "$dir/data" "$@"; }
server_pids() {	# the postmaster and its children
	local pm
	pm=$(head -1 "$dir/data/postmaster.pid" 2>/dev/null) || return 0
	echo "$pm" $(pgrep -P "$pm" || true)
}

case $cmd in
start)
	if [ -f "$dir/data/postmaster.pid" ]; then
		ctl -m immediate -w stop >/dev/null 2>&1 || true
	fi
	rm -rf "$dir"
	mkdir -p "$dir"
	printf '%s\n' "$pw" > "$dir/pwfile"
	[ ${#as[@]} -eq 0 ] || chown -R postgres: "$dir"
	"${as[@]}" "$bin/initdb" -D "$dir/data" -U postgres \
	    --auth=scram-sha-256 --pwfile="$dir/pwfile" -E UTF8 \
	    --locale=C.UTF-8 --no-sync >"$dir/initdb.log" 2>&1 ||
	    { cat "$dir/initdb.log" >&2; exit 1; }
	rm -f "$dir/pwfile"
	ctl -l "$dir/server.log" -w -t 60 -o "-p $port -k $dir \
	    -c listen_addresses=127.0.0.1 -c max_connections=300" \
	    start >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
	echo "$url"
	;;
stop)
	if [ -f "$dir/data/postmaster.pid" ]; then
		kill -CONT $(server_pids) 2>/dev/null || true
		ctl -m fast -w stop >/dev/null 2>&1 || true
	fi
	rm -rf "$dir"
	;;
restart)
	ctl -m fast -w -t 60 -l "$dir/server.log" restart >/dev/null
	;;
freeze)
	kill -STOP $(server_pids)
	;;
thaw)
	kill -CONT $(server_pids)
	;;
url)
	echo "$url"
	;;
*)
	echo "postgres.sh: unknown command '$cmd'" >&2
	exit 2
	;;
esac
