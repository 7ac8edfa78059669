package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/api/openapi"
	"github.com/oncegate/oncegate/harness/testenv"
)

// headerCorrupt asks the test's relay to replace the gateway's answer with
// one that breaks the document, so that a test can prove Prism catches it.
const headerCorrupt = "X-Oncegate-Test-Corrupt"

// prismProxy is Stoplight Prism's validating proxy (a second OpenAPI
// implementation besides kin-openapi) in front of a gateway: every answer
// that passes through it carries Prism's verdict in the sl-violations
// header when it found anything.
type prismProxy struct {
	// URL is where agents send their requests instead of the gateway.
	URL string
	// answers counts the answers checked for violations.
	answers int
}

// violation is one entry of Prism's sl-violations header.
type violation struct {
	Location []string `json:"location"`
	Severity string   `json:"severity"`
	Code     any      `json:"code"`
	Message  string   `json:"message"`
}

// startPrism starts `prism proxy` in front of gatewayURL, through a relay
// that corrupts the answers of requests carrying headerCorrupt. It returns
// nil when node is not installed (outside CI).
func startPrism(t *testing.T, gatewayURL string) *prismProxy {
	t.Helper()
	bin, ok := testenv.LookupNPMTool(t, testenv.PrismCLI, "prism")
	if !ok {
		return nil
	}
	target, err := url.Parse(gatewayURL)
	require.NoError(t, err)
	relay := httputil.NewSingleHostReverseProxy(target)
	relay.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Header.Get(headerCorrupt) == "" {
			return nil
		}
		body := []byte(`{"status":"completed","meaning":"m","instruction":"i","retryable":"no","trace_id":"t"}`)
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	srv := httptest.NewServer(relay)
	t.Cleanup(srv.Close)

	dir := t.TempDir()
	doc := filepath.Join(dir, "openapi.json")
	require.NoError(t, os.WriteFile(doc, openapi.Document(), 0o644))
	port := testenv.MustFreePort(t)
	p, err := testenv.StartProcess("prism", filepath.Join(dir, "prism.log"),
		[]string{bin, "proxy", doc, srv.URL, "--host", "127.0.0.1", "--port", strconv.Itoa(port),
			"--errors=false", "--cors=false", "--verboseLevel", "warn"}, nil, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("--- prism log (tail) ---\n%s", p.Log())
		}
	})
	pp := &prismProxy{URL: fmt.Sprintf("http://127.0.0.1:%d", port)}
	err = testenv.WaitFor(context.Background(), 60*time.Second, func(ctx context.Context) error {
		if !p.Running() {
			return fmt.Errorf("prism exited")
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, pp.URL+"/healthz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("prism /healthz: %d", resp.StatusCode)
		}
		return nil
	})
	require.NoErrorf(t, err, "prism did not start:\n%s", p.Log())
	pp.selfTest(t)
	return pp
}

// violations decodes the sl-violations header of a.
func violations(t *testing.T, a answer) []violation {
	t.Helper()
	h := a.Header.Get("sl-violations")
	if h == "" {
		return nil
	}
	var vs []violation
	require.NoErrorf(t, json.Unmarshal([]byte(h), &vs), "sl-violations: %s", h)
	return vs
}

// check asserts Prism's verdict on an answer that passed through it: no
// violation of the response ever; a violation of the request only when the
// gateway refused the request too (4xx), so both implementations agree.
func (pp *prismProxy) check(t *testing.T, a answer, what string) {
	t.Helper()
	pp.answers++
	for _, v := range violations(t, a) {
		if len(v.Location) > 0 && v.Location[0] == "request" && a.Code >= 400 && a.Code < 500 {
			continue
		}
		t.Errorf("Prism: %s: %s violation at %v: %s (answer %s)", what, v.Severity, v.Location, v.Message, a)
	}
}

// selfTest proves that the proxy validates: a corrupted answer and a
// request without credentials are both reported.
func (pp *prismProxy) selfTest(t *testing.T) {
	t.Helper()
	bad := call(t, http.MethodGet, pp.URL+"/v1/operations/"+randomHex(16), "dev-alice", nil, headerCorrupt, "1")
	found := false
	for _, v := range violations(t, bad) {
		found = found || (len(v.Location) > 0 && v.Location[0] == "response")
	}
	assert.Truef(t, found, "Prism did not report a corrupted answer: %v", bad.Header.Get("sl-violations"))
	unauth := call(t, http.MethodGet, pp.URL+"/v1/operations/"+randomHex(16), "", nil)
	require.Equal(t, http.StatusUnauthorized, unauth.Code)
	found = false
	for _, v := range violations(t, unauth) {
		found = found || (len(v.Location) > 0 && v.Location[0] == "request")
	}
	assert.Truef(t, found, "Prism did not report a request without credentials: %v", unauth.Header.Get("sl-violations"))
}
