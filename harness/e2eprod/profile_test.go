// Package e2eprod holds the end-to-end and crash tests of the production-like
// profile (docs/contract.md §1b): they run against a profile started by
// `make prod-up` — two gateways, two workers, a Temporal server on
// PostgreSQL, a Redis Cluster — whose .run-prod/stack.env
// ONCEGATE_PROD_STACK names. `make test-prod` sets it; without it every test
// of the profile is skipped (so `make test` compiles and vets them but does
// not run them). TestTemporalAuthorizationOnHydra starts its own Temporal
// server (bin/temporal-server, which the profile's build makes) and Hydra,
// and runs whenever that binary is built.
// The tests kill the profile's processes by their pid files and bring them
// back with `scripts/prod.sh start`, so they run one at a time.
package e2eprod

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/oncegate/oncegate/harness/testenv"
)

// profile is the running production-like profile, read from its stack.env.
type profile struct {
	env      map[string]string
	dir      string // .run-prod
	root     string // the checkout
	gateways []string
	roots    *x509.CertPool // the profile's CA

	mu      sync.Mutex
	answers map[string]int // what the agents were told: statuses, and "transport_error"
}

// count records one answer an agent got.
func (p *profile) count(what string) {
	p.mu.Lock()
	p.answers[what]++
	p.mu.Unlock()
}

// told returns how often agents got each answer since the last call, and resets.
func (p *profile) told() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.answers
	p.answers = map[string]int{}
	return out
}

// loadProfile reads ONCEGATE_PROD_STACK or skips t.
func loadProfile(t *testing.T) *profile {
	t.Helper()
	path := os.Getenv("ONCEGATE_PROD_STACK")
	if path == "" {
		t.Skip("ONCEGATE_PROD_STACK is unset: run `make test-prod` (it starts the production-like profile)")
	}
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	p := &profile{env: map[string]string{}, answers: map[string]int{}, dir: filepath.Dir(path), root: filepath.Dir(filepath.Dir(path))}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export ")
		if k, v, ok := strings.Cut(line, "="); ok {
			p.env[k] = strings.Trim(v, "'")
		}
	}
	require.NoError(t, sc.Err())
	for _, k := range []string{"GATEWAY_URLS", "DOWNSTREAM_URL", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_METRICS_URL", "REDIS_ADDRS",
		"ONCEGATE_TOKEN_ALICE", "ONCEGATE_OPS_TOKEN", "ONCEGATE_CA_FILE", "TEMPORAL_TLS_CERT_FILE", "TEMPORAL_TLS_KEY_FILE"} {
		require.NotEmptyf(t, p.env[k], "%s in %s", k, path)
	}
	p.gateways = strings.Split(p.env["GATEWAY_URLS"], ",")
	require.Len(t, p.gateways, 2, "the profile runs two gateways")
	pem, err := os.ReadFile(p.env["ONCEGATE_CA_FILE"])
	require.NoError(t, err, "the profile's CA")
	p.roots = x509.NewCertPool()
	require.True(t, p.roots.AppendCertsFromPEM(pem), "a certificate in %s", p.env["ONCEGATE_CA_FILE"])
	httpClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: p.tlsConfig()}}
	return p
}

// tlsConfig trusts the profile's CA (every server of the profile presents
// a certificate it signed).
func (p *profile) tlsConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: p.roots}
}

