package gateway

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

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/params"
	"github.com/oncegate/oncegate/operation"

	"github.com/oncegate/oncegate/status"
)

// List limits of GET /v1/ops/operations.
const (
	defaultListLimit = 50
	maxListLimit     = 500
)

// stateFilters maps the ?state= values to store states.
var stateFilters = map[string]operation.State{
	"in_flight":           operation.StateInFlight,
	"in_progress":         operation.StateInFlight,
	"needs_manual_review": operation.StateNeedsReview,
	"needs_review":        operation.StateNeedsReview,
	"completed":           operation.StateDone,
	"failed":              operation.StateFailed,
}

// ListOperations lists operations by state and age for operators.
func (s *Service) ListOperations(ctx context.Context, req ListRequest) Answer {
	state, r, ok := stateFilter(req.State, stateFilters, "in_flight, needs_manual_review, completed, failed")
	if !ok {
		return r
	}
	var olderThan time.Duration
	if q := req.OlderThan; q != "" {
		d, err := time.ParseDuration(q)
		if err != nil || d <= 0 {
			return NewAnswer(status.InvalidResolution).WithProblems(KeyInvalidFilter,
				[]params.FieldProblem{{Field: "older_than", Problem: "must be a positive Go duration such as 10m or 1h30m"}})
		}
		olderThan = d
	}
	limit, r, ok := listLimit(req.Limit)
	if !ok {
		return r
	}
	recs, err := s.store.List(ctx, idemstore.ListFilter{State: state, OlderThan: olderThan, Limit: limit})
	if err != nil {
		return s.storeErrorAnswer("", "", fmt.Errorf("list operations: %w", err))
	}
	return operationsListedAnswer(recs, state)
}

// stateFilter reads a list's state filter q (case and spaces ignored; the
// zero state when empty) by filters, or the answer refusing it, which
// lists the names a filter takes (named).
func stateFilter[S any](q string, filters map[string]S, named string) (S, Answer, bool) {
	var state S
	q = strings.ToLower(strings.TrimSpace(q))
	if q == "" {
		return state, Answer{}, true
	}
	state, ok := filters[q]
	if !ok {
		return state, NewAnswer(status.InvalidResolution).WithProblems(KeyInvalidFilter,
			[]params.FieldProblem{{Field: "state", Rule: params.RuleEnum, Problem: "must be one of " + named}}), false
	}
	return state, Answer{}, true
}

// listLimit reads an ops list's limit (default defaultListLimit, at most
// maxListLimit), or the answer refusing it.
func listLimit(q string) (int, Answer, bool) {
	if q == "" {
		return defaultListLimit, Answer{}, true
	}
	n, err := strconv.Atoi(q)
	if err != nil || n <= 0 {
		return 0, NewAnswer(status.InvalidResolution).WithProblems(KeyInvalidFilter,
			[]params.FieldProblem{{Field: "limit", Rule: params.RuleType, Problem: "must be a positive integer"}}), false
	}
	return min(n, maxListLimit), Answer{}, true
}

// Operation shows one operation to an operator in full: its record, its
// params, its timeline (the truth's steps and its workflow's history) and
// its approval.
func (s *Service) Operation(ctx context.Context, opID string) Answer {
	rec, err := s.store.Get(ctx, opID)
	switch {
	case errors.Is(err, idemstore.ErrNotFound):
		return opAnswer(status.UnknownOperation, opID)
	case err != nil:
		return s.storeErrorAnswer("", opID, fmt.Errorf("get operation %s: %w", opID, err))
	}
	rec.OperationID = opID
	params, err := decimalsAsStrings(rec.BoundParams)
	if err != nil {
		params = nil // shown without its params rather than not at all
	}
	timeline, herr := s.timeline(ctx, rec)
	r := operationFoundAnswer(rec, params, timeline, herr)
	if ap, ok := s.approvalOf(ctx, opID); ok {
		r = r.With("approval_record", ap).With("timeline", withApproval(timeline, ap))
	}
	return r
}

// historyTimeout bounds reading an operation's workflow history.
const historyTimeout = 10 * time.Second

// timeline merges the truth's steps of rec (claimed, waiting for review,
// decided, completed) with the workflow history's, in time order. The
// truth's steps are always there; an error says the history's are missing.
func (s *Service) timeline(ctx context.Context, rec idemstore.Record) ([]operation.TimelineEntry, error) {
	truth := func(at time.Time, event, detail string) operation.TimelineEntry {
		return operation.TimelineEntry{At: at, Source: "truth", Event: event, Detail: detail}
	}
	out := []operation.TimelineEntry{truth(rec.ClaimedAt, "claimed", "claimed IN_FLIGHT by "+rec.Owner)}
	if rec.State == operation.StateNeedsReview {
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
	history, herr := s.engine.Timeline(hctx, rec.OperationID)
	out = append(out, history...)
	slices.SortStableFunc(out, func(a, b operation.TimelineEntry) int { return a.At.Compare(b.At) })
	return out, herr
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

// validate returns one problem per inconsistency.
func (req ResolveRequest) validate() []params.FieldProblem {
	var out []params.FieldProblem
	hasResult := len(req.Result) > 0 && string(req.Result) != "null"
	switch req.Outcome {
	case operation.ResolutionCompleted:
		if !hasResult {
			out = append(out, params.FieldProblem{Field: "result", Rule: params.RuleRequired, Problem: "required when outcome is completed: the downstream's result object"})
		} else if strings.TrimSpace(string(req.Result))[0] != '{' {
			out = append(out, params.FieldProblem{Field: "result", Rule: params.RuleType, Problem: "must be a JSON object"})
		}
	case operation.ResolutionFailed:
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
func (s *Service) approvalOf(ctx context.Context, opID string) (approval.Record, bool) {
	if s.approvals == nil {
		return approval.Record{}, false
	}
	ap, err := s.approvals.Approval(ctx, opID)
	return ap, err == nil
}

// withApproval adds the approval's steps (asked, decided by which passkey
// under which evidence) to a timeline, in time order.
func withApproval(timeline []operation.TimelineEntry, ap approval.Record) []operation.TimelineEntry {
	out := append(slices.Clone(timeline), operation.TimelineEntry{At: ap.RequestedAt, Source: "truth", Event: "approval_requested",
		Detail: "a person was asked to approve: " + approval.JoinReasons(ap.Reasons)})
	if !ap.DecidedAt.IsZero() {
		out = append(out, operation.TimelineEntry{At: ap.DecidedAt, Source: "truth", Event: "approval_" + strings.ToLower(string(ap.State)),
			Detail: fmt.Sprintf("%s by passkey %s of %s (evidence_sha256 %s, trace %s)", strings.ToLower(string(ap.State)),
				ap.CredentialID, ap.Subject, ap.EvidenceSHA256, ap.TraceID)})
	}
	slices.SortStableFunc(out, func(a, b operation.TimelineEntry) int { return a.At.Compare(b.At) })
	return out
}
