// Package soak is the chaos harness: it starts the dev stack on free
// loopback ports, lets scripted agents preview and confirm across every
// action of the catalog — duplicate sends, resends after lost answers,
// amnesia re-previews and acknowledged "again"s — while a seeded schedule
// kills the gateway, the worker, the simulator and Redis (and flushes it),
// restarts PostgreSQL and the Temporal server and sets the simulator's
// faults. When the faults stop and the stack settles it audits every
// operation: downstream executions, the truth against Redis and Temporal,
// and every answer an agent received against the final outcome.
package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"go.temporal.io/api/enums/v1"
	temporalclient "go.temporal.io/sdk/client"

	"github.com/oncegate/oncegate/api/tools"
	oncegate "github.com/oncegate/oncegate/client"
	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/workflows"
)

// Profiles a soak runs against.
const (
	// ProfileDev is the dev stack, started for the run on free ports.
	ProfileDev = "dev"
	// ProfileProd is the production-like profile of scripts/prod.sh
	// (.run-prod), started when it is not up.
	ProfileProd = "prod"
)

// Config configures a run; zero fields take the defaults.
type Config struct {
	// Profile is the stack (SOAK_PROFILE, `make soak PROFILE=prod`):
	// ProfileDev (the default) or ProfileProd.
	Profile string
	// Duration is how long agents start episodes and faults are injected
	// (SOAK_DURATION).
	Duration time.Duration
	// Seed fixes the fault schedule and the agents' choices (SOAK_SEED);
	// zero draws one, reported for the replay.
	Seed uint64
	// Agents is the number of scripted agents (SOAK_AGENTS).
	Agents int
	// MaxRequests bounds the requests to the gateway: no episode starts
	// after it (SOAK_MAX_REQUESTS).
	MaxRequests int64
	// SettleTimeout bounds, from the end of the faults, how long the
	// operations may take to become terminal or reach manual review
	// (SOAK_SETTLE).
	SettleTimeout time.Duration
	// KeepDir keeps the run's folder (process logs, data) even without
	// violations; with violations it is always kept.
	KeepDir bool
	// HistoryDir, when set, receives porcupine's HTML visualization of the
	// history check, soak-<seed>-history.html.
	HistoryDir string
	// WorkerFailpoint, when set, builds the binaries with -tags failpoint
	// and runs the workers with ONCEGATE_FAILPOINT set to it (the dev
	// profile only): a deliberately broken build
	// (worker.FailpointBrokenLostReply), for the test that proves the
	// audit catches one.
	WorkerFailpoint string
	// Schedule, when set, replaces the schedule drawn from the seed (the
	// broken build's test aims its faults).
	Schedule []FaultEvent
	// Logger receives the progress (default: discarded).
	Logger *slog.Logger
}

// Defaults of Config.
const (
	// DefaultDuration is the default Config.Duration.
	DefaultDuration = 2 * time.Minute
	// DefaultAgents is the default Config.Agents.
	DefaultAgents = 4
	// DefaultMaxRequests is the default Config.MaxRequests.
	DefaultMaxRequests = 1_000_000
	// DefaultSettleTimeout is the default Config.SettleTimeout.
	DefaultSettleTimeout = 5 * time.Minute
)

// Bounds of the phases after the load.
const (
	// upTimeout bounds the wait for every component to run again once the
	// faults stop.
	upTimeout = 3 * time.Minute
	// reviewTimeout bounds the wait for the audit's resolutions to finalize.
	reviewTimeout = 2 * time.Minute
	// lateCommitMargin is added to the catalog's longest late commit
	// (max_processing_time + status_lag) before manual reviews are decided
	// from the simulator's counts: no commit can still be on its way then.
	lateCommitMargin = 5 * time.Second
)

