package params

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/internal/catalog"
)

// oracleBind is Bind as it was before the scanner, kept as the oracle the
// scanner is compared with: encoding/json's streaming decoder parses the
// params, and the free params come from a second json.Unmarshal into a
// map (what api.bindParams did).
func oracleBind(raw []byte, action *catalog.Action) (Bound, []FieldProblem) {
	fields := borrowBoundFields(action)
	defer fields.giveBack()
	obj, err := parseObjectDecoder(raw)
	b, problems := bindObject(obj, err, action, fields)
	if len(problems) > 0 {
		return Bound{}, problems
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return Bound{}, []FieldProblem{{Rule: RuleJSON, Problem: err.Error()}}
	}
	free := map[string]json.RawMessage{}
	for name := range action.Free {
		if v, ok := all[name]; ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			free[name] = v
		}
	}
	b.Free = free
	return b, nil
}

// sameBinding fails t unless Bind and the oracle agree on raw for action:
// the same canonical bytes, normalized values, free params, and problems
// (every field, in the same order).
func sameBinding(t *testing.T, raw []byte, action *catalog.Action) {
	t.Helper()
	got, gotProblems := Bind(raw, action)
	want, wantProblems := oracleBind(raw, action)
	sameProblems(t, raw, gotProblems, wantProblems, "the oracle")
	if !bytes.Equal(got.Canonical, want.Canonical) {
		t.Fatalf("%q: canonical %q, the oracle %q", raw, got.Canonical, want.Canonical)
	}
	if !reflect.DeepEqual(got.Normalized, want.Normalized) {
		t.Fatalf("%q: normalized %#v, the oracle %#v", raw, got.Normalized, want.Normalized)
	}
	if len(got.Free) != len(want.Free) {
		t.Fatalf("%q: free %q, the oracle %q", raw, got.Free, want.Free)
	}
	for name, v := range want.Free {
		if !bytes.Equal(got.Free[name], v) {
			t.Fatalf("%q: free %s is %q, the oracle %q", raw, name, got.Free[name], v)
		}
	}
}

// sameProblems fails t unless the problems got on raw are want, an
// oracle's, in the same order.
func sameProblems(t *testing.T, raw []byte, got, want []FieldProblem, oracle string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: problems %#v, %s %#v", raw, got, oracle, want)
	}
}

// sameValue fails t unless parseJSON and the decoder's parser agree on raw:
// the same value or the same problem.
func sameValue(t *testing.T, raw []byte) {
	t.Helper()
	got, gotErr := parseJSON(raw)
	want, wantErr := parseJSONDecoder(raw)
	if !reflect.DeepEqual(gotErr, wantErr) || !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: %#v, %v; the decoder %#v, %v", raw, got, gotErr, want, wantErr)
	}
}

