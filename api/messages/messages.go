// Package messages holds the texts an LLM reads in every gateway answer: for
// each status a `meaning` (what happened and what it means) and an
// `instruction` (exactly what to do next), and the detail fragments that
// fill them (keys starting with "detail.", a single `text`). The texts live
// in one YAML catalog per language, embedded in the binary, as text/template
// strings filled with Data.
package messages

import (
	"bytes"
	"embed"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"text/template"

	"gopkg.in/yaml.v3"
)

//go:embed en.yaml zh.yaml problems.*.yaml
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
	// Redis is the fast path's health in a readiness answer: ok or degraded.
	Redis string
	// ResultRef is the business reference of a finished operation.
	ResultRef string
	// Reason says why an operation failed.
	Reason string
	// FailureKind says how a failure is known (operation.FailureKind:
	// downstream_refused, not_executed, not_sent, operator_decision, or
	// empty when not recorded); the texts claim "nothing was executed" only
	// for the kinds that prove it.
	FailureKind string
	// NothingExecuted reports that FailureKind proves by itself that the
	// downstream executed nothing (operation.FailureKind.ProvesNothingExecuted):
	// only then do the texts tell the user that no money moved.
	NothingExecuted bool
	// ApprovalRole is the role an operation's named approvers hold (empty:
	// the subject approves alone).
	ApprovalRole string
	// ApprovalNeeded is how many distinct people must approve.
	ApprovalNeeded int
	// ApprovalGiven is how many have approved so far.
	ApprovalGiven int
	// ApprovedBy names who has approved so far (comma-separated).
	ApprovedBy string
	// DecidedBy is the operator whose decision was first.
	DecidedBy string
	// DecidedOutcome is that decision's outcome (completed or failed).
	DecidedOutcome string
	// DecidedAt is when it was made (RFC 3339).
	DecidedAt string
	// Detail is a short technical detail (such as a JSON syntax error),
	// usually a rendered fragment (see Fragment).
	Detail string
	// RetryLimit is how many times a retryable request may be sent again.
	RetryLimit int
	// Field names a member of the request (a detail fragment's subject).
	Field string
	// Expected is what a member must be (a JSON type such as "object").
	Expected string
	// Got is what was given, or the downstream's HTTP status.
	Got string
	// Offset is a byte offset into the request body.
	Offset int64
	// Err is a technical error text quoted verbatim (such as encoding/json's).
	Err string
	// Method is the request's HTTP method.
	Method string
	// Path is the request's path.
	Path string
	// LimitName is the spend budget an amount does not fit (limit.name).
	LimitName string
	// LimitWindow is its window: per_operation, daily or monthly.
	LimitWindow string
	// LimitCurrency is the amount's currency.
	LimitCurrency string
	// LimitMax is the window's maximum.
	LimitMax string
	// LimitUsed is what the window holds.
	LimitUsed string
	// LimitLeft is what still fits.
	LimitLeft string
	// LimitResetsAt is when the amount would fit (RFC 3339); empty: never.
	LimitResetsAt string
	// ApprovalURL is the link a person opens to approve the operation with
	// their passkey (empty: no approval needed).
	ApprovalURL string
	// Subject is whose passkey or operation it is.
	Subject string
}

// FragmentPrefix starts the key of every detail fragment.
const FragmentPrefix = "detail."

// entry is one status's pair of texts, or one fragment's text.
type entry struct {
	meaning     *text
	instruction *text
	text        *text
}

// text is one parsed text and, when its template allows, its compiled form.
type text struct {
	tmpl *template.Template
	// fast renders the same bytes as tmpl; nil when tmpl uses more than
	// compiled supports.
	fast compiled
}

// Catalog holds the parsed texts of every language.
type Catalog struct {
	texts map[Lang]map[string]entry
	// problems holds the translations of errors[].problem by code; English
	// is the text the problem already carries.
	problems map[Lang]map[string]*template.Template
}

