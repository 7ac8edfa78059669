// Package api is the agent-facing HTTP gateway (docs/contract.md §4): the
// routes, middleware, request bodies, rendering and pages around the
// transport-free use cases of package gateway, on Echo. Every answer,
// including Echo's own errors, is a JSON body written for an LLM: a status,
// what it means, exactly what to do next, and whether a retry can help.
// The MCP endpoint serves the same tools by calling the same use cases.
package api

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

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
	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/internal/telemetry"
	"github.com/oncegate/oncegate/receipt"
)

// Options is what the HTTP server needs besides the service.
type Options struct {
	// Authenticator turns bearer tokens into identities (required).
	Authenticator auth.Authenticator
	// MCPAuthenticator authenticates the MCP endpoint's bearer tokens: with
	// OIDC, the identity providers' tokens issued for the MCP resource
	// (OIDCConfig.MCPResource) instead of the REST API; nil means
	// Authenticator.
	MCPAuthenticator auth.Authenticator
	// Logger receives structured logs; nil means slog.Default().
	Logger *slog.Logger
	// Registerer receives the server's metrics; nil means a new registry.
	Registerer prometheus.Registerer
	// Gatherer is served on /metrics; nil means Registerer when it is a
	// *prometheus.Registry, else the default gatherer.
	Gatherer prometheus.Gatherer
	// TracerProvider makes the request spans; nil means one that records
	// trace ids and exports nothing.
	TracerProvider trace.TracerProvider
	// Config holds the transport's settings; zero fields take their defaults.
	Config Config
}

// Server is the gateway's HTTP server.
type Server struct {
	svc   *gateway.Service
	authn auth.Authenticator
	log   *slog.Logger
	cfg   Config
	msgs  *messages.Catalog
	// responses counts the answers by status; confirm times the confirms.
	responses *prometheus.CounterVec
	confirm   *prometheus.HistogramVec
	tracer    trace.TracerProvider
	echo      *echo.Echo
	// tools holds each catalog scope's preview and confirm tool names
	// (toolNames), made once for the texts of every answer.
	tools map[string][2]string
	// mcpAuthn authenticates the MCP endpoint's tokens, and mcpRes
	// describes it as a resource server (nil without OIDC; mcpgate.go).
	mcpAuthn auth.Authenticator
	mcpRes   *mcpResource
	// pollAfter and retryAfter are the service's PollAfter and RetryAfter
	// as answers tell them, made once.
	pollAfter, retryAfter wait
}

// New builds the HTTP server with its routes around svc.
func New(svc *gateway.Service, opts Options) (*Server, error) {
	if svc == nil {
		return nil, errors.New("api: the service is required")
	}
	if opts.Authenticator == nil {
		return nil, errors.New("api: Authenticator is required")
	}
	msgs, err := messages.Load()
	if err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	s := &Server{svc: svc, authn: opts.Authenticator, log: opts.Logger, cfg: opts.Config.withDefaults(svc.Config()),
		msgs: msgs, tracer: opts.TracerProvider}
	s.mcpAuthn, s.mcpRes = opts.MCPAuthenticator, newMCPResource(s.cfg)
	if s.mcpAuthn == nil {
		s.mcpAuthn = s.authn
	}
	if s.tracer == nil {
		s.tracer = sdktrace.NewTracerProvider()
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	gcfg := svc.Config()
	s.pollAfter, s.retryAfter = newWait(gcfg.PollAfter), newWait(gcfg.RetryAfter)
	cat := svc.Catalog()
	s.tools = make(map[string][2]string, len(cat.Actions))
	for scope := range cat.Actions {
		preview, confirm := toolNames(scope)
		s.tools[scope] = [2]string{preview, confirm}
	}
	reg, gath := opts.Registerer, opts.Gatherer
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
	if s.responses, s.confirm, err = newMetrics(reg); err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	s.echo = s.routes(gath)
	return s, nil
}

// Handler returns the Echo instance serving every route.
func (s *Server) Handler() http.Handler { return s.echo }

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
	v1.POST("/ops/operations/:id/resolution-payload", behind(s.handleOpsResolutionPayload, authed, operator))
	v1.GET("/ops/limits/:subject", behind(s.handleOpsLimits, authed, operator))
	v1.POST("/ops/limits/:subject/reset", behind(s.handleOpsLimitsReset, authed, operator))
	// Downstreams report business states here, authenticated by their
	// signature (not by a bearer token).
	v1.POST("/webhooks/:scope", s.handleWebhook)

	// Approvals (docs/contract.md §7): pages a person opens and the
	// ceremonies their passkey answers; no bearer token is taken there
	// (noBearer refuses one: a token never approves). The operators' side
	// is under /v1/ops.
	if s.svc.ApprovalsOn() {
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

	// The agent surface: tool definitions, the same tools over MCP (each
	// tool call goes to the same use cases as its route, mcpTools), and the
	// OpenAPI document. The MCP endpoint authenticates its own tokens
	// (mcpGate, a resource server of its own with OIDC) and hands the
	// identity to the tools.
	cat := s.svc.Catalog()
	v1.GET("/tools", behind(echo.WrapHandler(tools.Handler(cat)), authed))
	e.Any("/mcp", behind(echo.WrapHandler(mcpserver.New(cat, mcpTools{s}, mcpserver.Options{Logger: s.log})), s.mcpGate))
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
