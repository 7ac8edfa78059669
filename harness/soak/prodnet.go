package soak

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/oncegate/oncegate/harness/netfault"
	"github.com/oncegate/oncegate/harness/testenv"
)

// The production-like profile's processes that connect through hops of
// their own (each gateway and worker to PostgreSQL and Temporal).
var prodClients = []string{"gateway-1", "gateway-2", "worker-1", "worker-2"}

// prodRestarted are the processes started again with their overrides
// (their hops) at the start of a run, and without them at its end: the
// Temporal server first (its persistence's hop), then its clients.
var prodRestarted = []string{compTemporal, compDownstream, "worker-1", "worker-2", "gateway-1", "gateway-2"}

// temporalPersistenceHop is the Temporal server's hop to its persistence
// and visibility stores (PostgreSQL).
var temporalPersistenceHop = compTemporal + "->" + compPostgres

// agentsHop names the agents' hop to one gateway.
func agentsHop(gateway string) string { return agents + "->" + gateway }

// redisHop names the hop to one node of the Redis Cluster: one for every
// client (gateways, workers, the audit, the node's replicas), since the
// node announces one address.
func redisHop(component string) string { return "clients->" + component }

// prodHops are the hops of the production-like profile with nodes Redis nodes.
func prodHops(nodes int) []string {
	var out []string
	for _, c := range prodClients {
		out = append(out, c+"->"+compPostgres, c+"->"+compTemporal)
	}
	out = append(out, netfault.WorkerDownstream, compDownstream+"->gateway-1", agentsHop("gateway-1"), agentsHop("gateway-2"),
		temporalPersistenceHop)
	for i := range nodes {
		out = append(out, redisHop(fmt.Sprintf("redis-%d", i+1)))
	}
	return out
}

// prodMenu is the production-like profile's fault menu with its network
// faults, for a cluster of nodes Redis nodes.
func prodMenu(nodes int) ([]faultKind, map[string][]string) {
	hops := prodHops(nodes)
	comps := []string{compPostgres, compTemporal, compDownstream}
	for i := range nodes {
		comps = append(comps, fmt.Sprintf("redis-%d", i+1))
	}
	parts := hopsOf(hops, append(comps, prodClients...)...)
	return slices.Concat(prodFaultKinds, netKinds(hops, parts)), parts
}

// prodNet puts the production-like profile behind its hops: a proxy for
// each, the overrides that point each process at its own
// ($RUN/override/NAME.env, read by scripts/prod.sh), each Redis node
// announcing its proxy's port to the cluster (CONFIG SET
// cluster-announce-port, and REDIS_ANNOUNCE_PORT for a node started again),
// and the simulator, the workers and the gateways started again with
// them. It returns the faults and the function that undoes it all.
type prodNet struct {
	env    map[string]string
	nodes  []string
	node   func(addr string) (redis.UniversalClient, error)
	dir    string
	procs  map[string]prodProcess
	net    *netfault.Net
	direct map[string]string // a proxy's address → the node's own
	// agentURLs are the gateways' URLs behind the agents' hops.
	agentURLs []string
}

// hostOf is the host:port of a URL.
func hostOf(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	return u.Host, nil
}

// withHost is raw with its host:port replaced.
func withHost(raw, host string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Host = host
	return u.String()
}

// proxy sets every hop up and the processes on them.
func (p *prodNet) proxy(ctx context.Context) error {
	p.net, p.direct = netfault.New(), map[string]string{}
	add := func(name, upstream string) (string, error) {
		h, err := p.net.Add(name, upstream)
		if err != nil {
			return "", err
		}
		return h.Addr(), nil
	}
	pg, err := hostOf(p.env["DATABASE_URL"])
	if err != nil {
		return err
	}
	downstream, err := hostOf(p.env["DOWNSTREAM_URL"])
	if err != nil {
		return err
	}
	gateways := strings.Split(p.env["GATEWAY_URLS"], ",")
	gateway1, err := hostOf(gateways[0])
	if err != nil {
		return err
	}
	files := map[string][]string{}
	var redisVia []string
	for i, addr := range p.nodes {
		via, err := add(redisHop(fmt.Sprintf("redis-%d", i+1)), addr)
		if err != nil {
			return err
		}
		p.direct[via] = addr
		redisVia = append(redisVia, via)
		_, port, _ := strings.Cut(via, ":")
		files[fmt.Sprintf("redis-%d", i+1)] = []string{"REDIS_ANNOUNCE_PORT=" + port}
	}
	downVia, err := add(netfault.WorkerDownstream, downstream)
	if err != nil {
		return err
	}
	hookVia, err := add(compDownstream+"->gateway-1", gateway1)
	if err != nil {
		return err
	}
	files[compDownstream] = []string{"PAYOUT_WEBHOOK_GATEWAY_URL=" + withHost(gateways[0], hookVia)}
	p.agentURLs = nil
	for i, g := range gateways {
		host, err := hostOf(g)
		if err != nil {
			return err
		}
		via, err := add(agentsHop(fmt.Sprintf("gateway-%d", i+1)), host)
		if err != nil {
			return err
		}
		p.agentURLs = append(p.agentURLs, withHost(g, via))
	}
	persistenceVia, err := add(temporalPersistenceHop, pg)
	if err != nil {
		return err
	}
	_, persistencePort, _ := strings.Cut(persistenceVia, ":")
	files[compTemporal] = []string{"PGPORT=" + persistencePort}
	for _, c := range prodClients {
		pgVia, err := add(c+"->"+compPostgres, pg)
		if err != nil {
			return err
		}
		tVia, err := add(c+"->"+compTemporal, p.env["TEMPORAL_ADDRESS"])
		if err != nil {
			return err
		}
		files[c] = []string{
			"DATABASE_URL=" + withHost(p.env["DATABASE_URL"], pgVia),
			"TEMPORAL_ADDRESS=" + tVia,
			"DOWNSTREAM_URL=" + withHost(p.env["DOWNSTREAM_URL"], downVia),
			"DOWNSTREAM_MCP_URL=" + withHost(p.env["DOWNSTREAM_URL"], downVia) + "/mcp",
			"REDIS_ADDRS=" + strings.Join(redisVia, ","),
			"REDIS_URL=" + withHost(p.env["REDIS_URL"], redisVia[0]),
		}
	}
	if err := p.writeOverrides(files); err != nil {
		return err
	}
	if err := p.announce(ctx, func(i int) string {
		_, port, _ := strings.Cut(redisVia[i], ":")
		return port
	}); err != nil {
		return err
	}
	return p.restart()
}

