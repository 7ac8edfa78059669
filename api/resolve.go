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

	"github.com/oncegate/oncegate/status"
)

// resolveWait bounds how long a resolve waits for the workflow to record
// the decided outcome before it answers resolution_sent instead.
const resolveWait = 20 * time.Second

// decisionOfRecord is the decision a terminal truth record holds, if a person made it.
func decisionOfRecord(rec idemstore.Record) (decisionView, bool) {
	if rec.ResolvedBy == "" {
		return decisionView{}, false
	}
	outcome := workflows.ResolutionFailed
	if rec.State == idemstore.StateDone {
		outcome = workflows.ResolutionCompleted
	}
	at := rec.ResolvedAt
	if at.IsZero() {
		at = rec.CompletedAt
	}
	return decisionView{Operator: rec.ResolvedBy, Outcome: outcome, DecidedAt: at, Note: rec.ResolutionNote,
		EvidenceURL: rec.EvidenceURL}, true
}

// decisionOfWorkflow converts the workflow's decision.
func decisionOfWorkflow(d workflows.OperatorDecision) decisionView {
	return decisionView{Operator: d.Operator, Outcome: d.Outcome, DecidedAt: d.DecidedAt, Via: d.Via, Note: d.Note,
		EvidenceURL: d.EvidenceURL}
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
		return s.render(c, invalidResolutionReply(opID, problems, ""))
	}
	rec, err := s.store.Get(ctx, opID)
	switch {
	case errors.Is(err, idemstore.ErrNotFound):
		return s.render(c, opReply(status.UnknownOperation, opID))
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
			return s.render(c, resolutionSentReply(opID, req.Outcome))
		}
		return s.render(c, s.resolveErrorReply(opID, err))
	}
	log.InfoContext(ctx, "operation resolved", "state", ans.Result.State)
	rec.OperationID = opID
	return s.render(c, s.resolvedReply(refOf(rec), ans.Result, decisionOfWorkflow(ans.Decision)))
}

// resolveErrorReply maps the workflow's refusal of a decision (or a
// failure to reach it) to an answer.
func (s *Server) resolveErrorReply(opID string, err error) reply {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		switch appErr.Type() {
		case workflows.ErrTypeAlreadyResolved:
			var d workflows.OperatorDecision
			if derr := appErr.Details(&d); derr != nil {
				s.log.Warn("undecodable decision of an already_resolved refusal", "operation_id", opID, "err", derr)
			}
			return alreadyResolvedReply(opID, decisionOfWorkflow(d))
		case workflows.ErrTypeNotAwaitingReview:
			var n workflows.NotAwaitingReview
			_ = appErr.Details(&n) // the state is only shown
			return notAwaitingReply(opID, n.State)
		case workflows.ErrTypeInvalidResolution:
			return invalidResolutionReply(opID, nil, appErr.Message())
		}
	}
	return resolveUnreachableReply(opID, fmt.Errorf("update %s %s: %w", workflows.UpdateResolve, opID, err))
}
