package e2eprod

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/oncegate/oncegate/harness/hydra"
	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/internal/envconfig"
	"github.com/oncegate/oncegate/internal/temporalconn"
)

// temporalAudience is the audience the Temporal frontend's claim mapper
// requires in a token (global.authorization.audience).
const temporalAudience = "temporal"

// authServerConfig is a Temporal server (v1.29.1, bin/temporal-server) whose
// frontend authorizes every call with the default JWT claim mapper and
// authorizer on the keys of an identity provider (Hydra's JWKS): the
// permissions are the token's scp, shaped namespace:role. The server's own
// system worker reaches the history through the internal frontend, which
// needs no token. Persistence is SQLite in memory: the test's own server.
var authServerConfig = template.Must(template.New("auth").Parse(`
log: {stdout: true, level: warn}
persistence:
  defaultStore: sqlite-default
  visibilityStore: sqlite-visibility
  numHistoryShards: 1
  datastores:
    sqlite-default:
      sql: {pluginName: sqlite, databaseName: default, connectAddr: localhost, connectProtocol: tcp,
            connectAttributes: {mode: memory, cache: private}, maxConns: 1, maxIdleConns: 1, maxConnLifetime: 1h}
    sqlite-visibility:
      sql: {pluginName: sqlite, databaseName: default, connectAddr: localhost, connectProtocol: tcp,
            connectAttributes: {mode: memory, cache: private}, maxConns: 1, maxIdleConns: 1, maxConnLifetime: 1h}
global:
  membership: {maxJoinDuration: 30s, broadcastAddress: "127.0.0.1"}
  authorization:
    jwtKeyProvider:
      keySourceURIs: ["{{.JWKS}}"]
      refreshInterval: 1m
    permissionsClaimName: scp
    audience: {{.Audience}}
    authorizer: {{.Authorizer}}
    claimMapper: {{.ClaimMapper}}
services:
  frontend:
    rpc: {grpcPort: {{.P.frontend}}, membershipPort: {{.P.frontendM}}, bindOnLocalHost: true, httpPort: {{.P.frontendH}}}
  internal-frontend:
    rpc: {grpcPort: {{.P.internal}}, membershipPort: {{.P.internalM}}, bindOnLocalHost: true, httpPort: {{.P.internalH}}}
  history:
    rpc: {grpcPort: {{.P.history}}, membershipPort: {{.P.historyM}}, bindOnLocalHost: true}
  matching:
    rpc: {grpcPort: {{.P.matching}}, membershipPort: {{.P.matchingM}}, bindOnLocalHost: true}
  worker:
    rpc: {grpcPort: {{.P.worker}}, membershipPort: {{.P.workerM}}, bindOnLocalHost: true}
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active: {enabled: true, initialFailoverVersion: 1, rpcName: frontend,
             rpcAddress: "127.0.0.1:{{.P.frontend}}", httpAddress: "127.0.0.1:{{.P.frontendH}}"}
dcRedirectionPolicy: {policy: noop}
`))

// authServer is a running Temporal server whose frontend authorizes.
type authServer struct {
	address string
	proc    *testenv.Process
}

// startAuthServer starts bin/temporal-server with authServerConfig, its keys
// Hydra's, and waits until its frontend answers (its health API needs no
// token); a server that exits first (a port taken meanwhile on a busy
// machine) is started again on other ports. authorize false leaves the
// authorizer and the claim mapper unset (what the test must tell apart).
func startAuthServer(t *testing.T, ctx context.Context, h *hydra.Hydra, authorize bool) *authServer {
	t.Helper()
	bin, err := filepath.Abs("../../bin/temporal-server")
	require.NoError(t, err)
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("%s is not built (scripts/prod.sh build builds it): %v", bin, err)
	}
	var logs []string
	for range 3 {
		s := launchAuthServer(t, bin, h, authorize)
		c, err := client.NewLazyClient(client.Options{HostPort: s.address, Logger: quietLogger{}})
		require.NoError(t, err)
		err = testenv.WaitFor(ctx, 90*time.Second, func(ctx context.Context) error {
			if !s.proc.Running() {
				return nil // exited: started again below
			}
			_, err := c.WorkflowService().GetSystemInfo(ctx, &workflowservice.GetSystemInfoRequest{})
			return err
		})
		c.Close()
		if err == nil && s.proc.Running() {
			return s
		}
		s.proc.Stop()
		logs = append(logs, s.proc.Log())
	}
	t.Fatalf("the Temporal server did not start:\n%s", strings.Join(logs, "\n---\n"))
	return nil
}

