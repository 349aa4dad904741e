#!/usr/bin/env bash
# scripts/deps.sh [test|bench] - install the Debian 12 packages
# dlq-monitor needs (with "test": also those only the test suite needs;
# with "bench": the PostgreSQL server the benchmark starts). Only what is
# missing is installed, so it is cheap to call every time.
set -euo pipefail

pkgs=(
	make gcc pkg-config			# build
	librabbitmq-dev libcurl4-openssl-dev libcjson-dev libconfig-dev
	libsqlite3-dev libpq-dev libssl-dev libmicrohttpd-dev
	rabbitmq-server				# the local / test broker
	sqlite3					# scripts/archive-repair.sh, backups
)
if [ "${1:-}" = test ]; then
	pkgs+=(
		check libsubunit-dev		# unit tests
		valgrind			# make check-valgrind
		docker-compose			# checks docker-compose.yml
		openssl				# the test node's TLS certificates
		systemd				# systemd-analyze checks the unit
		clang libclang-rt-14-dev	# make fuzz (libFuzzer)
		groff-base			# make check-man (groff -man -ww)
		chromium			# the console's browser tests
	)
	# Node.js drives Chromium (playwright-core, below); a machine that
	# has its own Node.js keeps it
	command -v node >/dev/null 2>&1 || pkgs+=(nodejs npm)
fi
case ${1:-} in
test|bench) pkgs+=(postgresql) ;;		# the PostgreSQL archive's
esac						# tests and benchmark

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
	    grep -q 'install ok installed' || missing+=("$p")
done

sudo=
[ "$(id -u)" -eq 0 ] || sudo=sudo
if [ ${#missing[@]} -gt 0 ]; then
	echo "deps: installing ${missing[*]}" >&2
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
	    --no-install-recommends "${missing[@]}" >&2
fi

# The tests lint /metrics with promtool, from Debian's prometheus
# package: only that binary is unpacked (DLQ_PROMTOOL, below), so that no
# Prometheus server is installed, let alone started.
promtool=/usr/local/lib/dlq-monitor/promtool
if [ "${1:-}" = test ] && [ ! -x "$promtool" ]; then
	echo "deps: unpacking promtool from Debian's prometheus package" >&2
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	( cd "$tmp" && { apt-get download -qq prometheus 2>/dev/null ||
	    { $sudo apt-get update -qq && apt-get download -qq prometheus; }; } )
	dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/root"
	$sudo install -D -m 0755 "$tmp/root/usr/bin/promtool" "$promtool"
fi

# The console's browser tests drive Debian's Chromium with playwright-core
# from npm, pinned, installed outside the checkout (check_console.c finds
# it there, or at DLQ_PLAYWRIGHT). Only the library: it downloads no
# browser of its own.
playwright=/usr/local/lib/dlq-monitor/browser
playwright_version=1.65.2
if [ "${1:-}" = test ] && ! grep -qs "\"version\": \"$playwright_version\"" \
    "$playwright/node_modules/playwright-core/package.json"; then
	echo "deps: installing playwright-core $playwright_version from npm" >&2
	$sudo mkdir -p "$playwright"
	( cd "$playwright" && $sudo npm install \
	    --no-audit --no-fund --no-save --silent \
	    "playwright-core@$playwright_version" >&2 )
fi