// redis returns a client of one Redis node, over TLS.
func (p *profile) redis(t testing.TB, addr string) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, TLSConfig: p.tlsConfig()})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// answer is a decoded agent-facing body with its HTTP status and headers.
type answer struct {
	Code   int
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

func (a answer) str(key string) string {
	s, _ := a.Body[key].(string)
	return s
}

func (a answer) String() string { return fmt.Sprintf("%d %s", a.Code, a.Raw) }

// httpClient is the agents' client; loadProfile makes it trust the
// profile's CA (the gateways serve HTTPS).
var httpClient = &http.Client{Timeout: 30 * time.Second}

// send sends one request; a transport error (a killed gateway) is returned,
// not fatal, so that agents can fail over to the other gateway.
func send(method, url, token string, body any) (answer, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return answer{}, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return answer{}, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	a := answer{Code: resp.StatusCode, Header: resp.Header, Raw: raw}
	if err := json.Unmarshal(raw, &a.Body); err != nil {
		return a, fmt.Errorf("%s %s: body is not JSON: %s", method, url, raw)
	}
	return a, nil
}

// must is send for calls that must reach the server.
func must(t testing.TB, method, url, token string, body any) answer {
	t.Helper()
	a, err := send(method, url, token, body)
	require.NoError(t, err)
	return a
}

func (p *profile) alice() string { return p.env["ONCEGATE_TOKEN_ALICE"] }

// params returns transfer params no other operation of the run shares (the
// amnesia guard would ask to acknowledge a repeat otherwise).
func params(amount string) map[string]any {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return map[string]any{"amount": amount, "currency": "USD", "payee_id": "p-" + hex.EncodeToString(b), "memo": "e2eprod"}
}

// previewOn previews scope on gateway gw and returns fingerprint and operation id.
func (p *profile) previewOn(t testing.TB, gw, scope string, prm map[string]any) (string, string) {
	t.Helper()
	a := must(t, http.MethodPost, gw+"/v1/actions/"+scope+"/preview", p.alice(), map[string]any{"params": prm})
	require.Equal(t, "preview_ready", a.str("status"), a.String())
	return a.str("fingerprint"), a.str("operation_id")
}

func (p *profile) confirmOn(gw, scope, fp string, prm map[string]any) (answer, error) {
	return send(http.MethodPost, gw+"/v1/actions/"+scope+"/confirm", p.alice(), map[string]any{"fingerprint": fp, "params": prm})
}

// executions asks the simulator how many side effects ran for ref.
func (p *profile) executions(t testing.TB, ref string) int {
	t.Helper()
	a := must(t, http.MethodGet, p.env["DOWNSTREAM_URL"]+"/_sim/executions?ref="+ref, "", nil)
	n, ok := a.Body["count"].(float64)
	require.True(t, ok, a.String())
	return int(n)
}

// waitExecutions waits until the simulator has executed ref n times.
func (p *profile) waitExecutions(t testing.TB, ref string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for p.executions(t, ref) < n {
		require.Falsef(t, time.Now().After(deadline), "%s never reached %d executions", ref, n)
		time.Sleep(50 * time.Millisecond)
	}
}

// setFaults replaces the simulator's faults; nil clears them.
func (p *profile) setFaults(t testing.TB, faults map[string]any) {
	t.Helper()
	method, body := http.MethodPut, io.Reader(nil)
	if faults == nil {
		method = http.MethodDelete
	} else {
		b, _ := json.Marshal(faults)
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, p.env["DOWNSTREAM_URL"]+"/_sim/faults", body)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Less(t, resp.StatusCode, 300)
}

// pid reads .run-prod/<name>.pid.
func (p *profile) pid(t testing.TB, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(p.dir, name+".pid"))
	require.NoError(t, err, "pid file of %s", name)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return pid
}

// running reports whether pid is a live process (a zombie is dead).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}

// kill sends SIGKILL to the component and waits until it is gone.
func (p *profile) kill(t testing.TB, name string) {
	t.Helper()
	pid := p.pid(t, name)
	require.Truef(t, running(pid), "%s (pid %d) runs before it is killed", name, pid)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	deadline := time.Now().Add(10 * time.Second)
	for running(pid) {
		require.Falsef(t, time.Now().After(deadline), "%s (pid %d) survived SIGKILL", name, pid)
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("killed %s (pid %d) with SIGKILL", name, pid)
}

// start brings components back with `scripts/prod.sh start`.
func (p *profile) start(t testing.TB, names ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(p.root, "scripts", "prod.sh"), append([]string{"start"}, names...)...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "prod.sh start %v:\n%s", names, out)
}

// temporalTLS is the client side of mTLS to the profile's Temporal
// frontend: its CA and the profile's client certificate.
func (p *profile) temporalTLS(t testing.TB) *tls.Config {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(p.env["TEMPORAL_TLS_CERT_FILE"], p.env["TEMPORAL_TLS_KEY_FILE"])
	require.NoError(t, err)
	tc := p.tlsConfig()
	tc.Certificates = []tls.Certificate{cert}
	return tc
}

// temporal dials the profile's Temporal server (mTLS).
func (p *profile) temporal(t testing.TB) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: p.env["TEMPORAL_ADDRESS"], Namespace: p.env["TEMPORAL_NAMESPACE"],
		ConnectionOptions: client.ConnectionOptions{TLS: p.temporalTLS(t)}})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// temporalCLI runs bin/temporal against the profile's server (mTLS).
