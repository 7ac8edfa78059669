package simulator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
)

// Faults are the failures the simulator injects. They live in the single row
// of sim_faults, so every simulator process on the database applies them and
// they survive restarts; each request reads them afresh.
type Faults struct {
	// LatencyMS is slept before handling each transfer, quote and status request.
	LatencyMS int `json:"latency_ms"`
	// FailNext is how many of the next transfer requests (both kinds) answer
	// 503 unavailable without executing; each such request decrements it.
	FailNext int `json:"fail_next"`
	// HangAfterCommitMS holds the response of an executed transfer that long
	// after its commit (or until the client goes away).
	HangAfterCommitMS int `json:"hang_after_commit_ms"`
	// StatusUnavailable makes GET /legacy/transfers answer 503.
	StatusUnavailable bool `json:"status_unavailable"`
	// CommitDelayMS processes and commits each transfer that long after it
	// was received, detached from the caller's connection: a caller that
	// times out or hangs up does not stop it, as on real servers.
	CommitDelayMS int `json:"commit_delay_ms"`
	// StatusLagMS makes GET /legacy/transfers see a transfer only that long
	// after it was committed (a read replica or a search index behind).
	StatusLagMS int `json:"status_lag_ms"`
	// FailAfterCommit is how many of the next transfers that execute commit
	// and then answer 500 instead of their result; each decrements it.
	FailAfterCommit int `json:"fail_after_commit"`
	// QuoteFailNext is how many of the next quote requests answer 503
	// unavailable; each such request decrements it.
	QuoteFailNext int `json:"quote_fail_next"`
	// PayoutSettleMS is how long after its creation a payout settles (paid
	// or failed); 0 means DefaultPayoutSettle.
	PayoutSettleMS int `json:"payout_settle_ms"`
	// QuoteTTLMS is how long a quote made now holds (its expires_at); 0
	// means the server's quote TTL (DefaultQuoteTTL). The gateway's
	// fingerprint expires with the quote, so this makes an expired
	// fingerprint in seconds.
	QuoteTTLMS int `json:"quote_ttl_ms"`
}

// faultsRequest is the body of PUT /_sim/faults: absent fields are zero.
type faultsRequest struct {
	LatencyMS         *int  `json:"latency_ms"`
	FailNext          *int  `json:"fail_next"`
	HangAfterCommitMS *int  `json:"hang_after_commit_ms"`
	StatusUnavailable *bool `json:"status_unavailable"`
	CommitDelayMS     *int  `json:"commit_delay_ms"`
	StatusLagMS       *int  `json:"status_lag_ms"`
	FailAfterCommit   *int  `json:"fail_after_commit"`
	QuoteFailNext     *int  `json:"quote_fail_next"`
	PayoutSettleMS    *int  `json:"payout_settle_ms"`
	QuoteTTLMS        *int  `json:"quote_ttl_ms"`
}

// loadFaults reads the current fault set; a missing row is no fault.
func (s *Server) loadFaults(ctx context.Context) (Faults, error) {
	var f Faults
	err := s.pool.QueryRow(ctx, `
		SELECT latency_ms, fail_next, hang_after_commit_ms, status_unavailable,
			commit_delay_ms, status_lag_ms, fail_after_commit, quote_fail_next, payout_settle_ms, quote_ttl_ms
		FROM sim_faults WHERE id`).Scan(&f.LatencyMS, &f.FailNext, &f.HangAfterCommitMS, &f.StatusUnavailable,
		&f.CommitDelayMS, &f.StatusLagMS, &f.FailAfterCommit, &f.QuoteFailNext, &f.PayoutSettleMS, &f.QuoteTTLMS)
	if errors.Is(err, pgx.ErrNoRows) {
		return Faults{}, nil
	}
	if err != nil {
		return Faults{}, fmt.Errorf("load faults: %w", err)
	}
	return f, nil
}

