#!/usr/bin/env bash
# Every test: unit, integration against real Redis, PostgreSQL and a Temporal
# dev server that the tests start themselves on free ports, then short fuzz runs.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
echo "== lint: gofmt, go vet, exhaustive switches"
./scripts/lint.sh
# Each package's tests are bounded by the -timeout of its group (go test
# applies it to every test binary), so a hang fails in minutes instead of
# at one 45m bound for everything: the fast packages (unit tests, and
# integration tests on their own Redis, PostgreSQL or Temporal) 5m each;
# the packages that start the whole stack (the end-to-end tests, the
# client's examples, the crash-tested agent workflow) and the soak slice
# 30m each, two packages at a time (go test's -p: the soak slice runs
# beside the end-to-end tests instead of after them). In the stack
# packages, the long tests that mostly wait on time windows (review
# windows, late commits, payouts) call t.Parallel and run four at a time
# (-parallel 4) once the others are done.
stacks='/harness/(e2e|e2eprod)$|/client$|/examples/agentworkflow$'
soak='/harness/soak$'
echo "== go test: fast packages (5m each)"
go test -count=1 -timeout 5m $(go list ./... | grep -v -E "$stacks|$soak")
echo "== go test: packages that start the whole stack, and the soak slice beside them (30m each; artifacts, such as the approval page's screenshot, under .run/test-artifacts)"
mkdir -p .run/test-artifacts
go test -count=1 -timeout 30m -parallel 4 -artifacts -outputdir "$PWD/.run/test-artifacts" $(go list ./... | grep -E "$stacks|$soak")
echo "== deployments: compose file and kustomize overlays, offline (own module: deployments/validate)"
(cd deployments/validate && go vet ./... && go test -count=1 ./...)
echo "== alert rules (promtool)"
promtool check rules deployments/observability/alerts.yml
promtool test rules deployments/observability/alerts_test.yml
echo "== fuzz (short runs: every fuzz target of the module, FUZZTIME each, default 10s)"
FUZZTIME="${FUZZTIME:-10s}" ./scripts/fuzz.sh
