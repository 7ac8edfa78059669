package tools_test

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/api/tools"
	"github.com/oncegate/oncegate/internal/iso4217"
	"github.com/oncegate/oncegate/internal/params"
	"github.com/oncegate/oncegate/internal/params/paramstest"
)

// TestSchemaAndGatewayAcceptTheSameAmounts: the amount pattern of the dev
// catalog's tool schema and the gateway's binding of the same params
// accept and refuse the same strings, row by row of the shared table; an
// unconstrained decimal's pattern is params.DecimalPattern itself.
func TestSchemaAndGatewayAcceptTheSameAmounts(t *testing.T) {
	tab, err := paramstest.ReadDecimalTable()
	require.NoError(t, err)
	cur, err := iso4217.Lookup(tab.Currency)
	require.NoError(t, err)
	require.Equal(t, iso4217.MaxScale(), cur.Scale, "the table's currency allows as many decimals as the schema's pattern")

	cat := devCatalog(t)
	typed := byName(tools.Tools(typedCatalog()))["shop_order_preview"].InputSchema["properties"].(map[string]any)["params"].(map[string]any)["properties"].(map[string]any)
	assert.Equal(t, params.DecimalPattern, typed["price"].(map[string]any)["pattern"], "an unconstrained decimal is the grammar itself")
	grammar := regexp.MustCompile(params.DecimalPattern)

	checked := 0
	for _, tool := range tools.Tools(cat) {
		if tool.Kind != tools.KindPreview {
			continue
		}
		action := cat.Actions[tool.Scope]
		if _, has := action.Bind["amount"]; !has {
			continue
		}
		props := tool.InputSchema["properties"].(map[string]any)["params"].(map[string]any)["properties"].(map[string]any)
		re := regexp.MustCompile(props["amount"].(map[string]any)["pattern"].(string))
		checked++
		for _, row := range tab.Rows {
			body, err := json.Marshal(map[string]any{"amount": row.S, "currency": tab.Currency, "payee_id": "p-1"})
			require.NoError(t, err)
			_, problems := params.Bind(body, action)
			assert.Equalf(t, row.Amount, re.MatchString(row.S), "%s: the schema's pattern %s on %q", tool.Name, re, row.S)
			assert.Equalf(t, row.Amount, len(problems) == 0, "%s: the gateway on %q: %v", tool.Name, row.S, problems)
			if re.MatchString(row.S) {
				assert.Truef(t, grammar.MatchString(row.S), "%s: the schema admits %q outside the grammar", tool.Name, row.S)
			}
		}
	}
	assert.GreaterOrEqual(t, checked, 2, "the dev catalog's actions with an amount")
}
