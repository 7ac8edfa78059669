// Package agentsim is an agent simulator: scripted agents replay the four
// sources of duplicate calls of docs/contract.md (retry after a lost or
// unreadable answer, re-planning after amnesia, free-text drift, and an
// ambiguous "do it again") against a real running gateway over HTTP, then
// ask the downstream simulator how often each operation really executed.
package agentsim

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Kind is the duplicate source an episode replays.
type Kind string

const (
	// KindRetry: the confirm's answer is lost (client timeout) and the agent
	// confirms again with the same fingerprint until a terminal status.
	KindRetry Kind = "retry_after_lost_answer"
	// KindAmnesia: after completing, the agent forgets and previews the same
	// params again; it must see recent_operation and a confirm without
	// acknowledgement must be refused with repeat_unacknowledged.
	KindAmnesia Kind = "replan_after_amnesia"
	// KindDrift: the re-sent confirm rewrites the free-text memo and
	// re-formats the bound fields equivalently; it must replay, never
	// param_mismatch.
	KindDrift Kind = "free_text_drift"
	// KindDoItAgain: the user asks to do it again and confirms they really
	// want a second transfer; the agent acknowledges the recent operation
	// and a new operation executes (an intended repeat).
	KindDoItAgain Kind = "do_it_again"
)

// Kinds lists every episode kind.
var Kinds = []Kind{KindRetry, KindAmnesia, KindDrift, KindDoItAgain}

// Config configures a run. cmd/agentsim reads the URLs from the
// environment (their tags; .run/stack.env has them) and the rest from its
// flags.
type Config struct {
	// GatewayURL is the gateway's base URL.
	GatewayURL string `env:"GATEWAY_URL" envDefault:"http://127.0.0.1:8080"`
	// DownstreamURL is the downstream simulator's base URL.
	DownstreamURL string `env:"DOWNSTREAM_URL" envDefault:"http://127.0.0.1:8090"`
	// Episodes is the number of episodes (default 200).
	Episodes int
	// Seed makes the episodes' kinds and params reproducible (default 1).
	Seed int64
	// Concurrency is the number of agents running at once (default 4).
	Concurrency int
	// Tokens maps a subject to its bearer token (default alice → dev-alice,
	// bob → dev-bob).
	Tokens map[string]string
	// Scopes are the actions the agents call (default payments.transfer and
	// payments.legacy_transfer).
	Scopes []string
	// LostAnswerTimeout is the client timeout of a confirm whose answer is
	// to be lost (default 5ms).
	LostAnswerTimeout time.Duration
	// RequestTimeout bounds every other request (default 30s).
	RequestTimeout time.Duration
	// MaxWait bounds the polling of one operation (default 2m).
	MaxWait time.Duration
	// RunID keeps payees apart between runs against the same stack, so that
	// the amnesia guard only sees this run's operations (default random).
	RunID string
	// HTTPClient sends the requests (default a new client).
	HTTPClient *http.Client
}

// withDefaults fills the zero fields of c.
func (c Config) withDefaults() Config {
	if c.Episodes <= 0 {
		c.Episodes = 200
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 4
	}
	if len(c.Tokens) == 0 {
		c.Tokens = map[string]string{"alice": "dev-alice", "bob": "dev-bob"}
	}
	if len(c.Scopes) == 0 {
		c.Scopes = []string{"payments.transfer", "payments.legacy_transfer"}
	}
	if c.LostAnswerTimeout <= 0 {
		c.LostAnswerTimeout = 5 * time.Millisecond
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 30 * time.Second
	}
	if c.MaxWait <= 0 {
		c.MaxWait = 2 * time.Minute
	}
	if c.RunID == "" {
		var b [4]byte
		_, _ = crand.Read(b[:])
		c.RunID = hex.EncodeToString(b[:])
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	}
	c.GatewayURL = strings.TrimRight(c.GatewayURL, "/")
	c.DownstreamURL = strings.TrimRight(c.DownstreamURL, "/")
	return c
}

// Run plays cfg.Episodes episodes against the stack, then counts the
// downstream executions of every operation seen and returns the report. An
// error means the run could not take place (bad config, gateway or
// downstream unreachable); what went wrong inside episodes is in the report.
func Run(ctx context.Context, cfg Config) (Report, error) {
	cfg = cfg.withDefaults()
	if cfg.GatewayURL == "" || cfg.DownstreamURL == "" {
		return Report{}, errors.New("agentsim: GatewayURL and DownstreamURL are required")
	}
	c := newClient(cfg)
	if err := c.reachable(ctx, cfg.GatewayURL+"/healthz"); err != nil {
		return Report{}, fmt.Errorf("agentsim: gateway: %w", err)
	}
	if err := c.reachable(ctx, cfg.DownstreamURL+"/_sim/executions?ref=agentsim-probe"); err != nil {
		return Report{}, fmt.Errorf("agentsim: downstream: %w", err)
	}

	results := make([]episodeResult, cfg.Episodes)
	parallel(cfg.Concurrency, cfg.Episodes, func(i int) {
		results[i] = playEpisode(ctx, c, cfg, i)
	})
	if err := ctx.Err(); err != nil {
		return Report{}, fmt.Errorf("agentsim: %w", err)
	}

	var ids []string
	seen := map[string]bool{}
	for _, r := range results {
		for _, o := range r.ops {
			if o.id != "" && !seen[o.id] {
				seen[o.id] = true
				ids = append(ids, o.id)
			}
		}
	}
	counts := make(map[string]int, len(ids))
	var mu sync.Mutex
	var countErrs []string
	parallel(cfg.Concurrency, len(ids), func(i int) {
		n, err := c.executions(ctx, ids[i])
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			countErrs = append(countErrs, fmt.Sprintf("count executions of %s: %v", ids[i], err))
			return
		}
		counts[ids[i]] = n
	})
	rep := aggregate(results, counts)
	rep.RunID = cfg.RunID
	rep.Seed = cfg.Seed
	rep.Errors = append(rep.Errors, countErrs...)
	return rep, nil
}

// parallel runs f(0..n-1) on at most workers goroutines.
func parallel(workers, n int, f func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, max(n, 1)) {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// episodeRand returns the episode's own random source, independent of
// scheduling.
func episodeRand(seed int64, i int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), uint64(i)+1))
}
