package resolution_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/receipt"
	"github.com/oncegate/oncegate/resolution"
)

func signer(t *testing.T, fill byte) *resolution.Signer {
	t.Helper()
	s, err := resolution.NewSigner(receipt.Key{ID: "r1", Seed: bytes.Repeat([]byte{fill}, 32)})
	require.NoError(t, err)
	return s
}

func TestToken_SignVerifyAndEveryRefusal(t *testing.T) {
	gw, other := signer(t, 1), signer(t, 2)
	now := time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC)
	done := operation.Resolution{Outcome: operation.ResolutionCompleted, Result: json.RawMessage(`{"id": "tr_1"}`),
		Note: "bank says paid", EvidenceURL: "https://tickets.example/1", Operator: "typed-name"}
	token, st, err := gw.Issue("op-1", "alice", done, now)
	require.NoError(t, err)
	assert.Equal(t, "alice", st.Operator)
	assert.Equal(t, now.Add(resolution.TTL), st.ExpiresAt)
	assert.NotEmpty(t, st.ID)
	signed := done
	signed.Token = token

	got, err := resolution.Verify(gw.PublicKeys(), "op-1", signed, now.Add(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, "alice", got.Operator, "the proven operator, not the typed one")
	_, err = resolution.Verify(gw.PublicKeys(), "op-1", signed, now.Add(-resolution.ClockSkew))
	require.NoError(t, err, "the gateway's clock may be ahead by ClockSkew")
	compacted := signed
	compacted.Result = json.RawMessage(`{"id":"tr_1"}`)
	_, err = resolution.Verify(gw.PublicKeys(), "op-1", compacted, now)
	require.NoError(t, err, "a payload converter's spacing does not matter")

	_, again, err := gw.Issue("op-1", "alice", done, now)
	require.NoError(t, err)
	assert.NotEqual(t, st.ID, again.ID, "each token has its own id")

	forged, _, err := other.Issue("op-1", "alice", done, now)
	require.NoError(t, err)
	tampered := []byte(token)
	tampered[len(tampered)-2] ^= 1
	failed := operation.Resolution{Outcome: operation.ResolutionFailed, Reason: "never arrived"}
	failedToken, _, err := gw.Issue("op-1", "alice", failed, now)
	require.NoError(t, err)
	for name, c := range map[string]struct {
		res  operation.Resolution
		keys []operation.ResolutionKey
		opID string
		now  time.Time
		want error
	}{
		"missing":                    {res: done, want: resolution.ErrMissing},
		"malformed":                  {res: with(done, "not-a-token"), want: resolution.ErrMalformed},
		"forged signature":           {res: with(done, forged), want: resolution.ErrForged},
		"tampered":                   {res: with(done, string(tampered)), want: resolution.ErrForged},
		"unknown key":                {res: signed, keys: []operation.ResolutionKey{{ID: "r2", PublicKey: gw.PublicKeys()[0].PublicKey}}, want: resolution.ErrUnknownKey},
		"other operation":            {res: signed, opID: "op-2", want: resolution.ErrOtherOperation},
		"other outcome":              {res: operation.Resolution{Outcome: operation.ResolutionCompleted, Result: done.Result, Token: failedToken}, want: resolution.ErrOtherDecision},
		"other outcome, same fields": {res: func() operation.Resolution { r := signed; r.Outcome = operation.ResolutionFailed; return r }(), want: resolution.ErrOtherDecision},
		"other result":               {res: func() operation.Resolution { r := signed; r.Result = json.RawMessage(`{"id":"tr_2"}`); return r }(), want: resolution.ErrOtherDecision},
		"other evidence":             {res: func() operation.Resolution { r := signed; r.EvidenceURL = "https://x.example/"; return r }(), want: resolution.ErrOtherDecision},
		"expired":                    {res: signed, now: now.Add(resolution.TTL), want: resolution.ErrExpired},
		"not yet issued":             {res: signed, now: now.Add(-resolution.ClockSkew - time.Second), want: resolution.ErrExpired},
	} {
		t.Run(name, func(t *testing.T) {
			keys, opID, at := c.keys, c.opID, c.now
			if keys == nil {
				keys = gw.PublicKeys()
			}
			if opID == "" {
				opID = "op-1"
			}
			if at.IsZero() {
				at = now.Add(time.Minute)
			}
			_, err := resolution.Verify(keys, opID, c.res, at)
			require.Error(t, err)
			assert.True(t, errors.Is(err, c.want), "want %v, got %v", c.want, err)
		})
	}
}

func TestSignerOf_DerivesKeysOtherThanTheReceipts(t *testing.T) {
	seed := bytes.Repeat([]byte{7}, 32)
	ring, err := receipt.NewKeyring(receipt.Key{ID: "k1", Seed: seed})
	require.NoError(t, err)
	s, err := resolution.SignerOf(ring)
	require.NoError(t, err)
	direct, err := resolution.NewSigner(receipt.Key{ID: "k1", Seed: seed})
	require.NoError(t, err)
	require.Len(t, s.PublicKeys(), 1)
	assert.Equal(t, "k1", s.PublicKeys()[0].ID)
	assert.NotEqual(t, direct.PublicKeys()[0].PublicKey, s.PublicKeys()[0].PublicKey, "a receipt key never signs a resolution")
	again, err := resolution.SignerOf(ring)
	require.NoError(t, err)
	assert.Equal(t, s.PublicKeys(), again.PublicKeys(), "derived the same every time")
}

// with returns res carrying token.
func with(res operation.Resolution, token string) operation.Resolution {
	res.Token = token
	return res
}

func TestToken_VerifiesAfterARotation(t *testing.T) {
	oldKey, newKey := receipt.Key{ID: "old", Seed: bytes.Repeat([]byte{1}, 32)}, receipt.Key{ID: "new", Seed: bytes.Repeat([]byte{2}, 32)}
	before, err := resolution.NewSigner(oldKey)
	require.NoError(t, err)
	after, err := resolution.NewSigner(newKey, oldKey)
	require.NoError(t, err)
	now := time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC)
	res := operation.Resolution{Outcome: operation.ResolutionFailed, Reason: "never arrived"}
	token, _, err := after.Issue("op-1", "alice", res, now)
	require.NoError(t, err)
	res.Token = token
	st, err := resolution.Verify(before.PublicKeys(), "op-1", res, now)
	require.NoError(t, err, "a workflow started before the rotation knows the old key only")
	assert.Equal(t, "alice", st.Operator)
	newOnly, err := resolution.NewSigner(newKey)
	require.NoError(t, err)
	_, err = resolution.Verify(newOnly.PublicKeys(), "op-1", res, now)
	require.NoError(t, err)
}
