package api

import (
	"bytes"
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
	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/api/messages"
	"github.com/oncegate/oncegate/api/pages"
	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/iso4217"
)

// The approval page and its ceremony (docs/contract.md §7): GET /approve/{id}
// shows the operation from its signed link; POST /approve/{id}/options
// gives the page the WebAuthn options whose challenge is the statement's
// hash; POST /approve/{id}/decision verifies the passkey's assertion and
// records the decision. None of them takes a bearer token.

// noBearer refuses a request that carries an Authorization header: the
// approval and enrolment ceremonies are a person's passkey in their
// browser, and an agent's token never approves, declines or enrols.
func (s *Server) noBearer(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().Header.Get(echo.HeaderAuthorization) != "" {
			s.approvalEvent(c.Request().Context(), eventCeremonyRefused, "", "", "", traceIDOf(c), "a bearer token was sent")
			return s.render(c, ceremonyRefusedReply("", "a bearer token never approves, declines or enrols: only a person's passkey in their browser does", nil))
		}
		return next(c)
	}
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
func (s *Server) verifyLink(opID, fp, p string) (verifiedLink, error) {
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

// handleApprovePage serves GET /approve/:id?f=&p=: the page, from the
// verified link and the approval as recorded.
func (s *Server) handleApprovePage(c echo.Context) error {
	ctx := c.Request().Context()
	link, err := s.verifyLink(c.Param("id"), c.QueryParam("f"), c.QueryParam("p"))
	if err != nil {
		return s.pageError(c, http.StatusBadRequest, err.Error())
	}
	page := approvePage(link, s.reasonTexts(link.payload))
	rec, err := s.approvals.Approval(ctx, link.payload.Nonce)
	switch {
	case err == nil && rec.State != approval.StatePending:
		page.State = strings.ToLower(string(rec.State))
		page.StateText = fmt.Sprintf("%s with a passkey at %s.", map[approval.State]string{
			approval.StateApproved: "Approved", approval.StateDeclined: "Declined"}[rec.State], rec.DecidedAt.UTC().Format(time.RFC1123))
	case err != nil && !errors.Is(err, approval.ErrNotFound):
		return s.pageError(c, http.StatusServiceUnavailable, "the approvals cannot be read right now; reload the page in a moment")
	case !s.now().Before(link.payload.ExpiresAt()):
		page.State, page.StateText = "expired", "Expired: this can no longer be approved. Ask the agent for a new preview."
	default:
		page.State, page.StateText, page.Open = "pending", "Waiting for your decision.", true
	}
	return s.page(c, http.StatusOK, func(b *bytes.Buffer) error { return pages.Approval(b, page) })
}

// approvePage fills the page from the link: the amount with its currency's
// decimal places, the payee, and every bound field.
func approvePage(link verifiedLink, reasons []string) pages.Approve {
	p := link.payload
	page := pages.Approve{
		Title: link.action.Title, Scope: p.Scope, OperationID: p.Nonce, Subject: p.Subject, Reasons: reasons,
		ExpiresISO: p.ExpiresAt().Format(time.RFC3339), ExpiresText: p.ExpiresAt().Format(time.RFC1123),
		Fingerprint: link.fp, Params: link.p,
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
		page.Fields = append(page.Fields, pages.Field{Name: name, Value: v})
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

// reasonTexts says the fingerprint's reasons in English, for the page.
func (s *Server) reasonTexts(p fingerprint.Payload) []string {
	var out []string
	for _, r := range approval.SplitReasons(p.Approval) {
		out = append(out, s.reasonsText(messages.English, []approval.Reason{r}))
	}
	return out
}

// decisionRequest is the body of POST /approve/:id/options and /decision.
type decisionRequest struct {
	// F is the link's fingerprint.
	F string `json:"f"`
	// P is the link's canonical bound params, base64url.
	P string `json:"p"`
	// Decision is approve or decline.
	Decision approval.Decision `json:"decision"`
	// Credential is the browser's assertion (decision only).
	Credential json.RawMessage `json:"credential,omitempty"`
}

// decisionCall is a verified decision request: its link, statement and the
// subject's passkeys.
type decisionCall struct {
	link verifiedLink
	st   approval.Statement
	keys []approval.Passkey
}

// prepareDecision verifies a decision request up to the passkeys: the link,
// the decision, the expiry, that nothing was decided yet, and that the
// subject has passkeys. It returns the reply to send when refused.
func (s *Server) prepareDecision(c echo.Context, req *decisionRequest) (decisionCall, reply, bool) {
	ctx := c.Request().Context()
	opID := c.Param("id")
	if r, ok := decodeBody(c, req); !ok {
		return decisionCall{}, r, false
	}
	link, err := s.verifyLink(opID, req.F, req.P)
	if err != nil {
		return decisionCall{}, ceremonyRefusedReply(opID, err.Error(), nil), false
	}
	if !req.Decision.Valid() {
		return decisionCall{}, ceremonyRefusedReply(opID, `decision must be "approve" or "decline"`, nil), false
	}
	if !s.now().Before(link.payload.ExpiresAt()) {
		return decisionCall{}, ceremonyRefusedReply(opID, "the approval expired at "+link.payload.ExpiresAt().Format(time.RFC3339), nil), false
	}
	rec, err := s.approvals.Approval(ctx, link.payload.Nonce)
	switch {
	case err == nil && rec.State != approval.StatePending:
		return decisionCall{}, ceremonyRefusedReply(opID, "this operation was already "+strings.ToLower(string(rec.State)), &rec), false
	case err != nil && !errors.Is(err, approval.ErrNotFound):
		return decisionCall{}, s.storeErrorReply(link.payload.Scope, opID, fmt.Errorf("approval of %s: %w", opID, err)), false
	}
	keys, err := s.approvals.Passkeys(ctx, link.payload.Subject, false)
	if err != nil {
		return decisionCall{}, s.storeErrorReply(link.payload.Scope, opID, fmt.Errorf("passkeys of %s: %w", link.payload.Subject, err)), false
	}
	if len(keys) == 0 {
		return decisionCall{}, ceremonyRefusedReply(opID, link.payload.Subject+" has no passkey: an operator makes an enrolment link (oncegate-ops passkey invite)", nil), false
	}
	return decisionCall{link: link, st: approval.StatementOf(link.payload, req.Decision), keys: keys}, reply{}, true
}

// handleApproveOptions serves POST /approve/:id/options: the assertion
// options over the statement of the requested decision.
func (s *Server) handleApproveOptions(c echo.Context) error {
	var req decisionRequest
	call, r, ok := s.prepareDecision(c, &req)
	if !ok {
		return s.render(c, r)
	}
	opts, err := s.ceremony.AssertionOptions(call.st, call.keys)
	if err != nil {
		return s.render(c, internalErrorReply(call.st.OperationID, err))
	}
	return s.render(c, webAuthnOptionsReply(call.st.OperationID, opts))
}

// handleApproveDecision serves POST /approve/:id/decision: it verifies the
// passkey's assertion over the statement and records the decision once.
func (s *Server) handleApproveDecision(c echo.Context) error {
	ctx := c.Request().Context()
	var req decisionRequest
	call, r, ok := s.prepareDecision(c, &req)
	if !ok {
		return s.render(c, r)
	}
	opID, subject, traceID := call.st.OperationID, call.st.Subject, traceIDOf(c)
	refuse := func(why string, rec *approval.Record) error {
		s.approvalEvent(ctx, eventCeremonyRefused, subject, opID, "", traceID, why)
		return s.render(c, ceremonyRefusedReply(opID, why, rec))
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
		Request: s.approvalRequest(call.link.payload, call.link.canonical, traceID), State: state,
		CredentialID: v.CredentialID, SignCount: v.SignCount, Statement: call.st.Canonical(),
		Evidence: v.Evidence, EvidenceSHA256: v.EvidenceSHA256,
	})
	switch {
	case errors.Is(err, approval.ErrAlreadyDecided):
		return refuse("this operation was already decided", &rec)
	case errors.Is(err, approval.ErrSignCount):
		return refuse("the passkey's signature counter did not advance (a replayed answer)", nil)
	case errors.Is(err, approval.ErrRevoked), errors.Is(err, approval.ErrNotFound):
		return refuse("the passkey is not an active passkey of "+subject, nil)
	case err != nil:
		return s.render(c, s.storeErrorReply(call.link.payload.Scope, opID, err))
	}
	event := eventApproved
	if state == approval.StateDeclined {
		event = eventDeclined
	}
	s.approvalEvent(ctx, event, subject, opID, v.CredentialID, traceID, "evidence_sha256="+v.EvidenceSHA256)
	return s.render(c, approvalRecordedReply(rec))
}

// page writes an HTML page rendered by fill.
func (s *Server) page(c echo.Context, code int, fill func(*bytes.Buffer) error) error {
	var b bytes.Buffer
	if err := fill(&b); err != nil {
		s.log.ErrorContext(c.Request().Context(), "render page", "trace_id", traceIDOf(c), "err", err)
		return s.render(c, internalErrorReply("", err))
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	return c.HTMLBlob(code, b.Bytes())
}

// pageError writes a page that says why the link cannot be used.
func (s *Server) pageError(c echo.Context, code int, why string) error {
	return s.page(c, code, func(b *bytes.Buffer) error {
		return pages.Refused(b, "This link cannot be used: "+why+".")
	})
}
