package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/status"
)

// strictDecode is decodeBody's strict decoder alone: the oracle readMembers
// is compared with.
func strictDecode(raw []byte, v any) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return false
	}
	_, err := dec.Token()
	return err == io.EOF
}

// membersBodies are fresh values of every membersBody.
func membersBodies() []membersBody {
	return []membersBody{&previewBody{}, &confirmBody{}}
}

// sameMembers fails t unless readMembers, where it accepts raw, reads what
// the strict decoder reads, and leaves its fields untouched where it does
// not; it reports whether readMembers accepted raw.
func sameMembers(t *testing.T, raw []byte, fresh func() membersBody) bool {
	t.Helper()
	fast, strict := fresh(), fresh()
	ok := readMembers(raw, fast.slots())
	if !ok {
		if !reflect.DeepEqual(fast, fresh()) {
			t.Fatalf("%q: readMembers gave up but changed the body: %#v", raw, fast)
		}
		return false
	}
	if !strictDecode(raw, strict) {
		t.Fatalf("%q: readMembers accepted what the strict decoder refuses: %#v", raw, fast)
	}
	if !reflect.DeepEqual(fast, strict) {
		t.Fatalf("%q: readMembers read %#v, the strict decoder %#v", raw, fast, strict)
	}
	return true
}

// bodySeeds are bodies readMembers must read as the strict decoder does,
// or give up on: valid ones, and each way a body can differ from the plain
// case (a name's case or escapes, a null, a duplicate, a wrong type,
// invalid UTF-8, lone surrogates, something after the object).
var bodySeeds = []string{
	`{"params":{"amount":"12.50","currency":" usd ","payee_id":"p-1","memo":"rent"}}`,
	` { "params" : { "a" : [ 1 , 2 ] } } ` + "\n",
	`{"fingerprint":"v1.abc.def","params":{"amount":"1"}}`,
	`{"params":{"amount":"1"},"fingerprint":"v1.abc.def","acknowledge_repeat_of":"` + strings.Repeat("a", 32) + `"}`,
	`{"\u0070arams":{"x":"\u00e9\ud83d\ude00"}}`,
	`{"fingerprint":"v1\u002eabc","params":1}`,
	`{"params":"a string"}`,
	`{"params":[]}`,
	`{"params":null}`,
	`{"fingerprint":null,"params":{}}`,
	`{"Params":{}}`,
	`{"PARAMS":{},"params":{}}`,
	`{"params":{},"params":{}}`,
	`{"fingerprint":1,"params":{}}`,
	`{"params":{},"other":1}`,
	`{"params":{}} {}`,
	`{"params":{}} x`,
	`{"params":{}`,
	`{"params":{"a":"\ud800"}}`,
	"{\"params\":{\"a\":\"\xff\"}}",
	"{\"fingerprint\":\"\xff\",\"params\":{}}",
	`{"params":{"a":1,"a":2}}`,
	`{}`,
	`[]`,
	`"params"`,
	`{"params":1e999}`,
	`{"params":-0.0}`,
	`{"params":{"a":1},}`,
}

func TestReadMembersReadsWhatTheStrictDecoderReads(t *testing.T) {
	accepted := map[string]bool{}
	for _, seed := range bodySeeds {
		for _, body := range membersBodies() {
			fresh := func() membersBody { return reflect.New(reflect.TypeOf(body).Elem()).Interface().(membersBody) }
			if sameMembers(t, []byte(seed), fresh) {
				accepted[reflect.TypeOf(body).Elem().Name()+" "+seed] = true
			}
		}
	}
	// The common bodies take the fast way; the unusual ones are left to the
	// strict decoder, which words the refusal or reads them as before.
	for _, want := range []string{
		`previewBody {"params":{"amount":"12.50","currency":" usd ","payee_id":"p-1","memo":"rent"}}`,
		`confirmBody {"fingerprint":"v1.abc.def","params":{"amount":"1"}}`,
		`confirmBody {"params":{"amount":"1"},"fingerprint":"v1.abc.def","acknowledge_repeat_of":"` + strings.Repeat("a", 32) + `"}`,
		`previewBody {"\u0070arams":{"x":"\u00e9\ud83d\ude00"}}`,
		`previewBody {"params":{"a":1,"a":2}}`,
	} {
		assert.True(t, accepted[want], "readMembers gave up on %s", want)
	}
	for _, refused := range []string{`{"Params":{}}`, `{"fingerprint":null,"params":{}}`,
		`{"params":{}} {}`, `{"params":{},"params":{}}`, `{"params":{"a":"\ud800"}}`, "{\"params\":{\"a\":\"\xff\"}}"} {
		assert.False(t, accepted["previewBody "+refused] || accepted["confirmBody "+refused], "readMembers read %s", refused)
	}
}

func FuzzReadMembers(f *testing.F) {
	for _, seed := range bodySeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		sameMembers(t, raw, func() membersBody { return &previewBody{} })
		sameMembers(t, raw, func() membersBody { return &confirmBody{} })
	})
}

