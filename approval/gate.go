package approval

import "time"

// State is where an operation's approval stands.
type State string

const (
	// StatePending: a person was asked (a confirm answered approval_required,
	// or the page was opened) and has not decided yet.
	StatePending State = "PENDING"
	// StateApproved: the subject's passkey approved the statement.
	StateApproved State = "APPROVED"
	// StateDeclined: the subject's passkey declined it; never confirmable.
	StateDeclined State = "DECLINED"
)

// Verdict is what a confirm does about approval: the gate's one answer.
type Verdict string

const (
	// VerdictNotRequired: the fingerprint asks for no approval; go on.
	VerdictNotRequired Verdict = "not_required"
	// VerdictApproved: an approval of exactly this operation stands; go on,
	// carrying its evidence's hash.
	VerdictApproved Verdict = "approved"
	// VerdictRequired: no usable approval; answer approval_required,
	// consume nothing.
	VerdictRequired Verdict = "required"
	// VerdictDeclined: the person declined; answer approval_declined.
	VerdictDeclined Verdict = "declined"
)

// Why says why the gate decided VerdictRequired (empty otherwise).
type Why string

const (
	// WhyNone: no approval is stored.
	WhyNone Why = "none"
	// WhyPending: a person was asked and has not decided.
	WhyPending Why = "pending"
	// WhyExpired: the approval's expiry has passed.
	WhyExpired Why = "expired"
	// WhyOtherParams: the stored approval binds another param_hash.
	WhyOtherParams Why = "other_params"
	// WhyOtherSubject: the stored approval is another subject's.
	WhyOtherSubject Why = "other_subject"
	// WhyOtherScope: the stored approval is of another action.
	WhyOtherScope Why = "other_scope"
)

// Expect is what a confirm knows from its verified fingerprint.
type Expect struct {
	// Required reports that the fingerprint asks for approval (its `a`).
	Required bool
	// Subject, Scope and ParamHash are the fingerprint's.
	Subject, Scope, ParamHash string
}

// GateDecision is the gate's answer: the verdict and, for VerdictRequired,
// why; for VerdictApproved, the evidence's hash the operation runs under.
type GateDecision struct {
	// Verdict is what the confirm does.
	Verdict Verdict
	// Why explains VerdictRequired.
	Why Why
	// EvidenceSHA256 is the approval evidence's hash (VerdictApproved).
	EvidenceSHA256 string
}

// Gate decides a confirm over the stored approval rec (nil: none stored) at
// now. Pure and total: the handler asks, this table decides, the handler acts.
// A declined approval of this very operation is final; a stored record that
// does not match the fingerprint (another subject, scope or param_hash) never
// approves it; an approval past its expiry approves nothing.
func Gate(want Expect, rec *Record, now time.Time) GateDecision {
	if !want.Required {
		return GateDecision{Verdict: VerdictNotRequired}
	}
	if rec == nil {
		return GateDecision{Verdict: VerdictRequired, Why: WhyNone}
	}
	switch {
	case rec.Subject != want.Subject:
		return GateDecision{Verdict: VerdictRequired, Why: WhyOtherSubject}
	case rec.Scope != want.Scope:
		return GateDecision{Verdict: VerdictRequired, Why: WhyOtherScope}
	case rec.ParamHash != want.ParamHash:
		return GateDecision{Verdict: VerdictRequired, Why: WhyOtherParams}
	}
	switch rec.State {
	case StateDeclined:
		return GateDecision{Verdict: VerdictDeclined}
	case StateApproved:
		if !now.Before(rec.ExpiresAt) {
			return GateDecision{Verdict: VerdictRequired, Why: WhyExpired}
		}
		return GateDecision{Verdict: VerdictApproved, EvidenceSHA256: rec.EvidenceSHA256}
	case StatePending:
		return GateDecision{Verdict: VerdictRequired, Why: WhyPending}
	}
	// A state this version does not know approves nothing.
	return GateDecision{Verdict: VerdictRequired, Why: WhyPending}
}
