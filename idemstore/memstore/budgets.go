package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cockroachdb/apd/v3"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/operation"
)

// reservation is what one claimed operation spends of its subject's
// budgets: it counts in their windows until it is released.
type reservation struct {
	operationID, subject, scope, currency string
	amount                                apd.Decimal
	reservedAt                            time.Time
	// releasedAt is when a proof that nothing ran gave it back (zero: it counts).
	releasedAt time.Time
	// releasedBy is the failure kind that released it.
	releasedBy string
}

// reserve keeps c.Charge's amount as c's reservation, made at now (the
// caller holds the lock).
func (s *Store) reserve(c idemstore.Claim, now time.Time) {
	r := &reservation{operationID: c.OperationID, subject: c.Subject, scope: c.Scope, currency: c.Charge.Currency, reservedAt: now}
	r.amount.Set(&c.Charge.Amount)
	s.reservations[c.OperationID] = r
}

// release gives opID's reservation back, at now, because of kind (the
// caller holds the lock); one released already stays as it was.
func (s *Store) release(opID, kind string, now time.Time) {
	if r, ok := s.reservations[opID]; ok && r.releasedAt.IsZero() {
		r.releasedAt, r.releasedBy = now, kind
	}
}

// usage is what each window of c holds at now of subject's reservations in
// c.Currency, and when enough of them leave it for c.Amount to fit (the
// caller holds the lock). A window counts the reservations that are not
// released, made after both its period's start and the subject's last
// reset, of its scope when it has one; a per-operation window (no period)
// holds nothing and never frees.
func (s *Store) usage(subject string, c operation.Charge, now time.Time) []operation.WindowUsage {
	out := make([]operation.WindowUsage, len(c.Windows))
	for i, w := range c.Windows {
		if w.Period <= 0 {
			continue
		}
		since := now.Add(-w.Period)
		if reset, ok := s.resets[subject]; ok {
			since = latest(since, reset.At)
		}
		var in []*reservation
		for _, r := range s.reservations {
			if r.subject == subject && r.currency == c.Currency && r.releasedAt.IsZero() && r.reservedAt.After(since) &&
				(w.Scope == "" || r.scope == w.Scope) {
				in = append(in, r)
			}
		}
		slices.SortFunc(in, func(a, b *reservation) int {
			return cmp.Or(a.reservedAt.Compare(b.reservedAt), cmp.Compare(a.operationID, b.operationID))
		})
		for _, r := range in {
			add(&out[i].Used, &r.amount)
		}
		// The oldest reservations leave first: the window frees when the
		// one leaves after which the rest and the amount fit (never, for
		// an amount above the max).
		var rest apd.Decimal
		rest.Set(&out[i].Used)
		for _, r := range in {
			sub(&rest, &r.amount)
			if fitsWindow(&rest, &c.Amount, &w.Max) {
				out[i].FreesAt = r.reservedAt.Add(w.Period)
				break
			}
		}
	}
	return out
}

// fits reports whether c.Amount fits every window of c given usage.
func fits(c operation.Charge, usage []operation.WindowUsage) bool {
	for i, w := range c.Windows {
		if !fitsWindow(&usage[i].Used, &c.Amount, &w.Max) {
			return false
		}
	}
	return true
}

// fitsWindow reports whether used + amount is at most max.
func fitsWindow(used, amount, max *apd.Decimal) bool {
	var after apd.Decimal
	after.Set(used)
	add(&after, amount)
	return after.Cmp(max) <= 0
}

// add sets d to d + x, exactly (finite decimals add without rounding).
// Decimals are never copied by value here: a large one shares its digits.
func add(d, x *apd.Decimal) { _, _ = apd.BaseContext.Add(d, d, x) }

// sub sets d to d - x, exactly.
func sub(d, x *apd.Decimal) { _, _ = apd.BaseContext.Sub(d, d, x) }

// Usage reads what each window of c holds of subject's reservations in
// c.Currency and when c.Amount would fit it, without writing (nil without
// windows).
func (s *Store) Usage(_ context.Context, subject string, c operation.Charge) ([]operation.WindowUsage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(uncounted); err != nil {
		return nil, fmt.Errorf("usage %s: %w", subject, err)
	}
	if len(c.Windows) == 0 {
		return nil, nil
	}
	return s.usage(subject, c, s.now()), nil
}

// Currencies lists, sorted, the currencies subject holds reservations that
// count in, made after since.
func (s *Store) Currencies(_ context.Context, subject string, since time.Time) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(uncounted); err != nil {
		return nil, fmt.Errorf("currencies %s: %w", subject, err)
	}
	var out []string
	for _, r := range s.reservations {
		if r.subject == subject && r.releasedAt.IsZero() && r.reservedAt.After(since) && !slices.Contains(out, r.currency) {
			out = append(out, r.currency)
		}
	}
	slices.Sort(out)
	return out, nil
}

// ResetBudget starts r.Subject's windows afresh at the store's now and
// returns the reset as recorded.
func (s *Store) ResetBudget(_ context.Context, r idemstore.BudgetReset) (idemstore.BudgetReset, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(uncounted); err != nil {
		return idemstore.BudgetReset{}, fmt.Errorf("reset budget %s: %w", r.Subject, err)
	}
	r.At = s.now()
	s.resets[r.Subject] = r
	return r, nil
}

// LastReset returns subject's last reset, or idemstore.ErrNotFound.
func (s *Store) LastReset(_ context.Context, subject string) (idemstore.BudgetReset, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.answer(uncounted); err != nil {
		return idemstore.BudgetReset{}, fmt.Errorf("last reset %s: %w", subject, err)
	}
	r, ok := s.resets[subject]
	if !ok {
		return idemstore.BudgetReset{}, fmt.Errorf("last reset %s: %w", subject, idemstore.ErrNotFound)
	}
	return r, nil
}
