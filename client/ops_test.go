package client

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/status"
)

// setupOps starts a fake gateway and an ops client whose waits are
// recorded, not slept.
func setupOps(t *testing.T, answers ...func(http.ResponseWriter)) (*Ops, *fakeGateway, *[]time.Duration) {
	t.Helper()
	c, f, waits := setup(t, answers...)
	return &Ops{c: c}, f, waits
}

// raw writes code and body as they are.
func raw(code int, body string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}
}

// TestOpsRequests checks each ops call's route, query and body.
func TestOpsRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name, want, body string
		call             func(*Ops) error
	}{
		{"list all", "GET /v1/ops/operations", "", func(o *Ops) error { _, err := o.Operations(ctx, OperationFilter{}); return err }},
		{"list filtered", "GET /v1/ops/operations?older_than=10m0s&state=in_flight", "", func(o *Ops) error {
			_, err := o.Operations(ctx, OperationFilter{State: "in_flight", OlderThan: 10 * time.Minute})
			return err
		}},
		{"show", "GET /v1/ops/operations/op%2F1", "", func(o *Ops) error { _, err := o.Operation(ctx, "op/1"); return err }},
		{"resolve", "POST /v1/ops/operations/op1/resolve", `{"outcome":"completed","result":{"id":"lt_1"},"note":"seen"}`, func(o *Ops) error {
			_, err := o.Resolve(ctx, "op1", Resolution{Outcome: OutcomeCompleted, Result: json.RawMessage(`{"id":"lt_1"}`), Note: "seen"})
			return err
		}},
		{"limits", "GET /v1/ops/limits/bob", "", func(o *Ops) error { _, err := o.Limits(ctx, "bob", ""); return err }},
		{"limits of a role", "GET /v1/ops/limits/bob?role=treasurer", "", func(o *Ops) error { _, err := o.Limits(ctx, "bob", "treasurer"); return err }},
		{"reset", "POST /v1/ops/limits/bob/reset", "", func(o *Ops) error { _, err := o.ResetLimits(ctx, "bob"); return err }},
		{"passkeys", "GET /v1/ops/passkeys?revoked=true&subject=alice", "", func(o *Ops) error {
			_, err := o.Passkeys(ctx, PasskeyFilter{Subject: "alice", Revoked: true})
			return err
		}},
		{"invite", "POST /v1/ops/passkeys/invites", `{"subject":"alice"}`, func(o *Ops) error { _, err := o.InvitePasskey(ctx, "alice"); return err }},
		{"revoke", "POST /v1/ops/passkeys/cred-1/revoke", "", func(o *Ops) error { _, err := o.RevokePasskey(ctx, "cred-1"); return err }},
		{"approvals", "GET /v1/ops/approvals?state=pending", "", func(o *Ops) error {
			_, err := o.Approvals(ctx, ApprovalFilter{State: "pending"})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o, f, _ := setupOps(t, raw(200, `{"status":"ok_for_the_test"}`))
			f.query = true
			require.NoError(t, tt.call(o))
			require.Len(t, f.paths, 1)
			assert.Equal(t, tt.want, f.paths[0])
			if tt.body == "" {
				assert.Empty(t, f.bodies[0])
			} else {
				assert.JSONEq(t, tt.body, f.bodies[0])
			}
		})
	}
}

