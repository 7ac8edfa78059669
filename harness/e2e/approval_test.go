package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/client"
	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/receipt"
)

const wire = "payments.wire"

// payloadOf reads a fingerprint's payload without verifying it (the test
// holds no key): what anyone who sees the fingerprint can read.
func payloadOf(t testing.TB, fp string) fingerprint.Payload {
	t.Helper()
	seg, _, ok := strings.Cut(fp, ".")
	require.True(t, ok)
	raw, err := base64.RawURLEncoding.DecodeString(seg)
	require.NoError(t, err)
	var p fingerprint.Payload
	require.NoError(t, json.Unmarshal(raw, &p))
	return p
}

// approvalOf returns the approval object of an answer.
func approvalOf(t testing.TB, a answer) map[string]any {
	t.Helper()
	v, ok := a.Body["approval"].(map[string]any)
	require.True(t, ok, "no approval in %s", a)
	return v
}

// approvalsDigest captures every row of the approval and passkey tables.
func approvalsDigest(t testing.TB, s *inprocStack) string {
	t.Helper()
	var d1, d2 *string
	var n1, n2 int
	require.NoError(t, s.truth.Pool().QueryRow(context.Background(),
		`SELECT count(*), md5(string_agg(a::text, '|' ORDER BY operation_id)) FROM approval a`).Scan(&n1, &d1))
	require.NoError(t, s.truth.Pool().QueryRow(context.Background(),
		`SELECT count(*), md5(string_agg(p::text, '|' ORDER BY id)) FROM passkey p`).Scan(&n2, &d2))
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	return str(d1) + "/" + str(d2) + "/" + string(rune('0'+n1)) + string(rune('0'+n2))
}

// noWorkflow asserts that Temporal has no workflow of opID.
func (s *inprocStack) noWorkflow(t testing.TB, opID string) {
	t.Helper()
	_, err := s.tc.DescribeWorkflowExecution(context.Background(), opID, "")
	var nf *serviceerror.NotFound
	assert.True(t, errors.As(err, &nf), "a workflow of %s exists: %v", opID, err)
}

// confirmUntilDone confirms until the answer is terminal.
func (s *inprocStack) confirmUntilDone(t testing.TB, scope, fp string, params map[string]any) answer {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		c := call(t, http.MethodPost, s.url+"/v1/actions/"+scope+"/confirm", "dev-alice", map[string]any{"fingerprint": fp, "params": params})
		if st := c.str("status"); st != "in_progress" {
			return c
		}
		require.True(t, time.Now().Before(deadline), "never finished")
		time.Sleep(100 * time.Millisecond)
	}
}

// workflowApproval reads the approval_sha256 of the operation workflow's
// input from its history.
func (s *inprocStack) workflowApproval(t testing.TB, opID string) string {
	t.Helper()
	iter := s.tc.GetWorkflowHistory(context.Background(), opID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
			var in operation.Input
			require.NoError(t, json.Unmarshal(a.GetInput().GetPayloads()[0].GetData(), &in))
			return in.ApprovalSHA256
		}
	}
	t.Fatalf("no start event for %s", opID)
	return ""
}

// approvalLocal is an approval link of the in-process gateway, reachable by the test.
func approvalLocal(s *inprocStack, link string) string {
	return s.url + strings.TrimPrefix(link, inprocPublicURL)
}

