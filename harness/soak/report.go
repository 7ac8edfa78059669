package soak

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Report is the outcome of one soak run: what ran, what was injected, and
// every violation the audit found. It is written as JSON and as a short
// markdown summary.
type Report struct {
	// Seed replays the run: the same seed gives the same fault schedule
	// and the same agents' choices.
	Seed uint64 `json:"seed"`
	// Profile is the stack profile (dev).
	Profile string `json:"profile"`
	// Duration is how long agents started episodes and faults were injected.
	Duration string `json:"duration"`
	// Agents is the number of scripted agents.
	Agents int `json:"agents"`
	// Actions are the catalog's actions the agents called.
	Actions []string `json:"actions"`
	// StartedAt is when the run began (before the stack started).
	StartedAt time.Time `json:"started_at"`
	// FinishedAt is when the audit ended.
	FinishedAt time.Time `json:"finished_at"`
	// Episodes counts the episodes by kind.
	Episodes map[string]int `json:"episodes"`
	// Requests is the number of requests sent to the gateway.
	Requests int64 `json:"requests"`
	// LostAnswers is how many answers were lost to client timeouts.
	LostAnswers int `json:"lost_answers"`
	// TransportErrors is how many requests got no answer (component down).
	TransportErrors int `json:"transport_errors"`
	// Answers counts the answers the agents received, by status.
	Answers map[string]int `json:"answers"`
	// Operations is the number of operations (previewed fingerprints).
	Operations int `json:"operations"`
	// ByScope counts the operations by action.
	ByScope map[string]int `json:"by_scope"`
	// ByIntent counts the operations by what the agent meant.
	ByIntent map[string]int `json:"by_intent"`
	// FinalStates counts the operations by final truth state (NONE: never claimed).
	FinalStates map[string]int `json:"final_states"`
	// FailureKinds counts the FAILED operations by failure_kind.
	FailureKinds map[string]int `json:"failure_kinds"`
	// Executions is the total of downstream executions.
	Executions int `json:"executions"`
	// Faults counts the faults injected, by kind.
	Faults map[string]int `json:"faults"`
	// NetFaults counts the network faults injected by kind and hop (or,
	// for a partition, component): "net_latency gateway->redis".
	NetFaults map[string]int `json:"net_faults,omitempty"`
	// ConvergeSeconds is the longest time from a network fault's healing
	// until every gateway was ready again with its fast path in use, and
	// ConvergeFault that fault.
	ConvergeSeconds float64 `json:"converge_seconds"`
	ConvergeFault   string  `json:"converge_fault,omitempty"`
	// FaultsSkipped counts scheduled faults whose target did not answer.
	FaultsSkipped map[string]int `json:"faults_skipped,omitempty"`
	// Restarts counts how often the supervisors started each component again.
	Restarts map[string]int `json:"restarts"`
	// SettleSeconds is how long after the faults stopped every operation
	// was terminal or in manual review.
	SettleSeconds float64 `json:"settle_seconds"`
	// ReviewResolved counts the manual reviews the audit decided, by outcome.
	ReviewResolved map[string]int `json:"review_resolved"`
	// RedisKeys is how many operations still had an idem:{<nonce>} hash.
	RedisKeys int `json:"redis_keys"`
	// RedisStale is how many of them were still IN_FLIGHT while the truth
	// was terminal (tolerated: readers of IN_FLIGHT ask the truth).
	RedisStale int `json:"redis_stale"`
	// Workflows is how many operations had a Temporal workflow.
	Workflows int `json:"workflows"`
	// History is what the history checker judged.
	History HistorySummary `json:"history"`
	// Violations is every broken expectation; a sound run has none.
	Violations []Violation `json:"violations"`
	// Evidence is, for the first maxEvidence operations with a violation,
	// what the agents did and were told, to read beside the logs.
	Evidence []*opRecord `json:"evidence,omitempty"`
	// Replay is the command that replays the run.
	Replay string `json:"replay"`
	// Schedule is the fault schedule that was drawn.
	Schedule []FaultEvent `json:"schedule"`
}

