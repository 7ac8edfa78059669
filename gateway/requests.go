package gateway

import (
	"encoding/json"
	"slices"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/operation"
)

// Roles a caller can have.
const (
	// RoleAgent may preview, confirm and query its own operations.
	RoleAgent = "agent"
	// RoleOperator may also list, show and resolve every operation, and
	// manage passkeys and limits.
	RoleOperator = "operator"
)

// Caller is who sends a request, as the transport authenticated them: the
// subject every fingerprint is bound to (from the token, never from a
// body) and its role.
type Caller struct {
	// Subject is the authenticated caller, such as alice.
	Subject string
	// Role is RoleAgent or RoleOperator.
	Role string
	// Scoped says that the caller's token carries scopes (an identity
	// provider's): an action that names a scope (catalog auth.scope) is
	// open to it only when Scopes holds it. A token without scopes (the
	// token file, static JWTs) is not checked.
	Scoped bool
	// Scopes are the scopes the token was granted.
	Scopes []string
	// Client is the acting client (the token's client_id or azp): the
	// agent that acts for Subject.
	Client string
}

// Allows reports whether the caller may act on an action that needs scope
// (empty: none).
func (c Caller) Allows(scope string) bool {
	return scope == "" || !c.Scoped || slices.Contains(c.Scopes, scope)
}

// PreviewRequest asks to preview an action.
type PreviewRequest struct {
	// Caller is who asks.
	Caller Caller
	// Scope is the action.
	Scope string
	// Params are all params, bound and free, as the body carried them.
	Params json.RawMessage
}

// ConfirmRequest asks to execute a previewed action.
type ConfirmRequest struct {
	// Caller is who asks.
	Caller Caller
	// Scope is the action.
	Scope string
	// Fingerprint is the preview's fingerprint, copied verbatim.
	Fingerprint string
	// Params are all params, bound and free.
	Params json.RawMessage
	// AcknowledgeRepeatOf acknowledges the amnesia guard's recent operation.
	AcknowledgeRepeatOf string
	// MandateID names the standing mandate to confirm under when the
	// operation's approval is missing (empty: the gateway picks one).
	MandateID string
}

// StatusRequest asks for an operation's state.
type StatusRequest struct {
	// Caller is who asks: only its own operations are found.
	Caller Caller
	// OperationID is the operation, as the caller sent it.
	OperationID string
}

// ResolveRequest is an operator's decision about an operation waiting for
// review.
type ResolveRequest struct {
	// Caller is the operator.
	Caller Caller
	// OperationID is the operation.
	OperationID string
	// Outcome is "completed" or "failed".
	Outcome operation.ResolutionOutcome `json:"outcome"`
	// Result is the downstream result for completed.
	Result json.RawMessage `json:"result,omitempty"`
	// Reason says why it failed.
	Reason string `json:"reason,omitempty"`
	// Note is the operator's free note.
	Note string `json:"note,omitempty"`
	// EvidenceURL links the operator's evidence (an absolute http or https URL).
	EvidenceURL string `json:"evidence_url,omitempty"`
}

// WebhookRequest is a downstream's signed event about an operation.
type WebhookRequest struct {
	// Scope is the action whose webhook was called.
	Scope string
	// Body is the event's body, byte for byte as signed.
	Body []byte
	// Signature is the value of the action's signature header.
	Signature string
}

// ListRequest asks an operator's list of operations.
type ListRequest struct {
	// State filters by state: in_flight, needs_manual_review, completed,
	// failed (and their synonyms); empty lists every state.
	State string
	// OlderThan keeps operations created longer ago than this Go
	// duration; empty keeps all.
	OlderThan string
	// Limit is the most to list (a positive integer); empty: the default.
	Limit string
}

// ApprovalsRequest asks an operator's list of approvals.
type ApprovalsRequest struct {
	// State filters by pending, approved or declined; empty lists all.
	State string
	// Limit is the most to list; empty: the default.
	Limit string
}

// ApprovalLink is an approval page's link: the fingerprint and its
// canonical bound params (base64url), for operation OperationID.
type ApprovalLink struct {
	// OperationID is the operation the link names.
	OperationID string
	// Fingerprint is the link's fingerprint (f).
	Fingerprint string
	// Params are the link's canonical bound params, base64url (p).
	Params string
}

// DecisionRequest is a person's decision on an approval page: the link,
// approve or decline, and (for the decision itself) the passkey's
// assertion.
type DecisionRequest struct {
	// Link is the approval link the page was opened from.
	Link ApprovalLink
	// Decision is approve or decline.
	Decision approval.Decision
	// Credential is the browser's assertion (the decision only).
	Credential json.RawMessage
}

// InviteRequest asks for a one-time enrolment link: the person who enrols
// and the roles their passkey will have (a named approver's, such as
// finance; docs/contract.md §7b).
type InviteRequest struct {
	// Subject is who enrols: the person.
	Subject string
	// Roles are the roles the enrolled passkey will have.
	Roles []string
}
