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
	var a showAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return fmt.Errorf("show: decode answer: %w", err)
	}
	o := a.Operation
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s\t%s\n", k, oneLine(v))
		}
	}
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
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\ntimeline:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, e := range a.Timeline {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", e.At, e.Source, e.Event, oneLine(e.Detail))
	}
	if a.TimelineIncomplete != "" {
		fmt.Fprintf(tw, "  (%s)\n", strings.TrimSpace(a.TimelineIncomplete))
	}
	return tw.Flush()
}
