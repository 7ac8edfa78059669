package fingerprint

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	secretA = bytes.Repeat([]byte{0xA1}, 32)
	secretB = bytes.Repeat([]byte{0xB2}, 32)
	secretC = bytes.Repeat([]byte{0xC3}, 32)
)

const (
	testNonce = "0123456789abcdef0123456789abcdef"
	testHash  = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	testExp   = int64(1767225600) // 2026-01-01T00:00:00Z
)

func testPayload() Payload {
	return Payload{Nonce: testNonce, Exp: testExp, Subject: "alice", Scope: "payments.transfer", ParamHash: testHash}
}

func mustKeyring(t testing.TB, keys ...Key) *Keyring {
	t.Helper()
	k, err := NewKeyring(keys...)
	require.NoError(t, err)
	return k
}

func mustSign(t testing.TB, k *Keyring, p Payload) string {
	t.Helper()
	fp, err := k.Sign(p)
	require.NoError(t, err)
	return fp
}

func TestSignFormat(t *testing.T) {
	t.Parallel()
	k := mustKeyring(t, Key{ID: "k1", Secret: secretA})
	p := testPayload()
	p.KeyID = "ignored"
	fp := mustSign(t, k, p)

	seg, mac, ok := strings.Cut(fp, ".")
	require.True(t, ok)
	payload, err := base64.RawURLEncoding.DecodeString(seg)
	require.NoError(t, err)
	assert.Equal(t, `{"n":"`+testNonce+`","exp":1767225600,"u":"alice","s":"payments.transfer","p":"`+testHash+`","k":"k1"}`, string(payload))
	h := hmac.New(sha256.New, secretA)
	h.Write([]byte(seg))
	assert.Equal(t, base64.RawURLEncoding.EncodeToString(h.Sum(nil)), mac)

	// The fixed order is also what encoding/json writes for Payload.
	p.KeyID = "k1"
	std, err := json.Marshal(p)
	require.NoError(t, err)
	assert.Equal(t, string(std), string(payload))

	p.RecentOperation = strings.Repeat("f", 32)
	fp = mustSign(t, k, p)
	payload, err = base64.RawURLEncoding.DecodeString(strings.Split(fp, ".")[0])
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(string(payload), `,"k":"k1","r":"ffffffffffffffffffffffffffffffff"}`), string(payload))
	got, err := k.Parse(fp)
	require.NoError(t, err)
	assert.Equal(t, p, got)

	// The approval's reasons come last, and are signed with the rest.
	p.Approval = "amount_above_threshold,new_payee"
	fp = mustSign(t, k, p)
	payload, err = base64.RawURLEncoding.DecodeString(strings.Split(fp, ".")[0])
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(string(payload), `,"r":"ffffffffffffffffffffffffffffffff","a":"amount_above_threshold,new_payee"}`), string(payload))
	std, err = json.Marshal(p)
	require.NoError(t, err)
	assert.Equal(t, string(std), string(payload))
	got, err = k.Parse(fp)
	require.NoError(t, err)
	assert.Equal(t, p, got)
	// Dropping the reasons from a signed payload breaks the signature.
	stripped := strings.Replace(string(payload), `,"a":"amount_above_threshold,new_payee"`, "", 1)
	forged := base64.RawURLEncoding.EncodeToString([]byte(stripped)) + "." + strings.Split(fp, ".")[1]
	_, err = k.Parse(forged)
	assert.ErrorIs(t, err, ErrInvalid)
}

// Sign writes each fingerprint into room its HMAC state keeps across
// calls: every fingerprint is still exactly B64(json) "." B64(HMAC) of its
// own payload, whatever longer or shorter one the state signed before, from
// any number of goroutines.
func TestSignIsItsFormulaAcrossReuse(t *testing.T) {
	t.Parallel()
	k := mustKeyring(t, Key{ID: "k1", Secret: secretA})
	want := func(p Payload) string {
		p.KeyID = "k1"
		js, err := json.Marshal(p)
		require.NoError(t, err)
		seg := base64.RawURLEncoding.EncodeToString(js)
		h := hmac.New(sha256.New, secretA)
		h.Write([]byte(seg))
		return seg + "." + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
	}
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 200 {
				p := testPayload()
				p.Subject = strings.Repeat(string(rune('a'+g)), 1+(i*37+g*11)%300)
				if i%3 == 0 {
					p.Approval = "new_payee"
				}
				fp, err := k.Sign(p)
				if !assert.NoError(t, err) || !assert.Equal(t, want(p), fp, "goroutine %d, payload %d", g, i) {
					return
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
}

func TestSignRefusesBadPayload(t *testing.T) {
	t.Parallel()
	k := mustKeyring(t, Key{ID: "k1", Secret: secretA})
	for name, mutate := range map[string]func(*Payload){
		"short nonce":     func(p *Payload) { p.Nonce = "abc" },
		"upper nonce":     func(p *Payload) { p.Nonce = strings.ToUpper(testNonce) },
		"zero exp":        func(p *Payload) { p.Exp = 0 },
		"negative exp":    func(p *Payload) { p.Exp = -1 },
		"empty subject":   func(p *Payload) { p.Subject = "" },
		"invalid subject": func(p *Payload) { p.Subject = "\xff" },
		"empty scope":     func(p *Payload) { p.Scope = "" },
		"bad hash":        func(p *Payload) { p.ParamHash = "xyz" },
		"bad recent op":   func(p *Payload) { p.RecentOperation = "nope" },
		"bad reasons":     func(p *Payload) { p.Approval = "Above,,x" },
		"empty reason":    func(p *Payload) { p.Approval = "new_payee," },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := testPayload()
			mutate(&p)
			_, err := k.Sign(p)
			assert.ErrorIs(t, err, ErrInvalid)
		})
	}
}

