// Package api is the agent-facing HTTP gateway (docs/contract.md §4): preview,
// confirm, status, ops, health and metrics, on Echo. Every answer, including
// Echo's own errors, is a JSON body written for an LLM: a status, what it
// means, exactly what to do next, and whether a retry can help.
package api

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/github.com/labstack/echo/otelecho"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/oncegate/oncegate/api/auth"
	"github.com/oncegate/oncegate/api/mcpserver"
	"github.com/oncegate/oncegate/api/messages"
	"github.com/oncegate/oncegate/api/openapi"
	"github.com/oncegate/oncegate/api/tools"
	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/approval/ceremony"
	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/limits"
	"github.com/oncegate/oncegate/internal/telemetry"
	"github.com/oncegate/oncegate/internal/watch"
	"github.com/oncegate/oncegate/receipt"
)

// Deps is everything the server needs.
type Deps struct {
	// Catalog is the loaded action catalog (required).
	Catalog *catalog.Catalog
	// Keyring signs and verifies fingerprints (required).
	Keyring *fingerprint.Keyring
	// Receipts signs the receipt of every terminal answer and publishes its
	// public keys at /.well-known/jwks.json (required).
	Receipts *receipt.Keyring
	// Store is the combined idempotency store (required).
	Store idemstore.Store
	// Temporal starts and watches the operation workflows (required).
	Temporal Temporal
	// Authenticator turns bearer tokens into identities (required).
	Authenticator auth.Authenticator
	// MCPAuthenticator authenticates the MCP endpoint's bearer tokens: with
	// OIDC, the identity providers' tokens issued for the MCP resource
	// (OIDCConfig.MCPResource) instead of the REST API; nil means
	// Authenticator.
	MCPAuthenticator auth.Authenticator
	// Logger receives structured logs; nil means slog.Default().
	Logger *slog.Logger
	// Registerer receives the gateway's metrics; nil means a new registry.
	Registerer prometheus.Registerer
	// Gatherer is served on /metrics; nil means Registerer when it is a
	// *prometheus.Registry, else the new registry.
	Gatherer prometheus.Gatherer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// HTTPClient calls the quote endpoints; nil means a client with a 10s timeout.
	HTTPClient *http.Client
	// AlertHook is told about security events; nil means NopAlert.
	AlertHook AlertHook
	// Config holds the behaviour settings; zero fields take their defaults.
	Config Config
	// TracerProvider makes the request spans; nil means one that records
	// trace ids and exports nothing.
	TracerProvider trace.TracerProvider
	// Limits are the spend budgets and request rates; nil means none.
	Limits *limits.Limits
	// Rates counts the subjects' requests; nil means no rate is enforced.
	Rates RateLimiter
	// Budgets reads the budgets' windows (the preview's warning, the ops
	// view); nil means no warning and no ops view.
	Budgets BudgetOps
	// Outcomes tells the outcome of an operation whose workflow the
	// gateway started the moment the fast path records it; nil means
	// every confirm waits for its workflow's result.
	Outcomes idemstore.OutcomeFeed
	// Approvals keeps approvals, passkeys and enrolment invites (the
	// PostgreSQL truth). Required when an action's policy can ask for
	// approval; nil turns the approval and passkey routes off.
	Approvals approval.Store
}

// Server is the gateway's HTTP server.
type Server struct {
	cat      *catalog.Catalog
	keys     *fingerprint.Keyring
	receipts *receipt.Keyring
	// signed keeps the receipts signed lately (receipt.Cache): a replay or
	// status poll of an outcome does not sign it again.
	signed *receipt.Cache
	// results keeps the answer form of stored results (resultForms).
	results *resultForms
	// finals keeps the finished operations' records read from the store
	// (nil: Config.FinalCache is 0).
	finals *finals
	// tools holds each catalog scope's preview and confirm tool names
	// (toolNames), made once for the texts of every answer.
	tools    map[string][2]string
	store    idemstore.Store
	temporal Temporal
	authn    auth.Authenticator
	// mcpAuthn authenticates the MCP endpoint's tokens, and mcpRes
	// describes it as a resource server (nil without OIDC; mcpgate.go).
	mcpAuthn auth.Authenticator
	mcpRes   *mcpResource
	log      *slog.Logger
	now      func() time.Time
	http     *http.Client
	alert    AlertHook
	cfg      Config
	msgs     *messages.Catalog
	metrics  *metrics
	tracer   trace.TracerProvider
	instance string
	echo     *echo.Echo
	limits   *limits.Limits
	rates    RateLimiter
	budgets  BudgetOps
	watchers *watch.Group[watched]
	outcomes idemstore.OutcomeFeed
	// approvals and ceremony serve approvals (nil: off).
	approvals approval.Store
	ceremony  *ceremony.Ceremony
	// pollAfter and retryAfter are cfg's PollAfter and RetryAfter as
	// answers tell them, made once.
	pollAfter, retryAfter wait
}

