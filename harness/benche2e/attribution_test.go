package benche2e

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/harness/testenv"
)

func TestProdProcesses(t *testing.T) {
	t.Parallel()
	names := []string{"redis-2", "temporal", "gateway-2", "postgres", "worker-1", "redis-1", "downstream", "gateway-1", "worker-2", "temporal-ui"}
	want := []CPUProcess{
		{"gateway-1", RoleOncegate}, {"gateway-2", RoleOncegate}, {"worker-1", RoleOncegate}, {"worker-2", RoleOncegate},
		{CPUBareWorker, RoleBare},
		{"downstream", RoleShared}, {"postgres", RoleShared}, {"redis-1", RoleShared}, {"redis-2", RoleShared},
		{"temporal", RoleShared}, {"temporal-ui", RoleShared},
		{CPUBench, RoleClient},
	}
	assert.Equal(t, want, stackProcesses(names, false), "the floors inside the benchmark process")
	assert.Equal(t, append(want, CPUProcess{CPUFloors, RoleFloors}), stackProcesses(names, true), "the floors in a process of their own")
}

func TestRoleOf(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]CPURole{
		// The dev stack's processes.
		CPUGateway: RoleOncegate, CPUWorker: RoleOncegate, CPUBareWorker: RoleBare,
		CPUTemporal: RoleShared, CPUPostgres: RoleShared, CPURedis: RoleShared, CPUDownstream: RoleShared,
		CPUBench: RoleClient, CPUFloors: RoleFloors,
		// The production-like profile's.
		"gateway-1": RoleOncegate, "gateway-2": RoleOncegate, "worker-1": RoleOncegate, "worker-2": RoleOncegate,
		"redis-6": RoleShared, "temporal-ui": RoleShared,
		// Not a gateway: a name that only starts like one.
		"gateway-ui": RoleShared, "workers": RoleShared,
	} {
		assert.Equal(t, want, roleOf(name), name)
	}
}

// devNames are the dev stack's servers, as devCPU names them.
var devNames = []string{CPUTemporal, CPUWorker, CPURedis, CPUGateway, CPUDownstream, CPUPostgres}

func TestDevProcesses(t *testing.T) {
	t.Parallel()
	procs := stackProcesses(devNames, true)
	assert.Equal(t, []CPUProcess{
		{CPUGateway, RoleOncegate}, {CPUWorker, RoleOncegate},
		{CPUBareWorker, RoleBare},
		{CPUDownstream, RoleShared}, {CPUPostgres, RoleShared}, {CPURedis, RoleShared}, {CPUTemporal, RoleShared},
		{CPUBench, RoleClient}, {CPUFloors, RoleFloors},
	}, procs)
	var titles []string
	for _, c := range cpuColumns(procs) {
		assert.Len(t, c.sources, 1, c.title)
		assert.Equal(t, c.title, c.sources[0], "one column per dev process, named as it")
		titles = append(titles, c.title)
	}
	assert.Equal(t, []string{CPUMachine, CPUGateway, CPUWorker, CPUBareWorker, CPUDownstream, CPUPostgres, CPURedis, CPUTemporal, CPUBench, CPUFloors}, titles)
	assert.NotContains(t, stackProcesses(devNames, false), CPUProcess{CPUFloors, RoleFloors}, "the floors inside the benchmark process")
}

func TestFoldTwinCPU(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	read := func() map[string]time.Duration {
		return map[string]time.Duration{CPUGateway: 1 * ms, CPUWorker: 2 * ms, CPUGateway + twinSuffix: 3 * ms, CPUWorker + twinSuffix: 4 * ms, CPUBareWorker: 5 * ms}
	}
	twin := read()
	foldTwinCPU(PhaseConfirmSeq+twinSuffix, twin)
	assert.Equal(t, map[string]time.Duration{CPUGateway: 3 * ms, CPUWorker: 4 * ms, CPUBareWorker: 5 * ms}, twin, "the twin served the phase")
	own := read()
	foldTwinCPU(PhaseBareSeq, own)
	assert.Equal(t, map[string]time.Duration{CPUGateway: 1 * ms, CPUWorker: 2 * ms, CPUBareWorker: 5 * ms}, own, "the bare worker stays a process of its own")
}

// cpuPhase is a phase of n answers, completed of them completed (and
// settled), with cpu.
func cpuPhase(name string, n, completed int, cpu map[string]time.Duration) *Phase {
	p := &Phase{Name: name, CPU: cpu, Settled: completed}
	for range n {
		p.Merged.Latencies = append(p.Merged.Latencies, time.Millisecond)
	}
	p.Merged.Outcomes = map[string]int{statusCompleted: completed, statusInProgress: n - completed}
	return p
}

