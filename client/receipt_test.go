package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/receipt"
	"github.com/oncegate/oncegate/status"
)

// receiptKeys returns a keyring of one key per id, each from its own seed.
func receiptKeys(t *testing.T, ids ...string) *receipt.Keyring {
	t.Helper()
	var specs []string
	for i, id := range ids {
		specs = append(specs, id+":"+base64.StdEncoding.EncodeToString([]byte(strings.Repeat(string(rune('a'+i)), 32))))
	}
	k, err := receipt.ParseKeyring(strings.Join(specs, ","))
	require.NoError(t, err)
	return k
}

// signedAnswer is a completed answer carrying the receipt k signs for it.
func signedAnswer(t *testing.T, k *receipt.Keyring) *Answer {
	t.Helper()
	c := receipt.Claims{OperationID: strings.Repeat("0b", 16), Subject: "alice", Scope: "payments.transfer",
		ParamHash: strings.Repeat("cd", 32), Outcome: receipt.OutcomeCompleted, ResultRef: "tr_1",
		FinalizedAt: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)}
	jws, err := k.Sign(c)
	require.NoError(t, err)
	return &Answer{Status: status.AlreadyCompleted, OperationID: c.OperationID, ResultRef: "tr_1", Receipt: jws}
}

func TestVerifyReceipt(t *testing.T) {
	t.Parallel()
	k := receiptKeys(t, "r1")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, receipt.JWKSPath, r.URL.Path)
		_ = json.NewEncoder(w).Encode(k.JWKS())
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, "dev-alice")
	require.NoError(t, err)
	keys, err := c.JWKS(context.Background())
	require.NoError(t, err)

	a := signedAnswer(t, k)
	claims, err := a.VerifyReceipt(keys)
	require.NoError(t, err)
	assert.Equal(t, "alice", claims.Subject)
	assert.Equal(t, receipt.OutcomeCompleted, claims.Outcome)

	// One byte changed, a retired key, an unknown kid: refused.
	flipped := []byte(a.Receipt)
	flipped[len(flipped)/2] ^= 'A' ^ 'B'
	_, err = VerifyReceipt(string(flipped), keys)
	assert.Error(t, err)
	_, err = VerifyReceipt(a.Receipt, receiptKeys(t, "r2").JWKS())
	assert.ErrorIs(t, err, receipt.ErrUnknownKey, "r1 retired")
	rotated := receiptKeys(t, "r2", "r1") // r1 still listed, with another seed
	_, err = VerifyReceipt(a.Receipt, rotated.JWKS())
	assert.ErrorIs(t, err, receipt.ErrBadSignature)

	// A receipt that verifies but states another answer is refused.
	for name, change := range map[string]func(a *Answer){
		"another operation": func(a *Answer) { a.OperationID = strings.Repeat("0c", 16) },
		"another outcome":   func(a *Answer) { a.Status = status.Failed },
		"another reference": func(a *Answer) { a.ResultRef = "tr_2" },
		"another kind":      func(a *Answer) { a.FailureKind = "not_sent" },
		"not an outcome":    func(a *Answer) { a.Status = status.InProgress },
	} {
		other := *a
		change(&other)
		_, err := other.VerifyReceipt(keys)
		assert.ErrorIs(t, err, ErrReceiptMismatch, name)
	}
	none := *a
	none.Receipt = ""
	_, err = none.VerifyReceipt(keys)
	assert.ErrorContains(t, err, "carries no receipt")
}

func TestFetchJWKSRefusals(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/empty":
			_, _ = w.Write([]byte(`{"keys":[]}`))
		case "/junk":
			_, _ = w.Write([]byte(`<html>`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	for path, want := range map[string]string{"/empty": "no keys", "/junk": "parse jwks", "/missing": "HTTP 404"} {
		_, err := FetchJWKS(context.Background(), nil, srv.URL+path)
		assert.ErrorContains(t, err, want, path)
	}
	saved, err := json.Marshal(receiptKeys(t, "r1").JWKS())
	require.NoError(t, err)
	set, err := ParseJWKS(saved)
	require.NoError(t, err)
	assert.Equal(t, "r1", set.Keys[0].KeyID)
}

// The client is what agents' code imports: it depends on no server
// package of this module, only on the receipt format (and its key-list
// parser).
func TestClientImportsNoServerPackage(t *testing.T) {
	t.Parallel()
	const module = "github.com/oncegate/oncegate"
	out, err := exec.Command("go", "list", "-deps", module+"/client").Output()
	require.NoError(t, err)
	allowed := map[string]bool{module + "/client": true, module + "/receipt": true, module + "/internal/keyspec": true, module + "/status": true}
	deps := 0
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, module+"/") || dep == module {
			deps++
			assert.True(t, allowed[dep], "the client depends on the server package %s", dep)
		}
	}
	assert.Equal(t, len(allowed), deps, "go list listed the client and the receipt format")
}
