package soak

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	temporalclient "go.temporal.io/sdk/client"

	"github.com/oncegate/oncegate/harness/netfault"
	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/internal/catalog"
)

// Component names, as faults and reports name them.
const (
	compGateway    = "gateway"
	compWorker     = "worker"
	compDownstream = "downstream"
	compRedis      = "redis"
	compPostgres   = "postgres"
	compTemporal   = "temporal"
)

// stack is the stack a soak runs against: the dev profile started for the
// run (startStack), every part of it on free loopback ports and owned by
// the run — unlike the tests' shared servers, PostgreSQL and Temporal keep
// their data across restarts here — or the production-like profile of
// scripts/prod.sh (startProdStack).
type stack struct {
	// profile is ProfileDev or ProfileProd.
	profile string
	dir     string
	cat     *catalog.Catalog
	// gatewayURLs are the gateways, as the harness itself (readiness, the
	// audit, the operator's decisions) reaches them: directly.
	gatewayURLs []string
	// agentURLs are the gateways as the agents reach them, which their
	// load balancer spreads over: each behind its agents' hop
	// (netfault.AgentsGateway, agents->gateway-N), so that an agent's own
	// calls lose replies and get reset.
	agentURLs     []string
	downstreamURL string
	databaseURL   string
	// simDatabaseURL is the simulator's database, read by the audit.
	simDatabaseURL string
	// temporal are the audit's Temporal client options (address,
	// namespace, TLS).
	temporal temporalclient.Options
	// httpTLS is the TLS configuration of the agents' client (nil: the
	// gateways speak plain HTTP).
	httpTLS *tls.Config
	// tokens are the bearer tokens of the agents' subjects and the operator.
	tokens tokens
	// newRedis returns a client of the fast path (a cluster client for a
	// Redis Cluster), for the audit and the flush fault.
	newRedis func() redis.UniversalClient
	// faults is the fault menu of the profile.
	faults []faultKind
	// since is the start of the run: the audit reads only the truth
	// records created from then on (zero: all of them).
	since time.Time
	// payeeTag makes the run's payees its own on a profile whose truth
	// outlives the run (the amnesia guard would see an earlier run's
	// operations of the same seed otherwise).
	payeeTag string
	// redisMaster returns the component name of a Redis master to kill
	// (prod only), the pick-th of the current masters.
	redisMaster func(pick int) (string, error)
	// ready, when set, is what else allUp waits for (prod: the Redis
	// Cluster serves every slot).
	ready         func(context.Context) error
	redis         *testenv.Redis
	pg            *testenv.Postgres
	tp            *testenv.Temporal
	components    map[string]*component
	order         []string
	wg            sync.WaitGroup
	stopSupervise context.CancelFunc
	// onClose runs last in close (prod: stop the profile when the run
	// started it).
	onClose func()
	// netFaults holds the Toxiproxy proxy of every hop and applies the
	// network faults.
	netFaults *netFaults
	// opened are the addresses the run made listen (its servers and
	// proxies): none may still accept a connection after close.
	opened []string
	// unproxy, when set, takes the processes off the hops before the
	// proxies stop (prod: the overrides removed, the nodes announcing
	// their own ports, the processes started again on direct addresses).
	unproxy func() error
}

// tokens are a profile's bearer tokens.
type tokens struct {
	alice, bob, ops string
}

