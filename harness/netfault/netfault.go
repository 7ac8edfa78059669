// Package netfault puts a Toxiproxy proxy (github.com/Shopify/toxiproxy/v2,
// its server embedded in the test process, on loopback) on each network hop
// of a stack, so that a test or the soak can make the network lie: latency,
// a black hole, a reset, a reply cut after the request reached the server,
// a partition. A process reaches its upstream through its hop's address,
// given in the environment it already reads (REDIS_URL, DATABASE_URL,
// TEMPORAL_ADDRESS, the catalog's DOWNSTREAM_URL, the simulator's webhook
// URL), and an agent reaches the gateway through its own; nothing here is
// hand-written TCP.
package netfault

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"
)

// Hop names: the process that opens the connections, an arrow, and the
// server it reaches. Each stack proxies the hops it has.
const (
	GatewayRedis    = "gateway->redis"
	GatewayPostgres = "gateway->postgres"
	GatewayTemporal = "gateway->temporal"
	WorkerRedis     = "worker->redis"
	WorkerPostgres  = "worker->postgres"
	WorkerTemporal  = "worker->temporal"
	// WorkerDownstream is the catalog's downstream URLs: the worker's
	// execute and status calls (at the URLs of the plan the gateway
	// resolved), and the gateway's quotes at preview.
	WorkerDownstream = "worker->downstream"
	// WebhookGateway is the simulator (the downstream) posting its payout
	// webhooks to the gateway.
	WebhookGateway = "downstream->gateway"
	// AgentsGateway is the agents' calls to the gateway: a reply lost or
	// a connection reset here is one the agent itself must resend.
	AgentsGateway = "agents->gateway"
)

// Streams of a toxic: Toxiproxy's names. Upstream is what the client sends
// (the request), Downstream what the server answers (the reply).
const (
	Upstream   = "upstream"
	Downstream = "downstream"
)

// Toxic kinds, as Toxiproxy names them.
const (
	Latency   = "latency"
	Bandwidth = "bandwidth"
	Timeout   = "timeout"
	ResetPeer = "reset_peer"
	SlowClose = "slow_close"
	LimitData = "limit_data"
)

// Toxic is one Toxiproxy toxic on a hop.
type Toxic struct {
	// Name names it on its hop (empty: "<type>_<stream>").
	Name string `json:"name,omitempty"`
	// Type is the kind (Latency, Timeout, ...).
	Type string `json:"type"`
	// Stream is Upstream or Downstream.
	Stream string `json:"stream"`
	// Attributes are the kind's own (latency/jitter ms, rate KB/s,
	// timeout ms, delay ms, bytes).
	Attributes map[string]int64 `json:"attributes"`
}

// ErrUnknownHop is a hop this Net does not proxy.
var ErrUnknownHop = errors.New("netfault: unknown hop")

// Net is the embedded Toxiproxy server and its hops.
type Net struct {
	srv  *toxiproxy.ApiServer
	mu   sync.Mutex
	hops map[string]*Hop
}

// New returns a Net without hops. Toxiproxy's own logs (zerolog, some of
// them through its global logger, such as a bandwidth toxic's trace) are
// silenced: the harness reports the faults itself.
func New() *Net {
	zerolog.SetGlobalLevel(zerolog.Disabled)
	return &Net{srv: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()), hops: map[string]*Hop{}}
}

// Hop is one proxied hop: clients connect to Addr, the proxy connects to
// the upstream.
type Hop struct {
	// Name is the hop's name (GatewayRedis, ...).
	Name  string
	mu    sync.Mutex
	proxy *toxiproxy.Proxy
	srv   *toxiproxy.ApiServer
}

// current is the hop's proxy (Reset replaces it).
func (h *Hop) current() *toxiproxy.Proxy {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.proxy
}

// Addr is where the hop's clients connect (127.0.0.1:port).
func (h *Hop) Addr() string { return h.current().Listen }

// Upstream is the server the hop reaches.
func (h *Hop) Upstream() string { return h.current().Upstream }

