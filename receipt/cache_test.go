package receipt_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/receipt"
)

func cache(t testing.TB, size int) *receipt.Cache {
	t.Helper()
	c, err := receipt.NewCache(size)
	require.NoError(t, err)
	return c
}

func cachedSign(t testing.TB, cache *receipt.Cache, k *receipt.Keyring, c receipt.Claims) string {
	t.Helper()
	tok, err := cache.Sign(k, c)
	require.NoError(t, err)
	return tok
}

// A cached receipt is the very one Sign returns, and served again.
func TestCacheSignsAsTheKeyring(t *testing.T) {
	t.Parallel()
	k, c := keyring(t, spec("r1", 1)), cache(t, 8)
	first := cachedSign(t, c, k, claims())
	assert.Equal(t, sign(t, k, claims()), first)
	assert.Equal(t, first, cachedSign(t, c, k, claims()))
	// The same instant in another zone or with more precision is the same
	// claims, signed to the same bytes.
	again := claims()
	again.FinalizedAt = again.FinalizedAt.In(time.FixedZone("x", 3600)).Add(400 * time.Microsecond)
	assert.Equal(t, first, cachedSign(t, c, k, again))
}

// Another outcome of the same operation (or another reference, failure
// kind, time, approval) never gets the receipt cached for the first.
func TestCacheNeverServesOtherClaims(t *testing.T) {
	t.Parallel()
	k, c := keyring(t, spec("r1", 1)), cache(t, 8)
	cachedSign(t, c, k, claims())
	for name, change := range map[string]func(*receipt.Claims){
		"outcome": func(x *receipt.Claims) {
			x.Outcome, x.ResultRef, x.FailureKind = receipt.OutcomeFailed, "", "downstream_refused"
		},
		"result_ref":   func(x *receipt.Claims) { x.ResultRef = "tr_2" },
		"finalized_at": func(x *receipt.Claims) { x.FinalizedAt = x.FinalizedAt.Add(time.Millisecond) },
		"approval":     func(x *receipt.Claims) { x.ApprovalSHA256 = strings.Repeat("0f", 32) },
		"operation_id": func(x *receipt.Claims) { x.OperationID = strings.Repeat("1", 32) },
		"subject":      func(x *receipt.Claims) { x.Subject = "dev-bob" },
		"scope":        func(x *receipt.Claims) { x.Scope = "payments.other" },
		"param_hash":   func(x *receipt.Claims) { x.ParamHash = strings.Repeat("cd", 32) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			other := claims()
			change(&other)
			tok := cachedSign(t, c, k, other)
			got, err := receipt.Verify(tok, k.JWKS())
			require.NoError(t, err)
			assert.Equal(t, other, got, "the receipt states the claims asked for")
			assert.Equal(t, sign(t, k, other), tok)
		})
	}
}

// After a rotation (a new first key) the same claims are signed by the new
// key, not served as the old key signed them.
func TestCacheNeverServesAnOldKey(t *testing.T) {
	t.Parallel()
	c := cache(t, 8)
	old := keyring(t, spec("r1", 1))
	rotated := keyring(t, spec("r2", 2), spec("r1", 1))
	before := cachedSign(t, c, old, claims())
	after := cachedSign(t, c, rotated, claims())
	assert.NotEqual(t, before, after)
	assert.Equal(t, sign(t, rotated, claims()), after)
	header, err := base64.RawURLEncoding.DecodeString(strings.Split(after, ".")[0])
	require.NoError(t, err)
	assert.JSONEq(t, `{"alg":"EdDSA","kid":"r2"}`, string(header))
}

// Claims Validate refuses are refused, and nothing is cached for them.
func TestCacheRefusesInvalidClaims(t *testing.T) {
	t.Parallel()
	k, c := keyring(t, spec("r1", 1)), cache(t, 8)
	bad := claims()
	bad.Subject = ""
	_, err := c.Sign(k, bad)
	require.ErrorIs(t, err, receipt.ErrInvalidClaims)
	_, err = receipt.NewCache(0)
	require.Error(t, err)
}

func BenchmarkCacheSign(b *testing.B) {
	k, c := keyring(b, spec("r1", 1)), cache(b, 8)
	cl := claims()
	for b.Loop() {
		if _, err := c.Sign(k, cl); err != nil {
			b.Fatal(err)
		}
	}
}
