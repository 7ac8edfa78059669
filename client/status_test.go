package client_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/oncegate/oncegate/api"
	"github.com/oncegate/oncegate/client"
	"github.com/oncegate/oncegate/status"
)

func TestReplayHeaderIsTheGateways(t *testing.T) {
	t.Parallel()
	assert.Equal(t, api.HeaderReplayed, client.HeaderReplayed)
}

// TestEveryRefusalHasItsClass checks that each refusal the registry sends
// an agent matches a sentinel of the client, and that the operation states
// match none but needs_manual_review's.
func TestEveryRefusalHasItsClass(t *testing.T) {
	t.Parallel()
	for _, s := range status.For(status.Agent) {
		info, _ := status.Lookup(s)
		class := client.ClassOf(s)
		switch {
		case info.Kind == status.Refusal:
			assert.NotNil(t, class, "agent refusal %q has no class in client/status.go", s)
			assert.NotEqual(t, client.ErrUnexpectedAnswer, class, s)
		case s == status.NeedsManualReview:
			assert.Equal(t, client.ErrNeedsManualReview, class)
		default:
			assert.Nil(t, class, "%s is an outcome", s)
		}
	}
	assert.Equal(t, client.ErrUnexpectedAnswer, client.ClassOf("no_such_status"))
}
