// Package harness_test keeps the harness in its own wing: the simulator, the
// test environment, the soak, the benchmark, the agent simulator and the
// end-to-end tests live under harness, and no product package
// imports them. Tests of product packages may (they start real servers
// through testenv); the harness's own binaries may.
package harness_test

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/oncegate/oncegate"

// harnessBinaries are the commands that are part of the harness: they run
// the simulator, the soak, the benchmark and the agent simulator.
var harnessBinaries = map[string]bool{
	module + "/cmd/agentsim":   true,
	module + "/cmd/bench-e2e":  true,
	module + "/cmd/downstream": true,
	module + "/cmd/oidc-dev":   true,
	module + "/cmd/soak":       true,
}

// isHarness reports whether a package is in the harness's wing.
func isHarness(path string) bool {
	return strings.HasPrefix(path, module+"/harness/") || harnessBinaries[path]
}

func TestNoProductPackageImportsTheHarness(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", module+"/...").Output()
	require.NoError(t, err, "go list")
	dec := json.NewDecoder(strings.NewReader(string(out)))
	products := 0
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
		if isHarness(p.ImportPath) {
			continue
		}
		products++
		for _, imp := range p.Imports {
			if isHarness(imp) {
				t.Errorf("product package %s imports the harness package %s: move the shared code out of the harness, or the importer into it", p.ImportPath, imp)
			}
		}
	}
	require.Greater(t, products, 20, "go list listed too few product packages to check")
}

func TestIsHarness(t *testing.T) {
	require.True(t, isHarness(module+"/harness/testenv"))
	require.True(t, isHarness(module+"/cmd/soak"))
	require.False(t, isHarness(module+"/cmd/gateway"))
	require.False(t, isHarness(module+"/harnessing"))
	require.False(t, isHarness(module+"/api"))
}
