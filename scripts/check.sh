#!/usr/bin/env bash
# scripts/check.sh PROGRAM... - runs Check test programs and goes on
# after one fails, so that one failure never hides the programs after it.
# At the end it prints one total line of the tests that ran ("total: N
# passed, M failed"), then the failed tests by name, the programs that
# crashed (no Check summary) and those that did not run (not built).
# Exit status 1 if any of that happened, else 0.
#
# DLQ_TEST_JOBS (default 2) programs run at once, each one's output
# printed whole when it ends; those named in DLQ_TEST_SERIAL (the ones
# that stop, kill or pause the shared broker) run alone, after the rest.
# Their tests take fresh queue names, so the others do not collide.
#
# Check prints per program "NN%: Checks: C, Failures: F, Errors: E" and
# one line per failed test: "file:line:F|E:tcase:test:iteration: message".
set -u

jobs=${DLQ_TEST_JOBS:-2}
serial=" ${DLQ_TEST_SERIAL:-it_check_faults it_check_ops it_check_worker} "
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

passed=0
failed=0
failures=()
crashed=()
notrun=()

# Runs program $1, its output, exit status and seconds taken into
# $dir/<n>.out / .rc / .s.
run_one() {
	local t0=$SECONDS
	"$1" >"$dir/$2.out" 2>&1
	echo $? >"$dir/$2.rc"
	echo $((SECONDS - t0)) >"$dir/$2.s"
}

# Adds what program $1 (run as number $2) said to the totals.
tally() {
	local t=$1 out="$dir/$2.out" rc summary c f line
	rc=$(cat "$dir/$2.rc")
	echo "== $t ($(cat "$dir/$2.s") s)"
	cat "$out"
	summary=$(grep -E '^[0-9]+%: Checks: [0-9]+' "$out")
	if [ -z "$summary" ]; then
		crashed+=("$t (exit status $rc, no summary)")
		return
	fi
	read -r c f < <(printf '%s\n' "$summary" | awk -F'[:,] *' '{
		for (i = 1; i <= NF; i++) {
			if ($i == "Checks") c += $(i + 1)
			if ($i == "Failures" || $i == "Errors") f += $(i + 1)
		}
	} END { print c + 0, f + 0 }')
	passed=$((passed + c - f))
	failed=$((failed + f))
	while IFS= read -r line; do
		failures+=("$line")
	done < <(awk -F: -v p="${t##*/}" '$3 == "F" || $3 == "E" {
		print p ": " $5 " (" $1 ":" $2 ")" }' "$out")
	# a program whose tests all passed but which exits non-zero (a
	# sanitizer's report at exit) is a crash too
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		crashed+=("$t (exit status $rc after its tests passed)")
	fi
}

# Programs $@ (numbered from $first), at most $1 at once, each tallied
# when it ends.
run_batch() {
	local width=$1 n=$first running=0 done_pid
	local -A name_of=()
	shift
	for t in "$@"; do
		if [ ! -x "$t" ]; then
			notrun+=("$t (not built)")
			continue
		fi
		if [ "$running" -ge "$width" ]; then
			wait -n -p done_pid
			tally "${name_of[$done_pid]%:*}" "${name_of[$done_pid]##*:}"
			running=$((running - 1))
		fi
		run_one "$t" "$n" &
		name_of[$!]="$t:$n"
		n=$((n + 1))
		running=$((running + 1))
	done
	while [ "$running" -gt 0 ]; do
		wait -n -p done_pid
		tally "${name_of[$done_pid]%:*}" "${name_of[$done_pid]##*:}"
		running=$((running - 1))
	done
	first=$n
}

shared=()
alone=()
for t in "$@"; do
	case $serial in
	*" ${t##*/} "*) alone+=("$t") ;;
	*) shared+=("$t") ;;
	esac
done
first=0
run_batch "$jobs" "${shared[@]}"
run_batch 1 "${alone[@]}"

echo "total: $passed passed, $failed failed"
status=0
if [ ${#failures[@]} -gt 0 ]; then
	echo "failed tests:"
	printf '  %s\n' "${failures[@]}"
	status=1
fi
if [ ${#crashed[@]} -gt 0 ]; then
	echo "crashed programs:"
	printf '  %s\n' "${crashed[@]}"
	status=1
fi
if [ ${#notrun[@]} -gt 0 ]; then
	echo "programs that did not run:"
	printf '  %s\n' "${notrun[@]}"
	status=1
fi
# a failure counted in a summary but not named (it should not happen)
[ "$failed" -eq 0 ] || status=1
exit "$status"
