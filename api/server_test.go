package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/api/auth"
	"github.com/oncegate/oncegate/api/openapi"
	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/gateway/gatewaytest"
	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/idemstore/memstore"
	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/plan"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/receipt"
	"github.com/oncegate/oncegate/resolution"

	"github.com/oncegate/oncegate/status"
	"github.com/oncegate/oncegate/workflows"
)

// clock is an injectable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

type bundle struct {
	srv    *Server
	svc    *gateway.Service
	cat    *catalog.Catalog
	keys   *fingerprint.Keyring
	store  *memstore.Store
	engine *gatewaytest.Engine
	// decisions are the operators' decisions the workflows read.
	decisions chan operation.Resolution
	alert     *fakeAlert
	quote     *quoteTransport
	reg       *prometheus.Registry
	clock     *clock
	release   chan struct{}
	// receipts is the gateway's receipt keyring.
	receipts *receipt.Keyring
}

func testCatalog() *catalog.Catalog {
	bind := map[string]catalog.Field{}
	for name, text := range map[string]string{
		"amount":   "{type: decimal, required: true, exclusive_min: 0, scale_from: currency}",
		"currency": "{type: string, required: true, normalize: [trim, upper], kind: currency}",
		"payee_id": "{type: string, required: true, normalize: [trim], kind: identifier, max_length: 64}",
	} {
		f, err := catalog.ParseField(text)
		if err != nil {
			panic(err)
		}
		bind[name] = f
	}
	free := map[string]catalog.FreeField{"memo": {Type: catalog.TypeString}}
	action := func(scope string, quote string) *catalog.Action {
		return &catalog.Action{
			Scope: scope, Bind: bind, Free: free, FingerprintTTL: 15 * time.Minute, InFlightTTL: 10 * time.Minute,
			TerminalTTL: 720 * time.Hour, DuplicateIntentWindow: 24 * time.Hour, SummaryField: "amount",
			Downstream: catalog.Downstream{Endpoint: plan.Endpoint{Execute: "http://downstream/v1/transfers"}, Quote: quote, Timeout: 5 * time.Second, Attempts: 1, ResultRef: "id"},
		}
	}
	return &catalog.Catalog{Actions: map[string]*catalog.Action{
		"payments.transfer":        action("payments.transfer", "http://downstream/v1/quotes"),
		"payments.legacy_transfer": action("payments.legacy_transfer", ""),
	}, GatewayWait: 2 * time.Second}
}

func setup(t testing.TB, with ...func(*gateway.Deps)) *bundle {
	t.Helper()
	return setupWith(t, nil, with...)
}

// setupWith is setup with the HTTP server's options changed by api.
func setupWith(t testing.TB, api func(*Options), with ...func(*gateway.Deps)) *bundle {
	t.Helper()
	b := &bundle{clock: &clock{t: time.Now().UTC().Truncate(time.Second)}, release: make(chan struct{}), reg: prometheus.NewRegistry(),
		decisions: make(chan operation.Resolution, 16)}
	b.store = memstore.New(memstore.WithClock(b.clock.Now))
	b.quote = &quoteTransport{expires: b.clock.Now().Add(10 * time.Minute)}
	b.alert = &fakeAlert{ch: make(chan gateway.SecurityEvent, 16)}
	b.engine = gatewaytest.NewEngine(b.exec)
	b.cat = testCatalog()
	var err error
	b.keys, err = fingerprint.ParseKeyring("k1:" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef")))
	require.NoError(t, err)
	b.receipts, err = receipt.ParseKeyring("r1:" + base64.StdEncoding.EncodeToString([]byte("receipt-seed-of-32-bytes-for-api")))
	require.NoError(t, err)
	tokens, err := auth.LoadTokens("../deployments/tokens.dev.yaml")
	require.NoError(t, err)
	logger := slog.New(testenv.FailOnTextFaults(t, slog.NewTextHandler(io.Discard, nil)))
	deps := gateway.Deps{
		Catalog: b.cat, Keyring: b.keys, Receipts: b.receipts, Claims: b.store, Engine: b.engine,
		Logger: logger, Registerer: b.reg, Now: b.clock.Now, HTTPClient: &http.Client{Transport: b.quote}, AlertHook: b.alert,
		Config: gateway.Config{ConfirmWait: 100 * time.Millisecond, PollAfter: 2 * time.Second},
	}
	opts := Options{Authenticator: tokens, Logger: logger, Registerer: b.reg, Gatherer: b.reg}
	for _, w := range with {
		w(&deps)
	}
	if api != nil {
		api(&opts)
	}
	b.svc, err = gateway.New(deps)
	require.NoError(t, err)
	b.srv, err = New(b.svc, opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		select {
		case <-b.release:
		default:
			close(b.release)
		}
	})
	return b
}

// started is how many workflows the engine started.
func (b *bundle) started() int { return len(b.engine.Starts()) }

// exec is the fake workflow: payee "slow" waits for release, "review" needs
// a person, an amount above 10000 fails, anything else succeeds.
func (b *bundle) exec(_ context.Context, in operation.Input, review *gatewaytest.Review) operation.Final {
	var p struct {
		Amount  json.Number `json:"amount"`
		PayeeID string      `json:"payee_id"`
	}
	_ = json.Unmarshal(in.Params, &p)
	var res operation.Final
	switch {
	case p.PayeeID == "slow":
		<-b.release
		res = done(in.OperationID)
	case p.PayeeID == "review":
		_ = b.store.MarkNeedsReview(context.Background(), idemstore.MarkNeedsReviewParams{OperationID: in.OperationID, Reason: "status unknown"})
		sig := review.Wait()
		b.decisions <- sig
		if sig.Outcome == "completed" {
			res = operation.Final{State: operation.StateDone, Result: sig.Result, ResultRef: "manual", ResolvedBy: sig.Operator}
		} else {
			res = operation.Final{State: operation.StateFailed, Reason: sig.Reason, ResolvedBy: sig.Operator}
		}
	case strings.Compare(string(p.Amount), "10000") > 0 && len(p.Amount) >= 5:
		res = operation.Final{State: operation.StateFailed, Reason: "insufficient_funds"}
	default:
		res = done(in.OperationID)
	}
	res.CompletedAt = b.clock.Now() // as the workflow decides it
	// As the workflow finalizes, under its claim (a takeover's or the confirm's).
	_ = b.store.Finalize(context.Background(), idemstore.Finalization{OperationID: in.OperationID, Owner: in.Ownership.Owner(), Final: res,
		TerminalTTL: time.Hour})
	return res
}

func done(id string) operation.Final {
	ref := "tr_" + id[:8]
	return operation.Final{State: operation.StateDone, Result: json.RawMessage(`{"id":"` + ref + `","status":"executed"}`), ResultRef: ref}
}

type resp struct {
	code   int
	header http.Header
	body   map[string]any
	raw    string
}

func (b *bundle) do(t *testing.T, method, path, token, body string, hdr ...string) resp {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	b.srv.Handler().ServeHTTP(rec, req)
	r := resp{code: rec.Code, header: rec.Header(), raw: rec.Body.String()}
	require.Contains(t, rec.Header().Get("Content-Type"), "application/json", r.raw)
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &r.body), r.raw)
	for _, k := range []string{"status", "meaning", "instruction", "retryable", "trace_id"} {
		require.Contains(t, r.body, k, r.raw)
	}
	return r
}

