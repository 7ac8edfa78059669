#!/usr/bin/env bash
# make lint: gofmt, go vet, and the exhaustive analyzer: every switch over an
# enum of this project (a named type with constants, such as idemstore.State,
# idemstore.Outcome, api.Status, plan.Phase) must list every member, so adding
# a member makes each switch that forgot it fail here. A default clause does
# not count as listing the rest. Enums of other modules are left out: YAML's
# node kinds and Temporal's ~60 event types, of which a switch picks a few.
set -euo pipefail
cd "$(dirname "$0")/.."
unformatted="$(gofmt -l $(git ls-files '*.go'))"
if [ -n "$unformatted" ]; then
  echo "gofmt: these files need formatting:"; echo "$unformatted"; exit 1
fi
go vet ./...
go tool exhaustive -ignore-enum-types '^(go\.yaml\.in/yaml/v3|gopkg\.in/yaml\.v3|go\.temporal\.io/api/enums/v1)\.' ./...
