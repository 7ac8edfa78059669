package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Ops calls the gateway's operator routes (/v1/ops/...) as one operator:
// list and show operations, decide one that waits for manual review, show
// and reset a subject's limits, invite, list and revoke passkeys, and list
// approvals. It is safe for concurrent use.
//
// Each method returns a typed answer that embeds the gateway's Answer (its
// status, meaning, trace id and Raw, the body as received), or an error. A
// refusal is an *Error that matches the sentinel of its class
// (ErrAlreadyResolved, ErrNotAwaitingReview, ErrInvalidResolution,
// ErrUnknownPasskey, ErrUnknownOperation, ErrBadRequest for a token without
// the operator role, ...) and carries the refusal's Answer, Raw included.
//
// Reads (GET) are retried as the Client retries; a request that changes
// something (Resolve, ResetLimits, InvitePasskey, RevokePasskey) is sent
// once: sent again after a lost answer it would be refused
// (already_resolved) or repeated (a second invitation), so the caller
// decides.
type Ops struct {
	c *Client
}

// NewOps returns a client of the ops routes of the gateway at baseURL that
// authenticates with the operator's bearer token; opts are the Client's.
func NewOps(baseURL, token string, opts ...Option) (*Ops, error) {
	c, err := New(baseURL, token, opts...)
	if err != nil {
		return nil, fmt.Errorf("new ops client: %w", err)
	}
	return &Ops{c: c}, nil
}

// OperationFilter selects the operations Operations lists; its zero value
// lists every operation.
type OperationFilter struct {
	// State keeps the operations in this state: in_flight,
	// needs_manual_review, completed or failed ("": every state).
	State string
	// OlderThan keeps the operations that entered their state at least
	// this long ago (0: any age).
	OlderThan time.Duration
}

// Operations lists the operations f selects (status operations_listed).
func (o *Ops) Operations(ctx context.Context, f OperationFilter) (*OperationList, error) {
	q := url.Values{}
	if f.State != "" {
		q.Set("state", f.State)
	}
	if f.OlderThan > 0 {
		q.Set("older_than", f.OlderThan.String())
	}
	return call[OperationList](ctx, o, http.MethodGet, withQuery("/v1/ops/operations", q), nil)
}

// Operation shows one operation in full: its record, its bound params, its
// approval and its timeline (status operation_found).
func (o *Ops) Operation(ctx context.Context, operationID string) (*OperationDetail, error) {
	return call[OperationDetail](ctx, o, http.MethodGet, "/v1/ops/operations/"+url.PathEscape(operationID), nil)
}

// Outcomes of a Resolution.
const (
	// OutcomeCompleted decides that the operation was executed.
	OutcomeCompleted = "completed"
	// OutcomeFailed decides that it was not; Reason says why.
	OutcomeFailed = "failed"
)

// Resolution is an operator's decision about an operation that waits for
// manual review (docs/contract.md §4, ops).
type Resolution struct {
	// Outcome is OutcomeCompleted or OutcomeFailed.
	Outcome string `json:"outcome"`
	// Result is the operation's result as the downstream recorded it
	// (completed), JSON.
	Result json.RawMessage `json:"result,omitempty"`
	// Reason is why the operation failed (required when failed).
	Reason string `json:"reason,omitempty"`
	// Note says what the operator checked and why they decided so (required).
	Note string `json:"note"`
	// EvidenceURL links the evidence (a statement, a ticket).
	EvidenceURL string `json:"evidence_url,omitempty"`
}

// Resolve sends the operator's decision about operation operationID. The
// first decision wins: its answer is resolved (the operation's final
// state, State, Decision and the outcome's fields) or resolution_sent (the
// workflow took it and has not recorded it yet, Outcome). A later one is
// refused with an error matching ErrAlreadyResolved whose Decision is the
// first; an operation that does not wait is ErrNotAwaitingReview; an
// incomplete resolution is ErrInvalidResolution.
func (o *Ops) Resolve(ctx context.Context, operationID string, r Resolution) (*Resolved, error) {
	return call[Resolved](ctx, o, http.MethodPost, "/v1/ops/operations/"+url.PathEscape(operationID)+"/resolve", r)
}

// ResolutionPayload asks for the resolve signal an operator sends from the
// Temporal Web UI's signal dialog or `temporal workflow signal` instead of
// Resolve: the workflow, the signal's name and its JSON input, r with the
// gateway's resolution token naming the authenticated operator, valid until
// its ExpiresAt. It sends nothing; it is refused as Resolve is.
func (o *Ops) ResolutionPayload(ctx context.Context, operationID string, r Resolution) (*ResolutionPayload, error) {
	return call[ResolutionPayload](ctx, o, http.MethodPost, "/v1/ops/operations/"+url.PathEscape(operationID)+"/resolution-payload", r)
}

