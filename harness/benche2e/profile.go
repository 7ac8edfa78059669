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

// Profile is the top of one CPU profile of a process under load.
type Profile struct {
	// Process is the profiled process (CPUGateway or CPUWorker).
	Process string
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

// confirmProfileFactor lengthens the profiles under first confirms: a
// first confirm costs the gateway and the worker milliseconds, not
// microseconds, and their processes sit mostly idle at the phase's
// concurrency, so the same seconds would sample too few of them.
const confirmProfileFactor = 3

// pprofTarget is a process whose CPU a profile samples, by its pprof
// server's base URL.
type pprofTarget struct{ process, url string }

// profiles captures the gateway's CPU profile under preview and under
// replay load, and the gateway's and the worker's under first confirms at
// the phase's concurrency.
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
	gateway := []pprofTarget{{CPUGateway, b.pprofURL}}
	for _, name := range []string{PhasePreviewLegacy, PhaseReplay} {
		if name == PhasePreviewLegacy {
			// The profile is of the steady state, as the phase's numbers are.
			if err := b.warmIndex(ctx, b.gw, scopeLegacy); err != nil {
				return fmt.Errorf("profile %s: %w", name, err)
			}
		}
		ps, err := b.profileUnder(ctx, name, b.opts.ProfileSeconds, loads[name].warm, gateway)
		if err != nil {
			return fmt.Errorf("profile %s: %w", name, err)
		}
		b.res.Profiles = append(b.res.Profiles, ps...)
	}
	if b.workerPprofURL == "" {
		return nil
	}
	// Whole batches of the phase, each previewed first (its previews are
	// in the gateway's profile, a few percent of it) and settled after.
	confirms := loads[PhaseConfirmConc].run
	ps, err := b.profileUnder(ctx, PhaseConfirmConc, confirmProfileFactor*b.opts.ProfileSeconds, confirms,
		append(gateway, pprofTarget{CPUWorker, b.workerPprofURL}))
	if err != nil {
		return fmt.Errorf("profile %s: %w", PhaseConfirmConc, err)
	}
	b.res.Profiles = append(b.res.Profiles, ps...)
	return nil
}

// profileUnder runs load again and again, unrecorded, while each of procs
// records a CPU profile of secs, and returns their profiles in procs'
// order.
func (b *bench) profileUnder(ctx context.Context, name string, secs int, load func(context.Context) error, procs []pprofTarget) ([]Profile, error) {
	raws := make([][]byte, len(procs))
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	lctx, stop := context.WithCancel(ctx)
	for i, pt := range procs {
		wg.Go(func() {
			raws[i], errs[i] = fetch(ctx, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", pt.url, secs), time.Duration(secs+30)*time.Second)
		})
	}
	go func() { wg.Wait(); stop() }()
	for lctx.Err() == nil {
		if err := load(lctx); err != nil && lctx.Err() == nil {
			stop()
			wg.Wait()
			return nil, err
		}
	}
	wg.Wait()
	out := make([]Profile, len(procs))
	for i, pt := range procs {
		if errs[i] != nil {
			return nil, fmt.Errorf("%s: %w", pt.process, errs[i])
		}
		pr, err := b.readProfile(pt.process, name, secs, raws[i])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", pt.process, err)
		}
		out[i] = pr
	}
	return out, nil
}

// readProfile saves raw, process's CPU profile of secs under name's load,
// in opts.ProfileDir (when set) and reduces it to its top and its areas.
func (b *bench) readProfile(process, name string, secs int, raw []byte) (Profile, error) {
	out := Profile{Process: process, Name: name, Seconds: secs}
	if b.opts.ProfileDir != "" {
		if err := os.MkdirAll(b.opts.ProfileDir, 0o755); err != nil {
			return Profile{}, err
		}
		out.Path = filepath.Join(b.opts.ProfileDir, process+"-"+name+".pprof")
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
