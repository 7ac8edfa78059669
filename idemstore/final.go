package idemstore

import (
	"encoding/json"
	"time"
)

// Final is an operation's terminal outcome, declared once and embedded
// wherever an outcome travels: in Finalization (what a store writes), in
// the operation workflow's result and in its Finalize activity's input
// (operation.FinalizeInput), in what ClaimTruth read back
// (operation.ClaimResult), and in the gateway's answers. A person's
// decision is part of it (ResolvedBy, the note, the evidence, when). Its
// JSON names are those of Record and of every recorded workflow history;
// they must not change.
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
	// ResolutionNote is the operator's note.
	ResolutionNote string `json:"resolution_note,omitempty"`
	// EvidenceURL is the operator's evidence link (a ticket, a statement).
	EvidenceURL string `json:"evidence_url,omitempty"`
	// ResolvedAt is when the operator decided (zero when no person did).
	ResolvedAt time.Time `json:"resolved_at,omitzero"`
	// CompletedAt is when the outcome was decided: the operation workflow
	// decides it once, and the truth and the fast path both record this very
	// time, so that every answer of the outcome (and its receipt) names the
	// same one. Zero in histories recorded before it was decided there; a
	// store then uses its own clock.
	CompletedAt time.Time `json:"completed_at,omitzero"`
}

// Final returns the terminal outcome r holds (meaningful when r.State is
// terminal).
func (r Record) Final() Final {
	return Final{State: r.State, Result: r.Result, ResultRef: r.ResultRef, Reason: r.Reason,
		FailureKind: r.FailureKind, ResolvedBy: r.ResolvedBy, ResolutionNote: r.ResolutionNote,
		EvidenceURL: r.EvidenceURL, ResolvedAt: r.ResolvedAt, CompletedAt: r.CompletedAt}
}