// rawEntry is the YAML form of one status (meaning and instruction) or of
// one fragment (text).
type rawEntry struct {
	Meaning     string `yaml:"meaning"`
	Instruction string `yaml:"instruction"`
	Text        string `yaml:"text"`
}

// Load parses the embedded catalogs. It fails when a file is missing, is not
// valid YAML, holds an empty text or a template that does not parse.
func Load() (*Catalog, error) {
	c := &Catalog{texts: make(map[Lang]map[string]entry, len(Langs)), problems: map[Lang]map[string]*template.Template{}}
	for _, lang := range Langs {
		if lang != English {
			p, err := parseProblems(lang)
			if err != nil {
				return nil, err
			}
			c.problems[lang] = p
		}
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
	parseText := func(name, src string) (*text, error) {
		t, err := template.New(name).Option("missingkey=error").Parse(src)
		if err != nil {
			return nil, fmt.Errorf("parse messages %s: %w", lang, err)
		}
		fast, _ := compile(t)
		return &text{tmpl: t, fast: fast}, nil
	}
	for key, e := range doc {
		var ent entry
		var err error
		if strings.HasPrefix(key, FragmentPrefix) {
			if strings.TrimSpace(e.Text) == "" || e.Meaning != "" || e.Instruction != "" {
				return nil, fmt.Errorf("parse messages %s: %s: a fragment has a text and nothing else", lang, key)
			}
			if ent.text, err = parseText(key, e.Text); err != nil {
				return nil, err
			}
			out[key] = ent
			continue
		}
		if strings.TrimSpace(e.Meaning) == "" || strings.TrimSpace(e.Instruction) == "" || e.Text != "" {
			return nil, fmt.Errorf("parse messages %s: %s: meaning and instruction are both required", lang, key)
		}
		if ent.meaning, err = parseText(key+".meaning", e.Meaning); err != nil {
			return nil, err
		}
		if ent.instruction, err = parseText(key+".instruction", e.Instruction); err != nil {
			return nil, err
		}
		out[key] = ent
	}
	return out, nil
}

// parseProblems reads problems.<lang>.yaml: problem code → template text.
func parseProblems(lang Lang) (map[string]*template.Template, error) {
	raw, err := files.ReadFile("problems." + string(lang) + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("read problem texts %s: %w", lang, err)
	}
	var doc map[string]string
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("parse problem texts %s: %w", lang, err)
	}
	out := make(map[string]*template.Template, len(doc))
	for code, text := range doc {
		if strings.TrimSpace(text) == "" {
			return nil, fmt.Errorf("parse problem texts %s: %s is empty", lang, code)
		}
		t, err := template.New(code).Option("missingkey=error").Parse(text)
		if err != nil {
			return nil, fmt.Errorf("parse problem texts %s: %w", lang, err)
		}
		out[code] = t
	}
	return out, nil
}

// ProblemCodes returns the sorted problem codes translated into lang.
func (c *Catalog) ProblemCodes(lang Lang) []string {
	return slices.Sorted(maps.Keys(c.problems[lang]))
}

// Problem returns the text of problem code in lang filled with args, and
// false when lang has no translation of code (English never has one: the
// problem's own text is English).
func (c *Catalog) Problem(lang Lang, code string, args map[string]string) (string, bool) {
	t, ok := c.problems[lang][code]
	if !ok {
		return "", false
	}
	var b strings.Builder
	if err := t.Execute(&b, args); err != nil {
		return "", false
	}
	return b.String(), true
}

// Keys returns the sorted keys of lang's catalog.
func (c *Catalog) Keys(lang Lang) []string {
	return slices.Sorted(maps.Keys(c.texts[lang]))
}

// lookup finds key in lang, falling back to English.
func (c *Catalog) lookup(lang Lang, key string) (entry, error) {
	if e, ok := c.texts[lang][key]; ok {
		return e, nil
	}
	if e, ok := c.texts[English][key]; ok {
		return e, nil
	}
	return entry{}, fmt.Errorf("render message %q: no such key", key)
}

