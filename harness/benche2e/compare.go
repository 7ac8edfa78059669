package benche2e

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Metric says what a comparison divides.
type Metric int

// The metrics of a comparison.
const (
	// MetricThroughput divides answers per second (median of the rounds).
	MetricThroughput Metric = iota
	// MetricCompleted divides completed operations per second.
	MetricCompleted
	// MetricP50 and MetricP95 divide latency percentiles (lower is better).
	MetricP50
	MetricP95
)

// Comparison is one row of the report: oncegate's phase against its floor.
type Comparison struct {
	// Path names the oncegate path; Floor the baseline.
	Path, Floor string
	// Phase and FloorPhase are the phase names compared.
	Phase, FloorPhase string
	// Metric is what is divided.
	Metric Metric
	// Value and FloorValue are the compared numbers (per second or ms).
	Value, FloorValue float64
	// Ratio is Value/FloorValue; RoundMin and RoundMax the range of the
	// same ratio taken round by round.
	Ratio, RoundMin, RoundMax float64
}

// comparisons lists what the report compares, in its order.
var comparisons = []struct {
	path, floor, phase, floorPhase string
	metric                         Metric
}{
	{"preview, payments.legacy_transfer (no quote)", "bare Echo JSON handler", PhasePreviewLegacy, PhaseEchoPreview, MetricThroughput},
	{"preview, payments.legacy_transfer (no quote)", "Echo + one EVALSHA", PhasePreviewLegacy, PhaseEvalshaPreview, MetricThroughput},
	{"preview, payments.legacy_transfer (no quote)", "Echo + the amnesia guard's PostgreSQL query", PhasePreviewLegacy, PhasePGPreview, MetricThroughput},
	{"floor: Echo + the amnesia guard's PostgreSQL query", "Echo + one EVALSHA", PhasePGPreview, PhaseEvalshaPreview, MetricThroughput},
	{"preview, payments.transfer (with a quote)", "bare Echo JSON handler", PhasePreviewQuote, PhaseEchoPreview, MetricThroughput},
	{"preview, payments.transfer (with a quote)", "Echo + one EVALSHA", PhasePreviewQuote, PhaseEvalshaPreview, MetricThroughput},
	{"replay confirm (already completed)", "Echo + one EVALSHA", PhaseReplay, PhaseEvalshaReplay, MetricThroughput},
	{"status", "Echo + one EVALSHA", PhaseStatus, PhaseEvalshaStatus, MetricThroughput},
	{"replay confirm, not kept by the gateway (the store read)", "Echo + one EVALSHA", PhaseReplayRedis, PhaseEvalshaReplay, MetricThroughput},
	{"first confirm, sequential", "bare one-activity workflow", PhaseConfirmSeq, PhaseBareSeq, MetricP50},
	{"first confirm, sequential", "bare one-activity workflow", PhaseConfirmSeq, PhaseBareSeq, MetricP95},
	{"first confirm, concurrent", "bare one-activity workflow", PhaseConfirmConc, PhaseBareConc, MetricCompleted},
	{"replay with Redis stopped (PostgreSQL only)", "replay with Redis", PhaseReplayPG, PhaseReplayRedis, MetricThroughput},
}

// value is p's number for metric over all rounds.
func value(p *Phase, m Metric) float64 {
	s := Summarize(p.Merged)
	switch m {
	case MetricCompleted:
		return p.Completed()
	case MetricP50:
		return ms(s.P50)
	case MetricP95:
		return ms(s.P95)
	case MetricThroughput:
	}
	return p.Throughput()
}

