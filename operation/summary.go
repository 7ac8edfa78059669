package operation

import (
	"bytes"
	"encoding/json"
	"strings"
)

// summaryMax bounds a summary's length in bytes (the Web UI shows one line).
const summaryMax = 200

// Summary returns a one-line text for the Web UI, such as
// "payments.transfer 12.5 USD to p-1": the scope, the params' summaryField
// (such as amount), its currency when the params have one, and " to " the
// payee (payee_id, payee or recipient) when they have one. The gateway passes
// it as StartWorkflowOptions.StaticSummary and as operation.Input.Summary.
// Params that are not a JSON object yield the scope alone.
func Summary(scope string, params json.RawMessage, summaryField string) string {
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		return scope
	}
	parts := []string{scope}
	if v := scalar(obj[summaryField]); summaryField != "" && v != "" {
		parts = append(parts, v)
		if c := scalar(obj["currency"]); c != "" {
			parts = append(parts, c)
		}
	}
	for _, f := range []string{"payee_id", "payee", "recipient"} {
		if p := scalar(obj[f]); p != "" {
			parts = append(parts, "to", p)
			break
		}
	}
	s := strings.Join(parts, " ")
	if len(s) > summaryMax {
		s = strings.ToValidUTF8(s[:summaryMax-3], "") + "..."
	}
	return s
}

// scalar renders a JSON string or number as text, trimmed, or "".
func scalar(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return strings.Join(strings.Fields(s), " ")
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		return n.String()
	}
	return ""
}
