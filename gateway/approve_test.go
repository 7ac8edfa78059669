package gateway

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestWithScale: the page writes money as a person reads it, with the
// currency's decimal places.
func TestWithScale(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ n, cur, want string }{
		{"250", "USD", "250.00"},
		{"12.5", "EUR", "12.50"},
		{"1000", "JPY", "1000"},
		{"1.5", "BHD", "1.500"},
		{"0.001", "USD", "0.001"}, // more places than the currency: shown as it is
		{"7", "XXX", "7"},         // not a currency: as it is
	} {
		assert.Equal(t, tc.want, withScale(tc.n, tc.cur), "%s %s", tc.n, tc.cur)
	}
}
