package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/apd/v3"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/iso4217"
	"github.com/oncegate/oncegate/internal/telemetry"
)

// The approval page and its ceremony (docs/contract.md §7): the page shows
// the operation from its signed link (ApprovalPage); the page asks for the
// WebAuthn options whose challenge is the statement's hash
// (ApproveOptions); the passkey's assertion is verified and the decision
// recorded (ApproveDecision). None of them takes a bearer token: only a
// person's passkey in their browser decides (RefuseBearer).

// RefuseBearer answers a ceremony request that carried a bearer token: the
// approval and enrolment ceremonies are a person's passkey in their
// browser, and an agent's token never approves, declines or enrols.
func (s *Service) RefuseBearer(ctx context.Context) Answer {
	s.approvalEvent(ctx, eventCeremonyRefused, "", "", "", telemetry.TraceID(ctx), "a bearer token was sent")
	return ceremonyRefusedAnswer("", "a bearer token never approves, declines or enrols: only a person's passkey in their browser does", nil)
}

// verifiedLink is a verified approval link: the fingerprint's payload,
// its action and its canonical bound params.
type verifiedLink struct {
	payload   fingerprint.Payload
	action    *catalog.Action
	canonical []byte
	fp        string
	p         string
}

// verifyLink checks the link's signed request for operation opID: the
// fingerprint's signature (the gateway's keys), its nonce, that it asks for
// approval, that p's SHA-256 is its param_hash, and that its action exists.
func (s *Service) verifyLink(opID, fp, p string) (verifiedLink, error) {
	payload, err := s.keys.Parse(fp)
	switch {
	case err != nil:
		return verifiedLink{}, errors.New("the link is not one this gateway signed")
	case payload.Nonce != opID:
		return verifiedLink{}, errors.New("the link is for another operation")
	case payload.Approval == "":
		return verifiedLink{}, errors.New("this operation needs no approval")
	}
	canonical, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return verifiedLink{}, errors.New("the link's params are not base64url")
	}
	sum := sha256.Sum256(canonical)
	if hex.EncodeToString(sum[:]) != payload.ParamHash {
		return verifiedLink{}, errors.New("the link's params are not the ones the fingerprint binds")
	}
	action, ok := s.cat.Lookup(payload.Scope)
	if !ok {
		return verifiedLink{}, fmt.Errorf("the action %s no longer exists", payload.Scope)
	}
	return verifiedLink{payload: payload, action: action, canonical: canonical, fp: fp, p: p}, nil
}

// ApprovalPage is what the approval page shows: the operation from its
// link's bound canonical values (never free text), and where its approval
// stands.
type ApprovalPage struct {
	// Title names the action for a person.
	Title string
	// Scope is the action.
	Scope string
	// OperationID is the operation.
	OperationID string
	// Subject is whose operation it is (only their passkey decides).
	Subject string
	// Amount is the amount with its currency's decimal places, such as
	// 250.00 (empty when the action binds none).
	Amount string
	// Currency is the currency code.
	Currency string
	// Payee is the payee id.
	Payee string
	// Fields are every bound param, sorted by name.
	Fields []PageField
	// Reasons are why a person must approve.
	Reasons []approval.Reason
	// ExpiresAt is the fingerprint's expiry.
	ExpiresAt time.Time
	// State is pending, approved, declined or expired.
	State string
	// DecidedAt is when the person decided (approved, declined).
	DecidedAt time.Time
	// Open reports that a decision can still be made.
	Open bool
	// Approvers are who decide (nil: the subject alone).
	Approvers *approval.Approvers
	// Needed is how many distinct people must approve; Given how many have.
	Needed, Given int
	// ApprovedBy names who has approved so far.
	ApprovedBy []string
	// Fingerprint and Params are the link's signed request, posted back
	// with the decision.
	Fingerprint, Params string
}

// PageField is one bound param as a page shows it.
type PageField struct {
	// Name is the field's name.
	Name string
	// Value is its canonical value as text (decimals with the currency's scale).
	Value string
}

// PageError is why a page cannot be shown: an HTTP code and the reason in
// words.
type PageError struct {
	// Code is the page's HTTP status.
	Code int
	// Why says why, for a person.
	Why string
}

// Error implements error.
func (e *PageError) Error() string { return e.Why }

// ApprovalPage reads the page of the approval link: a *PageError when the
// link is not usable or the approvals cannot be read.
func (s *Service) ApprovalPage(ctx context.Context, l ApprovalLink) (ApprovalPage, error) {
	link, err := s.verifyLink(l.OperationID, l.Fingerprint, l.Params)
	if err != nil {
		return ApprovalPage{}, &PageError{Code: http.StatusBadRequest, Why: err.Error()}
	}
	page := approvePage(link)
	page.Approvers = link.action.Approval.Approvers
	rec, err := s.approvals.Approval(ctx, link.payload.Nonce)
	if err == nil {
		page.Approvers, page.Given, page.ApprovedBy = rec.Approvers, rec.Given, approval.ApprovedBy(rec.Decisions)
	}
	page.Needed = page.Approvers.Needed()
	switch {
	case err == nil && rec.State != approval.StatePending:
		page.State, page.DecidedAt = strings.ToLower(string(rec.State)), rec.DecidedAt
	case err != nil && !errors.Is(err, approval.ErrNotFound):
		return ApprovalPage{}, &PageError{Code: http.StatusServiceUnavailable,
			Why: "the approvals cannot be read right now; reload the page in a moment"}
	case !s.now().Before(link.payload.ExpiresAt()):
		page.State = "expired"
	default:
		page.State, page.Open = "pending", true
	}
	return page, nil
}

