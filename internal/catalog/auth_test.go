package catalog

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestActionAuthScope(t *testing.T) {
	t.Parallel()
	withAuth := func(section string) []byte { return append(wireAction("", ""), []byte("    auth:\n"+section)...) }

	cat, err := Parse(withAuth("      scope: payments:wire\n"), time.Second)
	require.NoError(t, err)
	assert.Equal(t, Auth{Scope: "payments:wire"}, cat.Actions["payments.wire"].Auth)

	cat, err = Parse(wireAction("", ""), time.Second)
	require.NoError(t, err)
	assert.Equal(t, Auth{}, cat.Actions["payments.wire"].Auth, "no auth section: no scope")

	for _, tc := range []struct{ section, want string }{
		{"      scope: \"\"\n", "payments.wire: auth.scope is required"},
		{"      scope: \"payments wire\"\n", `payments.wire: auth.scope "payments wire": a scope is printable ASCII`},
		{"      scope: 'pay\"ments'\n", `auth.scope "pay\"ments"`},
		{"      scope: payments:wire\n      role: operator\n", "role"},
	} {
		_, err := Parse(withAuth(tc.section), time.Second)
		assert.ErrorContains(t, err, tc.want, tc.section)
	}
}
