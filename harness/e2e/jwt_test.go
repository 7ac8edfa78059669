package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/harness/testenv"
)

// TestJWTOverHTTP: the gateway configured for JWTs accepts a valid one and
// refuses, with unauthenticated, one signed by a key it does not trust, an
// expired one and one for another audience.
func TestJWTOverHTTP(t *testing.T) {
	secret := "jwt-secret-for-the-e2e-test-0123456789"
	s := testenv.StartStack(t, testenv.StackOptions{ExtraGatewayEnv: []string{
		"ONCEGATE_JWT_HS256_SECRET=" + secret, "ONCEGATE_JWT_AUDIENCE=oncegate",
	}})
	token := func(key string, claims jwt.MapClaims) string {
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(key))
		require.NoError(t, err)
		return tok
	}
	claims := func(mut func(jwt.MapClaims)) jwt.MapClaims {
		c := jwt.MapClaims{"sub": "dave", "aud": "oncegate", "exp": time.Now().Add(time.Hour).Unix()}
		if mut != nil {
			mut(c)
		}
		return c
	}
	params := map[string]any{"amount": "1.00", "currency": "USD", "payee_id": "p-jwt"}

	ok := preview(t, s, token(secret, claims(nil)), "payments.legacy_transfer", params)
	require.Equal(t, http.StatusOK, ok.Code, ok.String())
	assert.Equal(t, "preview_ready", ok.str("status"))

	refused := map[string]string{
		"untrusted key":  token("another-secret-nobody-configured-000000", claims(nil)),
		"expired":        token(secret, claims(func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-time.Hour).Unix() })),
		"other audience": token(secret, claims(func(c jwt.MapClaims) { c["aud"] = "someone-else" })),
	}
	for name, tok := range refused {
		a := preview(t, s, tok, "payments.legacy_transfer", params)
		assert.Equal(t, http.StatusUnauthorized, a.Code, "%s: %s", name, a)
		assert.Equal(t, "unauthenticated", a.str("status"), name)
		assert.Equal(t, false, a.Body["retryable"], name) // the call must change first (docs/contract.md §4)
	}
}
