package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/status"
)

// Status answers the get_operation_status tool: the caller's own
// operations only; another subject's operation is unknown_operation, so
// its existence does not leak. A finished operation this gateway keeps
// (finals) is answered without the store.
func (s *Service) Status(ctx context.Context, req StatusRequest) Answer {
	opID := req.OperationID
	if !fingerprint.IsNonce(opID) {
		return opAnswer(status.UnknownOperation, opID)
	}
	rec, known := s.finals.get(opID, s.now())
	var err error
	if !known {
		rec, err = s.store.Outcome(ctx, opID)
	}
	switch {
	case errors.Is(err, idemstore.ErrNotFound) || (err == nil && rec.Subject != req.Caller.Subject):
		return opAnswer(status.UnknownOperation, opID)
	case err != nil:
		return s.storeErrorAnswer("", opID, fmt.Errorf("status %s: %w", opID, err))
	}
	rec.OperationID = opID
	action, ok := s.cat.Actions[rec.Scope]
	if ok && !req.Caller.Allows(action.Auth.Scope) {
		return insufficientScopeAnswer(rec.Scope, action.Auth.Scope)
	}
	if ok && !known {
		s.finals.keep(rec, action.TerminalTTL)
	}
	r := s.answerFor(rec, false)
	r.Scope = rec.Scope
	return r
}

// Ready answers readiness: ready when the PostgreSQL truth is reachable
// (with "redis":"degraded" when the fast path is bypassed), else not_ready.
func (s *Service) Ready(ctx context.Context) Answer {
	redis := "ok"
	if s.store.Degraded() {
		redis = "degraded"
	}
	if err := s.store.Ready(ctx); err != nil {
		s.log.WarnContext(ctx, "not ready", "err", err)
		return readinessAnswer(false, redis)
	}
	return readinessAnswer(true, redis)
}
