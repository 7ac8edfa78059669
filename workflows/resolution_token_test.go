package workflows_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/oncegate/oncegate/internal/telemetry"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/receipt"
	"github.com/oncegate/oncegate/resolution"
	"github.com/oncegate/oncegate/workflows"
)

// tokenSigner is a resolution signer of one fixed key named id.
func tokenSigner(t *testing.T, id string, fill byte) *resolution.Signer {
	t.Helper()
	s, err := resolution.NewSigner(receipt.Key{ID: id, Seed: bytes.Repeat([]byte{fill}, 32)})
	require.NoError(t, err)
	return s
}

// issue signs operator's decision res about opID at now, with the token
// in res.
func issue(t *testing.T, s *resolution.Signer, opID, operator string, res operation.Resolution, now time.Time) operation.Resolution {
	t.Helper()
	token, _, err := s.Issue(opID, operator, res, now)
	require.NoError(t, err)
	res.Token = token
	return res
}

// TestResolve_OnlyTheGatewaysTokenDecides: with resolution keys in its
// input, the workflow refuses a decision without a token, with a forged
// one, one for another operation, another outcome or result, or an
// expired one — none changes anything — and records the valid one under
// the token's operator, not the name the decision types.
func TestResolve_OnlyTheGatewaysTokenDecides(t *testing.T) {
	gateway, forger := tokenSigner(t, "r1", 1), tokenSigner(t, "r1", 2)
	in := input(false)
	in.ResolutionKeys = gateway.PublicKeys()
	env := reviewEnv(t)
	env.OnActivity(a.Finalize, mock.Anything, finalized(operation.StateDone, func(f operation.FinalizeInput) bool {
		return f.ResolvedBy == "alice" && f.ResultRef == "tr_7"
	})).After(time.Minute).Return(nil).Once()

	completed := operation.Resolution{Outcome: operation.ResolutionCompleted, Result: json.RawMessage(`{"id": "tr_7"}`),
		Operator: "mallory"}
	refused := map[string]*updateCallback{}
	var afterRefusals workflows.StateView
	valid := &updateCallback{}
	env.RegisterDelayedCallback(func() {
		now := env.Now()
		env.SignalWorkflow(workflows.SignalResolve, completed) // no token: the Web UI without the helper
		for name, res := range map[string]operation.Resolution{
			"missing":         completed,
			"forged":          issue(t, forger, in.OperationID, "mallory", completed, now),
			"other-operation": issue(t, gateway, "op-other", "alice", completed, now),
			"other-outcome": func() operation.Resolution {
				r := issue(t, gateway, in.OperationID, "alice", operation.Resolution{Outcome: operation.ResolutionFailed, Reason: "x"}, now)
				r.Outcome, r.Reason, r.Result = completed.Outcome, "", completed.Result
				return r
			}(),
			"other-result": func() operation.Resolution {
				r := issue(t, gateway, in.OperationID, "alice", completed, now)
				r.Result = json.RawMessage(`{"id":"tr_8"}`)
				return r
			}(),
			"expired": issue(t, gateway, in.OperationID, "alice", completed, now.Add(-resolution.TTL-time.Second)),
		} {
			refused[name] = &updateCallback{}
			env.UpdateWorkflow(workflows.UpdateResolve, name, refused[name], res)
		}
	}, 2*time.Hour)
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(workflows.QueryState)
		require.NoError(t, err)
		require.NoError(t, v.Get(&afterRefusals))
		env.UpdateWorkflow(workflows.UpdateResolve, "valid", valid, issue(t, gateway, in.OperationID, "alice", completed, env.Now()))
	}, 2*time.Hour+time.Second)

	env.ExecuteWorkflow(workflows.Operation, in)

	out := result(t, env)
	assert.Equal(t, operation.StateDone, out.State)
	assert.Equal(t, "alice", out.ResolvedBy, "the token's operator, not the typed name")
	for name, u := range refused {
		assert.False(t, u.accepted, "%s: the validator refuses it", name)
		assertRefused(t, u.rejected, workflows.ErrTypeInvalidResolution)
	}
	assert.Contains(t, refused["missing"].rejected.Error(), resolution.ErrMissing.Error())
	assert.Contains(t, refused["forged"].rejected.Error(), resolution.ErrForged.Error())
	assert.Contains(t, refused["other-operation"].rejected.Error(), resolution.ErrOtherOperation.Error())
	assert.Contains(t, refused["other-outcome"].rejected.Error(), resolution.ErrOtherDecision.Error())
	assert.Contains(t, refused["other-result"].rejected.Error(), resolution.ErrOtherDecision.Error())
	assert.Contains(t, refused["expired"].rejected.Error(), resolution.ErrExpired.Error())

	assert.Nil(t, afterRefusals.Decision, "nothing decided before the valid token")
	assert.Equal(t, operation.StateNeedsReview, afterRefusals.State)
	require.Len(t, afterRefusals.Refused, 1, "the unsigned signal is refused and shown")
	assert.Equal(t, operation.ViaSignal, afterRefusals.Refused[0].Via)
	assert.Equal(t, workflows.ErrTypeInvalidResolution, afterRefusals.Refused[0].Why)
	assert.Contains(t, afterRefusals.Refused[0].Message, resolution.ErrMissing.Error())

	require.True(t, valid.accepted)
	require.NoError(t, valid.err)
	assert.Equal(t, "alice", valid.result.Decision.Operator)
	env.AssertExpectations(t)
}

