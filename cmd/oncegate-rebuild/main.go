// Command oncegate-rebuild writes back into a restored truth database what
// Temporal knows of the operations that ended or ran after the backup
// (internal/rebuild): `scripts/prod.sh restore` runs it between the
// restore and the start of the workers and gateways.
//
//	oncegate-rebuild -since 2026-12-01T10:00:00Z [-dry-run]
//
// Its environment is rebuild.Config: DATABASE_URL and TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE, TEMPORAL_TLS*. It prints the report as JSON and exits
// 1 when an operation needs a person (a conflict, a workflow closed
// without an outcome), 2 when it could not run.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/oncegate/oncegate/idemstore/pgstore"
	"github.com/oncegate/oncegate/internal/envconfig"
	"github.com/oncegate/oncegate/internal/rebuild"
)

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	report, err := run(logger)
	if err != nil {
		logger.Error("rebuild failed", "err", err)
		os.Exit(2)
	}
	out, _ := json.MarshalIndent(report, "", "  ")
	fmt.Println(string(out))
	if len(report.Attention) > 0 {
		os.Exit(1)
	}
}

func run(logger *slog.Logger) (rebuild.Report, error) {
	since := flag.String("since", "", "when the backup was taken (RFC 3339): workflows running or closed since then are read")
	dryRun := flag.Bool("dry-run", false, "decide and report, write nothing")
	flag.Parse()
	at, err := time.Parse(time.RFC3339, *since)
	if err != nil {
		return rebuild.Report{}, fmt.Errorf("-since %q: want an RFC 3339 time such as 2026-12-01T10:00:00Z", *since)
	}
	cfg, err := rebuild.ConfigFromEnv(envconfig.OS())
	if err != nil {
		return rebuild.Report{}, err
	}
	ctx := context.Background()
	truth, err := pgstore.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return rebuild.Report{}, err
	}
	defer truth.Close()
	tc, err := client.Dial(cfg.Temporal.Apply(client.Options{Logger: tlog.NewStructuredLogger(logger.With("component", "temporal"))}))
	if err != nil {
		return rebuild.Report{}, fmt.Errorf("dial temporal %s: %w", cfg.Temporal.Address, err)
	}
	defer tc.Close()
	return rebuild.Run(ctx, tc, truth, rebuild.Options{Since: at, Namespace: cfg.Temporal.Namespace, DryRun: *dryRun, Logger: logger})
}
