package main

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/receipt"
)

// receiptKeyring is a keyring of one key, id from its seed byte b.
func receiptKeyring(t *testing.T, id string, b byte) *receipt.Keyring {
	t.Helper()
	k, err := receipt.ParseKeyring(id + ":" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat(string(rune(b)), 32))))
	require.NoError(t, err)
	return k
}

func TestReceiptVerify(t *testing.T) {
	k := receiptKeyring(t, "r1", 'a')
	set, err := json.Marshal(k.JWKS())
	require.NoError(t, err)
	jws, err := k.Sign(receipt.Claims{OperationID: strings.Repeat("0d", 16), Subject: "alice", Scope: "payments.transfer",
		ParamHash: strings.Repeat("ef", 32), Outcome: receipt.OutcomeFailed, FailureKind: "downstream_refused",
		FinalizedAt: time.Date(2026, 5, 1, 10, 0, 0, 7_000_000, time.UTC)})
	require.NoError(t, err)
	env, reqs := gateway(t, http.StatusOK, string(set))

	// By default the gateway's JWK set, fetched without a token.
	code, out, errOut := runCLI(env, "receipt", "verify", jws)
	require.Equal(t, exitOK, code, errOut)
	require.Len(t, *reqs, 1)
	assert.Equal(t, receipt.JWKSPath, (*reqs)[0].path)
	assert.Empty(t, (*reqs)[0].auth, "the keys are public")
	for _, want := range []string{"receipt verified", "alice", "payments.transfer", "failed", "downstream_refused",
		"2026-05-01T10:00:00.007Z", strings.Repeat("ef", 32)} {
		assert.Contains(t, out, want)
	}
	code, out, errOut = runCLI(env, "receipt", "verify", "--json", jws)
	require.Equal(t, exitOK, code, errOut)
	var claims receipt.Claims
	require.NoError(t, json.Unmarshal([]byte(out), &claims))
	assert.Equal(t, "alice", claims.Subject)

	// A saved copy of the set; a set without the key (retired) refuses.
	dir := t.TempDir()
	saved, retired := filepath.Join(dir, "jwks.json"), filepath.Join(dir, "retired.json")
	require.NoError(t, os.WriteFile(saved, set, 0o600))
	other, err := json.Marshal(receiptKeyring(t, "r2", 'b').JWKS())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(retired, other, 0o600))
	code, _, errOut = runCLI(env, "receipt", "verify", "--jwks", saved, jws)
	assert.Equal(t, exitOK, code, errOut)
	code, _, errOut = runCLI(env, "receipt", "verify", "--jwks", retired, jws)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "unknown or retired")

	// One byte changed: refused, nothing printed as verified.
	b := []byte(jws)
	i := strings.IndexByte(jws, '.') + 5
	b[i] ^= 'A' ^ 'B'
	code, out, errOut = runCLI(env, "receipt", "verify", string(b))
	assert.Equal(t, exitError, code)
	assert.NotContains(t, out, "verified")
	assert.Contains(t, errOut, "receipt")

	for _, args := range [][]string{{"receipt"}, {"receipt", "check", jws}, {"receipt", "verify"}} {
		code, _, _ = runCLI(env, args...)
		assert.Equal(t, exitUsage, code, args)
	}
}
