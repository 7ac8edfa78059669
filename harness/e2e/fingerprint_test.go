package e2e

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// paramHashOf reads p from a fingerprint's payload (no verification: the
// tests only need the hash the gateway bound).
func paramHashOf(t testing.TB, fp string) string {
	t.Helper()
	seg, _, ok := strings.Cut(fp, ".")
	require.True(t, ok)
	raw, err := base64.RawURLEncoding.DecodeString(seg)
	require.NoError(t, err)
	var p struct {
		P string `json:"p"`
	}
	require.NoError(t, json.Unmarshal(raw, &p))
	require.Len(t, p.P, 64)
	return p.P
}
