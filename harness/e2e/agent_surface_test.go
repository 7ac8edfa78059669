package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/api/openapi"
	"github.com/oncegate/oncegate/harness/testenv"
)

// contractCodes is docs/contract.md §4's status table (plus the status tool's
// unknown_operation and the Echo-level answers), written out here rather
// than taken from the api package so that a drift of the code fails.
var contractCodes = map[string]int{
	"preview_ready":           200,
	"completed":               200,
	"already_completed":       200,
	"failed":                  200,
	"already_failed":          200,
	"in_progress":             202,
	"needs_manual_review":     202,
	"param_mismatch":          422,
	"subject_mismatch":        403,
	"scope_mismatch":          403,
	"fingerprint_expired":     410,
	"fingerprint_invalid":     400,
	"invalid_params":          400,
	"unauthenticated":         401,
	"unknown_action":          404,
	"repeat_unacknowledged":   409,
	"temporarily_unavailable": 503,
	"downstream_refused":      422,
	"unknown_operation":       404,
	// Echo-level answers.
	"not_found":          404,
	"method_not_allowed": 405,
	"malformed_request":  400,
	"request_too_large":  413,
}

// contractRetryable is the contract's rule: retryable ("sending exactly the
// same request again can succeed") is false for every status except these.
var contractRetryable = map[string]bool{"temporarily_unavailable": true}

// surface checks every answer of one test against the contract and the
// OpenAPI document.
type surface struct {
	t      *testing.T
	s      *testenv.Stack
	v      *openapi.Validator
	prism  *prismProxy       // nil without node: then only kin-openapi validates
	direct bool              // the answer being checked did not pass through Prism
	en     map[string]answer // first English answer by status, for the zh comparison
}

// check asserts the common contract of an answer with status want, and
// validates it against the OpenAPI document (path relative to the gateway).
// It returns the answer for further checks.
func (su *surface) check(a answer, method, path, want string) answer {
	t := su.t
	t.Helper()
	require.Equalf(t, want, a.str("status"), "%s %s: %s", method, path, a)
	code, ok := contractCodes[want]
	require.Truef(t, ok, "status %s not in the contract table", want)
	assert.Equalf(t, code, a.Code, "%s: HTTP code: %s", want, a)
	assert.NotEmptyf(t, a.str("meaning"), "%s: meaning", want)
	assert.NotEmptyf(t, a.str("instruction"), "%s: instruction", want)
	assert.NotEmptyf(t, a.str("trace_id"), "%s: trace_id", want)
	retryable, isBool := a.Body["retryable"].(bool)
	assert.Truef(t, isBool, "%s: retryable must be a bool: %s", want, a)
	assert.Equalf(t, contractRetryable[want], retryable, "%s: retryable", want)
	assert.Truef(t, strings.HasPrefix(a.Header.Get("Content-Type"), "application/json"), "%s: Content-Type %q", want, a.Header.Get("Content-Type"))

	replayed := a.Header.Get("Idempotent-Replayed")
	switch want {
	case "already_completed", "already_failed":
		assert.Equalf(t, "true", replayed, "%s: Idempotent-Replayed", want)
	default:
		assert.Emptyf(t, replayed, "%s must not carry Idempotent-Replayed", want)
	}

	switch want {
	case "preview_ready":
		assert.NotEmpty(t, a.str("fingerprint"), "preview_ready: fingerprint")
		exp, err := time.Parse(time.RFC3339, a.str("expires_at"))
		if assert.NoErrorf(t, err, "preview_ready: expires_at %q", a.str("expires_at")) {
			assert.True(t, exp.After(time.Now()), "preview_ready: expires_at in the past")
		}
		assert.IsType(t, map[string]any{}, a.Body["preview"], "preview_ready: preview object")
	case "completed", "already_completed":
		assert.Contains(t, a.Body, "result", want+": result")
		assert.NotNil(t, a.Body["result"], want+": result")
		assert.NotEmpty(t, a.str("result_ref"), want+": result_ref")
	case "failed", "already_failed":
		assert.NotEmpty(t, a.str("reason"), want+": reason")
	case "in_progress", "needs_manual_review":
		assert.Equal(t, "get_operation_status", a.str("poll_with"), want+": poll_with")
		n, _ := a.Body["poll_after_ms"].(float64)
		assert.Positive(t, n, want+": poll_after_ms")
	case "invalid_params":
		errs, _ := a.Body["errors"].([]any)
		assert.NotEmpty(t, errs, "invalid_params: errors")
	case "repeat_unacknowledged":
		ro, _ := a.Body["recent_operation"].(map[string]any)
		assert.NotEmpty(t, ro["operation_id"], "repeat_unacknowledged: recent_operation.operation_id")
	case "temporarily_unavailable":
		n, _ := a.Body["retry_after_ms"].(float64)
		assert.Positive(t, n, "temporarily_unavailable: retry_after_ms")
		bound := "at most 3 times"
		if a.Header.Get("Content-Language") == "zh" {
			bound = "最多 3 次"
		}
		assert.Contains(t, a.str("instruction"), bound, "temporarily_unavailable bounds the retries")
	case "downstream_refused":
		assert.NotEmpty(t, a.str("reason"), "downstream_refused: reason")
		assert.NotContains(t, a.Body, "fingerprint", "downstream_refused: no fingerprint")
	}
	switch want {
	case "preview_ready", "completed", "already_completed", "failed", "already_failed", "in_progress",
		"needs_manual_review", "param_mismatch", "repeat_unacknowledged", "unknown_operation":
		assert.Regexpf(t, `^[0-9a-f]{32}$`, a.str("operation_id"), "%s: operation_id", want)
	}
	su.validate(a, method, path)
	assertNoNumbers(t, a.Raw, want)
	if su.en != nil && a.Header.Get("Content-Language") != "zh" {
		if _, seen := su.en[want]; !seen {
			su.en[want] = a
		}
	}
	return a
}

