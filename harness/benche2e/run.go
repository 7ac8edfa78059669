package benche2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"golang.org/x/sync/errgroup"

	oncegate "github.com/oncegate/oncegate/client"
	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/worker"
	"github.com/oncegate/oncegate/workflows"
)

// Options tunes a benchmark run. Zero fields take the defaults of
// DefaultOptions.
type Options struct {
	// Rounds is the number of A/B rounds; odd rounds run each comparison's
	// sides in the reverse order.
	Rounds int
	// Conns is the load generator's number of connections for the
	// throughput phases.
	Conns int
	// Duration bounds each throughput phase in time.
	Duration time.Duration
	// MaxRequests bounds each throughput phase in requests.
	MaxRequests int
	// FirstConfirms is the number of sequential first confirms (and bare
	// workflows) per round.
	FirstConfirms int
	// Concurrency is the number of concurrent first confirms.
	Concurrency int
	// ConcurrentConfirms is the number of concurrent first confirms (and
	// bare workflows) per round.
	ConcurrentConfirms int
	// ProfileSeconds, when positive, captures CPU profiles after the
	// rounds: the gateway's this long under preview and replay load, the
	// gateway's and the worker's three times as long under concurrent
	// first confirms.
	ProfileSeconds int
	// ProfileDir receives the raw profiles (not committed).
	ProfileDir string
	// Only, when not empty, names the groups of comparisons to run (see
	// Groups); the others are skipped.
	Only []string
	// GatewayEnv and WorkerEnv are extra KEY=value settings for the
	// gateway and the worker (the levers under test).
	GatewayEnv, WorkerEnv []string
	// DatabaseURLParams and RedisURLParams are appended to the URLs the
	// gateway and the worker get (pool sizes: pool_max_conns=16, pool_size=32).
	DatabaseURLParams, RedisURLParams string
	// WorkerPollers, when positive, sets the pollers per task kind of
	// oncegate's worker (worker.EnvPollers) and of the bare workflow's
	// worker alike.
	WorkerPollers int
	// TemporalDynamicConfig is extra dynamic configuration of the Temporal
	// dev server, KEY=JSON_VALUE each (server-wide: oncegate and the bare
	// workflow alike).
	TemporalDynamicConfig []string
	// Twin, when set, starts a second gateway and worker with its settings
	// on the same stores and Temporal server, and measures every preview,
	// replay, status and first-confirm phase on both, side by side.
	Twin *Twin
	// FloorsInline runs the HTTP floors inside the benchmark process, as
	// the benchmark did before 2026-12-02, instead of in a process of their
	// own (FloorsFlag): a floor then shares the load generator's Go runtime.
	FloorsInline bool
	// ProdStack, when set, is the stack.env of a running production-like
	// profile (scripts/prod.sh) to measure instead of starting the dev
	// stack; see openProd for what runs there and what does not.
	ProdStack string
	// Hooks act on the stack before the warm-up and after the rounds.
	Hooks Hooks
	// Log receives progress lines.
	Log io.Writer
}

// production reports whether the run measures the production-like profile
// (ProdStack) rather than the dev stack.
func (o Options) production() bool { return o.ProdStack != "" }

// Twin is the settings of the second gateway and worker: a lever measured
// against the first pair in the same rounds.
type Twin struct {
	// Name describes the lever, for the report.
	Name string
	// GatewayEnv and WorkerEnv are extra KEY=value settings.
	GatewayEnv, WorkerEnv []string
	// DatabaseURLParams and RedisURLParams are appended to its URLs (the
	// first pair's parameters are not).
	DatabaseURLParams, RedisURLParams string
	// WorkerPollers, when positive, sets its worker's pollers per task kind.
	WorkerPollers int
}

// twinSuffix marks the name of a phase served by the twin.
const twinSuffix = " [twin]"

// DefaultOptions are the settings of `make bench-e2e`.
var DefaultOptions = Options{
	Rounds:             3,
	Conns:              16,
	Duration:           5 * time.Second,
	MaxRequests:        200_000,
	FirstConfirms:      30,
	Concurrency:        10,
	ConcurrentConfirms: 60,
	Log:                io.Discard,
}

func (o Options) withDefaults() (Options, error) {
	for _, g := range o.Only {
		if !slices.Contains(Groups, g) {
			return o, fmt.Errorf("unknown group %q: want one of %v", g, Groups)
		}
	}
	d := DefaultOptions
	o.Rounds = positiveOr(o.Rounds, d.Rounds)
	o.Conns = positiveOr(o.Conns, d.Conns)
	o.Duration = positiveOr(o.Duration, d.Duration)
	o.MaxRequests = positiveOr(o.MaxRequests, d.MaxRequests)
	o.FirstConfirms = positiveOr(o.FirstConfirms, d.FirstConfirms)
	o.Concurrency = positiveOr(o.Concurrency, d.Concurrency)
	o.ConcurrentConfirms = positiveOr(o.ConcurrentConfirms, d.ConcurrentConfirms)
	if o.Log == nil {
		o.Log = d.Log
	}
	return o, nil
}

