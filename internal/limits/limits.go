// Package limits is the limits file (ONCEGATE_LIMITS, YAML): spend budgets
// per subject or role, per action or all, per currency (per_operation, and
// rolling daily and monthly maxima), and request rates for preview and
// confirm. It loads and validates the file against the catalog, says which
// budgets and rate apply to a caller (Charge, RateFor), and decides, as a
// pure function over what the truth answered, which limit refuses an
// amount (Decide). The atomic part, checking and reserving with the claim,
// is the truth's (pgstore's claim_operation).
package limits

import (
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/go-redis/redis_rate/v10"
	"github.com/oncegate/oncegate/operation"
)

// Window is the span of one maximum of a budget.
type Window string

const (
	// PerOperation bounds one operation's amount.
	PerOperation Window = "per_operation"
	// Daily bounds what the last 24 hours' operations reserved (rolling).
	Daily Window = "daily"
	// Monthly bounds what the last 30 days' operations reserved (rolling).
	Monthly Window = "monthly"
)

// Windows lists every window, in the order a budget's maxima are checked.
var Windows = []Window{PerOperation, Daily, Monthly}

// Period is how far back w reaches; zero for PerOperation.
func (w Window) Period() time.Duration {
	switch w {
	case PerOperation:
		return 0
	case Daily:
		return 24 * time.Hour
	case Monthly:
		return 30 * 24 * time.Hour
	}
	return 0
}

// Budget is one spend budget of the file.
type Budget struct {
	// Name names the budget in answers, metrics and logs (unique).
	Name string
	// Subject is the subject it applies to (Subject or Role is set).
	Subject string
	// Role applies it to every subject of that role, each on its own.
	Role string
	// Action restricts it to one action; empty: every action's spending counts.
	Action string
	// Currency restricts it to one currency; empty: every currency, each on
	// its own (a maximum of 500 is 500 CHF for CHF and 500 EUR for EUR).
	Currency string
	// Max is each window's maximum; a window left out is unbounded.
	Max map[Window]apd.Decimal
}

// Rate is the request rates of one subject or role.
type Rate struct {
	// Subject is the subject it applies to (Subject or Role is set).
	Subject string
	// Role applies it to every subject of that role, each on its own key.
	Role string
	// Preview is the preview rate; zero is unlimited.
	Preview redis_rate.Limit
	// Confirm is the confirm rate; zero is unlimited.
	Confirm redis_rate.Limit
}

// Limits is a loaded, validated limits file. The zero value (and nil) has
// no limits.
type Limits struct {
	// Budgets are the spend budgets, in the file's order.
	Budgets []Budget
	// Rates are the request rates, in the file's order.
	Rates []Rate
}

// Kind is what a rate limits.
type Kind string

const (
	// KindPreview is POST /v1/actions/{scope}/preview.
	KindPreview Kind = "preview"
	// KindConfirm is POST /v1/actions/{scope}/confirm.
	KindConfirm Kind = "confirm"
)

// applies reports whether a rule of subject or role is the caller's.
func applies(ruleSubject, ruleRole, subject, role string) bool {
	return ruleSubject != "" && ruleSubject == subject || ruleRole != "" && ruleRole == role
}

// Charge is what an operation of subject (with role) in scope spending
// amount in currency must fit: every applicable budget's windows, in the
// file's order. It has no windows when no budget applies.
func (l *Limits) Charge(subject, role, scope string, amount apd.Decimal, currency string) operation.Charge {
	c := operation.Charge{Amount: amount, Currency: currency}
	if l == nil {
		return c
	}
	for _, b := range l.Budgets {
		if !applies(b.Subject, b.Role, subject, role) || b.Action != "" && b.Action != scope ||
			b.Currency != "" && b.Currency != currency {
			continue
		}
		for _, w := range Windows {
			if m, ok := b.Max[w]; ok {
				c.Windows = append(c.Windows, operation.Window{Name: b.Name, Kind: string(w), Scope: b.Action, Period: w.Period(), Max: m})
			}
		}
	}
	return c
}

// RateFor is the rate of kind for subject (with role): the subject's own
// rate when the file gives one, else its role's; false when unlimited.
func (l *Limits) RateFor(subject, role string, kind Kind) (redis_rate.Limit, bool) {
	if l == nil {
		return redis_rate.Limit{}, false
	}
	var found *Rate
	for i, r := range l.Rates {
		if r.Subject != "" && r.Subject == subject {
			found = &l.Rates[i]
			break
		}
		if found == nil && r.Role != "" && r.Role == role {
			found = &l.Rates[i]
		}
	}
	if found == nil {
		return redis_rate.Limit{}, false
	}
	lim := found.Preview
	if kind == KindConfirm {
		lim = found.Confirm
	}
	return lim, !lim.IsZero()
}

// Empty reports whether l limits nothing.
func (l *Limits) Empty() bool { return l == nil || len(l.Budgets) == 0 && len(l.Rates) == 0 }