// Each slot is named as its field's json tag and points at that field:
// a member renamed in the struct and not in slots would be refused by the
// fast way and read by the strict one, a slot pointing at another field
// would read a member into the wrong field.
func TestSlotsAreTheStructsMembers(t *testing.T) {
	for _, body := range membersBodies() {
		v := reflect.ValueOf(body).Elem()
		slots := body.slots()
		require.Equal(t, v.NumField(), len(slots), "%T", body)
		require.LessOrEqual(t, len(slots), maxSlots)
		for i := range v.NumField() {
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
			slot := slots[i]
			assert.Equal(t, name, slot.name, "%T field %d", body, i)
			addr := v.Field(i).Addr().Interface()
			if slot.str != nil {
				assert.Same(t, addr, slot.str, "%T.%s", body, v.Type().Field(i).Name)
			} else {
				assert.Same(t, addr, slot.raw, "%T.%s", body, v.Type().Field(i).Name)
			}
		}
	}
}

// readBody reads what io.ReadAll reads, and fails as it fails, for bodies
// of every size and readers that give a byte at a time, fail half-way or
// end with their last bytes; what it returns is the caller's own, not the
// pooled buffer's (it stays as it was while other bodies are read). A
// failed read's bytes are only a prefix of the body: decodeBody drops
// them.
func TestReadBodyIsReadAll(t *testing.T) {
	t.Parallel()
	var kept [][]byte
	var wants []string
	for _, size := range []int{0, 1, 100, 511, 512, 513, bodySize, bodySize + 1, BodyLimit, maxPooledBody + 1} {
		// Each body's bytes differ from the one before it.
		data := bytes.Repeat([]byte{byte('a' + len(kept)%26)}, size)
		for name, reader := range map[string]func() io.Reader{
			"whole":          func() io.Reader { return bytes.NewReader(data) },
			"a byte at once": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) },
			"data and EOF":   func() io.Reader { return iotest.DataErrReader(bytes.NewReader(data)) },
			"failing":        func() io.Reader { return io.MultiReader(bytes.NewReader(data), iotest.ErrReader(errBodyTooLarge)) },
			"half then fail": func() io.Reader { return iotest.TimeoutReader(iotest.HalfReader(bytes.NewReader(data))) },
		} {
			want, wantErr := io.ReadAll(reader())
			got, err := readBody(reader())
			require.Equal(t, wantErr, err, "%s of %d bytes", name, size)
			if err != nil {
				// What was read before the failure depends on the room
				// each read was given; the caller drops it.
				require.True(t, bytes.HasPrefix(data, got), "%s of %d bytes", name, size)
				want = got
			}
			require.Equal(t, string(want), string(got), "%s of %d bytes", name, size)
			kept, wants = append(kept, got), append(wants, string(want))
			data = bytes.Repeat([]byte{byte('a' + len(kept)%26)}, size)
		}
	}
	for i := range kept {
		assert.Equal(t, wants[i], string(kept[i]), "body %d changed by later reads", i)
	}
}

func TestDecodeBodyRefusesAMemberTwice(t *testing.T) {
	fp := `"fingerprint":"v1.abc.def"`
	tests := []struct {
		name, body, member string
	}{
		{"the same name twice", `{"fingerprint":"garbage",` + fp + `,"params":{}}`, "fingerprint"},
		{"params twice", `{"params":{"amount":"1"},"params":{"amount":"2"}}`, "params"},
		{"names equal under case folding", `{"params":{},"PARAMS":{}}`, "PARAMS"},
		{"names equal under Unicode folding (the Kelvin sign)", `{"acknowledge_repeat_of":"a","ac\u212Anowledge_repeat_of":"b",` + fp + `,"params":{}}`, "ac\u212Anowledge_repeat_of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req confirmBody
			r, ok := decodeBody(bodyContext(tt.body), &req)
			require.False(t, ok)
			assert.Equal(t, status.MalformedRequest, r.Status)
			assert.Equal(t, detailJSONDuplicate, r.Detail)
			assert.Equal(t, tt.member, r.Words.Field)
		})
	}
	t.Run("a repeated name inside a value is its reader's to judge", func(t *testing.T) {
		var req confirmBody
		_, ok := decodeBody(bodyContext(`{`+fp+`,"params":{"amount":"1","amount":"2"}}`), &req)
		assert.True(t, ok)
		assert.Equal(t, "v1.abc.def", req.Fingerprint)
	})
	t.Run("every member once passes", func(t *testing.T) {
		var req confirmBody
		_, ok := decodeBody(bodyContext(`{"Fingerprint":"v1.abc.def","params":{}}`), &req)
		assert.True(t, ok, "the strict decoder's path, no name repeated")
		assert.Equal(t, "v1.abc.def", req.Fingerprint)
	})
}

// bodyContext is an Echo context of a POST whose body is body.
func bodyContext(body string) echo.Context {
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	return echo.New().NewContext(req, httptest.NewRecorder())
}