func (r resp) status() status.Status { s, _ := r.body["status"].(string); return status.Status(s) }
func (r resp) str(k string) string   { s, _ := r.body[k].(string); return s }

const transferParams = `{"amount":"12.50","currency":" usd ","payee_id":"p-1","memo":"rent"}`

func (b *bundle) preview(t *testing.T, token, scope, params string) resp {
	t.Helper()
	r := b.do(t, "POST", "/v1/actions/"+scope+"/preview", token, `{"params":`+params+`}`)
	require.Equal(t, status.PreviewReady, r.status(), r.raw)
	return r
}

func (b *bundle) confirm(t *testing.T, token, scope, fp, params string, extra ...string) resp {
	t.Helper()
	body := `{"fingerprint":"` + fp + `","params":` + params
	if len(extra) > 0 {
		body += `,"acknowledge_repeat_of":"` + extra[0] + `"`
	}
	return b.do(t, "POST", "/v1/actions/"+scope+"/confirm", token, body+"}")
}

func TestPreview(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.preview(t, "dev-alice", "payments.transfer", transferParams)
	assert.Equal(t, 200, r.code)
	assert.Equal(t, false, r.body["retryable"])
	assert.Len(t, r.str("operation_id"), 32)
	assert.Contains(t, r.str("instruction"), "payments_transfer_confirm")
	preview := r.body["preview"].(map[string]any)
	assert.Equal(t, map[string]any{"amount": "12.5", "currency": "USD", "payee_id": "p-1"}, preview["params"], "decimals are strings")
	assert.Equal(t, map[string]any{"memo": "rent"}, preview["free"])
	assert.Equal(t, "0.25", preview["quote"].(map[string]any)["fee"])
	// The quote expires in 10 minutes, before the 15-minute fingerprint TTL.
	assert.Equal(t, b.clock.Now().Add(10*time.Minute).Format(time.RFC3339), r.str("expires_at"))
	p, err := b.keys.Parse(r.str("fingerprint"))
	require.NoError(t, err)
	assert.Equal(t, r.str("operation_id"), p.Nonce)
	assert.Equal(t, "alice", p.Subject)
	assert.Equal(t, b.clock.Now().Add(10*time.Minute).Unix(), p.Exp)

	// Without a quote endpoint the fingerprint TTL applies.
	r = b.preview(t, "dev-alice", "payments.legacy_transfer", transferParams)
	assert.Equal(t, b.clock.Now().Add(15*time.Minute).Format(time.RFC3339), r.str("expires_at"))

	writes, reads := b.store.Counts().Writes, b.store.Counts().Reads
	assert.Zero(t, writes, "preview must write nothing")
	assert.Equal(t, 2, reads, "preview reads once, for the amnesia guard")

	zh := b.do(t, "POST", "/v1/actions/payments.transfer/preview", "dev-alice", `{"params":`+transferParams+`}`, "Accept-Language", "zh-CN,zh;q=0.9")
	assert.Contains(t, zh.str("meaning"), "预览")
	assert.Equal(t, "zh", zh.header.Get("Content-Language"))
}

func TestPreviewRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.do(t, "POST", "/v1/actions/payments.transfer/preview", "dev-alice", `{"params":{"currency":"USD","payee_id":"p","extra":1}}`)
	assert.Equal(t, 400, r.code)
	assert.Equal(t, status.InvalidParams, r.status())
	assert.Equal(t, false, r.body["retryable"], "the same params fail again")
	errs := r.body["errors"].([]any)
	require.Len(t, errs, 2, r.raw)
	assert.Equal(t, "amount", errs[0].(map[string]any)["field"])
	assert.Equal(t, "required", errs[0].(map[string]any)["rule"])
	assert.Equal(t, "extra", errs[1].(map[string]any)["field"])
	assert.Equal(t, "unknown_field", errs[1].(map[string]any)["rule"])

	// In Chinese, the problems too.
	zh := b.do(t, "POST", "/v1/actions/payments.transfer/preview", "dev-alice", `{"params":{"amount":"-5","currency":"XXX","payee_id":"p\u200b3"}}`, "Accept-Language", "zh")
	require.Equal(t, status.InvalidParams, zh.status(), zh.raw)
	zerrs := zh.body["errors"].([]any)
	require.Len(t, zerrs, 3, zh.raw)
	for i, want := range []struct{ field, rule, text string }{
		{"amount", "exclusive_min", "必须大于 0"},
		{"currency", "currency", "不是现行有效的 ISO 4217 货币代码"},
		{"payee_id", "identifier", "U+200B ZERO WIDTH SPACE at position 2"},
	} {
		e := zerrs[i].(map[string]any)
		assert.Equal(t, want.field, e["field"])
		assert.Equal(t, want.rule, e["rule"])
		assert.Contains(t, e["problem"], want.text)
		assert.NotEmpty(t, e["expected"])
	}
	assert.Equal(t, "extra", errs[1].(map[string]any)["field"])

	r = b.do(t, "POST", "/v1/actions/payments.nope/preview", "dev-alice", `{"params":{}}`)
	assert.Equal(t, 404, r.code)
	assert.Equal(t, status.UnknownAction, r.status())

	r = b.do(t, "POST", "/v1/actions/payments.transfer/preview", "", `{"params":{}}`)
	assert.Equal(t, 401, r.code)
	assert.Equal(t, status.Unauthenticated, r.status())
	assert.Equal(t, false, r.body["retryable"])
	assert.Contains(t, r.header.Get("WWW-Authenticate"), "Bearer")
	r = b.do(t, "POST", "/v1/actions/payments.transfer/preview", "dev-mallory", `{"params":{}}`)
	assert.Equal(t, 401, r.code)

	b.quote.mu.Lock()
	b.quote.fail = true
	b.quote.mu.Unlock()
	r = b.do(t, "POST", "/v1/actions/payments.transfer/preview", "dev-alice", `{"params":`+transferParams+`}`)
	assert.Equal(t, 503, r.code)
	assert.Equal(t, status.TemporarilyUnavailable, r.status())
	assert.EqualValues(t, 1000, r.body["retry_after_ms"])
	assert.Equal(t, true, r.body["retryable"])
	assert.Contains(t, r.str("meaning"), "the quote endpoint cannot be reached")
	assert.Contains(t, r.str("instruction"), "at most 3 times")
}

