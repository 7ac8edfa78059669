package agentsim

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Report is the outcome of a run.
type Report struct {
	// RunID tells this run's payees apart from other runs'.
	RunID string `json:"run_id"`
	// Seed is the seed of the run.
	Seed int64 `json:"seed"`
	// Episodes is the number of episodes played.
	Episodes int `json:"episodes"`
	// EpisodesByKind counts the episodes of each kind.
	EpisodesByKind map[Kind]int `json:"episodes_by_kind"`
	// Statuses counts every status the gateway answered.
	Statuses map[string]int `json:"statuses"`
	// LostAnswers counts confirms whose answer was lost to the client timeout.
	LostAnswers int `json:"lost_answers"`
	// Operations is the number of distinct operations checked downstream.
	Operations int `json:"operations"`
	// Executions is the total of downstream executions of those operations.
	Executions int `json:"executions"`
	// DuplicateExecutions counts executions beyond the first of one
	// operation (must be 0).
	DuplicateExecutions int `json:"duplicate_executions"`
	// DuplicateOperations lists the operations that executed more than once.
	DuplicateOperations []string `json:"duplicate_operations,omitempty"`
	// UnintendedExecutions counts executions of operations that must not
	// have run: a refused repeat, or a definite failure (must be 0).
	UnintendedExecutions int `json:"unintended_executions"`
	// UnintendedOperations lists those operations.
	UnintendedOperations []string `json:"unintended_operations,omitempty"`
	// DriftMismatches counts param_mismatch answers to equivalent params
	// (must be 0).
	DriftMismatches int `json:"drift_param_mismatches"`
	// IntendedRepeats counts second executions the user asked for ("do it
	// again", acknowledged): intended, not duplicates.
	IntendedRepeats int `json:"intended_repeats"`
	// Violations lists broken expectations of the contract.
	Violations []string `json:"violations,omitempty"`
	// Errors lists episodes that could not finish (transport errors,
	// unexpected answers).
	Errors []string `json:"errors,omitempty"`
}

// OK reports a clean run: no duplicate or unintended execution, no
// param_mismatch caused by drift, no violation and no error.
func (r Report) OK() bool {
	return r.DuplicateExecutions == 0 && r.UnintendedExecutions == 0 && r.DriftMismatches == 0 &&
		len(r.Violations) == 0 && len(r.Errors) == 0
}

// aggregate builds the report of the episodes' results and the downstream
// execution counts by operation id (an operation missing from counts was
// not counted and is left out).
func aggregate(results []episodeResult, counts map[string]int) Report {
	r := Report{
		Episodes:       len(results),
		EpisodesByKind: map[Kind]int{},
		Statuses:       map[string]int{},
	}
	limit := map[string]int{}
	for _, res := range results {
		r.EpisodesByKind[res.kind]++
		for s, n := range res.statuses {
			r.Statuses[s] += n
		}
		r.LostAnswers += res.lostAnswers
		r.DriftMismatches += res.driftMismatch
		r.IntendedRepeats += res.intendedRepeat
		r.Violations = append(r.Violations, res.violations...)
		r.Errors = append(r.Errors, res.errs...)
		for _, o := range res.ops {
			if prev, ok := limit[o.id]; ok {
				limit[o.id] = min(prev, o.maxExecutions)
			} else {
				limit[o.id] = o.maxExecutions
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(limit)) {
		n, ok := counts[id]
		if !ok {
			continue
		}
		r.Operations++
		r.Executions += n
		if n > 1 {
			r.DuplicateExecutions += n - 1
			r.DuplicateOperations = append(r.DuplicateOperations, id)
		}
		if n > limit[id] && limit[id] == 0 {
			r.UnintendedExecutions += n
			r.UnintendedOperations = append(r.UnintendedOperations, id)
		}
	}
	return r
}

// WriteText writes the report for a person.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "oncegate agent simulator: %d episodes (seed %d, run %s)\n", r.Episodes, r.Seed, r.RunID)
	b.WriteString("episodes by kind:\n")
	for _, k := range Kinds {
		fmt.Fprintf(&b, "  %-30s %6d\n", k, r.EpisodesByKind[k])
	}
	b.WriteString("statuses seen:\n")
	for _, s := range slices.Sorted(maps.Keys(r.Statuses)) {
		fmt.Fprintf(&b, "  %-30s %6d\n", s, r.Statuses[s])
	}
	fmt.Fprintf(&b, "  %-30s %6d\n", "(answer lost: client timeout)", r.LostAnswers)
	fmt.Fprintf(&b, "operations checked downstream:  %d (executions: %d)\n", r.Operations, r.Executions)
	fmt.Fprintf(&b, "duplicate executions:           %d (must be 0)%s\n", r.DuplicateExecutions, list(r.DuplicateOperations))
	fmt.Fprintf(&b, "unintended executions:          %d (must be 0)%s\n", r.UnintendedExecutions, list(r.UnintendedOperations))
	fmt.Fprintf(&b, "param_mismatch caused by drift: %d (must be 0)\n", r.DriftMismatches)
	fmt.Fprintf(&b, "intended repeats (do it again): %d\n", r.IntendedRepeats)
	fmt.Fprintf(&b, "violations: %d\n", len(r.Violations))
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "  - %s\n", v)
	}
	fmt.Fprintf(&b, "errors: %d\n", len(r.Errors))
	for _, e := range r.Errors {
		fmt.Fprintf(&b, "  - %s\n", e)
	}
	if r.OK() {
		b.WriteString("result: PASS\n")
	} else {
		b.WriteString("result: FAIL\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// list formats operation ids after a count.
func list(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	if len(ids) > 10 {
		ids = append(slices.Clone(ids[:10]), "…")
	}
	return " [" + strings.Join(ids, ", ") + "]"
}
