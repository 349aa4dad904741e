#!/usr/bin/env bash
# scripts/check.sh PROGRAM... - runs Check test programs one after the
# other and goes on after one fails, so that one failure never hides the
# programs after it. At the end it prints one total line of the tests
# that ran ("total: N passed, M failed"), then the failed tests by name,
# the programs that crashed (no Check summary) and those that did not
# run (not built). Exit status 1 if any of that happened, else 0.
#
# Check prints per program "NN%: Checks: C, Failures: F, Errors: E" and
# one line per failed test: "file:line:F|E:tcase:test:iteration: message".
set -u

passed=0
failed=0
failures=()
crashed=()
notrun=()
out=$(mktemp)
trap 'rm -f "$out"' EXIT

for t in "$@"; do
	echo "== $t"
	if [ ! -x "$t" ]; then
		notrun+=("$t (not built)")
		continue
	fi
	"$t" 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	summary=$(grep -E '^[0-9]+%: Checks: [0-9]+' "$out")
	if [ -z "$summary" ]; then
		crashed+=("$t (exit status $rc, no summary)")
		continue
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
done

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
