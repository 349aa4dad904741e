#!/usr/bin/env bash
# scripts/archive-repair.sh ARCHIVE - rebuild a damaged archive (the
# worker said "the archive file is damaged") from what can still be read.
#
# Run it with the worker stopped. It moves the damaged file (and its -wal
# and -shm) aside as ARCHIVE.damaged-<time>, never changing them, and
# writes a new file at ARCHIVE from the damaged one's tables (sqlite3
# .dump: the indexes, where damage most often is, are built anew). The
# worker, started again, goes on with every record that could be read
# and archives the dead letters that waited in their queues.
#
# Exit status: 0 rebuilt; 1 not rebuilt (a worker has the file open, or
# nothing could be read: then no file is left at ARCHIVE, and the worker
# starts a new, empty archive there); 2 usage.
set -euo pipefail
umask 077	# the dump and the new file hold payloads

prog=archive-repair
say() { echo "$prog: $*" >&2; }

if [ $# -ne 1 ] || [ -z "$1" ] || [ "${1#-}" != "$1" ]; then
	echo "usage: $0 ARCHIVE   (with the worker stopped)" >&2
	exit 2
fi
db=$1
if ! command -v sqlite3 >/dev/null; then
	say "needs the sqlite3 command (Debian: apt-get install sqlite3)"
	exit 2
fi
if [ -d "$db" ]; then
	say "$db is a directory: name the archive file (archive.path)"
	exit 2
fi
if [ ! -f "$db" ]; then
	say "$db: no such file"
	exit 2
fi

# A worker holds an exclusive flock(2) on its archive while it runs. (One
# started during the repair makes a new file at the path: the rebuilt
# one is then not put there.)
exec 9<"$db"
if ! flock -n 9; then
	say "a dlq-worker has $db open: stop it first"
	exit 1
fi

# Only a file that reads as an archive is moved: a path given by a slip
# (another program's database) is left alone, as the worker leaves it.
known=$(sqlite3 -readonly "$db" "SELECT count(*) FROM sqlite_schema
    WHERE name = 'dead_letters'" 2>&1 || true)
if [ "$known" != 1 ]; then
	[ "$known" = 0 ] && known="no table dead_letters"
	say "$db does not read as an archive of dlq-monitor" \
	    "(${known#Error: }): left as it is"
	say "if it is the worker's archive, damaged past reading, move it" \
	    "aside (with its -wal and -shm) and start the worker: it creates" \
	    "a new, empty archive"
	exit 1
fi

aside="$db.damaged-$(date -u +%Y%m%dT%H%M%SZ)"
if [ -e "$aside" ] || [ -e "$aside-wal" ] || [ -e "$aside-shm" ]; then
	say "$aside exists already; try again in a second"
	exit 1
fi
mv -- "$db" "$aside"
for s in -wal -shm; do
	if [ -e "$db$s" ]; then
		mv -- "$db$s" "$aside$s"
	fi
done
say "moved the damaged archive to $aside"

tmp="$db.repair-$$"
rm -f -- "$tmp" "$tmp.sql" "$tmp.err"
trap 'rm -f -- "$tmp" "$tmp-journal" "$tmp.sql" "$tmp.err"' EXIT
version=$(sqlite3 -readonly "$aside" "PRAGMA user_version" 2>"$tmp.err" ||
    true)
# .dump goes on past the pages it cannot read, marking each in a
# comment, and ends such a dump in ROLLBACK: what it read is kept here
sqlite3 -readonly "$aside" .dump >"$tmp.sql" 2>>"$tmp.err" || true
lost=$(grep -a -c '^/\*\*\*\*\*\* CORRUPTION ERROR' "$tmp.sql" || true)
sed -i '$ s/^ROLLBACK; -- due to errors$/COMMIT;/' "$tmp.sql"
if ! sqlite3 "$tmp" <"$tmp.sql" >>"$tmp.err" 2>&1 ||
    ! [[ "$version" =~ ^[1-9][0-9]*$ ]] ||
    [ "$(sqlite3 "$tmp" "SELECT count(*) FROM sqlite_schema WHERE
        name = 'dead_letters'" 2>/dev/null)" != 1 ]; then
	say "nothing usable could be read from it:"
	sed 's/^/  /' "$tmp.err" | head -n 5 >&2
	say "no archive is left at $db: the worker starts a new, empty one" \
	    "there and archives the dead letters that wait in their queues"
	exit 1
fi
# The worker counts its tallies (stats, /metrics) again at its next start:
# records that could not be read are not in them any more.
# A record that could not be read leaves its replay attempts and audit
# index behind; a new record may take its id (the next id is the highest
# one left plus one), and would show that history as its own.
orphans=$(sqlite3 "$tmp" "BEGIN;
    DELETE FROM attempts WHERE dead_letter_id NOT IN
        (SELECT id FROM dead_letters);
    SELECT changes();
    DELETE FROM audit_ids WHERE dead_letter_id NOT IN
        (SELECT id FROM dead_letters);
    UPDATE dead_letters SET replay_of = NULL WHERE replay_of NOT IN
        (SELECT id FROM dead_letters);
    DELETE FROM archive_meta WHERE key = 'tallies';
    COMMIT;
    PRAGMA user_version = $version;")
check=$(sqlite3 "$tmp" "PRAGMA quick_check" 2>&1 | head -n 1)
if [ "$check" != ok ]; then
	say "the rebuilt file does not check: $check"
	say "no archive is left at $db: the worker starts a new, empty one"
	exit 1
fi
chmod --reference="$aside" -- "$tmp"
chown --reference="$aside" -- "$tmp" 2>/dev/null || true
# ln fails where a file appeared at the path meanwhile (a worker started
# after all): that one is left alone
if ! ln -- "$tmp" "$db"; then
	say "$db appeared meanwhile (a worker started?): left as it is"
	exit 1
fi
records=$(sqlite3 "$db" "SELECT count(*) FROM dead_letters")
if [ "$lost" != 0 ] || [ -s "$tmp.err" ]; then
	say "$lost damaged part(s) could not be read: the records there" \
	    "are not in the rebuilt archive (their dead letters were acked" \
	    "when they were archived); $orphans replay attempt(s) of" \
	    "records not read were removed with them (dlqctl audit still" \
	    "lists the requests that named them)"
	sed 's/^/  /' "$tmp.err" | head -n 5 >&2
fi
say "rebuilt $db: $records records; start the worker"
