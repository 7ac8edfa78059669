package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/oncegate/oncegate/internal/envconfig"
	"github.com/oncegate/oncegate/internal/plan"
	"github.com/oncegate/oncegate/operation"
)

// Defaults applied when the catalog leaves a setting out.
const (
	// DefaultDuplicateIntentWindow is the amnesia guard's default look-back.
	DefaultDuplicateIntentWindow = operation.DefaultIntentWindow
	// DefaultAttempts is the default maximum number of downstream calls.
	DefaultAttempts = 1
	// DefaultReconcileDelay is the default wait before asking the status endpoint.
	DefaultReconcileDelay = 2 * time.Second
	// DefaultReconcileAttempts is the default number of status queries.
	DefaultReconcileAttempts = 5
	// DefaultPollInterval is the first wait between status queries of a
	// pending operation.
	DefaultPollInterval = 2 * time.Second
	// DefaultWebhookTolerance bounds the age of a webhook event's timestamp.
	DefaultWebhookTolerance = 5 * time.Minute
	// MaxWebhookTolerance is the longest tolerance a catalog may declare
	// (idemstore.WebhookReceiptRetention keeps receipts twice that long).
	MaxWebhookTolerance = 24 * time.Hour
	// DefaultWebhookReferenceField is where a webhook event carries the operation id.
	DefaultWebhookReferenceField = "data.client_reference"
	// DefaultWebhookObjectField is where a webhook event carries the downstream's record.
	DefaultWebhookObjectField = "data"
)

// Load reads the catalog file at path and parses it as Parse does.
func Load(path string, gatewayWait time.Duration) (*Catalog, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load catalog: %w", err)
	}
	c, err := Parse(data, gatewayWait)
	if err != nil {
		return nil, fmt.Errorf("load catalog %s: %w", path, err)
	}
	return c, nil
}

// Parse expands ${VAR} and ${VAR:-default} references from the environment
// in data (an unset variable without a default is an error naming it; a lone
// $ is left alone), decodes the YAML refusing unknown keys, applies the
// defaults and validates every action against gatewayWait, the gateway's own
// wait for an outcome at confirm. Validation problems are reported all at
// once in a *ValidationError.
func Parse(data []byte, gatewayWait time.Duration) (*Catalog, error) {
	return parse(data, gatewayWait, os.LookupEnv)
}

func parse(data []byte, gatewayWait time.Duration, lookup func(string) (string, bool)) (*Catalog, error) {
	text, err := expandEnv(string(data), lookup)
	if err != nil {
		return nil, fmt.Errorf("expand environment: %w", err)
	}
	var raw rawCatalog
	dec := yaml.NewDecoder(strings.NewReader(text))
	dec.KnownFields(true)
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("decode yaml: empty catalog")
		}
		return nil, fmt.Errorf("decode yaml: %w", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("decode yaml: more than one YAML document")
	}
	return build(raw, gatewayWait)
}

// expandEnv replaces ${NAME} and ${NAME:-default} in s. ${NAME:-default}
// uses default when NAME is unset or empty. Every unset variable without a
// default is named in one error.
func expandEnv(s string, lookup func(string) (string, bool)) (string, error) {
	var out bytes.Buffer
	var missing, bad []string
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			out.WriteString(s)
			break
		}
		out.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			bad = append(bad, s[i:min(len(s), i+20)])
			break
		}
		ref := s[i+2 : i+end]
		s = s[i+end+1:]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !envconfig.ValidName(name) {
			bad = append(bad, "${"+ref+"}")
			continue
		}
		v, ok := lookup(name)
		switch {
		case hasDef && v == "":
			out.WriteString(def)
		case ok:
			out.WriteString(v)
		default:
			missing = append(missing, name)
		}
	}
	var errs []error
	if len(bad) > 0 {
		errs = append(errs, fmt.Errorf("malformed variable reference %s", strings.Join(bad, ", ")))
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("environment variable %s is not set (give a default with ${NAME:-default})", strings.Join(missing, ", ")))
	}
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	return out.String(), nil
}

// rawCatalog is the YAML document before defaults and validation.
type rawCatalog struct {
	Actions map[string]rawAction `yaml:"actions"`
}

// rawAction mirrors Action with durations as strings and optional ints as
// pointers, so that validation can report every problem.
type rawAction struct {
	Description           string               `yaml:"description"`
	Title                 string               `yaml:"title"`
	Bind                  map[string]Field     `yaml:"bind"`
	Free                  map[string]FreeField `yaml:"free"`
	FingerprintTTL        string               `yaml:"fingerprint_ttl"`
	InFlightTTL           string               `yaml:"in_flight_ttl"`
	TerminalTTL           string               `yaml:"terminal_ttl"`
	DuplicateIntentWindow string               `yaml:"duplicate_intent_window"`
	SummaryField          string               `yaml:"summary_field"`
	Spend                 *Spend               `yaml:"spend"`
	Downstream            rawDownstream        `yaml:"downstream"`
	Approval              *rawApproval         `yaml:"approval"`
	Auth                  *Auth                `yaml:"auth"`
}

// rawDownstream is the downstream section as written: the plan's endpoint
// and business-state rules as they are, durations as text and optional
// numbers as pointers, so that validation can report every problem with
// its field and tell a setting left out from one set to zero.
type rawDownstream struct {
	plan.Endpoint        `yaml:",inline"`
	Kind                 string              `yaml:"kind"`
	HonorsIdempotencyKey *bool               `yaml:"honors_idempotency_key"`
	Quote                string              `yaml:"quote"`
	Timeout              string              `yaml:"timeout"`
	Attempts             *int                `yaml:"attempts"`
	Backoff              string              `yaml:"backoff"`
	BackoffMax           string              `yaml:"backoff_max"`
	ResultRef            string              `yaml:"result_ref"`
	ReconcileDelay       string              `yaml:"reconcile_delay"`
	ReconcileAttempts    *int                `yaml:"reconcile_attempts"`
	MaxProcessingTime    string              `yaml:"max_processing_time"`
	StatusLag            string              `yaml:"status_lag"`
	KeyRetention         string              `yaml:"idempotency_key_retention"`
	BusinessState        *plan.BusinessState `yaml:"business_state"`
	CompletionDeadline   string              `yaml:"completion_deadline"`
	PollInterval         string              `yaml:"poll_interval"`
	Webhook              *rawWebhook         `yaml:"webhook"`
}

// rawWebhook mirrors Webhook with the tolerance as a string.
type rawWebhook struct {
	SecretEnv       string `yaml:"secret_env"`
	SignatureHeader string `yaml:"signature_header"`
	Tolerance       string `yaml:"tolerance"`
	ReferenceField  string `yaml:"reference_field"`
	ObjectField     string `yaml:"object_field"`
}

// ParseField reads one bound field as the catalog writes it under bind
// (such as "{type: decimal, required: true, min: 0}") and decodes its
// constraints; the checks that need the action (scale_from's field, a
// constraint on a type it does not apply to) are the loader's.
func ParseField(text string) (Field, error) {
	var f Field
	if err := yaml.Unmarshal([]byte(text), &f); err != nil {
		return Field{}, fmt.Errorf("decode field: %w", err)
	}
	if problems := f.decodeConstraints(); len(problems) > 0 {
		return Field{}, fmt.Errorf("decode field: %s", strings.Join(problems, "; "))
	}
	return f, nil
}
