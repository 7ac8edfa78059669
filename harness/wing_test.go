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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/oncegate/oncegate"

// harnessBinaries are the commands that are part of the harness: they run
// the simulator, the soak, the benchmark and the agent simulator.
var harnessBinaries = map[string]bool{
	module + "/cmd/agentsim":    true,
	module + "/cmd/bench-e2e":   true,
	module + "/cmd/bench-scale": true,
	module + "/cmd/downstream":  true,
	module + "/cmd/oidc-dev":    true,
	module + "/cmd/soak":        true,
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

// imports lists what go list says of pkgs: each package's path and its
// imports (deps: every package it needs, transitively).
func imports(t *testing.T, deps bool, pkgs ...string) map[string][]string {
	t.Helper()
	field := "Imports"
	if deps {
		field = "Deps"
	}
	out, err := exec.Command("go", append([]string{"list", "-json=ImportPath," + field}, pkgs...)...).Output()
	require.NoError(t, err, "go list")
	dec := json.NewDecoder(strings.NewReader(string(out)))
	got := map[string][]string{}
	for {
		var p struct {
			ImportPath string
			Imports    []string
			Deps       []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
		got[p.ImportPath] = append(p.Imports, p.Deps...)
	}
	require.NotEmpty(t, got, "go list listed nothing")
	return got
}

// TestTheBinariesCarryNoHarness: nothing of the harness is linked into the
// gateway or the worker, even through a dependency of a dependency.
func TestTheBinariesCarryNoHarness(t *testing.T) {
	for bin, deps := range imports(t, true, module+"/cmd/gateway", module+"/cmd/worker") {
		for _, d := range deps {
			assert.False(t, isHarness(d), "%s links the harness package %s", bin, d)
		}
		assert.Contains(t, deps, module+"/workflows", "%s: the check reads the dependencies", bin)
	}
}

// forbidden are the imports each layer may not make (a path ending in /
// forbids the packages below it, any other the package and those below
// it): the core (gateway) knows no HTTP framework and no adapter; the HTTP
// adapter (api) reaches the stores and the workflow engine only through
// the core's ports, and knows no store's types.
var forbidden = map[string][]string{
	module + "/gateway": {"github.com/labstack/echo", module + "/api", module + "/workflows", module + "/engine",
		module + "/idemstore/", "go.temporal.io/"},
	module + "/api": {module + "/workflows", module + "/engine", module + "/idemstore", module + "/activities",
		module + "/worker", "go.temporal.io/"},
	// The domain and the storage boundary run down only: the operation's
	// values import no store, the store's boundary no configuration, the
	// approval no catalog, the Redis backend its own settings.
	module + "/operation":            {module + "/idemstore", module + "/internal/catalog", module + "/workflows", module + "/gateway"},
	module + "/idemstore":            {module + "/internal/", module + "/workflows", module + "/gateway", module + "/approval"},
	module + "/approval":             {module + "/internal/catalog", module + "/idemstore", module + "/gateway"},
	module + "/idemstore/redisstore": {module + "/internal/"},
	module + "/internal/catalog":     {module + "/idemstore", module + "/gateway", module + "/api"},
	module + "/internal/limits":      {module + "/idemstore", module + "/gateway", module + "/api"},
}

// TestImportsRunOneWay: adapters import the core, the core imports the
// domain; no arrow runs back up (forbidden).
func TestImportsRunOneWay(t *testing.T) {
	pkgs := make([]string, 0, len(forbidden))
	for p := range forbidden {
		pkgs = append(pkgs, p)
	}
	for pkg, imps := range imports(t, false, pkgs...) {
		require.NotEmpty(t, imps, pkg)
		for _, imp := range imps {
			for _, bad := range forbidden[pkg] {
				assert.False(t, matches(imp, bad), "%s imports %s (no import of %s)", pkg, imp, bad)
			}
		}
	}
}

// matches reports whether the import imp is what bad forbids.
func matches(imp, bad string) bool {
	if strings.HasSuffix(bad, "/") {
		return strings.HasPrefix(imp, bad)
	}
	return imp == bad || strings.HasPrefix(imp, bad+"/")
}

func TestMatches(t *testing.T) {
	assert.True(t, matches(module+"/idemstore/pgstore", module+"/idemstore/"))
	assert.False(t, matches(module+"/idemstore", module+"/idemstore/"))
	assert.True(t, matches("github.com/labstack/echo/v4", "github.com/labstack/echo"))
	assert.True(t, matches(module+"/api", module+"/api"))
	assert.True(t, matches(module+"/api/auth", module+"/api"))
	assert.False(t, matches(module+"/apiary", module+"/api"))
}
