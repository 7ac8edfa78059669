package testenv

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// SumMetric sums the samples of the metric name, in Prometheus's text
// format read from r, whose line (name, labels and value) contains match
// ("" matches every sample): the reading the tests and the benchmark make
// of a process's /metrics.
func SumMetric(r io.Reader, name, match string) (float64, error) {
	sum := 0.0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") || !strings.Contains(line, match) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("metric %s: %q: %w", name, line, err)
		}
		sum += v
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("metric %s: %w", name, err)
	}
	return sum, nil
}
