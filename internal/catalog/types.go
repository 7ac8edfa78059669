// Package catalog loads the action catalog (YAML): for each action the bound
// and free params, the three TTLs and the downstream it calls. Loading
// validates every action and refuses TTLs that would open a hole in the
// idempotency guarantee.
package catalog

import (
	"encoding/json"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/internal/plan"
)

// FieldType is the type of a bound param.
type FieldType string

const (
	// TypeString is a JSON string (NFC-normalized before hashing).
	TypeString FieldType = "string"
	// TypeDecimal is an exact decimal given as a JSON number or a string.
	TypeDecimal FieldType = "decimal"
	// TypeInteger is an exact integer given as a JSON number or a string.
	TypeInteger FieldType = "integer"
	// TypeBoolean is a JSON boolean.
	TypeBoolean FieldType = "boolean"
)

// Field declares one bound param: its type, whether it is required, its
// normalizers and description, and the constraints it declares, each under
// its key (min, kind, ...; see Constraint), decoded by the constraint when
// the catalog loads. The constraints only refuse values; they never change
// one, so they never change a param_hash. Strings are checked after their
// normalizers, decimals by exact value.
type Field struct {
	// Type is the field's type.
	Type FieldType
	// Required refuses params that lack the field (or carry null).
	Required bool
	// Normalize lists normalizers applied in order: trim, upper, lower.
	Normalize []string
	// Description is shown in tool schemas.
	Description string

	// written holds the constraint keys as the catalog writes them, until
	// the loader decodes them into constraints.
	written map[string]yaml.Node
	// constraints holds the value of each constraint the field declares,
	// as the constraint decoded it (Declares, ValueOf).
	constraints map[Constraint]any
	// declared are the constraints' keys of constraints, in their order
	// (Declared).
	declared []Constraint
}

// fieldKeys are a bound field's own keys; every other key is a constraint's.
type fieldKeys struct {
	Type        FieldType            `yaml:"type"`
	Required    bool                 `yaml:"required"`
	Normalize   []string             `yaml:"normalize"`
	Description string               `yaml:"description"`
	Constraints map[string]yaml.Node `yaml:",inline"`
}

// UnmarshalYAML reads the field's own keys and keeps the others as written,
// for the loader to decode by their constraints (an unknown key is refused
// there, naming the field).
func (f *Field) UnmarshalYAML(n *yaml.Node) error {
	var k fieldKeys
	if err := n.Decode(&k); err != nil {
		return err
	}
	*f = Field{Type: k.Type, Required: k.Required, Normalize: k.Normalize, Description: k.Description, written: k.Constraints}
	return nil
}

// MarshalJSON writes the field as the catalog declares it: its own keys
// and each constraint's value under its key.
func (f Field) MarshalJSON() ([]byte, error) {
	out := map[string]any{"type": f.Type, "required": f.Required}
	if len(f.Normalize) > 0 {
		out["normalize"] = f.Normalize
	}
	if f.Description != "" {
		out["description"] = f.Description
	}
	for c, v := range f.constraints {
		out[c.Key()] = v
	}
	return json.Marshal(out)
}

// Declares reports whether f declares c.
func (f *Field) Declares(c Constraint) bool {
	_, ok := f.constraints[c]
	return ok
}

// Declared returns the constraints f declares, in their order: what a
// check of f's value asks, without looking every constraint up.
func (f *Field) Declared() []Constraint { return f.declared }

// FreeField declares a param passed to the downstream but not bound.
type FreeField struct {
	// Type is the JSON type expected (string by default).
	Type FieldType `yaml:"type" json:"type"`
	// Description is shown in tool schemas.
	Description string `yaml:"description" json:"description,omitempty"`
	// MaxLength is the most characters (Unicode code points) a string may
	// have; 0 means no limit.
	MaxLength int `yaml:"max_length" json:"max_length,omitempty"`
}

