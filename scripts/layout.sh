#!/usr/bin/env bash
# scripts/layout.sh - make check-layout: the source tree keeps its shape.
#
#   1. A file includes headers of its own folder and of internal/core
#      only: core includes core; internal/worker and cmd/worker include
#      core and worker; internal/dlqctl and cmd/dlqctl include core and
#      dlqctl. dlqctl never sees a worker header (it reaches the archive
#      only through the worker's socket). The worker's folders
#      (internal/worker and its sqlite/, postgres/ and console/) are one
#      binary's: they may include each other's headers.
#   2. No include circle between modules (a module is x.c with x.h):
#      tsort(1) of the include graph must find no loop.
#   3. <sqlite3.h> is included by the SQLite backend (internal/worker/
#      sqlite/) alone, <libpq-fe.h> by the PostgreSQL backend
#      (internal/worker/postgres/) alone.
#
# Prints every breach and exits 1 on any; silent and 0 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."

fail=0
say() { echo "layout: $*" >&2; fail=1; }

# folder of a header name, from where it is (headers are unique by name)
declare -A home
for h in internal/*/*.h internal/worker/*/*.h; do
	[ -e "$h" ] || continue
	n=${h##*/}
	[ -z "${home[$n]:-}" ] || say "$n is in both ${home[$n]} and ${h%/*}"
	home[$n]=${h%/*}
done

allowed() {	# folder of the including file -> folders it may include
	case $1 in
	internal/core) echo "internal/core" ;;
	internal/worker|internal/worker/*|cmd/worker)
		echo "internal/core internal/worker internal/worker/sqlite" \
		    "internal/worker/postgres internal/worker/console" ;;
	internal/dlqctl|cmd/dlqctl) echo "internal/core internal/dlqctl" ;;
	esac
}

edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
for f in internal/*/*.[ch] internal/worker/*/*.[ch] cmd/*/*.[ch]; do
	[ -e "$f" ] || continue
	dir=${f%/*}
	mod=$dir/$(basename "${f%.[ch]}")
	ok=$(allowed "$dir")
	echo "$mod $mod" >> "$edges"
	while read -r inc; do
		to=${home[$inc]:-}
		if [ -z "$to" ]; then
			[ -e "$dir/$inc" ] || say "$f includes \"$inc\", which is nowhere"
			continue
		fi
		case " $ok " in
		*" $to "*) ;;
		*) say "$f includes $to/$inc: $dir may include only from: $ok" ;;
		esac
		target=$to/${inc%.h}
		[ "$target" = "$mod" ] || echo "$mod $target" >> "$edges"
	done < <(sed -n 's/^#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
	if grep -q '^#[[:space:]]*include[[:space:]]*<sqlite3.h>' "$f"; then
		case $f in
		internal/worker/sqlite/*) ;;
		*) say "$f includes <sqlite3.h>: only internal/worker/sqlite/ may" ;;
		esac
	fi
	if grep -q '^#[[:space:]]*include[[:space:]]*<libpq-fe.h>' "$f"; then
		case $f in
		internal/worker/postgres/*) ;;
		*) say "$f includes <libpq-fe.h>: only internal/worker/postgres/ may" ;;
		esac
	fi
done

if ! loops=$(tsort "$edges" 2>&1 >/dev/null) || [ -n "$loops" ]; then
	say "include circle between modules:"
	echo "$loops" | sed 's/^tsort: /  /' >&2
fi
exit $fail
