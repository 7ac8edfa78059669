package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/status"
)

// errTruthOnlyNotFound is a status query's "not found" while the fast path
// is bypassed: unavailable, not unknown_operation.
var errTruthOnlyNotFound = fmt.Errorf("not in the truth, and the fast path (where a claim may be alone) is bypassed: %w", idemstore.ErrUnavailable)

// Status answers the get_operation_status tool: the caller's own
// operations only; another subject's operation is unknown_operation, so
// its existence does not leak. A finished operation this gateway keeps
// (finals) is answered without the store. unknown_operation is answered
// only when the stores could rule the operation out: not while the fast
// path is bypassed (temporarily_unavailable).
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
	case errors.Is(err, idemstore.ErrNotFound) && s.store.Degraded():
		// On the truth alone, a claim only Redis holds (another gateway's,
		// before its workflow claims the truth) cannot be seen: "unknown"
		// would be a guess.
		return s.storeErrorAnswer("", opID, fmt.Errorf("status %s: %w", opID, errTruthOnlyNotFound))
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
