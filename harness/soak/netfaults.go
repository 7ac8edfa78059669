package soak

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/oncegate/oncegate/harness/netfault"
)

// Network fault kinds: Toxiproxy toxics on one hop of the stack (or, for a
// partition, on every hop to or from one component), set for a while.
const (
	// faultNetLatency delays a hop's replies by a share of the hop's
	// timeout, with jitter: up to twice it.
	faultNetLatency = "net_latency"
	// faultNetBandwidth limits a hop's replies to a few KB/s.
	faultNetBandwidth = "net_bandwidth"
	// faultNetBlackhole drops what the client sends (Toxiproxy's timeout
	// toxic), closing the connection after Value ms (0: never).
	faultNetBlackhole = "net_timeout"
	// faultNetReset resets the connection (TCP RST) Value ms after data
	// arrives: on the request stream before the server has it, on the
	// reply stream after the server answered.
	faultNetReset = "net_reset_peer"
	// faultNetSlowClose holds a connection's close for Value ms.
	faultNetSlowClose = "net_slow_close"
	// faultNetLimitData cuts every reply after Value bytes and closes the
	// connection: the request reached the server, its answer is lost (a
	// claim script, a COMMIT, a workflow start, a downstream call, a
	// finalize, by hop).
	faultNetLimitData = "net_limit_data"
	// faultNetPartition drops everything on every hop to or from one
	// component, longer than its timeouts.
	faultNetPartition = "net_partition"
	// faultNetFlap partitions one hop and heals it again, every few
	// hundred milliseconds, for a while.
	faultNetFlap = "net_flap"
)

// devHops are the dev profile's hops (testenv.ProxyHops makes them).
var devHops = []string{
	netfault.GatewayRedis, netfault.GatewayPostgres, netfault.GatewayTemporal,
	netfault.WorkerRedis, netfault.WorkerPostgres, netfault.WorkerTemporal, netfault.WorkerDownstream,
	netfault.WebhookGateway, netfault.AgentsGateway,
}

// agents is the agents' end of their hops to the gateways (no component:
// never partitioned by itself, never killed).
const agents = "agents"

// devParts are the hops a partition of each dev component cuts.
var devParts = hopsOf(devHops, compRedis, compPostgres, compTemporal, compDownstream, compGateway, compWorker)

// netKinds is the network part of a profile's menu: hops are the profile's
// hops (the targets of every kind but the partition), parts its
// components (each with the hops a partition cuts).
func netKinds(hops []string, parts map[string][]string) []faultKind {
	components := slices.Sorted(maps.Keys(parts))
	streams := []string{netfault.Upstream, netfault.Downstream}
	return []faultKind{
		{name: faultNetLatency, weight: 1, components: hops, minValue: 10, maxValue: 150, minHold: 4 * time.Second, maxHold: 12 * time.Second, net: true},
		{name: faultNetBandwidth, weight: 1, components: hops, minValue: 1, maxValue: 64, minHold: 4 * time.Second, maxHold: 12 * time.Second, net: true},
		{name: faultNetBlackhole, weight: 1, components: hops, minValue: 0, maxValue: 5000, minHold: 2 * time.Second, maxHold: 8 * time.Second, net: true},
		{name: faultNetReset, weight: 1, components: hops, streams: streams, minValue: 0, maxValue: 1000, minHold: 2 * time.Second, maxHold: 8 * time.Second, net: true},
		{name: faultNetSlowClose, weight: 1, components: hops, minValue: 500, maxValue: 5000, minHold: 4 * time.Second, maxHold: 12 * time.Second, net: true},
		{name: faultNetLimitData, weight: 2, components: hops, minValue: 0, maxValue: 256, minHold: time.Second, maxHold: 6 * time.Second, net: true},
		{name: faultNetPartition, weight: 1, components: components, minHold: 6 * time.Second, maxHold: 20 * time.Second, net: true},
		{name: faultNetFlap, weight: 1, components: hops, minValue: 200, maxValue: 1500, minHold: 5 * time.Second, maxHold: 15 * time.Second, net: true},
	}
}

