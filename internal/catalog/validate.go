package catalog

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/oncegate/oncegate/internal/downstream"
	"github.com/oncegate/oncegate/internal/plan"
)

// MaxAttempts bounds an action's downstream attempts.
const MaxAttempts = 100

// ErrInvalid is wrapped by every *ValidationError.
var ErrInvalid = errors.New("invalid catalog")

// ValidationError lists every problem found in a catalog, each naming the
// action and the field.
type ValidationError struct {
	// Problems holds one message per problem, such as
	// "payments.transfer: terminal_ttl 10m must be >= fingerprint_ttl 15m".
	Problems []string
}

// Error joins the problems.
func (e *ValidationError) Error() string {
	return ErrInvalid.Error() + ": " + strings.Join(e.Problems, "; ")
}

// Unwrap returns ErrInvalid.
func (e *ValidationError) Unwrap() error { return ErrInvalid }

// Scopes returns the scopes of the catalog, sorted.
func (c *Catalog) Scopes() []string { return slices.Sorted(maps.Keys(c.Actions)) }

// WorstCase returns the longest an operation of a can stay IN_FLIGHT before
// its outcome is known or it goes to manual review: plan.Downstream.Worst of
// the plan the workflow runs (the execute call with all its retries, the
// reconciliation after an unknown answer, the pending wait) plus
// gatewayWait. in_flight_ttl must exceed it.
func (a *Action) WorstCase(gatewayWait time.Duration) time.Duration {
	pl := a.Downstream.Plan()
	return pl.Worst(gatewayWait)
}

