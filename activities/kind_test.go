package activities_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/activities"
	"github.com/oncegate/oncegate/internal/catalog"
	dskind "github.com/oncegate/oncegate/internal/downstream"
	"github.com/oncegate/oncegate/internal/plan"
	"github.com/oncegate/oncegate/operation"
)

// ledgerKind is a test-only downstream kind: an in-memory ledger that
// executes once per operation id and refuses amounts over its balance. It
// shows what a new kind is: one type with Check, Execute and Reconcile, and
// a Register call; the catalog loader and the activities speak to it
// without a change.
type ledgerKind struct {
	mu      sync.Mutex
	entries map[string]json.RawMessage
}

// Check requires the ledger's status endpoint (its reconciliation) and
// refuses the MCP kind's tool: the ledger's own catalog schema.
func (l *ledgerKind) Check(d *plan.Source, honors *bool) []string {
	d.HonorsIdempotencyKey = honors != nil && *honors
	var problems []string
	if d.Status == "" {
		problems = append(problems, "downstream.status is required for kind test-ledger")
	}
	if d.Tool != "" {
		problems = append(problems, "downstream.tool applies to kind mcp only")
	}
	return problems
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

// ledgerCatalog declares an action of the ledger kind, as a catalog file does.
const ledgerCatalog = `
actions:
  ledger.post:
    description: Post an amount to the test ledger.
    bind:
      amount: {type: decimal, required: true}
    fingerprint_ttl: 15m
    in_flight_ttl: 10m
    terminal_ttl: 24h
    downstream:
      kind: test-ledger
      execute: http://ledger.invalid/entries
      status: http://ledger.invalid/entries
      timeout: 5s
      result_ref: id
      max_processing_time: 30s
`

func TestANewDownstreamKind(t *testing.T) {
	ledger := &ledgerKind{entries: map[string]json.RawMessage{}}
	dskind.Register("test-ledger", ledger)

	noStatus := strings.Replace(ledgerCatalog, "      status: http://ledger.invalid/entries\n", "", 1)
	_, err := catalog.Parse([]byte(noStatus), time.Second)
	require.ErrorIs(t, err, catalog.ErrInvalid)
	assert.ErrorContains(t, err, "ledger.post: downstream.status is required for kind test-ledger", "the kind checks its own settings at load")

	cat, err := catalog.Parse([]byte(ledgerCatalog), time.Second)
	require.NoError(t, err, "the catalog loads a kind it has never heard of")
	action, ok := cat.Lookup("ledger.post")
	require.True(t, ok)
	acts := &activities.Activities{}
	env := newActivityEnv(acts)
	in := input(&downstream{})
	in.Downstream = action.Downstream.Plan()
	require.Equal(t, "test-ledger", in.Downstream.Kind)

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
