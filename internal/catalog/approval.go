package catalog

import (
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/oncegate/oncegate/internal/iso4217"
)

// ApprovalRequirement says which amounts of an action a person must approve
// (docs/contract.md §7); the new-payee rule adds to it.
type ApprovalRequirement string

const (
	// ApprovalNever asks for no approval by amount (the default).
	ApprovalNever ApprovalRequirement = "never"
	// ApprovalAlways asks for approval of every operation.
	ApprovalAlways ApprovalRequirement = "always"
	// ApprovalAbove asks for approval of an amount above its currency's
	// threshold (Approval.Above), and of every amount in a currency that has
	// none.
	ApprovalAbove ApprovalRequirement = "above"
)

// The bound fields an approval policy reads: the amount and its currency
// (for above) and the payee (for new_payee). An action whose policy needs
// them must bind them.
const (
	// ApprovalAmountField is the bound decimal field compared with the thresholds.
	ApprovalAmountField = "amount"
	// ApprovalCurrencyField is the bound currency field naming the threshold.
	ApprovalCurrencyField = "currency"
	// ApprovalPayeeField is the bound field the new-payee rule reads.
	ApprovalPayeeField = "payee_id"
)

// Approval is an action's approval policy: when a person must approve an
// operation with a passkey before it may be confirmed. The zero value asks
// for nothing.
type Approval struct {
	// Required is never, always or above.
	Required ApprovalRequirement `json:"required"`
	// Above maps an ISO 4217 code to the amount above which an operation in
	// that currency needs approval (exclusive: the threshold itself does not).
	Above map[string]*Decimal `json:"above,omitempty"`
	// NewPayee asks for approval the first time a subject pays a payee
	// (no completed operation of the same action to that payee_id).
	NewPayee bool `json:"new_payee,omitempty"`
	// TTL is how long after the preview the person may approve and the agent
	// confirm: it caps the fingerprint's expiry of an operation that needs
	// approval. At most the action's fingerprint_ttl; zero means that.
	TTL time.Duration `json:"ttl,omitempty"`
}

// Asks reports whether the policy can ask for approval at all (the zero
// value asks for nothing).
func (a Approval) Asks() bool {
	return a.Required == ApprovalAlways || a.Required == ApprovalAbove || a.NewPayee
}

// rawApproval mirrors Approval with the ttl as a string.
type rawApproval struct {
	Required string              `yaml:"required"`
	Above    map[string]*Decimal `yaml:"above"`
	NewPayee bool                `yaml:"new_payee"`
	TTL      string              `yaml:"ttl"`
}

// buildApproval validates r (nil: no policy) against the action's bound
// fields and fingerprint_ttl (fpTTL, 0 when it did not parse), naming the
// field of every problem.
func buildApproval(p problems, r *rawApproval, bind map[string]Field, fpTTL time.Duration) Approval {
	out := Approval{Required: ApprovalNever, TTL: fpTTL}
	if r == nil {
		return out
	}
	switch req := ApprovalRequirement(r.Required); req {
	case "", ApprovalNever:
	case ApprovalAlways, ApprovalAbove:
		out.Required = req
	default:
		p.addf("approval.required %q is unknown (want never, always or above)", r.Required)
	}
	out.NewPayee = r.NewPayee
	switch {
	case out.Required == ApprovalAbove && len(r.Above) == 0:
		p.addf("approval.above is required with required: above (a threshold per currency, such as USD: \"100.00\")")
	case out.Required != ApprovalAbove && len(r.Above) > 0:
		p.addf("approval.above applies only with required: above")
	}
	if len(r.Above) > 0 {
		out.Above = make(map[string]*Decimal, len(r.Above))
		for _, code := range slices.Sorted(maps.Keys(r.Above)) {
			if th := p.threshold(code, r.Above[code]); th != nil {
				out.Above[code] = th
			}
		}
	}
	if out.Required == ApprovalAbove {
		if f, ok := bind[ApprovalAmountField]; !ok || f.Type != TypeDecimal {
			p.addf("approval.above needs the bound decimal field %s", ApprovalAmountField)
		}
		if f, ok := bind[ApprovalCurrencyField]; !ok || !f.IsCurrency() {
			p.addf("approval.above needs the bound field %s of kind currency", ApprovalCurrencyField)
		}
	}
	if out.NewPayee {
		if f, ok := bind[ApprovalPayeeField]; !ok || f.Type != TypeString {
			p.addf("approval.new_payee needs the bound string field %s", ApprovalPayeeField)
		}
	}
	ttl, ok := p.duration("approval.ttl", r.TTL, 0, false)
	switch {
	case !ok:
	case ttl < 0:
		p.addf("approval.ttl %s must be > 0", fmtDur(ttl))
	case fpTTL > 0 && ttl > fpTTL:
		p.addf("approval.ttl %s must be <= fingerprint_ttl %s (an approval cannot outlive the fingerprint it approves)",
			fmtDur(ttl), fmtDur(fpTTL))
	case ttl > 0:
		out.TTL = ttl
	}
	return out
}

// threshold checks one approval.above entry: an active currency, a
// non-negative amount with at most that currency's decimal places.
func (p problems) threshold(code string, th *Decimal) *Decimal {
	cur, err := iso4217.Lookup(code)
	if err != nil {
		if errors.Is(err, iso4217.ErrNotActive) {
			p.addf("approval.above.%s: %q is not an active ISO 4217 currency code", code, code)
		} else {
			p.addf("approval.above.%s: %v", code, err)
		}
		return nil
	}
	if th == nil {
		p.addf("approval.above.%s: a threshold amount is required", code)
		return nil
	}
	if th.d.Negative {
		p.addf("approval.above.%s %s must be >= 0", code, th)
		return nil
	}
	if places := th.Places(); places > cur.Scale {
		p.addf("approval.above.%s %s has %d decimal places; %s allows at most %d", code, th, places, code, cur.Scale)
		return nil
	}
	return th
}

// Places returns the number of decimal places of d (trailing zeros do not
// count: 12.50 has one).
func (d *Decimal) Places() int { return max(0, -int(d.d.Exponent)) }
