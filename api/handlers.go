package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/gateway"
)

// Each handler reads its request (the path, the query, the body), asks the
// use case of gateway.Service, and renders its answer: nothing here
// decides.

// previewBody is the body of POST /v1/actions/{scope}/preview.
type previewBody struct {
	// Params are all params, bound and free.
	Params json.RawMessage `json:"params"`
}

// slots makes previewBody a membersBody.
func (r *previewBody) slots() []memberSlot { return []memberSlot{{name: "params", raw: &r.Params}} }

// confirmBody is the body of POST /v1/actions/{scope}/confirm.
type confirmBody struct {
	// Fingerprint is the preview's fingerprint, copied verbatim.
	Fingerprint string `json:"fingerprint"`
	// Params are all params, bound and free.
	Params json.RawMessage `json:"params"`
	// AcknowledgeRepeatOf acknowledges the amnesia guard's recent operation.
	AcknowledgeRepeatOf string `json:"acknowledge_repeat_of,omitempty"`
	// MandateID names the standing mandate to confirm under (docs/contract.md §7c).
	MandateID string `json:"mandate_id,omitempty"`
}

// slots makes confirmBody a membersBody.
func (r *confirmBody) slots() []memberSlot {
	return []memberSlot{{name: "fingerprint", str: &r.Fingerprint}, {name: "params", raw: &r.Params},
		{name: "acknowledge_repeat_of", str: &r.AcknowledgeRepeatOf}, {name: "mandate_id", str: &r.MandateID}}
}

// handlePreview serves POST /v1/actions/:scope/preview.
func (s *Server) handlePreview(c echo.Context) error {
	return handleAction(s, c, previewOf, s.svc.Preview)
}

// handleConfirm serves POST /v1/actions/:scope/confirm.
func (s *Server) handleConfirm(c echo.Context) error {
	return handleAction(s, c, confirmOf, s.svc.Confirm)
}

// requestOf reads an agent's body raw into its use case's request, or the
// answer refusing it.
type requestOf[R any] func(scope string, caller gateway.Caller, raw []byte) (R, gateway.Answer, bool)

// handleAction serves an agent's call of the action :scope: unknown_action
// when the catalog lacks it (before the body is read), else actionCall.
func handleAction[R any](s *Server, c echo.Context, of requestOf[R], use func(context.Context, R) gateway.Answer) error {
	scope := c.Param("scope")
	if _, ok := s.svc.Catalog().Lookup(scope); !ok {
		return s.render(c, gateway.UnknownActionAnswer(scope))
	}
	raw, r, ok := readRequestBody(c)
	if !ok {
		r.Scope = scope
		return s.render(c, r)
	}
	return s.render(c, actionCall(c.Request().Context(), scope, callerOf(c), raw, of, use))
}

// actionCall is use's answer to the request of reads from raw, or the
// refusal of the body, naming the action.
func actionCall[R any](ctx context.Context, scope string, caller gateway.Caller, raw []byte, of requestOf[R],
	use func(context.Context, R) gateway.Answer) gateway.Answer {
	req, r, ok := of(scope, caller, raw)
	if !ok {
		r.Scope = scope
		return r
	}
	return use(ctx, req)
}

// previewOf reads a preview's body raw into the request, or the answer
// refusing it.
func previewOf(scope string, caller gateway.Caller, raw []byte) (gateway.PreviewRequest, gateway.Answer, bool) {
	var body previewBody
	r, ok := decodeBytes(raw, &body)
	if ok {
		r, ok = requireMember("params", body.Params)
	}
	return gateway.PreviewRequest{Caller: caller, Scope: scope, Params: body.Params}, r, ok
}

// confirmOf reads a confirm's body raw into the request, or the answer
// refusing it.
func confirmOf(scope string, caller gateway.Caller, raw []byte) (gateway.ConfirmRequest, gateway.Answer, bool) {
	var body confirmBody
	r, ok := decodeBytes(raw, &body)
	if ok && body.Fingerprint == "" {
		r, ok = memberMissingAnswer("fingerprint", "string"), false
	}
	if ok {
		r, ok = requireMember("params", body.Params)
	}
	return gateway.ConfirmRequest{Caller: caller, Scope: scope, Fingerprint: body.Fingerprint, Params: body.Params,
		AcknowledgeRepeatOf: body.AcknowledgeRepeatOf, MandateID: body.MandateID}, r, ok
}

// handleStatus serves GET /v1/operations/:id, the get_operation_status tool.
func (s *Server) handleStatus(c echo.Context) error {
	return s.render(c, s.svc.Status(c.Request().Context(), gateway.StatusRequest{Caller: callerOf(c), OperationID: c.Param("id")}))
}

