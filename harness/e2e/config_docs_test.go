package e2e

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/api"
	"github.com/oncegate/oncegate/harness/agentsim"
	"github.com/oncegate/oncegate/harness/simulator"
	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/internal/envconfig"
	"github.com/oncegate/oncegate/internal/opsconfig"
	"github.com/oncegate/oncegate/internal/rebuild"
	"github.com/oncegate/oncegate/worker"
)

// configVar is one environment variable: which binaries read it through
// their config struct, and with which defaults.
type configVar struct {
	users    []string
	defaults map[string]bool
}

// structVars lists the variables the binaries' config structs read, by
// their env tags: the binary's name as the configuration table's "used by"
// column says it, and its config struct.
func structVars(t *testing.T) map[string]*configVar {
	t.Helper()
	vars := map[string]*configVar{}
	add := func(binary string, list []envconfig.Var, err error) {
		require.NoError(t, err)
		require.NotEmpty(t, list, binary)
		for _, v := range list {
			cv := vars[v.Name]
			if cv == nil {
				cv = &configVar{defaults: map[string]bool{}}
				vars[v.Name] = cv
			}
			cv.users = append(cv.users, binary)
			if v.HasDefault {
				cv.defaults[v.Default] = true
			}
		}
	}
	list, err := envconfig.Vars[api.Config]()
	add("gateway", list, err)
	list, err = envconfig.Vars[worker.Config]()
	add("worker", list, err)
	list, err = envconfig.Vars[simulator.Config]()
	add("simulator", list, err)
	list, err = envconfig.Vars[opsconfig.Config]()
	add("ops CLI", list, err)
	list, err = envconfig.Vars[rebuild.Config]()
	add("rebuild", list, err)
	list, err = envconfig.Vars[agentsim.Config]()
	add("agentsim", list, err)
	return vars
}

// catalogVar matches the variables a catalog names: ${NAME} expansions and
// the secret_env / auth_env of an action, read by name at run time.
var catalogVar = regexp.MustCompile(`\$\{([A-Z][A-Z0-9_]*)\}|(?:secret_env|auth_env):\s*([A-Z][A-Z0-9_]*)`)

// tableVar matches a variable's name in backticks.
var tableVar = regexp.MustCompile("`([A-Z][A-Z0-9_]+)`")

// configTable returns the rows of docs/reference.md's configuration
// table: the variables of the first column → the whole rows naming them.
func configTable(t *testing.T, root string) map[string][]string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "reference.md"))
	require.NoError(t, err)
	section := string(doc)
	i := strings.Index(section, "\n## Configuration\n")
	require.GreaterOrEqual(t, i, 0, "docs/reference.md has a Configuration section")
	i++
	section = section[i:]
	if j := strings.Index(section[3:], "\n## "); j >= 0 {
		section = section[:j+3]
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(line, "| `") {
			continue
		}
		for _, m := range tableVar.FindAllStringSubmatch(cells[1], -1) {
			rows[m[1]] = append(rows[m[1]], line)
		}
	}
	require.NotEmpty(t, rows, "the configuration table has rows")
	return rows
}

// TestConfigurationTableIsComplete: docs/reference.md's configuration
// table and the binaries' config structs (their env tags) list the same
// variables. A variable a struct reads has a row, which names every binary
// reading it and the default of its envDefault tag (the same in every
// struct); a variable in the table is read by a struct, or named by the
// dev catalog (${NAME}, secret_env), which the binaries read by name.
func TestConfigurationTableIsComplete(t *testing.T) {
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	table := configTable(t, root)
	read := structVars(t)

	for _, name := range slices.Sorted(maps.Keys(read)) {
		v := read[name]
		rows, ok := table[name]
		if !assert.True(t, ok, "%s is read by %v (env tag) but missing from docs/reference.md's configuration table", name, v.users) {
			continue
		}
		all := strings.Join(rows, "\n")
		for _, user := range v.users {
			assert.Contains(t, all, user, "%s: its row does not say the %s reads it", name, user)
		}
		assert.LessOrEqual(t, len(v.defaults), 1, "%s has different envDefaults in %v: %v", name, v.users, v.defaults)
		for def := range v.defaults {
			assert.Contains(t, all, "`"+def+"`", "%s: its row does not give its default %q", name, def)
		}
	}

	catalog, err := os.ReadFile(filepath.Join(root, "deployments", "catalog.dev.yaml"))
	require.NoError(t, err)
	byName := map[string]bool{}
	for _, m := range catalogVar.FindAllStringSubmatch(string(catalog), -1) {
		byName[m[1]+m[2]] = true
	}
	require.NotEmpty(t, byName, "the dev catalog names variables")
	for _, name := range slices.Sorted(maps.Keys(table)) {
		_, inStruct := read[name]
		assert.True(t, inStruct || byName[name],
			"%s is in docs/reference.md's configuration table, but no config struct has it in an env tag and the dev catalog does not name it", name)
	}
}

// envCall matches a direct read of the environment: a call, or the
// function handed on as a value.
var envCall = regexp.MustCompile(`\bos\.(?:Getenv|LookupEnv|Environ)\b`)

// TestOnlyConfigStructsReadTheEnvironment: outside the config structs
// (internal/envconfig reads the environment for them) the production code
// reads a variable directly only where a catalog names it, so every other
// variable goes through an env tag that the table test above sees.
func TestOnlyConfigStructsReadTheEnvironment(t *testing.T) {
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	byName := map[string]string{
		"internal/envconfig/envconfig.go": "the one place that hands the environment to the library",
		"gateway/webhook.go":              "the catalog's webhook.secret_env",
		"internal/downstream/mcp.go":      "the catalog's auth_env",
		"internal/catalog/load.go":        "the catalog's ${NAME} expansions",
		"cmd/soak/main.go":                "the soak harness: SOAK_* fall back for its flags (docs/faults.md, Chaos soak)",
		"cmd/bench-scale/main.go":         "the scale benchmark (harness): SCALE_SIZES falls back for its -sizes flag (docs/reference.md, make bench-scale)",
		"cmd/oidc-dev/main.go":            "the dev identity provider (harness): Hydra's own HYDRA_* settings",
	}
	var found []string
	for _, dir := range []string{"api", "gateway", "engine", "operation", "approval", "receipt", "status", "cmd", "worker", "activities", "idemstore", "fingerprint", "workflows", "client", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			if strings.HasPrefix(rel, "harness/testenv/") {
				return nil // the test harness starts the binaries
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if envCall.Match(src) {
				found = append(found, rel)
			}
			return nil
		})
		require.NoError(t, err)
	}
	for _, rel := range found {
		_, ok := byName[rel]
		assert.True(t, ok, "%s reads the environment directly: give the variable an env tag in its binary's config struct", rel)
	}
	for rel := range byName {
		assert.Contains(t, found, rel, "%s no longer reads the environment: drop it from the list", rel)
	}
}
