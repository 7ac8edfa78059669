package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/api/auth"
	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/limits"
	"github.com/oncegate/oncegate/internal/params"
)

// previewRequest is the body of POST /v1/actions/{scope}/preview.
type previewRequest struct {
	// Params are all params, bound and free.
	Params json.RawMessage `json:"params"`
}

// slots makes previewRequest a membersBody.
func (r *previewRequest) slots() []memberSlot { return []memberSlot{{name: "params", raw: &r.Params}} }

// handlePreview serves POST /v1/actions/:scope/preview.
func (s *Server) handlePreview(c echo.Context) error {
	action, r, ok := s.lookupAction(c)
	if !ok {
		return s.render(c, r)
	}
	if r, limited := s.rateLimited(c.Request().Context(), identityOf(c), limits.KindPreview, action.Scope); limited {
		return s.render(c, r)
	}
	var req previewRequest
	r, ok = decodeBody(c, &req)
	if ok {
		r, ok = requireMember("params", req.Params)
	}
	if !ok {
		r.scope = action.Scope
		return s.render(c, r)
	}
	return s.render(c, s.preview(c.Request().Context(), identityOf(c), action, req.Params))
}

// lookupAction finds the :scope action or builds unknown_action.
func (s *Server) lookupAction(c echo.Context) (*catalog.Action, reply, bool) {
	scope := c.Param("scope")
	action, ok := s.cat.Lookup(scope)
	if !ok {
		return nil, unknownActionReply(scope), false
	}
	return action, reply{}, true
}

// boundParams is what preview and confirm both derive from a body's params.
type boundParams struct {
	canonical  []byte
	paramHash  string
	normalized map[string]any
	free       map[string]json.RawMessage
}

// bindParams validates raw, a body's params, against action and
// canonicalizes them, or returns the invalid_params reply.
func bindParams(action *catalog.Action, raw json.RawMessage) (boundParams, reply, bool) {
	bound, problems := params.Bind(raw, action)
	if len(problems) > 0 {
		return boundParams{}, invalidParams(action.Scope, problems), false
	}
	return boundParams{canonical: bound.Canonical, paramHash: params.Hash(bound.Canonical), normalized: bound.Normalized, free: bound.Free}, reply{}, true
}

// downstreamParams is the JSON sent downstream: normalized bound params plus free params.
func (b boundParams) downstreamParams() (json.RawMessage, error) {
	all := make(map[string]any, len(b.normalized)+len(b.free))
	for k, v := range b.free {
		all[k] = v
	}
	for k, v := range b.normalized {
		all[k] = v
	}
	raw, err := json.Marshal(all)
	if err != nil {
		return nil, fmt.Errorf("encode params: %w", err)
	}
	return raw, nil
}

// preview validates, quotes, checks the amnesia guard and signs. It writes
// nothing to any store.
func (s *Server) preview(ctx context.Context, id auth.Identity, action *catalog.Action, params json.RawMessage) reply {
	bp, r, ok := bindParams(action, params)
	if !ok {
		return r
	}
	now := s.now()
	exp := now.Add(action.FingerprintTTL)
	var quote map[string]any
	if action.Downstream.Quote != "" {
		q, err := s.fetchQuote(ctx, action, bp.normalized, now)
		if err != nil {
			s.log.WarnContext(ctx, "quote failed", "scope", action.Scope, "subject", id.Subject, "err", err)
			return quoteFailure(action.Scope, err)
		}
		quote = q.Answer
		if !q.ExpiresAt.IsZero() && q.ExpiresAt.Before(exp) {
			exp = q.ExpiresAt
		}
	}
	offer, err := s.approvalAtPreview(ctx, id, action, bp, now)
	if err != nil {
		return s.storeErrorReply(action.Scope, "", fmt.Errorf("preview: %w", err))
	}
	if offer != nil && offer.exp.Before(exp) {
		exp = offer.exp
	}
	recent, err := s.store.FindRecent(ctx, idemstore.FindRecentParams{Subject: id.Subject, Scope: action.Scope,
		ParamHash: bp.paramHash, Since: now.Add(-action.IntentWindow())})
	found := err == nil
	if err != nil && !errors.Is(err, idemstore.ErrNotFound) {
		return s.storeErrorReply(action.Scope, "", fmt.Errorf("amnesia guard: %w", err))
	}
	charge, err := s.charge(id, action, bp)
	if err != nil {
		return internalErrorReply("", fmt.Errorf("preview: %w", err))
	}
	warning := s.previewWarning(ctx, id.Subject, charge)
	p := fingerprint.Payload{
		Nonce: fingerprint.NewNonce(), Exp: exp.Unix(),
		Subject: id.Subject, Scope: action.Scope, ParamHash: bp.paramHash,
	}
	if found {
		p.RecentOperation = recent.OperationID
	}
	if offer != nil {
		p.Approval = approval.JoinReasons(offer.reasons)
	}
	fp, err := s.keys.Sign(p)
	if err != nil {
		return internalErrorReply("", fmt.Errorf("preview: %w", err))
	}
	// Decimals are strings in answers; the quote's numbers too.
	preview := previewView{scope: action.Scope, params: bp.normalized, free: bp.free, quote: quote}
	var view *approvalView
	if offer != nil {
		view = &approvalView{Required: true, Reasons: offer.reasons, URL: s.approvalLink(fp, p.Nonce, bp.canonical),
			ExpiresAt: p.ExpiresAt().Format(time.RFC3339)}
	}
	var ready reply
	if !found {
		ready = s.previewReadyReply(action.Scope, fp, p, preview, nil, view)
	} else {
		ready = s.previewReadyReply(action.Scope, fp, p, preview, &recent, view)
	}
	if warning != nil {
		ready = ready.with("limit", limitViewOf(warning))
	}
	return ready
}