// approvePage fills the page from the link: the amount with its currency's
// decimal places, the payee, and every bound field.
func approvePage(link verifiedLink) ApprovalPage {
	p := link.payload
	page := ApprovalPage{
		Title: link.action.Title, Scope: p.Scope, OperationID: p.Nonce, Subject: p.Subject,
		Reasons: approval.SplitReasons(p.Approval), ExpiresAt: p.ExpiresAt(), Fingerprint: link.fp, Params: link.p,
	}
	var bound map[string]any
	dec := json.NewDecoder(bytes.NewReader(link.canonical))
	dec.UseNumber()
	if dec.Decode(&bound) != nil {
		return page
	}
	page.Currency, _ = bound[catalog.ApprovalCurrencyField].(string)
	page.Payee, _ = bound[catalog.ApprovalPayeeField].(string)
	for _, name := range slices.Sorted(maps.Keys(bound)) {
		v := fmt.Sprint(bound[name])
		f := link.action.Bind[name]
		if n, ok := bound[name].(json.Number); ok && f.ScaleFrom() != "" {
			cur, _ := bound[f.ScaleFrom()].(string)
			v = withScale(string(n), cur)
		}
		if name == catalog.ApprovalAmountField {
			page.Amount = v
		}
		page.Fields = append(page.Fields, PageField{Name: name, Value: v})
	}
	return page
}

// withScale writes the canonical decimal n with exactly the decimal places
// of currency (250 USD → 250.00), as a person reads money.
func withScale(n, currency string) string {
	cur, err := iso4217.Lookup(currency)
	d, _, derr := apd.NewFromString(n)
	if err != nil || derr != nil || -int(d.Exponent) > cur.Scale {
		return n
	}
	var out apd.Decimal
	if _, err := apd.BaseContext.WithPrecision(40).Quantize(&out, d, -int32(cur.Scale)); err != nil {
		return n
	}
	return out.Text('f')
}

// decisionCall is a verified decision request: its link, statement, who
// approves it, and the passkeys that may decide it.
type decisionCall struct {
	link      verifiedLink
	st        approval.Statement
	approvers *approval.Approvers
	keys      []approval.Passkey
	// rec is the approval as recorded (nil: nothing recorded yet).
	rec *approval.Record
}

// prepareDecision verifies a decision request up to the passkeys: the link,
// the decision, the expiry, that nothing was decided yet, and the passkeys
// that may decide it (approval.MayDecide: the subject's, or the named
// approvers'). It returns the answer to send when refused.
func (s *Service) prepareDecision(ctx context.Context, req DecisionRequest) (decisionCall, Answer, bool) {
	opID := req.Link.OperationID
	link, err := s.verifyLink(opID, req.Link.Fingerprint, req.Link.Params)
	if err != nil {
		return decisionCall{}, ceremonyRefusedAnswer(opID, err.Error(), nil), false
	}
	if !req.Decision.Valid() {
		return decisionCall{}, ceremonyRefusedAnswer(opID, `decision must be "approve" or "decline"`, nil), false
	}
	if !s.now().Before(link.payload.ExpiresAt()) {
		return decisionCall{}, ceremonyRefusedAnswer(opID, "the approval expired at "+link.payload.ExpiresAt().Format(time.RFC3339), nil), false
	}
	call := decisionCall{link: link, st: approval.StatementOf(link.payload, req.Decision), approvers: link.action.Approval.Approvers}
	rec, err := s.approvals.Approval(ctx, link.payload.Nonce)
	switch {
	case err == nil && rec.State != approval.StatePending:
		return decisionCall{}, ceremonyRefusedAnswer(opID, "this operation was already "+strings.ToLower(string(rec.State)), &rec), false
	case err == nil:
		// Who approves is what the policy said when the request was first
		// recorded: a catalog changed since changes nothing asked before.
		call.rec, call.approvers = &rec, rec.Approvers
	case !errors.Is(err, approval.ErrNotFound):
		return decisionCall{}, s.storeErrorAnswer(link.payload.Scope, opID, fmt.Errorf("approval of %s: %w", opID, err)), false
	}
	if call.keys, err = s.decidingKeys(ctx, link.payload.Subject, call.approvers); err != nil {
		return decisionCall{}, s.storeErrorAnswer(link.payload.Scope, opID, err), false
	}
	if len(call.keys) == 0 {
		return decisionCall{}, ceremonyRefusedAnswer(opID, noDecidingKeys(link.payload.Subject, call.approvers), nil), false
	}
	return call, Answer{}, true
}

