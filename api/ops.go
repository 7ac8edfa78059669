package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/workflows"
)

// List limits of GET /v1/ops/operations.
const (
	defaultListLimit = 50
	maxListLimit     = 500
)

// stateFilters maps the ?state= values to store states.
var stateFilters = map[string]idemstore.State{
	"in_flight":           idemstore.StateInFlight,
	"in_progress":         idemstore.StateInFlight,
	"needs_manual_review": idemstore.StateNeedsReview,
	"needs_review":        idemstore.StateNeedsReview,
	"completed":           idemstore.StateDone,
	"failed":              idemstore.StateFailed,
}

// handleOpsList serves GET /v1/ops/operations?state=&limit=.
func (s *Server) handleOpsList(c echo.Context) error {
	var state idemstore.State
	if q := strings.ToLower(strings.TrimSpace(c.QueryParam("state"))); q != "" {
		st, ok := stateFilters[q]
		if !ok {
			return s.render(c, newReply(StatusInvalidResolution).withProblems(keyInvalidFilter,
				[]fingerprint.FieldProblem{{Field: "state", Rule: fingerprint.RuleEnum, Problem: "must be one of in_flight, needs_manual_review, completed, failed"}}))
		}
		state = st
	}
	limit := defaultListLimit
	if q := c.QueryParam("limit"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n <= 0 {
			return s.render(c, newReply(StatusInvalidResolution).withProblems(keyInvalidFilter,
				[]fingerprint.FieldProblem{{Field: "limit", Rule: fingerprint.RuleType, Problem: "must be a positive integer"}}))
		}
		limit = min(n, maxListLimit)
	}
	recs, err := s.store.List(c.Request().Context(), state, limit)
	if err != nil {
		return s.render(c, s.storeErrorReply("", "", fmt.Errorf("list operations: %w", err)))
	}
	if recs == nil {
		recs = []idemstore.Record{}
	}
	r := newReply(StatusOperationsListed).with("operations", recs).with("count", len(recs))
	r.data.State = string(state)
	return s.render(c, r)
}

// withProblems turns a reply into a validation answer with errors (a list filter
// problem reuses invalid_resolution's code with its own text).
func (r reply) withProblems(key string, problems []fingerprint.FieldProblem) reply {
	r.key = key
	return r.with("errors", problems)
}

// handleOpsGet serves GET /v1/ops/operations/:id: the full record.
func (s *Server) handleOpsGet(c echo.Context) error {
	opID := c.Param("id")
	rec, err := s.store.Get(c.Request().Context(), opID)
	switch {
	case errors.Is(err, idemstore.ErrNotFound):
		return s.render(c, opReply(StatusUnknownOperation, opID))
	case err != nil:
		return s.render(c, s.storeErrorReply("", opID, fmt.Errorf("get operation %s: %w", opID, err)))
	}
	rec.Key = opID
	r := opReply(StatusOperationFound, opID).with("operation", rec)
	r.data.State = string(rec.State)
	return s.render(c, r)
}

// resolveRequest is the body of POST /v1/ops/operations/{id}/resolve.
type resolveRequest struct {
	// Outcome is "completed" or "failed".
	Outcome string `json:"outcome"`
	// Result is the downstream result for completed.
	Result json.RawMessage `json:"result,omitempty"`
	// Reason says why it failed.
	Reason string `json:"reason,omitempty"`
	// Note is the operator's free note.
	Note string `json:"note,omitempty"`
}

// validate returns one problem per inconsistency.
func (req resolveRequest) validate() []fingerprint.FieldProblem {
	var out []fingerprint.FieldProblem
	hasResult := len(req.Result) > 0 && string(req.Result) != "null"
	switch req.Outcome {
	case "completed":
		if !hasResult {
			out = append(out, fingerprint.FieldProblem{Field: "result", Rule: fingerprint.RuleRequired, Problem: "required when outcome is completed: the downstream's result object"})
		} else if strings.TrimSpace(string(req.Result))[0] != '{' {
			out = append(out, fingerprint.FieldProblem{Field: "result", Rule: fingerprint.RuleType, Problem: "must be a JSON object"})
		}
	case "failed":
		if strings.TrimSpace(req.Reason) == "" {
			out = append(out, fingerprint.FieldProblem{Field: "reason", Rule: fingerprint.RuleRequired, Problem: "required when outcome is failed"})
		}
		if hasResult {
			out = append(out, fingerprint.FieldProblem{Field: "result", Rule: fingerprint.RuleUnknownField, Problem: "must be absent when outcome is failed"})
		}
	default:
		out = append(out, fingerprint.FieldProblem{Field: "outcome", Rule: fingerprint.RuleEnum, Problem: `must be "completed" or "failed"`})
	}
	return out
}

// handleOpsResolve serves POST /v1/ops/operations/:id/resolve: it signals
// the waiting workflow with the operator's decision.
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
		r := opReply(StatusNotAwaitingReview, opID).with("state", rec.State)
		r.data.State = string(rec.State)
		return s.render(c, r)
	}
	operator := identityOf(c).Subject
	res := workflows.Resolution{Outcome: req.Outcome, Result: req.Result, Reason: req.Reason, Operator: operator, Note: req.Note}
	sctx, cancel := temporalContext(ctx)
	defer cancel()
	if err := s.temporal.SignalWorkflow(sctx, opID, "", workflows.SignalResolve, res); err != nil {
		r := opReply(StatusTemporarilyUnavailable, opID)
		r.err = fmt.Errorf("signal resolve %s: %w", opID, err)
		r.detail = detailWorkflowEngine
		return s.render(c, r)
	}
	s.log.InfoContext(ctx, "resolution sent", "operation_id", opID, "operator", operator, "outcome", req.Outcome,
		"trace_id", traceIDOf(c))
	return s.render(c, opReply(StatusResolutionSent, opID).with("outcome", req.Outcome))
}
