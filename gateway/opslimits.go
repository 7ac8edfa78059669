package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cockroachdb/apd/v3"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/limits"
	"github.com/oncegate/oncegate/internal/telemetry"
	"github.com/oncegate/oncegate/operation"

	"github.com/oncegate/oncegate/status"
)

// windowView is one window of a subject's budget as the ops view shows it.
// A budget without currency counts each currency on its own: it has one
// view per currency the subject holds reservations in, or, when it holds
// none yet, one view with Currency empty, so that every budget that can
// refuse the subject is shown.
type windowView struct {
	// Name is the budget's name.
	Name string `json:"name"`
	// Window is per_operation, daily or monthly.
	Window string `json:"window"`
	// Action is the one action it counts; empty: every action.
	Action string `json:"action,omitempty"`
	// Currency is the currency; empty for a budget without currency while
	// the subject holds no reservation in any currency: such a budget
	// counts every currency on its own, so it is shown once, with used 0
	// and left = max, for any currency.
	Currency string `json:"currency"`
	// Max is the maximum.
	Max string `json:"max"`
	// Used is what the window holds now (0 for per_operation).
	Used string `json:"used"`
	// Left is what still fits.
	Left string `json:"left"`
	// NextFreeAt is when the oldest reservation leaves the window; absent
	// when none counts.
	NextFreeAt *string `json:"next_free_at,omitempty"`
}

// Limits shows an operator the subject's budgets (its own, and its
// role's: agent unless role says otherwise) with
// what each window holds and what is left, and its rates. A budget without
// currency is shown per currency of the subject's reservations, or with
// currency "" (used 0, left = max) when it holds none yet (see windowView).
func (s *Service) Limits(ctx context.Context, subject, role string) Answer {
	role = strings.TrimSpace(role)
	if role == "" {
		role = RoleAgent
	}
	if s.budgets == nil {
		return UnavailableAnswer("", DetailPostgresDown)
	}
	var out []windowView
	for _, b := range s.limits.Budgets {
		if b.Subject != subject && (b.Role == "" || b.Role != role) {
			continue
		}
		currencies := []string{b.Currency}
		if b.Currency == "" {
			cs, err := s.budgets.Currencies(ctx, subject, s.now().Add(-limits.Monthly.Period()))
			if err != nil {
				return s.storeErrorAnswer("", "", fmt.Errorf("limits of %s: %w", subject, err))
			}
			currencies = cs
			if len(cs) == 0 {
				currencies = []string{""}
			}
		}
		for _, cur := range currencies {
			one := limits.Limits{Budgets: []limits.Budget{b}}
			charge := one.Charge(subject, role, b.Action, apd.Decimal{}, cur)
			usage, err := s.budgets.Usage(ctx, subject, charge)
			if err != nil {
				return s.storeErrorAnswer("", "", fmt.Errorf("limits of %s: %w", subject, err))
			}
			for i, w := range charge.Windows {
				out = append(out, windowOf(w, cur, usage[i]))
			}
		}
	}
	view := map[string]any{"subject": subject, "role": role, "budgets": out}
	if out == nil {
		view["budgets"] = []windowView{}
	}
	for _, k := range []limits.Kind{limits.KindPreview, limits.KindConfirm} {
		if lim, ok := s.limits.RateFor(subject, role, k); ok {
			view[string(k)+"_rate"] = lim.String()
		}
	}
	if r, err := s.budgets.LastReset(ctx, subject); err == nil {
		view["last_reset"] = r
	} else if !errors.Is(err, idemstore.ErrNotFound) {
		return s.storeErrorAnswer("", "", fmt.Errorf("limits of %s: %w", subject, err))
	}
	r := NewAnswer(status.LimitsShown).With("limits", view)
	r.Words.State = subject
	return r
}

// windowOf is window w in currency as the ops view shows it, with usage u.
func windowOf(w operation.Window, currency string, u operation.WindowUsage) windowView {
	v := windowView{Name: w.Name, Window: w.Kind, Action: w.Scope, Currency: currency, Max: money(w.Max, currency),
		Used: money(u.Used, currency)}
	var left apd.Decimal
	if _, err := apd.BaseContext.Sub(&left, &w.Max, &u.Used); err != nil || left.Sign() < 0 {
		left.SetInt64(0)
	}
	v.Left = money(left, currency)
	if !u.FreesAt.IsZero() && u.Used.Sign() > 0 {
		at := u.FreesAt.UTC().Format(time.RFC3339)
		v.NextFreeAt = &at
	}
	return v
}

// ResetLimits starts the subject's windows afresh (reservations before
// now no longer count).
// Audited: logged with the operator and the trace id, counted, and kept in
// the truth (budget_reset).
func (s *Service) ResetLimits(ctx context.Context, caller Caller, subject string) Answer {
	traceID := telemetry.TraceID(ctx)
	if s.budgets == nil {
		return UnavailableAnswer("", DetailPostgresDown)
	}
	operator := caller.Subject
	reset, err := s.budgets.ResetBudget(ctx, idemstore.BudgetReset{Subject: subject, By: operator, TraceID: traceID})
	if err != nil {
		return s.storeErrorAnswer("", "", fmt.Errorf("reset limits of %s: %w", subject, err))
	}
	s.metrics.limitResets.WithLabelValues(operator).Inc()
	s.log.WarnContext(ctx, "budget windows reset", "subject", subject, "operator", operator, "reset_at", reset.At,
		"trace_id", traceID)
	r := NewAnswer(status.LimitsReset).With("reset", reset)
	r.Words.State = subject
	return r
}