// launchAuthServer starts bin on free ports.
func launchAuthServer(t *testing.T, bin string, h *hydra.Hydra, authorize bool) *authServer {
	t.Helper()
	ports := map[string]int{}
	for _, name := range []string{"frontend", "frontendM", "frontendH", "internal", "internalM", "internalH",
		"history", "historyM", "matching", "matchingM", "worker", "workerM"} {
		ports[name] = testenv.MustFreePort(t)
	}
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "config"), 0o755))
	f, err := os.Create(filepath.Join(dir, "config", "auth.yaml"))
	require.NoError(t, err)
	mode := map[bool]string{true: "default", false: `""`}[authorize]
	require.NoError(t, authServerConfig.Execute(f, map[string]any{"JWKS": h.Issuer + "/.well-known/jwks.json",
		"Audience": temporalAudience, "Authorizer": mode, "ClaimMapper": mode, "P": ports}))
	require.NoError(t, f.Close())
	args := []string{bin, "--root", dir, "--config", "config", "--env", "auth"}
	if !authorize {
		args = append(args, "--allow-no-auth")
	}
	proc, err := testenv.StartProcess("temporal-auth", filepath.Join(dir, "temporal.log"), append(args, "start"), nil, nil)
	require.NoError(t, err)
	t.Cleanup(proc.Stop)
	return &authServer{address: fmt.Sprintf("127.0.0.1:%d", ports["frontend"]), proc: proc}
}

