package api

import (
	"context"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/api/auth"
	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/status"
)

// healthz answers liveness: the process runs.
func (s *Server) healthz(c echo.Context) error {
	return s.render(c, gateway.NewAnswer(status.Alive))
}

// readyz answers readiness: 200 when the PostgreSQL truth is reachable
// (with "redis":"degraded" when the fast path is bypassed) and the
// identity providers' keys are at hand (auth.Ready), else 503.
func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	a := s.svc.Ready(ctx)
	if a.Status != status.Ready {
		return s.render(c, a)
	}
	if err := auth.Ready(ctx, s.authn); err != nil {
		s.log.WarnContext(ctx, "not ready", "trace_id", traceIDOf(c), "err", err)
		redis, _ := a.Fields["redis"].(string)
		return s.render(c, keysNotReady(redis))
	}
	return s.render(c, a)
}
