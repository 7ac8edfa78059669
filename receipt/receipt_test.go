package receipt_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/receipt"
)

// seed returns a fixed Ed25519 seed made of b.
func seed(b byte) []byte { return bytes.Repeat([]byte{b}, ed25519.SeedSize) }

func spec(kid string, b byte) string { return kid + ":" + base64.StdEncoding.EncodeToString(seed(b)) }

func keyring(t testing.TB, specs ...string) *receipt.Keyring {
	t.Helper()
	k, err := receipt.ParseKeyring(strings.Join(specs, ","))
	require.NoError(t, err)
	return k
}

func claims() receipt.Claims {
	return receipt.Claims{
		OperationID: "0123456789abcdef0123456789abcdef",
		Subject:     "alice",
		Scope:       "payments.transfer",
		ParamHash:   strings.Repeat("ab", 32),
		Outcome:     receipt.OutcomeCompleted,
		ResultRef:   "tr_1",
		FinalizedAt: time.Date(2026, 5, 1, 10, 0, 0, 123_000_000, time.UTC),
	}
}

func sign(t testing.TB, k *receipt.Keyring, c receipt.Claims) string {
	t.Helper()
	tok, err := k.Sign(c)
	require.NoError(t, err)
	return tok
}

func TestSignVerifyRoundTrip(t *testing.T) {
	t.Parallel()
	k := keyring(t, spec("r1", 1))
	for name, c := range map[string]receipt.Claims{
		"completed": claims(),
		"failed with approval": func() receipt.Claims {
			c := claims()
			c.Outcome, c.ResultRef, c.FailureKind = receipt.OutcomeFailed, "", "downstream_refused"
			c.ApprovalSHA256 = strings.Repeat("0f", 32)
			return c
		}(),
		"completed for a client": func() receipt.Claims {
			c := claims()
			c.ActingClient = "agent-app"
			return c
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tok := sign(t, k, c)
			got, err := receipt.Verify(tok, k.JWKS())
			require.NoError(t, err)
			assert.Equal(t, c, got)

			// The header is exactly alg and kid; the payload has every member.
			segs := strings.Split(tok, ".")
			require.Len(t, segs, 3)
			header, err := base64.RawURLEncoding.DecodeString(segs[0])
			require.NoError(t, err)
			assert.JSONEq(t, `{"alg":"EdDSA","kid":"r1"}`, string(header))
			payload, err := base64.RawURLEncoding.DecodeString(segs[1])
			require.NoError(t, err)
			var members map[string]any
			require.NoError(t, json.Unmarshal(payload, &members))
			want := []string{"operation_id", "subject", "scope", "param_hash", "outcome", "result_ref",
				"failure_kind", "approval_sha256", "finalized_at"}
			if c.ActingClient != "" {
				want = append(want, "acting_client")
				assert.Equal(t, c.ActingClient, members["acting_client"], "the acting client is signed")
			}
			assert.ElementsMatch(t, want, keys(members))
			assert.Equal(t, "2026-05-01T10:00:00.123Z", members["finalized_at"])
		})
	}
}

