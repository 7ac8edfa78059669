package catalog

import (
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/oncegate/oncegate/approval"
	"github.com/oncegate/oncegate/internal/iso4217"
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

// rawApproval is an action's approval policy as the YAML writes it.
type rawApproval struct {
	Required  string              `yaml:"required"`
	Above     map[string]*Decimal `yaml:"above"`
	NewPayee  bool                `yaml:"new_payee"`
	TTL       string              `yaml:"ttl"`
	Approvers *rawApprovers       `yaml:"approvers"`
	Mandates  string              `yaml:"mandates"`
}

// The values of approval.mandates.
const (
	// MandatesNever: no standing mandate covers the action's operations
	// (the default).
	MandatesNever = "never"
	// MandatesAllowed: a standing mandate of the subject may cover an
	// operation instead of the per-operation approval.
	MandatesAllowed = "allowed"
)

// rawApprovers names the approvers as the YAML writes them.
type rawApprovers struct {
	Role              string `yaml:"role"`
	Count             int    `yaml:"count"`
	SubjectMayApprove bool   `yaml:"subject_may_approve"`
}

// MaxApprovers bounds approval.approvers.count.
const MaxApprovers = 10

// buildApproval validates r (nil: no policy) against the action's bound
// fields and fingerprint_ttl (fpTTL, 0 when it did not parse), naming the
// field of every problem.
func buildApproval(p problems, r *rawApproval, bind map[string]Field, fpTTL time.Duration) approval.Policy {
	out := approval.Policy{Required: approval.RequireNever, TTL: fpTTL}
	if r == nil {
		return out
	}
	switch req := approval.Requirement(r.Required); req {
	case "", approval.RequireNever:
	case approval.RequireAlways, approval.RequireAbove:
		out.Required = req
	default:
		p.addf("approval.required %q is unknown (want never, always or above)", r.Required)
	}
	out.NewPayee = r.NewPayee
	switch {
	case out.Required == approval.RequireAbove && len(r.Above) == 0:
		p.addf("approval.above is required with required: above (a threshold per currency, such as USD: \"100.00\")")
	case out.Required != approval.RequireAbove && len(r.Above) > 0:
		p.addf("approval.above applies only with required: above")
	}
	if len(r.Above) > 0 {
		out.Above = make(map[string]*apd.Decimal, len(r.Above))
		for _, code := range slices.Sorted(maps.Keys(r.Above)) {
			if th := p.threshold(code, r.Above[code]); th != nil {
				out.Above[code] = th.Apd()
			}
		}
	}
	if out.Required == approval.RequireAbove {
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
	out.Approvers = buildApprovers(p, r.Approvers, out.Asks())
	out.Mandates = buildMandates(p, r.Mandates, out.Asks(), bind)
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

// buildApprovers validates approval.approvers (nil: the subject alone)
// of a policy that asks for approval (asks).
func buildApprovers(p problems, r *rawApprovers, asks bool) *approval.Approvers {
	if r == nil {
		return nil
	}
	ok := true
	if !asks {
		p.addf("approval.approvers applies only to a policy that asks for approval (required: always or above, or new_payee)")
		ok = false
	}
	if !approval.ValidRole(r.Role) {
		p.addf("approval.approvers.role %q must be a role name (letters, digits, ., _, -; 1 to 64)", r.Role)
		ok = false
	}
	if r.Count < 1 || r.Count > MaxApprovers {
		p.addf("approval.approvers.count %d must be between 1 and %d", r.Count, MaxApprovers)
		ok = false
	}
	if !ok {
		return nil
	}
	return &approval.Approvers{Role: r.Role, Count: r.Count, SubjectMayApprove: r.SubjectMayApprove}
}

// buildMandates validates approval.mandates (v) of a policy that asks for
// approval (asks): a mandate bounds the amount, its currency and the payee,
// so the action must bind all three.
func buildMandates(p problems, v string, asks bool, bind map[string]Field) bool {
	switch v {
	case "", MandatesNever:
		return false
	case MandatesAllowed:
	default:
		p.addf("approval.mandates %q is unknown (want never or allowed)", v)
		return false
	}
	ok := true
	if !asks {
		p.addf("approval.mandates applies only to a policy that asks for approval (required: always or above, or new_payee)")
		ok = false
	}
	if f, found := bind[ApprovalAmountField]; !found || f.Type != TypeDecimal {
		p.addf("approval.mandates needs the bound decimal field %s", ApprovalAmountField)
		ok = false
	}
	if f, found := bind[ApprovalCurrencyField]; !found || !f.IsCurrency() {
		p.addf("approval.mandates needs the bound field %s of kind currency", ApprovalCurrencyField)
		ok = false
	}
	if f, found := bind[ApprovalPayeeField]; !found || f.Type != TypeString {
		p.addf("approval.mandates needs the bound string field %s", ApprovalPayeeField)
		ok = false
	}
	return ok
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
