package plan

import (
	"encoding/json"
	"slices"
	"strings"
)

// BusinessState says where a downstream's answer holds its business state
// and which values mean succeeded, failed and pending.
type BusinessState struct {
	// Field is the dotted path of the state in the answer, such as "status".
	Field string `yaml:"field" json:"field"`
	// Succeeded lists the values that mean the operation is done.
	Succeeded []string `yaml:"succeeded" json:"succeeded"`
	// Failed lists the values that mean it definitely failed.
	Failed []string `yaml:"failed" json:"failed"`
	// Pending lists the values that mean it is still on its way.
	Pending []string `yaml:"pending" json:"pending"`
	// ReasonField is the dotted path of a failure's reason, such as "failure_reason".
	ReasonField string `yaml:"reason_field" json:"reason_field,omitempty"`
}

// Phase is what a downstream's business state means.
type Phase string

const (
	// PhaseSucceeded means the operation is done.
	PhaseSucceeded Phase = "succeeded"
	// PhaseFailed means it definitely failed (a refusal, even a late one).
	PhaseFailed Phase = "failed"
	// PhasePending means it is still on its way.
	PhasePending Phase = "pending"
	// PhaseUnknown means the answer holds no state, or one the catalog does
	// not list: nothing can be concluded from it.
	PhaseUnknown Phase = "unknown"
)

// Classify reads the business state of answer (a downstream's JSON record)
// and says what it means, with the failure reason for PhaseFailed. It is
// pure, so the workflow may call it.
func (b *BusinessState) Classify(answer json.RawMessage) (state string, phase Phase, reason string) {
	var doc any
	if err := json.Unmarshal(answer, &doc); err != nil {
		return "", PhaseUnknown, ""
	}
	state, ok := Lookup(doc, b.Field).(string)
	switch {
	case !ok:
		return "", PhaseUnknown, ""
	case slices.Contains(b.Succeeded, state):
		return state, PhaseSucceeded, ""
	case slices.Contains(b.Failed, state):
		reason, _ = Lookup(doc, b.ReasonField).(string)
		if reason == "" {
			reason = state
		}
		return state, PhaseFailed, reason
	case slices.Contains(b.Pending, state):
		return state, PhasePending, ""
	default:
		return state, PhaseUnknown, ""
	}
}

// Lookup returns the member of doc (decoded JSON) at the dotted path, or nil.
func Lookup(doc any, path string) any {
	if path == "" {
		return nil
	}
	for _, name := range strings.Split(path, ".") {
		obj, ok := doc.(map[string]any)
		if !ok {
			return nil
		}
		doc = obj[name]
	}
	return doc
}
