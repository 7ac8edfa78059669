package gateway

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/downstream"
	"github.com/oncegate/oncegate/internal/params"
	"github.com/oncegate/oncegate/operation"

	"github.com/oncegate/oncegate/status"
)

// This file builds every answer: one constructor per status (or per family
// of statuses), and answerFor, the one place an operation's state becomes
// its answer. Each value of an answer is written once: into the body when
// the body shows it (the renderer fills the texts from there), else into
// Answer.Words.

// WithProblems turns an answer into a validation answer with errors (a list filter
// problem reuses invalid_resolution's code with its own text).
func (r Answer) WithProblems(key string, problems []params.FieldProblem) Answer {
	r.Key = key
	return r.With("errors", problems)
}

// answerFor is the answer an operation's record gives, wherever a record
// becomes an answer (confirm, its replays and waits, status, the amnesia
// guard's state): its outcome (finalReply, with its receipt) once DONE or FAILED;
// needs_manual_review; in_progress, with the downstream's business state
// when it reported one. replay marks an operation an earlier call started.
func (s *Service) answerFor(rec idemstore.Record, replay bool) Answer {
	switch rec.State {
	case operation.StateDone, operation.StateFailed:
		return s.finalAnswer(refOf(rec), rec.Final(), replay)
	case operation.StateNeedsReview:
		return withActingClient(opAnswer(status.NeedsManualReview, rec.OperationID), rec.ActingClient)
	case operation.StateInFlight:
	}
	// In flight, or a state this version does not know, which is answered
	// as still moving: in_progress never makes the agent act twice.
	return s.inFlightAnswer(rec)
}

// finalAnswer answers the terminal outcome f of the operation op:
// completed/failed, or already_completed/already_failed with
// Idempotent-Replayed when replay (an earlier call started the operation),
// and the receipt this gateway signs over op and f (receipts.go). Every
// terminal answer is built here.
func (s *Service) finalAnswer(op operationRef, f operation.Final, replay bool) Answer {
	opID := op.ID
	var r Answer
	switch f.State {
	case operation.StateDone:
		st := status.Completed
		if replay {
			st = status.AlreadyCompleted
		}
		// Decimals are strings in answers.
		r = opAnswer(st, opID).With("result", s.results.of(f.Result)).With("result_ref", f.ResultRef)
	case operation.StateFailed:
		st := status.Failed
		if replay {
			st = status.AlreadyFailed
		}
		r = opAnswer(st, opID).With("reason", f.Reason)
		if f.FailureKind != "" {
			r = r.With("failure_kind", string(f.FailureKind))
		}
	case operation.StateInFlight, operation.StateNeedsReview:
		return InternalErrorAnswer(opID, fmt.Errorf("answer %s: state %s is not an outcome", opID, f.State))
	}
	if f.ResolvedBy != "" {
		r = r.With("resolved_by", f.ResolvedBy)
	}
	r = withActingClient(r, op.ActingClient)
	if replay {
		r = r.asReplayed()
	}
	return s.withReceipt(r, op, f)
}

// fieldActingClient is the body field of an operation's answer that names
// the OAuth client whose confirm claimed it.
const fieldActingClient = "acting_client"

// withActingClient adds to r, an answer about an operation, the acting
// client of its claim, when one is known (a token that named none, or a
// record kept before the client was, adds nothing).
func withActingClient(r Answer, client string) Answer {
	if client == "" {
		return r
	}
	return r.With(fieldActingClient, client)
}

// MaxPendingPollAfter caps the poll_after_ms told for a pending operation.
const MaxPendingPollAfter = time.Minute

// inFlightAnswer answers an operation still in flight: in_progress, and, when
// the downstream reported a business state (a payout "pending"), that state
// and a poll interval that grows with the wait (a quarter of the time waited
// so far, from the configured poll_after up to MaxPendingPollAfter).
func (s *Service) inFlightAnswer(rec idemstore.Record) Answer {
	r := withActingClient(opAnswer(status.InProgress, rec.OperationID), rec.ActingClient)
	if rec.DownstreamState == "" {
		return r
	}
	r.Key = KeyInProgressPending
	r = r.With("downstream_state", rec.DownstreamState)
	waited := time.Duration(0)
	if !rec.CreatedAt.IsZero() {
		waited = s.now().Sub(rec.CreatedAt)
	}
	r.PollAfter = min(max(s.cfg.PollAfter, waited/4), MaxPendingPollAfter)
	return r
}

// RecentView is the body's view of an operation for the amnesia guard.
type RecentView map[string]any

// recentOperation is rec as the amnesia guard shows it: its id, its state as
// the agent-facing status, its reference, when it finished, and why it
// failed.
func (s *Service) recentOperation(rec idemstore.Record) RecentView {
	// The state is a plain string, as the texts read it (bodyTexts).
	out := RecentView{"operation_id": rec.OperationID, "state": string(s.answerFor(rec, false).Status), "result_ref": rec.ResultRef, "completed_at": nil}
	if rec.State.Terminal() && !rec.UpdatedAt.IsZero() {
		out["completed_at"] = rec.UpdatedAt.UTC().Format(time.RFC3339)
	}
	if rec.State == operation.StateFailed {
		out["reason"] = rec.Reason
		if rec.FailureKind != "" {
			out["failure_kind"] = string(rec.FailureKind)
		}
	}
	return out
}

