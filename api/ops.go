package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/params"
	"github.com/oncegate/oncegate/workflows"

	"github.com/oncegate/oncegate/status"
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
			return s.render(c, newReply(status.InvalidResolution).withProblems(keyInvalidFilter,
				[]params.FieldProblem{{Field: "state", Rule: params.RuleEnum, Problem: "must be one of in_flight, needs_manual_review, completed, failed"}}))
		}
		state = st
	}
	var olderThan time.Duration
	if q := c.QueryParam("older_than"); q != "" {
		d, err := time.ParseDuration(q)
		if err != nil || d <= 0 {
			return s.render(c, newReply(status.InvalidResolution).withProblems(keyInvalidFilter,
				[]params.FieldProblem{{Field: "older_than", Problem: "must be a positive Go duration such as 10m or 1h30m"}}))
		}
		olderThan = d
	}
	limit, r, ok := listLimit(c)
	if !ok {
		return s.render(c, r)
	}
	recs, err := s.store.List(c.Request().Context(), idemstore.ListFilter{State: state, OlderThan: olderThan, Limit: limit})
	if err != nil {
		return s.render(c, s.storeErrorReply("", "", fmt.Errorf("list operations: %w", err)))
	}
	return s.render(c, operationsListedReply(recs, state))
}

// listLimit reads an ops list's ?limit= (default defaultListLimit, at
// most maxListLimit), or the reply refusing it.
func listLimit(c echo.Context) (int, reply, bool) {
	q := c.QueryParam("limit")
	if q == "" {
		return defaultListLimit, reply{}, true
	}
	n, err := strconv.Atoi(q)
	if err != nil || n <= 0 {
		return 0, newReply(status.InvalidResolution).withProblems(keyInvalidFilter,
			[]params.FieldProblem{{Field: "limit", Rule: params.RuleType, Problem: "must be a positive integer"}}), false
	}
	return min(n, maxListLimit), reply{}, true
}

// handleOpsGet serves GET /v1/ops/operations/:id: the full record.
func (s *Server) handleOpsGet(c echo.Context) error {
	opID := c.Param("id")
	rec, err := s.store.Get(c.Request().Context(), opID)
	switch {
	case errors.Is(err, idemstore.ErrNotFound):
		return s.render(c, opReply(status.UnknownOperation, opID))
	case err != nil:
		return s.render(c, s.storeErrorReply("", opID, fmt.Errorf("get operation %s: %w", opID, err)))
	}
	rec.OperationID = opID
	params, err := decimalsAsStrings(rec.BoundParams)
	if err != nil {
		params = nil // shown without its params rather than not at all
	}
	timeline, herr := s.timeline(c.Request().Context(), rec)
	r := operationFoundReply(rec, params, timeline, herr)
	if ap, ok := s.approvalOf(c.Request().Context(), opID); ok {
		r = r.with("approval_record", ap).with("timeline", withApproval(timeline, ap))
	}
	return s.render(c, r)
}

// historyTimeout bounds reading an operation's workflow history.
const historyTimeout = 10 * time.Second

// timeline merges the truth's steps of rec (claimed, waiting for review,
// decided, completed) with the workflow history's, in time order. The
// truth's steps are always there; an error says the history's are missing.
func (s *Server) timeline(ctx context.Context, rec idemstore.Record) ([]workflows.TimelineEntry, error) {
	truth := func(at time.Time, event, detail string) workflows.TimelineEntry {
		return workflows.TimelineEntry{At: at, Source: "truth", Event: event, Detail: detail}
	}
	out := []workflows.TimelineEntry{truth(rec.ClaimedAt, "claimed", "claimed IN_FLIGHT by "+rec.Owner)}
	if rec.State == idemstore.StateNeedsReview {
		// Terminal records keep the outcome's reason; the history shows MarkNeedsReview.
		out = append(out, truth(rec.UpdatedAt, "needs_review", "waiting for a person: "+rec.Reason))
	}
	if d, ok := decisionOfRecord(rec); ok {
		out = append(out, truth(d.DecidedAt, "decided", fmt.Sprintf("%s decided %s: %s %s", d.Operator, d.Outcome, d.Note, d.EvidenceURL)))
	}
	if rec.State.Terminal() {
		detail := string(rec.State) + " " + rec.ResultRef + rec.Reason
		if rec.FailureKind != "" {
			detail += " (" + string(rec.FailureKind) + ")"
		}
		out = append(out, truth(rec.CompletedAt, "completed", detail))
	}
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), historyTimeout)
	defer cancel()
	var events []*historypb.HistoryEvent
	iter := s.temporal.GetWorkflowHistory(hctx, rec.OperationID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var herr error
	for iter.HasNext() {
		ev, err := iter.Next()
		if err != nil {
			herr = fmt.Errorf("read history of %s: %w", rec.OperationID, err)
			break
		}
		events = append(events, ev)
	}
	out = append(out, s.judgeSignals(hctx, rec.OperationID, workflows.HistoryTimeline(events))...)
	slices.SortStableFunc(out, func(a, b workflows.TimelineEntry) int { return a.At.Compare(b.At) })
	return out, herr
}

