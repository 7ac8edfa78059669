package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/api/auth"
	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/catalog"
)

// previewRequest is the body of POST /v1/actions/{scope}/preview.
type previewRequest struct {
	// Params are all params, bound and free.
	Params json.RawMessage `json:"params"`
}

// handlePreview serves POST /v1/actions/:scope/preview.
func (s *Server) handlePreview(c echo.Context) error {
	action, r, ok := s.lookupAction(c)
	if !ok {
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
		r := newReply(StatusUnknownAction)
		r.data.Scope = scope
		return nil, r, false
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

// bindParams validates params against action and canonicalizes them, or
// returns the invalid_params reply.
func bindParams(action *catalog.Action, params json.RawMessage) (boundParams, reply, bool) {
	canonical, normalized, problems := fingerprint.Bind(params, action)
	if len(problems) > 0 {
		return boundParams{}, invalidParams(action.Scope, problems), false
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(params, &all); err != nil {
		return boundParams{}, invalidParams(action.Scope, []fingerprint.FieldProblem{{Rule: fingerprint.RuleJSON, Problem: err.Error()}}), false
	}
	free := map[string]json.RawMessage{}
	for name := range action.Free {
		if v, ok := all[name]; ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			free[name] = v
		}
	}
	return boundParams{canonical: canonical, paramHash: fingerprint.ParamHash(canonical), normalized: normalized, free: free}, reply{}, true
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

// invalidParams builds invalid_params with one entry per problem.
func invalidParams(scope string, problems []fingerprint.FieldProblem) reply {
	r := newReply(StatusInvalidParams).with("errors", problems)
	r.scope = scope
	return r
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
		q, qexp, err := s.fetchQuote(ctx, action, bp.normalized)
		if err == nil && !qexp.IsZero() && !qexp.After(now) {
			err = &quoteError{detail: detailQuoteExpired, err: fmt.Errorf("quote already expired at %s", qexp.Format(time.RFC3339))}
		}
		if err != nil {
			s.log.WarnContext(ctx, "quote failed", "scope", action.Scope, "subject", id.Subject, "err", err)
			return quoteFailure(action.Scope, err)
		}
		quote = q
		if !qexp.IsZero() && qexp.Before(exp) {
			exp = qexp
		}
	}
	window := action.DuplicateIntentWindow
	if window <= 0 {
		window = catalog.DefaultDuplicateIntentWindow
	}
	recent, err := s.store.FindRecent(ctx, idemstore.FindRecentParams{Subject: id.Subject, Scope: action.Scope,
		ParamHash: bp.paramHash, Since: now.Add(-window)})
	found := err == nil
	if err != nil && !errors.Is(err, idemstore.ErrNotFound) {
		return s.storeErrorReply(action.Scope, "", fmt.Errorf("amnesia guard: %w", err))
	}
	p := fingerprint.Payload{
		Nonce: fingerprint.NewNonce(), Exp: exp.Unix(),
		Subject: id.Subject, Scope: action.Scope, ParamHash: bp.paramHash,
	}
	if found {
		p.RecentOperation = recent.Key
	}
	fp, err := s.keys.Sign(p)
	if err != nil {
		r := newReply(StatusInternalError)
		r.err = fmt.Errorf("preview: %w", err)
		return r
	}
	// Decimals are strings in answers; the quote's numbers too.
	preview := map[string]any{"scope": action.Scope, "params": stringNumbers(bp.normalized), "free": stringNumbers(bp.free)}
	if quote != nil {
		preview["quote"] = stringNumbers(quote)
	}
	r = newReply(StatusPreviewReady).
		with("fingerprint", fp).
		with("expires_at", p.ExpiresAt().Format(time.RFC3339)).
		with("preview", preview)
	r.opID = p.Nonce
	r.scope = action.Scope
	r.data.ExpiresAt = p.ExpiresAt().Format(time.RFC3339)
	if found {
		r.key = keyPreviewReadyRepeat
		r = r.with("recent_operation", recentOperation(recent))
		r.data.RecentOperationID = recent.Key
		r.data.State = agentState(recent.State)
		r.data.ResultRef = recent.ResultRef
		r.data.Reason = recent.Reason
	}
	return r
}

// Message key of temporarily_unavailable when preview could not get a quote.
const keyQuoteUnavailable = "quote_unavailable"

// quoteFailure answers a failed quote: downstream_refused for a definite
// refusal, else temporarily_unavailable with the quote's own texts.
func quoteFailure(scope string, err error) reply {
	var qe *quoteError
	if errors.As(err, &qe) && qe.refused {
		r := newReply(StatusDownstreamRefused).with("reason", qe.reason)
		if len(qe.problems) > 0 {
			r = r.with("errors", qe.problems)
		}
		r.scope = scope
		r.data.Reason = qe.reason
		return r
	}
	r := newReply(StatusTemporarilyUnavailable)
	r.key = keyQuoteUnavailable
	r.scope = scope
	r.detail = detailQuoteUnreachable
	if qe != nil {
		r.detail = qe.detail
		if qe.httpStatus != 0 {
			r.data.Got = strconv.Itoa(qe.httpStatus)
		}
	}
	return r
}

// recentOperation is the body's view of an operation for the amnesia guard.
func recentOperation(rec idemstore.Record) map[string]any {
	out := map[string]any{"operation_id": rec.Key, "state": agentState(rec.State), "result_ref": rec.ResultRef, "completed_at": nil}
	if rec.State.Terminal() && !rec.UpdatedAt.IsZero() {
		out["completed_at"] = rec.UpdatedAt.UTC().Format(time.RFC3339)
	}
	if rec.State == idemstore.StateFailed {
		out["reason"] = rec.Reason
		if rec.FailureKind != "" {
			out["failure_kind"] = string(rec.FailureKind)
		}
	}
	return out
}

// agentState names a store state as the agent-facing status.
func agentState(st idemstore.State) string {
	switch st {
	case idemstore.StateDone:
		return StatusCompleted
	case idemstore.StateFailed:
		return StatusFailed
	case idemstore.StateNeedsReview:
		return StatusNeedsManualReview
	case idemstore.StateInFlight:
		return StatusInProgress
	}
	return string(st)
}

// storeErrorReply answers a store failure: temporarily_unavailable when the
// store is unreachable, internal_error otherwise.
func (s *Server) storeErrorReply(scope, opID string, err error) reply {
	status := StatusInternalError
	if errors.Is(err, idemstore.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		status = StatusTemporarilyUnavailable
	}
	r := newReply(status)
	r.scope = scope
	r.opID = opID
	r.err = err
	return r
}
