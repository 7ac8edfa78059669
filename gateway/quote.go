package gateway

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

// quoteDetails maps each transient quote failure to the message key of the
// detail that tells the agent what went wrong.
var quoteDetails = map[downstream.QuoteFailure]string{
	downstream.QuoteTimeout:     "detail.quote_timeout",
	downstream.QuoteUnreachable: "detail.quote_unreachable",
	downstream.QuoteStatus:      "detail.quote_status",
	downstream.QuoteBadAnswer:   "detail.quote_bad_answer",
	downstream.QuoteExpired:     "detail.quote_expired",
}

// fetchQuote asks the action's downstream kind for a quote of the
// normalized bound params and returns its JSON answer, refusing one whose
// expires_at is not after now. Every failure is a *downstream.QuoteError.
func (s *Service) fetchQuote(ctx context.Context, action *catalog.Action, bound map[string]any, now time.Time) (downstream.Quote, error) {
	unreachable := func(err error) error { return &downstream.QuoteError{Failure: downstream.QuoteUnreachable, Err: err} }
	kind, err := downstream.For(action.Downstream.KindName())
	if err != nil {
		return downstream.Quote{}, unreachable(err)
	}
	quoter, ok := kind.(downstream.Quoter)
	if !ok {
		return downstream.Quote{}, unreachable(fmt.Errorf("downstream kind %q cannot quote", action.Downstream.KindName()))
	}
	timeout := action.Downstream.Timeout
	if timeout <= 0 {
		timeout = defaultQuoteTimeout
	}
	q, err := quoter.Quote(ctx, downstream.QuoteCall{URL: action.Downstream.Quote, Bound: bound, Timeout: timeout, HTTP: s.http})
	var qe *downstream.QuoteError
	switch {
	case err != nil && !errors.As(err, &qe):
		return downstream.Quote{}, unreachable(err)
	case err != nil:
		return downstream.Quote{}, err
	case !q.ExpiresAt.IsZero() && !q.ExpiresAt.After(now):
		return downstream.Quote{}, &downstream.QuoteError{Failure: downstream.QuoteExpired,
			Err: fmt.Errorf("quote already expired at %s", q.ExpiresAt.Format(time.RFC3339))}
	}
	return q, nil
}

// fieldProblems are the errors[] entries of the fields a refusal names.
func fieldProblems(fields []downstream.FieldRefusal) []params.FieldProblem {
	var out []params.FieldProblem
	for _, f := range fields {
		out = append(out, params.FieldProblem{Field: f.Field, Problem: f.Problem})
	}
	return out
}