func TestPreviewQuoteAnswers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cases := []struct {
		name       string
		status     int
		body       string
		want       status.Status
		code       int
		reason     string
		fields     []string
		inMeaning  string
		inMeanZH   string
		retryable  bool
		retryAfter bool
	}{
		{"simulator refusal", 400, `{"error":"invalid_request","message":"amount must be a positive decimal number"}`,
			status.DownstreamRefused, 422, "invalid_request: amount must be a positive decimal number", nil, "amount must be a positive decimal number", "下游", false, false},
		{"stripe refusal names a field", 402, `{"error":{"type":"card_error","code":"amount_too_large","message":"Amount too large","param":"amount"}}`,
			status.DownstreamRefused, 422, "amount_too_large: Amount too large", []string{"amount"}, "Amount too large", "下游", false, false},
		{"errors list", 422, `{"message":"validation failed","errors":[{"field":"payee_id","message":"unknown payee"},{"field":"currency","problem":"not supported"}]}`,
			status.DownstreamRefused, 422, "validation failed", []string{"payee_id", "currency"}, "validation failed", "下游", false, false},
		{"problem details", 409, `{"title":"Conflict","detail":"payee blocked","invalid-params":[{"name":"payee_id","reason":"blocked"}]}`,
			status.DownstreamRefused, 422, "Conflict: payee blocked", []string{"payee_id"}, "payee blocked", "下游", false, false},
		{"plain text refusal", 404, "no such payee", status.DownstreamRefused, 422, "no such payee", nil, "no such payee", "下游", false, false},
		{"empty refusal", 403, "", status.DownstreamRefused, 422, "HTTP 403 Forbidden", nil, "HTTP 403 Forbidden", "下游", false, false},
		{"5xx", 503, `{"error":"unavailable"}`, status.TemporarilyUnavailable, 503, "", nil, "answered HTTP 503", "HTTP 503", true, true},
		{"500", 500, ``, status.TemporarilyUnavailable, 503, "", nil, "answered HTTP 500", "HTTP 500", true, true},
		{"429", 429, `{"error":"rate_limited"}`, status.TemporarilyUnavailable, 503, "", nil, "answered HTTP 429", "HTTP 429", true, true},
		{"408", 408, ``, status.TemporarilyUnavailable, 503, "", nil, "answered HTTP 408", "HTTP 408", true, true},
		{"garbage 200", 200, `not json`, status.TemporarilyUnavailable, 503, "", nil, "could not be read", "无法读取", true, true},
	}
	for _, tc := range cases {
		b.quote.set(tc.status, tc.body)
		for _, lang := range []string{"en", "zh"} {
			r := b.do(t, "POST", "/v1/actions/payments.transfer/preview", "dev-alice", `{"params":`+transferParams+`}`, "Accept-Language", lang)
			assert.Equal(t, tc.code, r.code, tc.name)
			assert.Equal(t, tc.want, r.status(), tc.name)
			assert.Equal(t, tc.retryable, r.body["retryable"], tc.name)
			assert.NotContains(t, r.body, "fingerprint", tc.name)
			_, hasRetryAfter := r.body["retry_after_ms"]
			assert.Equal(t, tc.retryAfter, hasRetryAfter, tc.name)
			if lang == "zh" {
				assert.Contains(t, r.str("meaning"), tc.inMeanZH, tc.name)
				continue
			}
			assert.Contains(t, r.str("meaning"), tc.inMeaning, tc.name)
			if tc.want == status.DownstreamRefused {
				assert.Equal(t, tc.reason, r.str("reason"), tc.name)
				assert.Contains(t, r.str("instruction"), "Do not send the same params again", tc.name)
				var fields []string
				errs, _ := r.body["errors"].([]any)
				for _, e := range errs {
					fields = append(fields, e.(map[string]any)["field"].(string))
				}
				assert.Equal(t, tc.fields, fields, tc.name)
			} else {
				assert.Contains(t, r.str("instruction"), "at most 3 times", tc.name)
				assert.Contains(t, r.str("instruction"), "payments_transfer_preview", tc.name)
			}
		}
	}
	writes := b.store.Counts().Writes
	assert.Zero(t, writes, "a failed preview writes nothing")
}

func TestConfirmWithoutParams(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fp := b.preview(t, "dev-alice", "payments.transfer", transferParams).str("fingerprint")
	for _, tc := range []struct{ path, body, member, zh string }{
		{"/v1/actions/payments.transfer/confirm", `{"fingerprint":"` + fp + `"}`, "params", ""},
		{"/v1/actions/payments.transfer/confirm", `{"fingerprint":"` + fp + `","params":null}`, "params", ""},
		{"/v1/actions/payments.transfer/confirm", `{"params":` + transferParams + `}`, "fingerprint", ""},
		{"/v1/actions/payments.transfer/preview", `{}`, "params", ""},
		{"/v1/actions/payments.transfer/preview", `{}`, "params", "zh"},
	} {
		r := b.do(t, "POST", tc.path, "dev-alice", tc.body, "Accept-Language", tc.zh)
		assert.Equal(t, 400, r.code, tc.body)
		assert.Equal(t, status.MalformedRequest, r.status(), tc.body)
		assert.Equal(t, false, r.body["retryable"])
		assert.NotContains(t, r.str("meaning"), "unexpected end", tc.body)
		assert.Contains(t, r.str("meaning"), `"`+tc.member+`"`, tc.body)
		if tc.zh != "" {
			assert.Contains(t, r.str("meaning"), "缺少必需的成员", tc.body)
		} else {
			assert.Contains(t, r.str("meaning"), "is missing", tc.body)
		}
	}
	assert.Zero(t, b.started())
}

func TestMalformedDetailsInChinese(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for body, want := range map[string]string{
		`{"params":`:                    "JSON 不完整",
		`{"params":{}} x`:               "多余的数据",
		`{"params":{},"colour":1}`:      `不接受成员 "colour"`,
		`{"params":{}`:                  "JSON 不完整",
		`[1]`:                           "必须是 JSON 对象",
		`{"params":{"amount":1}, }`:     "语法错误",
		`{"fingerprint":5,"params":{}}`: `成员 "fingerprint" 必须是 JSON string`,
	} {
		r := b.do(t, "POST", "/v1/actions/payments.transfer/confirm", "dev-alice", body, "Accept-Language", "zh")
		assert.Equal(t, status.MalformedRequest, r.status(), body)
		assert.Contains(t, r.str("meaning"), want, body)
	}
}

