package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"

	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/harness/truthfill"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/idemstore/pgstore"
	"github.com/oncegate/oncegate/operation"
)

// hotSubjectOps is how many operations of one subject in a day
// BenchmarkHotSubjectBudget fills in unless ONCEGATE_HOT_SUBJECT_OPS says
// otherwise (issue 43: 100k a day).
const hotSubjectOps = 100_000

// BenchmarkHotSubjectBudget measures a budget's cost for one subject that
// holds N reservations in its daily window (truthfill: N finished
// operations of one subject over the last day, 1 in 20 FAILED and
// released): the preview's read (Usage, budget_usage) and the claim
// (Acquire with the charge, claim_operation), each with a daily window of
// every action and one of its own action. docs/benchmarks-scale.md has the
// command and the numbers.
func BenchmarkHotSubjectBudget(b *testing.B) {
	n := benchEnvInt(b, "ONCEGATE_HOT_SUBJECT_OPS", hotSubjectOps)
	ctx := context.Background()
	s, err := pgstore.Open(ctx, testenv.NewDatabase(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	fill := truthfill.Options{Rows: n, Subjects: 1, Spacing: 23 * time.Hour / time.Duration(max(n, 1))}
	if _, err := truthfill.Fill(ctx, s.Pool(), fill); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, "VACUUM ANALYZE budget_reservation, write_record"); err != nil {
		b.Fatal(err)
	}
	subject := fill.At(0).Subject
	charge := func() *operation.Charge {
		var amount, max apd.Decimal
		amount.SetFinite(100, -2)
		max.SetFinite(1, 12)
		return &operation.Charge{Amount: amount, Currency: "EUR", Windows: []operation.Window{
			{Name: "daily", Kind: "daily", Period: 24 * time.Hour, Max: max},
			{Name: "daily-transfers", Kind: "daily", Scope: "payments.transfer", Period: 24 * time.Hour, Max: max},
		}}
	}

	b.Run("usage", func(b *testing.B) {
		for range b.N {
			u, err := s.Usage(ctx, subject, *charge())
			if err != nil || len(u) != 2 || u[0].Used.Sign() <= 0 {
				b.Fatalf("usage %v, %v", u, err)
			}
		}
	})
	b.Run("claim", func(b *testing.B) {
		claims := benchClaims(b.N)
		b.ResetTimer()
		for i := range b.N {
			c := claims[i]
			c.Subject, c.Charge = subject, charge()
			d, err := s.Acquire(ctx, c)
			if err != nil || d.Outcome != idemstore.OutcomeAcquired {
				b.Fatalf("claim %v, %v", d.Outcome, err)
			}
		}
	})
}