func TestSignEscapesSubject(t *testing.T) {
	t.Parallel()
	k := mustKeyring(t, Key{ID: "k1", Secret: secretA})
	p := testPayload()
	p.Subject = "a\"b\\c\n\x01é<>"
	fp := mustSign(t, k, p)
	got, err := k.Parse(fp)
	require.NoError(t, err)
	assert.Equal(t, p.Subject, got.Subject)
}

func TestParseRefusesEverySingleByteChange(t *testing.T) {
	t.Parallel()
	k := mustKeyring(t, Key{ID: "k1", Secret: secretA})
	fp := mustSign(t, k, testPayload())
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	others := alphabet + ".=+/ \n\x00\xff"
	for i := 0; i < len(fp); i++ {
		for j := 0; j < len(others); j++ {
			if others[j] == fp[i] {
				continue
			}
			mutated := fp[:i] + string(others[j]) + fp[i+1:]
			_, err := k.Parse(mutated)
			require.ErrorIs(t, err, ErrInvalid, "position %d replaced by %q", i, others[j])
		}
	}
	// Truncation and extension are refused too.
	for _, mutated := range []string{fp[:len(fp)-1], fp + "A", fp + ".", "." + fp, fp[1:], ""} {
		_, err := k.Parse(mutated)
		assert.ErrorIs(t, err, ErrInvalid, mutated)
	}
}

// forge signs payload JSON of any shape with secret.
func forge(payload string, secret []byte) string {
	seg := base64.RawURLEncoding.EncodeToString([]byte(payload))
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(seg))
	return seg + "." + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

func TestParseRefusesBadPayloads(t *testing.T) {
	t.Parallel()
	k := mustKeyring(t, Key{ID: "k1", Secret: secretA})
	good := `{"n":"` + testNonce + `","exp":1767225600,"u":"alice","s":"payments.transfer","p":"` + testHash + `","k":"k1"}`
	_, err := k.Parse(forge(good, secretA))
	require.NoError(t, err, "the hand-built payload is valid")
	tests := map[string]string{
		"unknown field":      strings.Replace(good, `}`, `,"x":1}`, 1),
		"duplicate field":    strings.Replace(good, `"u":"alice"`, `"u":"alice","u":"bob"`, 1),
		"other order":        `{"exp":1767225600,"n":"` + testNonce + `","u":"alice","s":"payments.transfer","p":"` + testHash + `","k":"k1"}`,
		"white space":        strings.Replace(good, `"u":`, `"u": `, 1),
		"missing field":      strings.Replace(good, `,"u":"alice"`, ``, 1),
		"exp as string":      strings.Replace(good, `1767225600`, `"1767225600"`, 1),
		"exp zero":           strings.Replace(good, `1767225600`, `0`, 1),
		"exp negative":       strings.Replace(good, `1767225600`, `-1`, 1),
		"exp fraction":       strings.Replace(good, `1767225600`, `1767225600.5`, 1),
		"exp leading zero":   strings.Replace(good, `1767225600`, `01767225600`, 1),
		"exp overflow":       strings.Replace(good, `1767225600`, `99999999999999999999`, 1),
		"upper nonce":        strings.Replace(good, testNonce, strings.ToUpper(testNonce), 1),
		"short hash":         strings.Replace(good, testHash, testHash[:63], 1),
		"empty subject":      strings.Replace(good, `"u":"alice"`, `"u":""`, 1),
		"empty scope":        strings.Replace(good, `"s":"payments.transfer"`, `"s":""`, 1),
		"null subject":       strings.Replace(good, `"u":"alice"`, `"u":null`, 1),
		"needless escape":    strings.Replace(good, `"u":"alice"`, `"u":"\u0061lice"`, 1),
		"escaped slash":      strings.Replace(good, `"u":"alice"`, `"u":"a\/b"`, 1),
		"bad r":              strings.Replace(good, `}`, `,"r":"x"}`, 1),
		"empty r":            strings.Replace(good, `}`, `,"r":""}`, 1),
		"trailing data":      good + " ",
		"not an object":      `[]`,
		"unknown key id":     strings.Replace(good, `"k":"k1"`, `"k":"k2"`, 1),
		"invalid key id":     strings.Replace(good, `"k":"k1"`, `"k":"k 1"`, 1),
		"invalid UTF-8 in u": strings.Replace(good, `"u":"alice"`, "\"u\":\"\xff\"", 1),
	}
	for name, payload := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := k.Parse(forge(payload, secretA))
			assert.ErrorIs(t, err, ErrInvalid)
		})
	}
}

