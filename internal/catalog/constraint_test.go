package catalog

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConstraintsAreRegistered checks the registry of constraints: each
// has its own order (problems and descriptions come in it), types and
// texts, and a key that is no key of the field's own, which are the keys
// fieldKeys decodes.
func TestConstraintsAreRegistered(t *testing.T) {
	t.Parallel()
	var own []string
	ft := reflect.TypeFor[fieldKeys]()
	for i := range ft.NumField() {
		if tag, _, _ := strings.Cut(ft.Field(i).Tag.Get("yaml"), ","); tag != "" {
			own = append(own, tag)
		}
	}
	assert.ElementsMatch(t, ownKeys, own, "ownKeys are the keys fieldKeys decodes")
	orders := map[int]string{}
	for _, c := range Constraints() {
		if other, dup := orders[c.Order()]; dup {
			t.Errorf("constraints %s and %s have the same order %d: give each its own", other, c.Rule(), c.Order())
		}
		orders[c.Order()] = c.Rule()
		assert.NotContains(t, own, c.Key(), "constraint %s is declared by a key of the field's own", c.Rule())
		assert.NotEmpty(t, c.Types(), c.Key())
		assert.NotEmpty(t, c.Texts(), "constraint %s names no problem", c.Key())
	}
	assert.True(t, slices.IsSortedFunc(Constraints(), func(a, b Constraint) int { return a.Order() - b.Order() }))
}

// TestDocsDescribeEveryConstraint checks that the table of constraints in
// docs/reference.md's section on the action catalog has a row for each
// constraint's key (kind: <rule> for the string kinds), so that a new
// constraint is documented.
func TestDocsDescribeEveryConstraint(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "reference.md"))
	require.NoError(t, err)
	const heading = "\n## The action catalog\n"
	_, section, ok := strings.Cut(string(raw), heading)
	require.True(t, ok, "docs/reference.md has no section %q", strings.TrimSpace(heading))
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	for _, c := range Constraints() {
		key := "`" + c.Key() + "`"
		if c.Key() == kindKey {
			key = "`kind: " + c.Rule() + "`"
		}
		assert.Regexp(t, `(?m)^\| [^|]*`+regexp.QuoteMeta(key), section, "docs/reference.md's constraint table has no row for %s", key)
	}
}
