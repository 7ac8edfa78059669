package tools_test

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/api/tools"
)

var update = flag.Bool("update", false, "rewrite the generated tool list of docs/agents.md")

// TestDocsToolList keeps docs/agents.md's list of tools equal to what the
// gateway serves with the dev catalog (go test ./api/tools -run
// TestDocsToolList -update rewrites it).
func TestDocsToolList(t *testing.T) {
	var b strings.Builder
	b.WriteString("| tool | does | action |\n| --- | --- | --- |\n")
	all := tools.Tools(devCatalog(t))
	for _, tool := range all {
		scope := "every action"
		if tool.Scope != "" {
			scope = "`" + tool.Scope + "`"
		}
		does := map[tools.Kind]string{
			tools.KindPreview: "preview: checks the params (and asks for a quote when the action has one), signs a fingerprint; runs nothing",
			tools.KindConfirm: "confirm: runs the previewed action at most once (annotated destructive)",
			tools.KindStatus:  "the status of an operation, by its `operation_id`",
		}[tool.Kind]
		b.WriteString("| `" + tool.Name + "` | " + does + " | " + scope + " |\n")
	}
	want := b.String()

	const begin, end = "<!-- tools:begin (generated from tools.Tools and the dev catalog; do not edit by hand) -->\n", "<!-- tools:end -->"
	path := filepath.Join("..", "..", "docs", "agents.md")
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	page := string(raw)
	i := strings.Index(page, begin)
	j := strings.Index(page, end)
	require.Truef(t, i >= 0 && j > i, "docs/agents.md has no tools:begin ... tools:end section")
	i += len(begin)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(page[:i]+want+page[j:]), 0o644))
		return
	}
	assert.Equal(t, want, page[i:j], "docs/agents.md's tool list is stale: run go test ./api/tools -run TestDocsToolList -update")
	assert.Contains(t, page, "serves "+strconv.Itoa(len(all))+" tools", "docs/agents.md says how many tools there are")
}
