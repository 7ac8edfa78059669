package api

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/oncegate/oncegate/api/messages"
	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/downstream"
	"github.com/oncegate/oncegate/internal/params"
	"github.com/oncegate/oncegate/workflows"

	"github.com/oncegate/oncegate/status"
)

// This file builds every answer: one constructor per status (or per family
// of statuses), and answerFor, the one place an operation's state becomes
// its answer. Each value of an answer is written once: into the body when
// the body shows it (the texts read it from there, see bodyTexts), else
// into reply.text.

func newReply(st status.Status) reply { return reply{status: st} }

// opReply is a reply about operation opID.
func opReply(st status.Status, opID string) reply {
	r := newReply(st)
	r.opID = opID
	return r
}

// scopedReply is a reply about action scope.
func scopedReply(st status.Status, scope string) reply {
	r := newReply(st)
	r.scope = scope
	return r
}

// with sets an extra body field.
func (r reply) with(k string, v any) reply {
	if r.fields == nil {
		r.fields = map[string]any{}
	}
	r.fields[k] = v
	return r
}

// replayed marks the reply with Idempotent-Replayed: true.
func (r reply) asReplayed() reply {
	r.replayed = true
	return r
}

// withProblems turns a reply into a validation answer with errors (a list filter
// problem reuses invalid_resolution's code with its own text).
func (r reply) withProblems(key string, problems []params.FieldProblem) reply {
	r.key = key
	return r.with("errors", problems)
}

// answerFor is the answer an operation's record gives, wherever a record
// becomes an answer (confirm, its replays and waits, status, the amnesia
// guard's state): its outcome (finalReply, with its receipt) once DONE or FAILED;
// needs_manual_review; in_progress, with the downstream's business state
// when it reported one. replay marks an operation an earlier call started.
func (s *Server) answerFor(rec idemstore.Record, replay bool) reply {
	switch rec.State {
	case idemstore.StateDone, idemstore.StateFailed:
		return s.finalReply(refOf(rec), rec.Final(), replay)
	case idemstore.StateNeedsReview:
		return opReply(status.NeedsManualReview, rec.OperationID)
	case idemstore.StateInFlight:
	}
	// In flight, or a state this version does not know, which is answered
	// as still moving: in_progress never makes the agent act twice.
	return s.inFlightReply(rec)
}

// finalReply answers the terminal outcome f of the operation op:
// completed/failed, or already_completed/already_failed with
// Idempotent-Replayed when replay (an earlier call started the operation),
// and the receipt this gateway signs over op and f (receipts.go). Every
// terminal answer is built here.
func (s *Server) finalReply(op operationRef, f idemstore.Final, replay bool) reply {
	opID := op.ID
	var r reply
	switch f.State {
	case idemstore.StateDone:
		st := status.Completed
		if replay {
			st = status.AlreadyCompleted
		}
		// Decimals are strings in answers.
		r = opReply(st, opID).with("result", s.results.of(f.Result)).with("result_ref", f.ResultRef)
	case idemstore.StateFailed:
		st := status.Failed
		if replay {
			st = status.AlreadyFailed
		}
		r = opReply(st, opID).with("reason", f.Reason)
		if f.FailureKind != "" {
			r = r.with("failure_kind", string(f.FailureKind))
		}
	case idemstore.StateInFlight, idemstore.StateNeedsReview:
		return internalErrorReply(opID, fmt.Errorf("answer %s: state %s is not an outcome", opID, f.State))
	}
	if f.ResolvedBy != "" {
		r = r.with("resolved_by", f.ResolvedBy)
	}
	if replay {
		r = r.asReplayed()
	}
	return s.withReceipt(r, op, f)
}

// MaxPendingPollAfter caps the poll_after_ms told for a pending operation.
const MaxPendingPollAfter = time.Minute

// inFlightReply answers an operation still in flight: in_progress, and, when
// the downstream reported a business state (a payout "pending"), that state
// and a poll interval that grows with the wait (a quarter of the time waited
// so far, from the configured poll_after up to MaxPendingPollAfter).
func (s *Server) inFlightReply(rec idemstore.Record) reply {
	r := opReply(status.InProgress, rec.OperationID)
	if rec.DownstreamState == "" {
		return r
	}
	r.key = keyInProgressPending
	r = r.with("downstream_state", rec.DownstreamState)
	waited := time.Duration(0)
	if !rec.CreatedAt.IsZero() {
		waited = s.now().Sub(rec.CreatedAt)
	}
	r.pollAfter = min(max(s.cfg.PollAfter, waited/4), MaxPendingPollAfter)
	return r
}

// recentView is the body's view of an operation for the amnesia guard.
type recentView map[string]any