// positiveOr returns v when it is positive, else def.
func positiveOr[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// confirmPhaseLimit bounds a first-confirm phase in time.
const confirmPhaseLimit = 3 * time.Minute

// Phase names: each is one side of a comparison.
const (
	PhaseEchoPreview    = "echo-json"
	PhaseEvalshaPreview = "echo-evalsha-preview"
	PhasePGPreview      = "echo-pg-preview"
	PhasePreviewLegacy  = "preview-legacy"
	PhasePreviewQuote   = "preview-quote"
	PhaseEvalshaReplay  = "echo-evalsha-replay"
	PhaseReplay         = "replay"
	PhaseEvalshaStatus  = "echo-evalsha-status"
	PhaseStatus         = "status"
	PhaseBareSeq        = "bare-workflow-seq"
	PhaseConfirmSeq     = "first-confirm-seq"
	PhaseBareConc       = "bare-workflow-conc"
	PhaseConfirmConc    = "first-confirm-conc"
	PhaseReplayRedis    = "replay-with-redis"
	PhaseReplayPG       = "replay-postgres-only"
)

// Phase is what every round of one phase recorded.
type Phase struct {
	// Name is one of the Phase* constants.
	Name string
	// Conns is the phase's concurrency.
	Conns int
	// Merged holds every round's requests.
	Merged Sample
	// Rounds summarizes each round alone, in order.
	Rounds []Summary
	// RoundCompleted is each round's completed operations per second.
	RoundCompleted []float64
	// CPU is the CPU time each source (CPUMachine, CPUGateway, ...) used
	// during the phase's rounds, each until its operations settled.
	CPU map[string]time.Duration
	// CPUWindow is the wall time CPU was read over.
	CPUWindow time.Duration
	// Settled counts the operations that had completed when the CPU was
	// read: the completed answers, and for first confirms also those
	// answered in_progress whose workflow completed after the answer.
	Settled int
}

// CPUPerRequest is source's CPU time per answered request, or 0 when it
// was not read.
func (p *Phase) CPUPerRequest(source string) time.Duration {
	n := len(p.Merged.Latencies)
	if n == 0 {
		return 0
	}
	return p.CPU[source] / time.Duration(n)
}

// Throughput is the median of the rounds' throughputs.
func (p *Phase) Throughput() float64 {
	xs := make([]float64, len(p.Rounds))
	for i, r := range p.Rounds {
		xs[i] = r.Throughput
	}
	return Median(xs)
}

// Completed counts the answers labelled completed (first confirms) per
// second of the phase's time, over all rounds.
func (p *Phase) Completed() float64 {
	if p.Merged.Elapsed <= 0 {
		return 0
	}
	return float64(p.Merged.Outcomes[statusCompleted]) / p.Merged.Elapsed.Seconds()
}

// Results is everything one run measured.
type Results struct {
	// Options are the run's settings, defaults filled.
	Options Options
	// Started is when the measurements began; Elapsed how long they took.
	Started time.Time
	Elapsed time.Duration
	// Phases maps a phase name to its measurements.
	Phases map[string]*Phase
	// PreviewWrites are the storage writes seen across every measured
	// preview phase, and Previews the number of previews they answered.
	PreviewWrites storageWrites
	Previews      int
	// Bodies are the sizes of the answers the floors return.
	Bodies map[string]int
	// Profiles are the gateway's and the worker's CPU profiles under load.
	Profiles []Profile
	// Timelines are the event histories of one first confirm's workflow and
	// one bare workflow.
	Timelines []Timeline
	// LoadBefore and LoadAfter are /proc/loadavg at the start and the end.
	LoadBefore, LoadAfter string
	// Duplicates is the duplicate-confirms phase (nil when it did not run).
	Duplicates *Duplicates
	// Processes are the processes whose CPU time every phase read one by
	// one, with their roles.
	Processes []CPUProcess
	// IdlePerSecond is each of Processes' CPU time per second of wall time
	// while nothing ran, read over IdleWindow before the rounds.
	IdlePerSecond map[string]time.Duration
	IdleWindow    time.Duration
}

// bench is one run in progress.
type bench struct {
	opts Options
	// t is the stack measured; stack is the dev stack (nil on the
	// production-like profile), which the degraded phases stop parts of.
	t     *target
	stack *testenv.Stack
	http  *http.Client
	gw    gateway
	twin  *gateway
	// floorsURL is the HTTP floors' base URL; stopFloors stops them.
	floorsURL  string
	stopFloors func()
	temporal   client.Client
	bareTQ     string
	rdb        redis.UniversalClient
	runID      string
	seq        atomic.Int64
	replay     completed
	// unkept are the finished operations the degraded pair replays in
	// turn, more than the dev gateway keeps (unkeptReplays).
	unkept []completed
	params map[string]map[string]any
	// pprofURL and workerPprofURL are the gateway's and the worker's
	// pprof servers ("" when they have none).
	pprofURL, workerPprofURL string
	// seqConfirms and seqBares are the measured sequential first confirms
	// and bare workflows, for Timelines and Splits.
	seqConfirms, seqBares []sentOp
	res                   *Results
	record                bool
	cpu                   cpuReader
}

// Run starts the stack, runs every round and returns the results.
func Run(ctx context.Context, opts Options) (*Results, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	logf := func(f string, a ...any) { fmt.Fprintf(opts.Log, f+"\n", a...) }
	var t *target
	if opts.ProdStack != "" {
		logf("using the production-like profile of %s...", opts.ProdStack)
		t, err = openProd(opts)
	} else {
		logf("starting the stack (building the binaries, Redis, PostgreSQL, Temporal dev server)...")
		t, err = startDev(opts)
	}
	if err != nil {
		return nil, err
	}
	defer t.close()
	b := &bench{
		opts: opts, t: t, stack: t.dev, http: NewClient(opts.Conns), runID: randomHex(4),
		pprofURL: t.pprofURL, workerPprofURL: t.workerPprofURL, record: true, cpu: t.cpu,
		res: &Results{Options: opts, Phases: map[string]*Phase{}, Bodies: map[string]int{}, Processes: t.processes},
	}
	if t.httpTLS != nil {
		b.http.Transport.(*http.Transport).TLSClientConfig = t.httpTLS
	}
	if b.gw, err = newGateway(t.gatewayURLs, t.token, b.http); err != nil {
		return nil, err
	}
	b.cpu.pids[CPUBench] = os.Getpid
	if tw := opts.Twin; tw != nil {
		logf("starting the twin gateway and worker (%s)...", tw.Name)
		workerEnv := tw.WorkerEnv
		if tw.WorkerPollers > 0 {
			workerEnv = append([]string{fmt.Sprintf("%s=%d", worker.EnvPollers, tw.WorkerPollers)}, workerEnv...)
		}
		tw, err := t.dev.StartTwin(tw.DatabaseURLParams, tw.RedisURLParams, tw.GatewayEnv, workerEnv)
		if err != nil {
			return nil, fmt.Errorf("start twin: %w", err)
		}
		defer tw.Stop()
		g, err := newGateway([]string{tw.GatewayURL}, t.token, b.http)
		if err != nil {
			return nil, err
		}
		b.twin = &g
		b.cpu.pids[CPUGateway+twinSuffix] = tw.Gateway.Pid
		b.cpu.pids[CPUWorker+twinSuffix] = tw.Worker.Pid
	}
	if b.rdb, err = t.newRedis(); err != nil {
		return nil, err
	}
	defer b.rdb.Close()
	b.temporal, err = client.Dial(t.temporal.Apply(client.Options{Logger: quietLogger{}}))
	if err != nil {
		return nil, fmt.Errorf("dial temporal: %w", err)
	}
	defer b.temporal.Close()
	b.bareTQ = "bench-bare-" + b.runID
	logDir, err := os.MkdirTemp("", "oncegate-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(logDir)
	bare, err := startBareWorkerProcess(logDir, b.temporal, t.temporalEnv, b.bareTQ, opts.WorkerPollers)
	if err != nil {
		return nil, fmt.Errorf("start the bare worker: %w", err)
	}
	defer bare.Stop()
	b.cpu.pids[CPUBareWorker] = bare.Pid
	if h := opts.Hooks.Prepare; h != nil {
		if err := h(ctx, b.handle()); err != nil {
			return nil, fmt.Errorf("prepare: %w", err)
		}
	}
	if err := b.setup(ctx, logDir); err != nil {
		return nil, err
	}
	defer b.stopFloors()

	logf("warming up...")
	b.record = false
	for _, g := range b.selected() {
		for _, ph := range g {
			if err := ph.warm(ctx); err != nil {
				return nil, fmt.Errorf("warm up %s: %w", ph.name, err)
			}
		}
	}
	b.record = true
	if len(b.res.Processes) > 0 {
		logf("reading the processes' idle CPU for %s...", idleWindow)
		if err := b.readIdle(ctx); err != nil {
			return nil, err
		}
	}
	b.res.LoadBefore = loadavg()
	b.res.Started = time.Now()
	for r := range opts.Rounds {
		for _, g := range b.selected() {
			order := g
			if r%2 == 1 {
				order = reversed(g)
			}
			for _, ph := range order {
				if err := ph.run(ctx); err != nil {
					return nil, fmt.Errorf("round %d, %s: %w", r+1, ph.name, err)
				}
				p := b.res.Phases[ph.name]
				last := p.Rounds[len(p.Rounds)-1]
				logf("round %d  %-22s %8.1f/s  p50 %-10s p95 %-10s n=%d errors=%d %v", r+1, ph.name, last.Throughput,
					last.P50.Round(10*time.Microsecond), last.P95.Round(10*time.Microsecond), last.N, last.Errors, p.Merged.Outcomes)
			}
		}
	}
	b.res.Elapsed = time.Since(b.res.Started)
	b.res.LoadAfter = loadavg()
	if err := b.timelines(ctx); err != nil {
		return nil, err
	}
	if b.stack != nil {
		logf("duplicates: %d concurrent duplicate confirms of one operation in flight...", DuplicatesN)
		if b.res.Duplicates, err = b.duplicates(ctx); err != nil {
			return nil, fmt.Errorf("duplicates: %w", err)
		}
		logf("duplicates: %.1f answers/s, %.2f Temporal calls per answer, %v watchers, %v",
			b.res.Duplicates.AnswersPerSecond(), b.res.Duplicates.TemporalCallsPerAnswer(), b.res.Duplicates.Watchers, b.res.Duplicates.Outcomes)
	}
	if h := opts.Hooks.Inspect; h != nil {
		if err := h(ctx, b.handle()); err != nil {
			return nil, fmt.Errorf("inspect: %w", err)
		}
	}
	if opts.ProfileSeconds > 0 {
		logf("profiling the gateway %ds under preview and under replay load, the gateway and the worker under concurrent first confirms...", opts.ProfileSeconds)
		if err := b.profiles(ctx); err != nil {
			return nil, err
		}
	}
	return b.res, nil
}

// idleWindow is how long readIdle watches the idle stack.
const idleWindow = 10 * time.Second

// readIdle reads each process's CPU time per second while no load runs.
func (b *bench) readIdle(ctx context.Context) error {
	cpu0, start := b.cpu.read(), time.Now()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(idleWindow):
	}
	cpu, elapsed := cpuDelta(cpu0, b.cpu.read()), time.Since(start)
	b.res.IdleWindow, b.res.IdlePerSecond = elapsed, map[string]time.Duration{}
	for k, v := range cpu {
		b.res.IdlePerSecond[k] = time.Duration(float64(v) / elapsed.Seconds())
	}
	return nil
}

// setup completes the operation the replay and status phases read, samples
// the answers whose sizes the floors copy and starts the floors: in a
// process of their own (its log in logDir), or inside this one
// (Options.FloorsInline).
func (b *bench) setup(ctx context.Context, logDir string) error {
	var err error
	b.params = map[string]map[string]any{
		scopeLegacy:   transferParams("bench-preview-" + b.runID),
		scopeTransfer: transferParams("bench-quote-" + b.runID),
	}
	b.replay, err = b.gw.complete(ctx, scopeTransfer, transferParams("bench-replay-"+b.runID))
	if err != nil {
		return fmt.Errorf("complete the replayed operation: %w", err)
	}
	if b.stack != nil {
		if b.unkept, err = b.completeMany(ctx, unkeptReplays); err != nil {
			return err
		}
	}
	_, previewRaw, err := b.gw.preview(ctx, scopeLegacy, b.params[scopeLegacy])
	if err != nil {
		return err
	}
	bodies := map[string][]byte{"preview": previewRaw, "replay": b.replay.replayBody, "status": b.replay.statusBody}
	for k, v := range bodies {
		b.res.Bodies[k] = len(v)
	}
	if b.opts.FloorsInline {
		rdb, err := b.t.newRedis()
		if err != nil {
			return err
		}
		f, err := NewFloors(rdb, b.t.databaseURL, bodies, b.t.serverCert, "127.0.0.1:0")
		if err != nil {
			return err
		}
		b.floorsURL, b.stopFloors = f.URL, f.Close
		return nil
	}
	proc, url, err := startFloorsProcess(logDir, FloorsConfig{Store: b.t.store, Bodies: bodies,
		CertFile: b.t.serverCertFiles[0], KeyFile: b.t.serverCertFiles[1]}, b.http)
	if err != nil {
		return fmt.Errorf("start the floors: %w", err)
	}
	b.floorsURL, b.stopFloors = url, proc.Stop
	b.cpu.pids[CPUFloors] = proc.Pid
	return nil
}

// phase is one side of a comparison: run measures it, warm runs it briefly
// unrecorded.
type phase struct {
	name string
	run  func(ctx context.Context) error
	warm func(ctx context.Context) error
}

// Groups names the groups of comparisons a run can be limited to
// (Options.Only), in the order they run.
var Groups = []string{"preview", "replay", "status", "confirm-seq", "confirm-conc", "degraded"}

// devOnlyGroup is the group only the dev stack runs: the production-like
// profile's Redis Cluster is not stopped under load.
const devOnlyGroup = "degraded"

// selected returns the groups Options.Only keeps (all when it is empty),
// less the dev-only group on the production-like profile.
func (b *bench) selected() [][]phase {
	all := b.groups()
	var out [][]phase
	for i, name := range Groups {
		if len(b.opts.Only) > 0 && !slices.Contains(b.opts.Only, name) || name == devOnlyGroup && b.stack == nil {
			continue
		}
		out = append(out, all[i])
	}
	return out
}

// groups lists the comparisons, one per name of Groups; the sides of each
// run next to each other.
func (b *bench) groups() [][]phase {
	floorReq := func(method, path string, body []byte) Request {
		return func(ctx context.Context, _ int) (*http.Request, error) {
			return b.gw.plainRequest(ctx, b.floorsURL, method, path, body)
		}
	}
	replayBody := confirmBody(b.replay.fingerprint, b.replay.params)
	legacyPreview := previewBody(b.params[scopeLegacy])
	// sides returns a phase per gateway: the stack's, then the twin's.
	sides := func(f func(g gateway, suffix string) phase) []phase {
		out := []phase{f(b.gw, "")}
		if b.twin != nil {
			out = append(out, f(*b.twin, twinSuffix))
		}
		return out
	}
	gwThroughput := func(name string, build func(context.Context, *oncegate.Client) (*http.Request, error), check Check) func(gateway, string) phase {
		return func(g gateway, suffix string) phase {
			return b.throughput(name+suffix, HTTPOp(b.http, g.prebuilt(build), check))
		}
	}
	replay := func(ctx context.Context, c *oncegate.Client) (*http.Request, error) {
		return c.ConfirmRequest(ctx, b.replay.scope, b.replay.fingerprint, b.replay.params)
	}
	statusOf := func(ctx context.Context, c *oncegate.Client) (*http.Request, error) {
		return c.StatusRequest(ctx, b.replay.opID)
	}
	preview := []phase{
		b.throughput(PhaseEchoPreview, HTTPOp(b.http, floorReq(http.MethodPost, "/json/preview", legacyPreview), expect(http.StatusOK, statusPreviewReady))),
		b.throughput(PhaseEvalshaPreview, HTTPOp(b.http, floorReq(http.MethodPost, "/evalsha/preview", legacyPreview), expect(http.StatusOK, statusPreviewReady))),
		b.throughput(PhasePGPreview, HTTPOp(b.http, floorReq(http.MethodPost, "/pg/preview", legacyPreview), expect(http.StatusOK, statusPreviewReady))),
	}
	preview = append(preview, sides(func(g gateway, sfx string) phase { return b.previewPhase(g, PhasePreviewLegacy+sfx, scopeLegacy) })...)
	preview = append(preview, sides(func(g gateway, sfx string) phase { return b.previewPhase(g, PhasePreviewQuote+sfx, scopeTransfer) })...)
	return [][]phase{
		preview,
		append([]phase{b.throughput(PhaseEvalshaReplay, HTTPOp(b.http, floorReq(http.MethodPost, "/evalsha/replay", replayBody), expect(http.StatusOK, statusAlreadyCompleted)))},
			sides(gwThroughput(PhaseReplay, replay, expect(http.StatusOK, statusAlreadyCompleted)))...),
		append([]phase{b.throughput(PhaseEvalshaStatus, HTTPOp(b.http, floorReq(http.MethodGet, "/evalsha/status", nil), expect(http.StatusOK, statusCompleted)))},
			sides(gwThroughput(PhaseStatus, statusOf, expect(http.StatusOK, statusCompleted)))...),
		append([]phase{b.barePhase(PhaseBareSeq, 1, b.opts.FirstConfirms)},
			sides(func(g gateway, sfx string) phase {
				return b.confirmPhase(g, PhaseConfirmSeq+sfx, 1, b.opts.FirstConfirms)
			})...),
		append([]phase{b.barePhase(PhaseBareConc, b.opts.Concurrency, b.opts.ConcurrentConfirms)},
			sides(func(g gateway, sfx string) phase {
				return b.confirmPhase(g, PhaseConfirmConc+sfx, b.opts.Concurrency, b.opts.ConcurrentConfirms)
			})...),
		b.degradedPair(b.unkeptReplay()),
	}
}

// warmDuration is how long a throughput phase runs to warm up.
const warmDuration = time.Second

// measure runs l with op and records it under name when recording. With
// settle, the CPU time is read once settle returns — after the work the
// phase started has ended — and settle's count is the phase's Settled;
// without, Settled is the completed answers.
func (b *bench) measure(ctx context.Context, name string, l Load, op Op, settle func(context.Context, Sample) (int, error)) error {
	cpu0, start := b.cpu.read(), time.Now()
	s, err := l.Run(ctx, op)
	if err != nil {
		return err
	}
	settled := s.Outcomes[statusCompleted]
	if settle != nil {
		if settled, err = settle(ctx, s); err != nil {
			return err
		}
	}
	cpu, window := cpuDelta(cpu0, b.cpu.read()), time.Since(start)
	if b.twin != nil {
		foldTwinCPU(name, cpu)
	}
	if !b.record {
		return nil
	}
	p := b.res.Phases[name]
	if p == nil {
		p = &Phase{Name: name, Conns: l.Conns, CPU: map[string]time.Duration{}}
		b.res.Phases[name] = p
	}
	for k, v := range cpu {
		p.CPU[k] += v
	}
	p.CPUWindow += window
	p.Settled += settled
	p.Merged.Merge(s)
	p.Rounds = append(p.Rounds, Summarize(s))
	p.RoundCompleted = append(p.RoundCompleted, Ratio(float64(s.Outcomes[statusCompleted]), s.Elapsed.Seconds()))
	return nil
}

// foldTwinCPU folds the twin's gateway and worker into CPUGateway and
// CPUWorker of phase name when the twin served it (the twin table reads
// them there), and drops them from every other phase.
func foldTwinCPU(name string, cpu map[string]time.Duration) {
	if strings.HasSuffix(name, twinSuffix) {
		cpu[CPUGateway], cpu[CPUWorker] = cpu[CPUGateway+twinSuffix], cpu[CPUWorker+twinSuffix]
	}
	delete(cpu, CPUGateway+twinSuffix)
	delete(cpu, CPUWorker+twinSuffix)
}

// throughput is a closed-loop phase with the load generator's connections.
func (b *bench) throughput(name string, op Op) phase {
	l := Load{Conns: b.opts.Conns, Duration: b.opts.Duration, MaxRequests: b.opts.MaxRequests}
	return phase{
		name: name,
		run:  func(ctx context.Context) error { return b.measure(ctx, name, l, op, nil) },
		warm: func(ctx context.Context) error {
			w := l
			w.Duration = warmDuration
			return b.measure(ctx, name, w, op, nil)
		},
	}
}

// previewPhase is a throughput phase of previews of scope that also
// counts the storage writes they made.
func (b *bench) previewPhase(g gateway, name, scope string) phase {
	op := HTTPOp(b.http, g.prebuilt(func(ctx context.Context, c *oncegate.Client) (*http.Request, error) {
		return c.PreviewRequest(ctx, scope, b.params[scope])
	}), expect(http.StatusOK, statusPreviewReady))
	p := b.throughput(name, op)
	run := p.run
	p.run = func(ctx context.Context) error {
		if err := b.warmIndex(ctx, g, scope); err != nil {
			return err
		}
		before, err := observeStorage(ctx, b.rdb, b.t.databaseURL)
		if err != nil {
			return err
		}
		guard, err := g.guardAnswers(ctx)
		if err != nil {
			return err
		}
		if err := run(ctx); err != nil {
			return err
		}
		if err := b.logGuardAnswers(ctx, g, name, guard); err != nil {
			return err
		}
		after, err := observeStorage(ctx, b.rdb, b.t.databaseURL)
		if err != nil {
			return err
		}
		b.res.PreviewWrites.add(before, after)
		ph := b.res.Phases[name]
		b.res.Previews += ph.Rounds[len(ph.Rounds)-1].N
		return nil
	}
	return p
}

// warmConfirms is the number of first confirms of a warm-up.
const warmConfirms = 3

// barePhase runs n bare workflows, conns at a time, each to its result.
func (b *bench) barePhase(name string, conns, n int) phase {
	runN := func(ctx context.Context, n int) error {
		prefix := "bench-bare-" + randomHex(8) + "-"
		id := func(i int) string { return prefix + strconv.Itoa(i) }
		op := func(ctx context.Context, i int) (string, error) {
			params := transferParams(b.nextPayee())
			params["client_reference"] = id(i)
			raw, err := json.Marshal(params)
			if err != nil {
				return "", err
			}
			run, err := b.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id(i), TaskQueue: b.bareTQ},
				BareTransfer, BareInput{URL: b.t.downstreamURL + "/v1/transfers", Params: raw})
			if err != nil {
				return "", fmt.Errorf("start bare workflow: %w", err)
			}
			var out BareResult
			if err := run.Get(ctx, &out); err != nil {
				return "", fmt.Errorf("bare workflow %s: %w", id(i), err)
			}
			return statusCompleted, nil
		}
		if conns == 1 {
			op = b.traced(op, id, &b.seqBares)
		}
		return b.measure(ctx, name, Load{Conns: conns, Duration: confirmPhaseLimit, MaxRequests: n}, op, nil)
	}
	return phase{
		name: name,
		run:  func(ctx context.Context) error { return runN(ctx, n) },
		warm: func(ctx context.Context) error { return runN(ctx, warmConfirms) },
	}
}