// New validates deps and builds the server with its routes.
func New(deps Deps) (*Server, error) {
	switch {
	case deps.Catalog == nil:
		return nil, errors.New("api: Catalog is required")
	case deps.Keyring == nil:
		return nil, errors.New("api: Keyring is required")
	case deps.Receipts == nil:
		return nil, errors.New("api: Receipts is required")
	case deps.Store == nil:
		return nil, errors.New("api: Store is required")
	case deps.Temporal == nil:
		return nil, errors.New("api: Temporal is required")
	case deps.Authenticator == nil:
		return nil, errors.New("api: Authenticator is required")
	}
	msgs, err := messages.Load()
	if err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	if err := checkApprovals(deps); err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	s := &Server{
		cat: deps.Catalog, keys: deps.Keyring, receipts: deps.Receipts, store: deps.Store, temporal: deps.Temporal,
		authn: deps.Authenticator, log: deps.Logger, now: deps.Now, http: deps.HTTPClient,
		alert: deps.AlertHook, cfg: deps.Config.withDefaults(), msgs: msgs, instance: randomHex(8),
		tracer: deps.TracerProvider, limits: deps.Limits, rates: deps.Rates, budgets: deps.Budgets,
		approvals: deps.Approvals, outcomes: deps.Outcomes,
	}
	if s.limits == nil {
		s.limits = &limits.Limits{}
	}
	s.mcpAuthn, s.mcpRes = deps.MCPAuthenticator, newMCPResource(s.cfg)
	if s.mcpAuthn == nil {
		s.mcpAuthn = s.authn
	}
	s.pollAfter, s.retryAfter = newWait(s.cfg.PollAfter), newWait(s.cfg.RetryAfter)
	s.tools = make(map[string][2]string, len(s.cat.Actions))
	for scope := range s.cat.Actions {
		preview, confirm := toolNames(scope)
		s.tools[scope] = [2]string{preview, confirm}
	}
	if s.signed, err = receipt.NewCache(receipt.CacheSize); err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	if s.results, err = newResultForms(resultFormsSize); err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	if s.approvals != nil {
		if s.ceremony, err = ceremony.New(ceremony.Config{RPID: s.cfg.WebAuthnRPID, Origins: s.cfg.WebAuthnOrigins}); err != nil {
			return nil, fmt.Errorf("api: %w", err)
		}
	}
	if s.tracer == nil {
		s.tracer = sdktrace.NewTracerProvider()
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.http == nil {
		s.http = &http.Client{Timeout: 10 * time.Second}
	}
	if s.alert == nil {
		s.alert = NopAlert{}
	}
	reg, gath := deps.Registerer, deps.Gatherer
	if reg == nil {
		r := prometheus.NewRegistry()
		reg = r
		if gath == nil {
			gath = r
		}
	}
	if gath == nil {
		if r, ok := reg.(*prometheus.Registry); ok {
			gath = r
		} else {
			gath = prometheus.DefaultGatherer
		}
	}
	if s.metrics, err = newMetrics(reg); err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	if s.finals, err = newFinals(s.cfg.FinalCache, reg); err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	s.watchers = watch.New[watched](s.cfg.MaxWatchers, s.metrics.watch)
	ttls := map[string]float64{}
	for scope, a := range s.cat.Actions {
		ttls[scope] = a.InFlightTTL.Seconds()
	}
	if err := reg.Register(newBudgetCollector(s)); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return nil, fmt.Errorf("api: register budget metrics: %w", err)
		}
	}
	if err := reg.Register(newCatalogCollector(ttls)); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return nil, fmt.Errorf("api: register catalog metrics: %w", err)
		}
	}
	s.echo = s.routes(gath)
	return s, nil
}

// checkApprovals refuses a catalog whose actions ask for approval without
// an approval store, and, in a deployment, with the dev stack's relying
// party (localhost): a deployment sets ONCEGATE_PUBLIC_URL (and the RP ID
// and origins when they differ from it).
func checkApprovals(deps Deps) error {
	cfg := deps.Config.withDefaults()
	for _, scope := range deps.Catalog.Scopes() {
		if !deps.Catalog.Actions[scope].Approval.Asks() {
			continue
		}
		switch {
		case deps.Approvals == nil:
			return fmt.Errorf("action %s asks for approval: Approvals is required", scope)
		case cfg.Env != EnvDev && cfg.WebAuthnRPID == "localhost":
			return fmt.Errorf("action %s asks for approval, and a deployment (ONCEGATE_ENV %q) must set ONCEGATE_PUBLIC_URL "+
				"(where browsers reach the gateway; ONCEGATE_WEBAUTHN_RP_ID and ONCEGATE_WEBAUTHN_ORIGINS when they differ from it), "+
				"not the dev stack's localhost", scope, cfg.Env)
		}
	}
	return nil
}

