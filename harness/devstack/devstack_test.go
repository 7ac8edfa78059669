// Package devstack tests the dev stack as a stranger meets it: `make up`
// with every port moved, `make up` again from a shell without the
// variables, a killed component brought back, a taken port, the recipes of
// the README and docs/ (docPages), the MCP session and the Go-client example
// of docs/agents.md run as they are written, and `make clean` forgetting
// everything the stack kept.
package devstack_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/api/tools"
	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/internal/catalog"

	"github.com/oncegate/oncegate/status"
)

// unreachable are the statuses no recipe reaches, and why (docs/faults.md,
// "Reach every status", says the same).
var unreachable = map[status.Status]string{
	status.InternalError:  "a bug in the gateway",
	status.ResolutionSent: "a decision accepted while the truth database is slow for 20 s",
	// Only a person's passkey in a browser reaches these (TestApprovalInBrowser, TestApprovals).
	status.ApprovalRecorded: "a passkey's decision",
	status.ApprovalDeclined: "a passkey's decline",
	status.PasskeyEnrolled:  "a passkey's registration",
	status.PasskeyRevoked:   "revoking needs an enrolled passkey",
	// Only an identity provider's token carries scopes (TestOIDCWithHydra, api.TestActionScopes).
	status.InsufficientScope: "a scoped token from an identity provider",
}

// stackKeys are the variables a shell may carry from another stack's
// stack.env; the runs "without the variables" have none of them.
var stackKeys = []string{"GATEWAY_URL", "DOWNSTREAM_URL", "DOWNSTREAM_MCP_URL", "TEMPORAL_ADDRESS", "TEMPORAL_UI_URL",
	"TEMPORAL_NAMESPACE", "DATABASE_URL", "SIMULATOR_DATABASE_URL", "PGPORT", "REDIS_URL", "WORKER_METRICS_URL",
	"ONCEGATE_FINGERPRINT_KEYS", "ONCEGATE_RECEIPT_KEYS", "ONCEGATE_PAYOUT_WEBHOOK_SECRET", "ONCEGATE_RUN_DIR", "ONCEGATE_ENV",
	"ONCEGATE_CATALOG", "ONCEGATE_TOKENS", "ONCEGATE_CONFIRM_WAIT"}

// devStack is one stack started by make up in a run folder of its own.
type devStack struct {
	t    *testing.T
	root string
	run  string
	// slow is the confirm wait the test gives the gateway: a loaded
	// machine must not turn the recipes' completed into in_progress.
	slow string
}

// baseEnv is this process's environment without any stack variable.
func baseEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(stackKeys, k) && k != "GOWORK" {
			out = append(out, kv)
		}
	}
	return out
}

// make runs `make target` in the checkout with the run folder and extra
// (KEY=value) in the environment; it returns the output and the exit code.
func (s *devStack) make(target string, extra ...string) (string, int) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "-s", target)
	cmd.Dir = s.root
	cmd.Env = append(baseEnv(), append([]string{"ONCEGATE_RUN_DIR=" + s.run}, extra...)...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	s.t.Fatalf("make %s: %v\n%s", target, err, out)
	return "", -1
}

// env reads the stack's stack.env into a map.
func (s *devStack) env() map[string]string {
	s.t.Helper()
	raw, err := os.ReadFile(filepath.Join(s.run, "stack.env"))
	require.NoError(s.t, err)
	out := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if ok && !strings.HasPrefix(line, "#") {
			out[k] = strings.Trim(v, "'")
		}
	}
	return out
}

// pid reads a component's pid file.
func (s *devStack) pid(name string) int {
	s.t.Helper()
	raw, err := os.ReadFile(filepath.Join(s.run, name+".pid"))
	require.NoError(s.t, err, name)
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	require.NoError(s.t, err, name)
	return pid
}

// kill stops a component by its pid file and waits until it is gone.
func (s *devStack) kill(name string) {
	s.t.Helper()
	pid := s.pid(name)
	require.NoError(s.t, syscall.Kill(pid, syscall.SIGTERM))
	require.Eventually(s.t, func() bool { return !alive(pid) }, 60*time.Second, 100*time.Millisecond, "%s did not stop", name)
}

// alive reports whether pid is a live process (a zombie is dead).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

