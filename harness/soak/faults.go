package soak

import (
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Fault kinds. The kill_* and restart_* kinds stop a component (SIGKILL,
// or a fast shutdown for PostgreSQL) and hold it down for a while; the
// others are the simulator's faults (docs/contract.md §6), set for a while or, for
// the counting ones, for a number of requests.
const (
	faultKillGateway     = "kill_gateway"
	faultKillWorker      = "kill_worker"
	faultKillDownstream  = "kill_downstream"
	faultKillRedis       = "kill_redis"
	faultFlushRedis      = "flushall_redis"
	faultRestartPostgres = "restart_postgres"
	faultRestartTemporal = "restart_temporal"
	// faultKillRedisMaster (production-like profile) kills one of the
	// Redis Cluster's current masters with SIGKILL; its replica takes over
	// and the node, started again, rejoins as a replica.
	faultKillRedisMaster = "kill_redis_master"
)

// faultKind describes how one kind is drawn and applied.
type faultKind struct {
	// name is the kind, as reports count it.
	name string
	// weight is its relative frequency in the schedule.
	weight int
	// components are the components a kill or restart may stop; the
	// schedule draws one of them.
	components []string
	// simField is the simulator fault's field.
	simField string
	// minValue and maxValue bound the simulator fault's value (0, 0 for a boolean).
	minValue, maxValue int
	// minHold and maxHold bound how long the fault lasts (0 for counting faults).
	minHold, maxHold time.Duration
	// net marks a network fault (netfaults.go): its components are hops
	// (or, for a partition, components of the stack).
	net bool
	// streams, when set, are the streams (request, reply) the schedule
	// draws one of.
	streams []string
}

// faultKinds is the whole menu. Simulator values stay within what the dev
// catalog declares of the downstream (commits at most 30s late, status
// lag at most 5s) and go past its 5s timeout where that is the point.
var faultKinds = slices.Concat([]faultKind{
	{name: faultKillGateway, weight: 2, components: []string{compGateway}, maxHold: 2 * time.Second},
	{name: faultKillWorker, weight: 2, components: []string{compWorker}, maxHold: 5 * time.Second},
	{name: faultKillDownstream, weight: 2, components: []string{compDownstream}, maxHold: 3 * time.Second},
	{name: faultKillRedis, weight: 1, components: []string{compRedis}, maxHold: 3 * time.Second},
	{name: faultFlushRedis, weight: 1},
	{name: faultRestartPostgres, weight: 1, components: []string{compPostgres}, minHold: 500 * time.Millisecond, maxHold: 3 * time.Second},
	{name: faultRestartTemporal, weight: 1, components: []string{compTemporal}, maxHold: 2 * time.Second},
}, simFaultKinds, netKinds(devHops, devParts))

// prodFaultKinds is the menu of the production-like profile: its own
// components — either gateway, either worker, a Redis master, the Temporal
// server on its PostgreSQL, PostgreSQL itself, the simulator — and every
// simulator fault. A killed Redis master stays down long enough, at times,
// for its replica to be promoted (node timeout 3 s).
var prodFaultKinds = append([]faultKind{
	{name: faultKillGateway, weight: 2, components: []string{"gateway-1", "gateway-2"}, maxHold: 2 * time.Second},
	{name: faultKillWorker, weight: 2, components: []string{"worker-1", "worker-2"}, maxHold: 5 * time.Second},
	{name: faultKillDownstream, weight: 2, components: []string{compDownstream}, maxHold: 3 * time.Second},
	{name: faultKillRedisMaster, weight: 1, minHold: time.Second, maxHold: 8 * time.Second, maxValue: 1 << 20},
	{name: faultRestartPostgres, weight: 1, components: []string{compPostgres}, minHold: 500 * time.Millisecond, maxHold: 3 * time.Second},
	{name: faultRestartTemporal, weight: 1, components: []string{compTemporal}, maxHold: 2 * time.Second},
}, simFaultKinds...)

// simFaultKinds are the simulator's faults, in both menus.
var simFaultKinds = []faultKind{
	{name: "latency_ms", weight: 1, simField: "latency_ms", minValue: 5500, maxValue: 7500, minHold: 4 * time.Second, maxHold: 12 * time.Second},
	{name: "hang_after_commit_ms", weight: 1, simField: "hang_after_commit_ms", minValue: 6000, maxValue: 8000, minHold: 4 * time.Second, maxHold: 12 * time.Second},
	{name: "status_unavailable", weight: 1, simField: "status_unavailable", minHold: 5 * time.Second, maxHold: 20 * time.Second},
	{name: "commit_delay_ms", weight: 1, simField: "commit_delay_ms", minValue: 5500, maxValue: 8000, minHold: 4 * time.Second, maxHold: 12 * time.Second},
	{name: "status_lag_ms", weight: 1, simField: "status_lag_ms", minValue: 2000, maxValue: 5000, minHold: 10 * time.Second, maxHold: 25 * time.Second},
	{name: "fail_next", weight: 1, simField: "fail_next", minValue: 1, maxValue: 5},
	{name: "fail_after_commit", weight: 1, simField: "fail_after_commit", minValue: 1, maxValue: 3},
	{name: "quote_fail_next", weight: 1, simField: "quote_fail_next", minValue: 1, maxValue: 3},
	{name: "payout_settle_ms", weight: 1, simField: "payout_settle_ms", minValue: 5000, maxValue: 20000, minHold: 10 * time.Second, maxHold: 30 * time.Second},
}

// Schedule spacing: the first fault after firstFault, then one every
// minGap to maxGap, so that the longer ones overlap.
const (
	firstFault = 3 * time.Second
	minGap     = 1500 * time.Millisecond
	maxGap     = 4500 * time.Millisecond
)

// FaultEvent is one fault of the schedule.
type FaultEvent struct {
	// At is the offset from the start of the load.
	At time.Duration `json:"at"`
	// Kind is the fault kind.
	Kind string `json:"kind"`
	// Hold is how long the component stays down or the fault lasts.
	Hold time.Duration `json:"hold,omitempty"`
	// Value is the simulator fault's value (a count or milliseconds); for
	// kill_redis_master, which of the current masters (modulo their number).
	Value int `json:"value,omitempty"`
	// Target is the component a kill or restart stops, when the kind has
	// a choice (gateway-1 or gateway-2, ...); for a network fault, its hop
	// (gateway->redis, ...) or, for a partition, its component.
	Target string `json:"target,omitempty"`
	// Stream is the stream of a network fault that has a choice:
	// upstream (the request) or downstream (the reply).
	Stream string `json:"stream,omitempty"`
}

// MarshalJSON writes the offsets and holds as durations ("4.798s").
func (ev FaultEvent) MarshalJSON() ([]byte, error) {
	out := struct {
		At     string `json:"at"`
		Kind   string `json:"kind"`
		Hold   string `json:"hold,omitempty"`
		Value  int    `json:"value,omitempty"`
		Target string `json:"target,omitempty"`
		Stream string `json:"stream,omitempty"`
	}{At: ev.At.Round(time.Millisecond).String(), Kind: ev.Kind, Value: ev.Value, Target: ev.Target, Stream: ev.Stream}
	if ev.Hold > 0 {
		out.Hold = ev.Hold.Round(time.Millisecond).String()
	}
	return json.Marshal(out)
}

// Schedule draws the dev profile's fault schedule of a run of duration d
// from seed: the same seed and duration give the same schedule.
func Schedule(seed uint64, d time.Duration) []FaultEvent { return schedule(faultKinds, seed, d) }

// schedule draws a schedule from the menu kinds. The first round has every
// kind once, in a drawn order, and then one network fault on each hop that
// the round's network faults missed, so that a short run (about two
// minutes) still injects each kind and crosses each hop; the rest are
// drawn by weight.
func schedule(kinds []faultKind, seed uint64, d time.Duration) []FaultEvent {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	total := 0
	for _, k := range kinds {
		total += k.weight
	}
	between := func(lo, hi time.Duration) time.Duration {
		return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
	}
	first := firstRound(kinds, rng)
	var out []FaultEvent
	for at := firstFault; at < d; at += between(minGap, maxGap) {
		var p pick
		if i := len(out); i < len(first) {
			p = first[i]
		} else {
			n := rng.IntN(total)
			for _, c := range kinds {
				if n < c.weight {
					p.kind = c
					break
				}
				n -= c.weight
			}
		}
		k := p.kind
		ev := FaultEvent{At: at, Kind: k.name, Target: p.target}
		if k.maxHold > 0 {
			ev.Hold = between(k.minHold, k.maxHold)
		}
		if k.maxValue > 0 {
			ev.Value = k.minValue + rng.IntN(k.maxValue-k.minValue+1)
		}
		if len(k.components) > 1 && ev.Target == "" {
			ev.Target = k.components[rng.IntN(len(k.components))]
		}
		if len(k.streams) > 0 {
			ev.Stream = k.streams[rng.IntN(len(k.streams))]
		}
		out = append(out, ev)
	}
	return out
}

// pick is a kind the schedule chose, with its target when the choice is
// made for it (the first round's network faults).
type pick struct {
	kind   faultKind
	target string
}

// firstRound is every kind once in a drawn order, the network faults on
// distinct hops, then a network fault drawn for each hop left.
func firstRound(kinds []faultKind, rng *rand.Rand) []pick {
	var hops, hopKinds []string
	byName := map[string]faultKind{}
	for _, k := range kinds {
		byName[k.name] = k
		if k.net && k.name != faultNetPartition {
			hopKinds = append(hopKinds, k.name)
			for _, h := range k.components {
				if !slices.Contains(hops, h) {
					hops = append(hops, h)
				}
			}
		}
	}
	order := rng.Perm(len(hops))
	next := 0
	var out []pick
	for _, i := range rng.Perm(len(kinds)) {
		p := pick{kind: kinds[i]}
		if slices.Contains(hopKinds, p.kind.name) && next < len(order) {
			p.target = hops[order[next]]
			next++
		}
		out = append(out, p)
	}
	for ; next < len(order); next++ {
		out = append(out, pick{kind: byName[hopKinds[rng.IntN(len(hopKinds))]], target: hops[order[next]]})
	}
	return out
}

// injector applies a schedule to a stack and counts what it applied.
type injector struct {
	s       *stack
	c       *client
	log     *slog.Logger
	simMu   sync.Mutex
	countMu sync.Mutex
	applied map[string]int
	skipped map[string]int
	// byTarget counts the network faults applied by kind and hop (or
	// component): "net_latency gateway->redis".
	byTarget map[string]int
	wg       sync.WaitGroup
}

func newInjector(s *stack, c *client, log *slog.Logger) *injector {
	return &injector{s: s, c: c, log: log, applied: map[string]int{}, skipped: map[string]int{}, byTarget: map[string]int{}}
}

// run applies each event at its time, each in its own goroutine so that
// faults overlap, until the schedule ends or ctx does; it waits for the
// faults under way.
func (in *injector) run(ctx context.Context, start time.Time, events []FaultEvent) {
	kinds := map[string]faultKind{}
	for _, k := range in.s.faults {
		kinds[k.name] = k
	}
	for _, ev := range events {
		if !sleep(ctx, time.Until(start.Add(ev.At))) {
			break
		}
		k := kinds[ev.Kind]
		in.wg.Go(func() { in.apply(ctx, k, ev) })
	}
	in.wg.Wait()
}

// apply applies one event.
func (in *injector) apply(ctx context.Context, k faultKind, ev FaultEvent) {
	ok := true
	switch {
	case k.net:
		if err := in.s.netFaults.apply(ctx, ev); err != nil {
			ok = false
			in.log.Warn("network fault not applied", "kind", ev.Kind, "target", ev.Target, "err", err)
		}
	case len(k.components) > 0:
		target := ev.Target
		if target == "" {
			target = k.components[0]
		}
		in.s.components[target].takeDown(ev.Hold)
	case k.name == faultKillRedisMaster:
		target, err := in.s.redisMaster(ev.Value)
		if ok = err == nil; ok {
			in.log.Debug("killing a Redis master", "component", target)
			in.s.components[target].takeDown(ev.Hold)
		} else {
			in.log.Info("no Redis master to kill", "err", err)
		}
	case k.name == faultFlushRedis:
		rc := in.s.newRedis()
		fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ok = rc.FlushAll(fctx).Err() == nil
		cancel()
		rc.Close()
	default:
		var value any = ev.Value
		if k.maxValue == 0 {
			value = true
		}
		ok = in.setSim(ctx, k.simField, value)
		if ok && ev.Hold > 0 {
			// The end of a fault is not optional: the final clearing
			// catches it if the simulator cannot be reached now.
			sleep(ctx, ev.Hold)
			in.setSim(context.WithoutCancel(ctx), k.simField, nil)
		}
	}
	in.countMu.Lock()
	defer in.countMu.Unlock()
	if ok {
		in.applied[ev.Kind]++
		if k.net {
			in.byTarget[ev.Kind+" "+ev.Target]++
		}
	} else {
		in.skipped[ev.Kind]++
		in.log.Info("fault skipped: its target did not answer", "kind", ev.Kind)
	}
}

// simAttempts bounds the tries to set a simulator fault while the
// simulator or its database is down.
const simAttempts = 5

// setSim sets (or, with a nil value, clears) one simulator fault, keeping
// the others: GET the current set, change one field, PUT it back.
func (in *injector) setSim(ctx context.Context, field string, value any) bool {
	in.simMu.Lock()
	defer in.simMu.Unlock()
	for range simAttempts {
		faults := map[string]any{}
		code, err := in.c.downstreamJSON(ctx, http.MethodGet, "/_sim/faults", nil, &faults)
		if err == nil && code == http.StatusOK {
			if value == nil {
				delete(faults, field)
			} else {
				faults[field] = value
			}
			code, err = in.c.downstreamJSON(ctx, http.MethodPut, "/_sim/faults", faults, nil)
			if err == nil && code < 300 {
				return true
			}
		}
		if !sleep(ctx, time.Second) {
			return false
		}
	}
	return false
}

// clearSim removes every simulator fault, trying until timeout.
func (in *injector) clearSim(timeout time.Duration) bool {
	in.simMu.Lock()
	defer in.simMu.Unlock()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		code, err := in.c.downstreamJSON(context.Background(), http.MethodDelete, "/_sim/faults", nil, nil)
		if err == nil && code < 300 {
			return true
		}
		time.Sleep(time.Second)
	}
	return false
}
