// Command soak runs the chaos harness (harness/soak) once: `make soak`.
// It prints the markdown summary, writes the JSON and markdown reports,
// and exits 1 when the audit found a violation, 2 when the harness could
// not run.
package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/oncegate/oncegate/harness/soak"
)

func main() {
	opts, err := soak.ParseOptions(os.Args[1:], os.Getenv, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	opts.HistoryDir = opts.OutDir
	report, runErr := soak.Run(opts.Config)
	jsonPath, mdPath, err := report.Write(opts.OutDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
	}
	fmt.Print(report.Markdown())
	fmt.Printf("\nreports: %s %s\n", jsonPath, mdPath)
	switch {
	case runErr != nil:
		fmt.Fprintln(os.Stderr, "soak:", runErr)
		os.Exit(2)
	case len(report.Violations) > 0:
		os.Exit(1)
	}
}
