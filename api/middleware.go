package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/api/auth"
	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/internal/telemetry"

	"github.com/oncegate/oncegate/status"
)

// Context keys of echo.Context.
const (
	ctxTraceID  = "oncegate.trace_id"
	ctxIdentity = "oncegate.identity"
	ctxStatus   = "oncegate.status"
)

// timeConfirm records how long a confirm took, by the status it answered.
func (s *Server) timeConfirm(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		began := time.Now()
		err := next(c)
		st, _ := c.Get(ctxStatus).(status.Status)
		if st == "" {
			st = "unknown"
		}
		s.confirm.WithLabelValues(string(st)).Observe(time.Since(began).Seconds())
		return err
	}
}

// traceIDOf returns the request's trace id.
func traceIDOf(c echo.Context) string {
	if id, ok := c.Get(ctxTraceID).(string); ok {
		return id
	}
	return ""
}

// identityOf returns the authenticated identity.
func identityOf(c echo.Context) auth.Identity {
	id, _ := c.Get(ctxIdentity).(auth.Identity)
	return id
}

// callerOf is the authenticated identity as the service's caller.
func callerOf(c echo.Context) gateway.Caller { return callerFrom(identityOf(c)) }

// callerFrom is id as the service's caller.
func callerFrom(id auth.Identity) gateway.Caller {
	return gateway.Caller{Subject: id.Subject, Role: id.Role, Scoped: id.Scoped(), Scopes: id.Scopes, Client: id.Client}
}

// continueTrace stands for otelecho's middleware and traceMiddleware when
// no span is exported (no OTLP endpoint): the request carries the caller's
// trace, or a new one, under a span id of its own (telemetry.Continue), and
// no span is built and dropped per request; the trace is echoed as
// traceMiddleware echoes it. One middleware, not two: Echo makes each
// middleware's handler anew on every request.
func continueTrace(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		ctx := telemetry.Continue(req.Context(), req.Header)
		c.SetRequest(req.WithContext(ctx))
		echoTrace(ctx, c)
		return next(c)
	}
}

// traceMiddleware runs after otelecho's, which continues the caller's trace
// from a valid traceparent or starts a new one, with the request's span,
// and echoes that trace (echoTrace).
func traceMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		echoTrace(c.Request().Context(), c)
		return next(c)
	}
}

// echoTrace makes the trace id of the request's span, ctx's, the request's
// trace id, in every answer and log line, and echoes it in Traceparent
// (telemetry.Echo) and X-Trace-Id.
func echoTrace(ctx context.Context, c echo.Context) {
	h := c.Response().Header()
	traceID := telemetry.Echo(ctx, h)
	c.Set(ctxTraceID, traceID)
	h[headerTraceID] = []string{traceID}
}

// headerTraceID echoes the request's trace id (canonical, as set directly).
const headerTraceID = "X-Trace-Id"

// errNoBearer is why a request without a bearer token is unauthenticated
// (made once, not on every request).
var errNoBearer = fmt.Errorf("%w: no bearer token", auth.ErrUnauthenticated)

// authMiddleware authenticates the bearer token; a refusal is answered by
// refuseToken. A request the MCP endpoint makes for a tool call carries the
// identity it verified (auth.WithIdentity: a Go value, which no client can
// send) and is not authenticated again.
func (s *Server) authMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if id, ok := auth.IdentityFrom(c.Request().Context()); ok {
			c.Set(ctxIdentity, id)
			return next(c)
		}
		token, ok := bearerToken(c.Request().Header.Get(echo.HeaderAuthorization))
		var id auth.Identity
		err := errNoBearer
		if ok {
			id, err = s.authn.Authenticate(c.Request().Context(), token)
		}
		if err != nil {
			s.log.InfoContext(c.Request().Context(), "unauthenticated", "trace_id", traceIDOf(c), "err", err)
			return s.render(c, refuseToken(c.Response().Header(), err, ok, ""))
		}
		c.Set(ctxIdentity, id)
		return next(c)
	}
}

// bearerToken extracts the token of "Bearer <token>".
func bearerToken(h string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// handleError is Echo's HTTPErrorHandler: every error becomes a JSON answer.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	r := s.errorAnswer(err)
	if rerr := s.render(c, r); rerr != nil {
		s.log.ErrorContext(c.Request().Context(), "write error answer", "trace_id", traceIDOf(c), "err", rerr)
	}
}

// errorAnswer maps an error returned by a handler or by Echo to an answer.
func (s *Server) errorAnswer(err error) gateway.Answer {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		switch he.Code {
		case http.StatusNotFound:
			return gateway.NewAnswer(status.NotFound)
		case http.StatusMethodNotAllowed:
			return gateway.NewAnswer(status.MethodNotAllowed)
		case http.StatusRequestEntityTooLarge:
			return gateway.NewAnswer(status.RequestTooLarge)
		case http.StatusUnauthorized:
			return gateway.NewAnswer(status.Unauthenticated)
		case http.StatusServiceUnavailable:
			return gateway.UnavailableAnswer("", detailRequestTimeout)
		}
		if he.Code >= 400 && he.Code < 500 {
			return malformed(detailRequestRefused, gateway.Words{Err: fmt.Sprint(he.Message)})
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return gateway.UnavailableAnswer("", detailRequestTimeout)
	}
	return gateway.InternalErrorAnswer("", err)
}
