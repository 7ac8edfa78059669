package params

import "testing"

func BenchmarkCanonicalize(b *testing.B) {
	raw := []byte(`{"amount":"12.50","currency":" usd ","payee_id":"p-1","memo":"asap"}`)
	spec := transferAction().Bind
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Canonicalize(raw, spec); err != nil {
			b.Fatal(err)
		}
	}
}
