package testenv

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncegate/oncegate/harness/netfault"
)

var builtBinaries struct {
	once sync.Once
	dir  string
	err  error
}

// Binaries builds the project's binaries once per test process and returns
// the folder holding them (gateway, worker, downstream, oncegate-ops).
func Binaries(t testing.TB) string {
	t.Helper()
	dir, err := SharedBinaries()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// SharedBinaries is Binaries outside of a test: the first call builds, the
// later ones return the same folder (or the same error).
func SharedBinaries() (string, error) {
	builtBinaries.once.Do(func() {
		dir, err := os.MkdirTemp("", "oncegate-bin-")
		if err != nil {
			builtBinaries.err = err
			return
		}
		registerShared(func() { _ = os.RemoveAll(dir) })
		// -tags failpoint: the crash tests kill the gateway at a named point
		// (ONCEGATE_FAILPOINT); production builds leave it out.
		if builtBinaries.err = BuildBinaries(dir, "failpoint"); builtBinaries.err == nil {
			builtBinaries.dir = dir
		}
	})
	return builtBinaries.dir, builtBinaries.err
}

// BuildBinaries builds the project's binaries (gateway, worker, downstream,
// oncegate-ops) into dir, with the build tags given.
func BuildBinaries(dir string, tags ...string) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-tags", strings.Join(tags, ","), "-o", dir+"/", "./cmd/gateway", "./cmd/worker", "./cmd/downstream", "./cmd/oncegate-ops")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, out)
	}
	return nil
}

// Stack is the whole oncegate stack started for one test: private Redis,
// fresh databases in the shared PostgreSQL, the shared Temporal dev server
// with a task queue of its own, and the downstream simulator, worker and
// gateway binaries.
type Stack struct {
	// GatewayURL is the gateway's base URL.
	GatewayURL string
	// DownstreamURL is the simulator's base URL.
	DownstreamURL string
	// WorkerMetricsURL is where the worker serves its Prometheus metrics
	// (the gateway's /metrics for an InProcessWorker).
	WorkerMetricsURL string
	// DatabaseURL is the gateway's truth database.
	DatabaseURL string
	// SimulatorDatabaseURL is the simulator's database.
	SimulatorDatabaseURL string
	// Redis is the private Redis server.
	Redis *Redis
	// Temporal is the shared dev server.
	Temporal *Temporal
	// Postgres is the shared cluster DatabaseURL and SimulatorDatabaseURL
	// live in.
	Postgres *Postgres
	// TaskQueue is this stack's own task queue.
	TaskQueue string
	// Keys is the ONCEGATE_FINGERPRINT_KEYS value.
	Keys string
	// ReceiptKeys is the ONCEGATE_RECEIPT_KEYS value (NewReceiptKeys).
	ReceiptKeys string
	// Gateway, Worker and Downstream are the running binaries (Worker nil
	// for an InProcessWorker).
	Gateway, Worker, Downstream *Process
	// Env is the environment every binary got.
	Env []string
	// Net proxies every hop of the stack (StackOptions.NetFaults; nil
	// without): the gateway's and the worker's connections to Redis,
	// PostgreSQL, Temporal and the simulator, the simulator's webhook to
	// the gateway (WebhookGatewayURL) and an agent's calls to it
	// (AgentGatewayURL).
	Net *netfault.Net
	// WebhookGatewayURL is the gateway's base URL as the simulator's
	// webhook should reach it: through the webhook hop with NetFaults,
	// else GatewayURL.
	WebhookGatewayURL string
	// AgentGatewayURL is the gateway's base URL as an agent whose replies
	// may be lost should reach it: through the agents' hop
	// (netfault.AgentsGateway) with NetFaults, else GatewayURL.
	AgentGatewayURL string
	// hopEnv is each process's environment that points it at its hops.
	hopEnv map[string][]string
	root   string
	dir    string
}