// validate checks a against the OpenAPI document, with kin-openapi and,
// when the answer came through it, Prism.
func (su *surface) validate(a answer, method, path string) {
	su.t.Helper()
	assert.NoErrorf(su.t, su.v.ValidateResponse(method, path, a.Code, a.Header, a.Raw), "OpenAPI: %s", a)
	if su.prism != nil && !su.direct {
		su.prism.check(su.t, a, method+" "+path)
	}
}

// checkDirect is check for an answer that did not pass through Prism.
func (su *surface) checkDirect(a answer, method, path, want string) answer {
	su.t.Helper()
	su.direct = true
	defer func() { su.direct = false }()
	return su.check(a, method, path, want)
}

// newSurface starts the Prism proxy in front of s's gateway (when node is
// installed) and returns the surface and the stack view agents use: its
// GatewayURL is the proxy's.
func newSurface(t *testing.T, s *testenv.Stack) (*surface, *testenv.Stack) {
	t.Helper()
	v, err := openapi.NewValidator()
	require.NoError(t, err)
	su := &surface{t: t, s: s, v: v, en: map[string]answer{}}
	gw := s
	if su.prism = startPrism(t, s.GatewayURL); su.prism != nil {
		via := *s
		via.GatewayURL = su.prism.URL
		gw = &via
		t.Cleanup(func() {
			assert.Greater(t, su.prism.answers, 3, "the answers went through Prism")
		})
	}
	return su, gw
}

// checkZH asserts that a is in Chinese and differs from the English answer
// of the same status.
func (su *surface) checkZH(a answer, want string) {
	t := su.t
	t.Helper()
	en, ok := su.en[want]
	require.Truef(t, ok, "no English %s to compare with", want)
	for _, k := range []string{"meaning", "instruction"} {
		assert.Truef(t, hasHan(a.str(k)), "zh %s %s has no Chinese: %q", want, k, a.str(k))
		assert.NotEqualf(t, en.str(k), a.str(k), "zh %s %s equals the English one", want, k)
	}
}

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

// rawCall sends body as it is and decodes the JSON answer.
func rawCall(t testing.TB, method, url, token string, body []byte) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	a := answer{Code: resp.StatusCode, Header: resp.Header, Raw: raw}
	require.NoErrorf(t, json.Unmarshal(raw, &a.Body), "body is not JSON: %d %s", resp.StatusCode, raw)
	return a
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// noFaults clears the simulator's faults.
var noFaults = map[string]any{"latency_ms": 0, "fail_next": 0, "hang_after_commit_ms": 0, "status_unavailable": false, "quote_fail_next": 0}

