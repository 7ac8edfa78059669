package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/gateway"

	"github.com/oncegate/oncegate/status"
)

// errBodyTooLarge is what reading past the body limit returns.
var errBodyTooLarge = echo.ErrStatusRequestEntityTooLarge

// Message keys of the details of malformed_request and of other answers.
const (
	detailBodyUnreadable   = "detail.body_unreadable"
	detailBodyEmpty        = "detail.body_empty"
	detailJSONSyntax       = "detail.json_syntax"
	detailJSONType         = "detail.json_type"
	detailJSONNotObject    = "detail.json_not_object"
	detailJSONTruncated    = "detail.json_truncated"
	detailJSONUnknownField = "detail.json_unknown_field"
	detailJSONOther        = "detail.json_other"
	detailJSONTrailing     = "detail.json_trailing"
	detailJSONDuplicate    = "detail.json_duplicate_member"
	detailMemberMissing    = "detail.member_missing"
	detailWorkflowEngine   = "detail.workflow_engine"
	detailRequestTimeout   = "detail.request_timeout"
	detailRequestRefused   = "detail.request_refused"
	detailPostgresDown     = "detail.postgres_unreachable"
)

// decodeBody reads the request body strictly into v: one JSON object, no
// unknown field, no member twice, nothing after it. It returns a gateway.Answer to
// send when the body is refused. A membersBody is read by readMembers
// first, without reflection; what it gives up on, the strict decoder
// reads, and a body it accepts is refused still when a member repeats
// (duplicateMember): the strict decoder keeps the last, where a proxy or a
// log in front of the gateway may keep the first.
func decodeBody(c echo.Context, v any) (gateway.Answer, bool) {
	raw, r, ok := readRequestBody(c)
	if !ok {
		return r, false
	}
	return decodeBytes(raw, v)
}

// readRequestBody reads c's request body whole, or the answer refusing it
// (too large, unreadable).
func readRequestBody(c echo.Context) ([]byte, gateway.Answer, bool) {
	raw, err := readBody(c.Request().Body)
	if err != nil {
		if errors.Is(err, errBodyTooLarge) {
			return nil, gateway.NewAnswer(status.RequestTooLarge), false
		}
		return nil, malformed(detailBodyUnreadable, gateway.Words{}), false
	}
	return raw, gateway.Answer{}, true
}

// decodeBytes reads raw, a whole request body, strictly into v, as
// decodeBody says.
func decodeBytes(raw []byte, v any) (gateway.Answer, bool) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return malformed(detailBodyEmpty, gateway.Words{}), false
	}
	if m, ok := v.(membersBody); ok && readMembers(raw, m.slots()) {
		return gateway.Answer{}, true
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return describeJSONError(err), false
	}
	if _, err := dec.Token(); err != io.EOF {
		return malformed(detailJSONTrailing, gateway.Words{}), false
	}
	if name, ok := duplicateMember(raw); ok {
		return malformed(detailJSONDuplicate, gateway.Words{Field: name}), false
	}
	return gateway.Answer{}, true
}

// duplicateMember returns the first member of raw, a JSON object, whose
// name repeats an earlier member's as the strict decoder matches names
// (equal under Unicode case folding), and true; false when none repeats
// or raw is not an object it can read. It looks at the object's own
// members only: a value's members are its reader's to judge (params.Bind
// refuses a repeated param).
func duplicateMember(raw []byte) (string, bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw), bodyReaderOptions)
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return "", false
	}
	var names []string
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return "", false
		}
		name := tok.String()
		if slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, name) }) {
			return name, true
		}
		names = append(names, name)
		if err := dec.SkipValue(); err != nil {
			return "", false
		}
	}
	return "", false
}

// readBody reads body whole, as io.ReadAll does, into a buffer of
// bodyBuffers, and returns a copy of its size: not the room ReadAll starts
// with (512 bytes), kept as long as the body's params are, for a body of a
// hundred.
func readBody(body io.Reader) ([]byte, error) {
	buf := borrowBuffer()
	defer giveBackBuffer(buf)
	_, err := buf.ReadFrom(body)
	return bytes.Clone(buf.Bytes()), err
}

// requireMember answers malformed_request naming member when raw, a
// member of the body, is absent or null.
func requireMember(member string, raw json.RawMessage) (gateway.Answer, bool) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return memberMissingAnswer(member, "object"), false
	}
	return gateway.Answer{}, true
}

