package benche2e

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/oncegate/oncegate/api"
	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/idemstore/redisstore"
	"github.com/oncegate/oncegate/internal/pprofserver"
	"github.com/oncegate/oncegate/internal/storeconn"
	"github.com/oncegate/oncegate/internal/temporalconn"
	"github.com/oncegate/oncegate/worker"
)

// target is the stack a run measures: the dev stack it starts itself
// (startDev) or a running production-like profile (openProd).
type target struct {
	// dev is the dev stack (nil on the production-like profile).
	dev *testenv.Stack
	// gatewayURLs are the gateways the load spreads over, in turn; token
	// is the agent identity the load runs as.
	gatewayURLs []string
	token       string
	// downstreamURL is the simulator; databaseURL the truth.
	downstreamURL, databaseURL string
	// store names the stack's Redis and truth, for the floors' process.
	store storeconn.Config
	// newRedis returns a new client of the stack's Redis (one server or
	// the cluster).
	newRedis func() (redis.UniversalClient, error)
	// temporal is the Temporal connection, TLS loaded; temporalEnv the same
	// as the environment of the bare worker's process.
	temporal    temporalconn.Config
	temporalEnv []string
	// httpTLS is what the load generator trusts (nil: plain HTTP);
	// serverCert is what the floors serve with (nil: plain HTTP), read
	// from serverCertFiles (certificate, key) by the floors' process.
	httpTLS         *tls.Config
	serverCert      *tls.Certificate
	serverCertFiles [2]string
	// pprofURL and workerPprofURL are the gateway's and the worker's
	// pprof servers ("" when they have none).
	pprofURL, workerPprofURL string
	// cpu reads the stack's processes; processes lists them with their
	// roles.
	cpu       cpuReader
	processes []CPUProcess
	// close stops what the run started.
	close func()
}

// devFinalCache is how many finished operations the dev stack's gateway
// keeps (api.Config.FinalCache): fewer than the unkept replays cycle
// through (unkeptReplays), so that each of those reads the store, as the
// degraded pair must; a kept one costs the same at any size.
const devFinalCache = 64

// freeAddr is a free loopback address.
func freeAddr() (string, error) {
	port, err := testenv.FreePort()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", port), nil
}

// startDev starts the dev stack on free ports (harness/testenv).
func startDev(opts Options) (*target, error) {
	pprofAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	workerPprofAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	testenv.TemporalDynamicConfig = opts.TemporalDynamicConfig
	workerEnv := append([]string{pprofserver.EnvAddr + "=" + workerPprofAddr}, opts.WorkerEnv...)
	if opts.WorkerPollers > 0 {
		workerEnv = append([]string{fmt.Sprintf("%s=%d", worker.EnvPollers, opts.WorkerPollers)}, workerEnv...)
	}
	stack, stop, err := testenv.StartStandalone(testenv.StackOptions{
		ExtraGatewayEnv: append([]string{pprofserver.EnvAddr + "=" + pprofAddr,
			fmt.Sprintf("%s=%d", api.EnvFinalCache, devFinalCache)}, opts.GatewayEnv...),
		ExtraWorkerEnv:    workerEnv,
		DatabaseURLParams: opts.DatabaseURLParams,
		RedisURLParams:    opts.RedisURLParams,
	})
	if err != nil {
		return nil, err
	}
	cpu, procs := devCPU(stack, !opts.FloorsInline)
	return &target{
		dev: stack, gatewayURLs: []string{stack.GatewayURL}, token: devToken,
		downstreamURL: stack.DownstreamURL, databaseURL: stack.DatabaseURL,
		store:       storeconn.Config{DatabaseURL: stack.DatabaseURL, RedisURL: stack.Redis.URL},
		newRedis:    func() (redis.UniversalClient, error) { return stack.Redis.Client(), nil },
		temporal:    temporalconn.Config{Address: stack.Temporal.Address, Namespace: stack.Temporal.Namespace},
		temporalEnv: []string{"TEMPORAL_ADDRESS=" + stack.Temporal.Address, "TEMPORAL_NAMESPACE=" + stack.Temporal.Namespace},
		pprofURL:    "http://" + pprofAddr, workerPprofURL: "http://" + workerPprofAddr,
		cpu:       cpu,
		processes: procs,
		close:     stop,
	}, nil
}

// devCPU reads the dev stack's processes, each alone but PostgreSQL, read
// with its backends (children of its postmaster), and lists them with the
// bare worker, the floors' process (when floorsOwn) and the benchmark.
func devCPU(s *testenv.Stack, floorsOwn bool) (cpuReader, []CPUProcess) {
	c := cpuReader{
		pids: map[string]func() int{CPUGateway: s.Gateway.Pid, CPUWorker: s.Worker.Pid,
			CPUTemporal: s.Temporal.Pid, CPURedis: s.Redis.Pid, CPUDownstream: s.Downstream.Pid},
		trees: map[string]int{CPUPostgres: s.Postgres.Pid()},
	}
	names := slices.Concat(slices.Collect(maps.Keys(c.pids)), slices.Collect(maps.Keys(c.trees)))
	return c, stackProcesses(names, floorsOwn)
}

