// Package simulator is the downstream payment service of docs/contract.md §6: a real
// HTTP service, persisting to PostgreSQL, that the dev stack, the tests and
// the demos call as the irreversible write API behind the gateway.
//
// It offers an Idempotency-Key honouring transfer endpoint (executes once per
// key, replays the first response, like Stripe), a legacy endpoint that
// ignores the key and executes on every call, a status lookup by
// client_reference, fee quotes, execution counters for tests, and faults
// (latency, 503s, hanging after commit, an unavailable status endpoint, and,
// like real servers, a commit that happens after the caller gave up, a status
// endpoint that lags behind commits, a 500 after a commit) stored
// in PostgreSQL so that they apply to every simulator process sharing the
// database and survive restarts.
package simulator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// BlockedPayeePrefix marks payees the quote endpoint refuses definitively
// (422 payee_blocked): the gateway's preview answers downstream_refused.
const BlockedPayeePrefix = "blocked-"

// DefaultQuoteTTL is how long a quote is valid unless WithQuoteTTL says otherwise.
const DefaultQuoteTTL = 10 * time.Minute

// Error codes of the simulator's JSON error bodies.
const (
	// CodeInvalidRequest is a body or query that fails validation (400).
	CodeInvalidRequest = "invalid_request"
	// CodeMissingIdempotencyKey is a POST /v1/transfers without Idempotency-Key (400).
	CodeMissingIdempotencyKey = "missing_idempotency_key"
	// CodeIdempotencyKeyReuse is a key sent again with different parameters (409).
	CodeIdempotencyKeyReuse = "idempotency_key_reuse"
	// CodeInsufficientFunds is the definite business refusal of an amount above 10000 (422).
	CodeInsufficientFunds = "insufficient_funds"
	// CodePayeeBlocked is the definite refusal to quote a transfer to a
	// payee whose id starts with BlockedPayeePrefix (422).
	CodePayeeBlocked = "payee_blocked"
	// CodeUnavailable is an injected fault or a database failure (503).
	CodeUnavailable = "unavailable"
	// CodeNotFound is an unknown transfer or endpoint (404).
	CodeNotFound = "not_found"
	// CodeMethodNotAllowed is a known path with another method (405).
	CodeMethodNotAllowed = "method_not_allowed"
	// CodeInternal is an unexpected failure (500).
	CodeInternal = "internal"
)

// Server is the simulator: its handlers and the PostgreSQL pool they use.
type Server struct {
	pool     *pgxpool.Pool
	logger   *slog.Logger
	quoteTTL time.Duration
	now      func() time.Time
	mux      *http.ServeMux
	stop     context.CancelFunc
}

// Option configures a Server.
type Option func(*Server)

// WithQuoteTTL sets how long quotes are valid (DefaultQuoteTTL by default).
func WithQuoteTTL(d time.Duration) Option { return func(s *Server) { s.quoteTTL = d } }

// WithClock sets the clock of quotes and transfers (time.Now by default).
func WithClock(now func() time.Time) Option { return func(s *Server) { s.now = now } }