func TestParseRefusesMalformed(t *testing.T) {
	t.Parallel()
	k := mustKeyring(t, Key{ID: "k1", Secret: secretA})
	fp := mustSign(t, k, testPayload())
	seg, mac, _ := strings.Cut(fp, ".")
	padded := base64.URLEncoding.EncodeToString(mustDecode(t, seg))
	tests := map[string]string{
		"two dots":        fp + ".x",
		"no dot":          seg + mac,
		"padding":         padded + "." + mac,
		"newline":         seg[:10] + "\n" + seg[10:] + "." + mac,
		"short mac":       seg + "." + mac[:42],
		"too long":        strings.Repeat("A", MaxFingerprintLen+1),
		"empty payload":   "." + mac,
		"trailing bits":   seg + "." + mac[:42] + nonZeroTail(mac[42]),
		"another secret":  forge(mustDecodeString(t, seg), secretB),
		"mac of payload":  seg + "." + base64.RawURLEncoding.EncodeToString(hmacOf(secretA, mustDecode(t, seg))),
		"unsigned random": "eyJuIjoiMSJ9.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	}
	for name, s := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := k.Parse(s)
			assert.ErrorIs(t, err, ErrInvalid)
		})
	}
}

func nonZeroTail(last byte) string {
	// The last char of a 32-byte MAC carries 4 bits of data and 2 zero bits;
	// pick a char with the same data bits and non-zero padding bits.
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, last)
	return string(alphabet[i|1])
}

func hmacOf(secret, msg []byte) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write(msg)
	return h.Sum(nil)
}

func mustDecode(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	require.NoError(t, err)
	return b
}

func mustDecodeString(t *testing.T, s string) string { return string(mustDecode(t, s)) }

func TestRotation(t *testing.T) {
	t.Parallel()
	old := mustKeyring(t, Key{ID: "old", Secret: secretA})
	rotated := mustKeyring(t, Key{ID: "new", Secret: secretB}, Key{ID: "old", Secret: secretA})
	removed := mustKeyring(t, Key{ID: "new", Secret: secretB})

	byOld := mustSign(t, old, testPayload())
	byNew := mustSign(t, rotated, testPayload())

	p, err := rotated.Parse(byOld)
	require.NoError(t, err, "a rotated-out key that is still listed verifies")
	assert.Equal(t, "old", p.KeyID)
	_, err = removed.Parse(byOld)
	assert.ErrorIs(t, err, ErrInvalid, "a removed key no longer verifies")
	assert.ErrorContains(t, err, "unknown key id")

	p, err = removed.Parse(byNew)
	require.NoError(t, err)
	assert.Equal(t, "new", p.KeyID)
	_, err = old.Parse(byNew)
	assert.ErrorIs(t, err, ErrInvalid)

	// Re-signed with an unknown key that claims a known id: bad signature.
	impostor := mustKeyring(t, Key{ID: "new", Secret: secretC})
	_, err = rotated.Parse(mustSign(t, impostor, testPayload()))
	assert.ErrorIs(t, err, ErrInvalid)
	assert.ErrorContains(t, err, "bad signature")
	// Re-signed with an unknown key id.
	stranger := mustKeyring(t, Key{ID: "stranger", Secret: secretA})
	_, err = rotated.Parse(mustSign(t, stranger, testPayload()))
	assert.ErrorIs(t, err, ErrInvalid)
	assert.ErrorContains(t, err, "unknown key id")
}