// Handler returns the Echo instance serving every route.
func (s *Server) Handler() http.Handler { return s.echo }

// InstanceID is this gateway instance's random id, the first half of every
// claim owner it writes.
func (s *Server) InstanceID() string { return s.instance }

// routes builds the Echo instance.
func (s *Server) routes(gath prometheus.Gatherer) *echo.Echo {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.handleError
	if s.cfg.Telemetry.Exporting() {
		e.Use(otelecho.Middleware("oncegate-gateway", otelecho.WithTracerProvider(s.tracer),
			otelecho.WithPropagators(telemetry.Propagator)), traceMiddleware)
	} else {
		e.Use(continueTrace)
	}
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{
		DisablePrintStack: true,
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			s.log.ErrorContext(c.Request().Context(), "panic recovered",
				"trace_id", traceIDOf(c), "path", c.Request().URL.Path, "err", err, "stack", string(stack))
			return err
		},
	}))
	e.Use(limitBody)
	e.Use(middleware.ContextTimeout(s.cfg.RequestTimeout))

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(gath, promhttp.HandlerOpts{})))

	// Authentication is route-level middleware, not group middleware: a
	// group's middleware makes Echo register catch-all 404 routes under its
	// prefix, which would answer a wrong method with 404 instead of 405. It
	// is put in front of each handler once, here (behind).
	// An agent's routes refuse an operator's token, the ops routes an
	// agent's (routeFor, access.go).
	authed, agent, operator := s.authMiddleware, s.routeFor(agentRoute), s.routeFor(opsRoute)
	v1 := e.Group("/v1")
	v1.POST("/actions/:scope/preview", behind(s.handlePreview, authed, agent))
	v1.POST("/actions/:scope/confirm", behind(s.handleConfirm, s.timeConfirm, authed, agent))
	v1.GET("/operations/:id", behind(s.handleStatus, authed, agent))
	v1.GET("/ops/operations", behind(s.handleOpsList, authed, operator))
	v1.GET("/ops/operations/:id", behind(s.handleOpsGet, authed, operator))
	v1.POST("/ops/operations/:id/resolve", behind(s.handleOpsResolve, authed, operator))
	v1.GET("/ops/limits/:subject", behind(s.handleOpsLimits, authed, operator))
	v1.POST("/ops/limits/:subject/reset", behind(s.handleOpsLimitsReset, authed, operator))
	// Downstreams report business states here, authenticated by their
	// signature (not by a bearer token).
	v1.POST("/webhooks/:scope", s.handleWebhook)

	// Approvals (docs/contract.md §7): pages a person opens and the ceremonies their
	// passkey answers; no bearer token is taken there (noBearer refuses one:
	// a token never approves). The operators' side is under /v1/ops.
	if s.approvals != nil {
		e.GET("/approve/:id", s.handleApprovePage)
		e.POST("/approve/:id/options", behind(s.handleApproveOptions, s.noBearer))
		e.POST("/approve/:id/decision", behind(s.handleApproveDecision, s.noBearer))
		e.GET("/enrol/:token", s.handleEnrolPage)
		e.POST("/enrol/:token/options", behind(s.handleEnrolOptions, s.noBearer))
		e.POST("/enrol/:token/finish", behind(s.handleEnrolFinish, s.noBearer))
		v1.GET("/ops/approvals", behind(s.handleOpsApprovals, authed, operator))
		v1.GET("/ops/passkeys", behind(s.handleOpsPasskeys, authed, operator))
		v1.POST("/ops/passkeys/invites", behind(s.handleOpsInvite, authed, operator))
		v1.POST("/ops/passkeys/:id/revoke", behind(s.handleOpsRevoke, authed, operator))
	}

	// The agent surface: tool definitions, the same tools over MCP (each tool
	// call goes through this very handler, so there is one implementation of
	// preview, confirm and status), and the OpenAPI document.
	v1.GET("/tools", behind(echo.WrapHandler(tools.Handler(s.cat)), authed))
	// The MCP endpoint authenticates its own tokens (mcpGate, a resource
	// server of its own with OIDC) and hands the identity to the tools.
	e.Any("/mcp", behind(echo.WrapHandler(mcpserver.New(s.cat, e, mcpserver.Options{Logger: s.log})), s.mcpGate))
	s.routeMCPResource(e)
	e.GET("/openapi.json", echo.WrapHandler(openapi.Handler()))
	// The receipts' public keys, for verifying a receipt offline.
	e.GET(receipt.JWKSPath, s.handleJWKS)
	return e
}

// behind is h behind the route-level middleware mws, the first outermost:
// what Echo makes of a route's handler and middleware, made once here
// rather than by Echo on every request.
func behind(h echo.HandlerFunc, mws ...echo.MiddlewareFunc) echo.HandlerFunc {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

// randomHex returns n random bytes as lowercase hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}
