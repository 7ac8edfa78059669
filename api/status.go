package api

import (
	"errors"
	"fmt"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/api/tools"
	"github.com/oncegate/oncegate/idemstore"

	"github.com/oncegate/oncegate/status"
)

// handleStatus serves GET /v1/operations/:id, the get_operation_status
// tool: the caller's own operations only; another subject's operation is
// unknown_operation, so its existence does not leak. A finished operation
// this gateway keeps (finals) is answered without the store.
func (s *Server) handleStatus(c echo.Context) error {
	ctx := c.Request().Context()
	opID := c.Param("id")
	if !tools.IsOperationID(opID) {
		return s.render(c, opReply(status.UnknownOperation, opID))
	}
	rec, known := s.finals.get(opID, s.now())
	var err error
	if !known {
		rec, err = s.store.Outcome(ctx, opID)
	}
	switch {
	case errors.Is(err, idemstore.ErrNotFound) || (err == nil && rec.Subject != identityOf(c).Subject):
		return s.render(c, opReply(status.UnknownOperation, opID))
	case err != nil:
		r := s.storeErrorReply("", opID, fmt.Errorf("status %s: %w", opID, err))
		return s.render(c, r)
	}
	rec.OperationID = opID
	if action, ok := s.cat.Actions[rec.Scope]; ok && !known {
		s.finals.keep(rec, action.TerminalTTL)
	}
	r := s.answerFor(rec, false)
	r.scope = rec.Scope
	return s.render(c, r)
}
