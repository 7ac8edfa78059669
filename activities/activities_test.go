package activities_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/oncegate/oncegate/activities"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/plan"
	"github.com/oncegate/oncegate/internal/telemetry"
	"github.com/oncegate/oncegate/operation"
)

const opID = "0123456789abcdef0123456789abcdef"

// downstream is an httptest server answering with the queued responses, in
// order, and recording every request.
type downstream struct {
	mu        sync.Mutex
	answers   []answer
	requests  []*http.Request
	bodies    []map[string]any
	serverURL string
}

type answer struct {
	status int
	body   string
}

func newDownstream(t *testing.T, answers ...answer) *downstream {
	t.Helper()
	d := &downstream{answers: answers}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		defer d.mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		d.requests = append(d.requests, r)
		d.bodies = append(d.bodies, m)
		a := answer{status: http.StatusInternalServerError, body: `{"error":"no answer queued"}`}
		if len(d.answers) > 0 {
			a, d.answers = d.answers[0], d.answers[1:]
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.status)
		_, _ = io.WriteString(w, a.body)
	}))
	t.Cleanup(srv.Close)
	d.serverURL = srv.URL
	return d
}

func input(d *downstream) operation.Input {
	return operation.Input{
		OperationID: opID,
		Subject:     "alice",
		Scope:       "payments.legacy_transfer",
		ParamHash:   "ph",
		Ownership:   operation.Takeover("gw-1/req-1"),
		Params:      json.RawMessage(`{"amount":12.5,"currency":"USD","payee_id":"p-1","memo":"rent"}`),
		TerminalTTL: time.Hour,
		Downstream: plan.Downstream{
			Kind:      plan.KindHTTP,
			Endpoint:  plan.Endpoint{Execute: d.serverURL + "/legacy/transfers", Status: d.serverURL + "/legacy/transfers"},
			Execute:   plan.Retry{Timeout: 5 * time.Second, Attempts: 1},
			ResultRef: "id",
		},
	}
}

func newActivityEnv(acts *activities.Activities) *testsuite.TestActivityEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	return env
}

// appError returns the application error in err.
func appError(t *testing.T, err error) *temporal.ApplicationError {
	t.Helper()
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	return appErr
}