// TestDevStackAsTheREADMESays starts a stack with every port moved and
// checks what a stranger relies on, in order.
func TestDevStackAsTheREADMESays(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a whole stack with make up")
	}
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	s := &devStack{t: t, root: root, run: t.TempDir(), slow: "ONCEGATE_CONFIRM_WAIT=10s"}
	t.Cleanup(func() {
		if out, code := s.make("clean"); code != 0 {
			t.Logf("make clean: %s", out)
		}
	})

	ports := map[string]string{}
	for _, k := range []string{"GATEWAY_URL", "DOWNSTREAM_URL", "TEMPORAL_ADDRESS", "TEMPORAL_UI_URL", "PGPORT", "REDIS_URL", "WORKER_METRICS_URL"} {
		ports[k] = freeStackPort(t, ports)
	}
	moved := []string{
		"GATEWAY_URL=http://127.0.0.1:" + ports["GATEWAY_URL"],
		"DOWNSTREAM_URL=http://127.0.0.1:" + ports["DOWNSTREAM_URL"],
		"TEMPORAL_ADDRESS=127.0.0.1:" + ports["TEMPORAL_ADDRESS"],
		"TEMPORAL_UI_URL=http://127.0.0.1:" + ports["TEMPORAL_UI_URL"],
		"PGPORT=" + ports["PGPORT"],
		"REDIS_URL=redis://127.0.0.1:" + ports["REDIS_URL"] + "/0",
		"WORKER_METRICS_URL=http://127.0.0.1:" + ports["WORKER_METRICS_URL"] + "/metrics",
	}
	gateway := "http://127.0.0.1:" + ports["GATEWAY_URL"]

	out, code := s.make("up", append(moved, s.slow)...)
	require.Equal(t, 0, code, "make up with every port moved:\n%s", out)
	assert.Contains(t, out, "stack: a new stack in "+s.run)
	env := s.env()
	for _, kv := range moved {
		k, v, _ := strings.Cut(kv, "=")
		if k == "PGPORT" {
			assert.Contains(t, env["DATABASE_URL"], "127.0.0.1:"+v+"/")
			assert.Contains(t, env["SIMULATOR_DATABASE_URL"], "127.0.0.1:"+v+"/")
			continue
		}
		assert.Equal(t, v, env[k], k)
	}
	recorded, err := os.ReadFile(filepath.Join(s.run, "stack.env"))
	require.NoError(t, err)
	unchanged := func(what string) {
		t.Helper()
		now, err := os.ReadFile(filepath.Join(s.run, "stack.env"))
		require.NoError(t, err)
		assert.Equal(t, string(recorded), string(now), "%s rewrote stack.env", what)
	}

	t.Run("the Temporal server keeps its state in a write-ahead log", func(t *testing.T) {
		// scripts/stack.sh's DEV_SQLITE_PRAGMAS: with SQLite's rollback
		// journal no -wal file exists beside the database.
		_, err := os.Stat(filepath.Join(s.run, "temporal.db-wal"))
		assert.NoError(t, err, "the dev server's SQLite database has no write-ahead log")
	})

	t.Run("make up without the variables acts on the moved stack", func(t *testing.T) {
		out, code := s.make("up")
		require.Equal(t, 0, code, out)
		assert.Contains(t, out, "stack: acting on the stack recorded in "+s.run+"/stack.env (gateway "+gateway+")")
		assert.Contains(t, out, "oncegate is up: the stack in "+s.run)
		assert.Contains(t, out, "gateway       "+gateway)
		assert.NotContains(t, out, "starting", "everything runs")
		unchanged("make up without the variables")
	})

	t.Run("a killed component comes back on its moved port", func(t *testing.T) {
		out, code := s.make("status")
		require.Equal(t, 0, code, "make status while everything runs: %s", out)
		s.kill("gateway")
		out, code = s.make("status")
		assert.NotEqual(t, 0, code, "make status with the gateway stopped must fail: %s", out)
		assert.Contains(t, out, "gateway: stopped")
		out, code = s.make("up", s.slow)
		require.Equal(t, 0, code, out)
		assert.Contains(t, out, "stack: starting gateway")
		unchanged("make up after a kill")
		resp, err := httpGet(gateway + "/healthz")
		require.NoError(t, err)
		assert.Contains(t, resp, `"status":"alive"`)
	})

	t.Run("a running stack is never moved", func(t *testing.T) {
		other := "http://127.0.0.1:" + freeStackPort(t, ports)
		out, code := s.make("up", "GATEWAY_URL="+other)
		assert.Equal(t, 2, code, out)
		assert.Contains(t, out, "stack: refusing to move the running stack in "+s.run+" (gateway "+gateway+";")
		assert.Contains(t, out, "GATEWAY_URL="+other+" (the running stack has "+gateway+")")
		unchanged("a refused make up")
	})

	t.Run("a taken port is named with its variable", func(t *testing.T) {
		s.kill("worker")
		held, err := net.Listen("tcp", "127.0.0.1:"+ports["WORKER_METRICS_URL"])
		require.NoError(t, err)
		out, code := s.make("up", s.slow)
		_ = held.Close()
		assert.Equal(t, 2, code, out)
		assert.Contains(t, out, "port "+ports["WORKER_METRICS_URL"]+" (WORKER_METRICS_URL=http://127.0.0.1:"+
			ports["WORKER_METRICS_URL"]+"/metrics) is already in use by another process, so worker cannot start there")
		out, code = s.make("up", s.slow)
		require.Equal(t, 0, code, out)
		assert.Contains(t, out, "stack: starting worker")
	})

	t.Run("the docs' recipes reach every status", func(t *testing.T) { s.recipes(t) })
	t.Run("the docs' MCP session", func(t *testing.T) { s.mcpSession(t) })
	t.Run("the docs' Go client from another module", func(t *testing.T) { s.goClient(t) })

	t.Run("make clean forgets everything the stack kept", func(t *testing.T) {
		var pids []int
		for _, c := range []string{"postgres", "redis", "temporal", "downstream", "worker", "gateway"} {
			pids = append(pids, s.pid(c))
		}
		pgLog, err := os.ReadFile(filepath.Join(s.run, "postgres.log"))
		require.NoError(t, err)
		assert.NotContains(t, string(pgLog), "could not change directory", "PostgreSQL's programs run from a folder they can enter")
		var outside string
		if target, err := os.Readlink(filepath.Join(s.run, "postgres")); err == nil {
			outside = filepath.Dir(target)
		}
		if os.Geteuid() == 0 && exec.Command("runuser", "-u", "postgres", "--", "test", "-x", s.run).Run() != nil {
			require.NotEmpty(t, outside, "the postgres user cannot enter %s: its data live outside it", s.run)
		}

		out, code := s.make("clean")
		require.Equal(t, 0, code, out)
		var forgot []string
		for _, line := range strings.Split(out, "\n") {
			if dir, ok := strings.CutPrefix(line, "stack: forgot "); ok {
				forgot = append(forgot, dir)
			}
		}
		assert.Contains(t, forgot, s.run)
		if outside != "" {
			assert.Contains(t, forgot, outside, "the folder outside the run folder is forgotten too")
			assert.Regexp(t, `^/var/tmp/oncegate-stack-[0-9a-f]{12}$`, outside)
		}
		for _, dir := range forgot {
			_, err := os.Lstat(dir)
			assert.Truef(t, errors.Is(err, os.ErrNotExist), "%s still exists after make clean", dir)
		}
		for _, pid := range pids {
			assert.Falsef(t, alive(pid), "process %d still runs after make clean", pid)
		}
	})
}