// confirmPhase previews n new transfers (not measured), then confirms
// them, conns at a time: each confirm is the operation's first.
func (b *bench) confirmPhase(g gateway, name string, conns, n int) phase {
	runN := func(ctx context.Context, n int) error {
		type prepared struct {
			fp, opID string
			params   map[string]any
		}
		ready := make([]prepared, n)
		for i := range ready {
			params := transferParams(b.nextPayee())
			a, _, err := g.preview(ctx, scopeTransfer, params)
			if err != nil {
				return err
			}
			ready[i] = prepared{fp: a.Fingerprint, opID: a.OperationID, params: params}
		}
		op := HTTPOp(b.http, func(ctx context.Context, i int) (*http.Request, error) {
			return g.agent().ConfirmRequest(ctx, scopeTransfer, ready[i].fp, ready[i].params)
		}, firstConfirmCheck)
		if conns == 1 && !strings.HasSuffix(name, twinSuffix) {
			op = b.traced(op, func(i int) string { return ready[i].opID }, &b.seqConfirms)
		}
		// An operation answered in_progress still runs, and one answered
		// completed may still be recording its end: their CPU time is the
		// phase's, and must not run into the next phase.
		mark, err := b.markOperations(ctx)
		if err != nil {
			return err
		}
		settle := func(ctx context.Context, s Sample) (int, error) {
			return b.settle(ctx, mark, s.Outcomes[statusCompleted]+s.Outcomes[statusInProgress])
		}
		return b.measure(ctx, name, Load{Conns: conns, Duration: confirmPhaseLimit, MaxRequests: n}, op, settle)
	}
	return phase{
		name: name,
		run:  func(ctx context.Context) error { return runN(ctx, n) },
		warm: func(ctx context.Context) error { return runN(ctx, warmConfirms) },
	}
}

