package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// showAnswer is the part of GET /v1/ops/operations/{id} that show prints.
type showAnswer struct {
	Operation struct {
		OperationID    string `json:"operation_id"`
		Scope          string `json:"scope"`
		Subject        string `json:"subject"`
		State          string `json:"state"`
		ParamHash      string `json:"param_hash"`
		ResultRef      string `json:"result_ref"`
		Reason         string `json:"reason"`
		FailureKind    string `json:"failure_kind"`
		ResolvedBy     string `json:"resolved_by"`
		ResolvedAt     string `json:"resolved_at"`
		ResolutionNote string `json:"resolution_note"`
		EvidenceURL    string `json:"evidence_url"`
	} `json:"operation"`
	Params   map[string]any `json:"params"`
	Approval *struct {
		State          string   `json:"state"`
		Reasons        []string `json:"reasons"`
		Subject        string   `json:"subject"`
		CredentialID   string   `json:"credential_id"`
		DecidedAt      string   `json:"decided_at"`
		EvidenceSHA256 string   `json:"evidence_sha256"`
		TraceID        string   `json:"trace_id"`
	} `json:"approval_record"`
	TimelineIncomplete string `json:"timeline_incomplete"`
	Timeline           []struct {
		At     string `json:"at"`
		Source string `json:"source"`
		Event  string `json:"event"`
		Detail string `json:"detail"`
	} `json:"timeline"`
}

// printShow writes the operation for a person: what it is, where it
// stands, who decided, and its timeline.
func printShow(w io.Writer, body []byte) error {
	a, err := decodeAnswer[showAnswer]("show", body)
	if err != nil {
		return err
	}
	o := a.Operation
	fields := newFieldWriter(w)
	line := fields.line
	line("operation_id", o.OperationID)
	line("action", o.Scope)
	line("subject", o.Subject)
	line("state", o.State)
	if len(a.Params) == 0 {
		line("params", "(not kept: claimed before bound params were recorded; see param_hash)")
	}
	for _, k := range slices.Sorted(maps.Keys(a.Params)) {
		line("  "+k, fmt.Sprint(a.Params[k]))
	}
	line("param_hash", o.ParamHash)
	line("result_ref", o.ResultRef)
	line("reason", o.Reason)
	line("failure_kind", o.FailureKind)
	if o.ResolvedBy != "" {
		line("decided_by", o.ResolvedBy)
		line("decided_at", o.ResolvedAt)
		line("note", o.ResolutionNote)
		line("evidence_url", o.EvidenceURL)
	}
	if ap := a.Approval; ap != nil {
		line("approval", ap.State+" ("+strings.Join(ap.Reasons, ", ")+")")
		if ap.CredentialID != "" {
			line("  decided_by", ap.Subject+"'s passkey "+ap.CredentialID)
		}
		line("  decided_at", ap.DecidedAt)
		line("  evidence_sha256", ap.EvidenceSHA256)
		line("  trace_id", ap.TraceID)
	}
	if err := fields.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\ntimeline:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, e := range a.Timeline {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", e.At, e.Source, e.Event, oneLine(e.Detail))
	}
	if a.TimelineIncomplete != "" {
		fmt.Fprintf(tw, "  (%s)\n", strings.TrimSpace(a.TimelineIncomplete))
	}
	return tw.Flush()
}

// resolvedAnswer is the part of a resolve answer (resolved, or
// resolution_sent) that resolve prints.
type resolvedAnswer struct {
	Status      string `json:"status"`
	OperationID string `json:"operation_id"`
	State       string `json:"state"`
	Outcome     string `json:"outcome"`
	ResultRef   string `json:"result_ref"`
	Reason      string `json:"reason"`
	FailureKind string `json:"failure_kind"`
	Meaning     string `json:"meaning"`
	Decision    struct {
		Operator  string `json:"operator"`
		Outcome   string `json:"outcome"`
		DecidedAt string `json:"decided_at"`
		Via       string `json:"via"`
	} `json:"decision"`
}

// printResolved writes a resolve answer for a person: what was decided,
// by whom, and the operation's state now.
func printResolved(w io.Writer, body []byte) error {
	a, err := decodeAnswer[resolvedAnswer]("resolve", body)
	if err != nil {
		return err
	}
	fields := newFieldWriter(w)
	line := fields.line
	line("status", a.Status)
	line("operation_id", a.OperationID)
	line("state", a.State)
	line("outcome", a.Outcome)
	line("decided_by", a.Decision.Operator)
	line("decided", a.Decision.Outcome)
	line("decided_at", a.Decision.DecidedAt)
	line("via", a.Decision.Via)
	line("result_ref", a.ResultRef)
	line("reason", a.Reason)
	line("failure_kind", a.FailureKind)
	line("meaning", a.Meaning)
	return fields.flush()
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

// decodeAnswer decodes the gateway's answer to command into T.
func decodeAnswer[T any](command string, body []byte) (T, error) {
	var a T
	if err := json.Unmarshal(body, &a); err != nil {
		return a, fmt.Errorf("%s: decode answer: %w", command, err)
	}
	return a, nil
}
