package openapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/api/openapi"
	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/internal/catalog"
)

func TestDocumentLoadsAndValidates(t *testing.T) {
	doc, err := openapi.Load(context.Background())
	require.NoError(t, err)
	for _, p := range []string{
		"/v1/actions/{scope}/preview", "/v1/actions/{scope}/confirm", "/v1/operations/{operation_id}",
		"/v1/tools", "/mcp", "/healthz", "/readyz", "/metrics",
		"/v1/ops/operations", "/v1/ops/operations/{operation_id}", "/v1/ops/operations/{operation_id}/resolve",
		"/openapi.json", "/.well-known/jwks.json",
	} {
		assert.NotNil(t, doc.Paths.Find(p), p)
	}
	answer := doc.Components.Schemas["Answer"].Value
	require.NotNil(t, answer)
	var statuses []string
	for _, s := range answer.Properties["status"].Value.Enum {
		statuses = append(statuses, s.(string))
	}
	for _, s := range []string{"preview_ready", "completed", "already_completed", "failed", "already_failed",
		"in_progress", "needs_manual_review", "param_mismatch", "subject_mismatch", "scope_mismatch",
		"fingerprint_expired", "fingerprint_invalid", "invalid_params", "unauthenticated", "unknown_action",
		"repeat_unacknowledged", "temporarily_unavailable", "unknown_operation", "not_found",
		"method_not_allowed", "malformed_request", "request_too_large", "internal_error", "forbidden",
		"not_awaiting_review", "resolution_sent", "resolution_payload", "downstream_refused", "resolved", "already_resolved"} {
		assert.Contains(t, statuses, s)
	}
	assert.Contains(t, doc.Components.SecuritySchemes, "bearer")
	assert.NotEmpty(t, doc.Servers, "servers")
}

