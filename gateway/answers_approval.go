package gateway

import (
	"encoding/json"
	"time"

	"github.com/oncegate/oncegate/approval"

	"github.com/oncegate/oncegate/status"
)

// The answers about approvals and passkeys (docs/contract.md §7), built like the
// rest in answers.go: each value written once, into the body.

// ApprovalView is an operation's approval as answers show it: in
// preview_ready (the offer), approval_required, approval_declined and on
// the approval page's answers.
type ApprovalView struct {
	// Required is always true: a view is only shown when approval is needed.
	Required bool `json:"required"`
	// Reasons are the policy's reason codes.
	Reasons []approval.Reason `json:"reasons"`
	// URL is the approval page's link for the user (absent once decided).
	URL string `json:"url,omitempty"`
	// ExpiresAt is when the approval, and the confirm, must happen by.
	ExpiresAt string `json:"expires_at"`
	// State is PENDING, APPROVED or DECLINED once something is recorded.
	State approval.State `json:"state,omitempty"`
	// DecidedAt is when the person decided.
	DecidedAt string `json:"decided_at,omitempty"`
	// Needed is how many distinct people must approve (1: the subject).
	Needed int `json:"needed"`
	// Given is how many have approved so far.
	Given int `json:"given"`
	// ApprovedBy names who has approved so far.
	ApprovedBy []string `json:"approved_by,omitempty"`
	// Role is the role the approvers hold (absent: the subject approves).
	Role string `json:"role,omitempty"`
	// SubjectMayApprove says whether the subject's own passkey counts
	// (absent: the subject approves).
	SubjectMayApprove *bool `json:"subject_may_approve,omitempty"`
}

// withApprovers fills who approves under a (nil: the subject alone) and
// how far decisions went.
func (v ApprovalView) withApprovers(a *approval.Approvers, given int, decisions []approval.ApproverDecision) ApprovalView {
	v.Needed, v.Given = a.Needed(), given
	if a != nil {
		v.Role, v.SubjectMayApprove = a.Role, &a.SubjectMayApprove
	}
	v.ApprovedBy = approval.ApprovedBy(decisions)
	return v
}

// viewOf is the view of a recorded approval (url: the page's link, kept
// while undecided).
func viewOf(rec approval.Record, url string) ApprovalView {
	v := ApprovalView{Required: true, Reasons: rec.Reasons, ExpiresAt: rec.ExpiresAt.UTC().Format(time.RFC3339), State: rec.State}
	if rec.State == approval.StatePending {
		v.URL = url
	}
	if !rec.DecidedAt.IsZero() {
		v.DecidedAt = rec.DecidedAt.UTC().Format(time.RFC3339)
	}
	if v.Reasons == nil {
		v.Reasons = []approval.Reason{}
	}
	v = v.withApprovers(rec.Approvers, rec.Given, rec.Decisions)
	if rec.Needed > 0 {
		v.Needed = rec.Needed
	}
	return v
}

// approvalRequiredAnswer answers a confirm that needs an approval not
// recorded: nothing consumed, the link and the reasons.
func approvalRequiredAnswer(opID string, rec approval.Record, url string) Answer {
	return opAnswer(status.ApprovalRequired, opID).With("approval", viewOf(rec, url))
}

// approvalDeclinedAnswer answers a confirm of a declined operation.
func approvalDeclinedAnswer(opID string, rec approval.Record) Answer {
	return opAnswer(status.ApprovalDeclined, opID).With("approval", viewOf(rec, ""))
}

// webAuthnOptionsAnswer hands a page the options of a ceremony.
func webAuthnOptionsAnswer(opID string, options json.RawMessage) Answer {
	return opAnswer(status.WebAuthnOptions, opID).With("options", options)
}

// approvalRecordedAnswer answers a verified, recorded decision.
func approvalRecordedAnswer(rec approval.Record) Answer {
	return opAnswer(status.ApprovalRecorded, rec.OperationID).With("approval", viewOf(rec, ""))
}

// ceremonyRefusedAnswer refuses a ceremony, saying why (rec, when set, is
// the approval as recorded).
func ceremonyRefusedAnswer(opID, why string, rec *approval.Record) Answer {
	r := opAnswer(status.CeremonyRefused, opID).With("reason", why)
	if rec != nil {
		r = r.With("approval", viewOf(*rec, ""))
	}
	return r
}

// passkeyEnrolledAnswer answers an enrolment.
func passkeyEnrolledAnswer(pk approval.Passkey) Answer {
	return NewAnswer(status.PasskeyEnrolled).With("passkey", pk)
}

// passkeyInvitedAnswer answers an invitation with its link.
func passkeyInvitedAnswer(subject string, roles []string, url string, expires time.Time) Answer {
	if roles == nil {
		roles = []string{}
	}
	return NewAnswer(status.PasskeyInvited).With("subject", subject).With("roles", roles).With("url", url).
		With("expires_at", expires.UTC().Format(time.RFC3339))
}

// passkeysListedAnswer lists passkeys.
func passkeysListedAnswer(keys []approval.Passkey) Answer {
	if keys == nil {
		keys = []approval.Passkey{}
	}
	return NewAnswer(status.PasskeysListed).With("passkeys", keys).With("count", len(keys))
}

// passkeyRevokedAnswer answers a revocation.
func passkeyRevokedAnswer(pk approval.Passkey) Answer {
	return NewAnswer(status.PasskeyRevoked).With("passkey", pk)
}

// approvalsListedAnswer lists approvals in state (empty: every state).
func approvalsListedAnswer(recs []approval.Record, state approval.State) Answer {
	if recs == nil {
		recs = []approval.Record{}
	}
	r := NewAnswer(status.ApprovalsListed).With("approvals", recs).With("count", len(recs))
	r.Words.State = string(state)
	return r
}