// scanSeeds are inputs the scanner must read like the decoder, or give up
// on so that the decoder refuses them with its own problem.
var scanSeeds = []string{
	`{"amount":"12.50","currency":" usd ","payee_id":"p-1","memo":"asap"}`,
	` { "amount" : 12.5 , "currency":"usd", "payee_id" : "p-1", "memo" : "a\u00e9" } `,
	`{"amount":"12.50","currency":"USD","payee_id":"p-1","memo":null}`,
	`{"amount":"12.50","currency":"USD","payee_id":"p-1","memo":{"a":[1,2,{"b":null}]}}`,
	`{"amount":"12.50","currency":"USD","payee_id":"p-1","me\u006do":"x"}`,
	"{\"amount\":\"1\",\"currency\":\"USD\",\"payee_id\":\"p\",\"e\u0301\":1,\"\u00e9\":2}",
	`{"amount":1e0,"currency":"USD","payee_id":"p-1"}`,
	`{"amount":"1","currency":"USD","payee_id":"p-1","other":true}`,
	`{"amount":"1","amount":"2"}`,
	`{"amount":"1"} {"amount":"2"}`,
	`{"amount":"1"}x`,
	`{"amount":"\ud800","currency":"USD","payee_id":"p-1"}`,
	`{"amount":01}`,
	`{"amount":1,}`,
	`{"amount"}`,
	`{"amount":"1"`,
	`[1,2]`,
	`"just a string"`,
	`null`,
	``,
	`   `,
	`{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
	`{"memo":` + strings.Repeat(`{"a":`, MaxDepth) + `1` + strings.Repeat(`}`, MaxDepth) + `}`,
	`{"count":1,"id":"x","b":true,"i":"3","d":-0.0,"s":"ABC","note":"n","n":2}`,
	`{"count":1.5,"id":"","b":"yes","i":1e3,"d":"1,000"}`,
	"{\"amount\":\"1\xff\"}",
	`123456789012345678901234567890.000000000000001`,
	`{"amount":1e999,"currency":"USD","payee_id":"p-1"}`,
	`{"memo":"x"}`,
	`{"amoun":"1","currency":"USD","payee_id":"p-1"}`,
	`{"\u0061mount":"1","currency":"USD","payee_id":"p-1","amount ":2}`,
}

func TestScanMatchesDecoder(t *testing.T) {
	t.Parallel()
	for _, seed := range scanSeeds {
		for _, action := range []*catalog.Action{transferAction(), constrainedAction(), typedAction()} {
			sameBinding(t, []byte(seed), action)
		}
		sameValue(t, []byte(seed))
	}
}

// TestScanReadsValidParams proves the scanner is the path valid params
// take (the decoder only reads what it gives up on), and that it gives up
// on what the decoder alone may refuse.
func TestScanReadsValidParams(t *testing.T) {
	t.Parallel()
	_, members, ok := scanJSON([]byte(` {"amount":"12.50", "memo" : {"a": [1]}, "e\u0301":null} `))
	require.True(t, ok)
	assert.Equal(t, []member{
		{name: "amount", key: "amount", value: "12.50", raw: json.RawMessage(`"12.50"`)},
		{name: "memo", key: "memo", value: map[string]any{"a": []any{json.Number("1")}}, raw: json.RawMessage(`{"a": [1]}`)},
		{name: "e\u0301", key: "\u00e9", raw: json.RawMessage(`null`)},
	}, members)
	for _, refused := range []string{
		`{"a":1,"a":2}`, "{\"e\u0301\":1,\"\u00e9\":2}", `{"a":1} {}`, `{"a":1}x`, `{"a":`, ``,
		`{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`, "\"\xff\"",
	} {
		_, _, ok := scanJSON([]byte(refused))
		assert.False(t, ok, "%q", refused)
	}
	deep := strings.Repeat(`{"a":`, MaxDepth) + `1` + strings.Repeat(`}`, MaxDepth)
	_, _, ok = scanJSON([]byte(deep))
	assert.True(t, ok, "objects nested MaxDepth deep")
	_, _, ok = scanJSON([]byte(`{"b":` + deep + `}`))
	assert.False(t, ok, "objects nested deeper than MaxDepth")
	many := bytes.Repeat([]byte("1,"), MaxMembers)
	_, _, ok = scanJSON([]byte(`[` + string(many[:len(many)-1]) + `]`))
	assert.True(t, ok, "MaxMembers elements")
	_, _, ok = scanJSON([]byte(`[` + string(many) + `1]`))
	assert.False(t, ok, "more than MaxMembers elements")
	names := make([]string, MaxMembers+1)
	for i := range names {
		names[i] = `"k` + strconv.Itoa(i) + `":1`
	}
	_, _, ok = scanJSON([]byte(`{` + strings.Join(names[:MaxMembers], ",") + `}`))
	assert.True(t, ok, "MaxMembers members")
	_, _, ok = scanJSON([]byte(`{` + strings.Join(names, ",") + `}`))
	assert.False(t, ok, "more than MaxMembers members")
	for range 2 { // a scanner reused forgets the keys it indexed
		_, _, ok = scanJSON([]byte(`{` + strings.Join(names[:40], ",") + `}`))
		assert.True(t, ok, "many members, scanned again")
	}
	// jsontext refuses a name written twice; a name that is another's
	// after NFC is the scanner's to refuse, also among many members.
	for _, at := range []int{0, 15, 16, 39} {
		many := slices.Insert(slices.Clone(names[:40]), at, "\"\u00e9\":1")
		_, _, ok = scanJSON([]byte(`{` + strings.Join(many, ",") + ",\"e\u0301\":2}"))
		assert.False(t, ok, "a duplicate after NFC of member %d among many members", at)
	}
}

// FuzzScanMatchesDecoder is the differential fuzz target of the scanner:
// for any input, Bind gives what the decoder-only oracle gives (canonical
// bytes, normalized values, free params, problems in order), and parseJSON
// what the decoder's parser gives.
func FuzzScanMatchesDecoder(f *testing.F) {
	for _, seed := range scanSeeds {
		f.Add([]byte(seed))
	}
	actions := []*catalog.Action{transferAction(), constrainedAction(), typedAction()}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, action := range actions {
			sameBinding(t, raw, action)
		}
		sameValue(t, raw)
	})
}

// The bound fields of a call keep its members' room for the next call, and
// nothing of its params once it is done: not the members of valid params,
// not those a refused object wrote past them; a room grown too large is
// dropped.
func TestBoundFieldsKeepNoMembers(t *testing.T) {
	t.Parallel()
	action := transferAction()
	valid := `{"amount":"12.50","currency":"usd","payee_id":"p-1","memo":"rent"}`
	for name, raw := range map[string]string{
		"valid":          valid,
		"refused longer": `{"amount":"12.50","currency":"usd","payee_id":"p-1","memo":"rent","x":1,"x":2}`,
		"past the room":  `{"amount":"1","currency":"usd","payee_id":"p","memo":"m","x":1,"y":2,"z":3,"w":4,"v":5}`,
		"too many kept":  `{` + manyMembers(5*membersHint) + `}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fields := &boundFields{}
			fields.read(action.Bind)
			for _, r := range []string{valid, raw} {
				_, _ = parseObject([]byte(r), fields)
			}
			fields.empty()
			assert.Empty(t, fields.all)
			assert.Empty(t, fields.members)
			assert.LessOrEqual(t, cap(fields.members), maxKeptMembers)
			for i, m := range fields.members[:cap(fields.members)] {
				assert.Zero(t, m, "member %d kept", i)
			}
		})
	}
}

// manyMembers is n members "m0":0,"m1":1,… of an object.
func manyMembers(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `"m` + strconv.Itoa(i) + `":` + strconv.Itoa(i)
	}
	return strings.Join(parts, ",")
}
