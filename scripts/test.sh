#!/usr/bin/env bash
# Every test: unit, integration against real Redis, PostgreSQL and a Temporal
# dev server that the tests start themselves on free ports, then short fuzz runs.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
echo "== lint: gofmt, go vet, exhaustive switches"
./scripts/lint.sh
echo "== go test (artifacts, such as the approval page's screenshot, under .run/test-artifacts)"
mkdir -p .run/test-artifacts
go test -count=1 -timeout 45m -artifacts -outputdir "$PWD/.run/test-artifacts" ./...
echo "== deployments: compose file and kustomize overlays, offline (own module: deployments/validate)"
(cd deployments/validate && go vet ./... && go test -count=1 ./...)
echo "== alert rules (promtool)"
promtool check rules deployments/observability/alerts.yml
promtool test rules deployments/observability/alerts_test.yml
echo "== fuzz (short runs: every fuzz target of the module, FUZZTIME each, default 10s)"
FUZZTIME="${FUZZTIME:-10s}" ./scripts/fuzz.sh
