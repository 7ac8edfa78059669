package iso4217

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLookup(t *testing.T) {
	for code, scale := range map[string]int{"USD": 2, "EUR": 2, "JPY": 0, "BHD": 3, "CNY": 2, "KWD": 3} {
		c, err := Lookup(code)
		require.NoError(t, err, code)
		assert.Equal(t, code, c.Code)
		assert.Equal(t, scale, c.Scale, code)
	}
	for _, code := range []string{"XXX", "XTS", "XAU", "XAG", "XDR", "USN", "CHW", "CLF", "DEM", "usd", "US", "USDD", "ABC", "", "ＵＳＤ"} {
		_, err := Lookup(code)
		assert.ErrorIs(t, err, ErrNotActive, code)
	}
}

func TestMaxScaleAndCount(t *testing.T) {
	assert.GreaterOrEqual(t, MaxScale(), 3, "BHD has 3 decimal places")
	assert.Greater(t, Count(), 100)
}
