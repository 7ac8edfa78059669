// Package fingerprint issues and verifies the server-signed, single-use
// credential that binds an operation's nonce, expiry, subject, scope and
// the param_hash of its canonical business params (which internal/params
// computes; this package only carries the hash). It does no I/O: issuing a
// fingerprint costs an HMAC, never a storage write.
package fingerprint

import (
	"errors"
	"time"
)

// Payload is the signed content of a fingerprint (docs/contract.md §3).
type Payload struct {
	// Nonce is 32 lowercase hex chars (128 random bits); it is the operation_id.
	Nonce string `json:"n"`
	// Exp is the unix second from which the fingerprint is refused for first consumption.
	Exp int64 `json:"exp"`
	// Subject is the authenticated subject it was issued to.
	Subject string `json:"u"`
	// Scope is the action it was issued for.
	Scope string `json:"s"`
	// ParamHash is the SHA-256 (64 lowercase hex chars) of the canonical bound params.
	ParamHash string `json:"p"`
	// KeyID names the signing key.
	KeyID string `json:"k"`
	// RecentOperation, when set, is the operation_id of an identical recent
	// operation the preview warned about (the amnesia guard); a confirm must
	// acknowledge it.
	RecentOperation string `json:"r,omitempty"`
	// Approval, when set, says that a person must approve the operation
	// before it may be confirmed: the reasons the action's approval policy
	// gave at preview, comma-separated codes (such as
	// "amount_above_threshold,new_payee"). Signed with the rest, so an agent
	// can neither drop nor change it.
	Approval string `json:"a,omitempty"`
}

// ExpiresAt returns Exp as a time.
func (p Payload) ExpiresAt() time.Time { return time.Unix(p.Exp, 0).UTC() }

var (
	// ErrInvalid means the string is not a well-formed fingerprint, names an
	// unknown key, or its signature does not verify.
	ErrInvalid = errors.New("fingerprint: invalid")
	// ErrExpired means now >= exp: it can no longer be consumed for the first time.
	ErrExpired = errors.New("fingerprint: expired")
	// ErrSubjectMismatch means it was issued to another subject (a security event).
	ErrSubjectMismatch = errors.New("fingerprint: subject mismatch")
	// ErrScopeMismatch means it was issued for another action.
	ErrScopeMismatch = errors.New("fingerprint: scope mismatch")
	// ErrParamMismatch means the bound params differ from the signed ones (a security event).
	ErrParamMismatch = errors.New("fingerprint: param mismatch")
)
