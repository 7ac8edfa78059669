package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/harness/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// answer is a decoded agent-facing body with its HTTP status and headers.
type answer struct {
	Code   int
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

func (a answer) str(key string) string {
	s, _ := a.Body[key].(string)
	return s
}

func (a answer) String() string { return fmt.Sprintf("%d %s", a.Code, a.Raw) }

var httpClient = &http.Client{Timeout: 30 * time.Second}

// call sends one request to the gateway as token and decodes the answer.
func call(t testing.TB, method, url, token string, body any, header ...string) answer {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := httpClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	a := answer{Code: resp.StatusCode, Header: resp.Header, Raw: raw}
	require.NoErrorf(t, json.Unmarshal(raw, &a.Body), "body is not JSON: %s", raw)
	return a
}

func preview(t testing.TB, s *testenv.Stack, token, scope string, params map[string]any) answer {
	t.Helper()
	return call(t, http.MethodPost, s.GatewayURL+"/v1/actions/"+scope+"/preview", token, map[string]any{"params": params})
}

func confirm(t testing.TB, s *testenv.Stack, token, scope, fp string, params map[string]any) answer {
	t.Helper()
	return call(t, http.MethodPost, s.GatewayURL+"/v1/actions/"+scope+"/confirm", token, map[string]any{"fingerprint": fp, "params": params})
}

func status(t testing.TB, s *testenv.Stack, token, id string) answer {
	t.Helper()
	return call(t, http.MethodGet, s.GatewayURL+"/v1/operations/"+id, token, nil)
}

// executions asks the simulator how many side effects ran for ref.
func executions(t testing.TB, s *testenv.Stack, ref string) int {
	t.Helper()
	resp, err := httpClient.Get(s.DownstreamURL + "/_sim/executions?ref=" + ref)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Count int `json:"count"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out.Count
}

// setFaults replaces the simulator's faults.
func setFaults(t testing.TB, s *testenv.Stack, faults map[string]any) {
	t.Helper()
	b, _ := json.Marshal(faults)
	req, _ := http.NewRequest(http.MethodPut, s.DownstreamURL+"/_sim/faults", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Less(t, resp.StatusCode, 300)
}

// waitTerminal polls the status tool until the operation is terminal or needs review.
func waitStatus(t testing.TB, s *testenv.Stack, token, id string, want ...string) answer {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		a := status(t, s, token, id)
		for _, w := range want {
			if a.str("status") == w {
				return a
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("operation %s never reached %v; last: %s", id, want, a)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