// openProd opens the running production-like profile whose stack.env is
// opts.ProdStack: two gateways (the load goes to each in turn), two
// workers, the Temporal server on PostgreSQL over mTLS, the Redis Cluster
// over TLS, the simulator. Its processes' CPU is read by their pid files
// next to stack.env, each with its children (PostgreSQL's backends). The
// profile is not the benchmark's: it leaves it running, so it neither
// takes levers (the gateway's and worker's settings, pools, pollers, the
// Temporal server's dynamic config, a twin) nor stops Redis (the degraded
// phases) nor profiles the gateway; it refuses those options.
func openProd(opts Options) (*target, error) {
	if opts.Twin != nil || len(opts.GatewayEnv)+len(opts.WorkerEnv)+len(opts.TemporalDynamicConfig) > 0 ||
		opts.DatabaseURLParams+opts.RedisURLParams != "" || opts.ProfileSeconds > 0 {
		return nil, fmt.Errorf("the production-like profile runs as scripts/prod.sh started it: " +
			"no twin, gateway or worker settings, pool parameters, Temporal dynamic config or gateway profile")
	}
	env, err := testenv.ReadStackEnv(opts.ProdStack)
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"TEMPORAL_TLS_CA_FILE", "TEMPORAL_TLS_CERT_FILE", "TEMPORAL_TLS_KEY_FILE"} {
		if env[k] == "" {
			return nil, fmt.Errorf("%s: no %s", opts.ProdStack, k)
		}
	}
	t := &target{
		gatewayURLs: strings.Split(env["GATEWAY_URLS"], ","), token: env["ONCEGATE_TOKEN_ALICE"],
		downstreamURL: env["DOWNSTREAM_URL"], databaseURL: env["DATABASE_URL"],
		close: func() {},
	}
	t.store = storeconn.Config{DatabaseURL: env["DATABASE_URL"], RedisURL: env["REDIS_URL"], RedisAddrs: env["REDIS_ADDRS"], RedisTLSCAFile: env["REDIS_TLS_CA_FILE"]}
	t.newRedis = func() (redis.UniversalClient, error) { return redisstore.Connect(t.store.Redis()) }
	for _, k := range []string{"TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_TLS_CA_FILE", "TEMPORAL_TLS_CERT_FILE", "TEMPORAL_TLS_KEY_FILE"} {
		t.temporalEnv = append(t.temporalEnv, k+"="+env[k])
	}
	t.temporal = temporalconn.Config{Address: env["TEMPORAL_ADDRESS"], Namespace: env["TEMPORAL_NAMESPACE"],
		CAFile: env["TEMPORAL_TLS_CA_FILE"], CertFile: env["TEMPORAL_TLS_CERT_FILE"], KeyFile: env["TEMPORAL_TLS_KEY_FILE"]}
	if err := t.temporal.Load(); err != nil {
		return nil, err
	}
	pem, err := os.ReadFile(env["ONCEGATE_CA_FILE"])
	if err != nil {
		return nil, fmt.Errorf("the profile's CA: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", env["ONCEGATE_CA_FILE"])
	}
	t.httpTLS = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}
	// The certificate every server of the profile presents (scripts/prod.sh
	// ensure_certs), next to its CA.
	tlsDir := filepath.Dir(env["ONCEGATE_CA_FILE"])
	t.serverCertFiles = [2]string{filepath.Join(tlsDir, "server.pem"), filepath.Join(tlsDir, "server-key.pem")}
	cert, err := tls.LoadX509KeyPair(t.serverCertFiles[0], t.serverCertFiles[1])
	if err != nil {
		return nil, fmt.Errorf("the profile's server certificate: %w", err)
	}
	t.serverCert = &cert
	run := filepath.Dir(opts.ProdStack)
	pidFiles, err := filepath.Glob(filepath.Join(run, "*.pid"))
	if err != nil {
		return nil, err
	}
	t.cpu = cpuReader{pids: map[string]func() int{}, trees: map[string]int{}}
	var names []string
	for _, f := range pidFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".pid")
		if _, err := processCPU(pid); err != nil {
			return nil, fmt.Errorf("%s of the profile (pid %d) does not run: %w", name, pid, err)
		}
		t.cpu.trees[name] = pid
		names = append(names, name)
	}
	t.processes = stackProcesses(names, !opts.FloorsInline)
	return t, nil
}