// describeJSONError turns a decoding error into malformed_request with a
// short detail for the model.
func describeJSONError(err error) gateway.Answer {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return malformed(detailJSONSyntax, gateway.Words{Offset: syn.Offset, Err: syn.Error()})
	case errors.As(err, &typ):
		if typ.Field == "" {
			return malformed(detailJSONNotObject, gateway.Words{})
		}
		return malformed(detailJSONType, gateway.Words{Field: typ.Field, Expected: jsonTypeName(typ.Type.Kind().String()), Got: typ.Value})
	case errors.Is(err, io.ErrUnexpectedEOF):
		return malformed(detailJSONTruncated, gateway.Words{})
	}
	// encoding/json has no type for it: `json: unknown field "x"`.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return malformed(detailJSONUnknownField, gateway.Words{Field: strings.Trim(name, `"`)})
	}
	return malformed(detailJSONOther, gateway.Words{Err: err.Error()})
}

func jsonTypeName(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "struct", "map":
		return "object"
	case "slice":
		return "array"
	}
	return kind
}

// memberSlot is one member of a request body that readMembers knows: its
// JSON name, exactly as the struct's tag spells it, and the field its value
// goes to (a string, or the value's bytes).
type memberSlot struct {
	name string
	str  *string
	raw  *json.RawMessage
}

// membersBody is a request body readMembers reads without reflection: the
// preview's and the confirm's, the two the gateway decodes on every call.
type membersBody interface {
	// slots returns the body's members, each pointing at its field.
	slots() []memberSlot
}

// bodyReaders reuses a jsontext decoder and its buffers across requests.
var bodyReaders = sync.Pool{New: func() any {
	r := &bodyReader{}
	r.dec = jsontext.NewDecoder(&r.rd, bodyReaderOptions)
	return r
}}

// bodyReaderOptions let a name repeat inside a value, as the strict
// decoder does (a value's bytes are its reader's to judge: params.Bind
// refuses a repeated param); readMembers refuses a repeated member itself.
var bodyReaderOptions = jsontext.AllowDuplicateNames(true)

// bodyReader is a pooled decoder of readMembers.
type bodyReader struct {
	rd  bytes.Reader
	dec *jsontext.Decoder
}

// readMembers reads raw, a whole request body, into the fields of slots and
// reports true when it is one JSON object whose every member is one of
// slots by its exact name, once, with a string value where the field is a
// string, and nothing after it. Those are bodies the strict decoder of
// decodeBody reads into the same fields; on anything else (a name in
// another case, a null, a duplicate, a syntax error, invalid UTF-8, an
// unknown member) it leaves the fields untouched and reports false, and
// the strict decoder reads raw and words its refusal.
func readMembers(raw []byte, slots []memberSlot) bool {
	r := bodyReaders.Get().(*bodyReader)
	defer func() {
		r.rd.Reset(nil)
		r.dec.Reset(&r.rd, bodyReaderOptions)
		bodyReaders.Put(r)
	}()
	r.rd.Reset(raw)
	r.dec.Reset(&r.rd, bodyReaderOptions)
	if tok, err := r.dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	if len(slots) > maxSlots {
		return false
	}
	var strs [maxSlots]string
	var raws [maxSlots]json.RawMessage
	var seen [maxSlots]bool
	for r.dec.PeekKind() != '}' {
		tok, err := r.dec.ReadToken()
		if err != nil || tok.Kind() != '"' {
			return false
		}
		name := tok.String()
		i := slices.IndexFunc(slots, func(s memberSlot) bool { return s.name == name })
		if i < 0 || seen[i] {
			return false
		}
		seen[i] = true
		if slots[i].str != nil {
			v, err := r.dec.ReadToken()
			if err != nil || v.Kind() != '"' {
				return false
			}
			strs[i] = v.String()
			continue
		}
		v, err := r.dec.ReadValue()
		if err != nil {
			return false
		}
		end := int(r.dec.InputOffset())
		raws[i] = raw[end-len(v) : end : end]
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return false
	}
	if _, err := r.dec.ReadToken(); !errors.Is(err, io.EOF) {
		return false
	}
	for i, s := range slots {
		switch {
		case !seen[i]:
		case s.str != nil:
			*s.str = strs[i]
		default:
			*s.raw = raws[i]
		}
	}
	return true
}

// maxSlots is the most members a membersBody declares.
const maxSlots = 4
