// Package messages holds the texts an LLM reads in every gateway answer: for
// each status a `meaning` (what happened and what it means) and an
// `instruction` (exactly what to do next). The texts live in one YAML catalog
// per language, embedded in the binary, as text/template strings filled with
// Data.
package messages

import (
	"bytes"
	"embed"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/template"

	"gopkg.in/yaml.v3"
)

//go:embed en.yaml zh.yaml
var files embed.FS

// Lang is a supported language.
type Lang string

const (
	// English is the default language.
	English Lang = "en"
	// Chinese is chosen by an Accept-Language starting with zh.
	Chinese Lang = "zh"
)

// Langs lists every supported language, the default first.
var Langs = []Lang{English, Chinese}

// Data fills the placeholders of a text. Every field may be empty; the
// templates test the optional ones with {{if}}.
type Data struct {
	// OperationID is the operation the answer is about.
	OperationID string
	// Scope is the action, such as payments.transfer.
	Scope string
	// PreviewTool is the preview tool's name, such as payments_transfer_preview.
	PreviewTool string
	// ConfirmTool is the confirm tool's name, such as payments_transfer_confirm.
	ConfirmTool string
	// PollWith is the status tool's name, get_operation_status.
	PollWith string
	// PollAfterMS is how long to wait before polling, in milliseconds.
	PollAfterMS int64
	// PollAfterSeconds is PollAfterMS in seconds, as text (such as "2").
	PollAfterSeconds string
	// RetryAfterMS is how long to wait before retrying, in milliseconds.
	RetryAfterMS int64
	// RetryAfterSeconds is RetryAfterMS in seconds, as text.
	RetryAfterSeconds string
	// RecentOperationID is the identical recent operation of the amnesia guard.
	RecentOperationID string
	// ExpiresAt is the fingerprint's expiry (RFC 3339).
	ExpiresAt string
	// TraceID is the request's trace id.
	TraceID string
	// State is an operation state (such as DONE) or a state filter.
	State string
	// ResultRef is the business reference of a finished operation.
	ResultRef string
	// Reason says why an operation failed.
	Reason string
	// FailureKind says how a failure is known (idemstore.FailureKind:
	// downstream_refused, not_executed, not_sent, operator_decision, or
	// empty when not recorded); the texts claim "nothing was executed" only
	// for the kinds that prove it.
	FailureKind string
	// DecidedBy is the operator whose decision was first.
	DecidedBy string
	// DecidedOutcome is that decision's outcome (completed or failed).
	DecidedOutcome string
	// DecidedAt is when it was made (RFC 3339).
	DecidedAt string
	// Detail is a short technical detail (such as a JSON syntax error).
	Detail string
	// Method is the request's HTTP method.
	Method string
	// Path is the request's path.
	Path string
}

// entry is one status's pair of texts.
type entry struct {
	meaning     *template.Template
	instruction *template.Template
}

// Catalog holds the parsed texts of every language.
type Catalog struct {
	texts map[Lang]map[string]entry
}

// rawEntry is the YAML form of one status.
type rawEntry struct {
	Meaning     string `yaml:"meaning"`
	Instruction string `yaml:"instruction"`
}

// Load parses the embedded catalogs. It fails when a file is missing, is not
// valid YAML, holds an empty text or a template that does not parse.
func Load() (*Catalog, error) {
	c := &Catalog{texts: make(map[Lang]map[string]entry, len(Langs))}
	for _, lang := range Langs {
		raw, err := files.ReadFile(string(lang) + ".yaml")
		if err != nil {
			return nil, fmt.Errorf("read messages %s: %w", lang, err)
		}
		texts, err := parse(lang, raw)
		if err != nil {
			return nil, err
		}
		c.texts[lang] = texts
	}
	return c, nil
}

// parse reads one language's YAML.
func parse(lang Lang, raw []byte) (map[string]entry, error) {
	var doc map[string]rawEntry
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("parse messages %s: %w", lang, err)
	}
	out := make(map[string]entry, len(doc))
	for key, e := range doc {
		if strings.TrimSpace(e.Meaning) == "" || strings.TrimSpace(e.Instruction) == "" {
			return nil, fmt.Errorf("parse messages %s: %s: meaning and instruction are both required", lang, key)
		}
		m, err := template.New(key + ".meaning").Option("missingkey=error").Parse(e.Meaning)
		if err != nil {
			return nil, fmt.Errorf("parse messages %s: %w", lang, err)
		}
		i, err := template.New(key + ".instruction").Option("missingkey=error").Parse(e.Instruction)
		if err != nil {
			return nil, fmt.Errorf("parse messages %s: %w", lang, err)
		}
		out[key] = entry{meaning: m, instruction: i}
	}
	return out, nil
}

// Keys returns the sorted keys of lang's catalog.
func (c *Catalog) Keys(lang Lang) []string {
	return slices.Sorted(maps.Keys(c.texts[lang]))
}

// Render returns the meaning and instruction of key in lang, filled with d.
// A key missing in lang falls back to English; a key missing everywhere is
// an error.
func (c *Catalog) Render(lang Lang, key string, d Data) (meaning, instruction string, err error) {
	e, ok := c.texts[lang][key]
	if !ok {
		e, ok = c.texts[English][key]
		if !ok {
			return "", "", fmt.Errorf("render message %q: no such key", key)
		}
	}
	var mb, ib strings.Builder
	if err := e.meaning.Execute(&mb, d); err != nil {
		return "", "", fmt.Errorf("render message %q: %w", key, err)
	}
	if err := e.instruction.Execute(&ib, d); err != nil {
		return "", "", fmt.Errorf("render message %q: %w", key, err)
	}
	return strings.TrimSpace(mb.String()), strings.TrimSpace(ib.String()), nil
}

// ParseAcceptLanguage picks the language of an Accept-Language header: the
// first listed tag that is Chinese (zh, zh-CN, zh-Hans, ...) or English
// decides; anything else is English.
func ParseAcceptLanguage(header string) Lang {
	for part := range strings.SplitSeq(header, ",") {
		tag, _, _ := strings.Cut(part, ";")
		tag = strings.ToLower(strings.TrimSpace(tag))
		switch {
		case tag == "zh" || strings.HasPrefix(tag, "zh-") || strings.HasPrefix(tag, "zh_"):
			return Chinese
		case tag == "en" || strings.HasPrefix(tag, "en-") || strings.HasPrefix(tag, "en_"):
			return English
		}
	}
	return English
}
