package client

import (
	"bytes"
	"encoding/json"
	"time"
)

// Decision is an operator's decision about an operation.
type Decision struct {
	// Operator is who decided.
	Operator string `json:"operator"`
	// Outcome is completed or failed.
	Outcome string `json:"outcome"`
	// DecidedAt is when the decision was accepted.
	DecidedAt time.Time `json:"decided_at,omitzero"`
	// Via is update (the ops API) or signal (the Temporal Web UI or CLI);
	// empty when read from the truth.
	Via string `json:"via,omitempty"`
	// Note is the operator's note.
	Note string `json:"note,omitempty"`
	// EvidenceURL is the operator's evidence link.
	EvidenceURL string `json:"evidence_url,omitempty"`
}

// OperationRecord is an operation as the gateway's truth records it.
type OperationRecord struct {
	// OperationID is the operation's id (the fingerprint's nonce).
	OperationID string `json:"operation_id"`
	// Subject is who asked for it.
	Subject string `json:"subject,omitempty"`
	// ActingClient is the OAuth client whose confirm claimed it for Subject
	// (empty when its token named none).
	ActingClient string `json:"acting_client,omitempty"`
	// Scope is its action.
	Scope string `json:"scope,omitempty"`
	// ParamHash is the SHA-256 of its canonical bound params.
	ParamHash string `json:"param_hash,omitempty"`
	// State is IN_FLIGHT, DONE, FAILED or NEEDS_REVIEW.
	State string `json:"state"`
	// Result is the downstream's result, when it completed.
	Result json.RawMessage `json:"result,omitempty"`
	// ResultRef is the business reference of the result.
	ResultRef string `json:"result_ref,omitempty"`
	// Reason is why it failed or waits for review.
	Reason string `json:"reason,omitempty"`
	// FailureKind says how a failure is known.
	FailureKind string `json:"failure_kind,omitempty"`
	// ResolvedBy is the operator who decided it, if one did.
	ResolvedBy string `json:"resolved_by,omitempty"`
	// ResolutionNote is that operator's note.
	ResolutionNote string `json:"resolution_note,omitempty"`
	// DownstreamState is the business state the downstream last reported.
	DownstreamState string `json:"downstream_state,omitempty"`
	// EvidenceURL is the operator's evidence link.
	EvidenceURL string `json:"evidence_url,omitempty"`
	// ResolvedAt is when the operator decided.
	ResolvedAt time.Time `json:"resolved_at,omitzero"`
	// ApprovalSHA256 is the digest of the approval's evidence, when a
	// person approved the operation.
	ApprovalSHA256 string `json:"approval_sha256,omitempty"`
	// MandateID is the standing mandate it was confirmed under instead of
	// a per-operation approval, when one was.
	MandateID string `json:"mandate_id,omitempty"`
	// MandateSHA256 is the SHA-256 of that mandate's signed statement.
	MandateSHA256 string `json:"mandate_sha256,omitempty"`
	// CompletedAt is when it reached its final state.
	CompletedAt time.Time `json:"completed_at,omitzero"`
	// CreatedAt is when it was claimed first.
	CreatedAt time.Time `json:"created_at,omitzero"`
	// UpdatedAt is when it entered its current state.
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// OperationList is the answer of Ops.Operations.
type OperationList struct {
	Answer
	// Operations are the operations listed.
	Operations []OperationRecord `json:"operations"`
	// Count is how many were listed.
	Count int `json:"count"`
}

// UnmarshalJSON reads the gateway's answer object, or a bare JSON array
// of operations.
func (l *OperationList) UnmarshalJSON(b []byte) error {
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '[' {
		return json.Unmarshal(t, &l.Operations)
	}
	type plain OperationList
	return json.Unmarshal(b, (*plain)(l))
}

// TimelineEntry is one step of an operation as an operator reads it.
type TimelineEntry struct {
	// At is when it happened.
	At time.Time `json:"at"`
	// Source is truth or workflow.
	Source string `json:"source"`
	// Event names the step, such as activity_failed or signal_refused.
	Event string `json:"event"`
	// Detail says what happened, in words.
	Detail string `json:"detail"`
}

// ApprovalRecord is a person's approval of an operation as the gateway
// keeps it.
type ApprovalRecord struct {
	// OperationID is the operation approved.
	OperationID string `json:"operation_id"`
	// Subject is whose operation it is (and, once decided, whose passkey decided).
	Subject string `json:"subject"`
	// Scope is the operation's action.
	Scope string `json:"scope"`
	// ParamHash is the operation's param_hash.
	ParamHash string `json:"param_hash"`
	// Reasons are the policy's reason codes (amount_above_threshold, new_payee, ...).
	Reasons []string `json:"reasons"`
	// State is PENDING, APPROVED or DECLINED.
	State string `json:"state"`
	// RequestedAt is when the approval was asked for.
	RequestedAt time.Time `json:"requested_at,omitzero"`
	// ExpiresAt is when the approval and the confirm must happen by.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// DecidedAt is when the person decided.
	DecidedAt time.Time `json:"decided_at,omitzero"`
	// CredentialID is the passkey that decided.
	CredentialID string `json:"credential_id,omitempty"`
	// EvidenceSHA256 is the digest of the WebAuthn evidence kept.
	EvidenceSHA256 string `json:"evidence_sha256,omitempty"`
	// TraceID is the trace of the decision.
	TraceID string `json:"trace_id,omitempty"`
}

// OperationDetail is the answer of Ops.Operation.
type OperationDetail struct {
	Answer
	// Operation is the operation's record.
	Operation OperationRecord `json:"operation"`
	// Params are its bound params, decimals as strings (nil when the
	// operation was claimed before bound params were recorded; ParamHash
	// still binds them).
	Params Fields `json:"params,omitempty"`
	// ApprovalRecord is its approval, when its action's policy asked for one.
	ApprovalRecord *ApprovalRecord `json:"approval_record,omitempty"`
	// Timeline is what happened to it, oldest first, from the truth and
	// its workflow's history.
	Timeline []TimelineEntry `json:"timeline"`
	// TimelineIncomplete says why the workflow's part of Timeline is
	// missing, when it is.
	TimelineIncomplete string `json:"timeline_incomplete,omitempty"`
}

// Resolved is the answer of Ops.Resolve: resolved (State, Decision and
// the outcome's Result, ResultRef, Reason, FailureKind and Receipt) or
// resolution_sent (Outcome).
type Resolved struct {
	Answer
	// Outcome is the decision the workflow took but has not recorded yet
	// (resolution_sent).
	Outcome string `json:"outcome,omitempty"`
}

// ResolutionPayload is the answer of Ops.ResolutionPayload
// (resolution_payload): what to send to the operation's workflow.
type ResolutionPayload struct {
	Answer
	// WorkflowID is the operation's workflow (its operation_id).
	WorkflowID string `json:"workflow_id"`
	// Signal is the resolve signal's name.
	Signal string `json:"signal"`
	// Input is the signal's JSON input, to send unchanged: the decision,
	// its operator and its resolution token.
	Input json.RawMessage `json:"input"`
	// ExpiresAt is when the token stops being valid.
	ExpiresAt time.Time `json:"expires_at"`
}

// Budget is one spend window of a subject, in one currency.
type Budget struct {
	// Name is the budget's name in the gateway's limits file.
	Name string `json:"name"`
	// Window is per_operation, daily or monthly.
	Window string `json:"window"`
	// Action is the action it applies to ("": every action).
	Action string `json:"action,omitempty"`
	// Currency is its currency ("": any currency).
	Currency string `json:"currency"`
	// Max is the window's maximum.
	Max Decimal `json:"max"`
	// Used is what the window holds.
	Used Decimal `json:"used"`
	// Left is what still fits.
	Left Decimal `json:"left"`
	// NextFreeAt is when the oldest amount the window holds frees (nil
	// when it holds none).
	NextFreeAt *time.Time `json:"next_free_at,omitempty"`
}

// BudgetReset is an operator's reset of a subject's budget windows.
type BudgetReset struct {
	// Subject is whose windows start afresh.
	Subject string `json:"subject"`
	// At is when.
	At time.Time `json:"reset_at"`
	// By is the operator.
	By string `json:"reset_by"`
	// TraceID is the trace the reset is logged with.
	TraceID string `json:"trace_id,omitempty"`
}

// SubjectLimits is a subject's limits as the gateway applies them.
type SubjectLimits struct {
	// Subject is the subject.
	Subject string `json:"subject"`
	// Role is the role whose budgets apply.
	Role string `json:"role"`
	// Budgets are its spend windows.
	Budgets []Budget `json:"budgets"`
	// PreviewRate is its rate of previews, such as 10/s ("": unlimited).
	PreviewRate string `json:"preview_rate,omitempty"`
	// ConfirmRate is its rate of confirms ("": unlimited).
	ConfirmRate string `json:"confirm_rate,omitempty"`
	// LastReset is the last reset of its windows, if any.
	LastReset *BudgetReset `json:"last_reset,omitempty"`
}

// LimitsShown is the answer of Ops.Limits.
type LimitsShown struct {
	Answer
	// Limits are the subject's limits.
	Limits SubjectLimits `json:"limits"`
}

// LimitsReset is the answer of Ops.ResetLimits.
type LimitsReset struct {
	Answer
	// Reset is the reset done.
	Reset BudgetReset `json:"reset"`
}

// Passkey is a passkey registered for a subject.
type Passkey struct {
	// ID is the passkey's credential id.
	ID string `json:"id"`
	// Subject is whose passkey it is: the person.
	Subject string `json:"subject"`
	// Roles are the roles it was enrolled with (a named approver's).
	Roles []string `json:"roles,omitempty"`
	// SignCount is the authenticator's signature counter last seen.
	SignCount uint32 `json:"sign_count"`
	// CreatedAt is when it was enrolled.
	CreatedAt time.Time `json:"created_at"`
	// EnrolTraceID is the trace of its enrolment.
	EnrolTraceID string `json:"enrol_trace_id,omitempty"`
	// LastUsedAt is when it last decided an approval.
	LastUsedAt time.Time `json:"last_used_at,omitzero"`
	// RevokedAt is when it was revoked, if it was.
	RevokedAt time.Time `json:"revoked_at,omitzero"`
	// RevokedBy is the operator who revoked it.
	RevokedBy string `json:"revoked_by,omitempty"`
	// RevokeTraceID is the trace of its revocation.
	RevokeTraceID string `json:"revoke_trace_id,omitempty"`
}

// PasskeyList is the answer of Ops.Passkeys.
type PasskeyList struct {
	Answer
	// Passkeys are the passkeys listed.
	Passkeys []Passkey `json:"passkeys"`
	// Count is how many were listed.
	Count int `json:"count"`
}

// PasskeyInvite is the answer of Ops.InvitePasskey.
type PasskeyInvite struct {
	Answer
	// Subject is who may enrol with the link.
	Subject string `json:"subject"`
	// Roles are the roles the enrolled passkey will have.
	Roles []string `json:"roles"`
	// URL is the one-time enrolment link, for the subject only.
	URL string `json:"url"`
	// ExpiresAt is when the link stops working.
	ExpiresAt time.Time `json:"expires_at"`
}

// PasskeyRevoked is the answer of Ops.RevokePasskey.
type PasskeyRevoked struct {
	Answer
	// Passkey is the passkey, revoked.
	Passkey Passkey `json:"passkey"`
}

// ApprovalList is the answer of Ops.Approvals.
type ApprovalList struct {
	Answer
	// Approvals are the approvals listed.
	Approvals []ApprovalRecord `json:"approvals"`
	// Count is how many were listed.
	Count int `json:"count"`
}
