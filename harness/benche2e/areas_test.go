package benche2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAreaOf(t *testing.T) {
	tests := []struct {
		name string
		fns  []string // leaf first
		want string
	}{
		{"json leaf", []string{"encoding/json.appendString", "github.com/oncegate/oncegate/api.(*Server).render"}, "encoding/json"},
		{"syscall of pgx", []string{"internal/runtime/syscall/linux.Syscall6", "syscall.write", "internal/poll.(*FD).Write", "net.(*conn).Write", "github.com/jackc/pgx/v5/pgconn.(*PgConn).flush", "net/http.(*conn).serve"}, "syscalls ← PostgreSQL (pgx)"},
		{"syscall of the server", []string{"internal/runtime/syscall/linux.Syscall6", "syscall.read", "net/http.(*connReader).Read"}, "syscalls ← HTTP server"},
		{"allocation is named after who allocated", []string{"runtime.nextFreeFast", "runtime.mallocgc", "runtime.newobject", "encoding/json.Marshal"}, "allocation ← encoding/json"},
		{"GC", []string{"runtime.scanobject", "runtime.gcDrain", "runtime.gcBgMarkWorker"}, "GC (background marking)"},
		{"other runtime", []string{"runtime.nanotime"}, "Go runtime (other)"},
		{"a goroutine's stack grows", []string{"runtime.step", "runtime.pcvalue", "runtime.adjustframe", "runtime.copystack", "runtime.newstack", "runtime.morestack"}, "goroutine stacks growing (copied)"},
		{"the worker's own code", []string{"github.com/oncegate/oncegate/workflows.run", "go.temporal.io/sdk/internal.(*workflowExecutor).Execute"}, "oncegate workflows and activities (own code)"},
		{"the SDK's payload visitor", []string{"go.temporal.io/api/proxy.visitPayloads", "go.temporal.io/sdk/internal.visitProtoPayloads", "github.com/oncegate/oncegate/activities.(*Activities).Execute"}, "Temporal SDK (tasks, payloads, interceptors)"},
		{"protobuf under the SDK", []string{"google.golang.org/protobuf/internal/impl.(*MessageInfo).marshal", "go.temporal.io/sdk/internal.(*workflowTaskProcessor).respondWorkflowTaskCompleted"}, "gRPC and protobuf"},
		{"the SDK's metrics", []string{"go.opentelemetry.io/otel/sdk/metric.(*float64Inst).Record", "go.temporal.io/sdk/contrib/opentelemetry.MetricsHandler.Timer.func1"}, "OpenTelemetry (tracing, the SDK's metrics)"},
		{"syscall of gRPC", []string{"internal/runtime/syscall/linux.Syscall6", "syscall.write", "net.(*conn).Write", "google.golang.org/grpc/internal/transport.(*loopyWriter).run"}, "syscalls ← Temporal (gRPC)"},
		{"unknown", []string{"main.main"}, "other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, areaOf(tt.fns))
		})
	}
}
