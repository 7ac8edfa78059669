package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/limits"
	"github.com/oncegate/oncegate/internal/params"
)

// boundParams is what preview and confirm both derive from a body's params.
type boundParams struct {
	canonical  []byte
	paramHash  string
	normalized map[string]any
	free       map[string]json.RawMessage
}

// bindParams validates raw, a body's params, against action and
// canonicalizes them, or returns their problems.
func bindParams(action *catalog.Action, raw json.RawMessage) (boundParams, []params.FieldProblem) {
	bound, problems := params.Bind(raw, action)
	if len(problems) > 0 {
		return boundParams{}, problems
	}
	return boundParams{canonical: bound.Canonical, paramHash: params.Hash(bound.Canonical), normalized: bound.Normalized, free: bound.Free}, nil
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

// Preview validates the params, asks the downstream for a quote, checks the
// amnesia guard and the approval policy, and signs a fingerprint. It writes
// nothing to any store.
func (s *Service) Preview(ctx context.Context, req PreviewRequest) Answer {
	action, ok := s.cat.Lookup(req.Scope)
	if !ok {
		return UnknownActionAnswer(req.Scope)
	}
	if sc := scopeOf(req.Caller, action); sc.Missing != "" {
		return insufficientScopeAnswer(action.Scope, sc.Missing)
	}
	if r := s.rate(ctx, req.Caller, limits.KindPreview); r.Kind == rateLimited {
		return rateLimitedAnswer(action.Scope, r.RetryAfter)
	}
	id := req.Caller
	bp, problems := bindParams(action, req.Params)
	if len(problems) > 0 {
		return invalidParams(action.Scope, problems)
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
		return s.storeErrorAnswer(action.Scope, "", fmt.Errorf("preview: %w", err))
	}
	if offer != nil && offer.exp.Before(exp) {
		exp = offer.exp
	}
	recent, err := s.store.FindRecent(ctx, idemstore.FindRecentParams{Subject: id.Subject, Scope: action.Scope,
		ParamHash: bp.paramHash, Since: now.Add(-action.IntentWindow())})
	found := err == nil
	if err != nil && !errors.Is(err, idemstore.ErrNotFound) {
		return s.storeErrorAnswer(action.Scope, "", fmt.Errorf("amnesia guard: %w", err))
	}
	charge, err := s.charge(id, action, bp)
	if err != nil {
		return InternalErrorAnswer("", fmt.Errorf("preview: %w", err))
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
		return InternalErrorAnswer("", fmt.Errorf("preview: %w", err))
	}
	// Decimals are strings in answers; the quote's numbers too.
	preview := PreviewView{Scope: action.Scope, Params: bp.normalized, Free: bp.free, Quote: quote}
	var view *ApprovalView
	if offer != nil {
		v := ApprovalView{Required: true, Reasons: offer.reasons, URL: s.approvalLink(fp, p.Nonce, bp.canonical),
			ExpiresAt: p.ExpiresAt().Format(time.RFC3339)}.withApprovers(action.Approval.Approvers, 0, nil)
		view = &v
	}
	var ready Answer
	if !found {
		ready = s.previewReadyAnswer(action.Scope, fp, p, preview, nil, view)
	} else {
		ready = s.previewReadyAnswer(action.Scope, fp, p, preview, &recent, view)
	}
	if warning != nil {
		ready = ready.With("limit", limitViewOf(warning))
	}
	return ready
}
