package soak

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	temporalclient "go.temporal.io/sdk/client"

	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/idemstore/redisstore"
	"github.com/oncegate/oncegate/internal/storeconn"
)

// prodStopTimeout bounds the wait for a killed or shut down process of the
// production-like profile to be gone.
const prodStopTimeout = 30 * time.Second

// startProdStack brings the production-like profile up with
// `scripts/prod.sh up` (which starts only what is not running) and puts
// each of its processes under a supervisor that brings it back with
// `scripts/prod.sh start NAME`. Faults kill a process by its pid file
// (.run-prod/NAME.pid). The profile is left as it was found: stopped again
// at the end when nothing of it ran before.
func startProdStack(log *slog.Logger) (*stack, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	script := filepath.Join(root, "scripts", "prod.sh")
	status, err := exec.Command(script, "status").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("prod.sh status: %w\n%s", err, status)
	}
	log.Info("starting the production-like profile (scripts/prod.sh up)")
	if out, err := exec.Command(script, "up").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("prod.sh up: %w\n%s", err, out)
	}
	run := filepath.Join(root, ".run-prod")
	env, err := testenv.ReadStackEnv(filepath.Join(run, "stack.env"))
	if err != nil {
		return nil, err
	}
	s := &stack{
		profile: ProfileProd, dir: run, components: map[string]*component{}, faults: prodFaultKinds,
		gatewayURLs:    strings.Split(env["GATEWAY_URLS"], ","),
		downstreamURL:  env["DOWNSTREAM_URL"],
		databaseURL:    env["DATABASE_URL"],
		simDatabaseURL: env["SIMULATOR_DATABASE_URL"],
		tokens:         tokens{alice: env["ONCEGATE_TOKEN_ALICE"], bob: env["ONCEGATE_TOKEN_BOB"], ops: env["ONCEGATE_OPS_TOKEN"]},
		since:          time.Now(),
		payeeTag:       fmt.Sprintf("-r%d", time.Now().Unix()),
	}
	if !strings.Contains(string(status), ": running") {
		s.onClose = func() {
			log.Info("stopping the production-like profile, which was not running before (scripts/prod.sh down)")
			if out, err := exec.Command(script, "down").CombinedOutput(); err != nil {
				log.Warn("prod.sh down", "err", err, "output", string(out))
			}
		}
	}
	ok := false
	defer func() {
		if !ok {
			s.close()
		}
	}()
	if s.httpTLS, s.temporal, err = prodTLS(env); err != nil {
		return nil, err
	}
	storeCfg := storeconn.Config{RedisURL: env["REDIS_URL"], RedisAddrs: env["REDIS_ADDRS"], RedisTLSCAFile: env["REDIS_TLS_CA_FILE"]}
	if _, err := redisstore.Connect(storeCfg.Redis()); err != nil {
		return nil, err
	}
	s.newRedis = func() redis.UniversalClient {
		rdb, _ := redisstore.Connect(storeCfg.Redis()) // checked above
		return rdb
	}
	if s.cat, err = loadCatalog(s.downstreamURL); err != nil {
		return nil, err
	}
	nodes := strings.Split(env["REDIS_ADDRS"], ",")
	names := []string{compPostgres}
	for i := range nodes {
		names = append(names, fmt.Sprintf("redis-%d", i+1))
	}
	names = append(names, compTemporal, compDownstream, "worker-1", "worker-2", "gateway-1", "gateway-2")
	procs := map[string]prodProcess{}
	for _, name := range names {
		p := prodProcess{run: run, script: script, name: name, log: log}
		procs[name] = p
		stop := p.kill
		if name == compPostgres {
			stop = p.fastShutdown
		}
		s.add(name, p.start, stop, p.running)
	}
	// One node's own client (the cluster client routes by key, and a
	// CLUSTER NODES must reach whichever node still answers).
	node := func(addr string) (redis.UniversalClient, error) {
		return redisstore.Connect(redisstore.ConnConfig{URL: "rediss://" + addr + "/0", TLSCAFile: env["REDIS_TLS_CA_FILE"]})
	}
	// Every hop through a proxy of its own (netfaults.go, prodnet.go).
	menu, parts := prodMenu(len(nodes))
	s.faults = menu
	pn := &prodNet{env: env, nodes: nodes, node: node, dir: filepath.Join(run, "override"), procs: procs}
	s.unproxy = func() error { return pn.undo(s.onClose == nil) }
	log.Info("putting a proxy on every hop of the profile")
	if err := pn.proxy(context.Background()); err != nil {
		return nil, fmt.Errorf("soak: proxy the profile's hops: %w", err)
	}
	s.netFaults = &netFaults{net: pn.net, parts: parts}
	s.agentURLs = pn.agentURLs
	for _, h := range pn.net.Names() {
		hop, _ := pn.net.Hop(h) // listed
		s.opened = append(s.opened, hop.Addr())
	}
	s.redisMaster = func(pick int) (string, error) { return s.pickRedisMaster(nodes, node, pn.directAddr, pick) }
	// The audit reads the cluster: it must have every slot served again.
	s.ready = func(ctx context.Context) error {
		for _, addr := range nodes {
			rdb, err := node(addr)
			if err != nil {
				return err
			}
			info, err := rdb.ClusterInfo(ctx).Result()
			rdb.Close()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				return fmt.Errorf("redis node %s: cluster not ok: %v", addr, err)
			}
		}
		return nil
	}
	// Faults of an earlier test or run must not leak into this one.
	c := newClient(s.gatewayURLs, s.downstreamURL, s.httpTLS)
	if code, err := c.downstreamJSON(context.Background(), http.MethodDelete, "/_sim/faults", nil, nil); err != nil || code >= 300 {
		return nil, fmt.Errorf("clear the simulator's faults: HTTP %d %v", code, err)
	}
	s.supervise(log)
	ok = true
	return s, nil
}

