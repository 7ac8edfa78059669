// Command agentworkflow is an example agent written on Temporal that pays
// through oncegate exactly once, even when its worker is killed between the
// preview, the user's approval and the confirm. A scripted planner stands
// for the model.
//
//	agentworkflow worker                         # the agent's worker
//	agentworkflow run [-yes] "pay 12.50 USD to p-1; pay 3 EUR to p-2"
//
// Both read GATEWAY_URL, ONCEGATE_TOKEN, TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE and AGENT_TASK_QUEUE (see docs/agents.md).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"

	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "worker" && os.Args[1] != "run") {
		fmt.Fprintln(os.Stderr, "usage: agentworkflow worker | agentworkflow run [-yes] \"pay 12.50 USD to p-1\"")
		os.Exit(2)
	}
	cfg, err := loadConfig()
	if err != nil {
		log.Fatal(err)
	}
	tc, err := tclient.Dial(tclient.Options{HostPort: cfg.TemporalAddress, Namespace: cfg.Namespace})
	if err != nil {
		log.Fatalf("dial temporal %s: %v", cfg.TemporalAddress, err)
	}
	defer tc.Close()

	if os.Args[1] == "worker" {
		w, err := newWorker(tc, cfg)
		if err != nil {
			log.Fatal(err)
		}
		if err := w.Run(worker.InterruptCh()); err != nil {
			log.Fatal(err)
		}
		return
	}
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	yes := fs.Bool("yes", false, "approve every preview without asking (never a repeat of a recent operation)")
	_ = fs.Parse(os.Args[2:])
	if fs.NArg() != 1 {
		log.Fatal(`run needs one request, such as "pay 12.50 USD to p-1"`)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	d := &driver{tc: tc, cfg: cfg, yes: *yes, in: bufio.NewReader(os.Stdin), out: os.Stdout}
	rep, err := d.run(ctx, fs.Arg(0))
	if err != nil {
		log.Fatal(err)
	}
	out, _ := json.MarshalIndent(rep, "", "  ")
	fmt.Println(string(out))
}
