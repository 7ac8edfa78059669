package api

import (
	"encoding/json"
	"io"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/status"
)

// urllibPost is a Python program that POSTs a body of argv[2] bytes to
// argv[1] with urllib, which sends the whole body before it reads the
// answer, and prints the HTTP code and the JSON answer (an HTTPError is an
// answer too). A connection reset or broken pipe is printed as "error ...".
const urllibPost = `
import json, sys, urllib.request, urllib.error
body = b'{"params":{"memo":"' + b'x' * (int(sys.argv[2]) - 20) + b'"}}'
data = body if sys.argv[3] == "sized" else iter([body[i:i + 65536] for i in range(0, len(body), 65536)])
req = urllib.request.Request(sys.argv[1], data=data, method="POST",
    headers={"Authorization": "Bearer dev-alice", "Content-Type": "application/json"})
try:
    with urllib.request.urlopen(req, timeout=60) as r:
        code, raw = r.status, r.read()
except urllib.error.HTTPError as e:
    code, raw = e.code, e.read()
except Exception as e:
    print(json.dumps({"code": 0, "error": repr(e)})); sys.exit(0)
print(json.dumps({"code": code, "answer": json.loads(raw)}))
`

// TestOversizedBodyAnswersEveryClient: a client that sends its whole body
// before it reads (Python's urllib) gets the structured 413, not a reset
// connection; so does one whose body is chunked (no Content-Length).
func TestOversizedBodyAnswersEveryClient(t *testing.T) {
	t.Parallel()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	b := setup(t)
	ts := httptest.NewServer(b.srv.Handler())
	t.Cleanup(ts.Close)
	for _, tc := range []struct {
		size int
		mode string
	}{{70 << 10, "sized"}, {2 << 20, "sized"}, {12 << 20, "sized"}, {2 << 20, "chunked"}, {12 << 20, "chunked"}} {
		size := tc.size
		out, err := exec.Command(python, "-c", urllibPost, ts.URL+"/v1/actions/payments.transfer/preview", strconv.Itoa(size), tc.mode).Output()
		require.NoError(t, err)
		var got struct {
			Code   int            `json:"code"`
			Error  string         `json:"error"`
			Answer map[string]any `json:"answer"`
		}
		require.NoError(t, json.Unmarshal(out, &got), "%s", out)
		require.Equalf(t, 413, got.Code, "%d bytes %s: %s", size, tc.mode, out)
		assert.Equal(t, string(status.RequestTooLarge), got.Answer["status"])
		assert.Equal(t, false, got.Answer["retryable"])
		assert.NotEmpty(t, got.Answer["trace_id"])
	}
}

// TestLimitBodyBoundary: a body of no declared length (chunked) is read
// whole up to BodyLimit bytes; one byte more is refused as too large,
// however the handler reads it.
func TestLimitBodyBoundary(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		size int
		err  error
	}{{0, nil}, {BodyLimit, nil}, {BodyLimit + 1, errBodyTooLarge}, {BodyLimit + 100, errBodyTooLarge}} {
		req := httptest.NewRequest("POST", "/v1/x", io.NopCloser(strings.NewReader(strings.Repeat("x", tc.size))))
		req.ContentLength = -1
		c := echo.New().NewContext(req, httptest.NewRecorder())
		var read int
		err := limitBody(func(c echo.Context) error {
			raw, err := io.ReadAll(c.Request().Body)
			read = len(raw)
			return err
		})(c)
		if tc.err == nil {
			require.NoError(t, err, "size %d", tc.size)
			assert.Equal(t, tc.size, read)
		} else {
			assert.ErrorIs(t, err, tc.err, "size %d", tc.size)
			assert.LessOrEqual(t, read, BodyLimit, "size %d", tc.size)
		}
	}
}
