package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/idemstore"
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
			return s.render(c, newReply(StatusInvalidResolution).withProblems("invalid_filter",
				[]fingerprint.FieldProblem{{Field: "state", Problem: "must be one of in_flight, needs_manual_review, completed, failed"}}))
		}
		state = st
	}
	var olderThan time.Duration
	if q := c.QueryParam("older_than"); q != "" {
		d, err := time.ParseDuration(q)
		if err != nil || d <= 0 {
			return s.render(c, newReply(StatusInvalidResolution).withProblems("invalid_filter",
				[]fingerprint.FieldProblem{{Field: "older_than", Problem: "must be a positive Go duration such as 10m or 1h30m"}}))
		}
		olderThan = d
	}
	limit := defaultListLimit
	if q := c.QueryParam("limit"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n <= 0 {
			return s.render(c, newReply(StatusInvalidResolution).withProblems("invalid_filter",
				[]fingerprint.FieldProblem{{Field: "limit", Problem: "must be a positive integer"}}))
		}
		limit = min(n, maxListLimit)
	}
	recs, err := s.store.List(c.Request().Context(), idemstore.ListFilter{State: state, OlderThan: olderThan, Limit: limit})
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
	// EvidenceURL links the operator's evidence (an absolute http or https URL).
	EvidenceURL string `json:"evidence_url,omitempty"`
}

// validate returns one problem per inconsistency.
func (req resolveRequest) validate() []fingerprint.FieldProblem {
	var out []fingerprint.FieldProblem
	hasResult := len(req.Result) > 0 && string(req.Result) != "null"
	switch req.Outcome {
	case "completed":
		if !hasResult {
			out = append(out, fingerprint.FieldProblem{Field: "result", Problem: "required when outcome is completed: the downstream's result object"})
		} else if strings.TrimSpace(string(req.Result))[0] != '{' {
			out = append(out, fingerprint.FieldProblem{Field: "result", Problem: "must be a JSON object"})
		}
	case "failed":
		if strings.TrimSpace(req.Reason) == "" {
			out = append(out, fingerprint.FieldProblem{Field: "reason", Problem: "required when outcome is failed"})
		}
		if hasResult {
			out = append(out, fingerprint.FieldProblem{Field: "result", Problem: "must be absent when outcome is failed"})
		}
	default:
		out = append(out, fingerprint.FieldProblem{Field: "outcome", Problem: `must be "completed" or "failed"`})
	}
	if req.EvidenceURL != "" {
		if u, err := url.Parse(req.EvidenceURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			out = append(out, fingerprint.FieldProblem{Field: "evidence_url", Problem: "must be an absolute http or https URL"})
		}
	}
	return out
}