// hopTimeout is the timeout that matters on a hop, by the server it
// reaches: the latency fault draws a share of it (docs/reliability.md).
func hopTimeout(hop string) time.Duration {
	_, to, _ := strings.Cut(hop, "->")
	switch {
	case strings.HasPrefix(to, "redis"):
		return 150 * time.Millisecond // combined.DefaultRedisBudget: past it the store degrades
	case to == "postgres":
		return 2 * time.Second // the confirm's wait (ONCEGATE_CONFIRM_WAIT)
	case to == "temporal":
		return 10 * time.Second // the gateway's start and describe calls
	case to == "downstream":
		return 5 * time.Second // the dev catalog's downstream timeout
	case strings.HasPrefix(hop, agents+"->"):
		return requestTimeout // the agents' own client timeout
	}
	return 10 * time.Second // a webhook's delivery
}

// netFaults applies the network fault kinds to a stack's hops and counts
// them by hop.
type netFaults struct {
	net   *netfault.Net
	parts map[string][]string
	// ready, when set, reports whether every gateway is ready with its
	// fast path in use (GET /readyz: 200, "redis":"ok"): what converged
	// means after a fault healed.
	ready func(context.Context) bool
	mu    sync.Mutex
	// longest is the longest time from a fault's healing to ready, and
	// longestFault the fault ("kind target at offset").
	longest      time.Duration
	longestFault string
	// busy are the hops a fault holds.
	busy map[string]bool
}

// converged measures, after ev healed, how long until the stack is ready
// again (bounded by convergeBound), and keeps the longest.
func (n *netFaults) converged(ctx context.Context, ev FaultEvent) {
	if n.ready == nil {
		return
	}
	healed := time.Now()
	for time.Since(healed) < convergeBound && ctx.Err() == nil && !n.ready(ctx) {
		sleep(ctx, 100*time.Millisecond)
	}
	d := time.Since(healed)
	n.mu.Lock()
	defer n.mu.Unlock()
	if d > n.longest {
		n.longest, n.longestFault = d, fmt.Sprintf("%s %s at %s", ev.Kind, ev.Target, ev.At.Round(time.Millisecond))
	}
}

// convergeBound bounds the wait for readiness after a fault healed.
const convergeBound = time.Minute

// apply sets ev on its hop (or component) for ev.Hold and heals it after;
// it reports whether it could.
func (n *netFaults) apply(ctx context.Context, ev FaultEvent) error {
	if ev.Kind == faultNetPartition {
		hops := n.parts[ev.Target]
		var hs []*netfault.Hop
		for _, name := range hops {
			h, err := n.net.Hop(name)
			if err != nil {
				return err
			}
			hs = append(hs, h)
		}
		if !n.awaitTake(ctx, hops) {
			return errHopBusy
		}
		defer n.release(hops)
		defer resetAll(hs)
		for _, h := range hs {
			if _, err := h.Partition(toxicName(ev)); err != nil {
				return err
			}
		}
		sleep(ctx, ev.Hold)
		resetAll(hs)
		n.converged(ctx, ev)
		return nil
	}
	h, err := n.net.Hop(ev.Target)
	if err != nil {
		return err
	}
	if !n.awaitTake(ctx, []string{ev.Target}) {
		return errHopBusy
	}
	defer n.release([]string{ev.Target})
	if ev.Kind == faultNetFlap {
		err = flap(ctx, h, toxicName(ev), time.Duration(ev.Value)*time.Millisecond, ev.Hold)
	} else {
		if err := h.Add(toxicOf(ev)); err != nil {
			resetAll([]*netfault.Hop{h})
			return err
		}
		sleep(ctx, ev.Hold)
		resetAll([]*netfault.Hop{h})
	}
	n.converged(ctx, ev)
	return err
}

// left lists the toxics still on a hop ("hop: name"): none once every
// fault has ended.
func (n *netFaults) left() []string {
	var out []string
	for _, name := range n.net.Names() {
		h, _ := n.net.Hop(name) // listed
		for _, t := range h.Toxics() {
			out = append(out, name+": "+t)
		}
	}
	return out
}

// resetHops heals every hop with a fresh proxy.
func (n *netFaults) resetHops() {
	for _, name := range n.net.Names() {
		h, _ := n.net.Hop(name) // listed
		resetAll([]*netfault.Hop{h})
	}
}