// settleTimeout bounds the wait for a phase's workflows to close.
const settleTimeout = 2 * time.Minute

// settlePoll is how often settle asks visibility how many of the phase's
// workflows have closed.
const settlePoll = 25 * time.Millisecond

// operationsQuery selects the operation workflows in visibility.
var operationsQuery = fmt.Sprintf("WorkflowType = '%s'", workflows.OperationWorkflowName)

// closedOperations is visibility's count of the operation workflows that
// had closed, and of those that completed, at one moment: the mark a
// phase's settle counts from.
type closedOperations struct{ closed, completed int64 }

// markOperations reads closedOperations. Every earlier phase settled, so
// no operation workflow it started is still running to close later.
func (b *bench) markOperations(ctx context.Context) (closedOperations, error) {
	var m closedOperations
	var err error
	if m.closed, err = b.countWorkflows(ctx, operationsQuery+" AND ExecutionStatus != 'Running'"); err != nil {
		return m, err
	}
	m.completed, err = b.countWorkflows(ctx, operationsQuery+" AND ExecutionStatus = 'Completed'")
	return m, err
}

// countWorkflows counts the namespace's workflows that query selects.
func (b *bench) countWorkflows(ctx context.Context, query string) (int64, error) {
	resp, err := b.temporal.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
		Namespace: b.t.temporal.Namespace, Query: query,
	})
	if err != nil {
		return 0, fmt.Errorf("count workflows where %s: %w", query, err)
	}
	return resp.GetCount(), nil
}

