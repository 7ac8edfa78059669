package api

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/go-redis/redis_rate/v10"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/oncegate/oncegate/api/auth"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/iso4217"
	"github.com/oncegate/oncegate/internal/limits"

	"github.com/oncegate/oncegate/status"
)

// RateLimiter is the GCRA limiter of the subjects' request rates
// (*redis_rate.Limiter on the gateway's Redis satisfies it).
type RateLimiter interface {
	// Allow counts one request under key and says whether it is allowed
	// and, if not, how long to wait.
	Allow(ctx context.Context, key string, limit redis_rate.Limit) (*redis_rate.Result, error)
}

var _ RateLimiter = (*redis_rate.Limiter)(nil)

// BudgetOps reads the truth's budget windows without locking (the
// preview's warning, the ops view) and resets them (pgstore satisfies it).
type BudgetOps interface {
	// Usage is what each window of c holds of subject's reservations and
	// when c.Amount would fit it.
	Usage(ctx context.Context, subject string, c idemstore.Charge) ([]idemstore.WindowUsage, error)
	// Currencies lists the currencies subject holds reservations in since since.
	Currencies(ctx context.Context, subject string, since time.Time) ([]string, error)
	// ResetBudget starts r.Subject's windows afresh.
	ResetBudget(ctx context.Context, r idemstore.BudgetReset) (idemstore.BudgetReset, error)
	// LastReset is subject's last reset, or idemstore.ErrNotFound.
	LastReset(ctx context.Context, subject string) (idemstore.BudgetReset, error)
}

// rateKey is the Redis key of subject's rate of kind: one key per subject
// and kind, its hash tag the subject, so that each lies in one cluster slot
// (redis_rate prefixes it with "rate:").
func rateKey(subject string, kind limits.Kind) string {
	return "{" + subject + "}:" + string(kind)
}

// rateLimited answers rate_limited when id has sent more kind requests
// than its rate allows. A limiter that cannot answer (Redis down) lets the
// request through: rates fail open (logged, counted); budgets never do.
func (s *Server) rateLimited(ctx context.Context, id auth.Identity, kind limits.Kind, scope string) (reply, bool) {
	lim, ok := s.limits.RateFor(id.Subject, id.Role, kind)
	if !ok || s.rates == nil {
		return reply{}, false
	}
	rctx, cancel := context.WithTimeout(ctx, rateTimeout)
	defer cancel()
	res, err := s.rates.Allow(rctx, rateKey(id.Subject, kind), lim)
	if err != nil {
		s.metrics.rateFailOpen.WithLabelValues(string(kind)).Inc()
		s.log.WarnContext(ctx, "rate limiter unavailable: request let through", "subject", id.Subject, "kind", kind, "err", err)
		return reply{}, false
	}
	if res.Allowed > 0 {
		return reply{}, false
	}
	s.metrics.rateLimited.WithLabelValues(string(kind)).Inc()
	r := scopedReply(status.RateLimited, scope)
	r.retryAfter = max(res.RetryAfter, time.Millisecond)
	return r, true
}

// rateTimeout bounds one rate check; past it the request goes through.
const rateTimeout = 150 * time.Millisecond

// charge is what an operation of id with params bp spends of id's budgets:
// nil when action declares no spend.
func (s *Server) charge(id auth.Identity, action *catalog.Action, bp boundParams) (*idemstore.Charge, error) {
	if action.Spend == nil {
		return nil, nil
	}
	n, _ := bp.normalized[action.Spend.Amount].(json.Number)
	currency, _ := bp.normalized[action.Spend.Currency].(string)
	amount, _, err := apd.NewFromString(string(n))
	if err != nil || currency == "" {
		return nil, fmt.Errorf("spend of %s: amount %q, currency %q", action.Scope, n, currency)
	}
	c := s.limits.Charge(id.Subject, id.Role, action.Scope, *amount, currency)
	return &c, nil
}

// limitView is a refusal as the body's `limit` shows it; money as strings
// in the currency's scale.
type limitView struct {
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
func limitViewOf(r *limits.Refusal) limitView {
	v := limitView{Name: r.Name, Window: string(r.Window), Currency: r.Currency,
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

// limitExceededReply refuses a confirm over budget; nothing was claimed.
func limitExceededReply(scope, opID string, r *limits.Refusal) reply {
	out := opReply(status.LimitExceeded, opID).with("limit", limitViewOf(r))
	out.scope = scope
	return out
}

// overBudget decides the truth's refusal of a claim with charge c and the
// windows' usage, counting it.
func (s *Server) overBudget(ctx context.Context, call confirmCall, c *idemstore.Charge, usage []idemstore.WindowUsage) reply {
	nonce := call.payload.Nonce
	if c == nil {
		return internalErrorReply(nonce, fmt.Errorf("confirm %s: refused over budget without a charge", nonce))
	}
	r, err := limits.Decide(*c, usage)
	if err == nil && r == nil {
		err = fmt.Errorf("the truth refused what fits every window")
	}
	if err != nil {
		return internalErrorReply(nonce, fmt.Errorf("confirm %s: %w", nonce, err))
	}
	s.metrics.limitRefusals.WithLabelValues(r.Name, string(r.Window)).Inc()
	s.log.InfoContext(ctx, "limit exceeded", "operation_id", nonce, "subject", call.id.Subject, "limit", r.Name,
		"window", r.Window, "trace_id", call.traceID)
	return limitExceededReply(call.action.Scope, nonce, r)
}

// previewWarning is the refusal a confirm of c would meet now, read from the
// truth without locking (nil when it fits, or when it cannot be read: the
// confirm checks again).
func (s *Server) previewWarning(ctx context.Context, subject string, c *idemstore.Charge) *limits.Refusal {
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
	s         *Server
	used, max *prometheus.Desc
}

// newBudgetCollector returns the collector of s's budgets.
func newBudgetCollector(s *Server) *budgetCollector {
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
