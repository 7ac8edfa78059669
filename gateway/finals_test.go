package gateway

import (
	"testing"
	"time"

	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/operation"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFinalsKeepOnlyWhatNeverChanges pins finals alone: only terminal
// records with a completion time are kept, each until its replay ends,
// and knownFinal serves a kept record only to a confirm of the same
// subject, scope and bound params.
func TestFinalsKeepOnlyWhatNeverChanges(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	f, err := newFinals(8, prometheus.NewRegistry())
	require.NoError(t, err)
	done := idemstore.Record{OperationID: "op-done", Subject: "alice", Scope: "payments.transfer", ParamHash: "h",
		State: operation.StateDone, CompletedAt: now}
	f.keep(done, time.Hour)
	for _, rec := range []idemstore.Record{
		{OperationID: "op-flight", State: operation.StateInFlight, CompletedAt: now},
		{OperationID: "op-review", State: operation.StateNeedsReview, CompletedAt: now},
		{OperationID: "op-undated", State: operation.StateFailed},
	} {
		f.keep(rec, time.Hour)
		_, ok := f.get(rec.OperationID, now)
		assert.False(t, ok, rec.OperationID)
	}
	f.keep(idemstore.Record{OperationID: "op-no-ttl", State: operation.StateDone, CompletedAt: now}, 0)
	_, ok := f.get("op-no-ttl", now)
	assert.False(t, ok, "no terminal_ttl, no replay owed")

	got, ok := f.get("op-done", now.Add(time.Hour-time.Millisecond))
	require.True(t, ok)
	assert.Equal(t, done, got)
	_, ok = f.get("op-done", now.Add(time.Hour))
	assert.False(t, ok, "at completed_at + terminal_ttl the replay is no longer owed")
	_, ok = f.get("op-done", now)
	assert.False(t, ok, "an entry past its end is dropped")

	var off *finals
	off.keep(done, time.Hour)
	_, ok = off.get("op-done", now)
	assert.False(t, ok, "a nil finals keeps nothing")

	f.keep(done, time.Hour)
	s := &Service{finals: f, now: func() time.Time { return now }}
	transfer, legacy := &catalog.Action{Scope: "payments.transfer"}, &catalog.Action{Scope: "payments.legacy_transfer"}
	call := confirmCall{payload: fingerprint.Payload{Nonce: "op-done"}, action: transfer, bound: boundParams{paramHash: "h"}}
	call.req.Caller.Subject = "alice"
	a, ok := s.knownFinal(&call)
	require.True(t, ok)
	assert.Equal(t, claimAnswer{Kind: claimFinished, Record: done}, a)
	for name, change := range map[string]func(*confirmCall){
		"subject":    func(c *confirmCall) { c.req.Caller.Subject = "bob" },
		"scope":      func(c *confirmCall) { c.action = legacy },
		"param hash": func(c *confirmCall) { c.bound.paramHash = "other" },
	} {
		c := call
		change(&c)
		_, ok := s.knownFinal(&c)
		assert.False(t, ok, "another %s asks the store", name)
	}
}