func TestConfirmCompletedThenReplayed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pv := b.preview(t, "dev-alice", "payments.transfer", transferParams)
	fp, opID := pv.str("fingerprint"), pv.str("operation_id")

	r := b.confirm(t, "dev-alice", "payments.transfer", fp, transferParams)
	require.Equal(t, status.Completed, r.status(), r.raw)
	assert.Equal(t, 200, r.code)
	assert.Equal(t, opID, r.str("operation_id"))
	ref := "tr_" + opID[:8]
	assert.Equal(t, ref, r.str("result_ref"))
	assert.Equal(t, ref, r.body["result"].(map[string]any)["id"])
	assert.Empty(t, r.header.Get(HeaderReplayed))
	assert.Equal(t, "Do not call payments_transfer_confirm again. Report the result below to the user.", r.str("instruction"))
	assert.False(t, r.body["retryable"].(bool))

	// Started with the contract's input (the engine's own options: engine's tests).
	require.Equal(t, 1, b.started())
	o, in := b.engine.Starts()[0].Options, b.engine.Starts()[0].Input
	assert.Equal(t, opID, in.OperationID)
	assert.Equal(t, "payments.transfer 12.5 USD to p-1", in.Summary)
	assert.Equal(t, r.header.Get("X-Trace-Id"), o.TraceID)
	assert.JSONEq(t, `{"amount":12.5,"currency":"USD","payee_id":"p-1","memo":"rent"}`, string(in.Params))
	assert.Equal(t, "alice", in.Subject)
	assert.True(t, strings.HasPrefix(in.Ownership.Owner(), b.svc.InstanceID()+":"))
	assert.True(t, in.Ownership.TruthClaimed(), "the confirm's claim inserted the truth record: the workflow's claim")
	assert.Equal(t, b.clock.Now(), in.Ownership.ClaimedAt())
	assert.Empty(t, b.store.Refills(), "the workflow's Finalize writes the fast path under this claim: no refill")

	for _, lang := range []string{"", "zh"} {
		r = b.do(t, "POST", "/v1/actions/payments.transfer/confirm", "dev-alice",
			`{"fingerprint":"`+fp+`","params":`+transferParams+`}`, "Accept-Language", lang)
		assert.Equal(t, 200, r.code)
		assert.Equal(t, status.AlreadyCompleted, r.status())
		assert.Equal(t, "true", r.header.Get(HeaderReplayed))
		assert.Equal(t, ref, r.str("result_ref"))
		assert.Equal(t, ref, r.body["result"].(map[string]any)["id"])
	}
	assert.Contains(t, r.str("instruction"), "不要再次调用 payments_transfer_confirm")
	assert.Equal(t, 1, b.started(), "a replay never starts a second execution")

	// The status tool.
	r = b.do(t, "GET", "/v1/operations/"+opID, "dev-alice", "")
	assert.Equal(t, status.Completed, r.status())
	assert.Equal(t, ref, r.str("result_ref"))
	// Another subject's operation does not exist for them.
	r = b.do(t, "GET", "/v1/operations/"+opID, "dev-bob", "")
	assert.Equal(t, 404, r.code)
	assert.Equal(t, status.UnknownOperation, r.status())
	r = b.do(t, "GET", "/v1/operations/0123456789abcdef0123456789abcdef", "dev-alice", "")
	assert.Equal(t, status.UnknownOperation, r.status())
	assert.Equal(t, "0123456789abcdef0123456789abcdef", r.str("operation_id"))
	// A path id that is not an operation_id is named in the text, never
	// answered as operation_id (its documented shape), and not looked up.
	readsBefore := b.store.Counts().Reads
	for _, id := range []string{"not-an-id", "0123456789ABCDEF0123456789ABCDEF", "0123"} {
		r = b.do(t, "GET", "/v1/operations/"+id, "dev-alice", "")
		assert.Equal(t, 404, r.code, id)
		assert.Equal(t, status.UnknownOperation, r.status(), id)
		assert.NotContains(t, r.body, "operation_id", id)
		assert.Contains(t, r.str("meaning"), id)
		v, err := openapi.NewValidator()
		require.NoError(t, err)
		assert.NoError(t, v.ValidateResponse("GET", "/v1/operations/"+id, r.code, r.header, []byte(r.raw)), id)
	}
	readsAfter := b.store.Counts().Reads
	assert.Equal(t, readsBefore, readsAfter, "a malformed id is not looked up")

	// After exp, the consumed fingerprint still replays.
	b.clock.Add(time.Hour)
	r = b.confirm(t, "dev-alice", "payments.transfer", fp, transferParams)
	assert.Equal(t, status.AlreadyCompleted, r.status())
	assert.Equal(t, "true", r.header.Get(HeaderReplayed))
}

func TestConfirmFailedThenReplayed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	params := `{"amount":20000,"currency":"USD","payee_id":"p-1"}`
	fp := b.preview(t, "dev-alice", "payments.legacy_transfer", params).str("fingerprint")
	r := b.confirm(t, "dev-alice", "payments.legacy_transfer", fp, params)
	assert.Equal(t, 200, r.code)
	require.Equal(t, status.Failed, r.status(), r.raw)
	assert.Equal(t, "insufficient_funds", r.str("reason"))
	assert.Contains(t, r.str("instruction"), "payments_legacy_transfer_preview")

	r = b.confirm(t, "dev-alice", "payments.legacy_transfer", fp, params)
	assert.Equal(t, status.AlreadyFailed, r.status())
	assert.Equal(t, "true", r.header.Get(HeaderReplayed))
	assert.Equal(t, "insufficient_funds", r.str("reason"))
}

func TestConfirmInProgress(t *testing.T) {
	t.Parallel()
	b := setup(t)
	params := `{"amount":"5","currency":"USD","payee_id":"slow"}`
	pv := b.preview(t, "dev-alice", "payments.transfer", params)
	fp, opID := pv.str("fingerprint"), pv.str("operation_id")
	for _, lang := range []string{"en", "zh"} {
		r := b.do(t, "POST", "/v1/actions/payments.transfer/confirm", "dev-alice",
			`{"fingerprint":"`+fp+`","params":`+params+`}`, "Accept-Language", lang)
		assert.Equal(t, 202, r.code)
		require.Equal(t, status.InProgress, r.status(), r.raw)
		assert.Equal(t, "get_operation_status", r.str("poll_with"))
		assert.EqualValues(t, 2000, r.body["poll_after_ms"])
		assert.Equal(t, false, r.body["retryable"])
		if lang == "en" {
			assert.Equal(t, `Do not call payments_transfer_confirm again and do not start a new preview for this request. Wait 2 seconds, then call get_operation_status with operation_id "`+opID+`". Repeat that until the status is no longer in_progress, then report the final status to the user.`, r.str("instruction"))
		} else {
			assert.Contains(t, r.str("instruction"), "等待 2 秒后调用 get_operation_status")
		}
	}
	assert.Equal(t, 1, b.started())
	r := b.do(t, "GET", "/v1/operations/"+opID, "dev-alice", "")
	assert.Equal(t, status.InProgress, r.status())
	assert.Equal(t, 202, r.code)

	close(b.release)
	require.Eventually(t, func() bool {
		return b.do(t, "GET", "/v1/operations/"+opID, "dev-alice", "").status() == status.Completed
	}, 2*time.Second, 10*time.Millisecond)
	// The retry attached to the earlier call's operation: a replay.
	r = b.confirm(t, "dev-alice", "payments.transfer", fp, params)
	assert.Equal(t, status.AlreadyCompleted, r.status())
}

