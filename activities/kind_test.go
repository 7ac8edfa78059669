package activities_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/activities"
	dskind "github.com/oncegate/oncegate/internal/downstream"
	"github.com/oncegate/oncegate/operation"
)

// ledgerKind is a test-only downstream kind: an in-memory ledger that
// executes once per operation id and refuses amounts over its balance. It
// shows what a new kind is: one type with Execute and Reconcile, and a
// Register call; the activities speak to it without a change.
type ledgerKind struct {
	mu      sync.Mutex
	entries map[string]json.RawMessage
}

func (l *ledgerKind) Execute(_ context.Context, c dskind.Call) (dskind.Answer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var p struct {
		Amount json.Number `json:"amount"`
	}
	if err := json.Unmarshal(c.Params, &p); err != nil {
		return dskind.Answer{}, dskind.ErrNotSent
	}
	if p.Amount.String() == "999" {
		return dskind.Answer{StatusCode: 422}, &dskind.Refusal{BusinessRefusal: operation.BusinessRefusal{StatusCode: 422, Code: "over_balance"}}
	}
	if e, ok := l.entries[c.OperationID]; ok {
		return dskind.Answer{StatusCode: 200, Result: e}, nil
	}
	e := json.RawMessage(`{"id":"ledger-` + c.OperationID + `"}`)
	l.entries[c.OperationID] = e
	return dskind.Answer{StatusCode: 201, Result: e}, nil
}

func (l *ledgerKind) Reconcile(_ context.Context, c dskind.Call) (dskind.Answer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.entries[c.OperationID]
	return dskind.Answer{StatusCode: 200, Found: ok, Result: e}, nil
}

func TestANewDownstreamKind(t *testing.T) {
	ledger := &ledgerKind{entries: map[string]json.RawMessage{}}
	dskind.Register("test-ledger", ledger)
	acts := &activities.Activities{}
	env := newActivityEnv(acts)
	in := input(&downstream{})
	in.Downstream.Kind = "test-ledger"
	in.Downstream.Endpoint.Status = "ledger"

	v, err := env.ExecuteActivity(acts.Execute, in)
	require.NoError(t, err)
	var res operation.ExecuteResult
	require.NoError(t, v.Get(&res))
	assert.Equal(t, "ledger-"+opID, res.ResultRef)

	v, err = env.ExecuteActivity(acts.Reconcile, in)
	require.NoError(t, err)
	var rec operation.ReconcileResult
	require.NoError(t, v.Get(&rec))
	assert.True(t, rec.Found)

	in.Params = json.RawMessage(`{"amount":999}`)
	in.OperationID = "another"
	_, err = env.ExecuteActivity(acts.Execute, in)
	assert.Equal(t, operation.ErrTypeBusinessRefusal, appError(t, err).Type(), "the kind's refusal is a business refusal")

	in.Downstream.Kind = "nobody-registered-this"
	_, err = env.ExecuteActivity(acts.Execute, in)
	assert.Equal(t, operation.ErrTypeNotSent, appError(t, err).Type(), "an unknown kind sends nothing")
}
