package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/api/messages"

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
	detailMemberMissing    = "detail.member_missing"
	detailWorkflowEngine   = "detail.workflow_engine"
	detailRequestTimeout   = "detail.request_timeout"
	detailRequestRefused   = "detail.request_refused"
	detailPostgresDown     = "detail.postgres_unreachable"
)

// decodeBody reads the request body strictly into v: one JSON object, no
// unknown field, nothing after it. It returns a reply to send when the body
// is refused.
func decodeBody(c echo.Context, v any) (reply, bool) {
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		if errors.Is(err, errBodyTooLarge) {
			return newReply(status.RequestTooLarge), false
		}
		return malformed(detailBodyUnreadable, messages.Data{}), false
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return malformed(detailBodyEmpty, messages.Data{}), false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return describeJSONError(err), false
	}
	if _, err := dec.Token(); err != io.EOF {
		return malformed(detailJSONTrailing, messages.Data{}), false
	}
	return reply{}, true
}

// requireMember answers malformed_request naming member when raw, a
// member of the body, is absent or null.
func requireMember(member string, raw json.RawMessage) (reply, bool) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return memberMissingReply(member, "object"), false
	}
	return reply{}, true
}

// describeJSONError turns a decoding error into malformed_request with a
// short detail for the model.
func describeJSONError(err error) reply {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return malformed(detailJSONSyntax, messages.Data{Offset: syn.Offset, Err: syn.Error()})
	case errors.As(err, &typ):
		if typ.Field == "" {
			return malformed(detailJSONNotObject, messages.Data{})
		}
		return malformed(detailJSONType, messages.Data{Field: typ.Field, Expected: jsonTypeName(typ.Type.Kind().String()), Got: typ.Value})
	case errors.Is(err, io.ErrUnexpectedEOF):
		return malformed(detailJSONTruncated, messages.Data{})
	}
	// encoding/json has no type for it: `json: unknown field "x"`.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return malformed(detailJSONUnknownField, messages.Data{Field: strings.Trim(name, `"`)})
	}
	return malformed(detailJSONOther, messages.Data{Err: err.Error()})
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
