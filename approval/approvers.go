package approval

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"slices"
	"time"
)

// rolePattern is what a role may be called: letters, digits, '.', '_' and
// '-', 1 to 64, starting with a letter or digit.
var rolePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidRole reports whether name can name a role (of an approver's
// passkey, or of approval.approvers).
func ValidRole(name string) bool { return rolePattern.MatchString(name) }

// MaxRoles bounds the roles one passkey is enrolled with.
const MaxRoles = 16

// Approvers names the people who approve an action's operations when the
// subject's own passkey is not enough (docs/contract.md §7b): Count
// distinct people holding Role sign the same statement. A person is the
// subject their passkeys were enrolled for; two passkeys of one person
// count once.
type Approvers struct {
	// Role is the role a passkey must have been enrolled with (an
	// operator's invite names it: oncegate-ops passkey invite --role).
	Role string `json:"role"`
	// Count is how many distinct people must approve (at least 1).
	Count int `json:"count"`
	// SubjectMayApprove lets the operation's own subject be one of the
	// Count (with or without Role); false: the subject's passkeys never
	// decide, even when the subject holds Role.
	SubjectMayApprove bool `json:"subject_may_approve"`
}

// Needed is how many distinct people must approve under a (nil: the
// subject alone, one).
func (a *Approvers) Needed() int {
	if a == nil || a.Count < 1 {
		return 1
	}
	return a.Count
}

// MayDecide reports whether pk's owner may decide an operation of subject
// under a (nil: only the subject's own passkeys decide). Pure: the one rule
// the page's options, the ceremony's verification and the stores follow.
func MayDecide(a *Approvers, subject string, pk Passkey) bool {
	if a == nil {
		return pk.Subject == subject
	}
	if pk.Subject == subject {
		return a.SubjectMayApprove
	}
	return slices.Contains(pk.Roles, a.Role)
}

// ApproverDecision is one person's first decision about an operation: the
// first decision of each person stands.
type ApproverDecision struct {
	// Approver is the person (the subject their passkey was enrolled for).
	Approver string `json:"approver"`
	// State is APPROVED or DECLINED.
	State State `json:"state"`
	// CredentialID is the passkey that decided (base64url).
	CredentialID string `json:"credential_id"`
	// DecidedAt is when.
	DecidedAt time.Time `json:"decided_at"`
	// EvidenceSHA256 is the hex SHA-256 of the assertion's evidence.
	EvidenceSHA256 string `json:"evidence_sha256"`
	// TraceID is the trace of the deciding request.
	TraceID string `json:"trace_id,omitempty"`
}

// Tally is where an approval stands after decisions (each person's first,
// distinct approvers) when needed approvals are asked for: a decline by any
// of them ends it DECLINED; needed approvals make it APPROVED; otherwise
// it is PENDING. given is the number of approvals. Pure: both stores
// decide with it, in the step that records a decision.
func Tally(needed int, decisions []ApproverDecision) (state State, given int) {
	for _, d := range decisions {
		switch d.State {
		case StateDeclined:
			return StateDeclined, len(ApprovedBy(decisions))
		case StateApproved:
			given++
		case StatePending:
		}
	}
	if given >= max(needed, 1) {
		return StateApproved, given
	}
	return StatePending, given
}

// ApprovedBy names the approvers among decisions, in the order they came:
// the people an answer and the page say have approved.
func ApprovedBy(decisions []ApproverDecision) []string {
	var out []string
	for _, d := range decisions {
		if d.State == StateApproved {
			out = append(out, d.Approver)
		}
	}
	return out
}

// JointEvidenceVersion names the joint evidence's format.
const JointEvidenceVersion = "oncegate-approvers/1"

// jointEvidence is the evidence of an approval decided by several people:
// the operation and each approver's evidence hash, by approver.
type jointEvidence struct {
	Version     string           `json:"v"`
	OperationID string           `json:"operation_id"`
	Approvals   []jointApprovers `json:"approvals"`
}

type jointApprovers struct {
	Approver       string `json:"approver"`
	CredentialID   string `json:"credential_id"`
	EvidenceSHA256 string `json:"evidence_sha256"`
}

// JointEvidence is what an approval decided by the decisions of several
// people carries as its evidence, and its hex SHA-256 (what the claim, the
// workflow's input and the receipt name): the operation and every
// approver's evidence hash, ordered by approver, so one set of decisions
// always hashes alike. Each approver's own assertion is kept beside it.
func JointEvidence(opID string, decisions []ApproverDecision) (json.RawMessage, string) {
	j := jointEvidence{Version: JointEvidenceVersion, OperationID: opID}
	for _, d := range decisions {
		if d.State == StateApproved {
			j.Approvals = append(j.Approvals, jointApprovers{Approver: d.Approver, CredentialID: d.CredentialID, EvidenceSHA256: d.EvidenceSHA256})
		}
	}
	slices.SortFunc(j.Approvals, func(a, b jointApprovers) int { return cmp.Compare(a.Approver, b.Approver) })
	raw, _ := json.Marshal(j) // strings only: never fails
	sum := sha256.Sum256(raw)
	return raw, hex.EncodeToString(sum[:])
}