// startStack builds the binaries and starts the stack with its files in
// dir, each component under a supervisor.
func startStack(dir, workerFailpoint string, log *slog.Logger) (*stack, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "bin")
	log.Info("building the binaries")
	var tags []string
	if workerFailpoint != "" {
		tags = append(tags, "failpoint")
	}
	if err := testenv.BuildBinaries(bin, tags...); err != nil {
		return nil, err
	}
	if workerFailpoint != "" {
		log.Warn("a deliberately broken worker", "failpoint", workerFailpoint)
	}
	s := &stack{profile: ProfileDev, dir: dir, components: map[string]*component{}, faults: faultKinds,
		tokens: tokens{alice: "dev-alice", bob: "dev-bob", ops: "dev-ops"}}
	ok := false
	defer func() {
		if !ok {
			s.close()
		}
	}()
	log.Info("starting PostgreSQL, Redis and the Temporal dev server")
	if s.pg, err = testenv.NewPostgres(); err != nil {
		return nil, err
	}
	ctx := context.Background()
	databaseURL, err := s.pg.CreateDatabase(ctx)
	if err != nil {
		return nil, err
	}
	simDatabaseURL, err := s.pg.CreateDatabase(ctx)
	if err != nil {
		return nil, err
	}
	redisDir := filepath.Join(dir, "redis")
	temporalDir := filepath.Join(dir, "temporal")
	for _, d := range []string{redisDir, temporalDir, filepath.Join(dir, "logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if s.redis, err = testenv.NewRedis(redisDir); err != nil {
		return nil, err
	}
	if s.tp, err = testenv.NewPersistentTemporal(temporalDir); err != nil {
		return nil, err
	}
	ports := make([]int, 3)
	for i := range ports {
		if ports[i], err = testenv.FreePort(); err != nil {
			return nil, err
		}
	}
	gatewayURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	s.gatewayURLs = []string{gatewayURL}
	s.downstreamURL = fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	s.databaseURL, s.simDatabaseURL = databaseURL, simDatabaseURL
	s.temporal = temporalclient.Options{HostPort: s.tp.Address, Namespace: s.tp.Namespace}
	s.newRedis = func() redis.UniversalClient { return s.redis.Client() }
	if s.cat, err = loadCatalog(s.downstreamURL); err != nil {
		return nil, err
	}
	// Every hop through a proxy of its own (docs/reliability.md, network
	// faults): the gateway and the worker reach Redis, PostgreSQL,
	// Temporal and the simulator through them, the simulator's webhook
	// and the agents the gateway.
	net := netfault.New()
	s.netFaults = &netFaults{net: net, parts: devParts}
	hops, err := testenv.ProxyHops(net, testenv.Upstreams{RedisURL: s.redis.URL, DatabaseURL: databaseURL,
		TemporalAddress: s.tp.Address, DownstreamURL: s.downstreamURL, GatewayURL: gatewayURL})
	if err != nil {
		return nil, err
	}
	s.agentURLs = []string{hops.AgentGatewayURL}
	if got := net.Names(); !slices.Equal(got, slices.Sorted(slices.Values(devHops))) {
		return nil, fmt.Errorf("soak: the stack's hops %v are not the fault menu's %v", got, devHops)
	}
	pgAddr := fmt.Sprintf("127.0.0.1:%d", s.pg.Port)
	s.opened = []string{strings.TrimPrefix(gatewayURL, "http://"), strings.TrimPrefix(s.downstreamURL, "http://"),
		fmt.Sprintf("127.0.0.1:%d", ports[2]), s.redis.Addr, pgAddr, s.tp.Address}
	for _, h := range devHops {
		hop, _ := net.Hop(h) // listed above
		s.opened = append(s.opened, hop.Addr())
	}
	env := []string{
		"ONCEGATE_ENV=dev",
		"GATEWAY_URL=" + gatewayURL,
		"DOWNSTREAM_URL=" + s.downstreamURL,
		fmt.Sprintf("WORKER_METRICS_URL=http://127.0.0.1:%d/metrics", ports[2]),
		"DATABASE_URL=" + databaseURL,
		"SIMULATOR_DATABASE_URL=" + simDatabaseURL,
		"REDIS_URL=" + s.redis.URL,
		"TEMPORAL_ADDRESS=" + s.tp.Address,
		"TEMPORAL_NAMESPACE=" + s.tp.Namespace,
		"ONCEGATE_TASK_QUEUE=oncegate-soak",
		"ONCEGATE_FINGERPRINT_KEYS=soak:" + randomSecret(),
		"ONCEGATE_RECEIPT_KEYS=" + testenv.NewReceiptKeys(),
		"ONCEGATE_CATALOG=" + filepath.Join(root, "deployments", "catalog.dev.yaml"),
		"ONCEGATE_TOKENS=" + filepath.Join(root, "deployments", "tokens.dev.yaml"),
	}
	hookScope, hookSecret := "", ""
	for _, scope := range slices.Sorted(maps.Keys(s.cat.Actions)) {
		if h := s.cat.Actions[scope].Downstream.Webhook; h != nil && hookScope == "" {
			hookScope, hookSecret = scope, randomSecret()
			env = append(env, h.SecretEnv+"="+hookSecret)
		}
	}
	s.add(compPostgres, s.pg.Start, s.pg.Shutdown, s.pg.Running)
	s.add(compRedis, s.redis.Restart, s.redis.Kill, s.redis.Running)
	s.add(compTemporal, s.tp.Start, s.tp.Kill, s.tp.Running)
	for _, name := range []string{compDownstream, compWorker, compGateway} {
		p, err := testenv.StartProcess(name, filepath.Join(dir, "logs", name+".log"), []string{filepath.Join(bin, name)}, processEnv(env, hops.Env[name], name, workerFailpoint), nil)
		if err != nil {
			return nil, err
		}
		s.add(name, p.Start, p.Kill, p.Running)
		if name == compDownstream {
			if err := waitHealthy(s.downstreamURL+"/healthz", p); err != nil {
				return nil, err
			}
			if hookScope != "" {
				// The simulator keeps its webhook in its database.
				c := newClient(s.gatewayURLs, s.downstreamURL, nil)
				hook := map[string]string{"url": hops.WebhookGatewayURL + "/v1/webhooks/" + hookScope, "secret": hookSecret}
				if code, err := c.downstreamJSON(context.Background(), http.MethodPut, "/_sim/webhook", hook, nil); err != nil || code != http.StatusOK {
					return nil, fmt.Errorf("set the simulator's webhook: HTTP %d %v", code, err)
				}
			}
		}
	}
	if err := waitHealthy(gatewayURL+"/healthz", nil); err != nil {
		return nil, err
	}
	s.supervise(log)
	ok = true
	return s, nil
}