// roundValue is p's number for metric in round i.
func roundValue(p *Phase, m Metric, i int) float64 {
	r := p.Rounds[i]
	switch m {
	case MetricCompleted:
		return p.RoundCompleted[i]
	case MetricThroughput:
		return r.Throughput
	case MetricP50:
		return ms(r.P50)
	case MetricP95:
		return ms(r.P95)
	}
	return math.NaN()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// compare divides a's metric by f's, over all rounds and round by round.
func compare(path, floor string, a, f *Phase, m Metric) Comparison {
	c := Comparison{Path: path, Floor: floor, Phase: a.Name, FloorPhase: f.Name, Metric: m,
		Value: value(a, m), FloorValue: value(f, m), RoundMin: math.Inf(1), RoundMax: math.Inf(-1)}
	c.Ratio = Ratio(c.Value, c.FloorValue)
	for i := range min(len(a.Rounds), len(f.Rounds)) {
		x := Ratio(roundValue(a, m, i), roundValue(f, m, i))
		c.RoundMin, c.RoundMax = math.Min(c.RoundMin, x), math.Max(c.RoundMax, x)
	}
	return c
}

// Comparisons computes the report's rows from the phases measured.
func (r *Results) Comparisons() []Comparison {
	var out []Comparison
	for _, c := range comparisons {
		a, f := r.Phases[c.phase], r.Phases[c.floorPhase]
		if a == nil || f == nil {
			continue
		}
		out = append(out, compare(c.path, c.floor, a, f, c.metric))
	}
	return out
}

// Goal is one of issue 12's goals with what this run measured.
type Goal struct {
	// Text states the goal.
	Text string
	// Measured is the number the goal is judged by, as the report shows it.
	Measured string
	// Met reports whether the run met it; Known is false when the run
	// did not measure it.
	Met, Known bool
}

// find returns the comparison of phase against floorPhase by metric.
func find(cs []Comparison, phase, floorPhase string, m Metric) (Comparison, bool) {
	for _, c := range cs {
		if c.Phase == phase && c.FloorPhase == floorPhase && c.Metric == m {
			return c, true
		}
	}
	return Comparison{}, false
}

// maxCPURatio is issue 23's bound of a first confirm's CPU time (every
// server process of the production-like profile) over the bare workflow's.
const maxCPURatio = 1.5

// Goals judges the goals of issues 12 and 23 by this run.
func (r *Results) Goals() []Goal {
	cs := r.Comparisons()
	ratioGoal := func(text, phase, floor string, m Metric, atLeast, atMost float64) Goal {
		c, ok := find(cs, phase, floor, m)
		if !ok {
			return Goal{Text: text, Measured: "not measured in this run"}
		}
		met := c.Ratio >= atLeast && c.Ratio <= atMost
		return Goal{Text: text, Measured: fmt.Sprintf("%.2f×", c.Ratio), Met: met, Known: true}
	}
	inf := math.Inf(1)
	goals := []Goal{
		ratioGoal("preview (no quote) ≥ 0.7× Echo + EVALSHA", PhasePreviewLegacy, PhaseEvalshaPreview, MetricThroughput, 0.7, inf),
		ratioGoal("replay confirm ≥ 0.7× Echo + EVALSHA", PhaseReplay, PhaseEvalshaReplay, MetricThroughput, 0.7, inf),
		ratioGoal("first confirm p50 ≤ 1.0× the bare one-activity workflow", PhaseConfirmSeq, PhaseBareSeq, MetricP50, 0, 1.0),
	}
	conc := ratioGoal(fmt.Sprintf("first confirms at %d concurrent ≥ 1.0× the bare workflow's throughput, no in_progress", r.Options.Concurrency),
		PhaseConfirmConc, PhaseBareConc, MetricCompleted, 1.0, inf)
	if p := r.Phases[PhaseConfirmConc]; p != nil {
		n := p.Merged.Outcomes[statusInProgress]
		conc.Measured += fmt.Sprintf(", %d in_progress of %d", n, len(p.Merged.Latencies))
		conc.Met = conc.Met && n == 0
	}
	goals = append(goals, conc)
	if r.Options.production() {
		goals = append(goals, r.cpuGoals()...)
	} else {
		// The production-like profile does not stop its Redis Cluster.
		goals = append(goals, ratioGoal("PostgreSQL-only replay ≥ 0.5× replay with Redis", PhaseReplayPG, PhaseReplayRedis, MetricThroughput, 0.5, inf))
	}
	w := Goal{Text: "0 storage writes per preview", Measured: "not measured in this run"}
	if r.Previews > 0 {
		w.Known = true
		w.Met = r.PreviewWrites.Redis == 0 && !r.PreviewWrites.TruthChanged
		w.Measured = fmt.Sprintf("%d previews: %d Redis write commands, truth changed: %v", r.Previews, r.PreviewWrites.Redis, r.PreviewWrites.TruthChanged)
	}
	return append(goals, w)
}

// cpuGoals judges issue 23's bound of the CPU per completed first confirm,
// a goal of the production-like profile only: on the dev stack the same
// ratios are shown (writeProcessCPU), not judged.
func (r *Results) cpuGoals() []Goal {
	var out []Goal
	for _, c := range r.CPUComparisons() {
		out = append(out, Goal{
			Text:     fmt.Sprintf("CPU per completed first confirm (%s), every server process, ≤ %.1f× the bare workflow's", strings.TrimPrefix(c.Path, "first confirm, "), maxCPURatio),
			Measured: fmt.Sprintf("%.2f× (%.2f ms / %.2f ms; with the client %.2f×)", c.Ratio, ms(c.Cost.Servers), ms(c.FloorCost.Servers), c.WithClient),
			Met:      c.Ratio <= maxCPURatio, Known: true,
		})
	}
	return out
}

// twinPhases are the phases a twin serves too, with the metric that
// compares them.
var twinPhases = []struct {
	phase  string
	metric Metric
}{
	{PhasePreviewLegacy, MetricThroughput},
	{PhasePreviewQuote, MetricThroughput},
	{PhaseReplay, MetricThroughput},
	{PhaseStatus, MetricThroughput},
	{PhaseConfirmSeq, MetricP50},
	{PhaseConfirmSeq, MetricP95},
	{PhaseConfirmConc, MetricCompleted},
}

// TwinComparisons compares each phase the twin served with the stack's own
// gateway and worker: Value is the twin's, FloorValue the stack's.
func (r *Results) TwinComparisons() []Comparison {
	var out []Comparison
	for _, t := range twinPhases {
		a, tw := r.Phases[t.phase], r.Phases[t.phase+twinSuffix]
		if a == nil || tw == nil {
			continue
		}
		out = append(out, compare(phaseTitles[t.phase], "", tw, a, t.metric))
	}
	return out
}
