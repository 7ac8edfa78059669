package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/operation"
)

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

// failedOperation stores a FAILED operation of alice with failure kind
// kind, as its workflow leaves it, and returns its id.
func (b *bundle) failedOperation(t *testing.T, kind operation.FailureKind) string {
	t.Helper()
	opID := fingerprint.NewNonce()
	now := b.clock.Now()
	b.store.Put(idemstore.Record{OperationID: opID, Subject: "alice", Scope: "payments.transfer",
		ParamHash: strings.Repeat("a", 64), State: operation.StateFailed, Reason: "r", FailureKind: kind, ClaimedAt: now,
		CreatedAt: now, UpdatedAt: now, CompletedAt: now})
	return opID
}