func TestExecute(t *testing.T) {
	t.Run("same key and client_reference on every attempt", func(t *testing.T) {
		d := newDownstream(t,
			answer{http.StatusServiceUnavailable, `{"error":"unavailable"}`},
			answer{http.StatusCreated, `{"id":"tr_1","amount":"12.5"}`},
		)
		acts := &activities.Activities{HTTP: &http.Client{}}
		env := newActivityEnv(acts)
		in := input(d)

		_, err := env.ExecuteActivity(acts.Execute, in)
		appErr := appError(t, err)
		assert.False(t, appErr.NonRetryable(), "a 503 leaves the outcome unknown: retryable")
		assert.Equal(t, operation.ErrTypeDownstreamUnavailable, appErr.Type())

		val, err := env.ExecuteActivity(acts.Execute, in)
		require.NoError(t, err)
		var res operation.ExecuteResult
		require.NoError(t, val.Get(&res))
		assert.Equal(t, http.StatusCreated, res.StatusCode)
		assert.Equal(t, "tr_1", res.ResultRef)
		assert.JSONEq(t, `{"id":"tr_1","amount":"12.5"}`, string(res.Result))

		require.Len(t, d.requests, 2)
		for i, r := range d.requests {
			assert.Equal(t, http.MethodPost, r.Method)
			assert.Equal(t, "/legacy/transfers", r.URL.Path)
			assert.Equal(t, opID, r.Header.Get("Idempotency-Key"), "attempt %d", i+1)
			assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
			assert.Equal(t, opID, d.bodies[i]["client_reference"], "attempt %d", i+1)
			assert.Equal(t, 12.5, d.bodies[i]["amount"])
			assert.Equal(t, "rent", d.bodies[i]["memo"])
		}
	})

	refusals := []struct {
		name   string
		status int
		body   string
		code   string
	}{
		{"422 insufficient_funds", http.StatusUnprocessableEntity, `{"error":"insufficient_funds","message":"balance too low"}`, "insufficient_funds"},
		{"400 nested error object", http.StatusBadRequest, `{"error":{"code":"invalid_payee","message":"no such payee"}}`, "invalid_payee"},
		{"409 business conflict", http.StatusConflict, `{"error":"payee_blocked"}`, "payee_blocked"},
		{"403 no body", http.StatusForbidden, ``, ""},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			d := newDownstream(t, answer{tt.status, tt.body})
			acts := &activities.Activities{}
			env := newActivityEnv(acts)

			_, err := env.ExecuteActivity(acts.Execute, input(d))

			appErr := appError(t, err)
			assert.True(t, appErr.NonRetryable())
			assert.Equal(t, operation.ErrTypeBusinessRefusal, appErr.Type())
			var refusal operation.BusinessRefusal
			require.NoError(t, appErr.Details(&refusal))
			assert.Equal(t, tt.status, refusal.StatusCode)
			assert.Equal(t, tt.code, refusal.Code)
			assert.NotEmpty(t, refusal.Reason())
		})
	}

	retryables := []struct {
		name   string
		status int
		body   string
	}{
		{"503", http.StatusServiceUnavailable, `{"error":"unavailable"}`},
		{"500 not JSON", http.StatusInternalServerError, `oops`},
		{"429", http.StatusTooManyRequests, `{"error":"rate_limited"}`},
		{"409 key in use", http.StatusConflict, `{"error":{"code":"idempotency_key_in_use"}}`},
	}
	for _, tt := range retryables {
		t.Run(tt.name, func(t *testing.T) {
			d := newDownstream(t, answer{tt.status, tt.body})
			acts := &activities.Activities{}
			env := newActivityEnv(acts)

			_, err := env.ExecuteActivity(acts.Execute, input(d))

			appErr := appError(t, err)
			assert.False(t, appErr.NonRetryable())
			assert.Equal(t, operation.ErrTypeDownstreamUnavailable, appErr.Type())
		})
	}

	t.Run("timeout is retryable", func(t *testing.T) {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		t.Cleanup(srv.Close)
		t.Cleanup(func() { close(release) })
		acts := &activities.Activities{HTTP: &http.Client{Timeout: 50 * time.Millisecond}}
		env := newActivityEnv(acts)
		in := input(&downstream{serverURL: srv.URL})

		_, err := env.ExecuteActivity(acts.Execute, in)

		appErr := appError(t, err)
		assert.False(t, appErr.NonRetryable())
	})

	t.Run("params not an object are not sent", func(t *testing.T) {
		d := newDownstream(t)
		acts := &activities.Activities{}
		env := newActivityEnv(acts)
		in := input(d)
		in.Params = json.RawMessage(`[1,2]`)

		_, err := env.ExecuteActivity(acts.Execute, in)

		appErr := appError(t, err)
		assert.True(t, appErr.NonRetryable())
		assert.Equal(t, operation.ErrTypeNotSent, appErr.Type())
		assert.Empty(t, d.requests)
	})
}

func TestReconcile(t *testing.T) {
	t.Run("200 found", func(t *testing.T) {
		d := newDownstream(t, answer{http.StatusOK, `{"id":42,"client_reference":"` + opID + `"}`})
		acts := &activities.Activities{}
		env := newActivityEnv(acts)

		val, err := env.ExecuteActivity(acts.Reconcile, input(d))

		require.NoError(t, err)
		var res operation.ReconcileResult
		require.NoError(t, val.Get(&res))
		assert.True(t, res.Found)
		assert.Equal(t, "42", res.ResultRef)
		require.Len(t, d.requests, 1)
		assert.Equal(t, http.MethodGet, d.requests[0].Method)
		assert.Equal(t, "/legacy/transfers", d.requests[0].URL.Path)
		assert.Equal(t, opID, d.requests[0].URL.Query().Get("client_reference"))
	})
	t.Run("404 not found", func(t *testing.T) {
		d := newDownstream(t, answer{http.StatusNotFound, `{"error":"not_found"}`})
		acts := &activities.Activities{}
		env := newActivityEnv(acts)

		val, err := env.ExecuteActivity(acts.Reconcile, input(d))

		require.NoError(t, err)
		var res operation.ReconcileResult
		require.NoError(t, val.Get(&res))
		assert.False(t, res.Found)
	})
	t.Run("503 retryable", func(t *testing.T) {
		d := newDownstream(t, answer{http.StatusServiceUnavailable, `{"error":"status_unavailable"}`})
		acts := &activities.Activities{}
		env := newActivityEnv(acts)

		_, err := env.ExecuteActivity(acts.Reconcile, input(d))

		appErr := appError(t, err)
		assert.False(t, appErr.NonRetryable())
		assert.Equal(t, operation.ErrTypeDownstreamUnavailable, appErr.Type())
	})
	t.Run("no status endpoint", func(t *testing.T) {
		d := newDownstream(t)
		acts := &activities.Activities{}
		env := newActivityEnv(acts)
		in := input(d)
		in.Downstream.Endpoint.Status = ""

		_, err := env.ExecuteActivity(acts.Reconcile, in)

		appErr := appError(t, err)
		assert.True(t, appErr.NonRetryable())
		assert.Equal(t, operation.ErrTypeNoStatusEndpoint, appErr.Type())
	})
}

