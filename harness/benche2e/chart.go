package benche2e

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// chartShort names the phases on the chart's axis.
var chartShort = map[string]string{
	PhaseEchoPreview:    "floor: Echo JSON",
	PhaseEvalshaPreview: "floor: Echo+EVALSHA (preview size)",
	PhasePGPreview:      "floor: Echo+PostgreSQL query",
	PhasePreviewLegacy:  "preview, no quote",
	PhasePreviewQuote:   "preview, quote",
	PhaseEvalshaReplay:  "floor: Echo+EVALSHA (replay size)",
	PhaseReplay:         "replay confirm",
	PhaseEvalshaStatus:  "floor: Echo+EVALSHA (status size)",
	PhaseStatus:         "status",
	PhaseBareSeq:        "floor: bare workflow, sequential",
	PhaseConfirmSeq:     "first confirm, sequential",
	PhaseBareConc:       "floor: bare workflow, concurrent",
	PhaseConfirmConc:    "first confirm, concurrent",
	PhaseReplayRedis:    "replay, not kept, Redis up",
	PhaseReplayPG:       "replay, not kept, PostgreSQL only",
}

// WriteChart draws the p50, p90, p95 and p99 latency of every phase on a
// log scale into a PNG at path.
func WriteChart(path string, r *Results) error {
	p := plot.New()
	p.Title.Text = "Latency percentiles per phase (log scale)"
	p.X.Label.Text = "latency (ms)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	var names []string
	for _, name := range phaseOrder {
		if r.Phases[name] != nil {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("chart: no phase measured")
	}
	// Top to bottom in the tables' order.
	labels := make([]string, len(names))
	for i, name := range names {
		labels[len(names)-1-i] = chartShort[name]
	}
	p.NominalY(labels...)
	p.Add(plotter.NewGrid())
	colors := []color.Color{
		color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
		color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
		color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
		color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	}
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}}
	lo, hi := math.Inf(1), math.Inf(-1)
	for qi, q := range Quantiles {
		pts := make(plotter.XYs, len(names))
		for i, name := range names {
			sorted := sortedLatencies(r.Phases[name].Merged.Latencies)
			pts[i].X = max(ms(Percentile(sorted, q)), 0.001)
			pts[i].Y = float64(len(names) - 1 - i)
			lo, hi = math.Min(lo, pts[i].X), math.Max(hi, pts[i].X)
		}
		s, err := plotter.NewScatter(pts)
		if err != nil {
			return fmt.Errorf("chart: %w", err)
		}
		s.GlyphStyle.Color = colors[qi]
		s.GlyphStyle.Shape = shapes[qi]
		s.GlyphStyle.Radius = vg.Points(3)
		p.Add(s)
		p.Legend.Add(fmt.Sprintf("p%.0f", q*100), s)
	}
	// Room around the extreme points, and for the legend at the bottom right.
	p.X.Min, p.X.Max = lo/1.5, hi*4
	p.Legend.Top = false
	p.Legend.Left = false
	if err := p.Save(9*vg.Inch, 5*vg.Inch, path); err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	return nil
}
