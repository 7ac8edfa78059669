// Command bench-e2e is `make bench-e2e`: it starts the oncegate stack on
// free ports, measures oncegate's paths against floors built into this
// binary in alternating rounds, prints the ratios, and writes the report
// (docs/benchmarks.md, keeping its hand-written notes) and the latency
// chart (docs/benchmarks.png). With -prod-stack it measures a running
// production-like profile instead (scripts/bench-prod.sh, `make bench-e2e
// PROFILE=prod`, which writes docs/benchmarks-prod.md). It is a benchmark:
// it asserts nothing about speed. Run it from the repository root.
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

	"github.com/oncegate/oncegate/harness/benche2e"
)

func main() {
	// The bare workflow's worker and the HTTP floors, started by the
	// benchmark itself from this binary.
	if sub, err := benche2e.RunSubprocess(os.Args); sub {
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench-e2e", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-e2e:", err)
		os.Exit(1)
	}
}

func run() error {
	d := benche2e.DefaultOptions
	var (
		opts                                    benche2e.Options
		out, chart, only, gatewayEnv, workerEnv string
	)
	flag.IntVar(&opts.Rounds, "rounds", d.Rounds, "A/B rounds")
	flag.IntVar(&opts.Conns, "conns", d.Conns, "connections of the load generator in the throughput phases")
	flag.DurationVar(&opts.Duration, "duration", d.Duration, "time bound of each throughput phase")
	flag.IntVar(&opts.MaxRequests, "max-requests", d.MaxRequests, "request bound of each throughput phase")
	flag.IntVar(&opts.FirstConfirms, "first-confirms", d.FirstConfirms, "sequential first confirms (and bare workflows) per round")
	flag.IntVar(&opts.Concurrency, "concurrency", d.Concurrency, "concurrent first confirms")
	flag.IntVar(&opts.ConcurrentConfirms, "concurrent-confirms", d.ConcurrentConfirms, "concurrent first confirms (and bare workflows) per round")
	flag.IntVar(&opts.ProfileSeconds, "profile", 0, "seconds of each CPU profile after the rounds: the gateway's under preview and replay load, the gateway's and the worker's under concurrent first confirms, three times as long (0: none)")
	flag.StringVar(&opts.ProfileDir, "profile-dir", ".run/bench", "where the raw profiles go")
	flag.StringVar(&only, "only", "", "comma-separated groups to run, of "+strings.Join(benche2e.Groups, ","))
	flag.StringVar(&gatewayEnv, "gateway-env", "", "extra KEY=value settings of the gateway, separated by spaces")
	flag.StringVar(&workerEnv, "worker-env", "", "extra KEY=value settings of the worker, separated by spaces")
	flag.StringVar(&opts.DatabaseURLParams, "db-params", "", "query parameters appended to the gateway's and the worker's DATABASE_URL, such as pool_max_conns=16")
	flag.StringVar(&opts.RedisURLParams, "redis-params", "", "query parameters appended to the gateway's and the worker's REDIS_URL, such as pool_size=32")
	flag.IntVar(&opts.WorkerPollers, "worker-pollers", 0, "pollers per task kind of oncegate's worker and of the bare workflow's worker (0: the SDK's defaults)")
	var dynamicConfig string
	flag.StringVar(&dynamicConfig, "temporal-dynamic-config", "", "extra dynamic config of the Temporal dev server, KEY=JSON_VALUE separated by spaces (server-wide)")
	var twin benche2e.Twin
	var twinGatewayEnv, twinWorkerEnv string
	flag.StringVar(&twin.Name, "twin", "", "start a twin gateway and worker with the -twin-* settings and measure both side by side; the value names the lever")
	flag.StringVar(&twinGatewayEnv, "twin-gateway-env", "", "extra KEY=value settings of the twin gateway, separated by spaces")
	flag.StringVar(&twinWorkerEnv, "twin-worker-env", "", "extra KEY=value settings of the twin worker, separated by spaces")
	flag.StringVar(&twin.DatabaseURLParams, "twin-db-params", "", "query parameters of the twin's DATABASE_URL")
	flag.StringVar(&twin.RedisURLParams, "twin-redis-params", "", "query parameters of the twin's REDIS_URL")
	flag.IntVar(&twin.WorkerPollers, "twin-worker-pollers", 0, "pollers per task kind of the twin's worker")
	flag.BoolVar(&opts.FloorsInline, "floors-inline", false, "run the HTTP floors inside the benchmark process (the method before 2026-12-02) instead of in a process of their own")
	flag.StringVar(&opts.ProdStack, "prod-stack", "", "measure the running production-like profile of this stack.env (scripts/bench-prod.sh) instead of starting the dev stack")
	flag.StringVar(&out, "out", "docs/benchmarks.md", "the report (its notes below the marker are kept)")
	flag.StringVar(&chart, "chart", "docs/benchmarks.png", "the latency chart (PNG)")
	flag.Parse()
	if only != "" {
		opts.Only = strings.Split(only, ",")
	}
	opts.GatewayEnv, opts.WorkerEnv = strings.Fields(gatewayEnv), strings.Fields(workerEnv)
	opts.TemporalDynamicConfig = strings.Fields(dynamicConfig)
	if twin.Name != "" {
		twin.GatewayEnv, twin.WorkerEnv = strings.Fields(twinGatewayEnv), strings.Fields(twinWorkerEnv)
		opts.Twin = &twin
	}
	opts.Log = os.Stderr

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	res, err := benche2e.Run(ctx, opts)
	if err != nil {
		return err
	}
	benche2e.PrintSummary(os.Stdout, res)

	if err := benche2e.WriteChart(chart, res); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(out), chart)
	if err != nil {
		rel = chart
	}
	var notes string
	if old, err := os.ReadFile(out); err == nil {
		notes = benche2e.SplitNotes(string(old))
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	in := benche2e.ReportInput{Command: strings.TrimSpace("go run ./cmd/bench-e2e " + strings.Join(os.Args[1:], " ")), Machine: benche2e.ThisMachine(), Chart: rel, Notes: notes}
	if err := benche2e.WriteReport(f, res, in); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Printf("wrote %s and %s\n", out, chart)
	return nil
}
