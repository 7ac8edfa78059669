package approval

import (
	"context"
	"encoding/json"
	"slices"
	"time"
)

// Record is what the truth keeps of one operation's approval.
type Record struct {
	// OperationID is the operation (the fingerprint's nonce).
	OperationID string `json:"operation_id"`
	// Subject is who the operation is for: only their passkeys decide.
	Subject string `json:"subject"`
	// Scope is the action.
	Scope string `json:"scope"`
	// ParamHash binds the canonical bound params.
	ParamHash string `json:"param_hash"`
	// BoundParams are the canonical bound params (what the page showed).
	BoundParams json.RawMessage `json:"bound_params,omitempty"`
	// Reasons are why approval was asked.
	Reasons []Reason `json:"reasons"`
	// ExpiresAt is the fingerprint's expiry: no decision and no confirm after it.
	ExpiresAt time.Time `json:"expires_at"`
	// State is PENDING, APPROVED or DECLINED.
	State State `json:"state"`
	// Approvers is who approves, as the action's policy named them when the
	// request was first recorded (nil: the subject alone).
	Approvers *Approvers `json:"approvers,omitempty"`
	// Needed is how many distinct people must approve.
	Needed int `json:"needed"`
	// Given is how many have approved.
	Given int `json:"given"`
	// Decisions are each person's decision, in the order they came.
	Decisions []ApproverDecision `json:"decisions,omitempty"`
	// RequestedAt is when the request was first recorded.
	RequestedAt time.Time `json:"requested_at,omitzero"`
	// DecidedAt is when the person decided (zero while pending).
	DecidedAt time.Time `json:"decided_at,omitzero"`
	// CredentialID is the passkey that decided (base64url; empty for an
	// approval of several people: each decision names its own).
	CredentialID string `json:"credential_id,omitempty"`
	// Statement is the canonical statement the passkey signed.
	Statement json.RawMessage `json:"statement,omitempty"`
	// Evidence is the stored assertion (see ceremony.Evidence), or, for an
	// approval of several people, their JointEvidence.
	Evidence json.RawMessage `json:"evidence,omitempty"`
	// EvidenceSHA256 is the lowercase hex SHA-256 of Evidence: what the
	// workflow's input and the receipt carry.
	EvidenceSHA256 string `json:"evidence_sha256,omitempty"`
	// TraceID is the trace of the request that decided (or asked).
	TraceID string `json:"trace_id,omitempty"`
}

// Request asks a person to approve an operation: recorded PENDING when
// nothing is recorded yet (a decided approval is left alone).
type Request struct {
	// OperationID, Subject, Scope, ParamHash, BoundParams, Reasons and
	// ExpiresAt are those of Record.
	OperationID, Subject, Scope, ParamHash string
	// BoundParams are the canonical bound params.
	BoundParams json.RawMessage
	// Reasons are why approval is asked.
	Reasons []Reason
	// ExpiresAt is the fingerprint's expiry.
	ExpiresAt time.Time
	// Approvers is who approves (nil: the subject alone).
	Approvers *Approvers
	// TraceID is the asking request's trace.
	TraceID string
	// At is now.
	At time.Time
}

// Decided records a verified decision: the first one for the operation
// wins, and the passkey's signature counter must advance in the same
// transaction (ErrSignCount otherwise).
type Decided struct {
	// Request is the operation the decision is about.
	Request Request
	// Approver is the person who decided: the subject of the deciding
	// passkey (empty: the request's subject).
	Approver string
	// State is StateApproved or StateDeclined.
	State State
	// CredentialID is the deciding passkey (base64url).
	CredentialID string
	// SignCount is the counter its assertion carried.
	SignCount uint32
	// Statement is the canonical statement signed.
	Statement json.RawMessage
	// Evidence is the assertion as stored.
	Evidence json.RawMessage
	// EvidenceSHA256 is the hex SHA-256 of Evidence.
	EvidenceSHA256 string
}

