package e2e

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/oncegate/oncegate/harness/testenv"
)

// receivedSpan is one span an OTLP receiver got.
type receivedSpan struct {
	service, name, traceID string
}

// otlpReceiver is an OTLP/HTTP trace receiver (POST /v1/traces, protobuf).
type otlpReceiver struct {
	mu    sync.Mutex
	spans []receivedSpan
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil || r.URL.Path != "/v1/traces" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				service = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				o.spans = append(o.spans, receivedSpan{service: service, name: sp.GetName(), traceID: hex.EncodeToString(sp.GetTraceId())})
			}
		}
	}
	o.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// inTrace lists "service: span name" of the spans of traceID.
func (o *otlpReceiver) inTrace(traceID string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, s := range o.spans {
		if s.traceID == traceID {
			out = append(out, s.service+": "+s.name)
		}
	}
	return out
}

// TestTraceEndToEnd: one confirm produces spans from the gateway, the
// workflow, its activities and the downstream call under the trace id the
// answer carries, exported over OTLP to a receiver the test runs.
func TestTraceEndToEnd(t *testing.T) {
	recv := &otlpReceiver{}
	srv := httptest.NewServer(recv)
	defer srv.Close()
	otel := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + srv.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_BSP_SCHEDULE_DELAY=100"}
	s := testenv.StartStack(t, testenv.StackOptions{ExtraGatewayEnv: otel, ExtraWorkerEnv: otel})

	params := transferParams("81.00")
	fp, id := previewOK(t, s, "dev-alice", "payments.transfer", params)
	c := confirm(t, s, "dev-alice", "payments.transfer", fp, params)
	require.Equal(t, "completed", c.str("status"), c.String())
	traceID := c.str("trace_id")
	require.Len(t, traceID, 32)
	assert.Equal(t, traceID, c.Header.Get("X-Trace-Id"))
	waitStatus(t, s, "dev-alice", id, "completed")

	want := []string{
		"oncegate-gateway: POST /v1/actions/:scope/confirm",
		"oncegate-gateway: StartWorkflow:Operation",
		"oncegate-worker: RunWorkflow:Operation",
		"oncegate-worker: RunActivity:Execute", // which finalizes the DONE itself
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := recv.inTrace(traceID)
		missing := slices.DeleteFunc(slices.Clone(want), func(w string) bool { return slices.Contains(got, w) })
		downstream := slices.ContainsFunc(got, func(g string) bool {
			return strings.HasPrefix(g, "oncegate-worker: HTTP POST") || g == "oncegate-worker: POST"
		})
		if len(missing) == 0 && downstream {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s: missing %v (downstream call span: %v); got %v", traceID, missing, downstream, got)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
