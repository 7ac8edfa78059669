package api

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/internal/plainjson"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// marshalEach is the body as json.Marshal writes each key and value, the
// bytes orderedBody must keep writing.
func marshalEach(status, meaning, instruction string, retryable bool, traceID, opID string, fields map[string]any) []byte {
	var b bytes.Buffer
	put := func(k string, v any) {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(v)
		if err != nil {
			vb, _ = json.Marshal(err.Error())
		}
		b.Write(vb)
	}
	b.WriteByte('{')
	put("status", status)
	put("meaning", meaning)
	put("instruction", instruction)
	put("retryable", retryable)
	put("trace_id", traceID)
	if opID != "" {
		put("operation_id", opID)
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		put(k, fields[k])
	}
	b.WriteByte('}')
	return b.Bytes()
}

// bodyOf is orderedBody's bytes, written after what a reused buffer
// already holds.
func bodyOf(status, meaning, instruction string, retryable bool, traceID, opID string, fields map[string]any) []byte {
	var b bytes.Buffer
	b.WriteString("held")
	orderedBody(&b, status, []byte(meaning), []byte(instruction), retryable, traceID, opID, fields)
	return bytes.TrimPrefix(b.Bytes(), []byte("held"))
}

// The body is byte for byte what json.Marshal writes of each key and value:
// HTML characters escaped, raw JSON compacted, a value that cannot be
// encoded answered by its error's text, large bodies whole.
func TestOrderedBodyIsMarshalsBytes(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("x"), 3*bodySize)
	for name, fields := range map[string]map[string]any{
		"none":             nil,
		"plain":            {"result_ref": "tr_1", "poll_after_ms": int64(2000), "retryable_too": true},
		"html and unicode": {"reason": "<script>&'\"</script>", "zh": "预览 \u2028 \u0001"},
		"raw JSON":         {"result": json.RawMessage("{ \"b\" : 1,\n \"a\": [ \"<\" ] }"), "null": json.RawMessage("null")},
		"nested":           {"preview": map[string]any{"params": map[string]any{"amount": "12.5"}, "free": map[string]any{}}},
		"nested, written directly": {"preview": map[string]any{"z": nil, "b": true, "n": int64(-7), "s": "<&>", "k \u00e9": "v",
			"raw": json.RawMessage(`"memo"`), "deep": map[string]any{"y": map[string]any{}, "x": "1"}}},
		"nested, raw html":       {"preview": map[string]any{"raw": json.RawMessage(`"<b>"`)}},
		"nested, raw spaced":     {"preview": map[string]any{"raw": json.RawMessage(` "x" `)}},
		"nested, raw escaped":    {"preview": map[string]any{"raw": json.RawMessage(`"a\"b"`)}},
		"nested, raw object":     {"preview": map[string]any{"raw": json.RawMessage(`{ "a" : 1 }`)}},
		"nested, other kinds":    {"preview": map[string]any{"f": 1.5, "list": []any{"a", 1}}},
		"nested, unencodable":    {"preview": map[string]any{"a": "ok", "bad": func() {}}, "after": "yes"},
		"unencodable":            {"bad": func() {}, "ok": "yes"},
		"larger than the buffer": {"big": string(big)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want := marshalEach("completed", "m <b>", "i & j", false, "0af7651916cd43dd8448eb211c80319c", "0123456789abcdef0123456789abcdef", fields)
			got := bodyOf("completed", "m <b>", "i & j", false, "0af7651916cd43dd8448eb211c80319c", "0123456789abcdef0123456789abcdef", fields)
			require.Equal(t, string(want), string(got))
			assert.True(t, json.Valid(got))
		})
	}
	assert.Equal(t, string(marshalEach("s", "m", "i", true, "t", "", nil)), string(bodyOf("s", "m", "i", true, "t", "", nil)))
}

func BenchmarkOrderedBody(b *testing.B) {
	fields := map[string]any{"result": json.RawMessage(`{"id":"tr_1","status":"executed"}`), "result_ref": "tr_1",
		"receipt": string(bytes.Repeat([]byte("r"), 700))}
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		orderedBody(&buf, "completed", []byte("The operation completed."), []byte("Tell the user it is done."), false,
			"0af7651916cd43dd8448eb211c80319c", "0123456789abcdef0123456789abcdef", fields)
	}
}

// writePlain writes a string itself only when json.Marshal would write the
// same bytes: every byte value alone and in a text, printable or not.
func TestWritePlainIsMarshalsBytes(t *testing.T) {
	t.Parallel()
	texts := []string{"", "plain text, 12.50 USD.", "a\"b", "a\\b", "<", ">", "&", "\u2028", "é", "预览", "\x7f", "\xff"}
	for c := range 256 {
		texts = append(texts, string([]byte{byte(c)}), "ab"+string([]byte{byte(c)})+"cd")
	}
	for _, s := range texts {
		var b bytes.Buffer
		want, err := json.Marshal(s)
		require.NoError(t, err)
		if writePlain(&b, s) {
			assert.Equal(t, string(want), b.String(), "%q", s)
		} else {
			assert.Zero(t, b.Len(), "%q: nothing written when refused", s)
		}
	}
	var b bytes.Buffer
	assert.True(t, writePlain(&b, "ok"), "printable ASCII is written")
	assert.Equal(t, `"ok"`, b.String())
}

// plain is true only for strings encoding/json writes unchanged between
// quotes, and for every printable ASCII byte but the five it escapes
// (others, such as non-ASCII letters, are left to the encoder).
func TestPlainIsWhatTheEncoderKeeps(t *testing.T) {
	t.Parallel()
	keeps := func(s string) bool {
		b, err := json.Marshal(s)
		require.NoError(t, err)
		return string(b) == `"`+s+`"`
	}
	for c := range 256 {
		s := string([]byte{byte(c)})
		printable := c >= 0x20 && c <= 0x7e && !strings.ContainsRune(`"\<>&`, rune(c))
		assert.Equal(t, printable, plainjson.Plain(s), "byte %#x", c)
		assert.True(t, !plainjson.Plain(s) || keeps(s), "byte %#x", c)
	}
	for _, s := range []string{"", "tr_9909865f9a9c02a8", "a b-c.d/e:f", "a<b", "x\"y", "é", "tab\there", "end\\"} {
		assert.True(t, !plainjson.Plain(s) || keeps(s), s)
		assert.Equal(t, plainjson.Plain(s), plainjson.Plain([]byte(s)), s)
	}
	assert.True(t, plainjson.Plain("a b-c.d/e:f"))
	// Every byte at every place of a string long enough to be tested
	// eight bytes at a time, after plain bytes of every value.
	var plainBytes []byte
	for c := range 256 {
		if plainjson.Plain(string([]byte{byte(c)})) {
			plainBytes = append(plainBytes, byte(c))
		}
	}
	for c := range 256 {
		for at := range 24 {
			b := make([]byte, 24)
			for i := range b {
				b[i] = plainBytes[(c*7+i*13+at)%len(plainBytes)]
			}
			b[at] = byte(c)
			want := plainjson.Plain(string([]byte{byte(c)}))
			assert.Equal(t, want, plainjson.Plain(string(b)), "byte %#x at %d of %q", c, at, b)
			assert.Equal(t, want, plainjson.Plain(b), "byte %#x at %d of %q", c, at, b)
		}
	}
}
