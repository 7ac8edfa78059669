package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/idemstore"
)

// fakeStore is the idemstore state machine in memory, as far as the gateway
// uses it; the embedded nil Store makes any other method (the workflow's
// Finalize, MarkNeedsReview, RecordDownstreamState, the worker's Reap) panic.
type fakeStore struct {
	idemstore.Store
	mu          sync.Mutex
	now         func() time.Time
	recs        map[string]*fakeRec
	writes      int
	reads       int
	outcomes    int
	finalFast   []idemstore.Finalization
	webhooks    map[string]bool
	unavailable bool
	notReady    bool
	degraded    bool
}

type fakeRec struct {
	idemstore.Record
	truth bool
}

var _ idemstore.Store = (*fakeStore)(nil)

func newFakeStore(now func() time.Time) *fakeStore {
	return &fakeStore{now: now, recs: map[string]*fakeRec{}}
}

func (f *fakeStore) Acquire(_ context.Context, c idemstore.Claim) (idemstore.ClaimDecision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.unavailable {
		return idemstore.ClaimDecision{}, fmt.Errorf("acquire: %w", idemstore.ErrUnavailable)
	}
	f.writes++
	r, ok := f.recs[c.OperationID]
	if !ok {
		// As the combined store: the claim is inserted into the truth too.
		now := f.now()
		r = &fakeRec{Record: idemstore.Record{OperationID: c.OperationID, Subject: c.Subject, Scope: c.Scope,
			ParamHash: c.ParamHash, State: idemstore.StateInFlight, Owner: c.Owner, ClaimedAt: now, CreatedAt: now,
			ApprovalSHA256: c.ApprovalSHA256}, truth: true}
		f.recs[c.OperationID] = r
		return idemstore.ClaimDecision{Outcome: idemstore.OutcomeAcquired, Owner: c.Owner, ClaimedAt: now, Record: r.Record,
			TruthFound: true}, nil
	}
	switch {
	case r.ParamHash != c.ParamHash:
		return idemstore.ClaimDecision{Outcome: idemstore.OutcomeParamMismatch}, nil
	case r.State.Terminal():
		return idemstore.ClaimDecision{Outcome: idemstore.OutcomeOf(r.State), Record: r.Record, TruthFound: r.truth}, nil
	}
	d := idemstore.ClaimDecision{Outcome: idemstore.OutcomeInFlight, Owner: r.Owner, ClaimedAt: r.ClaimedAt, TruthFound: r.truth}
	if r.truth {
		d.Record = r.Record
	}
	return d, nil
}

// Outcome counts the question (the status and the expired fingerprint's
// replay ask it, not Get) and answers as Get.
func (f *fakeStore) Outcome(ctx context.Context, key string) (idemstore.Record, error) {
	f.mu.Lock()
	f.outcomes++
	f.mu.Unlock()
	return f.Get(ctx, key)
}

func (f *fakeStore) Get(_ context.Context, key string) (idemstore.Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.unavailable {
		return idemstore.Record{}, fmt.Errorf("get: %w", idemstore.ErrUnavailable)
	}
	f.reads++
	r, ok := f.recs[key]
	if !ok {
		return idemstore.Record{}, idemstore.ErrNotFound
	}
	return r.Record, nil
}

func (f *fakeStore) Takeover(_ context.Context, p idemstore.TakeoverParams) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	r, ok := f.recs[p.OperationID]
	if !ok || r.Owner != p.FromOwner || r.State != idemstore.StateInFlight {
		return idemstore.ErrNotOwner
	}
	r.Owner, r.ClaimedAt = p.ToOwner, f.now()
	return nil
}

func (f *fakeStore) Release(_ context.Context, p idemstore.ReleaseParams) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	r, ok := f.recs[p.OperationID]
	if !ok || r.Owner != p.Owner || r.State != idemstore.StateInFlight {
		return idemstore.ErrNotOwner
	}
	delete(f.recs, p.OperationID)
	return nil
}

func (f *fakeStore) FinalizeFast(_ context.Context, fin idemstore.Finalization) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	f.finalFast = append(f.finalFast, fin)
	return nil
}

