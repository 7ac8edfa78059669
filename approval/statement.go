package approval

import (
	"crypto/sha256"
	"strconv"
	"time"

	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/internal/jcs"
)

// Decision is what a person decides about an operation.
type Decision string

const (
	// DecisionApprove lets the operation's fingerprint be confirmed.
	DecisionApprove Decision = "approve"
	// DecisionDecline makes the fingerprint never confirmable.
	DecisionDecline Decision = "decline"
)

// Valid reports whether d is approve or decline.
func (d Decision) Valid() bool { return d == DecisionApprove || d == DecisionDecline }

// StatementVersion names the statement's format; it is part of what is signed.
const StatementVersion = "oncegate-approval/1"

// Statement is what a person's passkey signs: one decision about exactly
// one operation — its id, subject, scope, param_hash (the bound params) and
// the fingerprint's expiry. The WebAuthn challenge is the SHA-256 of its
// canonical JSON, so an assertion approves nothing else: another operation,
// other params, another subject, or the other decision.
type Statement struct {
	// Decision is approve or decline.
	Decision Decision
	// OperationID is the fingerprint's nonce.
	OperationID string
	// Subject is who the fingerprint was issued to.
	Subject string
	// Scope is the action.
	Scope string
	// ParamHash is the SHA-256 of the canonical bound params.
	ParamHash string
	// Exp is the fingerprint's exp (unix seconds).
	Exp int64
}

// StatementOf is the statement deciding d about the operation of the
// fingerprint payload p.
func StatementOf(p fingerprint.Payload, d Decision) Statement {
	return Statement{Decision: d, OperationID: p.Nonce, Subject: p.Subject, Scope: p.Scope, ParamHash: p.ParamHash, Exp: p.Exp}
}

// Canonical returns the statement as RFC 8785 JSON (keys sorted, no white
// space): {"decision":…,"exp":…,"operation_id":…,"param_hash":…,"scope":…,
// "subject":…,"v":"oncegate-approval/1"}. Any language can rebuild it.
func (s Statement) Canonical() []byte {
	b := make([]byte, 0, 256)
	b = append(b, `{"decision":`...)
	b = jcs.AppendString(b, string(s.Decision))
	b = append(b, `,"exp":`...)
	b = strconv.AppendInt(b, s.Exp, 10)
	b = append(b, `,"operation_id":`...)
	b = jcs.AppendString(b, s.OperationID)
	b = append(b, `,"param_hash":`...)
	b = jcs.AppendString(b, s.ParamHash)
	b = append(b, `,"scope":`...)
	b = jcs.AppendString(b, s.Scope)
	b = append(b, `,"subject":`...)
	b = jcs.AppendString(b, s.Subject)
	b = append(b, `,"v":`...)
	b = jcs.AppendString(b, StatementVersion)
	return append(b, '}')
}

// Challenge is the WebAuthn challenge of the statement: the SHA-256 of its
// canonical JSON.
func (s Statement) Challenge() []byte {
	sum := sha256.Sum256(s.Canonical())
	return sum[:]
}

// ExpiresAt is Exp as a time.
func (s Statement) ExpiresAt() time.Time { return time.Unix(s.Exp, 0).UTC() }