// judgeSignals marks the resolve signals of a history's timeline accepted,
// refused or pending, from the workflow's state query (asked only when
// there is a resolve signal to judge).
func (s *Server) judgeSignals(ctx context.Context, opID string, entries []workflows.TimelineEntry) []workflows.TimelineEntry {
	if !slices.ContainsFunc(entries, func(e workflows.TimelineEntry) bool { return e.Event == "signal" }) {
		return entries
	}
	var view workflows.StateView
	q, err := s.temporal.QueryWorkflow(ctx, opID, "", workflows.QueryState)
	if err == nil {
		err = q.Get(&view)
	}
	if err != nil {
		return workflows.SignalVerdicts(entries, nil, fmt.Errorf("query %s: %w", workflows.QueryState, err))
	}
	return workflows.SignalVerdicts(entries, &view, nil)
}

// decimalsAsStrings decodes canonical params with every number as a JSON
// string, as every answer writes decimals; nil for no params.
func decimalsAsStrings(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode params: %w", err)
	}
	return numbersToStrings(v), nil
}

// numbersToStrings replaces every json.Number in v by its text.
func numbersToStrings(v any) any {
	switch x := v.(type) {
	case json.Number:
		return x.String()
	case map[string]any:
		for k, e := range x {
			x[k] = numbersToStrings(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbersToStrings(e)
		}
	}
	return v
}

// resolveRequest is the body of POST /v1/ops/operations/{id}/resolve.
type resolveRequest struct {
	// Outcome is "completed" or "failed".
	Outcome workflows.ResolutionOutcome `json:"outcome"`
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
func (req resolveRequest) validate() []params.FieldProblem {
	var out []params.FieldProblem
	hasResult := len(req.Result) > 0 && string(req.Result) != "null"
	switch req.Outcome {
	case workflows.ResolutionCompleted:
		if !hasResult {
			out = append(out, params.FieldProblem{Field: "result", Rule: params.RuleRequired, Problem: "required when outcome is completed: the downstream's result object"})
		} else if strings.TrimSpace(string(req.Result))[0] != '{' {
			out = append(out, params.FieldProblem{Field: "result", Rule: params.RuleType, Problem: "must be a JSON object"})
		}
	case workflows.ResolutionFailed:
		if strings.TrimSpace(req.Reason) == "" {
			out = append(out, params.FieldProblem{Field: "reason", Rule: params.RuleRequired, Problem: "required when outcome is failed"})
		}
		if hasResult {
			out = append(out, params.FieldProblem{Field: "result", Rule: params.RuleUnknownField, Problem: "must be absent when outcome is failed"})
		}
	default:
		out = append(out, params.FieldProblem{Field: "outcome", Rule: params.RuleEnum, Problem: `must be "completed" or "failed"`})
	}
	if req.EvidenceURL != "" {
		if u, err := url.Parse(req.EvidenceURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			out = append(out, params.FieldProblem{Field: "evidence_url", Problem: "must be an absolute http or https URL"})
		}
	}
	return out
}

// approvalOf reads the operation's approval for the ops view (false: none,
// or the store could not say: the view is shown without it).
func (s *Server) approvalOf(ctx context.Context, opID string) (approval.Record, bool) {
	if s.approvals == nil {
		return approval.Record{}, false
	}
	ap, err := s.approvals.Approval(ctx, opID)
	return ap, err == nil
}

// withApproval adds the approval's steps (asked, decided by which passkey
// under which evidence) to a timeline, in time order.
func withApproval(timeline []workflows.TimelineEntry, ap approval.Record) []workflows.TimelineEntry {
	out := append(slices.Clone(timeline), workflows.TimelineEntry{At: ap.RequestedAt, Source: "truth", Event: "approval_requested",
		Detail: "a person was asked to approve: " + approval.JoinReasons(ap.Reasons)})
	if !ap.DecidedAt.IsZero() {
		out = append(out, workflows.TimelineEntry{At: ap.DecidedAt, Source: "truth", Event: "approval_" + strings.ToLower(string(ap.State)),
			Detail: fmt.Sprintf("%s by passkey %s of %s (evidence_sha256 %s, trace %s)", strings.ToLower(string(ap.State)),
				ap.CredentialID, ap.Subject, ap.EvidenceSHA256, ap.TraceID)})
	}
	slices.SortStableFunc(out, func(a, b workflows.TimelineEntry) int { return a.At.Compare(b.At) })
	return out
}
