package api

import (
	"encoding/json"
	"time"

	"github.com/oncegate/oncegate/api/messages"
	"github.com/oncegate/oncegate/approval"

	"github.com/oncegate/oncegate/status"
)

// The answers about approvals and passkeys (docs/contract.md §7), built like the
// rest in replies.go: each value written once, into the body.

// approvalView is an operation's approval as answers show it: in
// preview_ready (the offer), approval_required, approval_declined and on
// the approval page's answers.
type approvalView struct {
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
}

// viewOf is the view of a recorded approval (url: the page's link, kept
// while undecided).
func viewOf(rec approval.Record, url string) approvalView {
	v := approvalView{Required: true, Reasons: rec.Reasons, ExpiresAt: rec.ExpiresAt.UTC().Format(time.RFC3339), State: rec.State}
	if rec.State == approval.StatePending {
		v.URL = url
	}
	if !rec.DecidedAt.IsZero() {
		v.DecidedAt = rec.DecidedAt.UTC().Format(time.RFC3339)
	}
	if v.Reasons == nil {
		v.Reasons = []approval.Reason{}
	}
	return v
}

// reasonDetails are the fragments that say each reason in words.
var reasonDetails = map[approval.Reason]string{
	approval.ReasonAlways:         "detail.reason_always",
	approval.ReasonAboveThreshold: "detail.reason_amount_above_threshold",
	approval.ReasonNoThreshold:    "detail.reason_currency_without_threshold",
	approval.ReasonNewPayee:       "detail.reason_new_payee",
}

// reasonsText says reasons in lang, joined by "; ".
func (s *Server) reasonsText(lang messages.Lang, reasons []approval.Reason) string {
	out := ""
	for i, r := range reasons {
		text := string(r)
		if key, ok := reasonDetails[r]; ok {
			if t, err := s.msgs.Fragment(lang, key, messages.Data{}); err == nil {
				text = t
			}
		}
		if i > 0 {
			out += "; "
		}
		out += text
	}
	return out
}

// approvalRequiredReply answers a confirm that needs an approval not
// recorded: nothing consumed, the link and the reasons.
func approvalRequiredReply(opID string, rec approval.Record, url string) reply {
	return opReply(status.ApprovalRequired, opID).with("approval", viewOf(rec, url))
}

// approvalDeclinedReply answers a confirm of a declined operation.
func approvalDeclinedReply(opID string, rec approval.Record) reply {
	return opReply(status.ApprovalDeclined, opID).with("approval", viewOf(rec, ""))
}

// webAuthnOptionsReply hands a page the options of a ceremony.
func webAuthnOptionsReply(opID string, options json.RawMessage) reply {
	return opReply(status.WebAuthnOptions, opID).with("options", options)
}

// approvalRecordedReply answers a verified, recorded decision.
func approvalRecordedReply(rec approval.Record) reply {
	return opReply(status.ApprovalRecorded, rec.OperationID).with("approval", viewOf(rec, ""))
}

// ceremonyRefusedReply refuses a ceremony, saying why (rec, when set, is
// the approval as recorded).
func ceremonyRefusedReply(opID, why string, rec *approval.Record) reply {
	r := opReply(status.CeremonyRefused, opID).with("reason", why)
	if rec != nil {
		r = r.with("approval", viewOf(*rec, ""))
	}
	return r
}

// passkeyEnrolledReply answers an enrolment.
func passkeyEnrolledReply(pk approval.Passkey) reply {
	return newReply(status.PasskeyEnrolled).with("passkey", pk)
}

// passkeyInvitedReply answers an invitation with its link.
func passkeyInvitedReply(subject, url string, expires time.Time) reply {
	return newReply(status.PasskeyInvited).with("subject", subject).with("url", url).
		with("expires_at", expires.UTC().Format(time.RFC3339))
}

// passkeysListedReply lists passkeys.
func passkeysListedReply(keys []approval.Passkey) reply {
	if keys == nil {
		keys = []approval.Passkey{}
	}
	return newReply(status.PasskeysListed).with("passkeys", keys).with("count", len(keys))
}

// passkeyRevokedReply answers a revocation.
func passkeyRevokedReply(pk approval.Passkey) reply {
	return newReply(status.PasskeyRevoked).with("passkey", pk)
}

// approvalsListedReply lists approvals in state (empty: every state).
func approvalsListedReply(recs []approval.Record, state approval.State) reply {
	if recs == nil {
		recs = []approval.Record{}
	}
	r := newReply(status.ApprovalsListed).with("approvals", recs).with("count", len(recs))
	r.text.State = string(state)
	return r
}