func TestCPUComparisons(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	procs := stackProcesses([]string{"gateway-1", "worker-1", "temporal", "postgres"}, true)
	r := &Results{Processes: procs, Phases: map[string]*Phase{
		// 10 answers, 8 completed: the cost is per completed operation.
		PhaseConfirmConc: cpuPhase(PhaseConfirmConc, 10, 8, map[string]time.Duration{
			"gateway-1": 80 * ms, "worker-1": 40 * ms, "temporal": 160 * ms, "postgres": 80 * ms,
			CPUBareWorker: 800 * ms, // idle meanwhile: not oncegate's
			CPUBench:      16 * ms, CPUMachine: 9999 * ms,
			CPUFloors: 400 * ms, // idle meanwhile: neither side's
		}),
		PhaseBareConc: cpuPhase(PhaseBareConc, 10, 10, map[string]time.Duration{
			"gateway-1": 900 * ms, "worker-1": 900 * ms, // idle meanwhile: not the bare workflow's
			CPUBareWorker: 50 * ms, "temporal": 100 * ms, "postgres": 50 * ms, CPUBench: 30 * ms,
			CPUFloors: 500 * ms,
		}),
	}}
	cs := r.CPUComparisons()
	require.Len(t, cs, 1, "only the pairs measured")
	c := cs[0]
	assert.Equal(t, PhaseConfirmConc, c.Phase)
	assert.Equal(t, 8, c.Cost.Completed)
	assert.Equal(t, (10+5+20+10)*ms, c.Cost.Servers)
	assert.Equal(t, 2*ms, c.Cost.Client)
	assert.Equal(t, 100*ms, c.Cost.PerProcess[CPUBareWorker], "shown, not summed")
	assert.Equal(t, 50*ms, c.Cost.PerProcess[CPUFloors], "shown, not summed")
	assert.Equal(t, (5+10+5)*ms, c.FloorCost.Servers)
	assert.Equal(t, 3*ms, c.FloorCost.Client)
	assert.InDelta(t, 45.0/20, c.Ratio, 1e-9)
	assert.InDelta(t, 47.0/23, c.WithClient, 1e-9)

	assert.Equal(t, c.Cost.Servers, c.Cost.AboveIdle, "no idle reading: nothing taken off")

	// Idle CPU over the phase's time is taken off each serving process,
	// never below zero.
	r.IdlePerSecond = map[string]time.Duration{"temporal": 20 * ms, "postgres": 100 * ms, CPUBareWorker: 400 * ms, CPUBench: 8 * ms}
	r.Phases[PhaseConfirmConc].CPUWindow = 2 * time.Second
	r.Phases[PhaseBareConc].CPUWindow = time.Second
	c = r.CPUComparisons()[0]
	assert.Equal(t, (10+5+(160-40)/8)*ms, c.Cost.AboveIdle, "postgres: 80 ms used, 200 ms idle: 0")
	assert.Equal(t, (0+(100-20)+0)*ms/10, c.FloorCost.AboveIdle, "bare worker and postgres under their idle: 0")
	assert.Equal(t, (10+5+20+10)*ms, c.Cost.Servers, "the raw cost stays")
	assert.InDelta(t, float64(c.Cost.AboveIdle)/float64(c.FloorCost.AboveIdle), c.AboveIdle, 1e-9)

	// The operations answered in_progress that completed before the CPU
	// was read count: the CPU time of their ends is in the phase's.
	r.Phases[PhaseConfirmConc].Settled = 10
	assert.Equal(t, 10, r.CPUComparisons()[0].Cost.Completed)

	// No completed operation: no cost, no ratio.
	r.Phases[PhaseBareConc].Settled = 0
	assert.Empty(t, r.CPUComparisons())
	// No process read one by one: nothing to compare.
	assert.Nil(t, (&Results{Phases: r.Phases}).CPUComparisons())
}

func TestCPUColumns(t *testing.T) {
	t.Parallel()
	cols := cpuColumns(stackProcesses([]string{"gateway-1", "gateway-2", "worker-1", "redis-1", "redis-2", "redis-3", "postgres"}, true))
	got := map[string][]string{}
	var titles []string
	for _, c := range cols {
		got[c.title] = c.sources
		titles = append(titles, c.title)
	}
	assert.Equal(t, []string{CPUMachine, "gateway (2)", "worker", CPUBareWorker, "postgres", "redis (3)", CPUBench, CPUFloors}, titles)
	assert.Equal(t, []string{"redis-1", "redis-2", "redis-3"}, got["redis (3)"])
}