// HistorySummary is what the history checker (harness/history, porcupine)
// judged.
type HistorySummary struct {
	// Operations and Events are what was checked; Answers and Executions
	// are among the events (the rest are the truth's final records).
	Operations, Events, Answers, Executions int
	// Linearizable is true when every operation's history was.
	Linearizable bool
	// Visualization is porcupine's HTML visualization, when written.
	Visualization string `json:",omitempty"`
}

// Write writes the report as soak-<seed>.json and soak-<seed>.md into dir
// and returns their paths.
func (r *Report) Write(dir string) (jsonPath, mdPath string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("write report: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", "", fmt.Errorf("write report: %w", err)
	}
	base := filepath.Join(dir, fmt.Sprintf("soak-%d", r.Seed))
	if err := os.WriteFile(base+".json", append(b, '\n'), 0o644); err != nil {
		return "", "", fmt.Errorf("write report: %w", err)
	}
	if err := os.WriteFile(base+".md", []byte(r.Markdown()), 0o644); err != nil {
		return "", "", fmt.Errorf("write report: %w", err)
	}
	return base + ".json", base + ".md", nil
}

// maxListed bounds the violations a markdown summary lists.
const maxListed = 20

// maxEvidence bounds the operations whose answers the JSON report holds.
const maxEvidence = 50

// Markdown is the short summary.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Soak run, seed %d\n\n", r.Seed)
	fmt.Fprintf(&b, "- profile %s, %s of load and faults, %d agents, actions %s\n", r.Profile, r.Duration, r.Agents, strings.Join(r.Actions, ", "))
	fmt.Fprintf(&b, "- %s → %s\n", r.StartedAt.UTC().Format(time.RFC3339), r.FinishedAt.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "- episodes: %s\n", counts(r.Episodes))
	fmt.Fprintf(&b, "- %d requests to the gateway, %d answers lost to client timeouts, %d without an answer (component down)\n",
		r.Requests, r.LostAnswers, r.TransportErrors)
	fmt.Fprintf(&b, "- operations: %d (%s); by intent: %s\n", r.Operations, counts(r.ByScope), counts(r.ByIntent))
	fmt.Fprintf(&b, "- final states: %s; failure kinds: %s; downstream executions: %d\n", counts(r.FinalStates), counts(r.FailureKinds), r.Executions)
	fmt.Fprintf(&b, "- faults injected: %s\n", counts(r.Faults))
	if len(r.NetFaults) > 0 {
		fmt.Fprintf(&b, "- network faults by kind and hop: %s\n", counts(r.NetFaults))
	}
	if r.ConvergeFault != "" {
		fmt.Fprintf(&b, "- longest time to converge after a network fault healed (every gateway ready, fast path in use): %.1fs, after %s\n",
			r.ConvergeSeconds, r.ConvergeFault)
	}
	if len(r.FaultsSkipped) > 0 {
		fmt.Fprintf(&b, "- faults skipped (target down): %s\n", counts(r.FaultsSkipped))
	}
	fmt.Fprintf(&b, "- restarts by the supervisors: %s\n", counts(r.Restarts))
	fmt.Fprintf(&b, "- settled %.0fs after the faults stopped; manual reviews decided by the audit: %s\n", r.SettleSeconds, counts(r.ReviewResolved))
	fmt.Fprintf(&b, "- checked: %d Redis hashes (%d stale IN_FLIGHT), %d workflows\n", r.RedisKeys, r.RedisStale, r.Workflows)
	fmt.Fprintf(&b, "- answers by status: %s\n", counts(r.Answers))
	fmt.Fprintf(&b, "- history (porcupine): %d operations, %d events (%d answers, %d executions), linearizable: %v",
		r.History.Operations, r.History.Events, r.History.Answers, r.History.Executions, r.History.Linearizable)
	if r.History.Visualization != "" {
		fmt.Fprintf(&b, " (%s)", r.History.Visualization)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "\n**%d violations.** Replay: `%s`\n", len(r.Violations), r.Replay)
	for i, v := range r.Violations {
		if i == maxListed {
			fmt.Fprintf(&b, "- … %d more in the JSON report\n", len(r.Violations)-maxListed)
			break
		}
		fmt.Fprintf(&b, "- [%s] %s: %s\n", v.Check, v.OperationID, v.Detail)
	}
	return b.String()
}

// counts renders a count map as "a 1, b 2", sorted by key.
func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