// fakeStore is the part of idemstore.Store the activities use, in memory;
// the embedded nil Store makes any other method panic: the activities must
// not call it.
type fakeStore struct {
	idemstore.Store
	decision         idemstore.ClaimDecision
	acquireErr       error
	claims           []idemstore.Claim
	reviewed         map[string]string
	reviewErr        error
	finalized        []idemstore.Finalization
	finalizeErr      error
	downstreamStates map[string]string
}

func (f *fakeStore) Acquire(_ context.Context, c idemstore.Claim) (idemstore.ClaimDecision, error) {
	f.claims = append(f.claims, c)
	return f.decision, f.acquireErr
}

func (f *fakeStore) RecordDownstreamState(_ context.Context, p idemstore.DownstreamStateParams) error {
	if f.downstreamStates == nil {
		f.downstreamStates = map[string]string{}
	}
	f.downstreamStates[p.OperationID] = p.State
	return nil
}

func (f *fakeStore) MarkNeedsReview(_ context.Context, p idemstore.MarkNeedsReviewParams) error {
	if f.reviewed == nil {
		f.reviewed = map[string]string{}
	}
	f.reviewed[p.OperationID] = p.Reason
	return f.reviewErr
}

func (f *fakeStore) Finalize(_ context.Context, fin idemstore.Finalization) error {
	f.finalized = append(f.finalized, fin)
	return f.finalizeErr
}

func TestClaimTruth(t *testing.T) {
	tests := []struct {
		name      string
		decision  idemstore.ClaimDecision
		err       error
		want      operation.ClaimResult
		wantType  string
		retryable bool
	}{
		{"acquired", idemstore.ClaimDecision{Outcome: idemstore.OutcomeAcquired}, nil, operation.ClaimResult{Final: operation.Final{State: operation.StateInFlight}}, "", false},
		{"in flight", idemstore.ClaimDecision{Outcome: idemstore.OutcomeInFlight, Record: idemstore.Record{State: operation.StateInFlight}}, nil,
			operation.ClaimResult{Final: operation.Final{State: operation.StateInFlight}}, "", false},
		{"needs review", idemstore.ClaimDecision{Outcome: idemstore.OutcomeInFlight, Record: idemstore.Record{State: operation.StateNeedsReview, Reason: "status down"}}, nil,
			operation.ClaimResult{Final: operation.Final{State: operation.StateNeedsReview, Reason: "status down"}}, "", false},
		{"done", idemstore.ClaimDecision{Outcome: idemstore.OutcomeDone, Record: idemstore.Record{State: operation.StateDone, Result: json.RawMessage(`{"id":"x"}`), ResultRef: "x"}}, nil,
			operation.ClaimResult{Final: operation.Final{State: operation.StateDone, Result: json.RawMessage(`{"id":"x"}`), ResultRef: "x"}}, "", false},
		{"failed", idemstore.ClaimDecision{Outcome: idemstore.OutcomeFailed, Record: idemstore.Record{State: operation.StateFailed, Reason: "insufficient_funds"}}, nil,
			operation.ClaimResult{Final: operation.Final{State: operation.StateFailed, Reason: "insufficient_funds"}}, "", false},
		{"param mismatch", idemstore.ClaimDecision{Outcome: idemstore.OutcomeParamMismatch}, nil, operation.ClaimResult{}, operation.ErrTypeParamMismatch, false},
		{"unavailable", idemstore.ClaimDecision{}, fmt.Errorf("acquire: %w", idemstore.ErrUnavailable), operation.ClaimResult{}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &fakeStore{decision: tt.decision, acquireErr: tt.err}
			acts := &activities.Activities{Truth: store, Store: store}
			env := newActivityEnv(acts)
			in := input(&downstream{})

			val, err := env.ExecuteActivity(acts.ClaimTruth, in)

			require.Len(t, store.claims, 1)
			assert.Equal(t, idemstore.Claim{OperationID: opID, ParamHash: "ph", Owner: "gw-1/req-1", Subject: "alice",
				Scope: "payments.legacy_transfer", TerminalTTL: time.Hour}, store.claims[0])
			switch {
			case tt.wantType != "":
				appErr := appError(t, err)
				assert.Equal(t, tt.wantType, appErr.Type())
				assert.True(t, appErr.NonRetryable())
			case tt.retryable:
				require.Error(t, err)
				var appErr *temporal.ApplicationError
				if errors.As(err, &appErr) {
					assert.False(t, appErr.NonRetryable())
				}
			default:
				require.NoError(t, err)
				var got operation.ClaimResult
				require.NoError(t, val.Get(&got))
				assert.Equal(t, tt.want.State, got.State)
				assert.Equal(t, tt.want.Reason, got.Reason)
				assert.Equal(t, tt.want.ResultRef, got.ResultRef)
				if tt.want.Result != nil {
					assert.JSONEq(t, string(tt.want.Result), string(got.Result))
				}
			}
		})
	}
}

