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
// the client (on the agent routes, the ops routes and the tool
// definitions) matches a sentinel of the client, derived from its entry's
// class alone, and that the other answers match none but
// needs_manual_review's.
func TestEveryRefusalHasItsClass(t *testing.T) {
	t.Parallel()
	var read []status.Status
	for _, a := range []status.Audience{status.Agent, status.Operator, status.ToolReader} {
		read = append(read, status.For(a)...)
	}
	for _, s := range read {
		info, _ := status.Lookup(s)
		class := client.ClassOf(s)
		switch {
		case info.Kind == status.Refusal:
			assert.NotNil(t, class, "refusal %q has no class: name its status.Class in its registry entry", s)
			assert.NotEqual(t, client.ErrUnexpectedAnswer, class, s)
		case s == status.NeedsManualReview:
			assert.Equal(t, client.ErrNeedsManualReview, class)
		default:
			assert.Nil(t, class, "%s is an outcome", s)
		}
	}
	assert.Equal(t, client.ErrUnexpectedAnswer, client.ClassOf("no_such_status"))
}

// TestEveryClassHasItsSentinel checks that each class the registry names
// matches one sentinel of the client and no other class's, so that a status
// needs only its registry entry: a new class fails here until the client
// has its sentinel.
func TestEveryClassHasItsSentinel(t *testing.T) {
	t.Parallel()
	seen := map[error]status.Class{}
	for _, c := range status.Classes() {
		var sentinel error
		for _, s := range status.All() {
			if info, _ := status.Lookup(s); info.Class == c {
				sentinel = client.ClassOf(s)
				assert.NotNil(t, sentinel, "status %s: class %s has no sentinel error in client/status.go", s, c)
			}
		}
		if other, dup := seen[sentinel]; dup && sentinel != nil {
			t.Errorf("classes %s and %s match the same sentinel %v", c, other, sentinel)
		}
		seen[sentinel] = c
	}
}
