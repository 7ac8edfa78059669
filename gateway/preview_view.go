package gateway

import (
	"encoding/json"
)

// PreviewView is the body's preview of a preview_ready answer: the action,
// its normalized bound params and its free params, and the downstream's
// quote when there is one, every number as a string of its exact text. It
// keeps the maps as Bind and the quote left them: the body writes it
// directly (api's body writer), without copying them as StringNumbers
// would, and anything else encodes it through MarshalJSON, which writes the
// same bytes.
type PreviewView struct {
	// Scope is the action.
	Scope string
	// Params are the normalized bound params.
	Params map[string]any
	// Free are the free params as the agent wrote them.
	Free map[string]json.RawMessage
	// Quote is the downstream's quote; nil when the action has none.
	Quote map[string]any
}

// AsMap is the view as a map with numbers as strings (StringNumbers): what
// it encodes to.
func (v PreviewView) AsMap() map[string]any {
	m := map[string]any{"scope": v.Scope, "params": StringNumbers(v.Params), "free": StringNumbers(v.Free)}
	if v.Quote != nil {
		m["quote"] = StringNumbers(v.Quote)
	}
	return m
}

// MarshalJSON encodes the view as its map.
func (v PreviewView) MarshalJSON() ([]byte, error) { return json.Marshal(v.AsMap()) }
