package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/telemetry"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/resolution"
	"github.com/oncegate/oncegate/status"
)

// resolveWait bounds how long a resolve waits for the workflow to record
// the decided outcome before it answers resolution_sent instead.
const resolveWait = 20 * time.Second

// decisionOfRecord is the decision a terminal truth record holds, if a person made it.
func decisionOfRecord(rec idemstore.Record) (DecisionView, bool) {
	if rec.ResolvedBy == "" {
		return DecisionView{}, false
	}
	outcome := operation.ResolutionFailed
	if rec.State == operation.StateDone {
		outcome = operation.ResolutionCompleted
	}
	at := rec.ResolvedAt
	if at.IsZero() {
		at = rec.CompletedAt
	}
	return DecisionView{Operator: rec.ResolvedBy, Outcome: outcome, DecidedAt: at, Note: rec.ResolutionNote,
		EvidenceURL: rec.EvidenceURL}, true
}

// decisionOfWorkflow converts the workflow's decision.
func decisionOfWorkflow(d operation.OperatorDecision) DecisionView {
	return DecisionView{Operator: d.Operator, Outcome: d.Outcome, DecidedAt: d.DecidedAt, Via: d.Via, Note: d.Note,
		EvidenceURL: d.EvidenceURL}
}

// Resolve sends an operator's decision to the operation's waiting
// workflow, whose validator refuses every decision but the first, and
// answers the operation's final state.
func (s *Service) Resolve(ctx context.Context, req ResolveRequest) Answer {
	opID := req.OperationID
	rec, refusal, ok := s.awaitingReview(ctx, req)
	if !ok {
		return refusal
	}
	operator := req.Caller.Subject
	res, _, err := s.signedResolution(opID, operator, req)
	if err != nil {
		return s.storeErrorAnswer("", opID, err)
	}
	log := s.log.With("operation_id", opID, "operator", operator, "outcome", req.Outcome, "trace_id", telemetry.TraceID(ctx))
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout+resolveWait)
	defer cancel()
	ans, err := s.engine.Resolve(uctx, opID, res, resolveWait)
	if err != nil {
		if errors.Is(err, ErrResolutionPending) {
			// Accepted: the decision stands; its outcome is being recorded.
			log.InfoContext(ctx, "resolution accepted, outcome not recorded yet")
			return resolutionSentAnswer(opID, req.Outcome)
		}
		// The workflow counts the refusal (the worker's oncegate_resolutions_refused_total).
		log.WarnContext(ctx, "resolution refused or not delivered", "err", err)
		return s.resolveErrorAnswer(opID, err)
	}
	log.InfoContext(ctx, "operation resolved", "state", ans.Result.State)
	rec.OperationID = opID
	return s.resolvedAnswer(refOf(rec), ans.Result, decisionOfWorkflow(ans.Decision))
}

// ResolutionPayload answers what an operator deciding from the Temporal
// Web UI's signal dialog or `temporal workflow signal` sends: the
// operation's workflow, the resolve signal's name and its JSON input,
// req's decision by the authenticated operator with its resolution token
// (valid for resolution.TTL). It sends nothing: the workflow decides when
// a signal carries the input unchanged, to this operation, in time.
func (s *Service) ResolutionPayload(ctx context.Context, req ResolveRequest) Answer {
	opID := req.OperationID
	if _, refusal, ok := s.awaitingReview(ctx, req); !ok {
		return refusal
	}
	operator := req.Caller.Subject
	res, st, err := s.signedResolution(opID, operator, req)
	if err != nil {
		return s.storeErrorAnswer("", opID, err)
	}
	s.log.InfoContext(ctx, "resolution payload issued", "operation_id", opID, "operator", operator,
		"outcome", req.Outcome, "jti", st.ID, "expires_at", st.ExpiresAt, "trace_id", telemetry.TraceID(ctx))
	return resolutionPayloadAnswer(opID, operation.SignalResolve, res, st.ExpiresAt)
}

// awaitingReview checks req's decision and that its operation waits for
// review, from the truth; otherwise it logs the refusal with its trace and
// answers it (false).
func (s *Service) awaitingReview(ctx context.Context, req ResolveRequest) (idemstore.Record, Answer, bool) {
	opID := req.OperationID
	rec, refusal := s.reviewRefusal(ctx, req)
	if refusal.Status == "" {
		return rec, Answer{}, true
	}
	if refusal.Err == nil { // an error is logged where the answer is rendered
		s.log.WarnContext(ctx, "resolution refused", "operation_id", opID, "operator", req.Caller.Subject,
			"outcome", req.Outcome, "status", refusal.Status, "trace_id", telemetry.TraceID(ctx))
	}
	return rec, refusal, false
}

// reviewRefusal is why req's decision cannot be sent now, from the truth
// (the zero Answer when it can), and the operation's record.
func (s *Service) reviewRefusal(ctx context.Context, req ResolveRequest) (idemstore.Record, Answer) {
	opID := req.OperationID
	if problems := req.validate(); len(problems) > 0 {
		return idemstore.Record{}, invalidResolutionAnswer(opID, problems, "")
	}
	rec, err := s.store.Get(ctx, opID)
	switch {
	case errors.Is(err, idemstore.ErrNotFound):
		return rec, opAnswer(status.UnknownOperation, opID)
	case err != nil:
		return rec, s.storeErrorAnswer("", opID, fmt.Errorf("resolve %s: %w", opID, err))
	}
	if rec.State != operation.StateNeedsReview {
		// The truth already tells: no need to ask the workflow.
		if d, ok := decisionOfRecord(rec); ok && rec.State.Terminal() {
			return rec, alreadyResolvedAnswer(opID, d)
		}
		return rec, notAwaitingAnswer(opID, rec.State)
	}
	return rec, Answer{}
}

// signedResolution is req's decision by operator (the ops API's
// authenticated caller) about opID, with its resolution token, and the
// token's statement.
func (s *Service) signedResolution(opID, operator string, req ResolveRequest) (operation.Resolution, resolution.Statement, error) {
	res := operation.Resolution{Outcome: req.Outcome, Result: req.Result, Reason: req.Reason, Operator: operator,
		Note: req.Note, EvidenceURL: req.EvidenceURL}
	token, st, err := s.resolutions.Issue(opID, operator, res, s.now())
	if err != nil {
		return operation.Resolution{}, resolution.Statement{}, fmt.Errorf("resolve %s: %w", opID, err)
	}
	res.Token = token
	return res, st, nil
}

// resolveErrorAnswer maps the workflow's refusal of a decision (or a
// failure to reach it) to an answer.
func (s *Service) resolveErrorAnswer(opID string, err error) Answer {
	var (
		already  *AlreadyResolvedError
		notAwait *NotAwaitingReviewError
		invalid  *InvalidResolutionError
	)
	switch {
	case errors.As(err, &already):
		return alreadyResolvedAnswer(opID, decisionOfWorkflow(already.Decision))
	case errors.As(err, &notAwait):
		return notAwaitingAnswer(opID, notAwait.State)
	case errors.As(err, &invalid):
		return invalidResolutionAnswer(opID, nil, invalid.Detail)
	}
	return resolveUnreachableAnswer(opID, fmt.Errorf("resolve %s: %w", opID, err))
}