// storeFaults replaces the fault set.
func (s *Server) storeFaults(ctx context.Context, f Faults) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO sim_faults (id, latency_ms, fail_next, hang_after_commit_ms, status_unavailable,
			commit_delay_ms, status_lag_ms, fail_after_commit, quote_fail_next, payout_settle_ms, quote_ttl_ms)
		VALUES (true, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (id) DO UPDATE SET latency_ms = EXCLUDED.latency_ms, fail_next = EXCLUDED.fail_next,
			hang_after_commit_ms = EXCLUDED.hang_after_commit_ms, status_unavailable = EXCLUDED.status_unavailable,
			commit_delay_ms = EXCLUDED.commit_delay_ms, status_lag_ms = EXCLUDED.status_lag_ms,
			fail_after_commit = EXCLUDED.fail_after_commit, quote_fail_next = EXCLUDED.quote_fail_next,
			payout_settle_ms = EXCLUDED.payout_settle_ms, quote_ttl_ms = EXCLUDED.quote_ttl_ms`,
		f.LatencyMS, f.FailNext, f.HangAfterCommitMS, f.StatusUnavailable, f.CommitDelayMS, f.StatusLagMS, f.FailAfterCommit,
		f.QuoteFailNext, f.PayoutSettleMS, f.QuoteTTLMS)
	if err != nil {
		return fmt.Errorf("store faults: %w", err)
	}
	return nil
}

// Counting faults: columns of sim_faults that consumeFailure decrements.
const (
	failNextColumn        = "fail_next"
	quoteFailNextColumn   = "quote_fail_next"
	failAfterCommitColumn = "fail_after_commit"
)

// consumeFailure atomically takes one injected failure of column (one of
// the counting faults), reporting whether there was one to take.
// Concurrent requests of any process never take more failures in total
// than the count.
func (s *Server) consumeFailure(ctx context.Context, column string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE sim_faults SET `+column+` = `+column+` - 1 WHERE id AND `+column+` > 0`)
	if err != nil {
		return false, fmt.Errorf("consume %s: %w", column, err)
	}
	return tag.RowsAffected() == 1, nil
}

// committed is the outcome of processing one transfer request.
type committed struct {
	status   int
	body     []byte
	executed bool // this request executed a transfer
	replayed bool // the answer is a stored first response
	err      error
}

// commitDetached runs process, which validates, executes and commits a
// transfer, commit_delay_ms after the request was received and detached from
// the caller's connection, as real servers do: a caller that timed out or
// hung up does not stop the commit. It returns process's outcome, or false
// when the caller left before it was known (the commit still happens).
func (s *Server) commitDetached(r *http.Request, f Faults, process func(ctx context.Context) committed) (committed, bool) {
	done := make(chan committed, 1)
	ctx := context.WithoutCancel(r.Context())
	delay := time.Duration(f.CommitDelayMS) * time.Millisecond
	go func() {
		if delay > 0 {
			time.Sleep(delay)
		}
		c := process(ctx)
		if c.err == nil && c.executed {
			s.logger.InfoContext(ctx, "transfer committed", "path", r.URL.Path, "commit_delay_ms", f.CommitDelayMS)
		}
		done <- c
	}()
	select {
	case c := <-done:
		return c, true
	case <-r.Context().Done():
		s.logger.InfoContext(ctx, "caller left before the commit; processing goes on", "path", r.URL.Path)
		return committed{}, false
	}
}

// answerCommitted writes the outcome of a processed transfer: a database
// failure is 503, an injected fail_after_commit turns an executed transfer's
// answer into 500 (the transfer stays committed), a stored first response is
// marked Idempotent-Replayed; an executed transfer's answer is held
// hang_after_commit_ms.
func (s *Server) answerCommitted(w http.ResponseWriter, r *http.Request, f Faults, c committed) {
	if c.err != nil {
		s.internalError(w, r, c.err)
		return
	}
	if c.executed {
		failed, err := s.consumeFailure(r.Context(), failAfterCommitColumn)
		if err != nil {
			s.internalError(w, r, err)
			return
		}
		if failed {
			writeError(w, http.StatusInternalServerError, CodeInternal,
				"injected failure (fail_after_commit): the transfer was committed, but this answer is lost")
			return
		}
		hangAfterCommit(r.Context(), f)
	}
	if c.replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeRaw(w, c.status, c.body)
}