// recentOperation is rec as the amnesia guard shows it: its id, its state as
// the agent-facing status, its reference, when it finished, and why it
// failed.
func (s *Server) recentOperation(rec idemstore.Record) recentView {
	// The state is a plain string, as the texts read it (bodyTexts).
	out := recentView{"operation_id": rec.OperationID, "state": string(s.answerFor(rec, false).status), "result_ref": rec.ResultRef, "completed_at": nil}
	if rec.State.Terminal() && !rec.UpdatedAt.IsZero() {
		out["completed_at"] = rec.UpdatedAt.UTC().Format(time.RFC3339)
	}
	if rec.State == idemstore.StateFailed {
		out["reason"] = rec.Reason
		if rec.FailureKind != "" {
			out["failure_kind"] = string(rec.FailureKind)
		}
	}
	return out
}

// previewReadyReply is preview_ready: the signed fingerprint, its expiry and
// what it binds; with recent (the amnesia guard found an identical recent
// operation) its view and texts; with offer (the action's policy asks a
// person to approve it) the approval's reasons and link.
func (s *Server) previewReadyReply(scope, fp string, p fingerprint.Payload, preview previewView, recent *idemstore.Record,
	offer *approvalView) reply {
	r := opReply(status.PreviewReady, p.Nonce).
		with("fingerprint", fp).
		with("expires_at", p.ExpiresAt().Format(time.RFC3339)).
		with("preview", preview)
	r.scope = scope
	if offer != nil {
		r = r.with("approval", *offer)
	}
	if recent != nil {
		r.key = keyPreviewReadyRepeat
		r = r.with("recent_operation", s.recentOperation(*recent))
	}
	return r
}

// repeatUnacknowledgedReply answers a fingerprint of the amnesia guard
// confirmed without acknowledge_repeat_of; recent is the recent operation
// when the caller may see it (else only its id is shown).
func (s *Server) repeatUnacknowledgedReply(opID, recentID string, recent *idemstore.Record) reply {
	view := recentView{"operation_id": recentID}
	if recent != nil {
		view = s.recentOperation(*recent)
	}
	return opReply(status.RepeatUnacknowledged, opID).with("recent_operation", view)
}

// fingerprintExpiredReply answers a fingerprint past its expiry that no
// confirm consumed.
func fingerprintExpiredReply(expiresAt time.Time) reply {
	r := newReply(status.FingerprintExpired)
	r.text.ExpiresAt = expiresAt.Format(time.RFC3339)
	return r
}

// unknownActionReply answers a scope the catalog does not hold.
func unknownActionReply(scope string) reply { return scopedReply(status.UnknownAction, scope) }

// invalidParams builds invalid_params with one entry per problem.
func invalidParams(scope string, problems []params.FieldProblem) reply {
	return scopedReply(status.InvalidParams, scope).with("errors", problems)
}

// malformed is a malformed_request reply with the detail key; text fills the
// detail's placeholders.
func malformed(detail string, text messages.Data) reply {
	r := newReply(status.MalformedRequest)
	r.detail = detail
	r.text = text
	return r
}

// memberMissingReply is malformed_request naming a member of the body that
// is absent or null, and what it must be.
func memberMissingReply(member, expected string) reply {
	return malformed(detailMemberMissing, messages.Data{Field: member, Expected: expected})
}

// internalErrorReply answers a bug or an unexpected failure, err logged.
func internalErrorReply(opID string, err error) reply {
	r := opReply(status.InternalError, opID)
	r.err = err
	return r
}

// unavailableReply is temporarily_unavailable about opID (may be empty) with
// the detail fragment detail: the workflow engine or the request's time ran
// out.
func unavailableReply(opID, detail string) reply {
	r := opReply(status.TemporarilyUnavailable, opID)
	r.detail = detail
	return r
}

// storeErrorReply answers a store failure: temporarily_unavailable when the
// store is unreachable, internal_error otherwise.
func (s *Server) storeErrorReply(scope, opID string, err error) reply {
	st := status.InternalError
	if errors.Is(err, idemstore.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		st = status.TemporarilyUnavailable
	}
	r := opReply(st, opID)
	r.scope = scope
	r.err = err
	return r
}

// Message key of temporarily_unavailable when preview could not get a quote.
const keyQuoteUnavailable = "quote_unavailable"