// handleOpsList serves GET /v1/ops/operations?state=&older_than=&limit=.
func (s *Server) handleOpsList(c echo.Context) error {
	return s.render(c, s.svc.ListOperations(c.Request().Context(), gateway.ListRequest{State: c.QueryParam("state"),
		OlderThan: c.QueryParam("older_than"), Limit: c.QueryParam("limit")}))
}

// handleOpsGet serves GET /v1/ops/operations/:id: the full record.
func (s *Server) handleOpsGet(c echo.Context) error {
	return s.render(c, s.svc.Operation(c.Request().Context(), c.Param("id")))
}

// handleOpsResolve serves POST /v1/ops/operations/:id/resolve.
func (s *Server) handleOpsResolve(c echo.Context) error {
	return s.serveResolve(c, s.svc.Resolve)
}

// handleOpsResolutionPayload serves POST
// /v1/ops/operations/:id/resolution-payload: the resolve signal's signed
// input, for the Temporal Web UI or CLI.
func (s *Server) handleOpsResolutionPayload(c echo.Context) error {
	return s.serveResolve(c, s.svc.ResolutionPayload)
}

// serveResolve decodes a decision about the path's operation by the
// authenticated operator and answers what use makes of it.
func (s *Server) serveResolve(c echo.Context, use func(context.Context, gateway.ResolveRequest) gateway.Answer) error {
	opID := c.Param("id")
	var req gateway.ResolveRequest
	if r, ok := decodeBody(c, &req); !ok {
		r.OperationID = opID
		return s.render(c, r)
	}
	req.Caller, req.OperationID = callerOf(c), opID
	return s.render(c, use(c.Request().Context(), req))
}

// handleOpsLimits serves GET /v1/ops/limits/:subject?role=.
func (s *Server) handleOpsLimits(c echo.Context) error {
	return s.render(c, s.svc.Limits(c.Request().Context(), c.Param("subject"), c.QueryParam("role")))
}

// handleOpsLimitsReset serves POST /v1/ops/limits/:subject/reset.
func (s *Server) handleOpsLimitsReset(c echo.Context) error {
	return s.render(c, s.svc.ResetLimits(c.Request().Context(), callerOf(c), c.Param("subject")))
}

// handleWebhook serves POST /v1/webhooks/:scope, authenticated by the
// downstream's signature (the action's signature header), not a token.
func (s *Server) handleWebhook(c echo.Context) error {
	scope := c.Param("scope")
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return s.render(c, malformed(detailBodyUnreadable, gateway.Words{Err: err.Error()}))
	}
	header := ""
	if a, ok := s.svc.Catalog().Lookup(scope); ok && a.Downstream.Webhook != nil {
		header = c.Request().Header.Get(a.Downstream.Webhook.SignatureHeader)
	}
	return s.render(c, s.svc.Webhook(c.Request().Context(), gateway.WebhookRequest{Scope: scope, Body: body, Signature: header}))
}

// handleJWKS serves GET /.well-known/jwks.json: the public key of every
// listed receipt key (RFC 7517), the signing key first. A key removed from
// ONCEGATE_RECEIPT_KEYS is retired: no longer served, so its receipts no
// longer verify.
func (s *Server) handleJWKS(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "public, max-age=300")
	return c.JSON(http.StatusOK, s.svc.Receipts().JWKS())
}

// noBearer refuses a request that carries an Authorization header: the
// approval and enrolment ceremonies are a person's passkey in their
// browser, and an agent's token never approves, declines or enrols.
func (s *Server) noBearer(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().Header.Get(echo.HeaderAuthorization) != "" {
			return s.render(c, s.svc.RefuseBearer(c.Request().Context()))
		}
		return next(c)
	}
}

// linkOf is the approval link of GET /approve/:id?f=&p=.
func linkOf(c echo.Context) gateway.ApprovalLink {
	return gateway.ApprovalLink{OperationID: c.Param("id"), Fingerprint: c.QueryParam("f"), Params: c.QueryParam("p")}
}

// handleApprovePage serves GET /approve/:id?f=&p=: the page, from the
// verified link and the approval as recorded.
func (s *Server) handleApprovePage(c echo.Context) error {
	v, err := s.svc.ApprovalPage(c.Request().Context(), linkOf(c))
	if err != nil {
		return s.pageError(c, err)
	}
	return s.page(c, http.StatusOK, func(b *bytes.Buffer) error { return pagesApproval(b, v, s.reasonTexts(v.Reasons)) })
}