func (f *fakeStore) List(_ context.Context, filter idemstore.ListFilter) ([]idemstore.Record, error) {
	state, limit := filter.State, filter.Limit
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	var out []idemstore.Record
	for _, r := range f.recs {
		if (state == "" || r.State == state) && (filter.OlderThan == 0 || time.Since(r.UpdatedAt) >= filter.OlderThan) {
			out = append(out, r.Record)
		}
	}
	slices.SortFunc(out, func(a, b idemstore.Record) int { return strings.Compare(a.OperationID, b.OperationID) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (f *fakeStore) RecordWebhook(_ context.Context, p idemstore.WebhookParams) (bool, error) {
	scope, signature := p.Scope, p.Signature
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.webhooks == nil {
		f.webhooks = map[string]bool{}
	}
	if f.webhooks[scope+" "+signature] {
		return false, nil
	}
	f.webhooks[scope+" "+signature] = true
	return true, nil
}

func (f *fakeStore) FindRecent(_ context.Context, p idemstore.FindRecentParams) (idemstore.Record, error) {
	subject, scope, paramHash, since := p.Subject, p.Scope, p.ParamHash, p.Since
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.unavailable {
		return idemstore.Record{}, fmt.Errorf("find recent: %w", idemstore.ErrUnavailable)
	}
	f.reads++
	for _, r := range f.recs {
		if r.Subject == subject && r.Scope == scope && r.ParamHash == paramHash && !r.CreatedAt.Before(since) &&
			(r.State != idemstore.StateFailed || r.FailureKind != idemstore.FailureRefused) {
			return r.Record, nil
		}
	}
	return idemstore.Record{}, idemstore.ErrNotFound
}

func (f *fakeStore) Degraded() bool { return f.degraded }

func (f *fakeStore) Ready(context.Context) error {
	if f.notReady {
		return fmt.Errorf("ping: %w", idemstore.ErrUnavailable)
	}
	return nil
}

// claimTruth is the workflow's ClaimTruth.
func (f *fakeStore) claimTruth(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r, ok := f.recs[key]; ok {
		r.truth = true
	}
}

// finalize is the workflow's Finalize.
func (f *fakeStore) finalize(key string, res idemstore.Final) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.recs[key]
	r.State, r.Result, r.ResultRef, r.Reason, r.ResolvedBy = res.State, res.Result, res.ResultRef, res.Reason, res.ResolvedBy
	r.FailureKind, r.CompletedAt = res.FailureKind, res.CompletedAt
	r.UpdatedAt = f.now()
}

// markReview is the workflow's MarkNeedsReview.
func (f *fakeStore) markReview(key, reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.recs[key]
	r.truth = true
	r.State, r.Reason = idemstore.StateNeedsReview, reason
}

func (f *fakeStore) counts() (writes, reads int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes, f.reads
}

// fakeAlert records alerts.
type fakeAlert struct{ ch chan gateway.SecurityEvent }

func (a *fakeAlert) Alert(_ context.Context, ev gateway.SecurityEvent) { a.ch <- ev }

// quoteTransport answers quote requests without a server.
type quoteTransport struct {
	mu      sync.Mutex
	fail    bool
	expires time.Time
	calls   int
	// status and body, when status is set, are the answer instead of a quote.
	status int
	body   string
}

// set makes the transport answer status with body.
func (q *quoteTransport) set(status int, body string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.status, q.body = status, body
}

func (q *quoteTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.calls++
	if q.fail {
		return nil, errors.New("connection refused")
	}
	if q.status != 0 {
		return &http.Response{StatusCode: q.status, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(q.body)), Request: req}, nil
	}
	body := fmt.Sprintf(`{"fee":"0.25","currency":"USD","expires_at":%q}`, q.expires.Format(time.RFC3339))
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// fakeBudgets is a truth whose subject holds reservations in currencies,
// none of them counting (every window's usage is 0).
type fakeBudgets struct{ currencies []string }

func (f *fakeBudgets) Usage(_ context.Context, _ string, c idemstore.Charge) ([]idemstore.WindowUsage, error) {
	return make([]idemstore.WindowUsage, len(c.Windows)), nil
}

func (f *fakeBudgets) Currencies(context.Context, string, time.Time) ([]string, error) {
	return f.currencies, nil
}

func (f *fakeBudgets) ResetBudget(_ context.Context, r idemstore.BudgetReset) (idemstore.BudgetReset, error) {
	return r, nil
}

func (f *fakeBudgets) LastReset(context.Context, string) (idemstore.BudgetReset, error) {
	return idemstore.BudgetReset{}, idemstore.ErrNotFound
}

// failedOperation stores a FAILED operation of alice with failure kind
// kind, as its workflow leaves it, and returns its id.
func (b *bundle) failedOperation(t *testing.T, kind idemstore.FailureKind) string {
	t.Helper()
	opID := fingerprint.NewNonce()
	now := b.clock.Now()
	b.store.mu.Lock()
	defer b.store.mu.Unlock()
	b.store.recs[opID] = &fakeRec{Record: idemstore.Record{OperationID: opID, Subject: "alice", Scope: "payments.transfer",
		ParamHash: strings.Repeat("a", 64), State: idemstore.StateFailed, Reason: "r", FailureKind: kind, ClaimedAt: now,
		CreatedAt: now, UpdatedAt: now, CompletedAt: now}, truth: true}
	return opID
}