// quoteFailure answers a failed quote: downstream_refused for a definite
// refusal, else temporarily_unavailable with the quote's own texts.
func quoteFailure(scope string, err error) reply {
	var qe *downstream.QuoteError
	if errors.As(err, &qe) && qe.Refused {
		r := scopedReply(status.DownstreamRefused, scope).with("reason", qe.Reason)
		if problems := fieldProblems(qe.Fields); len(problems) > 0 {
			r = r.with("errors", problems)
		}
		return r
	}
	r := scopedReply(status.TemporarilyUnavailable, scope)
	r.key = keyQuoteUnavailable
	r.detail = quoteDetails[downstream.QuoteUnreachable]
	if qe != nil {
		if d, ok := quoteDetails[qe.Failure]; ok {
			r.detail = d
		}
		if qe.HTTPStatus != 0 {
			r.text.Got = strconv.Itoa(qe.HTTPStatus)
		}
	}
	return r
}

// decisionView is a decision as the ops answers show it.
type decisionView struct {
	// Operator is who decided.
	Operator string `json:"operator"`
	// Outcome is completed or failed.
	Outcome workflows.ResolutionOutcome `json:"outcome"`
	// DecidedAt is when the decision was accepted.
	DecidedAt time.Time `json:"decided_at,omitzero"`
	// Via is update (the ops API) or signal (Web UI, CLI); empty when read from the truth.
	Via string `json:"via,omitempty"`
	// Note is the operator's note.
	Note string `json:"note,omitempty"`
	// EvidenceURL is the operator's evidence link.
	EvidenceURL string `json:"evidence_url,omitempty"`
}

// alreadyResolvedReply refuses a second decision, naming the first.
func alreadyResolvedReply(opID string, d decisionView) reply {
	return opReply(status.AlreadyResolved, opID).with("decision", d)
}

// notAwaitingReply refuses a decision for an operation in state.
func notAwaitingReply(opID string, state idemstore.State) reply {
	return opReply(status.NotAwaitingReview, opID).with("state", state)
}

// invalidResolutionReply refuses a malformed decision: with the problems
// found here, or with the workflow's own detail.
func invalidResolutionReply(opID string, problems []params.FieldProblem, detail string) reply {
	r := opReply(status.InvalidResolution, opID)
	if len(problems) > 0 {
		r = r.with("errors", problems)
	}
	r.text.Detail = detail
	return r
}

// resolutionSentReply answers a decision the workflow accepted but has not
// recorded yet.
func resolutionSentReply(opID string, outcome workflows.ResolutionOutcome) reply {
	return opReply(status.ResolutionSent, opID).with("outcome", outcome)
}

// resolvedReply answers the first decision about the operation op: the
// final state, the decision, and the outcome's own fields (result and
// result_ref, or reason and failure_kind, and its receipt).
func (s *Server) resolvedReply(op operationRef, res idemstore.Final, d decisionView) reply {
	final := res
	final.ResolvedBy = "" // the decision names the operator
	r := opReply(status.Resolved, op.ID).with("state", res.State).with("decision", d)
	for k, v := range s.finalReply(op, final, false).fields {
		r = r.with(k, v)
	}
	return r
}

// resolveUnreachableReply answers a decision that could not reach the
// workflow.
func resolveUnreachableReply(opID string, err error) reply {
	r := opReply(status.TemporarilyUnavailable, opID)
	r.err = err
	r.text.Detail = "the workflow engine could not be reached"
	return r
}

// operationsListedReply lists recs, the operations in state (empty: every
// state).
func operationsListedReply(recs []idemstore.Record, state idemstore.State) reply {
	if recs == nil {
		recs = []idemstore.Record{}
	}
	r := newReply(status.OperationsListed).with("operations", recs).with("count", len(recs))
	r.text.State = string(state)
	return r
}

// operationFoundReply shows rec in full: its params with decimals as strings
// (params nil: none kept), its timeline, and why the timeline is incomplete
// (herr).
func operationFoundReply(rec idemstore.Record, params any, timeline []workflows.TimelineEntry, herr error) reply {
	r := opReply(status.OperationFound, rec.OperationID).with("operation", rec).with("timeline", timeline)
	if params != nil {
		r = r.with("params", params)
	}
	if herr != nil {
		r = r.with("timeline_incomplete", "the workflow history could not be read: "+herr.Error())
	}
	return r
}

// webhookRefusedReply refuses a webhook event of scope, saying why.
func webhookRefusedReply(scope string, why error) reply {
	return scopedReply(status.WebhookRefused, scope).with("reason", why.Error())
}

// webhookUndeliveredReply answers a verified webhook event of scope that
// could not be delivered to opID's workflow (err logged).
func webhookUndeliveredReply(scope, opID string, err error) reply {
	r := opReply(status.TemporarilyUnavailable, opID)
	r.scope = scope
	r.err = err
	return r
}

// webhookAcceptedReply answers a webhook event delivered to opID's workflow.
func webhookAcceptedReply(scope, opID string) reply {
	r := opReply(status.WebhookAccepted, opID)
	r.scope = scope
	return r
}

