package testenv

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/api/messages"
)

// A fault is found by its log record's message, not by words elsewhere in
// a line; lines that are not JSON are skipped.
func TestTextFaults(t *testing.T) {
	t.Parallel()
	fault := `{"time":"2026-12-02T16:30:00Z","level":"ERROR","msg":"texts of a body field","status":"preview_ready","err":"body field recent_operation: unexpected api.recentView for the texts"}`
	log := `{"time":"2026-12-02T16:30:00Z","level":"INFO","msg":"gateway listening"}
not json: texts of a body field
{"time":"2026-12-02T16:30:00Z","level":"WARN","msg":"slow","note":"render message"}
` + fault + `
{"time":"2026-12-02T16:30:01Z","level":"ERROR","msg":"render detail","err":"x"}
`
	path := filepath.Join(t.TempDir(), "gateway.log")
	require.NoError(t, os.WriteFile(path, []byte(log), 0o644))
	got := TextFaults(path)
	require.Len(t, got, 2)
	assert.Equal(t, fault, got[0])
	assert.Contains(t, got[1], `"msg":"render detail"`)
	assert.Empty(t, TextFaults(filepath.Join(t.TempDir(), "absent.log")))
}

// recorder is a Reporter that keeps what it is told.
type recorder struct {
	cleanups []func()
	errors   []string
}

func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// An in-process gateway's text fault fails its test when the test ends,
// through loggers derived from the handler too; other records only pass
// through.
func TestFailOnTextFaults(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	r := &recorder{}
	log := slog.New(FailOnTextFaults(r, slog.NewTextHandler(&out, nil)))
	log.Error("request failed", "status", "internal_error")
	log.Info("texts of a body field is not this message")
	require.Len(t, r.cleanups, 1)
	r.cleanups[0]()
	assert.Empty(t, r.errors)

	log.With("trace_id", "t1").ErrorContext(context.Background(), messages.FaultBodyField, "err", "unexpected api.recentView")
	r.cleanups[0]()
	require.Len(t, r.errors, 1)
	assert.Contains(t, r.errors[0], "texts of a body field err=unexpected api.recentView")
	assert.Contains(t, out.String(), "trace_id=t1", "the record still reaches the wrapped handler")
}
