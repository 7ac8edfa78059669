package tools_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/api/tools"
)

func TestDecimalPatternFollowsConstraints(t *testing.T) {
	m := byName(tools.Tools(devCatalog(t)))
	params := m["payments_transfer_preview"].InputSchema["properties"].(map[string]any)["params"].(map[string]any)
	amount := params["properties"].(map[string]any)["amount"].(map[string]any)
	re := regexp.MustCompile(amount["pattern"].(string))
	for _, ok := range []string{"12.50", "12.5", "0.01", "0.5", "0.001", "1", "1000000", "999999.99", "1200"} {
		assert.True(t, re.MatchString(ok), "%s must be admitted by %s", ok, re)
	}
	for _, bad := range []string{"-12.50", "-1", "0", "0.00", "0.0", "00.5", "01", "1e3", "+1", "12.", ".5", "12.5050", "10000000", "1,000", " 1", "NaN", ""} {
		assert.False(t, re.MatchString(bad), "%s must be refused by %s", bad, re)
	}

	typed := byName(tools.Tools(typedCatalog()))["shop_order_preview"].InputSchema["properties"].(map[string]any)["params"].(map[string]any)["properties"].(map[string]any)
	assert.Equal(t, `^-?(0|[1-9][0-9]*)$`, typed["quantity"].(map[string]any)["pattern"], "an unbounded integer")
	assert.Equal(t, `^-?(0|[1-9][0-9]*)(\.[0-9]+)?$`, typed["price"].(map[string]any)["pattern"], "an unbounded decimal")
}

// strictDefs returns the strict-mode definitions as a client receives them.
func strictDefs(t *testing.T) []map[string]any {
	t.Helper()
	defs, err := tools.DefinitionsStrict(devCatalog(t))
	require.NoError(t, err)
	raw, err := json.Marshal(defs)
	require.NoError(t, err)
	var out []map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}

// walkStrict checks one schema against the rules of OpenAI's strict mode.
func walkStrict(t *testing.T, path string, s map[string]any) {
	t.Helper()
	for k := range s {
		assert.Containsf(t, tools.StrictKeywords, k, "%s: keyword %s is not kept in strict mode", path, k)
	}
	if typ, has := s["type"]; has {
		_, isString := typ.(string)
		assert.Truef(t, isString, "%s: type %v is a union", path, typ)
	}
	if props, ok := s["properties"].(map[string]any); ok {
		assert.Equalf(t, false, s["additionalProperties"], "%s: additionalProperties", path)
		var names []string
		for n, p := range props {
			names = append(names, n)
			walkStrict(t, path+"."+n, p.(map[string]any))
		}
		slices.Sort(names)
		req, _ := s["required"].([]any)
		var got []string
		for _, r := range req {
			got = append(got, r.(string))
		}
		slices.Sort(got)
		assert.Equalf(t, names, got, "%s: every property is required", path)
	}
	if anyOf, ok := s["anyOf"].([]any); ok {
		for i, a := range anyOf {
			walkStrict(t, path+".anyOf["+string(rune('0'+i))+"]", a.(map[string]any))
		}
	}
}

// strictCases are instances for the strict schemas of the dev catalog.
var strictCases = []struct {
	Tool string         `json:"tool"`
	Args map[string]any `json:"args"`
	OK   bool           `json:"ok"`
}{
	{"payments_transfer_preview", map[string]any{"params": map[string]any{"amount": "12.50", "currency": "USD", "payee_id": "p-1", "memo": nil}}, true},
	{"payments_transfer_preview", map[string]any{"params": map[string]any{"amount": "12.50", "currency": "USD", "payee_id": "p-1", "memo": "rent"}}, true},
	{"payments_transfer_preview", map[string]any{"params": map[string]any{"amount": "12.50", "currency": "USD", "payee_id": "p-1"}}, false},
	{"payments_transfer_preview", map[string]any{"params": map[string]any{"amount": 12.5, "currency": "USD", "payee_id": "p-1", "memo": nil}}, false},
	{"payments_transfer_preview", map[string]any{"params": map[string]any{"amount": "0", "currency": "USD", "payee_id": "p-1", "memo": nil}}, false},
	{"payments_transfer_preview", map[string]any{"params": map[string]any{"amount": "1", "currency": "USD", "payee_id": string(bytes.Repeat([]byte("p"), 65)), "memo": nil}}, false},
	{"payments_transfer_preview", map[string]any{"params": map[string]any{"amount": "1", "currency": "USD", "payee_id": "p", "memo": string(bytes.Repeat([]byte("m"), 501))}}, false},
	{"payments_transfer_confirm", map[string]any{"fingerprint": "a.b", "params": map[string]any{"amount": "1", "currency": "EUR", "payee_id": "p", "memo": nil}, "acknowledge_repeat_of": nil}, true},
	{"payments_transfer_confirm", map[string]any{"fingerprint": "a.b", "params": map[string]any{"amount": "1", "currency": "EUR", "payee_id": "p", "memo": nil}, "acknowledge_repeat_of": "0123456789abcdef0123456789abcdef"}, true},
	{"payments_transfer_confirm", map[string]any{"fingerprint": "", "params": map[string]any{"amount": "1", "currency": "EUR", "payee_id": "p", "memo": nil}, "acknowledge_repeat_of": nil}, false},
	{"get_operation_status", map[string]any{"operation_id": "0123456789abcdef0123456789abcdef"}, true},
	{"get_operation_status", map[string]any{"operation_id": "op"}, false},
}

