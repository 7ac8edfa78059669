package api

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/downstream"
	"github.com/oncegate/oncegate/internal/params"
)

// defaultQuoteTimeout bounds a quote when the downstream declares no timeout.
const defaultQuoteTimeout = 5 * time.Second

// Message keys of the details of a failed quote.
const (
	detailQuoteTimeout     = "detail.quote_timeout"
	detailQuoteUnreachable = "detail.quote_unreachable"
	detailQuoteStatus      = "detail.quote_status"
	detailQuoteBadAnswer   = "detail.quote_bad_answer"
	detailQuoteExpired     = "detail.quote_expired"
)

// quoteDetails maps each transient quote failure to the detail telling the agent.
var quoteDetails = map[downstream.QuoteFailure]string{
	downstream.QuoteTimeout:     detailQuoteTimeout,
	downstream.QuoteUnreachable: detailQuoteUnreachable,
	downstream.QuoteStatus:      detailQuoteStatus,
	downstream.QuoteBadAnswer:   detailQuoteBadAnswer,
}

// quoteError is a quote that could not be used, as the preview answers it:
// a refusal (the downstream's definite "no" to these params) or a transient
// failure with the detail that tells the agent what went wrong.
type quoteError struct {
	// refused marks a definite refusal.
	refused bool
	// httpStatus is the downstream's HTTP status, 0 without an answer.
	httpStatus int
	// reason is the downstream's own words of a refusal.
	reason string
	// problems are the fields a refusal names.
	problems []params.FieldProblem
	// detail is the message key telling the agent what went wrong.
	detail string
	// err is the underlying failure, for the log.
	err error
}

// Error implements error.
func (e *quoteError) Error() string {
	if e.refused {
		return fmt.Sprintf("quote refused: HTTP %d: %s", e.httpStatus, e.reason)
	}
	return fmt.Sprintf("quote: %v", e.err)
}

// Unwrap returns the underlying failure.
func (e *quoteError) Unwrap() error { return e.err }

// fetchQuote asks the action's downstream kind for a quote of the
// normalized bound params and returns its JSON answer and its expires_at
// (zero when absent). Every failure is a *quoteError.
func (s *Server) fetchQuote(ctx context.Context, action *catalog.Action, bound map[string]any) (map[string]any, time.Time, error) {
	kind, err := downstream.For(action.Downstream.Kind)
	if err != nil {
		return nil, time.Time{}, &quoteError{detail: detailQuoteUnreachable, err: err}
	}
	quoter, ok := kind.(downstream.Quoter)
	if !ok {
		return nil, time.Time{}, &quoteError{detail: detailQuoteUnreachable,
			err: fmt.Errorf("downstream kind %q cannot quote", action.Downstream.Kind)}
	}
	timeout := action.Downstream.Timeout
	if timeout <= 0 {
		timeout = defaultQuoteTimeout
	}
	q, err := quoter.Quote(ctx, downstream.QuoteCall{URL: action.Downstream.Quote, Bound: bound, Timeout: timeout, HTTP: s.http})
	if err == nil {
		return q.Answer, q.ExpiresAt, nil
	}
	var qe *downstream.QuoteError
	if !errors.As(err, &qe) {
		return nil, time.Time{}, &quoteError{detail: detailQuoteUnreachable, err: err}
	}
	out := &quoteError{refused: qe.Refused, httpStatus: qe.HTTPStatus, reason: qe.Reason, detail: quoteDetails[qe.Failure], err: qe.Err}
	for _, f := range qe.Fields {
		out.problems = append(out.problems, params.FieldProblem{Field: f.Field, Problem: f.Problem})
	}
	return nil, time.Time{}, out
}
