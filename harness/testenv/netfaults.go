package testenv

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/oncegate/oncegate/harness/netfault"
)

// Processes of a stack whose connections a netfault.Net proxies.
const (
	procGateway = "gateway"
	procWorker  = "worker"
)

// Upstreams are the addresses of the servers a stack's processes reach,
// as their environment names them.
type Upstreams struct {
	// RedisURL is redis://host:port/db (REDIS_URL).
	RedisURL string
	// DatabaseURL is the truth's postgres:// URL (DATABASE_URL).
	DatabaseURL string
	// TemporalAddress is the frontend's host:port (TEMPORAL_ADDRESS).
	TemporalAddress string
	// DownstreamURL is the simulator's base URL (DOWNSTREAM_URL, which the
	// catalog's endpoints are written in).
	DownstreamURL string
	// GatewayURL is the gateway's base URL (the simulator's webhook posts
	// there).
	GatewayURL string
}

// Hops is what ProxyHops returns: where each process and client connects.
type Hops struct {
	// Env is each process's ("gateway", "worker") environment that points
	// it at its hops.
	Env map[string][]string
	// WebhookGatewayURL is the gateway's base URL behind the simulator's
	// webhook hop (netfault.WebhookGateway).
	WebhookGatewayURL string
	// AgentGatewayURL is the gateway's base URL behind the agents' hop
	// (netfault.AgentsGateway).
	AgentGatewayURL string
}

// ProxyHops adds to n a hop for each connection a gateway and a worker open
// (netfault.GatewayRedis ... netfault.WorkerTemporal), one for the
// catalog's downstream URLs (netfault.WorkerDownstream), one for the
// simulator's webhook (netfault.WebhookGateway) and one for the agents'
// calls to the gateway (netfault.AgentsGateway), and returns the
// environment each process gets so that it connects through them: for
// "gateway" and "worker", REDIS_URL, DATABASE_URL and TEMPORAL_ADDRESS on
// their own hops' addresses and DOWNSTREAM_URL on the downstream hop's;
// and the gateway's base URL behind the webhook hop and behind the agents'.
//
// The downstream hop is one for both: the worker calls the URLs of the
// plan the gateway resolved from its catalog (operation.Input.Downstream),
// so the worker's execute and status calls, and the gateway's quotes,
// all reach the downstream at the gateway's DOWNSTREAM_URL.
func ProxyHops(n *netfault.Net, up Upstreams) (Hops, error) {
	out := Hops{Env: map[string][]string{}}
	downstream, err := proxyVia(n, netfault.WorkerDownstream, up.DownstreamURL)
	if err != nil {
		return Hops{}, err
	}
	for _, proc := range []string{procGateway, procWorker} {
		out.Env[proc] = append(out.Env[proc], "DOWNSTREAM_URL="+downstream)
		hops := []struct {
			name, key, addr string
		}{
			{proc + "->redis", "REDIS_URL", up.RedisURL},
			{proc + "->postgres", "DATABASE_URL", up.DatabaseURL},
			{proc + "->temporal", "TEMPORAL_ADDRESS", up.TemporalAddress},
		}
		for _, h := range hops {
			via, err := proxyVia(n, h.name, h.addr)
			if err != nil {
				return Hops{}, err
			}
			out.Env[proc] = append(out.Env[proc], h.key+"="+via)
		}
	}
	if out.WebhookGatewayURL, err = proxyVia(n, netfault.WebhookGateway, up.GatewayURL); err != nil {
		return Hops{}, err
	}
	if out.AgentGatewayURL, err = proxyVia(n, netfault.AgentsGateway, up.GatewayURL); err != nil {
		return Hops{}, err
	}
	return out, nil
}

// proxyVia adds hop name to n, whose upstream is the host:port of target
// (a URL or a bare host:port), and returns target with the hop's address
// in its place.
func proxyVia(n *netfault.Net, name, target string) (string, error) {
	if !strings.Contains(target, "://") {
		h, err := n.Add(name, target)
		if err != nil {
			return "", err
		}
		return h.Addr(), nil
	}
	u, err := url.Parse(target)
	if err != nil {
		return "", fmt.Errorf("proxy %s: %w", name, err)
	}
	h, err := n.Add(name, u.Host)
	if err != nil {
		return "", err
	}
	u.Host = h.Addr()
	return u.String(), nil
}
