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

// BenchmarkBind is what the gateway does with a preview's or a confirm's
// params: the dev catalog's transfer, with its constraints.
func BenchmarkBind(b *testing.B) {
	raw := []byte(`{"amount":"12.50","currency":" usd ","payee_id":"p-1","memo":"rent"}`)
	action := constrainedAction()
	b.ReportAllocs()
	for b.Loop() {
		if _, problems := Bind(raw, action); problems != nil {
			b.Fatal(problems)
		}
	}
}
