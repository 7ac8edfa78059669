// Package tools builds the LLM tool definitions of the gateway from the
// action catalog: for every action a preview tool and a confirm tool, plus
// one status tool. The same neutral definitions feed GET /v1/tools (OpenAI
// and Anthropic function-calling formats) and the MCP server, so a model
// learns the preview → confirm protocol from the tool descriptions whatever
// the client.
package tools

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/oncegate/oncegate/internal/catalog"
)

// Kind says which step of the protocol a tool performs.
type Kind string

const (
	// KindPreview validates params and returns a fingerprint; nothing runs.
	KindPreview Kind = "preview"
	// KindConfirm consumes a fingerprint and executes the action at most once.
	KindConfirm Kind = "confirm"
	// KindStatus asks for the current state of an operation.
	KindStatus Kind = "status"
)

// StatusToolName is the name of the one status-query tool.
const StatusToolName = "get_operation_status"

// OperationIDPattern is the JSON Schema pattern of an operation_id: the
// fingerprint's nonce, 32 lowercase hex characters.
const OperationIDPattern = "^[0-9a-f]{32}$"

// namePattern is what OpenAI and Anthropic accept as a tool name.
var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Tool is one tool, independent of any LLM vendor's format.
type Tool struct {
	// Name is the tool's name, such as payments_transfer_preview.
	Name string `json:"name"`
	// Description teaches the model what the tool does and the protocol
	// around it.
	Description string `json:"description"`
	// InputSchema is the JSON Schema (an object schema) of the arguments.
	InputSchema map[string]any `json:"input_schema"`
	// Kind is the protocol step the tool performs.
	Kind Kind `json:"kind"`
	// Scope is the action, such as payments.transfer; empty for the status tool.
	Scope string `json:"scope,omitempty"`
}

// PreviewName returns the preview tool's name of scope, such as
// payments_transfer_preview for payments.transfer.
func PreviewName(scope string) string { return toolBase(scope) + "_preview" }

// ConfirmName returns the confirm tool's name of scope, such as
// payments_transfer_confirm for payments.transfer.
func ConfirmName(scope string) string { return toolBase(scope) + "_confirm" }

// toolBase maps a scope onto the characters a tool name may hold: a dot (or
// any other character outside [a-zA-Z0-9_-]) becomes an underscore.
func toolBase(scope string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, scope)
}

// Tools returns the tools of cat: for each action, sorted by scope, its
// preview and confirm tools; then the status tool.
func Tools(cat *catalog.Catalog) []Tool {
	var scopes []string
	if cat != nil {
		for scope := range cat.Actions {
			scopes = append(scopes, scope)
		}
	}
	slices.Sort(scopes)
	out := make([]Tool, 0, 2*len(scopes)+1)
	for _, scope := range scopes {
		a := cat.Actions[scope]
		out = append(out,
			Tool{
				Name:        PreviewName(scope),
				Description: previewDescription(scope, a),
				InputSchema: previewSchema(a),
				Kind:        KindPreview,
				Scope:       scope,
			},
			Tool{
				Name:        ConfirmName(scope),
				Description: confirmDescription(scope, a),
				InputSchema: confirmSchema(a),
				Kind:        KindConfirm,
				Scope:       scope,
			})
	}
	return append(out, Tool{
		Name:        StatusToolName,
		Description: statusDescription(),
		InputSchema: statusSchema(),
		Kind:        KindStatus,
	})
}

// Check reports tool names that LLM APIs would refuse (longer than 64
// characters or empty) and names that two scopes share after the mapping
// of their characters.
func Check(ts []Tool) error {
	seen := make(map[string]string, len(ts))
	for _, t := range ts {
		if !namePattern.MatchString(t.Name) {
			return fmt.Errorf("tool %q of scope %q: a tool name must match %s", t.Name, t.Scope, namePattern)
		}
		if other, dup := seen[t.Name]; dup {
			return fmt.Errorf("tool %q: scopes %q and %q map onto the same tool name", t.Name, other, t.Scope)
		}
		seen[t.Name] = t.Scope
	}
	return nil
}