// StackOptions tunes StartStack.
type StackOptions struct {
	// ExtraGatewayEnv is appended to the gateway's environment (KEY=value).
	ExtraGatewayEnv []string
	// ExtraWorkerEnv is appended to the worker's environment (KEY=value).
	ExtraWorkerEnv []string
	// DatabaseURLParams and RedisURLParams are query parameters (such as
	// pool_max_conns=16 and pool_size=32) appended to the DATABASE_URL and
	// REDIS_URL of Stack.Env, which the gateway and the worker read;
	// Stack.DatabaseURL and Stack.Redis stay without them.
	DatabaseURLParams, RedisURLParams string
	// Catalog is the catalog file the gateway and the worker load; empty is
	// deployments/catalog.dev.yaml.
	Catalog string
	// Worker is where the Temporal worker runs.
	Worker WorkerShape
	// NetFaults puts a Toxiproxy proxy on every hop (Stack.Net): the
	// gateway and the worker reach Redis, PostgreSQL, Temporal and the
	// simulator through their own hops, so a test can cut, delay or
	// partition one of them.
	NetFaults bool
}

// WorkerShape is where a stack runs its Temporal worker.
type WorkerShape int

const (
	// SeparateWorker runs the worker binary, a process of its own.
	SeparateWorker WorkerShape = iota
	// InProcessWorker runs it in the gateway's process
	// (ONCEGATE_INPROCESS_WORKER=true; the gateway then starts workflows
	// eagerly): no worker process, ExtraWorkerEnv goes to the gateway.
	InProcessWorker
)

// StartStack starts a complete stack for t and stops it at the end.
func StartStack(t testing.TB, opts StackOptions) *Stack {
	t.Helper()
	bin := Binaries(t)
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	tp := SharedTemporal(t)
	pg := SharedPostgres(t)
	ctx := context.Background()
	dbURL, err := pg.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	simURL, err := pg.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	queue := make([]byte, 6)
	_, _ = rand.Read(queue)
	s := &Stack{
		GatewayURL:           fmt.Sprintf("http://127.0.0.1:%d", MustFreePort(t)),
		DownstreamURL:        fmt.Sprintf("http://127.0.0.1:%d", MustFreePort(t)),
		WorkerMetricsURL:     fmt.Sprintf("http://127.0.0.1:%d/metrics", MustFreePort(t)),
		DatabaseURL:          dbURL,
		SimulatorDatabaseURL: simURL,
		Redis:                StartRedis(t),
		Temporal:             tp,
		Postgres:             pg,
		TaskQueue:            "oncegate-test-" + hex.EncodeToString(queue),
		Keys:                 "test:" + base64.StdEncoding.EncodeToString(secret),
		ReceiptKeys:          NewReceiptKeys(),
		root:                 root,
		dir:                  t.TempDir(),
	}
	catalogPath := opts.Catalog
	if catalogPath == "" {
		catalogPath = filepath.Join(root, "deployments", "catalog.dev.yaml")
	}
	s.Env = []string{
		"ONCEGATE_ENV=dev",
		"GATEWAY_URL=" + s.GatewayURL,
		"DOWNSTREAM_URL=" + s.DownstreamURL,
		"WORKER_METRICS_URL=" + s.WorkerMetricsURL,
		// The gateway and the worker get the pool parameters; the
		// simulator reads neither variable.
		"DATABASE_URL=" + withQuery(s.DatabaseURL, opts.DatabaseURLParams),
		"SIMULATOR_DATABASE_URL=" + s.SimulatorDatabaseURL,
		"REDIS_URL=" + withQuery(s.Redis.URL, opts.RedisURLParams),
		"TEMPORAL_ADDRESS=" + tp.Address,
		"TEMPORAL_NAMESPACE=" + tp.Namespace,
		"ONCEGATE_TASK_QUEUE=" + s.TaskQueue,
		"ONCEGATE_FINGERPRINT_KEYS=" + s.Keys,
		"ONCEGATE_RECEIPT_KEYS=" + s.ReceiptKeys,
		"ONCEGATE_CATALOG=" + catalogPath,
		"ONCEGATE_TOKENS=" + filepath.Join(root, "deployments", "tokens.dev.yaml"),
	}
	s.WebhookGatewayURL, s.AgentGatewayURL = s.GatewayURL, s.GatewayURL
	if opts.NetFaults {
		s.Net = netfault.New()
		t.Cleanup(func() {
			if err := s.Net.Close(); err != nil {
				t.Error(err)
			}
		})
		hops, err := ProxyHops(s.Net, Upstreams{RedisURL: withQuery(s.Redis.URL, opts.RedisURLParams),
			DatabaseURL: withQuery(s.DatabaseURL, opts.DatabaseURLParams), TemporalAddress: tp.Address,
			DownstreamURL: s.DownstreamURL, GatewayURL: s.GatewayURL})
		if err != nil {
			t.Fatal(err)
		}
		s.hopEnv, s.WebhookGatewayURL, s.AgentGatewayURL = hops.Env, hops.WebhookGatewayURL, hops.AgentGatewayURL
	}
	start := func(name string, extra []string) *Process {
		p, err := StartProcess(name, filepath.Join(s.dir, name+".log"), []string{filepath.Join(bin, name)}, s.envOf(name, extra), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			p.Stop()
			if name == "gateway" {
				if faults := TextFaults(p.LogPath); len(faults) > 0 {
					t.Errorf("the gateway answered with texts it could not write as its catalog says:\n%s", strings.Join(faults, "\n"))
				}
			}
			if t.Failed() {
				t.Logf("--- %s log (tail) ---\n%s", name, p.Log())
			}
		})
		return p
	}
	s.Downstream = start("downstream", nil)
	s.WaitHealthy(t, s.DownstreamURL+"/healthz", s.Downstream)
	gatewayEnv := opts.ExtraGatewayEnv
	if opts.Worker == InProcessWorker {
		s.WorkerMetricsURL = s.GatewayURL + "/metrics"
		gatewayEnv = append(append([]string{"ONCEGATE_INPROCESS_WORKER=true"}, opts.ExtraWorkerEnv...), gatewayEnv...)
	} else {
		s.Worker = start("worker", opts.ExtraWorkerEnv)
	}
	s.Gateway = start("gateway", gatewayEnv)
	s.WaitHealthy(t, s.GatewayURL+"/healthz", s.Gateway)
	// A healthy gateway is not a polling worker: a test's first confirm
	// would otherwise wait, within its answer's budget, for a worker that
	// is still starting on a loaded machine.
	workerProc := s.Worker
	if workerProc == nil {
		workerProc = s.Gateway
	}
	if err := tp.WaitPolling(s.TaskQueue, workerProc, 60*time.Second); err != nil {
		t.Fatalf("%s not polling %s: %v\n%s", workerProc.Name, s.TaskQueue, err, workerProc.Log())
	}
	return s
}

