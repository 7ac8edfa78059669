package tools_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/api/tools"
	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/internal/catalog"
)

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// devCatalog loads the dev catalog of the repository.
func devCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	t.Setenv("DOWNSTREAM_URL", "http://127.0.0.1:8090")
	cat, err := catalog.Load("../../deployments/catalog.dev.yaml", 2*time.Second)
	require.NoError(t, err)
	return cat
}

// typedCatalog has one action with every field type and an optional field.
func typedCatalog() *catalog.Catalog {
	return &catalog.Catalog{Actions: map[string]*catalog.Action{
		"shop.order": {
			Scope:       "shop.order",
			Description: "Order goods",
			Bind: map[string]catalog.Field{
				"sku":      {Type: catalog.TypeString, Required: true, Normalize: []string{"trim", "lower"}},
				"quantity": {Type: catalog.TypeInteger, Required: true},
				"gift":     {Type: catalog.TypeBoolean},
				"price":    {Type: catalog.TypeDecimal, Required: true},
			},
			Free: map[string]catalog.FreeField{"note": {}, "tip": {Type: catalog.TypeDecimal}},
		},
	}}
}

// resolve compiles a tool's input schema after a JSON round trip, as a
// client receives it.
func resolve(t *testing.T, schema map[string]any) *jsonschema.Resolved {
	t.Helper()
	raw, err := json.Marshal(schema)
	require.NoError(t, err)
	var s jsonschema.Schema
	require.NoError(t, json.Unmarshal(raw, &s))
	rs, err := s.Resolve(nil)
	require.NoError(t, err)
	return rs
}

func instance(t *testing.T, s string) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(s), &v))
	return v
}

func byName(ts []tools.Tool) map[string]tools.Tool {
	m := make(map[string]tools.Tool, len(ts))
	for _, t := range ts {
		m[t.Name] = t
	}
	return m
}