func TestVerify(t *testing.T) {
	t.Parallel()
	k := mustKeyring(t, Key{ID: "k1", Secret: secretA})
	fp := mustSign(t, k, testPayload())
	exp := time.Unix(testExp, 0)
	want := Expectation{Subject: "alice", Scope: "payments.transfer", ParamHash: testHash, Now: exp.Add(-time.Second)}
	with := func(f func(*Expectation)) Expectation { e := want; f(&e); return e }
	tests := []struct {
		name string
		fp   string
		want Expectation
		err  error
	}{
		{"valid at exp-1s", fp, want, nil},
		{"valid at exp-1ns", fp, with(func(e *Expectation) { e.Now = exp.Add(-time.Nanosecond) }), nil},
		{"expired at exp", fp, with(func(e *Expectation) { e.Now = exp }), ErrExpired},
		{"expired at exp+1s", fp, with(func(e *Expectation) { e.Now = exp.Add(time.Second) }), ErrExpired},
		{"expired allowed", fp, with(func(e *Expectation) { e.Now = exp.Add(time.Hour); e.AllowExpired = true }), nil},
		{"subject", fp, with(func(e *Expectation) { e.Subject = "bob" }), ErrSubjectMismatch},
		{"scope", fp, with(func(e *Expectation) { e.Scope = "payments.legacy_transfer" }), ErrScopeMismatch},
		{"param", fp, with(func(e *Expectation) { e.ParamHash = strings.Repeat("0", 64) }), ErrParamMismatch},
		{"subject before scope, param and expiry", fp, with(func(e *Expectation) {
			e.Subject, e.Scope, e.ParamHash, e.Now = "bob", "x", "y", exp.Add(time.Hour)
		}), ErrSubjectMismatch},
		{"scope before param and expiry", fp, with(func(e *Expectation) { e.Scope, e.ParamHash, e.Now = "x", "y", exp }), ErrScopeMismatch},
		{"param before expiry", fp, with(func(e *Expectation) { e.ParamHash, e.Now = "y", exp }), ErrParamMismatch},
		{"invalid before everything", fp + "x", with(func(e *Expectation) { e.Subject, e.Now = "bob", exp }), ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := k.Verify(tt.fp, tt.want)
			if tt.err == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tt.err)
				for _, other := range []error{ErrInvalid, ErrSubjectMismatch, ErrScopeMismatch, ErrParamMismatch, ErrExpired} {
					if other != tt.err {
						assert.NotErrorIs(t, err, other, "exactly one outcome")
					}
				}
			}
			if tt.err == ErrInvalid {
				assert.Equal(t, Payload{}, p)
				return
			}
			assert.Equal(t, testNonce, p.Nonce, "the payload comes back whenever the signature verified")
			assert.Equal(t, "k1", p.KeyID)
		})
	}
}

func TestParseKeyring(t *testing.T) {
	t.Parallel()
	s16 := bytes.Repeat([]byte{0xfb, 0xff}, 8)
	std := base64.StdEncoding.EncodeToString(s16)
	rawStd := base64.RawStdEncoding.EncodeToString(s16)
	url := base64.URLEncoding.EncodeToString(s16)
	rawURL := base64.RawURLEncoding.EncodeToString(s16)
	require.NotEqual(t, std, rawURL)

	k, err := ParseKeyring("new:" + std + ", old:" + rawStd + ",u1:" + url + ",u2:" + rawURL)
	require.NoError(t, err)
	assert.Equal(t, "new", k.SigningKeyID())
	assert.Equal(t, []string{"new", "old", "u1", "u2"}, k.KeyIDs())
	// Every variant decodes to the same secret.
	ref, err := ParseKeyring("k:" + std)
	require.NoError(t, err)
	for _, variant := range []string{std, rawStd, url, rawURL} {
		kk, err := ParseKeyring("k:" + variant)
		require.NoError(t, err, variant)
		_, err = ref.Parse(mustSign(t, kk, testPayload()))
		assert.NoError(t, err, variant)
	}

	short := base64.StdEncoding.EncodeToString(make([]byte, 15))
	for name, spec := range map[string]string{
		"empty":          "",
		"no colon":       "k1",
		"empty secret":   "k1:",
		"short secret":   "k1:" + short,
		"not base64":     "k1:!!!!",
		"duplicate kid":  "k1:" + std + ",k1:" + rawURL,
		"bad kid char":   "k/1:" + std,
		"empty kid":      ":" + std,
		"blank entry":    "k1:" + std + ",",
		"kid with space": "k 1:" + std,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseKeyring(spec)
			assert.Error(t, err)
		})
	}
	_, err = NewKeyring()
	assert.Error(t, err)
}

func TestNewNonce(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 100 {
		n := NewNonce()
		require.True(t, isLowerHex(n, 32), n)
		_, err := hex.DecodeString(n)
		require.NoError(t, err)
		require.False(t, seen[n])
		seen[n] = true
	}
}
