// Command bench-scale is `make bench-scale`: at each size of the truth
// (SCALE_SIZES, operations, default 0 and 1000000) it starts the dev stack,
// fills the truth with that many finished operations by COPY, measures
// oncegate's paths against the floors in the same run (harness/benchscale)
// and writes the report (docs/benchmarks-scale.md, keeping its hand-written
// notes) and its PNG curves beside it. It is a benchmark: it asserts
// nothing about speed. Run it from the repository root.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/oncegate/oncegate/harness/benche2e"
	"github.com/oncegate/oncegate/harness/benchscale"
)

// EnvSizes is the environment setting of the sizes (`make bench-scale
// SCALE_SIZES=0,1000000,5000000`).
const EnvSizes = "SCALE_SIZES"

func main() {
	// The bare workflow's worker and the HTTP floors, started by the
	// benchmark itself from this binary.
	if sub, err := benche2e.RunSubprocess(os.Args); sub {
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench-scale", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-scale:", err)
		os.Exit(1)
	}
}

func run() error {
	d := benche2e.DefaultOptions
	var o benchscale.Options
	var sizes, out, groups string
	flag.StringVar(&sizes, "sizes", os.Getenv(EnvSizes), "comma-separated sizes of the truth, in operations (default "+EnvSizes+", else 0,1000000)")
	flag.IntVar(&o.Bench.Rounds, "rounds", d.Rounds, "A/B rounds at each size")
	flag.DurationVar(&o.Bench.Duration, "duration", d.Duration, "time bound of each throughput phase")
	flag.IntVar(&o.Bench.FirstConfirms, "first-confirms", d.FirstConfirms, "sequential first confirms (and bare workflows) per round")
	flag.StringVar(&groups, "only", strings.Join(benchscale.DefaultGroups, ","), "comma-separated benche2e groups measured at each size")
	flag.StringVar(&out, "out", "docs/benchmarks-scale.md", "the report (its notes below the marker are kept); the PNG curves go beside it")
	flag.Parse()
	o.Sizes = benchscale.DefaultSizes
	if sizes != "" {
		var err error
		if o.Sizes, err = benchscale.ParseSizes(sizes); err != nil {
			return fmt.Errorf("%s: %w", EnvSizes, err)
		}
	}
	o.Bench.Only = strings.Split(groups, ",")
	o.Log = os.Stderr

	var notes string
	if old, err := os.ReadFile(out); err == nil {
		notes = benche2e.SplitNotes(string(old))
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	command := strings.TrimSpace("go run ./cmd/bench-scale " + strings.Join(os.Args[1:], " "))
	if v := os.Getenv(EnvSizes); v != "" {
		command = EnvSizes + "=" + v + " " + command
	}
	start := time.Now()
	var charts []string
	o.Measured = func(points []benchscale.Point) error {
		var err error
		if charts, err = benchscale.WriteCharts(filepath.Dir(out), strings.TrimSuffix(filepath.Base(out), ".md"), points); err != nil {
			return err
		}
		var buf strings.Builder
		in := benchscale.ReportInput{Command: command, Machine: benche2e.ThisMachine(), Charts: charts, Took: time.Since(start), Notes: notes}
		if err := benchscale.WriteReport(&buf, points, in); err != nil {
			return err
		}
		return os.WriteFile(out, []byte(buf.String()), 0o644)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if _, err := benchscale.Run(ctx, o); err != nil {
		return err
	}
	fmt.Printf("wrote %s and %s\n", out, strings.Join(charts, ", "))
	return nil
}
