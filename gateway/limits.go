package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/iso4217"
	"github.com/oncegate/oncegate/internal/limits"
	"github.com/oncegate/oncegate/operation"

	"github.com/oncegate/oncegate/status"
)

// rateKey is the Redis key of subject's rate of kind: one key per subject
// and kind, its hash tag the subject, so that each lies in one cluster slot
// (redis_rate prefixes it with "rate:").
func rateKey(subject string, kind limits.Kind) string {
	return "{" + subject + "}:" + string(kind)
}

// rate asks the limiter whether caller may send one more request of kind.
// A limiter that cannot answer (Redis down) lets the request through:
// rates fail open (logged, counted); budgets never do.
func (s *Service) rate(ctx context.Context, caller Caller, kind limits.Kind) rateAnswer {
	lim, ok := s.limits.RateFor(caller.Subject, caller.Role, kind)
	if !ok || s.rates == nil {
		return rateAnswer{Kind: rateAllowed}
	}
	rctx, cancel := context.WithTimeout(ctx, rateTimeout)
	defer cancel()
	res, err := s.rates.Allow(rctx, rateKey(caller.Subject, kind), lim)
	if err != nil {
		s.metrics.rateFailOpen.WithLabelValues(string(kind)).Inc()
		s.log.WarnContext(ctx, "rate limiter unavailable: request let through", "subject", caller.Subject, "kind", kind, "err", err)
		return rateAnswer{Kind: rateAllowed}
	}
	if res.Allowed > 0 {
		return rateAnswer{Kind: rateAllowed}
	}
	s.metrics.rateLimited.WithLabelValues(string(kind)).Inc()
	return rateAnswer{Kind: rateLimited, RetryAfter: max(res.RetryAfter, time.Millisecond)}
}

// rateLimitedAnswer is rate_limited for action scope, with the limiter's wait.
func rateLimitedAnswer(scope string, wait time.Duration) Answer {
	a := scopedAnswer(status.RateLimited, scope)
	a.RetryAfter = wait
	return a
}

// rateTimeout bounds one rate check; past it the request goes through.
const rateTimeout = 150 * time.Millisecond

// charge is what an operation of caller with params bp spends of its budgets:
// nil when action declares no spend.
func (s *Service) charge(caller Caller, action *catalog.Action, bp boundParams) (*operation.Charge, error) {
	if action.Spend == nil {
		return nil, nil
	}
	n, _ := bp.normalized[action.Spend.Amount].(json.Number)
	currency, _ := bp.normalized[action.Spend.Currency].(string)
	amount, _, err := apd.NewFromString(string(n))
	if err != nil || currency == "" {
		return nil, fmt.Errorf("spend of %s: amount %q, currency %q", action.Scope, n, currency)
	}
	c := s.limits.Charge(caller.Subject, caller.Role, action.Scope, *amount, currency)
	return &c, nil
}

// LimitView is a refusal as the body's `limit` shows it; money as strings
// in the currency's scale.
type LimitView struct {
	// Name is the budget's name.
	Name string `json:"name"`
	// Window is per_operation, daily or monthly.
	Window string `json:"window"`
	// Currency is the amount's currency.
	Currency string `json:"currency"`
	// Max is the window's maximum.
	Max string `json:"max"`
	// Used is what the window holds.
	Used string `json:"used"`
	// Left is what still fits.
	Left string `json:"left"`
	// ResetsAt is when the amount would fit; nil when never.
	ResetsAt *string `json:"resets_at"`
}

// limitViewOf is r as the body shows it.
func limitViewOf(r *limits.Refusal) LimitView {
	v := LimitView{Name: r.Name, Window: string(r.Window), Currency: r.Currency,
		Max: money(r.Max, r.Currency), Used: money(r.Used, r.Currency), Left: money(r.Left, r.Currency)}
	if !r.ResetsAt.IsZero() {
		at := r.ResetsAt.UTC().Format(time.RFC3339)
		v.ResetsAt = &at
	}
	return v
}

// money writes d with currency's decimal places (1000 CHF is "1000.00").
func money(d apd.Decimal, currency string) string {
	c, err := iso4217.Lookup(currency)
	if err != nil || -int(d.Exponent) > c.Scale {
		return d.Text('f')
	}
	var q apd.Decimal
	if _, err := apd.BaseContext.WithPrecision(40).Quantize(&q, &d, -int32(c.Scale)); err != nil {
		return d.Text('f')
	}
	return q.Text('f')
}