// decisionBody is the body of POST /approve/:id/options and /decision.
type decisionBody struct {
	// F is the link's fingerprint.
	F string `json:"f"`
	// P is the link's canonical bound params, base64url.
	P string `json:"p"`
	// Decision is approve or decline.
	Decision approval.Decision `json:"decision"`
	// Credential is the browser's assertion (decision only).
	Credential json.RawMessage `json:"credential,omitempty"`
}

// decisionRequest reads a decision's body, or the answer refusing it.
func decisionRequest(c echo.Context) (gateway.DecisionRequest, gateway.Answer, bool) {
	var body decisionBody
	if r, ok := decodeBody(c, &body); !ok {
		return gateway.DecisionRequest{}, r, false
	}
	return gateway.DecisionRequest{Link: gateway.ApprovalLink{OperationID: c.Param("id"), Fingerprint: body.F, Params: body.P},
		Decision: body.Decision, Credential: body.Credential}, gateway.Answer{}, true
}

// handleApproveOptions serves POST /approve/:id/options.
func (s *Server) handleApproveOptions(c echo.Context) error {
	req, r, ok := decisionRequest(c)
	if ok {
		r = s.svc.ApproveOptions(c.Request().Context(), req)
	}
	return s.render(c, r)
}

// handleApproveDecision serves POST /approve/:id/decision.
func (s *Server) handleApproveDecision(c echo.Context) error {
	req, r, ok := decisionRequest(c)
	if ok {
		r = s.svc.ApproveDecision(c.Request().Context(), req)
	}
	return s.render(c, r)
}

// handleEnrolPage serves GET /enrol/:token.
func (s *Server) handleEnrolPage(c echo.Context) error {
	inv, err := s.svc.EnrolPage(c.Request().Context(), c.Param("token"))
	if err != nil {
		return s.pageError(c, err)
	}
	return s.page(c, http.StatusOK, func(b *bytes.Buffer) error { return pagesEnrolment(b, inv) })
}

// handleEnrolOptions serves POST /enrol/:token/options.
func (s *Server) handleEnrolOptions(c echo.Context) error {
	return s.render(c, s.svc.EnrolOptions(c.Request().Context(), c.Param("token")))
}

// enrolBody is the body of POST /enrol/:token/finish.
type enrolBody struct {
	// Credential is the browser's registration response.
	Credential json.RawMessage `json:"credential"`
}

// handleEnrolFinish serves POST /enrol/:token/finish.
func (s *Server) handleEnrolFinish(c echo.Context) error {
	var body enrolBody
	if r, ok := decodeBody(c, &body); !ok {
		return s.render(c, r)
	}
	return s.render(c, s.svc.EnrolFinish(c.Request().Context(), c.Param("token"), body.Credential))
}

// inviteBody is the body of POST /v1/ops/passkeys/invites.
type inviteBody struct {
	// Subject is who enrols.
	Subject string `json:"subject"`
	// Roles are the roles the enrolled passkey will have.
	Roles []string `json:"roles"`
}

// handleOpsInvite serves POST /v1/ops/passkeys/invites.
func (s *Server) handleOpsInvite(c echo.Context) error {
	var body inviteBody
	if r, ok := decodeBody(c, &body); !ok {
		return s.render(c, r)
	}
	return s.render(c, s.svc.Invite(c.Request().Context(), callerOf(c), gateway.InviteRequest{Subject: body.Subject, Roles: body.Roles}))
}

// handleOpsPasskeys serves GET /v1/ops/passkeys?subject=&revoked=true.
func (s *Server) handleOpsPasskeys(c echo.Context) error {
	withRevoked, _ := strconv.ParseBool(c.QueryParam("revoked"))
	return s.render(c, s.svc.Passkeys(c.Request().Context(), c.QueryParam("subject"), withRevoked))
}

// handleOpsRevoke serves POST /v1/ops/passkeys/:id/revoke.
func (s *Server) handleOpsRevoke(c echo.Context) error {
	return s.render(c, s.svc.RevokePasskey(c.Request().Context(), callerOf(c), c.Param("id")))
}

// handleOpsApprovals serves GET /v1/ops/approvals?state=pending&limit=.
func (s *Server) handleOpsApprovals(c echo.Context) error {
	return s.render(c, s.svc.Approvals(c.Request().Context(), gateway.ApprovalsRequest{State: c.QueryParam("state"),
		Limit: c.QueryParam("limit")}))
}

// pageTime is how a page says a time: RFC 3339 for the script, and for
// reading.
func pageTime(t time.Time) (iso, text string) {
	return t.UTC().Format(time.RFC3339), t.UTC().Format(time.RFC1123)
}