// TestEveryStatusOverHTTP walks every status of docs/contract.md §4 over HTTP
// against the real stack, checks each answer's contract fields and
// validates it against the OpenAPI document; then a subset in Chinese.
func TestEveryStatusOverHTTP(t *testing.T) {
	// Long and mostly waiting on time windows: runs beside the others
	// (scripts/test.sh sets -parallel for the packages that start stacks).
	t.Parallel()
	s := testenv.StartStack(t, testenv.StackOptions{})
	su, gw := newSurface(t, s)
	run := randomHex(4)
	const (
		transfer = "payments.transfer"
		legacy   = "payments.legacy_transfer"
	)
	previewPath := func(scope string) string { return "/v1/actions/" + scope + "/preview" }
	confirmPath := func(scope string) string { return "/v1/actions/" + scope + "/confirm" }
	opPath := func(id string) string { return "/v1/operations/" + id }
	post := http.MethodPost
	get := http.MethodGet
	confirmAck := func(scope, fp string, params map[string]any, ack string, header ...string) answer {
		t.Helper()
		body := map[string]any{"fingerprint": fp, "params": params}
		if ack != "" {
			body["acknowledge_repeat_of"] = ack
		}
		return call(t, post, gw.GatewayURL+confirmPath(scope), "dev-alice", body, header...)
	}
	// confirmed checks a first confirm: completed, or in_progress and then
	// the status tool's completed (or failed when wantFailed).
	confirmed := func(c answer, scope, opID string, wantFailed bool) answer {
		t.Helper()
		done := "completed"
		if wantFailed {
			done = "failed"
		}
		if c.str("status") == "in_progress" {
			su.check(c, post, confirmPath(scope), "in_progress")
			st := waitStatus(t, gw, "dev-alice", opID, "completed", "failed")
			return su.check(st, get, opPath(opID), done)
		}
		return su.check(c, post, confirmPath(scope), done)
	}

	// needs_manual_review first, because the workflow takes ~20s to give up
	// reconciling; everything else runs meanwhile. The legacy downstream
	// commits and hangs, and its status endpoint is down.
	setFaults(t, s, map[string]any{"latency_ms": 0, "fail_next": 0, "hang_after_commit_ms": 120000, "status_unavailable": true})
	reviewParams := map[string]any{"amount": "7.00", "currency": "usd", "payee_id": "review-" + run}
	rp := su.check(preview(t, gw, "dev-alice", legacy, reviewParams), post, previewPath(legacy), "preview_ready")
	reviewID := rp.str("operation_id")
	rc := su.check(confirm(t, gw, "dev-alice", legacy, rp.str("fingerprint"), reviewParams), post, confirmPath(legacy), "in_progress")
	require.Equal(t, reviewID, rc.str("operation_id"))
	deadline := time.Now().Add(60 * time.Second)
	for executions(t, s, reviewID) < 1 {
		require.True(t, time.Now().Before(deadline), "the simulator never counted the legacy execution")
		time.Sleep(100 * time.Millisecond)
	}
	s.RestartWorker(t)
	// Keep the status endpoint down; transfers no longer hang.
	setFaults(t, s, map[string]any{"latency_ms": 0, "fail_next": 0, "hang_after_commit_ms": 0, "status_unavailable": true})

	// unauthenticated: no token, unknown token.
	params := map[string]any{"amount": "12.50", "currency": " usd ", "payee_id": "p-" + run, "memo": "rent"}
	su.check(preview(t, gw, "", transfer, params), post, previewPath(transfer), "unauthenticated")
	ua := su.check(preview(t, gw, "dev-nobody", transfer, params), post, previewPath(transfer), "unauthenticated")
	assert.NotEmpty(t, ua.Header.Get("WWW-Authenticate"))

	// unknown_action.
	su.check(preview(t, gw, "dev-alice", "payments.nope", params), post, previewPath("payments.nope"), "unknown_action")

	// invalid_params: an unknown field and a missing amount → two errors.
	bad := map[string]any{"currency": "USD", "payee_id": "p-" + run, "colour": "blue"}
	ip := su.check(preview(t, gw, "dev-alice", transfer, bad), post, previewPath(transfer), "invalid_params")
	errs, _ := ip.Body["errors"].([]any)
	require.Lenf(t, errs, 2, "invalid_params errors: %s", ip)
	fields := map[string]bool{}
	for _, e := range errs {
		m, _ := e.(map[string]any)
		f, _ := m["field"].(string)
		fields[f] = true
		assert.NotEmpty(t, m["problem"], "errors entry without problem: %v", m)
		assert.NotEmpty(t, m["rule"], "errors entry without rule: %v", m)
	}
	assert.True(t, fields["amount"] && fields["colour"], "errors must name amount and colour: %s", ip)

	// preview_ready.
	p := su.check(preview(t, gw, "dev-alice", transfer, params), post, previewPath(transfer), "preview_ready")
	fp, opID := p.str("fingerprint"), p.str("operation_id")
	exp, _ := time.Parse(time.RFC3339, p.str("expires_at"))
	assert.True(t, exp.Before(time.Now().Add(11*time.Minute)), "the fingerprint must expire with the quote: %s", p.str("expires_at"))
	_, hasRecent := p.Body["recent_operation"]
	assert.False(t, hasRecent, "a first preview has no recent_operation")

	// fingerprint_invalid: garbage, and a one-byte change of the signature.
	su.check(confirm(t, gw, "dev-alice", transfer, "not-a-fingerprint", params), post, confirmPath(transfer), "fingerprint_invalid")
	dot := strings.IndexByte(fp, '.')
	require.Positive(t, dot)
	tampered := []byte(fp)
	if tampered[dot+1] == 'A' {
		tampered[dot+1] = 'B'
	} else {
		tampered[dot+1] = 'A'
	}
	su.check(confirm(t, gw, "dev-alice", transfer, string(tampered), params), post, confirmPath(transfer), "fingerprint_invalid")

	// subject_mismatch: bob confirms alice's fingerprint.
	su.check(confirm(t, gw, "dev-bob", transfer, fp, params), post, confirmPath(transfer), "subject_mismatch")
	// scope_mismatch: the transfer fingerprint at the legacy confirm.
	su.check(confirm(t, gw, "dev-alice", legacy, fp, params), post, confirmPath(legacy), "scope_mismatch")
	// None of them consumed the fingerprint or executed anything.
	assert.Equal(t, 0, executions(t, s, opID))
	assert.Equal(t, "unknown_operation", status(t, gw, "dev-alice", opID).str("status"))

	// completed.
	c := confirmed(confirm(t, gw, "dev-alice", transfer, fp, params), transfer, opID, false)
	assert.Equal(t, opID, c.str("operation_id"))
	ref := c.str("result_ref")

	// already_completed: the same confirm with the memo rewritten.
	params["memo"] = "rent, please"
	r := su.check(confirm(t, gw, "dev-alice", transfer, fp, params), post, confirmPath(transfer), "already_completed")
	assert.Equal(t, ref, r.str("result_ref"))
	assert.Equal(t, opID, r.str("operation_id"))
	st := su.check(status(t, gw, "dev-alice", opID), get, opPath(opID), "completed")
	assert.Equal(t, ref, st.str("result_ref"))

	// param_mismatch: the same fingerprint, another amount.
	mismatch := map[string]any{"amount": "99.00", "currency": "USD", "payee_id": "p-" + run}
	pm := su.check(confirm(t, gw, "dev-alice", transfer, fp, mismatch), post, confirmPath(transfer), "param_mismatch")
	assert.Equal(t, opID, pm.str("operation_id"))

	// unknown_operation: a random id, and alice's operation asked by bob.
	unknown := randomHex(16)
	su.check(status(t, gw, "dev-alice", unknown), get, opPath(unknown), "unknown_operation")
	su.check(status(t, gw, "dev-bob", opID), get, opPath(opID), "unknown_operation")

	// failed (amount > 10000), then already_failed.
	big := map[string]any{"amount": "20000", "currency": "USD", "payee_id": "big-" + run}
	bp := su.check(preview(t, gw, "dev-alice", transfer, big), post, previewPath(transfer), "preview_ready")
	bigID := bp.str("operation_id")
	confirmed(confirm(t, gw, "dev-alice", transfer, bp.str("fingerprint"), big), transfer, bigID, true)
	su.check(confirm(t, gw, "dev-alice", transfer, bp.str("fingerprint"), big), post, confirmPath(transfer), "already_failed")
	assert.Equal(t, 0, executions(t, s, bigID), "a refused transfer executed nothing")

	// repeat_unacknowledged: the amnesia guard.
	params["memo"] = "rent again?"
	rp2 := su.check(preview(t, gw, "dev-alice", transfer, params), post, previewPath(transfer), "preview_ready")
	recent, _ := rp2.Body["recent_operation"].(map[string]any)
	require.NotNilf(t, recent, "a repeated preview must carry recent_operation: %s", rp2)
	assert.Equal(t, opID, recent["operation_id"])
	assert.Equal(t, "completed", recent["state"])
	assert.Equal(t, ref, recent["result_ref"])
	assert.NotEmpty(t, recent["completed_at"])
	newID := rp2.str("operation_id")
	require.NotEqual(t, opID, newID)
	ru := su.check(confirmAck(transfer, rp2.str("fingerprint"), params, ""), post, confirmPath(transfer), "repeat_unacknowledged")
	ro, _ := ru.Body["recent_operation"].(map[string]any)
	assert.Equal(t, opID, ro["operation_id"])
	assert.Equal(t, 0, executions(t, s, newID), "an unacknowledged repeat executed")
	// A wrong acknowledgement is no acknowledgement.
	su.check(confirmAck(transfer, rp2.str("fingerprint"), params, unknown), post, confirmPath(transfer), "repeat_unacknowledged")
	confirmed(confirmAck(transfer, rp2.str("fingerprint"), params, opID), transfer, newID, false)
	assert.Equal(t, 1, executions(t, s, newID))
	assert.Equal(t, 1, executions(t, s, opID))

	// in_progress: the downstream holds its answer past the 2s confirm wait.
	setFaults(t, s, map[string]any{"latency_ms": 0, "fail_next": 0, "hang_after_commit_ms": 3500, "status_unavailable": true})
	slow := map[string]any{"amount": "3.00", "currency": "EUR", "payee_id": "slow-" + run}
	sp := su.check(preview(t, gw, "dev-alice", transfer, slow), post, previewPath(transfer), "preview_ready")
	slowID := sp.str("operation_id")
	su.check(confirm(t, gw, "dev-alice", transfer, sp.str("fingerprint"), slow), post, confirmPath(transfer), "in_progress")
	ip2 := su.check(status(t, gw, "dev-alice", slowID), get, opPath(slowID), "in_progress")
	assert.Equal(t, slowID, ip2.str("operation_id"))
	setFaults(t, s, map[string]any{"latency_ms": 0, "fail_next": 0, "hang_after_commit_ms": 0, "status_unavailable": true})
	su.check(waitStatus(t, gw, "dev-alice", slowID, "completed", "failed"), get, opPath(slowID), "completed")
	assert.Equal(t, 1, executions(t, s, slowID))

	// Echo-level errors. An unknown route and a wrong method have no
	// operation in the OpenAPI document to validate against (they go to the
	// gateway directly, not through Prism); the others do.
	nf := rawCall(t, get, s.GatewayURL+"/v1/nope", "dev-alice", nil)
	su.checkEcho(nf, "not_found")
	nf2 := rawCall(t, get, s.GatewayURL+"/nope", "", nil)
	su.checkEcho(nf2, "not_found")
	na := rawCall(t, get, s.GatewayURL+previewPath(transfer), "dev-alice", nil)
	su.checkEcho(na, "method_not_allowed")
	// Prism never answers a request whose body is not JSON, so the
	// malformed body goes to the gateway directly (kin-openapi validates it).
	mj := rawCall(t, post, s.GatewayURL+previewPath(transfer), "dev-alice", []byte(`{"params":`))
	su.checkDirect(mj, post, previewPath(transfer), "malformed_request")
	huge := []byte(`{"params":{"amount":"1","currency":"USD","payee_id":"p","memo":"` + strings.Repeat("x", 70<<10) + `"}}`)
	tl := rawCall(t, post, gw.GatewayURL+previewPath(transfer), "dev-alice", huge)
	su.check(tl, post, previewPath(transfer), "request_too_large")

	// needs_manual_review: the status tool, then a confirm of the same fingerprint.
	nmrDeadline := time.Now().Add(90 * time.Second)
	var nmr answer
	for {
		nmr = status(t, gw, "dev-alice", reviewID)
		if nmr.str("status") == "needs_manual_review" {
			break
		}
		require.Equalf(t, "in_progress", nmr.str("status"), "legacy operation before review: %s", nmr)
		require.Truef(t, time.Now().Before(nmrDeadline), "never needs_manual_review: %s", nmr)
		time.Sleep(250 * time.Millisecond)
	}
	su.check(nmr, get, opPath(reviewID), "needs_manual_review")
	nc := su.check(confirm(t, gw, "dev-alice", legacy, rp.str("fingerprint"), reviewParams), post, confirmPath(legacy), "needs_manual_review")
	assert.Equal(t, reviewID, nc.str("operation_id"))
	assert.Equal(t, 1, executions(t, s, reviewID), "the legacy transfer was re-sent")

	// The subset in Chinese.
	zh := []string{"Accept-Language", "zh"}
	su.checkZH(su.check(call(t, post, gw.GatewayURL+confirmPath(transfer), "dev-alice", map[string]any{"fingerprint": fp, "params": params}, zh...),
		post, confirmPath(transfer), "already_completed"), "already_completed")
	su.checkZH(su.check(call(t, post, gw.GatewayURL+confirmPath(legacy), "dev-alice", map[string]any{"fingerprint": rp.str("fingerprint"), "params": reviewParams}, zh...),
		post, confirmPath(legacy), "needs_manual_review"), "needs_manual_review")
	su.checkZH(su.check(call(t, post, gw.GatewayURL+confirmPath(transfer), "dev-alice", map[string]any{"fingerprint": fp, "params": mismatch}, zh...),
		post, confirmPath(transfer), "param_mismatch"), "param_mismatch")
	su.checkZH(su.check(call(t, post, gw.GatewayURL+previewPath(transfer), "dev-alice", map[string]any{"params": bad}, zh...),
		post, previewPath(transfer), "invalid_params"), "invalid_params")
	su.checkZH(su.check(call(t, post, gw.GatewayURL+previewPath(transfer), "", map[string]any{"params": params}, zh...),
		post, previewPath(transfer), "unauthenticated"), "unauthenticated")
	su.checkZH(su.check(call(t, post, gw.GatewayURL+confirmPath(transfer), "dev-alice", map[string]any{"fingerprint": "garbage", "params": params}, zh...),
		post, confirmPath(transfer), "fingerprint_invalid"), "fingerprint_invalid")

	// Resolve the review as an operator, leaving things clean.
	setFaults(t, s, noFaults)
	res := call(t, post, gw.GatewayURL+"/v1/ops/operations/"+reviewID+"/resolve", "dev-ops",
		map[string]any{"outcome": "completed", "result": map[string]any{"id": "manual-" + run, "status": "executed"}, "note": "checked the ledger"})
	require.Equalf(t, http.StatusOK, res.Code, "resolve: %s", res)
	require.Equal(t, "resolved", res.str("status"))
	su.validate(res, post, "/v1/ops/operations/"+reviewID+"/resolve")
	done := su.check(waitStatus(t, gw, "dev-alice", reviewID, "completed", "failed"), get, opPath(reviewID), "completed")
	assert.Equal(t, "manual-"+run, done.str("result_ref"))
	su.check(confirm(t, gw, "dev-alice", legacy, rp.str("fingerprint"), reviewParams), post, confirmPath(legacy), "already_completed")
	assert.Equal(t, 1, executions(t, s, reviewID))

	// temporarily_unavailable: the quote endpoint is slower than the
	// downstream timeout (5s), so preview cannot get a quote. The truth
	// store being down is the contract's other cause; taking down the
	// shared PostgreSQL is out of reach of one test.
	setFaults(t, s, map[string]any{"latency_ms": 7000, "fail_next": 0, "hang_after_commit_ms": 0, "status_unavailable": false})
	tu := su.check(preview(t, gw, "dev-alice", transfer, slow), post, previewPath(transfer), "temporarily_unavailable")
	_, hasFP := tu.Body["fingerprint"]
	assert.False(t, hasFP)
	setFaults(t, s, noFaults)

	// fingerprint_expired is not reachable here: the binary's clock cannot
	// be moved and the shortest fingerprint lives 10 minutes; it is covered
	// in-process.
}

// checkEcho checks an Echo-level answer on a route the OpenAPI document
// does not describe.
func (su *surface) checkEcho(a answer, want string) {
	t := su.t
	t.Helper()
	require.Equalf(t, want, a.str("status"), "%s", a)
	assert.Equalf(t, contractCodes[want], a.Code, "%s: %s", want, a)
	assert.NotEmpty(t, a.str("meaning"))
	assert.NotEmpty(t, a.str("instruction"))
	assert.NotEmpty(t, a.str("trace_id"))
	assert.Equal(t, false, a.Body["retryable"])
}
