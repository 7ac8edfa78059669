package fingerprint

import (
	"crypto/hmac"
	"crypto/sha256"
	"strings"
	"testing"
	"time"
)

func BenchmarkSign(b *testing.B) {
	k := mustKeyring(b, Key{ID: "k1", Secret: secretA})
	p := testPayload()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Sign(p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	k := mustKeyring(b, Key{ID: "k1", Secret: secretA})
	fp := mustSign(b, k, testPayload())
	want := Expectation{Subject: "alice", Scope: "payments.transfer", ParamHash: testHash, Now: time.Unix(testExp-1, 0)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Verify(fp, want); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBareHMAC is HMAC-SHA256 over the same first segment (a fresh
// hmac.New per call, no encoding), the floor Sign and Verify compare with.
func BenchmarkBareHMAC(b *testing.B) {
	k := mustKeyring(b, Key{ID: "k1", Secret: secretA})
	seg := []byte(strings.Split(mustSign(b, k, testPayload()), ".")[0])
	var sum [sha256.Size]byte
	b.ReportAllocs()
	for b.Loop() {
		h := hmac.New(sha256.New, secretA)
		h.Write(seg)
		_ = h.Sum(sum[:0])
	}
}