func (p *profile) temporalCLI(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(p.root, "bin", "temporal"),
		append(args, "--address", p.env["TEMPORAL_ADDRESS"], "--namespace", p.env["TEMPORAL_NAMESPACE"],
			"--tls-ca-path", p.env["ONCEGATE_CA_FILE"], "--tls-cert-path", p.env["TEMPORAL_TLS_CERT_FILE"],
			"--tls-key-path", p.env["TEMPORAL_TLS_KEY_FILE"])...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// outcome is how one agent's operation ended.
type outcome struct {
	ID     string
	Status string // completed, failed, needs_manual_review
	Ref    string
	Err    error
	Took   time.Duration // preview to settled, in load
}

// terminal lists the answers after which an agent stops.
var terminal = map[string]string{
	"completed": "completed", "already_completed": "completed",
	"failed": "failed", "already_failed": "failed",
	"needs_manual_review": "needs_manual_review",
}

// countAnswer records a's status, or a transport error.
func (p *profile) countAnswer(a answer, err error) {
	if err != nil {
		p.count("transport_error")
		return
	}
	p.count(a.str("status"))
}

// pause waits the answer's key milliseconds (def without it), or until ctx ends.
func pause(ctx context.Context, a answer, key string, def time.Duration) {
	d := def
	if ms, ok := a.Body[key].(float64); ok && ms > 0 {
		d = time.Duration(ms) * time.Millisecond
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// agent runs one operation the way a careful agent does against a pool of
// gateways: preview, confirm, and on a transport error (its gateway died)
// or temporarily_unavailable send the very same request again, to the next
// gateway; on in_progress poll by confirming again after poll_after_ms
// (confirm is idempotent, and a repeat is what takes an orphaned claim
// over). It gives up at the deadline.
func (p *profile) agent(ctx context.Context, first int, scope string, prm map[string]any) outcome {
	var o outcome
	gw := first
	next := func() { gw = (gw + 1) % len(p.gateways) }
	var fp string
	for fp == "" {
		if ctx.Err() != nil {
			o.Err = fmt.Errorf("preview never answered: %w", ctx.Err())
			return o
		}
		a, err := send(http.MethodPost, p.gateways[gw]+"/v1/actions/"+scope+"/preview", p.alice(), map[string]any{"params": prm})
		p.countAnswer(a, err)
		switch {
		case err != nil:
			next()
			pause(ctx, a, "", 200*time.Millisecond)
		case a.str("status") == "temporarily_unavailable":
			next()
			pause(ctx, a, "retry_after_ms", time.Second)
		case a.str("status") == "preview_ready":
			fp, o.ID = a.str("fingerprint"), a.str("operation_id")
		default:
			o.Err = fmt.Errorf("preview: %s", a)
			return o
		}
	}
	return p.settle(ctx, gw, scope, fp, o.ID, prm)
}

// settle is the confirm half of agent, for a fingerprint already previewed.
func (p *profile) settle(ctx context.Context, first int, scope, fp, id string, prm map[string]any) outcome {
	o := outcome{ID: id}
	gw := first
	next := func() { gw = (gw + 1) % len(p.gateways) }
	for {
		if ctx.Err() != nil {
			o.Err = fmt.Errorf("operation %s never settled: %w", o.ID, ctx.Err())
			return o
		}
		a, err := p.confirmOn(p.gateways[gw], scope, fp, prm)
		p.countAnswer(a, err)
		if err != nil {
			next()
			pause(ctx, a, "", 200*time.Millisecond)
			continue
		}
		st := a.str("status")
		if s, ok := terminal[st]; ok {
			o.Status, o.Ref = s, a.str("result_ref")
			return o
		}
		switch st {
		case "in_progress":
			pause(ctx, a, "poll_after_ms", time.Second)
		case "temporarily_unavailable":
			next()
			pause(ctx, a, "retry_after_ms", time.Second)
		default:
			o.Err = fmt.Errorf("confirm %s: %s", o.ID, a)
			return o
		}
	}
}

// load runs n operations with `agents` concurrent agents, spread over the
// gateways, and calls during once, after the first `after` operations
// settled. It returns every outcome and how often the agents were told
// each status (and "transport_error") during the load.
func (p *profile) load(t *testing.T, n, agents, after int, during func()) ([]outcome, map[string]int) {
	t.Helper()
	p.told()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	jobs := make(chan int)
	results := make(chan outcome, n)
	for a := range agents {
		go func() {
			for i := range jobs {
				start := time.Now()
				o := p.agent(ctx, a%len(p.gateways), "payments.transfer", params(fmt.Sprintf("%d.%02d", 10+i, a)))
				o.Took = time.Since(start)
				results <- o
			}
		}()
	}
	go func() {
		defer close(jobs)
		for i := range n {
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	var out []outcome
	for len(out) < n {
		select {
		case o := <-results:
			out = append(out, o)
			if len(out) == after && during != nil {
				during()
			}
		case <-ctx.Done():
			t.Fatalf("load: %d of %d operations settled: %v", len(out), n, ctx.Err())
		}
	}
	told := p.told()
	t.Logf("agents were told: %v", told)
	return out, told
}

// requireExactlyOnce checks that every operation settled completed and that
// the downstream executed each exactly once.
func (p *profile) requireExactlyOnce(t *testing.T, outs []outcome) {
	t.Helper()
	seen := map[string]bool{}
	var errs []error
	for _, o := range outs {
		if o.Err != nil {
			errs = append(errs, o.Err)
			continue
		}
		if o.Status != "completed" {
			errs = append(errs, fmt.Errorf("operation %s settled %s", o.ID, o.Status))
		}
		if seen[o.ID] {
			errs = append(errs, fmt.Errorf("operation %s settled twice", o.ID))
		}
		seen[o.ID] = true
		if n := p.executions(t, o.ID); n != 1 {
			errs = append(errs, fmt.Errorf("operation %s executed %d times downstream", o.ID, n))
		}
	}
	require.NoError(t, errors.Join(errs...))
	t.Logf("%d operations settled completed, each executed exactly once downstream", len(outs))
}

// temporalMetric sums the samples of the Temporal server's metric name
// whose labels contain match (its Prometheus text at TEMPORAL_METRICS_URL).
func (p *profile) temporalMetric(t *testing.T, name, match string) float64 {
	t.Helper()
	resp, err := httpClient.Get(p.env["TEMPORAL_METRICS_URL"])
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	v, err := testenv.SumMetric(resp.Body, name, match)
	require.NoError(t, err)
	return v
}