func TestFinalize(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantType string
		wantErr  bool
	}{
		{"ok", nil, "", false},
		{"fast path not owner is not an error", fmt.Errorf("finalize: %w", idemstore.ErrFastPathNotOwner), "", false},
		{"already terminal", idemstore.ErrAlreadyTerminal, operation.ErrTypeAlreadyTerminal, true},
		{"not owner", idemstore.ErrNotOwner, operation.ErrTypeNotOwner, true},
		{"unavailable is retried", idemstore.ErrUnavailable, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &fakeStore{finalizeErr: tt.err}
			acts := &activities.Activities{Truth: store, Store: store}
			env := newActivityEnv(acts)
			in := operation.FinalizeInput{OperationID: opID, Ownership: operation.Takeover("gw-1/req-1"), Final: operation.Final{State: operation.StateDone,
				Result: json.RawMessage(`{"id":"x"}`), ResultRef: "x", ResolvedBy: "ops", ResolutionNote: "n"}, TerminalTTL: time.Hour}

			_, err := env.ExecuteActivity(acts.Finalize, in)

			require.Len(t, store.finalized, 1)
			f := store.finalized[0]
			assert.Equal(t, opID, f.OperationID)
			assert.Equal(t, "gw-1/req-1", f.Owner)
			assert.Equal(t, operation.StateDone, f.State)
			assert.Equal(t, "x", f.ResultRef)
			assert.Equal(t, "ops", f.ResolvedBy)
			assert.Equal(t, "n", f.ResolutionNote)
			assert.Equal(t, time.Hour, f.TerminalTTL)
			if !tt.wantErr {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			if tt.wantType != "" {
				appErr := appError(t, err)
				assert.Equal(t, tt.wantType, appErr.Type())
				assert.True(t, appErr.NonRetryable())
			}
		})
	}
}

func TestMarkNeedsReview(t *testing.T) {
	store := &fakeStore{}
	acts := &activities.Activities{Truth: store, Store: store}
	env := newActivityEnv(acts)

	_, err := env.ExecuteActivity(acts.MarkNeedsReview, operation.MarkNeedsReviewInput{OperationID: opID, Reason: "status down"})

	require.NoError(t, err)
	assert.Equal(t, map[string]string{opID: "status down"}, store.reviewed)

	store.reviewErr = idemstore.ErrAlreadyTerminal
	_, err = env.ExecuteActivity(acts.MarkNeedsReview, operation.MarkNeedsReviewInput{OperationID: opID, Reason: "again"})
	assert.Equal(t, operation.ErrTypeAlreadyTerminal, appError(t, err).Type())
}

func TestClaimTruthReportsAnotherOwner(t *testing.T) {
	store := &fakeStore{decision: idemstore.ClaimDecision{Outcome: idemstore.OutcomeInFlight, Owner: "gw-2/req-9",
		Record: idemstore.Record{State: operation.StateInFlight, Owner: "gw-2/req-9"}}}
	acts := &activities.Activities{Truth: store, Store: store}
	env := newActivityEnv(acts)

	val, err := env.ExecuteActivity(acts.ClaimTruth, input(&downstream{}))

	require.NoError(t, err)
	var got operation.ClaimResult
	require.NoError(t, val.Get(&got))
	assert.Equal(t, operation.StateInFlight, got.State)
	assert.Equal(t, "gw-2/req-9", got.Owner)
}

