#!/usr/bin/env bash
# Every test: unit, integration against real Redis, PostgreSQL and a Temporal
# dev server that the tests start themselves on free ports, then short fuzz runs.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
echo "== lint: gofmt, go vet, exhaustive switches"
./scripts/lint.sh
# Each package's tests are bounded by the -timeout of its group (go test
# applies it to every test binary), so a hang fails in minutes, not at the
# default 10m or a global 45m: the fast packages (unit and integration
# tests on their own servers) 5m each; the stacks of the end-to-end tests,
# the crash-tested example and the soak slice their own.
slow='/internal/harness/(e2e|e2eprod|soak)$|/examples/agentworkflow$'
echo "== go test: fast packages (5m each)"
go test -count=1 -timeout 5m $(go list ./... | grep -v -E "$slow")
echo "== go test: end to end and the crash-tested example (30m each)"
go test -count=1 -timeout 30m ./internal/harness/e2e/ ./internal/harness/e2eprod/ ./examples/agentworkflow/
echo "== go test: soak slice (20m)"
go test -count=1 -timeout 20m ./internal/harness/soak/
echo "== deployments: compose file and kustomize overlays, offline (own module: deployments/validate)"
(cd deployments/validate && go vet ./... && go test -count=1 ./...)
echo "== alert rules (promtool)"
promtool check rules deployments/observability/alerts.yml
promtool test rules deployments/observability/alerts_test.yml
echo "== fuzz (short runs: every fuzz target of the module, FUZZTIME each, default 10s)"
FUZZTIME="${FUZZTIME:-10s}" ./scripts/fuzz.sh