// decidingKeys lists the active passkeys that may decide an operation of
// subject under approvers (approval.MayDecide): the subject's own, and,
// when approvers are named, every passkey enrolled with their role.
func (s *Service) decidingKeys(ctx context.Context, subject string, approvers *approval.Approvers) ([]approval.Passkey, error) {
	candidates, err := s.approvals.Passkeys(ctx, subject, false)
	if err != nil {
		return nil, fmt.Errorf("passkeys of %s: %w", subject, err)
	}
	if approvers != nil {
		withRole, err := s.approvals.PasskeysWithRole(ctx, approvers.Role)
		if err != nil {
			return nil, fmt.Errorf("passkeys with the role %s: %w", approvers.Role, err)
		}
		candidates = append(candidates, withRole...)
	}
	var keys []approval.Passkey
	seen := map[string]bool{}
	for _, k := range candidates {
		if !seen[k.ID] && approval.MayDecide(approvers, subject, k) {
			seen[k.ID] = true
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// noDecidingKeys says why nobody can decide an operation of subject under
// approvers, and what an operator does about it.
func noDecidingKeys(subject string, approvers *approval.Approvers) string {
	if approvers == nil {
		return subject + " has no passkey: an operator makes an enrolment link (oncegate-ops passkey invite)"
	}
	return "no passkey is enrolled with the role " + approvers.Role +
		": an operator makes an enrolment link for each approver (oncegate-ops passkey invite --person NAME --role " + approvers.Role + ")"
}

// ApproveOptions answers the assertion options over the statement of the
// requested decision.
func (s *Service) ApproveOptions(ctx context.Context, req DecisionRequest) Answer {
	call, r, ok := s.prepareDecision(ctx, req)
	if !ok {
		return r
	}
	opts, err := s.ceremony.AssertionOptions(call.st, call.keys)
	if err != nil {
		return InternalErrorAnswer(call.st.OperationID, err)
	}
	return webAuthnOptionsAnswer(call.st.OperationID, opts)
}

// ApproveDecision verifies the passkey's assertion over the statement and
// records the decision once.
func (s *Service) ApproveDecision(ctx context.Context, req DecisionRequest) Answer {
	call, r, ok := s.prepareDecision(ctx, req)
	if !ok {
		return r
	}
	opID, subject, traceID := call.st.OperationID, call.st.Subject, telemetry.TraceID(ctx)
	refuse := func(why string, rec *approval.Record) Answer {
		s.approvalEvent(ctx, eventCeremonyRefused, subject, opID, "", traceID, why)
		return ceremonyRefusedAnswer(opID, why, rec)
	}
	if len(bytes.TrimSpace(req.Credential)) == 0 {
		return refuse("no passkey assertion (credential) was sent", nil)
	}
	v, err := s.ceremony.Verify(call.st, call.keys, req.Credential)
	if err != nil {
		return refuse("the passkey's answer does not verify: "+err.Error(), nil)
	}
	state := approval.StateApproved
	if req.Decision == approval.DecisionDecline {
		state = approval.StateDeclined
	}
	rec, err := s.approvals.Decide(ctx, approval.Decided{
		Request: s.approvalRequest(call.link.payload, call.link.canonical, call.approvers, traceID), Approver: v.Person,
		State: state, CredentialID: v.CredentialID, SignCount: v.SignCount, Statement: call.st.Canonical(),
		Evidence: v.Evidence, EvidenceSHA256: v.EvidenceSHA256,
	})
	switch {
	case errors.Is(err, approval.ErrAlreadyDecided) && rec.State == approval.StatePending:
		return refuse(alreadyDecidedBy(v.Person, rec), &rec)
	case errors.Is(err, approval.ErrAlreadyDecided):
		return refuse("this operation was already decided", &rec)
	case errors.Is(err, approval.ErrSignCount):
		return refuse("the passkey's signature counter did not advance (a replayed answer)", nil)
	case errors.Is(err, approval.ErrRevoked), errors.Is(err, approval.ErrNotFound):
		return refuse("the passkey is not an active passkey of "+v.Person, nil)
	case err != nil:
		return s.storeErrorAnswer(call.link.payload.Scope, opID, err)
	}
	event := eventApproved
	if state == approval.StateDeclined {
		event = eventDeclined
	}
	s.approvalEvent(ctx, event, subject, opID, v.CredentialID, traceID,
		"approver="+v.Person+" evidence_sha256="+v.EvidenceSHA256)
	return approvalRecordedAnswer(rec)
}

// alreadyDecidedBy refuses a second decision of person on an approval that
// still waits for others: the first decision of each person stands.
func alreadyDecidedBy(person string, rec approval.Record) string {
	return fmt.Sprintf("%s already decided this operation (the first decision of each person stands); "+
		"%d of %d approvals given: another approver decides", person, rec.Given, rec.Needed)
}
