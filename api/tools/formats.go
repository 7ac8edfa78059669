package tools

import (
	"fmt"

	"github.com/oncegate/oncegate/internal/catalog"
)

// Formats of Definitions.
const (
	// FormatOpenAI is the Chat Completions `tools` array.
	FormatOpenAI = "openai"
	// FormatAnthropic is the Messages API `tools` array.
	FormatAnthropic = "anthropic"
)

// OpenAITool is one entry of the Chat Completions `tools` array.
type OpenAITool struct {
	// Type is always "function".
	Type string `json:"type"`
	// Function is the function definition.
	Function OpenAIFunction `json:"function"`
}

// OpenAIFunction is the function definition of an OpenAITool.
type OpenAIFunction struct {
	// Name is the tool's name.
	Name string `json:"name"`
	// Description teaches the model the tool and its protocol.
	Description string `json:"description"`
	// Parameters is the JSON Schema of the arguments.
	Parameters map[string]any `json:"parameters"`
	// Strict turns on OpenAI's strict mode; Parameters is then Strict's
	// rewrite of the schema (DefinitionsStrict).
	Strict bool `json:"strict"`
}

// AnthropicTool is one entry of the Anthropic Messages API `tools` array.
type AnthropicTool struct {
	// Name is the tool's name.
	Name string `json:"name"`
	// Description teaches the model the tool and its protocol.
	Description string `json:"description"`
	// InputSchema is the JSON Schema of the arguments.
	InputSchema map[string]any `json:"input_schema"`
}

// Definitions returns the tools of cat in format: FormatOpenAI gives
// []OpenAITool, FormatAnthropic gives []AnthropicTool. An unknown format, or
// a catalog whose scopes give tool names that LLM APIs refuse, is an error.
func Definitions(cat *catalog.Catalog, format string) (any, error) {
	return definitions(cat, format, false)
}

// DefinitionsStrict returns the OpenAI tools of cat for strict mode:
// "strict": true and every schema rewritten by Strict.
func DefinitionsStrict(cat *catalog.Catalog) ([]OpenAITool, error) {
	defs, err := definitions(cat, FormatOpenAI, true)
	if err != nil {
		return nil, err
	}
	return defs.([]OpenAITool), nil
}

func definitions(cat *catalog.Catalog, format string, strict bool) (any, error) {
	ts := Tools(cat)
	if err := Check(ts); err != nil {
		return nil, fmt.Errorf("tool definitions: %w", err)
	}
	switch format {
	case FormatOpenAI:
		out := make([]OpenAITool, len(ts))
		for i, t := range ts {
			params := t.InputSchema
			if strict {
				params = Strict(params)
			}
			out[i] = OpenAITool{Type: "function", Function: OpenAIFunction{
				Name: t.Name, Description: t.Description, Parameters: params, Strict: strict,
			}}
		}
		return out, nil
	case FormatAnthropic:
		out := make([]AnthropicTool, len(ts))
		for i, t := range ts {
			out[i] = AnthropicTool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
		}
		return out, nil
	}
	return nil, fmt.Errorf("tool definitions: %w: %q", ErrUnknownFormat, format)
}