func TestHandler(t *testing.T) {
	rec := httptest.NewRecorder()
	openapi.Handler()(rec, httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	assert.True(t, json.Valid(rec.Body.Bytes()))
	assert.Equal(t, openapi.Document(), rec.Body.Bytes())
}

const base = `"meaning":"m","instruction":"i","trace_id":"t"`
const op = `"operation_id":"0123456789abcdef0123456789abcdef"`

// rc is the receipt member of a terminal answer (its shape: three base64url segments).
const rc = `,"receipt":"eyJhbGciOiJFZERTQSJ9.e30.c2ln"`

const preview = `{"scope":"payments.transfer","params":{"amount":"12.5","currency":"USD","payee_id":"p-1"},"free":{"memo":"rent"},"quote":{"amount":"12.5","fee":"0.25","expires_at":"2030-01-01T00:00:00Z"}}`

func TestValidateResponse(t *testing.T) {
	v, err := openapi.NewValidator()
	require.NoError(t, err)
	json := http.Header{"Content-Type": {"application/json; charset=UTF-8"}}
	replayed := http.Header{"Content-Type": {"application/json"}, "Idempotent-Replayed": {"true"}}
	tests := []struct {
		name         string
		method, path string
		status       int
		header       http.Header
		body         string
		ok           bool
	}{
		{"preview_ready", "POST", "/v1/actions/payments.transfer/preview", 200, json,
			`{"status":"preview_ready",` + base + `,"retryable":false,"fingerprint":"a.b","expires_at":"2030-01-01T00:00:00Z","preview":` + preview + `}`, true},
		{"preview_ready with a numeric amount", "POST", "/v1/actions/payments.transfer/preview", 200, json,
			`{"status":"preview_ready",` + base + `,"retryable":false,"fingerprint":"a.b","expires_at":"2030-01-01T00:00:00Z","preview":{"scope":"s","params":{"amount":12.5}}}`, false},
		{"preview_ready with an amount in exponent form", "POST", "/v1/actions/payments.transfer/preview", 200, json,
			`{"status":"preview_ready",` + base + `,"retryable":false,"fingerprint":"a.b","expires_at":"2030-01-01T00:00:00Z","preview":{"scope":"s","params":{"amount":"1.25e1"}}}`, false},
		{"downstream_refused", "POST", "/v1/actions/payments.transfer/preview", 422, json,
			`{"status":"downstream_refused",` + base + `,"retryable":false,"reason":"invalid_request: amount must be positive","errors":[{"field":"amount","problem":"must be positive"}]}`, true},
		{"downstream_refused without reason", "POST", "/v1/actions/payments.transfer/preview", 422, json,
			`{"status":"downstream_refused",` + base + `,"retryable":false}`, false},
		{"null recent_operation", "POST", "/v1/actions/payments.transfer/preview", 200, json,
			`{"status":"preview_ready",` + base + `,"retryable":false,"fingerprint":"a.b","expires_at":"2030-01-01T00:00:00Z","preview":` + preview + `,"recent_operation":null}`, false},
		{"preview_ready with recent_operation", "POST", "/v1/actions/payments.transfer/preview", 200, json,
			`{"status":"preview_ready",` + base + `,"retryable":false,"fingerprint":"a.b","expires_at":"2030-01-01T00:00:00Z","preview":` + preview + `,"recent_operation":{` + op + `,"state":"DONE","result_ref":"tr_1","completed_at":"2030-01-01T00:00:00Z"}}`, true},
		{"preview_ready without fingerprint", "POST", "/v1/actions/payments.transfer/preview", 200, json,
			`{"status":"preview_ready",` + base + `,"retryable":false,"expires_at":"2030-01-01T00:00:00Z","preview":{}}`, false},
		{"completed", "POST", "/v1/actions/payments.transfer/confirm", 200, json,
			`{"status":"completed",` + base + `,"retryable":false,` + op + `,"result":{"id":"tr_1"},"result_ref":"tr_1"` + rc + `}`, true},
		{"completed without a receipt", "POST", "/v1/actions/payments.transfer/confirm", 200, json,
			`{"status":"completed",` + base + `,"retryable":false,` + op + `,"result":{"id":"tr_1"},"result_ref":"tr_1"}`, false},
		{"completed with a receipt not a JWS", "POST", "/v1/actions/payments.transfer/confirm", 200, json,
			`{"status":"completed",` + base + `,"retryable":false,` + op + `,"result":{"id":"tr_1"},"result_ref":"tr_1","receipt":"a.b"}`, false},
		{"already_completed", "POST", "/v1/actions/payments.transfer/confirm", 200, replayed,
			`{"status":"already_completed",` + base + `,"retryable":false,` + op + `,"result":{"id":"tr_1"},"result_ref":"tr_1"` + rc + `}`, true},
		{"failed", "POST", "/v1/actions/payments.transfer/confirm", 200, json,
			`{"status":"failed",` + base + `,"retryable":false,` + op + `,"reason":"insufficient_funds"` + rc + `}`, true},
		{"failed without reason", "POST", "/v1/actions/payments.transfer/confirm", 200, json,
			`{"status":"failed",` + base + `,"retryable":false,` + op + rc + `}`, false},
		{"in_progress", "POST", "/v1/actions/payments.transfer/confirm", 202, json,
			`{"status":"in_progress",` + base + `,"retryable":false,` + op + `,"poll_with":"get_operation_status","poll_after_ms":2000}`, true},
		{"in_progress as 200", "POST", "/v1/actions/payments.transfer/confirm", 200, json,
			`{"status":"in_progress",` + base + `,"retryable":false,` + op + `,"poll_with":"get_operation_status","poll_after_ms":2000}`, false},
		{"in_progress without poll_after_ms", "POST", "/v1/actions/payments.transfer/confirm", 202, json,
			`{"status":"in_progress",` + base + `,"retryable":false,` + op + `,"poll_with":"get_operation_status"}`, false},
		{"param_mismatch", "POST", "/v1/actions/payments.transfer/confirm", 422, json,
			`{"status":"param_mismatch",` + base + `,"retryable":false,` + op + `}`, true},
		{"repeat_unacknowledged", "POST", "/v1/actions/payments.transfer/confirm", 409, json,
			`{"status":"repeat_unacknowledged",` + base + `,"retryable":false,"recent_operation":{` + op + `,"state":"DONE"}}`, true},
		{"fingerprint_expired", "POST", "/v1/actions/payments.transfer/confirm", 410, json,
			`{"status":"fingerprint_expired",` + base + `,"retryable":false}`, true},
		{"subject_mismatch", "POST", "/v1/actions/payments.transfer/confirm", 403, json,
			`{"status":"subject_mismatch",` + base + `,"retryable":false}`, true},
		{"invalid_params", "POST", "/v1/actions/payments.transfer/preview", 400, json,
			`{"status":"invalid_params",` + base + `,"retryable":true,"errors":[{"field":"amount","problem":"required"}]}`, true},
		{"temporarily_unavailable", "POST", "/v1/actions/payments.transfer/confirm", 503, json,
			`{"status":"temporarily_unavailable",` + base + `,"retryable":true,"retry_after_ms":1000}`, true},
		{"temporarily_unavailable without retry_after_ms", "POST", "/v1/actions/payments.transfer/confirm", 503, json,
			`{"status":"temporarily_unavailable",` + base + `,"retryable":true}`, false},
		{"unauthenticated", "GET", "/v1/operations/0123456789abcdef0123456789abcdef", 401, json,
			`{"status":"unauthenticated",` + base + `,"retryable":true}`, true},
		{"status completed", "GET", "/v1/operations/0123456789abcdef0123456789abcdef", 200, json,
			`{"status":"completed",` + base + `,"retryable":false,` + op + `,"result":{},"result_ref":"tr_1"` + rc + `}`, true},
		{"unknown_operation", "GET", "/v1/operations/0123456789abcdef0123456789abcdef", 404, json,
			`{"status":"unknown_operation",` + base + `,"retryable":false}`, true},
		{"wrong status for code", "GET", "/v1/operations/0123456789abcdef0123456789abcdef", 404, json,
			`{"status":"completed",` + base + `,"retryable":false}`, false},
		{"unknown status", "POST", "/v1/actions/payments.transfer/confirm", 409, json,
			`{"status":"duplicate_request",` + base + `,"retryable":false}`, false},
		{"missing meaning", "POST", "/v1/actions/payments.transfer/confirm", 410, json,
			`{"status":"fingerprint_expired","instruction":"i","trace_id":"t","retryable":false}`, false},
		{"retryable not a boolean", "POST", "/v1/actions/payments.transfer/confirm", 410, json,
			`{"status":"fingerprint_expired",` + base + `,"retryable":"no"}`, false},
		{"undocumented code", "POST", "/v1/actions/payments.transfer/confirm", 418, json,
			`{"status":"fingerprint_expired",` + base + `,"retryable":false}`, false},
		{"not json", "POST", "/v1/actions/payments.transfer/confirm", 200, json, `duplicate request`, false},
		{"tools openai", "GET", "/v1/tools?format=openai", 200, nil,
			`[{"type":"function","function":{"name":"get_operation_status","description":"d","parameters":{"type":"object"},"strict":false}}]`, true},
		{"tools anthropic", "GET", "/v1/tools?format=anthropic", 200, nil,
			`[{"name":"get_operation_status","description":"d","input_schema":{"type":"object"}}]`, true},
		{"tools bad name", "GET", "/v1/tools", 200, nil,
			`[{"name":"get operation status","description":"d","input_schema":{"type":"object"}}]`, false},
		{"tools invalid_request", "GET", "/v1/tools?format=gemini", 400, nil,
			`{"status":"invalid_request",` + base + `,"retryable":false}`, true},
		{"mcp 401", "POST", "/mcp", 401, json, `{"status":"unauthenticated",` + base + `,"retryable":true}`, true},
		{"mcp sse", "POST", "/mcp", 200, http.Header{"Content-Type": {"text/event-stream"}}, "event: message\ndata: {}\n\n", true},
		{"healthz", "GET", "/healthz", 200, nil, `{"status":"alive"}`, true},
		{"readyz 503", "GET", "/readyz", 503, nil, `{"status":"not_ready","meaning":"m"}`, true},
		{"metrics", "GET", "/metrics", 200, http.Header{"Content-Type": {"text/plain; version=0.0.4; charset=utf-8"}}, "# HELP x\nx 1\n", true},
		{"ops list", "GET", "/v1/ops/operations?state=needs_manual_review", 200, nil,
			`{"status":"operations_listed",` + base + `,"retryable":false,"operations":[{` + op + `}]}`, true},
		{"ops forbidden", "GET", "/v1/ops/operations", 403, nil, `{"status":"forbidden",` + base + `,"retryable":false}`, true},
		{"ops show", "GET", "/v1/ops/operations/0123456789abcdef0123456789abcdef", 200, nil,
			`{"status":"operation_found",` + base + `,"retryable":false,` + op + `}`, true},
		{"resolve", "POST", "/v1/ops/operations/0123456789abcdef0123456789abcdef/resolve", 200, nil,
			`{"status":"resolution_sent",` + base + `,"retryable":false,` + op + `}`, true},
		{"resolve conflict", "POST", "/v1/ops/operations/0123456789abcdef0123456789abcdef/resolve", 409, nil,
			`{"status":"not_awaiting_review",` + base + `,"retryable":false}`, true},
		{"resolved", "POST", "/v1/ops/operations/0123456789abcdef0123456789abcdef/resolve", 200, nil,
			`{"status":"resolved",` + base + `,"retryable":false,` + op + `,"state":"DONE","decision":{"operator":"ops","outcome":"completed"}}`, true},
		{"already resolved", "POST", "/v1/ops/operations/0123456789abcdef0123456789abcdef/resolve", 409, nil,
			`{"status":"already_resolved",` + base + `,"retryable":false,"decision":{"operator":"ops","outcome":"completed"}}`, true},
		{"resolution payload", "POST", "/v1/ops/operations/0123456789abcdef0123456789abcdef/resolution-payload", 200, nil,
			`{"status":"resolution_payload",` + base + `,"retryable":false,` + op + `,"workflow_id":"0123456789abcdef0123456789abcdef",` +
				`"signal":"resolve","input":{"outcome":"failed","reason":"x","operator":"ops","token":"a.b:c"},"expires_at":"2026-01-02T03:04:05Z"}`, true},
		{"resolution payload without its input", "POST", "/v1/ops/operations/0123456789abcdef0123456789abcdef/resolution-payload", 200, nil,
			`{"status":"resolution_payload",` + base + `,"retryable":false,` + op + `,"signal":"resolve"}`, false},
		{"unknown path", "GET", "/v2/nothing", 200, nil, `{}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := v.ValidateResponse(tc.method, tc.path, tc.status, tc.header, []byte(tc.body))
			if tc.ok {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
		})
	}
}

// TestNullableHasType walks every schema of the document: OpenAPI 3.0's
// nullable means nothing without a type, and validators such as Prism then
// skip the whole schema without a word.
func TestNullableHasType(t *testing.T) {
	var doc any
	require.NoError(t, json.Unmarshal(openapi.Document(), &doc))
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch n := v.(type) {
		case map[string]any:
			if nullable, _ := n["nullable"].(bool); nullable {
				assert.Contains(t, n, "type", "%s: nullable without type", path)
			}
			for k, c := range n {
				walk(path+"/"+k, c)
			}
		case []any:
			for i, c := range n {
				walk(fmt.Sprintf("%s/%d", path, i), c)
			}
		}
	}
	walk("#", doc)
}

// TestRedoclyLint lints the document with an independent implementation,
// Redocly's CLI (its recommended rules), from npm: zero errors.
func TestRedoclyLint(t *testing.T) {
	redocly := testenv.NPMTool(t, testenv.RedoclyCLI, "redocly")
	path := filepath.Join(t.TempDir(), "openapi.json")
	require.NoError(t, os.WriteFile(path, openapi.Document(), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, redocly, "lint", "--format=json", path)
	cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true")
	out, err := cmd.Output()
	var report struct {
		Totals struct {
			Errors int `json:"errors"`
		} `json:"totals"`
		Problems []struct {
			RuleID   string `json:"ruleId"`
			Severity string `json:"severity"`
			Message  string `json:"message"`
			Location []struct {
				Pointer string `json:"pointer"`
			} `json:"location"`
		} `json:"problems"`
	}
	require.NoErrorf(t, json.Unmarshal(out, &report), "redocly lint output (exit %v): %s", err, out)
	for _, p := range report.Problems {
		if p.Severity == "error" {
			where := ""
			if len(p.Location) > 0 {
				where = p.Location[0].Pointer
			}
			t.Errorf("redocly %s at %s: %s", p.RuleID, where, p.Message)
		}
	}
	assert.Zero(t, report.Totals.Errors, "redocly lint errors")
	assert.NoError(t, err, "redocly lint exit status")
}

// TestFieldErrorRulesAreTheConstraints checks that the document's
// FieldError.rule names every rule a catalog constraint's problems carry,
// so that a new constraint cannot be left out of it.
func TestFieldErrorRulesAreTheConstraints(t *testing.T) {
	t.Parallel()
	doc, err := openapi.Load(context.Background())
	require.NoError(t, err)
	rule := doc.Components.Schemas["FieldError"].Value.Properties["rule"].Value.Description
	for _, c := range catalog.Constraints() {
		assert.Regexp(t, `\b`+regexp.QuoteMeta(c.Rule())+`\b`, rule, "FieldError.rule does not name the rule of constraint %s", c.Key())
	}
}
