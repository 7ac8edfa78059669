package benche2e

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// phaseOf is a phase whose rounds answered n requests each in one second,
// every latency lat, labelled label.
func phaseOf(name string, lat time.Duration, label string, perRound ...int) *Phase {
	p := &Phase{Name: name, CPU: map[string]time.Duration{}}
	for _, n := range perRound {
		s := Sample{Elapsed: time.Second, Outcomes: map[string]int{label: n}}
		for range n {
			s.Latencies = append(s.Latencies, lat)
		}
		p.Merged.Merge(s)
		p.Rounds = append(p.Rounds, Summarize(s))
		p.RoundCompleted = append(p.RoundCompleted, Ratio(float64(s.Outcomes[statusCompleted]), 1))
	}
	return p
}

func TestComparisonsAndGoals(t *testing.T) {
	ms := time.Millisecond
	r := &Results{Options: Options{Concurrency: 10}, Phases: map[string]*Phase{}}
	for _, p := range []*Phase{
		phaseOf(PhaseEvalshaPreview, ms, statusPreviewReady, 100, 120),
		phaseOf(PhasePreviewLegacy, 2*ms, statusPreviewReady, 80, 60), // ratios 0.8 and 0.5
		phaseOf(PhaseEvalshaReplay, ms, statusAlreadyCompleted, 100, 100),
		phaseOf(PhaseReplay, 2*ms, statusAlreadyCompleted, 50, 50),
		phaseOf(PhaseBareSeq, 100*ms, statusCompleted, 10),
		phaseOf(PhaseConfirmSeq, 90*ms, statusCompleted, 10),
		phaseOf(PhaseBareConc, 100*ms, statusCompleted, 20),
		phaseOf(PhaseConfirmConc, 100*ms, statusCompleted, 25),
		phaseOf(PhaseReplayRedis, ms, statusAlreadyCompleted, 100),
		phaseOf(PhaseReplayPG, ms, statusAlreadyCompleted, 40),
	} {
		r.Phases[p.Name] = p
	}
	r.Phases[PhaseConfirmConc].Merged.Outcomes[statusInProgress] = 2
	r.Previews, r.PreviewWrites.Redis = 100, 1

	c, ok := find(r.Comparisons(), PhasePreviewLegacy, PhaseEvalshaPreview, MetricThroughput)
	require.True(t, ok)
	assert.InDelta(t, 70.0/110.0, c.Ratio, 1e-9, "medians of the rounds divided")
	assert.InDelta(t, 0.5, c.RoundMin, 1e-9)
	assert.InDelta(t, 0.8, c.RoundMax, 1e-9)

	met := map[string]bool{}
	for _, g := range r.Goals() {
		require.True(t, g.Known, g.Text)
		met[g.Text] = g.Met
	}
	assert.Equal(t, map[string]bool{
		"preview (no quote) ≥ 0.7× Echo + EVALSHA":                                              false,
		"replay confirm ≥ 0.7× Echo + EVALSHA":                                                  false,
		"first confirm p50 ≤ 1.0× the bare one-activity workflow":                               true,
		"first confirms at 10 concurrent ≥ 1.0× the bare workflow's throughput, no in_progress": false, // 2 in_progress
		"PostgreSQL-only replay ≥ 0.5× replay with Redis":                                       false,
		"0 storage writes per preview":                                                          false, // one Redis write
	}, met)

	var b bytes.Buffer
	require.NoError(t, WriteReport(&b, r, ReportInput{Command: "bench-e2e", Machine: Machine{CPUs: 2}}))
	assert.Contains(t, b.String(), "| preview (no quote) ≥ 0.7× Echo + EVALSHA | 0.64× | **no** |")
	assert.Contains(t, b.String(), NotesMarker)
	assert.Equal(t, NotesMarker+"\nkept\n", SplitNotes("generated\n"+NotesMarker+"\nkept\n"))
	assert.Empty(t, SplitNotes("no marker"))
}