// freeStackPort returns a free port below Linux's ephemeral range
// (32768–60999), as the stack's defaults are, and not among taken: an
// ephemeral port can be taken by any outgoing connection between the
// moment it is picked and the moment a component listens on it.
func freeStackPort(t *testing.T, taken map[string]string) string {
	t.Helper()
	for range 1000 {
		port := strconv.Itoa(20000 + rand.IntN(12000))
		if slices.Contains(slices.Collect(maps.Values(taken)), port) {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+port)
		if err != nil {
			continue
		}
		_ = l.Close()
		return port
	}
	t.Fatal("no free port below 32000")
	return ""
}

// httpGet answers the body of a GET.
func httpGet(url string) (string, error) {
	out, err := exec.Command("curl", "-s", "--max-time", "30", url).Output()
	return string(out), err
}

// docBlock is a fenced block of a page that a marker precedes:
// <!-- recipe: status... --> or <!-- example: name -->.
type docBlock struct {
	page, kind, name, body string
}

var blockRE = regexp.MustCompile("(?s)<!-- (recipe|example):([^>]*?)-->\n```[a-z]+\n(.*?)\n```")

// docPages are the pages whose marked blocks run, in the order they run in
// one shell: the README's walk-through first, then the receipt check of the
// reference and the recipes of docs/faults.md, which use the walk-through's
// variables; docs/agents.md holds the MCP session and the Go client.
var docPages = []string{"README.md", "docs/reference.md", "docs/faults.md", "docs/agents.md"}

// pageBlocks returns the marked blocks of one page, in order.
func pageBlocks(root, page string) ([]docBlock, error) {
	raw, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		return nil, err
	}
	var out []docBlock
	for _, m := range blockRE.FindAllStringSubmatch(string(raw), -1) {
		out = append(out, docBlock{page: page, kind: m[1], name: strings.TrimSpace(m[2]), body: m[3]})
	}
	return out, nil
}