func TestNeedsManualReviewAndResolve(t *testing.T) {
	t.Parallel()
	b := setup(t)
	params := `{"amount":"5","currency":"USD","payee_id":"review"}`
	pv := b.preview(t, "dev-alice", "payments.legacy_transfer", params)
	fp, opID := pv.str("fingerprint"), pv.str("operation_id")
	r := b.confirm(t, "dev-alice", "payments.legacy_transfer", fp, params)
	assert.Equal(t, 202, r.code)
	require.Equal(t, status.NeedsManualReview, r.status(), r.raw)
	assert.Equal(t, "get_operation_status", r.str("poll_with"))
	assert.True(t, strings.HasPrefix(r.str("instruction"), "Stop. Do not retry"), r.str("instruction"))

	r = b.confirm(t, "dev-alice", "payments.legacy_transfer", fp, params)
	assert.Equal(t, status.NeedsManualReview, r.status())
	r = b.do(t, "GET", "/v1/operations/"+opID, "dev-alice", "", "Accept-Language", "zh")
	assert.Equal(t, status.NeedsManualReview, r.status())
	assert.Contains(t, r.str("instruction"), "停止")

	// Ops need the operator role.
	r = b.do(t, "GET", "/v1/ops/operations?state=needs_manual_review", "dev-alice", "")
	assert.Equal(t, 403, r.code)
	assert.Equal(t, status.Forbidden, r.status())

	r = b.do(t, "GET", "/v1/ops/operations?state=needs_manual_review", "dev-ops", "")
	assert.Equal(t, 200, r.code)
	ops := r.body["operations"].([]any)
	require.Len(t, ops, 1)
	assert.Equal(t, opID, ops[0].(map[string]any)["operation_id"])
	r = b.do(t, "GET", "/v1/ops/operations?state=bogus", "dev-ops", "")
	assert.Equal(t, 400, r.code)

	r = b.do(t, "GET", "/v1/ops/operations/"+opID, "dev-ops", "")
	assert.Equal(t, status.OperationFound, r.status())
	assert.Equal(t, "NEEDS_REVIEW", r.body["operation"].(map[string]any)["state"])

	r = b.do(t, "POST", "/v1/ops/operations/"+opID+"/resolve", "dev-ops", `{"outcome":"completed"}`)
	assert.Equal(t, 400, r.code)
	assert.Equal(t, status.InvalidResolution, r.status())
	r = b.do(t, "POST", "/v1/ops/operations/"+opID+"/resolve", "dev-ops", `{"outcome":"failed","reason":"not executed","evidence_url":"ftp://x"}`)
	assert.Equal(t, 400, r.code)
	assert.Contains(t, r.raw, "evidence_url")
	// The operator is the authenticated caller: a typed name is refused.
	r = b.do(t, "POST", "/v1/ops/operations/"+opID+"/resolve", "dev-ops", `{"outcome":"failed","reason":"not executed","operator":"mallory"}`)
	assert.Equal(t, 400, r.code)
	assert.Equal(t, status.MalformedRequest, r.status())
	assert.Contains(t, r.raw, "operator")
	require.Empty(t, b.decisions, "a refused request sends nothing")
	r = b.do(t, "POST", "/v1/ops/operations/"+opID+"/resolve", "dev-ops", `{"outcome":"failed","reason":"not executed","note":"checked bank statement"}`)
	assert.Equal(t, 200, r.code)
	require.Equal(t, status.Resolved, r.status(), r.raw)
	assert.Equal(t, "FAILED", r.str("state"), "the answer is the final state")
	assert.Equal(t, "ops", r.body["decision"].(map[string]any)["operator"])
	resolved := r.str(fieldReceipt)
	require.NotEmpty(t, resolved, "the outcome's receipt: %s", r.raw)
	require.Eventually(t, func() bool {
		return b.do(t, "GET", "/v1/operations/"+opID, "dev-alice", "").status() == status.Failed
	}, 2*time.Second, 10*time.Millisecond)
	assert.Equal(t, resolved, b.do(t, "GET", "/v1/operations/"+opID, "dev-alice", "").str(fieldReceipt),
		"the agent's status names the receipt the operator was answered")
	require.Len(t, b.decisions, 1)
	sent := <-b.decisions
	assert.Equal(t, "ops", sent.Operator)
	assert.Equal(t, "checked bank statement", sent.Note)
	signer, err := resolution.SignerOf(b.receipts)
	require.NoError(t, err)
	st, err := resolution.Verify(signer.PublicKeys(), opID, sent, b.clock.Now())
	require.NoError(t, err, "the decision carries the gateway's token")
	assert.Equal(t, "ops", st.Operator, "the token names the authenticated operator")

	// A second decision is refused, naming the first.
	r = b.do(t, "POST", "/v1/ops/operations/"+opID+"/resolve", "dev-ops", `{"outcome":"completed","result":{"id":"x"}}`)
	assert.Equal(t, 409, r.code)
	assert.Equal(t, status.AlreadyResolved, r.status())
	assert.Equal(t, "ops", r.body["decision"].(map[string]any)["operator"])
	assert.Contains(t, r.str("meaning"), "by ops as failed")
}

// TestResolutionPayload: the ops API answers the resolve signal's input
// for the Web UI or CLI, signed for the authenticated operator, and sends
// nothing; only an operator gets it, only for an operation waiting for
// review, and only for a well-formed decision.
func TestResolutionPayload(t *testing.T) {
	t.Parallel()
	logs := &lockedLog{}
	b := setupWith(t, nil, func(d *gateway.Deps) {
		d.Logger = slog.New(testenv.FailOnTextFaults(t, slog.NewJSONHandler(logs, nil)))
	})
	params := `{"amount":"5","currency":"USD","payee_id":"review"}`
	pv := b.preview(t, "dev-alice", "payments.legacy_transfer", params)
	fp, opID := pv.str("fingerprint"), pv.str("operation_id")
	require.Equal(t, status.NeedsManualReview, b.confirm(t, "dev-alice", "payments.legacy_transfer", fp, params).status())
	path := "/v1/ops/operations/" + opID + "/resolution-payload"
	body := `{"outcome":"completed","result":{"id":"lt_9"},"note":"in the ledger","evidence_url":"https://tickets.example/9"}`

	r := b.do(t, "POST", path, "dev-alice", body)
	assert.Equal(t, 403, r.code, "an agent gets no payload")
	r = b.do(t, "POST", path, "dev-ops", `{"outcome":"completed"}`)
	assert.Equal(t, status.InvalidResolution, r.status(), r.raw)
	r = b.do(t, "POST", path, "dev-ops", `{"outcome":"failed","reason":"x","operator":"mallory"}`)
	assert.Equal(t, status.MalformedRequest, r.status(), "the operator is the caller: %s", r.raw)
	r = b.do(t, "POST", "/v1/ops/operations/0123456789abcdef0123456789abcdef/resolution-payload", "dev-ops", body)
	assert.Equal(t, status.UnknownOperation, r.status(), r.raw)

	r = b.do(t, "POST", path, "dev-ops", body)
	require.Equal(t, 200, r.code, r.raw)
	require.Equal(t, status.ResolutionPayload, r.status(), r.raw)
	assert.Equal(t, opID, r.str("workflow_id"))
	assert.Equal(t, workflows.SignalResolve, r.str("signal"))
	assert.Equal(t, false, r.body["retryable"])
	raw, err := json.Marshal(r.body["input"])
	require.NoError(t, err)
	var input operation.Resolution
	require.NoError(t, json.Unmarshal(raw, &input))
	assert.Equal(t, "ops", input.Operator)
	signer, err := resolution.SignerOf(b.receipts)
	require.NoError(t, err)
	st, err := resolution.Verify(signer.PublicKeys(), opID, input, b.clock.Now())
	require.NoError(t, err, "the input carries the gateway's token of exactly its decision: %s", raw)
	assert.Equal(t, "ops", st.Operator)
	assert.Equal(t, st.ExpiresAt.Format(time.RFC3339), r.str("expires_at"))
	assert.Equal(t, resolution.TTL, st.ExpiresAt.Sub(st.IssuedAt))
	assert.Contains(t, r.str("instruction"), st.ExpiresAt.Format(time.RFC3339))
	assert.Empty(t, b.decisions, "a payload sends nothing")
	r = b.do(t, "POST", path, "dev-ops", body, "Accept-Language", "zh")
	assert.Contains(t, r.str("instruction"), "原样")

	// Once decided, no payload is issued.
	r = b.do(t, "POST", "/v1/ops/operations/"+opID+"/resolve", "dev-ops", `{"outcome":"failed","reason":"not executed"}`)
	require.Equal(t, status.Resolved, r.status(), r.raw)
	r = b.do(t, "POST", path, "dev-ops", body)
	assert.Equal(t, 409, r.code, r.raw)
	assert.Equal(t, status.AlreadyResolved, r.status(), r.raw)

	// Each refusal and the payload are logged with their trace.
	logged := logs.String()
	assert.Contains(t, logged, `"msg":"resolution payload issued","operation_id":"`+opID+`","operator":"ops"`)
	assert.Contains(t, logged, `"jti":"`+st.ID+`"`)
	for _, refused := range []status.Status{status.InvalidResolution, status.UnknownOperation, status.AlreadyResolved} {
		assert.Regexp(t, `"msg":"resolution refused".*"status":"`+string(refused)+`","trace_id":"[0-9a-f]{32}"`, logged)
	}
}