// SignCountAdvances reports whether an assertion carrying presented may
// follow the last counter seen, stored: the counter must grow, unless both
// are 0 (an authenticator that counts nothing always says 0, WebAuthn
// §6.1.1). Every Store decides with it, in the transaction that advances
// the counter.
func SignCountAdvances(stored, presented uint32) bool {
	return presented > stored || presented == 0 && stored == 0
}

// Passkey is a WebAuthn credential registered for a subject.
type Passkey struct {
	// ID is the credential id, base64url without padding.
	ID string `json:"id"`
	// Subject is whose passkey it is: the person.
	Subject string `json:"subject"`
	// Roles are the roles it was enrolled with (its invite's): what
	// Approvers.Role asks of an approver's passkey.
	Roles []string `json:"roles,omitempty"`
	// Credential is go-webauthn's credential record (public key, flags,
	// authenticator), as JSON.
	Credential json.RawMessage `json:"-"`
	// SignCount is the last signature counter seen.
	SignCount uint32 `json:"sign_count"`
	// CreatedAt is when it was enrolled.
	CreatedAt time.Time `json:"created_at"`
	// EnrolTraceID is the trace of the enrolment.
	EnrolTraceID string `json:"enrol_trace_id,omitempty"`
	// LastUsedAt is when it last decided (zero: never).
	LastUsedAt time.Time `json:"last_used_at,omitzero"`
	// RevokedAt is when it was revoked (zero: active).
	RevokedAt time.Time `json:"revoked_at,omitzero"`
	// RevokedBy is the operator who revoked it.
	RevokedBy string `json:"revoked_by,omitempty"`
	// RevokeTraceID is the trace of the revocation.
	RevokeTraceID string `json:"revoke_trace_id,omitempty"`
}

// Invite is a one-time enrolment link's record; its token is kept as a
// SHA-256 only.
type Invite struct {
	// TokenSHA256 is the hex SHA-256 of the link's token.
	TokenSHA256 string
	// Subject is who enrols.
	Subject string
	// Roles are the roles the passkey enrolled with it will have.
	Roles []string
	// CreatedBy is the operator who invited.
	CreatedBy string
	// ExpiresAt ends the link.
	ExpiresAt time.Time
	// Session is the WebAuthn registration session of the last begun
	// enrolment (its challenge), nil before.
	Session json.RawMessage
	// TraceID is the trace of the invitation.
	TraceID string
}

// Revocation revokes a passkey.
type Revocation struct {
	// ID is the passkey's id.
	ID string
	// By is the operator.
	By string
	// TraceID is the revoking request's trace.
	TraceID string
	// At is now.
	At time.Time
}

// Store keeps approvals, passkeys and invites in the PostgreSQL truth
// (pgstore implements it). Never Redis: an approval is evidence.
type Store interface {
	// RequestApproval records r PENDING unless the operation's approval is
	// recorded already; it returns the record as it stands.
	RequestApproval(ctx context.Context, r Request) (Record, error)
	// Approval reads one operation's approval, or ErrNotFound.
	Approval(ctx context.Context, opID string) (Record, error)
	// Decide records d when the operation is undecided (ErrAlreadyDecided
	// with the standing record otherwise) and advances the passkey's counter
	// (ErrSignCount when it does not advance, ErrRevoked when revoked).
	Decide(ctx context.Context, d Decided) (Record, error)
	// Approvals lists up to limit approvals (DefaultListLimit when not
	// positive) in state (empty: every state), newest first.
	Approvals(ctx context.Context, state State, limit int) ([]Record, error)
	// PayeeKnown reports whether subject completed an operation of scope to
	// payee (the bound field payee_id) that the truth still holds.
	PayeeKnown(ctx context.Context, subject, scope, payee string) (bool, error)
	// CreateInvite stores a new enrolment invite.
	CreateInvite(ctx context.Context, inv Invite) error
	// Invite reads a usable invite (unexpired at now, unused), or ErrInviteInvalid.
	Invite(ctx context.Context, tokenSHA256 string, now time.Time) (Invite, error)
	// BeginEnrolment keeps the registration session on a usable invite.
	BeginEnrolment(ctx context.Context, tokenSHA256 string, session json.RawMessage, now time.Time) error
	// Enrol uses the invite once and stores the passkey in one transaction;
	// ErrInviteInvalid when it is unknown, expired or used.
	Enrol(ctx context.Context, tokenSHA256 string, pk Passkey, now time.Time) error
	// Passkeys lists subject's passkeys (every subject's when empty),
	// active ones only unless withRevoked.
	Passkeys(ctx context.Context, subject string, withRevoked bool) ([]Passkey, error)
	// Revoke revokes a passkey; ErrNotFound, or ErrRevoked when it was already.
	Revoke(ctx context.Context, r Revocation) (Passkey, error)
	// PasskeysWithRole lists the active passkeys enrolled with role.
	PasskeysWithRole(ctx context.Context, role string) ([]Passkey, error)
}

