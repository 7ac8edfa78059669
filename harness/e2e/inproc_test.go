package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	temporalclient "go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/oncegate/oncegate/activities"
	"github.com/oncegate/oncegate/api"
	"github.com/oncegate/oncegate/api/auth"
	"github.com/oncegate/oncegate/engine"
	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/harness/simulator"
	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/idemstore/combined"
	"github.com/oncegate/oncegate/idemstore/pgstore"
	"github.com/oncegate/oncegate/idemstore/redisstore"
	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/receipt"
	"github.com/oncegate/oncegate/worker"
)

// clock is a settable clock for the gateway.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// inprocStack runs the gateway, worker and simulator in this process against
// real Redis, PostgreSQL and Temporal, with the gateway's clock injected.
type inprocStack struct {
	url   string
	clock *clock
	sim   string
	rdb   *redis.Client
	truth *pgstore.Store
	// simDB is the simulator's database, to count every side effect.
	simDB *pgxpool.Pool
	// tc is the Temporal client the gateway uses.
	tc temporalclient.Client
}

func startInproc(t *testing.T) *inprocStack {
	t.Helper()
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	return startInprocWith(t, filepath.Join(root, "deployments", "catalog.dev.yaml"))
}

// startInprocWith is startInproc with the catalog at catalogPath.
func startInprocWith(t *testing.T, catalogPath string) *inprocStack {
	t.Helper()
	ctx := context.Background()
	logger := slog.New(testenv.FailOnTextFaults(t, slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})))
	root, err := testenv.RepoRoot()
	require.NoError(t, err)

	// The downstream simulator.
	simPool, err := pgxpool.New(ctx, testenv.NewDatabase(t))
	require.NoError(t, err)
	t.Cleanup(simPool.Close)
	sim, err := simulator.New(ctx, simPool, logger)
	require.NoError(t, err)
	t.Cleanup(sim.Close)
	simSrv := httptest.NewServer(sim.Handler())
	t.Cleanup(simSrv.Close)
	t.Setenv("DOWNSTREAM_URL", simSrv.URL)

	// The stores.
	r := testenv.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	t.Cleanup(func() { rdb.Close() })
	truth, err := pgstore.Open(ctx, testenv.NewDatabase(t))
	require.NoError(t, err)
	require.NoError(t, truth.Migrate(ctx))
	t.Cleanup(truth.Close)
	store := combined.New(redisstore.New(rdb), truth, combined.Options{Logger: logger, Registerer: prometheus.NewRegistry()})
	t.Cleanup(store.Close)

	// Temporal and the worker.
	tp := testenv.SharedTemporal(t)
	tc := tp.Client(t)
	queue := "inproc-" + fingerprint.NewNonce()
	w := worker.New(tc, queue, &activities.Activities{Truth: truth, Store: store, HTTP: &http.Client{}, Logger: logger}, sdkworker.Options{})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	// The gateway.
	cat, err := catalog.Load(catalogPath, gateway.Defaults().ConfirmWait)
	require.NoError(t, err)
	keys, err := fingerprint.ParseKeyring("inproc:" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef")))
	require.NoError(t, err)
	receipts, err := receipt.ParseKeyring(testenv.NewReceiptKeys())
	require.NoError(t, err)
	tokens, err := auth.LoadTokens(filepath.Join(root, "deployments", "tokens.dev.yaml"))
	require.NoError(t, err)
	clk := &clock{now: time.Now()}
	svc, err := gateway.New(gateway.Deps{
		Catalog: cat, Keyring: keys, Receipts: receipts, Claims: store, Engine: engine.New(tc, queue, logger),
		Logger: logger, Registerer: prometheus.NewRegistry(), Now: clk.Now, Approvals: truth, Mandates: truth,
		Config: gateway.Config{Env: gateway.EnvDev, PublicURL: inprocPublicURL},
	})
	require.NoError(t, err)
	srv, err := api.New(svc, api.Options{Authenticator: tokens, Logger: logger})
	require.NoError(t, err)
	gw := httptest.NewServer(srv.Handler())
	t.Cleanup(gw.Close)
	return &inprocStack{url: gw.URL, clock: clk, sim: simSrv.URL, rdb: rdb, truth: truth, simDB: simPool, tc: tc}
}

// inprocPublicURL is the in-process gateway's public URL: the origin its
// approval pages are served from, and the one a test's software
// authenticator reports.
const inprocPublicURL = "http://localhost:18999"

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

func (s *inprocStack) post(t *testing.T, path string, body any) answer {
	return call(t, http.MethodPost, s.url+path, "dev-alice", body)
}

// TestExpiryBoundaryAndReplayAfterExp: first consumption is accepted at
// exp-1s and refused at exp and exp+1s; a consumed fingerprint replays its
// first result after exp.
func TestExpiryBoundaryAndReplayAfterExp(t *testing.T) {
	s := startInproc(t)
	prev := func(amount string) (string, time.Time, string) {
		p := map[string]any{"amount": amount, "currency": "EUR", "payee_id": "p-exp"}
		a := s.post(t, "/v1/actions/payments.transfer/preview", map[string]any{"params": p})
		require.Equal(t, "preview_ready", a.str("status"), a.String())
		exp, err := time.Parse(time.RFC3339, a.str("expires_at"))
		require.NoError(t, err)
		return a.str("fingerprint"), exp, a.str("operation_id")
	}
	conf := func(fp, amount string) answer {
		p := map[string]any{"amount": amount, "currency": "EUR", "payee_id": "p-exp"}
		return s.post(t, "/v1/actions/payments.transfer/confirm", map[string]any{"fingerprint": fp, "params": p})
	}

	// exp-1s: accepted.
	fp, exp, _ := prev("64.00")
	s.clock.Set(exp.Add(-time.Second))
	first := conf(fp, "64.00")
	require.Contains(t, []string{"completed", "in_progress"}, first.str("status"), first.String())
	id := first.str("operation_id")
	deadline := time.Now().Add(60 * time.Second)
	for first.str("status") != "completed" && first.str("status") != "already_completed" {
		require.True(t, time.Now().Before(deadline), "never completed: %s", first)
		time.Sleep(100 * time.Millisecond)
		first = conf(fp, "64.00")
	}
	ref := first.str("result_ref")
	require.NotEmpty(t, ref)

	// Long after exp: the consumed fingerprint replays the first result.
	s.clock.Set(exp.Add(time.Hour))
	replay := conf(fp, "64.00")
	assert.Equal(t, "already_completed", replay.str("status"), replay.String())
	assert.Equal(t, ref, replay.str("result_ref"))
	assert.Equal(t, id, replay.str("operation_id"))
	assert.Equal(t, 1, s.executions(t, id))

	// exp and exp+1s: a never-consumed fingerprint is refused; nothing runs.
	s.clock.Set(time.Now())
	for _, at := range []time.Duration{0, time.Second} {
		fp2, exp2, id2 := prev("65.00")
		s.clock.Set(exp2.Add(at))
		refused := conf(fp2, "65.00")
		assert.Equal(t, http.StatusGone, refused.Code, refused.String())
		assert.Equal(t, "fingerprint_expired", refused.str("status"))
		assert.Equal(t, 0, s.executions(t, id2))
		s.clock.Set(time.Now())
	}
}

func (s *inprocStack) executions(t *testing.T, ref string) int {
	t.Helper()
	resp, err := httpClient.Get(s.sim + "/_sim/executions?ref=" + ref)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Count int `json:"count"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out.Count
}