// envOf is the environment of process name: the stack's, its hops', extra.
func (s *Stack) envOf(name string, extra []string) []string {
	return append(append(append([]string{}, s.Env...), s.hopEnv[name]...), extra...)
}

// NewReceiptKeys returns an ONCEGATE_RECEIPT_KEYS value of one fresh
// Ed25519 key (a random 32-byte seed) under the key id test-receipt.
func NewReceiptKeys() string {
	seed := make([]byte, 32)
	_, _ = rand.Read(seed) // crypto/rand.Read never fails (Go 1.24+)
	return "test-receipt:" + base64.StdEncoding.EncodeToString(seed)
}

// Twin is a second gateway and worker on a stack's stores and Temporal
// server, with settings of their own, for comparing settings in one run.
type Twin struct {
	// GatewayURL is the twin gateway's base URL.
	GatewayURL string
	// Gateway and Worker are the twin's processes.
	Gateway, Worker *Process
}

// StartTwin starts a second worker, on a task queue of its own, and a
// second gateway that starts its workflows there, both with the stack's
// environment plus the pool parameters and extra settings given; Stop
// stops them.
func (s *Stack) StartTwin(databaseURLParams, redisURLParams string, gatewayEnv, workerEnv []string) (*Twin, error) {
	bin, err := SharedBinaries()
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	metricsPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	tw := &Twin{GatewayURL: fmt.Sprintf("http://127.0.0.1:%d", port)}
	// The twin's worker serves its metrics on a port of its own: the
	// stack's worker holds WORKER_METRICS_URL.
	env := append(append([]string{}, s.Env...),
		"GATEWAY_URL="+tw.GatewayURL,
		fmt.Sprintf("WORKER_METRICS_URL=http://127.0.0.1:%d/metrics", metricsPort),
		"ONCEGATE_TASK_QUEUE="+s.TaskQueue+"-twin",
		"DATABASE_URL="+withQuery(s.DatabaseURL, databaseURLParams),
		"REDIS_URL="+withQuery(s.Redis.URL, redisURLParams),
	)
	start := func(name string, extra []string) (*Process, error) {
		return StartProcess(name+"-twin", filepath.Join(s.dir, name+"-twin.log"), []string{filepath.Join(bin, name)}, append(append([]string{}, env...), extra...), nil)
	}
	if tw.Worker, err = start("worker", workerEnv); err != nil {
		return nil, err
	}
	if tw.Gateway, err = start("gateway", gatewayEnv); err != nil {
		tw.Worker.Stop()
		return nil, err
	}
	if err := WaitHealthy(tw.GatewayURL+"/healthz", tw.Gateway, 30*time.Second); err != nil {
		tw.Stop()
		return nil, fmt.Errorf("twin gateway not healthy: %w\n%s", err, tw.Gateway.Log())
	}
	if err := s.Temporal.WaitPolling(s.TaskQueue+"-twin", tw.Worker, 60*time.Second); err != nil {
		tw.Stop()
		return nil, fmt.Errorf("twin worker not polling: %w\n%s", err, tw.Worker.Log())
	}
	return tw, nil
}