// lockedLog is a log destination safe for concurrent writes.
type lockedLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

// Write appends p.
func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String is everything written.
func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func TestSecurityEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pv := b.preview(t, "dev-alice", "payments.transfer", transferParams)
	fp := pv.str("fingerprint")

	cases := []struct {
		name, token, scope, fp, params string
		status                         status.Status
		kind                           string
		code                           int
	}{
		{"param mismatch", "dev-alice", "payments.transfer", fp, `{"amount":"9999","currency":"USD","payee_id":"p-1"}`, status.ParamMismatch, gateway.EventParamMismatch, 422},
		{"subject mismatch", "dev-bob", "payments.transfer", fp, transferParams, status.SubjectMismatch, gateway.EventSubjectMismatch, 403},
		{"forged", "dev-alice", "payments.transfer", fp[:len(fp)-2] + "AA", transferParams, status.FingerprintInvalid, gateway.EventInvalidFingerprint, 400},
		{"scope mismatch", "dev-alice", "payments.legacy_transfer", fp, transferParams, status.ScopeMismatch, gateway.EventScopeMismatch, 403},
	}
	for _, tc := range cases {
		r := b.confirm(t, tc.token, tc.scope, tc.fp, tc.params)
		assert.Equal(t, tc.code, r.code, tc.name)
		assert.Equal(t, tc.status, r.status(), tc.name)
		assert.Equal(t, false, r.body["retryable"], tc.name)
		select {
		case ev := <-b.alert.ch:
			assert.Equal(t, tc.kind, ev.Kind, tc.name)
			assert.Equal(t, tc.scope, ev.Scope)
		case <-time.After(time.Second):
			t.Fatalf("%s: no alert", tc.name)
		}
		assert.InDelta(t, 1, b.metric(t, "oncegate_security_events_total", tc.kind), 0, tc.name)
	}
	assert.Zero(t, b.started(), "nothing runs on a security event")
	// The same fingerprint still works for its owner with its params.
	r := b.confirm(t, "dev-alice", "payments.transfer", fp, transferParams)
	assert.Equal(t, status.Completed, r.status())
}

func TestFingerprintExpired(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pv := b.preview(t, "dev-alice", "payments.transfer", transferParams)
	b.clock.Add(10 * time.Minute) // exactly exp: refused
	r := b.confirm(t, "dev-alice", "payments.transfer", pv.str("fingerprint"), transferParams)
	assert.Equal(t, 410, r.code)
	assert.Equal(t, status.FingerprintExpired, r.status())
	assert.Contains(t, r.str("instruction"), "payments_transfer_preview")
	assert.Zero(t, b.started())
}

// TestExpiredFingerprintReplaysTheOutcome: past its fingerprint's expiry
// a confirm of a finished operation answers the outcome, asked of the
// store as a status is (Store.Outcome: Redis alone when it holds the
// finished record), and starts nothing.
func TestExpiredFingerprintReplaysTheOutcome(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fp := b.preview(t, "dev-alice", "payments.transfer", transferParams).str("fingerprint")
	first := b.confirm(t, "dev-alice", "payments.transfer", fp, transferParams)
	require.Equal(t, status.Completed, first.status())
	b.clock.Add(time.Hour)
	before := b.store.Counts().Outcomes
	r := b.confirm(t, "dev-alice", "payments.transfer", fp, transferParams)
	assert.Equal(t, status.AlreadyCompleted, r.status())
	assert.Equal(t, first.str("operation_id"), r.str("operation_id"))
	assert.Equal(t, before+1, b.store.Counts().Outcomes, "asked Store.Outcome once")
	assert.Equal(t, 1, b.started())
}

// completedTransfer previews and confirms alice's payments.transfer of
// transferParams, and returns its operation id.
func (b *bundle) completedTransfer(t *testing.T) string {
	t.Helper()
	pv := b.preview(t, "dev-alice", "payments.transfer", transferParams)
	require.Equal(t, status.Completed, b.confirm(t, "dev-alice", "payments.transfer", pv.str("fingerprint"), transferParams).status())
	return pv.str("operation_id")
}

func TestAmnesiaGuard(t *testing.T) {
	t.Parallel()
	b := setup(t)
	firstID := b.completedTransfer(t)

	// Same intent, written differently: still the same param_hash.
	same := `{"amount":12.5,"currency":"USD","payee_id":"p-1","memo":"again?"}`
	pv := b.preview(t, "dev-alice", "payments.transfer", same)
	recent := pv.body["recent_operation"].(map[string]any)
	assert.Equal(t, firstID, recent["operation_id"])
	assert.Equal(t, "completed", recent["state"])
	assert.Equal(t, "tr_"+firstID[:8], recent["result_ref"])
	assert.NotEmpty(t, recent["completed_at"])
	assert.True(t, strings.HasPrefix(pv.str("instruction"), "Do not call payments_transfer_confirm unless the user has explicitly asked"), pv.str("instruction"))
	p, err := b.keys.Parse(pv.str("fingerprint"))
	require.NoError(t, err)
	assert.Equal(t, firstID, p.RecentOperation)

	r := b.confirm(t, "dev-alice", "payments.transfer", pv.str("fingerprint"), same)
	assert.Equal(t, 409, r.code)
	assert.Equal(t, status.RepeatUnacknowledged, r.status())
	assert.Equal(t, firstID, r.body["recent_operation"].(map[string]any)["operation_id"])
	assert.Equal(t, 1, b.started())

	r = b.confirm(t, "dev-alice", "payments.transfer", pv.str("fingerprint"), same, firstID)
	assert.Equal(t, status.Completed, r.status())
	assert.Equal(t, 2, b.started())

	// Another subject is not warned about alice's operation.
	pv = b.preview(t, "dev-bob", "payments.transfer", same)
	assert.NotContains(t, pv.body, "recent_operation")
}

func TestTemporarilyUnavailable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fp := b.preview(t, "dev-alice", "payments.legacy_transfer", transferParams).str("fingerprint")
	b.store.SetUnavailable(true)
	r := b.confirm(t, "dev-alice", "payments.legacy_transfer", fp, transferParams)
	assert.Equal(t, 503, r.code)
	assert.Equal(t, status.TemporarilyUnavailable, r.status())
	assert.Equal(t, true, r.body["retryable"])
	assert.EqualValues(t, 1000, r.body["retry_after_ms"])
	b.store.SetUnavailable(false)
	// Nothing was consumed: the same fingerprint works.
	assert.Equal(t, status.Completed, b.confirm(t, "dev-alice", "payments.legacy_transfer", fp, transferParams).status())
}

