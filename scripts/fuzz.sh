#!/usr/bin/env bash
# Runs every fuzz target of the module (every `func FuzzX(` in a _test.go
# file) for FUZZTIME each (default 10m), one after the other, and prints a
# markdown table of the results; it also writes it to .run/fuzz/result.md.
# Exits non-zero when a target fails (its reproducer is then under the
# package's testdata/fuzz/).
set -uo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-10m}"
mkdir -p .run/fuzz
result=.run/fuzz/result.md
{
  echo "Fuzzing run $(date -u +%Y-%m-%dT%H:%MZ), FUZZTIME=${fuzztime}, $(nproc) cores, $(go version | cut -d' ' -f3)"
  echo
  echo "| package | target | result | executions | new interesting inputs |"
  echo "| --- | --- | --- | --- | --- |"
} > "$result"
failed=0
# reproducers lists a target's saved failing inputs (testdata/fuzz/<target>/).
reproducers() { ls "$1/testdata/fuzz/$2" 2>/dev/null; }
# deadline_race tells whether a failed run's log shows only Go 1.26's
# fuzzing coordinator race at the end of a -fuzztime duration
# (go.dev/issue/75804, fixed in Go 1.27): the target FAILs with a bare
# "context deadline exceeded" when a worker has not yet stopped as the time
# runs out. No input failed then: a failing input always prints "Failing
# input written to" and saves a reproducer, a hung worker prints its own
# message, and either is a failure.
deadline_race() {
  local log=$1
  grep -qx '    context deadline exceeded' "$log" || return 1
  grep -q 'Failing input written' "$log" && return 1
  ! grep -vE $'^(fuzz: .*|--- FAIL: Fuzz[A-Za-z0-9_]+ \\([0-9.]+s\\)|    context deadline exceeded|FAIL|exit status 1|FAIL\t.*)$' "$log" | grep -q .
}
while IFS=: read -r file target; do
  pkg="./$(dirname "$file")"
  log=".run/fuzz/${target}.log"
  echo "== fuzz ${pkg} ${target} for ${fuzztime}"
  before=$(reproducers "$pkg" "$target")
  if go test -run='^$' -fuzz="^${target}\$" -fuzztime="${fuzztime}" "$pkg" > "$log" 2>&1; then
    outcome=pass
  elif deadline_race "$log" && [[ "$(reproducers "$pkg" "$target")" == "$before" ]]; then
    outcome="pass (no input failed; the run ended on Go's deadline race, go.dev/issue/75804)"
    echo "   ${outcome}"
  else
    outcome="FAIL (see ${log})"
    failed=1
    # The failure and its reproducer's path, so that a CI log shows them.
    grep -vE '^fuzz: elapsed' "$log" | tail -40
  fi
  # The last progress line: "fuzz: elapsed: 10m0s, execs: 123 (..), new interesting: 4 (total: 50)".
  last=$(grep -E '^fuzz: elapsed' "$log" | tail -1)
  execs=$(sed -nE 's/.*execs: ([0-9]+).*/\1/p' <<< "$last")
  interesting=$(sed -nE 's/.*new interesting: ([0-9]+ \(total: [0-9]+\)).*/\1/p' <<< "$last")
  echo "| ${pkg#./} | ${target} | ${outcome} | ${execs:-?} | ${interesting:-?} |" >> "$result"
done < <(grep -rHoE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' . | sed -E 's|^\./||; s|:func |:|' | sort)
cat "$result"
exit "$failed"