func (c Config) withDefaults() Config {
	if c.Profile == "" {
		c.Profile = ProfileDev
	}
	if c.Duration <= 0 {
		c.Duration = DefaultDuration
	}
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano()%1_000_000_000) + 1
	}
	if c.Agents <= 0 {
		c.Agents = DefaultAgents
	}
	if c.MaxRequests <= 0 {
		c.MaxRequests = DefaultMaxRequests
	}
	if c.SettleTimeout <= 0 {
		c.SettleTimeout = DefaultSettleTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Run runs one soak and returns its report; an error means the harness
// itself could not run (the report then holds what was done so far).
func Run(cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	log := cfg.Logger
	r := &Report{
		Seed: cfg.Seed, Profile: cfg.Profile, Duration: cfg.Duration.String(), Agents: cfg.Agents, StartedAt: time.Now(),
		Violations: []Violation{},
		Replay: fmt.Sprintf("SOAK_SEED=%d SOAK_DURATION=%s SOAK_AGENTS=%d make soak PROFILE=%s",
			cfg.Seed, cfg.Duration, cfg.Agents, cfg.Profile),
	}
	dir, err := os.MkdirTemp("", "oncegate-soak-")
	if err != nil {
		return r, fmt.Errorf("soak: %w", err)
	}
	var st *stack
	switch cfg.Profile {
	case ProfileDev:
		st, err = startStack(dir, cfg.WorkerFailpoint, log)
	case ProfileProd:
		st, err = startProdStack(log)
	default:
		err = fmt.Errorf("unknown profile %q: want %s or %s", cfg.Profile, ProfileDev, ProfileProd)
	}
	if err != nil {
		return r, fmt.Errorf("soak: start the stack: %w", err)
	}
	defer func() {
		r.FinishedAt = time.Now()
		if err := st.close(); err != nil {
			r.Violations = append(r.Violations, violation("", checkHealed, "after the run: %v", err))
		}
		switch {
		case st.profile == ProfileProd:
			_ = os.RemoveAll(dir) // unused: the profile keeps its logs and data in its own folder
			log.Info("the profile's logs and data", "dir", st.dir)
		case len(r.Violations) == 0 && !cfg.KeepDir:
			_ = os.RemoveAll(dir)
		default:
			log.Info("the run's folder is kept", "dir", dir)
		}
	}()
	// c is the harness's own client (readiness, the audit), direct; ac the
	// agents', through their hops to the gateways.
	c := newClient(st.gatewayURLs, st.downstreamURL, st.httpTLS)
	ac := newClient(st.agentURLs, st.downstreamURL, st.httpTLS)
	cat := st.cat
	if r.Actions, err = actions(c, cat, st.tokens.alice); err != nil {
		return r, err
	}
	r.Schedule = schedule(st.faults, cfg.Seed, cfg.Duration)
	if cfg.Schedule != nil {
		r.Schedule = cfg.Schedule
	}

	st.netFaults.ready = func(ctx context.Context) bool { return gatewaysReady(ctx, c) }
	led := newLedger()
	in := newInjector(st, c, log)
	log.Info("load and faults start", "duration", cfg.Duration, "agents", cfg.Agents, "seed", cfg.Seed, "faults", len(r.Schedule))
	load, stopLoad := context.WithTimeout(context.Background(), cfg.Duration)
	defer stopLoad()
	follow, stopFollow := context.WithTimeout(context.Background(), cfg.Duration+2*followTimeout)
	defer stopFollow()
	start := time.Now()
	faultsDone := make(chan struct{})
	go func() {
		in.run(load, start, r.Schedule)
		close(faultsDone)
	}()
	budget := func() bool { return ac.requests.Load() < cfg.MaxRequests }
	agentsDone := make(chan struct{})
	go func() {
		defer close(agentsDone)
		done := make(chan struct{}, cfg.Agents)
		for i := range cfg.Agents {
			a := newAgent(i, cfg.Seed, st, ac, led, r.Actions)
			go func() {
				a.run(load, follow, budget)
				done <- struct{}{}
			}()
		}
		for range cfg.Agents {
			<-done
		}
	}()
	<-load.Done()
	<-faultsDone
	faultsStopped := time.Now()
	log.Info("faults stopped; bringing every component up")
	if left := st.netFaults.left(); len(left) > 0 {
		r.Violations = append(r.Violations, violation("", checkHealed, "toxics left on the hops after the faults ended: %v", left))
		st.netFaults.resetHops()
	}
	if !in.clearSim(upTimeout) {
		return r, errors.New("soak: the simulator's faults could not be cleared")
	}
	if err := st.allUp(c, upTimeout); err != nil {
		return r, fmt.Errorf("soak: %w", err)
	}
	log.Info("waiting for the agents to finish their episodes")
	<-agentsDone
	r.Requests, r.Episodes, r.Answers = ac.requests.Load()+c.requests.Load(), led.episodes, led.statuses
	r.LostAnswers, r.TransportErrors = led.lost, led.transport
	r.Faults, r.FaultsSkipped, r.Restarts, r.NetFaults = in.applied, in.skipped, st.restarts(), in.byTarget
	r.ConvergeSeconds, r.ConvergeFault = st.netFaults.longest.Seconds(), st.netFaults.longestFault

	a, err := newAuditor(st, c)
	if err != nil {
		return r, err
	}
	defer a.close()
	log.Info("settling")
	settled, err := a.settle(faultsStopped.Add(cfg.SettleTimeout))
	if err != nil {
		return r, err
	}
	r.SettleSeconds = time.Since(faultsStopped).Seconds()
	if !settled {
		log.Warn("not every operation settled within the bound", "bound", cfg.SettleTimeout)
	}
	sleep(context.Background(), time.Until(faultsStopped.Add(lateCommit(cat)+lateCommitMargin)))
	if r.ReviewResolved, err = a.resolveReviews(log); err != nil {
		return r, err
	}
	log.Info("auditing")
	if err := a.audit(led, r); err != nil {
		return r, err
	}
	if err := a.checkHistory(led, r, cfg.HistoryDir); err != nil {
		return r, err
	}
	return r, nil
}

// gatewaysReady reports whether every gateway answers GET /readyz with 200
// and its fast path in use ("redis":"ok").
func gatewaysReady(ctx context.Context, c *client) bool {
	for _, gw := range c.gatewayURLs {
		raw, code, err := c.do(ctx, http.MethodGet, gw+"/readyz", nil, 2*time.Second)
		if err != nil || code != http.StatusOK || !bytes.Contains(raw, []byte(`"redis":"ok"`)) {
			return false
		}
	}
	return true
}

// loadCatalog reads the dev catalog the gateway runs with.
func loadCatalog(downstreamURL string) (*catalog.Catalog, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(filepath.Join(root, "deployments", "catalog.dev.yaml"))
	if err != nil {
		return nil, fmt.Errorf("soak: read the catalog: %w", err)
	}
	cat, err := catalog.Parse(bytes.ReplaceAll(raw, []byte("${DOWNSTREAM_URL}"), []byte(downstreamURL)), gateway.Defaults().ConfirmWait)
	if err != nil {
		return nil, fmt.Errorf("soak: %w", err)
	}
	return cat, nil
}

// actions returns every action whose preview tool GET /v1/tools lists,
// refusing a listed preview tool that the catalog does not explain. An
// action whose approval policy can ask a person to approve (payments.wire)
// is left out: a scripted agent has no passkey, and its confirms would be
// approval_required until the fingerprint expires.
func actions(c *client, cat *catalog.Catalog, token string) ([]string, error) {
	raw, err := c.tools(context.Background(), token, oncegate.ToolsAnthropic)
	if err != nil {
		return nil, fmt.Errorf("soak: the tool definitions: %w", err)
	}
	byTool := map[string]string{}
	for scope := range cat.Actions {
		byTool[tools.PreviewName(scope)] = scope
	}
	var out []string
	for _, name := range toolNames(raw) {
		if !strings.HasSuffix(name, "_preview") {
			continue
		}
		scope, ok := byTool[name]
		if !ok {
			return nil, fmt.Errorf("soak: GET /v1/tools lists %s, which no action of the dev catalog explains", name)
		}
		if cat.Actions[scope].Approval.Asks() {
			continue
		}
		out = append(out, scope)
	}
	if len(out) == 0 {
		return nil, errors.New("soak: GET /v1/tools lists no preview tool")
	}
	slices.Sort(out)
	return out, nil
}

// toolNames returns the names of the tools of an anthropic-format
// GET /v1/tools body.
func toolNames(raw []byte) []string {
	var defs []struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &defs) != nil {
		return nil
	}
	out := make([]string, 0, len(defs))
	for _, d := range defs {
		out = append(out, d.Name)
	}
	return out
}