func TestOrphanTakeover(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pv := b.preview(t, "dev-alice", "payments.legacy_transfer", transferParams)
	fp, opID := pv.str("fingerprint"), pv.str("operation_id")
	// A previous gateway claimed it and died before starting the workflow.
	seg, _, _ := strings.Cut(fp, ".")
	raw, err := base64.RawURLEncoding.DecodeString(seg)
	require.NoError(t, err)
	var payload fingerprint.Payload
	require.NoError(t, json.Unmarshal(raw, &payload))
	d, err := b.store.Acquire(context.Background(), idemstore.Claim{OperationID: opID, ParamHash: payload.ParamHash,
		Owner: "dead-gateway:1", Subject: "alice", Scope: "payments.legacy_transfer", InFlightTTL: time.Minute})
	require.NoError(t, err)
	require.Equal(t, idemstore.OutcomeAcquired, d.Outcome)

	// Within the grace period: wait, do not take over.
	r := b.confirm(t, "dev-alice", "payments.legacy_transfer", fp, transferParams)
	assert.Equal(t, status.InProgress, r.status())
	assert.Zero(t, b.started())

	b.clock.Add(31 * time.Second)
	r = b.confirm(t, "dev-alice", "payments.legacy_transfer", fp, transferParams)
	assert.Equal(t, status.Completed, r.status(), r.raw)
	assert.Equal(t, opID, r.str("operation_id"))
	require.Equal(t, 1, b.started())
	// The workflow of a takeover claims the truth itself: never as if the
	// confirm had claimed it.
	in := b.engine.Starts()[0].Input
	assert.False(t, in.Ownership.TruthClaimed(), "a takeover never counts the truth as claimed")
	assert.Equal(t, operation.TruthClaimedByWorkflow, in.Ownership.Truth())
	assert.NotEqual(t, "dead-gateway:1", in.Ownership.Owner())
	require.Len(t, b.store.Refills(), 1, "the gateway refills the fast path after a takeover")
	assert.Equal(t, in.Ownership.Owner(), b.store.Refills()[0].Owner)
}

// TestStartFailureReleasesTheClaim: when the workflow cannot be started the
// claim is given back, so the same fingerprint works at once.
func TestStartFailureReleasesTheClaim(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fp := b.preview(t, "dev-alice", "payments.legacy_transfer", transferParams).str("fingerprint")
	b.engine.FailStarts(errors.New("temporal down"), 0)
	r := b.confirm(t, "dev-alice", "payments.legacy_transfer", fp, transferParams)
	assert.Equal(t, status.TemporarilyUnavailable, r.status())
	assert.Equal(t, true, r.body["retryable"])
	b.engine.FailStarts(nil, 0)

	r = b.confirm(t, "dev-alice", "payments.legacy_transfer", fp, transferParams)
	assert.Equal(t, status.Completed, r.status(), r.raw)
	assert.Equal(t, 1, b.started())
}

func TestEchoErrorsAreJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.echo.GET("/panic", func(echoCtx echoContext) error { panic("boom") })

	cases := []struct {
		name, method, path, token, body string
		status                          status.Status
		code                            int
	}{
		{"unknown route", "GET", "/nope", "", "", status.NotFound, 404},
		{"wrong method", "DELETE", "/healthz", "", "", status.MethodNotAllowed, 405},
		{"malformed JSON", "POST", "/v1/actions/payments.transfer/preview", "dev-alice", `{"params":`, status.MalformedRequest, 400},
		{"unknown body field", "POST", "/v1/actions/payments.transfer/confirm", "dev-alice", `{"fingerprint":"x","params":{},"amount":1}`, status.MalformedRequest, 400},
		{"empty body", "POST", "/v1/actions/payments.transfer/confirm", "dev-alice", ` `, status.MalformedRequest, 400},
		{"too large", "POST", "/v1/actions/payments.transfer/preview", "dev-alice", `{"params":{"memo":"` + strings.Repeat("x", 70<<10) + `"}}`, status.RequestTooLarge, 413},
		{"panic", "GET", "/panic", "", "", status.InternalError, 500},
	}
	for _, tc := range cases {
		r := b.do(t, tc.method, tc.path, tc.token, tc.body)
		assert.Equal(t, tc.code, r.code, tc.name)
		assert.Equal(t, tc.status, r.status(), tc.name+": "+r.raw)
		assert.Equal(t, false, r.body["retryable"], tc.name)
		assert.NotEmpty(t, r.str("meaning"), tc.name)
	}
	r := b.do(t, "GET", "/panic", "", "", "Accept-Language", "zh")
	assert.Contains(t, r.str("instruction"), r.str("trace_id"))
	assert.Contains(t, r.str("meaning"), "意外错误")
}

func TestTraceAndHealth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	r := b.do(t, "GET", "/healthz", "", "", "Traceparent", "00-"+trace+"-00f067aa0ba902b7-01")
	assert.Equal(t, 200, r.code)
	assert.Equal(t, trace, r.str("trace_id"))
	assert.Equal(t, trace, r.header.Get("X-Trace-Id"))
	assert.True(t, strings.HasPrefix(r.header.Get("Traceparent"), "00-"+trace+"-"))

	r = b.do(t, "GET", "/healthz", "", "", "Traceparent", "00-"+strings.Repeat("0", 32)+"-00f067aa0ba902b7-01")
	assert.NotEqual(t, strings.Repeat("0", 32), r.str("trace_id"))
	assert.Len(t, r.str("trace_id"), 32)

	r = b.do(t, "GET", "/readyz", "", "")
	assert.Equal(t, 200, r.code)
	assert.Equal(t, "ok", r.str("redis"))
	b.store.SetDegraded(true)
	r = b.do(t, "GET", "/readyz", "", "")
	assert.Equal(t, 200, r.code)
	assert.Equal(t, "degraded", r.str("redis"))
	b.store.SetUnavailable(true)
	r = b.do(t, "GET", "/readyz", "", "")
	assert.Equal(t, 503, r.code)
	assert.Equal(t, status.NotReady, r.status())
	assert.Equal(t, "unreachable", r.str("postgres"))

	req := httptest.NewRequest("GET", "/metrics", nil)
	rec := httptest.NewRecorder()
	b.srv.Handler().ServeHTTP(rec, req)
	assert.Equal(t, 200, rec.Code)
	assert.Contains(t, rec.Body.String(), "oncegate_responses_total")
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	_, err := ConfigFromEnv(nil)
	require.Error(t, err)
	for _, name := range []string{"DATABASE_URL", "REDIS_URL", "ONCEGATE_FINGERPRINT_KEYS", "ONCEGATE_RECEIPT_KEYS"} {
		assert.Contains(t, err.Error(), name)
	}
	env := map[string]string{
		"DATABASE_URL": "postgres://x", "REDIS_URL": "redis://x", "ONCEGATE_FINGERPRINT_KEYS": "k:abc", "ONCEGATE_RECEIPT_KEYS": "r:abc",
		"GATEWAY_URL": "http://127.0.0.1:9999", "ONCEGATE_CONFIRM_WAIT": "3s", "ONCEGATE_ENV": gateway.EnvDev,
	}
	c, err := ConfigFromEnv(env)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:9999", c.ListenAddr)
	assert.Equal(t, 3*time.Second, c.Gateway.ConfirmWait)
	assert.Equal(t, 30*time.Second, c.Gateway.ClaimGrace)
	assert.Equal(t, "oncegate", c.Temporal.TaskQueue)
	assert.Equal(t, "deployments/catalog.dev.yaml", c.CatalogPath)
	assert.Equal(t, "deployments/tokens.dev.yaml", c.TokensPath)
	assert.Equal(t, "127.0.0.1:7233", c.Temporal.Address)
	assert.Equal(t, 30*time.Second, c.ShutdownTimeout)
	env["ONCEGATE_CLAIM_GRACE"] = "soon"
	_, err = ConfigFromEnv(env)
	assert.ErrorContains(t, err, "ONCEGATE_CLAIM_GRACE")
}