// writeOverrides writes each component's override file (export KEY='value').
func (p *prodNet) writeOverrides(files map[string][]string) error {
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return fmt.Errorf("soak: %w", err)
	}
	for name, kvs := range files {
		var b strings.Builder
		b.WriteString("# Written by the network-fault soak (harness/soak): this component's hops. Removed at the end of the run.\n")
		for _, kv := range kvs {
			k, v, _ := strings.Cut(kv, "=")
			fmt.Fprintf(&b, "export %s='%s'\n", k, v)
		}
		if err := os.WriteFile(filepath.Join(p.dir, name+".env"), []byte(b.String()), 0o644); err != nil {
			return fmt.Errorf("soak: %w", err)
		}
	}
	return nil
}

// announce makes node i announce port(i) to the cluster ("0": its own)
// and waits until every node sees every other at its announced port.
func (p *prodNet) announce(ctx context.Context, port func(i int) string) error {
	want := map[string]bool{}
	for i, addr := range p.nodes {
		rdb, err := p.node(addr)
		if err != nil {
			return err
		}
		bus, err := rdb.ConfigGet(ctx, "cluster-port").Result()
		if err == nil {
			err = rdb.ConfigSet(ctx, "cluster-announce-bus-port", bus["cluster-port"]).Err()
		}
		if err == nil {
			err = rdb.ConfigSet(ctx, "cluster-announce-port", port(i)).Err()
		}
		rdb.Close()
		if err != nil {
			return fmt.Errorf("soak: announce on redis node %s: %w", addr, err)
		}
		host, own, _ := strings.Cut(addr, ":")
		if pt := port(i); pt != "0" {
			own = pt
		}
		want[host+":"+own] = true
	}
	return testenv.WaitFor(ctx, time.Minute, func(ctx context.Context) error {
		for _, addr := range p.nodes {
			rdb, err := p.node(addr)
			if err != nil {
				return err
			}
			out, err := rdb.ClusterNodes(ctx).Result()
			rdb.Close()
			if err != nil {
				return err
			}
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				f := strings.Fields(line)
				if len(f) > 1 && !want[strings.SplitN(f[1], "@", 2)[0]] {
					return fmt.Errorf("node %s still sees %s", addr, f[1])
				}
			}
		}
		return nil
	})
}

// restart starts the simulator, the workers and the gateways again, one
// after the other (each healthy before the next), with the overrides
// present or gone.
func (p *prodNet) restart() error {
	for _, name := range prodRestarted {
		proc := p.procs[name]
		proc.kill()
		if err := proc.start(); err != nil {
			return err
		}
	}
	return nil
}

// undo removes the overrides, makes every node announce its own port,
// starts the processes again on their direct addresses (when the profile
// stays up) and stops the proxies; the stack then answers as before.
func (p *prodNet) undo(restart bool) error {
	var errs []error
	errs = append(errs, os.RemoveAll(p.dir))
	ctx := context.Background()
	errs = append(errs, p.announce(ctx, func(int) string { return "0" }))
	if restart {
		errs = append(errs, p.restart())
	}
	return errors.Join(errs...)
}

// directAddr is the node's own address of addr, which may be its proxy's.
func (p *prodNet) directAddr(addr string) string {
	if d, ok := p.direct[addr]; ok {
		return d
	}
	return addr
}
