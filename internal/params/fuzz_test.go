package params

import (
	"testing"

	"github.com/oncegate/oncegate/internal/catalog"
)

// constrainedAction is transferAction with the dev catalog's constraints.
func constrainedAction() *catalog.Action {
	a := transferAction()
	for name, text := range map[string]string{
		"amount":   "{type: decimal, required: true, exclusive_min: 0, max: 1000000, scale_from: currency}",
		"currency": "{type: string, required: true, normalize: [trim, upper], kind: currency}",
		"payee_id": "{type: string, required: true, normalize: [trim], kind: identifier, max_length: 64}",
	} {
		f, err := catalog.ParseField(text)
		if err != nil {
			panic(err)
		}
		a.Bind[name] = f
	}
	a.Free["memo"] = catalog.FreeField{Type: catalog.TypeString, MaxLength: 500}
	return a
}

func FuzzCanonicalize(f *testing.F) {
	for _, seed := range []string{
		`{"amount":"12.50","currency":" usd ","payee_id":"p-1","memo":"asap"}`,
		`{"amount":1e0,"currency":"USD","payee_id":"p-1"}`,
		`{"amount":"1200","currency":"jpy","payee_id":"p\u200b-1","memo":"x"}`,
		`{"amount":"0.001","currency":"BHD","payee_id":"ｐ-３"}`,
		`{"a":null,"b":{"c":[1,null,{"d":null}]},"e":-0.0}`,
		"{\"\U0001F600\":1,\"\uFB01\":2,\"e\u0301\":\"\u00e9\"}",
		`"\u0000\b\f\n\r\t\"\\\/"`,
		`[1.000,10e-1,"1.00",true,false,null]`,
		`{"a":1,"a":2}`,
		`123456789012345678901234567890.000000000000001`,
		`1e999`,
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
	} {
		f.Add([]byte(seed))
	}
	spec := transferAction().Bind
	constrained := constrainedAction()
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := CanonicalJSON(raw)
		if err == nil {
			again, err := CanonicalJSON(c)
			if err != nil {
				t.Fatalf("canonical %q of %q is refused: %v", c, raw, err)
			}
			if string(again) != string(c) {
				t.Fatalf("canonical of canonical differs: %q then %q", c, again)
			}
		}
		bound, _, err := Canonicalize(raw, spec)
		if err == nil {
			again, err := CanonicalJSON(bound)
			if err != nil || string(again) != string(bound) {
				t.Fatalf("bound canonical %q is not a fixed point: %q, %v", bound, again, err)
			}
			rebound, _, err := Canonicalize(bound, spec)
			if err != nil || string(rebound) != string(bound) {
				t.Fatalf("Canonicalize of %q gives %q, %v", bound, rebound, err)
			}
		}
		plain := Validate(raw, transferAction())
		// The constraints only refuse: what they accept, the types accept
		// too, and it canonicalizes to the same bytes.
		if len(Validate(raw, constrained)) == 0 {
			if len(plain) != 0 {
				t.Fatalf("%q passes the constraints but not the types: %v", raw, plain)
			}
			a, _, errA := Canonicalize(raw, constrained.Bind)
			b, _, errB := Canonicalize(raw, spec)
			if errA != nil || errB != nil || string(a) != string(b) {
				t.Fatalf("%q canonicalizes to %q (%v) with constraints and %q (%v) without", raw, a, errA, b, errB)
			}
		}
	})
}
