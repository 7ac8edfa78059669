package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/internal/testenv"
)

// envRead matches the ways the binaries read an environment variable.
var envRead = regexp.MustCompile(`\b(?:get|required|secret|duration|envOr|Getenv|LookupEnv)\("([A-Z][A-Z0-9_]+)"`)

// TestConfigurationTableIsComplete: every environment variable the
// binaries read (in the code of api, cmd, worker and the internal packages
// they wire) has a row in docs/ARCHITECTURE.md's configuration table.
func TestConfigurationTableIsComplete(t *testing.T) {
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	require.NoError(t, err)
	table := string(doc)
	i := strings.Index(table, "## Configuration")
	require.GreaterOrEqual(t, i, 0, "ARCHITECTURE.md has a Configuration section")
	table = table[i:]
	if j := strings.Index(table[3:], "\n## "); j >= 0 {
		table = table[:j+3]
	}
	var read []string
	for _, dir := range []string{"api", "cmd", "worker", "internal/temporalconn", "internal/telemetry", "idemstore", "activities", "internal/downstream"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range envRead.FindAllStringSubmatch(string(src), -1) {
				if !slices.Contains(read, m[1]) {
					read = append(read, m[1])
				}
			}
			return nil
		})
		require.NoError(t, err)
	}
	require.NotEmpty(t, read)
	for _, name := range read {
		assert.Contains(t, table, "`"+name+"`", "%s is read by a binary but missing from ARCHITECTURE.md's configuration table", name)
	}
}
