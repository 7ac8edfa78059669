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
while IFS=: read -r file target; do
  pkg="./$(dirname "$file")"
  log=".run/fuzz/${target}.log"
  echo "== fuzz ${pkg} ${target} for ${fuzztime}"
  if go test -run='^$' -fuzz="^${target}\$" -fuzztime="${fuzztime}" "$pkg" > "$log" 2>&1; then
    outcome=pass
  else
    outcome="FAIL (see ${log})"
    failed=1
  fi
  # The last progress line: "fuzz: elapsed: 10m0s, execs: 123 (..), new interesting: 4 (total: 50)".
  last=$(grep -E '^fuzz: elapsed' "$log" | tail -1)
  execs=$(sed -nE 's/.*execs: ([0-9]+).*/\1/p' <<< "$last")
  interesting=$(sed -nE 's/.*new interesting: ([0-9]+ \(total: [0-9]+\)).*/\1/p' <<< "$last")
  echo "| ${pkg#./} | ${target} | ${outcome} | ${execs:-?} | ${interesting:-?} |" >> "$result"
done < <(grep -rHoE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' . | sed -E 's|^\./||; s|:func |:|' | sort)
cat "$result"
exit "$failed"