// A receipt that names no acting client is the very receipt signed before
// acting_client existed: its bytes did not change, so old receipts verify
// and a replay of an old outcome carries the same receipt.
func TestReceiptWithoutClientIsUnchanged(t *testing.T) {
	t.Parallel()
	k := keyring(t, spec("r1", 1))
	const before = "eyJhbGciOiJFZERTQSIsImtpZCI6InIxIn0." +
		"eyJvcGVyYXRpb25faWQiOiIwMTIzNDU2Nzg5YWJjZGVmMDEyMzQ1Njc4OWFiY2RlZiIsInN1YmplY3QiOiJhbGljZSIsInNjb3BlIjoicGF5bWVudHMudHJhbnNmZXIiLCJwYXJhbV9oYXNoIjoiYWJhYmFiYWJhYmFiYWJhYmFiYWJhYmFiYWJhYmFiYWJhYmFiYWJhYmFiYWJhYmFiYWJhYmFiYWJhYmFiYWJhYiIsIm91dGNvbWUiOiJjb21wbGV0ZWQiLCJyZXN1bHRfcmVmIjoidHJfMSIsImZhaWx1cmVfa2luZCI6IiIsImFwcHJvdmFsX3NoYTI1NiI6IiIsImZpbmFsaXplZF9hdCI6IjIwMjYtMDUtMDFUMTA6MDA6MDAuMTIzWiJ9." +
		"4rX7ru5-KL1vPkH_NYpuEoNPbq8k653biNT7DXp3VfRIJcom1exFFp_Oi1J2uDljZczb4dtLsc0agFaUIxWbAg"
	assert.Equal(t, before, sign(t, k, claims()))
	got, err := receipt.Verify(before, k.JWKS())
	require.NoError(t, err)
	assert.Empty(t, got.ActingClient)
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Ed25519 is deterministic: the same key and claims give the same bytes,
// also from another keyring holding the same key, and the same instant in
// another zone or with sub-millisecond digits (as a store reads it back)
// signs the same.
func TestSignIsDeterministic(t *testing.T) {
	t.Parallel()
	a, b := keyring(t, spec("r1", 1)), keyring(t, spec("r1", 1), spec("old", 2))
	c := claims()
	first := sign(t, a, c)
	assert.Equal(t, first, sign(t, a, c))
	assert.Equal(t, first, sign(t, b, c))

	shifted := c
	shifted.FinalizedAt = c.FinalizedAt.In(time.FixedZone("CST", 8*3600)).Add(456 * time.Microsecond)
	assert.Equal(t, first, sign(t, a, shifted))

	other := c
	other.ResultRef = "tr_2"
	assert.NotEqual(t, first, sign(t, a, other))
	assert.NotEqual(t, first, sign(t, keyring(t, spec("r1", 3)), c), "another key, the same kid")
}

// A receipt with any one character changed — in the header, the payload or
// the signature, even one that only touches a segment's unused trailing
// bits — is refused.
func TestTamperedReceiptIsRefused(t *testing.T) {
	t.Parallel()
	k := keyring(t, spec("r1", 1))
	tok := sign(t, k, claims())
	segs := strings.Split(tok, ".")
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	pos := 0
	for s, seg := range segs {
		name := []string{"header", "payload", "signature"}[s]
		for i := range len(seg) {
			j := strings.IndexByte(alphabet, seg[i])
			require.GreaterOrEqual(t, j, 0)
			flipped := []byte(tok)
			flipped[pos+i] = alphabet[j^1] // the neighbour: differs in the lowest bit
			_, err := receipt.Verify(string(flipped), k.JWKS())
			require.Error(t, err, "%s character %d changed", name, i)
		}
		pos += len(seg) + 1
	}
	// One byte changed inside the decoded payload, re-encoded: a bad signature.
	payload, err := base64.RawURLEncoding.DecodeString(segs[1])
	require.NoError(t, err)
	payload = bytes.Replace(payload, []byte(`"alice"`), []byte(`"alicf"`), 1)
	forged := segs[0] + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + segs[2]
	_, err = receipt.Verify(forged, k.JWKS())
	assert.ErrorIs(t, err, receipt.ErrBadSignature)
}

// Rotation: the new key signs once listed first; the old key's receipts
// verify while it is listed, and are refused once it is removed (retired).
func TestRotation(t *testing.T) {
	t.Parallel()
	before := keyring(t, spec("k1", 1))
	old := sign(t, before, claims())

	during := keyring(t, spec("k2", 2), spec("k1", 1))
	assert.Equal(t, "k2", during.SigningKeyID())
	assert.Equal(t, []string{"k2", "k1"}, during.KeyIDs())
	fresh := sign(t, during, claims())
	for name, tok := range map[string]string{"old": old, "new": fresh} {
		_, err := receipt.Verify(tok, during.JWKS())
		assert.NoError(t, err, name)
	}

	after := keyring(t, spec("k2", 2))
	_, err := receipt.Verify(fresh, after.JWKS())
	assert.NoError(t, err)
	_, err = receipt.Verify(old, after.JWKS())
	assert.ErrorIs(t, err, receipt.ErrUnknownKey)
	assert.ErrorContains(t, err, `"k1"`)
}

// forge builds a compact JWS with the header and payload given, signed by
// sig over the signing input.
func forge(header string, payload []byte, sig func(input []byte) []byte) string {
	enc := base64.RawURLEncoding
	input := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString(payload)
	return input + "." + enc.EncodeToString(sig([]byte(input)))
}

// Only EdDSA with a kid of the set verifies: none, HS256 keyed with the
// public key's bytes (the algorithm confusion), a missing or unknown kid,
// a key of another type under the right kid, a private key in the set.
func TestUnknownKeyOrAlgorithmIsRefused(t *testing.T) {
	t.Parallel()
	k := keyring(t, spec("r1", 1))
	priv := ed25519.NewKeyFromSeed(seed(1))
	pub := priv.Public().(ed25519.PublicKey)
	payload, err := json.Marshal(claims())
	require.NoError(t, err)
	edSign := func(p ed25519.PrivateKey) func([]byte) []byte {
		return func(in []byte) []byte { return ed25519.Sign(p, in) }
	}
	hs256 := func(in []byte) []byte {
		m := hmac.New(sha256.New, pub)
		m.Write(in)
		return m.Sum(nil)
	}
	x := base64.RawURLEncoding.EncodeToString(pub)
	okp := func(kid string) string { return `{"kty":"OKP","crv":"Ed25519","kid":"` + kid + `","x":"` + x + `"}` }

	// The well-formed forgery verifies: the cases below differ in one thing.
	_, err = receipt.Verify(forge(`{"alg":"EdDSA","kid":"r1"}`, payload, edSign(priv)), k.JWKS())
	require.NoError(t, err)

	octSet := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: []byte(pub), KeyID: "r1", Algorithm: "HS256"}}}
	privSet := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: priv, KeyID: "r1"}}}
	otherAlg := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: "r1", Algorithm: "ES256"}}}
	encUse := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: "r1", Use: "enc"}}}
	var parsed jose.JSONWebKeySet
	require.NoError(t, json.Unmarshal([]byte(`{"keys":[`+okp("r1")+`,`+okp("r1")+`]}`), &parsed))
	for _, tc := range []struct {
		name  string
		token string
		set   jose.JSONWebKeySet
		want  error
	}{
		{"alg none", forge(`{"alg":"none","kid":"r1"}`, payload, func([]byte) []byte { return nil }), k.JWKS(), receipt.ErrMalformed},
		{"alg none with a signature", forge(`{"alg":"none","kid":"r1"}`, payload, edSign(priv)), k.JWKS(), receipt.ErrMalformed},
		{"HS256 keyed with the public key", forge(`{"alg":"HS256","kid":"r1"}`, payload, hs256), k.JWKS(), receipt.ErrMalformed},
		{"HS256 against an oct key of the kid", forge(`{"alg":"HS256","kid":"r1"}`, payload, hs256), octSet, receipt.ErrMalformed},
		{"EdDSA against an oct key of the kid", forge(`{"alg":"EdDSA","kid":"r1"}`, payload, edSign(priv)), octSet, receipt.ErrUnknownKey},
		{"the kid's key is for another alg", forge(`{"alg":"EdDSA","kid":"r1"}`, payload, edSign(priv)), otherAlg, receipt.ErrUnknownKey},
		{"the kid's key is for encryption", forge(`{"alg":"EdDSA","kid":"r1"}`, payload, edSign(priv)), encUse, receipt.ErrUnknownKey},
		{"a private key in the set", forge(`{"alg":"EdDSA","kid":"r1"}`, payload, edSign(priv)), privSet, receipt.ErrUnknownKey},
		{"the kid twice in the set", forge(`{"alg":"EdDSA","kid":"r1"}`, payload, edSign(priv)), parsed, receipt.ErrUnknownKey},
		{"no kid", forge(`{"alg":"EdDSA"}`, payload, edSign(priv)), k.JWKS(), receipt.ErrUnknownKey},
		{"unknown kid", forge(`{"alg":"EdDSA","kid":"r9"}`, payload, edSign(priv)), k.JWKS(), receipt.ErrUnknownKey},
		{"another key under the kid", forge(`{"alg":"EdDSA","kid":"r1"}`, payload, edSign(ed25519.NewKeyFromSeed(seed(7)))), k.JWKS(), receipt.ErrBadSignature},
		{"invalid claims", forge(`{"alg":"EdDSA","kid":"r1"}`, []byte(`{"operation_id":"x"}`), edSign(priv)), k.JWKS(), receipt.ErrInvalidClaims},
		{"payload not JSON", forge(`{"alg":"EdDSA","kid":"r1"}`, []byte(`not json`), edSign(priv)), k.JWKS(), receipt.ErrInvalidClaims},
		{"two segments", "a.b", k.JWKS(), receipt.ErrMalformed},
		{"JSON serialization", `{"payload":"e30","signatures":[]}`, k.JWKS(), receipt.ErrMalformed},
		{"too long", strings.Repeat("A", receipt.MaxLen+1), k.JWKS(), receipt.ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := receipt.Verify(tc.token, tc.set)
			assert.ErrorIs(t, err, tc.want)
		})
	}
}

