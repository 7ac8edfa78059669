package benchscale

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseSizes: SCALE_SIZES takes counts of operations, with spaces and
// digit separators, and refuses anything else rather than measuring a
// size nobody asked for.
func TestParseSizes(t *testing.T) {
	got, err := ParseSizes("0, 1000000,5_000_000")
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1_000_000, 5_000_000}, got)
	for _, bad := range []string{"", "1M", "-1", "0,,1"} {
		_, err := ParseSizes(bad)
		assert.Error(t, err, "%q", bad)
	}
}