// collectBlocks returns the marked blocks of pages (paths below root), page
// by page, each in its order, and what would let a block go unrun: one of
// pages without blocks, or a page of docs/ outside pages with some.
func collectBlocks(root string, pages []string) ([]docBlock, []string, error) {
	var out []docBlock
	var problems []string
	for _, page := range pages {
		blocks, err := pageBlocks(root, page)
		if err != nil {
			return nil, nil, err
		}
		if len(blocks) == 0 {
			problems = append(problems, page+" has no marked blocks")
		}
		out = append(out, blocks...)
	}
	others, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, nil, err
	}
	for _, path := range others {
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return nil, nil, err
		}
		if slices.Contains(pages, rel) {
			continue
		}
		blocks, err := pageBlocks(root, rel)
		if err != nil {
			return nil, nil, err
		}
		if len(blocks) > 0 {
			problems = append(problems, rel+" has marked blocks, but it is not among the pages whose blocks run")
		}
	}
	return out, problems, nil
}

// docBlocks returns the marked blocks of docPages, page by page, each in
// its order. Every one of docPages has some, and no other page of docs/
// has any: a block moved to another page is never silently skipped.
func docBlocks(t *testing.T, root string) []docBlock {
	t.Helper()
	blocks, problems, err := collectBlocks(root, docPages)
	require.NoError(t, err)
	require.Empty(t, problems)
	return blocks
}

// TestCollectBlocksFindsEveryUnrunBlock runs collectBlocks on pages made for
// it: a listed page without blocks and a stray page with one are reported,
// and the listed pages' blocks come in the pages' order.
func TestCollectBlocksFindsEveryUnrunBlock(t *testing.T) {
	root := t.TempDir()
	block := func(kind, name string) string {
		return "<!-- " + kind + ": " + name + " -->\n```sh\necho " + name + "\n```\n"
	}
	for rel, body := range map[string]string{
		"README.md":     "# R\n\n" + block("recipe", "alive"),
		"docs/a.md":     "# A\n\n" + block("example", "one") + "\n" + block("recipe", "ready not_found"),
		"docs/empty.md": "# E\n\nno blocks\n",
		"docs/stray.md": "# S\n\n" + block("recipe", "forbidden"),
		"docs/quiet.md": "# Q\n\nno blocks either\n",
	} {
		path := filepath.Join(root, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	}
	blocks, problems, err := collectBlocks(root, []string{"README.md", "docs/a.md", "docs/empty.md"})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{
		"docs/empty.md has no marked blocks",
		"docs/stray.md has marked blocks, but it is not among the pages whose blocks run",
	}, problems)
	var got []string
	for _, b := range blocks {
		got = append(got, b.page+" "+b.kind+" "+b.name+": "+b.body)
	}
	assert.Equal(t, []string{
		"README.md recipe alive: echo alive",
		"docs/a.md example one: echo one",
		"docs/a.md recipe ready not_found: echo ready not_found",
	}, got)
}

// TestRecipesNameEveryStatus checks, without a stack, what the recipes of
// TestDevStackAsTheREADMESays are run for: the markers of docPages' recipes
// name only statuses of the registry, and every one of them but the
// unreachable ones; and no page of docs/ outside docPages has a block.
func TestRecipesNameEveryStatus(t *testing.T) {
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	named := map[status.Status]string{}
	for _, b := range docBlocks(t, root) {
		if b.kind != "recipe" {
			continue
		}
		for _, st := range strings.Fields(b.name) {
			_, known := status.Lookup(status.Status(st))
			assert.Truef(t, known, "a recipe of %s names %q, which is no status", b.page, st)
			named[status.Status(st)] = b.page
		}
	}
	for _, st := range status.All() {
		if why, ok := unreachable[st]; ok {
			assert.Emptyf(t, named[st], "%s has a recipe in %s after all (%s)", st, named[st], why)
			continue
		}
		assert.NotEmptyf(t, named[st], "status %s has no recipe in %v", st, docPages)
	}
}

// shell is a folder laid out as the checkout is for the docs' blocks
// (.run, bin, Makefile and scripts linked from the stack and the checkout),
// so that they run as written.
func (s *devStack) shell(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, target := range map[string]string{
		".run": s.run, "bin": filepath.Join(s.root, "bin"),
		"Makefile": filepath.Join(s.root, "Makefile"), "scripts": filepath.Join(s.root, "scripts"),
	} {
		require.NoError(t, os.Symlink(target, filepath.Join(dir, name)))
	}
	return dir
}