// The JWK set holds each listed key's public half only, in RFC 8037's
// shape, the signing key first.
func TestJWKSShape(t *testing.T) {
	t.Parallel()
	k := keyring(t, spec("new", 2), spec("old", 1))
	raw, err := json.Marshal(k.JWKS())
	require.NoError(t, err)
	var set struct {
		Keys []map[string]string `json:"keys"`
	}
	require.NoError(t, json.Unmarshal(raw, &set))
	require.Len(t, set.Keys, 2)
	for i, b := range []byte{2, 1} {
		pub := ed25519.NewKeyFromSeed(seed(b)).Public().(ed25519.PublicKey)
		assert.Equal(t, map[string]string{
			"kty": "OKP", "crv": "Ed25519", "x": base64.RawURLEncoding.EncodeToString(pub),
			"kid": []string{"new", "old"}[i], "alg": "EdDSA", "use": "sig",
		}, set.Keys[i])
	}
	// The served set parses back into a set Verify accepts.
	var back jose.JSONWebKeySet
	require.NoError(t, json.Unmarshal(raw, &back))
	_, err = receipt.Verify(sign(t, k, claims()), back)
	assert.NoError(t, err)
}

func TestValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, claims().Validate())
	for name, change := range map[string]func(c *receipt.Claims){
		"short operation_id":     func(c *receipt.Claims) { c.OperationID = "0123" },
		"upper operation_id":     func(c *receipt.Claims) { c.OperationID = strings.ToUpper(c.OperationID) },
		"no subject":             func(c *receipt.Claims) { c.Subject = "" },
		"no scope":               func(c *receipt.Claims) { c.Scope = "" },
		"short param_hash":       func(c *receipt.Claims) { c.ParamHash = "ab" },
		"unknown outcome":        func(c *receipt.Claims) { c.Outcome = "DONE" },
		"no outcome":             func(c *receipt.Claims) { c.Outcome = "" },
		"completed with a kind":  func(c *receipt.Claims) { c.FailureKind = "not_sent" },
		"bad approval_sha256":    func(c *receipt.Claims) { c.ApprovalSHA256 = "xyz" },
		"no finalize time":       func(c *receipt.Claims) { c.FinalizedAt = time.Time{} },
		"upper approval_sha256":  func(c *receipt.Claims) { c.ApprovalSHA256 = strings.Repeat("AB", 32) },
		"param_hash not hex":     func(c *receipt.Claims) { c.ParamHash = strings.Repeat("zz", 32) },
		"operation_id too long":  func(c *receipt.Claims) { c.OperationID += "0" },
		"failed with result_ref": nil,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := claims()
			if change == nil { // a failure may keep a reference: allowed
				c.Outcome = receipt.OutcomeFailed
				assert.NoError(t, c.Validate())
				return
			}
			change(&c)
			assert.ErrorIs(t, c.Validate(), receipt.ErrInvalidClaims)
			_, err := keyring(t, spec("r1", 1)).Sign(c)
			assert.ErrorIs(t, err, receipt.ErrInvalidClaims, "Sign refuses what Validate refuses")
		})
	}
}

