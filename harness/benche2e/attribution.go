package benche2e

import (
	"cmp"
	"slices"
	"time"
)

// CPURole is what a process of the stack is to the comparison of a first
// confirm with the bare workflow.
type CPURole int

// The roles, in the report's order.
const (
	// RoleOncegate is oncegate's own: the gateways and the workers.
	RoleOncegate CPURole = iota
	// RoleBare is the bare workflow's own: its worker.
	RoleBare
	// RoleShared is what both sides use: the Temporal server (and its Web
	// UI), PostgreSQL with its backends, every Redis node, the simulator.
	RoleShared
	// RoleClient is the benchmark process: the load generator and the bare
	// workflow's Temporal client (its start and result calls); the HTTP
	// floors too when they run inside it (Options.FloorsInline).
	RoleClient
	// RoleFloors is the HTTP floors' process: idle in the first-confirm
	// phases, it is shown and never summed into either side.
	RoleFloors
)

// CPUProcess is one process whose CPU time the phases read.
type CPUProcess struct {
	// Name is its component name (scripts/prod.sh's pid file on the
	// production-like profile; CPUGateway, CPUWorker, CPUTemporal,
	// CPUPostgres, CPURedis or CPUDownstream on the dev stack),
	// CPUBareWorker, CPUFloors or CPUBench.
	Name string
	// Role is what it is to the comparison.
	Role CPURole
}

// roleOf is the role of the process named name: a gateway or a worker
// (the dev stack's gateway and worker, the profile's gateway-1, worker-2)
// is oncegate's.
func roleOf(name string) CPURole {
	switch name {
	case CPUBareWorker:
		return RoleBare
	case CPUBench:
		return RoleClient
	case CPUFloors:
		return RoleFloors
	}
	if kind := processKind(name); kind == CPUGateway || kind == CPUWorker {
		return RoleOncegate
	}
	return RoleShared
}

// stackProcesses returns the stack's processes named by names, with the
// bare worker, the floors' process (when floorsOwn: they run in a process
// of their own) and the benchmark process, ordered by role, then by name.
func stackProcesses(names []string, floorsOwn bool) []CPUProcess {
	names = append(slices.Clone(names), CPUBareWorker, CPUBench)
	if floorsOwn {
		names = append(names, CPUFloors)
	}
	out := make([]CPUProcess, 0, len(names))
	for _, n := range names {
		out = append(out, CPUProcess{Name: n, Role: roleOf(n)})
	}
	slices.SortFunc(out, func(a, b CPUProcess) int {
		return cmp.Or(cmp.Compare(a.Role, b.Role), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// CPUCost is a phase's CPU time per completed operation.
type CPUCost struct {
	// Completed counts the phase's completed operations (Phase.Settled).
	Completed int
	// PerProcess is each process's CPU time per completed operation.
	PerProcess map[string]time.Duration
	// Servers is the sum over the processes that serve the phase's side:
	// the shared ones and the side's own (the other side's idle processes
	// and the benchmark process are left out).
	Servers time.Duration
	// Client is the benchmark process's share.
	Client time.Duration
	// AboveIdle is Servers less what the same processes use idle over the
	// phase's time (Results.IdlePerSecond): the work the operations made.
	AboveIdle time.Duration
}

// cpuCost divides p's CPU time by its completed operations; own is the
// role of the side p measures (RoleOncegate or RoleBare); idle is each
// process's CPU time per second when nothing runs. ok is false when no
// operation completed.
func cpuCost(p *Phase, procs []CPUProcess, own CPURole, idle map[string]time.Duration) (c CPUCost, ok bool) {
	c.Completed = p.Settled
	if c.Completed == 0 {
		return CPUCost{}, false
	}
	c.PerProcess = map[string]time.Duration{}
	for _, pr := range procs {
		d := p.CPU[pr.Name] / time.Duration(c.Completed)
		c.PerProcess[pr.Name] = d
		serves := false
		switch pr.Role {
		case RoleShared:
			serves = true
		case RoleOncegate, RoleBare:
			serves = pr.Role == own
		case RoleClient:
			c.Client += d
		case RoleFloors:
			// Idle in a first-confirm phase: neither side's.
		}
		if serves {
			c.Servers += d
			idleShare := time.Duration(float64(idle[pr.Name]) * p.CPUWindow.Seconds())
			c.AboveIdle += max(0, p.CPU[pr.Name]-idleShare) / time.Duration(c.Completed)
		}
	}
	return c, true
}

// CPUComparison is a first-confirm phase's CPU cost against the bare
// workflow's phase of the same shape.
type CPUComparison struct {
	// Path names the phases compared.
	Path string
	// Phase and FloorPhase are the phase names.
	Phase, FloorPhase string
	// Cost and FloorCost are their costs.
	Cost, FloorCost CPUCost
	// Ratio is Cost.Servers / FloorCost.Servers; WithClient the same ratio
	// with the benchmark process's share added to both sides; AboveIdle
	// the ratio of the AboveIdle costs.
	Ratio, WithClient, AboveIdle float64
}

// cpuPairs are the phases compared by CPU cost.
var cpuPairs = []struct{ path, phase, floor string }{
	{"first confirm, sequential", PhaseConfirmSeq, PhaseBareSeq},
	{"first confirm, concurrent", PhaseConfirmConc, PhaseBareConc},
}

// CPUComparisons compares the CPU cost of the first confirms with the bare
// workflow's, process by process (nil without Processes).
func (r *Results) CPUComparisons() []CPUComparison {
	if len(r.Processes) == 0 {
		return nil
	}
	var out []CPUComparison
	for _, pair := range cpuPairs {
		a, f := r.Phases[pair.phase], r.Phases[pair.floor]
		if a == nil || f == nil {
			continue
		}
		ca, okA := cpuCost(a, r.Processes, RoleOncegate, r.IdlePerSecond)
		cf, okF := cpuCost(f, r.Processes, RoleBare, r.IdlePerSecond)
		if !okA || !okF {
			continue
		}
		out = append(out, CPUComparison{Path: pair.path, Phase: pair.phase, FloorPhase: pair.floor, Cost: ca, FloorCost: cf,
			Ratio:      Ratio(float64(ca.Servers), float64(cf.Servers)),
			WithClient: Ratio(float64(ca.Servers+ca.Client), float64(cf.Servers+cf.Client)),
			AboveIdle:  Ratio(float64(ca.AboveIdle), float64(cf.AboveIdle))})
	}
	return out
}