func TestFinalizeAsTruthOwner(t *testing.T) {
	store := &fakeStore{finalizeErr: idemstore.ErrFastPathNotOwner}
	acts := &activities.Activities{Truth: store, Store: store}
	env := newActivityEnv(acts)

	_, err := env.ExecuteActivity(acts.Finalize, operation.FinalizeInput{OperationID: opID,
		Ownership: operation.Takeover("gw-1/req-1").ClaimedAs("gw-2/req-9", time.Time{}),
		Final:     operation.Final{State: operation.StateFailed, Reason: "insufficient_funds"}})
	require.NoError(t, err)
	// An input recorded before the ownership value names the owners flat.
	_, err = env.ExecuteActivity(acts.Finalize, operation.FinalizeInput{OperationID: opID, RecordedOwner: "gw-1/req-1",
		RecordedTruthOwner: "gw-2/req-9", Final: operation.Final{State: operation.StateFailed, Reason: "insufficient_funds"}})
	require.NoError(t, err)

	require.Len(t, store.finalized, 2)
	assert.Equal(t, "gw-2/req-9", store.finalized[0].Owner)
	assert.Equal(t, "gw-2/req-9", store.finalized[1].Owner)
}

// TestExecuteForwardsTraceparent: with the worker's otelhttp transport,
// the activity's trace reaches the downstream as a traceparent.
func TestExecuteForwardsTraceparent(t *testing.T) {
	d := newDownstream(t, answer{http.StatusCreated, `{"id":"tr_1"}`})
	tp := sdktrace.NewTracerProvider()
	acts := &activities.Activities{HTTP: &http.Client{Transport: otelhttp.NewTransport(http.DefaultTransport,
		otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(telemetry.Propagator))}}
	ctx, span := tp.Tracer("test").Start(context.Background(), "activity")
	defer span.End()

	_, err := acts.Execute(ctx, input(d))
	require.NoError(t, err)
	require.Len(t, d.requests, 1)
	assert.Contains(t, d.requests[0].Header.Get("traceparent"), span.SpanContext().TraceID().String())
}

// A workflow that claims the truth itself (a takeover) claims it under the
// approval its input names, and reads back a terminal record's completed
// time: the receipt of the outcome names both.
func TestClaimTruthCarriesWhatTheReceiptNames(t *testing.T) {
	at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	store := &fakeStore{decision: idemstore.ClaimDecision{Outcome: idemstore.OutcomeDone,
		Record: idemstore.Record{State: operation.StateDone, ResultRef: "tr_1", CompletedAt: at}}}
	acts := &activities.Activities{Truth: store, Store: store}
	env := newActivityEnv(acts)
	in := input(&downstream{})
	in.ApprovalSHA256 = strings.Repeat("5e", 32)

	val, err := env.ExecuteActivity(acts.ClaimTruth, in)

	require.NoError(t, err)
	require.Len(t, store.claims, 1)
	assert.Equal(t, in.ApprovalSHA256, store.claims[0].ApprovalSHA256)
	var got operation.ClaimResult
	require.NoError(t, val.Get(&got))
	assert.True(t, at.Equal(got.CompletedAt), "the truth's completed time, got %s", got.CompletedAt)
}

// TestExecuteHeartbeatsWhileTheDownstreamHolds: while a downstream holds
// its answer past heartbeatEvery, the activity heartbeats (a heartbeat is
// how a long call learns of a cancellation), and the call still answers.
func TestExecuteHeartbeatsWhileTheDownstreamHolds(t *testing.T) {
	defer activities.SetHeartbeatEvery(20 * time.Millisecond)()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(200 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":"tr_long","amount":"12.5"}`)
	}))
	t.Cleanup(srv.Close)
	acts := &activities.Activities{HTTP: &http.Client{}}
	env := newActivityEnv(acts)
	var beats atomic.Int32
	env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) { beats.Add(1) })

	_, err := env.ExecuteActivity(acts.Execute, input(&downstream{serverURL: srv.URL}))
	require.NoError(t, err)
	assert.Positive(t, beats.Load(), "heartbeats while the downstream held its answer")
}