// Reset heals the hop by replacing its proxy with a fresh one on the same
// address: every toxic gone, every connection through it closed (the
// clients connect again). Unlike removing a toxic, it cannot hang:
// Toxiproxy's RemoveToxic can block for good while a toxic of the chain
// is stuck writing to a reader that does not read (Shopify/toxiproxy
// issues 159, 412, 558; seen in the soak), and the stuck goroutines of the
// old proxy are left behind.
func (h *Hop) Reset() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	addr, up := h.proxy.Listen, h.proxy.Upstream
	if err := h.srv.Collection.Remove(h.Name); err != nil {
		return fmt.Errorf("netfault: reset %s: %w", h.Name, err)
	}
	var err error
	for range 50 { // the old listener's port is free once it closed
		p := toxiproxy.NewProxy(h.srv, h.Name, addr, up)
		if err = h.srv.Collection.Add(p, true); err == nil {
			h.proxy = p
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("netfault: reset %s: %w", h.Name, err)
}

// Add proxies a new hop to upstream (host:port) on a free loopback port.
func (n *Net) Add(name, upstream string) (*Hop, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.hops[name]; ok {
		return nil, fmt.Errorf("netfault: hop %s added twice", name)
	}
	p := toxiproxy.NewProxy(n.srv, name, "127.0.0.1:0", upstream)
	if err := n.srv.Collection.Add(p, true); err != nil {
		return nil, fmt.Errorf("netfault: proxy %s: %w", name, err)
	}
	h := &Hop{Name: name, proxy: p, srv: n.srv}
	n.hops[name] = h
	return h, nil
}

// Hop returns the hop of that name.
func (n *Net) Hop(name string) (*Hop, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	h, ok := n.hops[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownHop, name)
	}
	return h, nil
}

// Names lists the hops, sorted.
func (n *Net) Names() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Sorted(maps.Keys(n.hops))
}

// Add sets a toxic on the hop; every connection, open or new, gets it.
func (h *Hop) Add(t Toxic) error {
	b, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("netfault: %s: %w", h.Name, err)
	}
	if _, err := h.current().Toxics.AddToxicJson(bytes.NewReader(b)); err != nil {
		return fmt.Errorf("netfault: %s: add %s %s: %w", h.Name, t.Type, t.Stream, err)
	}
	return nil
}

// Remove takes the toxic of that name off the hop.
func (h *Hop) Remove(name string) error {
	if err := h.current().Toxics.RemoveToxic(context.Background(), name); err != nil {
		return fmt.Errorf("netfault: %s: remove %s: %w", h.Name, name, err)
	}
	return nil
}

// Toxics returns the names of the toxics on the hop.
func (h *Hop) Toxics() []string {
	var out []string
	for _, t := range h.current().Toxics.GetToxicArray() {
		if w, ok := t.(*toxics.ToxicWrapper); ok {
			out = append(out, w.Name)
		}
	}
	return out
}

// Heal takes every toxic off the hop.
func (h *Hop) Heal() { h.current().Toxics.ResetToxics(context.Background()) }

// Partition drops everything in both directions (a black hole: Toxiproxy's
// timeout toxic with no timeout) until its toxics, named name_upstream and
// name_downstream (returned), are removed: connections stay open and
// silent, as behind a firewall that drops packets; new ones connect and
// hear nothing.
func (h *Hop) Partition(name string) ([]string, error) {
	var names []string
	for _, s := range []string{Upstream, Downstream} {
		t := Toxic{Name: name + "_" + s, Type: Timeout, Stream: s, Attributes: map[string]int64{"timeout": 0}}
		if err := h.Add(t); err != nil {
			return names, err
		}
		names = append(names, t.Name)
	}
	return names, nil
}

// CutReplies cuts every reply on the hop after bytes bytes (0: the first
// byte of each reply is never delivered) and closes its connection: the
// request reached the server, its answer is lost. It returns the toxic's
// name.
func (h *Hop) CutReplies(bytes int64) (string, error) {
	const name = "cut_replies"
	return name, h.Add(Toxic{Name: name, Type: LimitData, Stream: Downstream, Attributes: map[string]int64{"bytes": bytes}})
}

// Close stops every proxy (its toxics go with it, its connections are
// closed; no toxic is removed one by one, which can hang) and checks that none of their ports still accepts a connection.
func (n *Net) Close() error {
	n.mu.Lock()
	addrs := make([]string, 0, len(n.hops))
	for _, h := range n.hops {
		addrs = append(addrs, h.Addr())
	}
	n.hops = map[string]*Hop{}
	n.mu.Unlock()
	if err := n.srv.Collection.Clear(); err != nil {
		return fmt.Errorf("netfault: stop the proxies: %w", err)
	}
	return StillListening(addrs)
}

// StillListening returns an error naming every address of addrs on which a
// TCP connection is still accepted.
func StillListening(addrs []string) error {
	var open []string
	for _, a := range addrs {
		c, err := net.DialTimeout("tcp", a, 200*time.Millisecond)
		if err == nil {
			c.Close()
			open = append(open, a)
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("netfault: still listening after close: %v", open)
	}
	return nil
}
