package api

import (
	"context"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/status"
)

// healthz answers liveness: the process runs.
func (s *Server) healthz(c echo.Context) error {
	return s.render(c, gateway.NewAnswer(status.Alive))
}

// readyz answers readiness: 200 when the PostgreSQL truth is reachable
// (with "redis":"degraded" when the fast path is bypassed), else 503.
func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	return s.render(c, s.svc.Ready(ctx))
}
