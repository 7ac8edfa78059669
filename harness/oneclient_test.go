package harness_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/harness/testenv"
)

// server are the folders of the gateway itself, which serves the routes
// (and may name them in its answers); client is the folder of the one
// client of the gateway.
var (
	server = []string{"api", "gateway", "cmd/gateway"}
	client = "client"
)

// sentByDownstreams are the gateway's /v1/ routes that no client calls: a
// downstream posts its signed events there with its own secret.
var sentByDownstreams = []string{"/v1/webhooks/"}

// TestOneClientOfTheGateway keeps package client the one client of the
// gateway: the ops CLI, the soak, the agent simulator, the benchmark and
// the examples call the gateway through it, and none builds a request to
// the gateway's API by hand.
//
// The rule, precisely: the gateway's client routes are the /v1/ paths of
// its OpenAPI document (api/openapi/openapi.json) but the webhook route,
// which downstreams call (sentByDownstreams); a route's fixed prefix is
// its path up to its first parameter ("/v1/actions/", "/v1/operations/",
// "/v1/tools", "/v1/ops/passkeys/invites", ...). A request to a route
// names its path, and Go code names a path in a string literal that begins
// with the route's fixed prefix ("/v1/ops/operations/" + id + "/resolve").
// So no Go file of the module other than a test's (_test.go: the
// end-to-end tests check the HTTP surface itself), outside the server's
// folders and the client's, may hold a string literal that begins with a
// client route's fixed prefix. Probes (/healthz, /readyz, /metrics), the
// receipt keys (receipt.JWKSPath), MCP (/mcp, spoken through an MCP
// client) and the approval pages are not /v1/ routes and not the client's.
//
// And the client covers them: its own files hold every route's prefix.
func TestOneClientOfTheGateway(t *testing.T) {
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	prefixes := clientRoutePrefixes(t, root)
	require.Contains(t, prefixes, "/v1/actions/", "the OpenAPI document lists the agent routes")
	require.Contains(t, prefixes, "/v1/ops/operations/", "the OpenAPI document lists the ops routes")

	named := map[string]bool{}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "bin" || slices.Contains(server, rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		files++
		inClient := strings.HasPrefix(rel, client+"/")
		for _, lit := range stringLiterals(t, path) {
			for _, p := range prefixes {
				if !strings.HasPrefix(lit.value, p) {
					continue
				}
				if inClient {
					named[p] = true
				} else {
					t.Errorf("%s:%d: %q names the gateway route %s: call the gateway through package client (client.Client, client.Ops) instead of building the request by hand",
						rel, lit.line, lit.value, p)
					break
				}
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, files, 200, "the walk read too few Go files to check")
	for _, p := range prefixes {
		assert.True(t, named[p], "package client has no call of the gateway route %s", p)
	}
}

// clientRoutePrefixes returns the fixed prefix of each client route of the
// gateway's OpenAPI document.
func clientRoutePrefixes(t *testing.T, root string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "api", "openapi", "openapi.json"))
	require.NoError(t, err)
	var doc struct {
		Paths map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	var out []string
	for path := range doc.Paths {
		fixed, _, _ := strings.Cut(path, "{")
		if !strings.HasPrefix(fixed, "/v1/") || slices.ContainsFunc(sentByDownstreams, func(d string) bool { return strings.HasPrefix(fixed, d) }) {
			continue
		}
		out = append(out, fixed)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// literal is a string literal's value and line.
type literal struct {
	value string
	line  int
}

// stringLiterals returns the string literals of the Go file at path.
func stringLiterals(t *testing.T, path string) []literal {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	require.NoError(t, err, path)
	var out []literal
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if v, err := strconv.Unquote(lit.Value); err == nil {
				out = append(out, literal{value: v, line: fset.Position(lit.Pos()).Line})
			}
		}
		return true
	})
	return out
}

func TestClientRoutePrefixes(t *testing.T) {
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	prefixes := clientRoutePrefixes(t, root)
	assert.Contains(t, prefixes, "/v1/tools")
	assert.Contains(t, prefixes, "/v1/operations/")
	assert.Contains(t, prefixes, "/v1/ops/limits/")
	assert.NotContains(t, prefixes, "/v1/webhooks/", "downstreams post webhooks, not a client")
	assert.NotContains(t, prefixes, "/mcp")
	assert.NotContains(t, prefixes, "/approve/")
}