func TestToolsDevCatalog(t *testing.T) {
	ts := tools.Tools(devCatalog(t))
	require.NoError(t, tools.Check(ts))
	names := make([]string, len(ts))
	for i, tl := range ts {
		names[i] = tl.Name
		assert.Regexp(t, nameRE, tl.Name)
		assert.NotEmpty(t, tl.Description)
		assert.Equal(t, "object", tl.InputSchema["type"])
		assert.Equal(t, false, tl.InputSchema["additionalProperties"])
	}
	assert.Equal(t, []string{
		"payments_legacy_transfer_preview", "payments_legacy_transfer_confirm",
		"payments_mcp_legacy_transfer_preview", "payments_mcp_legacy_transfer_confirm",
		"payments_mcp_transfer_preview", "payments_mcp_transfer_confirm",
		"payments_payout_preview", "payments_payout_confirm",
		"payments_transfer_preview", "payments_transfer_confirm", "payments_wire_preview", "payments_wire_confirm",
		"get_operation_status",
	}, names)

	m := byName(ts)
	preview := m["payments_transfer_preview"]
	assert.Equal(t, tools.KindPreview, preview.Kind)
	assert.Equal(t, "payments.transfer", preview.Scope)
	assert.Equal(t, []string{"params"}, preview.InputSchema["required"])
	params := preview.InputSchema["properties"].(map[string]any)["params"].(map[string]any)
	assert.Equal(t, []string{"amount", "currency", "payee_id"}, params["required"])
	assert.Equal(t, false, params["additionalProperties"])
	props := params["properties"].(map[string]any)
	assert.ElementsMatch(t, []string{"amount", "currency", "payee_id", "memo"}, keys(props))
	amount := props["amount"].(map[string]any)
	assert.Equal(t, "string", amount["type"], "a decimal is a string, no type union")
	assert.Contains(t, amount["description"], "exact decimal")
	assert.Contains(t, amount["description"], "Must be greater than 0 and at most 1000000.")
	currency := props["currency"].(map[string]any)
	assert.Equal(t, catalog.CurrencyPattern, currency["pattern"])
	payee := props["payee_id"].(map[string]any)
	assert.Equal(t, 64, payee["maxLength"])
	assert.Contains(t, payee["description"], "U+200B")
	assert.Equal(t, 500, props["memo"].(map[string]any)["maxLength"])
	assert.Contains(t, props["memo"].(map[string]any)["description"], "not bound")

	confirm := m["payments_transfer_confirm"]
	assert.Equal(t, tools.KindConfirm, confirm.Kind)
	assert.Equal(t, []string{"fingerprint", "params"}, confirm.InputSchema["required"])
	cprops := confirm.InputSchema["properties"].(map[string]any)
	assert.Equal(t, params, cprops["params"])
	assert.Contains(t, cprops["fingerprint"].(map[string]any)["description"], "never invent")
	assert.Contains(t, cprops, "acknowledge_repeat_of")

	status := m[tools.StatusToolName]
	assert.Equal(t, tools.KindStatus, status.Kind)
	assert.Equal(t, []string{"operation_id"}, status.InputSchema["required"])

	// The descriptions teach the protocol.
	for _, want := range []string{"preview", "fingerprint", "poll_after_ms", "get_operation_status",
		"needs_manual_review", "param_mismatch", "fingerprint_expired", "repeat_unacknowledged",
		"recent_operation", "already_completed"} {
		assert.Contains(t, confirm.Description, want)
	}
	assert.Contains(t, preview.Description, "executes NOTHING")
	assert.Contains(t, confirm.Description, "payments_transfer_preview")
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestSchemasValidate(t *testing.T) {
	m := byName(tools.Tools(typedCatalog()))
	preview := resolve(t, m["shop_order_preview"].InputSchema)
	confirm := resolve(t, m["shop_order_confirm"].InputSchema)
	status := resolve(t, m[tools.StatusToolName].InputSchema)

	tests := []struct {
		name   string
		schema *jsonschema.Resolved
		in     string
		ok     bool
	}{
		{"preview full", preview, `{"params":{"sku":" A-1 ","quantity":"2","gift":true,"price":"12.50","note":"hi","tip":"-1.5"}}`, true},
		{"preview decimal as number", preview, `{"params":{"sku":"a","quantity":"2","price":12.5}}`, false},
		{"preview integer as number", preview, `{"params":{"sku":"a","quantity":2,"price":"12.5"}}`, false},
		{"preview decimal with exponent", preview, `{"params":{"sku":"a","quantity":"2","price":"1e3"}}`, false},
		{"preview optional left out", preview, `{"params":{"sku":"a","quantity":"1","price":"1"}}`, true},
		{"preview missing required", preview, `{"params":{"sku":"a","quantity":1}}`, false},
		{"preview unknown field", preview, `{"params":{"sku":"a","quantity":"1","price":"1","amount":"9"}}`, false},
		{"preview no params", preview, `{}`, false},
		{"preview extra top-level", preview, `{"params":{"sku":"a","quantity":"1","price":"1"},"fingerprint":"x"}`, false},
		{"preview decimal not a number", preview, `{"params":{"sku":"a","quantity":"1","price":"twelve"}}`, false},
		{"preview fractional integer", preview, `{"params":{"sku":"a","quantity":"1.5","price":"1"}}`, false},
		{"preview boolean as string", preview, `{"params":{"sku":"a","quantity":"1","price":"1","gift":"yes"}}`, false},
		{"confirm", confirm, `{"fingerprint":"abc.def","params":{"sku":"a","quantity":"1","price":"1"}}`, true},
		{"confirm ack", confirm, `{"fingerprint":"abc.def","params":{"sku":"a","quantity":"1","price":"1"},"acknowledge_repeat_of":"0123456789abcdef0123456789abcdef"}`, true},
		{"confirm bad ack", confirm, `{"fingerprint":"abc.def","params":{"sku":"a","quantity":"1","price":"1"},"acknowledge_repeat_of":"op-1"}`, false},
		{"confirm no fingerprint", confirm, `{"params":{"sku":"a","quantity":"1","price":"1"}}`, false},
		{"status", status, `{"operation_id":"0123456789abcdef0123456789abcdef"}`, true},
		{"status upper hex", status, `{"operation_id":"0123456789ABCDEF0123456789ABCDEF"}`, false},
		{"status missing", status, `{}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.schema.Validate(instance(t, tc.in))
			if tc.ok {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
		})
	}
}

func TestDefinitions(t *testing.T) {
	cat := devCatalog(t)
	t.Run("openai", func(t *testing.T) {
		defs, err := tools.Definitions(cat, tools.FormatOpenAI)
		require.NoError(t, err)
		raw, err := json.Marshal(defs)
		require.NoError(t, err)
		var got []map[string]any
		require.NoError(t, json.Unmarshal(raw, &got))
		require.Len(t, got, devToolCount(t))
		for _, d := range got {
			assert.Equal(t, "function", d["type"])
			fn := d["function"].(map[string]any)
			assert.Regexp(t, nameRE, fn["name"])
			assert.NotEmpty(t, fn["description"])
			assert.Equal(t, false, fn["strict"])
			params := fn["parameters"].(map[string]any)
			assert.Equal(t, "object", params["type"])
			resolve(t, params)
		}
	})
	t.Run("anthropic", func(t *testing.T) {
		defs, err := tools.Definitions(cat, tools.FormatAnthropic)
		require.NoError(t, err)
		raw, err := json.Marshal(defs)
		require.NoError(t, err)
		var got []map[string]any
		require.NoError(t, json.Unmarshal(raw, &got))
		require.Len(t, got, devToolCount(t))
		for _, d := range got {
			assert.ElementsMatch(t, []string{"name", "description", "input_schema"}, keys(d))
			assert.Regexp(t, nameRE, d["name"])
			resolve(t, d["input_schema"].(map[string]any))
		}
	})
	t.Run("unknown format", func(t *testing.T) {
		_, err := tools.Definitions(cat, "gemini")
		assert.ErrorIs(t, err, tools.ErrUnknownFormat)
	})
	t.Run("name too long", func(t *testing.T) {
		long := &catalog.Catalog{Actions: map[string]*catalog.Action{
			strings.Repeat("x", 60): {Bind: map[string]catalog.Field{}},
		}}
		_, err := tools.Definitions(long, tools.FormatOpenAI)
		assert.Error(t, err)
	})
	t.Run("names collide", func(t *testing.T) {
		dup := &catalog.Catalog{Actions: map[string]*catalog.Action{
			"a.b": {}, "a_b": {},
		}}
		_, err := tools.Definitions(dup, tools.FormatOpenAI)
		assert.Error(t, err)
	})
}

func TestHandler(t *testing.T) {
	h := tools.Handler(devCatalog(t))
	get := func(target, lang string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, target, nil)
		if lang != "" {
			req.Header.Set("Accept-Language", lang)
		}
		rec := httptest.NewRecorder()
		h(rec, req)
		return rec
	}
	t.Run("default is openai", func(t *testing.T) {
		rec := get("/v1/tools", "")
		require.Equal(t, http.StatusOK, rec.Code)
		assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
		var got []map[string]any
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
		require.Len(t, got, devToolCount(t))
		assert.Equal(t, "function", got[0]["type"])
	})
	t.Run("anthropic", func(t *testing.T) {
		rec := get("/v1/tools?format=anthropic", "")
		require.Equal(t, http.StatusOK, rec.Code)
		var got []map[string]any
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
		require.Len(t, got, devToolCount(t))
		assert.Contains(t, got[0], "input_schema")
	})
	for _, lang := range []string{"", "zh-CN"} {
		t.Run("unknown format "+lang, func(t *testing.T) {
			rec := get("/v1/tools?format=gemini", lang)
			require.Equal(t, http.StatusBadRequest, rec.Code)
			var a map[string]any
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &a))
			assert.Equal(t, "invalid_request", a["status"])
			assert.Equal(t, false, a["retryable"])
			assert.NotEmpty(t, a["meaning"])
			assert.NotEmpty(t, a["instruction"])
			assert.NotEmpty(t, a["trace_id"])
			if lang != "" {
				assert.Contains(t, a["meaning"], "不支持")
			}
		})
	}
	t.Run("POST refused", func(t *testing.T) {
		rec := httptest.NewRecorder()
		h(rec, httptest.NewRequest(http.MethodPost, "/v1/tools", nil))
		assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	})
}

// devToolCount is the number of tools of the dev catalog: a preview and a
// confirm tool per action, and get_operation_status.
func devToolCount(t *testing.T) int {
	t.Helper()
	return 2*len(devCatalog(t).Actions) + 1
}

// IsOperationID answers as OperationIDPattern does, on every byte at every
// position of an id and on the lengths around 32.
func TestIsOperationIDIsThePattern(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(tools.OperationIDPattern)
	id := strings.Repeat("0123456789abcdef", 2)
	cases := []string{"", id[:31], id, id + "0", "\n" + id, id + "\n", strings.ToUpper(id)}
	for _, pos := range []int{0, 7, 31} {
		for c := 0; c < 256; c++ {
			cases = append(cases, id[:pos]+string([]byte{byte(c)})+id[pos+1:])
		}
	}
	for _, s := range cases {
		assert.Equal(t, re.MatchString(s), fingerprint.IsNonce(s), "%q", s)
	}
}

func FuzzIsOperationID(f *testing.F) {
	re := regexp.MustCompile(tools.OperationIDPattern)
	f.Add(strings.Repeat("0123456789abcdef", 2))
	f.Add("not-an-id")
	f.Fuzz(func(t *testing.T, s string) {
		if re.MatchString(s) != fingerprint.IsNonce(s) {
			t.Fatalf("%q: pattern %v, IsOperationID %v", s, re.MatchString(s), fingerprint.IsNonce(s))
		}
	})
}

// TestConfirmNamesMandateOnlyWhereAllowed: a confirm tool takes mandate_id
// only for an action whose approval policy allows standing mandates.
func TestConfirmNamesMandateOnlyWhereAllowed(t *testing.T) {
	cat := devCatalog(t)
	wire := cat.Actions["payments.wire"]
	require.False(t, wire.Approval.Mandates)
	props := func() map[string]any {
		return byName(tools.Tools(cat))["payments_wire_confirm"].InputSchema["properties"].(map[string]any)
	}
	assert.NotContains(t, props(), "mandate_id")
	allowed := *wire
	allowed.Approval.Mandates = true
	cat.Actions["payments.wire"] = &allowed
	assert.Contains(t, props(), "mandate_id")
}