// readinessReply is ready, or not_ready when the truth database is
// unreachable; redis is ok or degraded.
func readinessReply(truthReachable bool, redis string) reply {
	if !truthReachable {
		r := newReply(status.NotReady).with("postgres", "unreachable").with("redis", redis)
		r.detail = detailPostgresDown
		return r
	}
	return newReply(status.Ready).with("postgres", "ok").with("redis", redis)
}

// bodyTexts fills the texts' data from the body fields they also show, so
// that each value is written once, into the body. Each entry reads one
// field; a field of another type than its entry expects is a bug, reported
// by textData. The data goes in and comes out by value: a pointer to it,
// passed to functions called through this map, would move every answer's
// data to the heap.
var bodyTexts = map[string]func(d messages.Data, v any) (messages.Data, bool){
	"state":            shows(func(d messages.Data, v idemstore.State) messages.Data { d.State = string(v); return d }),
	"downstream_state": shows(func(d messages.Data, v string) messages.Data { d.State = v; return d }),
	"result_ref":       shows(func(d messages.Data, v string) messages.Data { d.ResultRef = v; return d }),
	"reason":           shows(func(d messages.Data, v string) messages.Data { d.Reason = v; return d }),
	"failure_kind": shows(func(d messages.Data, v string) messages.Data {
		d.FailureKind, d.NothingExecuted = v, idemstore.FailureKind(v).ProvesNothingExecuted()
		return d
	}),
	"expires_at": shows(func(d messages.Data, v string) messages.Data { d.ExpiresAt = v; return d }),
	"redis":      shows(func(d messages.Data, v string) messages.Data { d.Redis = v; return d }),
	"operation":  shows(func(d messages.Data, v idemstore.Record) messages.Data { d.State = string(v.State); return d }),
	"subject":    shows(func(d messages.Data, v string) messages.Data { d.Subject = v; return d }),
	"passkey":    shows(func(d messages.Data, v approval.Passkey) messages.Data { d.Subject = v.Subject; return d }),
	"approval": shows(func(d messages.Data, v approvalView) messages.Data {
		d.ApprovalURL = v.URL
		if v.State != "" {
			d.State = string(v.State)
		}
		if d.ExpiresAt == "" {
			d.ExpiresAt = v.ExpiresAt
		}
		return d
	}),
	"recent_operation": func(d messages.Data, v any) (messages.Data, bool) {
		view, ok := v.(recentView)
		if !ok {
			return d, false
		}
		// A member the texts read must be a string when present: any other
		// type would leave its words blank.
		for _, m := range [...]struct {
			key string
			dst *string
		}{{"operation_id", &d.RecentOperationID}, {"state", &d.State}, {"result_ref", &d.ResultRef}, {"reason", &d.Reason}} {
			if x, present := view[m.key]; present {
				if *m.dst, ok = x.(string); !ok {
					return d, false
				}
			}
		}
		return d, true
	},
	"limit": shows(func(d messages.Data, v limitView) messages.Data {
		d.LimitName, d.LimitWindow, d.LimitCurrency = v.Name, v.Window, v.Currency
		d.LimitMax, d.LimitUsed, d.LimitLeft = v.Max, v.Used, v.Left
		if v.ResetsAt != nil {
			d.LimitResetsAt = *v.ResetsAt
		}
		return d
	}),
	"decision": shows(func(d messages.Data, v decisionView) messages.Data {
		d.DecidedBy, d.DecidedOutcome = v.Operator, string(v.Outcome)
		if !v.DecidedAt.IsZero() {
			d.DecidedAt = v.DecidedAt.UTC().Format(time.RFC3339)
		}
		return d
	}),
}

// shows adapts a typed filler to bodyTexts; it reports false when the
// field's value is not a T.
func shows[T any](fill func(d messages.Data, v T) messages.Data) func(d messages.Data, v any) (messages.Data, bool) {
	return func(d messages.Data, v any) (messages.Data, bool) {
		t, ok := v.(T)
		if !ok {
			return d, false
		}
		return fill(d, t), true
	}
}

// textData is the texts' data of r before the envelope's values (operation,
// scope, tools, waits): its text-only values plus those of its body fields.
// It fails when a body field's value has the wrong type for the texts.
//
// The fields fill the texts in the order of their keys (sorted): an answer
// has a few of them, far fewer than bodyTexts has entries.
func (r reply) textData() (messages.Data, error) {
	d := r.text
	var room [bodyKeys]string
	keys := room[:0]
	for k := range r.fields {
		if _, read := bodyTexts[k]; read {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := r.fields[k]
		var ok bool
		if d, ok = bodyTexts[k](d, v); !ok {
			return d, fmt.Errorf("body field %s: unexpected %T for the texts", k, v)
		}
	}
	return d, nil
}
