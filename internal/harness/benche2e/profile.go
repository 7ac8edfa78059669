package benche2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/google/pprof/profile"
)

// Frame is one function of a CPU profile with its share of the samples.
type Frame struct {
	// Function is the function's name.
	Function string
	// Flat is the share of CPU time spent in the function itself, Cum in
	// it and everything it called (0..1).
	Flat, Cum float64
}

// Profile is the top of one CPU profile of the gateway under load.
type Profile struct {
	// Name is the load's phase.
	Name string
	// Path is where the raw profile was saved (empty when not saved).
	Path string
	// Seconds is the profile's length; CPUSeconds the CPU time it sampled.
	Seconds    int
	CPUSeconds float64
	// Flat are the functions with most self time; Cum those with most
	// cumulative time.
	Flat, Cum []Frame
	// Areas attribute every sample to one part of the code (areas.go).
	Areas []Area
}

// topFrames is the number of frames a report lists per profile.
const topFrames = 12

// profiles captures the gateway's CPU profile under preview and under replay load.
func (b *bench) profiles(ctx context.Context) error {
	groups := b.groups()
	loads := map[string]phase{}
	for _, g := range groups {
		for _, ph := range g {
			loads[ph.name] = ph
		}
	}
	b.record = false
	defer func() { b.record = true }()
	for _, name := range []string{PhasePreviewLegacy, PhaseReplay} {
		if name == PhasePreviewLegacy {
			// The profile is of the steady state, as the phase's numbers are.
			if err := b.warmIndex(ctx, b.gw, scopeLegacy); err != nil {
				return fmt.Errorf("profile %s: %w", name, err)
			}
		}
		p, err := b.profileUnder(ctx, name, loads[name])
		if err != nil {
			return fmt.Errorf("profile %s: %w", name, err)
		}
		b.res.Profiles = append(b.res.Profiles, p)
	}
	return nil
}

// profileUnder runs ph's load, unrecorded, while the gateway records a CPU
// profile of opts.ProfileSeconds.
func (b *bench) profileUnder(ctx context.Context, name string, ph phase) (Profile, error) {
	secs := b.opts.ProfileSeconds
	var (
		raw  []byte
		perr error
		wg   sync.WaitGroup
	)
	lctx, stop := context.WithCancel(ctx)
	wg.Go(func() {
		defer stop()
		raw, perr = fetch(ctx, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", b.pprofURL, secs), time.Duration(secs+30)*time.Second)
	})
	for lctx.Err() == nil {
		if err := ph.warm(lctx); err != nil && lctx.Err() == nil {
			wg.Wait()
			return Profile{}, err
		}
	}
	wg.Wait()
	if perr != nil {
		return Profile{}, perr
	}
	out := Profile{Name: name, Seconds: secs}
	if b.opts.ProfileDir != "" {
		if err := os.MkdirAll(b.opts.ProfileDir, 0o755); err != nil {
			return Profile{}, err
		}
		out.Path = filepath.Join(b.opts.ProfileDir, "gateway-"+name+".pprof")
		if err := os.WriteFile(out.Path, raw, 0o644); err != nil {
			return Profile{}, err
		}
	}
	p, err := profile.Parse(bytes.NewReader(raw))
	if err != nil {
		return Profile{}, fmt.Errorf("parse profile: %w", err)
	}
	out.CPUSeconds, out.Flat, out.Cum = top(p, topFrames)
	out.Areas = areas(p)
	return out, nil
}

// top reduces a CPU profile to its total CPU seconds and the n functions
// with most self and most cumulative time. A function recursing counts once
// per sample in its cumulative time.
func top(p *profile.Profile, n int) (float64, []Frame, []Frame) {
	idx := len(p.SampleType) - 1 // cpu nanoseconds, after the sample count
	flat, cum := map[string]int64{}, map[string]int64{}
	var total int64
	for _, s := range p.Sample {
		v := s.Value[idx]
		total += v
		seen := map[string]bool{}
		for li, loc := range s.Location {
			for lj, line := range loc.Line {
				if line.Function == nil {
					continue
				}
				fn := line.Function.Name
				if li == 0 && lj == 0 {
					flat[fn] += v
				}
				if !seen[fn] {
					seen[fn] = true
					cum[fn] += v
				}
			}
		}
	}
	rank := func(m map[string]int64) []Frame {
		out := make([]Frame, 0, len(m))
		for fn := range m {
			out = append(out, Frame{Function: fn, Flat: share(flat[fn], total), Cum: share(cum[fn], total)})
		}
		slices.SortFunc(out, func(a, b Frame) int {
			x, y := m[a.Function], m[b.Function]
			switch {
			case x != y:
				if x > y {
					return -1
				}
				return 1
			case a.Function < b.Function:
				return -1
			default:
				return 1
			}
		})
		return out[:min(n, len(out))]
	}
	return float64(total) / 1e9, rank(flat), rank(cum)
}

func share(v, total int64) float64 {
	if total == 0 {
		return 0
	}
	return float64(v) / float64(total)
}

// fetch GETs url with a timeout and returns the body of a 200.
func fetch(ctx context.Context, url string, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d: %.200s", url, resp.StatusCode, raw)
	}
	return raw, nil
}