// toxicOf is the toxic of a fault event on one hop.
func toxicOf(ev FaultEvent) netfault.Toxic {
	t := netfault.Toxic{Name: toxicName(ev), Stream: netfault.Downstream}
	v := int64(ev.Value)
	switch ev.Kind {
	case faultNetLatency:
		latency := hopTimeout(ev.Target).Milliseconds() * v / 100
		// latency + jitter: up to twice the hop's timeout (v ≤ 150%).
		t.Type, t.Attributes = netfault.Latency, map[string]int64{"latency": latency, "jitter": latency / 3}
	case faultNetBandwidth:
		t.Type, t.Attributes = netfault.Bandwidth, map[string]int64{"rate": v}
	case faultNetBlackhole:
		t.Type, t.Stream, t.Attributes = netfault.Timeout, netfault.Upstream, map[string]int64{"timeout": v}
	case faultNetReset:
		t.Type, t.Stream, t.Attributes = netfault.ResetPeer, ev.Stream, map[string]int64{"timeout": v}
	case faultNetSlowClose:
		t.Type, t.Attributes = netfault.SlowClose, map[string]int64{"delay": v}
	case faultNetLimitData:
		t.Type, t.Attributes = netfault.LimitData, map[string]int64{"bytes": v}
	}
	return t
}

// toxicName names ev's toxics on a hop: its kind and offset, so that two
// faults that overlap on one hop never share a name.
func toxicName(ev FaultEvent) string { return fmt.Sprintf("%s@%s", ev.Kind, ev.At) }

// flap partitions h for every, heals it for every, and so on, for hold.
func flap(ctx context.Context, h *netfault.Hop, name string, every, hold time.Duration) error {
	end := time.Now().Add(hold)
	for time.Now().Before(end) && ctx.Err() == nil {
		_, err := h.Partition(name)
		sleep(ctx, every)
		resetAll([]*netfault.Hop{h})
		if err != nil {
			return err
		}
		sleep(ctx, every)
	}
	return nil
}

// resetAll heals each hop by a fresh proxy (netfault.Hop.Reset, which
// cannot hang as removing a toxic can); an error leaves the hop's toxics,
// which the end of the faults reports (check healed).
func resetAll(hs []*netfault.Hop) {
	for _, h := range hs {
		_ = h.Reset()
	}
}

// errHopBusy is a fault whose hop another fault holds: one fault per hop
// at a time, so that toxics never stack on a hop (and its healing resets
// only its own).
var errHopBusy = errors.New("its hop is under another network fault")

// busyWait bounds the wait of a fault for its hops while another fault
// holds one: longer than the longest hold of any kind and the wait for
// convergence after it, so that a fault drawn onto a held hop runs once
// the hop is free instead of being skipped (the CI slice asserts a fault
// on every hop).
const busyWait = convergeBound + 30*time.Second

// awaitTake takes hops as soon as no other fault holds one of them, for up
// to busyWait or until ctx ends; false when it could not.
func (n *netFaults) awaitTake(ctx context.Context, hops []string) bool {
	deadline := time.Now().Add(busyWait)
	for !n.take(hops) {
		if time.Now().After(deadline) || !sleep(ctx, 100*time.Millisecond) {
			return false
		}
	}
	return true
}

// take marks hops as held by a fault, all or none; false when one is held.
func (n *netFaults) take(hops []string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, h := range hops {
		if n.busy[h] {
			return false
		}
	}
	if n.busy == nil {
		n.busy = map[string]bool{}
	}
	for _, h := range hops {
		n.busy[h] = true
	}
	return true
}

// release ends a fault's hold of hops.
func (n *netFaults) release(hops []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, h := range hops {
		delete(n.busy, h)
	}
}

// hopsOf returns the hops a partition of each component cuts: every hop
// whose name has the component at either end.
func hopsOf(hops []string, components ...string) map[string][]string {
	out := map[string][]string{}
	for _, c := range components {
		for _, h := range hops {
			from, to, _ := strings.Cut(h, "->")
			if from == c || to == c {
				out[c] = append(out[c], h)
			}
		}
		if len(out[c]) == 0 {
			panic(fmt.Sprintf("soak: no hop of component %s", c))
		}
	}
	return out
}