// connect is a client of the server's default namespace configured as the
// gateway and the worker are (internal/temporalconn), from environ.
func (s *authServer) connect(t *testing.T, environ map[string]string) client.Client {
	t.Helper()
	cfg, err := envconfig.Parse[temporalconn.Config](environ)
	require.NoError(t, err)
	cfg.Address = s.address
	require.NoError(t, cfg.Load())
	c, err := client.NewLazyClient(cfg.Apply(client.Options{Logger: quietLogger{}}))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// waitForSignal is the workflow of the test: it ends with the signal it is
// sent.
func waitForSignal(ctx workflow.Context) (string, error) {
	var got string
	workflow.GetSignalChannel(ctx, "go").Receive(ctx, &got)
	return got, nil
}

// refused reports whether err is the frontend's refusal of an
// unauthorized call.
func refused(err error) bool {
	var denied *serviceerror.PermissionDenied
	return errors.As(err, &denied) || status.Code(err) == codes.Unauthenticated
}

// TestTemporalAuthorizationOnHydra: a Temporal server v1.29.1 whose
// frontend checks tokens of the same identity provider (Hydra's JWKS, the
// default claim mapper reading scp as namespace:role). The worker's
// client, configured as the gateway's and the worker's are
// (TEMPORAL_OAUTH_*: a client-credentials token, cached), starts, runs and
// signals a workflow; a signal without a token, or with an agent's token
// lacking the permission, is refused by the frontend, from the SDK and
// from the temporal CLI, and the workflow sees none of them.
func TestTemporalAuthorizationOnHydra(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	h, err := hydra.Start(ctx, hydra.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(h.Stop)
	aud := []string{temporalAudience}
	admin, err := h.CreateClient(ctx, hydra.MachineClient("temporal-admin", "secret-temporal-admin", []string{"temporal-system:admin"}, aud))
	require.NoError(t, err)
	wk, err := h.CreateClient(ctx, hydra.MachineClient("oncegate-worker", "secret-oncegate-worker", []string{"default:write"}, aud))
	require.NoError(t, err)
	agent, err := h.CreateClient(ctx, hydra.MachineClient("agent-dora", "secret-agent-dora", []string{"payments"}, aud))
	require.NoError(t, err)
	// Hydra makes its access-token key with the first token: the server
	// reads the JWKS at its start (and then every refreshInterval).
	_, err = h.Token(ctx, admin, []string{"temporal-system:admin"}, aud)
	require.NoError(t, err)
	s := startAuthServer(t, ctx, h, true)
	grant := func(c hydra.Client, scopes string) map[string]string {
		return map[string]string{"TEMPORAL_OAUTH_TOKEN_URL": h.Issuer + "/oauth2/token", "TEMPORAL_OAUTH_CLIENT_ID": c.ID,
			"TEMPORAL_OAUTH_CLIENT_SECRET": c.Secret, "TEMPORAL_OAUTH_SCOPES": scopes, "TEMPORAL_OAUTH_AUDIENCE": temporalAudience}
	}

	// The namespace, registered by the system's admin.
	ops := s.connect(t, grant(admin, "temporal-system:admin"))
	require.NoError(t, testenv.WaitFor(ctx, 90*time.Second, func(ctx context.Context) error {
		_, err := ops.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
			Namespace: "default", WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour)})
		var exists *serviceerror.NamespaceAlreadyExists
		if err != nil && !errors.As(err, &exists) {
			return err
		}
		return nil
	}), "the server starts and its admin registers the namespace: %s", s.proc.Log())

	owner := s.connect(t, grant(wk, "default:write"))
	w := worker.New(owner, "auth-test", worker.Options{})
	w.RegisterWorkflow(waitForSignal)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	var run client.WorkflowRun
	require.NoError(t, testenv.WaitFor(ctx, 60*time.Second, func(ctx context.Context) error {
		run, err = owner.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "op-auth-1", TaskQueue: "auth-test"}, waitForSignal)
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &started) {
			run, err = owner.GetWorkflow(ctx, "op-auth-1", ""), nil
		}
		return err
	}), "the worker's token starts the workflow")

	for name, c := range map[string]client.Client{
		"no token":                       s.connect(t, nil),
		"an agent's token without scope": s.connect(t, grant(agent, "payments")),
	} {
		err := c.SignalWorkflow(ctx, "op-auth-1", "", "go", "from "+name)
		require.Error(t, err, name)
		assert.True(t, refused(err), "%s: refused by the frontend, got %T %v", name, err, err)
	}
	tokenOf := func(c hydra.Client, scope string) string {
		tok, err := h.Token(ctx, c, []string{scope}, aud)
		require.NoError(t, err)
		return tok
	}
	cli := func(args ...string) (string, error) {
		bin, err := filepath.Abs("../../bin/temporal")
		require.NoError(t, err)
		out, err := exec.CommandContext(ctx, bin, append([]string{"workflow", "signal", "--address", s.address,
			"--namespace", "default", "--tls=false", "--workflow-id", "op-auth-1", "--name", "go"}, args...)...).CombinedOutput()
		return string(out), err
	}
	for name, args := range map[string][]string{
		"the CLI without a token":       {"--input", `"cli without token"`},
		"the CLI with an agent's token": {"--input", `"cli agent"`, "--api-key", tokenOf(agent, "payments")},
	} {
		out, err := cli(args...)
		assert.Error(t, err, "%s: %s", name, out)
		assert.Regexp(t, `(?i)permission|unauthori[sz]ed|Unauthenticated`, out, name)
	}

	require.NoError(t, owner.SignalWorkflow(ctx, "op-auth-1", "", "go", "from the worker"), "the worker's token signals")
	var got string
	require.NoError(t, run.Get(ctx, &got))
	assert.Equal(t, "from the worker", got, "the only signal the workflow saw is the one the frontend let through")

	out, err := cli("--input", `"cli worker"`, "--api-key", tokenOf(wk, "default:write"))
	assert.Error(t, err, "the workflow is closed: %s", out)
	assert.NotRegexp(t, `(?i)permission denied|unauthori[sz]ed`, out, "a token with the permission is let through (the workflow has ended)")
}