// lateCommit is the longest time after a send that a downstream of cat may
// still commit and its status endpoint not yet show it.
func lateCommit(cat *catalog.Catalog) time.Duration {
	var d time.Duration
	for _, a := range cat.Actions {
		d = max(d, a.Downstream.MaxProcessingTime+a.Downstream.StatusLag)
	}
	return d
}

// auditor reads the truth, Redis and Temporal of the stack.
type auditor struct {
	c    *client
	cat  *catalog.Catalog
	pool *pgxpool.Pool
	sim  *pgxpool.Pool
	rdb  redis.UniversalClient
	tc   temporalclient.Client
	// since bounds the truth records read: those created from then on.
	since time.Time
	// opsToken is the operator's token, for the audit's decisions.
	opsToken string
}

func newAuditor(st *stack, c *client) (*auditor, error) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, st.databaseURL)
	if err != nil {
		return nil, fmt.Errorf("soak: open the truth: %w", err)
	}
	sim, err := pgxpool.New(ctx, st.simDatabaseURL)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("soak: open the simulator's database: %w", err)
	}
	opts := st.temporal
	opts.Logger = quietLogger{}
	tc, err := temporalclient.Dial(opts)
	if err != nil {
		pool.Close()
		sim.Close()
		return nil, fmt.Errorf("soak: dial temporal: %w", err)
	}
	return &auditor{c: c, cat: st.cat, pool: pool, sim: sim, rdb: st.newRedis(), tc: tc, since: st.since, opsToken: st.tokens.ops}, nil
}

