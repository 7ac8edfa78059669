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
	// QuoteFailNext is how many of the next quote requests answer 503
	// unavailable; each such request decrements it.
	QuoteFailNext int `json:"quote_fail_next"`
}

// faultsRequest is the body of PUT /_sim/faults: absent fields are zero.
type faultsRequest struct {
	LatencyMS         *int  `json:"latency_ms"`
	FailNext          *int  `json:"fail_next"`
	HangAfterCommitMS *int  `json:"hang_after_commit_ms"`
	StatusUnavailable *bool `json:"status_unavailable"`
	QuoteFailNext     *int  `json:"quote_fail_next"`
}

// loadFaults reads the current fault set; a missing row is no fault.
func (s *Server) loadFaults(ctx context.Context) (Faults, error) {
	var f Faults
	err := s.pool.QueryRow(ctx, `
		SELECT latency_ms, fail_next, hang_after_commit_ms, status_unavailable, quote_fail_next
		FROM sim_faults WHERE id`).Scan(&f.LatencyMS, &f.FailNext, &f.HangAfterCommitMS, &f.StatusUnavailable, &f.QuoteFailNext)
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
		INSERT INTO sim_faults (id, latency_ms, fail_next, hang_after_commit_ms, status_unavailable, quote_fail_next)
		VALUES (true, $1, $2, $3, $4, $5)
		ON CONFLICT (id) DO UPDATE SET latency_ms = EXCLUDED.latency_ms, fail_next = EXCLUDED.fail_next,
			hang_after_commit_ms = EXCLUDED.hang_after_commit_ms, status_unavailable = EXCLUDED.status_unavailable,
			quote_fail_next = EXCLUDED.quote_fail_next`,
		f.LatencyMS, f.FailNext, f.HangAfterCommitMS, f.StatusUnavailable, f.QuoteFailNext)
	if err != nil {
		return fmt.Errorf("store faults: %w", err)
	}
	return nil
}

// Counting faults: columns of sim_faults that consumeFailure decrements.
const (
	failNextColumn      = "fail_next"
	quoteFailNextColumn = "quote_fail_next"
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
		{"quote_fail_next", req.QuoteFailNext, &f.QuoteFailNext},
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
