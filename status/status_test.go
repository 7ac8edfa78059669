package status_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/oncegate/oncegate/status"
)

// TestRegistryEntriesAreComplete checks every entry of the registry: a
// code, an audience and a kind from their lists, a description; retryable
// only for temporarily_unavailable (docs/contract.md §4); a
// polling answer is a 202 outcome; a refusal is an HTTP error; a refusal
// the public client can receive (an agent's, an operator's, a tool
// reader's) names its client class.
func TestRegistryEntriesAreComplete(t *testing.T) {
	t.Parallel()
	audiences := map[status.Audience]bool{status.Agent: true, status.Operator: true, status.Probe: true, status.Approver: true,
		status.Downstream: true, status.ToolReader: true}
	for _, s := range status.All() {
		info, ok := status.Lookup(s)
		assert.True(t, ok, s)
		assert.True(t, s.Known(), s)
		assert.NotEmpty(t, http.StatusText(info.Code), "%s: HTTP code %d", s, info.Code)
		assert.True(t, audiences[info.Audience], "%s: audience %q", s, info.Audience)
		assert.Contains(t, []status.Kind{status.Outcome, status.Refusal}, info.Kind, s)
		assert.NotEmpty(t, info.When, "%s: the status's description", s)
		assert.Equal(t, s == status.TemporarilyUnavailable || s == status.RateLimited, info.Retryable,
			"%s: retryable is true only for temporarily_unavailable and rate_limited", s)
		if info.Polls {
			assert.Equal(t, http.StatusAccepted, info.Code, s)
			assert.Equal(t, status.Outcome, info.Kind, s)
		}
		if info.Kind == status.Refusal {
			assert.GreaterOrEqual(t, info.Code, 400, "%s: a refusal is an HTTP error", s)
		}
		classed := (clientAudiences[info.Audience] && info.Kind == status.Refusal) || s == status.NeedsManualReview
		assert.Equal(t, classed, info.Class != "",
			"%s: a refusal the client receives (and needs_manual_review) names its client class; no other entry does", s)
		assert.Equal(t, info.Class == status.ClassTemporarilyUnavailable || info.Class == status.ClassRateLimited, info.Retryable,
			"%s: a retryable answer's class is one the client retries", s)
	}
	assert.False(t, status.Status("no_such_status").Known())
}

// clientAudiences are the audiences whose answers the public client reads
// (package client: the agent routes, the ops routes, the tool definitions).
var clientAudiences = map[status.Audience]bool{status.Agent: true, status.Operator: true, status.ToolReader: true}

func TestOperationStates(t *testing.T) {
	t.Parallel()
	for _, s := range status.All() {
		assert.Equal(t, s == status.Completed || s == status.AlreadyCompleted, s.Succeeded(), s)
		assert.Equal(t, s == status.Failed || s == status.AlreadyFailed, s.Failed(), s)
		assert.Equal(t, s.Succeeded() || s.Failed(), s.Terminal(), s)
		assert.Equal(t, s == status.AlreadyCompleted || s == status.AlreadyFailed, s.Replayed(), s)
	}
	agent := status.For(status.Agent)
	assert.Contains(t, agent, status.Completed)
	assert.NotContains(t, agent, status.Resolved, "an ops answer is not an agent's")
}