// bash runs script with bash in dir, with the run folder and extra in the
// environment, and returns its output.
func (s *devStack) bash(t *testing.T, dir, script string, extra ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(baseEnv(), append([]string{"ONCEGATE_RUN_DIR=" + s.run, s.slow}, extra...)...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

// statusRE finds a status in JSON, compact or indented.
func statusRE(status string) *regexp.Regexp {
	return regexp.MustCompile(`"status":\s*"` + regexp.QuoteMeta(status) + `"`)
}

// recipes runs every recipe block in one shell, in docPages' order, and
// checks that each reaches the statuses it names, and that together they
// reach every status of the registry but the unreachable ones.
func (s *devStack) recipes(t *testing.T) {
	var script strings.Builder
	var recipes []docBlock
	for _, b := range docBlocks(t, s.root) {
		if b.kind != "recipe" {
			continue
		}
		fmt.Fprintf(&script, "echo '@@recipe %d@@'\n%s\n", len(recipes), b.body)
		recipes = append(recipes, b)
	}
	script.WriteString("echo '@@recipe end@@'\n")
	out := s.bash(t, s.shell(t), script.String())

	covered := map[status.Status]bool{}
	for i, r := range recipes {
		start := strings.Index(out, fmt.Sprintf("@@recipe %d@@", i))
		next := fmt.Sprintf("@@recipe %d@@", i+1)
		if i == len(recipes)-1 {
			next = "@@recipe end@@"
		}
		end := strings.Index(out, next)
		require.Truef(t, start >= 0 && end > start, "recipe %d of %s (%s) did not run to its end:\n%s", i, r.page, r.name, out)
		part := out[start:end]
		for _, st := range strings.Fields(r.name) {
			covered[status.Status(st)] = true
			assert.Regexpf(t, statusRE(st), part, "the recipe for %s (%s) does not reach it", st, r.page)
		}
	}
	for _, st := range status.All() {
		if why, ok := unreachable[st]; ok {
			assert.Falsef(t, covered[st], "%s has a recipe after all (%s)", st, why)
			continue
		}
		assert.Truef(t, covered[st], "status %s has no recipe in %v", st, docPages)
	}
}

// mcpSession runs the docs' MCP session: initialize, tools/list (every
// tool of the dev catalog) and a tools/call that previews.
func (s *devStack) mcpSession(t *testing.T) {
	var body string
	for _, b := range docBlocks(t, s.root) {
		if b.kind == "example" && b.name == "mcp-session" {
			body = b.body
		}
	}
	require.NotEmptyf(t, body, "none of %v has the MCP session", docPages)
	out := s.bash(t, s.shell(t), "source .run/stack.env\n"+body)
	events := regexp.MustCompile(`(?m)^data: (.*)$`).FindAllStringSubmatch(out, -1)
	require.Len(t, events, 3, "one event per message:\n%s", out)
	assert.Contains(t, events[0][1], `"serverInfo":{"name":"oncegate"`)
	t.Setenv("DOWNSTREAM_URL", "http://127.0.0.1:1")
	cat, err := catalog.Load(filepath.Join(s.root, "deployments", "catalog.dev.yaml"), 2*time.Second)
	require.NoError(t, err)
	for _, tool := range tools.Tools(cat) {
		assert.Contains(t, events[1][1], `"name":"`+tool.Name+`"`)
	}
	assert.Contains(t, events[2][1], `\"status\":\"preview_ready\"`)
	assert.NotContains(t, events[2][1], `"isError":true`)
}

// goClient runs the docs' Go example in a module of its own that
// reaches the client through a replace directive, and checks that it ran
// the transfer exactly once.
func (s *devStack) goClient(t *testing.T) {
	var program, steps string
	for _, b := range docBlocks(t, s.root) {
		switch {
		case b.kind == "example" && b.name == "go-client-main":
			program = b.body
		case b.kind == "example" && b.name == "go-client-run":
			steps = b.body
		}
	}
	require.NotEmptyf(t, program, "none of %v has the Go client program", docPages)
	require.NotEmptyf(t, steps, "none of %v has the steps to run it", docPages)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(program+"\n"), 0o644))
	env := s.env()
	out := s.bash(t, dir, steps, "ONCEGATE_DIR="+s.root, "GATEWAY_URL="+env["GATEWAY_URL"], "GOWORK=off")
	m := regexp.MustCompile(`(?m)^outcome: completed ([0-9a-f]{32})$`).FindStringSubmatch(out)
	require.NotNil(t, m, "the program did not complete a transfer:\n%s", out)
	count, err := httpGet(env["DOWNSTREAM_URL"] + "/_sim/executions?ref=" + m[1])
	require.NoError(t, err)
	assert.JSONEq(t, `{"count":1}`, count)
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	assert.Contains(t, string(mod), "replace github.com/oncegate/oncegate => "+s.root)
}
