#!/usr/bin/env bash
# make test-prod: the end-to-end, crash, TLS, upgrade, restore and Web UI
# tests against the production-like profile (harness/e2eprod), every
# hop encrypted. Starts the profile when it is not up and stops it again
# afterwards in that case; a profile that was already up stays up. The
# tests' artifacts (the Web UI's screenshots) go to .run-prod/artifacts/.
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
# The upgrade drill's build replays the recorded histories (a second, fast check of its gate).
go test -count=1 -tags upgradedrill -run TestDrillReplaysTheRecordedHistories ./worker/ 2>&1 | tee .run-prod/test-prod.log
rc=${PIPESTATUS[0]}
mkdir -p .run-prod/artifacts
ONCEGATE_PROD_STACK=$PWD/.run-prod/stack.env go test -count=1 -timeout 45m -v -artifacts -outputdir "$PWD/.run-prod/artifacts" \
  ./harness/e2eprod/ 2>&1 | tee -a .run-prod/test-prod.log
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
set -e
echo "test-prod: ${SECONDS}s of tests (log: .run-prod/test-prod.log)"
exit "$rc"