func TestStrictDefinitions(t *testing.T) {
	defs := strictDefs(t)
	require.Len(t, defs, devToolCount(t))
	compiled := map[string]*jsonschema.Schema{}
	for _, d := range defs {
		fn := d["function"].(map[string]any)
		name := fn["name"].(string)
		assert.Equal(t, true, fn["strict"], name)
		params := fn["parameters"].(map[string]any)
		walkStrict(t, name, params)

		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		require.NoError(t, c.AddResource(name+".json", params))
		sch, err := c.Compile(name + ".json")
		require.NoError(t, err, name)
		compiled[name] = sch
	}
	for _, tc := range strictCases {
		raw, _ := json.Marshal(tc.Args)
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		require.NoError(t, err)
		err = compiled[tc.Tool].Validate(inst)
		assert.Equalf(t, tc.OK, err == nil, "%s %s: %v", tc.Tool, raw, err)
	}

	// The neutral (Anthropic and MCP) schemas keep their shape.
	plain := byName(tools.Tools(devCatalog(t)))
	assert.Equal(t, []string{"params"}, plain["payments_transfer_preview"].InputSchema["required"])
	assert.NotContains(t, plain["payments_transfer_confirm"].InputSchema["required"], "acknowledge_repeat_of")
}

// TestStrictDefinitionsAjv compiles the strict schemas with Ajv in strict
// mode (strictTypes refuses type unions), an implementation independent of
// this code. It installs Ajv with npm into the user cache once; it is
// skipped only when node or npm is absent.
func TestStrictDefinitionsAjv(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed")
	}
	cache, err := os.UserCacheDir()
	require.NoError(t, err)
	dir := filepath.Join(cache, "oncegate", "ajv8")
	pkg := filepath.Join(dir, "node_modules", "ajv")
	if _, err := os.Stat(filepath.Join(pkg, "package.json")); err != nil {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		out, err := exec.Command(npm, "install", "--prefix", dir, "--no-audit", "--no-fund", "--silent", "ajv@8").CombinedOutput()
		require.NoError(t, err, "npm install ajv: %s", out)
	}
	defs, err := tools.DefinitionsStrict(devCatalog(t))
	require.NoError(t, err)
	body, err := json.Marshal(defs)
	require.NoError(t, err)
	cases, err := json.Marshal(strictCases)
	require.NoError(t, err)
	casesFile := filepath.Join(t.TempDir(), "cases.json")
	require.NoError(t, os.WriteFile(casesFile, cases, 0o644))
	cmd := exec.Command(node, filepath.Join("testdata", "ajv_strict.js"), pkg, casesFile)
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "ajv strict: %s", out)
	t.Logf("%s", out)
}

func TestHandlerStrict(t *testing.T) {
	h := tools.Handler(devCatalog(t))
	get := func(target string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h(rec, httptest.NewRequest(http.MethodGet, target, nil))
		return rec
	}
	rec := get("/v1/tools?format=openai&strict=true")
	require.Equal(t, http.StatusOK, rec.Code)
	var got []map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
	require.Len(t, got, devToolCount(t))
	assert.Equal(t, true, got[0]["function"].(map[string]any)["strict"])

	rec = get("/v1/tools?format=openai&strict=false")
	require.Equal(t, http.StatusOK, rec.Code)
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
	assert.Equal(t, false, got[0]["function"].(map[string]any)["strict"])

	for _, target := range []string{"/v1/tools?format=anthropic&strict=true", "/v1/tools?strict=maybe"} {
		rec = get(target)
		assert.Equal(t, http.StatusBadRequest, rec.Code, target)
		assert.Contains(t, rec.Body.String(), "invalid_request", target)
	}
}
