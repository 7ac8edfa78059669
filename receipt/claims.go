// Package receipt is the signed receipt of an operation's terminal outcome
// (docs/contract.md §7): a compact JWS, EdDSA over Ed25519 with the signing
// key's id in the header's kid, whose payload is Claims. The gateway signs with a
// Keyring (the first key signs, every listed key verifies and is published
// as a JWK set); anyone verifies a receipt offline with Verify and that key
// set. Ed25519 is deterministic: the same key and the same claims give the
// same bytes, so a replay of an outcome carries the very same receipt.
//
// No I/O, and nothing of the gateway is imported: the public client uses
// this package to verify.
package receipt

import (
	"errors"
	"fmt"
	"regexp"
	"time"
)

// Outcome is the terminal outcome a receipt states.
type Outcome string

const (
	// OutcomeCompleted is an operation that executed (completed, and its
	// replays already_completed).
	OutcomeCompleted Outcome = "completed"
	// OutcomeFailed is an operation that ended without executing as far as
	// it can be known (failed, and its replays already_failed);
	// Claims.FailureKind says how that is known.
	OutcomeFailed Outcome = "failed"
)

// Claims is what a receipt states about one operation: who asked for what,
// with which bound params, what came of it and when, and which approval it
// ran under, and which client acted. Every member but acting_client is
// always present; "" means none. acting_client is omitted when no client
// is named, so that a receipt without one signs to the bytes it did before
// the member existed, and old receipts still verify.
type Claims struct {
	// OperationID is the operation id: the fingerprint's nonce.
	OperationID string `json:"operation_id"`
	// Subject is whom the operation belongs to.
	Subject string `json:"subject"`
	// Scope is the action, such as payments.transfer.
	Scope string `json:"scope"`
	// ParamHash is the SHA-256 of the canonical bound params (64 lowercase
	// hex), as in the fingerprint: anyone holding the params recomputes it.
	ParamHash string `json:"param_hash"`
	// Outcome is completed or failed.
	Outcome Outcome `json:"outcome"`
	// ResultRef is the business reference of a completed operation ("" when
	// the downstream gave none, and for a failure).
	ResultRef string `json:"result_ref"`
	// FailureKind says how a failure is known (downstream_refused,
	// not_executed, not_sent, operator_decision); "" for a completion.
	FailureKind string `json:"failure_kind"`
	// ApprovalSHA256 is the SHA-256 (64 lowercase hex) of the approval
	// evidence the operation ran under; "" when it needed no approval.
	ApprovalSHA256 string `json:"approval_sha256"`
	// ActingClient is the OAuth client whose confirm claimed the operation
	// for Subject (who acted for whom); omitted when the token named none.
	ActingClient string `json:"acting_client,omitempty"`
	// FinalizedAt is when the outcome was recorded, to the millisecond, UTC.
	FinalizedAt time.Time `json:"finalized_at"`
}

// Errors Verify and Sign return (wrapped, with the detail).
var (
	// ErrMalformed is a token that is not a compact EdDSA JWS: not three
	// strict base64url segments, an undecodable header or payload, or an
	// algorithm other than EdDSA (none and HS256 included).
	ErrMalformed = errors.New("receipt: malformed")
	// ErrUnknownKey is a receipt whose kid is missing or names no public
	// Ed25519 key of the key set: an unknown key, or a retired one (removed
	// from the gateway's list).
	ErrUnknownKey = errors.New("receipt: key not in the key set (unknown or retired)")
	// ErrBadSignature is a receipt whose signature does not verify with its
	// key: it was changed after signing.
	ErrBadSignature = errors.New("receipt: bad signature")
	// ErrInvalidClaims is a payload that breaks Claims.Validate.
	ErrInvalidClaims = errors.New("receipt: invalid claims")
)

var (
	operationIDRE = regexp.MustCompile(`^[0-9a-f]{32}$`)
	sha256HexRE   = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// Validate reports the first broken rule: an operation id of 32 lowercase
// hex, a subject and a scope, a param_hash and (when set) an
// approval_sha256 of 64 lowercase hex, a known outcome, no failure kind on
// a completion, a finalize time. A receipt states nothing it does not know.
func (c Claims) Validate() error {
	var why string
	switch {
	case !operationIDRE.MatchString(c.OperationID):
		why = fmt.Sprintf("operation_id %q is not 32 lowercase hex", c.OperationID)
	case c.Subject == "":
		why = "subject is empty"
	case c.Scope == "":
		why = "scope is empty"
	case !sha256HexRE.MatchString(c.ParamHash):
		why = fmt.Sprintf("param_hash %q is not 64 lowercase hex", c.ParamHash)
	case c.Outcome != OutcomeCompleted && c.Outcome != OutcomeFailed:
		why = fmt.Sprintf("outcome %q is neither %q nor %q", c.Outcome, OutcomeCompleted, OutcomeFailed)
	case c.Outcome == OutcomeCompleted && c.FailureKind != "":
		why = fmt.Sprintf("a completion has failure_kind %q", c.FailureKind)
	case c.ApprovalSHA256 != "" && !sha256HexRE.MatchString(c.ApprovalSHA256):
		why = fmt.Sprintf("approval_sha256 %q is not 64 lowercase hex", c.ApprovalSHA256)
	case c.FinalizedAt.IsZero():
		why = "finalized_at is missing"
	default:
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidClaims, why)
}

// normalized is c as it is signed: FinalizedAt in UTC, to the millisecond
// (the precision every store keeps), so that the same instant read back
// from any store signs to the same bytes.
func (c Claims) normalized() Claims {
	c.FinalizedAt = c.FinalizedAt.UTC().Truncate(time.Millisecond)
	return c
}