func (a *auditor) close() {
	a.pool.Close()
	a.sim.Close()
	_ = a.rdb.Close()
	a.tc.Close()
}

// settlePoll is how often the settle and review waits look at the truth.
const settlePoll = time.Second

// settle waits until no truth record is IN_FLIGHT or until deadline; it
// reports whether it got there.
func (a *auditor) settle(deadline time.Time) (bool, error) {
	for {
		n, err := a.countState(operation.StateInFlight)
		if err != nil {
			return false, err
		}
		if n == 0 {
			return true, nil
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		time.Sleep(settlePoll)
	}
}

// countState counts the truth records in state.
func (a *auditor) countState(state operation.State) (int, error) {
	var n int
	if err := a.pool.QueryRow(context.Background(), `SELECT count(*) FROM write_record WHERE state = $1 AND created_at >= $2`,
		string(state), a.since).Scan(&n); err != nil {
		return 0, fmt.Errorf("soak: count %s: %w", state, err)
	}
	return n, nil
}

// resolveReviews decides every operation in manual review from the
// simulator's evidence and waits until the decisions are final.
func (a *auditor) resolveReviews(log *slog.Logger) (map[string]int, error) {
	ctx := context.Background()
	rows, err := a.pool.Query(ctx, `SELECT idem_key, scope FROM write_record WHERE state = $1 AND created_at >= $2`,
		string(operation.StateNeedsReview), a.since)
	if err != nil {
		return nil, fmt.Errorf("soak: list reviews: %w", err)
	}
	scopes := map[string]string{}
	for rows.Next() {
		var id, scope string
		if err := rows.Scan(&id, &scope); err != nil {
			rows.Close()
			return nil, fmt.Errorf("soak: list reviews: %w", err)
		}
		scopes[id] = scope
	}
	rows.Close()
	out := map[string]int{}
	var resolved []string
	for id, scope := range scopes {
		action, ok := a.cat.Actions[scope]
		if !ok {
			return nil, fmt.Errorf("soak: operation %s of unknown action %q in review", id, scope)
		}
		outcome, err := resolveReview(ctx, a.c, a.sim, action, id, a.opsToken)
		if err != nil {
			log.Warn("resolve failed", "operation_id", id, "err", err)
			out["error"]++
			continue
		}
		out[outcome]++
		resolved = append(resolved, id)
	}
	// A resolved workflow records the decision at once and stays open for
	// workflows.ResolutionGrace to refuse late ones: wait until the truth
	// has no review left and every resolved workflow has closed.
	deadline := time.Now().Add(workflows.ResolutionGrace + reviewTimeout)
	for time.Now().Before(deadline) {
		n, err := a.countState(operation.StateNeedsReview)
		if err != nil {
			return out, err
		}
		if n == 0 {
			resolved, err = a.stillRunning(resolved)
			if err != nil || len(resolved) == 0 {
				return out, err
			}
		}
		time.Sleep(settlePoll)
	}
	return out, nil
}

// stillRunning returns the operations of ids whose workflow still runs.
func (a *auditor) stillRunning(ids []string) ([]string, error) {
	var out []string
	for _, id := range ids {
		v, err := readTemporal(context.Background(), a.tc, id)
		if err != nil {
			return nil, fmt.Errorf("soak: %w", err)
		}
		if v.status == enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
			out = append(out, id)
		}
	}
	return out, nil
}

