// Command agentsim replays the four duplicate sources of LLM agents
// (retry after a lost answer, re-planning after amnesia, free-text drift,
// "do it again") against a running oncegate stack and checks downstream
// that nothing executed twice unintentionally. It reads GATEWAY_URL and
// DOWNSTREAM_URL (agentsim.Config; .run/stack.env has them) and exits 1
// when the run found a duplicate, a drift param_mismatch, a violation or
// an error.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/oncegate/oncegate/harness/agentsim"
	"github.com/oncegate/oncegate/internal/envconfig"
)

func main() {
	episodes := flag.Int("episodes", 200, "number of episodes")
	seed := flag.Int64("seed", 1, "random seed of the episodes")
	concurrency := flag.Int("concurrency", 4, "episodes running at once")
	asJSON := flag.Bool("json", false, "print the report as JSON")
	lost := flag.Duration("lost-timeout", 5*time.Millisecond, "client timeout of a confirm whose answer is lost")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg, err := envconfig.Parse[agentsim.Config](envconfig.OS())
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentsim:", err)
		os.Exit(2)
	}
	cfg.Episodes, cfg.Seed, cfg.Concurrency, cfg.LostAnswerTimeout = *episodes, *seed, *concurrency, *lost
	rep, err := agentsim.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentsim:", err)
		os.Exit(2)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = rep.WriteText(os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentsim:", err)
		os.Exit(2)
	}
	if !rep.OK() {
		os.Exit(1)
	}
}