// ApproverName is who decided d: its Approver, or the request's subject.
func (d Decided) ApproverName() string {
	if d.Approver != "" {
		return d.Approver
	}
	return d.Request.Subject
}

// Pending is the record a request starts: PENDING, nothing given.
func (r Request) Pending() Record {
	return Record{
		OperationID: r.OperationID, Subject: r.Subject, Scope: r.Scope, ParamHash: r.ParamHash,
		BoundParams: r.BoundParams, Reasons: r.Reasons, ExpiresAt: r.ExpiresAt, State: StatePending,
		Approvers: r.Approvers, Needed: r.Approvers.Needed(), RequestedAt: r.At, TraceID: r.TraceID,
	}
}

// Apply records decision d on rec, the operation's approval as it stands
// (Request.Pending when none is stored): ErrAlreadyDecided when rec is
// decided or d's approver decided it before (the first decision of each
// person stands); otherwise rec with d's ApproverDecision appended and
// tallied. An approval decided by one decision carries that decision's
// evidence; one approved by several people their JointEvidence. Pure:
// every Store decides with it, in the step that advances the passkey's
// counter.
func Apply(rec Record, d Decided) (Record, error) {
	who := d.ApproverName()
	if rec.State != StatePending {
		return rec, ErrAlreadyDecided
	}
	for _, prior := range rec.Decisions {
		if prior.Approver == who {
			return rec, ErrAlreadyDecided
		}
	}
	rec.Decisions = append(slices.Clone(rec.Decisions), ApproverDecision{
		Approver: who, State: d.State, CredentialID: d.CredentialID, DecidedAt: d.Request.At,
		EvidenceSHA256: d.EvidenceSHA256, TraceID: d.Request.TraceID,
	})
	if rec.Needed < 1 {
		rec.Needed = rec.Approvers.Needed()
	}
	state, given := Tally(rec.Needed, rec.Decisions)
	rec.Given = given
	if state == StatePending {
		return rec, nil
	}
	rec.State, rec.DecidedAt, rec.TraceID = state, d.Request.At, d.Request.TraceID
	if rec.BoundParams == nil {
		rec.BoundParams = d.Request.BoundParams
	}
	rec.Statement = d.Statement
	if state == StateApproved && len(rec.Decisions) > 1 {
		rec.CredentialID = ""
		rec.Evidence, rec.EvidenceSHA256 = JointEvidence(rec.OperationID, rec.Decisions)
		return rec, nil
	}
	rec.CredentialID, rec.Evidence, rec.EvidenceSHA256 = d.CredentialID, d.Evidence, d.EvidenceSHA256
	return rec, nil
}

// DefaultListLimit bounds Store.Approvals when no limit is given.
const DefaultListLimit = 100
