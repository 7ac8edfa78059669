package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/status"
)

// The gateway's CPU per answer on the benchmark's three hot paths
// (docs/benchmarks.md: preview, replay, status), through the whole handler
// with its middleware, on the in-memory store of these tests: what is
// measured is the gateway's own work (allocations, encoding, signing), not
// the stores'. Compare runs with benchstat:
//
//	go test -run '^$' -bench 'Answer' -benchmem -count 10 ./api > new.txt
//	go run golang.org/x/perf/cmd/benchstat old.txt new.txt

// cpuTime is the process's CPU time so far (user and system, every
// thread: the garbage collector's too).
func cpuTime(tb testing.TB) int64 {
	var ru syscall.Rusage
	require.NoError(tb, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// reportCPU reports the process's CPU time per op since start as
// cpu-ns/op: on a machine others load, ns/op (wall time) measures the
// load, CPU time much less so.
func reportCPU(b *testing.B, start int64) {
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
}

// benchRequest is one request of the benchmark identity (dev-alice).
func benchRequest(method, path, body string) *http.Request {
	var req *http.Request
	if body == "" {
		req = httptest.NewRequest(method, path, nil)
	} else {
		req = httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer dev-alice")
	return req
}

// serveBench answers req through the whole handler and returns the body's
// status.
func serveBench(tb testing.TB, h http.Handler, req *http.Request) (status.Status, []byte) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var b struct {
		Status status.Status `json:"status"`
	}
	require.NoError(tb, json.Unmarshal(rec.Body.Bytes(), &b), rec.Body.String())
	return b.Status, rec.Body.Bytes()
}

// benchCompleted completes one operation and returns its id, its
// fingerprint and the confirm body that replays it.
func benchCompleted(b testing.TB, bu *bundle) (opID, confirmBody string) {
	st, raw := serveBench(b, bu.srv.Handler(), benchRequest("POST", "/v1/actions/payments.legacy_transfer/preview", `{"params":`+transferParams+`}`))
	require.Equal(b, status.PreviewReady, st, string(raw))
	var ready struct {
		OperationID string `json:"operation_id"`
		Fingerprint string `json:"fingerprint"`
	}
	require.NoError(b, json.Unmarshal(raw, &ready))
	confirmBody = `{"fingerprint":"` + ready.Fingerprint + `","params":` + transferParams + `}`
	st, body := serveBench(b, bu.srv.Handler(), benchRequest("POST", "/v1/actions/payments.legacy_transfer/confirm", confirmBody))
	require.Equal(b, status.Completed, st, string(body))
	return ready.OperationID, confirmBody
}

func BenchmarkAnswerPreview(b *testing.B) {
	bu := setup(b)
	body := `{"params":` + transferParams + `}`
	loopAnswers(b, bu.srv.Handler(), "POST", "/v1/actions/payments.legacy_transfer/preview", body, status.PreviewReady)
}

func BenchmarkAnswerReplay(b *testing.B) {
	bu := setup(b)
	_, confirmBody := benchCompleted(b, bu)
	loopAnswers(b, bu.srv.Handler(), "POST", "/v1/actions/payments.legacy_transfer/confirm", confirmBody, status.AlreadyCompleted)
}

func BenchmarkAnswerStatus(b *testing.B) {
	bu := setup(b)
	opID, _ := benchCompleted(b, bu)
	loopAnswers(b, bu.srv.Handler(), "GET", "/v1/operations/"+opID, "", status.Completed)
}

// loopAnswers serves the request b.N times, failing on any answer but want,
// and reports allocations and CPU time per answer.
func loopAnswers(b *testing.B, h http.Handler, method, path, body string, want status.Status) {
	b.ReportAllocs()
	start := cpuTime(b)
	for b.Loop() {
		if st, raw := serveBench(b, h, benchRequest(method, path, body)); st != want {
			b.Fatal(string(raw))
		}
	}
	reportCPU(b, start)
}