// prodTLS returns the agents' TLS configuration (the profile's CA) and the
// audit's Temporal client options (mTLS with the profile's client
// certificate).
func prodTLS(env map[string]string) (*tls.Config, temporalclient.Options, error) {
	pem, err := os.ReadFile(env["ONCEGATE_CA_FILE"])
	if err != nil {
		return nil, temporalclient.Options{}, fmt.Errorf("the profile's CA: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, temporalclient.Options{}, fmt.Errorf("no certificate in %s", env["ONCEGATE_CA_FILE"])
	}
	opts := temporalclient.Options{HostPort: env["TEMPORAL_ADDRESS"], Namespace: env["TEMPORAL_NAMESPACE"]}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}
	if env["TEMPORAL_TLS_CERT_FILE"] != "" {
		cert, err := tls.LoadX509KeyPair(env["TEMPORAL_TLS_CERT_FILE"], env["TEMPORAL_TLS_KEY_FILE"])
		if err != nil {
			return nil, opts, fmt.Errorf("the profile's Temporal client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
		opts.ConnectionOptions.TLS = tc
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}, opts, nil
}

// pickRedisMaster returns the component (redis-N) of the pick-th (modulo
// their number) of the cluster's masters that serve slots and run, as the
// first node that answers sees them; nodes are REDIS_ADDRS, redis-1 first;
// direct maps the address a node announces (its proxy's) to its own.
func (s *stack) pickRedisMaster(nodes []string, node func(addr string) (redis.UniversalClient, error), direct func(string) string, pick int) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var masters []string
	for i, addr := range nodes {
		if !s.components[fmt.Sprintf("redis-%d", i+1)].up() {
			continue
		}
		rdb, err := node(addr)
		if err != nil {
			return "", err
		}
		out, err := rdb.ClusterNodes(ctx).Result()
		rdb.Close()
		if err == nil {
			masters = testenv.ClusterMasters(out)
			break
		}
	}
	var up []string
	for _, addr := range masters {
		if i := slices.Index(nodes, direct(addr)); i >= 0 {
			name := fmt.Sprintf("redis-%d", i+1)
			if s.components[name].up() {
				up = append(up, name)
			}
		}
	}
	if len(up) == 0 {
		return "", errors.New("no running master")
	}
	slices.Sort(up)
	return up[pick%len(up)], nil
}

// prodProcess is one process of the production-like profile, known by its
// pid file.
type prodProcess struct {
	run, script, name string
	log               *slog.Logger
}

// pid reads the process's pid file; 0 when there is none.
func (p prodProcess) pid() int {
	b, err := os.ReadFile(filepath.Join(p.run, p.name+".pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// running reports whether the pid file names a live process.
func (p prodProcess) running() bool { return alive(p.pid()) }

// start brings the process back with `scripts/prod.sh start NAME`, which
// returns once it is healthy.
func (p prodProcess) start() error {
	out, err := exec.Command(p.script, "start", p.name).CombinedOutput()
	if err != nil {
		return fmt.Errorf("prod.sh start %s: %w: %s", p.name, err, lastLines(string(out), 5))
	}
	return nil
}

// kill sends SIGKILL and waits until the process is gone.
func (p prodProcess) kill() { p.signal(syscall.SIGKILL) }

// fastShutdown stops PostgreSQL with SIGINT (its "fast" shutdown: clients
// are disconnected, committed data kept) and waits until it is gone.
func (p prodProcess) fastShutdown() { p.signal(syscall.SIGINT) }

// signal sends sig and waits until the process is gone (SIGKILL after
// prodStopTimeout).
func (p prodProcess) signal(sig syscall.Signal) {
	pid := p.pid()
	if !alive(pid) {
		return
	}
	_ = syscall.Kill(pid, sig)
	deadline := time.Now().Add(prodStopTimeout)
	for alive(pid) {
		if time.Now().After(deadline) {
			p.log.Warn("still running; SIGKILL", "component", p.name, "signal", sig)
			_ = syscall.Kill(pid, syscall.SIGKILL)
			deadline = time.Now().Add(prodStopTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid is a live process (a zombie is dead).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
