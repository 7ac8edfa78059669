package idemstore

import "github.com/oncegate/oncegate/operation"

// Final returns the terminal outcome r holds (meaningful when r.State is
// terminal).
func (r Record) Final() operation.Final {
	return operation.Final{State: r.State, Result: r.Result, ResultRef: r.ResultRef, Reason: r.Reason,
		FailureKind: r.FailureKind, ResolvedBy: r.ResolvedBy, ResolutionNote: r.ResolutionNote,
		EvidenceURL: r.EvidenceURL, ResolvedAt: r.ResolvedAt, CompletedAt: r.CompletedAt}
}

// OperationState is the record's state: what a renderer that knows the
// record only as a value with a state reads of it.
func (r Record) OperationState() operation.State { return r.State }