// paramsSchema is the JSON Schema of an action's params: every bound and
// free field, the required bound fields required, nothing else allowed.
func paramsSchema(a *catalog.Action) map[string]any {
	props := make(map[string]any, len(a.Bind)+len(a.Free))
	required := []string{}
	for name, f := range a.Bind {
		props[name] = boundSchema(f)
		if f.Required {
			required = append(required, name)
		}
	}
	for name, f := range a.Free {
		if _, bound := a.Bind[name]; bound {
			continue
		}
		props[name] = freeSchema(f)
	}
	slices.Sort(required)
	return map[string]any{
		"type":                 "object",
		"description":          "The action's params. Fields marked as bound are sealed into the fingerprint: the confirm must carry the same values. Free-text fields are not bound. No other fields are accepted.",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	}
}

// boundSchema is the schema of a bound field.
func boundSchema(f catalog.Field) map[string]any {
	var s map[string]any
	switch f.Type {
	case catalog.TypeDecimal, catalog.TypeInteger:
		s = numberSchema(f)
	case catalog.TypeBoolean:
		s = map[string]any{"type": "boolean", "description": strings.TrimSpace(f.Description)}
	case catalog.TypeString:
		fallthrough
	default: // the catalog refuses other types at load
		s = stringSchema(f)
	}
	desc := s["description"].(string)
	desc = sentence(desc) + "Bound: sealed into the fingerprint."
	if len(f.Normalize) > 0 {
		var parts []string
		for _, n := range f.Normalize {
			switch n {
			case "trim":
				parts = append(parts, "surrounding spaces are ignored")
			case "upper":
				parts = append(parts, "it is compared in upper case")
			case "lower":
				parts = append(parts, "it is compared in lower case")
			}
		}
		if len(parts) > 0 {
			desc += " " + upperFirst(strings.Join(parts, "; ")) + "."
		}
	}
	if f.Required {
		desc += " Required."
	}
	s["description"] = desc
	return s
}

// freeSchema is the schema of a free field.
func freeSchema(f catalog.FreeField) map[string]any {
	s := freeTypeSchema(f)
	s["description"] = sentence(s["description"].(string)) + "Free: not bound by the fingerprint; rewording it does not change the operation."
	return s
}

// previewSchema is the input schema of a preview tool.
func previewSchema(a *catalog.Action) map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"params": paramsSchema(a),
		},
		"required":             []string{"params"},
		"additionalProperties": false,
	}
}

// confirmSchema is the input schema of a confirm tool.
func confirmSchema(a *catalog.Action) map[string]any {
	props := map[string]any{
		"fingerprint": map[string]any{
			"type":        "string",
			"minLength":   1,
			"description": "The fingerprint from the preview's answer. Copy it exactly, character for character, from the preview's answer; never invent one, never shorten, edit or reuse one from another preview.",
		},
		"params": paramsSchema(a),
		"acknowledge_repeat_of": map[string]any{
			"type":        "string",
			"pattern":     OperationIDPattern,
			"description": "Only when the preview's answer carried recent_operation AND the user explicitly said they want the same action done a second time: the recent_operation's operation_id, copied exactly. Leave it out otherwise.",
		},
	}
	if a.Approval.Mandates {
		props["mandate_id"] = map[string]any{
			"type":        "string",
			"description": "Optional: the user's standing mandate to run this under instead of a per-operation approval, when the user named one. Leave it out to let the gateway pick the user's active mandate for this action and currency.",
		}
	}
	return map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             []string{"fingerprint", "params"},
		"additionalProperties": false,
	}
}

// statusSchema is the input schema of the status tool.
func statusSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"operation_id": map[string]any{
				"type":        "string",
				"pattern":     OperationIDPattern,
				"description": "The operation_id from an earlier answer (32 lowercase hex characters), copied exactly.",
			},
		},
		"required":             []string{"operation_id"},
		"additionalProperties": false,
	}
}