// TestResolve_RefusalsAreCounted: every decision the workflow refuses —
// an Update its validator refuses, a signal its handler refuses, before
// and after the decision — is counted in oncegate_resolutions_refused_total
// by via and why, under the name the worker exports; the decision is not.
func TestResolve_RefusalsAreCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	handler, mp, err := telemetry.SDKMetrics(reg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	var suite testsuite.WorkflowTestSuite
	suite.SetMetricsHandler(handler)
	gateway := tokenSigner(t, "r1", 1)
	in := input(false)
	in.ResolutionKeys = gateway.PublicKeys()
	env := reviewEnvOf(t, &suite)
	env.OnActivity(a.Finalize, mock.Anything, mock.Anything).After(time.Minute).Return(nil).Once()

	completed := operation.Resolution{Outcome: operation.ResolutionCompleted, Result: json.RawMessage(`{"id":"tr_7"}`)}
	unsigned, expired, valid := &updateCallback{}, &updateCallback{}, &updateCallback{}
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.SignalResolve, completed)
		env.UpdateWorkflow(workflows.UpdateResolve, "unsigned", unsigned, completed)
		env.UpdateWorkflow(workflows.UpdateResolve, "expired", expired,
			issue(t, gateway, in.OperationID, "alice", completed, env.Now().Add(-resolution.TTL-time.Second)))
	}, 2*time.Hour)
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(workflows.UpdateResolve, "valid", valid, issue(t, gateway, in.OperationID, "alice", completed, env.Now()))
	}, 2*time.Hour+time.Second)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(workflows.SignalResolve, issue(t, gateway, in.OperationID, "alice", completed, env.Now()))
	}, 2*time.Hour+time.Minute+5*time.Second)

	env.ExecuteWorkflow(workflows.Operation, in)

	assert.Equal(t, operation.StateDone, result(t, env).State)
	require.True(t, valid.accepted)
	assert.False(t, unsigned.accepted)
	assert.False(t, expired.accepted)
	assert.Equal(t, map[string]float64{
		"signal/" + workflows.ErrTypeInvalidResolution: 1,
		"update/" + workflows.ErrTypeInvalidResolution: 2,
		"signal/" + workflows.ErrTypeAlreadyResolved:   1,
	}, refusedCounts(t, reg))
}

// refusedCounts reads workflows.MetricResolutionsRefused from reg, keyed
// "via/why".
func refusedCounts(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != workflows.MetricResolutionsRefused {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			// The SDK's OpenTelemetry handler makes its counters
			// up-down counters: Prometheus reads them as gauges.
			out[labels["via"]+"/"+labels["why"]] += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return out
}
