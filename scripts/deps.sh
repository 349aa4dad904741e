#!/usr/bin/env bash
# scripts/deps.sh - install the Debian 12 packages dlq-monitor needs.
# Only what is missing is installed, so it is cheap to call every time.
set -euo pipefail

pkgs=(
	make gcc pkg-config			# build
	librabbitmq-dev libcurl4-openssl-dev libcjson-dev libconfig-dev
	libsqlite3-dev libssl-dev
	check libsubunit-dev			# unit tests
	rabbitmq-server				# the local / test broker
)

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
	    grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=
[ "$(id -u)" -eq 0 ] || sudo=sudo
echo "deps: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >&2