// Stop stops the twin's processes.
func (tw *Twin) Stop() {
	tw.Gateway.Stop()
	tw.Worker.Stop()
}

// withQuery appends query parameters to a URL that may have some already.
func withQuery(u, params string) string {
	switch {
	case params == "":
		return u
	case strings.Contains(u, "?"):
		return u + "&" + params
	}
	return u + "?" + params
}

// WaitHealthy waits until url answers 200, failing t with the process log otherwise.
func (s *Stack) WaitHealthy(t testing.TB, url string, p *Process) {
	t.Helper()
	if err := WaitHealthy(url, p, 30*time.Second); err != nil {
		t.Fatalf("%s not healthy: %v\n%s", p.Name, err, p.Log())
	}
}

// WaitHealthy waits up to timeout until url answers 200; p, when not nil,
// must not exit meanwhile.
func WaitHealthy(url string, p *Process, timeout time.Duration) error {
	return WaitFor(context.Background(), timeout, func(ctx context.Context) error {
		if p != nil && !p.Running() {
			return fmt.Errorf("%s exited", p.Name)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %d", url, resp.StatusCode)
		}
		return nil
	})
}

// RestartWorker kills the worker with SIGKILL and starts a new one.
func (s *Stack) RestartWorker(t testing.TB) {
	t.Helper()
	s.Worker.Kill()
	if err := s.Worker.Start(); err != nil {
		t.Fatal(err)
	}
}

// RestartGateway kills the gateway with SIGKILL and starts a new one.
func (s *Stack) RestartGateway(t testing.TB) {
	t.Helper()
	s.Gateway.Kill()
	if err := s.Gateway.Start(); err != nil {
		t.Fatal(err)
	}
	s.WaitHealthy(t, s.GatewayURL+"/healthz", s.Gateway)
}

// RestartGatewayWith starts the gateway again (after it died or was killed)
// with the stack's environment plus extraEnv.
func (s *Stack) RestartGatewayWith(t testing.TB, extraEnv []string) {
	t.Helper()
	s.Gateway.Kill()
	s.Gateway.SetEnv(s.envOf(procGateway, extraEnv))
	if err := s.Gateway.Start(); err != nil {
		t.Fatal(err)
	}
	s.WaitHealthy(t, s.GatewayURL+"/healthz", s.Gateway)
}

// OpsCLI runs the ops CLI against this stack's gateway and returns its output.
func (s *Stack) OpsCLI(t testing.TB, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(Binaries(t), "oncegate-ops"), args...)
	cmd.Env = append(os.Environ(), "GATEWAY_URL="+s.GatewayURL, "TEMPORAL_ADDRESS="+s.Temporal.Address)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// TemporalCLI runs the Temporal CLI against this stack's server.
func (s *Stack) TemporalCLI(t testing.TB, args ...string) (string, error) {
	t.Helper()
	cli, err := TemporalCLI()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(cli, append(args, "--address", s.Temporal.Address, "--namespace", s.Temporal.Namespace)...)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