// previewReadyAnswer is preview_ready: the signed fingerprint, its expiry and
// what it binds; with recent (the amnesia guard found an identical recent
// operation) its view and texts; with offer (the action's policy asks a
// person to approve it) the approval's reasons and link.
func (s *Service) previewReadyAnswer(scope, fp string, p fingerprint.Payload, preview PreviewView, recent *idemstore.Record,
	offer *ApprovalView) Answer {
	r := opAnswer(status.PreviewReady, p.Nonce).
		With("fingerprint", fp).
		With("expires_at", p.ExpiresAt().Format(time.RFC3339)).
		With("preview", preview)
	r.Scope = scope
	if offer != nil {
		r = r.With("approval", *offer)
	}
	if recent != nil {
		r.Key = KeyPreviewReadyRepeat
		r = r.With("recent_operation", s.recentOperation(*recent))
	}
	return r
}

// repeatUnacknowledgedAnswer answers a fingerprint of the amnesia guard
// confirmed without acknowledge_repeat_of; recent is the recent operation
// when the caller may see it (else only its id is shown).
func (s *Service) repeatUnacknowledgedAnswer(opID, recentID string, recent *idemstore.Record) Answer {
	view := RecentView{"operation_id": recentID}
	if recent != nil {
		view = s.recentOperation(*recent)
	}
	return opAnswer(status.RepeatUnacknowledged, opID).With("recent_operation", view)
}

// fingerprintExpiredAnswer answers a fingerprint past its expiry that no
// confirm consumed.
func fingerprintExpiredAnswer(expiresAt time.Time) Answer {
	r := NewAnswer(status.FingerprintExpired)
	r.Words.ExpiresAt = expiresAt.Format(time.RFC3339)
	return r
}

// UnknownActionAnswer answers a scope the catalog does not hold.
func UnknownActionAnswer(scope string) Answer { return scopedAnswer(status.UnknownAction, scope) }

// invalidParams builds invalid_params with one entry per problem.
func invalidParams(scope string, problems []params.FieldProblem) Answer {
	return scopedAnswer(status.InvalidParams, scope).With("errors", problems)
}

// InternalErrorAnswer answers a bug or an unexpected failure, err logged.
func InternalErrorAnswer(opID string, err error) Answer {
	r := opAnswer(status.InternalError, opID)
	r.Err = err
	return r
}

// UnavailableAnswer is temporarily_unavailable about opID (may be empty) with
// the detail fragment detail: the workflow engine or the request's time ran
// out.
func UnavailableAnswer(opID, detail string) Answer {
	r := opAnswer(status.TemporarilyUnavailable, opID)
	r.Detail = detail
	return r
}

// storeErrorAnswer answers a store failure: temporarily_unavailable when the
// store is unreachable, internal_error otherwise.
func (s *Service) storeErrorAnswer(scope, opID string, err error) Answer {
	st := status.InternalError
	if errors.Is(err, idemstore.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		st = status.TemporarilyUnavailable
	}
	r := opAnswer(st, opID)
	r.Scope = scope
	r.Err = err
	return r
}

// quoteFailure answers a failed quote: downstream_refused for a definite
// refusal, else temporarily_unavailable with the quote's own texts.
func quoteFailure(scope string, err error) Answer {
	var qe *downstream.QuoteError
	if errors.As(err, &qe) && qe.Refused {
		r := scopedAnswer(status.DownstreamRefused, scope).With("reason", qe.Reason)
		if problems := fieldProblems(qe.Fields); len(problems) > 0 {
			r = r.With("errors", problems)
		}
		return r
	}
	r := scopedAnswer(status.TemporarilyUnavailable, scope)
	r.Key = KeyQuoteUnavailable
	r.Detail = quoteDetails[downstream.QuoteUnreachable]
	if qe != nil {
		if d, ok := quoteDetails[qe.Failure]; ok {
			r.Detail = d
		}
		if qe.HTTPStatus != 0 {
			r.Words.Got = strconv.Itoa(qe.HTTPStatus)
		}
	}
	return r
}

// DecisionView is a decision as the ops answers show it.
type DecisionView struct {
	// Operator is who decided.
	Operator string `json:"operator"`
	// Outcome is completed or failed.
	Outcome operation.ResolutionOutcome `json:"outcome"`
	// DecidedAt is when the decision was accepted.
	DecidedAt time.Time `json:"decided_at,omitzero"`
	// Via is update (the ops API) or signal (Web UI, CLI); empty when read from the truth.
	Via string `json:"via,omitempty"`
	// Note is the operator's note.
	Note string `json:"note,omitempty"`
	// EvidenceURL is the operator's evidence link.
	EvidenceURL string `json:"evidence_url,omitempty"`
}

// alreadyResolvedAnswer refuses a second decision, naming the first.
func alreadyResolvedAnswer(opID string, d DecisionView) Answer {
	return opAnswer(status.AlreadyResolved, opID).With("decision", d)
}