// Limits shows subject's spend budgets (what each window holds and what
// is left), its rates and its last reset (status limits_shown); role
// names the subject's role for the budgets of a role ("": agent).
func (o *Ops) Limits(ctx context.Context, subject, role string) (*LimitsShown, error) {
	q := url.Values{}
	if role != "" {
		q.Set("role", role)
	}
	return call[LimitsShown](ctx, o, http.MethodGet, withQuery(limitsPath(subject), q), nil)
}

// ResetLimits starts subject's budget windows afresh (status
// limits_reset): earlier reservations no longer count. The gateway logs
// and counts every reset.
func (o *Ops) ResetLimits(ctx context.Context, subject string) (*LimitsReset, error) {
	return call[LimitsReset](ctx, o, http.MethodPost, limitsPath(subject)+"/reset", nil)
}

// limitsPath is the route of subject's limits.
func limitsPath(subject string) string { return "/v1/ops/limits/" + url.PathEscape(subject) }

// PasskeyFilter selects the passkeys Passkeys lists; its zero value lists
// every subject's passkeys that are not revoked.
type PasskeyFilter struct {
	// Subject keeps this subject's passkeys ("": every subject's).
	Subject string
	// Revoked lists revoked passkeys too.
	Revoked bool
}

// Passkeys lists the passkeys f selects (status passkeys_listed).
func (o *Ops) Passkeys(ctx context.Context, f PasskeyFilter) (*PasskeyList, error) {
	q := url.Values{}
	if f.Subject != "" {
		q.Set("subject", f.Subject)
	}
	if f.Revoked {
		q.Set("revoked", "true")
	}
	return call[PasskeyList](ctx, o, http.MethodGet, withQuery("/v1/ops/passkeys", q), nil)
}

// InvitePasskey asks for a one-time enrolment link for subject (status
// passkey_invited): whoever opens it enrols a passkey as subject, with
// roles (a named approver's, such as finance), so it goes to subject only.
func (o *Ops) InvitePasskey(ctx context.Context, subject string, roles ...string) (*PasskeyInvite, error) {
	body := map[string]any{"subject": subject}
	if len(roles) > 0 {
		body["roles"] = roles
	}
	return call[PasskeyInvite](ctx, o, http.MethodPost, "/v1/ops/passkeys/invites", body)
}

// RevokePasskey revokes passkey id (status passkey_revoked): it decides
// nothing any more. An unknown id is ErrUnknownPasskey.
func (o *Ops) RevokePasskey(ctx context.Context, id string) (*PasskeyRevoked, error) {
	return call[PasskeyRevoked](ctx, o, http.MethodPost, "/v1/ops/passkeys/"+url.PathEscape(id)+"/revoke", nil)
}

// ApprovalFilter selects the approvals Approvals lists; its zero value
// lists every approval.
type ApprovalFilter struct {
	// State keeps the approvals in this state: pending, approved or
	// declined ("": every state).
	State string
}

// Approvals lists the approvals f selects (status approvals_listed).
func (o *Ops) Approvals(ctx context.Context, f ApprovalFilter) (*ApprovalList, error) {
	q := url.Values{}
	if f.State != "" {
		q.Set("state", f.State)
	}
	return call[ApprovalList](ctx, o, http.MethodGet, withQuery("/v1/ops/approvals", q), nil)
}

// withQuery is path with q's query, when q has one.
func withQuery(path string, q url.Values) string {
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// enveloped is a typed ops answer: it embeds the gateway's Answer.
type enveloped interface{ envelope() *Answer }

// envelope returns the answer itself, for the typed answers that embed it.
func (a *Answer) envelope() *Answer { return a }

// call sends one ops request and decodes its 2xx answer into a T, whose
// embedded Answer is the answer as received. Reads are retried, changes
// are sent once; any 2xx is the call's outcome.
func call[T any, PT interface {
	*T
	enveloped
}](ctx context.Context, o *Ops, method, path string, body any) (*T, error) {
	a, err := o.c.do(ctx, method, path, body, policy{once: method != http.MethodGet, byCode: true})
	if err != nil {
		return nil, err
	}
	out := PT(new(T))
	if err := json.Unmarshal(a.Raw, out); err != nil {
		return nil, fmt.Errorf("%s %s: decode the answer: %w: %w", method, path, ErrUnexpectedAnswer, err)
	}
	*out.envelope() = *a
	return (*T)(out), nil
}