func TestOpsDecodesTypedAnswersAndKeepsTheRaw(t *testing.T) {
	t.Parallel()
	body := `{"status":"operation_found","operation_id":"op1","trace_id":"t1",
		"operation":{"operation_id":"op1","scope":"payments.transfer","state":"DONE","updated_at":"2026-01-02T03:04:05.5Z","resolved_by":"ops"},
		"params":{"amount":"12.5","currency":"USD"},
		"approval_record":{"operation_id":"op1","state":"APPROVED","reasons":["new_payee"],"credential_id":"cred-1"},
		"timeline":[{"at":"2026-01-01T00:00:00Z","source":"truth","event":"claimed","detail":"claimed IN_FLIGHT"}]}`
	o, _, _ := setupOps(t, raw(200, body))
	d, err := o.Operation(context.Background(), "op1")
	require.NoError(t, err)
	assert.Equal(t, status.OperationFound, d.Status)
	assert.Equal(t, 200, d.HTTPCode)
	assert.Equal(t, "t1", d.TraceID)
	assert.JSONEq(t, body, string(d.Raw), "the answer as received")
	assert.Equal(t, "DONE", d.Operation.State)
	assert.Equal(t, time.Date(2026, 1, 2, 3, 4, 5, 5e8, time.UTC), d.Operation.UpdatedAt)
	amount, ok := d.Params.Decimal("amount")
	assert.True(t, ok)
	assert.Equal(t, Decimal("12.5"), amount)
	require.NotNil(t, d.ApprovalRecord)
	assert.Equal(t, []string{"new_payee"}, d.ApprovalRecord.Reasons)
	require.Len(t, d.Timeline, 1)
	assert.Equal(t, "claimed IN_FLIGHT", d.Timeline[0].Detail)

	o, _, _ = setupOps(t, raw(200, `{"status":"limits_shown","limits":{"subject":"bob","role":"agent","confirm_rate":"5/s",
		"budgets":[{"name":"d","window":"daily","currency":"CHF","max":"1000.00","used":"12.50","left":"987.50","next_free_at":"2026-01-03T00:00:00Z"}],
		"last_reset":{"subject":"bob","reset_at":"2026-01-01T00:00:00Z","reset_by":"ops"}}}`))
	l, err := o.Limits(context.Background(), "bob", "")
	require.NoError(t, err)
	require.Len(t, l.Limits.Budgets, 1)
	assert.Equal(t, Decimal("987.50"), l.Limits.Budgets[0].Left)
	require.NotNil(t, l.Limits.Budgets[0].NextFreeAt)
	assert.Equal(t, "5/s", l.Limits.ConfirmRate)
	require.NotNil(t, l.Limits.LastReset)
	assert.Equal(t, "ops", l.Limits.LastReset.By)

	o, _, _ = setupOps(t, raw(200, `[{"operation_id":"op2","state":"IN_FLIGHT"}]`))
	list, err := o.Operations(context.Background(), OperationFilter{})
	require.NoError(t, err)
	require.Len(t, list.Operations, 1, "a bare array of operations is read too")
	assert.Equal(t, "op2", list.Operations[0].OperationID)

	o, _, _ = setupOps(t, raw(200, `{"status":"operations_listed","operations":"not a list"}`))
	_, err = o.Operations(context.Background(), OperationFilter{})
	require.ErrorIs(t, err, ErrUnexpectedAnswer)
}

func TestOpsRefusalsMatchTheirClass(t *testing.T) {
	t.Parallel()
	tests := []struct {
		st    Status
		extra map[string]any
		class error
	}{
		{status.AlreadyResolved, map[string]any{"decision": map[string]any{"operator": "bob", "outcome": "failed", "decided_at": "2026-01-02T03:04:05Z"}}, ErrAlreadyResolved},
		{status.NotAwaitingReview, map[string]any{"state": "DONE"}, ErrNotAwaitingReview},
		{status.InvalidResolution, map[string]any{"errors": []map[string]string{{"field": "note", "problem": "is required"}}}, ErrInvalidResolution},
		{status.UnknownOperation, nil, ErrUnknownOperation},
		{status.Forbidden, nil, ErrBadRequest},
		{status.Unauthenticated, nil, ErrUnauthenticated},
	}
	for _, tt := range tests {
		t.Run(string(tt.st), func(t *testing.T) {
			t.Parallel()
			info, _ := status.Lookup(tt.st)
			o, f, _ := setupOps(t, reply(info.Code, tt.st, tt.extra))
			r, err := o.Resolve(context.Background(), "op1", Resolution{Outcome: OutcomeFailed, Reason: "x", Note: "n"})
			assert.Nil(t, r)
			require.ErrorIs(t, err, tt.class)
			assert.Len(t, f.bodies, 1)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tt.st, e.Status)
			assert.Equal(t, info.Code, e.HTTPCode)
			assert.Equal(t, http.MethodPost, e.Method)
			assert.Equal(t, "/v1/ops/operations/op1/resolve", e.Path)
			assert.Contains(t, string(e.Raw), string(tt.st), "the refusal as received")
			switch tt.st {
			case status.AlreadyResolved:
				require.NotNil(t, e.Decision)
				assert.Equal(t, "bob", e.Decision.Operator)
			case status.NotAwaitingReview:
				assert.Equal(t, "DONE", e.State)
			case status.InvalidResolution:
				assert.Equal(t, []Problem{{Field: "note", Problem: "is required"}}, e.Problems)
			}
		})
	}

	o, _, _ := setupOps(t, reply(404, status.UnknownPasskey, nil))
	_, err := o.RevokePasskey(context.Background(), "nope")
	require.ErrorIs(t, err, ErrUnknownPasskey)
}