// notAwaitingAnswer refuses a decision for an operation in state.
func notAwaitingAnswer(opID string, state operation.State) Answer {
	return opAnswer(status.NotAwaitingReview, opID).With("state", state)
}

// invalidResolutionAnswer refuses a malformed decision: with the problems
// found here, or with the workflow's own detail.
func invalidResolutionAnswer(opID string, problems []params.FieldProblem, detail string) Answer {
	r := opAnswer(status.InvalidResolution, opID)
	if len(problems) > 0 {
		r = r.With("errors", problems)
	}
	r.Words.Detail = detail
	return r
}

// resolutionSentAnswer answers a decision the workflow accepted but has not
// recorded yet.
func resolutionSentAnswer(opID string, outcome operation.ResolutionOutcome) Answer {
	return opAnswer(status.ResolutionSent, opID).With("outcome", outcome)
}

// resolutionPayloadAnswer answers the resolve signal (name signal) an
// operator sends to opID's workflow from the Temporal Web UI or CLI, with
// its input res (the token included), valid until expiresAt.
func resolutionPayloadAnswer(opID, signal string, res operation.Resolution, expiresAt time.Time) Answer {
	return opAnswer(status.ResolutionPayload, opID).With("workflow_id", opID).With("signal", signal).
		With("input", res).With("expires_at", expiresAt.UTC().Format(time.RFC3339))
}

// resolvedAnswer answers the first decision about the operation op: the
// final state, the decision, and the outcome's own fields (result and
// result_ref, or reason and failure_kind, and its receipt).
func (s *Service) resolvedAnswer(op operationRef, res operation.Final, d DecisionView) Answer {
	final := res
	final.ResolvedBy = "" // the decision names the operator
	r := opAnswer(status.Resolved, op.ID).With("state", res.State).With("decision", d)
	for k, v := range s.finalAnswer(op, final, false).Fields {
		r = r.With(k, v)
	}
	return r
}

// resolveUnreachableAnswer answers a decision that could not reach the
// workflow.
func resolveUnreachableAnswer(opID string, err error) Answer {
	r := opAnswer(status.TemporarilyUnavailable, opID)
	r.Err = err
	r.Words.Detail = "the workflow engine could not be reached"
	return r
}

// operationsListedAnswer lists recs, the operations in state (empty: every
// state).
func operationsListedAnswer(recs []idemstore.Record, state operation.State) Answer {
	if recs == nil {
		recs = []idemstore.Record{}
	}
	r := NewAnswer(status.OperationsListed).With("operations", recs).With("count", len(recs))
	r.Words.State = string(state)
	return r
}

// operationFoundAnswer shows rec in full: its params with decimals as strings
// (params nil: none kept), its timeline, and why the timeline is incomplete
// (herr).
func operationFoundAnswer(rec idemstore.Record, params any, timeline []operation.TimelineEntry, herr error) Answer {
	r := opAnswer(status.OperationFound, rec.OperationID).With("operation", rec).With("timeline", timeline)
	if params != nil {
		r = r.With("params", params)
	}
	if herr != nil {
		r = r.With("timeline_incomplete", "the workflow history could not be read: "+herr.Error())
	}
	return r
}

// webhookRefusedAnswer refuses a webhook event of scope, saying why.
func webhookRefusedAnswer(scope string, why error) Answer {
	return scopedAnswer(status.WebhookRefused, scope).With("reason", why.Error())
}

// webhookUndeliveredAnswer answers a verified webhook event of scope that
// could not be delivered to opID's workflow (err logged).
func webhookUndeliveredAnswer(scope, opID string, err error) Answer {
	r := opAnswer(status.TemporarilyUnavailable, opID)
	r.Scope = scope
	r.Err = err
	return r
}

// webhookAcceptedAnswer answers a webhook event delivered to opID's workflow.
func webhookAcceptedAnswer(scope, opID string) Answer {
	r := opAnswer(status.WebhookAccepted, opID)
	r.Scope = scope
	return r
}

// readinessAnswer is ready, or not_ready when the truth database is
// unreachable; redis is ok or degraded.
func readinessAnswer(truthReachable bool, redis string) Answer {
	if !truthReachable {
		r := NewAnswer(status.NotReady).With("postgres", "unreachable").With("redis", redis)
		r.Detail = DetailPostgresDown
		return r
	}
	return NewAnswer(status.Ready).With("postgres", "ok").With("redis", redis)
}

// scopeOf is whether caller's token was granted the scope action needs.
func scopeOf(caller Caller, action *catalog.Action) scopeAnswer {
	a := scopeAnswer{Checked: true}
	if !caller.Allows(action.Auth.Scope) {
		a.Missing = action.Auth.Scope
	}
	return a
}

// insufficientScopeAnswer refuses a call of action scope whose token lacks
// the OAuth scope want: nothing was read or written; the transport names
// want in its challenge (RFC 6750).
func insufficientScopeAnswer(scope, want string) Answer {
	a := scopedAnswer(status.InsufficientScope, scope)
	a.Words.Expected = want
	return a
}
