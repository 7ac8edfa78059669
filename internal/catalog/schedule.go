package catalog

import "time"

// RetryCoefficient is the factor by which each retry interval grows.
const RetryCoefficient = 2

// MaxReconcilePoll caps the interval between status queries while a "not
// found" cannot prove anything yet: they start reconcile_delay apart and
// double up to this.
const MaxReconcilePoll = time.Minute

// Retry is the schedule of one activity: the workflow turns it into its
// Temporal retry policy and the catalog adds it up into the worst case that
// in_flight_ttl must exceed, so the two can never disagree.
type Retry struct {
	// Timeout bounds one attempt (the activity's start-to-close timeout).
	Timeout time.Duration
	// Attempts is the maximum number of attempts.
	Attempts int
	// Initial is the first retry interval; each next one is
	// RetryCoefficient times longer, capped at Max.
	Initial time.Duration
	// Max caps one retry interval.
	Max time.Duration
}

// Waits returns the sum of the intervals between Attempts attempts.
func (r Retry) Waits() time.Duration {
	var total time.Duration
	wait := r.Initial
	for i := 1; i < r.Attempts; i++ {
		total = satAdd(total, min(wait, r.Max))
		wait = satMul(wait, RetryCoefficient)
	}
	return total
}

// Worst returns the longest the activity can run with all its retries:
// Timeout × Attempts + Waits.
func (r Retry) Worst() time.Duration {
	return satAdd(satMul(r.Timeout, int64(r.Attempts)), r.Waits())
}

// retry is the schedule of attempts calls of d's timeout and backoff.
func (d *Downstream) retry(attempts int) Retry {
	initial := d.Backoff
	if initial <= 0 {
		initial = DefaultRetryInterval
	}
	maxInterval := d.BackoffMax
	if maxInterval <= 0 {
		maxInterval = satMul(initial, DefaultBackoffMaxFactor)
	}
	return Retry{Timeout: d.Timeout, Attempts: max(attempts, 1), Initial: initial, Max: maxInterval}
}

// ExecuteRetry is the schedule of the execute call: the catalog's attempts
// for a downstream that honours the key, exactly one call for one that does
// not (a second send could execute the operation twice).
func (d *Downstream) ExecuteRetry() Retry {
	if !d.HonorsIdempotencyKey {
		return d.retry(1)
	}
	return d.retry(d.Attempts)
}

// ReconcileRetry is the schedule of one status query: it only reads, so it
// is retried reconcile_attempts times when the status endpoint fails.
func (d *Downstream) ReconcileRetry() Retry { return d.retry(d.ReconcileAttempts) }

// ProvesNotExecuted reports whether a status "not found" can ever prove
// that the downstream did not execute an operation: only when it has a
// status endpoint and declares max_processing_time.
func (d *Downstream) ProvesNotExecuted() bool { return d.reconciles() && d.MaxProcessingTime > 0 }

// NotFoundProvesAfter returns the moment from which a status "not found"
// proves "not executed" for a request last sent at lastSent: after the
// downstream's processing window and its status lag have both passed. The
// workflow asks again until then; ProvesNotExecuted must hold.
func (d *Downstream) NotFoundProvesAfter(lastSent time.Time) time.Time {
	return lastSent.Add(satAdd(d.MaxProcessingTime, d.StatusLag))
}

// reconciles reports whether an unknown answer is reconciled through the
// status endpoint (the downstream has one).
func (d *Downstream) reconciles() bool { return d.Status != "" }

// ReconcileWorst returns the longest reconciliation can take after the
// execute call ended with an unknown answer, as the workflow runs it: the
// settle delay (reconcile_delay) and one status query; and, when "not
// found" needs the processing window to pass, status queries (never a wait
// past the window's end) until one is asked after the window and the
// status lag have passed: at most the window plus two queries (the one
// running when the window ends and the one after it).
func (d *Downstream) ReconcileWorst() time.Duration {
	if !d.reconciles() {
		return 0
	}
	query := d.ReconcileRetry().Worst()
	w := satAdd(d.ReconcileDelay, query)
	if d.ProvesNotExecuted() {
		w = satAdd(w, satAdd(satAdd(d.MaxProcessingTime, d.StatusLag), query))
	}
	return w
}
