package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Independent validators from npm, pinned; NPMTool installs them at test time.
const (
	// RedoclyCLI lints the OpenAPI document (`redocly lint`).
	RedoclyCLI = "@redocly/cli@2.77.0"
	// PrismCLI is Stoplight's validating proxy (`prism proxy`).
	PrismCLI = "@stoplight/prism-cli@5.16.0"
)

// npmInstallTimeout bounds one npm install of a tool.
const npmInstallTimeout = 10 * time.Minute

// NPMTool returns the path of the executable bin of the npm package spec
// (name@version), installing it once into a cache directory outside the
// repository ($ONCEGATE_NPM_CACHE, else the user cache directory's
// oncegate/npm): later runs reuse it without the network. Without node and
// npm the test is skipped, except in CI (CI set), where that is a failure.
func NPMTool(t testing.TB, spec, bin string) string {
	t.Helper()
	path, ok := LookupNPMTool(t, spec, bin)
	if !ok {
		t.Skipf("node or npm not installed: skipping the %s check (it runs in CI)", spec)
	}
	return path
}

// LookupNPMTool is NPMTool for a test that runs on without the tool: it
// reports false, instead of skipping, when node or npm is missing outside CI.
func LookupNPMTool(t testing.TB, spec, bin string) (string, bool) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is required in CI to run %s: %v", tool, spec, err)
			}
			t.Logf("%s not installed: %s is not run here (it runs in CI)", tool, spec)
			return "", false
		}
	}
	path, err := npmInstall(spec, bin)
	if err != nil {
		t.Fatal(err)
	}
	return path, true
}

// npmCacheDir is where NPMTool installs packages.
func npmCacheDir() (string, error) {
	if dir := os.Getenv("ONCEGATE_NPM_CACHE"); dir != "" {
		return dir, nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("npm cache dir: %w", err)
	}
	return filepath.Join(dir, "oncegate", "npm"), nil
}

// npmInstall installs spec into its own prefix under the cache directory,
// under an exclusive file lock so that test binaries running in parallel
// install it once.
func npmInstall(spec, bin string) (string, error) {
	root, err := npmCacheDir()
	if err != nil {
		return "", err
	}
	prefix := filepath.Join(root, strings.NewReplacer("/", "+", "@", "_").Replace(spec))
	exe := filepath.Join(prefix, "node_modules", ".bin", bin)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("npm install %s: %w", spec, err)
	}
	lock, err := os.OpenFile(prefix+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("npm install %s: %w", spec, err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("npm install %s: lock: %w", spec, err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	// The marker is written after a complete install: a half-done install
	// of an interrupted run is redone.
	marker := filepath.Join(prefix, ".installed")
	if _, err := os.Stat(marker); err == nil {
		return exe, nil
	}
	if err := os.RemoveAll(prefix); err != nil {
		return "", fmt.Errorf("npm install %s: %w", spec, err)
	}
	if err := os.MkdirAll(prefix, 0o755); err != nil {
		return "", fmt.Errorf("npm install %s: %w", spec, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), npmInstallTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "install", "--prefix", prefix, "--no-audit", "--no-fund",
		"--ignore-scripts", "--loglevel=error", spec)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm install %s: %w\n%s", spec, err, out)
	}
	if _, err := os.Stat(exe); err != nil {
		return "", fmt.Errorf("npm install %s: no %s after install: %w", spec, bin, err)
	}
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		return "", fmt.Errorf("npm install %s: %w", spec, err)
	}
	return exe, nil
}