// New migrates the simulator's schema in the database of pool (goose table
// MigrationTable) and returns a Server using it. Several Servers, in one
// process or many, may share the database.
func New(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger, opts ...Option) (*Server, error) {
	if pool == nil {
		return nil, errors.New("simulator: nil pool")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{pool: pool, logger: logger, quoteTTL: DefaultQuoteTTL, now: time.Now}
	for _, opt := range opts {
		opt(s)
	}
	if err := migrate(ctx, pool, logger); err != nil {
		return nil, fmt.Errorf("simulator: %w", err)
	}
	s.routes()
	settleCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stop = stop
	go s.settleLoop(settleCtx)
	return s, nil
}

// Close stops settling payouts in the background. Handlers still work (a
// payout status request settles what is due itself).
func (s *Server) Close() { s.stop() }

// routes registers the endpoints of docs/contract.md §6.
func (s *Server) routes() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.handleHealth)
	mux.HandleFunc("POST /v1/quotes", s.handleQuote)
	mux.HandleFunc("POST /v1/transfers", s.handleTransfer)
	mux.HandleFunc("POST /legacy/transfers", s.handleLegacyTransfer)
	mux.HandleFunc("GET /legacy/transfers", s.handleLegacyStatus)
	mux.HandleFunc("POST /v1/payouts", s.handlePayout)
	mux.HandleFunc("GET /v1/payouts", s.handlePayoutStatus)
	mux.Handle(MCPPath, s.mcpHandler())
	mux.HandleFunc("PUT /_sim/webhook", s.handlePutWebhook)
	mux.HandleFunc("DELETE /_sim/webhook", s.handleDeleteWebhook)
	mux.HandleFunc("GET /_sim/executions", s.handleExecutions)
	mux.HandleFunc("GET /_sim/faults", s.handleGetFaults)
	mux.HandleFunc("PUT /_sim/faults", s.handlePutFaults)
	mux.HandleFunc("DELETE /_sim/faults", s.handleDeleteFaults)
	mux.HandleFunc("POST /_sim/reset", s.handleReset)
	s.mux = mux
}

// Handler returns the HTTP handler of the simulator. Every error it answers,
// including unknown paths and methods, is JSON {"error":"code","message":"..."}.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		r.Body = http.MaxBytesReader(rec, r.Body, maxBodyBytes)
		if h, pattern := s.mux.Handler(r); pattern == "" {
			s.unrouted(rec, r, h)
		} else {
			s.mux.ServeHTTP(rec, r)
		}
		s.logger.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", rec.status), slog.Duration("duration", time.Since(start)))
	})
}

// unrouted answers a request no pattern matches with a JSON 404 or 405,
// keeping the Allow header ServeMux computes.
func (s *Server) unrouted(w http.ResponseWriter, r *http.Request, h http.Handler) {
	probe := &headerProbe{header: w.Header()}
	h.ServeHTTP(probe, r)
	w.Header().Del("X-Content-Type-Options")
	if probe.status == http.StatusMethodNotAllowed {
		writeError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path)
		return
	}
	writeError(w, http.StatusNotFound, CodeNotFound, "no such endpoint: "+r.URL.Path)
}

func (s *Server) handleHealth(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// errorBody is the JSON of every error answer.
type errorBody struct {
	Error   string `json:"error"`
	Message string `json:"message,omitempty"`
}

// writeJSON answers status with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":"internal","message":"encode response"}`)
	}
	writeRaw(w, status, b)
}

// writeRaw answers status with the JSON bytes b.
func writeRaw(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
	_, _ = w.Write([]byte("\n"))
}

// writeError answers status with a JSON error.
func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, errorBody{Error: code, Message: message})
}

// internalError logs err and answers 503 unavailable when the request was not
// cancelled: a database failure is a transient condition to the caller.
func (s *Server) internalError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		s.logger.InfoContext(r.Context(), "request cancelled", "path", r.URL.Path, "err", err)
		return
	}
	s.logger.ErrorContext(r.Context(), "request failed", "path", r.URL.Path, "err", err)
	writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "the simulator's database failed; retry later")
}

// statusRecorder remembers the status answered, for the access log.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

// WriteHeader records code and forwards it.
func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// headerProbe runs ServeMux's own 404/405 handler to learn its status and
// Allow header, discarding its plain-text body.
type headerProbe struct {
	header http.Header
	status int
}

// Header returns the real writer's header, so Allow passes through.
func (p *headerProbe) Header() http.Header { return p.header }

// Write discards the plain-text body.
func (p *headerProbe) Write(b []byte) (int, error) { return len(b), nil }

// WriteHeader records code.
func (p *headerProbe) WriteHeader(code int) { p.status = code }
