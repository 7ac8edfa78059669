package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/labstack/echo/v4"
)

// errBodyTooLarge is what reading past the body limit returns.
var errBodyTooLarge = echo.ErrStatusRequestEntityTooLarge

// decodeBody reads the request body strictly into v: one JSON object, no
// unknown field, nothing after it. It returns a reply to send when the body
// is refused.
func decodeBody(c echo.Context, v any) (reply, bool) {
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		if errors.Is(err, errBodyTooLarge) {
			return newReply(StatusRequestTooLarge), false
		}
		r := newReply(StatusMalformedRequest)
		r.data.Detail = "the body could not be read"
		return r, false
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		r := newReply(StatusMalformedRequest)
		r.data.Detail = "the body is empty"
		return r, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		r := newReply(StatusMalformedRequest)
		r.data.Detail = describeJSONError(err)
		return r, false
	}
	if dec.More() {
		r := newReply(StatusMalformedRequest)
		r.data.Detail = "extra data after the JSON object"
		return r, false
	}
	if _, err := dec.Token(); err != io.EOF {
		r := newReply(StatusMalformedRequest)
		r.data.Detail = "extra data after the JSON object"
		return r, false
	}
	return reply{}, true
}

// describeJSONError turns a decoding error into a short detail for the model.
func describeJSONError(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("invalid JSON at byte %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return fmt.Sprintf("field %q must be a JSON %s, not %s", typ.Field, jsonTypeName(typ.Type.Kind().String()), typ.Value)
		}
		return "the body must be a JSON object"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON is truncated"
	}
	return err.Error() // such as: json: unknown field "x"
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