func TestParseKeyring(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]string{
		"empty":         "",
		"no colon":      "r1",
		"short seed":    "r1:" + base64.StdEncoding.EncodeToString(make([]byte, 31)),
		"long seed":     "r1:" + base64.StdEncoding.EncodeToString(make([]byte, 64)),
		"not base64":    "r1:!!!!",
		"duplicate kid": spec("r1", 1) + "," + spec("r1", 2),
		"bad kid":       "r/1:" + base64.StdEncoding.EncodeToString(seed(1)),
		"blank entry":   spec("r1", 1) + ",",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := receipt.ParseKeyring(s)
			assert.Error(t, err)
		})
	}
	_, err := receipt.NewKeyring()
	assert.Error(t, err)
	// Every base64 variant of a seed is the same key.
	std := keyring(t, spec("r1", 0xfb))
	raw := keyring(t, "r1:"+base64.RawURLEncoding.EncodeToString(seed(0xfb)))
	assert.Equal(t, sign(t, std, claims()), sign(t, raw, claims()))
}

func BenchmarkSign(b *testing.B) {
	k := keyring(b, spec("r1", 1))
	c := claims()
	for b.Loop() {
		if _, err := k.Sign(c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	k := keyring(b, spec("r1", 1))
	tok, set := sign(b, k, claims()), k.JWKS()
	for b.Loop() {
		if _, err := receipt.Verify(tok, set); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzVerify: no input panics, and whatever verifies is a valid receipt
// signed by the set's key.
func FuzzVerify(f *testing.F) {
	k := keyring(f, spec("r1", 1))
	tok := sign(f, k, claims())
	f.Add(tok)
	f.Add("")
	f.Add("a.b.c")
	f.Add(strings.Replace(tok, ".", "..", 1))
	set := k.JWKS()
	f.Fuzz(func(t *testing.T, s string) {
		c, err := receipt.Verify(s, set)
		if err == nil {
			require.NoError(t, c.Validate())
			again, err := k.Sign(c)
			require.NoError(t, err)
			require.Equal(t, s, again, "a verified receipt is the one the key signs for its claims")
		}
	})
}