// TestDeploymentRefusesDevCredentials: with ONCEGATE_ENV unset (or anything
// but dev) the gateway refuses the dev token file, keys the dev stack
// generated, no authentication and a failpoint, each with what to set.
func TestDeploymentRefusesDevCredentials(t *testing.T) {
	t.Parallel()
	base := map[string]string{"DATABASE_URL": "postgres://x", "REDIS_URL": "redis://x", "ONCEGATE_RECEIPT_KEYS": "prod-r1:abc"}
	with := func(kv ...string) map[string]string {
		env := maps.Clone(base)
		for i := 0; i+1 < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		return env
	}
	for name, tc := range map[string]struct {
		env  map[string]string
		want string
	}{
		"dev token file": {with("ONCEGATE_FINGERPRINT_KEYS", "prod-1:abc", "ONCEGATE_TOKENS", "deployments/tokens.dev.yaml"),
			"ONCEGATE_TOKENS=deployments/tokens.dev.yaml is the dev token file, refused in a deployment (ONCEGATE_ENV unset)"},
		"no authentication": {with("ONCEGATE_FINGERPRINT_KEYS", "prod-1:abc"),
			"no authentication configured (ONCEGATE_ENV unset): set ONCEGATE_OIDC_ISSUER and ONCEGATE_OIDC_AUDIENCE (your identity provider), ONCEGATE_JWT_HS256_SECRET[_FILE], ONCEGATE_JWT_PUBLIC_KEYS or ONCEGATE_TOKENS"},
		"dev stack keys": {with("ONCEGATE_ENV", "production", "ONCEGATE_FINGERPRINT_KEYS", "dev-20261201:abc", "ONCEGATE_JWT_HS256_SECRET", "s"),
			`fingerprint key "dev-20261201" was generated by the dev stack, refused in a deployment (ONCEGATE_ENV production)`},
		"dev stack receipt keys": {with("ONCEGATE_ENV", "production", "ONCEGATE_FINGERPRINT_KEYS", "prod-1:abc", "ONCEGATE_JWT_HS256_SECRET", "s",
			"ONCEGATE_RECEIPT_KEYS", "prod-r2:abc,dev-r1:abc"),
			`receipt key "dev-r1" was generated by the dev stack, refused in a deployment (ONCEGATE_ENV production)`},
		"no receipt keys": {with("ONCEGATE_ENV", gateway.EnvDev, "ONCEGATE_FINGERPRINT_KEYS", "k:abc", "ONCEGATE_RECEIPT_KEYS", ""),
			"ONCEGATE_RECEIPT_KEYS (or ONCEGATE_RECEIPT_KEYS_FILE) is required"},
		"failpoint": {with("ONCEGATE_FINGERPRINT_KEYS", "prod-1:abc", "ONCEGATE_JWT_HS256_SECRET", "s", "ONCEGATE_FAILPOINT", "after_claim"),
			"ONCEGATE_FAILPOINT is for crash tests only"},
	} {
		_, err := ConfigFromEnv(tc.env)
		assert.ErrorContains(t, err, tc.want, name)
	}
	// A deployment with its own credentials, the secrets read from files.
	dir := t.TempDir()
	keys, jwt, receipts := filepath.Join(dir, "keys"), filepath.Join(dir, "jwt"), filepath.Join(dir, "receipts")
	require.NoError(t, os.WriteFile(keys, []byte("prod-1:abc\n"), 0o600))
	require.NoError(t, os.WriteFile(jwt, []byte("hs256-secret\n"), 0o600))
	require.NoError(t, os.WriteFile(receipts, []byte("prod-r2:abc\n"), 0o600))
	c, err := ConfigFromEnv(with("ONCEGATE_ENV", "production", "ONCEGATE_FINGERPRINT_KEYS_FILE", keys, "ONCEGATE_JWT_HS256_SECRET_FILE", jwt,
		"ONCEGATE_RECEIPT_KEYS", "", "ONCEGATE_RECEIPT_KEYS_FILE", receipts))
	require.NoError(t, err)
	assert.Equal(t, "prod-1:abc", c.FingerprintKeys)
	assert.Equal(t, "hs256-secret", c.JWTHS256Secret)
	assert.Equal(t, "prod-r2:abc", c.ReceiptKeys)
	assert.Empty(t, c.TokensPath, "no dev token file by default outside dev")
	_, err = ConfigFromEnv(with("ONCEGATE_FINGERPRINT_KEYS", "prod-1:abc", "ONCEGATE_FINGERPRINT_KEYS_FILE", keys, "ONCEGATE_JWT_HS256_SECRET", "s"))
	assert.ErrorContains(t, err, "set ONCEGATE_FINGERPRINT_KEYS or ONCEGATE_FINGERPRINT_KEYS_FILE, not both")
	_, err = ConfigFromEnv(with("ONCEGATE_FINGERPRINT_KEYS", "prod-1:abc", "ONCEGATE_RECEIPT_KEYS_FILE", receipts, "ONCEGATE_JWT_HS256_SECRET", "s"))
	assert.ErrorContains(t, err, "set ONCEGATE_RECEIPT_KEYS or ONCEGATE_RECEIPT_KEYS_FILE, not both")
}

// The amnesia guard's texts name the recent operation's state and
// reference, and say when it failed: an agent reads them, not the body.
func TestAmnesiaGuardTexts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	firstID := b.completedTransfer(t)

	pv := b.preview(t, "dev-alice", "payments.transfer", transferParams)
	assert.Contains(t, pv.str("meaning"), "operation "+firstID+" (state completed, reference tr_"+firstID[:8]+")")
	assert.NotContains(t, pv.str("meaning"), "That operation failed")
	previewZH := func() resp {
		return b.do(t, "POST", "/v1/actions/payments.transfer/preview", "dev-alice", `{"params":`+transferParams+`}`, "Accept-Language", "zh")
	}
	assert.Contains(t, previewZH().str("meaning"), firstID+"（状态 completed，单据号 tr_"+firstID[:8]+"）")

	rec, err := b.store.Get(context.Background(), firstID)
	require.NoError(t, err)
	rec.State, rec.Reason, rec.FailureKind, rec.ResultRef = operation.StateFailed, "gateway_timeout", "", ""
	b.store.Put(rec)
	pv = b.preview(t, "dev-alice", "payments.transfer", transferParams)
	assert.Contains(t, pv.str("meaning"), "operation "+firstID+" (state failed), see recent_operation. That operation failed (gateway_timeout)")
	assert.Contains(t, previewZH().str("meaning"), firstID+"（状态 failed），见 recent_operation。那笔操作失败了（gateway_timeout）")
}