// settle waits until the n workflows a phase's answered first confirms
// started (each answer, completed or in_progress, started one) have
// closed, counted by visibility from mark, and returns how many of them
// completed. It asks visibility for two counts every settlePoll instead
// of reading each workflow's result: a result is a read of the whole
// history, several milliseconds of the Temporal server's CPU per
// operation that no agent's confirm asks for, and the phase's CPU time is
// read after settle returns.
func (b *bench) settle(ctx context.Context, mark closedOperations, n int) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	return settleFrom(ctx, b.markOperations, mark, n, settlePoll)
}

// settleFrom reads now every poll until n more workflows have closed than
// at mark, and returns how many more have completed; it gives up when ctx
// ends.
func settleFrom(ctx context.Context, now func(context.Context) (closedOperations, error),
	mark closedOperations, n int, poll time.Duration) (int, error) {
	for {
		m, err := now(ctx)
		if err != nil {
			return 0, fmt.Errorf("settle: %w", err)
		}
		if m.closed-mark.closed >= int64(n) {
			return int(m.completed - mark.completed), nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("settle: %d of the phase's %d workflows closed: %w", m.closed-mark.closed, n, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// sentOp is one sequential operation: its workflow ID, when it was sent
// and when its answer came back.
type sentOp struct {
	id             string
	sent, answered time.Time
}

// traced wraps a sequential op so that, while recording, every completed
// one is appended to into with its workflow ID (idOf) and times.
func (b *bench) traced(op Op, idOf func(i int) string, into *[]sentOp) Op {
	return func(ctx context.Context, i int) (string, error) {
		sent := time.Now()
		label, err := op(ctx, i)
		if err == nil && label == statusCompleted && b.record {
			*into = append(*into, sentOp{id: idOf(i), sent: sent, answered: time.Now()})
		}
		return label, err
	}
}

// nextPayee is a payee id no earlier operation of the run used, so that
// the amnesia guard never asks for an acknowledgement.
func (b *bench) nextPayee() string {
	return fmt.Sprintf("bench-%s-%d", b.runID, b.seq.Add(1))
}

// unkeptReplays is how many finished operations the degraded pair replays
// in turn: more than the dev gateway keeps (devFinalCache), so that,
// least recently used out first, every replay reads the store.
const unkeptReplays = devFinalCache + 32

// completeMany completes n transfers, a few at a time.
func (b *bench) completeMany(ctx context.Context, n int) ([]completed, error) {
	out := make([]completed, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := range out {
		g.Go(func() error {
			c, err := b.gw.complete(gctx, scopeTransfer, transferParams(fmt.Sprintf("bench-unkept-%s-%d", b.runID, i)))
			if err != nil {
				return fmt.Errorf("complete an unkept replay's operation: %w", err)
			}
			out[i] = c
			return nil
		})
	}
	return out, g.Wait()
}

// unkeptReplay is the op that replays the unkept operations in turn, each
// request the next one.
func (b *bench) unkeptReplay() Op {
	reqs := make([]*http.Request, len(b.unkept))
	for i, c := range b.unkept {
		r, err := b.gw.agent().ConfirmRequest(context.Background(), scopeTransfer, c.fingerprint, c.params)
		if err != nil {
			return func(context.Context, int) (string, error) { return "", err }
		}
		reqs[i] = r
	}
	next := new(atomic.Uint64)
	return HTTPOp(b.http, func(ctx context.Context, _ int) (*http.Request, error) {
		return copyOf(ctx, reqs[next.Add(1)%uint64(len(reqs))])
	}, expect(http.StatusOK, statusAlreadyCompleted))
}

// degradedMetric is the gateway's gauge of the PostgreSQL-only path.
const degradedMetric = "oncegate_idemstore_degraded"

// degradedPair is replay with Redis against replay with Redis stopped, of
// operations the gateway does not keep (op: unkeptReplay); the
// PostgreSQL-only side stops Redis, waits until the gateway runs degraded,
// measures, then restarts Redis and waits until the gateway is back on it.
func (b *bench) degradedPair(op Op) []phase {
	withRedis := b.throughput(PhaseReplayRedis, op)
	pgOnly := b.throughput(PhaseReplayPG, op)
	wrap := func(f func(context.Context) error) func(context.Context) error {
		return func(ctx context.Context) error {
			b.stack.Redis.Stop()
			if err := b.waitDegraded(ctx, op, "1"); err != nil {
				return err
			}
			ferr := f(ctx)
			if err := b.stack.Redis.Restart(); err != nil {
				return fmt.Errorf("restart redis: %w", err)
			}
			if err := b.waitDegraded(ctx, op, "0"); err != nil {
				return err
			}
			return ferr
		}
	}
	pgOnly.run, pgOnly.warm = wrap(pgOnly.run), wrap(pgOnly.warm)
	return []phase{withRedis, pgOnly}
}

// waitDegraded sends replays until the gateway's degraded gauge reads want.
func (b *bench) waitDegraded(ctx context.Context, op Op, want string) error {
	return testenv.WaitFor(ctx, 30*time.Second, func(ctx context.Context) error {
		_, _ = op(ctx, 0) // a request makes the store notice Redis's state
		got, err := metric(ctx, b.http, b.stack.GatewayURL+"/metrics", degradedMetric)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("%s is %s, want %s", degradedMetric, got, want)
		}
		return nil
	})
}

// reversed returns a reversed copy of ps.
func reversed(ps []phase) []phase {
	out := make([]phase, len(ps))
	for i, p := range ps {
		out[len(ps)-1-i] = p
	}
	return out
}

// randomHex returns n random bytes as hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// quietLogger drops the Temporal SDK's logs.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
