package soak

import (
	"flag"
	"fmt"
	"io"
	"strconv"
)

// DefaultOutDir is where cmd/soak writes its reports.
const DefaultOutDir = ".run/soak"

// Options are the command line of cmd/soak: a Config and where to write
// the report.
type Options struct {
	Config
	// OutDir receives soak-<seed>.json and soak-<seed>.md (SOAK_OUT).
	OutDir string
}

// ParseOptions reads the options from the environment (SOAK_PROFILE,
// SOAK_DURATION, SOAK_SEED, SOAK_AGENTS, SOAK_MAX_REQUESTS, SOAK_SETTLE,
// SOAK_OUT) and
// then from the flags of the same names in args, which win.
func ParseOptions(args []string, getenv func(string) string, stderr io.Writer) (Options, error) {
	var o Options
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var seed string
	fs.StringVar(&o.Profile, "profile", ProfileDev, "the stack: dev (started for the run) or prod (the production-like profile, scripts/prod.sh) (SOAK_PROFILE)")
	fs.DurationVar(&o.Duration, "duration", DefaultDuration, "how long agents run and faults are injected (SOAK_DURATION)")
	fs.StringVar(&seed, "seed", "", "seed of the fault schedule and the agents; empty draws one (SOAK_SEED)")
	fs.IntVar(&o.Agents, "agents", DefaultAgents, "number of scripted agents (SOAK_AGENTS)")
	fs.Int64Var(&o.MaxRequests, "max-requests", DefaultMaxRequests, "no episode starts after this many gateway requests (SOAK_MAX_REQUESTS)")
	fs.DurationVar(&o.SettleTimeout, "settle", DefaultSettleTimeout, "bound for every operation to settle once the faults stop (SOAK_SETTLE)")
	fs.StringVar(&o.OutDir, "out", DefaultOutDir, "folder of the JSON and markdown reports (SOAK_OUT)")
	fs.BoolVar(&o.KeepDir, "keep", false, "keep the run's folder (logs, data) even without violations")
	for name, env := range map[string]string{
		"profile": "SOAK_PROFILE", "duration": "SOAK_DURATION", "seed": "SOAK_SEED", "agents": "SOAK_AGENTS",
		"max-requests": "SOAK_MAX_REQUESTS", "settle": "SOAK_SETTLE", "out": "SOAK_OUT",
	} {
		if v := getenv(env); v != "" {
			if err := fs.Set(name, v); err != nil {
				return o, fmt.Errorf("%s=%q: %w", env, v, err)
			}
		}
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if seed != "" {
		n, err := strconv.ParseUint(seed, 10, 64)
		if err != nil || n == 0 {
			return o, fmt.Errorf("seed %q: want a positive integer", seed)
		}
		o.Seed = n
	}
	if o.Profile != ProfileDev && o.Profile != ProfileProd {
		return o, fmt.Errorf("profile %q: want %s or %s", o.Profile, ProfileDev, ProfileProd)
	}
	if o.Duration <= 0 || o.Agents <= 0 || o.MaxRequests <= 0 || o.SettleTimeout <= 0 {
		return o, fmt.Errorf("duration, agents, max-requests and settle must be positive")
	}
	return o, nil
}
