package limits

import (
	"fmt"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/oncegate/oncegate/operation"
)

// Refusal names the limit an amount does not fit: the body's `limit`.
type Refusal struct {
	// Name is the budget's name.
	Name string
	// Window is the window that refuses.
	Window Window
	// Currency is the amount's currency.
	Currency string
	// Max is the window's maximum.
	Max apd.Decimal
	// Used is what the window holds.
	Used apd.Decimal
	// Left is what still fits (never below zero).
	Left apd.Decimal
	// ResetsAt is when enough leaves the window for the amount to fit;
	// zero when it never can (the amount alone exceeds the maximum, or
	// the window is per operation).
	ResetsAt time.Time
}

// Decide says whether c's amount fits every window of c given usage, what
// the truth answered each window holds (in c's order): nil when it fits,
// else the refusal that binds longest (a window that never frees first,
// then the latest to free; the first in c's order on a tie). It does no I/O.
func Decide(c operation.Charge, usage []operation.WindowUsage) (*Refusal, error) {
	if len(usage) != len(c.Windows) {
		return nil, fmt.Errorf("decide budget: %d usages for %d windows", len(usage), len(c.Windows))
	}
	var worst *Refusal
	for i, w := range c.Windows {
		r := refusal(c, w, usage[i])
		if r == nil {
			continue
		}
		if worst == nil || bindsLonger(r.ResetsAt, worst.ResetsAt) {
			worst = r
		}
	}
	return worst, nil
}

// refusal is w's refusal of c's amount with usage u, or nil when it fits.
func refusal(c operation.Charge, w operation.Window, u operation.WindowUsage) *Refusal {
	var after apd.Decimal
	_, _ = apd.BaseContext.Add(&after, &u.Used, &c.Amount) // exact: no rounding in additions of finite decimals
	if after.Cmp(&w.Max) <= 0 {
		return nil
	}
	r := &Refusal{Name: w.Name, Window: Window(w.Kind), Currency: c.Currency, Max: w.Max, Used: u.Used, ResetsAt: u.FreesAt}
	if _, err := apd.BaseContext.Sub(&r.Left, &w.Max, &u.Used); err != nil || r.Left.Sign() < 0 {
		r.Left.SetInt64(0)
	}
	return r
}

// bindsLonger reports whether a refusal freeing at a binds longer than one
// freeing at b (zero: never frees).
func bindsLonger(a, b time.Time) bool {
	switch {
	case b.IsZero():
		return false
	case a.IsZero():
		return true
	}
	return a.After(b)
}
