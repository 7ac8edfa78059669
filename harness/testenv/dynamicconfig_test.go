package testenv_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"gopkg.in/yaml.v3"

	"github.com/oncegate/oncegate/harness/testenv"
)

// TestDynamicConfigKeysAreTheServers checks every dynamic config key the
// project gives a Temporal server against the settings that server's
// version registers (go.temporal.io/server's common/dynamicconfig, read
// from the module cache): the server takes an unknown key without a word,
// so a misspelt one would turn its setting off in silence. The keys are
// testenv.DevServerDynamicConfig (the tests' and the benchmark's dev
// servers), scripts/stack.sh's DEV_DYNAMIC_CONFIG (the dev stack's, which
// must be the same list) and deployments/prod-local/temporal/dynamicconfig.yaml
// (the production-like profile's and compose's server, of scripts/prod.sh's
// TEMPORAL_SERVER_VERSION).
func TestDynamicConfigKeysAreTheServers(t *testing.T) {
	root, err := testenv.RepoRoot()
	require.NoError(t, err)

	stack, err := os.ReadFile(filepath.Join(root, "scripts", "stack.sh"))
	require.NoError(t, err)
	block := regexp.MustCompile(`(?s)\nDEV_DYNAMIC_CONFIG=\(\n(.*?)\n\)`).FindSubmatch(stack)
	require.NotNil(t, block, "scripts/stack.sh has no DEV_DYNAMIC_CONFIG=( ... )")
	assert.Equal(t, testenv.DevServerDynamicConfig, strings.Fields(string(block[1])),
		"scripts/stack.sh's DEV_DYNAMIC_CONFIG and testenv.DevServerDynamicConfig differ")

	c := testenv.SharedTemporal(t).Client(t)
	info, err := c.WorkflowService().GetSystemInfo(context.Background(), &workflowservice.GetSystemInfoRequest{})
	require.NoError(t, err)
	devKnown := serverSettings(t, "v"+info.GetServerVersion())
	for _, kv := range testenv.DevServerDynamicConfig {
		key, _, _ := strings.Cut(kv, "=")
		assert.Truef(t, devKnown(key), "%s (testenv.DevServerDynamicConfig) is no setting of Temporal server %s", key, info.GetServerVersion())
	}

	prodScript, err := os.ReadFile(filepath.Join(root, "scripts", "prod.sh"))
	require.NoError(t, err)
	version := regexp.MustCompile(`(?m)^TEMPORAL_SERVER_VERSION=(v[0-9.]+)$`).FindSubmatch(prodScript)
	require.NotNil(t, version, "scripts/prod.sh has no TEMPORAL_SERVER_VERSION")
	prodKnown := serverSettings(t, string(version[1]))
	raw, err := os.ReadFile(filepath.Join(root, "deployments", "prod-local", "temporal", "dynamicconfig.yaml"))
	require.NoError(t, err)
	var prod map[string]any
	require.NoError(t, yaml.Unmarshal(raw, &prod))
	require.NotEmpty(t, prod)
	for key := range prod {
		assert.Truef(t, prodKnown(key), "%s (prod-local dynamicconfig.yaml) is no setting of Temporal server %s", key, version[1])
	}
}

// serverSettings reads the dynamic config settings go.temporal.io/server
// at version registers and answers whether key is one of them.
func serverSettings(t *testing.T, version string) func(key string) bool {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", "go.temporal.io/server@"+version)
	cmd.Dir = t.TempDir() // outside the module: nothing is added to go.mod or go.sum
	out, err := cmd.Output()
	require.NoError(t, err, "go mod download go.temporal.io/server@%s: %s", version, out)
	var mod struct{ Dir string }
	require.NoError(t, json.Unmarshal(out, &mod))
	src, err := os.ReadFile(filepath.Join(mod.Dir, "common", "dynamicconfig", "constants.go"))
	require.NoError(t, err)
	return func(key string) bool {
		return regexp.MustCompile(`New\w*Setting\w*\(\s*"` + regexp.QuoteMeta(key) + `"`).Match(src)
	}
}
