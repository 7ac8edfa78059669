package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/oncegate/oncegate/client"
)

// printShow writes the operation for a person: what it is, where it
// stands, who decided, and its timeline.
func printShow(w io.Writer, a *client.OperationDetail) error {
	o := a.Operation
	fields := newFieldWriter(w)
	line := fields.line
	line("operation_id", o.OperationID)
	line("action", o.Scope)
	line("subject", o.Subject)
	line("acting_client", o.ActingClient)
	line("state", o.State)
	if len(a.Params) == 0 {
		line("params", "(not kept: claimed before bound params were recorded; see param_hash)")
	}
	for _, k := range slices.Sorted(maps.Keys(a.Params)) {
		var v any
		if err := json.Unmarshal(a.Params[k], &v); err != nil {
			return fmt.Errorf("show: param %s: %w", k, err)
		}
		line("  "+k, fmt.Sprint(v))
	}
	line("param_hash", o.ParamHash)
	line("result_ref", o.ResultRef)
	line("reason", o.Reason)
	line("failure_kind", o.FailureKind)
	if o.ResolvedBy != "" {
		line("decided_by", o.ResolvedBy)
		line("decided_at", stamp(o.ResolvedAt))
		line("note", o.ResolutionNote)
		line("evidence_url", o.EvidenceURL)
	}
	if ap := a.ApprovalRecord; ap != nil {
		line("approval", ap.State+" ("+strings.Join(ap.Reasons, ", ")+")")
		if ap.CredentialID != "" {
			line("  decided_by", ap.Subject+"'s passkey "+ap.CredentialID)
		}
		line("  decided_at", stamp(ap.DecidedAt))
		line("  evidence_sha256", ap.EvidenceSHA256)
		line("  trace_id", ap.TraceID)
	}
	if o.MandateID != "" {
		line("mandate", o.MandateID)
		line("  statement_sha256", o.MandateSHA256)
	}
	if err := fields.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\ntimeline:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, e := range a.Timeline {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", stamp(e.At), e.Source, e.Event, oneLine(e.Detail))
	}
	if a.TimelineIncomplete != "" {
		fmt.Fprintf(tw, "  (%s)\n", strings.TrimSpace(a.TimelineIncomplete))
	}
	return tw.Flush()
}

// printResolved writes a resolve answer for a person: what was decided,
// by whom, and the operation's state now.
func printResolved(w io.Writer, a *client.Resolved) error {
	fields := newFieldWriter(w)
	line := fields.line
	line("status", string(a.Status))
	line("operation_id", a.OperationID)
	line("state", a.State)
	line("outcome", a.Outcome)
	if d := a.Decision; d != nil {
		line("decided_by", d.Operator)
		line("decided", d.Outcome)
		line("decided_at", stamp(d.DecidedAt))
		line("via", d.Via)
	}
	line("result_ref", a.ResultRef)
	line("reason", a.Reason)
	line("failure_kind", a.FailureKind)
	line("meaning", a.Meaning)
	return fields.flush()
}

// printPayload writes a resolution payload for a person: the signal to
// send, its input, until when, and the Temporal CLI command that sends it
// (which reads TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE).
func printPayload(w io.Writer, a *client.ResolutionPayload) error {
	var input bytes.Buffer
	if err := json.Compact(&input, a.Input); err != nil {
		return fmt.Errorf("resolution payload: input: %w", err)
	}
	fields := newFieldWriter(w)
	fields.line("status", string(a.Status))
	fields.line("workflow_id", a.WorkflowID)
	fields.line("signal", a.Signal)
	fields.line("expires_at", stamp(a.ExpiresAt))
	fields.line("input", input.String())
	fields.line("meaning", a.Meaning)
	if err := fields.flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nsend it (or paste input into the Web UI's Signal dialog of the workflow):\n%s\n",
		signalCommand(a.WorkflowID, a.Signal, input.String()))
	return err
}

// signalCommand is the temporal CLI command line that sends input as
// signal to workflow id, each argument quoted for a POSIX shell.
func signalCommand(id, signal, input string) string {
	return strings.Join([]string{"temporal", "workflow", "signal", "--workflow-id", shellQuote(id), "--name",
		shellQuote(signal), "--input", shellQuote(input)}, " ")
}

// shellQuote quotes s for a POSIX shell: in single quotes, each single
// quote in s ending the quoted text, escaped with a backslash, and
// starting it again.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// fieldWriter prints aligned "key  value" lines for a person, each value
// on one line, leaving out the empty ones.
type fieldWriter struct{ tw *tabwriter.Writer }

// newFieldWriter returns a fieldWriter printing to w.
func newFieldWriter(w io.Writer) fieldWriter {
	return fieldWriter{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
}

// line prints k and v, unless v is empty.
func (f fieldWriter) line(k, v string) {
	if v != "" {
		fmt.Fprintf(f.tw, "%s\t%s\n", k, oneLine(v))
	}
}

// flush writes the aligned lines.
func (f fieldWriter) flush() error { return f.tw.Flush() }
