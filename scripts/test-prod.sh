#!/usr/bin/env bash
# make test-prod: the end-to-end and crash tests against the production-like
# profile (internal/harness/e2eprod). Starts the profile when it is not up and stops
# it again afterwards in that case; a profile that was already up stays up.
set -euo pipefail
cd "$(dirname "$0")/.."
# Nothing of the profile running before: stop it all again at the end.
before=$(./scripts/prod.sh status)
if ! grep -q ': running' <<<"$before"; then
  trap './scripts/prod.sh down' EXIT
fi
./scripts/prod.sh up
SECONDS=0
set +e
ONCEGATE_PROD_STACK=$PWD/.run-prod/stack.env go test -count=1 -timeout 30m -v ./internal/harness/e2eprod/ 2>&1 | tee .run-prod/test-prod.log
rc=${PIPESTATUS[0]}
set -e
echo "test-prod: ${SECONDS}s of tests (log: .run-prod/test-prod.log)"
exit "$rc"