// TestExecuteAnswersWithoutAHeartbeat: a downstream that answers within
// heartbeatEvery costs no heartbeat, whose first one the SDK would send
// synchronously to the Temporal server before the downstream is called.
func TestExecuteAnswersWithoutAHeartbeat(t *testing.T) {
	d := newDownstream(t, answer{http.StatusCreated, `{"id":"tr_h","amount":"12.5"}`})
	acts := &activities.Activities{HTTP: &http.Client{}}
	env := newActivityEnv(acts)
	beats := 0
	env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) { beats++ })

	_, err := env.ExecuteActivity(acts.Execute, input(d))
	require.NoError(t, err)
	assert.Len(t, d.requests, 1)
	assert.Zero(t, beats, "no heartbeat for a call that answered at once")
}

// TestExecuteFinalizesDone: asked to (ExecuteFinalizes), Execute finalizes
// a DONE answer itself, as the claim's truth owner, with the time it
// answers in Finalized; a store that refuses, a downstream whose answer is
// a business state, a refusal, and an input that does not ask leave the
// finalize to the workflow.
func TestExecuteFinalizesDone(t *testing.T) {
	execute := func(t *testing.T, store *fakeStore, in operation.Input) (operation.ExecuteResult, error) {
		t.Helper()
		acts := &activities.Activities{HTTP: &http.Client{}, Truth: store, Store: store}
		val, err := newActivityEnv(acts).ExecuteActivity(acts.Execute, in)
		if err != nil {
			return operation.ExecuteResult{}, err
		}
		var res operation.ExecuteResult
		require.NoError(t, val.Get(&res))
		return res, nil
	}
	asked := func(d *downstream) operation.Input {
		in := input(d)
		in.ExecuteFinalizes = true
		in.Ownership = operation.Takeover("gw-1/req-1").ClaimedAs("gw-2/req-9", time.Time{})
		return in
	}

	t.Run("finalized", func(t *testing.T) {
		store := &fakeStore{}
		before := time.Now().Truncate(time.Millisecond)
		res, err := execute(t, store, asked(newDownstream(t, answer{http.StatusCreated, `{"id":"tr_1"}`})))
		require.NoError(t, err)
		require.NotNil(t, res.Finalized)
		require.Len(t, store.finalized, 1)
		fin := store.finalized[0]
		assert.Equal(t, "gw-2/req-9", fin.Owner, "as the truth's owner")
		assert.Equal(t, operation.StateDone, fin.State)
		assert.Equal(t, "tr_1", fin.ResultRef)
		assert.JSONEq(t, `{"id":"tr_1"}`, string(fin.Result))
		assert.Equal(t, time.Hour, fin.TerminalTTL)
		assert.Equal(t, fin.Final, *res.Finalized, "what it wrote is what it answers")
		assert.False(t, fin.CompletedAt.Before(before), "its time is now")
		assert.Equal(t, fin.CompletedAt, fin.CompletedAt.Truncate(time.Millisecond), "to the millisecond every store keeps")
	})
	t.Run("the store refuses", func(t *testing.T) {
		store := &fakeStore{finalizeErr: idemstore.ErrAlreadyTerminal}
		res, err := execute(t, store, asked(newDownstream(t, answer{http.StatusCreated, `{"id":"tr_2"}`})))
		require.NoError(t, err, "the downstream's answer stands")
		assert.Nil(t, res.Finalized, "left to the workflow")
		assert.Equal(t, "tr_2", res.ResultRef)
	})
	t.Run("a business state", func(t *testing.T) {
		store := &fakeStore{}
		in := asked(newDownstream(t, answer{http.StatusCreated, `{"id":"po_1","status":"pending"}`}))
		in.Downstream.Business = &plan.Business{}
		res, err := execute(t, store, in)
		require.NoError(t, err)
		assert.Nil(t, res.Finalized)
		assert.Empty(t, store.finalized)
	})
	t.Run("a refusal", func(t *testing.T) {
		store := &fakeStore{}
		_, err := execute(t, store, asked(newDownstream(t, answer{http.StatusUnprocessableEntity, `{"error":"insufficient_funds"}`})))
		assert.Equal(t, operation.ErrTypeBusinessRefusal, appError(t, err).Type())
		assert.Empty(t, store.finalized)
	})
	t.Run("not asked", func(t *testing.T) {
		store := &fakeStore{}
		in := asked(newDownstream(t, answer{http.StatusCreated, `{"id":"tr_3"}`}))
		in.ExecuteFinalizes = false
		res, err := execute(t, store, in)
		require.NoError(t, err)
		assert.Nil(t, res.Finalized)
		assert.Empty(t, store.finalized)
	})
}