// TestApprovals runs the approval of docs/contract.md §7 against real Redis,
// PostgreSQL and Temporal with a software authenticator: what the agent
// sees, that nothing is consumed before a person approves, and every way an
// approval must not work.
func TestApprovals(t *testing.T) {
	s := startInproc(t)
	ap := newApprover(s.url, inprocPublicURL)
	ap.enrol(t, "alice")
	bobCred := ap.enrol(t, "bob")
	ctx := context.Background()

	prev := func(t *testing.T, params map[string]any) answer {
		t.Helper()
		p := s.post(t, "/v1/actions/"+wire+"/preview", map[string]any{"params": params})
		require.Equal(t, "preview_ready", p.str("status"), p.String())
		return p
	}
	conf := func(t *testing.T, fp string, params map[string]any) answer {
		t.Helper()
		return s.post(t, "/v1/actions/"+wire+"/confirm", map[string]any{"fingerprint": fp, "params": params})
	}

	t.Run("ApprovedRunsOnceUnderItsEvidence", func(t *testing.T) {
		params := map[string]any{"amount": "250.00", "currency": "usd", "payee_id": "p-approved", "memo": "rent"}
		p := prev(t, params)
		av := approvalOf(t, p)
		assert.Equal(t, true, av["required"])
		assert.ElementsMatch(t, []any{"amount_above_threshold", "new_payee"}, av["reasons"])
		link, _ := av["url"].(string)
		require.True(t, strings.HasPrefix(link, inprocPublicURL+"/approve/"+p.str("operation_id")+"?"), link)
		assert.Contains(t, p.str("instruction"), link, "the instruction gives the link")
		assert.Contains(t, p.str("instruction"), "Never open the link yourself")
		assert.Equal(t, p.str("expires_at"), av["expires_at"])
		zh := call(t, http.MethodPost, s.url+"/v1/actions/"+wire+"/preview", "dev-alice", map[string]any{"params": params}, "Accept-Language", "zh")
		assert.Contains(t, zh.str("instruction"), "绝不要自己打开这个链接")
		fp, op := p.str("fingerprint"), p.str("operation_id")

		// Confirm before the person approved: 428, nothing consumed anywhere.
		redisBefore, truthBefore := redisWrites(t, s), truthFingerprint(t, s)
		c := conf(t, fp, params)
		require.Equal(t, http.StatusPreconditionRequired, c.Code, c.String())
		assert.Equal(t, "approval_required", c.str("status"))
		assert.Equal(t, false, c.Body["retryable"])
		assert.Equal(t, link, approvalOf(t, c)["url"])
		assert.Equal(t, "PENDING", approvalOf(t, c)["state"])
		assert.Contains(t, c.str("meaning"), "the amount is above the threshold")
		assert.Equal(t, redisBefore, redisWrites(t, s), "approval_required wrote to Redis")
		assert.Equal(t, truthBefore, truthFingerprint(t, s), "approval_required claimed")
		s.noWorkflow(t, op)
		assert.Equal(t, 0, s.executions(t, op))
		pending := call(t, http.MethodGet, s.url+"/v1/ops/approvals?state=pending", "dev-ops", nil)
		assert.Contains(t, string(pending.Raw), op, "operators see the pending approval")

		// The person approves with alice's passkey; the same fingerprint confirms.
		d, _ := ap.decide(t, link, "approve")
		require.Equal(t, "approval_recorded", d.str("status"), d.String())
		assert.Equal(t, "APPROVED", approvalOf(t, d)["state"])
		done := s.confirmUntilDone(t, wire, fp, params)
		require.Equal(t, "completed", done.str("status"), done.String())
		assert.Equal(t, 1, s.executions(t, op))
		rec, err := s.truth.Approval(ctx, op)
		require.NoError(t, err)
		assert.Len(t, rec.EvidenceSHA256, 64)
		assert.Equal(t, rec.EvidenceSHA256, s.workflowApproval(t, op), "the workflow's input names the approval it runs under")
		// The outcome's receipt names it too, in the answer and in the status.
		keys, err := client.FetchJWKS(ctx, httpClient, s.url+receipt.JWKSPath)
		require.NoError(t, err)
		claims, err := client.VerifyReceipt(done.str("receipt"), keys)
		require.NoError(t, err)
		assert.Equal(t, rec.EvidenceSHA256, claims.ApprovalSHA256, "the receipt names the approval it ran under")
		st := call(t, http.MethodGet, s.url+"/v1/operations/"+op, "dev-alice", nil)
		assert.Equal(t, done.str("receipt"), st.str("receipt"))
		show := call(t, http.MethodGet, s.url+"/v1/ops/operations/"+op, "dev-ops", nil)
		assert.Contains(t, string(show.Raw), `"event":"approval_approved"`, "ops show has the decision")
		assert.Contains(t, string(show.Raw), rec.EvidenceSHA256)

		// The payee is known now; a wire below the threshold asks nothing.
		small := map[string]any{"amount": "60.00", "currency": "USD", "payee_id": "p-approved"}
		q := prev(t, small)
		_, asks := q.Body["approval"]
		assert.False(t, asks, "below the threshold to a known payee: %s", q)
		assert.NotContains(t, q.str("instruction"), "passkey")
		assert.Equal(t, "completed", s.confirmUntilDone(t, wire, q.str("fingerprint"), small).str("status"))
	})

	t.Run("BoundToTheParams", func(t *testing.T) {
		params := map[string]any{"amount": "250.00", "currency": "USD", "payee_id": "p-bound"}
		p := prev(t, params)
		fp := p.str("fingerprint")
		d, _ := ap.decide(t, approvalOf(t, p)["url"].(string), "approve")
		require.Equal(t, "approval_recorded", d.str("status"), d.String())
		// The approval of 250.00 does not confirm 2500.00.
		more := map[string]any{"amount": "2500.00", "currency": "USD", "payee_id": "p-bound"}
		c := conf(t, fp, more)
		assert.Equal(t, "param_mismatch", c.str("status"), c.String())
		p2 := prev(t, more)
		c2 := conf(t, p2.str("fingerprint"), more)
		assert.Equal(t, "approval_required", c2.str("status"), "a new preview needs a new approval: %s", c2)
		assert.Equal(t, 0, s.executions(t, p2.str("operation_id")))
	})

	t.Run("ReplayedForAnotherOperation", func(t *testing.T) {
		params := map[string]any{"amount": "300.00", "currency": "EUR", "payee_id": "p-replay"}
		a := prev(t, params)
		b := prev(t, map[string]any{"amount": "301.00", "currency": "EUR", "payee_id": "p-replay"})
		d, cred := ap.decide(t, approvalOf(t, a)["url"].(string), "approve")
		require.Equal(t, "approval_recorded", d.str("status"), d.String())
		before := approvalsDigest(t, s)
		r := ap.post(t, approvalOf(t, b)["url"].(string), "approve", cred, "")
		assert.Equal(t, "ceremony_refused", r.str("status"), r.String())
		assert.Equal(t, before, approvalsDigest(t, s), "nothing recorded")
		// The same answer again for its own operation: decided already.
		r = ap.post(t, approvalOf(t, a)["url"].(string), "approve", cred, "")
		assert.Equal(t, "ceremony_refused", r.str("status"), r.String())
		c := conf(t, b.str("fingerprint"), map[string]any{"amount": "301.00", "currency": "EUR", "payee_id": "p-replay"})
		assert.Equal(t, "approval_required", c.str("status"), c.String())
	})

	t.Run("AnotherSubjectsPasskey", func(t *testing.T) {
		params := map[string]any{"amount": "400.00", "currency": "USD", "payee_id": "p-bob"}
		p := prev(t, params)
		link := approvalOf(t, p)["url"].(string)
		st := approval.StatementOf(payloadOf(t, p.str("fingerprint")), approval.DecisionApprove)
		before := approvalsDigest(t, s)
		r := ap.forge(t, link, "approve", bobCred, st.Challenge())
		assert.Equal(t, "ceremony_refused", r.str("status"), "bob's passkey over alice's statement: %s", r)
		assert.Equal(t, before, approvalsDigest(t, s))
		// A decline's assertion does not approve.
		alice := ap.creds["alice"]
		decline := approval.StatementOf(payloadOf(t, p.str("fingerprint")), approval.DecisionDecline)
		r = ap.forge(t, link, "approve", alice, decline.Challenge())
		assert.Equal(t, "ceremony_refused", r.str("status"), "a decline's assertion sent as an approval: %s", r)
		assert.Equal(t, before, approvalsDigest(t, s))
		c := conf(t, p.str("fingerprint"), params)
		assert.Equal(t, "approval_required", c.str("status"), c.String())
	})

	t.Run("TamperedLink", func(t *testing.T) {
		small := prev(t, map[string]any{"amount": "250.00", "currency": "USD", "payee_id": "p-tamper"})
		big := prev(t, map[string]any{"amount": "2500.00", "currency": "USD", "payee_id": "p-tamper"})
		_, smallBody := decisionBody(t, approvalOf(t, small)["url"].(string), "approve")
		bigPath, bigBody := decisionBody(t, approvalOf(t, big)["url"].(string), "approve")
		// The 2500.00 operation's link with the 250.00 params: the page and
		// the ceremony refuse it, since p's hash is not the fingerprint's.
		q := "?f=" + url.QueryEscape(bigBody["f"].(string)) + "&p=" + url.QueryEscape(smallBody["p"].(string))
		resp, err := httpClient.Get(s.url + bigPath + q)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "the page of a tampered link")
		bigBody["p"] = smallBody["p"]
		r := call(t, http.MethodPost, s.url+bigPath+"/options", "", bigBody)
		assert.Equal(t, "ceremony_refused", r.str("status"), r.String())
		assert.Contains(t, r.str("reason"), "not the ones the fingerprint binds")
		// A genuine link's f and p sent to another operation's page.
		r = call(t, http.MethodPost, s.url+bigPath+"/options", "", smallBody)
		assert.Equal(t, "ceremony_refused", r.str("status"), r.String())
		assert.Contains(t, r.str("reason"), "another operation")
		// A fingerprint not signed by the gateway.
		bigBody["f"] = strings.Replace(bigBody["f"].(string), ".", ".x", 1)
		r = call(t, http.MethodPost, s.url+bigPath+"/options", "", bigBody)
		assert.Equal(t, "ceremony_refused", r.str("status"), r.String())
		// The genuine page shows the bound values.
		page, err := httpClient.Get(approvalLocal(s, approvalOf(t, big)["url"].(string)))
		require.NoError(t, err)
		defer page.Body.Close()
		html, _ := io.ReadAll(page.Body)
		assert.Equal(t, http.StatusOK, page.StatusCode)
		assert.Contains(t, string(html), `<span id="amount">2500.00</span> <span id="currency">USD</span>`)
	})

	t.Run("Expired", func(t *testing.T) {
		defer s.clock.Set(time.Now())
		params := map[string]any{"amount": "500.00", "currency": "USD", "payee_id": "p-exp"}
		p := prev(t, params)
		exp, err := time.Parse(time.RFC3339, p.str("expires_at"))
		require.NoError(t, err)
		assert.WithinDuration(t, s.clock.Now().Add(10*time.Minute), exp, 2*time.Second, "the policy's ttl caps the fingerprint")
		link := approvalOf(t, p)["url"].(string)
		d, _ := ap.decide(t, link, "approve")
		require.Equal(t, "approval_recorded", d.str("status"), d.String())
		// Previewed before the gateway's clock moves: at exp, a quote the
		// simulator makes in the same wall-clock second expires at exp too
		// (RFC 3339 seconds), and the preview would refuse it as expired.
		q := prev(t, map[string]any{"amount": "501.00", "currency": "USD", "payee_id": "p-exp"})
		s.clock.Set(exp)
		c := conf(t, p.str("fingerprint"), params)
		assert.Equal(t, "fingerprint_expired", c.str("status"), "an approval past its expiry confirms nothing: %s", c)
		assert.Equal(t, 0, s.executions(t, p.str("operation_id")))
		// Deciding after the expiry is refused too.
		s.clock.Set(s.clock.Now().Add(11 * time.Minute))
		path, body := decisionBody(t, approvalOf(t, q)["url"].(string), "approve")
		r := call(t, http.MethodPost, s.url+path+"/options", "", body)
		assert.Equal(t, "ceremony_refused", r.str("status"), r.String())
	})

	t.Run("Declined", func(t *testing.T) {
		params := map[string]any{"amount": "700.00", "currency": "USD", "payee_id": "p-decline"}
		p := prev(t, params)
		link, op := approvalOf(t, p)["url"].(string), p.str("operation_id")
		d, _ := ap.decide(t, link, "decline")
		require.Equal(t, "approval_recorded", d.str("status"), d.String())
		assert.Equal(t, "DECLINED", approvalOf(t, d)["state"])
		redisBefore, truthBefore := redisWrites(t, s), truthFingerprint(t, s)
		for range 2 {
			c := conf(t, p.str("fingerprint"), params)
			assert.Equal(t, http.StatusForbidden, c.Code, c.String())
			assert.Equal(t, "approval_declined", c.str("status"))
			assert.Equal(t, false, c.Body["retryable"])
		}
		assert.Equal(t, redisBefore, redisWrites(t, s))
		assert.Equal(t, truthBefore, truthFingerprint(t, s))
		s.noWorkflow(t, op)
		assert.Equal(t, 0, s.executions(t, op))
		// Approving later is refused: the first decision stands.
		path, body := decisionBody(t, link, "approve")
		r := call(t, http.MethodPost, s.url+path+"/options", "", body)
		assert.Equal(t, "ceremony_refused", r.str("status"), r.String())
		assert.Equal(t, "approval_declined", conf(t, p.str("fingerprint"), params).str("status"))
	})

	t.Run("AgentTokenNeverApproves", func(t *testing.T) {
		params := map[string]any{"amount": "800.00", "currency": "USD", "payee_id": "p-agent"}
		p := prev(t, params)
		link := approvalOf(t, p)["url"].(string)
		path, body := decisionBody(t, link, "approve")
		before := approvalsDigest(t, s)
		// With a real assertion attached, and with none: the token is refused either way.
		opts := call(t, http.MethodPost, s.url+path+"/options", "", body)
		require.Equal(t, "webauthn_options", opts.str("status"))
		raw, _ := json.Marshal(opts.Body["options"])
		resp, err := ap.auth.Assert(raw)
		require.NoError(t, err)
		inv := call(t, http.MethodPost, s.url+"/v1/ops/passkeys/invites", "dev-ops", map[string]any{"subject": "alice"})
		enrolPath := strings.TrimPrefix(inv.str("url"), inprocPublicURL)
		for _, tc := range []struct {
			path string
			body map[string]any
		}{
			{path + "/options", body},
			{path + "/decision", body},
			{path + "/decision", map[string]any{"f": body["f"], "p": body["p"], "decision": "approve", "credential": json.RawMessage(resp)}},
			{path + "/decision", map[string]any{"f": body["f"], "p": body["p"], "decision": "decline"}},
			{enrolPath + "/options", map[string]any{}},
			{enrolPath + "/finish", map[string]any{"credential": map[string]any{}}},
		} {
			r := call(t, http.MethodPost, s.url+tc.path, "dev-alice", tc.body)
			assert.Equal(t, "ceremony_refused", r.str("status"), "%s: %s", tc.path, r)
			assert.Equal(t, false, r.Body["retryable"])
		}
		// Without a passkey's assertion, no token is needed to be refused.
		r := call(t, http.MethodPost, s.url+path+"/decision", "", body)
		assert.Equal(t, "ceremony_refused", r.str("status"), r.String())
		// The ops routes want the operator role.
		for _, route := range []struct{ method, path string }{
			{http.MethodGet, "/v1/ops/approvals"}, {http.MethodGet, "/v1/ops/passkeys"},
			{http.MethodPost, "/v1/ops/passkeys/invites"}, {http.MethodPost, "/v1/ops/passkeys/x/revoke"},
		} {
			r := call(t, route.method, s.url+route.path, "dev-alice", map[string]any{"subject": "alice"})
			assert.Equal(t, "forbidden", r.str("status"), "%s %s: %s", route.method, route.path, r)
		}
		assert.Equal(t, before, approvalsDigest(t, s), "nothing recorded")
		assert.Equal(t, "approval_required", conf(t, p.str("fingerprint"), params).str("status"))
	})

	t.Run("MCPOpensTheLinkThroughTheClientsHost", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		connect := func(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
			t.Helper()
			hc := &http.Client{Timeout: time.Minute, Transport: &bearerTransport{token: "dev-alice", next: http.DefaultTransport}}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "approval-e2e", Version: "1"}, opts).
				Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url + "/mcp", HTTPClient: hc}, nil)
			require.NoError(t, err)
			t.Cleanup(func() { _ = cs.Close() })
			return cs
		}
		previewOver := func(t *testing.T, cs *mcp.ClientSession, params map[string]any) map[string]any {
			t.Helper()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "payments_wire_preview", Arguments: map[string]any{"params": params}})
			require.NoError(t, err)
			return structured(t, res)
		}

		// A client that declared URL-mode elicitation: the host is asked to
		// open the link; the person approves there; the call answers completed.
		var opened []string
		var mu sync.Mutex
		withURL := connect(t, &mcp.ClientOptions{
			Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				opened = append(opened, req.Params.URL)
				mu.Unlock()
				assert.Equal(t, "url", req.Params.Mode)
				go func() { // the user, on the page the host opened
					time.Sleep(300 * time.Millisecond)
					if d, _ := ap.decide(t, req.Params.URL, "approve"); d.str("status") != "approval_recorded" {
						t.Errorf("approve over MCP: %s", d)
					}
				}()
				return &mcp.ElicitResult{Action: "accept"}, nil
			},
		})
		params := map[string]any{"amount": "900.00", "currency": "USD", "payee_id": "p-mcp"}
		p := previewOver(t, withURL, params)
		require.Equal(t, "preview_ready", p["status"], "%v", p)
		res, err := withURL.CallTool(ctx, &mcp.CallToolParams{Name: "payments_wire_confirm",
			Arguments: map[string]any{"fingerprint": p["fingerprint"], "params": params}})
		require.NoError(t, err)
		out := structured(t, res)
		assert.Contains(t, []any{"completed", "in_progress"}, out["status"], "%v", out)
		mu.Lock()
		require.Len(t, opened, 1, "the host was asked to open the link once")
		assert.Equal(t, p["approval"].(map[string]any)["url"], opened[0])
		mu.Unlock()
		op := p["operation_id"].(string)
		assert.Contains(t, []string{"completed", "already_completed"}, s.confirmUntilDone(t, wire, p["fingerprint"].(string), params).str("status"))
		assert.Equal(t, 1, s.executions(t, op))

		// A client without it: approval_required with the link, as over HTTP.
		plain := connect(t, nil)
		params = map[string]any{"amount": "901.00", "currency": "USD", "payee_id": "p-mcp"}
		p = previewOver(t, plain, params)
		res, err = plain.CallTool(ctx, &mcp.CallToolParams{Name: "payments_wire_confirm",
			Arguments: map[string]any{"fingerprint": p["fingerprint"], "params": params}})
		require.NoError(t, err)
		out = structured(t, res)
		assert.True(t, res.IsError)
		assert.Equal(t, "approval_required", out["status"], "%v", out)
		assert.Equal(t, p["approval"].(map[string]any)["url"], out["approval"].(map[string]any)["url"])
	})

	t.Run("InviteIsSingleUseAndRevokeWorks", func(t *testing.T) {
		inv := call(t, http.MethodPost, s.url+"/v1/ops/passkeys/invites", "dev-ops", map[string]any{"subject": "carol"})
		require.Equal(t, "passkey_invited", inv.str("status"), inv.String())
		link := ap.local(t, inv.str("url"))
		opts := call(t, http.MethodPost, link+"/options", "", map[string]any{})
		raw, _ := json.Marshal(opts.Body["options"])
		_, resp, err := ap.auth.Register(raw)
		require.NoError(t, err)
		done := call(t, http.MethodPost, link+"/finish", "", map[string]any{"credential": json.RawMessage(resp)})
		require.Equal(t, "passkey_enrolled", done.str("status"), done.String())
		again := call(t, http.MethodPost, link+"/options", "", map[string]any{})
		assert.Equal(t, "ceremony_refused", again.str("status"), "a used link: %s", again)
		list := call(t, http.MethodGet, s.url+"/v1/ops/passkeys?subject=carol", "dev-ops", nil)
		require.Equal(t, "passkeys_listed", list.str("status"))
		keys := list.Body["passkeys"].([]any)
		require.Len(t, keys, 1)
		id := keys[0].(map[string]any)["id"].(string)
		rev := call(t, http.MethodPost, s.url+"/v1/ops/passkeys/"+id+"/revoke", "dev-ops", nil)
		assert.Equal(t, "passkey_revoked", rev.str("status"), rev.String())
		unknown := call(t, http.MethodPost, s.url+"/v1/ops/passkeys/nope/revoke", "dev-ops", nil)
		assert.Equal(t, "unknown_passkey", unknown.str("status"))
		list = call(t, http.MethodGet, s.url+"/v1/ops/passkeys?subject=carol", "dev-ops", nil)
		assert.Equal(t, float64(0), list.Body["count"])
	})
}
