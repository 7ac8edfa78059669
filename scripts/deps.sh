#!/usr/bin/env bash
# Installs what the stack and the tests need and is missing: redis-server,
# PostgreSQL and Chromium (the approval page's browser test) from Debian
# packages, and the Temporal CLI (dev server) built from
# Go modules into ./bin. Safe to run again: it only installs what is missing.
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
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "deps: installing ${need_apt[*]} from Debian packages" >&2
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
  # The Debian package starts a cluster of its own on 5432; the stack and the
  # tests run their own clusters and do not need it.
fi
command -v runuser >/dev/null 2>&1 || { echo "deps: runuser missing (util-linux)" >&2; exit 1; }

if [ ! -x bin/temporal ]; then
  echo "deps: building the Temporal CLI ${TEMPORAL_CLI_VERSION} into ./bin (about five minutes, once)" >&2
  mkdir -p bin
  GOBIN="$PWD/bin" go install "github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}"
fi

