// Package approval is what a person's approval of one operation is
// (docs/contract.md §7): why an operation needs one (Reasons, from the action's
// policy), the statement a passkey signs (Statement: operation id, subject,
// scope, param_hash, fingerprint expiry and the decision), what a confirm
// does with the stored approval (Gate), the domain types of approvals and
// passkeys, their sentinel errors and the Store they live in (the
// PostgreSQL truth, never Redis). The decisions are pure functions; the
// WebAuthn ceremony is package approval/ceremony.
package approval

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/apd/v3"
)

// Reason is why an operation needs a person's approval: a code an agent
// reads in preview_ready and approval_required, and the fingerprint's `a`.
type Reason string

const (
	// ReasonAlways: the action's policy asks for approval of every operation.
	ReasonAlways Reason = "always"
	// ReasonAboveThreshold: the amount is above its currency's threshold.
	ReasonAboveThreshold Reason = "amount_above_threshold"
	// ReasonNoThreshold: the policy sets thresholds, but none for this
	// currency; an amount in it always needs approval.
	ReasonNoThreshold Reason = "currency_without_threshold"
	// ReasonNewPayee: the subject has never paid this payee with this action.
	ReasonNewPayee Reason = "new_payee"
)

// Reasons lists every Reason, in the order Needs reports them.
var Reasons = []Reason{ReasonAlways, ReasonAboveThreshold, ReasonNoThreshold, ReasonNewPayee}

// Requirement says which amounts of an action a person must approve
// (docs/contract.md §7); the new-payee rule adds to it.
type Requirement string

const (
	// RequireNever asks for no approval by amount (the default).
	RequireNever Requirement = "never"
	// RequireAlways asks for approval of every operation.
	RequireAlways Requirement = "always"
	// RequireAbove asks for approval of an amount above its currency's
	// threshold (Policy.Above), and of every amount in a currency that has
	// none.
	RequireAbove Requirement = "above"
)

// Policy is an action's approval policy, as the catalog resolved it: when
// a person must approve an operation with a passkey before it may be
// confirmed. The zero value asks for nothing.
type Policy struct {
	// Required is never, always or above.
	Required Requirement `json:"required"`
	// Above maps an ISO 4217 code to the amount above which an operation in
	// that currency needs approval (exclusive: the threshold itself does
	// not), reduced (no trailing zeros). Shared: not to be modified.
	Above map[string]*apd.Decimal `json:"-"`
	// NewPayee asks for approval the first time a subject pays a payee
	// (no completed operation of the same action to that payee_id).
	NewPayee bool `json:"new_payee,omitempty"`
	// TTL is how long after the preview the person may approve and the agent
	// confirm: it caps the fingerprint's expiry of an operation that needs
	// approval. At most the action's fingerprint_ttl.
	TTL time.Duration `json:"ttl,omitempty"`
	// Approvers names who approves instead of the subject alone (nil: the
	// subject's own passkey, one decision).
	Approvers *Approvers `json:"approvers,omitempty"`
	// Mandates lets a standing mandate of the subject (package mandate)
	// cover an operation instead of this approval (the catalog's
	// approval.mandates: allowed; default never).
	Mandates bool `json:"mandates,omitempty"`
}

// Asks reports whether the policy can ask for approval at all (the zero
// value asks for nothing).
func (p Policy) Asks() bool {
	return p.Required == RequireAlways || p.Required == RequireAbove || p.NewPayee
}

// Facts are what the policy is applied to: the operation's normalized bound
// values and what the truth knows about its payee.
type Facts struct {
	// Amount is the canonical decimal text of the amount field ("" when the
	// action binds none).
	Amount string
	// Currency is the normalized currency code.
	Currency string
	// Payee is the normalized payee id.
	Payee string
	// PayeeKnown reports that the subject completed an operation of this
	// action to this payee before (read only when the policy's new_payee asks).
	PayeeKnown bool
}

// Needs applies policy to f and returns why a person must approve the
// operation (nil: no approval needed). Pure: the caller reads the facts.
func Needs(policy Policy, f Facts) []Reason {
	var out []Reason
	switch policy.Required {
	case RequireAlways:
		out = append(out, ReasonAlways)
	case RequireAbove:
		th, ok := policy.Above[f.Currency]
		if !ok {
			out = append(out, ReasonNoThreshold)
			break
		}
		amount, _, err := apd.NewFromString(f.Amount)
		// An amount that does not parse cannot be shown to be at or below
		// the threshold: a person approves it.
		if err != nil || th.Cmp(amount) < 0 {
			out = append(out, ReasonAboveThreshold)
		}
	case RequireNever:
	}
	if policy.NewPayee && !f.PayeeKnown {
		out = append(out, ReasonNewPayee)
	}
	return out
}

// JoinReasons writes reasons as the fingerprint's `a`: comma-separated codes.
func JoinReasons(reasons []Reason) string {
	codes := make([]string, len(reasons))
	for i, r := range reasons {
		codes[i] = string(r)
	}
	return strings.Join(codes, ",")
}

// SplitReasons reads the fingerprint's `a` (empty: nil).
func SplitReasons(a string) []Reason {
	if a == "" {
		return nil
	}
	var out []Reason
	for code := range strings.SplitSeq(a, ",") {
		out = append(out, Reason(code))
	}
	return out
}

// Known reports whether r is one of Reasons.
func (r Reason) Known() bool { return slices.Contains(Reasons, r) }

var (
	// ErrNotFound: no approval, passkey or invite of that id.
	ErrNotFound = errors.New("approval: not found")
	// ErrAlreadyDecided: the operation's approval was decided already; the
	// first decision stands.
	ErrAlreadyDecided = errors.New("approval: already decided")
	// ErrInviteInvalid: the enrolment invite is unknown, expired or used.
	ErrInviteInvalid = errors.New("approval: enrolment invite unknown, expired or used")
	// ErrSignCount: the passkey's signature counter did not advance: a
	// replayed assertion or a cloned authenticator.
	ErrSignCount = errors.New("approval: passkey signature counter did not advance")
	// ErrRevoked: the passkey was revoked.
	ErrRevoked = errors.New("approval: passkey revoked")
)
