package gateway

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"time"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/internal/catalog"
)

// The approval's hooks into preview and confirm (docs/contract.md §7): one call
// each. Preview writes nothing: it applies the action's policy (reading
// whether the payee was paid before), puts the reasons into the signed
// fingerprint (its `a`) and caps its expiry with the policy's ttl. The
// approval link is self-contained: /approve/{operation_id}?f=<fingerprint>
// &p=<base64url of the canonical bound params>; the page verifies the
// fingerprint's signature and recomputes its param_hash from p, so it
// shows what will happen from the bound values, never from free text, and
// nothing needs storing before a person acts. Confirm asks the gate over
// the stored approval before it claims anything.

// approvalOffer is what preview adds for an operation that needs approval.
type approvalOffer struct {
	reasons []approval.Reason
	// exp caps the fingerprint's expiry (now + the policy's ttl).
	exp time.Time
}

// approvalAtPreview applies action's approval policy to the bound params of
// a preview by id. A nil offer means no approval is needed. It only reads.
func (s *Service) approvalAtPreview(ctx context.Context, id Caller, action *catalog.Action, bp boundParams, now time.Time) (*approvalOffer, error) {
	policy := action.Approval
	if !policy.Asks() {
		return nil, nil
	}
	f := approval.Facts{
		Amount:   fmt.Sprint(bp.normalized[catalog.ApprovalAmountField]),
		Currency: fmt.Sprint(bp.normalized[catalog.ApprovalCurrencyField]),
		Payee:    fmt.Sprint(bp.normalized[catalog.ApprovalPayeeField]),
	}
	if policy.NewPayee {
		known, err := s.approvals.PayeeKnown(ctx, id.Subject, action.Scope, f.Payee)
		if err != nil {
			return nil, fmt.Errorf("new-payee rule: %w", err)
		}
		f.PayeeKnown = known
	}
	reasons := approval.Needs(policy, f)
	if len(reasons) == 0 {
		return nil, nil
	}
	return &approvalOffer{reasons: reasons, exp: now.Add(policy.TTL)}, nil
}

// approvalLink is the approval page's link of a signed fingerprint fp and
// its canonical bound params.
func (s *Service) approvalLink(fp, opID string, canonical []byte) string {
	q := url.Values{}
	q.Set("f", fp)
	q.Set("p", base64.RawURLEncoding.EncodeToString(canonical))
	return s.cfg.PublicURL + "/approve/" + opID + "?" + q.Encode()
}

// approvalRequired answers a confirm whose approval the gate found
// missing (a): the request is recorded PENDING, so that operators see what
// waits for a person (a decided record is left as it is), and the answer
// links the approval page. It touches no claim, Redis, engine or
// downstream. mandateRefusal, when set, is why the standing mandate tried
// did not cover the operation: the answer carries it.
func (s *Service) approvalRequired(ctx context.Context, call *confirmCall, a approvalAnswer, mandateRefusal approval.Reason) Answer {
	p := call.payload
	traceID := call.trace(ctx)
	asked, err := s.approvals.RequestApproval(ctx, s.approvalRequest(p, call.bound.canonical, call.action.Approval.Approvers, traceID))
	if err != nil {
		return s.storeErrorAnswer(call.action.Scope, p.Nonce, fmt.Errorf("request approval of %s: %w", p.Nonce, err))
	}
	if a.Gate.Why == approval.WhyNone {
		s.approvalEvent(ctx, eventApprovalRequested, p.Subject, p.Nonce, "", traceID, approval.JoinReasons(asked.Reasons))
	}
	if a.Record == nil || a.Record.State != approval.StatePending {
		// What is recorded is not a usable approval of this operation:
		// answer with the fingerprint's own request.
		asked.Subject, asked.Scope, asked.ParamHash, asked.State = p.Subject, p.Scope, p.ParamHash, approval.StatePending
	}
	r := approvalRequiredAnswer(p.Nonce, asked, s.approvalLink(call.req.Fingerprint, p.Nonce, call.bound.canonical))
	if mandateRefusal != "" {
		r = r.With("mandate", mandateRefusalView{MandateID: call.mandateTried(), Reason: mandateRefusal})
	}
	return r
}

// approvalRequest is the request to approve the operation of fingerprint
// payload p with its canonical bound params, by approvers (nil: the
// subject alone).
func (s *Service) approvalRequest(p fingerprint.Payload, canonical []byte, approvers *approval.Approvers, traceID string) approval.Request {
	return approval.Request{
		OperationID: p.Nonce, Subject: p.Subject, Scope: p.Scope, ParamHash: p.ParamHash, BoundParams: canonical,
		Reasons: approval.SplitReasons(p.Approval), ExpiresAt: p.ExpiresAt(), Approvers: approvers, TraceID: traceID, At: s.now(),
	}
}

// Approval and passkey events: each is logged with its trace id and counted
// in oncegate_approval_events_total{event}.
const (
	eventApprovalRequested = "approval_requested"
	eventApproved          = "approved"
	eventDeclined          = "declined"
	eventCeremonyRefused   = "ceremony_refused"
	eventPasskeyInvited    = "passkey_invited"
	eventPasskeyEnrolled   = "passkey_enrolled"
	eventPasskeyRevoked    = "passkey_revoked"
)

// approvalEvents lists every event, exported from 0.
var approvalEvents = []string{eventApprovalRequested, eventApproved, eventDeclined, eventCeremonyRefused,
	eventPasskeyInvited, eventPasskeyEnrolled, eventPasskeyRevoked}

// approvalEvent logs and counts one approval or passkey event.
func (s *Service) approvalEvent(ctx context.Context, event, subject, opID, credentialID, traceID, detail string) {
	s.log.InfoContext(ctx, "approval event", "event", event, "subject", subject, "operation_id", opID,
		"credential_id", credentialID, "trace_id", traceID, "detail", detail)
	s.metrics.approvals.WithLabelValues(event).Inc()
}
