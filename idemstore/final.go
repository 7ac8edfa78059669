package idemstore

import (
	"encoding/json"
	"time"
)

// Final is an operation's terminal outcome, declared once: what a DONE or
// FAILED record holds, what the operation's workflow returns
// (workflows.OperationResult) and what it asks the Finalize activity to
// write (workflows.FinalizeInput). Its JSON names are those of Record and of
// every recorded workflow history; they must not change.
type Final struct {
	// State is DONE or FAILED.
	State State `json:"state"`
	// Result is the downstream's (or the operator's) result when DONE.
	Result json.RawMessage `json:"result,omitempty"`
	// ResultRef is the business reference extracted from Result when DONE.
	ResultRef string `json:"result_ref,omitempty"`
	// Reason says why it failed (FAILED).
	Reason string `json:"reason,omitempty"`
	// FailureKind says how a failure is known (FAILED).
	FailureKind FailureKind `json:"failure_kind,omitempty"`
	// ResolvedBy names the operator when a person decided.
	ResolvedBy string `json:"resolved_by,omitempty"`
	// CompletedAt is when the outcome was decided, as the truth and the
	// fast path record it (Finalization.CompletedAt); zero in histories
	// recorded before it was decided in the workflow.
	CompletedAt time.Time `json:"completed_at,omitzero"`
}

// Final returns the terminal outcome r holds (meaningful when r.State is
// terminal).
func (r Record) Final() Final {
	return Final{State: r.State, Result: r.Result, ResultRef: r.ResultRef, Reason: r.Reason,
		FailureKind: r.FailureKind, ResolvedBy: r.ResolvedBy, CompletedAt: r.CompletedAt}
}

// Record returns f as the record of operation key, holding only the outcome.
func (f Final) Record(opID string) Record {
	return Record{OperationID: opID, State: f.State, Result: f.Result, ResultRef: f.ResultRef, Reason: f.Reason,
		FailureKind: f.FailureKind, ResolvedBy: f.ResolvedBy, CompletedAt: f.CompletedAt}
}