// Downstream is an action's downstream as the catalog declares it (see
// plan.Source, where it is declared so that a workflow can resolve one
// recorded in an old history without the catalog).
type Downstream = plan.Source

// Webhook describes how a downstream signs the events it POSTs (plan.Webhook).
type Webhook = plan.Webhook

// Action is one scope of the catalog.
type Action struct {
	// Scope is the action's name, such as payments.transfer.
	Scope string `yaml:"-" json:"scope"`
	// Description tells a model what the action does.
	Description string `yaml:"description" json:"description"`
	// Title names the action for a person, on the approval page (default:
	// the scope).
	Title string `yaml:"title" json:"title,omitempty"`
	// Bind lists the fields that enter the fingerprint's param_hash.
	Bind map[string]Field `yaml:"bind" json:"bind"`
	// Free lists fields passed to the downstream but not bound.
	Free map[string]FreeField `yaml:"free" json:"free"`
	// FingerprintTTL is how long a preview's fingerprint may be consumed.
	FingerprintTTL time.Duration `yaml:"fingerprint_ttl" json:"fingerprint_ttl"`
	// InFlightTTL is how long an IN_FLIGHT claim lives in Redis.
	InFlightTTL time.Duration `yaml:"in_flight_ttl" json:"in_flight_ttl"`
	// TerminalTTL is how long a terminal result is replayed.
	TerminalTTL time.Duration `yaml:"terminal_ttl" json:"terminal_ttl"`
	// DuplicateIntentWindow is how far back the amnesia guard looks (default 24h).
	DuplicateIntentWindow time.Duration `yaml:"duplicate_intent_window" json:"duplicate_intent_window"`
	// SummaryField names the bound field shown in summaries (such as amount).
	SummaryField string `yaml:"summary_field" json:"summary_field,omitempty"`
	// Spend, when set, names the bound fields that say what an operation
	// spends: the spend budgets of the limits file (ONCEGATE_LIMITS) apply
	// to the action only then.
	Spend *Spend `yaml:"spend" json:"spend,omitempty"`
	// Downstream is the API the action calls.
	Downstream Downstream `yaml:"downstream" json:"downstream"`
	// Approval is when a person must approve an operation with a passkey
	// before it may be confirmed (default: never).
	Approval approval.Policy `yaml:"-" json:"approval"`
	// Auth is the scope a scoped token needs for this action (default:
	// none).
	Auth Auth `yaml:"-" json:"auth,omitzero"`
}

// Spend names the bound fields that hold an operation's amount and its
// currency.
type Spend struct {
	// Amount is a required bound decimal field, such as amount.
	Amount string `yaml:"amount" json:"amount"`
	// Currency is a required bound string field of kind currency, such as
	// currency; the amount is in its scale.
	Currency string `yaml:"currency" json:"currency"`
}

// Catalog is the loaded, validated set of actions.
type Catalog struct {
	// Actions maps a scope to its action.
	Actions map[string]*Action
	// GatewayWait is the gateway's own wait for an outcome at confirm; it is
	// part of every action's worst case.
	GatewayWait time.Duration
}

// IntentWindow is how far back the amnesia guard looks for the action:
// its duplicate_intent_window, or DefaultDuplicateIntentWindow.
func (a *Action) IntentWindow() time.Duration {
	if a.DuplicateIntentWindow <= 0 {
		return DefaultDuplicateIntentWindow
	}
	return a.DuplicateIntentWindow
}

// MaxIntentWindow is the longest IntentWindow of the catalog's actions:
// how far back a warm-up of the recent-intent index must look.
func (c *Catalog) MaxIntentWindow() time.Duration {
	longest := DefaultDuplicateIntentWindow
	for _, a := range c.Actions {
		longest = max(longest, a.IntentWindow())
	}
	return longest
}

// Lookup returns the action of scope, or false.
func (c *Catalog) Lookup(scope string) (*Action, bool) {
	a, ok := c.Actions[scope]
	return a, ok
}
