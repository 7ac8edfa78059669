package fingerprint

import "testing"

func FuzzParseFingerprint(f *testing.F) {
	k, err := NewKeyring(Key{ID: "k1", Secret: secretA}, Key{ID: "k0", Secret: secretB})
	if err != nil {
		f.Fatal(err)
	}
	old, err := NewKeyring(Key{ID: "k0", Secret: secretB})
	if err != nil {
		f.Fatal(err)
	}
	p := testPayload()
	for _, fp := range []string{
		mustSignF(f, k, p),
		mustSignF(f, old, p),
		mustSignF(f, k, Payload{Nonce: testNonce, Exp: 1, Subject: "a\"\\\n\x01é", Scope: "s", ParamHash: testHash, RecentOperation: testNonce}),
		forge(`{"n":"`+testNonce+`","exp":1,"u":"a","s":"s","p":"`+testHash+`","k":"k1","x":1}`, secretA),
		"", ".", "a.b", "eyJ9.eyJ9",
	} {
		f.Add(fp)
	}
	f.Fuzz(func(t *testing.T, fp string) {
		p, err := k.Parse(fp)
		if err != nil {
			return
		}
		signer := k
		if p.KeyID == "k0" {
			signer = old
		}
		again, err := signer.Sign(p)
		if err != nil {
			t.Fatalf("accepted payload %+v does not re-sign: %v", p, err)
		}
		if again != fp {
			t.Fatalf("accepted %q re-signs to %q", fp, again)
		}
	})
}

func mustSignF(f *testing.F, k *Keyring, p Payload) string {
	fp, err := k.Sign(p)
	if err != nil {
		f.Fatal(err)
	}
	return fp
}
