package client_test

import (
	"context"
	"fmt"

	"github.com/oncegate/oncegate/status"
)

// Every terminal answer carries the gateway's signed receipt of the
// outcome; verify it offline against the gateway's published keys.
func ExampleVerifyReceipt() {
	ctx := context.Background()
	c := newClient()
	params := transfer{Amount: "7.25", Currency: "USD", PayeeID: "p-receipt"}
	p, err := c.Preview(ctx, "payments.transfer", params)
	if err != nil {
		fmt.Println(err)
		return
	}
	done, err := c.Confirm(ctx, "payments.transfer", p.Fingerprint, params)
	if err == nil && done.Status == status.InProgress {
		done, err = c.Wait(ctx, done.OperationID)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	keys, err := c.JWKS(ctx) // GET /.well-known/jwks.json; keep a copy to verify later
	if err != nil {
		fmt.Println(err)
		return
	}
	claims, err := done.VerifyReceipt(keys) // the receipt, and that it states this answer
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(claims.Outcome, claims.Subject, claims.Scope, claims.OperationID == p.OperationID)

	// A replay carries the very same receipt.
	again, err := c.Confirm(ctx, "payments.transfer", p.Fingerprint, params)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(again.Status, again.Receipt == done.Receipt)
	// Output:
	// completed alice payments.transfer true
	// already_completed true
}