// limitExceededAnswer refuses a confirm over budget; nothing was claimed.
func limitExceededAnswer(scope, opID string, r *limits.Refusal) Answer {
	out := opAnswer(status.LimitExceeded, opID).With("limit", limitViewOf(r))
	out.Scope = scope
	return out
}

// overBudget decides the truth's refusal of call's claim over the windows'
// usage, counting it.
func (s *Service) overBudget(ctx context.Context, call *confirmCall, usage []operation.WindowUsage) Answer {
	nonce := call.opID()
	if call.charge == nil {
		return InternalErrorAnswer(nonce, fmt.Errorf("confirm %s: refused over budget without a charge", nonce))
	}
	r, err := limits.Decide(*call.charge, usage)
	if err == nil && r == nil {
		err = fmt.Errorf("the truth refused what fits every window")
	}
	if err != nil {
		return InternalErrorAnswer(nonce, fmt.Errorf("confirm %s: %w", nonce, err))
	}
	s.metrics.limitRefusals.WithLabelValues(r.Name, string(r.Window)).Inc()
	s.log.InfoContext(ctx, "limit exceeded", "operation_id", nonce, "subject", call.req.Caller.Subject, "limit", r.Name,
		"window", r.Window, "trace_id", call.trace(ctx))
	return limitExceededAnswer(call.action.Scope, nonce, r)
}

// previewWarning is the refusal a confirm of c would meet now, read from the
// truth without locking (nil when it fits, or when it cannot be read: the
// confirm checks again).
func (s *Service) previewWarning(ctx context.Context, subject string, c *operation.Charge) *limits.Refusal {
	if c == nil || len(c.Windows) == 0 || s.budgets == nil {
		return nil
	}
	usage, err := s.budgets.Usage(ctx, subject, *c)
	if err != nil {
		s.log.WarnContext(ctx, "preview: budget usage unreadable; no warning", "subject", subject, "err", err)
		return nil
	}
	r, err := limits.Decide(*c, usage)
	if err != nil {
		s.log.WarnContext(ctx, "preview: budget usage", "subject", subject, "err", err)
		return nil
	}
	return r
}

// budgetCollector exports, at each scrape, what each window of every
// subject's own budget in one currency holds and its maximum, read from the
// truth (oncegate_budget_used, oncegate_budget_max), so that an alert sees
// a subject near its budget. Budgets of a role or of every currency have no
// fixed series and are left out.
type budgetCollector struct {
	s         *Service
	used, max *prometheus.Desc
}

// newBudgetCollector returns the collector of s's budgets.
func newBudgetCollector(s *Service) *budgetCollector {
	labels := []string{"subject", "budget", "window", "currency"}
	return &budgetCollector{s: s,
		used: prometheus.NewDesc("oncegate_budget_used", "What a window of a subject's budget holds now (reservations that count), in its currency.", labels, nil),
		max:  prometheus.NewDesc("oncegate_budget_max", "The maximum of a window of a subject's budget, in its currency.", labels, nil),
	}
}

// Describe sends the descriptors.
func (c *budgetCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.used; ch <- c.max }

// Collect reads each budget's usage (one query per budget, bounded).
func (c *budgetCollector) Collect(ch chan<- prometheus.Metric) {
	if c.s.budgets == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, b := range c.s.limits.Budgets {
		if b.Subject == "" || b.Currency == "" {
			continue
		}
		one := limits.Limits{Budgets: []limits.Budget{b}}
		charge := one.Charge(b.Subject, "", b.Action, apd.Decimal{}, b.Currency)
		usage, err := c.s.budgets.Usage(ctx, b.Subject, charge)
		if err != nil || len(usage) != len(charge.Windows) {
			c.s.log.Warn("budget metrics: usage unreadable", "budget", b.Name, "err", err)
			continue
		}
		for i, w := range charge.Windows {
			if w.Period == 0 {
				continue
			}
			used, _ := usage[i].Used.Float64()
			maxV, _ := w.Max.Float64()
			ch <- prometheus.MustNewConstMetric(c.used, prometheus.GaugeValue, used, b.Subject, b.Name, w.Kind, b.Currency)
			ch <- prometheus.MustNewConstMetric(c.max, prometheus.GaugeValue, maxV, b.Subject, b.Name, w.Kind, b.Currency)
		}
	}
}