// Protocol is the protocol every tool description teaches, also sent as the
// MCP server's instructions.
const Protocol = `Protocol for actions that move money or cannot be undone:
1. Call the action's *_preview tool with the params. Nothing is executed. Show the preview to the user and ask for an explicit confirmation.
2. Only after the user agrees, call the action's *_confirm tool with the fingerprint copied exactly from the preview's answer and the same params. Never invent, edit or guess a fingerprint.
3. Read the answer's status and follow its instruction:
- completed or already_completed: it is done; report the result (result_ref) to the user. Do not call any tool again for it.
- failed or already_failed: it failed definitely and nothing was executed; tell the user why. Do not retry with the same fingerprint.
- in_progress: do not confirm again. Wait poll_after_ms milliseconds, then call get_operation_status with the operation_id.
- needs_manual_review: stop. Tell the user a person is checking the outcome; do not call confirm again.
- param_mismatch: the params differ from the previewed ones. Do not change amounts or payees on your own; preview again with the values the user wants.
- fingerprint_expired: preview again and ask the user again.
- repeat_unacknowledged, or a preview carrying recent_operation: the same action was just done. Ask the user whether they really want it done a second time; only if they say so, confirm with acknowledge_repeat_of set to the recent operation's operation_id.
Every answer has meaning and instruction fields: always follow the instruction.`

// previewDescription teaches the preview step.
func previewDescription(scope string, a *catalog.Action) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Preview %s: %s\n", scope, sentenceEnd(a.Description))
	fmt.Fprintf(&b, "This tool executes NOTHING. It validates the params and answers status preview_ready with a preview (show it to the user) and a one-time fingerprint bound to the user and to these exact params. ")
	fmt.Fprintf(&b, "Then ask the user to confirm; only after they agree, call %s with that fingerprint copied exactly and the same params. ", ConfirmName(scope))
	b.WriteString("If the answer carries recent_operation, the same action was just done: tell the user and do not confirm unless the user explicitly wants it done again (then pass acknowledge_repeat_of). ")
	b.WriteString("If the user changes a value, preview again.\n\n")
	b.WriteString(Protocol)
	return b.String()
}

// confirmDescription teaches the confirm step.
func confirmDescription(scope string, a *catalog.Action) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Confirm and EXECUTE %s (real and irreversible): %s\n", scope, sentenceEnd(a.Description))
	fmt.Fprintf(&b, "Call it only after %s answered preview_ready and the user explicitly agreed to that preview. ", PreviewName(scope))
	b.WriteString("fingerprint: copy it exactly from the preview's answer; never invent or modify one. params: the same values as in the preview. ")
	b.WriteString("It executes at most once per fingerprint: calling it again with the same fingerprint returns the first outcome (already_completed) instead of executing again. ")
	fmt.Fprintf(&b, "When an answer says in_progress, do not call this tool again: wait poll_after_ms, then call %s.\n\n", StatusToolName)
	b.WriteString(Protocol)
	return b.String()
}

// statusDescription teaches the status tool.
func statusDescription() string {
	return "Get the current state of an operation by its operation_id (read-only, executes nothing). " +
		"Use it after an answer with status in_progress: wait poll_after_ms milliseconds first. " +
		"It answers completed or failed (report the result to the user and stop), in_progress (wait poll_after_ms again, then ask again), " +
		"needs_manual_review (stop: tell the user a person is checking the outcome), or unknown_operation. " +
		"Never call a confirm tool again to find out what happened: use this tool."
}

// sentence returns s trimmed and ending with ". " unless empty.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	return sentenceEnd(s) + " "
}

// sentenceEnd returns s trimmed, ending with a full stop.
func sentenceEnd(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasSuffix(s, ".") || strings.HasSuffix(s, "!") || strings.HasSuffix(s, "?") {
		return s
	}
	return s + "."
}

// upperFirst upper-cases the first letter of an ASCII string.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