// TextRoom is the room for an answer's texts (on the stack of Render, and
// of a caller of RenderInto) that most fit in.
const TextRoom = 1024

// execute renders one text.
func execute(t *text, d *Data) (string, error) {
	b, err := appendText(make([]byte, 0, TextRoom), t, d)
	if err != nil {
		return "", err
	}
	return string(bytes.TrimSpace(b)), nil
}

// appendText appends t filled with d to b, compiled when it could be.
func appendText(b []byte, t *text, d *Data) ([]byte, error) {
	if t.fast != nil {
		return t.fast.appendTo(b, reflect.ValueOf(d).Elem()), nil
	}
	var w strings.Builder
	if err := t.tmpl.Execute(&w, *d); err != nil {
		return b, fmt.Errorf("render message %q: %w", t.tmpl.Name(), err)
	}
	return append(b, w.String()...), nil
}

// Render returns the meaning and instruction of key in lang, filled with d.
// A key missing in lang falls back to English; a key missing everywhere,
// or a fragment's key, is an error.
func (c *Catalog) Render(lang Lang, key string, d Data) (meaning, instruction string, err error) {
	// Both texts are written into one buffer and become one string.
	b, mid, err := c.appendTexts(make([]byte, 0, TextRoom), lang, key, &d)
	if err != nil {
		return "", "", err
	}
	both := string(b)
	return strings.TrimSpace(both[:mid]), strings.TrimSpace(both[mid:]), nil
}

// RenderInto is Render writing both texts into buf (from its start, grown
// when they do not fit) rather than into a new string: the texts it
// returns are buf's bytes, to be copied out before buf is used again.
func (c *Catalog) RenderInto(buf []byte, lang Lang, key string, d Data) (meaning, instruction []byte, err error) {
	b, mid, err := c.appendTexts(buf[:0], lang, key, &d)
	if err != nil {
		return nil, nil, err
	}
	return bytes.TrimSpace(b[:mid]), bytes.TrimSpace(b[mid:]), nil
}

// appendTexts appends the meaning and then the instruction of key in lang,
// filled with d, to b; mid is where the instruction starts.
func (c *Catalog) appendTexts(b []byte, lang Lang, key string, d *Data) (out []byte, mid int, err error) {
	e, err := c.lookup(lang, key)
	if err != nil {
		return nil, 0, err
	}
	if e.meaning == nil {
		return nil, 0, fmt.Errorf("render message %q: a fragment, not a status text", key)
	}
	if b, err = appendText(b, e.meaning, d); err != nil {
		return nil, 0, err
	}
	mid = len(b)
	if b, err = appendText(b, e.instruction, d); err != nil {
		return nil, 0, err
	}
	return b, mid, nil
}

// Fragment returns the detail fragment key (FragmentPrefix...) in lang,
// filled with d, to be embedded in a status text as Data.Detail.
func (c *Catalog) Fragment(lang Lang, key string, d Data) (string, error) {
	e, err := c.lookup(lang, key)
	if err != nil {
		return "", err
	}
	if e.text == nil {
		return "", fmt.Errorf("render message %q: a status text, not a fragment", key)
	}
	return execute(e.text, &d)
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

// The gateway's log messages (at ERROR) for an answer whose texts could
// not be written as the catalog says. Each is a bug: the answer still goes
// out, with blank or fallback words, and the tests fail on any of them.
const (
	// FaultBodyField: a body field the texts read had an unexpected type.
	FaultBodyField = "texts of a body field"
	// FaultRender: the message's template failed.
	FaultRender = "render message"
	// FaultRenderDetail: the detail fragment's template failed.
	FaultRenderDetail = "render detail"
)

// Faults lists the fault log messages.
var Faults = []string{FaultBodyField, FaultRender, FaultRenderDetail}