// processEnv is a process's environment: the stack's, its hops', and the
// worker's failpoint.
func processEnv(env, hops []string, name, workerFailpoint string) []string {
	out := append(slices.Clone(env), hops...)
	if name == compWorker && workerFailpoint != "" {
		out = append(out, "ONCEGATE_FAILPOINT="+workerFailpoint)
	}
	return out
}

// supervise starts a supervisor for every component.
func (s *stack) supervise(log *slog.Logger) {
	superviseCtx, cancel := context.WithCancel(context.Background())
	s.stopSupervise = cancel
	for _, name := range s.order {
		c := s.components[name]
		s.wg.Go(func() { c.supervise(superviseCtx, log) })
	}
}

// randomSecret returns 32 random bytes in standard base64.
func randomSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// add registers a component.
func (s *stack) add(name string, start func() error, stop func(), running func() bool) {
	s.components[name] = &component{name: name, start: start, stop: stop, running: running}
	s.order = append(s.order, name)
}

// healthyTimeout bounds the wait for a component's health endpoint.
const healthyTimeout = 60 * time.Second

// waitHealthy waits until url answers 200; p, when given, must not exit.
func waitHealthy(url string, p *testenv.Process) error {
	if err := testenv.WaitHealthy(url, p, healthyTimeout); err != nil {
		if p != nil {
			return fmt.Errorf("wait healthy: %w\n%s", err, p.Log())
		}
		return fmt.Errorf("wait healthy: %w", err)
	}
	return nil
}

// allUp releases every hold and waits until every component runs and the
// gateways and the simulator answer their health checks.
func (s *stack) allUp(c *client, timeout time.Duration) error {
	for _, c := range s.components {
		c.release()
	}
	err := testenv.WaitFor(context.Background(), timeout, func(context.Context) error {
		for _, name := range s.order {
			if !s.components[name].up() {
				return fmt.Errorf("%s is not running", name)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("bring the stack up: %w", err)
	}
	urls := []string{s.downstreamURL + "/healthz"}
	for _, gw := range s.gatewayURLs {
		urls = append(urls, gw+"/readyz")
	}
	return testenv.WaitFor(context.Background(), healthyTimeout, func(ctx context.Context) error {
		for _, u := range urls {
			_, code, err := c.do(ctx, http.MethodGet, u, nil, requestTimeout)
			if err != nil {
				return err
			}
			if code != http.StatusOK {
				return fmt.Errorf("%s: HTTP %d", u, code)
			}
		}
		if s.ready != nil {
			return s.ready(ctx)
		}
		return nil
	})
}

// restarts returns how often the supervisors started each component again.
func (s *stack) restarts() map[string]int {
	out := map[string]int{}
	for name, c := range s.components {
		c.mu.Lock()
		out[name] = c.restarts
		c.mu.Unlock()
	}
	return out
}

// close stops the supervisors and, for the dev profile, every component,
// newest first; the production-like profile is left to onClose. It
// returns what it could not clean: a proxy that could not be stopped, a
// port the run opened that still accepts connections.
func (s *stack) close() error {
	if s.stopSupervise != nil {
		s.stopSupervise()
		s.wg.Wait()
	}
	var errs []error
	if s.unproxy != nil {
		errs = append(errs, s.unproxy())
	}
	if s.netFaults != nil {
		errs = append(errs, s.netFaults.net.Close())
	}
	for i := len(s.order) - 1; i >= 0 && s.profile == ProfileDev; i-- {
		c := s.components[s.order[i]]
		switch c.name {
		case compTemporal, compRedis, compPostgres:
			// Stopped below with their own Stop, which also removes their files.
		default:
			c.stop()
		}
	}
	if s.tp != nil {
		s.tp.Stop()
	}
	if s.redis != nil {
		s.redis.Stop()
	}
	if s.pg != nil {
		s.pg.Stop()
	}
	if s.onClose != nil {
		s.onClose()
	}
	errs = append(errs, netfault.StillListening(s.opened))
	return errors.Join(errs...)
}
