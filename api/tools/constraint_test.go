package tools_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/oncegate/oncegate/api/tools"
	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/params"
)

// minLengthConstraint is a test-only constraint, min_length: the fewest
// characters a string may have. It shows what a new constraint is: one
// type in one file that registers itself, with its English texts; the
// catalog loader, params and the tool schema speak to it without a change.
type minLengthConstraint struct{}

func init() { catalog.Register(minLengthConstraint{}) }

func (minLengthConstraint) Key() string  { return "min_length" }
func (minLengthConstraint) Rule() string { return "min_length" }
func (minLengthConstraint) Order() int   { return 105 }
func (minLengthConstraint) Types() []catalog.FieldType {
	return []catalog.FieldType{catalog.TypeString}
}

// Decode reads a whole number of at least 1.
func (minLengthConstraint) Decode(n *yaml.Node) (any, bool, error) {
	var limit int
	if err := n.Decode(&limit); err != nil || limit < 1 {
		return nil, false, fmt.Errorf("min_length %s must be a whole number >= 1", n.Value)
	}
	return limit, true, nil
}

func (minLengthConstraint) CheckDeclaration(string, *catalog.Field, map[string]catalog.Field) []string {
	return nil
}

func (c minLengthConstraint) Check(f *catalog.Field, v catalog.Value) []catalog.Problem {
	limit := catalog.ValueOf[int](f, c)
	if n := utf8.RuneCountInString(v.Text); n < limit {
		return []catalog.Problem{{Rule: c.Rule(), Code: "min_length", Expected: "length >= " + strconv.Itoa(limit),
			Args: []string{"got", strconv.Itoa(n), "limit", strconv.Itoa(limit)}}}
	}
	return nil
}

func (c minLengthConstraint) Describe(f *catalog.Field) catalog.Description {
	limit := catalog.ValueOf[int](f, c)
	return catalog.Description{Keywords: map[string]any{"minLength": limit}, Sentence: fmt.Sprintf("At least %d characters.", limit)}
}

func (minLengthConstraint) Texts() map[string]string {
	return map[string]string{"min_length": "is {{.got}} characters long; at least {{.limit}} are needed"}
}

// minLengthCatalog declares a field with the test-only constraint, as a
// catalog file does.
const minLengthCatalog = `
actions:
  shop.order:
    description: Order goods.
    bind:
      sku: {type: string, required: true, min_length: %s}
    fingerprint_ttl: 15m
    in_flight_ttl: 10m
    terminal_ttl: 24h
    downstream:
      execute: http://shop.invalid/orders
      timeout: 5s
`

func TestANewConstraint(t *testing.T) {
	t.Parallel()
	for value, want := range map[string]string{
		"0":     "shop.order: bind.sku: min_length 0 must be a whole number >= 1",
		"three": "shop.order: bind.sku: min_length three must be a whole number >= 1",
	} {
		_, err := catalog.Parse(fmt.Appendf(nil, minLengthCatalog, value), time.Second)
		require.ErrorIs(t, err, catalog.ErrInvalid)
		assert.ErrorContains(t, err, want, "the constraint decodes its own value at load and the loader names the field")
	}

	cat, err := catalog.Parse(fmt.Appendf(nil, minLengthCatalog, "3"), time.Second)
	require.NoError(t, err, "the catalog loads a key it has never heard of")
	action, ok := cat.Lookup("shop.order")
	require.True(t, ok)

	problems := params.Validate([]byte(`{"sku":"ab"}`), action)
	require.Len(t, problems, 1, "%+v", problems)
	assert.Equal(t, "sku", problems[0].Field)
	assert.Equal(t, "min_length", problems[0].Rule)
	assert.Equal(t, "min_length", problems[0].Code)
	assert.Equal(t, "length >= 3", problems[0].Expected)
	assert.Equal(t, "is 2 characters long; at least 3 are needed", problems[0].Problem, "params renders the constraint's own text")
	assert.Empty(t, params.Validate([]byte(`{"sku":"abc"}`), action))

	preview := byName(tools.Tools(cat))[tools.PreviewName("shop.order")]
	sku := preview.InputSchema["properties"].(map[string]any)["params"].(map[string]any)["properties"].(map[string]any)["sku"].(map[string]any)
	assert.Equal(t, 3, sku["minLength"], "the tool schema carries the constraint's keyword")
	assert.Contains(t, sku["description"], "At least 3 characters.")
	rs := resolve(t, preview.InputSchema)
	assert.Error(t, rs.Validate(instance(t, `{"params":{"sku":"ab"}}`)), "a client's validator refuses what the gateway refuses")
	assert.NoError(t, rs.Validate(instance(t, `{"params":{"sku":"abc"}}`)))

	view, err := json.Marshal(action.Bind["sku"])
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"string","required":true,"min_length":3}`, string(view), "the catalog's JSON view shows it")
}