func TestProdSkipsTheDegradedGroup(t *testing.T) {
	t.Parallel()
	opts, err := Options{}.withDefaults()
	require.NoError(t, err)
	prod := &bench{opts: opts}
	assert.Len(t, prod.selected(), len(Groups)-1, "the profile's Redis Cluster is not stopped")
	dev := &bench{opts: opts, stack: &testenv.Stack{}}
	assert.Len(t, dev.selected(), len(Groups))

	prod.opts.Only, dev.opts.Only = []string{devOnlyGroup, "status"}, []string{devOnlyGroup, "status"}
	assert.Len(t, prod.selected(), 1)
	assert.Len(t, dev.selected(), 2)
}

func TestOpenProdRefusesLevers(t *testing.T) {
	t.Parallel()
	for name, o := range map[string]Options{
		"twin":          {Twin: &Twin{Name: "x"}},
		"gateway env":   {GatewayEnv: []string{"A=1"}},
		"worker env":    {WorkerEnv: []string{"A=1"}},
		"pools":         {DatabaseURLParams: "pool_max_conns=4"},
		"dynamic":       {TemporalDynamicConfig: []string{"k=1"}},
		"pprof profile": {ProfileSeconds: 5},
	} {
		o.ProdStack = filepath.Join(t.TempDir(), "stack.env") // absent: the refusal comes first
		_, err := openProd(o)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "runs as scripts/prod.sh started it", name)
	}
	_, err := openProd(Options{ProdStack: filepath.Join(t.TempDir(), "stack.env")})
	assert.ErrorContains(t, err, "stack.env", "no lever: it reads the stack.env")
}

// firstConfirms are the first-confirm phases and their bare floors, each
// process's CPU given in ms for 10 completed operations.
func firstConfirms(cpu map[string]int) map[string]*Phase {
	out := map[string]*Phase{}
	for _, name := range []string{PhaseConfirmSeq, PhaseBareSeq, PhaseConfirmConc, PhaseBareConc} {
		d := map[string]time.Duration{}
		for k, v := range cpu {
			d[k] = time.Duration(v) * time.Millisecond
		}
		out[name] = cpuPhase(name, 10, 10, d)
	}
	return out
}

func TestReportProcessCPU(t *testing.T) {
	t.Parallel()
	dev := &Results{Options: Options{Rounds: 1, Concurrency: 10}, Processes: stackProcesses(devNames, true),
		Phases: firstConfirms(map[string]int{CPUTemporal: 300, CPUGateway: 40, CPUWorker: 80, CPUBareWorker: 60, CPUPostgres: 100})}
	report := func(r *Results) string {
		var b bytes.Buffer
		require.NoError(t, WriteReport(&b, r, ReportInput{Command: "bench-e2e", Machine: Machine{CPUs: 2}}))
		return b.String()
	}
	got := report(dev)
	assert.Contains(t, got, "# Benchmarks: the cost of safety, side by side\n", "the dev stack's wording")
	assert.Contains(t, got, "- the stack: harness/testenv on free ports")
	assert.Contains(t, got, "## CPU per completed operation, process by process")
	assert.Contains(t, got, "oncegate's gateway and worker for a first confirm")
	assert.Contains(t, got, "| temporal | shared | 30.00 ms | 30.00 ms | 30.00 ms | 30.00 ms |")
	assert.Contains(t, got, "| gateway | oncegate | 4.00 ms | 4.00 ms |")
	assert.Contains(t, got, "| **servers** (shared + the side's own) | | **52.00 ms** | **46.00 ms** |", "dev: 30+10+4+8 against 30+10+6")
	assert.Contains(t, got, "| phase | machine | gateway | worker | bare worker | downstream | postgres | redis | temporal | benchmark | floors |")
	assert.Contains(t, got, "these ratios are shown, not judged")
	assert.NotContains(t, got, "CPU per completed first confirm (sequential)", "not a goal of the dev stack")
	assert.Contains(t, got, "| PostgreSQL-only replay ≥ 0.5× replay with Redis |")

	prod := *dev
	prod.Options.ProdStack = "stack.env"
	got = report(&prod)
	assert.Contains(t, got, "# Benchmarks on the production-like profile")
	assert.Contains(t, got, "oncegate's gateways and workers for a first confirm")
	assert.Contains(t, got, "| CPU per completed first confirm (sequential), every server process, ≤ 1.5× the bare workflow's | 1.13× (52.00 ms / 46.00 ms; with the client 1.13×) | yes |")
	assert.NotContains(t, got, "shown, not judged")
	assert.NotContains(t, got, "PostgreSQL-only replay", "the profile's Redis Cluster is not stopped")
}
