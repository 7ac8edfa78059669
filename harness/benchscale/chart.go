package benchscale

import (
	"fmt"
	"image/color"
	"path/filepath"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/oncegate/oncegate/harness/benche2e"
)

// series is one curve: a value per point.
type series struct {
	name  string
	value func(Point) float64
	dash  bool
}

// palette colours the curves in turn.
var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
}

// WriteCharts draws the curves over the truth's size into dir, with names
// starting with prefix, and returns the files' base names: the gateway's
// CPU per request of each path with its floor's, the first confirm's and
// the bare workflow's latency, and the truth's size.
func WriteCharts(dir, prefix string, points []Point) ([]string, error) {
	var cpu []series
	for _, path := range Paths {
		cpu = append(cpu,
			series{name: path.Name + ", gateway", value: func(pt Point) float64 { g, _ := pt.CPU(path); return micros(g) }},
			series{name: path.Name + ", floor", dash: true, value: func(pt Point) float64 { _, f := pt.CPU(path); return micros(f) }})
	}
	charts := []struct {
		file, title, y string
		curves         []series
	}{
		{prefix + "-cpu.png", "CPU per request as the truth grows", "CPU per request (µs)", cpu},
		{prefix + "-confirm.png", "First confirm latency as the truth grows", "latency (ms)", []series{
			{name: "first confirm p50", value: func(pt Point) float64 { return millis(pt.Latency(benche2e.PhaseConfirmSeq, 0.5)) }},
			{name: "first confirm p95", value: func(pt Point) float64 { return millis(pt.Latency(benche2e.PhaseConfirmSeq, 0.95)) }},
			{name: "bare workflow p50", dash: true, value: func(pt Point) float64 { return millis(pt.Latency(benche2e.PhaseBareSeq, 0.5)) }},
			{name: "bare workflow p95", dash: true, value: func(pt Point) float64 { return millis(pt.Latency(benche2e.PhaseBareSeq, 0.95)) }},
		}},
		{prefix + "-storage.png", "The truth's size", "MB (pg_total_relation_size)", []series{
			{name: "all tables", value: func(pt Point) float64 {
				var n int64
				for _, t := range pt.Tables {
					n += t.Total
				}
				return float64(n) / 1e6
			}},
			{name: "write_record", value: func(pt Point) float64 { return tableMB(pt, "write_record") }},
			{name: "budget_reservation", value: func(pt Point) float64 { return tableMB(pt, "budget_reservation") }},
		}},
	}
	var files []string
	for _, c := range charts {
		if err := lineChart(filepath.Join(dir, c.file), c.title, c.y, points, c.curves); err != nil {
			return files, err
		}
		files = append(files, c.file)
	}
	return files, nil
}

// lineChart draws curves over the points' sizes (millions of operations).
func lineChart(path, title, yLabel string, points []Point, curves []series) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "operations in the truth (millions)"
	p.Y.Label.Text = yLabel
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	for i, s := range curves {
		xys := make(plotter.XYs, len(points))
		for j, pt := range points {
			xys[j].X = float64(pt.Size) / 1e6
			xys[j].Y = s.value(pt)
		}
		l, sc, err := plotter.NewLinePoints(xys)
		if err != nil {
			return fmt.Errorf("chart %s: %w", title, err)
		}
		c := palette[(i/2)%len(palette)]
		if len(curves) <= len(palette) && !isPaired(curves) {
			c = palette[i%len(palette)]
		}
		l.Color, sc.Color = c, c
		if s.dash {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(l, sc)
		p.Legend.Add(s.name, l, sc)
	}
	p.Legend.Top = true
	p.Legend.Left = true
	if err := p.Save(8*vg.Inch, 4.5*vg.Inch, path); err != nil {
		return fmt.Errorf("chart %s: %w", title, err)
	}
	return nil
}

// isPaired reports whether curves come in (path, floor) pairs that share a
// colour: every odd one dashed.
func isPaired(curves []series) bool {
	if len(curves)%2 != 0 {
		return false
	}
	for i, s := range curves {
		if s.dash != (i%2 == 1) {
			return false
		}
	}
	return true
}

// tableMB is the named table's total size in MB at pt.
func tableMB(pt Point, name string) float64 {
	for _, t := range pt.Tables {
		if t.Name == name {
			return float64(t.Total) / 1e6
		}
	}
	return 0
}

// micros and millis are d in µs and ms.
func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
