package testenv

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSumMetric: the samples of one metric are summed, those whose line
// contains match only; a longer name sharing the prefix, comments and
// other metrics are not; a sample whose value does not parse is an error.
func TestSumMetric(t *testing.T) {
	text := `# HELP temporal_request Requests.
# TYPE temporal_request counter
temporal_request{operation="StartWorkflowExecution"} 2
temporal_request{operation="DescribeWorkflowExecution"} 3
temporal_request_latency_count{operation="StartWorkflowExecution"} 40
temporal_long_request{operation="GetWorkflowExecutionHistory"} 5
up 1
`
	for _, tc := range []struct {
		name, match string
		want        float64
	}{
		{"temporal_request", "", 5},
		{"temporal_request", `operation="StartWorkflowExecution"`, 2},
		{"temporal_request", `operation="PollWorkflowTaskQueue"`, 0},
		{"temporal_long_request", "", 5},
		{"up", "", 1},
	} {
		got, err := SumMetric(strings.NewReader(text), tc.name, tc.match)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%s %s", tc.name, tc.match)
	}
	_, err := SumMetric(strings.NewReader("up{a=\"b\"} x\n"), "up", "")
	assert.Error(t, err)
}
