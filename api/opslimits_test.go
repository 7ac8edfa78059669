package api

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/idemstore/memstore"
	"github.com/oncegate/oncegate/idemstore/storetest"
	"github.com/oncegate/oncegate/internal/limits"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/status"
)

// devBobLimits are deployments/limits.dev.yaml's budgets of bob: one in
// CHF, one without currency.
func devBobLimits(t *testing.T) *limits.Limits {
	t.Helper()
	dec := func(s string) apd.Decimal {
		d, _, err := apd.NewFromString(s)
		require.NoError(t, err)
		return *d
	}
	return &limits.Limits{Budgets: []limits.Budget{
		{Name: "bob-daily-chf", Subject: "bob", Currency: "CHF", Max: map[limits.Window]apd.Decimal{limits.Daily: dec("1000.00")}},
		{Name: "bob-per-operation", Subject: "bob", Max: map[limits.Window]apd.Decimal{limits.PerOperation: dec("500.00")}},
	}}
}

func TestOpsLimitsShowsABudgetWithoutCurrency(t *testing.T) {
	tests := []struct {
		name       string
		currencies []string
		want       []map[string]any
	}{
		{
			name: "no usage yet: once, for any currency",
			want: []map[string]any{
				{"name": "bob-daily-chf", "window": "daily", "currency": "CHF", "max": "1000.00", "used": "0.00", "left": "1000.00"},
				{"name": "bob-per-operation", "window": "per_operation", "currency": "", "max": "500.00", "used": "0", "left": "500.00"},
			},
		},
		{
			name:       "usage in two currencies: once per currency",
			currencies: []string{"CHF", "EUR"},
			want: []map[string]any{
				{"name": "bob-daily-chf", "window": "daily", "currency": "CHF", "max": "1000.00", "used": "0.00", "left": "1000.00"},
				{"name": "bob-per-operation", "window": "per_operation", "currency": "CHF", "max": "500.00", "used": "0.00", "left": "500.00"},
				{"name": "bob-per-operation", "window": "per_operation", "currency": "EUR", "max": "500.00", "used": "0.00", "left": "500.00"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t, func(d *gateway.Deps) {
				d.Limits = devBobLimits(t)
				d.Budgets = d.Claims.(*memstore.Store)
			})
			// Bob's reservations in tt.currencies, older than a day: listed,
			// but no longer counted by any daily window.
			for _, cur := range tt.currencies {
				c := storetest.NewClaim(t, "gw:1")
				c.Subject, c.Charge = "bob", &operation.Charge{Amount: *apd.New(1, 0), Currency: cur}
				d, err := b.store.Acquire(context.Background(), c)
				require.NoError(t, err)
				require.Equal(t, idemstore.OutcomeAcquired, d.Outcome)
			}
			b.clock.Add(25 * time.Hour)

			r := b.do(t, http.MethodGet, "/v1/ops/limits/bob", "dev-ops", "")

			require.Equal(t, http.StatusOK, r.code, r.raw)
			assert.Equal(t, status.LimitsShown, r.status())
			view, ok := r.body["limits"].(map[string]any)
			require.True(t, ok, r.raw)
			got, ok := view["budgets"].([]any)
			require.True(t, ok, r.raw)
			want := make([]any, len(tt.want))
			for i, w := range tt.want {
				want[i] = w
			}
			assert.Equal(t, want, got)
		})
	}
}
