package e2eprod

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// chromium is Debian's headless browser (scripts/deps.sh, which `make
// prod-up` runs, installs it when missing).
const chromium = "chromium"

// browser starts a headless Chromium with a fresh profile and returns a
// tab's context (the browser lives as long as the test).
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath(chromium)
	require.NoError(t, err, "Debian's chromium (scripts/deps.sh installs it)")
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), // as root, in a machine without user namespaces
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	// The first action starts the browser: without a timeout, which would
	// stop the browser with it.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")), "start %s", path)
	return ctx
}

// waitText waits until the page's text contains s.
func waitText(s string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.body && document.body.innerText.includes(%q)`, s),
		chromedp.WithPollingInterval(500*time.Millisecond), chromedp.WithPollingTimeout(time.Minute))
}

// TestWebUIInABrowser: the profile's Temporal Web UI, in headless Chromium,
// lists the operations by IdemState (a visibility query on PostgreSQL) with
// a just completed operation among the DONE ones, and shows that
// workflow's page, of which it saves a screenshot: under the test's
// artifacts (go test -artifacts) and in .run-prod/webui/ to look at.
func TestWebUIInABrowser(t *testing.T) {
	p := loadProfile(t)
	prm := params("42.00")
	fp, id := p.previewOn(t, p.gateways[0], "payments.transfer", prm)
	done := p.settle(context.Background(), 1, "payments.transfer", fp, id, prm)
	require.NoError(t, done.Err)
	require.Equal(t, "completed", done.Status)
	d, err := p.temporal(t).DescribeWorkflowExecution(context.Background(), id, "")
	require.NoError(t, err)
	runID := d.GetWorkflowExecutionInfo().GetExecution().GetRunId()

	ui, ns := p.env["TEMPORAL_UI_URL"], p.env["TEMPORAL_NAMESPACE"]
	list := fmt.Sprintf("%s/namespaces/%s/workflows?query=%s", ui, ns, url.QueryEscape(`IdemState="DONE"`))
	page := fmt.Sprintf("%s/namespaces/%s/workflows/%s/%s/history", ui, ns, id, runID)
	ctx := browser(t)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()

	// The list is the UI's visibility query: it may trail the workflow's
	// last upsert by a moment, so the page is loaded until it shows it.
	deadline := time.Now().Add(90 * time.Second)
	for {
		lctx, lcancel := context.WithTimeout(ctx, 30*time.Second)
		err := chromedp.Do(lctx, chromedp.Navigate(list), waitText(id))
		lcancel()
		if err == nil {
			break
		}
		require.Falsef(t, time.Now().After(deadline), "the UI never listed %s among IdemState=\"DONE\": %v", id, err)
	}
	listShot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(page),
		waitText(id),
		waitText("Completed"),
		chromedp.Sleep(time.Second), // the event history renders after the summary
	))
	title, err := chromedp.Run(ctx, chromedp.Title())
	require.NoError(t, err)
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.Greater(t, len(shot), 10_000, "a screenshot of the workflow's page")
	for _, png := range [][]byte{listShot, shot} {
		require.True(t, bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")), "a PNG (a quality of 100; JPEG below)")
	}
	t.Logf("the workflow's page %q: %s", title, page)

	keep := filepath.Join(p.dir, "webui")
	require.NoError(t, os.MkdirAll(keep, 0o755))
	for _, dir := range []string{t.ArtifactDir(), keep} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "workflows-idemstate-done.png"), listShot, 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "workflow.png"), shot, 0o644))
	}
	t.Logf("screenshots: %s and %s", filepath.Join(t.ArtifactDir(), "workflow.png"), filepath.Join(keep, "workflow.png"))
}
