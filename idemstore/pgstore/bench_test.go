package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/idemstore/pgstore"
)

// BenchmarkPostgresAcquire measures one truth insert-or-read on a real local
// PostgreSQL (fresh database): a fresh key per iteration, so every call
// inserts a new write_record row (the ACQUIRED path).
func BenchmarkPostgresAcquire(b *testing.B) {
	ctx := context.Background()
	s, err := pgstore.Open(ctx, testenv.NewDatabase(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	claims := benchClaims(b.N)

	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		d, err := s.Acquire(ctx, claims[i])
		if err != nil {
			b.Fatal(err)
		}
		if d.Outcome != idemstore.OutcomeAcquired {
			b.Fatalf("outcome %v, want acquired", d.Outcome)
		}
	}
}

// benchEnvInt is the integer the environment setting name holds, or def
// when it is unset: the size knobs of the measurements beside the code.
func benchEnvInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		b.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// benchClaims returns n claims with distinct fresh keys, built before the timer starts.
func benchClaims(n int) []idemstore.Claim {
	prefix := make([]byte, 8)
	_, _ = rand.Read(prefix)
	p := hex.EncodeToString(prefix)
	exp := time.Now().Add(15 * time.Minute)
	claims := make([]idemstore.Claim, n)
	for i := range claims {
		claims[i] = idemstore.Claim{
			OperationID:    p + strconv.Itoa(i),
			ParamHash:      "e625dcbb23216d0d011ac838c5703c7ae5cd01afa8ae5abcc315cfe62a6f8af7",
			Owner:          "bench/" + strconv.Itoa(i),
			Subject:        "alice",
			Scope:          "payments.transfer",
			InFlightTTL:    10 * time.Minute,
			TerminalTTL:    720 * time.Hour,
			FingerprintExp: exp,
		}
	}
	return claims
}
