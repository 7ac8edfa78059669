package api

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/labstack/echo/v4"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/workflows"
)

// resolveWait bounds how long a resolve waits for the workflow to record
// the decided outcome before it answers resolution_sent instead.
const resolveWait = 20 * time.Second

// decisionView is a decision as the ops answers show it.
type decisionView struct {
	// Operator is who decided.
	Operator string `json:"operator"`
	// Outcome is completed or failed.
	Outcome string `json:"outcome"`
	// DecidedAt is when the decision was accepted.
	DecidedAt time.Time `json:"decided_at,omitzero"`
	// Via is update (the ops API) or signal (Web UI, CLI); empty when read from the truth.
	Via string `json:"via,omitempty"`
	// Note is the operator's note.
	Note string `json:"note,omitempty"`
	// EvidenceURL is the operator's evidence link.
	EvidenceURL string `json:"evidence_url,omitempty"`
}

// decisionOfRecord is the decision a terminal truth record holds, if a person made it.
func decisionOfRecord(rec idemstore.Record) (decisionView, bool) {
	if rec.ResolvedBy == "" {
		return decisionView{}, false
	}
	outcome := workflows.OutcomeFailed
	if rec.State == idemstore.StateDone {
		outcome = workflows.OutcomeCompleted
	}
	at := rec.ResolvedAt
	if at.IsZero() {
		at = rec.CompletedAt
	}
	return decisionView{Operator: rec.ResolvedBy, Outcome: outcome, DecidedAt: at, Note: rec.ResolutionNote,
		EvidenceURL: rec.EvidenceURL}, true
}

// decisionOfWorkflow converts the workflow's decision.
func decisionOfWorkflow(d workflows.Decision) decisionView {
	return decisionView{Operator: d.Operator, Outcome: d.Outcome, DecidedAt: d.DecidedAt, Via: d.Via, Note: d.Note,
		EvidenceURL: d.EvidenceURL}
}

// alreadyResolvedReply refuses a second decision, naming the first.
func alreadyResolvedReply(opID string, d decisionView) reply {
	r := opReply(StatusAlreadyResolved, opID).with("decision", d)
	r.data.DecidedBy, r.data.DecidedOutcome = d.Operator, d.Outcome
	if !d.DecidedAt.IsZero() {
		r.data.DecidedAt = d.DecidedAt.UTC().Format(time.RFC3339)
	}
	return r
}

// notAwaitingReply refuses a decision for an operation in state.
func notAwaitingReply(opID string, state idemstore.State) reply {
	r := opReply(StatusNotAwaitingReview, opID).with("state", state)
	r.data.State = string(state)
	return r
}

// handleOpsResolve serves POST /v1/ops/operations/:id/resolve: it sends
// the operator's decision to the waiting workflow as the resolve Update,
// whose validator refuses every decision but the first, and answers the
// operation's final state.
func (s *Server) handleOpsResolve(c echo.Context) error {
	ctx := c.Request().Context()
	opID := c.Param("id")
	var req resolveRequest
	if r, ok := decodeBody(c, &req); !ok {
		r.opID = opID
		return s.render(c, r)
	}
	if problems := req.validate(); len(problems) > 0 {
		return s.render(c, opReply(StatusInvalidResolution, opID).with("errors", problems))
	}
	rec, err := s.store.Get(ctx, opID)
	switch {
	case errors.Is(err, idemstore.ErrNotFound):
		return s.render(c, opReply(StatusUnknownOperation, opID))
	case err != nil:
		return s.render(c, s.storeErrorReply("", opID, fmt.Errorf("resolve %s: %w", opID, err)))
	}
	if rec.State != idemstore.StateNeedsReview {
		// The truth already tells: no need to ask the workflow.
		if d, ok := decisionOfRecord(rec); ok && rec.State.Terminal() {
			return s.render(c, alreadyResolvedReply(opID, d))
		}
		return s.render(c, notAwaitingReply(opID, rec.State))
	}
	operator := identityOf(c).Subject
	res := workflows.Resolution{Outcome: req.Outcome, Result: req.Result, Reason: req.Reason, Operator: operator,
		Note: req.Note, EvidenceURL: req.EvidenceURL}
	log := s.log.With("operation_id", opID, "operator", operator, "outcome", req.Outcome, "trace_id", traceIDOf(c))

	uctx, cancel := temporalContext(ctx)
	defer cancel()
	handle, err := s.temporal.UpdateWorkflow(uctx, client.UpdateWorkflowOptions{
		WorkflowID:   opID,
		UpdateName:   workflows.UpdateResolve,
		Args:         []any{res},
		WaitForStage: client.WorkflowUpdateStageAccepted,
	})
	if err != nil {
		return s.render(c, s.resolveErrorReply(opID, err))
	}
	gctx, cancelGet := context.WithTimeout(context.WithoutCancel(ctx), resolveWait)
	defer cancelGet()
	var ans workflows.ResolveAnswer
	if err := handle.Get(gctx, &ans); err != nil {
		if errors.Is(err, context.DeadlineExceeded) || gctx.Err() != nil {
			// Accepted: the decision stands; its outcome is being recorded.
			log.InfoContext(ctx, "resolution accepted, outcome not recorded yet")
			return s.render(c, opReply(StatusResolutionSent, opID).with("outcome", req.Outcome))
		}
		return s.render(c, s.resolveErrorReply(opID, err))
	}
	log.InfoContext(ctx, "operation resolved", "state", ans.Result.State)
	final := idemstore.Record{Key: opID, State: ans.Result.State, Result: ans.Result.Result, ResultRef: ans.Result.ResultRef,
		Reason: ans.Result.Reason, FailureKind: ans.Result.FailureKind}
	r := opReply(StatusResolved, opID).with("state", ans.Result.State).with("decision", decisionOfWorkflow(ans.Decision))
	for k, v := range terminalReply(final, false).fields {
		r = r.with(k, v)
	}
	r.data.State = string(ans.Result.State)
	return s.render(c, r)
}

// resolveErrorReply maps the workflow's refusal of a decision (or a
// failure to reach it) to an answer.
func (s *Server) resolveErrorReply(opID string, err error) reply {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		switch appErr.Type() {
		case workflows.ErrTypeAlreadyResolved:
			var d workflows.Decision
			if derr := appErr.Details(&d); derr != nil {
				s.log.Warn("undecodable decision of an already_resolved refusal", "operation_id", opID, "err", derr)
			}
			return alreadyResolvedReply(opID, decisionOfWorkflow(d))
		case workflows.ErrTypeNotAwaitingReview:
			var n workflows.NotAwaitingReview
			_ = appErr.Details(&n) // the state is only shown
			return notAwaitingReply(opID, n.State)
		case workflows.ErrTypeInvalidResolution:
			r := opReply(StatusInvalidResolution, opID)
			r.data.Detail = appErr.Message()
			return r
		}
	}
	r := opReply(StatusTemporarilyUnavailable, opID)
	r.err = fmt.Errorf("update %s %s: %w", workflows.UpdateResolve, opID, err)
	r.data.Detail = "the workflow engine could not be reached"
	return r
}