// TestOpsSendsChangesOnceAndRetriesReads: a decision, a reset, an
// invitation or a revocation is never sent again by the client; a read
// is, while the gateway is unreachable or temporarily unavailable.
func TestOpsSendsChangesOnceAndRetriesReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	changes := map[string]func(*Ops) error{
		"resolve": func(o *Ops) error {
			_, err := o.Resolve(ctx, "op1", Resolution{Outcome: OutcomeCompleted, Note: "n"})
			return err
		},
		"reset":  func(o *Ops) error { _, err := o.ResetLimits(ctx, "bob"); return err },
		"invite": func(o *Ops) error { _, err := o.InvitePasskey(ctx, "bob"); return err },
		"revoke": func(o *Ops) error { _, err := o.RevokePasskey(ctx, "k"); return err },
	}
	for name, change := range changes {
		for _, fail := range []func(http.ResponseWriter){hangUp, reply(503, status.TemporarilyUnavailable, nil)} {
			o, f, _ := setupOps(t, fail)
			err := change(o)
			assert.True(t, isTransient(err), "%s: %v", name, err)
			assert.Len(t, f.bodies, 1, "%s is sent once", name)
		}
	}

	o, f, waits := setupOps(t, hangUp, reply(503, status.TemporarilyUnavailable, map[string]any{"retry_after_ms": 700}),
		raw(200, `{"status":"approvals_listed","approvals":[{"operation_id":"op1","state":"PENDING"}],"count":1}`))
	list, err := o.Approvals(ctx, ApprovalFilter{})
	require.NoError(t, err)
	assert.Equal(t, 1, list.Count)
	assert.Len(t, f.bodies, 3)
	assert.Equal(t, []time.Duration{DefaultBackoff, 700 * time.Millisecond}, *waits)
}

// TestOpsAnswersWithoutAStatus: a 2xx is the call's outcome whatever its
// body; a proxy's 5xx page is ErrUnreachable and a 4xx without a status is
// ErrUnexpectedAnswer, each with the body as received.
func TestOpsAnswersWithoutAStatus(t *testing.T) {
	t.Parallel()
	o, _, _ := setupOps(t, raw(200, `{}`))
	r, err := o.Resolve(context.Background(), "op1", Resolution{Outcome: OutcomeCompleted, Note: "n"})
	require.NoError(t, err)
	assert.Equal(t, 200, r.HTTPCode)

	for code, class := range map[int]error{502: ErrUnreachable, 404: ErrUnexpectedAnswer} {
		o, _, _ = setupOps(t, raw(code, `<html>no</html>`))
		_, err = o.Resolve(context.Background(), "op1", Resolution{Outcome: OutcomeCompleted, Note: "n"})
		require.ErrorIs(t, err, class)
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, code, e.HTTPCode)
		assert.Equal(t, "<html>no</html>", string(e.Raw))
		assert.Contains(t, err.Error(), "without an oncegate answer")
	}
}

func TestTools(t *testing.T) {
	t.Parallel()
	c, f, _ := setup(t, raw(200, `[{"name":"payments_transfer_preview"}]`))
	f.query = true
	defs, err := c.Tools(context.Background(), ToolsAnthropic)
	require.NoError(t, err)
	assert.JSONEq(t, `[{"name":"payments_transfer_preview"}]`, string(defs))
	assert.Equal(t, []string{"GET /v1/tools?format=anthropic"}, f.paths)

	c, _, _ = setup(t, reply(400, status.InvalidRequest, nil))
	_, err = c.Tools(context.Background(), "llama")
	require.ErrorIs(t, err, ErrBadRequest)
}
