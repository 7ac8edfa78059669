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
func benchCompleted(b *testing.B, bu *bundle) (opID, confirmBody string) {
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
	h := bu.srv.Handler()
	body := `{"params":` + transferParams + `}`
	b.ReportAllocs()
	start := cpuTime(b)
	for b.Loop() {
		if st, raw := serveBench(b, h, benchRequest("POST", "/v1/actions/payments.legacy_transfer/preview", body)); st != status.PreviewReady {
			b.Fatal(string(raw))
		}
	}
	reportCPU(b, start)
}

func BenchmarkAnswerReplay(b *testing.B) {
	bu := setup(b)
	h := bu.srv.Handler()
	_, confirmBody := benchCompleted(b, bu)
	b.ReportAllocs()
	start := cpuTime(b)
	for b.Loop() {
		if st, raw := serveBench(b, h, benchRequest("POST", "/v1/actions/payments.legacy_transfer/confirm", confirmBody)); st != status.AlreadyCompleted {
			b.Fatal(string(raw))
		}
	}
	reportCPU(b, start)
}

func BenchmarkAnswerStatus(b *testing.B) {
	bu := setup(b)
	h := bu.srv.Handler()
	opID, _ := benchCompleted(b, bu)
	b.ReportAllocs()
	start := cpuTime(b)
	for b.Loop() {
		if st, raw := serveBench(b, h, benchRequest("GET", "/v1/operations/"+opID, "")); st != status.Completed {
			b.Fatal(string(raw))
		}
	}
	reportCPU(b, start)
}
