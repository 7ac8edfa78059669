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
		{"unknown", []string{"main.main"}, "other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, areaOf(tt.fns))
		})
	}
}
