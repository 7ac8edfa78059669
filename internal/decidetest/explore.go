// Package decidetest walks a decision table's paths for its tests: the
// pure decisions of idemstore/combined (decide*.go) and of the gateway's
// confirm (api/decide_confirm.go) each take the answers gathered so far and
// name the next call or the answer; Explore asks every call every answer it
// can get, so a table can be checked to list every reachable path, and
// only those.
package decidetest

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Option is one answer a call can get, named in the path's key.
type Option[A any] struct {
	// Name names the answer in the path's key ("call=name").
	Name string
	// Answer is the answer.
	Answer A
}

// Explore walks every path a decision can take from the zero facts: ask
// says which call the facts lead to (and whether the decision is made),
// record adds a call's answer to the facts, and options names a call and
// lists the answers it can get. It returns the final facts of every path,
// keyed by "call=answer → call=answer …". A decision that asks a call
// twice on one path fails the test (the caller would loop).
func Explore[F any, C comparable, A any](t *testing.T, ask func(F) (C, bool), record func(F, C, A) F,
	options func(C) (string, []Option[A])) map[string]F {
	t.Helper()
	var start F
	return ExploreFrom(t, start, ask, record, options)
}

// ExploreFrom is Explore from the facts start (known before any call).
func ExploreFrom[F any, C comparable, A any](t *testing.T, start F, ask func(F) (C, bool), record func(F, C, A) F,
	options func(C) (string, []Option[A])) map[string]F {
	t.Helper()
	paths := map[string]F{}
	var walk func(facts F, key []string, asked map[C]bool)
	walk = func(facts F, key []string, asked map[C]bool) {
		call, decided := ask(facts)
		if decided {
			paths[strings.Join(key, " → ")] = facts
			return
		}
		require.False(t, asked[call], "%s asks %v twice", strings.Join(key, " → "), call)
		name, opts := options(call)
		for _, o := range opts {
			next := maps.Clone(asked)
			next[call] = true
			walk(record(facts, call, o.Answer), append(slices.Clone(key), name+"="+o.Name), next)
		}
	}
	walk(start, nil, map[C]bool{})
	return paths
}

// Keys returns the keys of m: a table's rows or a walk's paths.
func Keys[V any](m map[string]V) []string {
	return slices.Collect(maps.Keys(m))
}