// beforeRequest applies the faults common to transfer, quote and status
// requests: it loads the faults and sleeps latency_ms. It answers the request
// itself (and returns false) when the database fails or the client leaves.
func (s *Server) beforeRequest(w http.ResponseWriter, r *http.Request) (Faults, bool) {
	f, err := s.loadFaults(r.Context())
	if err != nil {
		s.internalError(w, r, err)
		return Faults{}, false
	}
	if err := sleep(r.Context(), time.Duration(f.LatencyMS)*time.Millisecond); err != nil {
		return Faults{}, false
	}
	return f, true
}

// beforeTransfer is beforeRequest plus fail_next: a request that takes an
// injected failure is answered 503 without executing.
func (s *Server) beforeTransfer(w http.ResponseWriter, r *http.Request) (Faults, bool) {
	return s.beforeCounted(w, r, failNextColumn, "injected failure (fail_next): nothing was executed")
}

// beforeCounted is beforeRequest plus the counting fault column: a request
// that takes an injected failure is answered 503 with message.
func (s *Server) beforeCounted(w http.ResponseWriter, r *http.Request, column, message string) (Faults, bool) {
	f, ok := s.beforeRequest(w, r)
	if !ok {
		return Faults{}, false
	}
	failed, err := s.consumeFailure(r.Context(), column)
	if err != nil {
		s.internalError(w, r, err)
		return Faults{}, false
	}
	if failed {
		writeError(w, http.StatusServiceUnavailable, CodeUnavailable, message)
		return Faults{}, false
	}
	return f, true
}

// hangAfterCommit holds an executed transfer's response hang_after_commit_ms,
// returning early when the client goes away.
func hangAfterCommit(ctx context.Context, f Faults) {
	_ = sleep(ctx, time.Duration(f.HangAfterCommitMS)*time.Millisecond)
}

// sleep waits d or until ctx ends, returning ctx's error in that case.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sleep: %w", ctx.Err())
	}
}

func (s *Server) handleGetFaults(w http.ResponseWriter, r *http.Request) {
	f, err := s.loadFaults(r.Context())
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, f)
}

func (s *Server) handlePutFaults(w http.ResponseWriter, r *http.Request) {
	var req faultsRequest
	if err := decodeJSON(r, &req, true); err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, err.Error())
		return
	}
	var f Faults
	for _, field := range []struct {
		name string
		in   *int
		out  *int
	}{
		{"latency_ms", req.LatencyMS, &f.LatencyMS},
		{"fail_next", req.FailNext, &f.FailNext},
		{"hang_after_commit_ms", req.HangAfterCommitMS, &f.HangAfterCommitMS},
		{"commit_delay_ms", req.CommitDelayMS, &f.CommitDelayMS},
		{"status_lag_ms", req.StatusLagMS, &f.StatusLagMS},
		{"fail_after_commit", req.FailAfterCommit, &f.FailAfterCommit},
		{"quote_fail_next", req.QuoteFailNext, &f.QuoteFailNext},
		{"payout_settle_ms", req.PayoutSettleMS, &f.PayoutSettleMS},
		{"quote_ttl_ms", req.QuoteTTLMS, &f.QuoteTTLMS},
	} {
		if field.in == nil {
			continue
		}
		if *field.in < 0 || *field.in > 1<<31-1 {
			writeError(w, http.StatusBadRequest, CodeInvalidRequest, field.name+" must be a non-negative integer")
			return
		}
		*field.out = *field.in
	}
	if req.StatusUnavailable != nil {
		f.StatusUnavailable = *req.StatusUnavailable
	}
	if err := s.storeFaults(r.Context(), f); err != nil {
		s.internalError(w, r, err)
		return
	}
	s.logger.InfoContext(r.Context(), "faults set", "faults", f)
	writeJSON(w, http.StatusOK, f)
}

func (s *Server) handleDeleteFaults(w http.ResponseWriter, r *http.Request) {
	if err := s.storeFaults(r.Context(), Faults{}); err != nil {
		s.internalError(w, r, err)
		return
	}
	s.logger.InfoContext(r.Context(), "faults cleared")
	writeJSON(w, http.StatusOK, Faults{})
}
