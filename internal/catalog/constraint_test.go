package catalog

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestEveryConstraintKeyIsAFieldKey checks the constraints against the
// keys a bound field declares in YAML: each constraint is declared by a key
// of Field, and each key of Field but the field's own (type, required,
// normalize, description) is a constraint's, so that no constraint is a
// key nothing checks.
func TestEveryConstraintKeyIsAFieldKey(t *testing.T) {
	t.Parallel()
	own := []string{"type", "required", "normalize", "description"}
	var keys []string
	ft := reflect.TypeFor[Field]()
	for i := range ft.NumField() {
		if tag, _, _ := strings.Cut(ft.Field(i).Tag.Get("yaml"), ","); tag != "" && !slices.Contains(own, tag) {
			keys = append(keys, tag)
		}
	}
	declared := map[string]bool{}
	for _, c := range Constraints() {
		assert.Contains(t, keys, c.Key(), "constraint %s is declared by no key of Field", c.Key())
		assert.NotEmpty(t, c.Types(), c.Key())
		assert.NotEmpty(t, c.Texts(), "constraint %s names no problem", c.Key())
		declared[c.Key()] = true
	}
	for _, k := range keys {
		assert.True(t, declared[k], "Field key %s is no constraint's: add its file (constraint_%s.go)", k, k)
	}
}
