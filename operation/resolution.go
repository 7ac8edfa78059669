package operation

import (
	"encoding/json"
	"time"
)

// SignalResolve is the name of the signal an operator sends to a workflow
// waiting for review to resolve it (the Temporal Web UI, `temporal
// workflow signal`, the gateway's resolution payload); the workflow
// package registers it under this name.
const SignalResolve = "resolve"

// This file holds what a person decides about an operation and what the
// gateway sends its workflow: the operator's resolution of an operation
// waiting for review and the decision that counts, a downstream's event,
// and the operator's timeline. The workflow (package workflows) applies
// them; the gateway (package gateway) sends and shows them.

// ResolutionOutcome is what an operator decides for an operation waiting
// for review: a person's word, not a claim's outcome
// nor a state, though it leads to one.
type ResolutionOutcome string

const (
	// ResolutionCompleted resolves NEEDS_REVIEW to DONE.
	ResolutionCompleted ResolutionOutcome = "completed"
	// ResolutionFailed resolves NEEDS_REVIEW to FAILED.
	ResolutionFailed ResolutionOutcome = "failed"
)

// Resolution is the payload of the resolve signal and of the resolve Update.
type Resolution struct {
	// Outcome is ResolutionCompleted or ResolutionFailed.
	Outcome ResolutionOutcome `json:"outcome"`
	// Result is the operator's result for a completed outcome.
	Result json.RawMessage `json:"result,omitempty"`
	// Reason is the operator's reason for a failed outcome.
	Reason string `json:"reason,omitempty"`
	// Operator is who resolved it.
	Operator string `json:"operator"`
	// Note is the operator's free note.
	Note string `json:"note,omitempty"`
	// EvidenceURL links the operator's evidence (a bank statement, a ticket).
	EvidenceURL string `json:"evidence_url,omitempty"`
	// Token is the gateway's signed statement of this decision (package
	// resolution): the proof the workflow asks of a decision when its
	// input carries ResolutionKeys. Its operator, not Operator, is the one
	// recorded.
	Token string `json:"token,omitempty"`
}

// DownstreamEvent is the payload of the downstream_state signal: the
// downstream's record of the operation, as a verified webhook carried it.
type DownstreamEvent struct {
	// Record is the downstream's record (read with the catalog's business_state).
	Record json.RawMessage `json:"record"`
	// EventType is the webhook event's type, such as payout.paid, for logs.
	EventType string `json:"event_type,omitempty"`
}

// How a decision reached the workflow.
const (
	// ViaUpdate is the ops API (the resolve Update).
	ViaUpdate = "update"
	// ViaSignal is the resolve signal (Web UI, temporal workflow signal).
	ViaSignal = "signal"
)

// OperatorDecision is the first resolution the workflow accepted: the one that
// counts. Every later one is refused.
type OperatorDecision struct {
	// Outcome is ResolutionCompleted or ResolutionFailed.
	Outcome ResolutionOutcome `json:"outcome"`
	// Operator is who decided.
	Operator string `json:"operator"`
	// DecidedAt is when the workflow accepted the decision.
	DecidedAt time.Time `json:"decided_at"`
	// Via is ViaUpdate or ViaSignal.
	Via string `json:"via"`
	// Note is the operator's note.
	Note string `json:"note,omitempty"`
	// EvidenceURL is the operator's evidence link.
	EvidenceURL string `json:"evidence_url,omitempty"`
	// Signal is the ordinal of the resolve signal that carried the
	// decision among the resolve signals the workflow received (1 for the
	// first); 0 for an Update. SignalVerdicts reads it.
	Signal int `json:"signal,omitempty"`
}

// ResolveAnswer is the result of the resolve Update: the operation's final
// state and the decision that made it.
type ResolveAnswer struct {
	// Result is the terminal outcome the workflow recorded.
	Result Final `json:"result"`
	// Decision is the accepted decision.
	Decision OperatorDecision `json:"decision"`
}

// TimelineEntry is one step of an operation as an operator reads it.
type TimelineEntry struct {
	// At is when it happened.
	At time.Time `json:"at"`
	// Source is "truth" or "workflow".
	Source string `json:"source"`
	// Event names the step, such as "activity_failed".
	Event string `json:"event"`
	// Detail says what happened, in words.
	Detail string `json:"detail"`
	// ResolveSignal is the ordinal of a resolve signal among the history's
	// resolve signals (1 for the first), 0 for every other entry; it is
	// not shown (SignalVerdicts in workflows reads it).
	ResolveSignal int `json:"-"`
}