// fmtDur writes d as time.Duration does without its zero tails: 10m, 720h, 41.5s.
func fmtDur(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// problems collects the messages of one action.
type problems struct {
	scope string
	list  *[]string
}

func (p problems) addf(format string, args ...any) {
	*p.list = append(*p.list, p.scope+": "+fmt.Sprintf(format, args...))
}

// duration parses the named duration s; empty is def (or a problem when
// required). ok is false when a problem was reported.
func (p problems) duration(name, s string, def time.Duration, required bool) (time.Duration, bool) {
	if s == "" {
		if required {
			p.addf("%s is required (a duration such as 10m)", name)
			return 0, false
		}
		return def, true
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		p.addf("%s %q is not a duration such as 10m", name, s)
		return 0, false
	}
	return d, true
}

// positive parses a required duration that must be > 0.
func (p problems) positive(name, s string) (time.Duration, bool) {
	d, ok := p.duration(name, s, 0, true)
	if ok && d <= 0 {
		p.addf("%s %s must be > 0", name, fmtDur(d))
		return d, false
	}
	return d, ok
}

// build applies the defaults and validates every action.
func build(raw rawCatalog, gatewayWait time.Duration) (*Catalog, error) {
	var list []string
	if gatewayWait < 0 {
		list = append(list, fmt.Sprintf("gateway wait %s must be >= 0", fmtDur(gatewayWait)))
	}
	if len(raw.Actions) == 0 {
		list = append(list, "no actions: declare at least one under actions:")
	}
	c := &Catalog{Actions: make(map[string]*Action, len(raw.Actions)), GatewayWait: gatewayWait}
	for _, scope := range slices.Sorted(maps.Keys(raw.Actions)) {
		c.Actions[scope] = buildAction(problems{scope: scope, list: &list}, scope, raw.Actions[scope], gatewayWait)
	}
	if len(list) > 0 {
		return nil, &ValidationError{Problems: list}
	}
	return c, nil
}

func validScope(s string) bool {
	if s == "" || s[0] == '.' || s[len(s)-1] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func knownType(t FieldType) bool {
	switch t {
	case TypeString, TypeDecimal, TypeInteger, TypeBoolean:
		return true
	}
	return false
}

func buildAction(p problems, scope string, r rawAction, gatewayWait time.Duration) *Action {
	if !validScope(scope) {
		p.addf("scope must be made of A-Z a-z 0-9 . _ - and not start or end with '.'")
	}
	a := &Action{
		Scope:        scope,
		Description:  r.Description,
		Title:        r.Title,
		Bind:         r.Bind,
		Free:         r.Free,
		SummaryField: r.SummaryField,
		Spend:        r.Spend,
	}
	if a.Bind == nil {
		a.Bind = map[string]Field{}
	}
	if a.Free == nil {
		a.Free = map[string]FreeField{}
	}
	if len(a.Bind) == 0 {
		p.addf("bind is empty: declare at least one bound field")
	}
	p.decodeBind(a.Bind)
	for _, name := range slices.Sorted(maps.Keys(a.Bind)) {
		f := a.Bind[name]
		switch {
		case f.Type == "":
			p.addf("bind.%s: type is required (string, decimal, integer or boolean)", name)
		case !knownType(f.Type):
			p.addf("bind.%s: unknown type %q (want string, decimal, integer or boolean)", name, f.Type)
		}
		for _, n := range f.Normalize {
			switch {
			case n != "trim" && n != "upper" && n != "lower":
				p.addf("bind.%s: unknown normalizer %q (want trim, upper or lower)", name, n)
			case f.Type != TypeString && knownType(f.Type):
				p.addf("bind.%s: normalizer %s applies to strings only, not to %s fields", name, n, f.Type)
			}
		}
		if _, both := a.Free[name]; both {
			p.addf("field %s is both bound and free: declare it once", name)
		}
		p.checkConstraints(name, &f, a.Bind)
		a.Bind[name] = f
	}
	for _, name := range slices.Sorted(maps.Keys(a.Free)) {
		f := a.Free[name]
		if f.Type == "" {
			f.Type = TypeString
			a.Free[name] = f
		}
		if !knownType(f.Type) {
			p.addf("free.%s: unknown type %q (want string, decimal, integer or boolean)", name, f.Type)
		}
		p.checkFreeConstraints(name, f)
	}
	if a.SummaryField != "" {
		_, bound := a.Bind[a.SummaryField]
		_, free := a.Free[a.SummaryField]
		if !bound && !free {
			p.addf("summary_field %q is neither bound nor free", a.SummaryField)
		}
	}
	if a.Spend != nil {
		checkSpend(p, *a.Spend, a.Bind)
	}

	fpOK, ifOK, termOK := false, false, false
	a.FingerprintTTL, fpOK = p.positive("fingerprint_ttl", r.FingerprintTTL)
	a.InFlightTTL, ifOK = p.positive("in_flight_ttl", r.InFlightTTL)
	a.TerminalTTL, termOK = p.positive("terminal_ttl", r.TerminalTTL)
	dupOK := false
	if a.DuplicateIntentWindow, dupOK = p.duration("duplicate_intent_window", r.DuplicateIntentWindow, DefaultDuplicateIntentWindow, false); dupOK && a.DuplicateIntentWindow < 0 {
		p.addf("duplicate_intent_window %s must be >= 0", fmtDur(a.DuplicateIntentWindow))
	}
	if a.Title == "" {
		a.Title = scope
	}
	fpForApproval := time.Duration(0)
	if fpOK {
		fpForApproval = a.FingerprintTTL
	}
	a.Approval = buildApproval(p, r.Approval, a.Bind, fpForApproval)
	a.Auth = buildAuth(p, r.Auth)
	if fpOK && termOK && a.TerminalTTL < a.FingerprintTTL {
		p.addf("terminal_ttl %s must be >= fingerprint_ttl %s (a result must be replayable as long as its fingerprint can be confirmed)",
			fmtDur(a.TerminalTTL), fmtDur(a.FingerprintTTL))
	}

	downOK := buildDownstream(p, &a.Downstream, r.Downstream)
	if ifOK && downOK && gatewayWait >= 0 {
		if worst := a.WorstCase(gatewayWait); a.InFlightTTL <= worst {
			p.addf("in_flight_ttl %s must be > worst case %s (%s)", fmtDur(a.InFlightTTL), fmtDur(worst), worstTerms(a.Downstream.Plan(), gatewayWait))
		}
	}
	return a
}

// checkSpend refuses a spend declaration whose amount is not a required
// bound decimal or whose currency is not a required bound currency field.
func checkSpend(p problems, s Spend, bind map[string]Field) {
	if f, ok := bind[s.Amount]; !ok || f.Type != TypeDecimal || !f.Required {
		p.addf("spend.amount %q must name a required bound decimal field", s.Amount)
	}
	if f, ok := bind[s.Currency]; !ok || !f.IsCurrency() || !f.Required {
		p.addf("spend.currency %q must name a required bound field of kind currency", s.Currency)
	}
}

// worstTerms spells out the sum plan.Downstream.Worst takes of pl.
func worstTerms(pl plan.Downstream, gatewayWait time.Duration) string {
	exec, query := pl.Execute, pl.StatusQuery
	msg := fmt.Sprintf("timeout %s × %d attempts + backoff %s + gateway wait %s",
		fmtDur(exec.Timeout), exec.Attempts, fmtDur(exec.Waits()), fmtDur(gatewayWait))
	if pl.Reconciles() {
		msg += fmt.Sprintf(" + reconciliation %s: reconcile delay %s + status query %s (timeout %s × %d reconcile attempts + backoff %s)",
			fmtDur(pl.ReconcileWorst()), fmtDur(pl.ReconcileDelay), fmtDur(query.Worst()),
			fmtDur(query.Timeout), query.Attempts, fmtDur(query.Waits()))
		if pl.ProvesNotExecuted() {
			msg += fmt.Sprintf(" + max processing time %s + status lag %s + one more status query", fmtDur(pl.MaxProcessingTime), fmtDur(pl.StatusLag))
		}
	}
	if pl.Pends() {
		msg += fmt.Sprintf(" + completion deadline %s + one status query", fmtDur(pl.Business.CompletionDeadline))
	}
	return msg
}

// buildDownstream fills d from r and reports whether the numbers that enter
// the worst case are valid.
func buildDownstream(p problems, d *Downstream, r rawDownstream) bool {
	ok := true
	d.Kind, d.Endpoint, d.Quote, d.ResultRef = r.Kind, r.Endpoint, r.Quote, r.ResultRef
	if r.Execute == "" {
		p.addf("downstream.execute is required (the URL the action POSTs to)")
	}
	if !buildKind(p, d, r) {
		ok = false
	}
	for _, u := range []struct{ name, value string }{{"execute", r.Execute}, {"status", r.Status}, {"quote", r.Quote}} {
		if u.value == "" {
			continue
		}
		if parsed, err := url.Parse(u.value); err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
			p.addf("downstream.%s %q is not an absolute http(s) URL", u.name, u.value)
		}
	}

	var tOK bool
	if d.Timeout, tOK = p.positive("downstream.timeout", r.Timeout); !tOK {
		ok = false
	}
	d.Attempts = DefaultAttempts
	if r.Attempts != nil {
		d.Attempts = *r.Attempts
	}
	switch {
	case d.Attempts < 1:
		p.addf("downstream.attempts %d must be >= 1", d.Attempts)
		ok = false
	case d.Attempts > MaxAttempts:
		p.addf("downstream.attempts %d must be <= %d", d.Attempts, MaxAttempts)
		ok = false
	case !d.HonorsIdempotencyKey && d.Attempts != 1:
		p.addf("downstream.attempts %d must be 1 when honors_idempotency_key is false: a downstream that ignores the key must be called exactly once", d.Attempts)
		ok = false
	}

	var bOK, bmOK bool
	if d.Backoff, bOK = p.duration("downstream.backoff", r.Backoff, 0, false); bOK && d.Backoff < 0 {
		p.addf("downstream.backoff %s must be >= 0", fmtDur(d.Backoff))
		bOK = false
	}
	if d.BackoffMax, bmOK = p.duration("downstream.backoff_max", r.BackoffMax, plan.SatMul(d.Backoff, plan.DefaultBackoffMaxFactor), false); bmOK && bOK && d.BackoffMax < d.Backoff {
		p.addf("downstream.backoff_max %s must be >= backoff %s", fmtDur(d.BackoffMax), fmtDur(d.Backoff))
		bmOK = false
	}
	ok = ok && bOK && bmOK

	var rdOK bool
	if d.ReconcileDelay, rdOK = p.duration("downstream.reconcile_delay", r.ReconcileDelay, DefaultReconcileDelay, false); rdOK && d.ReconcileDelay < 0 {
		p.addf("downstream.reconcile_delay %s must be >= 0", fmtDur(d.ReconcileDelay))
		rdOK = false
	}
	d.ReconcileAttempts = DefaultReconcileAttempts
	if r.ReconcileAttempts != nil {
		d.ReconcileAttempts = *r.ReconcileAttempts
	}
	if d.ReconcileAttempts < 1 || d.ReconcileAttempts > MaxAttempts {
		p.addf("downstream.reconcile_attempts %d must be between 1 and %d", d.ReconcileAttempts, MaxAttempts)
		rdOK = false
	}
	lateOK := buildLateCommit(p, d, r)
	return ok && rdOK && lateOK && buildBusinessState(p, d, r)
}

// buildKind checks the kind of d, and its kind the settings it reads
// (downstream.Kind.Check: for an MCP tool its tool, idempotency argument,
// status tool and their arguments), and reports whether they are valid.
func buildKind(p problems, d *Downstream, r rawDownstream) bool {
	d.Kind = d.KindName()
	kind, err := downstream.For(d.Kind)
	if err != nil {
		p.addf("downstream.kind %q is unknown (want one of %s)", r.Kind, strings.Join(downstream.Names(), ", "))
		return false
	}
	problems := kind.Check(d, r.HonorsIdempotencyKey)
	for _, msg := range problems {
		p.addf("%s", msg)
	}
	return len(problems) == 0
}

// buildLateCommit fills the settings that say when a downstream may commit
// late or forget a key (max_processing_time, status_lag,
// idempotency_key_retention) and reports whether they are valid.
func buildLateCommit(p problems, d *Downstream, r rawDownstream) bool {
	var mOK, lOK, kOK bool
	if d.MaxProcessingTime, mOK = p.duration("downstream.max_processing_time", r.MaxProcessingTime, 0, false); mOK {
		switch {
		case d.MaxProcessingTime < 0:
			p.addf("downstream.max_processing_time %s must be >= 0", fmtDur(d.MaxProcessingTime))
			mOK = false
		case d.MaxProcessingTime > 0 && d.Status == "":
			p.addf("downstream.max_processing_time needs downstream.status: without a status endpoint nothing can be reconciled")
			mOK = false
		}
	}
	if d.StatusLag, lOK = p.duration("downstream.status_lag", r.StatusLag, 0, false); lOK {
		switch {
		case d.StatusLag < 0:
			p.addf("downstream.status_lag %s must be >= 0", fmtDur(d.StatusLag))
			lOK = false
		case d.StatusLag > 0 && d.MaxProcessingTime == 0:
			p.addf("downstream.status_lag needs downstream.max_processing_time: a \"not found\" proves nothing without the processing window")
			lOK = false
		}
	}
	if d.IdempotencyKeyRetention, kOK = p.duration("downstream.idempotency_key_retention", r.KeyRetention, 0, false); kOK {
		switch {
		case d.IdempotencyKeyRetention != 0 && !d.HonorsIdempotencyKey:
			p.addf("downstream.idempotency_key_retention applies only when honors_idempotency_key is true")
			kOK = false
		case d.HonorsIdempotencyKey && d.IdempotencyKeyRetention == 0:
			p.addf("downstream.idempotency_key_retention is required when honors_idempotency_key is true " +
				"(how long the downstream remembers a key, such as 24h: no retry is sent after it)")
			kOK = false
		case d.HonorsIdempotencyKey && d.IdempotencyKeyRetention <= d.Timeout:
			p.addf("downstream.idempotency_key_retention %s must be > timeout %s: not even one attempt would fit",
				fmtDur(d.IdempotencyKeyRetention), fmtDur(d.Timeout))
			kOK = false
		}
	}
	return mOK && lOK && kOK
}
