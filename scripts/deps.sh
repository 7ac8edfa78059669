#!/usr/bin/env bash
# Installs what the stack and the tests need and is missing: redis-server,
# PostgreSQL and Chromium (the approval page's browser test) from Debian
# packages, and the Temporal CLI (dev server) and Ory Hydra (the identity
# provider of `make up OIDC=1` and the OIDC tests) built from Go modules into
# ./bin, both at once. Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

TEMPORAL_CLI_VERSION=v1.5.1

need_apt=()
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need_apt+=(postgresql)
command -v curl >/dev/null 2>&1 || need_apt+=(curl)          # the stack's health checks
command -v jq >/dev/null 2>&1 || need_apt+=(jq)              # the README's walk-through
command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)    # the signed webhook recipe of docs/faults.md
command -v promtool >/dev/null 2>&1 || need_apt+=(prometheus) # promtool: the alert rules' tests
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)   # the browser tests (chromedp): the approval page, the profile's Web UI
command -v gcc >/dev/null 2>&1 || need_apt+=(gcc libc6-dev)   # cgo: Hydra's in-memory storage is SQLite
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "deps: installing ${need_apt[*]} from Debian packages" >&2
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
  # The Debian package starts a cluster of its own on 5432; the stack and the
  # tests run their own clusters and do not need it.
fi
command -v runuser >/dev/null 2>&1 || { echo "deps: runuser missing (util-linux)" >&2; exit 1; }

# The two builds run side by side (each mostly waits on its own compile
# and link), so a fresh machine or CI pays the longer one, not the sum.
builds=()
if [ ! -x bin/temporal ]; then
  echo "deps: building the Temporal CLI ${TEMPORAL_CLI_VERSION} into ./bin (about five minutes, once)" >&2
  mkdir -p bin
  GOBIN="$PWD/bin" go install "github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}" &
  builds+=($!)
fi
if [ ! -x bin/hydra ]; then
  # Hydra's version is pinned in tools/hydra/go.mod, a module of its own
  # (Hydra's replace directives stop `go install hydra@version`). The sqlite
  # tag gives it DSN=memory; cgo builds SQLite.
  echo "deps: building Ory Hydra ($(awk '$1=="github.com/ory/hydra/v2"{print $2}' tools/hydra/go.mod)) into ./bin (several minutes, once)" >&2
  mkdir -p bin
  (cd tools/hydra && CGO_ENABLED=1 go build -trimpath -tags sqlite,sqlite_omit_load_extension -o ../../bin/hydra github.com/ory/hydra/v2) &
  builds+=($!)
fi
for pid in "${builds[@]}"; do
  wait "$pid"
done
