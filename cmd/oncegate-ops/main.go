// Command oncegate-ops is the operator's CLI for the gateway's ops API: list
// operations by state, show one, and resolve one that awaits manual review
// (which signals its waiting workflow); and it verifies a receipt offline.
//
//	oncegate-ops list --state needs_manual_review
//	oncegate-ops show <operation_id>
//	oncegate-ops resolve <operation_id> --outcome completed --result '{"id":"lt_1"}' --note "seen in the ledger"
//	oncegate-ops receipt verify <receipt> [--jwks URL|FILE]
//
// Its environment is opsconfig.Config: GATEWAY_URL (default
// http://127.0.0.1:8080) and ONCEGATE_OPS_TOKEN (default dev-ops).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/oncegate/oncegate/internal/envconfig"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], envconfig.OS(), os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
