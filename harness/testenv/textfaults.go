package testenv

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/oncegate/oncegate/api/messages"
)

// A text fault is the gateway's log record of an answer whose texts could
// not be written as the catalog says (messages.Faults): the answer still
// goes out, with blank or fallback words, and it is a bug in whatever the
// test exercised. Every gateway the harness runs fails its test on one:
// StartStack's, by its log (TextFaults), and an in-process one, by its
// log handler (FailOnTextFaults).

// TextFaults returns the lines of the gateway's JSON log at logPath that
// report an answer whose texts could not be written as the catalog says
// (messages.Faults): a bug in whatever the test exercised.
func TextFaults(logPath string) []string {
	raw, err := os.ReadFile(logPath)
	if err != nil {
		return nil
	}
	var out []string
	for line := range strings.Lines(string(raw)) {
		var rec struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && slices.Contains(messages.Faults, rec.Msg) {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// FailOnTextFaults wraps inner, the log handler of a gateway running in
// the test's process, so that t fails when it ends for each text fault
// logged; every record still goes to inner.
func FailOnTextFaults(t Reporter, inner slog.Handler) slog.Handler {
	h := textFaultHandler{Handler: inner, faults: &textFaultList{}}
	t.Cleanup(func() {
		h.faults.mu.Lock()
		defer h.faults.mu.Unlock()
		if len(h.faults.lines) > 0 {
			t.Errorf("the gateway answered with texts it could not write as its catalog says:\n%s", strings.Join(h.faults.lines, "\n"))
		}
	})
	return h
}

// Reporter is what FailOnTextFaults needs of a test (testing.TB has it).
type Reporter interface {
	Cleanup(func())
	Errorf(format string, args ...any)
}

// textFaultHandler is FailOnTextFaults's handler.
type textFaultHandler struct {
	slog.Handler
	faults *textFaultList
}

// textFaultList is the text faults logged through one handler and those
// derived from it.
type textFaultList struct {
	mu    sync.Mutex
	lines []string
}

func (h textFaultHandler) Handle(ctx context.Context, r slog.Record) error {
	if slices.Contains(messages.Faults, r.Message) {
		var b strings.Builder
		b.WriteString(r.Message)
		r.Attrs(func(a slog.Attr) bool { b.WriteString(" " + a.String()); return true })
		h.faults.mu.Lock()
		h.faults.lines = append(h.faults.lines, b.String())
		h.faults.mu.Unlock()
	}
	return h.Handler.Handle(ctx, r)
}

func (h textFaultHandler) WithAttrs(as []slog.Attr) slog.Handler {
	h.Handler = h.Handler.WithAttrs(as)
	return h
}

func (h textFaultHandler) WithGroup(name string) slog.Handler {
	h.Handler = h.Handler.WithGroup(name)
	return h
}
