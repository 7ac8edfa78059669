#!/usr/bin/env bash
# make lint: gofmt, go vet, the exhaustive analyzer and deadcode.
#
# exhaustive: every switch over an enum of this project (a named type with
# constants, such as idemstore.State, idemstore.Outcome, status.Name,
# plan.Phase) must list every member, so adding a member makes each switch
# that forgot it fail here. A default clause does not count as listing the
# rest. Enums of other modules are left out: YAML's node kinds and
# Temporal's ~60 event types, of which a switch picks a few.
#
# deadcode (golang.org/x/tools/cmd/deadcode -test): no function may be
# unreachable from the binaries and the tests, so no exported name stays
# unused. A public name that only a user of the library calls is reached by
# a test of it. scripts/deadcode-allow.txt lists the few functions that may
# stay unreachable, each with its reason.
set -euo pipefail
cd "$(dirname "$0")/.."
unformatted="$(gofmt -l $(git ls-files '*.go'))"
if [ -n "$unformatted" ]; then
  echo "gofmt: these files need formatting:"; echo "$unformatted"; exit 1
fi
go vet ./...
go tool exhaustive -ignore-enum-types '^(go\.yaml\.in/yaml/v3|gopkg\.in/yaml\.v3|go\.temporal\.io/api/enums/v1)\.' ./...

allowed="$(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' scripts/deadcode-allow.txt | sort -u)"
dead="$(go tool deadcode -test -f '{{range .Funcs}}{{$.Path}}.{{.Name}} {{.Position}}{{"\n"}}{{end}}' ./... | sed '/^$/d')"
unused="$(comm -23 <(awk '{print $1}' <<<"$dead" | sort -u) <(printf '%s\n' "$allowed"))"
if [ -n "$unused" ]; then
  echo "deadcode: unreachable from every binary and test (remove it, test it, or list it with a reason in scripts/deadcode-allow.txt):"
  grep -F -f <(printf '%s\n' "$unused") <<<"$dead"
  exit 1
fi
stale="$(comm -13 <(awk '{print $1}' <<<"$dead" | sort -u) <(printf '%s\n' "$allowed") | sed '/^$/d')"
if [ -n "$stale" ]; then
  echo "deadcode: scripts/deadcode-allow.txt lists functions that are reached (or gone); remove them:"; echo "$stale"; exit 1
fi