// audit checks every operation and fills r.
func (a *auditor) audit(led *ledger, r *Report) error {
	ctx := context.Background()
	truth, err := readTruth(ctx, a.pool, a.since)
	if err != nil {
		return err
	}
	ops := led.snapshot()
	r.Violations = append(r.Violations, led.violations...)
	r.ByScope, r.ByIntent, r.FinalStates, r.FailureKinds = map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	seenIDs := map[string]bool{}
	for _, op := range ops {
		seenIDs[op.ID] = true
		e := evidence{op: op}
		e.truth, e.inTruth = truth[op.ID]
		if e.executions, err = a.c.executions(ctx, op.ID); err != nil {
			return fmt.Errorf("soak: %w", err)
		}
		if e.executions > 0 {
			record, err := recordOf(ctx, a.c, a.sim, a.cat.Actions[op.Scope], op.ID)
			if err != nil {
				return fmt.Errorf("soak: %w", err)
			}
			e.transferID, _ = record["id"].(string)
			e.verdict = verdictOf(a.cat.Actions[op.Scope], record)
		}
		if e.redis, err = readRedis(ctx, a.rdb, op.ID); err != nil {
			return fmt.Errorf("soak: %w", err)
		}
		if e.temporal, err = readTemporal(ctx, a.tc, op.ID); err != nil {
			return fmt.Errorf("soak: %w", err)
		}
		vs := checkOperation(e)
		r.Violations = append(r.Violations, vs...)
		if len(vs) > 0 && len(r.Evidence) < maxEvidence {
			r.Evidence = append(r.Evidence, op)
		}
		r.Operations++
		r.ByScope[op.Scope]++
		r.ByIntent[op.Intent]++
		r.Executions += e.executions
		final := "NONE"
		if e.inTruth {
			final = e.truth.state
		}
		r.FinalStates[final]++
		if final == string(operation.StateFailed) {
			r.FailureKinds[e.truth.failureKind]++
		}
		if e.redis.found {
			r.RedisKeys++
		}
		if staleRedis(e) {
			r.RedisStale++
		}
		if e.temporal.found {
			r.Workflows++
		}
	}
	for id := range truth {
		if !seenIDs[id] {
			r.Violations = append(r.Violations, violation(id, checkAnswer, "a truth record of an operation that no agent previewed"))
		}
	}
	return nil
}

// quietLogger drops the Temporal SDK's logs.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
